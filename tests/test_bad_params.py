"""Parameter values at and past every limit: huge glob patterns, numbers of thousands of digits, times that
overflow a float or a 64-bit timestamp. Each is a 400 naming the parameter on the web (a JSON error object for
`.json`) and exit 1 with one line on the command line; never a 500 or a traceback."""

from __future__ import annotations

import json
import sqlite3
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from conftest import connect_with_functions, report_of, served
from datasette.cli import cli

from datasette_perfetto.report.scope import FLAGS, MAX_PATTERN_BYTES, ReportError, Scope
from datasette_perfetto.report.views import NOUNS

DIGITS = "9" * 5000  # past Python's 4,300-digit limit for int()
INF_SECONDS = "9" * 310 + "s"  # float("9" * 310) is inf
INT64_MAX = str((1 << 63) - 1)
LONG = "x" * 50_001  # past SQLite's 50,000-byte LIKE/GLOB pattern limit

# (path, the parameter, its value, other flags the view needs): each a 400 naming the parameter.
NAME = "Raster"  # a slice name of the demo
CASES = [
    ("slices", "process", LONG, {}),
    ("slices", "thread", LONG, {}),
    ("slices", "track", LONG, {}),
    ("slices", "name", LONG, {}),
    ("slices", "name", "*" * 50_001, {}),
    ("slices", "name", "é" * 25_001, {}),  # 50,002 bytes in UTF-8
    ("counters/timeline", "name", LONG, {}),
    ("slices/inspect", "ts", DIGITS, {"name": NAME}),
    ("slices/inspect", "ts", "-" + DIGITS, {"name": NAME}),
    ("slices/inspect", "ts", INF_SECONDS, {"name": NAME}),
    ("slices/inspect", "ts", "1" + "0" * 400 + ".5ms", {"name": NAME}),
    ("slices/inspect", "ts", "9223372036854775808", {"name": NAME}),
    # In range as an offset, past 2^63 once the trace start (about 1 s) is added.
    ("slices/inspect", "ts", "9223372036.8s", {"name": NAME}),
    ("slices", "min_duration", DIGITS, {}),
    ("slices", "min_duration", INF_SECONDS, {}),
    ("slices", "time", f"0,{DIGITS}", {}),
    ("slices", "time", f"{INF_SECONDS},1s", {}),
    ("slices", "time", f"5h,1.{DIGITS}h", {}),  # a fine float (1.99...h), but before the start
    ("slices", "top", DIGITS, {}),
    ("slices", "pid", DIGITS, {}),
    ("slices", "tid", "0" * 5000 + "1" * 11, {}),
    ("scheduling", "cpu", DIGITS, {}),
    ("slices", "min_count", DIGITS, {}),
    ("slices/timeline", "buckets", DIGITS, {"name": NAME}),
    ("slices", "sort", LONG, {}),
    ("scheduling", "group_by", LONG, {}),
    ("slices/histogram", "measure", "total", {"name": NAME}),
]
IDS = [f"{path}-{param}-{len(value)}-{value[:1]}" for path, param, value, _ in CASES]
# httpx refuses a URL over 64 KiB: the values that %-escape to three characters a byte are for the CLI only.
WEB_CASES = [(c, i) for c, i in zip(CASES, IDS) if len(quote(c[2])) < 60_000]


@pytest.fixture
def demo_ds(demo_db):
    return served(demo_db.path)


@pytest.mark.web
@pytest.mark.asyncio
@pytest.mark.parametrize("path, param, value, more", [c for c, _ in WEB_CASES], ids=[i for _, i in WEB_CASES])
async def test_web_answers_400_naming_the_parameter(demo_ds, path, param, value, more):
    url = f"/demo/-/report/{path}"
    params = {**more, param: value}
    r = await demo_ds.client.get(url + ".json", params=params)
    assert r.status_code == 400, r.text[:300]
    error = r.json()
    assert error["ok"] is False and error["parameter"] == param, error
    assert error["error"].startswith(param + ":") and len(error["error"]) < 300  # a huge value is not echoed
    text = await demo_ds.client.get(url + ".txt", params=params)
    assert text.status_code == 400 and text.text.startswith(f"error: {param}:")
    html = await demo_ds.client.get(url, params=params)
    assert html.status_code == 400 and param in html.text


def cli_report(*args: str):
    return CliRunner().invoke(cli, ["perfetto", "report", *args])


@pytest.mark.parametrize("path, param, value, more", CASES, ids=IDS)
def test_cli_exits_1_with_one_line(demo_db, path, param, value, more):
    args = [str(demo_db.path), *path.split("/")]
    for key, v in {**more, param: value}.items():
        args += [f"--{key.replace('_', '-')}", v]
    result = cli_report(*args)
    assert result.exit_code == 1, result.output[:300]
    assert result.output.startswith(f"Error: {param}:") and result.output.count("\n") == 1, result.output[:300]
    assert "Traceback" not in result.output and len(result.output) < 300
    as_json = cli_report(*args, "--format", "json")
    assert as_json.exit_code == 1 and json.loads(as_json.output)["parameter"] == param


def test_cli_value_that_is_not_utf8(demo_db):
    # A non-UTF-8 argument reaches Python as a surrogate escape, which SQLite cannot bind.
    result = cli_report(str(demo_db.path), "slices", "--name", "\udcff")
    assert result.exit_code == 1 and result.output == "Error: name: the value is not valid UTF-8 text\n"


def test_the_pattern_limit_is_sqlites():
    assert sqlite3.connect(":memory:").getlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH) == MAX_PATTERN_BYTES


def test_a_pattern_at_the_limit_runs(demo_db):
    # 50,000 bytes: SQLite matches it (no slice has this name), so the report answers; one more byte is a 400.
    at_limit = "R" + "?" * (MAX_PATTERN_BYTES - 1)
    result = report_of(demo_db.path, "slices", "table", {"name": at_limit})
    assert list(result.report.slices_table.rows) == []
    with pytest.raises(ReportError) as e:
        Scope.parse({"name": at_limit + "?"})
    assert e.value.param == "name"


@pytest.mark.parametrize(
    "text, ns",
    [
        (INT64_MAX, (1 << 63) - 1),
        ("-" + INT64_MAX, -((1 << 63) - 1)),
        ("0" * 5000 + "42", 42),  # leading zeros are no digits of the value
        ("9223372036s", 9_223_372_036_000_000_000),
        ("-" + "0" * 5000 + "1.5us", -1500),
        ("0." + "0" * 5000 + "1s", 0),
    ],
)
def test_times_in_range_parse(text, ns):
    assert Scope.parse({"ts": text}).ts.ns == ns


def test_every_view_takes_times_at_the_ends_of_int64(demo_db):
    """Valid values at the edges of a 64-bit timestamp pass parsing; the views' own arithmetic on them (range
    lengths, bucket widths) must still answer a report or a ReportError, never overflow a bound parameter."""
    conn = connect_with_functions(demo_db.path)
    name = {"slices": NAME, "counters": "MemoryUsage"}
    edge = [
        {"time": f"-{INT64_MAX},{INT64_MAX}"},
        {"time": f"{(1 << 63) - 2},{INT64_MAX}"},
        {"ts": INT64_MAX},
        {"ts": f"-{INT64_MAX}"},
        {"min_duration": INT64_MAX},
    ]
    from datasette_perfetto.report.base import Linker
    from datasette_perfetto.report.engine import run_report
    from datasette_perfetto.report.render import to_json, to_text

    try:
        answered = 0
        for noun, views in NOUNS.items():
            for view in views:
                for flags in edge:
                    if "ts" in flags and view != "inspect":
                        continue
                    given = {**flags}
                    if view in ("histogram", "timeline", "inspect") and noun in name:
                        given["name"] = name[noun]
                    if view == "inspect" and "ts" not in given:
                        given["ts"] = "1s"
                    try:
                        result = run_report(conn, noun, view, given, Linker(None, "t.db"))
                    except ReportError as e:
                        assert e.param is not None, (noun, view, given, e.message)
                        continue
                    to_json(result), to_text(result)
                    answered += 1
        assert answered > 20
    finally:
        conn.close()


def test_every_flag_is_checked():
    """Each flag, given a 50,001-character value, is refused at parsing with its name."""
    for flag in FLAGS:
        with pytest.raises(ReportError) as e:
            Scope.parse({flag: "1" * 50_001})
        assert e.value.param == flag


# -- the tracks list ---------------------------------------------------------------------------------------


@pytest.mark.web
@pytest.mark.asyncio
@pytest.mark.parametrize(
    "param, value",
    [("name", "x" * 49_999), ("name", "_" * 25_000), ("limit", DIGITS), ("offset", DIGITS), ("sort", LONG)],
)
async def test_tracks_list_answers_400_naming_the_parameter(demo_ds, param, value):
    r = await demo_ds.client.get("/demo/-/tracks.json", params={param: value})
    assert r.status_code == 400, r.text[:300]
    error = r.json()
    assert error["parameter"] == param and len(error["error"]) < 300, error
    html = await demo_ds.client.get("/demo/-/tracks", params={param: value})
    assert html.status_code == 400


@pytest.mark.web
@pytest.mark.asyncio
async def test_tracks_list_searches_a_long_name(demo_ds):
    # Within the limit, a long search runs (and finds nothing).
    r = await demo_ds.client.get("/demo/-/tracks.json", params={"name": "x" * 20_000})
    assert r.status_code == 200 and r.json()["total"] == 0


@pytest.mark.web
@pytest.mark.asyncio
async def test_details_page_with_a_huge_id_is_a_404(demo_ds):
    r = await demo_ds.client.get("/demo/-/slice/" + DIGITS + ".json")
    assert r.status_code == 404


# -- per-name percentiles precomputed at import (the load's cheap whole-trace slices pages) -------------------


def test_precomputed_percentiles_are_the_nearest_ranks(tmp_path):
    """report_slice_name_percentile against the ranks computed here from the slices: names with 1 to 60
    instances (every rounding case of percentile_index, halves to even included) and one unfinished slice."""
    import random

    from conftest import ingest_built

    from datasette_perfetto.report.base import percentile_index
    from datasette_perfetto.trace_builder import TraceBuilder

    rng = random.Random(3)
    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(10, "app")
    track = seq.thread(10, 11, "main")
    ts = 1_000
    for n in range(1, 61):
        for _ in range(n):
            seq.slice_begin(ts, track, f"n{n}")
            dur = rng.choice((0, 1, 5, 5, 100, rng.randint(1, 10_000)))
            seq.slice_end(ts + dur, track)
            ts += dur + 1
    seq.slice_begin(ts, track, "n3")  # never ends: dur -1, ranked as 0
    db = ingest_built(tmp_path, b)
    durs: dict[str, list[int]] = {}
    for name, dur in db.rows("SELECT name, max(dur, 0) FROM slice"):
        durs.setdefault(name, []).append(dur)
    table = {
        r[0]: r[1:]
        for r in db.rows("SELECT name, min_dur, p50_dur, p95_dur, p99_dur FROM report_slice_name_percentile")
    }
    assert set(table) == set(durs)
    for name, values in durs.items():
        values.sort()
        n = len(values)
        assert table[name] == (values[0], *(values[percentile_index(n, p)] for p in (50, 95, 99))), name


def test_whole_trace_stats_read_the_precomputed_percentiles(demo_db):
    """The slices table of the whole trace takes its percentiles from the table; the same names over a time
    range that is the whole trace rank the slices themselves: the figures agree."""
    whole = report_of(demo_db.path, "slices", "table", {"top": "5"})
    assert any("report_slice_name_percentile" in q.sql for q in whole.run.queries)
    start, end = demo_db.rows("SELECT start_ts, end_ts + 1 FROM trace_bounds")[0]
    ranged = report_of(demo_db.path, "slices", "table", {"top": "5", "time": f"{start},{end}"})
    assert not any("report_slice_name_percentile" in q.sql for q in ranged.run.queries)
    pairs = [(r.name, r.stats) for r in whole.report.slices_table.rows]
    assert pairs == [(r.name, r.stats) for r in ranged.report.slices_table.rows]
    assert all(stats.p99 >= stats.p50 >= stats.min for _, stats in pairs) and pairs[0][1].p50 > 0
