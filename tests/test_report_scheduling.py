"""The `scheduling` report views through Datasette's client, checked against SQL over a kernel trace."""

from __future__ import annotations

import pytest
from conftest import get_error, get_json, served

pytestmark = pytest.mark.web  # served by Datasette: ./dev test runs these on 0.65 and 1.0


@pytest.fixture
def ds(sched_db):
    return served(sched_db.path)


def bounds(db) -> tuple[int, int]:
    return db.rows("SELECT start_ts, end_ts FROM trace_bounds")[0]


# Per thread: CPU time from sched, runnable (R, R+) and sleeping (other, not dead) time from thread_state,
# each row clipped to [lo, hi) and a still-open row (dur -1) lasting until hi.
CLIPPED = "max(min(CASE WHEN dur < 0 THEN :hi ELSE ts + dur END, :hi) - max(ts, :lo), 0)"
EXPECTED_BY_THREAD = f"""SELECT t.tid,
  (SELECT coalesce(sum({CLIPPED}), 0) FROM sched WHERE utid = t.utid) AS cpu,
  (SELECT coalesce(sum({CLIPPED}), 0) FROM thread_state WHERE utid = t.utid AND state IN ('R', 'R+')) AS runnable,
  (SELECT coalesce(sum({CLIPPED}), 0) FROM thread_state WHERE utid = t.utid
     AND state NOT IN ('Running', 'R', 'R+', 'X', 'Z', 'x')) AS sleeping
FROM thread t WHERE t.utid != 0 AND EXISTS (SELECT 1 FROM thread_state WHERE utid = t.utid)"""


def expected(db, lo: int, hi: int) -> dict[int, tuple[int, int, int]]:
    conn_rows = db.rows(EXPECTED_BY_THREAD.replace(":hi", str(hi)).replace(":lo", str(lo)))
    return {tid: (cpu, runnable, sleeping) for tid, cpu, runnable, sleeping in conn_rows}


def summary_rows(data: dict) -> dict[int, tuple[int, int, int]]:
    return {
        int(r.get("tid", 0)): (int(r.get("cpu_time", 0)), int(r.get("runnable", 0)), int(r.get("sleeping", 0)))
        for r in data["scheduling_summary"]["rows"]
    }


@pytest.mark.asyncio
async def test_summary_per_thread_matches_sql(ds, sched_db):
    data = await get_json(ds, "/sched/-/report/scheduling.json?top=50")
    assert data["view"] == "summary"
    start, end = bounds(sched_db)
    want = expected(sched_db, start, end)
    assert summary_rows(data) == want and len(want) == 8
    rows = data["scheduling_summary"]["rows"]
    assert [int(r["cpu_time"]) for r in rows] == sorted((c for c, _, _ in want.values()), reverse=True)
    top = rows[0]
    assert (top["name"], top["process"], top["pid"]) == ("Worker-1", "com.example.app", 1000)
    assert top["percent_of_trace"] == pytest.approx(100 * int(top["cpu_time"]) / (end - start))
    assert data["scheduling_summary"]["cpu_count"] == 2


@pytest.mark.asyncio
async def test_still_running_thread_counts_until_the_end(ds, sched_db):
    start, end = bounds(sched_db)
    open_ts = sched_db.one("SELECT s.ts FROM sched s JOIN thread t USING (utid) WHERE s.dur = -1 AND t.tid = 1000")
    closed = sched_db.one("SELECT sum(s.dur) FROM sched s JOIN thread t USING (utid) WHERE s.dur >= 0 AND t.tid = 1000")
    data = await get_json(ds, "/sched/-/report/scheduling.json?tid=1000")
    (row,) = data["scheduling_summary"]["rows"]
    assert int(row["cpu_time"]) == closed + (end - open_ts)


@pytest.mark.asyncio
async def test_summary_clips_to_the_time_range(ds, sched_db):
    start, _ = bounds(sched_db)
    lo, hi = start + 200_000_000, start + 400_000_000
    data = await get_json(ds, "/sched/-/report/scheduling.json?time=0.2s,0.4s&top=50")
    assert summary_rows(data) == expected(sched_db, lo, hi)
    # A thread's CPU + runnable + sleeping time fills the range once it has started.
    cpu, runnable, sleeping = summary_rows(data)[1002]
    assert cpu + runnable + sleeping == hi - lo


@pytest.mark.asyncio
async def test_summary_by_process_sums_its_threads(ds, sched_db):
    by_thread = summary_rows(await get_json(ds, "/sched/-/report/scheduling.json?top=50"))
    data = await get_json(ds, "/sched/-/report/scheduling.json?group_by=process")
    rows = {r["name"]: int(r["cpu_time"]) for r in data["scheduling_summary"]["rows"]}
    app = [tid for (tid,) in sched_db.rows("SELECT tid FROM thread JOIN process p USING (upid) WHERE p.pid = 1000")]
    assert rows["com.example.app"] == sum(by_thread[tid][0] for tid in app)
    assert rows["(no process)"] == by_thread[777][0]  # logd.writer: not in the process tree
    assert data["scheduling_summary"]["group_by"] == "process"


@pytest.mark.asyncio
async def test_summary_on_one_cpu(ds, sched_db):
    data = await get_json(ds, "/sched/-/report/scheduling.json?cpu=1&sort=runnable")
    start, end = bounds(sched_db)
    cpu_time = dict(
        sched_db.rows(
            f"SELECT t.tid, sum({CLIPPED.replace(':hi', str(end)).replace(':lo', str(start))}) FROM sched "
            "JOIN thread t USING (utid) WHERE cpu = 1 AND utid != 0 GROUP BY t.tid"
        )
    )
    rows = data["scheduling_summary"]["rows"]
    assert {int(r["tid"]): int(r["cpu_time"]) for r in rows} == cpu_time
    assert [int(r["runnable"]) for r in rows] == sorted((int(r["runnable"]) for r in rows), reverse=True)
    assert data["scheduling_summary"]["cpu_count"] == 1


@pytest.mark.asyncio
async def test_summary_html_and_errors(ds):
    page = (await ds.client.get("/sched/-/report/scheduling")).text
    assert "Worker-1 [1002]" in page and "568ms" in page and "2 CPUs" in page
    assert 'href="/sched/-/report/scheduling/timeline?tid=1002"' in page
    error = await get_error(ds, "/sched/-/report/scheduling.json?group_by=cpu")
    assert error["parameter"] == "group_by" and error["options"] == ["thread", "process"]
    error = await get_error(ds, "/sched/-/report/scheduling.json?sort=dur")
    assert error["parameter"] == "sort" and "cpu" in error["options"]


@pytest.mark.asyncio
async def test_trace_without_scheduling_data(v8_db):
    ds = served(v8_db.path)  # a Chrome JSON trace: no kernel data
    data = await get_json(ds, "/v8/-/report/scheduling.json")
    assert data["scheduling_summary"]["rows"] == [] and data["scheduling_summary"]["cpu_count"] == 0
    page = (await ds.client.get("/v8/-/report/scheduling")).text
    assert "no scheduling data in this trace" in page
    overview = (await get_json(ds, "/v8/-/report.json"))["overview"]
    assert overview["scheduling"] is None
    assert {"noun": "scheduling", "reason": "not present in this trace"} in overview["absent"]


# -- timeline ------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_timeline_load_per_bucket_matches_sql(ds, sched_db):
    data = (await get_json(ds, "/sched/-/report/scheduling/timeline.json?buckets=10"))["scheduling_timeline"]
    start, end = bounds(sched_db)
    assert data["cpu_count"] == 2 and int(data["bucket_dur"]) == 100_000_000
    busy_total = 0
    for b in data["buckets"]:
        lo, hi = int(b["start_ts"]), int(b["end_ts"])
        busy = sched_db.one(
            f"SELECT sum({CLIPPED.replace(':hi', str(hi)).replace(':lo', str(lo))}) FROM sched "
            f"WHERE utid != 0 AND ts < {hi}"
        )
        assert int(b["total_dur"]) == busy
        assert b["value"] == pytest.approx(busy / ((hi - lo) * 2))
        by_thread = sched_db.rows(
            f"SELECT t.name || ' [' || t.tid || ']', sum({CLIPPED.replace(':hi', str(hi)).replace(':lo', str(lo))}) "
            f"AS d FROM sched JOIN thread t USING (utid) WHERE utid != 0 AND ts < {hi} GROUP BY utid "
            "HAVING d > 0 ORDER BY d DESC LIMIT 3"
        )
        assert [(d["name"], int(d["value"])) for d in b["dominant"]] == by_thread
        busy_total += busy
    assert int(data["buckets"][-1]["end_ts"]) == end
    assert busy_total == sched_db.one(
        f"SELECT sum({CLIPPED.replace(':hi', str(end)).replace(':lo', str(start))}) FROM sched WHERE utid != 0"
    )


@pytest.mark.asyncio
async def test_timeline_of_one_thread_and_one_cpu(ds, sched_db):
    data = (await get_json(ds, "/sched/-/report/scheduling/timeline.json?tid=1002&buckets=5"))["scheduling_timeline"]
    assert {d["name"] for b in data["buckets"] for d in b["dominant"]} == {"Worker-1 [1002]"}
    start, end = bounds(sched_db)
    assert sum(int(b["total_dur"]) for b in data["buckets"]) == sched_db.one(
        f"SELECT sum({CLIPPED.replace(':hi', str(end)).replace(':lo', str(start))}) FROM sched s "
        "JOIN thread t USING (utid) WHERE t.tid = 1002"
    )
    one_cpu = (await get_json(ds, "/sched/-/report/scheduling/timeline.json?cpu=0"))["scheduling_timeline"]
    assert one_cpu["cpu_count"] == 1
    assert all(0 <= b.get("value", 0) <= 1 for b in one_cpu["buckets"])
    page = (await ds.client.get("/sched/-/report/scheduling/timeline")).text
    assert "<svg" in page and "linear scale" in page and "CPU load per 50ms (2 CPUs)" in page


# -- inspect -------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_inspect_a_sleeping_thread_says_who_woke_it(ds, sched_db):
    start, _ = bounds(sched_db)
    at = start + 310_000_000
    data = (await get_json(ds, "/sched/-/report/scheduling/inspect.json?thread=main&ts=310ms"))["scheduling_inspect"]
    state_ts, dur, state = sched_db.rows(
        "SELECT s.ts, s.dur, s.state FROM thread_state s JOIN thread t USING (utid) WHERE t.tid = 1000 "
        "AND s.ts <= ? AND s.ts + s.dur > ?",
        (at, at),
    )[0]
    assert (
        (data["state"], int(data["state_ts"]), int(data["state_dur"])) == (state, state_ts, dur) == ("S", state_ts, dur)
    )
    # The next state is the wakeup: runnable, woken by surfaceflinger, then running.
    wake_ts, wake_dur, waker = sched_db.rows(
        "SELECT s.ts, s.dur, w.tid FROM thread_state s JOIN thread t USING (utid) JOIN thread w "
        "ON w.utid = s.waker_utid WHERE t.tid = 1000 AND s.ts = ? AND s.state = 'R'",
        (state_ts + dur,),
    )[0]
    assert (int(data["wakeup_ts"]), int(data["waker_tid"]), data["waker_thread"]) == (wake_ts, waker, "surfaceflinger")
    assert int(data.get("wakeup_latency", 0)) == wake_dur
    assert data["cpu"] == -1 and data["found"] is True


@pytest.mark.asyncio
async def test_inspect_blocked_and_running_states(ds, sched_db):
    blocked = (await get_json(ds, "/sched/-/report/scheduling/inspect.json?tid=1002&ts=302ms"))["scheduling_inspect"]
    assert blocked["state"] == "D" and blocked["blocked_function"] == "filemap_fault"
    running = (await get_json(ds, "/sched/-/report/scheduling/inspect.json?tid=1002&ts=310ms"))["scheduling_inspect"]
    start, _ = bounds(sched_db)
    at = start + 310_000_000
    cpu, end_state = sched_db.rows(
        "SELECT s.cpu, s.end_state FROM sched s JOIN thread t USING (utid) WHERE t.tid = 1002 AND s.ts <= ? "
        "AND s.ts + s.dur > ?",
        (at, at),
    )[0]
    assert running["state"] == "Running"
    assert (int(running.get("cpu", 0)), running["end_state"]) == (cpu, end_state)
    page = (await ds.client.get("/sched/-/report/scheduling/inspect?tid=1002&ts=302ms")).text
    assert "Uninterruptible sleep (D)" in page and "filemap_fault" in page


@pytest.mark.asyncio
async def test_inspect_errors_fail_fast(ds):
    missing_ts = await get_error(ds, "/sched/-/report/scheduling/inspect.json?thread=main")
    assert missing_ts["parameter"] == "ts"
    missing_thread = await get_error(ds, "/sched/-/report/scheduling/inspect.json?ts=1s")
    assert missing_thread["parameter"] == "thread" and "thread or tid" in missing_thread["error"]
    several = await get_error(ds, "/sched/-/report/scheduling/inspect.json?thread=R*&ts=300ms")
    assert several["options"] == [
        "RenderEngine [501] in /system/bin/surfaceflinger [500]",
        "RenderThread [1001] in com.example.app [1000]",
    ]
    unknown = await get_error(ds, "/sched/-/report/scheduling/inspect.json?thread=nobody&ts=300ms")
    assert "no thread matches thread=nobody" in unknown["error"]
    bad_ts = await get_error(ds, "/sched/-/report/scheduling/inspect.json?tid=1002&ts=soon")
    assert bad_ts["parameter"] == "ts"
    text = await ds.client.get("/sched/-/report/scheduling/inspect.txt?thread=R*&ts=300ms")
    assert text.status_code == 400 and "RenderThread [1001]" in text.text


@pytest.mark.asyncio
async def test_inspect_a_reused_tid_picks_the_thread_alive_at_ts(tmp_path):
    from test_sched import switch

    from datasette_perfetto.ingest import ingest_bytes
    from datasette_perfetto.trace_builder import TraceBuilder

    b = TraceBuilder()
    b.ftrace(
        0,
        switch(100, 0, "swapper/0", 0, 50, "first"),
        switch(200, 50, "first", 1, 0, "swapper/0"),
        {"timestamp": 300, "pid": 0, "sched_process_free": dict(pid=50, comm="first")},
        switch(400, 0, "swapper/0", 0, 50, "second"),
        switch(500, 50, "second", 1, 0, "swapper/0"),
    )
    path = tmp_path / "reuse.db"
    ingest_bytes(b.to_bytes(), str(path))
    ds = served(path)
    # Raw timestamps (no unit) are absolute nanoseconds.
    first = (await get_json(ds, "/reuse/-/report/scheduling/inspect.json?tid=50&ts=250"))["scheduling_inspect"]
    assert (first["thread"], first["state"]) == ("first", "S")
    second = (await get_json(ds, "/reuse/-/report/scheduling/inspect.json?tid=50&ts=450"))["scheduling_inspect"]
    assert (second["thread"], second["state"], second["state_ts"]) == ("second", "Running", 400)
