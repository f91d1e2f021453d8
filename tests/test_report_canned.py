"""Every view's SQL as a Datasette canned query (`/{db}/{noun}_{view}`): its rows agree with the report's numbers.

Each canned query takes the report's flags as optional parameters with the report's syntax, so the
same query string drives both the report and the canned query here.
"""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing

import pytest
from conftest import datasette_with, served
from datasette.app import Datasette
from markupsafe import escape

from datasette_perfetto import schema
from datasette_perfetto.report.canned import canned_queries
from datasette_perfetto.report.format import offset
from datasette_perfetto.report.views import NOUNS

pytestmark = pytest.mark.web  # served by Datasette: ./dev test runs these on 0.65 and 1.0


async def both(ds: Datasette, db: str, noun: str, view: str, query: str) -> tuple[dict, list[dict]]:
    """The report's view message and the canned query's rows for the same flags."""
    report = await ds.client.get(f"/{db}/-/report/{noun}/{view}.json?{query}")
    assert report.status_code == 200, report.text
    canned = await ds.client.get(f"/{db}/{noun}_{view}.json?_shape=array&{query}")
    assert canned.status_code == 200, canned.text
    return report.json()[f"{noun}_{view}"], canned.json()


def test_every_view_over_trace_data_is_a_canned_query():
    registered = canned_queries()
    views = [(noun, view) for noun, views in NOUNS.items() for view in views.values()]
    assert len(views) >= 13
    for noun, view in views:
        assert view.canned_sql, f"{noun} {view.name} has no canned_sql"
        query = registered[f"{noun}_{view.name}".replace("-", "_")]
        assert query["sql"] == view.canned_sql
        # Its parameters are flags the view takes (top aside), so a report URL's query string fits it.
        assert set(query["params"]) <= view.flags | {"top"}, (noun, view.name, query["params"])


def test_no_canned_query_is_named_after_a_table():
    # Where a query and a table share a name, 0.65 serves the query and 1.0 the table.
    from datasette_perfetto import schema

    tables = {t.name for t in schema.TABLES + tuple(d.table for d in schema.DERIVED)} | {v.name for v in schema.VIEWS}
    assert not set(canned_queries()) & tables


@pytest.fixture
def demo(demo_db):
    return served(demo_db.path)


@pytest.fixture
def sched(sched_db):
    return served(sched_db.path)


# -- slices ---------------------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "query",
    [
        "",
        "top=40&sort=count",
        "thread=Cr*&time=0.5s,1.5s",
        # Narrow ranges: slices that start before them and overlap them count too.
        "time=0.9s,1.1s",
        "time=1.2s,1.25s&sort=max",
        "pid=100&min_count=5",
        "name=*Task*&min_duration=1ms&sort=max",
    ],
)
async def test_slices_table_rows(demo, query):
    report, canned = await both(demo, "demo", "slices", "table", query)
    assert [(r["name"], r["count"], r["self_dur"], r["total_dur"], r["max_dur"]) for r in canned] == [
        (r["name"], int(r["count"]), int(r.get("self_dur", 0)), int(r.get("total_dur", 0)), int(r.get("max_dur", 0)))
        for r in report["rows"]
    ]
    assert [r["percent_of_slice_time"] for r in canned] == [
        round(r.get("percent_of_slice_time", 0), 1) for r in report["rows"]
    ]
    assert canned and [r["max_ts"] for r in canned] == [int(r["max_instance"]["ts"]) for r in report["rows"]]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "query, scale",
    [
        ("name=Raster", "log"),  # 70us..8.9ms: log-spaced buckets
        ("name=URLRequest&buckets=7", "linear"),
        ("name=MessageLoop::RunTask&thread=Cr*&time=0.2s,1.8s&buckets=6", "linear"),
        ("name=ThreadPool::RunTask&pid=100&min_duration=2ms", "linear"),
        ("name=Raster&measure=self", "log"),
        ("name=MessageLoop::RunTask&thread=Cr*&time=0.2s,1.8s&buckets=6&measure=self", "linear"),
    ],
)
async def test_slices_histogram_buckets(demo, query, scale):
    report, canned = await both(demo, "demo", "slices", "histogram", query)
    assert report["scale"] == scale and {r["scale"] for r in canned} == {scale}
    assert [r["count"] for r in canned] == [int(b.get("count", 0)) for b in report["buckets"]]
    edges = [(b.get("low", 0), b.get("high", 0)) for b in report["buckets"]]
    assert [r["low"] for r in canned] == pytest.approx([low for low, _ in edges])
    assert [r["high"] for r in canned] == pytest.approx([high for _, high in edges])
    assert sum(r["count"] for r in canned) == int(report["stats"]["count"]) > 0


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "query",
    [
        "name=Raster",
        "name=Raster&time=0.5s,1.2s&buckets=7",
        "name=MessageLoop::RunTask&tid=100&buckets=50",
        "name=URLRequest&min_duration=50ms",
    ],
)
async def test_slices_timeline_buckets(demo, query):
    report, canned = await both(demo, "demo", "slices", "timeline", query)
    assert [(r["start_ts"], r["end_ts"], r["count"], r["total_dur"]) for r in canned] == [
        (int(b["start_ts"]), int(b["end_ts"]), int(b.get("count", 0)), int(b.get("total_dur", 0)))
        for b in report["buckets"]
    ]
    assert any(r["count"] for r in canned)


@pytest.mark.asyncio
async def test_slices_inspect_instances(demo, demo_db):
    report, canned = await both(demo, "demo", "slices", "inspect", "name=ThreadPool::RunTask&top=5")
    assert [r["id"] for r in canned] == [int(i["id"]) for i in report["instances"]]
    assert {r["matched"] for r in canned} == {int(report["matched"])} == {39}
    # ts at an instance's start (as report output prints it, to the microsecond): that instance.
    start = demo_db.one("SELECT start_ts FROM trace_bounds")
    sid, ts, tid = demo_db.rows(
        "SELECT s.id, s.ts, t.tid FROM slice s JOIN thread_track tt ON tt.id = s.track_id "
        "JOIN thread t USING (utid) WHERE s.name = 'Raster' ORDER BY s.dur DESC LIMIT 1"
    )[0]
    query = f"name=Raster&ts={offset(ts, start)}&tid={tid}"
    report, canned = await both(demo, "demo", "slices", "inspect", query)
    assert report["matched"] == 1 and int(report["slice"]["id"]) == sid
    assert [(r["id"], r["matched"]) for r in canned] == [(sid, 1)]
    # Without the thread, and in a time range: found from ts alone, or within the range.
    for query in (f"name=Raster&ts={offset(ts, start)}", "name=Raster&time=0.3s,1.3s&min_duration=1ms&top=3"):
        report, canned = await both(demo, "demo", "slices", "inspect", query)
        ids = [int(i["id"]) for i in report["instances"]] if "instances" in report else [int(report["slice"]["id"])]
        assert [r["id"] for r in canned] == ids and {r["matched"] for r in canned} == {int(report["matched"])}
    # ts inside an instance but at none's start: the one running then.
    query = "name=MessageLoop::RunTask&ts=1.025s&process=renderer"
    report, canned = await both(demo, "demo", "slices", "inspect", query)
    at = start + 1_025_000_000
    running = demo_db.rows(
        "SELECT s.id FROM slice s JOIN thread_track tt ON tt.id = s.track_id JOIN thread t "
        "USING (utid) JOIN process p USING (upid) WHERE s.name = 'MessageLoop::RunTask' "
        "AND p.name = 'renderer' AND s.ts <= ? AND s.ts + s.dur >= ?",
        (at, at),
    )
    assert [r["id"] for r in canned] == [int(report["slice"]["id"])] == [running[0][0]]


# -- scheduling -----------------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "query",
    [
        "top=50",
        "time=0.2s,0.4s&top=50",
        "cpu=1&sort=runnable",
        "group_by=process&sort=sleeping",
        "pid=1000&sort=name",
        "thread=*Worker*&time=0.5s,1s&min_duration=20ms",
        "cpu=0&time=0.1s,0.3s&top=3",
    ],
)
async def test_scheduling_summary_rows(sched, query):
    report, canned = await both(sched, "sched", "scheduling", "summary", query)
    assert [(r["name"], r["tid"] or 0, r["cpu_time"], r["runnable"], r["sleeping"]) for r in canned] == [
        (
            r.get("name", ""),
            int(r.get("tid", 0)),
            int(r.get("cpu_time", 0)),
            int(r.get("runnable", 0)),
            int(r.get("sleeping", 0)),
        )
        for r in report["rows"]
    ]
    assert canned and [r["percent_of_trace"] for r in canned] == [
        pytest.approx(r.get("percent_of_trace", 0), abs=0.051) for r in report["rows"]
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize("query", ["", "buckets=7", "tid=1002&cpu=1&time=0.1s,0.9s", "process=com.example.app"])
async def test_scheduling_timeline_load(sched, query):
    report, canned = await both(sched, "sched", "scheduling", "timeline", query)
    assert [(r["start_ts"], r["busy"]) for r in canned] == [
        (int(b["start_ts"]), int(b.get("total_dur", 0))) for b in report["buckets"]
    ]
    assert [r["load"] for r in canned] == pytest.approx([b.get("value", 0) for b in report["buckets"]])
    assert any(r["busy"] for r in canned)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "query",
    ["tid=1002&ts=0.3s", "thread=Worker-1&ts=0.55s", "tid=1000&ts=0.9s", "thread=RenderThread&pid=1000&ts=0.1s"],
)
async def test_scheduling_inspect_state_at_ts(sched, query):
    report, canned = await both(sched, "sched", "scheduling", "inspect", query)
    (here,) = [r for r in canned if r["at_ts"]]
    assert (here["tid"], here["state"], here["ts"], here["dur"]) == (
        int(report["tid"]),
        report["state"],
        int(report["state_ts"]),
        int(report["state_dur"]),
    )
    if here["state"] == "Running":
        assert (here["cpu"], here["end_state"] or "") == (int(report["cpu"]), report.get("end_state", ""))
    if here["state"] in ("S", "D"):  # a sleep: the kernel function it blocked in
        assert (here["blocked_function"] or "") == report.get("blocked_function", "")
    assert [r["ts"] for r in canned] == sorted(r["ts"] for r in canned) and len(canned) >= 3


# -- flags the report refuses ---------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "query, param, message",
    [
        ("slices_table?time=2s,1s", "time", "time: the end (1s) must be after the start (2s)"),
        ("slices_table?time=oops", "time", "time: expected START,END"),
        ("slices_table?top=abc", "top", "top: expected a whole number, got 'abc'"),
        ("slices_histogram?name=Raster&buckets=0", "buckets", "buckets: "),
        ("slices_inspect?name=Raster&ts=abc", "ts", "ts: expected a time such as"),
        ("slices_table?min_duration=5parsecs", "min_duration", "min_duration: unknown unit 'parsecs'"),
        ("slices_table?dim=rank", "dim", "dim: expected NAME=VALUE"),
        # A time range whose end, absolute ns, lies before its start, an offset: the trace's start decides.
        ("slices_table?time=1s,5", "time", "time: the end (5) must be after the start (1s)"),
    ],
)
async def test_a_flag_the_report_refuses_is_refused_as_the_report_refuses_it(demo, query, param, message):
    # Not SQLite's "user-defined function raised exception" (nor rows for a flag no function reads, such as
    # buckets=0): the report's message naming the flag, in each format.
    name, _, flags = query.partition("?")
    report = await demo.client.get(f"/demo/-/report/{name.replace('_', '/')}.json?{flags}")
    assert report.status_code == 400 and report.json()["error"].startswith(message), report.text
    page = await demo.client.get(f"/demo/{name}.json?{flags}")
    assert page.status_code == 400
    assert page.json() == {**report.json(), "status": 400}
    html = await demo.client.get(f"/demo/{query}")
    assert html.status_code == 400 and html.headers["content-type"].startswith("text/html")
    assert escape(report.json()["error"]) in html.text
    csv = await demo.client.get(f"/demo/{name}.csv?{flags}")
    assert (csv.status_code, csv.text) == (400, f"error: {report.json()['error']}\n")
    good = await demo.client.get(f"/demo/{name}.json?{flags.replace(param, 'unused')}&_shape=array")
    assert good.status_code == 200, good.text


@pytest.mark.asyncio
async def test_flags_are_checked_only_once_datasette_lets_the_actor_run_the_query(demo_db):
    # A database the actor may not see answers 403 whatever the flags say (no 400 telling it exists).
    ds = datasette_with([demo_db.path], {"databases": {"demo": {"allow": {"id": "root"}}}})
    assert (await ds.client.get("/demo/slices_table.json?time=2s,1s")).status_code == 403
    root = {"ds_actor": ds.sign({"a": {"id": "root"}}, "actor")}
    refused = await ds.client.get("/demo/slices_table.json?time=2s,1s", cookies=root)
    assert refused.status_code == 400 and refused.json()["parameter"] == "time"
    assert (await ds.client.get("/nothing/slices_table.json?time=2s,1s")).status_code == 404


@pytest.mark.asyncio
async def test_a_database_from_an_older_version_is_told_to_ingest_again(demo_db, tmp_path):
    # The canned slices_table reads the name cells' running totals (a range's whole cells are two rows a name); a
    # database written before they existed cannot compile it: the page says so, not SQLite's "no such column".
    old = tmp_path / "old.db"
    shutil.copy(demo_db.path, old)
    with closing(sqlite3.connect(old)) as conn:
        for column in schema.SLICE_CELL_TOTALS:
            conn.execute(f"ALTER TABLE report_slice_name_cell DROP COLUMN cum_{column}")
        conn.commit()
    ds = datasette_with([old])
    page = await ds.client.get("/old/slices_table.json?time=1s,2s")
    assert page.status_code == 400, page.text
    error = page.json()["error"]
    assert error.startswith("slices_table: this database was written by an older version of datasette-perfetto")
    assert "no such column: hi.cum_starting" in error and error.endswith("ingest the trace again to run this query")
    html = await ds.client.get("/old/slices_table")
    assert html.status_code == 400 and escape(error) in html.text
    # Its other canned queries, which read nothing it lacks, still answer; and so does the current database.
    assert (await ds.client.get("/old/slices_histogram.json?name=Raster&_shape=array")).status_code == 200
    current = await served(demo_db.path).client.get("/demo/slices_table.json?time=1s,2s&_shape=array")
    assert current.status_code == 200 and current.json()
