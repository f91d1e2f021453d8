"""Text that fits the terminal (--width, $COLUMNS, the web's width=), --show-sql, and SQL that runs as printed
(`datasette perfetto query` with comments first, several statements, standard input, --file)."""

from __future__ import annotations

import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ingest_built, report_of, served
from datasette.cli import cli

from datasette_perfetto.report.base import Cell, Table
from datasette_perfetto.report.render import text_table, to_text
from datasette_perfetto.trace_builder import TraceBuilder

LONG = "RenderWidgetHostImpl::ForwardGestureEventWithLatencyInfo::DispatchToRendererCompositorThread"


def invoke(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["perfetto", *args], input=input, env=env)


@pytest.fixture(scope="module")
def wide_db(tmp_path_factory):
    """Slices with names of 60 to 95 characters on a thread with a long name: the text tables are wide."""
    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(10, "com.example.a_rather_long_process_name:renderer_sandboxed_process")
    thread = seq.thread(10, 11, "ThreadPoolForegroundWorkerWithAVeryLongName")
    ts = 1_000_000
    for i in range(12):
        name = f"{LONG[: 60 + 3 * i]}#{i}"
        for n in range(i + 1):
            seq.slice_begin(ts, thread, name)
            ts += 1_000_000 * (i + 1) + n
            seq.slice_end(ts, thread)
    return ingest_built(tmp_path_factory.mktemp("wide"), b)


def table_lines(text: str) -> list[str]:
    """The lines of the text's tables (indented rows), not the footnotes and commands after them (whole, to run)."""
    lines = []
    for line in text.splitlines():
        if line.startswith(("  * ", "Next:")):
            break
        if line.startswith("  "):
            lines.append(line)
    return lines


@pytest.mark.parametrize("view", [("slices", "table"), ("processes", "table"), ("tracks", "table"), ("", "")])
@pytest.mark.parametrize("width", [80, 100])
def test_tables_fit_the_width_and_cut_names_with_an_ellipsis(wide_db, view, width):
    result = invoke("report", str(wide_db.path), *[v for v in view if v], "--width", str(width))
    assert result.exit_code == 0, result.output
    lines = table_lines(result.output)
    assert lines and all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]
    unlimited = invoke("report", str(wide_db.path), *[v for v in view if v], "--width", "0").output
    assert max(len(line) for line in table_lines(unlimited)) > width  # it was too wide: something was cut
    if view[0] in ("slices", ""):
        names = [line.split("   ")[0].strip() for line in lines if "RenderWidget" in line]
        assert names and all(name.endswith("…") for name in names)
        full = {name for (name,) in wide_db.connect().execute("SELECT name FROM slice")}
        assert all(any(f.startswith(name[:-1]) for f in full) for name in names)
        assert "…" not in unlimited and all(name in unlimited for name in full if name.endswith(("#11", "#10")))


def test_numbers_are_never_cut_and_the_header_stays_aligned():
    table = Table(
        "T",
        ("Name", "Count", "Total dur", "Where"),
        [
            [Cell("x" * 70), Cell("123456"), Cell("1.234567s"), Cell("y" * 40)],
            [Cell("short"), Cell("7"), Cell("1ns"), Cell("z")],
        ],
        align="lrrl",
    )
    lines = text_table(table, 60)
    assert all(len(line) <= 60 for line in lines)
    header, first, second = lines[1:]
    assert "123456" in first and "1.234567s" in first
    # Every column starts where its header does; right-aligned numbers end where their header ends.
    assert first.index("123456") + len("123456") == header.index("Count") + len("Count")
    assert first.index("1.234567s") + len("1.234567s") == header.index("Total dur") + len("Total dur")
    assert first.index("y") == header.index("Where") == second.index("z")
    assert first.split("   ")[0].strip().endswith("…") and first.rstrip().endswith("…")
    # Nothing to cut but numbers: the line stays whole, wider than asked.
    numbers = Table("N", ("Count", "Dur"), [[Cell("1234567890"), Cell("987654321ns")]])
    assert text_table(numbers, 10) == text_table(numbers, 0)


def test_width_defaults_to_columns_else_80(wide_db):
    db = str(wide_db.path)
    assert (
        invoke("report", db, "slices", env={"COLUMNS": "100"}).output
        == invoke("report", db, "slices", "--width", "100").output
    )
    # No terminal and no $COLUMNS: 80.
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run(
        [sys.executable, "-c", "from datasette.cli import cli; cli()", "perfetto", "report", db, "slices"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert done.stdout == invoke("report", db, "slices", "--width", "80").output
    for bad in ("-1", "wide"):
        result = invoke("report", db, "slices", "--width", bad)
        assert result.exit_code == 1 and result.output.strip().splitlines() == [
            f"Error: width: expected a whole number of columns (0: no limit), got {bad!r}"
        ]


def test_goldens_and_the_web_text_have_no_limit(wide_db):
    result = report_of(wide_db.path, "slices", "table", {})
    assert (
        to_text(result)
        == to_text(result, 0)
        == invoke("report", str(wide_db.path), "slices", "--width", "0").output.replace(str(wide_db.path), "t.db")
    )


@pytest.mark.web
@pytest.mark.asyncio
async def test_web_text_takes_a_width(wide_db):
    ds = served(wide_db.path)
    whole = (await ds.client.get("/t/-/report/slices.txt")).text
    assert "…" not in whole and max(len(line) for line in table_lines(whole)) > 100
    fitted = (await ds.client.get("/t/-/report/slices.txt?width=100")).text
    assert "…" in fitted and all(len(line) <= 100 for line in table_lines(fitted))
    assert (await ds.client.get("/t/-/report/slices.txt?width=0")).text == whole
    error = await ds.client.get("/t/-/report/slices.txt?width=wide")
    assert error.status_code == 400 and "width" in error.text
    # Only the text takes it: elsewhere it is an unknown flag.
    assert (await ds.client.get("/t/-/report/slices.json?width=80")).status_code == 400


def test_show_sql_is_the_text_then_the_sql(demo_db):
    db = str(demo_db.path)
    for args in (["slices"], ["slices", "inspect", "--name", "URLRequest"], []):
        text = invoke("report", db, *args, "--width", "0").output
        sql = invoke("report", db, *args, "--format", "sql").output
        shown = invoke("report", db, *args, "--width", "0", "--show-sql")
        assert shown.exit_code == 0 and shown.output == text + "\n" + sql
    bad = invoke("report", db, "--show-sql", "--format", "json")
    assert bad.exit_code == 1 and len(bad.output.strip().splitlines()) == 1


def query_json(db: str, *args: str, input: str | None = None) -> list[dict]:
    result = invoke("query", db, *args, "--format", "json", input=input)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines()]


@pytest.mark.parametrize("noun", ["slices", "processes"])
def test_the_printed_sql_runs_through_query_on_stdin(demo_db, noun):
    """Every statement `--format sql` prints runs as printed (its bound values in its comments), giving the rows
    the view's own queries gave; the main table's rows are those the report shows."""
    db = str(demo_db.path)
    sql = invoke("report", db, noun, "--format", "sql").output
    assert sql.startswith("--")
    results = query_json(db, "-", input=sql)
    result = report_of(demo_db.path, noun, "table", {})
    conn = sqlite3.connect(demo_db.path)
    from datasette_perfetto.functions import register_functions

    register_functions(conn)
    expected = []
    for q in result.report.queries:
        cur = conn.execute(q.sql, dict(q.params))
        expected.append({"columns": [d[0] for d in cur.description], "rows": [list(r) for r in cur.fetchall()]})
    assert results == expected
    report = json.loads(invoke("report", db, noun, "--format", "json").output)
    shown = report[f"{noun}_table"]["rows"]
    if noun == "slices":
        main = next(r for r in results if "total_dur" in r["columns"])
        got = [dict(zip(main["columns"], row)) for row in main["rows"]]
        assert [(r["name"], r["count"], r["total_dur"]) for r in got] == [
            (r["name"], r["count"], r["total_dur"]) for r in shown
        ]
    else:
        main = next(r for r in results if "cpu_time" in r["columns"] and "pid" in r["columns"])
        got = [dict(zip(main["columns"], row)) for row in main["rows"]]
        assert [(r["pid"], r["name"], r["cpu_time"]) for r in got] == [
            (r["pid"], r["name"], r["cpu_time"]) for r in shown
        ]


def test_query_takes_comments_first_files_and_several_statements(demo_db, tmp_path):
    db = str(demo_db.path)
    slices = demo_db.connect().execute("SELECT count(*) FROM slice").fetchone()[0]
    assert query_json(db, "-- how many\nSELECT count(*) AS n FROM slice") == [{"columns": ["n"], "rows": [[slices]]}]
    two = "-- one\nSELECT 1 AS a;\n/* two; */ SELECT ';' AS b -- three;\n;\n-- only a comment;\n"
    assert query_json(db, two) == [{"columns": ["a"], "rows": [[1]]}, {"columns": ["b"], "rows": [[";"]]}]
    path = tmp_path / "q.sql"
    path.write_text(two, encoding="utf-8")
    assert query_json(db, "--file", str(path)) == query_json(db, "-", input=two)
    text = invoke("query", db, two)
    assert text.exit_code == 0 and text.output == "a\n-\n1\n\nb\n-\n;\n"
    # Bound values: --param for every statement, a `-- :name = "value"` comment for the statement after it.
    bound = '-- :n = "Raster"\nSELECT count(*) AS c FROM slice WHERE name = :n;\nSELECT :n AS v'
    assert query_json(db, bound, "-p", "n", "URLRequest")[1] == {"columns": ["v"], "rows": [["URLRequest"]]}
    assert query_json(db, bound.split(";")[0])[0]["rows"] == [[48]]


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "no SQL given"),
        (["--bogus"], "no such option: --bogus"),
        (["-- just a comment"], "no SQL statement"),
        (["SELECT :missing"], "SQL error"),
        (["SELECT 1", "--file", "q.sql"], "not both"),
        (["--file", "bad.sql"], "bad.sql: not UTF-8 text"),
        (["--file", "nosuch.sql"], "nosuch.sql: cannot read the SQL: No such file or directory"),
    ],
)
def test_bad_query_input_is_one_line(demo_db, tmp_path, args, message):
    (tmp_path / "q.sql").write_text("SELECT 1")
    (tmp_path / "bad.sql").write_bytes(b"\xff\xfe SELECT 1")
    args = [str(tmp_path / a) if a.endswith(".sql") else a for a in args]
    result = invoke("query", str(demo_db.path), *args)
    assert result.exit_code == 1 and message in result.output and len(result.output.strip().splitlines()) == 1


def test_sql_on_standard_input_that_is_not_utf8_is_one_line(demo_db):
    result = invoke("query", str(demo_db.path), "-", input=b"\xff\xfe SELECT 1")
    assert result.exit_code == 1
    assert result.output == "Error: standard input: not UTF-8 text (invalid start byte at byte 0)\n"


def test_next_steps_run_as_printed(demo_db, tmp_path):
    """The commands under Next: are runnable in bash as printed, the SQL step included (a `query` of its rows)."""
    db = tmp_path / "demo copy.db"  # a path that needs quoting
    db.write_bytes(Path(demo_db.path).read_bytes())
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    steps = []
    for args in (["slices"], []):
        text = invoke("report", str(db), *args, "--width", "0").output
        steps += [line.removeprefix("Next:").strip() for line in text.split("Next:", 1)[1].splitlines()]
    assert len([s for s in steps if s.endswith("| datasette perfetto query " + shlex.quote(str(db)) + " -")]) == 2
    for command in steps:
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env)
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("counters", "timeline", "--name", "MemoryUsage", "--buckets", "10"),
        ("slices", "histogram", "--name", "URLRequest"),
        ("scheduling", "timeline"),
        ("counters", "histogram", "--name", "IPCMessagesSent"),
    ],
)
def test_charts_fit_with_shorter_bars_and_whole_figures(demo_db, args):
    db = str(demo_db.path)
    bar_line = re.compile(r"(  .*) \|([# ]*)\| (.*)")
    whole = [bar_line.fullmatch(x) for x in invoke("report", db, *args, "--width", "0").output.splitlines()]
    fitted = [bar_line.fullmatch(x) for x in invoke("report", db, *args, "--width", "80").output.splitlines()]
    whole_bars, fitted_bars = [m for m in whole if m], [m for m in fitted if m]
    assert fitted_bars and len(fitted_bars) == len(whole_bars)
    assert max(len(m.group(0)) for m in whole_bars) > 80 or "timeline" not in args[1]
    # Each bar line keeps its label and figures whole; only the bar between the pipes is shorter.
    for m, o in zip(fitted_bars, whole_bars):
        assert len(m.group(0)) <= 80
        assert m.group(1) == o.group(1) and 10 <= len(m.group(2)) <= len(o.group(2)) == 40
        # A note listing items (the scheduling timeline's threads) drops its last items whole.
        note, original = m.group(3), o.group(3)
        assert note == original or (note.endswith(", …") and original.startswith(note[:-1]))
