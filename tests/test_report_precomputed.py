"""The report's fast paths over aggregates precomputed at import give the same numbers as reading the rows.

A timeline of the whole trace is built from per-cell aggregates (report_slice_track_cell for slice names
with many instances, report_sched_cell for CPU time); the same timeline asked for with `time` set to the
trace's own bounds is built from the slices and sched rows, so the two must agree bucket for bucket.
"""

from __future__ import annotations

import random

import pytest
from conftest import TraceDB, get_json, ingest_named, served
from datasette.app import Datasette

from datasette_perfetto.report.base import percentile_index
from datasette_perfetto.schema import REPORT_CELL_MIN_COUNT
from datasette_perfetto.trace_builder import TraceBuilder

pytestmark = pytest.mark.web  # served by Datasette: ./dev test runs these on 0.65 and 1.0


def heavy_trace(ticks: int = 21_000) -> bytes:
    """Enough "Tick" slices for per-cell aggregates, on two threads: durations from 0 to 0.9ms, every
    7th with a nested Tick (time covered twice), one never ending; and one "Other", last."""
    rng = random.Random(5)
    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(10, "app")
    main = seq.thread(10, 11, "main")
    worker = seq.thread(10, 12, "worker")
    ts = {main: 1_000, worker: 1_500}
    for i in range(ticks):
        track = main if i % 3 else worker
        dur = rng.choice((0, 7, 300, 40_000, 900_000))
        seq.slice_begin(ts[track], track, "Tick")
        if i % 7 == 0:
            seq.slice_begin(ts[track] + 1, track, "Tick")
            seq.slice_end(ts[track] + 1 + dur // 2, track)
        seq.slice_end(ts[track] + dur, track)
        ts[track] += dur + rng.randint(1, 5_000)
    seq.slice_begin(ts[main], main, "Tick")
    last = max(ts.values()) + 100
    seq.slice_begin(last, worker, "Other")
    seq.slice_end(last + 10, worker)
    return b.to_bytes()


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    return ingest_named(tmp_path_factory, heavy_trace(), "heavy")


def ran(data: dict, table: str) -> bool:
    return any(table in q["sql"] for q in data["queries"])


async def cells_and_rows(ds: Datasette, url: str, bounds: tuple[int, int], table: str, message: str):
    """The view from per-cell aggregates and from the rows (time = the trace's bounds), as JSON."""
    cells = await get_json(ds, url)
    rows = await get_json(ds, f"{url}{'&' if '?' in url else '?'}time={bounds[0]},{bounds[1]}")
    assert ran(cells, table) and not ran(rows, table)
    return cells[message], rows[message]


async def tick_view(heavy, view: str, query: str, table: str) -> tuple[dict, dict]:
    """slices `view` of Tick in the heavy trace, from the precomputed `table` and from the rows."""
    (bounds,) = TraceDB(heavy).rows("SELECT start_ts, end_ts FROM trace_bounds")
    url = f"/heavy/-/report/slices/{view}.json?name=Tick{query}"
    return await cells_and_rows(served(heavy), url, bounds, table, f"slices_{view}")


@pytest.mark.asyncio
@pytest.mark.parametrize("query", ["", "&thread=main", "&buckets=10", "&buckets=40&pid=10"])
async def test_slices_timeline_from_cells_is_the_timeline_from_slices(heavy, query):
    cells, rows = await tick_view(heavy, "timeline", query, "report_slice_track_cell")
    assert cells["buckets"] == rows["buckets"]
    counted = sum(int(b.get("count", 0)) for b in cells["buckets"])
    assert counted == (24_001 if "thread" not in query else 16_001)  # the unfinished one counts too
    assert all(b.get("dominant") for b in cells["buckets"] if b.get("total_dur"))


@pytest.mark.asyncio
@pytest.mark.parametrize("query", ["", "&thread=main", "&buckets=100", "&time=0.5s,2s"])
async def test_canned_slices_timeline_from_cells_or_slices_is_the_reports(heavy, query):
    ds = served(heavy)
    report = (await get_json(ds, f"/heavy/-/report/slices/timeline.json?name=Tick{query}"))["slices_timeline"]
    canned = await get_json(ds, f"/heavy/slices_timeline.json?_shape=array&name=Tick{query}")
    assert [(r["start_ts"], r["count"], r["total_dur"]) for r in canned] == [
        (int(b["start_ts"]), int(b.get("count", 0)), int(b.get("total_dur", 0))) for b in report["buckets"]
    ]


@pytest.mark.asyncio
async def test_slices_timeline_reads_slices_when_buckets_are_not_whole_cells(heavy):
    ds = served(heavy)
    data = await get_json(ds, "/heavy/-/report/slices/timeline.json?name=Tick&buckets=100")  # 50ms buckets
    assert int(data["slices_timeline"]["bucket_dur"]) == 50_000_000
    assert not ran(data, "report_slice_track_cell")
    assert sum(int(b.get("count", 0)) for b in data["slices_timeline"]["buckets"]) == 24_001


@pytest.mark.asyncio
@pytest.mark.parametrize("query", ["", "&buckets=3", "&buckets=60", "&buckets=1"])
async def test_slices_histogram_from_duration_ranks_is_the_histogram_from_slices(heavy, query, monkeypatch):
    """Tick's durations repeat (runs far longer than a rank step), include zeros (a bucket of their own on a
    log scale) and one unfinished instance. (The rows read over the whole trace as a time range, not through
    its complement, which reads the ranks too.)"""
    from datasette_perfetto.report.views import slices

    monkeypatch.setattr(slices, "COMPLEMENT_SHARE", -1)
    ranks, rows = await tick_view(heavy, "histogram", query, "report_slice_name_dur_rank")
    assert ranks["buckets"] == rows["buckets"] and ranks["scale"] == rows["scale"]
    assert sum(int(b.get("count", 0)) for b in ranks["buckets"]) == 24_001


def test_duration_ranks_sample_every_step_of_a_frequent_name(heavy):
    import sqlite3

    from datasette_perfetto.schema import REPORT_RANK_STEP

    conn = sqlite3.connect(heavy)
    durs = [d for (d,) in conn.execute("SELECT dur FROM slice WHERE name = 'Tick' AND dur >= 0 ORDER BY dur")]
    want = sorted({(durs[i], sum(1 for d in durs if d <= durs[i])) for i in range(0, len(durs), REPORT_RANK_STEP)})
    assert conn.execute("SELECT dur, at_most FROM report_slice_name_dur_rank WHERE name = 'Tick'").fetchall() == want
    assert conn.execute("SELECT count(*) FROM report_slice_name_dur_rank WHERE name != 'Tick'").fetchone() == (0,)


def test_only_names_with_many_slices_get_cells(heavy):
    import sqlite3

    conn = sqlite3.connect(heavy)
    names = conn.execute("SELECT DISTINCT name FROM report_slice_track_cell").fetchall()
    counts = dict(conn.execute("SELECT name, count FROM report_slice_name").fetchall())
    assert names == [("Tick",)] and counts["Tick"] >= REPORT_CELL_MIN_COUNT > counts["Other"]
    # Per track, the cells hold every instance once and the time the instances cover.
    for track_id, count, covered in conn.execute(
        "SELECT track_id, sum(count), sum(covered) FROM report_slice_track_cell GROUP BY track_id"
    ):
        want = conn.execute(
            # An unfinished slice (dur -1) lasts to the end of the trace.
            "SELECT count(*), sum(min(CASE WHEN dur < 0 THEN (SELECT end_ts FROM trace_bounds) ELSE ts + dur END, "
            "(SELECT end_ts FROM trace_bounds)) - ts) "
            "FROM slice WHERE name = 'Tick' AND track_id = ?",
            (track_id,),
        ).fetchone()
        assert (count, covered) == want


@pytest.mark.asyncio
@pytest.mark.parametrize("query", ["", "?buckets=10", "?pid=1000", "?buckets=50&thread=Worker*"])
async def test_scheduling_timeline_from_cells_is_the_timeline_from_sched(sched_db, query):
    ds = served(sched_db.path)
    bounds = sched_db.rows("SELECT start_ts, end_ts FROM trace_bounds")[0]
    cells, rows = await cells_and_rows(
        ds, f"/sched/-/report/scheduling/timeline.json{query}", bounds, "report_sched_cell", "scheduling_timeline"
    )
    assert cells["buckets"] == rows["buckets"] and any(b.get("total_dur") for b in cells["buckets"])


@pytest.mark.asyncio
async def test_scheduling_timelines_of_many_buckets_read_the_finer_sched_cells(sched_db):
    # report_sched_cell is sched_cell_dur wide (a tenth of cell_dur): timelines of more buckets than the default
    # are whole cells too, with the buckets read from sched.
    from datasette_perfetto.report.views.slices import nice_ceil

    ds = served(sched_db.path)
    start, end, cell, sched_cell = sched_db.rows(
        "SELECT start_ts, end_ts, cell_dur, sched_cell_dur FROM trace_bounds, report_grid"
    )[0]
    assert sched_cell * 10 == cell
    read_cells = []
    for buckets in (20, 50, 100, 200, 300, 500):
        width = nice_ceil(max(end - start, 1) / buckets)
        if width % sched_cell:
            continue
        cells, rows = await cells_and_rows(
            ds,
            f"/sched/-/report/scheduling/timeline.json?buckets={buckets}",
            (start, end),
            "report_sched_cell",
            "scheduling_timeline",
        )
        assert cells["buckets"] == rows["buckets"], buckets
        read_cells.append(width % cell != 0)
    assert True in read_cells  # a bucket width of whole sched cells that cell_dur does not divide


def test_the_cell_grid_divides_a_default_timeline_bucket(demo_db, sched_db, heavy):
    from datasette_perfetto.report.views.slices import nice_ceil

    for db in (demo_db.path, sched_db.path, heavy):
        import sqlite3

        conn = sqlite3.connect(db)
        (start, end), (cell,) = (
            conn.execute("SELECT start_ts, end_ts FROM trace_bounds").fetchone(),
            conn.execute("SELECT cell_dur FROM report_grid").fetchone(),
        )
        bucket = nice_ceil(max(end - start, 1) / 20)
        assert bucket % cell == 0 and bucket // cell <= 25, (db, bucket, cell)


# -- the slices table of a thread, process or track -------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "query, where, params",
    [
        ("thread=Cr*", "t.name GLOB ?", ("Cr*",)),
        ("pid=100", "p.pid = ?", (100,)),
        ("tid=201&name=*Frame*", "t.tid = ? AND s.name GLOB ?", (201, "*Frame*")),
    ],
)
async def test_table_of_threads_from_per_track_aggregates_matches_sql(demo_db, query, where, params):
    ds = served(demo_db.path)
    data = await get_json(ds, f"/demo/-/report/slices.json?{query}&top=100")
    assert ran(data, "report_slice_track_name")
    rows = data["slices_table"]["rows"]
    # Ranked by self time: each slice's duration less its direct children's.
    want = demo_db.rows(
        f"""SELECT s.name, count(*), sum(max(s.dur, 0)), max(s.dur),
               sum(s.dur - coalesce((SELECT sum(k.dur) FROM slice k WHERE k.parent_id = s.id), 0)) AS self
        FROM slice s
        JOIN track tr ON tr.id = s.track_id LEFT JOIN thread t ON t.id = tr.utid
        LEFT JOIN process p ON p.id = coalesce(tr.upid, t.upid)
        WHERE {where} GROUP BY s.name ORDER BY 5 DESC, 1""",
        params,
    )
    assert [
        (r["name"], int(r["count"]), int(r.get("total_dur", 0)), int(r.get("max_dur", 0)), int(r.get("self_dur", 0)))
        for r in rows
    ] == want
    for r in rows:  # the longest instance is one of that name, that long, in scope
        assert r["max_instance"].get("dur") == r.get("max_dur") and r["max_instance"]["name"] == r["name"]
    assert int(data["slices_table"]["total_slices"]) == sum(n for _, n, _, _, _ in want)


@pytest.mark.asyncio
async def test_narrowed_table_ranks_percentiles_within_a_budget(heavy):
    ds = served(heavy)
    durs = [
        d
        for (d,) in TraceDB(heavy).rows(
            "SELECT max(s.dur, 0) FROM slice s JOIN thread_track tt ON tt.id = s.track_id "
            "JOIN thread t USING (utid) WHERE s.name = 'Tick' AND t.name = 'main' ORDER BY 1",
        )
    ]
    data = await get_json(ds, "/heavy/-/report/slices.json?thread=main")
    (tick,) = data["slices_table"]["rows"]
    assert len(durs) == int(tick["count"]) < 20_000
    assert {k: int(tick["stats"].get(k, 0)) for k in ("min", "p50", "p95", "p99", "max")} == {
        "min": durs[0],
        "max": durs[-1],
        **{f"p{p}": durs[percentile_index(len(durs), p)] for p in (50, 95, 99)},
    }
    # The whole process has more Ticks than the page ranks: no minimum or percentiles, and a footnote.
    data = await get_json(ds, "/heavy/-/report/slices.json?pid=10")
    tick, other = data["slices_table"]["rows"]
    assert (tick["name"], int(tick["count"]), int(tick["stats"]["count"])) == ("Tick", 24_001, 24_001)
    assert int(tick["stats"]["max"]) == int(tick["max_dur"]) and int(tick["stats"]["total"]) == int(tick["total_dur"])
    assert [tick["stats"][k] for k in ("min", "p50", "p95", "p99")] == [0, 0, 0, 0]  # not computed
    assert int(other["stats"]["p50"]) == 10
    (note,) = [f for f in data["footnotes"] if "percentiles" in f["text"]]
    assert "1 name" in note["text"] and "Tick" in note["text"]
    assert note["url"] == "/heavy/-/report/slices/histogram?pid=10&name=Tick"
    histogram = await get_json(ds, note["url"].replace("histogram?", "histogram.json?"))
    assert (
        int(histogram["slices_histogram"]["stats"]["count"]) == 24_001 and histogram["slices_histogram"]["stats"]["p99"]
    )


# -- scheduling summary on one CPU -------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_summary_on_one_cpu_keeps_each_threads_whole_runnable_and_sleeping_time(sched_db):
    ds = served(sched_db.path)
    whole = {
        r["tid"]: r
        for r in (await get_json(ds, "/sched/-/report/scheduling.json?top=50"))["scheduling_summary"]["rows"]
    }
    data = await get_json(ds, "/sched/-/report/scheduling.json?cpu=1&top=50")
    assert ran(data, "report_thread_sched")
    rows = data["scheduling_summary"]["rows"]
    ran_there = {
        tid
        for (tid,) in sched_db.rows(
            "SELECT DISTINCT t.tid FROM sched s JOIN thread t USING (utid) WHERE s.cpu = 1 AND s.utid != 0"
        )
    }
    assert {int(r["tid"]) for r in rows} == ran_there and len(ran_there) >= 3
    for r in rows:
        assert (r["runnable"], r["sleeping"]) == (whole[r["tid"]]["runnable"], whole[r["tid"]]["sleeping"])
