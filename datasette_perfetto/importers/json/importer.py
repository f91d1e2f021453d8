"""Chrome JSON traces (the Trace Event Format), imported as trace_processor imports them.

Two phases, as for proto traces:
1. Tokenize, in file order (reader.py streams the events): each event is
   checked and reduced to a list of plain values, timestamps converted from
   microseconds to nanoseconds, and pushed (pickled) to the external-merge Sorter.
   V8 CPU profiles (`P` events: Profile / ProfileChunk) are unpacked here,
   because their sample times are deltas in file order. In a large trace a
   forked helper tokenizes the second half of the events meanwhile (a split
   import, below: the same events, sorted the same way).
2. Parse, in timestamp order: processes and threads, slices on thread tracks,
   async slices on compressed tracks, counters, instants, flows (v1 and v2),
   metadata events, thread states and V8 samples.

Bad events are counted under trace_processor's stat names
(json_tokenizer_failure, json_parser_failure, flow_*, legacy_v8_*) and the
rest of the file is imported.
"""

from __future__ import annotations

import math
import os
import pickle
import re
import zlib
from collections.abc import Callable
from typing import Any, BinaryIO

from ...import_logs import string_arg
from ...model import TraceContext
from ...scratch import signals_held
from ...stats import Stats
from ...storage import Arg
from ...trackers.async_track_set import AsyncTrackSet
from ...trackers.dimension_tracker import SOURCE_DISTRIBUTED_INFO
from ...trackers.process_tracker import NAME_PRIORITY_OTHER, NAME_PRIORITY_SYSTEM, set_arg
from ...trackers.slice_tracker import overlap_args
from ..common.event_kinds import EV_JSON, EV_SYSTRACE_LINE
from ..common.json_args import add_json_args, add_json_args_deep, big_int_as_double, shared_string
from ..common.options import ImportOptions
from ..common.sorter import Sorter
from ..common.split_helper import Helper, HelperSide, SplitFailed, split_wanted
from ..common.streams import READ_SHARE, file_position, parse_progress, read_progress
from ..common.values import INT64_MAX, INT64_MIN, UINT32_MAX
from .lenient import JsonError, number_value
from .reader import (
    DISPLAY_TIME_UNIT,
    DISTRIBUTED_INFO,
    EVENT,
    METADATA,
    SYSTEM_TRACE_EVENTS,
    JsonTraceReader,
    object_fields,
)
from .v8_profiles import LegacyV8Profiles

# [EV_JSON, phase, pid, tid, flags, name, cat, dur, tts, tdur, id, cookie, bind_id, scope, args, pid_name, tid_name]
(
    J_PHASE,
    J_PID,
    J_TID,
    J_FLAGS,
    J_NAME,
    J_CAT,
    J_DUR,
    J_TTS,
    J_TDUR,
    J_ID,
    J_COOKIE,
    J_BIND_ID,
    J_SCOPE,
    J_ARGS,
    J_PID_NAME,
    J_TID_NAME,
) = range(1, 17)
PID_EXISTS, TID_EXISTS, FLOW_IN, FLOW_OUT, BIND_ENCLOSING = 1, 2, 4, 8, 16

# Async cookie kinds: `id` and `id2.global` name the same global space; `id2.local` is per process.
COOKIE_GLOBAL, COOKIE_LOCAL = 1, 2

# Events wait in the sorter pickled: a decoded event with its args dict takes
# several times the memory of its pickle.
RUN_EVENTS = 20_000
SPILL_BATCH = 500
_dumps, _loads, _PICKLE_PROTOCOL = pickle.dumps, pickle.loads, pickle.HIGHEST_PROTOCOL

_TS_MIN, _TS_MAX = INT64_MIN // 1000, INT64_MAX // 1000  # microseconds that fit in int64 nanoseconds
# A sentinel for absent fields; Any, so that `get(key, _MISSING)` keeps the JSON value type (Any).
_MISSING: Any = object()
NO_NAME = "[No name]"
# Sort keys at equal timestamps (trace_processor's JSON ordering, used once an
# 'X' event has been seen): ends first, then complete events longest first,
# then everything else in file order.
KEY_END, KEY_OTHER = INT64_MIN, INT64_MAX
# The phases whose args become the args of a slice (flattened when tokenized); the others' are read
# as the object they are (counters, metadata events, thread states, V8 profiles).
_SLICE_PHASES = frozenset("BEXiIRben")
_SCOPES = ("g", "p", "t")  # an instant's `s`: global, process, thread

# A split import (two processes tokenizing, common/split_helper.py): the helper's events sort after
# the importer's first share (arrival numbers from HELPER_ARRIVAL << 32 on, one block of 2^32 per
# event), and what the importer reads after the helper's share after those.
HELPER_ARRIVAL = 1 << 40
AFTER_HELPER_ARRIVAL = 1 << 41
# Where the helper starts, as a share of the JSON text: each reads and tokenizes about half, the
# helper a little less (it reads through the importer's share first; measured on Chromium's trace).
HELPER_SHARE_STARTS = 0.53

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


class BadValue(Exception):
    pass


def _round_half_away(x: float) -> int:
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def to_ns(value) -> int:
    """A JSON timestamp or duration in microseconds as integer nanoseconds (trace_processor's CoerceToTs).

    Numbers in strings are accepted when the whole string is one JSON number."""
    t = type(value)
    if t is int:
        if not INT64_MIN <= value <= INT64_MAX:
            return to_ns(big_int_as_double(value))  # read as a double, as trace_processor does
        ns = value * 1000
    elif t is float:
        if not math.isfinite(value):
            raise BadValue(value)
        ns = int(value) * 1000 if value == math.trunc(value) else _round_half_away(value * 1000.0)
    elif t is str:
        if _NUMBER.fullmatch(value) is None:
            raise BadValue(value)
        try:
            number = number_value(value)  # any number of digits; beyond int64 a double
        except JsonError:
            raise BadValue(value) from None
        return to_ns(number)
    else:
        raise BadValue(value)
    if not INT64_MIN <= ns <= INT64_MAX:
        raise BadValue(value)
    return ns


def _uint32(value) -> int:
    """trace_processor's CoerceToUint32: out-of-range values become 0."""
    if type(value) is float:
        if not math.isfinite(value):
            return 0
        value = int(value)
    return value if 0 <= value <= UINT32_MAX else 0


def _string_id(s: str) -> int:
    """A stable number for a pid/tid given as a string (trace_processor uses the interned string's id)."""
    return zlib.crc32(s.encode("utf-8", "surrogatepass"))


def _event_id(value):
    """An `id`, `bind_id` or `id2` value: a string, or an integer as uint64; None for anything else."""
    t = type(value)
    if t is str:
        return value
    if t is int and INT64_MIN <= value <= INT64_MAX:
        return value & 0xFFFFFFFFFFFFFFFF
    return None


def _flow_id(value) -> int | None:
    """Flow ids given as strings are hexadecimal."""
    if type(value) is str:
        try:
            return int(value, 16) & 0xFFFFFFFFFFFFFFFF
        except ValueError:
            return None
    return value


class DeepArgs(dict):
    """An event's args nested too deep to pickle: the top-level fields (a nested value as
    None) for the phases that read fields, and `flat`, every arg already flattened."""

    flat: list[Arg]


def _deep_args(args: dict) -> DeepArgs:
    out = DeepArgs((k, v if type(v) is not dict and type(v) is not list else None) for k, v in args.items())
    out.flat = []
    add_json_args_deep(out.flat, "args", "args", args)
    return out


def _event_args(args) -> list[Arg]:
    """An event's args flattened; args the tokenizer flattened already (a list) as they are."""
    if type(args) is list:
        return args
    out: list[Arg] = []
    if args:
        if type(args) is DeepArgs:
            return list(args.flat)
        try:
            add_json_args(out, "args", "args", args)
        except RecursionError:  # deeper than Python's stack: trace_processor reads any depth
            out = []
            add_json_args_deep(out, "args", "args", args)
    return out


def metadata_value(value, text: str):
    """A top-level metadata field as trace_processor stores it; None for null (dropped)."""
    t = type(value)
    if t is bool:
        return int(value)
    if t is int:
        if INT64_MIN <= value <= INT64_MAX:
            return value
        value = big_int_as_double(value)
        t = float
    if t is float:
        if math.isfinite(value) and value == math.trunc(value) and abs(value) < 9.2e18:
            return int(value)
        return f"{value:g}"
    if t is str:
        return value
    if t is dict or t is list or (value is None and text[:1] in ("{", "[")):
        return text  # as written in the file
    return None


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _durations(ev: dict) -> tuple[int | None, int | None, int | None]:
    """(dur, tts, tdur) in ns, None where missing; raises BadValue for an invalid one."""
    dur = ev.get("dur", _MISSING)
    if type(dur) is int and _TS_MIN <= dur <= _TS_MAX:
        dur *= 1000
    else:
        dur = None if dur is _MISSING else to_ns(dur)
    tts = to_ns(ev["tts"]) if "tts" in ev else None
    tdur = to_ns(ev["tdur"]) if "tdur" in ev else None
    return dur, tts, tdur


def estimated_text_size(path: str, size: int) -> int:
    """The size of a JSON trace's text: the file's, or a gzip file's inflated size as its trailer
    records it (modulo 4 GiB, and of the last member only: an estimate)."""
    try:
        with open(path, "rb") as f:
            if f.read(2) != b"\x1f\x8b":
                return size
            f.seek(-4, os.SEEK_END)
            return max(int.from_bytes(f.read(4), "little"), size)
    except OSError:
        return size


def _pid_or_tid(value: object) -> tuple[int, str | None, bool]:
    """(number, the value if a string, whether there is one) of a `pid` or `tid` field."""
    if type(value) is int:
        return (value if 0 <= value <= UINT32_MAX else 0), None, True
    if type(value) is str:
        return _string_id(value), value, True
    if type(value) is float:
        return _uint32(value), None, True
    return 0, None, False


def _id2_cookie(id2: dict) -> tuple[int, object] | None:
    """The async cookie of an `id2` object: its global id, else its local one."""
    global_id, local_id = _event_id(id2.get("global")), _event_id(id2.get("local"))
    if global_id is not None:
        return (COOKIE_GLOBAL, global_id)
    if local_id is not None:
        return (COOKIE_LOCAL, local_id)
    return None


class JsonImporter:
    def __init__(self, trace: TraceContext, options: ImportOptions | None = None) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.sorter: Sorter[bytes] = Sorter(RUN_EVENTS, SPILL_BATCH)  # pickled events
        self.v8 = LegacyV8Profiles(trace)
        self.parser = JsonEventParser(trace, self.v8)
        self._seen_complete_event = False
        self.rank: int | None = None  # distributedInfo.rank (PyTorch distributed training)
        self._first_upid = trace.storage.next_id["process"]
        self._systrace: Any = None  # a SystraceImporter, for `systemTraceEvents`
        self._system_lines = 0
        self.options = options or ImportOptions()
        self._helper: Helper | None = None  # a split import's helper, until it hands its share over
        self._flatten_args = False  # slice args flattened when tokenized (a split import), not when parsed

    def run(self, stream: BinaryIO, progress: Callable[[float], None]) -> None:
        """Imports the trace; progress(f) reports the share done, 0 to 1
        (reading the file is the first half, parsing the sorted events the second)."""
        reader = JsonTraceReader(stream, self.stats)
        try:
            self._read(reader, progress)
        finally:
            if self._helper is not None:  # never handed its share (or an error): not needed
                self._helper.stop()
                self._helper = None
        self._parse(reader, progress)

    def _read(self, reader: JsonTraceReader, progress: Callable[[float], None]) -> None:
        """The first phase: every event tokenized, in file order (a share of them by the helper)."""
        size = max(self.trace.size, 1)
        position = file_position(reader.stream)
        source = self.trace.source
        # An archive member's size is its inflated one already (a gzipped member's is a low estimate).
        text_size = self.trace.size if source.members else estimated_text_size(source.path, self.trace.size)
        reopen = self.options.reopen
        if reopen is not None and split_wanted(self.options.split_tokenize, text_size):
            split_at = int(text_size * HELPER_SHARE_STARTS)
            self._flatten_args = True  # in both processes: set before the fork
            with signals_held():  # forked and bound as one step: run() stops it whenever a signal comes
                self._helper = Helper(lambda side: self._helper_share(side, reopen, split_at))
            reader.handoff_at, reader.handoff = split_at, self._take_helper_share
        tokenize = self.tokenize
        for kind, value in reader.parts():
            if kind == EVENT:
                tokenize(value)
                if reader.events_read & 0x3FFF == 0:
                    progress(read_progress(position(), size))
            elif kind == METADATA:
                self._metadata(value)
            elif kind == SYSTEM_TRACE_EVENTS:
                self._system_trace_line(value)
            elif kind == DISPLAY_TIME_UNIT:
                # Ignored, as by trace_processor and catapult: timestamps are always microseconds.
                self.stats.inc("json_display_time_unit")
            elif kind == DISTRIBUTED_INFO:
                rank = value.get("rank")
                if isinstance(rank, int) and not isinstance(rank, bool):
                    self.rank = rank

    def _parse(self, reader: JsonTraceReader, progress: Callable[[float], None]) -> None:
        """The second phase: every tokenized event, in timestamp order."""
        self.trace.packets_read = reader.events_read + self._system_lines
        progress(READ_SHARE)
        parse_event, parse_sample = self.parser.parse, self.v8.parse_sample
        total = max(self.sorter.count, 1)
        loads = _loads
        for i, (ts, blob) in enumerate(self.sorter.drain()):
            event = loads(blob)
            if event[0] == EV_JSON:
                parse_event(ts, event)
            elif event[0] == EV_SYSTRACE_LINE:
                self._systrace.parse(ts, event[1:])
            else:
                parse_sample(ts, event)
            if i & 0x3FFF == 0:
                progress(parse_progress(i, total))
        progress(1.0)
        if self._systrace is not None:
            self._systrace.ftrace.finish()
        self.v8.finish()
        if self.rank is not None:
            # The trace is one rank's: every process it holds is that rank's (a custom dimension).
            for upid in range(self._first_upid, self.trace.storage.next_id["process"]):
                self.trace.dimensions.on_owner(
                    "process", upid, "rank", self.rank, f"rank {self.rank}", source=SOURCE_DISTRIBUTED_INFO
                )
        # Every flow is written: let go of the parser's flow state (the collector is off during ingest).
        self.trace.flows.args_of = None

    def _system_trace_line(self, line: str) -> None:
        """A line of `systemTraceEvents` (ftrace text): parsed as a systrace file's lines and
        sorted with the JSON events (trace_processor's SystraceLineParser)."""
        self._system_lines += 1
        if not line or line.startswith("#"):
            return
        if self._systrace is None:
            from ..systrace.importer import SystraceImporter  # only for traces that have some

            self._systrace = SystraceImporter(self.trace)
        event = self._systrace.line_event(line.encode("utf-8", "surrogatepass"))
        if event is not None:
            ts, fields = event
            self.sorter.push(ts, _dumps((EV_SYSTRACE_LINE, *fields), _PICKLE_PROTOCOL), KEY_OTHER)

    def _metadata(self, text: str) -> None:
        for key, value, raw in object_fields(text):
            stored = metadata_value(value, raw)
            if stored is not None:
                self.trace.set_metadata(f"json_metadata.{key}", stored)

    # -- tokenizer -------------------------------------------------------------
    def tokenize(self, ev: dict) -> None:
        if not ev:
            return  # `{}`: a common filler element (e.g. to avoid a trailing comma), skipped silently
        get = ev.get
        ph = get("ph")
        phase = ph[0] if type(ph) is str and ph else None
        ts = get("ts", _MISSING)
        if type(ts) is int and _TS_MIN <= ts <= _TS_MAX:  # whole microseconds: the common case
            ts *= 1000
        else:
            try:
                ts = to_ns(ts)
            except BadValue:
                ts = None
        dur = get("dur", _MISSING)
        if (dur is _MISSING or type(dur) is int and _TS_MIN <= dur <= _TS_MAX) and "tts" not in ev and "tdur" not in ev:
            dur, tts, tdur = None if dur is _MISSING else dur * 1000, None, None  # the common case, inline
        else:
            try:
                dur, tts, tdur = _durations(ev)
            except BadValue:
                self.stats.inc("json_tokenizer_failure")
                return
        if phase is None:
            self.stats.inc("json_tokenizer_failure")
            return
        if ts is None:
            if phase != "M":
                self.stats.inc("json_tokenizer_failure")
                return
            ts = 0  # metadata events need no timestamp
        pid, tid = get("pid"), get("tid")
        # Integers, the common case, inline.
        pid, pid_name, has_pid = (
            (pid if 0 <= pid <= UINT32_MAX else 0, None, True) if type(pid) is int else _pid_or_tid(pid)
        )
        tid, tid_name, has_tid = (
            (tid if 0 <= tid <= UINT32_MAX else 0, None, True) if type(tid) is int else _pid_or_tid(tid)
        )
        flags = (PID_EXISTS if has_pid else 0) | (TID_EXISTS if has_tid else 0)
        if tid == 0 and pid != 0 and tid_name is None:
            tid = pid  # no thread: the process's main thread
        name, cat = get("name"), get("cat")
        name = name if type(name) is str and name else None
        cat = cat if type(cat) is str and cat else None
        event_id = _event_id(get("id"))
        if event_id is not None:
            cookie: tuple | None = (COOKIE_GLOBAL, event_id)
        else:
            id2 = get("id2")
            cookie = _id2_cookie(id2) if type(id2) is dict else None
        args = get("args")
        args = args if type(args) is dict else None
        # In a split import a slice's args are flattened here, where its two processes share the work (alone,
        # when parsed: the pickled object is smaller than its flattened args).
        stored_args = _event_args(args) if args and self._flatten_args and phase in _SLICE_PHASES else args
        if phase == "P":
            self.v8.tokenize_profile(ev, pid, tid, event_id, args, self._push_sample)
            return
        if ts < 0:
            self.stats.inc("trace_sorter_negative_timestamp_dropped")
            return
        if get("flow_in") is True:
            flags |= FLOW_IN
        if get("flow_out") is True:
            flags |= FLOW_OUT
        if get("bp") == "e":
            flags |= BIND_ENCLOSING
        scope = get("s")
        scope = scope if scope in _SCOPES else None
        if phase == "X":
            self._seen_complete_event = True
        # trace_processor's order at equal timestamps once an 'X' event has been seen: ends
        # first, then complete events longest first, then the rest in file order.
        key = KEY_OTHER
        if self._seen_complete_event:
            key = KEY_END if phase == "E" else INT64_MAX - dur if phase == "X" and dur is not None else KEY_OTHER
        record = [
            EV_JSON,
            phase,
            pid,
            tid,
            flags,
            name,
            cat,
            dur,
            tts,
            tdur,
            event_id,
            cookie,
            _event_id(get("bind_id")),
            scope,
            stored_args,
            pid_name,
            tid_name,
        ]
        try:
            blob = _dumps(record, _PICKLE_PROTOCOL)
        except RecursionError:  # args nested too deep to pickle: flattened now
            record[J_ARGS] = _deep_args(args) if args is not None else None
            blob = _dumps(record, _PICKLE_PROTOCOL)
        self.sorter.push(ts, blob, key)

    # -- a split import ------------------------------------------------------------
    # The helper reads the JSON text from about its middle (the first event boundary after
    # split_at) to the end of that events array, tokenizing into sorted runs of its own; the
    # importer reads up to that event and takes the runs over. Tokenizing depends on earlier
    # events in two ways only: V8 profile chunks (`P` events, whose sample times are deltas),
    # which the helper passes to the importer to tokenize in file order, and an `E` event's sort
    # key, which depends on whether an `X` event came before it (the importer's share included):
    # the helper queues each `E` before its own first `X` both ways, and the importer keeps one.

    def _helper_share(self, side: HelperSide, reopen: Callable[[], BinaryIO], split_at: int) -> dict | None:
        """In the helper: tokenizes the events from the first boundary after `split_at` to the end of
        their array; returns what the importer needs to take them over (None: no boundary found)."""
        counted = self.stats = Stats()  # the counts of its share, added to the importer's
        self.trace.model.storage.writer = None  # the importer's: never to be written from here
        with reopen() as stream:
            reader = JsonTraceReader(stream, counted)
            bare_array = reader.is_bare_array()
            start = reader.next_event_start(split_at)
            side.note(start)
            if start is None:
                return None
            events: Sorter[bytes] = Sorter(RUN_EVENTS, SPILL_BATCH, spill_dir=side.runs)
            ends_after_x: Sorter[bytes] = Sorter(RUN_EVENTS, SPILL_BATCH, spill_dir=side.runs)
            ends_before_x: Sorter[bytes] = Sorter(RUN_EVENTS, SPILL_BATCH, spill_dir=side.runs)
            uncounted = Stats()  # an `E` event queued the second way counts nothing twice
            profiles_path = os.path.join(side.runs, "profiles.pickle")
            profiles = 0
            tokenize = self.tokenize
            index = HELPER_ARRIVAL
            with open(profiles_path, "wb") as deferred:
                share = reader.events_from_here(bare_array)
                while True:
                    try:
                        _, ev = next(share)
                    except StopIteration as done:
                        closed = done.value
                        break
                    base = index << 32
                    index += 1
                    ph = ev.get("ph")
                    if type(ph) is str and ph[:1] == "P":
                        pickle.dump((base, ev), deferred, protocol=_PICKLE_PROTOCOL)
                        profiles += 1
                    elif not self._seen_complete_event and type(ph) is str and ph[:1] == "E":
                        self.sorter = ends_before_x
                        ends_before_x.arrival_base = base
                        tokenize(ev)
                        self.sorter, self.stats, self._seen_complete_event = ends_after_x, uncounted, True
                        ends_after_x.arrival_base = base
                        tokenize(ev)
                        self.stats, self._seen_complete_event = counted, False
                    else:
                        self.sorter = events
                        events.arrival_base = base
                        tokenize(ev)
            return {
                "end": reader.dropped + reader.pos,
                "closed": closed,
                "events_read": reader.events_read,
                "stats": (counted.single, counted.indexed),
                "saw_x": self._seen_complete_event,
                "events": events.handover(),
                "ends_after_x": ends_after_x.handover(),
                "ends_before_x": ends_before_x.handover(),
                "profiles": (profiles_path, profiles),
            }

    def _take_helper_share(self, at: int) -> tuple[int, bool, int] | None:
        """In the importer, at the first event starting at or after the split: takes the helper's
        events over if its share starts at this event (`at`); returns where the share ended, whether
        the array was closed there and how many events it read, or None (this process reads on alone)."""
        helper = self._helper
        assert helper is not None
        try:
            if helper.note() != at:
                raise SplitFailed("the helper's share does not start at an event")
            share = helper.result()
        except SplitFailed:
            self._helper = None
            helper.stop()
            return None
        self._helper = None
        try:
            stats = Stats()
            stats.single, stats.indexed = share["stats"]
            # Reading on past the share, this process meets the input's end as the helper did.
            stats.single.pop("compressed_file_truncated", None)
            self.stats.add(stats)
            self.sorter.take_over(*share["events"])
            self.sorter.take_over(*share["ends_after_x" if self._seen_complete_event else "ends_before_x"])
            path, count = share["profiles"]
            if count:
                with open(path, "rb") as deferred:
                    for _ in range(count):
                        base, ev = pickle.load(deferred)
                        self.sorter.arrival_base = base
                        self.tokenize(ev)
            self._seen_complete_event = self._seen_complete_event or share["saw_x"]
            self.sorter.arrival_base = AFTER_HELPER_ARRIVAL << 32
        finally:
            helper.discard_runs()
        return share["end"], share["closed"], share["events_read"]

    def _push_sample(self, ts: int, sample: tuple) -> None:
        if ts < 0:
            self.stats.inc("trace_sorter_negative_timestamp_dropped")
            return
        self.sorter.push(ts, _dumps(sample, _PICKLE_PROTOCOL), KEY_OTHER)


class JsonEventParser:
    """Parses sorted JSON events (trace_processor's JsonTraceParser)."""

    def __init__(self, trace: TraceContext, v8: LegacyV8Profiles) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.procs = trace.processes
        self.tracks = trace.tracks
        self.slices = trace.slices
        self.logs = trace.import_logs
        self._ts = 0  # timestamp of the event being parsed, for import logs
        self.flows = trace.flows
        self.v8 = v8
        self._threads: dict[tuple[int, int], int] = {}  # (tid, pid) -> utid
        self._thread_tracks: dict[int, int] = {}  # utid -> thread_execution track
        self._v1_flow_ids: dict[int, int] = {}  # hash of (source id, category, name) -> flow id (dense from 0)
        self._v1_flow_args: list[list[Arg]] = []  # flow id -> its name and category as args
        self._flow_names: dict[tuple, list[Arg]] = {}  # (name, category) -> those args, shared
        self.flows.args_of = self._flow_args
        self._pending_flows: dict[int, list[int]] = {}  # track -> v1 flow ids waiting for its next slice
        self._async_root_names: dict[tuple, str | None] = {}  # cookie -> name of the first event seen with it
        self._async_sets: dict[tuple, AsyncTrackSet] = {}
        self._overlap_sets: dict[int, OverlapTrackSet] = {}  # utid -> overflow tracks for overlapping X events
        self._chrome_source = [("source", "source", "string", "chrome")]

    def utid(self, tid: int, pid: int) -> int:
        key = (tid, pid)
        utid = self._threads.get(key)
        if utid is None:
            utid = self._threads[key] = self.procs.update_thread(tid, pid)
        return utid

    def thread_track(self, utid: int) -> int:
        track = self._thread_tracks.get(utid)
        if track is None:
            track = self._thread_tracks[utid] = self.tracks.intern("thread_execution", (("utid", utid),), "slice")
        return track

    def parse(self, ts: int, ev: list) -> None:
        phase, pid, tid = ev[J_PHASE], ev[J_PID], ev[J_TID]
        self._ts = ts
        # Names and categories repeat: one string each, not one per event, in buffered rows and caches.
        if ev[J_NAME] is not None:
            ev[J_NAME] = shared_string(ev[J_NAME])
        if ev[J_CAT] is not None:
            ev[J_CAT] = shared_string(ev[J_CAT])
        if ev[J_PID_NAME] is not None:
            upid = self.procs.get_or_create_process(pid)
            self.procs.set_process_name(upid, ev[J_PID_NAME], NAME_PRIORITY_SYSTEM)
        if ev[J_TID_NAME] is not None:
            self.procs.set_thread_name(self.procs.get_or_create_thread(tid), ev[J_TID_NAME], NAME_PRIORITY_OTHER)
        utid = self.utid(tid, pid)

        if phase == "X":
            self._complete(ts, ev, utid)
        elif phase == "B":
            track = self.thread_track(utid)
            slice_id = self.slices.begin(
                ts, track, ev[J_CAT], ev[J_NAME] or NO_NAME, _event_args(ev[J_ARGS]), ev[J_TTS]
            )
            self._slice_started(ev, track, slice_id)
        elif phase == "E":
            self.slices.end(ts, self.thread_track(utid), ev[J_CAT], ev[J_NAME], _event_args(ev[J_ARGS]), ev[J_TTS])
        elif phase in ("i", "I", "R"):
            self._instant(ts, ev, utid)
        elif phase in ("b", "e", "n"):
            self._async(ts, ev)
        elif phase == "C":
            self._counter(ts, ev, utid)
        elif phase in ("s", "t", "f"):
            self._flow_v1(ev, utid)
        elif phase == "M":
            self._metadata_event(ev, utid)
        elif phase == "T":
            self._thread_state(ts, ev, utid)
        # Any other phase (object snapshots O/N/D, legacy S/T/F, ...) only makes its
        # process and thread known, as in trace_processor.

    def _event_error(self, ev: list, stat: str, extra: list[Arg] | None = None) -> None:
        """Counts `stat` for the event being parsed and logs it with the event's name and phase
        (trace_processor's JsonTraceParser::RecordEventError)."""
        phase = ev[J_PHASE]
        args = [string_arg("event_name", ev[J_NAME]), string_arg("event_phase", phase[:1] if phase else phase)]
        self.logs.record(self.stats, stat, self._ts, args=args + extra if extra else args)

    # -- slices ------------------------------------------------------------------
    def _slice_started(self, ev: list, track: int, slice_id: int | None, v2_flows: bool = True) -> None:
        """After a slice began on `track`: v1 flows waiting for it, then the event's own v2 flow
        (instants have none, as in trace_processor)."""
        if slice_id is None:
            return
        if self._pending_flows:
            waiting = self._pending_flows.pop(track, None)
            if waiting:
                for flow_id in waiting:
                    self.flows.bind_pending(flow_id, slice_id)
        if v2_flows and ev[J_BIND_ID] is not None:
            self._flow_v2(ev, slice_id)

    def _complete(self, ts: int, ev: list, utid: int) -> None:
        dur = ev[J_DUR]
        if dur is None:
            self._event_error(ev, "json_parser_failure")
            return
        track = self.thread_track(utid)
        name = ev[J_NAME] or NO_NAME
        overlap: list = []
        slice_id = self.slices.scoped(
            ts, dur, track, ev[J_CAT], name, _event_args(ev[J_ARGS]), ev[J_TTS], ev[J_TDUR], overlap=overlap
        )
        if overlap:
            # It partially overlaps a slice of its thread, so it cannot nest there: it goes
            # to an overflow track of the thread instead of being dropped (trace_processor
            # does the same and counts it).
            self._event_error(ev, "slice_spill_overlapping_complete_event", overlap_args(overlap[0]))
            lanes = self._overlap_sets.get(utid)
            if lanes is None:
                lanes = self._overlap_sets[utid] = OverlapTrackSet(self._overflow_track_factory(utid))
            track = lanes.track_for(ts, dur)
            slice_id = self.slices.scoped(
                ts, dur, track, ev[J_CAT], name, _event_args(ev[J_ARGS]), ev[J_TTS], ev[J_TDUR]
            )
        self._slice_started(ev, track, slice_id)

    def _overflow_track_factory(self, utid: int) -> Callable[[int], int]:
        group = self.trace.new_track_group()

        def make(idx: int) -> int:
            track = self.tracks.create("thread_overlapping_slice", (("utid", utid), ("track_compressor_idx", idx)))
            self.tracks.row(track).track_group_id = group
            return track

        return make

    def _instant(self, ts: int, ev: list, utid: int) -> None:
        scope = ev[J_SCOPE]
        if scope == "g":
            track = self.tracks.intern("legacy_chrome_global_instants", (), "slice")
        elif scope == "p":
            if not ev[J_FLAGS] & PID_EXISTS:
                self._event_error(ev, "json_parser_failure")
                return
            upid = self.procs.get_or_create_process(ev[J_PID])
            track = self.tracks.intern("chrome_process_instant", (("upid", upid),), "slice")
        else:
            if not ev[J_FLAGS] & TID_EXISTS:
                self._event_error(ev, "json_parser_failure")
                return
            track = self.thread_track(utid)
            slice_id = self.slices.scoped(
                ts, 0, track, ev[J_CAT], ev[J_NAME] or NO_NAME, _event_args(ev[J_ARGS]), ev[J_TTS]
            )
            self._slice_started(ev, track, slice_id, v2_flows=False)
            return
        row = self.tracks.row(track)
        if not row.source_args:
            row.source_args = self._chrome_source
        # Global and process instants keep a missing name as NULL (only thread ones get "[No name]").
        slice_id = self.slices.scoped(ts, 0, track, ev[J_CAT], ev[J_NAME], _event_args(ev[J_ARGS]))
        self._slice_started(ev, track, slice_id, v2_flows=False)

    def _async(self, ts: int, ev: list) -> None:
        cookie = ev[J_COOKIE]
        if not ev[J_FLAGS] & PID_EXISTS or cookie is None:
            self._event_error(ev, "json_parser_failure")
            return
        upid = self.procs.get_or_create_process(ev[J_PID])
        phase, name, cat = ev[J_PHASE], ev[J_NAME], ev[J_CAT]
        track = self._async_track(
            upid,
            cookie[0] == COOKIE_LOCAL,
            (cat, cookie[1]),
            name,
            "begin" if phase == "b" else "end" if phase == "e" else "instant",
        )
        if phase == "b":
            slice_id = self.slices.begin(ts, track, cat, name or NO_NAME, _event_args(ev[J_ARGS]))
            self._slice_started(ev, track, slice_id)
        elif phase == "e":
            # No thread time: it is not well defined for async slices.
            self.slices.end(ts, track, cat, name, _event_args(ev[J_ARGS]))
        else:
            slice_id = self.slices.scoped(ts, 0, track, cat, name, _event_args(ev[J_ARGS]))
            self._slice_started(ev, track, slice_id)

    def _async_track(self, upid: int, process_scoped: bool, cookie: tuple, name: str | None, kind: str) -> int:
        """trace_processor's InternLegacyAsyncTrack: one set of tracks per (scope, first name seen
        for the id); each track of the set carries one id at a time, so overlapping ids get
        separate tracks."""
        if process_scoped:
            name = self.trace.process_track_name_map.get(name, name) if name is not None else None
            root_key = (upid, cookie)
            typ = "legacy_async_process_slice"
        else:
            root_key = cookie
            typ = "legacy_async_global_slice"
        root_name = self._async_root_names.setdefault(root_key, name)
        dims = ((("upid", upid),) if process_scoped else ()) + (("scope", None), ("name", root_name))
        track_set = self._async_sets.get((typ, dims))
        if track_set is None:
            group = self.trace.new_track_group()
            source_args = self._chrome_source + [
                ("trace_id_is_process_scoped", "trace_id_is_process_scoped", "bool", int(process_scoped)),
                ("upid", "upid", "uint", upid),
                ("source_scope", "source_scope", "string", None),
            ]

            def make(idx: int, name: str | None) -> int:
                track = self.tracks.create(typ, dims + (("track_compressor_idx", idx),), "slice", name)
                row = self.tracks.row(track)
                row.source_args = source_args
                row.track_group_id = group
                return track

            track_set = self._async_sets[(typ, dims)] = AsyncTrackSet(make)
        return track_set.track_for(cookie, kind, name)

    # -- counters --------------------------------------------------------------
    def _counter(self, ts: int, ev: list, utid: int) -> None:
        args = ev[J_ARGS]
        if args is None:
            self._event_error(ev, "json_parser_failure")
            return
        prefix = ev[J_NAME] or ""
        if type(ev[J_ID]) is str and ev[J_ID]:
            prefix += " id: " + ev[J_ID]
        upid = self.procs.thread(utid).upid
        counter_args = [("utid", "utid", "uint", utid)]
        for key, value in args.items():
            t = type(value)
            if t is int:
                number = float(value)
            elif t is float:
                number = value
            elif t is str:
                try:
                    number = float(value)
                except ValueError:
                    self._event_error(ev, "json_parser_failure")
                    continue
            else:
                self._event_error(ev, "json_parser_failure")
                continue
            name = f"{prefix} {key}"
            if upid is not None:
                track = self.tracks.intern("json_counter", (("upid", upid), ("name", name)), "counter", name)
            else:
                track = self.tracks.intern(
                    "json_counter_thread_fallback", (("utid", utid), ("name", name)), "counter", name
                )
            self.trace.insert_counter(ts, track, number, counter_args)

    # -- flows -----------------------------------------------------------------
    def _flow_v1(self, ev: list, utid: int) -> None:
        track = self.thread_track(utid)
        source_id = _flow_id(ev[J_ID]) if ev[J_ID] is not None else None
        if source_id is None:
            self._event_error(ev, "flow_invalid_id")
            return
        name, cat = ev[J_NAME], ev[J_CAT]
        # Keyed by a 64-bit hash of (id, category, name): one int per flow instead of a tuple.
        key = hash((source_id, cat, name))
        flow_id = self._v1_flow_ids.get(key)
        if flow_id is None:
            # Flow ids numbered as first seen, named by their event (trace_processor's v1 flow ids).
            flow_id = self._v1_flow_ids[key] = len(self._v1_flow_ids)
            args = self._flow_names.get((name, cat))
            if args is None:
                args = self._flow_names[(name, cat)] = [("name", "name", "string", name), ("cat", "cat", "string", cat)]
            self._v1_flow_args.append(args)
        phase = ev[J_PHASE]
        if phase == "s":
            self.flows.begin(flow_id, self.slices.top_slice(track))
        elif phase == "t":
            self.flows.step(flow_id, self.slices.top_slice(track))
        elif ev[J_FLAGS] & BIND_ENCLOSING:
            self.flows.end(flow_id, self.slices.top_slice(track), bind_enclosing=True, close=False)
        else:
            # Binds to the next slice that begins on this track.
            self._pending_flows.setdefault(track, []).append(flow_id)

    def _flow_args(self, flow_id: int) -> list[Arg] | None:
        # v1 flows share their id space with v2 bind ids, as in trace_processor.
        return self._v1_flow_args[flow_id] if 0 <= flow_id < len(self._v1_flow_args) else None

    def _flow_v2(self, ev: list, slice_id: int) -> None:
        flow_id = _flow_id(ev[J_BIND_ID])
        if flow_id is None:
            return
        flags = ev[J_FLAGS]
        if flags & FLOW_IN and flags & FLOW_OUT:
            self.flows.step(flow_id, slice_id)
        elif flags & FLOW_OUT:
            self.flows.begin(flow_id, slice_id)
        elif flags & FLOW_IN:
            self.flows.end(flow_id, slice_id, bind_enclosing=True, close=False)
        else:
            self._event_error(ev, "flow_without_direction")

    # -- metadata events, thread states ------------------------------------------
    def _metadata_event(self, ev: list, utid: int) -> None:
        args, name = ev[J_ARGS], ev[J_NAME]
        if not args or name not in ("thread_name", "process_name", "process_sort_index", "thread_sort_index"):
            return
        if name.endswith("sort_index"):
            value = args.get("sort_index", None)
            if "sort_index" not in args:
                return
            t = type(value)
            if t is not int and t is not float:
                self._event_error(ev, "json_parser_failure")
                return
            if t is float and not math.isfinite(value):
                self._event_error(ev, "json_parser_failure")
                return
            hint = _int32(int(value))
            if name == "process_sort_index":
                row = self.procs.process(self.procs.get_or_create_process(ev[J_PID]))
                set_arg(row, "process_sort_index_hint", "int", hint)
            else:
                thread_row = self.procs.thread(utid)
                set_arg(thread_row, "thread_sort_index_hint", "int", hint)
            return
        if "name" not in args:
            return
        value = args["name"]
        if type(value) is not str or not value:
            self._event_error(ev, "json_parser_failure")
            return
        if name == "thread_name":
            self.procs.set_thread_name(utid, value, NAME_PRIORITY_OTHER)
        else:
            self.procs.set_process_name(self.procs.get_or_create_process(ev[J_PID]), value, NAME_PRIORITY_SYSTEM)

    def _thread_state(self, ts: int, ev: list, utid: int) -> None:
        """'T' events: a thread state (and, for Running with a cpu, a sched slice)."""
        dur = ev[J_DUR]
        if dur is None:
            self._event_error(ev, "json_parser_failure")
            return
        state = ev[J_NAME] or NO_NAME
        cpu = io_wait = blocked_function = None
        args = ev[J_ARGS]
        if args:
            value = args.get("cpu")
            if type(value) is int:
                cpu = value & UINT32_MAX
            value = args.get("io_wait")
            if type(value) is int:
                io_wait = value & UINT32_MAX
            value = args.get("blocked_function")
            if type(value) is str:
                blocked_function = value
        storage = self.trace.storage
        storage.insert("thread_state", (ts, dur, utid, state, io_wait, blocked_function, None, None, None, None))
        if state == "Running" and cpu is not None:
            storage.insert("sched", (ts, dur, utid, None, 0, self.trace.cpu(cpu)))


class OverlapTrackSet:
    """Overflow lanes for complete events that overlap their thread's slices (trace_processor's
    LegacyOverlappingScoped): the first lane where the slice nests in the innermost open
    slice or follows all of them; events arrive in timestamp order."""

    __slots__ = ("make", "tracks", "open_ends")

    def __init__(self, make: Callable[[int], int]) -> None:
        self.make = make
        self.tracks: list[int] = []
        self.open_ends: list[list[int]] = []

    def track_for(self, ts: int, dur: int) -> int:
        end = ts + dur
        for i, ends in enumerate(self.open_ends):
            while ends and ends[-1] <= ts:
                ends.pop()
            if not ends or end <= ends[-1]:
                ends.append(end)
                return self.tracks[i]
        self.tracks.append(self.make(len(self.tracks)))
        self.open_ends.append([end])
        return self.tracks[-1]
