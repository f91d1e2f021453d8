"""Callstacks and profiler samples: one interning path for every profiler.

`StackProfileTracker` turns resolved frames into `stack_profile_mapping`,
`stack_profile_frame`, `stack_profile_symbol` and `stack_profile_callsite`
rows, deduplicated as trace_processor's mapping and stack-profile trackers do:
mappings by their parameters (or per process and interned id for a process'
own address ranges), frames by (mapping, rel_pc, name), callsites by
(parent, frame, depth). `ProfilerSamples` writes the samples and what they
point at (task and execution contexts, sessions, counter sets).

Both are created per trace file (`for_trace`), as trace_processor keeps them
per trace; ids are dense across the database because storage allocates them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..storage import TraceStorage, to_int64

UINT64_MAX = (1 << 64) - 1

# A resolved mapping: (identity, build_id_hex, exact_offset, start_offset, start, end, load_bias, name).
# identity is None for mappings interned by their parameters, else a key unique to the
# interned entry it came from (a process' own mapping is never shared with another process).
Mapping = tuple
# A resolved frame: (mapping or None for the placeholder mapping, rel_pc, function name,
# source file or None, line number or None, kind string or None).
Frame = tuple


def mapping_name(path_components: Sequence[str]) -> str:
    """trace_processor's mapping name: every component prefixed with '/', a leading '//' made '/'."""
    name = "".join("/" + c for c in path_components)
    return name[1:] if name.startswith("//") else name


class StackProfileTracker:
    def __init__(self, storage: TraceStorage) -> None:
        self.storage = storage
        self._mappings: dict[tuple, int] = {}
        self._frames: dict[tuple, int] = {}
        self._callsites: dict[tuple, int] = {}
        self._dummy_mappings: dict[str, int] = {}
        # (name, build id hex or "") -> mapping ids: what ModuleSymbols packets name a mapping by
        self._mappings_by_name: dict[tuple[str, str], list[int]] = {}
        self._mapping_names: dict[int, str] = {}
        # For offline symbols and deobfuscation, which revisit frames after they are written:
        self._frame_symbols: dict[int, int] = {}  # frame id -> its symbol set
        self._symbol_lines: dict[int, int] = {}  # symbol set -> line of its first row with one

    # -- mappings ---------------------------------------------------------------
    def mapping(self, mapping: Mapping, upid: int | None) -> int:
        identity, build_id, exact_offset, start_offset, start, end, load_bias, name = mapping
        params = (build_id, exact_offset, start_offset, start, end, load_bias, name)
        # A process' own address range is its own mapping; everything else (empty
        # ranges, the kernel, mappings seen without a process) is shared by parameters.
        key: tuple
        if identity is not None and upid is not None and start != end:
            key = ("user", upid, identity)
        else:
            key = ("params", params)
        mapping_id = self._mappings.get(key)
        if mapping_id is None:
            mapping_id = self._mappings[key] = self.storage.insert(
                "stack_profile_mapping",
                (
                    build_id,
                    to_int64(exact_offset),
                    to_int64(start_offset),
                    to_int64(start),
                    to_int64(end),
                    to_int64(load_bias),
                    name,
                ),
            )
            self._mappings_by_name.setdefault((name, build_id or ""), []).append(mapping_id)
            self._mapping_names[mapping_id] = name
        return mapping_id

    def dummy_mapping(self, name: str) -> int:
        """A placeholder mapping covering every address, for frames known only by name."""
        mapping_id = self._dummy_mappings.get(name)
        if mapping_id is None:
            mapping_id = self._dummy_mappings[name] = self.storage.insert(
                "stack_profile_mapping", ("", 0, 0, 0, to_int64(UINT64_MAX), 0, name)
            )
            self._mappings_by_name.setdefault((name, ""), []).append(mapping_id)
            self._mapping_names[mapping_id] = name
        return mapping_id

    # -- frames -----------------------------------------------------------------
    def add_symbol(self, name: str, source_file: str | None, line: int | None) -> int:
        """A one-row symbol set; its id is the symbol table's row count, as in trace_processor."""
        return self.symbol_set([(name, source_file, line, None)])

    def symbol_set(self, rows: Sequence[tuple[str, str | None, int | None, int | None]]) -> int:
        """A symbol set of (name, source file, line, inlined) rows; its id is the symbol table's row count."""
        symbol_set_id = self.storage.next_id["stack_profile_symbol"]
        for name, source_file, line, inlined in rows:
            self.storage.insert("stack_profile_symbol", (symbol_set_id, name, source_file, line, inlined))
            if line is not None and symbol_set_id not in self._symbol_lines:
                self._symbol_lines[symbol_set_id] = line
        return symbol_set_id

    def frame(
        self,
        mapping_id: int,
        rel_pc: int,
        name: str,
        source_file: str | None = None,
        line: int | None = None,
        kind: str | None = None,
    ) -> int:
        key = (mapping_id, rel_pc, name)
        frame_id = self._frames.get(key)
        if frame_id is None:
            symbol_set_id = self.add_symbol(name, source_file, line) if source_file or line else None
            frame_id = self._frames[key] = self.storage.insert(
                "stack_profile_frame", (name, mapping_id, to_int64(rel_pc), symbol_set_id, None, kind)
            )
            if symbol_set_id is not None:
                self._frame_symbols[frame_id] = symbol_set_id
        return frame_id

    def dummy_frame(
        self, mapping_id: int, name: str, source_file: str | None, line: int | None, kind: str | None = None
    ) -> int:
        """A frame of a placeholder mapping: known by name and source location, every one gets a symbol."""
        key = ("dummy", mapping_id, name, source_file, line)
        frame_id = self._frames.get(key)
        if frame_id is None:
            symbol_set_id = self.add_symbol(name, source_file, line)
            frame_id = self._frames[key] = self.storage.insert(
                "stack_profile_frame", (name, mapping_id, 0, symbol_set_id, None, kind)
            )
            self._frame_symbols[frame_id] = symbol_set_id
        return frame_id

    def resolved_frame(self, frame: Frame, upid: int | None) -> int:
        mapping, rel_pc, name, source_file, line, kind = frame
        if mapping is None:
            return self.dummy_frame(self.dummy_mapping(""), name, source_file, line, kind)
        return self.frame(self.mapping(mapping, upid), rel_pc, name, source_file, line, kind)

    def module_symbols(
        self, path: str, build_id: str, addresses: Sequence[tuple[int, Sequence[tuple[str, str, int | None]]]], stats
    ) -> None:
        """Symbols for a module's addresses (a ModuleSymbols packet, from an offline symbolizer):
        each address with lines becomes a symbol set (one row per line, inlined functions first),
        given to every frame at that rel_pc in the mappings of that path and build id ("" when the
        module has none: it names only mappings without one)."""
        mappings = self._mappings_by_name.get((path, build_id))
        if not mappings:
            stats.inc("stackprofile_invalid_mapping_id")
            return
        frames_at: dict[tuple[int, int], list[int]] = {}
        wanted = set(mappings)
        for key, frame_id in self._frames.items():
            if key[0] == "dummy":
                if key[1] in wanted:
                    frames_at.setdefault((key[1], 0), []).append(frame_id)
            elif key[0] in wanted:
                frames_at.setdefault((key[0], key[1]), []).append(frame_id)
        updates: list[tuple[int, int]] = []
        for address, lines in addresses:
            if not lines:
                continue
            symbol_set_id = self.symbol_set(
                [(fn, source_file or None, line if source_file else None, None) for fn, source_file, line in lines]
            )
            found = False
            for mapping_id in mappings:
                for frame_id in frames_at.get((mapping_id, address), ()):
                    updates.append((symbol_set_id, frame_id))
                    found = True
            if not found:
                stats.inc("stackprofile_invalid_frame_id")
        if updates:
            self.set_frame_symbols(updates)

    def frames_with_mapping_names(self) -> list[tuple[int, str, str]]:
        """(frame id, function name, mapping name) of every frame, in id order."""
        out = []
        for key, frame_id in self._frames.items():
            mapping_id, name = (key[1], key[2]) if key[0] == "dummy" else (key[0], key[2])
            out.append((frame_id, name, self._mapping_names.get(mapping_id, "")))
        out.sort()
        return out

    def frame_line(self, frame_id: int) -> int | None:
        """The line number of a frame's symbols (their first row that has one), if any."""
        symbol_set_id = self._frame_symbols.get(frame_id)
        return None if symbol_set_id is None else self._symbol_lines.get(symbol_set_id)

    def set_frame_symbols(self, updates: Sequence[tuple[int, int]]) -> None:
        """Gives frames other symbol sets: (symbol set id, frame id) pairs."""
        for symbol_set_id, frame_id in updates:
            self._frame_symbols[frame_id] = symbol_set_id
        self.storage.executemany("UPDATE stack_profile_frame SET symbol_set_id = ? WHERE id = ?", list(updates))

    def mapping_names_without_build_id(self) -> list[str]:
        """Names of every mapping without a build id (one entry per mapping)."""
        return [name for (name, build_id), ids in self._mappings_by_name.items() if not build_id for _ in ids]

    # -- callsites --------------------------------------------------------------
    def callsite(self, parent_id: int | None, frame_id: int, depth: int) -> int:
        key = (parent_id, frame_id, depth)
        callsite_id = self._callsites.get(key)
        if callsite_id is None:
            callsite_id = self._callsites[key] = self.storage.insert(
                "stack_profile_callsite", (depth, parent_id, frame_id)
            )
        return callsite_id

    def callstack(self, frame_ids: Sequence[int]) -> int | None:
        """The leaf callsite of frames listed root first; None for an empty stack."""
        callsite_id = None
        for depth, frame_id in enumerate(frame_ids):
            callsite_id = self.callsite(callsite_id, frame_id, depth)
        return callsite_id

    def resolved_callstack(self, frames: Sequence[Frame], upid: int | None) -> int | None:
        return self.callstack([self.resolved_frame(f, upid) for f in frames])


class ProfilerSamples:
    """profiler_sample rows and the contexts, sessions and counter sets they reference."""

    def __init__(self, storage: TraceStorage) -> None:
        self.storage = storage
        self._task_contexts: dict[tuple, int] = {}
        self._execution_contexts: dict[tuple, int] = {}
        # Sessions stay in memory: the timebase unit may be learnt after the session starts.
        self.sessions: dict[int, list] = {}  # id -> [source, timebase_unit, cmdline]

    def task_context(self, upid: int | None, utid: int | None, async_context_id: int | None = None) -> int:
        key = (upid, utid, async_context_id)
        found = self._task_contexts.get(key)
        if found is None:
            found = self._task_contexts[key] = self.storage.insert("profiler_task_context", key)
        return found

    def execution_context(self, ucpu: int | None, cpu_mode: str | None) -> int:
        key = (ucpu, cpu_mode)
        found = self._execution_contexts.get(key)
        if found is None:
            found = self._execution_contexts[key] = self.storage.insert("profiler_execution_context", key)
        return found

    def new_session(self, source: str, timebase_unit: str | None = None) -> int:
        session_id = self.storage.reserve_id("profiler_session")
        self.sessions[session_id] = [source, timebase_unit, None]
        return session_id

    def set_timebase_unit(self, session_id: int, unit: str | None) -> None:
        row = self.sessions[session_id]
        if unit and row[1] is None:
            row[1] = unit

    def async_context(self, name: str | None, kind: str | None, parent_id: int | None) -> int:
        return self.storage.insert("profiler_async_context", (name, kind, parent_id))

    def counter_set(self, counter_ids: Sequence[int]) -> int | None:
        if not counter_ids:
            return None
        set_id = self.storage.next_id["profiler_counter_set"]
        for counter_id in counter_ids:
            self.storage.insert("profiler_counter_set", (set_id, counter_id))
        return set_id

    def sample(
        self,
        ts: int,
        source: str,
        task_context_id: int | None,
        execution_context_id: int | None,
        callsite_id: int | None,
        unwind_error: str | None = None,
        session_id: int | None = None,
        counter_set_id: int | None = None,
    ) -> int:
        return self.storage.insert(
            "profiler_sample",
            (ts, source, task_context_id, execution_context_id, callsite_id, unwind_error, session_id, counter_set_id),
        )

    def finish(self) -> None:
        for session_id in sorted(self.sessions):
            self.storage.write("profiler_session", (session_id, *self.sessions[session_id]))
        self.sessions.clear()


def for_trace(trace) -> tuple[StackProfileTracker, ProfilerSamples]:
    """The trackers of one trace file (shared by its machines' contexts)."""
    root = trace.parent if getattr(trace, "parent", None) is not None else trace
    found = root.__dict__.get("_stack_profiles")
    if found is None:
        found = root.__dict__["_stack_profiles"] = (StackProfileTracker(trace.storage), ProfilerSamples(trace.storage))
    return found
