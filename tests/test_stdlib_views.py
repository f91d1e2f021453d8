"""trace_processor's standard library module slices.with_context (thread_slice, process_slice,
thread_or_process_slice) is in every trace database; `INCLUDE PERFETTO MODULE slices.with_context;` in the
query command and the conformance runner is accepted as already done, any other module refused in one line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import ingest_built
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
    assert result.output.strip().splitlines() == [
        "Error: INCLUDE PERFETTO MODULE android.startup: trace_processor's standard library is not here; only "
        "slices.with_context (its tables are in every trace database)"
    ]


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
