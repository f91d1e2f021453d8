"""trace_processor's standard library modules (stdlib.py): slices.with_context (thread_slice, process_slice,
thread_or_process_slice) is in every trace database, so `INCLUDE PERFETTO MODULE slices.with_context;` in the
query command and the conformance runner is accepted as already done; viz.summary.track_event runs its SQL on
the connection; any other module is refused in one line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import ingest_built, query_rows
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from shared_data import CASES

from datasette_perfetto.cli import perfetto
from datasette_perfetto.conformance import run_case
from datasette_perfetto.trace_builder import TraceBuilder


@pytest.fixture
def db(tmp_path):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    seq.process(10, "browser")
    main = seq.thread(10, 10, "main")
    worker = seq.thread(10, 11, "worker")
    proc_track = seq.track(500, "async", parent_uuid=seq.process(10, "browser"))
    seq.slice_begin(100, main, "Outer")
    seq.slice_begin(110, main, "Inner")
    seq.slice_end(120, main)
    seq.slice_end(200, main)
    seq.slice_begin(150, worker, "Work")
    seq.slice_end(160, worker)
    seq.slice_begin(130, proc_track, "Load")
    seq.slice_end(300, proc_track)
    return ingest_built(tmp_path, b)


def test_thread_and_process_slices_with_their_context(db):
    assert db.rows(
        "SELECT name, dur, thread_name, tid, is_main_thread, process_name, pid, depth FROM thread_slice ORDER BY ts"
    ) == [
        ("Outer", 100, "main", 10, 1, "browser", 10, 0),
        ("Inner", 10, "main", 10, 1, "browser", 10, 1),
        ("Work", 10, "worker", 11, 0, "browser", 10, 0),
    ]
    assert db.rows("SELECT name, dur, track_name, process_name, pid FROM process_slice") == [
        ("Load", 170, "async", "browser", 10)
    ]
    # Thread slices first, then process slices (no thread for those).
    assert db.rows("SELECT name, tid, pid FROM thread_or_process_slice") == [
        *db.rows("SELECT name, tid, pid FROM thread_slice"),
        ("Load", None, 10),
    ]


def test_the_query_command_takes_the_include(db):
    sql = "INCLUDE PERFETTO MODULE slices.with_context;\nSELECT count(*) AS n FROM thread_or_process_slice;"
    result = CliRunner().invoke(perfetto, ["query", str(db.path), sql, "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"columns": ["n"], "rows": [[4]]}
    result = CliRunner().invoke(perfetto, ["query", str(db.path), "INCLUDE PERFETTO MODULE android.startup; SELECT 1"])
    assert result.exit_code == 1
    (line,) = result.output.strip().splitlines()
    assert line.startswith(
        "Error: INCLUDE PERFETTO MODULE android.startup: that trace_processor standard library module is not here; "
        "these are: android.cpu.cpu_per_uid, android.entity_state_residency, "
    )
    assert "slices.with_context" in line and "viz.summary.track_event" in line


def test_the_conformance_runner_takes_the_include(tmp_path):
    src = CASES / "parser.json.JsonParser.test_x_event_order"
    case = tmp_path / "case"
    case.mkdir()
    for name in ("case.json", "trace.json"):
        (case / name).write_bytes((src / name).read_bytes())
    (case / "query.sql").write_text(
        "INCLUDE PERFETTO MODULE slices.with_context;\nSELECT count(*) > 0 AS same FROM thread_or_process_slice;\n"
    )
    (case / "expected.csv").write_text('"same"\n1\n')
    assert run_case(str(case), str(tmp_path)).passed
    (case / "query.sql").write_text("INCLUDE PERFETTO MODULE android.startup;\nSELECT 1 AS same;\n")
    result = run_case(str(case), str(tmp_path))
    assert not result.passed and "android.startup" in result.reason


def test_a_query_of_includes_only_is_refused_in_one_line(db):
    result = CliRunner().invoke(perfetto, ["query", str(db.path), "INCLUDE PERFETTO MODULE slices.with_context;"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == ["Error: no SQL statement given"]
    result = CliRunner().invoke(perfetto, ["query", str(db.path), "INCLUDE PERFETTO MODULE ;; SELECT 1"])
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1, result.output


def _ordered_track(builder, seq, uuid: int, name: str, parent: int | None = None, **fields) -> int:
    desc = pb.TrackDescriptor(uuid=uuid, name=name, **fields)
    if parent is not None:
        desc.parent_uuid = parent
    seq.packet(0, track_descriptor=desc)
    return uuid


def test_track_event_tracks_ordered_by_their_parents_child_ordering(tmp_path):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    ordering = pb.TrackDescriptor.ChildTracksOrdering
    by_rank = _ordered_track(b, seq, 10, "by rank", child_ordering=ordering.Value("EXPLICIT"))
    by_time = _ordered_track(b, seq, 20, "by time", child_ordering=ordering.Value("CHRONOLOGICAL"))
    for uuid, name, rank in ((11, "x", 2), (12, "y", 1)):
        _ordered_track(b, seq, uuid, name, by_rank, sibling_order_rank=rank)
        seq.instant(10, uuid, "e")  # a track without events is never made
    for uuid, name, ts in ((21, "early", 100), (22, "late", 50)):  # "late" has the earlier event
        _ordered_track(b, seq, uuid, name, by_time)
        seq.instant(ts, uuid, "e")
    db = ingest_built(tmp_path, b)
    sql = (
        "INCLUDE PERFETTO MODULE viz.summary.track_event;\n"
        "SELECT name, order_id, has_data, has_children FROM _track_event_tracks_ordered_groups ORDER BY name;"
    )
    result = CliRunner().invoke(perfetto, ["query", str(db.path), sql, "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["rows"] == [
        ["by rank", 1, 0, 1],  # top level: by name
        ["by time", 2, 0, 1],
        ["early", 2, 1, 0],
        ["late", 1, 1, 0],
        ["x", 2, 1, 0],
        ["y", 1, 1, 0],
    ]


def test_heap_profile_intervals(tmp_path):
    b = TraceBuilder()
    snapshot = [pb.ClockSnapshot.Clock(clock_id=6, timestamp=0), pb.ClockSnapshot.Clock(clock_id=4, timestamp=0)]
    b.packet(clock_snapshot=pb.ClockSnapshot(clocks=snapshot))
    work, idle = (("main", "/bin/app"), ("work", "/bin/app")), (("main", "/bin/app"), ("idle", "/bin/app"))
    # Cumulative since the profile began: (frames, bytes allocated, bytes freed, allocations, frees).
    b.heap_profile(100, 30, [(work, 1000, 200, 10, 2), (idle, 50, 0, 1, 0)])
    b.heap_profile(200, 30, [(work, 1500, 1500, 15, 15), (idle, 50, 0, 1, 0)])
    db = ingest_built(tmp_path, b)
    # The dumps make the trace's bounds, as in trace_processor (no slice or counter here).
    assert db.rows("SELECT start_ts, end_ts FROM trace_bounds") == [(100, 200)]
    rows = query_rows(
        db,
        "INCLUDE PERFETTO MODULE android.memory.heap_profile.intervals;\n"
        "SELECT heap_name, ts, dur, retained, allocated, delta FROM _android_heap_profile_intervals ORDER BY ts",
    )
    # The first dump covers from just after the trace's start (its own time here); the second, from just
    # after the first. Each counts what changed at it: at the second only work's callsite changed, freeing
    # more than it allocated, so it holds nothing more (retained counts callsites gaining allocations).
    assert rows == [["libc.malloc", 100, 0, 850, 1050, 850], ["libc.malloc", 101, 99, 0, 500, -800]]


def test_cpu_profiling_samples(tmp_path):
    b = TraceBuilder()
    seq = b.sequence(1)
    seq.stack_samples(10, 11, [(1_000_000, [("main", "/bin/app")]), (2_000_000, [("main", "/bin/app")])])
    db = ingest_built(tmp_path, b)
    rows = query_rows(
        db,
        "INCLUDE PERFETTO MODULE stacks.cpu_profiling;\nSELECT ts, tid, callsite_id IS NOT NULL FROM cpu_profiling_samples",
    )
    assert rows == [[1_000_000, 11, 1], [2_000_000, 11, 1]]


def test_power_rails_counters_as_leading_intervals(tmp_path):
    b = TraceBuilder()
    b.packet(power_rails={"rail_descriptor": [{"index": 0, "rail_name": "S3M_VDD_CPUCL1", "subsys_name": "cpu"}]})
    # Energy since boot: a run of equal values keeps its first two and its last (before the change).
    energies = [(1, 100), (2, 100), (3, 100), (4, 100), (5, 300), (6, 300)]
    for ms, energy in energies:
        b.packet(timestamp=ms * 1_000_000, power_rails={"energy_data": [{"index": 0, "energy": energy}]})
    db = ingest_built(tmp_path, b)
    rows = query_rows(
        db,
        "INCLUDE PERFETTO MODULE android.power_rails;\n"
        "SELECT ts / 1000000, dur / 1000000, energy_since_boot, energy_since_boot_at_end, energy_delta, average_power "
        "FROM android_power_rails_counters ORDER BY ts",
    )
    # The last lasts to the trace's end (its own time here).
    assert rows == [
        [1, 1, 100.0, 100.0, None, 0.0],
        [2, 2, 100.0, 100.0, 0.0, 0.0],
        [4, 1, 100.0, 300.0, 0.0, 200.0],
        [5, 1, 300.0, 300.0, 200.0, 0.0],
        [6, 0, 300.0, None, 0.0, None],
    ]
    assert query_rows(
        db,
        "INCLUDE PERFETTO MODULE android.power_rails;\n"
        "SELECT power_rail_name, raw_power_rail_name, friendly_name, subsystem_name FROM android_power_rails_metadata",
    ) == [["power.rails.cpu.mid", "S3M_VDD_CPUCL1", "cpu.mid", "cpu"]]


def test_run_metric_chrome_processes(tmp_path):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    for uuid, pid, kind in ((1, 10, 1), (2, 20, 2)):  # chrome_enums.ProcessType: browser, renderer
        desc = pb.TrackDescriptor(uuid=uuid, process=pb.ProcessDescriptor(pid=pid))
        desc.chrome_process.process_type = kind
        seq.packet(0, track_descriptor=desc)
    seq.thread(10, 10, "CrBrowserMain", ts=0)
    seq.thread(20, 21, "Compositor", ts=0)
    db = ingest_built(tmp_path, b)
    sql = (
        "SELECT RUN_METRIC('chrome/chrome_processes.sql');\n"
        "SELECT tid, canonical_name FROM chrome_thread ORDER BY tid;\n"
        "SELECT pid, process_type FROM chrome_process ORDER BY pid;"
    )
    result = CliRunner().invoke(perfetto, ["query", str(db.path), sql, "--format", "json"])
    assert result.exit_code == 0, result.output
    threads, processes = (json.loads(line)["rows"] for line in result.output.strip().splitlines())
    assert [t for t in threads if t[1] != "Unknown"] == [[10, "CrProcessMain"], [21, "Compositor"]]
    assert processes == [[10, "Browser"], [20, "Renderer"]]
    result = CliRunner().invoke(perfetto, ["query", str(db.path), "SELECT RUN_METRIC('android/startup.sql')"])
    assert result.exit_code == 1
    assert "RUN_METRIC('android/startup.sql'): that trace_processor metric is not here" in result.output


def test_run_metric_chrome_reliable_range(tmp_path):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    desc = pb.TrackDescriptor(uuid=1, process=pb.ProcessDescriptor(pid=10))
    desc.chrome_process.process_type = 1  # browser
    seq.packet(0, track_descriptor=desc)
    main = seq.thread(10, 10, "CrBrowserMain", ts=0)
    tasks = seq.track(100, "tasks", parent_uuid=main, ts=0)
    for ts in (5_000_000, 9_000_000):
        seq.slice_begin(ts, tasks, "task")
        seq.slice_end(ts + 1_000_000, tasks)
    for packet in b.packets:  # a sequence that started before the trace did
        packet.ClearField("first_packet_on_sequence")
    db = ingest_built(tmp_path, b)
    (utid,) = db.rows("SELECT utid FROM thread WHERE tid = 10")[0]
    sql = (
        "SELECT RUN_METRIC('chrome/chrome_reliable_range.sql');\n"
        "SELECT utid, start, has_first_packet_on_sequence FROM chrome_reliable_range_per_thread;\n"
        "SELECT start, debug_limiting_utid FROM chrome_reliable_range"
    )
    result = CliRunner().invoke(perfetto, ["query", str(db.path), sql, "--format", "json"])
    assert result.exit_code == 0, result.output
    per_thread, whole = (json.loads(line)["rows"] for line in result.output.strip().splitlines())
    assert per_thread == [[utid, 5_000_000, 0]]  # the thread's first slice: its data may be cut before
    # No browser main thread duration is known: data is complete only from the last slice's end.
    assert whole == [[10_000_000, utid]]
