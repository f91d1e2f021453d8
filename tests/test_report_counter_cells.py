"""Counters under a time range in large traces read the range's whole cells of report_counter_cell and only the
samples in its parts before and after them: the same counts, min, max and averages as reading every sample, in
the report and in the canned queries."""

from __future__ import annotations

import random
import sqlite3
from contextlib import closing

import pytest
from conftest import datasette_with, ingest_built, kept_and_defined, report_of

from datasette_perfetto import report_tables, schema
from datasette_perfetto.report.views import counters
from datasette_perfetto.trace_builder import TraceBuilder, process_uuid

MS = 1_000_000
T0 = 1_000


@pytest.fixture(scope="module")
def cells_db(tmp_path_factory):
    """One second of counters in two processes: a dense one (every 0.3 ms, values going up and down), a
    sparse one (every 70 ms), one with two samples at one instant and samples exactly on cell edges, one sampled
    only in its first 100 ms (held after); ingested with cells kept whatever its size."""
    rng = random.Random(5)
    builder = TraceBuilder()
    seq = builder.sequence(1)
    seq.process(1, "app")
    seq.process(2, "gpu")
    main = seq.thread(1, 2, "main")
    seq.slice_begin(T0, main, "run")
    dense = seq.counter_track(101, "dense", parent_uuid=process_uuid(1))
    sparse = seq.counter_track(102, "sparse", parent_uuid=process_uuid(1))
    edges = seq.counter_track(103, "edges", parent_uuid=process_uuid(2))
    early = seq.counter_track(104, "early", parent_uuid=process_uuid(2))
    samples = []
    ts = T0
    while ts < T0 + 1_000 * MS:
        samples.append((ts, dense, rng.choice([1.5, -2.0, 7.25, 1e6, 0.0])))
        ts += 300_000 + rng.randrange(0, 1_000)
    samples += [(T0 + k * 70 * MS + 13, sparse, float(k)) for k in range(14)]
    samples += [(T0 + k * 10 * MS, edges, float(k % 7)) for k in range(100)]  # on the edges of 10 ms cells
    samples += [(T0 + 250 * MS, edges, 99.0), (T0 + 250 * MS, edges, -99.0)]  # two at one instant
    samples += [(T0 + k * MS, early, float(100 - k)) for k in range(100)]
    for ts, track, value in sorted(samples, key=lambda s: s[0]):
        seq.counter(ts, track, value)
    seq.slice_end(T0 + 1_000 * MS, main)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_tables, "REPORT_COUNTER_CELL_MIN_SAMPLES", 0)
        return ingest_built(tmp_path_factory.mktemp("counter_cells"), builder).path


def test_cells_equal_their_sql_definition(cells_db, tmp_path):
    copy = tmp_path / "copy.db"
    copy.write_bytes(cells_db.read_bytes())
    derived = next(d for d in schema.DERIVED if d.name == "report_counter_cell")
    limit = f">= {schema.REPORT_COUNTER_CELL_MIN_SAMPLES}"
    assert limit in derived.populate
    kept, defined = kept_and_defined(copy, derived, derived.populate.replace(limit, ">= 0"))
    assert len(kept) > 100 and len(kept) == len(defined)
    for got, want in zip(kept, defined):  # sums in another order may differ in the last bits
        assert got[:5] == want[:5] and got[5] == pytest.approx(want[5], rel=1e-12), (got, want)
    with closing(sqlite3.connect(cells_db)) as conn:
        cell = conn.execute("SELECT cell_dur FROM report_grid").fetchone()[0]
    assert cell == 10 * MS  # the edges track's samples lie on cell edges


def test_small_traces_keep_no_counter_cells(demo_db):
    assert demo_db.count("counter") > 0 and demo_db.count("report_counter_cell") == 0


def report(db, view: str, flags: dict, cells: bool) -> tuple:
    """The counters list or inspect figures, from the cells or (cells=False) from the samples alone; and whether
    the cells were read."""
    with pytest.MonkeyPatch.context() as patch:
        if not cells:
            no_cells = {"first_cell": 0, "end_cell": 0}
            patch.setattr(
                counters, "cell_params", lambda run, start, end: {**no_cells, "cells_start": end, "cells_end": end}
            )
        result = report_of(db, "counters", view, flags)
    read_cells = any(  # the recorded parameters are text
        int(q.params.get("end_cell", 0)) > int(q.params.get("first_cell", 0)) for q in result.run.queries if q.params
    )
    msg = result.result_message()
    if view == "list":
        rows = sorted((r.name, r.scope, r.count, r.min, r.max, round(r.avg, 6)) for r in msg.rows)
        return (rows, msg.total_rows), read_cells
    s = msg.stats
    tracks = sorted((t.track.scope, t.track.count, t.track.min, t.track.max, round(t.track.avg, 6)) for t in msg.tracks)
    return (s.count, s.min, s.max, round(s.avg, 6), tracks), read_cells


def ranges() -> list[tuple[str, str]]:
    """(label, time flag): whole cells (10 ms), parts of cells before and after them, one cell's inside, from
    before the trace and past its end."""
    out = [
        ("aligned", "100ms,300ms"),
        ("one cell", "250ms,260ms"),
        ("inside one cell", "251ms,258ms"),
        ("unaligned", "33.3ms,871.2ms"),
        ("from the start", "0,95ms"),
        ("past the end", "900ms,2s"),
        ("the tied instant", "245ms,250ms"),
        ("everything", "0,1s"),
    ]
    rng = random.Random(8)
    for k in range(6):
        a = rng.randrange(0, 900_000)
        out.append((f"random {k}", f"{a}us,{a + rng.choice([21_000, 25_000, 120_000, 600_000])}us"))
    return out


@pytest.mark.parametrize("label, time", ranges(), ids=[label for label, _ in ranges()])
def test_a_range_reads_its_cells_and_agrees_with_the_samples(cells_db, label, time):
    for view, flags in (("list", {"top": "50"}), ("inspect", {"name": "dense"}), ("inspect", {"name": "edges"})):
        flags = {**flags, "time": time}
        from_cells, read = report(cells_db, view, flags, cells=True)
        from_samples, _ = report(cells_db, view, flags, cells=False)
        assert from_cells == from_samples, (view, flags)
        assert read == (label not in ("inside one cell", "the tied instant")), (view, flags)


@pytest.mark.web  # served by Datasette: ./dev test runs it on 0.65 and 1.0
@pytest.mark.asyncio
@pytest.mark.parametrize("time", ["100ms,300ms", "33.3ms,871.2ms", "251ms,258ms", "900ms,2s"])
async def test_canned_counters_queries_read_the_cells_as_the_report(cells_db, time):
    ds = datasette_with([cells_db])
    name = cells_db.stem
    canned = (await ds.client.get(f"/{name}/counters_list.json?_shape=array&time={time}&top=50")).json()
    listed, _ = report(cells_db, "list", {"time": time, "top": "50"}, cells=True)
    got = sorted((r["name"], r["count"], r["min"], r["max"], round(r["avg"], 6)) for r in canned)
    assert got == sorted((name, count, lo, hi, avg) for name, _, count, lo, hi, avg in listed[0])
    inspect = (await ds.client.get(f"/{name}/counters_inspect.json?_shape=array&time={time}&name=dense")).json()
    figures, _ = report(cells_db, "inspect", {"time": time, "name": "dense"}, cells=True)
    assert [(r["count"], r["min"], r["max"], round(r["avg"], 6)) for r in inspect] == [
        (count, lo, hi, avg) for _, count, lo, hi, avg in figures[4]
    ]
