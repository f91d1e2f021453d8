"""`datasette perfetto ingest|query`, invoked through Datasette's own CLI."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import sys

import click
import pluggy
import pytest
from click.testing import CliRunner
from datasette import hookspecs
from datasette.cli import cli

import datasette_perfetto

TABLES = {"slice", "thread", "process", "track", "args", "counter", "flow", "stats", "metadata", "trace_bounds"}
VIEWS = {"thread_track", "process_track", "counter_track"}


def run(*args: str):
    return CliRunner().invoke(cli, ["perfetto", *args])


def query(db, sql: str, *options: str):
    result = run("query", str(db.path), sql, *options)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_plugin_hooks_register_the_perfetto_group():
    # What `datasette` does with the entry point: register the module against
    # Datasette's hookspecs, then run register_commands on its click group.
    manager = pluggy.PluginManager("datasette")
    manager.add_hookspecs(hookspecs)
    manager.register(datasette_perfetto, name="perfetto")
    group = click.Group()
    manager.hook.register_commands(cli=group)
    assert {"ingest", "query", "conformance"} <= set(group.commands["perfetto"].commands)


def test_ingest_demo(tmp_path, demo_trace):
    db = tmp_path / "demo.db"
    result = run("ingest", str(demo_trace), "-o", str(db))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    summary, wrote = result.stderr.splitlines()
    assert summary.startswith(f"{demo_trace}: proto, {demo_trace.stat().st_size:,} bytes")
    assert wrote == f"Wrote {db}"
    conn = sqlite3.connect(db)
    objects = set(conn.execute("SELECT type, name FROM sqlite_master"))
    assert {("table", t) for t in TABLES} <= objects
    assert {("view", v) for v in VIEWS} <= objects
    assert conn.execute("SELECT count(*) FROM thread_track").fetchone()[0] > 0
    assert conn.execute("SELECT count(*) FROM counter_track").fetchone()[0] > 0
    assert [p.name for p in tmp_path.iterdir()] == ["demo.db"]


def test_ingest_quiet(tmp_path, demo_trace):
    result = run("ingest", str(demo_trace), "-o", str(tmp_path / "demo.db"), "-q")
    assert result.exit_code == 0
    assert result.stdout == result.stderr == ""
    assert (tmp_path / "demo.db").stat().st_size > 0


def test_ingest_summary_names_data_loss(tmp_path, demo_bytes):
    trace = tmp_path / "truncated.pftrace"
    trace.write_bytes(demo_bytes[: len(demo_bytes) // 2 + 3])
    result = run("ingest", str(trace), "-o", str(tmp_path / "t.db"))
    assert result.exit_code == 0
    assert "stats: proto_tokenizer_truncated_packet=1" in result.stderr.splitlines()[0]


def lossy_machines_trace() -> bytes:
    """A host and machine 1001, each with ftrace data loss: the host's CPU 0, machine 1001's CPUs 0 and 2."""
    from datasette_perfetto.trace_builder import TraceBuilder

    b = TraceBuilder()
    for machine, cpus in ((None, (0,)), (1001, (0, 2))):
        for cpu in cpus:
            event = {"timestamp": 150, "pid": 0, "cpu_frequency": {"state": 1000, "cpu_id": cpu}}
            b.ftrace(cpu, event, seq_id=5, machine_id=machine, lost_events=True)
    return b.to_bytes()


def test_ingest_summary_counts_every_machines_stats(tmp_path):
    trace = tmp_path / "machines.pftrace"
    trace.write_bytes(lossy_machines_trace())
    db = tmp_path / "m.db"
    result = run("ingest", str(trace), "-o", str(db))
    assert result.exit_code == 0, result.output
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT idx, machine_id, value FROM stats WHERE name = 'ftrace_cpu_has_data_loss' AND value > 0 ORDER BY 2, 1"
    ).fetchall()
    conn.close()
    assert rows == [(0, 0, 1), (0, 1, 1), (2, 1, 1)]
    # Per stat and index, summed over the machines: CPU 0 lost data on both.
    summary = result.stderr.splitlines()[0]
    assert summary.endswith("; stats: ftrace_cpu_has_data_loss[0]=2, ftrace_cpu_has_data_loss[2]=1"), summary


BAD_INPUTS = {"random bytes": bytes(range(256)) * 4, "empty": b"", "json": b"[]", "missing": None}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_ingest_failure_is_one_line_and_leaves_output_untouched(tmp_path, demo_db, case):
    trace = tmp_path / "input.pftrace"
    if BAD_INPUTS[case] is not None:
        trace.write_bytes(BAD_INPUTS[case])
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    existing = out_dir / "trace.db"
    existing.write_bytes(demo_db.path.read_bytes())
    result = run("ingest", str(trace), "-o", str(existing))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"Error: {trace}: ")
    assert [p.name for p in out_dir.iterdir()] == ["trace.db"]  # no .ingest-*.db left behind
    assert existing.read_bytes() == demo_db.path.read_bytes()


def test_ingest_into_missing_directory(tmp_path, demo_trace):
    target = tmp_path / "missing" / "trace.db"
    result = run("ingest", str(demo_trace), "-o", str(target))
    assert result.exit_code == 1
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"Error: {target}: ")
    assert not target.parent.exists()


LITERALS = "SELECT 1 AS a, NULL AS b, 'x y' AS c, 2.5 AS d, x'00ff' AS e"


def test_query_json(demo_db):
    assert json.loads(query(demo_db, LITERALS, "--format", "json")) == {
        "columns": ["a", "b", "c", "d", "e"],
        "rows": [[1, None, "x y", 2.5, "00ff"]],
    }
    sql = "SELECT id, name, parent_id FROM slice ORDER BY id LIMIT 5"
    out = json.loads(query(demo_db, sql, "--format", "json"))
    assert out == {"columns": ["id", "name", "parent_id"], "rows": [list(r) for r in demo_db.rows(sql)]}
    assert out["rows"][0][2] is None  # a root slice


def test_query_csv(demo_db):
    assert query(demo_db, LITERALS, "--format", "csv") == "a,b,c,d,e\n1,,x y,2.5,00ff\n"
    sql = "SELECT id, name, depth FROM slice ORDER BY id LIMIT 20"
    rows = list(csv.reader(io.StringIO(query(demo_db, sql, "--format", "csv"))))
    assert rows == [["id", "name", "depth"]] + [[str(v) for v in r] for r in demo_db.rows(sql)]


def test_query_text(demo_db):
    assert query(demo_db, LITERALS) == ("a  b     c    d    e\n-  ----  ---  ---  ----\n1  NULL  x y  2.5  00ff\n")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT no_such_column FROM slice",
        "SELEC 1",
        "DELETE FROM slice",
        "SELECT extract_arg('not an id', 'debug.url')",
    ],
)
def test_query_sql_error(demo_db, monkeypatch, sql):
    # As outside pytest (which captures unraisable exceptions), so a traceback
    # printed from a failing SQL function reaches stderr.
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)
    result = run("query", str(demo_db.path), sql)
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: SQL error: ")


def test_query_extract_arg(demo_db):
    sql = "SELECT extract_arg(arg_set_id, 'debug.url') FROM slice WHERE name = 'URLRequest' ORDER BY ts"
    urls = [row[0] for row in json.loads(query(demo_db, sql, "--format", "json"))["rows"]]
    expected = demo_db.rows(
        "SELECT a.string_value FROM slice s JOIN args a ON a.arg_set_id = s.arg_set_id AND a.key = 'debug.url' "
        "WHERE s.name = 'URLRequest' ORDER BY s.ts"
    )
    assert urls == [r[0] for r in expected]
    assert len(urls) == 8 and all(u.startswith("https://example.com/") for u in urls)


def test_demo_into_missing_directory_is_one_clean_error(tmp_path):
    result = run("demo", "--no-serve", "-o", str(tmp_path / "missing" / "demo.db"))
    assert result.exit_code == 1
    assert "cannot write the demo trace" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "missing").exists()


def test_demo_builds_the_database_without_serving(tmp_path):
    result = run("demo", "--no-serve", "-o", str(tmp_path / "demo.db"))
    assert result.exit_code == 0, result.output
    assert sqlite3.connect(tmp_path / "demo.db").execute("SELECT count(*) FROM slice").fetchone() == (743,)


def test_conformance_reports_each_case_and_fails_on_a_bad_one(tmp_path):
    (tmp_path / "not-a-case").mkdir()
    result = run("conformance", str(tmp_path), "-v")
    assert result.exit_code == 1
    assert result.output.splitlines() == ["FAIL not-a-case: no trace file", "0 passed, 1 failed"]
    assert run("conformance", str(tmp_path / "nowhere")).exit_code == 2  # click: no such directory
