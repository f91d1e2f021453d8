"""The tracks page and the track, slice, thread and process details pages (issue 4, "In Datasette").

Through datasette.client: content, effective dimensions, escaping of hostile names, 404s for unknown and
malformed ids, 403s, databases without the dimension tables, links from Datasette's tables and from the
report; and one page in a real headless Chromium.

The dimension tables (`track_dimension`, `dimension`, `track_subtitle`) are written by the fixture here with
the columns of the ingestion contract, from the ingested tracks, as resolution would fill them: machine on
every track, process/thread on associated tracks, a custom `rank` declared on a process track (inherited by
its tracks) and on a thread track with a display name, a string `shard` on a global track and its child.
"""

from __future__ import annotations

import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import TraceDB, datasette_with, ingest_named, served, sql_path

from datasette_perfetto.trace_builder import TraceBuilder, process_uuid

pytestmark = pytest.mark.web  # served by Datasette: ./dev test runs these on 0.65 and 1.0

HOSTILE_PROCESS = "<script>alert('p')</script>"
HOSTILE_THREAD = '<worker & "q">'
HOSTILE_SLICE = "<img src=x onerror=alert(1)>"
HOSTILE_ARG = "<script>alert(2)</script>"
HOSTILE_DISPLAY = "<b>east</b> & co"
HOSTILE_SHARD = "<i>s1</i>"


def trainer_trace() -> bytes:
    """The RFC's shape: a `trainer` process with threads, a process-scoped annotation track and counter, a
    second process, and a global track with a child; nested slices with args and a flow."""
    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(10, "trainer")
    main = seq.thread(10, 11, "main")
    worker = seq.thread(10, 12, HOSTILE_THREAD)
    annotations = seq.track(1000, "CPU annotations", parent_uuid=process_uuid(10))
    seq.process(20, HOSTILE_PROCESS)
    io = seq.thread(20, 21, "io")
    global_track = seq.track(2000, "Global <b>events</b>")
    child = seq.track(2001, "child", parent_uuid=2000)
    memory = seq.counter_track(3000, "mem", parent_uuid=process_uuid(10), unit="bytes")
    seq.slice_begin(1_000, main, "step", "train", args={"epoch": 1})
    seq.slice_begin(1_100, main, "forward", "train")
    seq.slice_begin(1_200, main, HOSTILE_SLICE, "train", args={"note": HOSTILE_ARG}, flow_ids=[7])
    seq.slice_end(1_300, main)
    seq.slice_end(1_400, main)
    seq.slice_end(2_000, main)
    seq.slice_begin(1_500, worker, "recv", terminating_flow_ids=[7])
    seq.slice_end(1_600, worker)
    seq.slice_begin(1_000, annotations, "annotate")
    seq.slice_end(1_900, annotations)
    seq.slice_begin(1_000, global_track, "g")
    seq.slice_end(1_100, global_track)
    seq.slice_begin(1_000, child, "c")
    seq.slice_end(1_050, child)
    seq.slice_begin(1_000, io, "read")
    seq.slice_end(1_070, io)
    seq.counter(1_000, memory, 5)
    seq.counter(1_500, memory, 7)
    return b.to_bytes()


DIMENSION_TABLES = ("track_dimension", "dimension", "track_subtitle")


def drop_dimension_tables(conn: sqlite3.Connection) -> None:
    """Whatever the ingest wrote under these names (tables or views), so each test knows what it reads."""
    for name, kind in conn.execute(
        "SELECT name, type FROM sqlite_master WHERE name IN (?, ?, ?)", DIMENSION_TABLES
    ).fetchall():
        conn.execute(f"DROP {'VIEW' if kind == 'view' else 'TABLE'} [{name}]")


def write_dimension_tables(path: Path) -> None:
    conn = sqlite3.connect(path)
    drop_dimension_tables(conn)
    conn.execute(
        "CREATE TABLE track_dimension (track_id INTEGER, name TEXT, value_type TEXT, int_value INTEGER, "
        "string_value TEXT, display_name TEXT, declaring_track_id INTEGER, is_inherited INTEGER, "
        "is_well_known INTEGER, label TEXT)"
    )
    conn.execute("CREATE INDEX track_dimension_track_id ON track_dimension (track_id)")
    conn.execute("CREATE TABLE dimension (name TEXT, is_well_known INTEGER, label_template TEXT)")
    conn.execute("CREATE TABLE track_subtitle (track_id INTEGER, subtitle TEXT)")
    conn.executemany(
        "INSERT INTO dimension VALUES (?, ?, ?)",
        [
            ("machine", 1, "machine %d"),
            ("gpu", 1, "GPU %d"),
            ("cpu", 1, "cpu %d"),
            ("process", 1, "process %d"),
            ("thread", 1, "thread %d"),
            ("rank", 0, "rank %d"),
            ("shard", 0, "shard %d"),
        ],
    )
    tracks = conn.execute(
        "SELECT tr.id, tr.name, tr.utid, coalesce(tr.upid, th.upid), tr.parent_id, th.name "
        "FROM track tr LEFT JOIN thread th ON th.id = tr.utid ORDER BY tr.id"
    ).fetchall()
    by_name = {name: track_id for track_id, name, *_ in tracks}
    process_track = {
        upid: track_id
        for track_id, name, utid, upid, parent, _ in tracks
        if upid is not None and utid is None and name is None
    }
    trainer = conn.execute("SELECT id FROM process WHERE name = 'trainer'").fetchone()[0]
    io_thread = conn.execute("SELECT id FROM thread WHERE name = 'io'").fetchone()[0]
    rows, labels = [], {}

    def add(track_id, name, value, declaring, well_known, label, display=None):
        is_int = isinstance(value, int)
        rows.append(
            (
                track_id,
                name,
                "int" if is_int else "string",
                value if is_int else None,
                None if is_int else value,
                display,
                declaring,
                int(declaring != track_id),
                well_known,
                label,
            )
        )
        labels.setdefault(track_id, {})[name] = display or label

    for track_id, _name, utid, upid, parent, thread_name in tracks:
        add(track_id, "machine", 0, track_id, 1, "machine 0")
        if upid is not None:
            process_name = conn.execute("SELECT name FROM process WHERE id = ?", (upid,)).fetchone()[0]
            add(track_id, "process", upid, process_track.get(upid, track_id), 1, "process 0", process_name)
        if utid is not None:
            add(track_id, "thread", utid, track_id, 1, "thread 0", thread_name)
        if upid == trainer:
            add(track_id, "rank", 3, process_track[trainer], 0, "rank 0")
        if utid == io_thread:
            add(track_id, "rank", 4, track_id, 0, "rank 1", HOSTILE_DISPLAY)
        if track_id == by_name["Global <b>events</b>"] or parent == by_name["Global <b>events</b>"]:
            add(track_id, "shard", HOSTILE_SHARD, by_name["Global <b>events</b>"], 0, "shard 0")
    conn.executemany("INSERT INTO track_dimension VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    # The collapse rule: only rank has more than one value; process and thread are never subtitle labels.
    conn.executemany("INSERT INTO track_subtitle VALUES (?, ?)", [(t, labels[t].get("rank", "")) for t, *_ in tracks])
    conn.commit()
    conn.close()


@pytest.fixture(scope="module")
def trainer_db(tmp_path_factory) -> Path:
    path = ingest_named(tmp_path_factory, trainer_trace(), "trainer")
    write_dimension_tables(path)
    return path


@pytest.fixture(scope="module")
def old_db(tmp_path_factory) -> Path:
    """The same trace in a database without the dimension tables (as an older ingest wrote it)."""
    path = ingest_named(tmp_path_factory, trainer_trace(), "old")
    conn = sqlite3.connect(path)
    drop_dimension_tables(conn)
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def ds(trainer_db):
    return served(trainer_db)


def ids(db: Path, sql: str, params: tuple = ()) -> list:
    return [r[0] for r in TraceDB(db).rows(sql, params)]


class Tables(HTMLParser):
    """The text of every table cell (and the hrefs in it), by the table's class attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[tuple[str, list[str]]]]] = {}
        self._stack: list[str] = []
        self._row: list | None = None
        self._cell: list | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._stack.append(attrs.get("class") or "")
            self.tables.setdefault(self._stack[-1], [])
        elif tag == "tr" and self._stack:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = ["", []]
        elif tag == "a" and self._cell is not None:
            self._cell[1].append(attrs.get("href"))

    def handle_endtag(self, tag):
        if tag == "table" and self._stack:
            self._stack.pop()
        elif tag == "tr" and self._row is not None and self._stack:
            self.tables[self._stack[-1]].append(self._row)
            self._row = None
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append((" ".join(self._cell[0].split()), self._cell[1]))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[0] += data


def table(html: str, css_class: str) -> list[list[tuple[str, list[str]]]]:
    """Rows (header row first) of the first table whose class list contains css_class."""
    parser = Tables()
    parser.feed(html)
    for classes, rows in parser.tables.items():
        if css_class in classes.split():
            return rows
    raise AssertionError(f"no table with class {css_class}")


def texts(rows) -> list[list[str]]:
    return [[text for text, _ in row] for row in rows]


def assert_escaped(html: str) -> None:
    for raw in (
        HOSTILE_PROCESS,
        HOSTILE_SLICE,
        HOSTILE_ARG,
        "<b>east</b>",
        "<i>s1</i>",
        "<b>events</b>",
        '<worker & "q">',
    ):
        assert raw not in html


# -- details pages -------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_track_page_shows_effective_dimensions_with_their_declaration(ds, trainer_db):
    (main_track,) = ids(
        trainer_db, "SELECT tr.id FROM track tr JOIN thread th ON th.id = tr.utid WHERE th.name = 'main'"
    )
    (process_track,) = ids(
        trainer_db,
        "SELECT tr.id FROM track tr JOIN process p ON p.id = tr.upid WHERE p.name = 'trainer' AND tr.name IS NULL",
    )
    r = await ds.client.get(f"/trainer/-/track/{main_track}")
    assert r.status_code == 200
    rows = table(r.text, "perfetto-dimensions-table")
    assert texts(rows)[0] == [
        "Dimension",
        "Type",
        "Value",
        "Display name",
        "Label",
        "Declared on",
        "Inherited",
        "Well-known",
    ]
    by_name = {row[0][0]: row for row in rows[1:]}
    assert list(by_name) == ["machine", "process", "thread", "rank"]  # the subtitle order
    rank = [text for text, _ in by_name["rank"]]
    assert rank[:5] == ["rank", "int", "3", "-", "rank 0"]
    assert rank[5].startswith("trainer") and rank[6:] == ["yes", "no"]
    assert f"/trainer/-/track/{process_track}" in by_name["rank"][5][1]
    assert texts([by_name["machine"]])[0][5:] == ["this track", "no", "yes"]
    # The raw value of a process/thread dimension is the upid/utid, linked; its display name is the name.
    assert by_name["process"][2][1] == ["/trainer/-/process/1"] and by_name["process"][3][0] == "trainer"
    assert "rank 0" in r.text.split('class="perfetto-subtitle"', 1)[1][:40]  # the subtitle under the title
    data = (await ds.client.get(f"/trainer/-/track/{main_track}.json")).json()
    assert data["dimensions_available"] is True
    assert [
        (d["name"], d["value_type"], d["value"], d["is_inherited"], d["declaring_track_id"]) for d in data["dimensions"]
    ] == [
        ("machine", "int", 0, 0, main_track),
        ("process", "int", 1, 1, process_track),
        ("thread", "int", 2, 0, main_track),
        ("rank", "int", 3, 1, process_track),
    ]
    assert data["track"]["subtitle"] == "rank 0" and data["owner"]["thread_name"] == "main"
    assert data["track"]["event_count"] == 3
    assert [e["name"] for e in data["first_events"]] == ["step", "forward", HOSTILE_SLICE]


@pytest.mark.asyncio
async def test_track_page_hierarchy_string_dimension_and_counter_events(ds, trainer_db):
    (parent,) = ids(trainer_db, "SELECT id FROM track WHERE name = 'Global <b>events</b>'")
    (child,) = ids(trainer_db, "SELECT id FROM track WHERE name = 'child'")
    page = (await ds.client.get(f"/trainer/-/track/{child}")).text
    assert_escaped(page)
    shard = next(row for row in table(page, "perfetto-dimensions-table") if row[0][0] == "shard")
    assert [text for text, _ in shard][:3] == ["shard", "string", HOSTILE_SHARD]
    assert shard[5][1] == [f"/trainer/-/track/{parent}"] and shard[6][0] == "yes"
    assert f'href="/trainer/-/track/{parent}"' in page.split("Parent chain")[1]
    parent_data = (await ds.client.get(f"/trainer/-/track/{parent}.json")).json()
    assert [c["id"] for c in parent_data["children"]] == [child] and parent_data["ancestors"] == []
    (counter,) = ids(trainer_db, "SELECT id FROM track WHERE name = 'mem'")
    data = (await ds.client.get(f"/trainer/-/track/{counter}.json")).json()
    assert data["track"]["event_type"] == "counter" and data["track"]["counter_unit"] == "bytes"
    assert [(e["ts"], e["value"]) for e in data["first_events"]] == [(1_000, 5.0), (1_500, 7.0)]


@pytest.mark.asyncio
async def test_slice_page_args_parent_chain_children_flows_and_owner(ds, trainer_db):
    (hostile,) = ids(trainer_db, "SELECT id FROM slice WHERE name = ?", (HOSTILE_SLICE,))
    step, forward, recv = (
        ids(trainer_db, "SELECT id FROM slice WHERE name = ?", (n,))[0] for n in ("step", "forward", "recv")
    )
    r = await ds.client.get(f"/trainer/-/slice/{hostile}")
    assert r.status_code == 200
    page = r.text
    assert_escaped(page)
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;script&gt;alert(2)&lt;/script&gt;" in page
    chain = page.split("Parent chain")[1].split("</ol>")[0]
    assert chain.index(f'/trainer/-/slice/{step}"') < chain.index(f'/trainer/-/slice/{forward}"')
    assert 'href="/trainer/-/thread/2"' in page and 'href="/trainer/-/process/1"' in page
    assert ["rank", "int", "3"] == texts(table(page, "perfetto-dimensions-table"))[-1][:3]
    data = (await ds.client.get(f"/trainer/-/slice/{hostile}.json")).json()
    assert data["slice"]["name"] == HOSTILE_SLICE and data["slice"]["ts"] == 1_200 and data["slice"]["dur"] == 100
    assert data["args"] == [{"key": "debug.note", "value_type": "string", "value": HOSTILE_ARG}]
    assert [a["id"] for a in data["ancestors"]] == [step, forward] and data["children"] == []
    assert [f["id"] for f in data["flows_out"]] == [recv] and data["flows_in"] == []
    assert data["owner"]["thread_name"] == "main" and data["owner"]["process_name"] == "trainer"
    parent = (await ds.client.get(f"/trainer/-/slice/{step}.json")).json()
    assert [c["id"] for c in parent["children"]] == [forward] and parent["child_count"] == 1
    assert parent["args"] == [{"key": "debug.epoch", "value_type": "int", "value": "1"}]
    flows_in = (await ds.client.get(f"/trainer/-/slice/{recv}.json")).json()["flows_in"]
    assert [f["id"] for f in flows_in] == [hostile]


@pytest.mark.asyncio
async def test_thread_page_tracks_dimensions_and_longest_slices(ds, trainer_db):
    (utid,) = ids(trainer_db, "SELECT id FROM thread WHERE name = 'main'")
    page = (await ds.client.get(f"/trainer/-/thread/{utid}")).text
    assert_escaped(page)
    assert 'href="/trainer/-/process/1"' in page
    dims = texts(table(page, "perfetto-dimensions-table"))
    assert dims[0][-1] == "Tracks" and [row[0] for row in dims[1:]] == ["machine", "process", "thread", "rank"]
    assert dims[-1][2] == "3" and dims[-1][6:] == ["yes", "no", "1 of 1"]
    data = (await ds.client.get(f"/trainer/-/thread/{utid}.json")).json()
    assert [s["name"] for s in data["top_slices"]] == ["step", "forward", HOSTILE_SLICE]
    assert data["track_count"] == 1 and data["tracks"][0]["subtitle"] == "rank 0"

    (io,) = ids(trainer_db, "SELECT id FROM thread WHERE name = 'io'")
    io_page = (await ds.client.get(f"/trainer/-/thread/{io}")).text
    assert_escaped(io_page)
    rank = texts(table(io_page, "perfetto-dimensions-table"))[-1]
    assert rank[:5] == ["rank", "int", "4", HOSTILE_DISPLAY, "rank 1"]  # a display name replaces only the label
    assert "&lt;b&gt;east&lt;/b&gt; &amp; co" in io_page


@pytest.mark.asyncio
async def test_process_page_threads_tracks_and_grouped_dimensions(ds, trainer_db):
    page = (await ds.client.get("/trainer/-/process/1")).text
    assert_escaped(page)
    threads = texts(table(page, "perfetto-threads-table"))
    assert [row[:2] for row in threads[1:]] == [["(no name)", "10"], ["main", "11"], [HOSTILE_THREAD, "12"]]
    expected_tracks = ids(
        trainer_db,
        "SELECT tr.id FROM track tr LEFT JOIN thread th ON th.id = tr.utid WHERE coalesce(tr.upid, th.upid) = 1",
    )
    data = (await ds.client.get("/trainer/-/process/1.json")).json()
    assert sorted(t["id"] for t in data["tracks"]) == sorted(expected_tracks) and data["track_count"] == 5
    rank = next(d for d in data["dimensions"] if d["name"] == "rank")
    # Declared on the process track, inherited by the other four tracks of the process and its threads.
    assert (rank["value"], rank["track_count"], rank["inherited_count"]) == (3, 5, 4)
    dims = texts(table(page, "perfetto-dimensions-table"))
    row = next(r for r in dims if r[0] == "rank")
    assert row[5].startswith("trainer") and row[6:] == ["on 4 of 5", "no", "5 of 5"]
    # Synthesized on each track: one row for the value, not one per track.
    assert [r[5:] for r in dims if r[0] == "machine"] == [["each track itself", "no", "yes", "5 of 5"]]
    assert [(r[2], r[3]) for r in dims if r[0] == "thread"] == [("2", "main"), ("3", HOSTILE_THREAD)]
    hostile = (await ds.client.get("/trainer/-/process/2")).text
    assert_escaped(hostile)
    assert "&lt;script&gt;alert(&#39;p&#39;)&lt;/script&gt;" in hostile


# -- the tracks page -----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_tracks_page_lists_every_track_with_subtitle_owner_and_count(ds, trainer_db):
    r = await ds.client.get("/trainer/-/tracks")
    assert r.status_code == 200
    assert_escaped(r.text)
    rows = table(r.text, "perfetto-tracks-table")
    assert texts(rows)[0] == ["Track", "Subtitle", "Type", "Kind", "Owner", "Events", "Id"]
    all_ids = ids(trainer_db, "SELECT id FROM track")
    assert sorted(int(row[6][0]) for row in rows[1:]) == sorted(all_ids)
    main = next(row for row in rows[1:] if row[0][0] == "main")
    assert [text for text, _ in main][1:] == [
        "rank 0",
        "thread_execution",
        "slice",
        "thread main [11] in trainer [10]",
        "3",
        main[6][0],
    ]
    assert main[4][1] == ["/trainer/-/thread/2", "/trainer/-/process/1"]
    assert main[0][1] == [f"/trainer/-/track/{main[6][0]}"]
    io = next(row for row in rows[1:] if row[0][0] == "io")
    assert io[1][0] == HOSTILE_DISPLAY
    # Global tracks first, then by process and thread.
    assert [row[0][0] for row in rows[1:3]] == ["child", "Global <b>events</b>"]


@pytest.mark.asyncio
async def test_tracks_page_filters_and_pages(ds, trainer_db):
    data = (await ds.client.get("/trainer/-/tracks.json?name=ANNOT")).json()
    assert [t["title"] for t in data["tracks"]] == ["CPU annotations"] and data["total"] == 1
    # The filter is a substring, not a pattern: % and _ match themselves.
    assert (await ds.client.get("/trainer/-/tracks.json?name=%25")).json()["total"] == 0
    assert (await ds.client.get("/trainer/-/tracks.json?type=thread_execution")).json()["total"] == 3
    first = await ds.client.get("/trainer/-/tracks?limit=3")
    assert len(table(first.text, "perfetto-tracks-table")) == 4
    assert "Tracks 1–3 of 8" in first.text
    assert (
        'href="/trainer/-/tracks?limit=3&amp;offset=3"' in first.text and "Show more: the next 3 tracks" in first.text
    )
    # Paged as Datasette's table JSON: `next` is the next page's token, `next_url` its URL; null on the last page.
    page = (await ds.client.get("/trainer/-/tracks.json?limit=3")).json()
    assert page["next"] == "3" and page["next_url"] == "http://localhost/trainer/-/tracks.json?limit=3&offset=3"
    seen = []
    for offset in (0, 3, 6):
        page = (await ds.client.get(f"/trainer/-/tracks.json?limit=3&offset={offset}")).json()
        seen += [t["id"] for t in page["tracks"]]
    assert (
        sorted(seen) == sorted(ids(trainer_db, "SELECT id FROM track"))
        and page["next"] is None
        and page["next_url"] is None
    )
    busiest = (await ds.client.get("/trainer/-/tracks.json?sort=events&limit=1")).json()["tracks"][0]
    assert (busiest["title"], busiest["event_count"]) == ("main", 3)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "query, message",
    [
        ("sort=size", "sort: 'size' is not one of owner, events, name, id"),
        ("limit=0", "limit: must be between 1 and 1000"),
        ("offset=x", "offset: 'x' is not an integer"),
        ("colour=red", "unknown parameter 'colour'"),
    ],
)
async def test_tracks_page_bad_parameters_are_400(ds, query, message):
    r = await ds.client.get(f"/trainer/-/tracks.json?{query}")
    assert r.status_code == 400 and message in r.json()["error"]


# -- errors, permissions, older databases --------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path, message",
    [
        ("/trainer/-/slice/999", "No slice with id 999 in this database"),
        ("/trainer/-/track/-1", "No track with id -1 in this database"),
        ("/trainer/-/thread/4242", "No thread with utid 4242 in this database"),
        ("/trainer/-/process/77", "No process with upid 77 in this database"),
        ("/trainer/-/slice/abc", "Malformed slice id 'abc': expected an integer"),
        ("/trainer/-/track/1.5", "Malformed track id '1.5': expected an integer"),
        ("/trainer/-/process/99999999999999999999", "Malformed process upid '99999999999999999999'"),
        ("/trainer/-/thread/0x10", "Malformed thread utid '0x10': expected an integer"),
        ("/nope/-/track/1", "Database not found: nope"),
    ],
)
async def test_unknown_and_malformed_ids_are_404_with_the_reason(ds, path, message):
    r = await ds.client.get(path + ".json")
    assert r.status_code == 404 and message in r.json()["error"]
    html = await ds.client.get(path)
    assert html.status_code == 404 and message.replace("'", "&#39;") in html.text


@pytest.mark.asyncio
async def test_hostile_id_in_url_is_escaped_in_the_404(ds):
    r = await ds.client.get("/trainer/-/slice/%3Cscript%3Ealert(1)%3C", follow_redirects=True)
    assert r.status_code == 404 and "<script>alert(1)" not in r.text
    assert "Malformed slice id &#39;&lt;script&gt;alert(1)&lt;&#39;" in r.text


@pytest.mark.asyncio
async def test_permissions_are_checked(trainer_db):
    ds = datasette_with([trainer_db], {"databases": {"trainer": {"allow": {"id": "root"}}}})
    paths = [
        "/trainer/-/tracks",
        "/trainer/-/tracks.json",
        "/trainer/-/track/0",
        "/trainer/-/slice/0.json",
        "/trainer/-/thread/1",
        "/trainer/-/process/1",
    ]
    for path in paths:
        assert (await ds.client.get(path)).status_code == 403, path
    root = {"ds_actor": ds.sign({"a": {"id": "root"}}, "actor")}
    for path in paths:
        assert (await ds.client.get(path, cookies=root)).status_code == 200, path
    closed = datasette_with([trainer_db], {"allow": {"id": "root"}})  # view-instance
    assert (await closed.client.get("/trainer/-/track/0")).status_code == 403


@pytest.mark.asyncio
async def test_database_without_dimension_tables_shows_everything_else(old_db):
    ds = served(old_db)
    page = (await ds.client.get("/old/-/track/0")).text
    assert "has no <code>track_dimension</code> table" in page and "perfetto-dimensions-table" not in page
    assert "First events" in page and "Source args" in page
    data = (await ds.client.get("/old/-/track/0.json")).json()
    assert data["dimensions"] is None and data["dimensions_available"] is False
    assert data["track"]["subtitle"] is None and data["track"]["event_count"] == 3
    for path in ("/old/-/slice/0", "/old/-/thread/2", "/old/-/process/1"):
        r = await ds.client.get(path)
        assert r.status_code == 200 and "has no <code>track_dimension</code> table" in r.text, path
    page = (await ds.client.get("/old/-/tracks")).text
    assert "no track subtitles" in page and len(table(page, "perfetto-tracks-table")) == 9
    tracks = (await ds.client.get("/old/-/tracks.json")).json()
    assert tracks["total"] == 8 and tracks["subtitles_available"] is False
    # Event counts without the report's precomputed table: counted per track.
    conn = sqlite3.connect(old_db)
    conn.execute("DROP TABLE report_track_stats")
    conn.commit()
    conn.close()
    counts = {
        t["title"]: t["event_count"] for t in (await served(old_db).client.get("/old/-/tracks.json")).json()["tracks"]
    }
    assert counts["main"] == 3 and counts["mem"] == 2 and counts["child"] == 1


@pytest.mark.asyncio
async def test_not_a_trace_database_is_400(tmp_path):
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).execute("CREATE TABLE t (x)")
    r = await served(plain).client.get("/plain/-/tracks.json")
    assert r.status_code == 400 and "not a trace database" in r.json()["error"]


# -- links from elsewhere ------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_datasette_tables_link_ids_to_details_pages(ds, trainer_db):
    (hostile,) = ids(trainer_db, "SELECT id FROM slice WHERE name = ?", (HOSTILE_SLICE,))
    (forward,) = ids(trainer_db, "SELECT id FROM slice WHERE name = 'forward'")
    page = (await ds.client.get("/trainer/slice")).text
    assert 'href="/trainer/-/track/0"' in page  # track_id
    assert f'href="/trainer/-/slice/{forward}"' in page  # parent_id of the hostile slice
    row = (await ds.client.get(f"/trainer/slice/{hostile}")).text
    assert f'href="/trainer/-/slice/{hostile}"' in row  # the row page's id cell
    sql = (
        await ds.client.get(
            sql_path("trainer"),
            params={"sql": "select id, utid, upid, track_id from thread_track, (select 0 as track_id, 1 as upid)"},
        )
    ).text
    assert 'href="/trainer/-/thread/2"' in sql and 'href="/trainer/-/process/1"' in sql
    assert 'href="/trainer/-/track/0"' in sql
    thread_track = (await ds.client.get("/trainer/thread_track")).text
    assert 'href="/trainer/-/track/0"' in thread_track  # a view's id column
    dims = (await ds.client.get("/trainer/track_dimension?name=rank")).text
    assert 'href="/trainer/-/track/1"' in dims  # declaring_track_id


@pytest.mark.asyncio
async def test_other_databases_are_not_linked(tmp_path):
    plain = tmp_path / "plain.db"
    conn = sqlite3.connect(plain)
    conn.execute("CREATE TABLE t (track_id INTEGER, utid INTEGER)")
    conn.execute("INSERT INTO t VALUES (5, 6)")
    conn.commit()
    conn.close()
    page = (await served(plain).client.get("/plain/t")).text
    assert "/-/track/" not in page and "/-/thread/" not in page


@pytest.mark.asyncio
async def test_report_tables_link_to_details_pages(ds, trainer_db):
    assert 'href="/trainer/-/tracks"' in (await ds.client.get("/trainer")).text  # the database page
    tracks = (await ds.client.get("/trainer/-/report/tracks")).text
    for track_id in ids(trainer_db, "SELECT id FROM track WHERE event_type = 'slice'"):
        assert f'href="/trainer/-/track/{track_id}"' in tracks
    processes = (await ds.client.get("/trainer/-/report/processes")).text
    assert 'href="/trainer/-/process/1"' in processes
    (step,) = ids(trainer_db, "SELECT id FROM slice WHERE name = 'step'")
    inspect = (await ds.client.get("/trainer/-/report/slices/inspect?name=forward")).text
    assert f'href="/trainer/-/slice/{step}"' in inspect  # the parent chain
    counters = (await ds.client.get("/trainer/-/report/counters")).text
    (mem,) = ids(trainer_db, "SELECT id FROM track WHERE name = 'mem'")
    assert f'href="/trainer/-/track/{mem}"' in counters


# -- a real browser ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_serving(url: str, server: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"datasette serve exited with {server.returncode}: {server.stderr.read()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"datasette serve did not answer {url} within {timeout}s")


def test_track_page_in_headless_chromium(trainer_db, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Chromium is needed for this test: apt-get install -y chromium (.ci/run installs it)"
    (main_track,) = ids(
        trainer_db, "SELECT tr.id FROM track tr JOIN thread th ON th.id = tr.utid WHERE th.name = 'main'"
    )
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "datasette", "serve", str(trainer_db), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/trainer/-/track/{main_track}"
        _wait_until_serving(url + ".json", server)
        profile = tempfile.mkdtemp(dir=tmp_path)
        dom = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=180,
        ).stdout
    finally:
        server.terminate()
        server.wait(timeout=30)
    # The DOM after Chromium loaded and parsed the page: the dimensions table with its rows, not hidden.
    rows = table(dom, "perfetto-dimensions-table")
    assert texts(rows)[0][:3] == ["Dimension", "Type", "Value"]
    assert ["rank", "int", "3"] in [r[:3] for r in texts(rows)]
    section = dom.split('id="dimensions"')[0].rsplit("<section", 1)[1]
    assert "hidden" not in section and "display: none" not in section
    assert f"<title>Track {main_track}: main" in dom
