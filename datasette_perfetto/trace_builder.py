"""Deterministic builder for Perfetto protobuf traces, used by tests and the demo."""

from __future__ import annotations

import gzip as gzip_module
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from .importers.proto.dimensions_pb2 import Dimension, InternedDimensionData, TrackDescriptorDimensions

__all__ = [
    "BOOTTIME",
    "CallstackTable",
    "D",
    "S",
    "SchedTask",
    "Sequence",
    "TraceBuilder",
    "build_demo_trace",
    "process_uuid",
    "simulate_sched",
    "thread_uuid",
    "write_demo_trace",
]

BOOTTIME = pb.BUILTIN_CLOCK_BOOTTIME
SEQ_INCREMENTAL_STATE_CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
SEQ_NEEDS_INCREMENTAL_STATE = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
Args = Mapping[str, Any]
_UNITS = {
    "bytes": pb.CounterDescriptor.UNIT_SIZE_BYTES,
    "ns": pb.CounterDescriptor.UNIT_TIME_NS,
    "count": pb.CounterDescriptor.UNIT_COUNT,
}
_INTERN_FIELDS = ("event_names", "event_categories", "debug_annotation_names", "debug_annotation_string_values")
# Track-dimension namespaces (protos/dimensions.proto): fields the perfetto package does not know.
_DIMENSION_INTERN_FIELDS = ("dimension_names", "dimension_string_values", "dimension_display_names")
# A TrackDescriptor dimension: (name, int or str value) or (name, value, display name); a
# Dimension is written as it is (e.g. with iids that were never interned).
Dimensions = Iterable[Any]


def encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def trace_record(packet: bytes) -> bytes:
    """One serialized TracePacket as a record of a Trace file (field 1, length-delimited),
    for writers that stream a trace packet by packet."""
    return b"\x0a" + encode_varint(len(packet)) + packet


def process_uuid(pid: int) -> int:
    """Default track uuid used by `Sequence.process()`."""
    return (1 << 32) | pid


def thread_uuid(tid: int) -> int:
    """Default track uuid used by `Sequence.thread()`."""
    return (2 << 32) | tid


# A sampled stack frame: (function name, path of the binary it is in); stacks list them outermost first.
Frame = tuple[str, str]


class CallstackTable:
    """Interning ids for the function names, mapping paths, mappings, frames and callstacks of
    sampled stacks: the one numbering behind `Sequence.intern_callstack` (InternedData) and
    `TraceBuilder.heap_profile` (a ProfilePacket's own tables). Strings share one id space because
    a ProfilePacket has a single `strings` table."""

    def __init__(self) -> None:
        self._ids: dict[tuple, int] = {}
        self._counts: dict[str, int] = {}
        self._new: dict[str, list] = {
            k: [] for k in ("function_names", "mapping_paths", "mappings", "frames", "callstacks")
        }

    def _get(self, table: str, key: Any, make, numbering: str | None = None) -> int:
        iid = self._ids.get((table, key))
        if iid is None:
            numbering = numbering or table
            iid = self._ids[table, key] = self._counts[numbering] = self._counts.get(numbering, 0) + 1
            self._new[table].append(make(iid))
        return iid

    def _string(self, table: str, value: str) -> int:
        return self._get(table, value, lambda iid: pb.InternedString(iid=iid, str=value.encode("utf-8")), "strings")

    def _mapping(self, path: str) -> int:
        parts = [self._string("mapping_paths", part) for part in path.strip("/").split("/")]

        def make(iid: int) -> pb.Mapping:
            # Distinct, page-aligned address ranges: any deterministic layout does.
            start = 0x7F00_0000_0000 + iid * 0x1000_0000
            return pb.Mapping(iid=iid, path_string_ids=parts, start=start, end=start + 0x800_0000)

        return self._get("mappings", path, make)

    def _frame(self, function: str, path: str) -> int:
        name_id, mapping_id = self._string("function_names", function), self._mapping(path)
        return self._get(
            "frames",
            (function, path),
            lambda iid: pb.Frame(iid=iid, function_name_id=name_id, mapping_id=mapping_id, rel_pc=0x1000 + 0x40 * iid),
        )

    def callstack(self, frames: Iterable[Frame]) -> int:
        """The iid of a callstack (frames outermost first), interning what it needs."""
        frame_ids = tuple(self._frame(function, path) for function, path in frames)
        if not frame_ids:
            raise ValueError("a callstack needs at least one frame")
        return self._get("callstacks", frame_ids, lambda iid: pb.Callstack(iid=iid, frame_ids=frame_ids))

    def drain(self) -> dict[str, list]:
        """Entries added since the last drain, by InternedData field name."""
        new, self._new = self._new, {k: [] for k in self._new}
        return new


S, D = 1, 2  # sched_switch prev_state: interruptible and uninterruptible sleep (0 is R, preempted)


@dataclass
class SchedTask:
    """A thread for `simulate_sched`, pinned to `cpu`. It runs in bursts and sleeps in between:
    at random (`burst` and `sleep` ranges in ticks, always `sleep_state`, woken by `waker`), or
    as planned by `runs`: (wake tick, burst ticks, sleep state after the burst, waker tid)."""

    tid: int
    tgid: int | None  # None: a thread of a process the trace never describes
    name: str  # the kernel's comm (at most 15 characters on Linux)
    cpu: int
    burst: tuple[int, int] = (1, 1)
    sleep: tuple[int, int] = (1, 1)
    sleep_state: int = S
    waker: int = 0  # tid whose wakeups end the sleep (0: an interrupt, on the sleeper's CPU)
    runs: list[tuple[int, int, int, int]] | None = None


def simulate_sched(
    tasks: list[SchedTask],
    *,
    start: int,
    tick: int,
    ticks: int,
    cpus: int,
    rng: random.Random,
    kernel_symbols: Mapping[int, str] | None = None,
    timeslice: int = 40,
    first_wake: tuple[int, int] = (0, 50),
) -> dict[int, list[dict]]:
    """Per-CPU ftrace events (sched_switch, sched_waking, sched_blocked_reason) of `tasks`, simulated
    in `ticks` steps of `tick` ns from `start`, as a real kernel trace would show them. A woken
    thread waits in its CPU's FIFO queue; one that has run `timeslice` ticks is preempted (R) when
    another is waiting; a D sleep names a random kernel symbol (iid of `kernel_symbols`) it is
    blocked in. Wakeups are emitted on the waker's CPU when it is running, else on the sleeper's.
    Random tasks first wake at a tick in `first_wake`."""
    if not kernel_symbols and any(
        t.sleep_state == D if t.runs is None else any(r[2] == D for r in t.runs) for t in tasks
    ):
        raise ValueError("a task that sleeps in D needs kernel_symbols to be blocked in")
    blocked_in = sorted(kernel_symbols) if kernel_symbols else []
    by_tid = {t.tid: t for t in tasks}
    cpu_ids = range(cpus)
    events: dict[int, list[dict]] = {cpu: [] for cpu in cpu_ids}
    current: dict[int, int] = {cpu: 0 for cpu in cpu_ids}  # cpu -> running tid (0: idle)
    queues: dict[int, list[int]] = {cpu: [] for cpu in cpu_ids}
    comm = {0: "swapper", **{t.tid: t.name for t in tasks}}
    # tid -> [wake tick (None: never again), ticks left in the burst, ticks run since scheduled in,
    #         index of the next planned run, waker of the pending wakeup]
    sim: dict[int, list] = {}
    for t in tasks:
        if t.runs is None:
            sim[t.tid] = [rng.randint(*first_wake), rng.randint(*t.burst), 0, 0, t.waker]
        else:
            wake, burst, _, waker = t.runs[0] if t.runs else (None, 0, S, 0)
            sim[t.tid] = [wake, burst, 0, 1, waker]

    def running_cpu(tid: int) -> int | None:
        return next((cpu for cpu, run in current.items() if run == tid and tid), None)

    def switch(ts: int, cpu: int, prev_state: int, next_tid: int) -> None:
        prev = current[cpu]
        events[cpu].append(
            {
                "timestamp": ts,
                "pid": prev,
                "sched_switch": dict(
                    prev_pid=prev,
                    prev_comm=comm[prev] if prev else f"swapper/{cpu}",
                    prev_prio=120,
                    prev_state=prev_state,
                    next_pid=next_tid,
                    next_comm=comm[next_tid] if next_tid else f"swapper/{cpu}",
                    next_prio=120,
                ),
            }
        )
        current[cpu] = next_tid

    for step in range(ticks):
        ts = start + step * tick
        for t in tasks:
            state = sim[t.tid]
            if state[0] == step:
                waker_cpu = running_cpu(state[4])
                cpu = waker_cpu if waker_cpu is not None else t.cpu
                events[cpu].append(
                    {
                        "timestamp": ts,
                        "pid": current[cpu],
                        "sched_waking": dict(pid=t.tid, comm=t.name, prio=120, target_cpu=t.cpu),
                    }
                )
                queues[t.cpu].append(t.tid)
        for cpu in cpu_ids:
            tid = current[cpu]
            if tid:
                t, state = by_tid[tid], sim[tid]
                state[1] -= 1
                state[2] += 1
                if state[1] <= 0:
                    if t.runs is None:
                        sleep_state = t.sleep_state
                        state[0] = step + rng.randint(*t.sleep)
                        state[1] = rng.randint(*t.burst)
                    else:
                        sleep_state = t.runs[state[3] - 1][2]
                        if state[3] < len(t.runs):
                            wake, state[1], _, state[4] = t.runs[state[3]]
                            state[0] = max(wake, step + 1)  # a late run wakes at once
                        else:
                            state[0] = None
                        state[3] += 1
                    state[2] = 0
                    nxt = queues[cpu].pop(0) if queues[cpu] else 0
                    switch(ts, cpu, sleep_state, nxt)
                    if sleep_state == D:
                        caller = rng.choice(blocked_in)
                        events[cpu].append(
                            {
                                "timestamp": ts,
                                "pid": nxt,
                                "sched_blocked_reason": dict(pid=tid, caller=caller, io_wait=1),
                            }
                        )
                elif state[2] >= timeslice and queues[cpu]:
                    state[2] = 0
                    queues[cpu].append(tid)
                    switch(ts, cpu, 0, queues[cpu].pop(0))
            elif queues[cpu]:
                switch(ts, cpu, 0, queues[cpu].pop(0))
    return events


class TraceBuilder:
    """Accumulates TracePackets and serializes them as a `perfetto.protos.Trace`."""

    def __init__(self) -> None:
        self.packets: list[pb.TracePacket] = []
        self.sequences: dict[int | tuple[int, int], Sequence] = {}  # seq id, or (machine id, seq id)
        self._heap_profile_index: dict[int, int] = {}  # seq id -> next ProfilePacket.index

    def packet(self, **fields: Any) -> pb.TracePacket:
        """Append a raw TracePacket built from protobuf keyword arguments."""
        packet = pb.TracePacket(**fields)
        self.packets.append(packet)
        return packet

    def ftrace(
        self, cpu: int, *events: dict, seq_id: int = 1, machine_id: int | None = None, **bundle_fields: Any
    ) -> pb.TracePacket:
        """Append an FtraceEventBundle for `cpu`; each event is a dict of FtraceEvent
        fields, e.g. {"timestamp": 10, "pid": 0, "sched_switch": {...}}."""
        bundle = pb.FtraceEventBundle(cpu=cpu, **bundle_fields)
        for event in events:
            bundle.event.append(pb.FtraceEvent(**event))
        extra = {} if machine_id is None else {"machine_id": machine_id}
        return self.packet(ftrace_events=bundle, trusted_packet_sequence_id=seq_id, **extra)

    def sequence(
        self, seq_id: int, *, intern: bool = True, use_incremental_clock: bool = False, machine_id: int | None = None
    ) -> Sequence:
        """Return the writer for `trusted_packet_sequence_id=seq_id` (on `machine_id`, a
        remote machine's TracePacket.machine_id, if given), creating it once."""
        key = seq_id if machine_id is None else (machine_id, seq_id)
        existing = self.sequences.get(key)
        if existing is None:
            existing = self.sequences[key] = Sequence(
                self, seq_id, intern=intern, use_incremental_clock=use_incremental_clock, machine_id=machine_id
            )
        elif (existing.intern, existing.use_incremental_clock) != (intern, use_incremental_clock):
            raise ValueError(f"sequence {seq_id} already exists with different options")
        return existing

    def sched(
        self,
        events_by_cpu: Mapping[int, list[dict]],
        kernel_symbols: Mapping[int, str] | None = None,
        seq_id: int = 1,
    ) -> None:
        """Append kernel scheduling events (e.g. from `simulate_sched`): the interned kernel symbols
        that sched_blocked_reason callers refer to, then one FtraceEventBundle per CPU."""
        if kernel_symbols:
            self.packet(
                trusted_packet_sequence_id=seq_id,
                sequence_flags=SEQ_INCREMENTAL_STATE_CLEARED,
                interned_data=pb.InternedData(
                    kernel_symbols=[
                        pb.InternedString(iid=iid, str=name.encode()) for iid, name in kernel_symbols.items()
                    ]
                ),
            )
        for cpu in sorted(events_by_cpu):
            self.ftrace(cpu, *events_by_cpu[cpu], seq_id=seq_id)

    def heap_profile(
        self,
        ts: int,
        pid: int,
        samples: Iterable[tuple[Iterable[Frame], int, int, int, int]],
        seq_id: int = 1,
        heap_name: str = "libc.malloc",
    ) -> pb.TracePacket:
        """Append a heapprofd dump (ProfilePacket) of process `pid`: `samples` are (frames outermost
        first, bytes allocated, bytes freed, allocations, frees), cumulative since the profile began,
        as heapprofd writes them. The dump's time is `ts` on CLOCK_MONOTONIC_COARSE, heapprofd's
        clock: the trace needs a ClockSnapshot that relates it to the trace clock. Each dump carries
        its own tables and the next `index` of its sequence."""
        table = CallstackTable()
        heap = pb.ProfilePacket.ProcessHeapSamples(pid=pid, heap_name=heap_name, timestamp=ts)
        for frames, allocated, freed, allocs, frees in samples:
            heap.samples.add(
                callstack_id=table.callstack(frames),
                self_allocated=allocated,
                self_freed=freed,
                alloc_count=allocs,
                free_count=frees,
            )
        new = table.drain()
        index = self._heap_profile_index
        dump = pb.ProfilePacket(
            index=index.get(seq_id, 0),
            process_dumps=[heap],
            mappings=new["mappings"],
            frames=new["frames"],
            callstacks=new["callstacks"],
            strings=sorted(new["function_names"] + new["mapping_paths"], key=lambda e: e.iid),
        )
        index[seq_id] = dump.index + 1
        return self.packet(timestamp=ts, trusted_packet_sequence_id=seq_id, profile_packet=dump)

    def heap_graph(self, ts: int, seq_id: int = 1, **fields: Any) -> pb.TracePacket:
        """Append a TracePacket carrying an ART HeapGraph (field 56, which the perfetto package
        does not know) built from HeapGraph keyword arguments, e.g. pid, objects=[{...}], roots=[...]."""
        from .importers.proto.heap_graph import HEAP_GRAPH_FIELD, HeapGraph

        payload = HeapGraph(**fields).SerializeToString()
        base = pb.TracePacket(timestamp=ts, trusted_packet_sequence_id=seq_id).SerializeToString()
        packet = pb.TracePacket.FromString(
            base + encode_varint(HEAP_GRAPH_FIELD << 3 | 2) + encode_varint(len(payload)) + payload
        )
        self.packets.append(packet)
        return packet

    def extension_packet(self, field_number: int, payload: bytes, **fields: Any) -> pb.TracePacket:
        """Append a TracePacket (with `fields`) carrying `payload` in a TracePacket extension field the
        perfetto package does not declare, e.g. frame_timeline_event = 76 (kept as an unknown field)."""
        base = pb.TracePacket(**fields).SerializeToString()
        packet = pb.TracePacket.FromString(
            base + encode_varint(field_number << 3 | 2) + encode_varint(len(payload)) + payload
        )
        self.packets.append(packet)
        return packet

    def to_trace(self) -> pb.Trace:
        trace = pb.Trace()
        trace.packet.extend(self.packets)
        return trace

    def to_bytes(self) -> bytes:
        return self.to_trace().SerializeToString(deterministic=True)

    def write(self, path: str | Path, gzip: bool = False) -> Path:
        """Write the trace to `path`, optionally gzip-compressed."""
        return _write(path, self.to_bytes(), gzip)


class Sequence:
    """Writes packets for one trusted packet sequence, handling interning,
    incremental-state flags and (optionally) an incremental clock."""

    def __init__(
        self,
        builder: TraceBuilder,
        seq_id: int,
        *,
        intern: bool = True,
        use_incremental_clock: bool = False,
        machine_id: int | None = None,
    ) -> None:
        if not 0 < seq_id < 2**32:
            raise ValueError("seq_id must be a positive uint32")
        self.builder = builder
        self.seq_id = seq_id
        self.machine_id = machine_id
        self.intern = intern
        self.use_incremental_clock = use_incremental_clock
        # Sequence-scoped clock ids must be within 64..127.
        self.clock_id = 64 + seq_id % 64
        self.generation = 0
        self._first_packet = True
        self._last_ts: int | None = None
        self.clear_incremental_state()

    def clear_incremental_state(self) -> None:
        """Start a new generation: interning restarts at iid 1 and the next
        packet carries incremental_state_cleared (plus a fresh clock snapshot)."""
        self.generation += 1
        self._iids: dict[str, dict[str, int]] = {f: {} for f in _INTERN_FIELDS + _DIMENSION_INTERN_FIELDS}
        self._pending = pb.InternedData()
        self._pending_dimensions = InternedDimensionData()
        self._callstacks = CallstackTable()
        self._sampled: tuple[int, int, int] | None = None  # (pid, tid, last sample in us) of stack_samples
        self._needs_clear = True
        self._needs_snapshot = self.use_incremental_clock

    def _intern(self, field: str, value: str) -> int:
        table = self._iids[field]
        iid = table.get(value)
        if iid is None:
            iid = table[value] = len(table) + 1
            if field in _DIMENSION_INTERN_FIELDS:
                getattr(self._pending_dimensions, field).add(iid=iid, str=value.encode("utf-8"))
                return iid
            entry = getattr(self._pending, field).add(iid=iid)
            if field == "debug_annotation_string_values":
                entry.str = value.encode("utf-8")
            else:
                entry.name = value
        return iid

    def intern_name(self, name: str) -> int:
        return self._intern("event_names", name)

    def intern_category(self, category: str) -> int:
        return self._intern("event_categories", category)

    def intern_debug_annotation_name(self, name: str) -> int:
        return self._intern("debug_annotation_names", name)

    def intern_string_value(self, value: str) -> int:
        return self._intern("debug_annotation_string_values", value)

    def intern_dimension_name(self, name: str) -> int:
        return self._intern("dimension_names", name)

    def intern_dimension_string(self, value: str) -> int:
        return self._intern("dimension_string_values", value)

    def intern_dimension_display_name(self, name: str) -> int:
        return self._intern("dimension_display_names", name)

    def intern_callstack(self, frames: Iterable[Frame]) -> int:
        """The iid of a callstack (frames outermost first) for perf samples and stack samples; what
        is new rides on the next packet's InternedData."""
        iid = self._callstacks.callstack(frames)
        for field, entries in self._callstacks.drain().items():
            getattr(self._pending, field).extend(entries)
        return iid

    def stack_samples(self, pid: int, tid: int, samples: Iterable[tuple[int, Iterable[Frame]]]) -> pb.TracePacket:
        """Chrome's sampling profiler: `samples` of thread `tid` as (ts, frames outermost first), in
        time order, as one StreamingProfilePacket. Sample times are microsecond deltas from the
        reference time of the sequence's ThreadDescriptor, which the first call writes; one
        sampled thread per sequence."""
        samples = list(samples)
        if not samples:
            raise ValueError("no samples")
        if self._sampled is None:
            first_us = samples[0][0] // 1000
            self.packet(
                samples[0][0], thread_descriptor=pb.ThreadDescriptor(pid=pid, tid=tid, reference_timestamp_us=first_us)
            )
            self._sampled = (pid, tid, first_us)
        elif self._sampled[:2] != (pid, tid):
            raise ValueError("a sequence samples one thread")
        last_us = self._sampled[2]
        iids, deltas = [], []
        for ts, frames in samples:
            us = ts // 1000
            if us < last_us:
                raise ValueError("stack samples must be in time order")
            iids.append(self.intern_callstack(frames))
            deltas.append(us - last_us)
            last_us = us
        self._sampled = (pid, tid, last_us)
        return self.packet(
            samples[0][0],
            streaming_profile_packet=pb.StreamingProfilePacket(callstack_iid=iids, timestamp_delta_us=deltas),
        )

    def _add_dimensions(self, desc: pb.TrackDescriptor, dimensions: Dimensions | None) -> None:
        """Writes TrackDescriptor.dimensions (field 21, unknown to the perfetto package) into `desc`."""
        if not dimensions:
            return
        out = TrackDescriptorDimensions()
        for item in dimensions:
            if isinstance(item, Dimension):
                out.dimensions.append(item)
                continue
            name, value, *display = item
            dim = out.dimensions.add(name_iid=self.intern_dimension_name(name))
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                raise TypeError(f"dimension value must be int or str, not {type(value).__name__}")
            if isinstance(value, int):
                dim.int_value = value
            else:
                dim.string_value_iid = self.intern_dimension_string(value)
            if display and display[0] is not None:
                dim.display_name_iid = self.intern_dimension_display_name(display[0])
        desc.MergeFromString(out.SerializeToString())

    def packet(self, ts: int | None = None, **fields: Any) -> pb.TracePacket:
        """Append a packet on this sequence; `ts` is absolute nanoseconds."""
        if ts is not None and self._needs_snapshot:
            self._emit_clock_snapshot(ts)
        packet = pb.TracePacket(trusted_packet_sequence_id=self.seq_id, **fields)
        if self.machine_id is not None:
            packet.machine_id = self.machine_id
        self._set_flags(packet)
        if ts is not None:
            packet.timestamp = self._encode_ts(ts)
        if self._pending.ListFields():
            packet.interned_data.MergeFrom(self._pending)
            self._pending.Clear()
        if self._pending_dimensions.ListFields():
            packet.interned_data.MergeFromString(self._pending_dimensions.SerializeToString())
            self._pending_dimensions.Clear()
        self.builder.packets.append(packet)
        return packet

    def _set_flags(self, packet: pb.TracePacket) -> None:
        if self._needs_clear:
            packet.incremental_state_cleared = True
            packet.sequence_flags = SEQ_INCREMENTAL_STATE_CLEARED
            if self._first_packet:
                packet.first_packet_on_sequence = True
            self._needs_clear = self._first_packet = False
        else:
            packet.sequence_flags = SEQ_NEEDS_INCREMENTAL_STATE

    def _encode_ts(self, ts: int) -> int:
        if not self.use_incremental_clock:
            return ts
        assert self._last_ts is not None
        if ts < self._last_ts:
            raise ValueError("timestamps on an incremental-clock sequence must not decrease")
        delta, self._last_ts = ts - self._last_ts, ts
        return delta

    def _emit_clock_snapshot(self, ts: int) -> None:
        # The snapshot anchors the incremental clock to BOOTTIME at `ts`; later
        # packets store deltas from the previous packet on this clock.
        self._needs_snapshot = False
        self._last_ts = ts
        packet = pb.TracePacket(trusted_packet_sequence_id=self.seq_id, timestamp=ts, timestamp_clock_id=BOOTTIME)
        if self.machine_id is not None:
            packet.machine_id = self.machine_id
        packet.clock_snapshot.clocks.add(clock_id=BOOTTIME, timestamp=ts)
        packet.clock_snapshot.clocks.add(clock_id=self.clock_id, timestamp=ts, is_incremental=True)
        packet.trace_packet_defaults.timestamp_clock_id = self.clock_id
        self._set_flags(packet)
        self.builder.packets.append(packet)

    def process(
        self,
        pid: int,
        name: str,
        cmdline: str | Iterable[str] | None = None,
        uuid: int | None = None,
        ts: int | None = None,
        dimensions: Dimensions | None = None,
    ) -> int:
        uuid = process_uuid(pid) if uuid is None else uuid
        proc = pb.ProcessDescriptor(pid=pid, process_name=name)
        if cmdline is not None:
            proc.cmdline.extend([cmdline] if isinstance(cmdline, str) else cmdline)
        desc = pb.TrackDescriptor(uuid=uuid, process=proc)
        return self._descriptor(desc, ts, dimensions)

    def thread(
        self,
        pid: int,
        tid: int,
        name: str,
        uuid: int | None = None,
        ts: int | None = None,
        dimensions: Dimensions | None = None,
    ) -> int:
        uuid = thread_uuid(tid) if uuid is None else uuid
        thread = pb.ThreadDescriptor(pid=pid, tid=tid, thread_name=name)
        desc = pb.TrackDescriptor(uuid=uuid, thread=thread)
        return self._descriptor(desc, ts, dimensions)

    def track(
        self,
        uuid: int,
        name: str,
        parent_uuid: int | None = None,
        ts: int | None = None,
        dimensions: Dimensions | None = None,
    ) -> int:
        desc = pb.TrackDescriptor(uuid=uuid, name=name)
        if parent_uuid is not None:
            desc.parent_uuid = parent_uuid
        return self._descriptor(desc, ts, dimensions)

    def counter_track(
        self,
        uuid: int,
        name: str,
        parent_uuid: int | None = None,
        unit: str | int | None = None,
        is_incremental: bool = False,
        ts: int | None = None,
        dimensions: Dimensions | None = None,
    ) -> int:
        """`unit` is "bytes", "ns", "count", a CounterDescriptor.Unit value or a
        free-form unit_name. Incremental counters must be written on this sequence."""
        desc = pb.TrackDescriptor(uuid=uuid, name=name)
        desc.counter.SetInParent()
        if parent_uuid is not None:
            desc.parent_uuid = parent_uuid
        if isinstance(unit, int):
            desc.counter.unit = unit
        elif unit in _UNITS:
            desc.counter.unit = _UNITS[unit]
        elif unit is not None:
            desc.counter.unit_name = unit
        if is_incremental:
            desc.counter.is_incremental = True
        return self._descriptor(desc, ts, dimensions)

    def _descriptor(self, desc: pb.TrackDescriptor, ts: int | None, dimensions: Dimensions | None) -> int:
        """Writes the track descriptor `desc`, with its `dimensions`, at `ts`; its uuid."""
        self._add_dimensions(desc, dimensions)
        self.packet(ts, track_descriptor=desc)
        return desc.uuid

    def slice_begin(
        self,
        ts: int,
        track_uuid: int,
        name: str,
        category: str | None = None,
        args: Args | None = None,
        flow_ids: Iterable[int] = (),
        terminating_flow_ids: Iterable[int] = (),
    ) -> pb.TracePacket:
        return self._event(
            ts, pb.TrackEvent.TYPE_SLICE_BEGIN, track_uuid, name, category, args, flow_ids, terminating_flow_ids
        )

    def slice_end(self, ts: int, track_uuid: int, args: Args | None = None) -> pb.TracePacket:
        return self._event(ts, pb.TrackEvent.TYPE_SLICE_END, track_uuid, args=args)

    def instant(
        self,
        ts: int,
        track_uuid: int,
        name: str,
        category: str | None = None,
        args: Args | None = None,
        flow_ids: Iterable[int] = (),
        terminating_flow_ids: Iterable[int] = (),
    ) -> pb.TracePacket:
        return self._event(
            ts, pb.TrackEvent.TYPE_INSTANT, track_uuid, name, category, args, flow_ids, terminating_flow_ids
        )

    def counter(self, ts: int, track_uuid: int, value: int | float) -> pb.TracePacket:
        event = pb.TrackEvent(type=pb.TrackEvent.TYPE_COUNTER, track_uuid=track_uuid)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"counter value must be int or float, not {type(value).__name__}")
        setattr(event, "counter_value" if isinstance(value, int) else "double_counter_value", value)
        return self.packet(ts, track_event=event)

    def _event(
        self,
        ts: int,
        type: int,
        track_uuid: int,
        name: str | None = None,
        category: str | None = None,
        args: Args | None = None,
        flow_ids: Iterable[int] = (),
        terminating_flow_ids: Iterable[int] = (),
    ) -> pb.TracePacket:
        event = pb.TrackEvent(type=type, track_uuid=track_uuid)
        if category is not None:
            if self.intern:
                event.category_iids.append(self.intern_category(category))
            else:
                event.categories.append(category)
        if name is not None:
            if self.intern:
                event.name_iid = self.intern_name(name)
            else:
                event.name = name
        for key, value in (args or {}).items():
            event.debug_annotations.append(self._annotation(key, value))
        event.flow_ids.extend(flow_ids)
        event.terminating_flow_ids.extend(terminating_flow_ids)
        return self.packet(ts, track_event=event)

    def _annotation(self, name: str | None, value: Any) -> pb.DebugAnnotation:
        ann = pb.DebugAnnotation()
        if name is not None:
            if self.intern:
                ann.name_iid = self.intern_debug_annotation_name(name)
            else:
                ann.name = name
        # bool before int: bool is a subclass of int.
        if isinstance(value, bool):
            ann.bool_value = value
        elif isinstance(value, int):
            setattr(ann, "uint_value" if value >= 2**63 else "int_value", value)
        elif isinstance(value, float):
            ann.double_value = value
        elif isinstance(value, str):
            if self.intern:
                ann.string_value_iid = self.intern_string_value(value)
            else:
                ann.string_value = value
        elif isinstance(value, Mapping):
            for key, item in value.items():
                ann.dict_entries.append(self._annotation(str(key), item))
        elif isinstance(value, (list, tuple)):
            for item in value:
                ann.array_values.append(self._annotation(None, item))
        else:
            raise TypeError(f"unsupported debug annotation value: {value!r}")
        return ann


DEMO_START = 1_000_000_000
DEMO_END = DEMO_START + 2_000_000_000
# (pid, process name, ((tid, thread name, top-level task name), ...))
DEMO_PROCESSES = (
    (
        100,
        "browser",
        (
            (100, "CrBrowserMain", "MessageLoop::RunTask"),
            (101, "IOThread", "ChannelMojo::OnMessageReceived"),
            (102, "ThreadPoolForegroundWorker", "ThreadPool::RunTask"),
        ),
    ),
    (
        200,
        "renderer",
        (
            (200, "CrRendererMain", "MessageLoop::RunTask"),
            (201, "Compositor", "ProxyImpl::BeginMainFrame"),
            (202, "ThreadPoolBackgroundWorker", "ThreadPool::RunTask"),
        ),
    ),
    (
        300,
        "gpu-process",
        ((300, "CrGpuMain", "CommandBufferStub::OnAsyncFlush"), (301, "VizCompositorThread", "Display::DrawAndSwap")),
    ),
)
_CHILDREN = {
    "MessageLoop::RunTask": ("LayoutView::Layout", "Document::UpdateStyle", "V8.Execute", "Mojo::Dispatch"),
    "LayoutView::Layout": ("LayoutBlockFlow::Layout", "Paint"),
    "LayoutBlockFlow::Layout": ("LayoutText::Layout",),
    "Paint": ("PaintLayerPainter::Paint", "Raster"),
    "Document::UpdateStyle": ("StyleEngine::RecalcStyle",),
    "V8.Execute": ("V8.Compile", "V8.GC"),
    "Mojo::Dispatch": ("IPC::ReadMessage",),
    "ChannelMojo::OnMessageReceived": ("Mojo::Dispatch", "URLLoader::OnReceiveResponse"),
    "ThreadPool::RunTask": ("DiskCache::ReadData", "Compress", "Raster"),
    "ProxyImpl::BeginMainFrame": ("LayerTreeHost::UpdateLayers", "Raster"),
    "LayerTreeHost::UpdateLayers": ("PictureLayer::Update",),
    "CommandBufferStub::OnAsyncFlush": ("GLES2Decoder::DoDrawElements", "GLES2Decoder::Swap"),
    "Display::DrawAndSwap": ("SkiaRenderer::DrawFrame", "SwapBuffers"),
    "SkiaRenderer::DrawFrame": ("SkiaRenderer::DrawQuad",),
    "URLRequest": ("HostResolver::Resolve", "SSLClientSocket::Connect", "URLLoader::ReadBody"),
    # The phone's renderer under DevTools (below): protocol commands and screencast frames.
    "DevToolsSession::DispatchProtocolMessage": (
        "InspectorDOMAgent::GetDocument",
        "InspectorCSSAgent::GetMatchedStyles",
        "V8InspectorSession::Evaluate",
    ),
    "InspectorCSSAgent::GetMatchedStyles": ("StyleResolver::CollectMatchingRules",),
    "V8InspectorSession::Evaluate": ("V8Debugger::EvaluateGlobal",),
    "Scheduler::BeginImplFrame": ("LayerTreeHostImpl::PrepareToDraw", "LayerTreeHostImpl::DrawLayers"),
    "LayerTreeHostImpl::DrawLayers": ("ScreencastCapture::CopyOutput",),
    "DevToolsScreencast::EncodeFrame": ("JpegEncoder::Encode",),
}
_CATEGORIES = (
    ("V8", "v8"),
    ("Mojo", "mojom"),
    ("IPC", "ipc"),
    ("Layout", "blink"),
    ("Paint", "blink"),
    ("Document", "blink"),
    ("Style", "blink"),
    ("Raster", "cc"),
    ("Layer", "cc"),
    ("Proxy", "cc"),
    ("GLES2", "gpu"),
    ("Command", "gpu"),
    ("Skia", "viz"),
    ("Display", "viz"),
    ("Swap", "viz"),
    ("URL", "net"),
    ("Host", "net"),
    ("SSL", "net"),
    ("DevTools", "devtools"),
    ("Screencast", "devtools"),
    ("Jpeg", "devtools"),
    ("Scheduler", "cc"),
)
# (source tid, destination tid, number of flows)
_FLOWS = ((100, 101, 4), (101, 200, 5), (200, 201, 4), (201, 301, 4))
MEMORY_TRACK_UUID = 0x4D454D  # renderer "MemoryUsage" counter, bytes
IPC_COUNTER_UUID = 0x495043  # browser "IPCMessagesSent" incremental counter
NETWORK_TRACK_UUID = 0x4E4554  # browser "NetworkRequests" async track
INCREMENTAL_CLOCK_TID = 301


def _category(name: str) -> str:
    return next((cat for prefix, cat in _CATEGORIES if prefix in name), "toplevel")


def _args(rng: random.Random, name: str, depth: int) -> dict[str, Any]:
    if depth == 0:
        return {
            "task": {
                "posted_from": {"file_name": name.split("::")[0].lower() + ".cc", "line": rng.randint(10, 900)},
                "queue": rng.choice(["default", "input", "ipc"]),
            }
        }
    if name == "Paint":
        return {"layer_ids": [rng.randint(1, 64) for _ in range(3)], "is_visible": rng.random() < 0.8}
    if "Layout" in name:
        return {"frame_id": rng.randint(1, 9), "dirty_ratio": round(rng.random(), 3)}
    if name.startswith("V8"):
        return {"script_url": "https://example.com/app.js", "heap_mb": rng.uniform(10, 80)}
    return {}


def _slice_tree(rng: random.Random, name: str, ts: int, dur: int, depth: int = 0) -> dict:
    node: dict[str, Any] = {
        "name": name,
        "ts": ts,
        "dur": dur,
        "args": _args(rng, name, depth),
        "children": [],
        "flow_ids": [],
        "terminating_flow_ids": [],
        "end_args": None,
    }
    kids = _CHILDREN.get(name, ())
    if kids and depth < 3 and dur >= 100_000:
        count = rng.randint(1, 2)
        slot = dur // count
        # Children sit strictly inside their own slot, so no two events on a track tie.
        for i in range(count):
            start = ts + i * slot + rng.randint(1, slot // 5)
            length = rng.randint(slot // 3, slot * 3 // 4)
            node["children"].append(_slice_tree(rng, rng.choice(kids), start, length, depth + 1))
    return node


def _walk(node: dict, track: int, out: list) -> None:
    name = node["name"]
    out.append(
        (
            node["ts"],
            "slice_begin",
            (track, name, _category(name), node["args"], node["flow_ids"], node["terminating_flow_ids"]),
        )
    )
    for child in node["children"]:
        _walk(child, track, out)
    out.append((node["ts"] + node["dur"], "slice_end", (track, node["end_args"])))


def _thread_tasks(
    rng: random.Random, root: str, ts: int, end: int, durs: tuple[int, int], gaps: tuple[int, int]
) -> list[dict]:
    """A thread's top-level `root` tasks from `ts` until `end`: each lasts a random time in `durs`,
    then the thread idles for a random time in `gaps`."""
    tasks = []
    while ts + (dur := rng.randint(*durs)) < end:
        tasks.append(_slice_tree(rng, root, ts, dur))
        ts += dur + rng.randint(*gaps)
    return tasks


def _play(seq: Sequence, stream: list) -> None:
    """Writes a thread's stream of (ts, Sequence method, args) on its sequence, in time order."""
    # Stable sort: events sharing a timestamp keep their generation order.
    for ts, method, args in sorted(stream, key=lambda event: event[0]):
        if method == "clear_incremental_state":
            seq.clear_incremental_state()
        else:
            getattr(seq, method)(ts, *args)


def build_demo_trace() -> bytes:
    """A deterministic browser-like trace: 3 processes, 8 threads, ~2 seconds, with system data;
    plus a phone (a second machine) whose renderer the desktop's DevTools debugs remotely."""
    rng = random.Random(42)
    tasks: dict[int, list[dict]] = {}
    for _, _, threads in DEMO_PROCESSES:
        for tid, _, root in threads:
            tasks[tid] = _thread_tasks(
                rng,
                root,
                DEMO_START + rng.randint(1_000_000, 20_000_000),
                DEMO_END,
                (500_000, 15_000_000),
                (50_000_000, 130_000_000),
            )

    flow_id = 1000
    for src, dst, count in _FLOWS:
        for src_task in tasks[src][1 : 1 + 4 * count : 4]:
            dst_task = next((t for t in tasks[dst] if t["ts"] > src_task["ts"] and not t["terminating_flow_ids"]), None)
            if dst_task is not None:
                flow_id += 1
                src_task["flow_ids"].append(flow_id)
                dst_task["terminating_flow_ids"].append(flow_id)

    # Per-thread streams of (ts, Sequence method, args); each thread has its own sequence.
    streams: dict[int, list] = {tid: [] for tid in tasks}
    for tid, thread_tasks in tasks.items():
        for task in thread_tasks:
            _walk(task, thread_uuid(tid), streams[tid])

    ts = DEMO_START + 30_000_000
    for i in range(8):
        dur = rng.randint(20_000_000, 150_000_000)
        request = _slice_tree(rng, "URLRequest", ts, dur, depth=1)
        request["args"] = {
            "url": f"https://example.com/asset/{i}.js",
            "method": "GET",
            "priority": rng.choice(["HIGHEST", "MEDIUM", "LOWEST"]),
        }
        request["end_args"] = {"net_error": 0, "bytes_received": rng.randint(1_000, 500_000)}
        _walk(request, NETWORK_TRACK_UUID, streams[101])
        ts += dur + rng.randint(50_000_000, 200_000_000)

    for ts in sorted(rng.randrange(DEMO_START, DEMO_END) for _ in range(12)):
        args = {
            "type": rng.choice(["MouseMove", "KeyDown", "Wheel"]),
            "x": rng.randint(0, 1920),
            "y": rng.randint(0, 1080),
        }
        streams[100].append((ts, "instant", (thread_uuid(100), "InputEvent", "input", args)))
    for frame, ts in enumerate(range(DEMO_START + 8_000_000, DEMO_END, 50_000_000)):
        streams[301].append((ts, "instant", (thread_uuid(301), "VSync", "viz", {"frame_number": frame})))
    memory = 150_000_000
    for ts in range(DEMO_START + 5_000_000, DEMO_END, 50_000_000):
        memory += rng.randint(-4_000_000, 6_000_000)
        streams[200].append((ts, "counter", (MEMORY_TRACK_UUID, memory)))
    for ts in range(DEMO_START + 7_000_000, DEMO_END, 100_000_000):
        streams[101].append((ts, "counter", (IPC_COUNTER_UUID, rng.randint(0, 25))))
    middle = tasks[INCREMENTAL_CLOCK_TID][len(tasks[INCREMENTAL_CLOCK_TID]) // 2]
    streams[INCREMENTAL_CLOCK_TID].append((middle["ts"] + middle["dur"] + 1, "clear_incremental_state", ()))

    builder = TraceBuilder()
    seq_id = 0
    for pid, pname, threads in DEMO_PROCESSES:
        for index, (tid, tname, _) in enumerate(threads):
            seq_id += 1
            seq = builder.sequence(seq_id, use_incremental_clock=tid == INCREMENTAL_CLOCK_TID)
            if index == 0:
                seq.process(pid, pname, f"/opt/browser/browser --type={pname}", ts=DEMO_START)
            seq.thread(pid, tid, tname, ts=DEMO_START)
            if tid == 200:
                seq.counter_track(MEMORY_TRACK_UUID, "MemoryUsage", process_uuid(200), unit="bytes", ts=DEMO_START)
            if tid == 101:
                seq.track(NETWORK_TRACK_UUID, "NetworkRequests", process_uuid(100), ts=DEMO_START)
                seq.counter_track(
                    IPC_COUNTER_UUID,
                    "IPCMessagesSent",
                    process_uuid(100),
                    unit="count",
                    is_incremental=True,
                    ts=DEMO_START,
                )
            _play(seq, streams[tid])
    # The system data comes after the track events, so those stay byte for byte what they were.
    times = [ts for stream in streams.values() for ts, method, _ in stream if method != "clear_incremental_state"]
    _add_demo_system_data(builder, tasks, min(times), max(times))
    _add_demo_phone(builder, max(times))
    return builder.to_bytes()


# -- the demo's system data ----------------------------------------------------------------
# What recording the same browser with Perfetto's system probes and profilers adds: kernel
# scheduling of the 8 threads, Chrome's sampling profiler on the main threads, a heapprofd
# profile of the renderer, a Java heap dump of the browser, and the GPU process's two displays
# as tracks with a custom `display` dimension. Scheduling and samples follow the tasks above,
# so CPU time, stacks and slices tell one story; everything lies within the track events'
# time span, so trace bounds and every % of trace stay as they were.
DEMO_SERVICE_SEQ, DEMO_KERNEL_SEQ, DEMO_HEAPPROFD_SEQ, DEMO_JAVA_HEAP_SEQ, DEMO_DISPLAY_SEQ = 19, 20, 24, 25, 26
DEMO_SAMPLER_SEQS = {100: 21, 200: 22, 300: 23}  # main thread tid -> Chrome sampler sequence
DEMO_TICK = 100_000  # scheduling simulated in 100 us ticks
DEMO_CPUS = 4
DEMO_SAMPLE_INTERVAL = 1_000_000  # Chrome's sampler, every 1 ms while a task runs
# tid -> (CPU the thread runs on, tid whose wakeups end its sleeps; 0: an interrupt)
DEMO_SCHED = {
    100: (0, 101),
    101: (1, 0),
    102: (2, 100),
    200: (1, 101),
    201: (3, 200),
    202: (2, 200),
    300: (0, 201),
    301: (3, 0),
}
# Thread-pool tasks that read the disk cache block in D inside the read, in one of these.
DEMO_BLOCKED_IN = {1: "ext4_file_read_iter", 2: "filemap_fault"}
HEAP_PROFILE_PID, HEAP_DUMP_PID = 200, 100
# connector -> (`display` dimension value, track uuid, refresh rate idle / while it has frames to show, in Hz)
DEMO_DISPLAYS = {"eDP-1": (0, 0x445031, 60, 120), "HDMI-A-1": (1, 0x484431, 48, 144)}

_BIN = "/opt/browser/browser"
_LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
_LIBCXX = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
_GL = "/usr/lib/x86_64-linux-gnu/libGLX_mesa.so.0"
# Main thread tid -> the frames below the task being run.
DEMO_MAIN_FRAMES = {
    tid: (
        ("__libc_start_main", _LIBC),
        ("main", _BIN),
        ("content::ContentMain", _BIN),
        (entry, _BIN),
        ("base::RunLoop::Run", _BIN),
    )
    for tid, entry in ((100, "content::BrowserMain"), (200, "content::RendererMain"), (300, "content::GpuMain"))
}
# The function a slice measures (the slice's own name when not listed).
DEMO_SLICE_FUNCTIONS = {
    "MessageLoop::RunTask": "base::TaskAnnotator::RunTask",
    "LayoutView::Layout": "blink::LayoutView::UpdateLayout",
    "LayoutBlockFlow::Layout": "blink::LayoutBlockFlow::UpdateBlockLayout",
    "LayoutText::Layout": "blink::NGInlineNode::ShapeText",
    "Paint": "blink::LocalFrameView::PaintTree",
    "PaintLayerPainter::Paint": "blink::PaintLayerPainter::Paint",
    "Raster": "cc::RasterSource::PlaybackToCanvas",
    "Document::UpdateStyle": "blink::Document::UpdateStyleAndLayoutTree",
    "StyleEngine::RecalcStyle": "blink::StyleEngine::RecalcStyle",
    "V8.Execute": "v8::Script::Run",
    "V8.Compile": "v8::internal::Compiler::Compile",
    "V8.GC": "v8::internal::Heap::CollectGarbage",
    "Mojo::Dispatch": "mojo::Connector::DispatchMessage",
    "IPC::ReadMessage": "IPC::ChannelMojo::OnMessageReceived",
    "CommandBufferStub::OnAsyncFlush": "gpu::CommandBufferStub::OnAsyncFlush",
    "GLES2Decoder::DoDrawElements": "gpu::gles2::GLES2DecoderImpl::DoDrawElements",
    "GLES2Decoder::Swap": "gpu::gles2::GLES2DecoderImpl::DoSwapBuffers",
}
# Callees a sample may land in below a slice's function (else the sample is the function's own).
DEMO_LEAVES = {
    "V8.Execute": (("renderItems", _BIN), ("diffChildren", _BIN), ("Builtins_InterpreterEntryTrampoline", _BIN)),
    "V8.GC": (("v8::internal::Scavenger::ScavengeObject", _BIN),),
    "V8.Compile": (("v8::internal::Parser::ParseProgram", _BIN),),
    "LayoutText::Layout": (("hb_shape", _BIN),),
    "StyleEngine::RecalcStyle": (("blink::SelectorChecker::Match", _BIN),),
    "Raster": (("SkRasterPipelineBlitter::blitRect", _BIN),),
    "IPC::ReadMessage": (("memcpy", _LIBC),),
    "GLES2Decoder::DoDrawElements": (("glDrawElements", _GL),),
    "GLES2Decoder::Swap": (("glXSwapBuffers", _GL),),
}
_MALLOC = (("operator new(unsigned long)", _LIBCXX), ("malloc", _LIBC))
_RENDERER_TASK = DEMO_MAIN_FRAMES[200] + (("base::TaskAnnotator::RunTask", _BIN),)
_COMPOSITOR_THREAD = (
    ("start_thread", _LIBC),
    ("base::(anonymous namespace)::ThreadFunc", _BIN),
    ("base::Thread::ThreadMain", _BIN),
    ("cc::ProxyImpl::BeginMainFrame", _BIN),
)
# heapprofd's cumulative samples of the renderer: (callers, then (bytes allocated, bytes freed,
# allocations, frees) at the first and at the second dump). The ArrayBuffers are never freed.
DEMO_HEAP_SAMPLES = (
    (
        _RENDERER_TASK
        + (
            ("blink::LayoutView::UpdateLayout", _BIN),
            ("blink::LayoutBlockFlow::UpdateBlockLayout", _BIN),
            ("blink::NGInlineNode::ShapeText", _BIN),
        ),
        (3_200_000, 2_900_000, 41_000, 38_500),
        (6_500_000, 5_900_000, 83_000, 78_000),
    ),
    (
        _RENDERER_TASK
        + (
            ("v8::Script::Run", _BIN),
            ("v8::ArrayBuffer::New", _BIN),
            ("blink::ArrayBufferContents::AllocateMemory", _BIN),
        ),
        (8_388_608, 0, 4, 0),
        (16_777_216, 0, 8, 0),
    ),
    (
        _RENDERER_TASK + (("mojo::Connector::DispatchMessage", _BIN), ("mojo::Message::Message", _BIN)),
        (1_100_000, 1_100_000, 9_000, 9_000),
        (2_300_000, 2_280_000, 18_500, 18_300),
    ),
    (
        _RENDERER_TASK
        + (("blink::LocalFrameView::PaintTree", _BIN), ("blink::PaintController::CommitNewDisplayItems", _BIN)),
        (2_400_000, 1_800_000, 1_200, 900),
        (4_900_000, 3_700_000, 2_450, 1_850),
    ),
    (
        _RENDERER_TASK
        + (
            ("blink::Document::UpdateStyleAndLayoutTree", _BIN),
            ("blink::StyleEngine::RecalcStyle", _BIN),
            ("blink::ComputedStyle::Clone", _BIN),
        ),
        (640_000, 512_000, 2_000, 1_600),
        (1_280_000, 1_088_000, 4_000, 3_400),
    ),
    (
        _COMPOSITOR_THREAD + (("cc::LayerTreeHost::UpdateLayers", _BIN), ("cc::PictureLayer::Update", _BIN)),
        (1_500_000, 1_200_000, 300, 240),
        (3_100_000, 2_500_000, 620, 500),
    ),
)


def _add_demo_system_data(builder: TraceBuilder, tasks: dict[int, list[dict]], first: int, last: int) -> None:
    """Appends the demo's system data for `tasks` (tid -> top-level slice trees) between `first` and `last`."""
    # heapprofd stamps its dumps with CLOCK_MONOTONIC_COARSE: the service's snapshot relates it
    # to the trace clock (this machine never suspended, so boot time and monotonic time agree).
    builder.packet(
        timestamp=first,
        trusted_packet_sequence_id=DEMO_SERVICE_SEQ,
        clock_snapshot=pb.ClockSnapshot(
            clocks=[
                pb.ClockSnapshot.Clock(clock_id=clock, timestamp=first)
                for clock in (BOOTTIME, pb.BUILTIN_CLOCK_MONOTONIC, pb.BUILTIN_CLOCK_MONOTONIC_COARSE)
            ]
        ),
    )
    _demo_sched(builder, tasks, last)
    _demo_stack_samples(builder, tasks)
    for dump, ts in enumerate((DEMO_START + 1_000_000_000, DEMO_START + 1_950_000_000)):
        samples = [(callers + _MALLOC, *totals[dump]) for callers, *totals in DEMO_HEAP_SAMPLES]
        builder.heap_profile(ts, HEAP_PROFILE_PID, samples, seq_id=DEMO_HEAPPROFD_SEQ)
    _demo_heap_graph(builder, DEMO_START + 1_500_000_000)
    _demo_displays(builder, tasks, first, last)


def _demo_sched(builder: TraceBuilder, tasks: dict[int, list[dict]], last: int) -> None:
    """Each top-level task is a run of its thread: woken at the task's start, running for its
    duration (later, if its CPU is busy), then asleep (S) until the next task. A task that reads
    the disk cache blocks (D) for the middle half of the read, woken by the disk interrupt. Runs
    end 10 ms before the trace does: no thread is left running, so the CPU times do not depend on
    where the trace ends (tests/diff_traces.py makes the demo longer)."""

    def tick(ts: int) -> int:
        return -(-(ts - DEMO_START) // DEMO_TICK)

    stop = tick(last) - 10_000_000 // DEMO_TICK
    sched_tasks = []
    for pid, _, threads in DEMO_PROCESSES:
        for tid, name, _ in threads:
            cpu, waker = DEMO_SCHED[tid]
            runs = []
            for task in tasks[tid]:
                begin, end = tick(task["ts"]), min(stop, tick(task["ts"] + task["dur"]))
                if begin >= stop:
                    break
                read = next((c for c in task["children"] if c["name"] == "DiskCache::ReadData"), None)
                if read is not None:
                    block, resume = tick(read["ts"] + read["dur"] // 4), tick(read["ts"] + read["dur"] * 3 // 4)
                    if begin < block < resume < end:
                        runs += [(begin, block - begin, D, waker), (resume, end - resume, S, 0)]
                        continue
                runs.append((begin, max(1, end - begin), S, waker))
            sched_tasks.append(SchedTask(tid, pid, name[:15], cpu, waker=waker, runs=runs))  # comm: 15 chars
    events = simulate_sched(
        sched_tasks,
        start=DEMO_START,
        tick=DEMO_TICK,
        ticks=(last - DEMO_START) // DEMO_TICK + 1,
        cpus=DEMO_CPUS,
        rng=random.Random(43),
        kernel_symbols=DEMO_BLOCKED_IN,
    )
    builder.sched(events, kernel_symbols=DEMO_BLOCKED_IN, seq_id=DEMO_KERNEL_SEQ)


def _demo_stack_samples(builder: TraceBuilder, tasks: dict[int, list[dict]]) -> None:
    """Chrome's sampler on the three main threads: a sample's stack is the functions of the
    slices open at that moment (below the thread's run loop), sometimes with a callee on top."""
    rng = random.Random(44)
    for tid, seq_id in DEMO_SAMPLER_SEQS.items():
        seq = builder.sequence(seq_id)
        for task in tasks[tid]:
            samples = []
            first = -(-task["ts"] // 1000) * 1000 + DEMO_SAMPLE_INTERVAL // 2  # on the microsecond, as sampled
            for ts in range(first, task["ts"] + task["dur"], DEMO_SAMPLE_INTERVAL):
                chain = [task]
                while (
                    child := next((c for c in chain[-1]["children"] if c["ts"] <= ts < c["ts"] + c["dur"]), None)
                ) is not None:
                    chain.append(child)
                frames = list(DEMO_MAIN_FRAMES[tid])
                frames += [(DEMO_SLICE_FUNCTIONS.get(n["name"], n["name"]), _BIN) for n in chain]
                leaves = DEMO_LEAVES.get(chain[-1]["name"])
                if leaves and rng.random() < 0.6:
                    frames.append(rng.choice(leaves))
                samples.append((ts, frames))
            if samples:
                seq.stack_samples(tid, tid, samples)  # a main thread: its tid is the pid


def _demo_heap_graph(builder: TraceBuilder, ts: int) -> None:
    """A Java heap dump of the browser process (Chrome on Android's browser runs in ART): the
    activity holds the tab model (six tabs, each with its WebContents, URL and title) and the
    thumbnail cache (a Bitmap and its pixels for four tabs); one old thumbnail is garbage."""
    apk, framework, core = 1, 2, 3
    types = [  # (class, location, kind: 1 normal, 3 string, 4 array)
        ("org.chromium.chrome.browser.ChromeTabbedActivity", apk, 1),
        ("org.chromium.chrome.browser.tabmodel.TabModelImpl", apk, 1),
        ("java.util.ArrayList", core, 1),
        ("java.lang.Object[]", core, 4),
        ("org.chromium.chrome.browser.tab.TabImpl", apk, 1),
        ("org.chromium.content.browser.webcontents.WebContentsImpl", apk, 1),
        ("java.lang.String", core, 3),
        ("org.chromium.chrome.browser.compositor.layouts.content.TabContentManager", apk, 1),
        ("java.util.HashMap", core, 1),
        ("android.graphics.Bitmap", framework, 1),
        ("byte[]", core, 4),
    ]
    type_ids = {name: i for i, (name, _, _) in enumerate(types, 1)}
    field_names: dict[str, int] = {}  # "field type Owner.field" -> iid, as ART names fields
    objects: list[dict] = []
    type_of: dict[int, str] = {}

    def new(type_name: str, size: int, **refs: int) -> int:
        """An object of `type_name` referring to `refs` (field name: object id; array slots start with _)."""
        oid = 0x12C0_0000 + 0x10 * len(objects)
        fields = [
            0
            if name.startswith("_")
            else field_names.setdefault(f"{type_of[ref]} {type_name}.{name}", len(field_names) + 1)
            for name, ref in refs.items()
        ]
        objects.append(
            dict(
                id=oid,
                type_id=type_ids[type_name],
                self_size=size,
                reference_object_id=list(refs.values()),
                reference_field_id=fields,
            )
        )
        type_of[oid] = type_name
        return oid

    def string(text: str) -> int:
        return new("java.lang.String", 16 + len(text))

    tabs = []
    for url, title in (
        ("https://example.com/", "Example Domain"),
        ("https://example.com/news", "News"),
        ("https://example.com/app", "App"),
        ("https://example.org/docs/start", "Getting started"),
        ("https://example.net/video/42", "Video"),
        ("https://example.com/search?q=perfetto", "Search"),
    ):
        contents = new("org.chromium.content.browser.webcontents.WebContentsImpl", 96)
        tabs.append(
            new(
                "org.chromium.chrome.browser.tab.TabImpl",
                112,
                mWebContents=contents,
                mUrl=string(url),
                mTitle=string(title),
            )
        )
    array = new("java.lang.Object[]", 16 + 4 * len(tabs), **{f"_{i}": tab for i, tab in enumerate(tabs)})
    model = new(
        "org.chromium.chrome.browser.tabmodel.TabModelImpl", 48, mTabs=new("java.util.ArrayList", 24, elementData=array)
    )
    thumbnails = [new("android.graphics.Bitmap", 64, mBuffer=new("byte[]", 240 * 160 * 4)) for _ in range(4)]
    cache = new(
        "org.chromium.chrome.browser.compositor.layouts.content.TabContentManager",
        40,
        mThumbnails=new("java.util.HashMap", 48, **{f"_{i}": b for i, b in enumerate(thumbnails)}),
    )
    activity = new("org.chromium.chrome.browser.ChromeTabbedActivity", 320, mTabModel=model, mTabContentManager=cache)
    new("android.graphics.Bitmap", 64, mBuffer=new("byte[]", 240 * 160 * 4))  # an evicted thumbnail: garbage
    builder.heap_graph(
        ts,
        seq_id=DEMO_JAVA_HEAP_SEQ,
        pid=HEAP_DUMP_PID,
        index=0,
        heap_bytes_allocated=sum(o["self_size"] for o in objects),
        objects=objects,
        # The activity is held from native code; the main thread's frame holds the tab model too.
        roots=[dict(root_type=1, object_ids=[activity]), dict(root_type=3, object_ids=[model])],
        types=[
            dict(id=i, class_name=name.encode(), location_id=loc, kind=kind)
            for i, (name, loc, kind) in enumerate(types, 1)
        ],
        field_names=[dict(iid=iid, str=name.encode()) for name, iid in field_names.items()],
        location_names=[
            dict(iid=iid, str=path.encode())
            for iid, path in (
                (apk, "/data/app/~~Xk3jQw==/org.chromium.chrome-Zx9QpA==/base.apk"),
                (framework, "/system/framework/framework.jar"),
                (core, "/apex/com.android.art/javalib/core-oj.jar"),
            )
        ],
    )


def _demo_displays(builder: TraceBuilder, tasks: dict[int, list[dict]], first: int, last: int) -> None:
    """The GPU process drives two displays: a track per connector declaring the custom dimension
    `display`, with a `RefreshRate` counter under it that inherits the dimension, so the two
    same-named counters are told apart by their subtitles (`display 0`, `display 1`). A display
    runs at its high rate in each 100 ms window where it had a frame to show: the built-in panel
    when viz drew, the external monitor when the GPU main thread flushed commands."""
    seq = builder.sequence(DEMO_DISPLAY_SEQ)
    busy = {"eDP-1": [t["ts"] for t in tasks[301]], "HDMI-A-1": [t["ts"] for t in tasks[300]]}
    for connector, (display, uuid, _, _) in DEMO_DISPLAYS.items():
        seq.track(
            uuid, f"Display {connector}", parent_uuid=process_uuid(300), ts=first, dimensions=[("display", display)]
        )
        seq.counter_track(uuid + 1, "RefreshRate", parent_uuid=uuid, unit="Hz", ts=first)
    # From 100 ms on, when the browser's own tracks all exist: their ids stay what they were.
    for ts in range(DEMO_START + 100_000_000, last, 100_000_000):
        for connector, (_, uuid, idle_hz, active_hz) in DEMO_DISPLAYS.items():
            active = any(ts <= start < ts + 100_000_000 for start in busy[connector])
            seq.counter(ts, uuid + 1, active_hz if active else idle_hz)


# -- the demo's second machine -------------------------------------------------------------
# The desktop's DevTools remote-debugs a page open in Chrome on a phone, and the phone's tracing
# service relays its data into the same trace: its packets carry TracePacket.machine_id, so the
# phone is a machine of its own (its SystemInfo, renderer process, threads and tracks), and every
# track's `machine` dimension has two values, shown as subtitles. DevTools attaches 200 ms in,
# once the desktop's tracks all exist (their track ids stay what they were), and its tasks end
# before the desktop's last event, so the trace bounds stay as they were.
DEMO_PHONE_MACHINE_ID = 0x50484F4E  # the phone's raw TracePacket.machine_id ("PHON")
DEMO_PHONE_SERVICE_SEQ = 27
# (pid, process name, ((tid, thread name, top-level task name), ...)), as in DEMO_PROCESSES
DEMO_PHONE_PROCESS = (
    7431,
    "com.android.chrome:sandboxed_process0",
    (
        (7431, "CrRendererMain", "DevToolsSession::DispatchProtocolMessage"),
        (7458, "Compositor", "Scheduler::BeginImplFrame"),
        (7466, "ThreadPoolForegroundWorker", "DevToolsScreencast::EncodeFrame"),
    ),
)
DEMO_PHONE_SEQS = {7431: 28, 7458: 29, 7466: 30}  # tid -> the thread's sequence
# tid -> (task duration, idle time after a task), ranges in ns
DEMO_PHONE_PACE = {
    7431: ((2_000_000, 12_000_000), (250_000_000, 450_000_000)),
    7458: ((1_000_000, 6_000_000), (200_000_000, 350_000_000)),
    7466: ((1_000_000, 5_000_000), (250_000_000, 450_000_000)),
}
DEMO_PHONE_HEAP_UUID = 0x4A5348  # the phone renderer's "JSHeapUsedSize" counter, bytes
DEMO_PHONE_ATTACH = DEMO_START + 200_000_000
# A Pixel 8: Android 14 on its GKI 5.15 kernel.
DEMO_PHONE_SYSTEM_INFO = pb.SystemInfo(
    utsname=pb.Utsname(
        sysname="Linux",
        release="5.15.110-android14-11-gb2f3a7d9c0e1",
        version="#1 SMP PREEMPT Tue Jan 9 18:19:02 UTC 2024",
        machine="aarch64",
    ),
    android_build_fingerprint="google/shiba/shiba:14/AP1A.240405.002/11480754:user/release-keys",
    android_device_manufacturer="Google",
    android_sdk_version=34,
    num_cpus=9,
    page_size=4096,
    system_ram_bytes=7_823_196_160,
)


def _add_demo_phone(builder: TraceBuilder, last: int) -> None:
    """Appends the phone's packets: its SystemInfo, then its renderer's threads (tasks, nested
    slices) and JS heap counter from DEMO_PHONE_ATTACH until 20 ms before `last`."""
    builder.packet(
        trusted_packet_sequence_id=DEMO_PHONE_SERVICE_SEQ,
        machine_id=DEMO_PHONE_MACHINE_ID,
        system_info=DEMO_PHONE_SYSTEM_INFO,
    )
    rng = random.Random(45)
    end = last - 20_000_000
    pid, pname, threads = DEMO_PHONE_PROCESS
    for index, (tid, tname, root) in enumerate(threads):
        durs, gaps = DEMO_PHONE_PACE[tid]
        stream: list = []
        for task in _thread_tasks(rng, root, DEMO_PHONE_ATTACH + rng.randint(1_000_000, 50_000_000), end, durs, gaps):
            _walk(task, thread_uuid(tid), stream)
        seq = builder.sequence(DEMO_PHONE_SEQS[tid], machine_id=DEMO_PHONE_MACHINE_ID)
        if index == 0:
            seq.process(pid, pname, pname, ts=DEMO_PHONE_ATTACH)
            seq.counter_track(
                DEMO_PHONE_HEAP_UUID, "JSHeapUsedSize", process_uuid(pid), unit="bytes", ts=DEMO_PHONE_ATTACH
            )
            heap = 12_000_000
            for ts in range(DEMO_PHONE_ATTACH + 5_000_000, end, 100_000_000):
                heap += rng.randint(-1_500_000, 2_000_000)
                stream.append((ts, "counter", (DEMO_PHONE_HEAP_UUID, heap)))
        seq.thread(pid, tid, tname, ts=DEMO_PHONE_ATTACH)
        _play(seq, stream)


def write_demo_trace(path: str | Path, gzip: bool = False) -> Path:
    """Write `build_demo_trace()` to `path`."""
    return _write(path, build_demo_trace(), gzip)


def _write(path: str | Path, data: bytes, gzip: bool) -> Path:
    path = Path(path)
    # mtime=0 keeps gzipped output byte-identical between runs.
    path.write_bytes(gzip_module.compress(data, mtime=0) if gzip else data)
    return path
