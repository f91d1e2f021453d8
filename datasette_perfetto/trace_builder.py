"""Deterministic builder for Perfetto protobuf traces, used by tests and the demo."""

from __future__ import annotations

import gzip as gzip_module
import random
from pathlib import Path
from typing import Any, Iterable, Mapping

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from .importers import dimensions_pb2

__all__ = ["BOOTTIME", "Sequence", "TraceBuilder", "build_demo_trace", "process_uuid",
           "thread_uuid", "write_demo_trace"]

BOOTTIME = pb.BUILTIN_CLOCK_BOOTTIME
SEQ_INCREMENTAL_STATE_CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
SEQ_NEEDS_INCREMENTAL_STATE = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
Args = Mapping[str, Any]
_UNITS = {"bytes": pb.CounterDescriptor.UNIT_SIZE_BYTES, "ns": pb.CounterDescriptor.UNIT_TIME_NS,
          "count": pb.CounterDescriptor.UNIT_COUNT}
_INTERN_FIELDS = ("event_names", "event_categories", "debug_annotation_names",
                  "debug_annotation_string_values")
# Track-dimension namespaces (protos/dimensions.proto): fields the perfetto package does not know.
_DIMENSION_INTERN_FIELDS = ("dimension_names", "dimension_string_values", "dimension_display_names")
# A TrackDescriptor dimension: (name, int or str value) or (name, value, display name); a
# dimensions_pb2.Dimension is written as it is (e.g. with iids that were never interned).
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


class TraceBuilder:
    """Accumulates TracePackets and serializes them as a `perfetto.protos.Trace`."""

    def __init__(self) -> None:
        self.packets: list[pb.TracePacket] = []
        self.sequences: dict[int | tuple[int, int], Sequence] = {}  # seq id, or (machine id, seq id)

    def packet(self, **fields: Any) -> pb.TracePacket:
        """Append a raw TracePacket built from protobuf keyword arguments."""
        packet = pb.TracePacket(**fields)
        self.packets.append(packet)
        return packet

    def ftrace(self, cpu: int, *events: dict, seq_id: int = 1, machine_id: int | None = None,
               **bundle_fields: Any) -> pb.TracePacket:
        """Append an FtraceEventBundle for `cpu`; each event is a dict of FtraceEvent
        fields, e.g. {"timestamp": 10, "pid": 0, "sched_switch": {...}}."""
        bundle = pb.FtraceEventBundle(cpu=cpu, **bundle_fields)
        for event in events:
            bundle.event.append(pb.FtraceEvent(**event))
        extra = {} if machine_id is None else {"machine_id": machine_id}
        return self.packet(ftrace_events=bundle, trusted_packet_sequence_id=seq_id, **extra)

    def sequence(self, seq_id: int, *, intern: bool = True,
                 use_incremental_clock: bool = False, machine_id: int | None = None) -> Sequence:
        """Return the writer for `trusted_packet_sequence_id=seq_id` (on `machine_id`, a
        remote machine's TracePacket.machine_id, if given), creating it once."""
        key = seq_id if machine_id is None else (machine_id, seq_id)
        existing = self.sequences.get(key)
        if existing is None:
            existing = self.sequences[key] = Sequence(
                self, seq_id, intern=intern, use_incremental_clock=use_incremental_clock, machine_id=machine_id)
        elif (existing.intern, existing.use_incremental_clock) != (intern, use_incremental_clock):
            raise ValueError(f"sequence {seq_id} already exists with different options")
        return existing

    def heap_graph(self, ts: int, seq_id: int = 1, **fields: Any) -> pb.TracePacket:
        """Append a TracePacket carrying an ART HeapGraph (field 56, which the perfetto package
        does not know) built from HeapGraph keyword arguments, e.g. pid, objects=[{...}], roots=[...]."""
        from .importers.heap_graph import HEAP_GRAPH_FIELD, HeapGraph

        payload = HeapGraph(**fields).SerializeToString()
        base = pb.TracePacket(timestamp=ts, trusted_packet_sequence_id=seq_id).SerializeToString()
        packet = pb.TracePacket.FromString(base + encode_varint(HEAP_GRAPH_FIELD << 3 | 2) + encode_varint(len(payload)) + payload)
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

    def __init__(self, builder: TraceBuilder, seq_id: int, *, intern: bool = True,
                 use_incremental_clock: bool = False, machine_id: int | None = None) -> None:
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
        self._pending_dimensions = dimensions_pb2.InternedDimensionData()
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

    def _add_dimensions(self, desc: pb.TrackDescriptor, dimensions: Dimensions | None) -> None:
        """Writes TrackDescriptor.dimensions (field 21, unknown to the perfetto package) into `desc`."""
        if not dimensions:
            return
        out = dimensions_pb2.TrackDescriptorDimensions()
        for item in dimensions:
            if isinstance(item, dimensions_pb2.Dimension):
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
        packet = pb.TracePacket(trusted_packet_sequence_id=self.seq_id, timestamp=ts,
                                timestamp_clock_id=BOOTTIME)
        if self.machine_id is not None:
            packet.machine_id = self.machine_id
        packet.clock_snapshot.clocks.add(clock_id=BOOTTIME, timestamp=ts)
        packet.clock_snapshot.clocks.add(clock_id=self.clock_id, timestamp=ts, is_incremental=True)
        packet.trace_packet_defaults.timestamp_clock_id = self.clock_id
        self._set_flags(packet)
        self.builder.packets.append(packet)

    def process(self, pid: int, name: str, cmdline: str | Iterable[str] | None = None,
                uuid: int | None = None, ts: int | None = None, dimensions: Dimensions | None = None) -> int:
        uuid = process_uuid(pid) if uuid is None else uuid
        proc = pb.ProcessDescriptor(pid=pid, process_name=name)
        if cmdline is not None:
            proc.cmdline.extend([cmdline] if isinstance(cmdline, str) else cmdline)
        desc = pb.TrackDescriptor(uuid=uuid, process=proc)
        self._add_dimensions(desc, dimensions)
        self.packet(ts, track_descriptor=desc)
        return uuid

    def thread(self, pid: int, tid: int, name: str, uuid: int | None = None,
               ts: int | None = None, dimensions: Dimensions | None = None) -> int:
        uuid = thread_uuid(tid) if uuid is None else uuid
        thread = pb.ThreadDescriptor(pid=pid, tid=tid, thread_name=name)
        desc = pb.TrackDescriptor(uuid=uuid, thread=thread)
        self._add_dimensions(desc, dimensions)
        self.packet(ts, track_descriptor=desc)
        return uuid

    def track(self, uuid: int, name: str, parent_uuid: int | None = None,
              ts: int | None = None, dimensions: Dimensions | None = None) -> int:
        desc = pb.TrackDescriptor(uuid=uuid, name=name)
        if parent_uuid is not None:
            desc.parent_uuid = parent_uuid
        self._add_dimensions(desc, dimensions)
        self.packet(ts, track_descriptor=desc)
        return uuid

    def counter_track(self, uuid: int, name: str, parent_uuid: int | None = None,
                      unit: str | int | None = None, is_incremental: bool = False,
                      ts: int | None = None, dimensions: Dimensions | None = None) -> int:
        """`unit` is "bytes", "ns", "count", a CounterDescriptor.Unit value or a
        free-form unit_name. Incremental counters must be written on this sequence."""
        desc = pb.TrackDescriptor(uuid=uuid, name=name)
        self._add_dimensions(desc, dimensions)
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
        self.packet(ts, track_descriptor=desc)
        return uuid

    def slice_begin(self, ts: int, track_uuid: int, name: str, category: str | None = None,
                    args: Args | None = None, flow_ids: Iterable[int] = (),
                    terminating_flow_ids: Iterable[int] = ()) -> pb.TracePacket:
        return self._event(ts, pb.TrackEvent.TYPE_SLICE_BEGIN, track_uuid, name, category, args,
                           flow_ids, terminating_flow_ids)

    def slice_end(self, ts: int, track_uuid: int, args: Args | None = None) -> pb.TracePacket:
        return self._event(ts, pb.TrackEvent.TYPE_SLICE_END, track_uuid, args=args)

    def instant(self, ts: int, track_uuid: int, name: str, category: str | None = None,
                args: Args | None = None, flow_ids: Iterable[int] = (),
                terminating_flow_ids: Iterable[int] = ()) -> pb.TracePacket:
        return self._event(ts, pb.TrackEvent.TYPE_INSTANT, track_uuid, name, category, args,
                           flow_ids, terminating_flow_ids)

    def counter(self, ts: int, track_uuid: int, value: int | float) -> pb.TracePacket:
        event = pb.TrackEvent(type=pb.TrackEvent.TYPE_COUNTER, track_uuid=track_uuid)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"counter value must be int or float, not {type(value).__name__}")
        setattr(event, "counter_value" if isinstance(value, int) else "double_counter_value", value)
        return self.packet(ts, track_event=event)

    def _event(self, ts: int, type: int, track_uuid: int, name: str | None = None,
               category: str | None = None, args: Args | None = None,
               flow_ids: Iterable[int] = (), terminating_flow_ids: Iterable[int] = ()
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
    (100, "browser", ((100, "CrBrowserMain", "MessageLoop::RunTask"),
                      (101, "IOThread", "ChannelMojo::OnMessageReceived"),
                      (102, "ThreadPoolForegroundWorker", "ThreadPool::RunTask"))),
    (200, "renderer", ((200, "CrRendererMain", "MessageLoop::RunTask"),
                       (201, "Compositor", "ProxyImpl::BeginMainFrame"),
                       (202, "ThreadPoolBackgroundWorker", "ThreadPool::RunTask"))),
    (300, "gpu-process", ((300, "CrGpuMain", "CommandBufferStub::OnAsyncFlush"),
                          (301, "VizCompositorThread", "Display::DrawAndSwap"))),
)
_CHILDREN = {
    "MessageLoop::RunTask": ("LayoutView::Layout", "Document::UpdateStyle", "V8.Execute",
                             "Mojo::Dispatch"),
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
}
_CATEGORIES = (("V8", "v8"), ("Mojo", "mojom"), ("IPC", "ipc"), ("Layout", "blink"),
               ("Paint", "blink"), ("Document", "blink"), ("Style", "blink"), ("Raster", "cc"),
               ("Layer", "cc"), ("Proxy", "cc"), ("GLES2", "gpu"), ("Command", "gpu"),
               ("Skia", "viz"), ("Display", "viz"), ("Swap", "viz"), ("URL", "net"),
               ("Host", "net"), ("SSL", "net"))
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
        return {"task": {"posted_from": {"file_name": name.split("::")[0].lower() + ".cc",
                                         "line": rng.randint(10, 900)},
                         "queue": rng.choice(["default", "input", "ipc"])}}
    if name == "Paint":
        return {"layer_ids": [rng.randint(1, 64) for _ in range(3)],
                "is_visible": rng.random() < 0.8}
    if "Layout" in name:
        return {"frame_id": rng.randint(1, 9), "dirty_ratio": round(rng.random(), 3)}
    if name.startswith("V8"):
        return {"script_url": "https://example.com/app.js", "heap_mb": rng.uniform(10, 80)}
    return {}


def _slice_tree(rng: random.Random, name: str, ts: int, dur: int, depth: int = 0) -> dict:
    node = {"name": name, "ts": ts, "dur": dur, "args": _args(rng, name, depth),
            "children": [], "flow_ids": [], "terminating_flow_ids": [], "end_args": None}
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
    out.append((node["ts"], "slice_begin", (track, name, _category(name), node["args"],
                                            node["flow_ids"], node["terminating_flow_ids"])))
    for child in node["children"]:
        _walk(child, track, out)
    out.append((node["ts"] + node["dur"], "slice_end", (track, node["end_args"])))


def build_demo_trace() -> bytes:
    """A deterministic browser-like trace: 3 processes, 8 threads, ~2 seconds."""
    rng = random.Random(42)
    tasks: dict[int, list[dict]] = {}
    for _, _, threads in DEMO_PROCESSES:
        for tid, _, root in threads:
            tasks[tid], ts = [], DEMO_START + rng.randint(1_000_000, 20_000_000)
            while ts + (dur := rng.randint(500_000, 15_000_000)) < DEMO_END:
                tasks[tid].append(_slice_tree(rng, root, ts, dur))
                ts += dur + rng.randint(50_000_000, 130_000_000)

    flow_id = 1000
    for src, dst, count in _FLOWS:
        for src_task in tasks[src][1 : 1 + 4 * count : 4]:
            dst_task = next((t for t in tasks[dst] if t["ts"] > src_task["ts"]
                             and not t["terminating_flow_ids"]), None)
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
        request["args"] = {"url": f"https://example.com/asset/{i}.js", "method": "GET",
                           "priority": rng.choice(["HIGHEST", "MEDIUM", "LOWEST"])}
        request["end_args"] = {"net_error": 0, "bytes_received": rng.randint(1_000, 500_000)}
        _walk(request, NETWORK_TRACK_UUID, streams[101])
        ts += dur + rng.randint(50_000_000, 200_000_000)

    for ts in sorted(rng.randrange(DEMO_START, DEMO_END) for _ in range(12)):
        args = {"type": rng.choice(["MouseMove", "KeyDown", "Wheel"]),
                "x": rng.randint(0, 1920), "y": rng.randint(0, 1080)}
        streams[100].append((ts, "instant", (thread_uuid(100), "InputEvent", "input", args)))
    for frame, ts in enumerate(range(DEMO_START + 8_000_000, DEMO_END, 50_000_000)):
        streams[301].append((ts, "instant", (thread_uuid(301), "VSync", "viz",
                                             {"frame_number": frame})))
    memory = 150_000_000
    for ts in range(DEMO_START + 5_000_000, DEMO_END, 50_000_000):
        memory += rng.randint(-4_000_000, 6_000_000)
        streams[200].append((ts, "counter", (MEMORY_TRACK_UUID, memory)))
    for ts in range(DEMO_START + 7_000_000, DEMO_END, 100_000_000):
        streams[101].append((ts, "counter", (IPC_COUNTER_UUID, rng.randint(0, 25))))
    middle = tasks[INCREMENTAL_CLOCK_TID][len(tasks[INCREMENTAL_CLOCK_TID]) // 2]
    streams[INCREMENTAL_CLOCK_TID].append(
        (middle["ts"] + middle["dur"] + 1, "clear_incremental_state", ()))

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
                seq.counter_track(MEMORY_TRACK_UUID, "MemoryUsage", process_uuid(200),
                                  unit="bytes", ts=DEMO_START)
            if tid == 101:
                seq.track(NETWORK_TRACK_UUID, "NetworkRequests", process_uuid(100), ts=DEMO_START)
                seq.counter_track(IPC_COUNTER_UUID, "IPCMessagesSent", process_uuid(100),
                                  unit="count", is_incremental=True, ts=DEMO_START)
            # Stable sort: events sharing a timestamp keep their generation order.
            for ts, method, args in sorted(streams[tid], key=lambda event: event[0]):
                if method == "clear_incremental_state":
                    seq.clear_incremental_state()
                else:
                    getattr(seq, method)(ts, *args)
    return builder.to_bytes()


def write_demo_trace(path: str | Path, gzip: bool = False) -> Path:
    """Write `build_demo_trace()` to `path`."""
    return _write(path, build_demo_trace(), gzip)


def _write(path: str | Path, data: bytes, gzip: bool) -> Path:
    path = Path(path)
    # mtime=0 keeps gzipped output byte-identical between runs.
    path.write_bytes(gzip_module.compress(data, mtime=0) if gzip else data)
    return path
