"""Owns slice nesting: one stack of open slices per track.

Semantics follow trace_processor's SliceTracker: a slice gets its id (and so
its place in ts order) when it begins; an end closes the innermost open slice
matching its name/category; a slice that ends while children are still open
truncates them to its end (stat misplaced_end_event); complete events (known
duration) stay on the stack until a later event starts after their end.

A slice row is written when it leaves its stack, so only open slices are
held in memory.
"""

from __future__ import annotations

import re

from ..import_logs import ImportLogs, int_arg, string_arg
from ..stats import Stats
from ..storage import BATCH_ROWS, Arg, TraceStorage
from .args_translation import ArgsTranslation

PENDING = -1
MAX_DEPTH = 512


# An open slice is a list laid out like its future `slice` row (args in place
# of arg_set_id until it is written): cheaper than an object on the hot path.
S_ID, S_TS, S_DUR, S_TRACK, S_CAT, S_NAME, S_DEPTH, S_PARENT, S_ARGS, S_TTS, S_TDUR, S_TIC, S_TICD = range(13)
OpenSlice = list
# A complete event partially overlapping an open slice (trace_processor's OverlapInfo): the shared
# range [start, end) and the open slice's name, ts and dur.
Overlap = tuple[int, int, str | None, int, int]


def overlap_args(info: Overlap) -> list[Arg]:
    """The args an import log gives an overlap (trace_processor's SliceTracker::AddOverlapArgs)."""
    start, end, name, ts, dur = info
    return [
        int_arg("overlap_start", start),
        int_arg("overlap_end", end),
        string_arg("conflicting_slice_name", name),
        int_arg("conflicting_slice_ts", ts),
        int_arg("conflicting_slice_dur", dur),
    ]


class SliceTracker:
    def __init__(
        self,
        storage: TraceStorage,
        stats: Stats,
        name_map: dict[str, str] | None = None,
        translation: ArgsTranslation | None = None,
        logs: ImportLogs | None = None,
    ) -> None:
        self.storage = storage
        self.logs = logs  # where dropped slices are logged (else only counted)
        self.translation = translation if translation is not None else ArgsTranslation()
        self._next_id = storage.next_id  # ids handed out inline: this is the hot path
        self._slice_rows = storage.buffer("slice")
        self.stats = stats
        self.name_map = name_map if name_map is not None else {}  # the trace's slice renames
        self.stacks: dict[int, list[OpenSlice]] = {}
        # Per track, how many slices on its stack already have a duration: when
        # none do (the usual case), there is nothing to close before an event.
        self._ended_on_stack: dict[int, int] = {}

    # -- public API ----------------------------------------------------------
    def begin(
        self,
        ts: int,
        track_id: int,
        category: str | None,
        name: str | None,
        args: list[Arg],
        thread_ts: int | None = None,
        thread_ic: int | None = None,
    ) -> int | None:
        s = self._start_slice(ts, PENDING, track_id, category, name, args, thread_ts, thread_ic)
        return None if s is None else s[S_ID]

    def scoped(
        self,
        ts: int,
        dur: int,
        track_id: int,
        category: str | None,
        name: str | None,
        args: list[Arg],
        thread_ts: int | None = None,
        thread_dur: int | None = None,
        overlap: list | None = None,
    ) -> int | None:
        """A slice whose duration is already known (complete event, instant).

        One that partially overlaps an open slice is dropped and logged; with
        `overlap` (a list) the Overlap is appended instead of logging, so the
        caller can place it elsewhere."""
        if dur < 0:
            self._log("slice_negative_duration", ts)
            return None
        s = self._start_slice(ts, dur, track_id, category, name, args, thread_ts, None, overlap)
        if s is not None:
            s[S_TDUR] = thread_dur
            return s[S_ID]
        return None

    def end(
        self,
        ts: int,
        track_id: int,
        category: str | None,
        name: str | None,
        args: list[Arg],
        thread_ts: int | None = None,
        thread_ic: int | None = None,
    ) -> int | None:
        stack = self.stacks.get(track_id)
        if not stack:
            return None
        if category is None and name is None and not self._ended_on_stack.get(track_id):
            # The usual end: nothing on the stack has ended, so it closes the top.
            s = stack.pop()
            _close(s, ts, args, thread_ts, thread_ic)
            self._write(s)
            return s[S_ID]
        if self._ended_on_stack.get(track_id) and not self._close_finished(stack, ts, PENDING):
            return None
        if not stack:
            return None
        idx = self._matching_open(stack, category, name)
        if idx is None:
            return None
        s = stack[idx]
        _close(s, ts, args, thread_ts, thread_ic)
        self._ended_on_stack[track_id] = self._ended_on_stack.get(track_id, 0) + 1
        if idx == len(stack) - 1:
            self._pop(stack)
        return s[S_ID]

    def add_args(self, track_id: int, args: list[Arg]) -> int | None:
        """Adds args to the innermost slice of the track that has not ended (trace_processor's
        AddArgs with no name or category); None if there is none."""
        stack = self.stacks.get(track_id)
        if not stack:
            return None
        idx = self._matching_open(stack, None, None)
        if idx is None:
            return None
        s = stack[idx]
        s[S_ARGS] = _merge_args(s[S_ARGS], args)
        return s[S_ID]

    def rename_open(self, track_id: int, slice_id: int, name: str | None) -> bool:
        """Renames a slice that is still on its track's stack (not yet written); False if it is not."""
        for s in self.stacks.get(track_id, ()):
            if s[S_ID] == slice_id:
                s[S_NAME] = name
                return True
        return False

    def top_slice(self, track_id: int) -> int | None:
        stack = self.stacks.get(track_id)
        return stack[-1][S_ID] if stack else None

    def flush(self) -> None:
        """End of trace: every slice still on a stack is written as it is."""
        for stack in self.stacks.values():
            while stack:
                self._pop(stack)
        self.stacks.clear()
        self._ended_on_stack.clear()

    # -- internals -----------------------------------------------------------
    def _start_slice(
        self, ts, dur, track_id, category, name, args, thread_ts, thread_ic, overlap: list | None = None
    ) -> OpenSlice | None:
        stack = self.stacks.get(track_id)
        if stack is None:
            stack = self.stacks[track_id] = []
        elif self._ended_on_stack.get(track_id) and not self._close_finished(stack, ts, dur, overlap):
            return None
        depth = len(stack)
        if self.name_map and name in self.name_map:
            name = self.name_map[name]
        if depth >= MAX_DEPTH:
            self._log(
                "slice_max_depth_exceeded",
                ts,
                [string_arg("parent_slice_name", stack[-1][S_NAME]), string_arg("current_slice_name", name)],
            )
            return None
        parent_id = stack[-1][S_ID] if stack else None
        ids = self._next_id
        slice_id = ids["slice"]
        ids["slice"] = slice_id + 1
        s = [slice_id, ts, dur, track_id, category, name, depth, parent_id, args, thread_ts, None, thread_ic, None]
        stack.append(s)
        if dur != PENDING:
            self._ended_on_stack[track_id] = self._ended_on_stack.get(track_id, 0) + 1
        return s

    @staticmethod
    def _matching_open(stack: list[OpenSlice], category, name) -> int | None:
        for i in range(len(stack) - 1, -1, -1):
            s = stack[i]
            if s[S_DUR] != PENDING:
                continue
            if category is not None and s[S_CAT] != category:
                continue
            if name is not None and s[S_NAME] is not None and s[S_NAME] != name:
                continue
            return i
        return None

    def _close_finished(self, stack: list[OpenSlice], new_ts: int, new_dur: int, overlap: list | None = None) -> bool:
        """Pops slices that ended before new_ts; False if the new slice must be dropped."""
        incomplete_descendant = False
        i = len(stack) - 1
        while i >= 0:
            s = stack[i]
            if s[S_DUR] == PENDING:
                incomplete_descendant = True
                i -= 1
                continue
            end_ts = s[S_TS] + s[S_DUR]
            if incomplete_descendant:
                if new_ts <= end_ts:
                    i -= 1
                    continue
                # s ended while children were open: cut them at s's end.
                self.stats.inc("misplaced_end_event")
                while len(stack) - 1 > i:
                    child = stack[-1]
                    child[S_DUR] = end_ts - child[S_TS]
                    self._ended_on_stack[child[S_TRACK]] += 1
                    self._pop(stack)
                self._pop(stack)
                incomplete_descendant = False
                i -= 1
                continue
            if end_ts < new_ts or (end_ts == new_ts and not (s[S_DUR] == 0 and new_dur == 0)):
                self._pop(stack)
                i -= 1
                continue
            if new_dur != PENDING and new_ts < end_ts < new_ts + new_dur:
                info = (new_ts, end_ts, s[S_NAME], s[S_TS], s[S_DUR])
                if overlap is None:
                    self._log("slice_drop_overlapping_complete_event", new_ts, overlap_args(info))
                else:
                    overlap.append(info)
                return False
            i -= 1
        return True

    def _log(self, stat: str, ts: int, args: list[Arg] | None = None) -> None:
        if self.logs is None:
            self.stats.inc(stat)
        else:
            self.logs.record(self.stats, stat, ts, args=args or ())

    def _pop(self, stack: list[OpenSlice]) -> None:
        s = stack.pop()
        if s[S_DUR] != PENDING:
            self._ended_on_stack[s[S_TRACK]] -= 1
        self._write(s)

    def _write(self, s: OpenSlice) -> None:
        args = s[S_ARGS]
        if args and self.translation.keys:
            args = self.translation.translate(args)
        s[S_ARGS] = self.storage.arg_set(args) if args else None
        rows = self._slice_rows
        rows.append(tuple(s))
        if len(rows) >= BATCH_ROWS:
            self.storage.flush("slice")


def _close(s: OpenSlice, ts: int, args, thread_ts: int | None, thread_ic: int | None) -> None:
    """An end event closes s: its duration, the end's args, thread time and instruction deltas."""
    s[S_DUR] = ts - s[S_TS]
    if args:
        s[S_ARGS] = _merge_args(s[S_ARGS], args)
    if thread_ts is not None and s[S_TTS] is not None:
        s[S_TDUR] = thread_ts - s[S_TTS]
    if thread_ic is not None and s[S_TIC] is not None:
        s[S_TICD] = thread_ic - s[S_TIC]


_ARRAY_KEY = re.compile(r"^(.*?)\[(\d+)\](.*)$")


def _merge_args(existing: list[Arg], extra: list[Arg]) -> list[Arg]:
    """Adds an end event's args to its slice's, as trace_processor's inserter does:
    a key already present is replaced in place; arrays continue their numbering
    (begin key[0], key[1]; end key[2], ...)."""
    if not existing:
        return list(extra)
    out = list(existing)
    position = {a[1]: i for i, a in enumerate(out)}
    array_sizes: dict[str, int] = {}
    for a in existing:
        m = _ARRAY_KEY.match(a[1])
        if m:
            array_sizes[m.group(1)] = max(array_sizes.get(m.group(1), 0), int(m.group(2)) + 1)
    for flat_key, key, value_type, value in extra:
        m = _ARRAY_KEY.match(key)
        if m and m.group(1) in array_sizes:
            key = f"{m.group(1)}[{int(m.group(2)) + array_sizes[m.group(1)]}]{m.group(3)}"
        arg = (flat_key, key, value_type, value)
        if key in position:
            out[position[key]] = arg
        else:
            position[key] = len(out)
            out.append(arg)
    return out
