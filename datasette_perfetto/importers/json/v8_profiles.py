"""V8 CPU profiles in Chrome JSON `P` events (`Profile`/`ProfileChunk`) → stack samples."""

from __future__ import annotations

import math
from collections.abc import Callable

from ...model import TraceContext
from ..common.event_kinds import EV_V8_SAMPLE
from ..common.values import INT64_MAX, INT64_MIN, UINT32_MAX


class _V8Session:
    """State of one V8 profile (per profile id and pid)."""

    __slots__ = ("ts", "callsites", "inferred_parents", "mapping_id", "frames")

    def __init__(self, ts: int, mapping_id: int) -> None:
        self.ts = ts
        self.callsites: dict[int, int] = {}  # node id -> callsite id
        self.inferred_parents: dict[int, int] = {}  # node id -> parent node id, from `children` lists
        self.mapping_id = mapping_id
        self.frames: dict[tuple, int] = {}  # (function name, url) -> frame id


class LegacyV8Profiles:
    """V8 CPU profiles in `P` events (trace_processor's LegacyV8CpuProfileTracker).

    A `Profile` event starts a profile (its startTime); `ProfileChunk` events add
    call tree nodes (stack_profile_callsite/frame rows on a placeholder mapping)
    and samples whose times are deltas from the previous sample."""

    def __init__(self, trace: TraceContext) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.storage = trace.storage
        self.sessions: dict[tuple[int, int], _V8Session] = {}
        # Callsite rows stay in memory until the end: a node listed as a child
        # before it appears fixes its parent and depth afterwards.
        self.callsites: dict[int, list] = {}  # id -> [depth, parent_id, frame_id]
        self._callsite_ids: dict[tuple, int] = {}  # (parent_id, frame_id, depth) -> id
        self._task_contexts: dict[tuple[int, int], int] = {}  # (upid, utid) -> id

    # -- tokenizer side (file order) ---------------------------------------------
    def tokenize_profile(
        self, ev: dict, pid: int, tid: int, event_id, args: dict | None, push: Callable[[int, tuple], None]
    ) -> None:
        if event_id is None:
            return
        if type(event_id) is str:
            try:
                session_id = int(event_id, 16)
            except ValueError:
                self.stats.inc("json_tokenizer_failure")
                return
        else:
            session_id = event_id
        data = args.get("data") if args else None
        if type(data) is not dict:
            return
        start = _profile_int(data.get("startTime"))
        if start is not None:
            self._start(session_id, pid, start * 1000)
            return
        profile = data.get("cpuProfile")
        nodes: list = []
        samples: list[int] = []
        if type(profile) is dict:
            if type(profile.get("nodes")) is list:
                nodes = profile["nodes"]
            if type(profile.get("samples")) is list:
                samples = [v for v in map(_profile_uint32, profile["samples"]) if v is not None]
        deltas = data.get("timeDeltas")
        deltas = [v for v in map(_profile_int, deltas) if v is not None] if type(deltas) is list else []
        session = self.sessions.get((session_id, pid))
        for node in nodes:
            if type(node) is dict and not self._add_callsite(session, node):
                self.stats.inc("legacy_v8_cpu_profile_invalid_callsite")
        if len(samples) != len(deltas) or (samples and session is None):
            self.stats.inc("json_tokenizer_failure")
            return
        if session is None:
            return  # no samples either
        for node_id, delta in zip(samples, deltas):
            session.ts += delta * 1000
            push(session.ts, (EV_V8_SAMPLE, session_id, pid, tid, node_id))

    def _start(self, session_id: int, pid: int, ts: int) -> None:
        session = self.sessions.get((session_id, pid))
        if session is not None:
            session.ts = ts
            return
        # A placeholder mapping for the profile's frames, covering every address.
        mapping_id = self.storage.insert("stack_profile_mapping", ("", 0, 0, 0, -1, 0, ""))
        self.sessions[(session_id, pid)] = _V8Session(ts, mapping_id)

    def _frame(self, session: _V8Session, function_name: str, url: str | None) -> int:
        key = (function_name, url)
        frame_id = session.frames.get(key)
        if frame_id is None:
            # The symbol table's row count, as trace_processor numbers sets: unique across inputs.
            symbol_set = self.storage.next_id["stack_profile_symbol"]
            self.storage.insert("stack_profile_symbol", (symbol_set, function_name, url, None, None))
            frame_id = session.frames[key] = self.storage.insert(
                "stack_profile_frame", (function_name, session.mapping_id, 0, symbol_set, None, None)
            )
        return frame_id

    def _callsite(self, parent_id: int | None, frame_id: int, depth: int) -> int:
        key = (parent_id, frame_id, depth)
        callsite_id = self._callsite_ids.get(key)
        if callsite_id is None:
            callsite_id = self._callsite_ids[key] = self.storage.reserve_id("stack_profile_callsite")
            self.callsites[callsite_id] = [depth, parent_id, frame_id]
        return callsite_id

    def _add_callsite(self, session: _V8Session | None, node: dict) -> bool:
        if session is None:
            return False  # no Profile event started this profile
        node_id = _profile_uint32(node.get("id"))
        node_id = 0 if node_id is None else node_id
        if node_id in session.callsites:
            return False
        frame = node.get("callFrame")
        function_name, url = "", None
        if type(frame) is dict:
            if type(frame.get("functionName")) is str:
                function_name = frame["functionName"]
            if type(frame.get("url")) is str and frame["url"]:
                url = frame["url"]
        frame_id = self._frame(session, function_name, url)
        # V8 names each node's parent; DevTools (and Node) list each node's children instead.
        parent = _profile_uint32(node.get("parent")) if "parent" in node else None
        if parent is None:
            parent = session.inferred_parents.get(node_id)
        if parent is not None:
            parent_callsite = session.callsites.get(parent)
            if parent_callsite is None:
                return False
            depth = self.callsites[parent_callsite][0] + 1
            callsite_id = self._callsite(parent_callsite, frame_id, depth)
        else:
            depth = 0
            callsite_id = self._callsite(None, frame_id, 0)
        session.callsites[node_id] = callsite_id
        children = node.get("children")
        if type(children) is list:
            for child in map(_profile_uint32, children):
                if child is None:
                    continue
                if child in session.inferred_parents:
                    return False  # two nodes claim the same child
                session.inferred_parents[child] = node_id
                child_callsite = session.callsites.get(child)
                if child_callsite is not None:
                    row = self.callsites[child_callsite]
                    row[0] = depth + 1
                    row[1] = callsite_id
        return True

    # -- parser side (timestamp order) -------------------------------------------
    def parse_sample(self, ts: int, ev: list) -> None:
        _, session_id, pid, tid, node_id = ev
        session = self.sessions.get((session_id, pid))
        callsite_id = session.callsites.get(node_id) if session is not None else None
        if callsite_id is None:
            self.stats.inc("legacy_v8_cpu_profile_invalid_sample")
            return
        procs = self.trace.processes
        utid = procs.update_thread(tid, pid)
        upid = procs.get_or_create_process(pid)
        context = self._task_contexts.get((upid, utid))
        if context is None:
            context = self._task_contexts[(upid, utid)] = self.storage.insert(
                "profiler_task_context", (upid, utid, None)
            )
        self.storage.insert("profiler_sample", (ts, "legacy_v8", context, None, callsite_id, None, None, None))

    def finish(self) -> None:
        for callsite_id in sorted(self.callsites):
            self.storage.write("stack_profile_callsite", (callsite_id, *self.callsites[callsite_id]))
        self.callsites.clear()


def _profile_int(value) -> int | None:
    """An integer field of a V8 profile (doubles are truncated)."""
    t = type(value)
    if t is int:
        return value if INT64_MIN <= value <= INT64_MAX else None
    if t is float and math.isfinite(value):
        return int(value)
    return None


def _profile_uint32(value) -> int | None:
    """A node id of a V8 profile: non-negative numbers, wrapped to 32 bits."""
    t = type(value)
    if t is int:
        return value & UINT32_MAX if value >= 0 else None
    if t is float and value >= 0 and math.isfinite(value):
        return int(value) & UINT32_MAX
    return None
