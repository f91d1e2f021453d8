"""The `slices` histogram, timeline and inspect views through Datasette's client, checked against SQL."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from urllib.parse import unquote

import pytest
from conftest import get_error, get_json, report_of, served

from datasette_perfetto.report.base import percentile_index
from datasette_perfetto.report.format import offset

pytestmark = pytest.mark.web  # served by Datasette: ./dev test runs these on 0.65 and 1.0


@pytest.fixture
def ds(demo_db):
    return served(demo_db.path)


def durations(db, name: str, where: str = "", params: tuple = ()) -> list[int]:
    return [
        r[0] for r in db.rows(f"SELECT max(s.dur, 0) FROM slice s WHERE s.name = ? {where} ORDER BY 1", (name, *params))
    ]


def expected_stats(durs: list[int]) -> dict:
    n = len(durs)
    return {
        "count": n,
        "total": sum(durs),
        "min": durs[0],
        "max": durs[-1],
        "avg": sum(durs) // n,
        **{f"p{p}": durs[percentile_index(n, p)] for p in (50, 95, 99)},
    }


def stats(message: dict) -> dict:
    return {k: int(v) for k, v in message.items()}


# -- histogram -----------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_histogram_buckets_and_percentiles_match_sql(ds, demo_db):
    data = (await get_json(ds, "/demo/-/report/slices/histogram.json?name=URLRequest&buckets=5"))["slices_histogram"]
    durs = durations(demo_db, "URLRequest")
    assert stats(data["stats"]) == expected_stats(durs)
    assert data["scale"] == "linear"  # 28ms..144ms: within two orders of magnitude
    buckets = data["buckets"]
    assert len(buckets) <= 5 and sum(int(b.get("count", 0)) for b in buckets) == len(durs)
    for i, b in enumerate(buckets):
        last = i == len(buckets) - 1
        inside = [d for d in durs if b.get("low", 0) <= d and (d <= b["high"] if last else d < b["high"])]
        assert int(b.get("count", 0)) == len(inside), b
    # Equal widths, on round numbers.
    widths = {b["high"] - b.get("low", 0) for b in buckets}
    assert widths == {25_000_000}


@pytest.mark.asyncio
async def test_histogram_of_widely_spread_durations_is_log_scaled_and_says_so(ds, demo_db):
    data = await get_json(ds, "/demo/-/report/slices/histogram.json?name=Raster")
    hist = data["slices_histogram"]
    durs = durations(demo_db, "Raster")
    assert durs[-1] / durs[0] > 100 and hist["scale"] == "log"
    assert stats(hist["stats"]) == expected_stats(durs)
    edges = [hist["buckets"][0]["low"]] + [b["high"] for b in hist["buckets"]]
    assert edges == [50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000]  # round: 1-2-5
    assert [int(b.get("count", 0)) for b in hist["buckets"]] == [
        sum(1 for d in durs if lo <= d < hi) for lo, hi in zip(edges, edges[1:])
    ]
    assert sum(int(b.get("count", 0)) for b in hist["buckets"]) == len(durs)
    page = (await ds.client.get("/demo/-/report/slices/histogram?name=Raster")).text
    assert "log-scale buckets" in page and "<svg" in page and "48" in page


def self_times(db, name: str) -> list[int]:
    """Each instance's duration less its direct children's (the demo's slices all end)."""
    return [
        r[0]
        for r in db.rows(
            """SELECT s.dur - coalesce((SELECT sum(k.dur) FROM slice k WHERE k.parent_id = s.id), 0)
               FROM slice s WHERE s.name = ? ORDER BY 1""",
            (name,),
        )
    ]


def range_totals(db, start: int, end: int) -> dict[str, tuple[int, int, int]]:
    """Per name, (count, time inside [start, end), self time there) of the slices with a part in the range, from
    the slice table alone: each clipped to the range, less its direct children clipped the same way."""
    (trace_end,) = db.rows("SELECT end_ts FROM trace_bounds")[0]
    slices = db.rows("SELECT id, parent_id, name, ts, dur FROM slice")

    def inside(ts: int, dur: int) -> int:
        return max(min(trace_end if dur < 0 else ts + dur, end) - max(ts, start), 0)

    children: dict[int, int] = {}
    for _, parent, _, ts, dur in slices:
        if parent is not None:
            children[parent] = children.get(parent, 0) + inside(ts, dur)
    totals: dict[str, tuple[int, int, int]] = {}
    for slice_id, _, name, ts, dur in slices:
        if ts < end and (trace_end if dur < 0 else ts + dur) >= start:
            count, total, self_time = totals.get(name, (0, 0, 0))
            d = inside(ts, dur)
            totals[name] = (count + 1, total + d, self_time + d - children.get(slice_id, 0))
    return totals


@pytest.mark.asyncio
@pytest.mark.parametrize("time", ["0.3s,0.9s", "0.95s,1.05s", "0s,1.5s"])
async def test_self_times_under_a_time_range_match_the_slices(demo_db, tmp_path, time):
    """A slice wholly inside the range takes its self time stored at import (report_slice_self); one crossing
    the range's edges sums its children clipped to the range. Both agree with the slice table, in the report,
    the canned query, and without the stored table (a database from before it: summed for every slice)."""
    (start,) = demo_db.rows("SELECT start_ts FROM trace_bounds")[0]
    lo, hi = (start + round(float(t[:-1]) * 1e9) for t in time.split(","))
    expected = range_totals(demo_db, lo, hi)
    crossing = demo_db.rows(
        "SELECT count(*) FROM slice WHERE ts < ? AND ts + dur > ? AND (ts < ? OR ts + dur > ?)", (hi, lo, lo, hi)
    )[0][0]
    stored = demo_db.rows("SELECT count(*) FROM report_slice_self")[0][0]
    assert stored == demo_db.rows("SELECT count(*) FROM slice WHERE dur >= 0")[0][0] and crossing > 0
    ds = served(demo_db.path)
    rows = (await get_json(ds, f"/demo/-/report/slices.json?time={time}&top=1000"))["slices_table"]["rows"]
    got = {r["name"]: (int(r["count"]), int(r["total_dur"]), int(r.get("self_dur", 0))) for r in rows}
    assert got == expected
    canned = (await ds.client.get(f"/demo/slices_table.json?_shape=array&_size=max&time={time}&top=1000")).json()
    assert {r["name"]: (r["count"], r["total_dur"], r["self_dur"]) for r in canned} == expected
    older = tmp_path / "older.db"
    older.write_bytes(demo_db.path.read_bytes())
    with closing(sqlite3.connect(older)) as conn:
        conn.execute("DROP TABLE report_slice_self")
        conn.commit()
    rows = (await get_json(served(older), f"/older/-/report/slices.json?time={time}&top=1000"))["slices_table"]["rows"]
    assert {r["name"]: (int(r["count"]), int(r["total_dur"]), int(r.get("self_dur", 0))) for r in rows} == expected


@pytest.mark.asyncio
async def test_histogram_of_self_times_matches_sql(ds, demo_db):
    url = "/demo/-/report/slices/histogram.json?name=MessageLoop::RunTask&measure=self&buckets=8"
    hist = (await get_json(ds, url))["slices_histogram"]
    selfs = self_times(demo_db, "MessageLoop::RunTask")
    assert selfs != durations(demo_db, "MessageLoop::RunTask")  # it has children: the two measures differ
    assert hist["measure"] == "self"
    assert stats(hist["stats"]) == expected_stats(selfs)
    buckets = hist["buckets"]
    for i, b in enumerate(buckets):
        last = i == len(buckets) - 1
        inside = [d for d in selfs if b.get("low", 0) <= d and (d <= b["high"] if last else d < b["high"])]
        assert int(b.get("count", 0)) == len(inside), b
    # Its total is the slices table's self time of the name.
    table = (await get_json(ds, "/demo/-/report/slices.json?name=MessageLoop::RunTask"))["slices_table"]
    assert int(table["rows"][0]["self_dur"]) == sum(selfs)
    page = (await ds.client.get(url.replace(".json", ""))).text
    assert "MessageLoop::RunTask self times" in page and "less its direct children" in page
    plain = (await get_json(ds, "/demo/-/report/slices/histogram.json?name=MessageLoop::RunTask"))["slices_histogram"]
    assert plain["measure"] == "dur" and stats(plain["stats"]) == expected_stats(
        durations(demo_db, "MessageLoop::RunTask")
    )


@pytest.mark.asyncio
async def test_histogram_scoped_to_a_thread(ds, demo_db):
    hist = (await get_json(ds, "/demo/-/report/slices/histogram.json?name=Raster&thread=Compositor"))[
        "slices_histogram"
    ]
    durs = durations(
        demo_db,
        "Raster",
        "AND s.track_id IN (SELECT tt.id FROM thread_track tt JOIN thread t USING (utid) WHERE t.name = ?)",
        ("Compositor",),
    )
    assert 0 < len(durs) < 48
    assert stats(hist["stats"]) == expected_stats(durs)


def bucket_counts(durs: list[int], buckets: list[dict]) -> list[int]:
    """Each bucket's instances: [low, high), the last one's high included; a log scale's zero bucket (0, 0)
    holds the zero durations, which no other bucket counts."""
    edges = [(int(b.get("low", 0)), int(b.get("high", 0))) for b in buckets]
    zero_bucket = edges[0] == (0, 0)
    out = []
    for i, (low, high) in enumerate(edges):
        if zero_bucket and i == 0:
            out.append(sum(1 for d in durs if d == 0))
            continue
        last = i == len(edges) - 1
        out.append(sum(1 for d in durs if (d > 0 or not zero_bucket) and low <= d and (d < high or last and d == high)))
    return out


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "thread, name, driver",
    [
        ("Compositor", "Raster", "name"),  # 48 Raster slices, 100 on the thread: the name index drives
        ("ThreadPoolBackgroundWorker", "Raster", "owner"),  # 44 slices on the thread, fewer than 48
    ],
)
async def test_histogram_under_an_owner_matches_sql_whichever_index_drives(ds, demo_db, thread, name, driver):
    """Under an owner's scope, buckets are counted by ranges of the (name, dur) index when the name drives the
    scan; when the owner's tracks drive it, their instances are read once and every figure computed from them
    (each query would read all their slices again: seconds on a gigabyte trace)."""
    data = await get_json(ds, f"/demo/-/report/slices/histogram.json?name={name}&thread={thread}&buckets=4")
    hist = data["slices_histogram"]
    durs = durations(
        demo_db,
        name,
        "AND s.track_id IN (SELECT tt.id FROM thread_track tt JOIN thread t USING (utid) WHERE t.name = ?)",
        (thread,),
    )
    assert stats(hist["stats"]) == expected_stats(durs)
    assert [int(b.get("count", 0)) for b in hist["buckets"]] == bucket_counts(durs, hist["buckets"])
    start = demo_db.one("SELECT start_ts FROM trace_bounds")
    longest_ts = demo_db.one(
        "SELECT s.ts FROM slice s JOIN thread_track tt ON tt.id = s.track_id JOIN thread t USING (utid)"
        " WHERE s.name = ? AND t.name = ? ORDER BY s.dur DESC, s.id DESC LIMIT 1",
        (name, thread),
    )
    (longest,) = [step["url"] for step in data["next_steps"] if step["label"].startswith(f"The longest {name} (")]
    assert f"ts={offset(longest_ts, start)}" in unquote(longest)
    sql = {q["purpose"]: q["sql"] for q in data["queries"]}
    read_once = [p for p in sql if p.startswith("the instances in scope with the duration each counts for")]
    if driver == "name":
        assert "UNION ALL" in sql["instances per bucket"] and not read_once
    else:
        assert read_once and "instances per bucket" not in sql and "the longest instance" in sql


@pytest.mark.asyncio
async def test_single_series_views_need_exactly_one_name(ds):
    for view in ("histogram", "timeline", "inspect"):
        error = await get_error(ds, f"/demo/-/report/slices/{view}.json?name=M*")
        assert error["parameter"] == "name"
        assert error["options"] == ["MessageLoop::RunTask", "Mojo::Dispatch"]
        assert "MessageLoop::RunTask, Mojo::Dispatch" in error["error"]
        missing = await get_error(ds, f"/demo/-/report/slices/{view}.json")
        assert missing["parameter"] == "name" and "needs name" in missing["error"]
        unknown = await get_error(ds, f"/demo/-/report/slices/{view}.json?name=NoSuchSlice")
        assert "no slice name matches 'NoSuchSlice'" in unknown["error"]
    page = await ds.client.get("/demo/-/report/slices/histogram?name=M*")
    assert page.status_code == 400 and "Mojo::Dispatch" in page.text
    # Scoping narrows the glob: only one M* name has slices on IOThread.
    data = await get_json(ds, "/demo/-/report/slices/histogram.json?name=M*&thread=IOThread")
    assert data["slices_histogram"]["name"] == "Mojo::Dispatch"
    assert data["slices_histogram"]["stats"]["count"] == 18


@pytest.mark.asyncio
async def test_glob_characters_in_a_name_match_it_exactly(tmp_path):
    from datasette_perfetto.ingest import ingest_bytes
    from datasette_perfetto.trace_builder import TraceBuilder

    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(1, "p")
    track = seq.thread(1, 2, "t")
    for ts, name in ((1_000, "Task[1]"), (3_000, "Task1"), (5_000, "Task[1]")):
        seq.slice_begin(ts, track, name)
        seq.slice_end(ts + 1_000, track)
    path = tmp_path / "glob.db"
    ingest_bytes(b.to_bytes(), str(path))
    ds = served(path)
    data = await get_json(ds, "/glob/-/report/slices/inspect.json?name=Task%5B1%5D")
    assert data["slices_inspect"]["name"] == "Task[1]" and data["slices_inspect"]["matched"] == 2


# -- timeline ------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_timeline_counts_and_time_per_bucket_match_sql(ds, demo_db):
    data = (await get_json(ds, "/demo/-/report/slices/timeline.json?name=Raster&buckets=10"))["slices_timeline"]
    start, end = demo_db.rows("SELECT start_ts, end_ts FROM trace_bounds")[0]
    buckets = data["buckets"]
    bucket_dur = int(data["bucket_dur"])
    assert bucket_dur == 200_000_000 and len(buckets) == 10
    assert int(buckets[0]["start_ts"]) == start and int(buckets[-1]["end_ts"]) == end
    for b in buckets:
        lo, hi = int(b["start_ts"]), int(b["end_ts"])
        count, covered = demo_db.rows(
            "SELECT count(CASE WHEN ts >= ? THEN 1 END), "
            "coalesce(sum(max(min(ts + dur, ?) - max(ts, ?), 0)), 0) FROM slice "
            "WHERE name = 'Raster' AND ts < ? AND ts + dur > ?",
            (lo, hi, lo, hi, lo),
        )[0]
        starts = demo_db.one("SELECT count(*) FROM slice WHERE name = 'Raster' AND ts >= ? AND ts < ?", (lo, hi))
        assert int(b.get("count", 0)) == starts and int(b.get("total_dur", 0)) == covered
        dominant = b.get("dominant", [])
        assert sum(d["value"] for d in dominant) <= covered and len(dominant) <= 3
    assert sum(int(b.get("count", 0)) for b in buckets) == 48


@pytest.mark.asyncio
async def test_timeline_over_a_time_range_clips_long_slices(ds, demo_db):
    data = await get_json(ds, "/demo/-/report/slices/timeline.json?name=URLRequest&time=0.5s,1.5s&buckets=4")
    start = demo_db.one("SELECT start_ts FROM trace_bounds")
    lo, hi = start + 500_000_000, start + 1_500_000_000
    covered = demo_db.one(
        "SELECT sum(min(ts + dur, ?) - max(ts, ?)) FROM slice WHERE name = 'URLRequest' AND ts < ? AND ts + dur > ?",
        (hi, lo, hi, lo),
    )
    buckets = data["slices_timeline"]["buckets"]
    assert sum(int(b.get("total_dur", 0)) for b in buckets) == covered
    assert all(d["name"] == "browser [100]" for b in buckets for d in b.get("dominant", []))
    assert data["context"]["range"] == "500ms-1.5s"


# -- inspect -------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_inspect_many_instances_lists_the_longest_with_coordinates(ds, demo_db):
    data = await get_json(ds, "/demo/-/report/slices/inspect.json?name=ThreadPool::RunTask&top=5")
    inspect = data["slices_inspect"]
    durs = durations(demo_db, "ThreadPool::RunTask")
    assert int(inspect["matched"]) == len(durs) == 39
    assert stats(inspect["stats"]) == expected_stats(durs)
    shown = [int(i["dur"]) for i in inspect["instances"]]
    assert shown == sorted(durs, reverse=True)[:5]
    assert all(i["thread"] and int(i["tid"]) and int(i["ts"]) for i in inspect["instances"])
    assert inspect["slice"] is None  # several matched: no single-instance detail
    assert any("34 more ThreadPool::RunTask instances" in f["text"] for f in data["footnotes"])


@pytest.mark.asyncio
async def test_inspect_one_instance_shows_args_self_time_ancestors_and_children(ds, demo_db):
    inspect = (
        await get_json(ds, "/demo/-/report/slices/inspect.json?name=LayoutView::Layout&ts=370ms&thread=CrBrowserMain")
    )["slices_inspect"]
    assert inspect["matched"] == 1
    sid = int(inspect["slice"]["id"])
    dur, arg_set_id, parent_id = demo_db.rows("SELECT dur, arg_set_id, parent_id FROM slice WHERE id = ?", (sid,))[0]
    assert int(inspect["slice"]["dur"]) == dur
    children = demo_db.rows("SELECT name, dur FROM slice WHERE parent_id = ? ORDER BY ts", (sid,))
    assert int(inspect["self_dur"]) == dur - sum(d for _, d in children)
    assert [(c["name"], int(c["dur"])) for c in inspect["children"]] == children
    assert [(a["key"], a["value"]) for a in inspect["args"]] == demo_db.rows(
        "SELECT key, display_value FROM args WHERE arg_set_id = ? ORDER BY id", (arg_set_id,)
    )
    chain = []
    while parent_id is not None:
        name, parent_id = demo_db.rows("SELECT name, parent_id FROM slice WHERE id = ?", (parent_id,))[0]
        chain.insert(0, name)
    assert [a["name"] for a in inspect["ancestors"]] == chain == ["MessageLoop::RunTask"]


@pytest.mark.asyncio
async def test_every_max_instance_link_of_the_slices_table_finds_that_instance(ds, demo_db):
    """Reports print offsets rounded to the microsecond; ts still selects the instance they came from."""
    start = demo_db.one("SELECT start_ts FROM trace_bounds")
    table = (await get_json(ds, "/demo/-/report/slices.json?top=35"))["slices_table"]
    assert len(table["rows"]) == 35
    for row in table["rows"]:
        inst = row["max_instance"]
        params = {"name": row["name"], "ts": offset(int(inst["ts"]), start)}
        if inst.get("tid"):
            params["tid"] = inst["tid"]
        else:
            params["pid"] = inst["pid"]
        inspect = (await ds.client.get("/demo/-/report/slices/inspect.json", params=params)).json()["slices_inspect"]
        assert inspect["matched"] == 1, (params, inspect)
        assert inspect["slice"]["id"] == inst["id"]


@pytest.mark.asyncio
async def test_inspect_html_links_each_instance_to_its_narrowed_inspect(ds):
    page = (await ds.client.get("/demo/-/report/slices/inspect?name=URLRequest")).text
    assert "8 matching instances" in page
    assert 'href="/demo/-/report/slices/inspect?name=URLRequest&amp;ts=953.371ms&amp;pid=100"' in page
    single = (await ds.client.get("/demo/-/report/slices/inspect?name=URLRequest&ts=953.371ms&pid=100")).text
    assert "https://example.com/asset/5.js" in single and "HostResolver::Resolve" in single
    assert "Self dur" in single


@pytest.mark.asyncio
async def test_inspect_with_no_instance_at_ts_offers_every_instance(ds):
    data = await get_json(ds, "/demo/-/report/slices/inspect.json?name=URLRequest&ts=1ns")
    assert data["slices_inspect"]["matched"] == 0 and data["slices_inspect"]["instances"] == []
    assert [s["command"] for s in data["next_steps"]] == [
        "datasette perfetto report demo.db slices inspect --name URLRequest",
        "datasette perfetto report demo.db slices inspect --name URLRequest --ts 1ns --format sql"
        " | datasette perfetto query demo.db -",
    ]


@pytest.mark.asyncio
async def test_inspect_at_a_start_prefers_instances_starting_then(tmp_path):
    """Two async tracks of one process each start a "Job" at the same instant; a third Job is running then."""
    from datasette_perfetto.ingest import ingest_bytes
    from datasette_perfetto.trace_builder import TraceBuilder

    b = TraceBuilder()
    seq = b.sequence(1)
    proc = seq.process(7, "app")
    tracks = [seq.track(100 + i, "Jobs", proc) for i in range(3)]
    for track, begin, end in (
        (tracks[0], 1_000_000, 9_000_000),
        (tracks[1], 2_000_000, 3_000_000),
        (tracks[2], 2_000_000, 5_000_000),
    ):
        seq.slice_begin(begin, track, "Job")
        seq.slice_end(end, track)
    path = tmp_path / "jobs.db"
    ingest_bytes(b.to_bytes(), str(path))
    ds = served(path)
    # The trace starts at 1ms: the two Jobs starting at 2ms are at offset 1ms.
    at_start = await get_json(ds, "/jobs/-/report/slices/inspect.json?name=Job&ts=1ms&pid=7")
    assert at_start["slices_inspect"]["matched"] == 2
    assert [i["dur"] for i in at_start["slices_inspect"]["instances"]] == [3000000, 1000000]
    step = at_start["next_steps"][0]
    assert step["url"] == "/jobs/-/report/slices/inspect?name=Job&ts=1ms&pid=7&min_duration=3000000"
    only = await get_json(ds, step["url"].replace("inspect?", "inspect.json?"))
    assert only["slices_inspect"]["matched"] == 1 and only["slices_inspect"]["slice"]["dur"] == 3000000
    # An instant where none starts: the ones running then.
    running = await get_json(ds, "/jobs/-/report/slices/inspect.json?name=Job&ts=1.5ms&pid=7")
    assert running["slices_inspect"]["matched"] == 3


@pytest.mark.parametrize("flags", [{}, {"measure": "self"}], ids=["durations (index ranges)", "self times (ranked)"])
def test_histogram_buckets_of_a_fractional_width_hold_every_instance(tmp_path, flags):
    """Durations of 10 to 13 ns over 20 buckets: the width is 0.2 ns (not exact in binary), so (d - low) / width
    is no whole number; each instance still lands in the one bucket whose edges hold it."""
    from conftest import ingest_built, report_of

    from datasette_perfetto.trace_builder import TraceBuilder

    builder = TraceBuilder()
    seq = builder.sequence(1)
    seq.process(1, "p")
    track = seq.thread(1, 2, "w")
    durs = [10, 11, 12, 13] * 3
    ts = 1_000
    for d in durs:
        seq.slice_begin(ts, track, "S")
        seq.slice_end(ts + d, track)
        ts += 100
    db = ingest_built(tmp_path, builder)
    hist = report_of(db.path, "slices", "histogram", {"name": "S", "buckets": "20", **flags}).result_message()
    assert hist.scale == "linear"
    assert all(round(b.high - b.low, 9) == 0.2 for b in hist.buckets)
    assert sum(b.count for b in hist.buckets) == len(durs)
    last = len(hist.buckets) - 1
    for i, b in enumerate(hist.buckets):
        assert b.count == sum(1 for d in durs if b.low <= d and (d <= b.high if i == last else d < b.high)), b


@pytest.fixture
def quiet_thread_db(tmp_path):
    """Work slices, 200 on a busy thread and a few on a quiet one: zero-length, long, nested (self times), one
    never ended. Scoped to the quiet thread, its few slices drive the scan, not the name's index."""
    from conftest import ingest_built

    from datasette_perfetto.trace_builder import TraceBuilder

    builder = TraceBuilder()
    seq = builder.sequence(1)
    seq.process(1, "busy")
    busy = seq.thread(1, 2, "main")
    for i in range(200):
        seq.slice_begin(1_000 + i * 1_000, busy, "Work")
        seq.slice_end(1_000 + i * 1_000 + 300 + i, busy)
    seq.process(3, "quiet")
    side = seq.thread(3, 4, "side")
    ts = 500_000
    for dur in (0, 0, 40, 700, 2_000, 90_000, 5):
        seq.slice_begin(ts, side, "Work")
        if dur == 2_000:  # a child: its parent's self time is less its duration
            seq.slice_begin(ts + 100, side, "Work")
            seq.slice_end(ts + 600, side)
        seq.slice_end(ts + dur, side)
        ts += 100_000
    seq.slice_begin(ts, side, "Work")  # never ends: it counts to the end of the trace
    seq.slice_begin(ts + 50_000, busy, "Tail")
    seq.slice_end(ts + 60_000, busy)
    return ingest_built(tmp_path, builder)


@pytest.mark.parametrize(
    "flags",
    [
        {},
        {"buckets": "3"},
        {"measure": "self"},
        {"min_duration": "10ns"},
        {"process": "quiet"},
        {"time": "500us,800us"},
        {"time": "500us,800us", "measure": "self"},
    ],
    ids=["log scale", "3 buckets", "self times", "min_duration", "by process", "time range", "self in range"],
)
def test_histogram_read_once_is_the_histogram_of_its_queries(quiet_thread_db, monkeypatch, flags):
    """Read once (the quiet thread's instances, every figure computed from them), the histogram is the one its
    own queries give (READ_ONCE_MAX 0: count, percentiles, buckets and the longest each by SQL)."""
    from datasette_perfetto.report.views import slices

    scope = {"name": "Work", **({} if "process" in flags else {"thread": "side"}), **flags}

    def histogram():
        result = report_of(quiet_thread_db.path, "slices", "histogram", scope)
        purposes = [q.purpose for q in result.report.queries]
        return result.result_message(), [s.label for s in result.report.next_steps], purposes

    once, once_steps, once_queries = histogram()
    monkeypatch.setattr(slices, "READ_ONCE_MAX", 0)
    by_sql, sql_steps, sql_queries = histogram()
    assert any(p.startswith("the instances in scope with the duration") for p in once_queries)
    assert not any(p.startswith("the instances in scope with the duration") for p in sql_queries)
    assert once == by_sql and once_steps == sql_steps
    # 7, a child and the unended one; 6 of at least 10ns; 3 in the range (offsets from the trace's start, 1us)
    assert once.stats.count == {"min_duration": 6, "time": 3}.get(next(iter(flags), ""), 9)


@pytest.mark.parametrize("flags", [{}, {"min_duration": "50us"}], ids=["every instance", "min_duration"])
def test_a_timeline_reads_a_busy_names_instances_from_its_name_index(quiet_thread_db, flags):
    """The (name, dur, ts, track_id) index holds every column the timeline reads: a name with most of the slices,
    over most of the trace, is read there (one pass over its entries; with min_duration only the long ones), not
    through the time index over every slice."""
    result = report_of(quiet_thread_db.path, "slices", "timeline", {"name": "Work", "time": "0ns,2ms", **flags})
    query = next(q for q in result.report.queries if q.purpose == "time covered per bucket and track")
    params = {k: int(v) if v.lstrip("-").isdigit() else v for k, v in query.params.items()}
    with closing(sqlite3.connect(quiet_thread_db.path)) as conn:
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {query.sql}", params)]
        read = conn.execute(
            "SELECT count(*) FROM slice WHERE name = 'Work' AND (dur < 0 OR dur >= ?)",
            (50_000 if flags else 0,),
        ).fetchone()[0]
    assert any("slice_name_dur_ts_track_id" in step for step in plan), plan
    assert not any("slice_ts" in step or "slice_track_id_ts" in step for step in plan), plan
    assert sum(b.count for b in result.result_message().buckets) == read
