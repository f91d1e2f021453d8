"""The `counters` report views through Datasette's client, checked against SQL over the same database."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing

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


SECOND = 1_000_000_000
T0 = 5 * SECOND


def kinds_trace() -> bytes:
    """Ten seconds (T0 to T0 + 10s) of counters of each kind on one thread:
    cpu_time (ns, cumulative: +100ms a second, so 10% CPU), instructions (no unit, cumulative: +1000 a second),
    mem (bytes, a gauge: 2, 1, 4, 3 MiB), queue (no unit, a gauge: 5, 10) and limit (constant 7)."""
    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(30, "gamma")
    main = seq.thread(30, 31, "gamma-main")
    seq.counter_track(201, "cpu_time", parent_uuid=main, unit="ns")
    seq.counter_track(202, "instructions", parent_uuid=main)
    seq.counter_track(203, "mem", parent_uuid=main, unit="bytes")
    seq.counter_track(204, "queue", parent_uuid=main)
    seq.counter_track(205, "limit", parent_uuid=main)
    seq.slice_begin(T0, main, "run")
    samples = [(T0 + i * SECOND, 201, i * 100_000_000) for i in range(11)]
    samples += [(T0 + i * SECOND, 202, i * 1000) for i in range(11)]
    samples += [(T0 + i * 2 * SECOND, 203, m << 20) for i, m in enumerate((2, 1, 4, 3))]
    samples += [(T0 + SECOND, 204, 5), (T0 + 2 * SECOND, 204, 10)]
    samples += [(T0 + i * SECOND, 205, 7) for i in range(3)]
    for ts, track, value in sorted(samples):
        seq.counter(ts, track, value)
    seq.slice_end(T0 + 10 * SECOND, main)
    return b.to_bytes()


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    return ingest_named(tmp_path_factory, kinds_trace(), "kinds")


@pytest.fixture(scope="module")
def rss(tmp_path_factory):
    return ingest_case(tmp_path_factory, RSS_CASE, "rss")


# -- list --------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_list_rows_match_sql_per_track(demo_db):
    data = await get_json(demo_db.path, "/demo/-/report/counters.json?sort=count")
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
    # Values in their unit (MemoryUsage is in bytes).
    assert ">MemoryUsage</a>" in page and ">144 MiB<" in page and ">187 MiB<" in page
    # A row's name opens its timeline narrowed to the row's owner; its scope opens inspect.
    assert 'href="/demo/-/report/counters/timeline?name=MemoryUsage&amp;pid=200"' in page
    assert 'href="/demo/-/report/counters/inspect?name=IPCMessagesSent&amp;pid=100"' in page


@pytest.mark.asyncio
async def test_list_ranks_changing_gauges_then_cumulative_counters_by_rate(kinds):
    rows = (await get_json(kinds, "/kinds/-/report/counters.json"))["counters_list"]["rows"]
    # Gauges by variation (max - min) / max(|max|, |min|): mem 3/4, queue 5/10; then cumulative counters by
    # rate: cpu_time 1s over 10s (1e8 ns/s), instructions 10,000 over 10s; then the constant.
    assert [(r["name"], r["monotonic"], r["variation"], r["rate"]) for r in rows] == [
        ("mem", False, 0.75, 0),
        ("queue", False, 0.5, 0),  # rising, but two samples say nothing of a trend
        ("cpu_time", True, 1.0, pytest.approx(1e8)),
        ("instructions", True, 1.0, pytest.approx(1000)),
        ("limit", False, 0, 0),
    ]
    # In a range the rate is the rise in it per second of it: cpu_time from 200ms (T0 + 2s) to 400ms (T0 + 4s).
    rows = (await get_json(kinds, "/kinds/-/report/counters.json?time=1.5s,4.5s&sort=rate"))["counters_list"]["rows"]
    assert [(r["name"], r["rate"]) for r in rows[:2]] == [
        ("cpu_time", pytest.approx(200_000_000 * 1e9 / (3 * SECOND))),
        ("instructions", pytest.approx(2000 / 3)),
    ]
    assert all(not r["rate"] for r in rows[2:])


@pytest.mark.asyncio
async def test_list_page_folds_units_into_values_and_shows_rates(kinds):
    page = (await served(kinds).client.get("/kinds/-/report/counters")).text
    cells = re.findall(r"<td[^>]*>(?:<a[^>]*>)?([^<]*)", page)
    # Min, avg, max, rate: bytes as MiB, ns as times, time per second as a share (CPU %), others per second.
    for row in (
        ["1 MiB", "2.5 MiB", "4 MiB", "-"],
        ["0ns", "500ms", "1s", "10.0%"],
        ["0", "5.0k", "10.0k", "1.0k/s"],
        ["7", "7", "7", "-"],
    ):
        assert any(cells[i : i + 4] == row for i in range(len(cells))), (row, cells)
    assert "<th>Rate</th>" in page or ">Rate<" in page


@pytest.mark.asyncio
async def test_cumulative_flag_and_percentiles_precomputed_match_the_samples(kinds, demo_db):
    from datasette_perfetto.report.base import percentile_index

    for db in (TraceDB(kinds), demo_db):
        for track_id, drops, p50, p95, p99 in db.rows(
            "SELECT track_id, drops, p50_value, p95_value, p99_value FROM report_track_stats "
            "WHERE track_id IN (SELECT id FROM counter_track)"
        ):
            values = [
                v for (v,) in db.rows("SELECT value FROM counter WHERE track_id = ? ORDER BY ts, id", (track_id,))
            ]
            assert drops == sum(b < a for a, b in zip(values, values[1:]))
            ranked = sorted(values)
            assert (p50, p95, p99) == tuple(ranked[percentile_index(len(ranked), p)] for p in (50, 95, 99))


@pytest.mark.asyncio
async def test_inspect_percentiles_precomputed_ranked_or_left_out(kinds, monkeypatch):
    from datasette_perfetto.report.views import counters

    monkeypatch.setattr(counters, "PERCENTILE_MAX", 5)
    ranked = [i * 100_000_000.0 for i in range(11)]
    # The whole trace of one track: its precomputed percentiles, however many samples.
    data = await get_json(kinds, "/kinds/-/report/counters/inspect.json?name=cpu_time")
    i = data["counters_inspect"]
    assert (i["stats"]["p50"], i["stats"]["p95"], i["stats"]["p99"]) == (ranked[5], ranked[10], ranked[10])
    assert (int(i["stats"]["count"]), i["stats"]["avg"], i["percentiles_left_out"]) == (11, 500_000_000, False)
    # A range of up to PERCENTILE_MAX samples: ranked (T0 + 2s .. T0 + 6s: 200ms .. 600ms).
    i = (await get_json(kinds, "/kinds/-/report/counters/inspect.json?name=cpu_time&time=1.5s,6.5s"))[
        "counters_inspect"
    ]
    assert (int(i["stats"]["count"]), i["stats"]["p50"], i["percentiles_left_out"]) == (5, 400_000_000, False)
    # More: left out, with a footnote linking the histogram; the text says "-" rather than 0.
    data = await get_json(kinds, "/kinds/-/report/counters/inspect.json?name=cpu_time&time=0s,8s")
    i = data["counters_inspect"]
    assert (int(i["stats"]["count"]), i["stats"]["p50"], i["percentiles_left_out"]) == (8, 0, True)
    (note,) = [f for f in data["footnotes"] if "p50/p95/p99 left out" in f["text"]]
    assert "/kinds/-/report/counters/histogram?" in note["url"] and "name=cpu_time" in note["url"]
    text = (await served(kinds).client.get("/kinds/-/report/counters/inspect.txt?name=cpu_time&time=0s,8s")).text
    assert re.search(r"p50 / p95 / p99 +- / - / -", text), text


@pytest.mark.asyncio
async def test_inspect_peak_is_found_in_the_range(kinds):
    # instructions peaks at T0 + 10s over the trace; in 1.5s..4.5s its maximum is at T0 + 4s.
    data = await get_json(kinds, "/kinds/-/report/counters/inspect.json?name=instructions&time=1.5s,4.5s")
    (peak,) = [s for s in data["next_steps"] if "at its maximum" in s["label"]]
    assert "(4s)" in peak["label"] and "ts=4.000000000s" in peak["url"]


def nav_links(page: str) -> dict[str, bool]:
    """The report navigation's nouns -> whether greyed (no data)."""
    nav = page.split('<nav class="perfetto-report-nav">', 1)[1].split("</nav>", 1)[0]
    return {
        label: "perfetto-report-nav-empty" in attrs
        for attrs, label in re.findall(r"<a([^>]*)>([^<]*)</a>", nav.split('<span class="perfetto-report-formats">')[0])
    }


@pytest.mark.asyncio
async def test_navigation_greys_nouns_without_data(kinds, demo_db, tmp_path):
    db = TraceDB(kinds)
    empty = {
        noun
        for noun, table in (
            ("slices", "slice"),
            ("stack-samples", "stack_sample"),
            ("heap-profile", "heap_profile_allocation"),
            ("heap-dump", "heap_graph_object"),
            ("scheduling", "sched"),
            ("counters", "counter"),
        )
        if not db.one(f"SELECT count(*) FROM {table}")
    }
    assert empty == {"stack-samples", "heap-profile", "heap-dump", "scheduling"}
    links = nav_links((await served(kinds).client.get("/kinds/-/report/counters")).text)
    assert {noun for noun, grey in links.items() if grey} == empty
    assert {"overview", "slices", "counters", "processes", "tracks"} <= {n for n, grey in links.items() if not grey}
    # A diff page greys the nouns neither trace has; its overview says they are in neither.
    twin = tmp_path / "twin.db"
    twin.write_bytes(kinds.read_bytes())
    ds = served(kinds, twin)
    page = (await ds.client.get("/kinds/-/report?baseline=twin")).text
    assert {noun for noun, grey in nav_links(page).items() if grey} == empty
    assert 'title="not present in either trace"' in page
    absent = (await get_json(ds, "/kinds/-/report.json?baseline=twin"))["overview_diff"]["absent"]
    assert {(a["noun"], a["reason"]) for a in absent} == {(noun, "not present in either trace") for noun in empty}
    # One trace with the data is enough to keep a noun: the demo has every noun.
    ds = served(kinds, demo_db.path)
    page = (await ds.client.get("/kinds/-/report?baseline=demo")).text
    assert not any(nav_links(page).values())


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
    # The first bucket's average, 154.0M bytes ((151.4M + ... ) / 4, as checked against SQL above), in its unit:
    # 154.0e6 / 2^20 = 146.9 -> 147 MiB.
    assert "147 MiB" in page and "154.0M" not in page


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
    # Round edges: 228 / 4 = 57 rounds up to buckets 100 wide, so three of them cover 0 .. 228.
    assert [(b.get("low", 0), b["high"]) for b in h["buckets"]] == [(0, 100), (100, 200), (200, 300)]
    expected = [sum(1 for v in values if lo <= v < hi) for lo, hi in [(0, 100), (100, 200), (200, 300)]]
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
    # Round edges: 1-2-5 steps from 5 to 1000 would be 8 buckets, so one decade each.
    assert edges == [1, 10, 100, 1000]
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
    # In its unit (the exact figure is in the JSON): 194,668,215 bytes / 2^20 = 185.65 -> 186 MiB.
    assert at_value == 194_668_215
    assert "186 MiB (sampled at" in text and "<- value at ts" in text


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
@pytest.mark.parametrize(
    "query", ["", "time=0.5s,1.5s&min_count=5&sort=name", "pid=100", "name=Mem*&sort=max", "sort=rate", "time=1s,2s"]
)
async def test_canned_query_gives_the_rows_of_the_report(demo_db, query):
    ds = served(demo_db.path)
    report = (await ds.client.get(f"/demo/-/report/counters.json?{query}")).json()["counters_list"]["rows"]
    canned = (await ds.client.get(f"/demo/counters_list.json?_shape=array&{query}")).json()
    assert [(r["track_id"], r["count"]) for r in canned] == [(int(r["track_id"]), int(r["count"])) for r in report]
    assert report


@pytest.mark.asyncio
@pytest.mark.parametrize("query", ["", "time=1.5s,4.5s", "sort=rate"])
async def test_canned_query_ranks_and_rates_as_the_report(kinds, query):
    ds = served(kinds)
    report = (await ds.client.get(f"/kinds/-/report/counters.json?{query}")).json()["counters_list"]["rows"]
    canned = (await ds.client.get(f"/kinds/counters_list.json?_shape=array&{query}")).json()
    assert [(r["name"], bool(r["monotonic"]), r["rate"] or 0, r["variation"]) for r in canned] == [
        (r["name"], r["monotonic"], pytest.approx(r["rate"]), r["variation"]) for r in report
    ]


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


# -- time-weighted averages under time, values in their unit ----------------------------------------------


def weighted_trace() -> bytes:
    """Ten seconds (T0 to T0 + 10s). `level` (ms) in delta: 0 @0s, 10 @1.5s, 30 @2.5s, 99 @8s; in epsilon:
    100 @3s."""
    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(40, "delta")
    seq.process(50, "epsilon")
    main = seq.thread(40, 41, "delta-main")
    seq.counter_track(301, "level", parent_uuid=process_uuid(40), unit="ms")
    seq.counter_track(302, "level", parent_uuid=process_uuid(50), unit="ms")
    seq.slice_begin(T0, main, "run")
    samples = [(T0, 301, 0), (T0 + 1_500_000_000, 301, 10), (T0 + 2_500_000_000, 301, 30)]
    samples += [(T0 + 3 * SECOND, 302, 100), (T0 + 8 * SECOND, 301, 99)]
    for ts, track, value in samples:
        seq.counter(ts, track, value)
    seq.slice_end(T0 + 10 * SECOND, main)
    return b.to_bytes()


@pytest.fixture(scope="module")
def weighted(tmp_path_factory):
    return ingest_named(tmp_path_factory, weighted_trace(), "weighted")


# (time, delta's count/min/avg/max, epsilon's (None: no sample in the range), inspect's pooled average)
WEIGHTED_CASES = [
    # delta: 10 for 1s, then 30 for 3s (its span to 8s cut by the range's end): (10 + 90) / 4 = 25, not 20.
    # epsilon: 100 from 3s. Pooled: (10 + 90 + 100 * 2.5) / 6.5.
    ("1.5s,5.5s", (2, 10, 25, 30), (1, 100, 100, 100), 350 / 6.5),
    # delta: 10 (sampled before the range) holds for 0.5s, then 30 for 3s: 95 / 3.5.
    ("2s,5.5s", (1, 30, 95 / 3.5, 30), (1, 100, 100, 100), (95 + 250) / 6),
    # delta: 30 for 1s, then 99 to the trace end (2s): (30 + 198) / 3 = 76; epsilon has no sample in it (no
    # row of its own) but its 100 holds through it, so the pooled average has it: (228 + 300) / 6 = 88.
    ("7s,10s", (1, 99, 76, 99), None, 88),
]


@pytest.mark.asyncio
@pytest.mark.parametrize("time, delta, epsilon, pooled", WEIGHTED_CASES)
async def test_averages_under_time_are_time_weighted(weighted, time, delta, epsilon, pooled):
    ds = served(weighted)
    data = await get_json(ds, f"/weighted/-/report/counters.json?name=level&time={time}")
    rows = {r["pid"]: r for r in data["counters_list"]["rows"]}
    expected = {40: delta} | ({50: epsilon} if epsilon else {})
    assert {int(pid): (int(r["count"]), r["min"], pytest.approx(r["avg"]), r["max"]) for pid, r in rows.items()} == {
        pid: (c, lo, pytest.approx(avg), hi) for pid, (c, lo, avg, hi) in expected.items()
    }
    assert any("time-weighted" in f["text"] for f in data["footnotes"])
    # Each view's footnote links the same view over the whole trace, its other flags kept (the timeline and
    # inspect need name: their footnote once linked a 400).
    for view in ("", "/timeline", "/inspect"):
        page = await get_json(ds, f"/weighted/-/report/counters{view}.json?name=level&pid=40&time={time}")
        (note,) = [f for f in page["footnotes"] if "time-weighted" in f["text"]]
        assert (await ds.client.get(note["url"])).status_code == 200, note
        assert "time=" not in note["url"] and "name=level" in note["url"], note
    # The canned query agrees.
    canned = (await ds.client.get(f"/weighted/counters_list.json?_shape=array&name=level&time={time}")).json()
    assert {r["pid"]: r["avg"] for r in canned} == {pid: pytest.approx(v[2]) for pid, v in expected.items()}
    # Inspect: each track's average as the list's; the pooled one weighs every track by time.
    data = await get_json(ds, f"/weighted/-/report/counters/inspect.json?name=level&time={time}")
    i = data["counters_inspect"]
    assert i["stats"]["avg"] == pytest.approx(pooled)
    assert {int(t["track"]["pid"]): t["track"].get("avg", 0) for t in i["tracks"]} == {
        40: pytest.approx(delta[2]),
        50: pytest.approx(epsilon[2] if epsilon else 0),
    }
    canned = (await ds.client.get(f"/weighted/counters_inspect.json?_shape=array&name=level&time={time}")).json()
    assert {r["pid"]: r["avg"] for r in canned} == {40: pytest.approx(delta[2]), 50: epsilon and pytest.approx(100)}


def tied_trace() -> bytes:
    """`level` in one process: 5 @0s, 7 @1s and 9 @1s (two samples at one instant, 9 written last), 2 @3s;
    the trace ends at 4s."""
    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(60, "zeta")
    main = seq.thread(60, 61, "zeta-main")
    seq.counter_track(601, "level", parent_uuid=process_uuid(60))
    seq.slice_begin(T0, main, "run")
    for ts, value in [(T0, 5), (T0 + SECOND, 7), (T0 + SECOND, 9), (T0 + 3 * SECOND, 2)]:
        seq.counter(ts, 601, value)
    seq.slice_end(T0 + 4 * SECOND, main)
    return b.to_bytes()


@pytest.fixture(scope="module")
def tied(tmp_path_factory):
    return ingest_named(tmp_path_factory, tied_trace(), "tied")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "time, avg",
    [
        # 5 holds 0.5s; 7 is replaced at once by 9 (the later sample at the same instant), which holds 1s.
        ("0.5s,2s", (5 * 0.5 + 9 * 1) / 1.5),
        # From the range's start 9 holds (the last sample before it), 1s; then 2 to the trace's end, 1s.
        ("2s,5s", (9 * 1 + 2 * 1) / 2),
    ],
)
async def test_samples_at_one_instant_hold_in_file_order(tied, time, avg):
    ds = served(tied)
    data = await get_json(ds, f"/tied/-/report/counters/inspect.json?name=level&time={time}")
    assert data["counters_inspect"]["stats"]["avg"] == pytest.approx(avg)
    (row,) = (await get_json(ds, f"/tied/-/report/counters.json?name=level&time={time}"))["counters_list"]["rows"]
    assert row["avg"] == pytest.approx(avg)
    canned = (await ds.client.get(f"/tied/counters_list.json?_shape=array&name=level&time={time}")).json()
    assert [r["avg"] for r in canned] == [pytest.approx(avg)]


@pytest.mark.asyncio
async def test_a_database_without_integrals_says_to_ingest_again_under_time(weighted, tmp_path):
    """A database ingested before report_counter_integral (and report_counter_cell) existed: the whole trace's
    figures as before, a time range a 400 naming the table, not a failed query."""
    old = tmp_path / "old.db"
    old.write_bytes(weighted.read_bytes())
    with closing(sqlite3.connect(old)) as conn:
        conn.execute("DROP TABLE report_counter_integral")
        conn.commit()
    ds = served(old)
    assert (await ds.client.get("/old/-/report/counters.json?name=level")).status_code == 200
    for path in ("counters.json?name=level&time=1s,2s", "counters/inspect.json?name=level&time=1s,2s"):
        r = await ds.client.get(f"/old/-/report/{path}")
        assert r.status_code == 400, path
        error = r.json()["error"]
        assert "no report_counter_integral table" in error and "ingest the trace again" in error


def test_a_range_reads_its_cells_the_samples_around_them_and_the_integral_at_two_instants(weighted):
    """Every sample before a range was once read (with a subquery per sample) to find the one held into it:
    570 ms for a 0.2 s range of a Chrome thread-time track; then each sample in the range sought its successor
    (2.1 s for 241k samples). Now a track's samples before and after the range's whole cells are one index range
    each, read in track order (no sort), its whole cells one range of report_counter_cell, and the time-weighted
    sum is report_counter_integral at the range's two ends."""
    from datasette_perfetto.report.views.counters import weights_sql

    sql = weights_sql("SELECT id FROM counter_track", ":range_start", ":range_end", ":trace_end")
    params = {"range_start": 0, "range_end": 1, "trace_end": 2, "first_cell": 0, "end_cell": 0}
    with closing(sqlite3.connect(weighted)) as conn:
        plan = [r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", {**params, "cells_start": 1, "cells_end": 1})]
    samples = [step for step in plan if re.match(r"(SCAN|SEARCH) c\b", step)]
    assert [step.split(" USING")[0] for step in samples] == ["SEARCH c"] * 4, plan
    # Before and after the cells; then the integral at each end: the last sample at or before it, by id.
    assert all(step.endswith("(track_id=? AND ts>? AND ts<?)") for step in samples[:2]), plan
    assert all(step.endswith("(track_id=? AND ts<?)") for step in samples[2:]), plan
    assert any(re.match(r"SEARCH k USING .*\(track_id=\? AND cell>\? AND cell<\?\)", step) for step in plan), plan
    assert sum(step == "SEARCH i USING INTEGER PRIMARY KEY (rowid=?)" for step in plan) == 2, plan
    assert not any("TEMP B-TREE" in step for step in plan), plan


@pytest.mark.asyncio
async def test_whole_trace_averages_stay_plain(weighted):
    data = await get_json(weighted, "/weighted/-/report/counters.json?name=level&pid=40")
    (row,) = data["counters_list"]["rows"]
    assert row["avg"] == pytest.approx((0 + 10 + 30 + 99) / 4)
    assert not any("time-weighted" in f["text"] for f in data["footnotes"])


@pytest.mark.asyncio
async def test_values_show_their_unit_in_every_view(weighted):
    client = served(weighted).client
    # The list: 25 ms as a time (the unit is ms).
    page = (await client.get("/weighted/-/report/counters?name=level&pid=40&time=1.5s,5.5s")).text
    assert ">10ms<" in page and ">25ms<" in page and ">30ms<" in page
    # Inspect (text): min / avg / max, the value at ts and the delta in ms; 95 / 3.5 = 27.14 -> 27.1ms.
    text = (await client.get("/weighted/-/report/counters/inspect.txt?name=level&pid=40&time=2s,5.5s&ts=3s")).text
    assert re.search(r"Min / avg / max +30ms / 27\.1ms / 30ms", text), text
    assert "30ms (sampled at 2.5s)" in text
    # Timeline: the 2s-3s bucket holds 10 (held) then 30.
    text = (await client.get("/weighted/-/report/counters/timeline.txt?name=level&pid=40&buckets=10")).text
    assert "30ms  min 10ms  max 30ms  1 sample" in text, text
    # Histogram: values 0, 10, 30, 99 in four 25ms buckets, edges and stats in the unit.
    text = (await client.get("/weighted/-/report/counters/histogram.txt?name=level&pid=40&buckets=4")).text
    assert re.search(r"0ns-25ms \|#+ *\| 2 \(50.0%\)", text) and "75ms-100ms |" in text, text
    # Whole trace: a plain average of the samples, (0 + 10 + 30 + 99) / 4 = 34.75 -> 34.8ms.
    assert re.search(r"4 +0ns +34\.8ms +99ms +30ms +99ms +99ms", text), text


def test_unit_format_folds_units_into_values():
    from datasette_perfetto.report.views.counters import unit_format

    assert unit_format("bytes", 0, 4 << 20)(1.5 * (1 << 20)) == "1.5 MiB"
    assert unit_format("ns", 0, 1e9)(82_000_000) == "82ms"
    assert unit_format("ms", 0, 100)(27.142857) == "27.1ms"
    assert unit_format("%", 0, 20)(12.5) == "12.5%"  # tenths tell 0..20 apart in 100 steps
    assert unit_format("%", 0, 100)(12.5) == "12%"
    assert unit_format("Hz", 0, 5000)(3000) == "3000 Hz"
    assert unit_format("count", 0, 1000)(7) == "7"
    assert unit_format("count", 0, 10)(7) == "7.0"  # tenths tell 0..10 apart in 100 steps
