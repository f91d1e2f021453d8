"""Batch SQL over a fleet of traces: `export --format parquet` (export.py) and `batch` (batch.py).

Real traces (shared conformance traces of several formats and data sources, and the demo trace)
are ingested, exported, and every batch result is compared with the same SQL run by sqlite3 on
each database, its rows tagged with the trace's name.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import TraceDB, ingest_named
from shared_data import CASES

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb")

from datasette_perfetto import batch as batch_module  # noqa: E402  (after the skips)
from datasette_perfetto import export as export_module  # noqa: E402
from datasette_perfetto.batch import BatchError, run_batch  # noqa: E402
from datasette_perfetto.cli import perfetto  # noqa: E402
from datasette_perfetto.export import (  # noqa: E402
    ExportError,
    arrow_schema,
    export_parquet,
    part_file,
    partition_path,
    trace_name,
)
from datasette_perfetto.schema import DERIVED, TABLES, VIEWS  # noqa: E402

# One trace per format and kind of data: track events with flows and counters, JSON, systrace
# scheduling, process tracking, a heap graph; for the views, GPU render stages, frame timelines and
# events, CPU and GPU counters, CPU tracks, perf and stack samples; and the demo trace, which has some of
# everything.
CASE_TRACES = {
    "flows": "parser.track_event.TrackEvent.test_flow_events_track_event",
    "json_pid_tid_zero": "parser.json.JsonParser.test_json_pid_tid_zero",
    "systrace_sched": "parser.parsing.Parsing.test_sched_blocked_systrace_sched_blocked_reason",
    "process_tracking": "parser.process_tracking.ProcessTracking.test_process_tracking",
    "heap_graph": "parser.profiling.ProfilingHeapGraph.test_heap_graph_native_size",
    "gpu_render_stages": "parser.graphics.GraphicsGpuTrace.test_gpu_render_stages",
    "frame_timeline": "parser.graphics.GraphicsParser.test_actual_frame_timeline_events",
    "frame_events": "parser.graphics.GraphicsParser.test_graphics_frame_events_machine_id",
    "counters": "parser.track_event.TrackEvent.test_track_event_counters_slices",
    "cpu_counters": "tables.TablesCounters.test_counters_where_cpu_counters_where_cpu",
    "cpu_tracks": "tables.Tables.test_cpu_track_table",
    "perf_samples": "parser.profiling.Profiling.test_perf_sample_followers",
    "stack_samples": "parser.profiling.Profiling.test_stack_sample_contexts",
    "stack_samples_async": "parser.profiling.Profiling.test_stack_sample_async",
    "gpu_counters": "parser.graphics.GraphicsGpuTrace.test_gpu_counter_specs",
}


def _case_trace(case: str) -> Path:
    folder = CASES / case
    if not folder.is_dir():
        pytest.skip(f"shared conformance case {case} is not on this machine")
    (trace,) = [p for p in folder.iterdir() if p.name.startswith("trace")]
    return trace


@pytest.fixture(scope="module")
def fleet_dbs(tmp_path_factory, demo_db) -> list[Path]:
    """The trace databases, each named for its trace (the trace column)."""
    dbs = [ingest_named(tmp_path_factory, _case_trace(case), name) for name, case in CASE_TRACES.items()]
    return [*dbs, demo_db.path]


@pytest.fixture(scope="module")
def exported(tmp_path_factory, fleet_dbs) -> Path:
    out = tmp_path_factory.mktemp("fleet") / "parquet"
    summaries = export_parquet([str(p) for p in fleet_dbs], str(out))
    assert [s.trace for s in summaries] == [trace_name(str(p)) for p in fleet_dbs]
    return out


def sqlite_union(dbs: list[Path], sql: str) -> list[list]:
    """The SQL on each database with sqlite3, rows tagged with the trace: what batch must return."""
    rows = []
    for db in sorted(dbs, key=lambda p: trace_name(str(p))):
        rows.extend([trace_name(str(db)), *r] for r in TraceDB(db).rows(sql))
    return rows


def _sorted(rows: list[list]) -> list[tuple]:
    return sorted((tuple(r) for r in rows), key=repr)


# ---------------------------------------------------------------- export


def test_export_writes_every_declared_table_per_trace_with_its_declared_types(exported, fleet_dbs):
    # Every declared table and no other: not the report's precomputed tables, not SQLite's own.
    assert sorted(p.name for p in exported.iterdir()) == sorted(t.name for t in TABLES)
    assert not {d.name for d in DERIVED} & {p.name for p in exported.iterdir()}
    for table in TABLES:
        expected = arrow_schema(table)
        for db in fleet_dbs:
            part = Path(partition_path(str(exported), table.name, trace_name(str(db))))
            assert sorted(os.listdir(part)) == [part_file(table.name)], part
            schema = pq.read_schema(part / part_file(table.name))
            assert schema.equals(expected), (table.name, schema)
    slice_schema = arrow_schema(next(t for t in TABLES if t.name == "slice"))
    assert slice_schema.field("ts").type == pa.int64() and slice_schema.field("ts").nullable
    assert slice_schema.field("name").type == pa.string()
    assert arrow_schema(next(t for t in TABLES if t.name == "counter")).field("value").type == pa.float64()
    # Nothing left over from staging.
    assert not [p for p in exported.iterdir() if p.name.startswith(".")]


def test_exported_rows_equal_the_database_rows(exported, fleet_dbs):
    for db in fleet_dbs:
        trace = trace_name(str(db))
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        uuid_row = conn.execute("SELECT str_value FROM metadata WHERE name = 'trace_uuid' ORDER BY id").fetchone()
        for table in TABLES:
            columns = ", ".join(f"[{c.name}]" for c in table.columns)
            order = " ORDER BY id" if any(c.name == "id" for c in table.columns) else ""
            expected = [list(r) for r in conn.execute(f"SELECT {columns} FROM [{table.name}]{order}")]
            got = pq.read_table(Path(partition_path(str(exported), table.name, trace)) / part_file(table.name))
            uuids = set(got.column("trace_uuid").to_pylist())
            assert uuids <= {uuid_row[0] if uuid_row else None}
            assert [list(r.values())[:-1] for r in got.to_pylist()] == expected, (trace, table.name)
        conn.close()
    assert trace_name("/x/rank0.db") == "rank0" and trace_name("trace.sqlite") == "trace.sqlite"


def test_duckdb_and_pyarrow_read_the_export_as_a_dataset_partitioned_by_trace(exported, fleet_dbs):
    conn = duckdb.connect()
    got = conn.execute(
        f"SELECT trace, count(*) FROM read_parquet('{exported}/slice/**/*.parquet', hive_partitioning = true) "
        "GROUP BY trace ORDER BY trace"
    ).fetchall()
    expected = sorted((trace_name(str(db)), TraceDB(db).count("slice")) for db in fleet_dbs)
    assert got == [e for e in expected if e[1]]  # a trace with no slices has no rows to count
    import pyarrow.dataset as ds

    dataset = ds.dataset(str(exported / "thread"), format="parquet", partitioning="hive")
    assert dataset.schema.field("trace").type == pa.string()
    assert sorted(set(dataset.to_table().column("trace").to_pylist())) == sorted(
        trace_name(str(db)) for db in fleet_dbs if TraceDB(db).count("thread")
    )


def test_exporting_again_replaces_the_partition(tmp_path, fleet_dbs):
    out = tmp_path / "out"
    first, second = fleet_dbs[0], fleet_dbs[-1]
    export_parquet([str(first)], str(out))
    # Another database under the same name: its partitions replace the first one's, whole.
    renamed = tmp_path / "other" / first.name
    renamed.parent.mkdir()
    shutil.copy(second, renamed)
    slice_part = Path(partition_path(str(out), "slice", trace_name(str(first))))
    part = slice_part / part_file("slice")
    (slice_part / "part-1.parquet").write_bytes(part.read_bytes())
    export_parquet([str(renamed)], str(out))
    assert sorted(os.listdir(slice_part)) == [part.name]
    assert pq.read_table(part).num_rows == TraceDB(second).count("slice")
    assert pq.read_table(part).num_rows != TraceDB(first).count("slice")


def test_a_failed_export_leaves_the_previous_partitions_and_no_staging(tmp_path, fleet_dbs):
    out = tmp_path / "out"
    db = tmp_path / "demo.db"
    shutil.copy(fleet_dbs[-1], db)
    export_parquet([str(db)], str(out))
    before = {p: p.read_bytes() for p in out.rglob("*.parquet")}
    # SQLite lets a column hold any type: a value that is no INTEGER fails the export, with one line.
    conn = sqlite3.connect(db)
    conn.execute("UPDATE thread SET tid = 'not a number' WHERE id = (SELECT max(id) FROM thread)")
    conn.commit()
    conn.close()
    with pytest.raises(ExportError, match=r"demo\.db: thread\.tid holds 'not a number', which is not INTEGER$"):
        export_parquet([str(db)], str(out))
    assert {p: p.read_bytes() for p in out.rglob("*.parquet")} == before
    assert sorted(p.name for p in out.iterdir()) == sorted(t.name for t in TABLES)  # no staging folder


def test_export_refuses_bad_inputs_with_one_line(tmp_path, fleet_dbs):
    not_trace = tmp_path / "plain.db"
    sqlite3.connect(not_trace).execute("CREATE TABLE t (x)").connection.close()
    text = tmp_path / "text.db"
    text.write_text("not a database")
    twin = tmp_path / "twin" / fleet_dbs[0].name
    twin.parent.mkdir()
    shutil.copy(fleet_dbs[0], twin)
    runner = CliRunner()
    for args, message in (
        ([str(tmp_path / "none.db")], "no such database file"),
        ([str(not_trace)], "is not a trace database"),
        ([str(text)], "not a trace database"),
        ([str(fleet_dbs[0]), str(twin)], "would both be trace"),
    ):
        result = runner.invoke(perfetto, ["export", *args, "-o", str(tmp_path / "out")])
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], result.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_partition_names_are_escaped_and_stay_text(tmp_path, fleet_dbs):
    names = ["a=b c%", "2024"]
    dbs = []
    for name in names:
        dbs.append(tmp_path / f"{name}.db")
        shutil.copy(fleet_dbs[-1], dbs[-1])
    out = tmp_path / "out"
    export_parquet([str(p) for p in dbs], str(out))
    assert sorted(os.listdir(out / "slice")) == ["trace=2024", "trace=a%3Db c%25"]
    result = run_batch("SELECT count(*) AS n FROM slice", [str(out)])
    assert [r[0] for r in result.rows] == sorted(names)  # '2024' is not read as a number


# ---------------------------------------------------------------- batch

QUERIES = [
    # Rewritten into one query over the whole dataset, the trace added to every grouping, join and window.
    ("SELECT name, count(*) AS n, sum(dur) AS total, max(dur) AS longest FROM slice GROUP BY name", True),
    ("SELECT utid, tid, name FROM thread WHERE tid > 0", True),
    ("SELECT DISTINCT name FROM slice", True),
    ("SELECT type, count(*) FROM track GROUP BY 1 HAVING count(*) > 1", True),
    ("SELECT t.type, count(*) AS n FROM slice s JOIN track t ON s.track_id = t.id GROUP BY t.type", True),
    ("SELECT * FROM thread LEFT JOIN process USING (upid)", True),
    ("SELECT th.name, p.name FROM thread th, process p WHERE th.upid = p.upid", True),
    ("SELECT ts, name, row_number() OVER (ORDER BY ts, id) AS i FROM slice", True),
    ("SELECT name, rank() OVER (PARTITION BY name ORDER BY dur DESC, id) FROM slice", True),
    ("SELECT d, count(*) FROM (SELECT depth AS d FROM slice WHERE dur >= 0) q GROUP BY d", True),
    ("WITH x AS (SELECT track_id, count(*) AS n FROM slice GROUP BY 1) SELECT n, count(*) FROM x GROUP BY n", True),
    # Anything else runs trace by trace.
    ("SELECT count(*) AS slices, max(depth) FROM slice", False),  # a row for a trace with no slices too
    ("WITH x AS (SELECT track_id, count(*) AS n FROM slice GROUP BY 1) SELECT max(n) FROM x", False),
    ("SELECT name FROM process WHERE upid IN (SELECT upid FROM thread WHERE tid > 0)", False),
    ("SELECT name, count(*) FROM slice GROUP BY name ORDER BY 2 DESC, 1 LIMIT 2", False),
    ("SELECT 1 AS one", False),
]


@pytest.mark.parametrize("sql,rewritten", QUERIES)
def test_batch_equals_the_union_of_per_database_results(exported, fleet_dbs, sql, rewritten):
    result = run_batch(sql, [str(exported)])
    expected = sqlite_union(fleet_dbs, sql)
    assert result.rewritten is rewritten
    assert result.columns[0] == "trace"
    assert expected and len(result.columns) == len(expected[0])
    assert _sorted(result.rows) == _sorted(expected)
    assert result.skipped == []
    # Rows come trace by trace, in the order of the names.
    traces = [r[0] for r in result.rows]
    assert traces == sorted(traces)


@pytest.mark.parametrize("view", [v.name for v in VIEWS if v.name not in {t.name for t in TABLES}])
def test_the_schemas_views_read_as_in_each_database(exported, fleet_dbs, view):
    # DuckDB runs the view's own SQL (schema.py) over the trace's tables, as a CTE of the statement.
    sql = f"SELECT * FROM {view}"
    result = run_batch(sql, [str(exported)])
    assert _sorted(result.rows) == _sorted(sqlite_union(fleet_dbs, sql))
    assert result.columns[1:] == [d[0] for d in TraceDB(fleet_dbs[-1]).connect().execute(sql).description]


def test_batch_keeps_each_traces_order_and_limit(exported, fleet_dbs):
    # ORDER BY and LIMIT apply within each trace (ids are unique, so the order is total).
    for sql in (
        "SELECT id, name FROM slice ORDER BY id DESC",  # rewritten
        "SELECT id, name FROM slice ORDER BY id DESC LIMIT 3",  # per trace
        "SELECT id, ts FROM slice ORDER BY 1 LIMIT 2 OFFSET 1",
    ):
        assert run_batch(sql, [str(exported)]).rows == sqlite_union(fleet_dbs, sql), sql


def test_group_by_counts_within_each_trace_not_across(tmp_path, fleet_dbs):
    # Two copies of one trace: each gets the counts of the trace alone, never the sum of both.
    dbs = [tmp_path / "a.db", tmp_path / "b.db"]
    for db in dbs:
        shutil.copy(fleet_dbs[-1], db)
    sql = "SELECT name, count(*) AS n FROM slice GROUP BY name ORDER BY n DESC, name"
    alone = [list(r) for r in TraceDB(fleet_dbs[-1]).rows(sql)]
    result = run_batch(sql, [str(p) for p in dbs])  # trace databases: exported to a temporary folder first
    assert result.rows == [["a", *r] for r in alone] + [["b", *r] for r in alone]


def test_batch_over_databases_equals_batch_over_their_export(exported, fleet_dbs):
    sql = "SELECT name, count(*) FROM slice GROUP BY name"
    assert _sorted(run_batch(sql, [str(p) for p in fleet_dbs]).rows) == _sorted(run_batch(sql, [str(exported)]).rows)


def test_a_trace_without_a_table_is_reported_and_skipped(tmp_path, fleet_dbs):
    dbs = [tmp_path / "whole.db", tmp_path / "partial.db"]
    for db in dbs:
        shutil.copy(fleet_dbs[-1], db)
    conn = sqlite3.connect(dbs[1])
    conn.execute("DROP TABLE sched")
    conn.commit()
    conn.close()
    out = tmp_path / "out"
    (summary_whole, summary_partial) = export_parquet([str(p) for p in dbs], str(out))
    assert summary_partial.missing_tables == ("sched",) and summary_whole.missing_tables == ()
    assert not (out / "sched" / "trace=partial").exists()

    runner = CliRunner()
    result = runner.invoke(perfetto, ["batch", "SELECT count(*) AS n FROM sched", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == ["partial: no sched table; skipped"]
    assert result.stdout.splitlines()[2:] == [f"whole  {TraceDB(dbs[0]).count('sched')}"]
    # A rewritten query skips it too.
    skipped = []
    got = run_batch("SELECT utid FROM sched GROUP BY utid", [str(out)], on_skip=lambda *a: skipped.append(a))
    assert skipped == [("partial", "sched")] and {r[0] for r in got.rows} == {"whole"}
    # Tables it has still run.
    assert {r[0] for r in run_batch("SELECT count(*) FROM slice", [str(out)]).rows} == {"whole", "partial"}


@pytest.mark.parametrize(
    "sql,message",
    [
        ("SELEC name FROM slice", 'SQL error: syntax error at or near "SELEC"'),
        ("SELECT nope FROM slice", 'SQL error: Binder Error: Referenced column "nope" not found'),
        ("SELECT * FROM no_such_table", "Table with name no_such_table does not exist"),
        ("SELECT count(*) FROM slice GROUP BY nope", "nope"),
        ("DELETE FROM slice", "batch runs one SELECT statement"),
        ("SELECT 1; SELECT 2", "batch runs one SELECT statement; this SQL has 2"),
    ],
)
def test_bad_sql_is_one_line_and_exit_1(exported, sql, message):
    result = CliRunner().invoke(perfetto, ["batch", sql, str(exported)])
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], result.stderr
    assert result.stdout == ""


def test_bad_sources_are_one_line(tmp_path, exported):
    (tmp_path / "empty").mkdir()
    runner = CliRunner()
    for source, message in (
        (str(tmp_path / "nothing"), "no such file or folder"),
        (str(tmp_path / "empty"), "not a Parquet export"),
    ):
        result = runner.invoke(perfetto, ["batch", "SELECT 1 FROM slice", source])
        assert result.exit_code == 1 and message in result.stderr and len(result.stderr.splitlines()) == 1
    with pytest.raises(BatchError, match="is in both"):
        run_batch("SELECT count(*) FROM slice", [str(exported), str(exported)])


def test_cli_export_then_batch_formats(tmp_path, fleet_dbs):
    out = tmp_path / "fleet"
    runner = CliRunner()
    result = runner.invoke(perfetto, ["export", *map(str, fleet_dbs), "--format", "parquet", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[-1] == f"Wrote {out}"
    sql = "SELECT name, count(*) AS n FROM slice GROUP BY name ORDER BY n DESC, name"
    expected = sqlite_union(fleet_dbs, sql)

    as_json = runner.invoke(perfetto, ["batch", sql, str(out), "--format", "json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == {"columns": ["trace", "name", "n"], "rows": expected}

    as_csv = runner.invoke(perfetto, ["batch", sql, str(out), "--format", "csv"])
    lines = as_csv.stdout.splitlines()
    assert lines[0] == "trace,name,n" and len(lines) == len(expected) + 1

    as_text = runner.invoke(perfetto, ["batch", sql, str(out)])
    header, rule, first = as_text.stdout.splitlines()[:3]
    assert header.split() == ["trace", "name", "n"] and set(rule) <= {"-", " "}
    assert first.split()[0] == expected[0][0] and first.split()[-1] == str(expected[0][2])


def test_missing_fleet_packages_name_the_extra(monkeypatch, tmp_path, fleet_dbs):
    for name in ("duckdb", "pyarrow"):
        with monkeypatch.context() as m:
            m.setitem(sys.modules, name, None)  # import fails as for a package that is not installed
            m.delitem(sys.modules, "datasette_perfetto.export")
            m.delitem(sys.modules, "datasette_perfetto.batch")
            result = CliRunner().invoke(perfetto, ["batch", "SELECT 1 FROM slice", str(fleet_dbs[0])])
            assert result.exit_code == 1
            assert result.stderr.strip() == (
                f"Error: {name} is not installed; it comes with: pip install 'datasette-perfetto[fleet]'"
            )
    assert sys.modules["datasette_perfetto.batch"] is batch_module
    assert sys.modules["datasette_perfetto.export"] is export_module


SPARK_SCRIPT = """
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.master("local[1]").appName("fleet").getOrCreate()
# Partition values are text (a trace named 2024 stays '2024').
spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
slices = spark.read.parquet(sys.argv[1] + "/slice")
for row in slices.groupBy("trace").count().orderBy("trace").collect():
    print(row["trace"], row["count"])
spark.stop()
"""


def test_spark_reads_the_export(exported, fleet_dbs, tmp_path):
    try:
        import pyspark  # noqa: F401
    except ImportError:
        pytest.skip("pyspark is not installed (the test extra has it: pip install -e '.[test]')")
    if shutil.which("java") is None:
        pytest.skip("no java on PATH for Spark")
    script = tmp_path / "spark_fleet.py"
    script.write_text(SPARK_SCRIPT)
    run = subprocess.run(
        [sys.executable, str(script), str(exported)], capture_output=True, text=True, timeout=300, check=False
    )
    assert run.returncode == 0, run.stderr[-3000:]
    expected = sorted((trace_name(str(db)), TraceDB(db).count("slice")) for db in fleet_dbs)
    assert [tuple(line.split()) for line in run.stdout.splitlines()] == [(t, str(n)) for t, n in expected if n]


def test_partitions_of_an_older_schema_read_with_nulls(tmp_path, fleet_dbs):
    # A partition written when a table had fewer columns (an older version's export): read by name,
    # its missing column NULL, in both ways of running.
    dbs = [tmp_path / "new.db", tmp_path / "old.db"]
    for db in dbs:
        shutil.copy(fleet_dbs[-1], db)
    out = tmp_path / "out"
    export_parquet([str(p) for p in dbs], str(out))
    old_folder = Path(partition_path(str(out), "thread", "old"))
    current = old_folder / part_file("thread")
    pq.write_table(pq.read_table(current).drop_columns(["is_idle"]), old_folder / "part-0123456789ab.parquet")
    current.unlink()
    for sql, rewritten in (
        ("SELECT is_idle, count(*) AS n FROM thread GROUP BY is_idle ORDER BY is_idle", True),
        ("SELECT count(is_idle) AS n FROM thread", False),
    ):
        result = run_batch(sql, [str(out)])
        assert result.rewritten is rewritten
        new_rows = [r[1:] for r in result.rows if r[0] == "new"]
        assert new_rows == [list(r) for r in TraceDB(dbs[0]).rows(sql)]
        if rewritten:
            assert [r[1:] for r in result.rows if r[0] == "old"] == [[None, TraceDB(dbs[1]).count("thread")]]
        else:
            assert [r[1:] for r in result.rows if r[0] == "old"] == [[0]]
