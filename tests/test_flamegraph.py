"""flamegraph.experimental_flamegraph: trace_processor's experimental_flamegraph table function for Java
heap graphs ('graph'), heapprofd profiles ('native') and CPU samples ('perf'), on traces built here."""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner
from conftest import ingest_built, query_rows
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.cli import perfetto
from datasette_perfetto.flamegraph import COLUMNS, experimental_flamegraph
from datasette_perfetto.trace_builder import TraceBuilder

APK = "/data/app/~~r4nd0m==/com.example.app-XyZ==/base.apk"
ROOT_JNI_GLOBAL, ROOT_JAVA_FRAME, ROOT_STICKY_CLASS = 1, 3, 5
KIND_NORMAL, KIND_WEAK_REFERENCE, KIND_PHANTOM_REFERENCE = 1, 9, 11
SHOWN = ("id", "depth", "name", "count", "cumulative_count", "size", "cumulative_size", "parent_id")


def connect(tmp_path, builder: TraceBuilder) -> sqlite3.Connection:
    return sqlite3.connect(ingest_built(tmp_path, builder).path)


def flamegraph(conn, *args, columns=SHOWN) -> list[tuple]:
    names, rows = experimental_flamegraph(conn, *args)
    assert tuple(names) == COLUMNS
    at = [names.index(c) for c in columns]
    return [tuple(row[i] for i in at) for row in rows]


def graph(conn, focus=None, columns=SHOWN) -> list[tuple]:
    """The flamegraph of the trace's only heap dump, as the diff tests ask for it."""
    (upid, ts), *others = conn.execute("SELECT DISTINCT upid, graph_sample_ts FROM heap_graph_object").fetchall()
    assert not others
    return flamegraph(conn, "graph", ts, None, upid, None, focus, columns=columns)


def obj(id, type_id, size, **refs):
    """A heap object referring to `refs` (f<field name iid>=object id)."""
    return dict(
        id=id,
        type_id=type_id,
        self_size=size,
        reference_field_id=[int(name[1:]) for name in refs],
        reference_object_id=list(refs.values()),
    )


def deobfuscation(package: str, obfuscated: str, deobfuscated: str) -> pb.TracePacket:
    return pb.TracePacket(
        deobfuscation_mapping=pb.DeobfuscationMapping(
            package_name=package,
            obfuscated_classes=[pb.ObfuscatedClass(obfuscated_name=obfuscated, deobfuscated_name=deobfuscated)],
        )
    )


def app_heap(b: TraceBuilder) -> None:
    """An app's heap: App (a JNI global) → two Nodes → two Leaves (the second Node refers to both), and →
    Other; a WeakReference on a Java frame whose referent is reachable only through it; garbage; and an
    obfuscated class `a` (com.example.Alpha) held as a sticky class."""
    b.packet(process_tree=pb.ProcessTree(processes=[pb.ProcessTree.Process(pid=40, ppid=1, cmdline=["app"])]))
    b.heap_graph(
        10,
        pid=40,
        index=0,
        objects=[
            obj(1, 1, 100, f1=2, f2=3, f3=10),
            obj(2, 2, 10, f4=4),
            obj(3, 2, 20, f4=4, f5=5),
            obj(4, 3, 1),
            obj(5, 3, 2),
            obj(6, 4, 24, f6=7),  # WeakReference.referent
            obj(7, 5, 1000),
            obj(8, 6, 5000),  # garbage
            obj(9, 7, 8),
            obj(10, 8, 7),
        ],
        roots=[
            dict(root_type=ROOT_JNI_GLOBAL, object_ids=[1]),
            dict(root_type=ROOT_JAVA_FRAME, object_ids=[6]),
            dict(root_type=ROOT_STICKY_CLASS, object_ids=[9]),
        ],
        types=[
            dict(id=1, class_name=b"com.App", kind=KIND_NORMAL),
            dict(id=2, class_name=b"com.Node", kind=KIND_NORMAL),
            dict(id=3, class_name=b"com.Leaf", kind=KIND_NORMAL),
            dict(id=4, class_name=b"java.lang.ref.WeakReference", kind=KIND_WEAK_REFERENCE),
            dict(id=5, class_name=b"com.Cached", kind=KIND_NORMAL),
            dict(id=6, class_name=b"com.Garbage", kind=KIND_NORMAL),
            dict(id=7, class_name=b"a", location_id=1, kind=KIND_NORMAL),
            dict(id=8, class_name=b"com.Other", kind=KIND_NORMAL),
        ],
        field_names=[
            dict(iid=1, str=b"com.Node com.App.first"),
            dict(iid=2, str=b"com.Node com.App.second"),
            dict(iid=3, str=b"com.Other com.App.other"),
            dict(iid=4, str=b"com.Leaf com.Node.left"),
            dict(iid=5, str=b"com.Leaf com.Node.right"),
            dict(iid=6, str=b"java.lang.Object java.lang.ref.Reference.referent"),
        ],
        location_names=[dict(iid=1, str=APK.encode())],
    )
    b.packets.append(deobfuscation("com.example.app", "a", "com.example.Alpha"))


# -- 'graph' ------------------------------------------------------------------------------------------


def test_heap_graph_flamegraph_is_the_shortest_path_tree_from_the_roots(tmp_path):
    b = TraceBuilder()
    app_heap(b)
    conn = connect(tmp_path, b)
    # Siblings of one class merge (both Nodes, and the Leaves under them: Leaf 4 is the first Node's, as the
    # search reaches it from there first). Roots are named with their root type, a class by its deobfuscated
    # name. The WeakReference's referent and the garbage are left out. Rows come in trace_processor's order:
    # objects by row id (the order the dump first mentions them: App's references before the Leaves), each
    # after its parent.
    assert graph(conn) == [
        (0, 0, "com.App [ROOT_JNI_GLOBAL]", 1, 6, 100, 140, None),
        (1, 1, "com.Node", 2, 4, 30, 33, 0),
        (2, 1, "com.Other", 1, 1, 7, 7, 0),
        (3, 2, "com.Leaf", 2, 2, 3, 3, 1),
        (4, 0, "java.lang.ref.WeakReference [ROOT_JAVA_FRAME]", 1, 1, 24, 24, None),
        (5, 0, "com.example.Alpha [ROOT_STICKY_CLASS]", 1, 1, 8, 8, None),
    ]
    # Every column of one row: the hidden argument columns (NULL but profile_type and upid), no allocations.
    upid = conn.execute("SELECT upid FROM process WHERE pid = 40").fetchone()[0]
    _, rows = experimental_flamegraph(conn, "graph", 10, None, upid, None, None)
    assert dict(zip(COLUMNS, rows[1])) == dict(
        id=1,
        profile_type="graph",
        ts_in=None,
        ts_constraint=None,
        upid=upid,
        upid_group=None,
        focus_str=None,
        ts=10,
        depth=1,
        name="com.Node",
        map_name="JAVA",
        count=2,
        cumulative_count=4,
        size=30,
        cumulative_size=33,
        alloc_count=0,
        cumulative_alloc_count=0,
        alloc_size=0,
        cumulative_alloc_size=0,
        parent_id=0,
        source_file=None,
        line_number=None,
    )
    # The roots' cumulative sizes add up to the reachable objects' sizes.
    assert (
        sum(r[6] for r in graph(conn) if r[1] == 0)
        == conn.execute("SELECT sum(self_size + native_size) FROM heap_graph_object WHERE reachable").fetchone()[0]
    )


def test_heap_graph_flamegraph_focus(tmp_path):
    b = TraceBuilder()
    app_heap(b)
    conn = connect(tmp_path, b)
    # A match keeps its ancestors and descendants; cumulative columns count only what is kept (App loses
    # Other); ids are numbered again.
    assert graph(conn, focus="leaf") == [
        (0, 0, "com.App [ROOT_JNI_GLOBAL]", 1, 5, 100, 133, None),
        (1, 1, "com.Node", 2, 4, 30, 33, 0),
        (2, 2, "com.Leaf", 2, 2, 3, 3, 1),
    ]
    assert graph(conn, focus="other") == [
        (0, 0, "com.App [ROOT_JNI_GLOBAL]", 1, 2, 100, 107, None),
        (1, 1, "com.Other", 1, 1, 7, 7, 0),
    ]
    # Case-insensitive, and root types are part of the name.
    assert [r[2] for r in graph(conn, focus="ROOT_J")] == [
        "com.App [ROOT_JNI_GLOBAL]",
        "com.Node",
        "com.Other",
        "com.Leaf",
        "java.lang.ref.WeakReference [ROOT_JAVA_FRAME]",
    ]
    assert graph(conn, focus="alpha") == [(0, 0, "com.example.Alpha [ROOT_STICKY_CLASS]", 1, 1, 8, 8, None)]
    assert graph(conn, focus="nothing like it") == []
    assert graph(conn, focus="") == graph(conn)  # an empty focus is no focus


def test_heap_graph_flamegraph_parents_come_first_and_roots_go_by_class_name(tmp_path):
    b = TraceBuilder()
    b.heap_graph(
        10,
        pid=41,
        index=0,
        # Child (object 1) is referred to by both roots; it is RootA's, as the search starts from the roots in
        # class name order, not by id.
        objects=[obj(1, 3, 100), obj(2, 2, 10, f1=1), obj(3, 1, 20, f1=1)],
        roots=[dict(root_type=ROOT_JAVA_FRAME, object_ids=[2, 3])],
        types=[dict(id=1, class_name=b"RootA"), dict(id=2, class_name=b"RootB"), dict(id=3, class_name=b"Child")],
        field_names=[dict(iid=1, str=b"Child Root.child")],
    )
    conn = connect(tmp_path, b)
    # Child, the first object, comes first, after its parent.
    assert graph(conn) == [
        (0, 0, "RootA [ROOT_JAVA_FRAME]", 1, 2, 20, 120, None),
        (1, 1, "Child", 1, 1, 100, 100, 0),
        (2, 0, "RootB [ROOT_JAVA_FRAME]", 1, 1, 10, 10, None),
    ]


def test_heap_graph_flamegraph_native_sizes_are_children(tmp_path):
    b = TraceBuilder()
    b.heap_graph(
        10,
        pid=42,
        index=0,
        objects=[
            obj(1, 1, 46),  # a Bitmap
            {**obj(2, 2, 32), "native_allocation_registry_size_field": 123456},
            obj(3, 3, 24, f3=2),  # CleanerThunk.this$0 → the registry
            obj(4, 4, 36, f2=3, f1=1),  # Cleaner.thunk, Reference.referent → the Bitmap
            obj(5, 5, 288, f4=4),  # Class<Cleaner>.first
        ],
        roots=[dict(root_type=ROOT_JAVA_FRAME, object_ids=[1]), dict(root_type=ROOT_STICKY_CLASS, object_ids=[5])],
        types=[
            dict(id=1, class_name=b"android.graphics.Bitmap", kind=KIND_NORMAL),
            dict(id=2, class_name=b"libcore.util.NativeAllocationRegistry", kind=KIND_NORMAL),
            dict(id=3, class_name=b"libcore.util.NativeAllocationRegistry$CleanerThunk", kind=KIND_NORMAL),
            dict(id=4, class_name=b"sun.misc.Cleaner", kind=KIND_PHANTOM_REFERENCE),
            dict(id=5, class_name=b"java.lang.Class<sun.misc.Cleaner>"),
        ],
        field_names=[
            dict(iid=1, str=b"java.lang.Object java.lang.ref.Reference.referent"),
            dict(iid=2, str=b"java.lang.Runnable sun.misc.Cleaner.thunk"),
            dict(
                iid=3,
                str=b"libcore.util.NativeAllocationRegistry libcore.util.NativeAllocationRegistry$CleanerThunk.this$0",
            ),
            dict(iid=4, str=b"sun.misc.Cleaner sun.misc.Cleaner.first"),
        ],
    )
    conn = connect(tmp_path, b)
    assert conn.execute("SELECT native_size FROM heap_graph_object WHERE self_size = 46").fetchone() == (123456,)
    # The "[native]" child of the Bitmap comes after every object's row. The Cleaner's referent is not
    # followed (a phantom reference), so the Bitmap is only a root.
    assert graph(conn) == [
        (0, 0, "android.graphics.Bitmap [ROOT_JAVA_FRAME]", 1, 2, 46, 123502, None),
        (1, 0, "java.lang.Class<sun.misc.Cleaner> [ROOT_STICKY_CLASS]", 1, 4, 288, 380, None),
        (2, 1, "sun.misc.Cleaner", 1, 3, 36, 92, 1),
        (3, 2, "libcore.util.NativeAllocationRegistry$CleanerThunk", 1, 2, 24, 56, 2),
        (4, 3, "libcore.util.NativeAllocationRegistry", 1, 1, 32, 32, 3),
        (5, 1, "[native] android.graphics.Bitmap [ROOT_JAVA_FRAME]", 1, 1, 123456, 123456, 0),
    ]


def test_heap_graph_flamegraph_of_a_truncated_dump_without_roots_is_an_error_row(tmp_path):
    b = TraceBuilder()
    b.packet(process_tree=pb.ProcessTree(processes=[pb.ProcessTree.Process(pid=2, ppid=1, cmdline=["app"])]))
    b.heap_graph(10, seq_id=999, pid=2, index=1)  # packet 0 is missing
    conn = connect(tmp_path, b)
    ts, upid = conn.execute("SELECT ts, upid FROM heap_graph").fetchone()
    assert flamegraph(conn, "graph", ts, None, upid, None, None) == [
        (0, 0, "ERROR: INCOMPLETE GRAPH (try increasing buffer size)", 1, 1, 1, 1, None)
    ]


def test_heap_graph_flamegraph_of_an_unknown_dump_is_an_error(tmp_path):
    b = TraceBuilder()
    app_heap(b)
    conn = connect(tmp_path, b)
    upid = conn.execute("SELECT upid FROM process WHERE pid = 40").fetchone()[0]
    with pytest.raises(ValueError, match="no heap graph .* at ts 11"):
        experimental_flamegraph(conn, "graph", 11, None, upid, None, None)
    with pytest.raises(ValueError, match="upid 999"):
        experimental_flamegraph(conn, "graph", 10, None, 999, None, None)


# -- 'native' and 'perf' ----------------------------------------------------------------------------------

MAIN, WORK, IDLE, MALLOC = ("main", "/bin/app"), ("work", "/bin/app"), ("idle", "/bin/app"), ("malloc", "/lib/libc.so")


def test_native_flamegraph_counts_allocations_up_to_ts(tmp_path):
    b = TraceBuilder()
    b.packet(
        clock_snapshot=pb.ClockSnapshot(
            clocks=[pb.ClockSnapshot.Clock(clock_id=6, timestamp=0), pb.ClockSnapshot.Clock(clock_id=4, timestamp=0)]
        )
    )
    # Cumulative since the profile began: (frames, bytes allocated, bytes freed, allocations, frees).
    b.heap_profile(100, 30, [((MAIN, WORK, MALLOC), 1000, 200, 10, 2), ((MAIN, IDLE), 50, 0, 1, 0)])
    b.heap_profile(200, 30, [((MAIN, WORK, MALLOC), 1500, 1200, 15, 12), ((MAIN, IDLE), 50, 0, 1, 0)])
    conn = connect(tmp_path, b)
    upid = conn.execute("SELECT upid FROM process WHERE pid = 30").fetchone()[0]
    columns = ("id", "depth", "name", "map_name", "count", "cumulative_count", "size", "cumulative_size")
    allocs = ("alloc_count", "cumulative_alloc_count", "alloc_size", "cumulative_alloc_size", "parent_id", "ts")
    assert flamegraph(conn, "native", 100, None, upid, None, None, columns=columns + allocs) == [
        (0, 0, "main", "/bin/app", 0, 9, 0, 850, 0, 11, 0, 1050, None, 100),
        (1, 1, "work", "/bin/app", 0, 8, 0, 800, 0, 10, 0, 1000, 0, 100),
        (2, 2, "malloc", "/lib/libc.so", 8, 8, 800, 800, 10, 10, 1000, 1000, 1, 100),
        (3, 1, "idle", "/bin/app", 1, 1, 50, 50, 1, 1, 50, 50, 0, 100),
    ]
    # The second dump's frees outweigh its allocations; alloc_* count only allocations.
    assert flamegraph(conn, "native", 250, None, upid, None, "malloc", columns=columns + allocs) == [
        (0, 0, "main", "/bin/app", 0, 3, 0, 300, 0, 15, 0, 1500, None, 250),
        (1, 1, "work", "/bin/app", 0, 3, 0, 300, 0, 15, 0, 1500, 0, 250),
        (2, 2, "malloc", "/lib/libc.so", 3, 3, 300, 300, 15, 15, 1500, 1500, 1, 250),
    ]
    with pytest.raises(ValueError, match="no heap profile allocations of upid"):
        experimental_flamegraph(conn, "native", 99, None, upid, None, None)


def perf_trace() -> TraceBuilder:
    """Samples of process 10 (main → work → read at 1000 and 3000, main → work → write at 2000) and of
    process 20 (main → work → write at 2500)."""
    b = TraceBuilder()
    names = ("main", "work", "read", "write")
    b.packet(
        trusted_packet_sequence_id=7,
        timestamp=100,
        sequence_flags=pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED,
        interned_data=pb.InternedData(
            function_names=[pb.InternedString(iid=i, str=n.encode()) for i, n in enumerate(names, 1)],
            mapping_paths=[pb.InternedString(iid=1, str=b"libapp.so")],
            mappings=[pb.Mapping(iid=1, start=0x1000, end=0x9000, path_string_ids=[1])],
            frames=[pb.Frame(iid=i, function_name_id=i, mapping_id=1, rel_pc=0x100 * i) for i in range(1, 5)],
            callstacks=[pb.Callstack(iid=1, frame_ids=[1, 2, 3]), pb.Callstack(iid=2, frame_ids=[1, 2, 4])],
        ),
    )
    for ts, pid, iid in ((1000, 10, 1), (2000, 10, 2), (2500, 20, 2), (3000, 10, 1)):
        b.packet(
            trusted_packet_sequence_id=7,
            timestamp=ts,
            sequence_flags=pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE,
            perf_sample=pb.PerfSample(cpu=0, pid=pid, tid=pid + 1, callstack_iid=iid),
        )
    return b


def test_perf_flamegraph_counts_samples_of_the_processes_threads(tmp_path):
    conn = connect(tmp_path, perf_trace())
    upid10, upid20 = (conn.execute("SELECT upid FROM process WHERE pid = ?", (p,)).fetchone()[0] for p in (10, 20))
    columns = ("id", "depth", "name", "map_name", "count", "cumulative_count", "size", "cumulative_size", "ts")
    # A node's ts is its last sample's, else the first constraint's time.
    assert flamegraph(conn, "perf", None, ">=500", upid10, None, None, columns=columns) == [
        (0, 0, "main", "/libapp.so", 0, 3, 0, 3, 500),
        (1, 1, "work", "/libapp.so", 0, 3, 0, 3, 500),
        (2, 2, "read", "/libapp.so", 2, 2, 2, 2, 3000),
        (3, 2, "write", "/libapp.so", 1, 1, 1, 1, 2000),
    ]
    # Time constraints (">N" starts just after N) and a group of processes, given as text.
    group = f"{upid10},{upid20}"
    rows = flamegraph(conn, "perf", None, ">1500,<=2500", None, group, None, columns=columns + ("upid", "upid_group"))
    assert rows == [
        (0, 0, "main", "/libapp.so", 0, 2, 0, 2, 1501, None, group),
        (1, 1, "work", "/libapp.so", 0, 2, 0, 2, 1501, None, group),
        (2, 2, "read", "/libapp.so", 0, 0, 0, 0, 1501, None, group),
        (3, 2, "write", "/libapp.so", 2, 2, 2, 2, 2500, None, group),
    ]
    # Focus keeps the matching stack; trace_processor's focus drops upid_group.
    assert flamegraph(conn, "perf", None, ">=0", None, group, "WRITE", columns=("name", "count", "upid_group")) == [
        ("main", 0, None),
        ("work", 0, None),
        ("write", 2, None),
    ]


# -- bad arguments ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def app_db(tmp_path_factory):
    b = TraceBuilder()
    app_heap(b)
    return ingest_built(tmp_path_factory.mktemp("app"), b).path


@pytest.mark.parametrize(
    "args, named",
    [
        (("heap", 10, None, 1, None, None), "profile_type"),
        ((None, 10, None, 1, None, None), "profile_type"),
        (("graph", None, None, 1, None, None), "ts"),
        (("graph", 10.5, None, 1, None, None), "ts"),
        (("graph", 10, None, None, None, None), "upid"),
        (("graph", 10, None, "1", None, None), "upid"),
        (("graph", None, ">=10", 1, None, None), "ts and upid"),
        (("graph", 10, None, None, "1,2", None), "ts and upid"),
        (("native", None, ">=10", 1, None, None), "ts and upid"),
        (("graph", 10, None, 1, None, 7), "focus_str"),
        (("perf", None, 10, 1, None, None), "ts_constraint"),
        (("perf", None, "<10", 1, None, None), "ts_constraint"),
        (("perf", None, ">=ten", 1, None, None), "ts_constraint"),
        (("perf", None, "=10", 1, None, None), "ts_constraint"),
        (("perf", None, ">=10", None, 1, None), "upid_group"),
    ],
)
def test_bad_arguments_are_value_errors_naming_the_argument(app_db, args, named):
    with pytest.raises(ValueError) as error:
        experimental_flamegraph(sqlite3.connect(app_db), *args)
    message = str(error.value)
    assert named in message and "\n" not in message
    assert message.startswith("experimental_flamegraph: ")


# -- android.memory.heap_graph.class_tree ---------------------------------------------------------------


def test_the_class_tree_module_is_the_heap_as_a_tree_of_class_paths(tmp_path):
    """One breadth-first search from every root (roots by class name: `a` first), each object reached first
    through the lowest id; the weak referent is not reached; objects of one class under one path are one row
    (the two Nodes, the two Leaves), named deobfuscated."""
    b = TraceBuilder()
    app_heap(b)
    db = ingest_built(tmp_path, b)
    sql = (
        "INCLUDE PERFETTO MODULE android.memory.heap_graph.class_tree;\n"
        "SELECT c.name, p.name AS parent, c.root_type, c.self_count, c.self_size FROM _heap_graph_class_tree c "
        "LEFT JOIN _heap_graph_class_tree p ON c.parent_id = p.id ORDER BY c.name;"
    )
    assert query_rows(db, sql) == [
        ["com.App", None, "ROOT_JNI_GLOBAL", 1, 100],
        ["com.Leaf", "com.Node", None, 2, 3],
        ["com.Node", "com.App", None, 2, 30],
        ["com.Other", "com.App", None, 1, 7],
        ["com.example.Alpha", None, "ROOT_STICKY_CLASS", 1, 8],
        ["java.lang.ref.WeakReference", None, "ROOT_JAVA_FRAME", 1, 24],
    ]
    # Objects by their (distinct) sizes: the second Leaf (2) is reached from the second Node (20), not the first.
    tree = (
        "INCLUDE PERFETTO MODULE android.memory.heap_graph.class_tree;\n"
        "SELECT o.self_size, up.self_size FROM _heap_graph_object_min_depth_tree t JOIN heap_graph_object o "
        "ON o.id = t.id LEFT JOIN heap_graph_object up ON up.id = t.parent_id ORDER BY o.self_size;"
    )
    assert query_rows(db, tree) == [
        [1, 10],
        [2, 20],
        [7, 100],
        [8, None],
        [10, 100],
        [20, 100],
        [24, None],
        [100, None],
    ]


def test_a_correlated_flamegraph_call_takes_each_rows_dump(tmp_path):
    """experimental_flamegraph with columns of the enclosing query as its ts and upid (as trace_processor's
    tests call it): computed for every dump, each row reading its own; a correlated argument the function cannot
    list values for is refused in one line."""
    b = TraceBuilder()
    app_heap(b)
    b.heap_graph(
        20,
        pid=40,
        index=0,
        objects=[obj(1, 1, 300, f1=2), obj(2, 2, 30)],
        roots=[dict(root_type=ROOT_JNI_GLOBAL, object_ids=[1])],
        types=[dict(id=1, class_name=b"com.App", kind=KIND_NORMAL), dict(id=2, class_name=b"com.Node")],
        field_names=[dict(iid=1, str=b"com.Node com.App.first")],
    )
    db = ingest_built(tmp_path, b)
    sql = """SELECT obj.graph_sample_ts AS ts, SUM(obj.self_size) AS objects,
  (SELECT SUM(cumulative_size) FROM experimental_flamegraph('graph', obj.graph_sample_ts, NULL, obj.upid, NULL, NULL)
   WHERE depth = 0) AS roots
FROM heap_graph_object AS obj WHERE obj.reachable != 0 GROUP BY obj.upid, obj.graph_sample_ts ORDER BY ts"""
    assert query_rows(db, sql) == [[10, 172, 172], [20, 330, 330]]
    focused = sql.replace("NULL, NULL)", "NULL, obj.upid || '')")
    refused = CliRunner().invoke(perfetto, ["query", str(db.path), focused])
    assert refused.exit_code != 0
    assert "experimental_flamegraph:" in refused.output and "column of the enclosing query" in refused.output
    assert len(refused.output.strip().splitlines()) == 1
