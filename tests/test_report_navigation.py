"""Navigation both ways (issue 15, "nav"): every details page links to the report scoped to exactly its row,
and the report links back to the details pages.

On the demo (two machines: tids and pids repeat): each thread, process, track and slice page's report links are
followed, and the report's figures compared with SQL over that row alone; a row no report flags can single out
is not linked. The slices inspect page links the slice, its track, thread and process. On a built trace with an
unnamed thread track and a thread named like its owner label ("thread 32628 (python)"): the report's tracks
table titles tracks as /-/tracks does, and no owner label says "thread thread".
"""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from conftest import TraceDB, get_json, ingest_named, served

from datasette_perfetto.trace_builder import TraceBuilder

pytestmark = pytest.mark.web

BIG = "10000"  # top: every row


def report_hrefs(page_html: str) -> dict[tuple[str, str], dict[str, str]]:
    """The report links on a details page: (noun, view) -> flags, from the page's own hrefs."""
    section = page_html.split('<section class="perfetto-report-links"', 1)[1].split("</section>", 1)[0]
    found = {}
    for href in re.findall(r'href="([^"]+)"', section):
        url = urlsplit(html.unescape(href))
        noun, view = url.path.split("/-/report/", 1)[1].split("/")
        found[(noun, view)] = dict(parse_qsl(url.query))
    return found


async def follow(ds, db: str, noun: str, view: str, flags: dict[str, str], **more: str) -> dict:
    return await get_json(ds, f"/{db}/-/report/{noun}/{view}.json?{urlencode({**flags, **more})}")


async def check_scoped_reports(ds, db: TraceDB, links: dict, tracks_sql: str, threads_sql: str, params: tuple):
    """The linked views' figures equal SQL over the row's tracks (`tracks_sql`) and threads (`threads_sql`)."""
    slices = dict(db.rows(f"SELECT name, count(*) FROM slice WHERE track_id IN ({tracks_sql}) GROUP BY name", params))
    if ("slices", "table") in links:
        got = (await follow(ds, "demo", "slices", "table", links["slices", "table"], top=BIG))["slices_table"]
        assert {r["name"]: r["count"] for r in got["rows"]} == slices
        assert got["total_slices"] == sum(slices.values())
    else:
        assert not slices
    counters = dict(
        db.rows(f"SELECT track_id, count(*) FROM counter WHERE track_id IN ({tracks_sql}) GROUP BY track_id", params)
    )
    if ("counters", "list") in links:
        got = (await follow(ds, "demo", "counters", "list", links["counters", "list"], top=BIG))["counters_list"]
        assert {r["track_id"]: r["count"] for r in got["rows"]} == counters
    else:
        assert not counters
    tracks = {r[0] for r in db.rows(tracks_sql, params)}
    if ("tracks", "table") in links:
        got = (await follow(ds, "demo", "tracks", "table", links["tracks", "table"], top=BIG))["tracks_table"]
        assert {r["id"] for r in got["rows"]} == tracks
    else:
        assert not tracks
    if threads_sql is None:
        return
    running = dict(
        db.rows(
            f"SELECT utid, sum(dur) FROM sched WHERE utid IN ({threads_sql}) AND utid != 0 AND dur > 0 GROUP BY utid",
            params,
        )
    )
    if ("scheduling", "summary") in links:
        got = await follow(ds, "demo", "scheduling", "summary", links["scheduling", "summary"], top=BIG)
        rows = got["scheduling_summary"]["rows"]
        tids = dict(db.rows(f"SELECT id, tid FROM thread WHERE id IN ({threads_sql})", params))
        assert sorted((r["tid"], r["cpu_time"]) for r in rows) == sorted((tids[u], t) for u, t in running.items())
    else:
        assert not running
    samples = db.one(
        f"""SELECT count(*) FROM stack_sample s JOIN profiler_task_context tc ON tc.id = s.task_context_id
WHERE tc.utid IN ({threads_sql})""",
        params,
    )
    if ("stack-samples", "functions") in links:
        got = await follow(ds, "demo", "stack-samples", "functions", links["stack-samples", "functions"], top="1")
        assert got["stack_samples_functions"]["total_samples"] == samples
    else:
        assert samples == 0


@pytest.mark.asyncio
async def test_thread_pages_link_the_report_of_exactly_that_thread(demo_db):
    ds = served(demo_db.path)
    linked = 0
    for (utid,) in demo_db.rows("SELECT id FROM thread ORDER BY id"):
        page = await ds.client.get(f"/demo/-/thread/{utid}")
        assert page.status_code == 200
        links = report_hrefs(page.text)
        tid, pid = demo_db.rows(
            "SELECT th.tid, p.pid FROM thread th LEFT JOIN process p ON p.id = th.upid WHERE th.id = ?", (utid,)
        )[0]
        shared = demo_db.one(
            "SELECT count(*) FROM thread th LEFT JOIN process p ON p.id = th.upid WHERE th.tid = ? AND p.pid IS ?",
            (tid, pid),
        )
        if shared > 1:  # the swapper of each machine: tid 0 in pid 0, no names to tell them apart
            assert links == {}
            assert "The report cannot be scoped to only this thread" in page.text
            continue
        linked += 1
        assert all(flags.get("tid") == str(tid) and flags.get("pid") == str(pid) for flags in links.values())
        await check_scoped_reports(ds, demo_db, links, "SELECT id FROM track WHERE utid = ?", "SELECT ?", (utid,))
    assert linked >= 10


@pytest.mark.asyncio
async def test_process_pages_link_the_report_of_exactly_that_process(demo_db):
    ds = served(demo_db.path)
    linked = 0
    for upid, pid in demo_db.rows("SELECT id, pid FROM process ORDER BY id"):
        page = await ds.client.get(f"/demo/-/process/{upid}")
        links = report_hrefs(page.text)
        if demo_db.one("SELECT count(*) FROM process WHERE pid = ?", (pid,)) > 1:
            assert links == {}  # pid 0 on each machine
            continue
        linked += 1
        assert all(flags == {"pid": str(pid)} for flags in links.values())
        tracks = (
            "SELECT id FROM track WHERE upid = ?1 UNION SELECT tr.id FROM track tr JOIN thread th ON th.id = tr.utid "
            "WHERE th.upid = ?1"
        )
        await check_scoped_reports(ds, demo_db, links, tracks, "SELECT id FROM thread WHERE upid = ?1", (upid,))
        heap = demo_db.one("SELECT count(*) FROM heap_graph_object WHERE upid = ?", (upid,))
        assert (("heap-dump", "types") in links) == (heap > 0)
    assert linked == 4


@pytest.mark.asyncio
async def test_track_pages_link_the_report_of_exactly_that_track(demo_db):
    ds = served(demo_db.path)
    linked = 0
    for track_id, event_type in demo_db.rows("SELECT id, event_type FROM track ORDER BY id"):
        page = await ds.client.get(f"/demo/-/track/{track_id}")
        links = report_hrefs(page.text)
        if ("tracks", "table") in links:
            got = await follow(ds, "demo", "tracks", "table", links["tracks", "table"], top=BIG)
            assert [r["id"] for r in got["tracks_table"]["rows"]] == [track_id]
        if ("slices", "table") in links:
            linked += 1
            assert event_type == "slice"
            got = (await follow(ds, "demo", "slices", "table", links["slices", "table"], top=BIG))["slices_table"]
            expected = dict(
                demo_db.rows("SELECT name, count(*) FROM slice WHERE track_id = ? GROUP BY name", (track_id,))
            )
            assert {r["name"]: r["count"] for r in got["rows"]} == expected
        if ("counters", "list") in links:
            linked += 1
            got = (await follow(ds, "demo", "counters", "list", links["counters", "list"], top=BIG))["counters_list"]
            count = demo_db.one("SELECT count(*) FROM counter WHERE track_id = ?", (track_id,))
            assert [(r["track_id"], r["count"]) for r in got["rows"]] == [(track_id, count)]
    assert linked >= 10
    # The two RefreshRate counters of pid 300 (one per display) share owner and name: not linked, and said so.
    (refresh, _) = demo_db.rows("SELECT id FROM track WHERE name = 'RefreshRate' ORDER BY id")
    page = await ds.client.get(f"/demo/-/track/{refresh[0]}")
    assert report_hrefs(page.text) == {}
    assert "The report cannot be scoped to only this track" in page.text


@pytest.mark.asyncio
async def test_slice_pages_link_the_inspect_view_of_exactly_that_slice(demo_db):
    ds = served(demo_db.path)
    ids = [r[0] for r in demo_db.rows("SELECT id FROM slice WHERE id % 37 = 0 ORDER BY id")]
    linked = 0
    for slice_id in ids:
        page = await ds.client.get(f"/demo/-/slice/{slice_id}")
        links = report_hrefs(page.text)
        if not links:
            continue
        linked += 1
        got = (await follow(ds, "demo", "slices", "inspect", links["slices", "inspect"]))["slices_inspect"]
        assert got["matched"] == 1
        assert got["slice"]["id"] == slice_id
    assert linked == len(ids)


@pytest.mark.asyncio
async def test_inspect_page_links_the_slice_its_track_thread_and_process(demo_db):
    ds = served(demo_db.path)
    slice_id, track_id, utid, upid = demo_db.rows(
        """SELECT s.id, s.track_id, tr.utid, th.upid FROM slice s JOIN track tr ON tr.id = s.track_id
JOIN thread th ON th.id = tr.utid WHERE th.tid = 101 ORDER BY s.dur DESC LIMIT 1"""
    )[0]
    links = report_hrefs((await ds.client.get(f"/demo/-/slice/{slice_id}")).text)
    page = (await ds.client.get(f"/demo/-/report/slices/inspect?{urlencode(links['slices', 'inspect'])}")).text
    for href in (f"/demo/-/slice/{slice_id}", f"/demo/-/track/{track_id}", f"/demo/-/thread/{utid}"):
        assert f'href="{href}"' in page
    assert f'href="/demo/-/process/{upid}"' in page
    assert "<td>-</td>" not in page.split("The slice", 1)[1].split("Args", 1)[0]  # no "Track -"
    title = demo_db.one(
        "SELECT coalesce(tr.name, th.name) FROM track tr JOIN thread th ON th.id = tr.utid WHERE tr.id = ?", (track_id,)
    )
    assert f">{title}</a>" in page
    # The instances table: each row links its slice, track, thread (or none) and process.
    many = (await ds.client.get("/demo/-/report/slices/inspect?name=URLRequest")).text
    for sid, tid_, upid_ in demo_db.rows(
        """SELECT s.id, s.track_id, coalesce(tr.upid, th.upid) FROM slice s JOIN track tr ON tr.id = s.track_id
LEFT JOIN thread th ON th.id = tr.utid WHERE s.name = 'URLRequest'"""
    ):
        for href in (f"/demo/-/slice/{sid}", f"/demo/-/track/{tid_}", f"/demo/-/process/{upid_}"):
            assert f'href="{href}"' in many


def owner_named_like_a_label() -> bytes:
    """A PyTorch-style thread named "thread 32628 (python)" whose (unnamed) thread track holds the slices."""
    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(32628, "python")
    main = seq.thread(32628, 32628, "thread 32628 (python)")
    other = seq.thread(32628, 32630, "worker")
    seq.slice_begin(1_000, main, "step")
    seq.slice_end(2_000, main)
    seq.slice_begin(1_000, other, "load")
    seq.slice_end(1_500, other)
    return b.to_bytes()


@pytest.mark.asyncio
async def test_unnamed_track_titles_and_owner_labels_match_the_tracks_page(tmp_path_factory, demo_db):
    db = TraceDB(ingest_named(tmp_path_factory, owner_named_like_a_label(), "py"))
    (track_id,) = db.rows("SELECT tr.id FROM track tr JOIN thread th ON th.id = tr.utid WHERE th.tid = 32628")[0]
    assert db.one("SELECT name FROM track WHERE id = ?", (track_id,)) is None  # an unnamed thread track
    ds = served(db.path)
    tracks_json = await get_json(ds, "/py/-/tracks.json")
    title = next(t["title"] for t in tracks_json["tracks"] if t["id"] == track_id)
    assert title == "thread 32628 (python)"
    report = (await ds.client.get("/py/-/report/tracks")).text
    # The title links the track's slices and is followed by its details link (it was "- details").
    assert f'>{title}</a> <a class="perfetto-report-details" href="/py/-/track/{track_id}"' in report
    text = (await ds.client.get("/py/-/report/tracks.txt")).text
    assert title in text and "- details" not in report
    for url in ("/py/-/tracks", "/py/-/report/tracks", "/py/-/report/tracks.txt", f"/py/-/track/{track_id}"):
        assert "thread thread" not in (await ds.client.get(url)).text, url
    assert "thread 32628 (python) [32628]" in text
    # The demo: every track's title is the same in the report and on /-/tracks, and no owner doubles up.
    demo = served(demo_db.path)
    listed = {t["id"]: t["title"] for t in (await get_json(demo, "/demo/-/tracks.json?limit=1000"))["tracks"]}
    reported = (await get_json(demo, f"/demo/-/report/tracks/table.json?top={BIG}"))["tracks_table"]["rows"]
    page = (await demo.client.get(f"/demo/-/report/tracks?top={BIG}")).text
    for r in reported:
        shown = listed[r["id"]] or f"(unnamed {r['type']})"
        assert f">{html.escape(shown, quote=False)}</a>" in page, r
    for url in ("/demo/-/tracks", f"/demo/-/report/tracks?top={BIG}", "/demo/-/report/counters"):
        assert "thread thread" not in (await demo.client.get(url)).text


def same_ids_on_two_machines() -> bytes:
    """pid 50 / tid 51 on two machines, told apart only by their thread names (and a third, identical but for
    the machine, that nothing tells apart)."""
    b = TraceBuilder()
    for machine, thread, slice_name in ((None, "alpha", "a"), (7, "beta", "b"), (8, "beta", "c")):
        seq = b.sequence(1, machine_id=machine)
        seq.process(50, "app")
        t = seq.thread(50, 51, thread)
        seq.slice_begin(1_000, t, slice_name)
        seq.slice_end(2_000, t)
    return b.to_bytes()


@pytest.mark.asyncio
async def test_repeated_ids_are_told_apart_by_names_or_not_linked(tmp_path_factory):
    db = TraceDB(ingest_named(tmp_path_factory, same_ids_on_two_machines(), "machines"))
    ds = served(db.path)
    threads = db.rows("SELECT id, name FROM thread WHERE tid = 51 ORDER BY id")
    assert [name for _, name in threads] == ["alpha", "beta", "beta"]
    for utid, name in threads:
        links = report_hrefs((await ds.client.get(f"/machines/-/thread/{utid}")).text)
        if name == "beta":  # two threads with the same ids and names: no flags select only one
            assert links == {}
            continue
        assert links["slices", "table"] == {"pid": "50", "tid": "51", "process": "app", "thread": "alpha"}
        got = await follow(ds, "machines", "slices", "table", links["slices", "table"])
        assert [(r["name"], r["count"]) for r in got["slices_table"]["rows"]] == [("a", 1)]


@pytest.mark.asyncio
async def test_names_a_flag_cannot_carry_are_not_used(tmp_path_factory):
    """Threads told apart only by a padded name, or by one too long for a GLOB pattern: not linked (a 200, no
    error); the threads with plain names still are."""
    b = TraceBuilder()
    long_name = "w" * 60_000
    for machine, thread in ((None, "plain"), (7, " padded "), (8, long_name), (9, long_name)):
        seq = b.sequence(1, machine_id=machine)
        seq.process(50, "app")
        t = seq.thread(50, 51, thread)
        seq.slice_begin(1_000, t, "s")
        seq.slice_end(2_000, t)
    db = TraceDB(ingest_named(tmp_path_factory, b.to_bytes(), "names"))
    ds = served(db.path)
    for utid, name in db.rows("SELECT id, name FROM thread WHERE tid = 51 ORDER BY id"):
        page = await ds.client.get(f"/names/-/thread/{utid}")
        assert page.status_code == 200
        links = report_hrefs(page.text)
        assert (links != {}) == (name == "plain"), name[:10]
