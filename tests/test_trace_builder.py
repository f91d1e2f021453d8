import collections
import gzip
import random

import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.trace_builder import (
    BOOTTIME,
    DEMO_DISPLAYS,
    DEMO_END,
    DEMO_PHONE_HEAP_UUID,
    DEMO_PHONE_MACHINE_ID,
    DEMO_PHONE_PROCESS,
    DEMO_START,
    IPC_COUNTER_UUID,
    MEMORY_TRACK_UUID,
    NETWORK_TRACK_UUID,
    D,
    S,
    SchedTask,
    TraceBuilder,
    build_demo_trace,
    process_uuid,
    simulate_sched,
    thread_uuid,
    write_demo_trace,
)

CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
TE = pb.TrackEvent


def parse(data: bytes) -> list[pb.TracePacket]:
    return list(pb.Trace.FromString(data).packet)


def decode(data: bytes) -> list[dict]:
    """Resolve interning and timestamps the way trace processor does.

    Returns one dict per non-ClockSnapshot packet with the absolute timestamp and,
    for track events, the resolved name, categories and debug annotations."""
    interned: dict[int, dict] = {}
    defaults: dict[int, int] = {}
    clocks: dict[tuple[int, int], int] = {}  # (seq, incremental clock id) -> last value
    out = []
    for packet in parse(data):
        seq = packet.trusted_packet_sequence_id
        if packet.incremental_state_cleared:
            interned[seq] = collections.defaultdict(dict)
            defaults.pop(seq, None)
        # Sequences without track events (the demo's kernel, service and profiler data) never clear.
        tables = interned.setdefault(seq, collections.defaultdict(dict))
        if packet.HasField("trace_packet_defaults"):
            defaults[seq] = packet.trace_packet_defaults.timestamp_clock_id
        data_ = packet.interned_data
        for field in ("event_names", "event_categories", "debug_annotation_names"):
            for entry in getattr(data_, field):
                assert entry.iid not in tables[field], "iid re-interned within a generation"
                tables[field][entry.iid] = entry.name
        for entry in data_.debug_annotation_string_values:
            tables["strings"][entry.iid] = entry.str.decode()
        if packet.HasField("clock_snapshot"):
            by_id = {c.clock_id: c for c in packet.clock_snapshot.clocks}
            boottime = by_id[BOOTTIME].timestamp
            for clock in packet.clock_snapshot.clocks:
                if clock.is_incremental:
                    # The builder maps the incremental clock 1:1 onto BOOTTIME.
                    assert clock.timestamp == boottime
                    clocks[seq, clock.clock_id] = clock.timestamp
            continue
        ts = None
        if packet.HasField("timestamp"):
            clock_id = packet.timestamp_clock_id or defaults.get(seq, BOOTTIME)
            if clock_id == BOOTTIME:
                ts = packet.timestamp
            else:
                ts = clocks[seq, clock_id] = clocks[seq, clock_id] + packet.timestamp
        item = {"seq": seq, "ts": ts, "packet": packet}
        if packet.HasField("track_event"):
            event = packet.track_event
            item["type"] = event.type
            item["track"] = event.track_uuid
            if event.HasField("name_iid"):
                item["name"] = tables["event_names"][event.name_iid]
            elif event.HasField("name"):
                item["name"] = event.name
            item["categories"] = [tables["event_categories"][i] for i in event.category_iids]
            item["categories"] += list(event.categories)
            item["args"] = {_name(a, tables): _value(a, tables) for a in event.debug_annotations}
        out.append(item)
    return out


def _name(ann: pb.DebugAnnotation, tables: dict) -> str:
    return tables["debug_annotation_names"][ann.name_iid] if ann.name_iid else ann.name


def _value(ann: pb.DebugAnnotation, tables: dict):
    kind = ann.WhichOneof("value")
    if ann.dict_entries:
        return {_name(e, tables): _value(e, tables) for e in ann.dict_entries}
    if ann.array_values:
        return [_value(e, tables) for e in ann.array_values]
    if kind == "string_value_iid":
        return tables["strings"][ann.string_value_iid]
    return getattr(ann, kind)


def events(data: bytes, type_=None) -> list[dict]:
    return [e for e in decode(data) if "type" in e and (type_ is None or e["type"] == type_)]


@pytest.fixture(scope="module")
def demo() -> bytes:
    return build_demo_trace()


def test_build_is_deterministic(demo):
    def small():
        builder = TraceBuilder()
        seq = builder.sequence(1, use_incremental_clock=True)
        seq.slice_begin(10, 1, "a", "cat", {"k": [1, 2.5, "x"]})
        seq.slice_end(20, 1)
        return builder.to_bytes()

    assert small() == small()
    assert build_demo_trace() == demo


def test_raw_packet_escape_hatch():
    builder = TraceBuilder()
    packet = builder.packet(timestamp=5, trusted_packet_sequence_id=7, track_event={"name": "x"})
    assert isinstance(packet, pb.TracePacket)
    [parsed] = parse(builder.to_bytes())
    assert (parsed.timestamp, parsed.trusted_packet_sequence_id) == (5, 7)
    assert parsed.track_event.name == "x"


def test_sequence_flags_and_clear():
    builder = TraceBuilder()
    seq = builder.sequence(3)
    assert builder.sequence(3) is seq
    for ts in (1, 2):
        seq.instant(ts, 1, "a")
    seq.clear_incremental_state()
    for ts in (3, 4):
        seq.instant(ts, 1, "a")
    packets = parse(builder.to_bytes())
    assert [p.trusted_packet_sequence_id for p in packets] == [3] * 4
    assert [p.sequence_flags for p in packets] == [CLEARED, NEEDS, CLEARED, NEEDS]
    assert [p.incremental_state_cleared for p in packets] == [True, False, True, False]
    assert [p.first_packet_on_sequence for p in packets] == [True, False, False, False]
    with pytest.raises(ValueError):
        builder.sequence(3, intern=False)


def test_interning_once_per_generation():
    builder = TraceBuilder()
    seq = builder.sequence(1)
    seq.slice_begin(1, 9, "Paint", "blink", {"url": "a", "n": 1})
    seq.slice_begin(2, 9, "Layout", "blink", {"url": "a", "other": "b"})
    seq.slice_end(3, 9)
    seq.slice_end(4, 9)
    seq.clear_incremental_state()
    seq.instant(5, 9, "Layout", "blink", {"url": "a"})
    p1, p2, p3, p4, p5 = parse(builder.to_bytes())

    def table(packet, field):
        return [(e.iid, e.name) for e in getattr(packet.interned_data, field)]

    assert table(p1, "event_names") == [(1, "Paint")]
    assert table(p1, "event_categories") == [(1, "blink")]
    assert table(p1, "debug_annotation_names") == [(1, "url"), (2, "n")]
    assert [(e.iid, e.str) for e in p1.interned_data.debug_annotation_string_values] == [(1, b"a")]
    assert p1.track_event.name_iid == 1 and list(p1.track_event.category_iids) == [1]
    assert not p1.track_event.HasField("name")
    # Second event only carries what is new.
    assert table(p2, "event_names") == [(2, "Layout")]
    assert table(p2, "event_categories") == []
    assert table(p2, "debug_annotation_names") == [(3, "other")]
    assert [(e.iid, e.str) for e in p2.interned_data.debug_annotation_string_values] == [(2, b"b")]
    assert not p3.HasField("interned_data") and not p4.HasField("interned_data")
    # After clearing, iids restart and everything is emitted again.
    assert p5.incremental_state_cleared
    assert table(p5, "event_names") == [(1, "Layout")]
    assert table(p5, "event_categories") == [(1, "blink")]
    assert table(p5, "debug_annotation_names") == [(1, "url")]
    assert p5.track_event.name_iid == 1
    assert [e["name"] for e in events(builder.to_bytes()) if "name" in e] == ["Paint", "Layout", "Layout"]


def test_intern_false_uses_plain_strings():
    builder = TraceBuilder()
    seq = builder.sequence(1, intern=False)
    seq.slice_begin(1, 9, "Paint", "blink", {"url": "a", "d": {"k": "v"}})
    [packet] = parse(builder.to_bytes())
    event = packet.track_event
    assert not packet.HasField("interned_data")
    assert event.name == "Paint" and list(event.categories) == ["blink"]
    assert not event.category_iids
    url, d = event.debug_annotations
    assert (url.name, url.string_value) == ("url", "a")
    assert d.dict_entries[0].name == "k" and d.dict_entries[0].string_value == "v"


@pytest.mark.parametrize("intern", [True, False])
def test_debug_annotation_values(intern):
    args = {
        "s": "text",
        "i": -7,
        "big": 2**64 - 1,
        "f": 0.25,
        "b": True,
        "no": False,
        "d": {"inner": {"x": 1}, "label": "y"},
        "arr": [1, "two", 3.5, [True]],
    }
    builder = TraceBuilder()
    builder.sequence(1, intern=intern).instant(1, 9, "e", args=args)
    [event] = events(builder.to_bytes())
    assert event["args"] == args
    annotations = event["packet"].track_event.debug_annotations
    assert all(a.HasField("name_iid") == intern for a in annotations)
    kinds = [a.WhichOneof("value") for a in annotations]
    assert kinds[:6] == [
        "string_value_iid" if intern else "string_value",
        "int_value",
        "uint_value",
        "double_value",
        "bool_value",
        "bool_value",
    ]
    with pytest.raises(TypeError):
        builder.sequence(2).instant(1, 9, "e", args={"bad": object()})


def test_incremental_clock_round_trip():
    builder = TraceBuilder()
    seq = builder.sequence(5, use_incremental_clock=True)
    stamps = [1_000_000_123, 1_000_000_123, 1_000_500_000, 1_999_999_999_999]
    for ts in stamps[:2]:
        seq.instant(ts, 9, "a")
    seq.clear_incremental_state()
    for ts in stamps[2:]:
        seq.instant(ts, 9, "a")
    packets = parse(builder.to_bytes())
    snapshot = packets[0]
    assert snapshot.incremental_state_cleared and snapshot.sequence_flags == CLEARED
    assert snapshot.first_packet_on_sequence
    assert snapshot.trace_packet_defaults.timestamp_clock_id == seq.clock_id
    assert 64 <= seq.clock_id <= 127
    assert snapshot.timestamp_clock_id == BOOTTIME and snapshot.timestamp == stamps[0]
    assert [(c.clock_id, c.timestamp, c.is_incremental) for c in snapshot.clock_snapshot.clocks] == [
        (BOOTTIME, stamps[0], False),
        (seq.clock_id, stamps[0], True),
    ]
    # Events store deltas on the incremental clock.
    assert [p.timestamp for p in packets[1:3]] == [0, 0]
    assert all(not p.HasField("timestamp_clock_id") for p in packets[1:3])
    assert packets[3].HasField("clock_snapshot") and packets[3].incremental_state_cleared
    assert packets[3].clock_snapshot.clocks[1].timestamp == stamps[2]
    assert [p.timestamp for p in packets[4:]] == [0, stamps[3] - stamps[2]]
    assert [e["ts"] for e in events(builder.to_bytes())] == stamps
    with pytest.raises(ValueError):
        seq.instant(stamps[3] - 1, 9, "a")


def test_descriptors_and_counters():
    builder = TraceBuilder()
    seq = builder.sequence(1)
    assert seq.process(10, "proc", cmdline="proc --x") == process_uuid(10)
    assert seq.thread(10, 11, "worker") == thread_uuid(11)
    seq.track(77, "async", parent_uuid=process_uuid(10))
    seq.counter_track(88, "mem", parent_uuid=process_uuid(10), unit="bytes")
    seq.counter_track(89, "ops", unit="widgets", is_incremental=True)
    seq.counter(5, 88, 1024)
    seq.counter(6, 88, 1.5)
    with pytest.raises(TypeError):
        seq.counter(7, 88, True)
    proc, thread, track, mem, ops, c1, c2 = parse(builder.to_bytes())
    assert proc.track_descriptor.process.process_name == "proc"
    assert list(proc.track_descriptor.process.cmdline) == ["proc --x"]
    assert not proc.HasField("timestamp")
    t = thread.track_descriptor
    assert (t.uuid, t.thread.pid, t.thread.tid, t.thread.thread_name) == (thread_uuid(11), 10, 11, "worker")
    assert (track.track_descriptor.name, track.track_descriptor.parent_uuid) == ("async", process_uuid(10))
    assert not track.track_descriptor.HasField("counter")
    assert mem.track_descriptor.counter.unit == pb.CounterDescriptor.UNIT_SIZE_BYTES
    assert not mem.track_descriptor.counter.is_incremental
    assert ops.track_descriptor.counter.unit_name == "widgets"
    assert ops.track_descriptor.counter.is_incremental
    assert c1.track_event.type == TE.TYPE_COUNTER and c1.track_event.counter_value == 1024
    assert c2.track_event.double_counter_value == 1.5
    assert not c2.track_event.HasField("counter_value")


def test_flow_ids_on_events():
    builder = TraceBuilder()
    seq = builder.sequence(1)
    seq.slice_begin(1, 9, "a", flow_ids=[5, 6])
    seq.instant(2, 8, "b", terminating_flow_ids=[5])
    begin, instant = parse(builder.to_bytes())
    assert list(begin.track_event.flow_ids) == [5, 6]
    assert list(instant.track_event.terminating_flow_ids) == [5]


def test_callstacks_are_interned_once_per_generation():
    builder = TraceBuilder()
    seq = builder.sequence(1)
    libc = "/system/lib64/libc.so"
    read = seq.intern_callstack([("main", "/bin/app"), ("read", libc)])
    write = seq.intern_callstack([("main", "/bin/app"), ("write", libc)])
    assert seq.intern_callstack([("main", "/bin/app"), ("read", libc)]) == read != write
    seq.instant(1, 9, "x")  # the packet that carries what was interned
    seq.clear_incremental_state()
    assert seq.intern_callstack([("main", "/bin/app")]) == 1
    seq.instant(2, 9, "x")
    with pytest.raises(ValueError):
        seq.intern_callstack([])
    first, second = parse(builder.to_bytes())
    data = first.interned_data
    # One id space for function names and path components (a ProfilePacket has one string table).
    assert [(e.iid, e.str) for e in data.function_names] == [(1, b"main"), (4, b"read"), (8, b"write")]
    assert [e.str for e in data.mapping_paths] == [b"bin", b"app", b"system", b"lib64", b"libc.so"]
    assert [list(m.path_string_ids) for m in data.mappings] == [[2, 3], [5, 6, 7]]
    assert [(f.iid, f.function_name_id, f.mapping_id) for f in data.frames] == [(1, 1, 1), (2, 4, 2), (3, 8, 2)]
    assert [list(c.frame_ids) for c in data.callstacks] == [[1, 2], [1, 3]]
    assert [e.str for e in second.interned_data.function_names] == [b"main"]
    assert len(second.interned_data.callstacks) == 1


def test_a_function_named_like_a_path_component_is_in_both_tables():
    builder = TraceBuilder()
    seq = builder.sequence(1)
    seq.intern_callstack([("app", "/bin/app")])
    seq.instant(1, 9, "x")
    (packet,) = parse(builder.to_bytes())
    data = packet.interned_data
    assert [(e.iid, e.str) for e in data.function_names] == [(1, b"app")]
    assert [(e.iid, e.str) for e in data.mapping_paths] == [(2, b"bin"), (3, b"app")]


def stacks(db, table: str) -> list[tuple]:
    """(ts, tid or upid, frame names outermost first) of each sample in `table`, in time order."""
    frames = {
        cid: (parent, name)
        for cid, parent, name in db.rows(
            "SELECT c.id, c.parent_id, f.name FROM stack_profile_callsite c JOIN stack_profile_frame f ON f.id = c.frame_id"
        )
    }
    out = []
    for ts, owner, callsite in db.rows(f"SELECT * FROM ({table}) ORDER BY 1"):
        names = []
        while callsite is not None:
            callsite, name = frames[callsite]
            names.insert(0, name)
        out.append((ts, owner, names))
    return out


def test_stack_samples_round_trip(ingest_data):
    builder = TraceBuilder()
    seq = builder.sequence(4)
    work = [("main", "/bin/app"), ("work", "/bin/app")]
    seq.stack_samples(10, 11, [(5_000_123, work), (6_000_000, work[:1])])
    seq.stack_samples(10, 11, [(6_500_000, work)])
    with pytest.raises(ValueError):
        seq.stack_samples(10, 12, [(7_000_000, work)])  # a sequence samples one thread
    with pytest.raises(ValueError):
        seq.stack_samples(10, 11, [(6_000_000, work)])  # before the last sample
    descriptor, first, second = parse(builder.to_bytes())
    assert descriptor.thread_descriptor.reference_timestamp_us == 5_000
    assert list(first.streaming_profile_packet.timestamp_delta_us) == [0, 1_000]
    assert list(second.streaming_profile_packet.timestamp_delta_us) == [500]
    _, db = ingest_data(builder.to_bytes())
    # Sample times are kept to the microsecond.
    assert stacks(
        db, "SELECT s.ts, t.tid, s.callsite_id FROM cpu_profile_stack_sample s JOIN thread t USING (utid)"
    ) == [(5_000_000, 11, ["main", "work"]), (6_000_000, 11, ["main"]), (6_500_000, 11, ["main", "work"])]
    assert db.rows("SELECT DISTINCT name FROM stack_profile_mapping") == [("/bin/app",)]


def test_heap_profile_dumps_round_trip(ingest_data):
    builder = TraceBuilder()
    # Boot time runs 1000 ns ahead of heapprofd's clock.
    builder.packet(
        timestamp=1000,
        trusted_packet_sequence_id=2,
        clock_snapshot=pb.ClockSnapshot(
            clocks=[
                pb.ClockSnapshot.Clock(clock_id=BOOTTIME, timestamp=1000),
                pb.ClockSnapshot.Clock(clock_id=pb.BUILTIN_CLOCK_MONOTONIC_COARSE, timestamp=0),
            ]
        ),
    )
    stack = [("main", "/bin/app"), ("malloc", "/lib/libc.so")]
    builder.heap_profile(100, 30, [(stack, 1000, 200, 10, 2)], seq_id=9)
    builder.heap_profile(200, 30, [(stack, 1500, 1200, 15, 12)], seq_id=9)
    assert [p.profile_packet.index for p in parse(builder.to_bytes())[1:]] == [0, 1]
    _, db = ingest_data(builder.to_bytes())
    # Cumulative samples become what changed since the previous dump.
    assert db.rows("SELECT ts, count, size FROM heap_profile_allocation ORDER BY id") == [
        (1100, 10, 1000),
        (1100, -2, -200),
        (1200, 5, 500),
        (1200, -10, -1000),
    ]
    assert stacks(db, "SELECT ts, upid, callsite_id FROM heap_profile_allocation WHERE size > 0")[0][2] == [
        "main",
        "malloc",
    ]
    assert db.stat("heapprofd_missing_packet") == 0


def test_simulate_sched_follows_planned_runs(ingest_data):
    # Two threads on CPU 0: a runs ticks 2-6 then sleeps in D until tick 10; b, woken by a at tick 4,
    # waits (R) until a blocks, then runs 3 ticks. 100 ns ticks from ts 1000.
    tasks = [
        SchedTask(10, 10, "a", 0, runs=[(2, 4, D, 0), (10, 2, S, 11)]),
        SchedTask(11, 10, "b", 0, runs=[(4, 3, S, 10)]),
    ]
    symbols = {1: "io_schedule"}
    events = simulate_sched(tasks, start=1000, tick=100, ticks=20, cpus=1, rng=random.Random(1), kernel_symbols=symbols)
    builder = TraceBuilder()
    builder.sched(events, kernel_symbols=symbols)
    _, db = ingest_data(builder.to_bytes())
    assert db.rows("""SELECT t.name, s.ts, s.dur, s.state, s.blocked_function, w.name FROM thread_state s
        JOIN thread t USING (utid) LEFT JOIN thread w ON w.utid = s.waker_utid
        WHERE s.utid != 0 AND s.dur != 0 ORDER BY s.ts, t.name""") == [
        ("a", 1200, 400, "Running", None, None),
        ("b", 1400, 200, "R", None, "a"),
        ("a", 1600, 400, "D", "io_schedule", None),
        ("b", 1600, 300, "Running", None, None),
        ("b", 1900, -1, "S", None, None),
        ("a", 2000, 200, "Running", None, None),
        ("a", 2200, -1, "S", None, None),
    ]
    with pytest.raises(ValueError, match="kernel_symbols"):
        simulate_sched(tasks, start=0, tick=100, ticks=20, cpus=1, rng=random.Random(1))


def test_write_and_gzip(tmp_path):
    builder = TraceBuilder()
    builder.sequence(1).instant(1, 9, "a")
    plain = builder.write(tmp_path / "t.pftrace")
    zipped = builder.write(tmp_path / "t.pftrace.gz", gzip=True)
    assert plain.read_bytes() == builder.to_bytes()
    assert gzip.decompress(zipped.read_bytes()) == builder.to_bytes()
    assert builder.write(tmp_path / "again.gz", gzip=True).read_bytes() == zipped.read_bytes()
    assert write_demo_trace(tmp_path / "demo.pftrace").read_bytes() == build_demo_trace()


def test_demo_processes_and_threads(demo):
    # The desktop's (the phone's are in test_demo_phone_is_a_second_machine).
    descriptors = [p.track_descriptor for p in parse(demo) if p.HasField("track_descriptor") and not p.machine_id]
    processes = {d.process.pid: d.process.process_name for d in descriptors if d.HasField("process")}
    assert processes == {100: "browser", 200: "renderer", 300: "gpu-process"}
    assert all(d.uuid == process_uuid(d.process.pid) for d in descriptors if d.HasField("process"))
    threads = [d.thread for d in descriptors if d.HasField("thread")]
    assert len(threads) == 8
    per_process = collections.Counter(t.pid for t in threads)
    assert per_process == {100: 3, 200: 3, 300: 2}
    names = {t.thread_name for t in threads}
    assert {"CrBrowserMain", "IOThread", "CrRendererMain", "Compositor", "VizCompositorThread"} <= names
    # One sequence per thread, each announcing its own thread track first.
    seqs = collections.defaultdict(list)
    for p in parse(demo):
        if not p.machine_id:
            seqs[p.trusted_packet_sequence_id].append(p)
    thread_seqs = [packets for packets in seqs.values() if any(p.track_descriptor.HasField("thread") for p in packets)]
    assert len(thread_seqs) == 8
    for packets in thread_seqs:
        assert packets[0].first_packet_on_sequence and packets[0].incremental_state_cleared


def test_demo_slices_balanced_and_nested(demo):
    decoded = events(demo)
    stacks: dict[int, list] = collections.defaultdict(list)
    begins = collections.Counter()
    depth_max = 0
    for e in sorted(decoded, key=lambda e: e["ts"]):  # stable: keeps per-sequence order
        if e["type"] == TE.TYPE_SLICE_BEGIN:
            stacks[e["track"]].append(e)
            begins[e["track"]] += 1
            depth_max = max(depth_max, len(stacks[e["track"]]))
        elif e["type"] == TE.TYPE_SLICE_END:
            assert stacks[e["track"]], "slice end without begin"
            assert stacks[e["track"]].pop()["ts"] < e["ts"]
    assert all(not stack for stack in stacks.values())
    assert sum(begins.values()) >= 300
    assert depth_max >= 3
    assert begins[NETWORK_TRACK_UUID] >= 8
    assert all(begins[thread_uuid(tid)] > 10 for tid in (100, 101, 102, 200, 201, 202, 300, 301))
    names = {e["name"] for e in decoded if e["type"] == TE.TYPE_SLICE_BEGIN}
    assert {"MessageLoop::RunTask", "LayoutView::Layout", "Paint", "URLRequest"} <= names
    assert all(DEMO_START <= e["ts"] <= DEMO_END for e in decoded)


def test_demo_args_cover_all_value_kinds(demo):
    kinds = set()

    def visit(ann):
        kinds.add("dict" if ann.dict_entries else "array" if ann.array_values else ann.WhichOneof("value"))
        for child in list(ann.dict_entries) + list(ann.array_values):
            visit(child)

    for p in parse(demo):
        for ann in p.track_event.debug_annotations:
            visit(ann)
    assert {"string_value_iid", "int_value", "double_value", "bool_value", "dict", "array"} <= kinds
    request = next(e for e in events(demo) if e.get("name") == "URLRequest")
    assert request["args"]["url"].startswith("https://") and request["categories"] == ["net"]
    task = next(e for e in events(demo) if e.get("name") == "MessageLoop::RunTask")
    assert set(task["args"]["task"]) == {"posted_from", "queue"}


def test_demo_flows_begin_and_terminate(demo):
    decoded = events(demo)
    starts = {f: e for e in decoded for f in e["packet"].track_event.flow_ids}
    ends = {f: e for e in decoded for f in e["packet"].track_event.terminating_flow_ids}
    all_starts = [f for e in decoded for f in e["packet"].track_event.flow_ids]
    all_ends = [f for e in decoded for f in e["packet"].track_event.terminating_flow_ids]
    assert len(all_starts) == len(set(all_starts)) == len(all_ends) == len(set(all_ends))
    assert set(starts) == set(ends) and len(starts) >= 10
    for flow_id, start in starts.items():
        end = ends[flow_id]
        assert start["track"] != end["track"]
        assert start["ts"] < end["ts"]
        assert start["type"] == end["type"] == TE.TYPE_SLICE_BEGIN


def test_demo_counters_instants_and_async_track(demo):
    descriptors = {p.track_descriptor.uuid: p for p in parse(demo) if p.HasField("track_descriptor")}
    memory = descriptors[MEMORY_TRACK_UUID].track_descriptor
    assert memory.name == "MemoryUsage" and memory.parent_uuid == process_uuid(200)
    assert memory.counter.unit == pb.CounterDescriptor.UNIT_SIZE_BYTES
    ipc = descriptors[IPC_COUNTER_UUID]
    assert ipc.track_descriptor.counter.is_incremental
    network = descriptors[NETWORK_TRACK_UUID].track_descriptor
    assert network.name == "NetworkRequests" and network.parent_uuid == process_uuid(100)
    assert not network.HasField("thread") and not network.HasField("counter")

    decoded = events(demo)
    counters = collections.Counter(e["track"] for e in decoded if e["type"] == TE.TYPE_COUNTER)
    refresh_rates = {uuid + 1 for _, uuid, _, _ in DEMO_DISPLAYS.values()}
    assert set(counters) == {MEMORY_TRACK_UUID, IPC_COUNTER_UUID, DEMO_PHONE_HEAP_UUID} | refresh_rates
    assert counters[MEMORY_TRACK_UUID] >= 20 and counters[IPC_COUNTER_UUID] >= 10
    # Incremental counter values must come from the sequence that declared the track.
    assert {e["seq"] for e in decoded if e["track"] == IPC_COUNTER_UUID} == {ipc.trusted_packet_sequence_id}
    instants = collections.Counter(e["name"] for e in decoded if e["type"] == TE.TYPE_INSTANT)
    assert instants["InputEvent"] == 12 and instants["VSync"] >= 30


def test_demo_uses_incremental_clock_with_mid_trace_clear(demo):
    packets = parse(demo)
    snapshots = [
        p for p in packets if p.HasField("clock_snapshot") and any(c.is_incremental for c in p.clock_snapshot.clocks)
    ]
    assert len(snapshots) == 2
    assert len({p.trusted_packet_sequence_id for p in snapshots}) == 1
    seq = snapshots[0].trusted_packet_sequence_id
    on_seq = [p for p in packets if p.trusted_packet_sequence_id == seq]
    assert sum(p.incremental_state_cleared for p in on_seq) == 2
    names = [e.name for p in on_seq for e in p.interned_data.event_names]
    assert names.count("Display::DrawAndSwap") == 2  # re-interned after the clear
    # Other track-event sequences use absolute timestamps and clear exactly once.
    for other in {p.trusted_packet_sequence_id for p in packets if p.HasField("track_event")} - {seq}:
        assert sum(p.incremental_state_cleared for p in packets if p.trusted_packet_sequence_id == other) == 1


def test_demo_phone_is_a_second_machine(demo):
    packets = parse(demo)
    remote = [i for i, p in enumerate(packets) if p.machine_id]
    # Appended after everything of the desktop's, all from one machine, on sequences of their own
    # (the service assigns sequence ids across machines).
    assert remote == list(range(remote[0], len(packets)))
    assert {packets[i].machine_id for i in remote} == {DEMO_PHONE_MACHINE_ID}
    host_seqs = {p.trusted_packet_sequence_id for p in packets[: remote[0]]}
    assert host_seqs.isdisjoint(packets[i].trusted_packet_sequence_id for i in remote)
    # The phone's SystemInfo; the desktop writes none.
    assert [p.system_info.utsname.machine for p in packets if p.HasField("system_info")] == ["aarch64"]
    assert packets[remote[0]].HasField("system_info")
    pid, name, threads = DEMO_PHONE_PROCESS
    descriptors = [packets[i].track_descriptor for i in remote if packets[i].HasField("track_descriptor")]
    assert [(d.process.pid, d.process.process_name) for d in descriptors if d.HasField("process")] == [(pid, name)]
    assert [(d.thread.tid, d.thread.thread_name) for d in descriptors if d.HasField("thread")] == [
        (tid, tname) for tid, tname, _ in threads
    ]
    # Inside the desktop's time span, so the trace bounds are the desktop's.
    decoded = decode(demo)
    host = [e["ts"] for e in decoded if "type" in e and not e["packet"].machine_id]
    phone = [e["ts"] for e in decoded if "type" in e and e["packet"].machine_id]
    assert min(host) < min(phone) and max(phone) < max(host)
    names = collections.Counter(
        e["name"] for e in decoded if e.get("type") == TE.TYPE_SLICE_BEGIN and e["packet"].machine_id
    )
    assert sum(names.values()) == 60 and names["DevToolsSession::DispatchProtocolMessage"] > 3
