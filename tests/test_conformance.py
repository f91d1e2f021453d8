"""The conformance ratchet: every case listed in conformance_passing.txt must pass."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from shared_data import CASES

from datasette_perfetto.conformance import load_passing_list, parse_expected, run_case, values_equal
from datasette_perfetto.ingest import ingest

HERE = Path(__file__).parent

PASSING = load_passing_list(str(HERE / "conformance_passing.txt"))


def test_cases_folder_is_present():
    assert CASES.is_dir(), f"conformance cases not found at {CASES}"
    assert len(PASSING) >= 51


@pytest.mark.parametrize("case_id", PASSING)
def test_listed_case_passes(case_id, tmp_path):
    result = run_case(str(CASES / case_id), str(tmp_path))
    assert result.passed, result.reason


def test_expected_csv_parsing_keeps_types():
    header, rows = parse_expected('"a","b","c","d"\n"x",[NULL],"[NULL]",1.500000\n')
    assert header == ["a", "b", "c", "d"]
    assert rows == [["x", None, "[NULL]", 1.5]]


def test_expected_csv_strings_may_span_lines_and_blank_lines_are_skipped():
    header, rows = parse_expected('"name","v"\n\n"cfg","a: 1\nb: 2",3\n  \n"x""y",\n')
    assert header == ["name", "v"]
    assert rows == [["cfg", "a: 1\nb: 2", 3], ['x"y', ""]]


def test_rows_are_compared_in_order_only_when_the_query_orders_them(tmp_path):
    """Without ORDER BY the row order is the engine's (trace_processor's scan and join order, SQLite's
    planner's): the rows must match, in any order; with it, in order."""
    src = CASES / "parser.json.JsonParser.test_json_pid_tid_zero"
    case = tmp_path / "case"
    case.mkdir()
    for name in ("case.json", "trace.json"):
        (case / name).write_bytes((src / name).read_bytes())
    db = tmp_path / "probe.db"
    ingest([str(src / "trace.json")], str(db))
    rows = [f"{ts},{dur}" for ts, dur in sqlite3.connect(db).execute("SELECT ts, dur FROM slice ORDER BY ts DESC")]
    assert len(set(rows)) >= 2

    def passes(query: str, expected_rows: list[str]) -> bool:
        (case / "query.sql").write_text(query)
        (case / "expected.csv").write_text("\n".join(['"ts","dur"', *expected_rows]) + "\n")
        return run_case(str(case), str(tmp_path)).passed

    assert passes("SELECT ts, dur FROM slice", rows)  # reversed, unordered: the same rows
    assert not passes("SELECT ts, dur FROM slice ORDER BY ts", rows)
    assert passes("SELECT ts, dur FROM slice ORDER BY ts", rows[::-1])
    assert not passes("SELECT ts, dur FROM slice", [*rows[:-1], rows[0]])  # as many rows, not the same ones


def test_a_query_of_several_statements_gives_the_last_ones_rows(tmp_path):
    src = CASES / "parser.json.JsonParser.test_json_pid_tid_zero"
    case = tmp_path / "case"
    case.mkdir()
    for name in ("case.json", "trace.json"):
        (case / name).write_bytes((src / name).read_bytes())
    (case / "query.sql").write_text(
        "-- a comment; with a semicolon\nCREATE TABLE t (v INTEGER);\nINSERT INTO t VALUES (1), (2);\n"
        "SELECT count(*) AS n, sum(v) AS total FROM t;\n"
    )
    (case / "expected.csv").write_text('"n","total"\n2,3\n')
    assert run_case(str(case), str(tmp_path)).passed


def test_values_compare_numbers_numerically_and_strings_exactly():
    assert values_equal(100, 100.0)
    assert values_equal(1.0000001, 1.0)
    assert not values_equal("1", 1)
    assert not values_equal(None, "x")
    assert values_equal(None, None)
    assert not values_equal(0, None)


def test_a_wrong_expectation_fails(tmp_path):
    case = tmp_path / "case"
    case.mkdir()
    src = CASES / PASSING[0]
    for name in ("query.sql", "case.json"):
        (case / name).write_bytes((src / name).read_bytes())
    for name in ("trace.pb", "trace.json", "trace.systrace"):
        if (src / name).exists():
            (case / name).write_bytes((src / name).read_bytes())
    expected = (src / "expected.csv").read_text().splitlines()
    expected.append(",".join(["999999"] * len(expected[0].split(","))))
    (case / "expected.csv").write_text("\n".join(expected) + "\n")
    assert not run_case(str(case), str(tmp_path)).passed


# These two list every args row; trace_processor recorded them with its
# --analyze-trace-proto-content debugging option, which adds event.category /
# event.name arg sets a normal import does not have. Everything else must match.
ANALYZER_CASES = [
    "parser.track_event.TrackEvent.test_track_event_merged_debug_annotations_args",
    "parser.track_event.TrackEvent.test_track_event_chrome_histogram_sample_args",
]


@pytest.mark.parametrize("case_id", ANALYZER_CASES)
def test_analyzer_cases_match_apart_from_analyzer_args(case_id, tmp_path):
    import sqlite3

    from datasette_perfetto.functions import register_functions
    from datasette_perfetto.ingest import ingest

    case = CASES / case_id
    db = tmp_path / "case.db"
    ingest([str(case / "trace.pb")], str(db))
    conn = sqlite3.connect(db)
    register_functions(conn)
    rows = conn.execute((case / "query.sql").read_text()).fetchall()
    _, expected = parse_expected((case / "expected.csv").read_text())
    expected = [r for r in expected if not str(r[0]).startswith("event.")]
    assert len(rows) == len(expected)
    for got, want in zip(rows, expected):
        assert all(values_equal(a, e) for a, e in zip(got, want)), (got, want)


def test_macros_expand_with_nested_parentheses():
    from datasette_perfetto.conformance import expand_macros

    assert (
        expand_macros("SELECT cast_int!(sum(max(a, 1))) AS x, cast_int!(b)")
        == "SELECT CAST(sum(max(a, 1)) AS INT) AS x, CAST(b AS INT)"
    )
    assert expand_macros("SELECT cast_int!(a") == "SELECT cast_int!(a"  # unbalanced: left for SQLite to report


def test_a_string_holding_quotes_compares_as_trace_processor_prints_it(tmp_path):
    """trace_processor's runner prints strings quoted but not escaped; such lines are compared as text."""
    src = CASES / "parser.json.JsonParser.test_json_pid_tid_zero"
    case = tmp_path / "case"
    case.mkdir()
    for name in ("case.json", "trace.json"):
        (case / name).write_bytes((src / name).read_bytes())
    (case / "query.sql").write_text("""SELECT 'x' AS name, '{"a":{"b":1}}' AS json, NULL AS missing, 2 AS n;\n""")
    (case / "expected.csv").write_text('"name","json","missing","n"\n"x","{"a":{"b":1}}","[NULL]",2\n')
    assert run_case(str(case), str(tmp_path)).passed
    (case / "expected.csv").write_text('"name","json","missing","n"\n"x","{"a":{"b":2}}","[NULL]",2\n')
    assert not run_case(str(case), str(tmp_path)).passed
