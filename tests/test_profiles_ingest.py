"""Profiles: callstack interning, perf and Chrome stack samples, heapprofd dumps, Java heap
graphs with dominator trees, and collapsed-stack files."""

from __future__ import annotations

import random
import sqlite3

import pytest
from conftest import ingest_built
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.importers.proto.dominators import dominator_tree
from datasette_perfetto.ingest import IngestError, detect_format, ingest
from datasette_perfetto.trace_builder import TraceBuilder, build_demo_trace

CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
NEEDS_STATE = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE


def load(builder: TraceBuilder, tmp_path) -> sqlite3.Connection:
    return sqlite3.connect(ingest_built(tmp_path, builder).path)


def stat(conn, name: str) -> int:
    return conn.execute("SELECT coalesce(sum(value), 0) FROM stats WHERE name = ?", (name,)).fetchone()[0]


def stack(conn, callsite_id: int) -> list[str]:
    """Frame names of a callsite, root first."""
    names = []
    while callsite_id is not None:
        parent, name = conn.execute(
            "SELECT c.parent_id, f.name FROM stack_profile_callsite c JOIN stack_profile_frame f ON f.id = c.frame_id "
            "WHERE c.id = ?",
            (callsite_id,),
        ).fetchone()
        names.append(name)
        callsite_id = parent
    return names[::-1]


def callstack_interning(seq_flags: int = CLEARED) -> dict:
    """InternedData with two callstacks sharing main → work, in libapp.so (build id 0xab 0xcd)."""
    return dict(
        sequence_flags=seq_flags,
        interned_data=pb.InternedData(
            function_names=[
                pb.InternedString(iid=1, str=b"main"),
                pb.InternedString(iid=2, str=b"work"),
                pb.InternedString(iid=3, str=b"read"),
                pb.InternedString(iid=4, str=b"write"),
            ],
            build_ids=[pb.InternedString(iid=1, str=b"\xab\xcd")],
            mapping_paths=[pb.InternedString(iid=1, str=b"data"), pb.InternedString(iid=2, str=b"libapp.so")],
            mappings=[pb.Mapping(iid=1, build_id=1, start=0x1000, end=0x9000, path_string_ids=[1, 2])],
            frames=[
                pb.Frame(iid=i, function_name_id=i, mapping_id=1, rel_pc=0x100 * i, kind=pb.Frame.KIND_NATIVE)
                for i in range(1, 5)
            ],
            callstacks=[pb.Callstack(iid=1, frame_ids=[1, 2, 3]), pb.Callstack(iid=2, frame_ids=[1, 2, 4])],
        ),
    )


# -- callstacks and linux.perf samples ------------------------------------------------------------------


def test_perf_samples_with_interned_callstacks(tmp_path):
    b = TraceBuilder()
    b.packet(
        trusted_packet_sequence_id=7,
        timestamp=100,
        **callstack_interning(),
        trace_packet_defaults=pb.TracePacketDefaults(
            perf_sample_defaults=pb.PerfSampleDefaults(
                timebase=pb.PerfEvents.Timebase(counter=pb.PerfEvents.HW_CPU_CYCLES, period=1000)
            )
        ),
    )
    for ts, iid, cpu, mode in (
        (1000, 1, 0, pb.Profiling.MODE_USER),
        (2000, 2, 1, pb.Profiling.MODE_KERNEL),
        (3000, 1, 0, pb.Profiling.MODE_USER),
    ):
        b.packet(
            trusted_packet_sequence_id=7,
            timestamp=ts,
            sequence_flags=NEEDS_STATE,
            perf_sample=pb.PerfSample(cpu=cpu, pid=10, tid=11, callstack_iid=iid, cpu_mode=mode, timebase_count=1000),
        )
    b.packet(
        trusted_packet_sequence_id=7,
        timestamp=4000,
        sequence_flags=NEEDS_STATE,
        perf_sample=pb.PerfSample(
            cpu=0,
            pid=10,
            tid=11,
            callstack_iid=99,
            cpu_mode=pb.Profiling.MODE_USER,
            unwind_error=pb.Profiling.UNWIND_ERROR_INVALID_MAP,
        ),
    )
    conn = load(b, tmp_path)
    rows = conn.execute(
        "SELECT ts, cpu, cpu_mode, callsite_id, unwind_error, perf_session_id, "
        "(SELECT tid FROM thread WHERE utid = perf_sample.utid) FROM perf_sample ORDER BY ts"
    ).fetchall()
    assert [(ts, cpu, mode, err, session, tid) for ts, cpu, mode, _, err, session, tid in rows] == [
        (1000, 0, "user", None, 0, 11),
        (2000, 1, "kernel", None, 0, 11),
        (3000, 0, "user", None, 0, 11),
        (4000, 0, "user", "invalid_map", 0, 11),
    ]
    assert stack(conn, rows[0][3]) == ["main", "work", "read"]
    assert stack(conn, rows[1][3]) == ["main", "work", "write"]
    assert rows[0][3] == rows[2][3] and rows[3][3] is None  # same callstack, same callsite; unknown iid: none
    assert stat(conn, "stackprofile_invalid_callstack_id") == 1
    # main and work are shared by both stacks: 4 callsites, 4 frames, 1 mapping.
    assert conn.execute("SELECT count(*) FROM stack_profile_callsite").fetchone()[0] == 4
    assert conn.execute("SELECT name, build_id, start, end FROM stack_profile_mapping").fetchall() == [
        ("/data/libapp.so", "abcd", 0x1000, 0x9000)
    ]
    assert conn.execute("SELECT name, rel_pc, type FROM stack_profile_frame ORDER BY id").fetchall() == [
        ("main", 0x100, "native"),
        ("work", 0x200, "native"),
        ("read", 0x300, "native"),
        ("write", 0x400, "native"),
    ]
    assert conn.execute("SELECT source, timebase_unit FROM profiler_session").fetchall() == [("linux.perf", "cycles")]
    # The timebase counter, on a perf counter track per cpu.
    assert conn.execute(
        "SELECT t.name, t.cpu, t.is_timebase, count(*) FROM counter c JOIN perf_counter_track t "
        "ON t.id = c.track_id GROUP BY t.id ORDER BY t.cpu"
    ).fetchall() == [("cpu-cycles", 0, 1, 2), ("cpu-cycles", 1, 1, 1)]
    # Samples with a callstack are stack samples; the one without is not.
    assert conn.execute("SELECT count(*) FROM stack_sample WHERE source = 'linux.perf'").fetchone()[0] == 3


def test_callstacks_need_valid_incremental_state(tmp_path):
    """Interned data of a sequence whose state was never cleared is not trusted; a dropped
    packet invalidates it until the next clear, and the samples that need it are skipped."""
    b = TraceBuilder()
    b.packet(trusted_packet_sequence_id=3, timestamp=100, **callstack_interning(seq_flags=0))
    b.packet(
        trusted_packet_sequence_id=3,
        timestamp=200,
        sequence_flags=NEEDS_STATE,
        perf_sample=pb.PerfSample(cpu=0, pid=1, tid=1, callstack_iid=1),
    )
    conn = load(b, tmp_path)
    assert conn.execute("SELECT count(*) FROM perf_sample").fetchone()[0] == 0
    assert stat(conn, "interned_data_skipped_incremental_state_invalid") == 1
    assert stat(conn, "packet_skipped_seq_needs_incremental_state_invalid") == 1


def test_bad_interned_frames_are_counted(tmp_path):
    b = TraceBuilder()
    b.packet(
        trusted_packet_sequence_id=4,
        timestamp=100,
        sequence_flags=CLEARED,
        interned_data=pb.InternedData(
            function_names=[pb.InternedString(iid=1, str=b"f")],
            frames=[pb.Frame(iid=1, function_name_id=1, mapping_id=5), pb.Frame(iid=2, function_name_id=9)],
            callstacks=[
                pb.Callstack(iid=1, frame_ids=[1]),
                pb.Callstack(iid=2, frame_ids=[2]),
                pb.Callstack(iid=3, frame_ids=[3]),
                pb.Callstack(iid=4),
            ],
        ),
    )
    for ts, iid in ((1000, 1), (2000, 2), (3000, 3), (4000, 4)):
        b.packet(trusted_packet_sequence_id=4, timestamp=ts, perf_sample=pb.PerfSample(pid=1, tid=1, callstack_iid=iid))
    conn = load(b, tmp_path)
    assert conn.execute("SELECT count(*), count(callsite_id) FROM perf_sample").fetchone() == (4, 0)
    assert stat(conn, "stackprofile_invalid_mapping_id") == 1
    assert stat(conn, "stackprofile_invalid_string_id") == 1
    assert stat(conn, "stackprofile_invalid_frame_id") == 1
    assert stat(conn, "stackprofile_empty_callstack") == 1


# -- Chrome's sampling profiler -------------------------------------------------------------------------


def test_streaming_profile_samples(tmp_path):
    b = TraceBuilder()
    b.packet(
        trusted_packet_sequence_id=2,
        timestamp=1000,
        incremental_state_cleared=True,
        thread_descriptor=pb.ThreadDescriptor(pid=20, tid=21, reference_timestamp_us=5),
        **{k: v for k, v in callstack_interning().items() if k != "sequence_flags"},
    )
    b.packet(
        trusted_packet_sequence_id=2,
        timestamp=1000,
        streaming_profile_packet=pb.StreamingProfilePacket(callstack_iid=[1, 2, 7], timestamp_delta_us=[10, 5, 1]),
    )
    conn = load(b, tmp_path)
    rows = conn.execute(
        "SELECT ts, callsite_id, (SELECT tid FROM thread WHERE utid = s.utid) "
        "FROM cpu_profile_stack_sample s ORDER BY ts"
    ).fetchall()
    # 5us reference, then +10us, +5us; the third callstack is unknown.
    assert [(ts, tid) for ts, _, tid in rows] == [(15_000, 21), (20_000, 21)]
    assert stack(conn, rows[0][1]) == ["main", "work", "read"]
    assert conn.execute("SELECT DISTINCT source FROM stack_sample").fetchall() == [("chrome",)]
    assert stat(conn, "stackprofile_invalid_callstack_id") == 1
    assert stat(conn, "stackprofile_parser_error") == 1


# -- heapprofd ------------------------------------------------------------------------------------------


def _heap_dump(ts: int, allocated: int, freed: int, allocs: int, frees: int, index: int) -> dict:
    return dict(
        trusted_packet_sequence_id=9,
        timestamp=ts,
        profile_packet=pb.ProfilePacket(
            index=index,
            strings=[
                pb.InternedString(iid=1, str=b"malloc_caller"),
                pb.InternedString(iid=2, str=b"libc.so"),
                pb.InternedString(iid=3, str=b""),
            ],
            mappings=[pb.Mapping(iid=1, build_id=3, start=0, end=0x1000, path_string_ids=[2])],
            frames=[pb.Frame(iid=1, function_name_id=1, mapping_id=1, rel_pc=0x10)],
            callstacks=[pb.Callstack(iid=1, frame_ids=[1])],
            process_dumps=[
                pb.ProfilePacket.ProcessHeapSamples(
                    pid=30,
                    heap_name="libc.malloc",
                    timestamp=ts,
                    samples=[
                        pb.ProfilePacket.HeapSample(
                            callstack_id=1,
                            self_allocated=allocated,
                            self_freed=freed,
                            alloc_count=allocs,
                            free_count=frees,
                        )
                    ],
                )
            ],
        ),
    )


def test_heap_profile_dumps_become_deltas(tmp_path):
    b = TraceBuilder()
    b.packet(
        clock_snapshot=pb.ClockSnapshot(
            clocks=[pb.ClockSnapshot.Clock(clock_id=6, timestamp=0), pb.ClockSnapshot.Clock(clock_id=4, timestamp=0)]
        )
    )
    b.packet(**_heap_dump(100, 1000, 200, 10, 2, 0))
    b.packet(**_heap_dump(200, 1500, 1200, 15, 12, 1))
    b.packet(**_heap_dump(300, 1400, 1200, 15, 12, 3))  # counts went down: malformed; index 2 missing
    conn = load(b, tmp_path)
    assert conn.execute("SELECT ts, heap_name, count, size FROM heap_profile_allocation ORDER BY id").fetchall() == [
        (100, "libc.malloc", 10, 1000),
        (100, "libc.malloc", -2, -200),
        (200, "libc.malloc", 5, 500),
        (200, "libc.malloc", -10, -1000),
    ]
    assert conn.execute("SELECT ts, ts_end, dur, heap_name FROM heap_profile ORDER BY id").fetchall() == [
        (100, 100, 0, "libc.malloc"),
        (200, 200, 0, "libc.malloc"),
        (300, 300, 0, "libc.malloc"),
    ]
    assert (
        conn.execute("SELECT DISTINCT upid FROM heap_profile_allocation").fetchall()
        == conn.execute("SELECT upid FROM process WHERE pid = 30").fetchall()
    )
    assert stat(conn, "heapprofd_malformed_packet") == 1
    assert stat(conn, "heapprofd_missing_packet") == 1
    callsite = conn.execute("SELECT callsite_id FROM heap_profile_allocation LIMIT 1").fetchone()[0]
    assert stack(conn, callsite) == ["malloc_caller"]


# -- Java heap graphs -----------------------------------------------------------------------------------


def _object(id, type_id, size, refs=(), fields=()):
    return dict(id=id, type_id=type_id, self_size=size, reference_object_id=list(refs), reference_field_id=list(fields))


def test_heap_graph_objects_classes_references_and_dominators(tmp_path):
    b = TraceBuilder()
    b.packet(process_tree=pb.ProcessTree(processes=[pb.ProcessTree.Process(pid=40, ppid=1, cmdline=["app"])]))
    # Root 1 → 2 → {3, 4}; 4 → 5; 3 → 5 (so 5 is dominated by 2, not by 3 or 4); 6 is garbage;
    # 7 is only referred to weakly (the referent of a WeakReference, object 8, a second root).
    b.heap_graph(
        10,
        seq_id=5,
        pid=40,
        index=0,
        continued=True,
        heap_bytes_allocated=4096,
        objects=[
            _object(1, 1, 10, [2], [1]),
            _object(2, 1, 20, [3, 4], [1, 2]),
            _object(3, 1, 30, [5], [1]),
        ],
    )
    b.heap_graph(
        10,
        seq_id=5,
        pid=40,
        index=1,
        continued=True,
        objects=[
            _object(4, 1, 40, [5], [2]),
            _object(5, 2, 0),
            _object(6, 2, 60, [1], [1]),
            _object(7, 2, 70),
            _object(8, 3, 80, [7], [3]),
        ],
        roots=[dict(root_type=3, object_ids=[1]), dict(root_type=1, object_ids=[8])],
    )
    b.heap_graph(
        10,
        seq_id=5,
        pid=40,
        index=2,
        types=[
            dict(id=1, class_name=b"com.Node", location_id=1),
            dict(id=2, class_name=b"byte[]", object_size=50, kind=4),
            dict(id=3, class_name=b"java.lang.ref.WeakReference", kind=9),
        ],
        field_names=[
            dict(iid=1, str=b"com.Node com.Node.left"),
            dict(iid=2, str=b"com.Node com.Node.right"),
            dict(iid=3, str=b"java.lang.Object java.lang.ref.Reference.referent"),
        ],
        location_names=[dict(iid=1, str=b"base.apk")],
    )
    conn = load(b, tmp_path)
    objects = {
        row[0]: row[1:]
        for row in conn.execute(
            "SELECT o.id, c.name, o.self_size, o.reachable, o.root_type FROM heap_graph_object o "
            "JOIN heap_graph_class c ON c.id = o.type_id"
        )
    }
    assert len(objects) == 8
    by_size = {size: (name, reachable, root) for name, size, reachable, root in objects.values()}
    assert by_size[50] == ("byte[]", 1, None)  # object 5 took its type's size
    assert by_size[60][1] == 0 and by_size[70][1] == 0  # garbage, and only weakly reachable
    assert by_size[10] == ("com.Node", 1, "ROOT_JAVA_FRAME") and by_size[80][2] == "ROOT_JNI_GLOBAL"
    assert conn.execute("SELECT ts, heap_size, truncated FROM heap_graph").fetchall() == [(10, 4096, 0)]
    assert conn.execute("SELECT location FROM heap_graph_class WHERE name = 'com.Node'").fetchone() == ("base.apk",)
    assert conn.execute(
        "SELECT field_name, field_type_name FROM heap_graph_reference r JOIN heap_graph_object o "
        "ON o.id = r.owner_id WHERE o.self_size = 20 ORDER BY r.id"
    ).fetchall() == [("com.Node.left", "com.Node"), ("com.Node.right", "com.Node")]
    dominators = {
        size: (idom_size, retained, count)
        for size, idom_size, retained, count in conn.execute(
            "SELECT o.self_size, i.self_size, d.retained_size, d.retained_count FROM heap_graph_dominator d "
            "JOIN heap_graph_object o ON o.id = d.object_id LEFT JOIN heap_graph_object i ON i.id = d.idom_object_id"
        )
    }
    assert dominators == {
        10: (None, 150, 5),
        20: (10, 140, 4),
        30: (20, 30, 1),
        40: (20, 40, 1),
        50: (20, 50, 1),
        80: (None, 80, 1),
    }


def test_truncated_and_unfinished_heap_graphs(tmp_path):
    b = TraceBuilder()
    b.heap_graph(
        10,
        seq_id=1,
        pid=50,
        index=0,
        continued=True,
        objects=[_object(1, 1, 8)],
        roots=[dict(root_type=3, object_ids=[1])],
    )
    b.heap_graph(10, seq_id=1, pid=50, index=2, types=[dict(id=1, class_name=b"A")])  # index 1 lost
    b.heap_graph(20, seq_id=2, pid=51, index=0, continued=True, objects=[_object(1, 1, 8, [2], [7])])  # never ends
    conn = load(b, tmp_path)
    assert conn.execute("SELECT ts, truncated FROM heap_graph ORDER BY ts").fetchall() == [(10, 1), (20, 0)]
    assert stat(conn, "heap_graph_missing_packet") == 1
    assert stat(conn, "heap_graph_non_finalized_graph") == 1
    # The unfinished dump is still imported; its unknown field id leaves the name NULL.
    assert conn.execute("SELECT count(*), count(field_name) FROM heap_graph_reference").fetchone() == (1, 0)


def _reachable(roots, children, removed=None) -> set:
    seen, todo = set(), [r for r in roots if r != removed]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(c for c in children[node] if c != removed)
    return seen


def test_dominator_retained_sizes_match_brute_force_on_random_graphs():
    """Y's retained set: the objects no longer reachable from the roots once Y is removed."""
    for seed in range(250):
        rng = random.Random(seed)
        n = rng.randint(1, 30)
        children = [[rng.randrange(n) for _ in range(rng.choice((0, 1, 2, 3, 5)))] for _ in range(n)]
        roots = [rng.randrange(n) for _ in range(rng.randint(1, 4))]
        sizes = [rng.randint(0, 1000) for _ in range(n)]
        rows = dominator_tree(n, roots, children, sizes)
        reachable = _reachable(roots, children)
        assert {node for node, *_ in rows} == reachable
        for node, idom, retained_size, retained_count in rows:
            retained = reachable - _reachable(roots, children, removed=node)
            assert (retained_size, retained_count) == (sum(sizes[x] for x in retained), len(retained)), seed
            if idom is not None:
                assert node in reachable - _reachable(roots, children, removed=idom)  # idom dominates it
            else:
                # Under the virtual root: no single object stands between it and the roots.
                assert all(node in _reachable(roots, children, removed=other) for other in reachable - {node})


def test_dominator_tree_handles_deep_chains():
    n = 200_000  # far deeper than Python's recursion limit
    children = [[i + 1] for i in range(n - 1)] + [[]]
    rows = dominator_tree(n, [0], children, [1] * n)
    assert rows[0] == (0, None, n, n) and rows[-1] == (n - 1, n - 2, 1, 1)


# -- collapsed stacks -----------------------------------------------------------------------------------

COLLAPSED = b"""# py-spy raw output
main;parse;read 42
main;parse 3
main;parse;read 8
main;idle x
main;;run 5
main -4
main 2
"""


def test_collapsed_stacks_import(tmp_path):
    path = tmp_path / "profile.txt"
    path.write_bytes(COLLAPSED)
    db = tmp_path / "c.db"
    summaries = ingest([str(path)], str(db))
    assert summaries[0].trace_type == "collapsed_stack"
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT callsite_id, value FROM aggregate_sample ORDER BY id").fetchall()
    assert [(stack(conn, c), v) for c, v in rows] == [
        (["main", "parse", "read"], 42.0),
        (["main", "parse"], 3.0),
        (["main", "parse", "read"], 8.0),
        (["main", "run"], 5.0),
        (["main"], 2.0),
    ]
    assert rows[0][0] == rows[2][0]
    assert conn.execute("SELECT scope, sample_type_type, sample_type_unit FROM aggregate_profile").fetchall() == [
        ("collapsed_stack_file", "samples", "count")
    ]
    assert conn.execute("SELECT DISTINCT name FROM stack_profile_mapping").fetchall() == [("[collapsed_stack]",)]
    assert stat(conn, "collapsed_stack_malformed_line") == 2


def test_collapsed_stack_detection_takes_nothing_else():
    assert detect_format(COLLAPSED) == "collapsed_stack"
    assert detect_format(b'{"traceEvents": [{"name": "a;b 1"}]}') == "json"
    assert detect_format(build_demo_trace()[:4096]) == "proto"
    assert detect_format(b"# tracer: nop\n#\n  <idle>-0 [000] d..1 10.000: cpu_idle: state=1 cpu_id=0\n") == "systrace"
    assert detect_format(b"main;parse;read 42\nnot a stack\n") is None
    assert detect_format(b"main 42\nparse 3\n") is None  # single frames only: too weak a signal


def test_collapsed_stacks_without_valid_lines_fail_cleanly(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_bytes(b"# only comments\n")
    with pytest.raises(IngestError, match="empty.txt"):
        ingest([str(path)], str(tmp_path / "x.db"))
