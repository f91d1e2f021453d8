"""The `processes` and `tracks` report views through Datasette's client, checked against SQL."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import TraceDB, get_json, ingest_case, ingest_named, served
from shared_data import CASES

from datasette_perfetto.report import format as fmt

pytestmark = pytest.mark.web  # served by Datasette: ./dev test runs these on 0.65 and 1.0

SCHED_CASE = CASES / "tables.TablesSched.test_synth_1_filter_sched"

# Slices per process: on the process's own tracks and on its threads' tracks.
PROCESS_SLICES = """SELECT p.pid, count(s.id) FROM process p
    JOIN track t ON t.upid = p.upid OR t.utid IN (SELECT utid FROM thread WHERE upid = p.upid)
    LEFT JOIN slice s ON s.track_id = t.id {where}
    WHERE p.upid != 0 GROUP BY p.upid"""


@pytest.fixture(scope="module")
def sched(tmp_path_factory):
    return ingest_case(tmp_path_factory, SCHED_CASE, "sched")


@pytest.fixture(scope="module")
def unscheduled(tmp_path_factory, demo_db):
    """The demo without its kernel scheduling data (still served as `demo`): processes ranked by slices."""
    path = tmp_path_factory.mktemp("unscheduled") / "demo.db"
    shutil.copy(demo_db.path, path)
    conn = sqlite3.connect(path)
    conn.executescript("DELETE FROM sched; DELETE FROM thread_state;")
    conn.close()
    return TraceDB(path)


async def get(path: Path, url: str):
    return await served(path).client.get(url)


# -- processes ----------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_processes_slice_and_thread_counts_match_sql(unscheduled):
    demo_db = unscheduled
    data = await get_json(demo_db.path, "/demo/-/report/processes.json")
    table = data["processes_table"]
    assert table["top_threads_by"] == "slice_count" and table["total_rows"] == 4
    got = {
        int(r.get("pid", 0)): (r.get("name"), int(r["thread_count"]), int(r.get("slice_count", 0)))
        for r in table["rows"]
    }
    slices = dict(demo_db.rows(PROCESS_SLICES.format(where="")))
    threads = dict(
        demo_db.rows(
            "SELECT p.pid, count(*) FROM thread t JOIN process p USING (upid) WHERE p.pid != 0 GROUP BY p.upid"
        )
    )
    names = dict(demo_db.rows("SELECT pid, name FROM process WHERE pid != 0"))
    assert got == {pid: (names[pid], threads[pid], slices.get(pid, 0)) for pid in names}
    assert [int(r.get("pid", 0)) for r in table["rows"]] == [
        100,
        200,
        300,
        7431,
    ]  # most slices first (no CPU data); no idle processes
    # Top threads: the process's threads with most slices, most first.
    browser = table["rows"][0]
    expected = demo_db.rows("""SELECT th.name || ' [' || th.tid || ']', count(*) FROM slice s
        JOIN thread_track tt ON tt.id = s.track_id JOIN thread th USING (utid)
        WHERE th.upid = (SELECT upid FROM process WHERE pid = 100) GROUP BY th.utid ORDER BY count(*) DESC LIMIT 3""")
    assert [(t["name"], t["value"]) for t in browser["top_threads"]] == expected


@pytest.mark.asyncio
async def test_processes_html_numbers_and_links(unscheduled):
    page = (await get(unscheduled.path, "/demo/-/report/processes?sort=name")).text
    assert "Processes (4 in scope)" in page and "CrBrowserMain [100] (134)" in page
    # Links keep only flags the target takes: sort=name means nothing to the slices table.
    assert 'href="/demo/-/report/slices/table?pid=100"' in page
    assert 'href="/demo/-/report/tracks/table?pid=300"' in page
    assert "no scheduling data" in page


@pytest.mark.asyncio
async def test_processes_time_counts_slices_starting_in_the_range(demo_db):
    start = demo_db.one("SELECT start_ts FROM trace_bounds")
    data = await get_json(demo_db.path, "/demo/-/report/processes.json?time=0.5s,1s&min_count=45")
    got = {int(r["pid"]): int(r["slice_count"]) for r in data["processes_table"]["rows"]}
    expected = dict(
        demo_db.rows(
            PROCESS_SLICES.format(where="AND s.ts >= ? AND s.ts < ?"), (start + 500_000_000, start + 1_000_000_000)
        )
    )
    assert got == {pid: n for pid, n in expected.items() if n >= 45} and len(got) == 2


@pytest.mark.asyncio
async def test_processes_cpu_time_from_sched_in_a_real_trace(sched):
    # Real data (a sched_switch diff test): 3 processes; thread 4 is still running at the end of the trace.
    data = await get_json(sched, "/sched/-/report/processes.json")
    table = data["processes_table"]
    assert table["top_threads_by"] == "cpu_time"
    db = TraceDB(sched)
    end = db.one("SELECT end_ts FROM trace_bounds")
    expected = dict(
        db.rows(
            """SELECT p.pid, sum(CASE WHEN s.dur < 0 THEN ? - s.ts ELSE s.dur END)
        FROM sched s JOIN thread t USING (utid) JOIN process p ON p.upid = t.upid WHERE s.utid != 0
        GROUP BY p.upid""",
            (end,),
        )
    )
    got = {int(r["pid"]): int(r["cpu_time"]) for r in table["rows"]}
    assert got == expected == {2: 589, 1: 70, 4: 10}
    assert [int(r["pid"]) for r in table["rows"]] == [2, 1, 4]  # by CPU time
    dur = end - db.one("SELECT start_ts FROM trace_bounds")
    assert table["rows"][0]["percent_of_trace"] == pytest.approx(100 * 589 / dur)
    assert [(t["name"], t["value"]) for t in table["rows"][0]["top_threads"]] == [
        ("two_thread_process [3]", 384),
        ("two_thread_process [2]", 205),
    ]


@pytest.mark.asyncio
async def test_processes_cpu_time_is_clipped_to_the_range(sched):
    db = TraceDB(sched)
    start, end = db.rows("SELECT start_ts, end_ts FROM trace_bounds")[0]
    lo, hi = start + 100, start + 300
    data = await get_json(sched, "/sched/-/report/processes.json?time=100ns,300ns")
    got = {int(r["pid"]): int(r.get("cpu_time", 0)) for r in data["processes_table"]["rows"]}
    expected = dict(
        db.rows(
            """SELECT p.pid, coalesce(sum(min(s.ts + d, :hi) - max(s.ts, :lo)), 0)
        FROM process p LEFT JOIN thread t ON t.upid = p.upid
        LEFT JOIN (SELECT utid, ts, CASE WHEN dur < 0 THEN :end - ts ELSE dur END AS d FROM sched) s
          ON s.utid = t.utid AND s.ts < :hi AND s.ts + s.d > :lo
        WHERE p.upid != 0 GROUP BY p.upid""",
            {"lo": lo, "hi": hi, "end": end},
        )
    )
    assert got == expected and got[2] == 301


@pytest.mark.asyncio
async def test_overview_shows_the_sections_with_data(sched, cpufreq):
    overview = (await get_json(sched, "/sched/-/report.json"))["overview"]
    assert int(overview["processes"]["total_rows"]) == 3
    assert [r["scope"] for r in overview["counters"]["rows"]] == ["cpu 0"]
    # A trace with CPU counters and no processes: the processes section says it is absent.
    overview = (await get_json(cpufreq, "/cpufreq/-/report.json"))["overview"]
    assert overview["processes"] is None and overview["counters"]["total_rows"] == 2
    assert {"noun": "processes", "reason": "not present in this trace"} in overview["absent"]


# -- tracks -------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_tracks_event_counts_match_sql(demo_db):
    data = await get_json(demo_db.path, "/demo/-/report/tracks.json?top=100")
    table = data["tracks_table"]
    counts = dict(
        demo_db.rows("""SELECT t.id, (SELECT count(*) FROM slice WHERE track_id = t.id)
        + (SELECT count(*) FROM counter WHERE track_id = t.id) + (SELECT count(*) FROM state WHERE track_id = t.id)
        FROM track t""")
    )
    assert {int(r.get("id", 0)): int(r.get("event_count", 0)) for r in table["rows"]} == counts
    assert int(table["total_rows"]) == len(counts) == len(table["rows"])
    events = [int(r.get("event_count", 0)) for r in table["rows"]]
    assert events == sorted(events, reverse=True)
    memory = next(r for r in table["rows"] if r.get("name") == "MemoryUsage")
    assert (memory["event_type"], memory["process"], int(memory["pid"])) == ("counter", "renderer", 200)


@pytest.mark.asyncio
async def test_tracks_scope_flags(demo_db):
    # pid: the process's own tracks and its threads' tracks.
    data = await get_json(demo_db.path, "/demo/-/report/tracks.json?pid=100&top=100")
    ids = {int(r.get("id", 0)) for r in data["tracks_table"]["rows"]}
    assert (
        ids
        == {
            r[0]
            for r in demo_db.rows("""SELECT t.id FROM track t LEFT JOIN thread th ON th.utid = t.utid
        WHERE coalesce(t.upid, th.upid) = (SELECT upid FROM process WHERE pid = 100)""")
        }
        and len(ids) == 6
    )
    data = await get_json(demo_db.path, "/demo/-/report/tracks.json?thread=IO*")
    assert [r["thread"] for r in data["tracks_table"]["rows"]] == ["IOThread"]
    data = await get_json(demo_db.path, "/demo/-/report/tracks.json?name=*Usage")
    assert [r["name"] for r in data["tracks_table"]["rows"]] == ["MemoryUsage"]
    start = demo_db.one("SELECT start_ts FROM trace_bounds")
    data = await get_json(demo_db.path, "/demo/-/report/tracks.json?tid=100&time=0.5s,1s")
    (row,) = data["tracks_table"]["rows"]
    assert int(row["event_count"]) == demo_db.one(
        "SELECT count(*) FROM slice s JOIN thread_track t ON t.id = s.track_id JOIN thread th USING (utid) "
        "WHERE th.tid = 100 AND s.ts >= ? AND s.ts < ?",
        (start + 500_000_000, start + 1_000_000_000),
    )


@pytest.mark.asyncio
async def test_tracks_of_a_cpu_in_a_real_trace(cpufreq):
    data = await get_json(cpufreq, "/cpufreq/-/report/tracks.json?cpu=2")
    (row,) = data["tracks_table"]["rows"]
    assert (row["name"], row["type"], int(row["cpu"]), int(row["event_count"])) == ("cpufreq", "cpu_frequency", 2, 1)
    text = (await get(cpufreq, "/cpufreq/-/report/tracks.txt")).text
    assert re.search(r"cpufreq · cpu 1\s+cpu_frequency\s+counter\s+2\s+cpu 1", text), text  # its subtitle too


# -- errors and links -------------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "url, message",
    [
        ("/demo/-/report/processes.json?sort=colour", "sort: 'colour' is not a sort key of processes table"),
        ("/demo/-/report/processes.json?tid=3", "processes table does not take tid"),
        ("/demo/-/report/processes.json?min_count=lots", "min_count: expected a whole number"),
        ("/demo/-/report/tracks.json?ts=1s", "tracks table does not take ts"),
        ("/demo/-/report/tracks.json?time=2s,1s", "time: the end (1s) must be after the start (2s)"),
        ("/demo/-/report/tracks/tree.json", "tracks has no view 'tree'"),
    ],
)
async def test_bad_requests_are_400_with_a_json_error(demo_db, url, message):
    response = await get(demo_db.path, url)
    assert response.status_code == 400
    body = response.json()
    assert body["ok"] is False and message in body["error"], body


@pytest.mark.asyncio
async def test_every_link_on_processes_and_tracks_pages_works(demo_db, sched):
    for path, db, pages in (
        (demo_db.path, "demo", ["processes", "processes?sort=name&time=0.5s,1s", "tracks", "tracks?pid=100&sort=type"]),
        (sched, "sched", ["processes", "tracks"]),
    ):
        ds = served(path)
        seen: set[str] = set()
        for page in pages:
            html = (await ds.client.get(f"/{db}/-/report/{page}")).text
            for href in re.findall(rf'href="(/{db}/-/report[^"]*)"', html):
                url = href.replace("&amp;", "&")
                if url not in seen:
                    seen.add(url)
                    assert (await ds.client.get(url)).status_code == 200, (page, url)
        assert len(seen) > 8


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "view, query",
    [
        ("processes", ""),
        ("processes", "time=0.5s,1s&min_count=45&sort=name"),
        ("processes", "sort=threads"),
        ("tracks", ""),
        ("tracks", "time=0.5s,1.5s&min_count=5&sort=name"),
        ("tracks", "pid=100&sort=type&top=20"),
    ],
)
async def test_canned_query_gives_the_rows_of_the_report(demo_db, view, query):
    ds = served(demo_db.path)
    data = (await ds.client.get(f"/demo/-/report/{view}.json?{query}")).json()
    key = "upid" if view == "processes" else "id"
    report = [int(r.get(key, 0)) for r in data[f"{view}_table"]["rows"]]
    canned = (await ds.client.get(f"/demo/{view}_table.json?_shape=array&{query}")).json()
    assert [r[key] for r in canned] == report and report


@pytest.mark.asyncio
async def test_threads_without_a_process_are_counted_in_a_footnote(tmp_path_factory):
    # Real data: a sched_switch diff test whose tasks belong to no known process.
    case = CASES / "parser.generic_kernel.GenericKernelParser.test_sched_switch_multiple_threads"
    path = ingest_case(tmp_path_factory, case, "tasks")
    db = TraceDB(path)
    end = db.one("SELECT end_ts FROM trace_bounds")
    threads, cpu_time = db.rows(
        """SELECT count(DISTINCT s.utid), sum(CASE WHEN s.dur < 0 THEN ? - s.ts ELSE s.dur END)
        FROM sched s JOIN thread t USING (utid) WHERE t.upid IS NULL AND s.utid != 0""",
        (end,),
    )[0]
    data = await get_json(path, "/tasks/-/report/processes.json")
    assert not data["processes_table"].get("rows") and threads == 2
    (note,) = data["footnotes"]
    assert note["text"].startswith("2 threads with no known process ran for ") and "scheduling/summary" in note["url"]
    assert note["text"] == (
        f"2 threads with no known process ran for {fmt.duration(cpu_time)} (not in this table); see them by thread"
    )


def share_range(db: TraceDB, share) -> tuple[int, int]:
    """A time range of the trace as shares of it, or "on slices": from a slice's start to another's, at a tenth
    and nine tenths of them; "on ends": from the end of one slice to another's (absolute ns)."""
    start, end = db.rows("SELECT start_ts, end_ts FROM trace_bounds")[0]
    if share in ("on slices", "on ends"):
        point = "ts" if share == "on slices" else "ts + dur"
        at = f"SELECT {point} FROM slice WHERE dur >= 0 ORDER BY ts LIMIT 1 OFFSET (SELECT count(*) * {{}} / 10 FROM slice)"
        return db.one(at.format(1)), db.one(at.format(9))
    return tuple(start + int((end - start) * f) for f in share)


async def range_counts_match_sql(db: TraceDB, lo: int, hi: int) -> tuple[str, str]:
    """Each track's events starting in [lo, hi) (tracks table) and each process's slices with a part in it
    (processes table) as the report counts them must equal SQL over the range; returns both pages' queries."""
    ds = served(db.path)
    tracks = await get_json(ds, f"/demo/-/report/tracks.json?time={lo},{hi}&top=500&sort=count")
    got = {int(r["id"]): int(r.get("event_count", 0)) for r in tracks["tracks_table"]["rows"]}
    expected = dict(
        db.rows(
            "SELECT t.id, CASE t.event_type"
            " WHEN 'slice' THEN (SELECT count(*) FROM slice s WHERE s.track_id = t.id AND s.ts >= ?1 AND s.ts < ?2)"
            " WHEN 'counter' THEN (SELECT count(*) FROM counter c WHERE c.track_id = t.id AND c.ts >= ?1 AND c.ts < ?2)"
            " WHEN 'state' THEN (SELECT count(*) FROM state x WHERE x.track_id = t.id AND x.ts >= ?1 AND x.ts < ?2)"
            " ELSE 0 END FROM track t",
            (lo, hi),
        )
    )
    assert got == {i: expected[i] for i in got} and len(got) == len(expected)
    start, end = db.rows("SELECT start_ts, end_ts FROM trace_bounds")[0]
    assert any(n for n in got.values()) or hi - lo < (end - start) / 100 or lo >= end or hi <= start
    processes = await get_json(ds, f"/demo/-/report/processes.json?time={lo},{hi}&top=500")
    got = {int(r["pid"]): int(r.get("slice_count", 0)) for r in processes["processes_table"]["rows"]}
    overlapping = "AND s.ts < ? AND (s.dur < 0 AND (SELECT end_ts FROM trace_bounds) >= ? OR s.ts + s.dur >= ?)"
    expected = dict(db.rows(PROCESS_SLICES.format(where=overlapping), (hi, lo, lo)))
    assert got == {pid: expected[pid] for pid in got}
    return str(tracks["queries"]), str(processes["queries"])


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "share", [(0.2, 0.35), (0.01, 0.99), (0.0, 1.0), (0.3, 1.5), (0.0001, 0.9), (0.4, 0.4001), "on slices"]
)
async def test_time_ranges_over_most_of_the_trace_count_what_lies_outside(demo_db, share):
    # A range longer than the trace outside it counts each track's events (and each process's slices) as the
    # whole trace's less those outside it: the same counts as in the range.
    lo, hi = share_range(demo_db, share)
    start, end = demo_db.rows("SELECT start_ts, end_ts FROM trace_bounds")[0]
    outside = (max(lo - start, 0) + max(end - hi, 0)) < min(hi, end) - max(lo, start)
    tracks, processes = await range_counts_match_sql(demo_db, lo, hi)
    assert ("- CASE tr.event_type" in tracks) == outside
    assert ("st.event_count\\n         - (SELECT" in processes) == outside


@pytest.fixture(scope="module", params=["demo", "cells"])
def track_cells_db(request, tmp_path_factory, demo_trace):
    """The demo, or test_report_name_cells' trace (nested slices across cells, an unfinished one), ingested with
    report_track_event_cell kept whatever its size (served as `demo`)."""
    from test_report_name_cells import cells_trace

    from datasette_perfetto import report_tables

    trace = demo_trace if request.param == "demo" else cells_trace().to_bytes()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(report_tables, "REPORT_TRACK_CELL_MIN_EVENTS", 0)
        return TraceDB(ingest_named(tmp_path_factory, trace, "demo"))


def cell_points(db: TraceDB) -> list[tuple[int, int]]:
    """Ranges whose ends lie on cell edges, just beside them, in a cell's first and second halves (either part
    read), before the trace and past it, and just after an unfinished slice's start."""
    width, t0, t1 = db.rows("SELECT name_cell_dur, start_ts, end_ts FROM report_grid, trace_bounds")[0]
    cells = (t1 - t0) // width
    at = [t0 + (cells * k // 8) * width for k in range(1, 8)]  # on edges
    ranges = [(at[0], at[6]), (at[1] - 1, at[5] + 1), (at[2] + 1, at[3] - 1)]
    ranges += [(at[1] + width // 4, at[5] + width * 3 // 4), (at[1] + width * 3 // 4, at[5] + width // 4)]
    ranges += [(t0 - 10 * width, t1 + 10 * width), (t0 - 5, at[2] + width // 3), (at[4] + width // 5, t1 + 1)]
    ranges += [(t0, t1), (t0, t0 + 1), (at[3], at[3] + 1), (t1 + 1, t1 + 2 * width)]
    # Just after an unfinished slice's start (dur -1: never ended, though its ts + dur lies before the start).
    ranges += [(ts + 1, t1) for (ts,) in db.rows("SELECT ts FROM slice WHERE dur < 0 LIMIT 3")]
    return ranges


@pytest.mark.asyncio
async def test_time_ranges_count_from_the_per_track_cells(track_cells_db):
    # With report_track_event_cell kept, any range's counts come from two running totals per track and the
    # events in its end cells: the same counts as in the range.
    db = track_cells_db
    assert db.count("report_track_event_cell") > 20
    ranges = cell_points(db) + [share_range(db, "on slices"), share_range(db, "on ends")]
    ranges += [share_range(db, share) for share in [(0.2, 0.35), (0.01, 0.99), (0.4, 0.4001)]]
    t1 = db.one("SELECT end_ts FROM trace_bounds")
    for lo, hi in ranges:
        tracks, processes = await range_counts_match_sql(db, lo, hi)
        assert "report_track_event_cell" in tracks
        assert ("report_track_event_cell" in processes) == (lo <= t1)


def test_track_cells_hold_each_tracks_events(track_cells_db):
    # Per track, the running totals end at its event count, and the finished slices ending counted once.
    db = track_cells_db
    last = db.rows(
        "SELECT c.track_id, c.cum_starting, c.cum_ending FROM report_track_event_cell c "
        "WHERE c.cell = (SELECT max(cell) FROM report_track_event_cell k WHERE k.track_id = c.track_id)"
    )
    stats = dict(db.rows("SELECT track_id, event_count FROM report_track_stats"))
    finished = dict(db.rows("SELECT track_id, count(*) FROM slice WHERE dur >= 0 GROUP BY track_id"))
    types = dict(db.rows("SELECT id, event_type FROM track"))
    assert len(last) > 5
    for track_id, starting, ending in last:
        assert starting == stats[track_id] or types[track_id] != "slice"
        assert ending == (finished.get(track_id, 0) if types[track_id] == "slice" else 0)


def test_counts_take_the_singular_for_one():
    assert fmt.plural(1, "process", many="processes") == "1 process"
    assert fmt.plural(2, "process", many="processes") == "2 processes"
    assert (fmt.plural(1, "dump"), fmt.plural(0, "dump")) == ("1 dump", "0 dumps")
    assert fmt.plural(1200, "sample", "1,200") == "1,200 samples"


@pytest.mark.asyncio
async def test_a_one_process_trace_says_one_process(tmp_path, demo_db):
    path = tmp_path / "demo.db"
    shutil.copy(demo_db.path, path)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM process WHERE pid IS NOT NULL AND pid != 100 AND upid != 0")
    conn.commit()
    conn.close()
    text = (await get(path, "/demo/-/report/processes.txt")).text
    assert "| 1 process]" in text.splitlines()[0], text.splitlines()[0]
