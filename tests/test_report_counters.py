"""The `counters` report views through Datasette's client, checked against SQL over the same database."""

from __future__ import annotations

import re

import pytest
from conftest import TraceDB, get_json, ingest_case, ingest_named, served
from shared_data import CASES

from datasette_perfetto.trace_builder import TraceBuilder, process_uuid

pytestmark = pytest.mark.web  # served by Datasette: ./dev test runs these on 0.65 and 1.0

RSS_CASE = CASES / "parser.parsing.ParsingRssStats.test_rss_stat_legacy"


def two_process_trace() -> bytes:
    """`mem` in two processes (same name), `mem_peak` beside it, and a thread counter; sparse samples."""
    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(10, "alpha")
    seq.process(20, "beta")
    main = seq.thread(10, 11, "alpha-main")
    seq.counter_track(101, "mem", parent_uuid=process_uuid(10), unit="bytes")
    seq.counter_track(102, "mem", parent_uuid=process_uuid(20), unit="bytes")
    seq.counter_track(103, "mem_peak", parent_uuid=process_uuid(10), unit="bytes")
    seq.counter_track(104, "queue", parent_uuid=main)
    seq.slice_begin(1_000, main, "work")
    for ts, track, value in [
        (1_000, 101, 100),
        (1_000, 102, 1_000),
        (2_500, 101, 300),
        (3_000, 103, 7),
        (4_000, 104, 1),
        (4_500, 104, 3),
        (5_000, 102, 2_000),
        (9_000, 101, 500),
    ]:
        seq.counter(ts, track, value)
    seq.slice_end(11_000, main)
    return b.to_bytes()


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    return ingest_named(tmp_path_factory, two_process_trace(), "synth")


@pytest.fixture(scope="module")
def rss(tmp_path_factory):
    return ingest_case(tmp_path_factory, RSS_CASE, "rss")


# -- list --------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_list_rows_match_sql_per_track(demo_db):
    data = await get_json(demo_db.path, "/demo/-/report/counters.json")
    assert data["view"] == "list"
    rows = data["counters_list"]["rows"]
    expected = demo_db.rows("""SELECT t.id, t.name, count(*), min(c.value), avg(c.value), max(c.value), p.pid
        FROM counter c JOIN track t ON t.id = c.track_id JOIN process p ON p.id = t.upid
        GROUP BY t.id ORDER BY count(*) DESC, t.name, t.id""")
    assert [
        (int(r["track_id"]), r["name"], int(r["count"]), r.get("min", 0), r["avg"], r["max"], int(r["pid"]))
        for r in rows
    ] == [(i, n, c, lo, pytest.approx(avg), hi, pid) for i, n, c, lo, avg, hi, pid in expected]
    assert rows[0]["scope"] == "process renderer [200]" and rows[0]["unit"] == "bytes"
    assert data["counters_list"]["total_rows"] == 5  # with the two displays' RefreshRate and the phone's


@pytest.mark.asyncio
async def test_list_html_shows_numbers_and_drill_down_links(demo_db):
    page = (await served(demo_db.path).client.get("/demo/-/report/counters")).text
    assert "Counters (5 tracks in scope)" in page
    assert ">MemoryUsage</a>" in page and "151.4M" in page and "196.4M" in page and ">bytes<" in page
    # A row's name opens its timeline narrowed to the row's owner; its scope opens inspect.
    assert 'href="/demo/-/report/counters/timeline?name=MemoryUsage&amp;pid=200"' in page
    assert 'href="/demo/-/report/counters/inspect?name=IPCMessagesSent&amp;pid=100"' in page


@pytest.mark.asyncio
async def test_list_scope_and_time_count_samples_in_range(demo_db):
    data = await get_json(demo_db.path, "/demo/-/report/counters.json?pid=100&time=0.5s,1s")
    (row,) = data["counters_list"]["rows"]
    start = demo_db.one("SELECT start_ts FROM trace_bounds")
    count, lo, hi = demo_db.rows(
        """SELECT count(*), min(value), max(value) FROM counter c JOIN track t ON
        t.id = c.track_id WHERE t.name = 'IPCMessagesSent' AND ts >= ? AND ts < ?""",
        (start + 500_000_000, start + 1_000_000_000),
    )[0]
    assert (row["name"], int(row["count"]), row["min"], row["max"]) == ("IPCMessagesSent", count, lo, hi)
    assert 0 < count < 20


@pytest.mark.asyncio
async def test_sql_shown_is_the_sql_run(demo_db):
    data = await get_json(demo_db.path, "/demo/-/report/counters/histogram.json?name=MemoryUsage")
    query = next(q for q in data["queries"] if q["purpose"] == "values of MemoryUsage, sorted")
    values = [r[0] for r in demo_db.rows(query["sql"], query["params"])]
    assert len(values) == int(data["counters_histogram"]["stats"]["count"]) == 40
    assert values == sorted(values)


# -- timeline ---------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_timeline_buckets_match_sql(demo_db):
    data = await get_json(demo_db.path, "/demo/-/report/counters/timeline.json?name=MemoryUsage&buckets=10")
    tl = data["counters_timeline"]
    start, end = demo_db.rows("SELECT start_ts, end_ts FROM trace_bounds")[0]
    bucket_dur = int(tl["bucket_dur"])
    assert bucket_dur == -(-(end - start) // 10) and len(tl["buckets"]) == 10
    for b in tl["buckets"]:
        lo, hi = int(b["start_ts"]), int(b["end_ts"])
        last = hi == end  # the last bucket holds a sample at the very end of the trace
        count, avg = demo_db.rows(
            f"""SELECT count(*), avg(value) FROM counter c JOIN track t ON t.id = c.track_id
            WHERE t.name = 'MemoryUsage' AND ts >= ? AND ts {"<=" if last else "<"} ?""",
            (lo, hi),
        )[0]
        assert int(b.get("count", 0)) == count == 4
        assert b["value"] == pytest.approx(avg)
        assert b["min"] <= b["value"] <= b["max"]


@pytest.mark.asyncio
async def test_timeline_holds_values_and_combines_tracks(synth):
    # Trace from 1000 to 11000 ns: ten 1us buckets. alpha: 100 @1000, 300 @2500, 500 @9000; beta: 1000 @1000,
    # 2000 @5000.
    data = await get_json(synth, "/synth/-/report/counters/timeline.json?name=mem&buckets=10")
    buckets = data["counters_timeline"]["buckets"]
    assert [b["value"] for b in buckets] == [550, 650, 650, 650, 1150, 1150, 1150, 1150, 1250, 1250]
    assert [int(b.get("count", 0)) for b in buckets] == [2, 1, 0, 0, 1, 0, 0, 0, 1, 0]
    # In bucket 1 alpha goes from 100 (held) to 300 while beta holds 1000.
    assert (buckets[1]["min"], buckets[1]["max"]) == (100, 1000)
    assert [d["name"] for d in buckets[4]["dominant"]] == ["process beta [20]", "process alpha [10]"]
    assert {t["scope"] for t in data["counters_timeline"]["tracks"]} == {"process alpha [10]", "process beta [20]"}
    # pid narrows the series to one track; a range with no samples shows the value held from before it.
    data = await get_json(synth, "/synth/-/report/counters/timeline.json?name=mem&pid=10&time=3us,8us&buckets=5")
    tl = data["counters_timeline"]
    assert [b["value"] for b in tl["buckets"]] == [300] * 5
    assert all(b["has_value"] and not b.get("count") for b in tl["buckets"])
    assert [(t["scope"], t["count"]) for t in tl["tracks"]] == [("process alpha [10]", 0)]


@pytest.mark.asyncio
async def test_timeline_html_draws_a_labelled_chart(demo_db):
    page = (await served(demo_db.path).client.get("/demo/-/report/counters/timeline?name=MemoryUsage&buckets=10")).text
    assert "<svg" in page and "MemoryUsage over time" in page and "(linear scale" in page
    assert "154.0M" in page  # the first bucket's average: (151.4M + ... ) / 4, as checked against SQL above


# -- histogram ----------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_histogram_counts_and_percentiles_match_sql(demo_db):
    data = await get_json(demo_db.path, "/demo/-/report/counters/histogram.json?name=IPCMessagesSent&buckets=4")
    h = data["counters_histogram"]
    values = [
        r[0]
        for r in demo_db.rows("""SELECT value FROM counter c JOIN track t ON t.id = c.track_id
        WHERE t.name = 'IPCMessagesSent' ORDER BY value""")
    ]
    assert h["scale"] == "linear"  # 0 .. 228 includes zero: no log buckets
    assert [(b.get("low", 0), b["high"]) for b in h["buckets"]] == [(0, 57), (57, 114), (114, 171), (171, 228)]
    expected = [
        sum(1 for v in values if lo <= v < hi or (hi == 228 and v == 228))
        for lo, hi in [(0, 57), (57, 114), (114, 171), (171, 228)]
    ]
    assert [int(b.get("count", 0)) for b in h["buckets"]] == expected and sum(expected) == 20
    stats = h["stats"]
    n = len(values)
    assert (stats.get("min", 0), stats["max"], stats["avg"]) == (values[0], values[-1], pytest.approx(sum(values) / n))
    assert (stats["p50"], stats["p95"], stats["p99"]) == (
        values[round(0.5 * (n - 1))],
        values[round(0.95 * (n - 1))],
        values[round(0.99 * (n - 1))],
    )


@pytest.mark.asyncio
async def test_histogram_uses_log_buckets_for_values_spanning_orders_of_magnitude(rss):
    # Real data: mem.rss.file from rss_stat events, 9 .. 1000 bytes in two processes.
    data = await get_json(rss, "/rss/-/report/counters/histogram.json?name=mem.rss.file&buckets=3")
    h = data["counters_histogram"]
    assert h["scale"] == "log"
    edges = [h["buckets"][0].get("low", 0)] + [b["high"] for b in h["buckets"]]
    assert edges[0] == 9 and edges[-1] == 1000
    assert edges[1] / edges[0] == pytest.approx(edges[2] / edges[1]) == pytest.approx((1000 / 9) ** (1 / 3))
    assert sum(int(b.get("count", 0)) for b in h["buckets"]) == 5
    text = (await served(rss).client.get("/rss/-/report/counters/histogram.txt?name=mem.rss.file")).text
    assert "log-spaced buckets" in text
    # One process: its own samples only.
    data = await get_json(rss, "/rss/-/report/counters/histogram.json?name=mem.rss.file&pid=10")
    assert int(data["counters_histogram"]["stats"]["count"]) == 2 and data["counters_histogram"]["scale"] == "linear"


# -- inspect ------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_inspect_value_at_ts_is_the_last_sample_at_or_before_it(demo_db):
    start = demo_db.one("SELECT start_ts FROM trace_bounds")
    ts = start + 1_000_000_000
    data = await get_json(demo_db.path, "/demo/-/report/counters/inspect.json?name=MemoryUsage&ts=1s")
    i = data["counters_inspect"]
    at_ts, at_value = demo_db.rows(
        """SELECT ts, value FROM counter c JOIN track t ON t.id = c.track_id
        WHERE t.name = 'MemoryUsage' AND ts <= ? ORDER BY ts DESC LIMIT 1""",
        (ts,),
    )[0]
    assert i["has_value_at_ts"] and (int(i["ts"]), i["value_at_ts"], int(i["value_ts"])) == (ts, at_value, at_ts)
    (first, first_ts), (last, last_ts) = demo_db.rows("""SELECT * FROM (SELECT value, ts FROM counter c JOIN track t
        ON t.id = c.track_id WHERE t.name = 'MemoryUsage' ORDER BY ts LIMIT 1) UNION ALL SELECT * FROM (SELECT value,
        ts FROM counter c JOIN track t ON t.id = c.track_id WHERE t.name = 'MemoryUsage' ORDER BY ts DESC LIMIT 1)""")
    assert i["delta"] == last - first and (int(i["first_ts"]), int(i["last_ts"])) == (first_ts, last_ts)
    count, lo, avg, hi = demo_db.rows("""SELECT count(*), min(value), avg(value), max(value) FROM counter c
        JOIN track t ON t.id = c.track_id WHERE t.name = 'MemoryUsage'""")[0]
    assert (int(i["stats"]["count"]), i["stats"]["min"], i["stats"]["max"]) == (count, lo, hi)
    assert i["stats"]["avg"] == pytest.approx(avg)
    # The samples around ts: five at or before it, five after, in time order.
    around = [int(s["ts"]) for s in i["samples"]]
    assert len(around) == 10 and around == sorted(around) and around[4] == at_ts and around[5] > ts
    text = (await served(demo_db.path).client.get("/demo/-/report/counters/inspect.txt?name=MemoryUsage&ts=1s")).text
    assert f"{int(at_value):,} bytes (sampled at" in text and "<- value at ts" in text


@pytest.mark.asyncio
async def test_inspect_lists_each_track_when_several_match(synth):
    data = await get_json(synth, "/synth/-/report/counters/inspect.json?name=mem&ts=1.5us")
    i = data["counters_inspect"]
    # ts 1.5us after the trace start (1000 ns) = 2500: alpha has just sampled 300, beta still holds 1000.
    values = {t["track"]["scope"]: (t["value_at_ts"], int(t["value_ts"])) for t in i["tracks"]}
    assert values == {"process alpha [10]": (300, 2500), "process beta [20]": (1000, 1000)}
    assert not i.get("has_value_at_ts") and not i.get("samples")  # several tracks: no single value
    deltas = {t["track"]["scope"]: t["delta"] for t in i["tracks"]}
    assert deltas == {"process alpha [10]": 400, "process beta [20]": 1000}
    assert int(i["stats"]["count"]) == 5  # pooled over both tracks
    narrow = [s for s in data["next_steps"] if "inspect" in s["url"]]
    assert narrow and "pid=" in narrow[0]["url"]
    page = (await served(synth).client.get("/synth/-/report/counters/inspect?name=mem&ts=1.5us")).text
    assert (
        "mem: 2 tracks" in page and 'href="/synth/-/report/counters/inspect?ts=1.5us&amp;name=mem&amp;pid=10"' in page
    )


@pytest.mark.asyncio
async def test_cpu_counters_from_a_real_trace(cpufreq):
    # Real data: cpufreq on CPU 1 (3000 @1000, 4000 @1001) and CPU 2 (5000 @1002).
    data = await get_json(cpufreq, "/cpufreq/-/report/counters.json")
    rows = {r["scope"]: (int(r["count"]), r["min"], r["max"], int(r["cpu"])) for r in data["counters_list"]["rows"]}
    assert rows == {"cpu 1": (2, 3000, 4000, 1), "cpu 2": (1, 5000, 5000, 2)}
    data = await get_json(cpufreq, "/cpufreq/-/report/counters/inspect.json?name=cpufreq&cpu=1&ts=1001")
    i = data["counters_inspect"]
    assert (i["value_at_ts"], int(i["value_ts"]), i["delta"]) == (4000, 1001, 1000)
    assert [t["track"]["scope"] for t in i["tracks"]] == ["cpu 1"]
    assert TraceDB(cpufreq).rows(
        "SELECT value FROM counter c JOIN cpu_counter_track t ON t.id = c.track_id "
        "WHERE t.cpu = 1 AND c.ts <= 1001 ORDER BY c.ts DESC LIMIT 1",
    ) == [(4000.0,)]
    data = await get_json(cpufreq, "/cpufreq/-/report/counters/histogram.json?name=cpufreq&cpu=2")
    assert int(data["counters_histogram"]["stats"]["count"]) == 1


# -- errors -------------------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "url, message, options",
    [
        ("/synth/-/report/counters/timeline.json?name=mem*", "'mem*' matches 2 counter names", ["mem", "mem_peak"]),
        ("/synth/-/report/counters/inspect.json?name=nope", "no counter matches 'nope'", ["mem", "mem_peak", "queue"]),
        (
            "/synth/-/report/counters/histogram.json?name=queue&pid=20",
            "no counter matches 'queue' in this scope",
            ["mem"],
        ),
        ("/synth/-/report/counters/histogram.json", "counters histogram needs name", []),
        ("/synth/-/report/counters/timeline.json?name=mem&sort=count", "counters timeline does not take sort", None),
        ("/synth/-/report/counters/inspect.json?name=mem&ts=soon", "ts: expected a time", []),
        ("/synth/-/report/counters.json?sort=colour", "sort: 'colour' is not a sort key of counters list", None),
        ("/synth/-/report/counters/timeline.json?name=mem&buckets=0", "buckets: must be between 1", []),
    ],
)
async def test_bad_requests_are_400_with_a_json_error(synth, url, message, options):
    response = await served(synth).client.get(url)
    assert response.status_code == 400
    body = response.json()
    assert body["ok"] is False and message in body["error"], body
    if options is not None:
        assert body["options"] == options


@pytest.mark.asyncio
async def test_error_page_lists_the_choices(synth):
    response = await served(synth).client.get("/synth/-/report/counters/timeline?name=mem*")
    assert response.status_code == 400
    assert "mem_peak" in response.text and "matches 2 counter names" in response.text


@pytest.mark.asyncio
async def test_every_link_on_counter_pages_works(synth):
    ds = served(synth)
    seen: set[str] = set()
    pages = [
        "/synth/-/report/counters",
        "/synth/-/report/counters/timeline?name=mem",
        "/synth/-/report/counters/histogram?name=mem&pid=10",
        "/synth/-/report/counters/inspect?name=mem",
        "/synth/-/report/counters/inspect?name=queue&ts=3.5us",
    ]
    for page in pages:
        html = (await ds.client.get(page)).text
        for href in re.findall(r'href="(/synth/-/report[^"]*)"', html):
            url = href.replace("&amp;", "&")
            if url in seen:
                continue
            seen.add(url)
            assert (await ds.client.get(url)).status_code == 200, (page, url)
    assert len(seen) > 10


@pytest.mark.asyncio
@pytest.mark.parametrize("query", ["", "time=0.5s,1.5s&min_count=5&sort=name", "pid=100", "name=Mem*&sort=max"])
async def test_canned_query_gives_the_rows_of_the_report(demo_db, query):
    ds = served(demo_db.path)
    report = (await ds.client.get(f"/demo/-/report/counters.json?{query}")).json()["counters_list"]["rows"]
    canned = (await ds.client.get(f"/demo/counters_list.json?_shape=array&{query}")).json()
    assert [(r["track_id"], r["count"]) for r in canned] == [(int(r["track_id"]), int(r["count"])) for r in report]
    assert report


@pytest.mark.asyncio
async def test_series_canned_queries_agree_with_the_reports(demo_db):
    ds = served(demo_db.path)
    query = "name=MemoryUsage&buckets=10&time=0.2s,1.8s"
    report = (await ds.client.get(f"/demo/-/report/counters/timeline.json?{query}")).json()["counters_timeline"]
    canned = (await ds.client.get(f"/demo/counters_timeline.json?_shape=array&{query}")).json()
    assert [(r["bucket"], r["count"], r["avg"]) for r in canned] == [
        (i, int(b["count"]), pytest.approx(b["value"])) for i, b in enumerate(report["buckets"]) if b.get("count")
    ]
    report = (await ds.client.get(f"/demo/-/report/counters/histogram.json?{query}")).json()["counters_histogram"]
    canned = (await ds.client.get(f"/demo/counters_histogram.json?_shape=array&{query}")).json()
    assert report["scale"] == "linear"
    assert [r["count"] for r in canned] == [int(b["count"]) for b in report["buckets"] if b.get("count")]
    query = "name=MemoryUsage&ts=1s"
    report = (await ds.client.get(f"/demo/-/report/counters/inspect.json?{query}")).json()["counters_inspect"]
    (row,) = (await ds.client.get(f"/demo/counters_inspect.json?_shape=array&{query}")).json()
    assert (row["value_at_ts"], row["count"], row["delta"]) == (
        report["value_at_ts"],
        int(report["stats"]["count"]),
        report["delta"],
    )
