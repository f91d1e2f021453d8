"""trace_processor's table functions in `query` (and the conformance runner): experimental_slice_layout,
experimental_annotated_callstack, and how calls are found in a statement; the demangle function."""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner
from conftest import query_rows
from datasette.cli import cli

from datasette_perfetto.functions import arg_set_to_json, demangle
from datasette_perfetto.table_functions import expand_table_functions, run_span_join
from datasette_perfetto.trace_builder import TraceBuilder


def _query(db, sql: str):
    result = CliRunner().invoke(cli, ["perfetto", "query", str(db.path), sql, "--format", "json"])
    return result


@pytest.fixture
def layout_db(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    a = seq.thread(1, 2, "a", ts=0)
    c = seq.thread(1, 3, "c", ts=0)
    # Track a: a root with a child (depth 1), 0-100; track c: a lone root 50-150, overlapping it in time,
    # and one 200-300, overlapping nothing.
    seq.slice_begin(0, a, "a root")
    seq.slice_begin(10, a, "a child")
    seq.slice_end(20, a)
    seq.slice_end(100, a)
    seq.slice_begin(50, c, "c overlapping")
    seq.slice_end(150, c)
    seq.slice_begin(200, c, "c alone")
    seq.slice_end(300, c)
    _, db = ingest_data(b.to_bytes())
    return db


def test_slice_layout_stacks_overlapping_trees(layout_db):
    tracks = ",".join(str(t) for (t,) in layout_db.rows("SELECT DISTINCT track_id FROM slice ORDER BY 1"))
    rows = query_rows(
        layout_db,
        "SELECT s.name, l.layout_depth FROM experimental_slice_layout('" + tracks + "') l "
        "JOIN slice s USING (id) ORDER BY s.id",
    )
    # The deeper tree takes rows 0-1; the overlapping root goes above it; the later one back to row 0.
    assert rows == [["a root", 0], ["a child", 1], ["c overlapping", 2], ["c alone", 0]]
    # A subquery argument, and only the tracks listed.
    only_c = query_rows(
        layout_db,
        "SELECT layout_depth FROM experimental_slice_layout("
        "(SELECT group_concat(DISTINCT track_id) FROM slice WHERE name LIKE 'c%')) ORDER BY id",
    )
    assert only_c == [[0], [0]]


def test_call_text_inside_strings_and_comments_is_left_alone(layout_db):
    rows = query_rows(layout_db, "SELECT 'experimental_slice_layout(1)' AS t -- experimental_slice_layout(2)\n")
    assert rows == [["experimental_slice_layout(1)"]]


def test_bad_calls_are_one_line_errors(layout_db):
    for sql, message in (
        ("SELECT * FROM experimental_slice_layout(1, 2)", "experimental_slice_layout: takes 1 argument(s), got 2"),
        ("SELECT * FROM experimental_slice_layout(42)", "experimental_slice_layout: invalid input track id list"),
        ("SELECT * FROM experimental_slice_layout((SELECT nope))", "experimental_slice_layout: no such column: nope"),
        ("SELECT * FROM experimental_slice_layout('1'", "parenthesis is not closed"),
        ("SELECT * FROM experimental_annotated_callstack(999)", "callsite with id 999 not found"),
    ):
        result = _query(layout_db, sql)
        assert result.exit_code == 1, sql
        assert message in result.output and len(result.output.strip().splitlines()) == 1, result.output


def test_annotated_callstack_marks_managed_and_runtime_frames(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1)
    libart = "/apex/com.android.art/lib64/libart.so"
    frames = [
        ("main", "/system/bin/app_process64"),
        ("com.example.Main.run", "/data/app/base.apk"),  # managed, interpreted
        ("art::ArtMethod::Invoke", libart),  # the runtime under managed code
        ("ExecuteNterpImpl", libart),  # the interpreter itself
        ("art_jni_trampoline", "/memfd:jit-cache (deleted)"),
        ("art::Method_invoke", libart),  # a JNI trampoline's callee is kept
        ("com.example.Fast.loop", "/memfd:jit-cache (deleted)"),  # jitted
        ("libc_write", "/system/lib64/libc.so"),
    ]
    seq.stack_samples(10, 11, [(1_000_000, frames)])
    _, db = ingest_data(b.to_bytes())
    rows = query_rows(
        db,
        "SELECT f.name, a.annotation FROM experimental_annotated_callstack("
        "(SELECT callsite_id FROM cpu_profile_stack_sample)) a "
        "JOIN stack_profile_frame f ON f.id = a.frame_id ORDER BY a.depth",
    )
    assert rows == [
        ["main", None],
        ["com.example.Main.run", "interp"],
        ["art::ArtMethod::Invoke", "common-frame"],
        ["ExecuteNterpImpl", "common-frame-interp"],
        ["art_jni_trampoline", "common-frame"],
        ["art::Method_invoke", None],
        ["com.example.Fast.loop", "jit"],
        ["libc_write", None],
    ]
    leaf_first = query_rows(
        db, "SELECT depth FROM experimental_annotated_callstack((SELECT max(id) FROM stack_profile_callsite))"
    )
    assert [d for (d,) in leaf_first] == list(range(len(frames) - 1, -1, -1))
    assert query_rows(db, "SELECT count(*) FROM experimental_annotated_callstack(NULL)") == [[0]]


def test_each_call_gets_its_own_temp_table(layout_db):
    conn = sqlite3.connect(f"file:{layout_db.path}?mode=ro", uri=True)
    try:
        sql = expand_table_functions(
            conn, "SELECT * FROM experimental_slice_layout('1') JOIN experimental_slice_layout('2') USING (id)"
        )
        assert sql.count("temp.__table_function_") == 2 and "experimental_slice_layout" not in sql
        conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_demangle():
    assert demangle("_ZN3art9ArtMethod6InvokeEPNS_6ThreadEPjjPNS_6JValueEPKc") == (
        "art::ArtMethod::Invoke(art::Thread*, unsigned int*, unsigned int, art::JValue*, char const*)"
    )
    assert demangle("main") is None  # not mangled: NULL, so ifnull(demangle(name), name) keeps it
    assert demangle(None) is None
    with pytest.raises(ValueError):
        demangle(3)


def _span_join(
    statement: str,
    left: list[tuple],
    right: list[tuple],
    columns=("ts", "dur", "cpu", "x"),
    other=("ts", "dur", "cpu", "y"),
):
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE TABLE a ({', '.join(columns)})")
    conn.execute(f"CREATE TABLE b ({', '.join(other)})")
    conn.executemany(f"INSERT INTO a VALUES ({', '.join('?' * len(columns))})", left)
    conn.executemany(f"INSERT INTO b VALUES ({', '.join('?' * len(other))})", right)
    assert run_span_join(conn, statement)
    cursor = conn.execute("SELECT * FROM j")
    return [d[0] for d in cursor.description], cursor.fetchall()


LEFT = [(0, 10, 1, "a0"), (20, 10, 1, "a1"), (5, 5, 2, "a2")]
RIGHT = [(5, 20, 1, "b0"), (0, 3, 3, "b1")]


def test_span_join_intersects_spans_of_each_partition():
    columns, rows = _span_join(
        "CREATE VIRTUAL TABLE j USING SPAN_JOIN(a PARTITIONED cpu, b PARTITIONED cpu)", LEFT, RIGHT
    )
    assert columns == ["ts", "dur", "cpu", "x", "y"]
    assert rows == [(5, 5, 1, "a0", "b0"), (20, 5, 1, "a1", "b0")]


def test_span_left_join_keeps_every_part_of_the_left_spans():
    _, rows = _span_join(
        "CREATE VIRTUAL TABLE j USING SPAN_LEFT_JOIN(a PARTITIONED cpu, b PARTITIONED cpu)", LEFT, RIGHT
    )
    assert rows == [
        (0, 5, 1, "a0", None),
        (5, 5, 1, "a0", "b0"),
        (20, 5, 1, "a1", "b0"),
        (25, 5, 1, "a1", None),
        (5, 5, 2, "a2", None),  # no span of b on cpu 2
    ]


def test_span_outer_join_keeps_every_part_of_both():
    _, rows = _span_join(
        "CREATE VIRTUAL TABLE j USING SPAN_OUTER_JOIN(a PARTITIONED cpu, b PARTITIONED cpu)", LEFT, RIGHT
    )
    assert rows == [
        (0, 5, 1, "a0", None),
        (5, 5, 1, "a0", "b0"),
        (10, 10, 1, None, "b0"),
        (20, 5, 1, "a1", "b0"),
        (25, 5, 1, "a1", None),
        (5, 5, 2, "a2", None),
        (0, 3, 3, None, "b1"),
    ]


def test_span_join_of_a_partitioned_and_an_unpartitioned_table():
    _, rows = _span_join(
        "CREATE VIRTUAL TABLE j USING SPAN_JOIN(a PARTITIONED cpu, b)",
        LEFT,
        [(8, 15, "whole")],
        other=("ts", "dur", "y"),
    )
    assert rows == [(8, 2, 1, "a0", "whole"), (20, 3, 1, "a1", "whole"), (8, 2, 2, "a2", "whole")]


def test_span_join_errors():
    for statement, message in (
        ("CREATE VIRTUAL TABLE j USING SPAN_JOIN(a PARTITIONED cpu, b PARTITIONED y)", "same column"),
        ("CREATE VIRTUAL TABLE j USING SPAN_JOIN(a PARTITIONED nope, b)", "Missing partition column 'nope'"),
        ("CREATE VIRTUAL TABLE j USING SPAN_JOIN(a, b)", "share a column"),  # both have cpu
    ):
        with pytest.raises(sqlite3.OperationalError, match=message):
            _span_join(statement, LEFT, RIGHT)


def test_perfetto_sql_tables_and_span_joins_in_the_query_command(layout_db):
    rows = query_rows(
        layout_db,
        "CREATE PERFETTO TABLE spans(ts TIMESTAMP, dur DURATION, track_id JOINID(track.id)) AS "
        "SELECT ts, dur, track_id FROM slice WHERE depth = 0;\n"
        "CREATE PERFETTO VIEW window AS SELECT 60 AS ts, 200 AS dur;\n"
        "CREATE VIRTUAL TABLE windowed USING SPAN_JOIN(spans PARTITIONED track_id, window);\n"
        "SELECT ts, dur FROM windowed ORDER BY ts",
    )
    assert rows == [[60, 40], [60, 90], [200, 60]]


def test_arg_set_to_json_nests_dotted_keys_and_indices(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "t", ts=0)
    seq.instant(10, track, "with args", args={"a": {"b": 1, "c": [True, "x"]}, "d": 2.5})
    _, db = ingest_data(b.to_bytes())
    assert query_rows(db, "SELECT __intrinsic_arg_set_to_json(arg_set_id) FROM slice") == [
        ['{"debug":{"a":{"b":1,"c":[true,"x"]},"d":2.5}}']
    ]
    assert query_rows(db, "SELECT __intrinsic_arg_set_to_json(NULL)") == [[None]]


def test_counter_leading_intervals_macro_over_the_statements_own_table(layout_db):
    rows = query_rows(
        layout_db,
        "INCLUDE PERFETTO MODULE counters.intervals;\n"
        "WITH data(id, ts, value, track_id) AS (VALUES (1, 10, 10, 1), (2, 20, 11, 1), (3, 30, 11, 1), "
        "(4, 40, 11, 1), (5, 50, 11, 1), (6, 60, 12, 1), (7, 15, 3, 2))\n"
        "SELECT * FROM counter_leading_intervals!(data)",
    )
    end = layout_db.one("SELECT end_ts FROM trace_bounds")
    # A value equal to the two before it is dropped (4), but a run's last (5) is kept before a change;
    # each track's last value lasts to the trace's end.
    assert rows == [
        [1, 10, 10, 1, 10.0, 11.0, None],
        [2, 20, 10, 1, 11.0, 11.0, 1.0],
        [3, 30, 20, 1, 11.0, 11.0, 0.0],
        [5, 50, 10, 1, 11.0, 12.0, 0.0],
        [6, 60, end - 60, 1, 12.0, None, 1.0],
        [7, 15, end - 15, 2, 3.0, None, None],
    ]


def test_create_statements_become_temporary_on_the_read_only_database(layout_db):
    from datasette_perfetto.sql_text import as_sqlite

    assert (
        as_sqlite("CREATE PERFETTO TABLE t(id ID(slice.id), n LONG) AS SELECT 1") == "CREATE TEMP TABLE t AS SELECT 1"
    )
    assert as_sqlite("create view v(a, b) as select 1, 2") == "create TEMP view v(a, b) as select 1, 2"
    assert as_sqlite("CREATE TABLE t (v INTEGER)") == "CREATE TEMP TABLE t (v INTEGER)"
    assert as_sqlite("SELECT 'CREATE TABLE'") == "SELECT 'CREATE TABLE'"
    rows = query_rows(
        layout_db,
        "CREATE TABLE t (v INTEGER);\nINSERT INTO t VALUES (1), (2);\n"
        "CREATE VIEW doubled(w) AS SELECT v * 2 FROM t;\nSELECT sum(w) FROM doubled",
    )
    assert rows == [[6]]


def test_sql_function_arguments_of_the_wrong_type_are_one_line_errors(layout_db):
    conn = sqlite3.connect(layout_db.path)
    try:
        with pytest.raises(ValueError, match="^PRINT_ARGS: 1st argument should be arg set id$"):
            arg_set_to_json(conn, "x")
    finally:
        conn.close()
    for sql in ("SELECT __intrinsic_arg_set_to_json('x')", "SELECT demangle(3)"):
        result = _query(layout_db, sql)
        # Python's sqlite3 cannot pass a function's message on: the statement fails in one line.
        assert result.exit_code == 1, sql
        assert result.output.strip().splitlines() == ["Error: SQL error: user-defined function raised exception"]
