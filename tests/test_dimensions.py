"""Track dimensions (RFC 0039, issue 4): the wire format, resolution rules 1-5,
numbering, subtitles, multi-machine traces and the PyTorch rank."""

from __future__ import annotations

import csv

from conftest import TraceDB
from shared_data import CASES, TRACES

from datasette_perfetto.importers.proto.dimensions_pb2 import Dimension
from datasette_perfetto.ingest import ingest
from datasette_perfetto.trace_builder import TraceBuilder

# The two queries of the RFC, verbatim.
RFC_QUERY_SLICES_OF_RANK_3 = """-- Any slices on tracks whose effective rank is integer 3.
SELECT s.*
FROM slice AS s
JOIN track_dimension AS d USING (track_id)
WHERE d.name = 'rank' AND d.int_value = 3;"""
RFC_QUERY_GPU_BUSY_PER_RANK = """-- GPU busy time per rank. GPU work uses the same track_id relation.
SELECT d.int_value AS rank, sum(s.dur) AS gpu_busy
FROM gpu_slice AS s
JOIN track_dimension AS d USING (track_id)
WHERE d.name = 'rank'
GROUP BY rank;"""


def dims(db: TraceDB, track_id: int) -> dict[str, tuple]:
    """{name: (value, display name, declaring track, is_inherited, label)} of one track."""
    return {
        name: (i if vt == "int" else s, display, declaring, inherited, label)
        for name, vt, i, s, display, declaring, inherited, label in db.rows(
            "SELECT name, value_type, int_value, string_value, display_name, declaring_track_id, is_inherited, "
            "label FROM track_dimension WHERE track_id = ?",
            (track_id,),
        )
    }


def track_id(db: TraceDB, where: str, params: tuple = ()) -> int:
    return db.one(f"SELECT id FROM track WHERE {where}", params)


def subtitles(db: TraceDB) -> dict[int, str]:
    return dict(db.rows("SELECT track_id, subtitle FROM track_subtitle"))


def test_dimensions_overlay_the_perfetto_messages():
    """Field 21 and fields 52-54 ride along in the perfetto package's messages (as unknown
    fields) and read back with the overlay messages from the same bytes."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    from datasette_perfetto.importers.proto.dimensions_pb2 import InternedDimensionData, TrackDescriptorDimensions

    b = TraceBuilder()
    b.sequence(1).track(7, "t", dimensions=[("rank", 3), ("zone", "east", "East zone")])
    packet = pb.TracePacket.FromString(b.packets[0].SerializeToString())
    assert packet.track_descriptor.uuid == 7
    declared = TrackDescriptorDimensions.FromString(packet.track_descriptor.SerializeToString()).dimensions
    interned = InternedDimensionData.FromString(packet.interned_data.SerializeToString())
    names = {e.iid: e.str.decode() for e in interned.dimension_names}
    assert [(names[d.name_iid], d.WhichOneof("value")) for d in declared] == [
        ("rank", "int_value"),
        ("zone", "string_value_iid"),
    ]
    assert [e.str for e in interned.dimension_string_values] == [b"east"]
    assert [e.str for e in interned.dimension_display_names] == [b"East zone"]


# -- the RFC's examples ------------------------------------------------------------


def trainer_trace(child_rank: int | None = None) -> bytes:
    """The RFC's first example: process `trainer` (rank=3) with a thread, a CPU annotation
    track and a per-process GPU track (gpu_mem_total on GPU 1); with child_rank, the second
    example: a child track of the process re-declaring rank."""
    b = TraceBuilder()
    s = b.sequence(1)
    proc = s.process(10, "trainer", ts=100, dimensions=[("rank", 3)])
    thread = s.thread(10, 11, "worker", ts=100)
    annotations = s.track(500, "CPU annotations", parent_uuid=proc, ts=100)
    s.slice_begin(200, thread, "step")
    s.slice_end(300, thread)
    s.slice_begin(210, annotations, "annotate")
    s.slice_end(250, annotations)
    if child_rank is not None:
        child = s.track(501, "child", parent_uuid=proc, ts=100, dimensions=[("rank", child_rank)])
        s.slice_begin(220, child, "child work")
        s.slice_end(240, child)
    b.ftrace(0, {"timestamp": 150, "pid": 11, "gpu_mem_total": {"gpu_id": 1, "pid": 10, "size": 4096}})
    return b.to_bytes()


def test_rfc_example_process_dimension_reaches_threads_annotations_and_gpu(ingest_data):
    _, db = ingest_data(trainer_trace())
    upid = db.one("SELECT upid FROM process WHERE name = 'trainer'")
    utid = db.one("SELECT utid FROM thread WHERE tid = 11")
    process_track = track_id(db, "type = 'process_track_event' AND upid = ?", (upid,))
    thread_track = track_id(db, "type = 'thread_execution' AND utid = ?", (utid,))
    annotation_track = track_id(db, "name = 'CPU annotations'")
    gpu_track = track_id(db, "type = 'process_gpu_memory'")

    # Rule 1: declared on the process descriptor's track, inherited by everything of the process.
    assert dims(db, process_track)["rank"] == (3, None, process_track, 0, "rank 0")
    for t in (thread_track, annotation_track, gpu_track):
        assert dims(db, t)["rank"] == (3, None, process_track, 1, "rank 0"), t
    # Well-known dimensions, synthesized: machine everywhere, process/thread by association, gpu.
    assert dims(db, thread_track)["process"][:2] == (upid, "trainer")
    assert dims(db, thread_track)["thread"][:2] == (utid, "worker")
    assert dims(db, gpu_track)["gpu"] == (1, None, None, 0, "GPU 0")
    assert dims(db, gpu_track)["process"][0] == upid
    assert "thread" not in dims(db, process_track)
    assert {d[0] for d in db.rows("SELECT DISTINCT name FROM track_dimension WHERE name = 'machine'")} == {"machine"}
    assert db.one("SELECT count(*) FROM track") == db.one(
        "SELECT count(*) FROM track_dimension WHERE name = 'machine' AND int_value = 0 AND is_well_known = 1"
    )
    assert db.stat("dimension_conflicting_value") == 0
    # One value of everything: every label collapses.
    assert set(subtitles(db).values()) == {""}
    assert db.rows("SELECT name, is_well_known, label_template FROM dimension ORDER BY name") == [
        ("cpu", 1, "cpu %d"),
        ("gpu", 1, "GPU %d"),
        ("machine", 1, "machine %d"),
        ("process", 1, "process %d"),
        ("rank", 0, "rank %d"),
        ("thread", 1, "thread %d"),
    ]


def test_rfc_example_conflicting_child_value_is_not_applied(ingest_data):
    summaries, db = ingest_data(trainer_trace(child_rank=4))
    process_track = track_id(db, "type = 'process_track_event'")
    child = track_id(db, "name = 'child'")
    assert dims(db, child)["rank"] == (3, None, process_track, 1, "rank 0")
    assert db.rows("SELECT track_id FROM track_dimension WHERE name = 'rank' AND int_value = 4") == []
    assert db.stat("dimension_conflicting_value") == 1
    assert db.one("SELECT severity FROM stats WHERE name = 'dimension_conflicting_value'") == "error"
    assert ("dimension_conflicting_value", 1) in summaries[0].problems  # the import itself succeeded


def test_rfc_queries_run_unchanged(ingest_data):
    _, db = ingest_data(trainer_trace(child_rank=4))
    # Every slice of this trace is on a track whose effective rank is 3 (the child's 4 was rejected).
    assert sorted(db.rows(RFC_QUERY_SLICES_OF_RANK_3)) == sorted(db.rows("SELECT * FROM slice"))
    assert sorted(
        name
        for (name,) in db.rows(
            "SELECT s.name FROM slice AS s JOIN track_dimension AS d USING (track_id) "
            "WHERE d.name = 'rank' AND d.int_value = 3"
        )
    ) == ["annotate", "child work", "step"]
    # gpu_slice exists with trace_processor's columns (this trace has no GPU slices).
    assert db.rows(RFC_QUERY_GPU_BUSY_PER_RANK) == []
    columns = [r[1] for r in db.rows("PRAGMA table_info(gpu_slice)")]
    assert columns[:9] == ["id", "ts", "dur", "track_id", "category", "name", "depth", "parent_id", "arg_set_id"]
    assert "render_stage_category" in columns and "upid" in columns


# -- resolution rules ------------------------------------------------------------


def test_thread_declaration_applies_to_that_threads_tracks_only(ingest_data):
    b = TraceBuilder()
    s = b.sequence(1)
    proc = s.process(10, "app", ts=100)
    t1 = s.thread(10, 11, "decoder", ts=100, dimensions=[("stage", "decode")])
    t2 = s.thread(10, 12, "encoder", ts=100)
    below = s.track(600, "decoder detail", parent_uuid=t1, ts=100)
    process_child = s.track(601, "app track", parent_uuid=proc, ts=100)
    for uuid in (t1, t2, below, process_child):
        s.slice_begin(200, uuid, "work")
        s.slice_end(300, uuid)
    _, db = ingest_data(b.to_bytes())
    decoder = db.one("SELECT utid FROM thread WHERE tid = 11")
    decoder_track = track_id(db, "type = 'thread_execution' AND utid = ?", (decoder,))
    assert dims(db, decoder_track)["stage"] == ("decode", None, decoder_track, 0, "stage 0")
    assert dims(db, track_id(db, "name = 'decoder detail'"))["stage"] == ("decode", None, decoder_track, 1, "stage 0")
    assert "stage" not in dims(db, track_id(db, "name = 'app track'"))
    encoder = db.one("SELECT utid FROM thread WHERE tid = 12")
    assert "stage" not in dims(db, track_id(db, "type = 'thread_execution' AND utid = ?", (encoder,)))
    assert db.one("SELECT value_type FROM track_dimension WHERE name = 'stage' LIMIT 1") == "string"


def global_tree_trace() -> bytes:
    b = TraceBuilder()
    s = b.sequence(1)
    cluster = s.track(700, "cluster", ts=100, dimensions=[("region", "east")])
    node_a = s.track(701, "node-a", parent_uuid=cluster, ts=100, dimensions=[("region", "east"), ("node", 1)])
    node_b = s.track(702, "node-b", parent_uuid=cluster, ts=100, dimensions=[("node", 2)])
    job = s.track(703, "job", parent_uuid=node_a, ts=100)
    other = s.track(800, "unrelated", ts=100)
    for uuid in (node_a, node_b, job, other):
        s.slice_begin(200, uuid, "work")
        s.slice_end(300, uuid)
    return b.to_bytes()


def test_track_declarations_reach_descendants_and_dedupe(ingest_data):
    _, db = ingest_data(global_tree_trace())
    cluster, node_a, node_b, job, other = (
        track_id(db, "name = ?", (n,)) for n in ("cluster", "node-a", "node-b", "job", "unrelated")
    )
    # Rule 3: the declaring track and its parent_uuid descendants.
    assert dims(db, cluster)["region"][:4] == ("east", None, cluster, 0)
    assert dims(db, job)["region"][:4] == ("east", None, cluster, 1)
    # Rule 5: a redundant re-declaration keeps the ancestor as the declaring track...
    assert dims(db, node_a)["region"][:4] == ("east", None, cluster, 1)
    # ... and a descendant can add a name of its own; siblings may differ.
    assert dims(db, node_a)["node"][:4] == (1, None, node_a, 0)
    assert dims(db, job)["node"][:4] == (1, None, node_a, 1)
    assert dims(db, node_b)["node"][:4] == (2, None, node_b, 0)
    # Rule 4: a global track gets only its own and its ancestors' declarations.
    assert set(dims(db, other)) == {"machine"}
    assert "node" not in dims(db, cluster)
    assert db.stat("dimension_conflicting_value") == 0
    # Only `node` has two values: it is the only label shown.
    assert subtitles(db) == {cluster: "", node_a: "node 0", node_b: "node 1", job: "node 0", other: ""}


def test_reserved_names_are_rejected(ingest_data):
    b = TraceBuilder()
    s = b.sequence(1)
    t = s.track(900, "bad", ts=100, dimensions=[("cpu", 3), ("machine", 1), ("ok", 1)])
    s.track(900, "bad", ts=150, dimensions=[("cpu", 3), ("machine", 1), ("ok", 1)])  # re-emitted: counted once
    s.instant(200, t, "x")
    _, db = ingest_data(b.to_bytes())
    bad = track_id(db, "name = 'bad'")
    assert set(dims(db, bad)) == {"machine", "ok"}
    assert dims(db, bad)["machine"][0] == 0  # the synthesized one, not the declared 1
    assert db.stat("dimension_reserved_name") == 2


def test_unknown_iids_and_incomplete_declarations_are_counted(ingest_data):
    b = TraceBuilder()
    s = b.sequence(1)
    color = s.intern_dimension_name("color")
    size = s.intern_dimension_name("size")
    t = s.track(
        901,
        "t",
        ts=100,
        dimensions=[
            Dimension(name_iid=77, int_value=1),  # unknown name
            Dimension(name_iid=color, string_value_iid=88),  # unknown string value
            Dimension(name_iid=size, int_value=2, display_name_iid=99),  # unknown display name: value kept
            Dimension(name_iid=color),  # no value
        ],
    )
    s.instant(200, t, "x")
    _, db = ingest_data(b.to_bytes())
    assert {k: v[:2] for k, v in dims(db, track_id(db, "name = 't'")).items() if k != "machine"} == {"size": (2, None)}
    assert db.stat("dimension_unknown_iid") == 3
    assert db.stat("dimension_invalid_declaration") == 1


def test_interned_dimension_strings_follow_incremental_state(ingest_data):
    b = TraceBuilder()
    s = b.sequence(1)
    rank_iid = s.intern_dimension_name("rank")
    before = s.track(1000, "before", ts=100, dimensions=[Dimension(name_iid=rank_iid, int_value=1)])
    s.clear_incremental_state()
    # The old iid means nothing in the new generation...
    after = s.track(1001, "after", ts=110, dimensions=[Dimension(name_iid=rank_iid, int_value=2)])
    # ... and the same iid can now name something else.
    shard_iid = s.intern_dimension_name("shard")
    assert shard_iid == rank_iid
    again = s.track(1002, "again", ts=120, dimensions=[Dimension(name_iid=shard_iid, int_value=5)])
    for uuid in (before, after, again):
        s.instant(200, uuid, "x")
    _, db = ingest_data(b.to_bytes())
    assert dims(db, track_id(db, "name = 'before'"))["rank"][0] == 1
    assert set(dims(db, track_id(db, "name = 'after'"))) == {"machine"}
    assert set(dims(db, track_id(db, "name = 'again'"))) == {"machine", "shard"}
    assert db.stat("dimension_unknown_iid") == 1


def test_display_name_replaces_the_label_only(ingest_data):
    b = TraceBuilder()
    s = b.sequence(1)
    east = s.track(1100, "east", ts=100, dimensions=[("rank", 3, "worker-east")])
    west = s.track(1101, "west", ts=100, dimensions=[("rank", 8)])
    for uuid in (east, west):
        s.instant(200, uuid, "x")
    _, db = ingest_data(b.to_bytes())
    east_id, west_id = track_id(db, "name = 'east'"), track_id(db, "name = 'west'")
    assert dims(db, east_id)["rank"] == (3, "worker-east", east_id, 0, "worker-east")
    assert dims(db, west_id)["rank"] == (8, None, west_id, 0, "rank 1")
    assert db.rows("SELECT track_id FROM track_dimension WHERE name = 'rank' AND int_value = 3") == [(east_id,)]
    assert subtitles(db) == {east_id: "worker-east", west_id: "rank 1"}


# -- multi-machine traces ------------------------------------------------------------


def two_machine_trace() -> bytes:
    """A host and machine 1001: SystemInfo, processes with a custom `shard`, ftrace on both."""
    b = TraceBuilder()
    b.packet(trusted_packet_sequence_id=9, system_info={"utsname": {"sysname": "Linux"}, "num_cpus": 2})
    b.packet(
        trusted_packet_sequence_id=9,
        machine_id=1001,
        system_info={
            "utsname": {"sysname": "Darwin", "machine": "arm64"},
            "num_cpus": 4,
            "android_sdk_version": 33,
            "android_device_manufacturer": "Acme",
        },
    )
    host, remote = b.sequence(1), b.sequence(1, machine_id=1001)
    for seq, pid, shards in ((host, 10, (9, 5)), (remote, 10, (7, "x"))):
        for i, shard in enumerate(shards):
            seq.process(pid + i, f"trainer{i}", ts=100, dimensions=[("shard", shard)])
            thread = seq.thread(pid + i, pid + i + 100, "worker", ts=100)
            seq.slice_begin(200, thread, "step")
            seq.slice_end(300, thread)
    for machine, khz in ((None, 1000), (1001, 2000)):
        b.ftrace(
            1,
            {"timestamp": 150, "pid": 0, "cpu_frequency": {"state": khz, "cpu_id": 1}},
            seq_id=5,
            machine_id=machine,
            previous_bundle_end_timestamp=120 if machine is None else 130,
        )
        # Kernel activity on CPU 0 as well (no track of its own): each machine knows two CPUs.
        b.ftrace(
            0,
            {"timestamp": 160, "pid": 0, "sched_waking": {"comm": "worker", "pid": 110, "target_cpu": 0}},
            seq_id=5,
            machine_id=machine,
            last_read_event_timestamp=100,
        )
    return b.to_bytes()


def test_two_machines_get_their_own_rows(ingest_data):
    _, db = ingest_data(two_machine_trace())
    assert db.rows(
        "SELECT id, raw_id, sysname, arch, num_cpus, android_sdk_version, android_device_manufacturer, "
        "label_index FROM machine"
    ) == [(0, 0, "Linux", None, 2, None, None, 0), (1, 1001, "Darwin", "arm64", 4, 33, "Acme", 1)]
    # Processes, threads and tracks of each machine; the remote machine has its own idle task.
    assert db.rows("SELECT pid, name, machine_id FROM process WHERE pid != 0 ORDER BY machine_id, pid") == [
        (10, "trainer0", 0),
        (11, "trainer1", 0),
        (10, "trainer0", 1),
        (11, "trainer1", 1),
    ]
    assert db.rows("SELECT upid, machine_id FROM process WHERE pid = 0") == [(0, 0), (1, 1)]
    assert db.rows(
        "SELECT t.name, t.is_idle, t.machine_id, p.machine_id FROM thread t JOIN process p USING (upid) WHERE t.tid = 0"
    ) == [("swapper", 1, 0, 0), ("swapper", 1, 1, 1)]
    assert db.rows("SELECT machine_id, count(*) FROM track WHERE type = 'thread_execution' GROUP BY 1") == [
        (0, 2),
        (1, 2),
    ]
    assert db.rows("SELECT id, cpu, machine_id FROM cpu ORDER BY id") == [
        (0, 0, 0),
        (1, 1, 0),
        (4096, 0, 1),
        (4097, 1, 1),
    ]
    assert db.rows(
        "SELECT machine_id, cpu, value FROM cpu_counter_track t JOIN counter c ON c.track_id = t.id "
        "WHERE t.name = 'cpufreq' ORDER BY machine_id"
    ) == [(0, 1, 1000.0), (1, 1, 2000.0)]
    # Machine-scoped metadata and per-machine stats.
    assert db.rows(
        "SELECT machine_id, trace_id, str_value FROM metadata WHERE name = 'system_name' ORDER BY machine_id"
    ) == [(0, None, "Linux"), (1, None, "Darwin")]
    assert db.rows(
        "SELECT machine_id, trace_id, int_value FROM metadata WHERE name = 'ftrace_latest_data_start_ns' "
        "ORDER BY machine_id"
    ) == [(0, 0, 120), (1, 0, 130)]
    assert db.rows("SELECT machine_id, trace_id, int_value FROM metadata WHERE name = 'android_sdk_version'") == [
        (1, None, 33)
    ]
    assert db.rows("SELECT machine_id, count(*) FROM stats WHERE name = 'dimension_unknown_iid' GROUP BY 1") == [
        (0, 1),
        (1, 1),
    ]
    assert db.one("SELECT count(*) FROM stats WHERE name = 'invalid_clock_snapshots'") == 1  # global: one row


def test_numbering_is_per_trace_and_machine(ingest_data):
    _, db = ingest_data(two_machine_trace())

    def labels(machine_id):
        return dict(
            db.rows(
                "SELECT p.name, d.label FROM track t JOIN track_dimension d ON d.track_id = t.id "
                "JOIN thread th USING (utid) JOIN process p ON p.upid = th.upid "
                "WHERE t.type = 'thread_execution' AND d.name = 'shard' AND t.machine_id = ?",
                (machine_id,),
            )
        )

    # Host values 5 and 9, remote 7 and "x": ordered by type then value, each machine from 0.
    assert labels(0) == {"trainer1": "shard 0", "trainer0": "shard 1"}
    assert labels(1) == {"trainer0": "shard 0", "trainer1": "shard 1"}
    assert db.rows(
        "SELECT DISTINCT value_type, string_value FROM track_dimension WHERE name = 'shard' AND value_type = 'string'"
    ) == [("string", "x")]
    # Two machines: the machine label shows, process and thread never do; cpu has one value.
    subs = {
        (t, m): s
        for t, m, s in db.rows(
            "SELECT t.type, t.machine_id, group_concat(s.subtitle, '|') FROM track t JOIN track_subtitle s "
            "ON s.track_id = t.id GROUP BY t.type, t.machine_id"
        )
    }
    assert sorted(subs[("thread_execution", 0)].split("|")) == ["machine 0 · shard 0", "machine 0 · shard 1"]
    assert sorted(subs[("thread_execution", 1)].split("|")) == ["machine 1 · shard 0", "machine 1 · shard 1"]
    assert subs[("cpu_frequency", 0)] == "machine 0" and subs[("cpu_frequency", 1)] == "machine 1"
    # The cpu label numbers the machine's CPUs: CPU 1 is "cpu 1" though CPU 0 has no track.
    assert db.rows("SELECT DISTINCT int_value, label FROM track_dimension WHERE name = 'cpu'") == [(1, "cpu 1")]


def test_machine_name_is_the_machine_label(ingest_data):
    b = TraceBuilder()
    b.packet(trusted_packet_sequence_id=9, machine_id=7, system_info={"machine_name": "vm-east"})
    b.packet(trusted_packet_sequence_id=9, system_info={"utsname": {"sysname": "Linux"}})
    for machine in (None, 7):
        seq = b.sequence(1, machine_id=machine)
        t = seq.track(5, "work", ts=100)
        seq.instant(200, t, "x")
    _, db = ingest_data(b.to_bytes())
    # The first packet came from machine 7 before any host packet: it is adopted as the host row...
    assert db.rows("SELECT id, raw_id, name FROM machine") == [(0, 7, "vm-east")]
    assert db.rows("SELECT DISTINCT label FROM track_dimension WHERE name = 'machine'") == [("vm-east",)]
    assert db.one("SELECT count(DISTINCT machine_id) FROM track") == 1


def test_host_data_first_keeps_remote_machines_apart(ingest_data):
    b = TraceBuilder()
    host, remote = b.sequence(1), b.sequence(2, machine_id=7)
    for seq in (host, remote):
        t = seq.track(5, "work", ts=100)
        seq.instant(200, t, "x")
    _, db = ingest_data(b.to_bytes())
    assert db.rows("SELECT id, raw_id FROM machine") == [(0, 0), (1, 7)]
    assert db.rows("SELECT machine_id, name FROM track ORDER BY id") == [(0, "work"), (1, "work")]
    assert set(subtitles(db).values()) == {"machine 0", "machine 1"}


# -- PyTorch ranks ---------------------------------------------------------------------


def test_pytorch_ranks_are_a_custom_dimension(tmp_path):
    db_path = tmp_path / "ddp.db"
    ingest([str(TRACES / "pytorch_ddp" / f"rank{i}.json.gz") for i in (0, 1)], str(db_path))
    db = TraceDB(db_path)
    per_trace = db.rows(
        "SELECT t.trace_id, d.int_value, d.display_name, d.label, d.source, count(*) FROM track t "
        "JOIN track_dimension d ON d.track_id = t.id AND d.name = 'rank' GROUP BY 1, 2, 3, 4, 5"
    )
    associated = dict(
        db.rows("SELECT trace_id, count(*) FROM track WHERE utid IS NOT NULL OR upid IS NOT NULL GROUP BY 1")
    )
    assert per_trace == [
        (0, 0, "rank 0", "rank 0", "distributed_info", associated[0]),
        (1, 1, "rank 1", "rank 1", "distributed_info", associated[1]),
    ]
    # Each rank's tracks show their rank; global tracks have none (rule 4).
    shown = dict(db.rows("SELECT t.id, s.subtitle FROM track t JOIN track_subtitle s ON s.track_id = t.id"))
    for tid, trace, utid, upid in db.rows("SELECT id, trace_id, utid, upid FROM track"):
        assert shown[tid] == ("" if utid is None and upid is None else f"rank {trace}")
    assert db.rows("SELECT label_template FROM dimension WHERE name = 'rank'") == [("rank %d",)]


def test_gpu_memory_tracks_global_and_per_process(ingest_data):
    """gpu_mem_total (ftrace event and packet): the GPU's total (pid 0) and each process's use,
    on gpu_memory / process_gpu_memory tracks (trace_processor's GraphicsParser.test_gpu_mem_total)."""
    case = CASES / "parser.graphics.GraphicsParser.test_gpu_mem_total"
    _, db = ingest_data((case / "trace.pb").read_bytes())
    got = db.rows(
        "SELECT ct.name, ct.unit, (SELECT int_value FROM args WHERE arg_set_id = ct.dimension_arg_set_id "
        "AND key = 'gpu') AS gpu_id, c.ts, p.pid, "
        "CAST(c.value AS INT) FROM counter_track ct LEFT JOIN process_counter_track pct USING (id) "
        "LEFT JOIN process p USING (upid) LEFT JOIN counter c ON c.track_id = ct.id "
        "ORDER BY gpu_id, ts, pid"
    )
    expected = [
        tuple(None if v == "[NULL]" else int(v) if v.lstrip("-").isdigit() else v for v in row)
        for row in csv.reader((case / "expected.csv").read_text().splitlines()[1:])
    ]
    assert got == expected
    per_process = track_id(db, "type = 'process_gpu_memory'")
    assert dims(db, per_process)["gpu"][0] == 0 and "process" in dims(db, per_process)
