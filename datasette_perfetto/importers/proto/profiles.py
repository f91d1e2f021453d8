"""CPU and heap profiles in Perfetto traces: PerfSample (linux.perf), StreamingProfilePacket
(Chrome's sampler), StackSample streams, ProfilePacket (heapprofd) and SmapsPacket.

As in trace_processor's profile module, the tokenizer (file order) does what needs the
sequence's incremental state: callstacks named by interned id are resolved against the
sequence's InternedData into plain frame tuples (kept in a registry, the sorted event
carries the registry index), packet defaults and clocks are applied. The parser
(timestamp order) interns mappings, frames and callsites, and writes samples, counters
and allocations, so ids follow trace_processor's order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from google.protobuf.message import DecodeError
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ...trackers.process_tracker import NAME_PRIORITY_TRACK_DESCRIPTOR
from ...trackers.stack_profile_tracker import ProfilerSamples, StackProfileTracker, for_trace, mapping_name
from ..common.event_kinds import EV_PACKET, EV_PROFILE
from ..common.values import saturate, signed, text
from .android_packages import add_art_package
from .deobfuscation import deobfuscate_frames, parse_mappings
from .heap_graph import HEAP_GRAPH_FIELD, HeapGraphTracker
from .packet_handlers import EXTENSION_PACKETS
from .unknown import unknown_fields

# InternedData fields (numbers as in interned_data.proto).
FUNCTION_NAMES, FRAMES, CALLSTACKS, BUILD_IDS, MAPPING_PATHS, SOURCE_PATHS, MAPPINGS = 5, 6, 7, 16, 17, 18, 19
TASK_CONTEXTS, EXECUTION_CONTEXTS, COUNTER_DESCRIPTORS, ASYNC_CONTEXTS = 48, 49, 50, 51
UNSYMBOLIZED_SOURCE_LOCATIONS = 28  # (mapping iid, rel_pc): Chrome's mojo methods (track_event_args.py)

MONOTONIC_COARSE = 4
FRAME_KINDS = {1: "native", 2: "kernel", 3: "interpreted", 4: "jit", 5: "gc", 6: "runtime"}
CPU_MODES = {1: "kernel", 2: "user", 3: "hypervisor", 4: "guest_kernel", 5: "guest_user"}  # Profiling.CpuMode
STACK_SAMPLE_MODES = {1: "user", 2: "kernel", 3: "hypervisor", 4: "guest_user", 5: "guest_kernel"}
# Unwind errors by their enum name: UNWIND_ERROR_INVALID_MAP -> "invalid_map".
UNWIND_ERRORS = {
    v.number: v.name[len("UNWIND_ERROR_") :].lower() for v in pb.Profiling.StackUnwindError.DESCRIPTOR.values
}
_COUNTER = pb.PerfEvents.Counter.DESCRIPTOR.values_by_name
PERF_COUNTERS = {
    _COUNTER[name].number: label
    for name, label in (
        ("SW_CPU_CLOCK", "cpu-clock"),
        ("SW_PAGE_FAULTS", "page-faults"),
        ("SW_TASK_CLOCK", "task-clock"),
        ("SW_CONTEXT_SWITCHES", "context-switches"),
        ("SW_CPU_MIGRATIONS", "cpu-migrations"),
        ("SW_PAGE_FAULTS_MIN", "minor-faults"),
        ("SW_PAGE_FAULTS_MAJ", "major-faults"),
        ("SW_ALIGNMENT_FAULTS", "alignment-faults"),
        ("SW_EMULATION_FAULTS", "emulation-faults"),
        ("SW_DUMMY", "dummy"),
        ("HW_CPU_CYCLES", "cpu-cycles"),
        ("HW_INSTRUCTIONS", "instructions"),
        ("HW_CACHE_REFERENCES", "cache-references"),
        ("HW_CACHE_MISSES", "cache-misses"),
        ("HW_BRANCH_INSTRUCTIONS", "branch-instructions"),
        ("HW_BRANCH_MISSES", "branch-misses"),
        ("HW_BUS_CYCLES", "bus-cycles"),
        ("HW_STALLED_CYCLES_FRONTEND", "stalled-cycles-frontend"),
        ("HW_STALLED_CYCLES_BACKEND", "stalled-cycles-backend"),
        ("HW_REF_CPU_CYCLES", "ref-cycles"),
    )
}
PERF_TIMEBASE_UNITS = {
    _COUNTER[name].number: unit
    for name, unit in (
        ("SW_CPU_CLOCK", "ns"),
        ("SW_TASK_CLOCK", "ns"),
        ("HW_CPU_CYCLES", "cycles"),
        ("HW_BUS_CYCLES", "cycles"),
        ("HW_REF_CPU_CYCLES", "cycles"),
        ("HW_INSTRUCTIONS", "instructions"),
    )
}
_SKIP = pb.PerfSample.SampleSkipReason.DESCRIPTOR.values_by_name
SKIPPED_IN_PROFILER = {_SKIP["PROFILER_SKIP_READ_STAGE"].number, _SKIP["PROFILER_SKIP_UNWIND_STAGE"].number}
SKIPPED_DATALOSS = _SKIP["PROFILER_SKIP_UNWIND_ENQUEUE"].number
STACK_SAMPLE_UNITS = {
    1: "ns",
    2: "cycles",
    3: "instructions",
    4: "bytes",
    5: "page-faults",
    6: "cache-misses",
    7: "cache-references",
    8: "branch-misses",
    9: "count",
}
ART_HEAP_NAME = "com.android.art"
SCOPE_CPU = 2

_generations = itertools.count()
# A forked tokenizer helper numbers its sequences' interned-data generations from here: the ids of its
# sequences' mappings (resolved there, written by the importer) must not meet the importer's.
HELPER_GENERATIONS = 1 << 40


def number_generations_as_helper() -> None:
    global _generations
    _generations = itertools.count(HELPER_GENERATIONS)


def _raw(e):
    return bytes(e.str)


def _mapping(e):
    return (e.build_id, e.exact_offset, e.start_offset, e.start, e.end, e.load_bias, tuple(e.path_string_ids))


def _frame(e):
    kind = FRAME_KINDS.get(e.kind) if e.HasField("kind") else (text(e.kind_str) if e.HasField("kind_str") else None)
    return (
        e.function_name_id,
        e.mapping_id,
        e.rel_pc,
        e.source_path_iid if e.HasField("source_path_iid") else None,
        e.line_number if e.HasField("line_number") else None,
        kind,
    )


def _task_context(e):
    return (
        e.pid if e.HasField("pid") else None,
        e.tid if e.HasField("tid") else None,
        e.async_id if e.HasField("async_id") else None,
    )


def _execution_context(e):
    return (e.cpu if e.HasField("cpu") else None, e.mode if e.HasField("mode") else None)


def _async_context(e):
    return (text(e.name) or None, text(e.kind) or None, e.parent_iid if e.HasField("parent_iid") else 0)


def counter_descriptor(e) -> tuple:
    """(name, unit, unit_multiplier, description, scope) of a StackSample.CounterDescriptor."""
    if e.HasField("unit") and e.unit:
        unit = STACK_SAMPLE_UNITS.get(e.unit, "")
    elif e.HasField("unit_str") and e.unit_str:
        unit = text(e.unit_str)
    else:
        unit = None
    return (
        text(e.name),
        unit or None,
        e.unit_multiplier if e.HasField("unit_multiplier") else None,
        text(e.description) or None,
        e.scope if e.HasField("scope") else 1,
    )


# InternedData fields this module reads, registered with the proto importer's interning.
INTERNED_PROFILE_FIELDS = {
    "function_names": (FUNCTION_NAMES, _raw),
    "build_ids": (BUILD_IDS, _raw),
    "mapping_paths": (MAPPING_PATHS, _raw),
    "source_paths": (SOURCE_PATHS, _raw),
    "mappings": (MAPPINGS, _mapping),
    "frames": (FRAMES, _frame),
    "callstacks": (CALLSTACKS, lambda e: tuple(e.frame_ids)),
    "stack_sample_task_contexts": (TASK_CONTEXTS, _task_context),
    "stack_sample_execution_contexts": (EXECUTION_CONTEXTS, _execution_context),
    "stack_sample_counter_descriptors": (COUNTER_DESCRIPTORS, counter_descriptor),
    "stack_sample_async_context_descriptors": (ASYNC_CONTEXTS, _async_context),
    "unsymbolized_source_locations": (UNSYMBOLIZED_SOURCE_LOCATIONS, lambda e: (e.mapping_id, e.rel_pc)),
}


def _utf8(b: bytes) -> str:
    return text(b)


def _perf_counter_name(event) -> str:
    if event.name:
        name = text(event.name)
    elif event.HasField("counter"):
        name = PERF_COUNTERS.get(event.counter, "unknown")
    elif event.HasField("tracepoint"):
        name = text(event.tracepoint.name)
    elif event.HasField("raw_event"):
        r = event.raw_event
        name = f"raw.0x{r.type:x}.0x{r.config:x}.0x{r.config1:x}.0x{r.config2:x}"
    else:
        name = "unknown"
    modifiers = "".join({1: "u", 2: "k", 3: "h"}.get(m, "") for m in event.modifiers)
    return f"{name}:{modifiers}" if modifiers else name


def _interned_string(seq, field: int, iid: int, stats) -> str | None:
    value = seq.interned.get(field, {}).get(iid)
    if value is None:
        stats.inc("stackprofile_invalid_string_id")
        return None
    return _utf8(value)


def resolve_mapping(seq, iid: int, stats) -> tuple | None:
    """Interned mapping `iid` of the sequence as a resolved mapping (stack_profile_tracker.Mapping); None
    (counted) if unusable."""
    m = seq.interned.get(MAPPINGS, {}).get(iid)
    if m is None:
        stats.inc("stackprofile_invalid_mapping_id")
        return None
    build_id_iid, exact_offset, start_offset, start, end, load_bias, path_ids = m
    components = []
    for path_iid in path_ids:
        path = _interned_string(seq, MAPPING_PATHS, path_iid, stats)
        if path is None:
            break
        components.append(path)
    if build_id_iid:
        raw = seq.interned.get(BUILD_IDS, {}).get(build_id_iid)
        if raw is None:
            stats.inc("stackprofile_invalid_string_id")
            return None
        build_id = build_id_hex(raw)
    else:
        build_id = ""
    return (
        (ProfileTokenizer._generation(seq), iid),
        build_id,
        exact_offset,
        start_offset,
        start,
        end,
        load_bias,
        mapping_name(components),
    )


class ProfileTokenizer:
    """Tokenizer side, one per ProtoImporter."""

    def __init__(self, importer) -> None:
        self.importer = importer
        self.stats = importer.stats
        self.callstacks: list[tuple] = []  # registry: index -> resolved frames, root first
        self._callstack_index: dict[tuple, int] = {}

    def handlers(self) -> dict:
        return {
            "perf_sample": self._perf_sample,
            "stack_sample": self._stack_sample,
            "profile_packet": self._profile_packet,
            "smaps_packet": lambda p, seq, ts: self._push(ts, ("smaps", p.smaps_packet.SerializeToString())),
            "art_process_metadata": lambda p, seq, ts: self._push(
                ts, ("art_process_metadata", p.art_process_metadata.SerializeToString())
            ),
            "deobfuscation_mapping": self._deobfuscation_mapping,
            "module_symbols": self._module_symbols,
            None: self._no_payload,
        }

    def _no_payload(self, packet, seq, ts: int) -> None:
        """A packet with no payload the perfetto package knows: defaults, a HeapGraph (field 56), or
        another extension field with a registered handler (packet_handlers.EXTENSION_PACKETS)."""
        self._defaults(packet, seq)
        unknown = unknown_fields(packet)
        if not len(unknown):
            return
        for field in unknown:
            if field.wire_type != 2:
                continue
            if field.field_number == HEAP_GRAPH_FIELD:
                self._push(ts, ("heap_graph", packet.trusted_packet_sequence_id, bytes(field.data)))
            elif field.field_number in EXTENSION_PACKETS:
                self.importer.push(ts, (EV_PACKET, EXTENSION_PACKETS[field.field_number], bytes(field.data)))

    def _push(self, ts: int, event: tuple) -> None:
        self.importer.push(ts, (EV_PROFILE, *event))

    def _deobfuscation_mapping(self, packet, seq, ts: int) -> None:
        mapping = packet.deobfuscation_mapping
        # Class names in slice args are translated as slices are written: every rule is needed first.
        self.importer.trace.args_translation.add_class_names(
            text(mapping.package_name),
            ((text(c.obfuscated_name), text(c.deobfuscated_name)) for c in mapping.obfuscated_classes),
        )
        self._push(ts, ("deobfuscation_mapping", mapping.SerializeToString()))

    def _module_symbols(self, packet, seq, ts: int) -> None:
        """Symbols go to frames when parsed; mojo methods' names are registered now, so that a slice written
        before the packet is parsed is translated too (trace_processor translates at the end of the trace)."""
        m = packet.module_symbols
        module = (text(m.path), _module_build_id(m))
        rules = [(a.address, text(a.lines[-1].function_name)) for a in m.address_symbols if a.lines]
        self.importer.trace.args_translation.add_native_symbols(module, rules)  # last line: the least inlined
        self._push(ts, ("module_symbols", m.SerializeToString()))

    @staticmethod
    def _generation(seq) -> int:
        gen = seq.derived.get("profile_generation")
        if gen is None:
            gen = seq.derived["profile_generation"] = next(_generations)
        return gen

    @staticmethod
    def _defaults(packet, seq):
        """The sequence's TracePacketDefaults (the packet's own, if it carries them)."""
        if packet.HasField("trace_packet_defaults"):
            seq.derived["packet_defaults"] = packet.trace_packet_defaults
        return seq.derived.get("packet_defaults")

    # -- callstack resolution ---------------------------------------------------
    def _string(self, seq, field: int, iid: int) -> str | None:
        return _interned_string(seq, field, iid, self.stats)

    def _resolve_mapping(self, seq, iid: int) -> tuple | None:
        return resolve_mapping(seq, iid, self.stats)

    def _resolve_frame(self, seq, iid: int) -> tuple | None:
        f = seq.interned.get(FRAMES, {}).get(iid)
        if f is None:
            self.stats.inc("stackprofile_invalid_frame_id")
            return None
        name_iid, mapping_iid, rel_pc, source_iid, line, kind = f
        name: str | None = ""
        if name_iid:
            name = self._string(seq, FUNCTION_NAMES, name_iid)
            if name is None:
                return None
        source = None
        if source_iid is not None and source_iid != 0:
            source = self._string(seq, SOURCE_PATHS, source_iid)
            if source is None:
                return None
        if mapping_iid == 0:
            return (None, 0, name, source, line, kind)
        mapping = self._resolve_mapping(seq, mapping_iid)
        if mapping is None:
            return None
        return (mapping, rel_pc, name, source, line, kind)

    def callstack(self, seq, iid: int) -> int | None:
        """Registry index of interned callstack `iid` on this sequence; None (counted) if unusable."""
        cache = seq.derived.setdefault("profile_callstacks", {})
        if iid in cache:
            return cache[iid]
        frame_ids = seq.interned.get(CALLSTACKS, {}).get(iid)
        index = None
        if frame_ids is None:
            self.stats.inc("stackprofile_invalid_callstack_id")
        elif not frame_ids:
            self.stats.inc("stackprofile_empty_callstack")
        else:
            frames = []
            for frame_iid in frame_ids:
                frame = self._resolve_frame(seq, frame_iid)
                if frame is None:
                    break
                frames.append(frame)
            else:
                index = self.register(tuple(frames))
        cache[iid] = index
        return index

    def callstack_frames(self, seq, iid: int) -> tuple | None:
        """The resolved frames (root first) of interned callstack `iid`, for events that carry
        their stack (TrackEvent.callstack_iid); None (counted) if unusable."""
        index = self.callstack(seq, iid)
        return None if index is None else self.callstacks[index]

    def register(self, frames: tuple) -> int:
        index = self._callstack_index.get(frames)
        if index is None:
            index = self._callstack_index[frames] = len(self.callstacks)
            self.callstacks.append(frames)
        return index

    # -- packets ----------------------------------------------------------------
    def _perf_sample(self, packet, seq, ts: int) -> None:
        defaults = self._defaults(packet, seq)
        s = packet.perf_sample
        perf_defaults = None
        if defaults is not None and defaults.HasField("perf_sample_defaults"):
            d = defaults.perf_sample_defaults
            tb = d.timebase
            unit = (
                PERF_TIMEBASE_UNITS.get(tb.counter, "count")
                if tb.HasField("counter")
                else ("count" if tb.HasField("tracepoint") else None)
            )
            perf_defaults = (
                _perf_counter_name(tb),
                unit,
                tuple(_perf_counter_name(f) for f in d.followers),
                d.process_shard_count,
                d.chosen_process_shard,
            )
        callstack = self.callstack(seq, s.callstack_iid) if s.HasField("callstack_iid") else None
        self._push(
            ts,
            (
                "perf",
                packet.trusted_packet_sequence_id,
                s.cpu,
                s.pid,
                s.tid,
                callstack,
                s.cpu_mode,
                s.unwind_error if s.HasField("unwind_error") else None,
                s.timebase_count if s.HasField("timebase_count") else None,
                tuple(s.follower_counts),
                perf_defaults,
                s.kernel_records_lost,
                s.producer_event.source_stop_reason if s.HasField("producer_event") else None,
                s.sample_skipped_reason if s.HasField("sample_skipped_reason") else None,
            ),
        )

    def streaming_profile(self, packet, seq, ts: int) -> None:
        # Sample times are deltas on the sequence's track-event time baseline.
        spp = packet.streaming_profile_packet
        if seq.ref_ts is None or seq.thread is None:
            self.stats.inc("stackprofile_parser_error")
            return
        pid, tid = seq.thread
        deltas = spp.timestamp_delta_us
        for i, iid in enumerate(spp.callstack_iid):
            if i >= len(deltas):
                self.stats.inc("stackprofile_parser_error")
                return
            seq.ref_ts = saturate(seq.ref_ts + saturate(deltas[i] * 1000))
            if seq.ref_ts < 0:
                self.stats.inc("streaming_profile_invalid_timestamp")
                return
            self._push(seq.ref_ts, ("streaming", pid, tid, self.callstack(seq, iid), spp.process_priority))
        for delta in deltas[len(spp.callstack_iid) :]:
            seq.ref_ts = saturate(seq.ref_ts + saturate(delta * 1000))
            if seq.ref_ts < 0:
                self.stats.inc("streaming_profile_invalid_timestamp")
                return

    def _async_chain(self, seq, iid: int) -> tuple:
        """Async context `iid` and its ancestors, leaf first: ((cache key, name, kind), ...)."""
        chain = []
        seen = set()
        table = seq.interned.get(ASYNC_CONTEXTS, {})
        gen = self._generation(seq)
        while iid and iid not in seen:
            entry = table.get(iid)
            if entry is None:
                break
            seen.add(iid)
            name, kind, parent = entry
            chain.append(((gen, iid), name, kind))
            iid = parent
        return tuple(chain)

    def _stack_sample(self, packet, seq, ts: int) -> None:
        defaults = self._defaults(packet, seq)
        s = packet.stack_sample
        ss_defaults = (
            defaults.stack_sample_defaults
            if (defaults is not None and defaults.HasField("stack_sample_defaults"))
            else None
        )
        source = text(ss_defaults.source) if ss_defaults is not None and ss_defaults.source else None
        task = None
        if s.HasField("task_context"):
            task = _task_context(s.task_context)
        elif s.HasField("task_context_iid"):
            task = seq.interned.get(TASK_CONTEXTS, {}).get(s.task_context_iid)
        if task is not None:
            pid, tid, async_id = task
            task = (pid, tid, self._async_chain(seq, async_id) if async_id is not None else None)
        execution = None
        if s.HasField("execution_context"):
            execution = _execution_context(s.execution_context)
        elif s.HasField("execution_context_iid"):
            execution = seq.interned.get(EXECUTION_CONTEXTS, {}).get(s.execution_context_iid)
        callstack: int | tuple | None
        if s.HasField("callstack_iid"):
            callstack = self.callstack(seq, s.callstack_iid)
        elif s.HasField("callstack"):
            callstack = (
                "inline",
                tuple(
                    (
                        text(f.function_name),
                        text(f.source_file) if f.HasField("source_file") else None,
                        f.line_number if f.HasField("line_number") else None,
                    )
                    for f in s.callstack.frames
                ),
            )
        else:
            callstack = None
        descriptors = seq.interned.get(COUNTER_DESCRIPTORS, {})
        primary = None
        if s.HasField("primary_descriptor"):
            primary = counter_descriptor(s.primary_descriptor)
        elif s.HasField("primary_descriptor_iid"):
            primary = descriptors.get(s.primary_descriptor_iid)
        elif ss_defaults is not None and ss_defaults.HasField("primary_descriptor"):
            primary = counter_descriptor(ss_defaults.primary_descriptor)
        followers = [counter_descriptor(d) for d in s.follower_descriptors]
        if not followers:
            followers = [descriptors.get(i) for i in s.follower_descriptor_iids]
        if not followers and ss_defaults is not None:
            followers = [counter_descriptor(d) for d in ss_defaults.follower_descriptors]
        self._push(
            ts,
            (
                "stack_sample",
                packet.trusted_packet_sequence_id,
                source,
                task,
                execution,
                callstack,
                primary,
                s.primary_weight if s.HasField("primary_weight") else None,
                tuple(followers),
                tuple(s.follower_weights),
            ),
        )

    def _profile_packet(self, packet, seq, ts: int) -> None:
        pp = packet.profile_packet
        to_trace_time = self.importer.clocks.to_trace_time
        times = []
        for dump in pp.process_dumps:
            end = to_trace_time(MONOTONIC_COARSE, dump.timestamp)
            start = to_trace_time(MONOTONIC_COARSE, dump.start_timestamp) if dump.HasField("start_timestamp") else None
            times.append((end, start))
        # Callstacks the packet does not carry itself may be interned on the sequence.
        own = {c.iid for c in pp.callstacks}
        fallback = {}
        for dump in pp.process_dumps:
            for sample in dump.samples:
                cs = sample.callstack_id
                if cs not in own and cs not in fallback and CALLSTACKS in seq.interned:
                    if cs in seq.interned[CALLSTACKS]:
                        fallback[cs] = self.callstack(seq, cs)
        self._push(
            ts, ("profile_packet", packet.trusted_packet_sequence_id, pp.SerializeToString(), tuple(times), fallback)
        )


def _module_build_id(m) -> str:
    """A ModuleSymbols' build id, as mappings have it ("" for none)."""
    build_id = m.build_id
    if isinstance(build_id, str):
        build_id = build_id.encode()  # raw bytes in a string field: valid UTF-8 by chance
    return build_id_hex(build_id) if build_id else ""


def build_id_hex(raw: bytes) -> str:
    """Build ids are interned as raw bytes (20 for GNU build ids) or, from old producers, as hex text."""
    if len(raw) == 40 and all(c in b"0123456789abcdefABCDEF" for c in raw):
        return raw.decode("ascii").lower()
    return raw.hex()


class _ProfilePacketState:
    """heapprofd's per-sequence interning (strings, mappings, frames, callstacks in the packets)."""

    def __init__(self) -> None:
        self.strings: dict[int, bytes] = {0: b""}
        self.mappings: dict[int, int] = {}
        self.frames: dict[int, int] = {}
        self.callstacks: dict[int, int] = {}
        # Callstacks interned on the sequence that the dumps use, resolved when each packet was tokenized:
        # a continued dump's samples are counted with the last packet, whose own may not name them.
        self.sequence_callstacks: dict[int, int | None] = {}
        self.prev_index: int | None = None
        self.pending: list[tuple] = []


class ProfileParser:
    """Parser side (timestamp order), one per ProtoImporter."""

    def __init__(self, trace, tokenizer: ProfileTokenizer) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.storage = trace.storage
        self.tokenizer = tokenizer
        self.stacks: StackProfileTracker
        self.samples: ProfilerSamples
        self.stacks, self.samples = for_trace(trace)
        self._callsites: dict[tuple, int | None] = {}  # (registry index, upid) -> callsite id
        self._perf_sessions: dict[int, int] = {}  # sequence id -> session id
        self._perf_streams: dict[tuple, tuple] = {}  # (seq, cpu) -> (timebase track, follower tracks)
        self._stack_sessions: dict[int, int] = {}
        self._async_contexts: dict[tuple, int] = {}
        self._inline_mapping: int | None = None
        self._profile_states: dict[int, _ProfilePacketState] = {}
        self._prev_alloc: dict[tuple, tuple] = {}
        self._prev_free: dict[tuple, tuple] = {}
        self._seen_callstacks: dict[tuple, set] = {}
        self._alloc_correction: dict[int, tuple] = {}
        self._free_correction: dict[int, tuple] = {}
        self._heap_profiles: set[tuple] = set()
        # Profile event kind -> parser(ts, *fields).
        self._handlers: dict[str, Callable[..., None]] = {
            "perf": self._perf,
            "streaming": self._streaming,
            "stack_sample": self._stack_sample,
            "profile_packet": self._profile_packet,
            "smaps": self._smaps,
            "heap_graph": self._heap_graph,
            "deobfuscation_mapping": lambda ts, raw: self._deobfuscation_mappings.append(raw),
            "module_symbols": self._module_symbols,
            "art_process_metadata": self._art_process_metadata,
        }
        self._heap_graphs: HeapGraphTracker | None = None
        trace.args_translation.mapping_id = self._native_symbol_mapping  # mojo methods' mappings
        self._deobfuscation_mappings: list[bytes] = []  # applied when the trace ends
        self._art_mapping: int | None = None

    def _native_symbol_mapping(self, mapping: tuple, pid: int | None) -> int:
        """The mapping id of a native symbol's mapping (trace_processor's FindOrInsertMapping): a process'
        own mapping when its sequence has a thread descriptor."""
        upid = None if pid is None else self.trace.processes.get_or_create_process(pid)
        return self.stacks.mapping(mapping, upid)

    def _heap_graph_tracker(self) -> HeapGraphTracker:
        if self._heap_graphs is None:
            self._heap_graphs = HeapGraphTracker(self.trace)
        return self._heap_graphs

    def _module_symbols(self, ts, raw) -> None:
        try:
            m = pb.ModuleSymbols.FromString(raw)
        except DecodeError:
            self.stats.inc("proto_packet_parse_errors")
            return
        addresses = [
            (
                a.address,
                [
                    (
                        text(line.function_name),
                        text(line.source_file_name),
                        line.line_number if line.HasField("line_number") else None,
                    )
                    for line in a.lines
                ],
            )
            for a in m.address_symbols
        ]
        self.stacks.module_symbols(text(m.path), _module_build_id(m), addresses, self.stats)

    def _heap_graph(self, ts, seq_id, raw) -> None:
        self._heap_graph_tracker().parse(ts, seq_id, raw)

    def _art_process_metadata(self, ts, raw) -> None:
        """ART's description of a heap dump: a heap_graph row (dump_reason OOME for an
        OutOfMemoryError) and the failing thread's Java stack."""
        try:
            m = pb.ArtProcessMetadata.FromString(raw)
        except DecodeError:
            self.stats.inc("proto_packet_parse_errors")
            return
        procs = self.trace.processes
        procs.update_thread(m.pid, m.pid)
        upid = procs.get_or_create_process(m.pid)
        if m.HasField("process_name"):
            procs.set_process_name(upid, text(m.process_name), NAME_PRIORITY_TRACK_DESCRIPTOR)
        if m.HasField("uid"):
            procs.set_process_uid(upid, m.uid)
        if m.HasField("package_name") and m.HasField("uid"):
            add_art_package(self.trace, text(m.package_name), m.uid)
        is_oome = m.HasField("oom_allocation_size")
        graphs = self._heap_graph_tracker()
        graph_id = graphs.new_graph(upid, ts, "OOME" if is_oome else None)
        if not is_oome:
            return
        self.storage.insert(
            "__intrinsic_heap_graph_java_oome_details",
            (
                graph_id,
                signed(m.oom_allocation_size),
                signed(m.oom_total_bytes_free),
                signed(m.oom_free_bytes_until_oom),
                text(m.oom_error_msg) if m.HasField("oom_error_msg") else None,
            ),
        )
        if not m.HasField("oom_thread_java_stack"):
            return
        if self._art_mapping is None:
            self._art_mapping = self.stacks.dummy_mapping("art_process_metadata")
        frame_ids = []
        for frame in reversed(m.oom_thread_java_stack.frames):
            if not frame.HasField("method_name"):
                continue
            # "void a.B.c(int)" -> "a.B.c"
            name = text(frame.method_name).split("(", 1)[0].rsplit(" ", 1)[-1]
            frame_ids.append(
                self.stacks.dummy_frame(
                    self._art_mapping,
                    name,
                    text(frame.source_file) if frame.HasField("source_file") else None,
                    frame.line_number if frame.HasField("line_number") else None,
                )
            )
        self.storage.insert(
            "heap_graph_thread_callsite",
            (graph_id, procs.update_thread(m.pid, m.pid), self.stacks.callstack(frame_ids)),
        )

    def parse(self, ts: int, event: tuple) -> None:
        self._handlers[event[1]](ts, *event[2:])

    def callsite(self, index: int | None, upid: int | None) -> int | None:
        if index is None:
            return None
        key = (index, upid)
        if key not in self._callsites:
            self._callsites[key] = self.stacks.resolved_callstack(self.tokenizer.callstacks[index], upid)
        return self._callsites[key]

    # -- linux.perf ---------------------------------------------------------------
    def _perf_stream(self, seq_id: int, cpu: int, defaults) -> tuple:
        session_id = self._perf_sessions.get(seq_id)
        if session_id is None:
            session_id = self._perf_sessions[seq_id] = self.samples.new_session("linux.perf")
        stream = self._perf_streams.get((seq_id, cpu))
        if stream is not None:
            return session_id, stream
        if defaults is not None:
            name, unit, follower_names, shard_count, chosen_shard = defaults
        else:
            name, unit, follower_names, shard_count, chosen_shard = "cpu-clock", "ns", (), 0, 0
        self.samples.set_timebase_unit(session_id, unit)
        tracks = self.trace.tracks

        def counter_track(counter_name: str, is_timebase: bool) -> int:
            track_id = tracks.intern(
                "perf_cpu_counter",
                (("cpu", cpu), ("perf_session_id", session_id), ("name", counter_name)),
                "counter",
                counter_name,
            )
            row = tracks.row(track_id)
            if not row.source_args:
                row.source_args = [("is_timebase", "is_timebase", "bool", int(is_timebase))]
            return track_id

        self.trace.cpu(cpu)
        stream = (counter_track(name, True), tuple(counter_track(n, False) for n in follower_names))
        self._perf_streams[(seq_id, cpu)] = stream
        if shard_count:
            self.stats.set("perf_process_shard_count", shard_count, idx=session_id)
            self.stats.set("perf_chosen_process_shard", chosen_shard, idx=session_id)
        return session_id, stream

    def _perf(
        self,
        ts,
        seq_id,
        cpu,
        pid,
        tid,
        callstack,
        cpu_mode,
        unwind_error,
        timebase_count,
        followers,
        defaults,
        kernel_records_lost,
        stop_reason,
        skipped_reason,
    ) -> None:
        session_id, (timebase_track, follower_tracks) = self._perf_stream(seq_id, cpu, defaults)
        if kernel_records_lost:
            self.stats.inc("perf_cpu_lost_records", kernel_records_lost, idx=cpu)
            return
        if stop_reason is not None:
            if stop_reason == 1:  # PROFILER_STOP_GUARDRAIL
                self.stats.set("perf_guardrail_stop_ts", ts, idx=session_id)
            return
        if skipped_reason in SKIPPED_IN_PROFILER:
            self.stats.inc("perf_samples_skipped")
        elif skipped_reason == SKIPPED_DATALOSS:
            self.stats.inc("perf_samples_skipped_dataloss")
        counters = []
        if timebase_count is not None:
            counters.append(self.trace.insert_counter(ts, timebase_track, float(timebase_count)))
        for value, track_id in zip(followers, follower_tracks):
            counters.append(self.trace.insert_counter(ts, track_id, float(value)))
        counter_set = self.samples.counter_set(counters)
        procs = self.trace.processes
        utid = procs.update_thread(tid, pid)
        upid = procs.get_or_create_process(pid)
        callsite_id = self.callsite(callstack, upid)
        mode = CPU_MODES.get(cpu_mode)
        execution = self.samples.execution_context(self.trace.cpu(cpu), mode)
        self.samples.sample(
            ts,
            "linux.perf",
            self.samples.task_context(upid, utid),
            execution,
            callsite_id,
            UNWIND_ERRORS.get(unwind_error, "unknown") if unwind_error is not None else None,
            session_id,
            counter_set,
        )

    # -- Chrome's sampler -------------------------------------------------------------
    def _streaming(self, ts, pid, tid, callstack, process_priority) -> None:
        procs = self.trace.processes
        utid = procs.update_thread(tid, pid)
        upid = procs.get_or_create_process(pid)
        callsite_id = self.callsite(callstack, upid)
        if callsite_id is None:
            self.stats.inc("stackprofile_parser_error")
            return
        self.samples.sample(ts, "chrome", self.samples.task_context(upid, utid), None, callsite_id)

    # -- StackSample streams ----------------------------------------------------------
    def _async_context(self, chain: tuple) -> int | None:
        parent = None
        start = len(chain)
        for i, (key, _name, _kind) in enumerate(chain):
            if key in self._async_contexts:
                parent = self._async_contexts[key]
                start = i
                break
        for key, name, kind in reversed(chain[:start]):
            parent = self._async_contexts[key] = self.samples.async_context(name, kind, parent)
        return parent

    def _stack_counter_track(
        self, session_id: int, source: str | None, desc: tuple, is_timebase: bool, cpu: int | None
    ) -> int | None:
        name, unit, multiplier, description, scope = desc
        if is_timebase:
            self.samples.set_timebase_unit(session_id, unit)
        dims = (("session_id", session_id), ("source", source), ("counter_name", name))
        if scope == SCOPE_CPU:
            if cpu is None:
                return None
            track_id = self.trace.tracks.intern(
                "stack_sample_cpu_counter", (("cpu", cpu), *dims), "counter", name, unit
            )
        else:
            track_id = self.trace.tracks.intern("stack_sample_session_counter", dims, "counter", name, unit)
        row = self.trace.tracks.row(track_id)
        if not row.source_args:
            args = [("is_timebase", "is_timebase", "bool", int(is_timebase))]
            if multiplier is not None:
                args.append(("unit_multiplier", "unit_multiplier", "int", multiplier))
            if description:
                args.append(("description", "description", "string", description))
            row.source_args = args
        return track_id

    def _stack_sample(
        self, ts, seq_id, source, task, execution, callstack, primary, primary_weight, followers, follower_weights
    ) -> None:
        procs = self.trace.processes
        upid = None
        task_context = None
        if task is not None:
            pid, tid, chain = task
            utid = None
            if pid is not None:
                upid = procs.get_or_create_process(pid)
            if tid is not None:
                utid = procs.update_thread(tid, pid) if pid is not None else procs.get_or_create_thread(tid)
            async_id = self._async_context(chain) if chain else None
            task_context = self.samples.task_context(upid, utid, async_id)
        cpu = None
        execution_context = None
        if execution is not None:
            cpu, mode = execution
            execution_context = self.samples.execution_context(
                self.trace.cpu(cpu) if cpu is not None else None, STACK_SAMPLE_MODES.get(mode)
            )
        session_id = self._stack_sessions.get(seq_id)
        if session_id is None:
            session_id = self._stack_sessions[seq_id] = self.samples.new_session(source)
        counters = []
        if primary is not None:
            track_id = self._stack_counter_track(session_id, source, primary, True, cpu)
            if track_id is not None and primary_weight is not None:
                counters.append(self.trace.insert_counter(ts, track_id, float(primary_weight)))
        follower_tracks = [
            self._stack_counter_track(session_id, source, d, False, cpu) if d is not None else None for d in followers
        ]
        for track_id, weight in zip(follower_tracks, follower_weights):
            if track_id is not None:
                counters.append(self.trace.insert_counter(ts, track_id, float(weight)))
        if isinstance(callstack, tuple):
            if self._inline_mapping is None:
                self._inline_mapping = self.stacks.dummy_mapping("stack_sample_inline")
            callsite_id = self.stacks.callstack(
                [
                    self.stacks.dummy_frame(self._inline_mapping, name, source_file, line)
                    for name, source_file, line in callstack[1]
                ]
            )
        else:
            callsite_id = self.callsite(callstack, upid)
        self.samples.sample(
            ts,
            source,
            task_context,
            execution_context,
            callsite_id,
            None,
            session_id,
            self.samples.counter_set(counters),
        )

    # -- heapprofd ------------------------------------------------------------------------
    def _profile_packet(self, ts, seq_id, raw, times, fallback) -> None:
        try:
            pp = pb.ProfilePacket.FromString(raw)
        except DecodeError:
            self.stats.inc("proto_packet_parse_errors")
            return
        state = self._profile_states.get(seq_id)
        if state is None:
            state = self._profile_states[seq_id] = _ProfilePacketState()
        index = pp.index
        if (state.prev_index is None and index != 0) or (
            state.prev_index is not None and state.prev_index + 1 != index
        ):
            self.stats.inc("heapprofd_missing_packet")
        state.prev_index = index
        self._intern_profile(state, pp)
        state.sequence_callstacks.update(fallback)
        for dump, (window_end, window_start) in zip(pp.process_dumps, times):
            if window_end is None:
                continue
            if window_start is None:
                window_start = window_end
            self._process_dump(ts, state, dump, window_end, window_start, state.sequence_callstacks)
        if not pp.continued:
            for alloc in state.pending:
                self._allocation(state, state.sequence_callstacks, *alloc)
            self._profile_states[seq_id] = fresh = _ProfilePacketState()
            fresh.prev_index = state.prev_index

    def _intern_profile(self, state: _ProfilePacketState, pp) -> None:
        """A ProfilePacket's strings, mappings, frames and callstacks, into the sequence's state."""
        for s in pp.strings:
            state.strings[s.iid] = bytes(s.str)
        for m in pp.mappings:
            build_id = state.strings.get(m.build_id)
            if build_id is None:
                self.stats.inc("stackprofile_invalid_string_id")
                continue
            components = []
            for sid in m.path_string_ids:
                if sid not in state.strings:
                    self.stats.inc("stackprofile_invalid_string_id")
                    break
                components.append(_utf8(state.strings[sid]))
            mapping = (
                None,
                build_id_hex(build_id) if build_id else "",
                m.exact_offset,
                m.start_offset,
                m.start,
                m.end,
                m.load_bias,
                mapping_name(components),
            )
            state.mappings[m.iid] = self.stacks.mapping(mapping, None)
        for f in pp.frames:
            mapping_id = state.mappings.get(f.mapping_id)
            if mapping_id is None:
                self.stats.inc("stackprofile_invalid_mapping_id")
                continue
            name = state.strings.get(f.function_name_id)
            if name is None:
                self.stats.inc("stackprofile_invalid_string_id")
                continue
            state.frames[f.iid] = self.stacks.frame(mapping_id, f.rel_pc, _utf8(name))
        for c in pp.callstacks:
            frame_ids = []
            for fid in c.frame_ids:
                if fid not in state.frames:
                    self.stats.inc("stackprofile_invalid_frame_id")
                    break
                frame_ids.append(state.frames[fid])
            else:
                callsite_id = self.stacks.callstack(frame_ids)
                if callsite_id is None:
                    self.stats.inc("stackprofile_empty_callstack")
                else:
                    state.callstacks[c.iid] = callsite_id

    def _process_dump(self, ts, state, dump, window_end: int, window_start: int, fallback) -> None:
        pid = dump.pid
        self.stats.set("heapprofd_last_profile_timestamp", ts, idx=pid)
        heap_name = text(dump.heap_name) or None
        upid = self.trace.processes.get_or_create_process(pid)
        key = (upid, window_end, heap_name)
        if key not in self._heap_profiles:
            self._heap_profiles.add(key)
            self.storage.insert("heap_profile", (window_start, window_end, window_end - window_start, upid, heap_name))
        if dump.disconnected:
            self.stats.inc("heapprofd_client_disconnected", idx=pid)
        if dump.buffer_corrupted:
            self.stats.inc("heapprofd_buffer_corrupted", idx=pid)
        if dump.buffer_overran or dump.client_error == 1:  # CLIENT_ERROR_HIT_TIMEOUT
            self.stats.inc("heapprofd_buffer_overran", idx=pid)
        if dump.client_error:
            self.stats.set("heapprofd_client_error", dump.client_error, idx=pid)
        if dump.rejected_concurrent:
            self.stats.inc("heapprofd_rejected_concurrent", idx=pid)
        if dump.hit_guardrail:
            self.stats.inc("heapprofd_hit_guardrail", idx=pid)
        if dump.orig_sampling_interval_bytes:
            self.stats.set(
                "heapprofd_sampling_interval_adjusted",
                dump.sampling_interval_bytes - dump.orig_sampling_interval_bytes,
                idx=pid,
            )
        ps = dump.stats
        self.stats.inc("heapprofd_unwind_time_us", ps.total_unwinding_time_us, idx=pid)
        self.stats.inc("heapprofd_unwind_samples", ps.heap_samples, idx=pid)
        self.stats.inc("heapprofd_client_spinlock_blocked", ps.client_spinlock_blocked_us, idx=pid)
        trustworthy_max_count = dump.orig_sampling_interval_bytes > 0
        allocation_heap = heap_name or "unknown"
        for s in dump.samples:
            if s.HasField("self_max"):
                alloc = (s.self_max, 0, s.self_max_count if trustworthy_max_count else 0, 0)
            else:
                alloc = (s.self_allocated, s.self_freed, s.alloc_count, s.free_count)
            state.pending.append((pid, allocation_heap, window_end, s.callstack_id, *alloc))

    def _allocation(
        self, state, fallback, pid, heap_name, ts, source_callstack, self_allocated, self_freed, alloc_count, free_count
    ) -> None:
        """One sample of a cumulative dump → rows of what changed since the previous dump."""
        upid = self.trace.processes.get_or_create_process(pid)
        callsite_id = state.callstacks.get(source_callstack)
        if callsite_id is None:
            callsite_id = self.callsite(fallback.get(source_callstack), upid)
            if callsite_id is None:
                if source_callstack not in fallback:
                    self.stats.inc("stackprofile_invalid_callstack_id")
                return
        key = (upid, callsite_id)
        prev_alloc = self._prev_alloc.get(key, (0, 0))
        prev_free = self._prev_free.get(key, (0, 0))
        seen = self._seen_callstacks.setdefault((upid, source_callstack, heap_name), set())
        if callsite_id not in seen:
            # The producer's callstack id now names another stack: carry the old totals over.
            seen.add(callsite_id)
            self._alloc_correction[source_callstack] = prev_alloc
            self._free_correction[source_callstack] = prev_free
        ac = self._alloc_correction.get(source_callstack, (0, 0))
        fc = self._free_correction.get(source_callstack, (0, 0))
        alloc_row = (alloc_count + ac[0], self_allocated + ac[1])
        free_row = (-free_count + fc[0], -self_freed + fc[1])
        alloc_delta = (alloc_row[0] - prev_alloc[0], alloc_row[1] - prev_alloc[1])
        free_delta = (free_row[0] - prev_free[0], free_row[1] - prev_free[1])
        if alloc_delta[0] < 0 or alloc_delta[1] < 0 or free_delta[0] > 0 or free_delta[1] > 0:
            self.stats.inc("heapprofd_malformed_packet", idx=upid)
            return
        if alloc_delta[0] or alloc_delta[1]:
            self.storage.insert("heap_profile_allocation", (ts, upid, heap_name, callsite_id, *alloc_delta))
        if heap_name != ART_HEAP_NAME and (free_delta[0] or free_delta[1]):
            self.storage.insert("heap_profile_allocation", (ts, upid, heap_name, callsite_id, *free_delta))
        self._prev_alloc[key] = alloc_row
        self._prev_free[key] = free_row

    # -- smaps ------------------------------------------------------------------------------
    def _smaps(self, ts, raw) -> None:
        try:
            sp = pb.SmapsPacket.FromString(raw)
        except DecodeError:
            self.stats.inc("smaps_parser_errors")
            return
        upid = self.trace.processes.get_or_create_process(sp.pid)
        for e in sp.entries:
            self.storage.insert(
                "profiler_smaps",
                (
                    upid,
                    ts,
                    text(e.path),
                    e.size_kb,
                    e.private_dirty_kb,
                    e.swap_kb,
                    text(e.file_name),
                    e.start_address,
                    e.module_timestamp,
                    text(e.module_debugid),
                    text(e.module_debug_path),
                    e.protection_flags,
                    e.private_clean_resident_kb,
                    e.shared_dirty_resident_kb,
                    e.shared_clean_resident_kb,
                    e.locked_kb,
                    e.proportional_resident_kb,
                ),
            )

    def _process_package(self) -> Callable[[int], str | None]:
        """upid -> the package of its android_appid (the first package_list row of that uid), or None."""
        packages: dict[int, str] = {}
        for uid, name in self.storage.query("SELECT uid, package_name FROM package_list ORDER BY id"):
            packages.setdefault(uid, name)
        procs = self.trace.processes

        def package(upid: int) -> str | None:
            appid = procs.process(upid).android_appid if upid is not None else None
            return packages.get(appid) if appid is not None else None

        return package

    def finish(self) -> None:
        for _seq_id, state in self._profile_states.items():
            if state.pending:
                self.stats.inc("heapprofd_non_finalized_profile")
                for alloc in state.pending:
                    self._allocation(state, state.sequence_callstacks, *alloc)
                state.pending.clear()
        if self._heap_graphs is not None:
            self._heap_graphs.finish()
        if self._deobfuscation_mappings:
            mappings = parse_mappings(self._deobfuscation_mappings, self.stats)
            deobfuscate_frames(self.stacks, mappings, self.stats, self._process_package())
            if self._heap_graphs is not None:
                self._heap_graphs.deobfuscate(mappings)
            self._deobfuscation_mappings.clear()
        # Executables in /data/local/tmp cannot be symbolized without a build id (SELinux).
        for name in self.stacks.mapping_names_without_build_id():
            if name.startswith("/data/local/tmp/"):
                self.stats.inc("symbolization_tmp_build_id_not_found")
        self.samples.finish()
