"""The slices views under a time range, with unfinished slices and min_duration: figures from a hand-built
trace, checked against hand-computed numbers and SQL."""

from __future__ import annotations

import pytest
from conftest import TraceDB, get_json, ingest_built, served

pytestmark = pytest.mark.web  # served by Datasette: ./dev test runs these on 0.65 and 1.0

T0 = 1_000_000_000  # the trace starts here: offsets are from it
MS = 1_000_000


@pytest.fixture
def window_db(tmp_path) -> TraceDB:
    """main: Long 0-3s, Edge 1.95-2.02s, Short 2.05-2.06s; other: Long 2.08-2.09s; worker: Open from 2.5s,
    never ended; tail: Tail 3-4s (the trace ends at 4s)."""
    from datasette_perfetto.trace_builder import TraceBuilder

    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(1, "app")
    main = seq.thread(1, 2, "main")
    other = seq.thread(1, 3, "other")
    worker = seq.thread(1, 5, "worker")
    events = [
        (0, "b", main, "Long"),
        (1950 * MS, "b", main, "Edge"),
        (2020 * MS, "e", main, None),
        (2050 * MS, "b", main, "Short"),
        (2060 * MS, "e", main, None),
        (2080 * MS, "b", other, "Long"),
        (2090 * MS, "e", other, None),
        (2500 * MS, "b", worker, "Open"),  # never ended
        (3000 * MS, "e", main, None),
    ]
    for ts, kind, track, name in events:
        if kind == "b":
            seq.slice_begin(T0 + ts, track, name)
        else:
            seq.slice_end(T0 + ts, track)
    tail = seq.thread(1, 4, "tail")
    seq.slice_begin(T0 + 3000 * MS, tail, "Tail")
    seq.slice_end(T0 + 4000 * MS, tail)
    return ingest_built(tmp_path, b)


def by_name(rows: list[dict]) -> dict[str, dict]:
    return {r["name"]: r for r in rows}


@pytest.mark.asyncio
async def test_time_window_clips_slices_table_histogram_and_inspect(window_db):
    ds = served(window_db.path)
    db = window_db.path.stem
    data = await get_json(ds, f"/{db}/-/report/slices.json?time=2s,2.1s")
    rows = by_name(data["slices_table"]["rows"])
    # Long (open the whole window on main, plus 10ms on other): 100ms + 10ms of a 100ms window.
    assert int(rows["Long"]["count"]) == 2
    assert int(rows["Long"]["total_dur"]) == 110 * MS
    assert int(rows["Long"]["max_dur"]) == 100 * MS
    assert rows["Long"]["percent_of_trace"] == pytest.approx(110.0)
    assert int(rows["Edge"]["total_dur"]) == 20 * MS and int(rows["Short"]["total_dur"]) == 10 * MS
    # The same from SQL: each slice's part inside [2s, 2.1s).
    start, end = T0 + 2000 * MS, T0 + 2100 * MS
    expected = dict(
        window_db.rows(
            "SELECT name, sum(max(min(CASE WHEN dur < 0 THEN ? ELSE ts + dur END, ?) - max(ts, ?), 0)) FROM slice "
            "WHERE ts < ? AND (dur < 0 OR ts + dur >= ?) GROUP BY name",
            (end, end, start, end, start),
        )
    )
    assert {name: int(r["total_dur"]) for name, r in rows.items()} == expected
    # Self time: the clipped part less the clipped parts of the direct children; its share is of the clipped
    # top-level slices' time (every slice's self time summed).
    clip = "max(min(CASE WHEN {a}.dur < 0 THEN :end ELSE {a}.ts + {a}.dur END, :end) - max({a}.ts, :start), 0)"
    in_window = "s.ts < :end AND (s.dur < 0 OR s.ts + s.dur >= :start)"
    window = {"start": start, "end": end}
    self_sql = (
        f"SELECT s.name, sum({clip.format(a='s')} - coalesce((SELECT sum({clip.format(a='k')}) FROM slice k "
        f"WHERE k.parent_id = s.id), 0)) FROM slice s WHERE {in_window} GROUP BY s.name"
    )
    expected_self = dict(window_db.rows(self_sql, window))
    assert {name: int(r.get("self_dur", 0)) for name, r in rows.items()} == expected_self
    slice_time = window_db.one(
        f"SELECT sum({clip.format(a='s')}) FROM slice s WHERE {in_window} AND s.depth = 0", window
    )
    assert int(data["slices_table"]["slice_time"]) == slice_time == sum(expected_self.values())
    long_share = 100.0 * expected_self["Long"] / slice_time
    assert rows["Long"]["percent_of_slice_time"] == pytest.approx(long_share)
    assert rows["Long"]["stats"]["max"] == 100 * MS and rows["Long"]["stats"]["min"] == 10 * MS
    assert any("clipped to the time range" in f["text"] for f in data["footnotes"])
    page = (await ds.client.get(f"/{db}/-/report/slices?time=2s,2.1s")).text
    assert "clipped to the time range" in page and f"{long_share:.1f}%" in page and "% of slice time" in page
    hist = (await get_json(ds, f"/{db}/-/report/slices/histogram.json?name=Long&time=2s,2.1s"))["slices_histogram"]
    assert {k: int(v) for k, v in hist["stats"].items()}.items() >= {
        "count": 2,
        "total": 110 * MS,
        "max": 100 * MS,
    }.items()
    assert sum(int(b.get("count", 0)) for b in hist["buckets"]) == 2
    inspect = (await get_json(ds, f"/{db}/-/report/slices/inspect.json?name=Long&time=2s,2.1s"))["slices_inspect"]
    assert int(inspect["stats"]["total"]) == 110 * MS
    # The canned query agrees.
    canned = await ds.client.get(f"/{db}/slices_table.json?_shape=array&time=2s,2.1s")
    assert {r["name"]: r["total_dur"] for r in canned.json()} == expected


@pytest.mark.asyncio
async def test_time_window_counts_the_slices_with_a_part_inside_it_in_processes(window_db):
    ds = served(window_db.path)
    db = window_db.path.stem
    data = await get_json(ds, f"/{db}/-/report/processes.json?time=2s,2.1s")
    (app,) = [r for r in data["processes_table"]["rows"] if r["name"] == "app"]
    # Long (main), Edge, Short, Long (other): the same four the slices table counts; not Open or Tail.
    assert int(app["slice_count"]) == 4
    table = await get_json(ds, f"/{db}/-/report/slices.json?time=2s,2.1s")
    assert int(table["slices_table"]["total_slices"]) == 4
    canned = (await ds.client.get(f"/{db}/processes_table.json?_shape=array&time=2s,2.1s")).json()
    assert [r["slice_count"] for r in canned if r["name"] == "app"] == [4]
    # Open, unfinished since 2.5s, is still there at 3.2s-3.5s (with Tail): as the slices table counts them.
    data = await get_json(ds, f"/{db}/-/report/processes.json?time=3.2s,3.5s")
    (app,) = [r for r in data["processes_table"]["rows"] if r["name"] == "app"]
    table = await get_json(ds, f"/{db}/-/report/slices.json?time=3.2s,3.5s")
    assert sorted(r["name"] for r in table["slices_table"]["rows"]) == ["Open", "Tail"]
    assert int(app["slice_count"]) == int(table["slices_table"]["total_slices"]) == 2
    canned = (await ds.client.get(f"/{db}/processes_table.json?_shape=array&time=3.2s,3.5s")).json()
    assert [r["slice_count"] for r in canned if r["name"] == "app"] == [2]


@pytest.mark.asyncio
async def test_unfinished_slices_count_to_the_end_of_the_trace_or_range_and_are_marked(window_db):
    ds = served(window_db.path)
    db = window_db.path.stem
    # Open starts at 2.5s and never ends; the trace ends at 4s.
    assert window_db.rows("SELECT dur FROM slice WHERE name = 'Open'") == [(-1,)]
    assert window_db.rows("SELECT end_ts FROM trace_bounds") == [(T0 + 4000 * MS,)]
    assert window_db.rows(
        "SELECT count, total_dur, max_dur, unfinished FROM report_slice_name WHERE name = 'Open'"
    ) == [(1, 1500 * MS, 1500 * MS, 1)]
    for query in ("", "&thread=worker", "&min_count=1"):  # precomputed per name, per track, and again
        data = await get_json(ds, f"/{db}/-/report/slices.json?top=50{query}")
        open_row = by_name(data["slices_table"]["rows"])["Open"]
        assert (int(open_row["total_dur"]), int(open_row["max_dur"])) == (1500 * MS, 1500 * MS), query
        assert int(open_row["max_instance"]["dur"]) == -1
        assert int(open_row["stats"]["p50"]) == 1500 * MS
        assert any("1 unfinished slice " in f["text"] and "end of the trace" in f["text"] for f in data["footnotes"])
    text = (await ds.client.get(f"/{db}/-/report/slices.txt")).text
    assert "1.5s (unfinished) @ 2.5" in text
    # In a range: up to the range's end, even when it started before the range.
    data = await get_json(ds, f"/{db}/-/report/slices.json?time=2.6s,2.9s")
    rows = by_name(data["slices_table"]["rows"])
    assert int(rows["Open"]["total_dur"]) == 300 * MS and int(rows["Long"]["total_dur"]) == 300 * MS
    assert any("end of the time range" in f["text"] for f in data["footnotes"])
    # The histogram puts it at its duration, not in the instant bucket.
    hist = await get_json(ds, f"/{db}/-/report/slices/histogram.json?name=Open")
    assert [
        (int(b.get("low", 0)) <= 1500 * MS <= int(b["high"]), int(b["count"]))
        for b in hist["slices_histogram"]["buckets"]
        if b.get("count")
    ] == [(True, 1)]
    assert int(hist["slices_histogram"]["stats"]["max"]) == 1500 * MS
    assert any("unfinished" in f["text"] for f in hist["footnotes"])
    # The timeline covers it to the end.
    data = await get_json(ds, f"/{db}/-/report/slices/timeline.json?name=Open")
    assert sum(int(b.get("total_dur", 0)) for b in data["slices_timeline"]["buckets"]) == 1500 * MS
    assert any("1 unfinished slice " in f["text"] for f in data["footnotes"])
    data = await get_json(ds, f"/{db}/-/report/slices/timeline.json?name=Open&time=3s,3.5s")
    assert sum(int(b.get("total_dur", 0)) for b in data["slices_timeline"]["buckets"]) == 500 * MS
    assert any("end of the time range" in f["text"] for f in data["footnotes"])
    # Inspect lists it as unfinished, longest first by the time it counts for.
    inspect = await get_json(ds, f"/{db}/-/report/slices/inspect.json?name=Long")
    assert [int(i["dur"]) for i in inspect["slices_inspect"]["instances"]] == [3000 * MS, 10 * MS]
    inspect = await get_json(ds, f"/{db}/-/report/slices/inspect.json?name=Open")
    assert int(inspect["slices_inspect"]["stats"]["total"]) == 1500 * MS
    assert any("unfinished" in f["text"] for f in inspect["footnotes"])
    page = (await ds.client.get(f"/{db}/-/report/slices/inspect?name=Open")).text
    assert "(unfinished)" in page
    # The canned queries agree.
    canned = (await ds.client.get(f"/{db}/slices_table.json?_shape=array&name=Open")).json()
    assert [(r["total_dur"], r["max_dur"]) for r in canned] == [(1500 * MS, 1500 * MS)]
    canned = (await ds.client.get(f"/{db}/slices_table.json?_shape=array&name=Open&thread=worker")).json()
    assert [(r["total_dur"], r["max_dur"]) for r in canned] == [(1500 * MS, 1500 * MS)]


@pytest.mark.asyncio
async def test_min_duration_hides_names_with_less_time_in_total_and_says_so(window_db):
    ds = served(window_db.path)
    db = window_db.path.stem
    whole = by_name((await get_json(ds, f"/{db}/-/report/slices.json?top=50"))["slices_table"]["rows"])
    # Totals: Long 3.01s, Open 1.5s, Tail 1s, Edge 70ms, Short 10ms. Long's 10ms instance still counts.
    # In the range Long has 110ms; Edge 20ms, Short 10ms.
    for query, shown in (
        ("min_duration=500ms", ["Long", "Open", "Tail"]),
        ("min_duration=500ms&thread=main", ["Long"]),
        ("min_duration=50ms&time=2s,2.1s", ["Long"]),
    ):
        data = await get_json(ds, f"/{db}/-/report/slices.json?{query}")
        rows = data["slices_table"]["rows"]
        assert [r["name"] for r in rows] == shown, query
        if query == "min_duration=500ms":
            for r in rows:
                assert (r["count"], r["total_dur"], r["max_dur"]) == (
                    whole[r["name"]]["count"],
                    whole[r["name"]]["total_dur"],
                    whole[r["name"]]["max_dur"],
                )
            assert int(rows[0]["count"]) == 2 and int(rows[0]["total_dur"]) == 3010 * MS
        notes = [f for f in data["footnotes"] if f["text"].startswith("min_duration=")]
        assert len(notes) == 1 and "without it" in notes[0]["text"] and "min_duration" not in notes[0]["url"]
    data = await get_json(ds, f"/{db}/-/report/slices.json?min_duration=500ms")
    (note,) = [f["text"] for f in data["footnotes"] if f["text"].startswith("min_duration=")]
    assert note.startswith("min_duration=500ms hid 2 slice names (2 slices)")
    # Nothing left: the footnote still says what was hidden.
    data = await get_json(ds, f"/{db}/-/report/slices.json?min_duration=10s")
    assert data["slices_table"]["rows"] == [] or not data["slices_table"].get("rows")
    assert any(f["text"].startswith("min_duration=10s hid 5 slice names (6 slices)") for f in data["footnotes"])
    canned = (await ds.client.get(f"/{db}/slices_table.json?_shape=array&min_duration=500ms")).json()
    assert [(r["name"], r["count"], r["total_dur"]) for r in canned] == [
        ("Long", 2, 3010 * MS),
        ("Open", 1, 1500 * MS),
        ("Tail", 1, 1000 * MS),
    ]


@pytest.mark.asyncio
async def test_min_duration_keeps_unfinished_instances_as_long_as_they_count(window_db):
    ds = served(window_db.path)
    db = window_db.path.stem
    # Open (unfinished, 1.5s to the end of the trace) is kept by an instance filter of 1s, dropped by 2s.
    for threshold, matched in (("1s", 1), ("2s", 0)):
        inspect = await get_json(ds, f"/{db}/-/report/slices/inspect.json?name=Open&min_duration={threshold}")
        assert int(inspect["slices_inspect"].get("matched", 0)) == matched
        canned = (
            await ds.client.get(f"/{db}/slices_inspect.json?_shape=array&name=Open&min_duration={threshold}")
        ).json()
        assert len(canned) == matched


@pytest.mark.asyncio
async def test_time_or_ts_outside_the_trace_is_an_empty_window_with_a_footnote(window_db):
    ds = served(window_db.path)
    db = window_db.path.stem
    # The trace is 0s-4s: 5s-6s is outside it, answered (200) with nothing counted and a footnote saying so.
    data = await get_json(ds, f"/{db}/-/report/slices.json?time=5s,6s")
    assert not data["slices_table"].get("rows") and int(data["slices_table"].get("total_slices", 0)) == 0
    (note,) = [f for f in data["footnotes"] if "outside the trace" in f["text"]]
    assert note["text"].startswith("time 5s-6s lies outside the trace (0ns-4s): the window is empty")
    assert "time" not in note["url"].split("?", 1)[-1]
    assert not any("clipped" in f["text"] for f in data["footnotes"])  # nothing to clip
    absolute = await get_json(ds, f"/{db}/-/report/processes.json?time={T0 + 5000 * MS},{T0 + 6000 * MS}")
    assert any("outside the trace" in f["text"] for f in absolute["footnotes"])
    assert all(int(r.get("slice_count", 0)) == 0 for r in absolute["processes_table"]["rows"])
    # Partly outside: said too, as the shares are of the whole range.
    data = await get_json(ds, f"/{db}/-/report/slices.json?time=3.5s,5s")
    assert any("extends past the trace" in f["text"] for f in data["footnotes"])
    assert [(r["name"], int(r["total_dur"])) for r in data["slices_table"]["rows"]] == [
        ("Open", 500 * MS),
        ("Tail", 500 * MS),
    ]
    # Inside: no such footnote.
    data = await get_json(ds, f"/{db}/-/report/slices.json?time=1s,2s")
    assert not any("the trace (" in f["text"] for f in data["footnotes"])
    # ts outside the trace.
    inspect = await get_json(ds, f"/{db}/-/report/slices/inspect.json?name=Long&ts=9s")
    assert int(inspect["slices_inspect"].get("matched", 0)) == 0
    assert any(f["text"].startswith("ts 9s lies outside the trace") for f in inspect["footnotes"])
    text = (await ds.client.get(f"/{db}/-/report/slices.txt?time=5s,6s")).text
    assert "lies outside the trace" in text
