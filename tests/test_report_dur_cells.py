"""A very frequent name's histogram and instances over a time range count the instances of the range's whole
cells from report_slice_name_dur_cell (per name, cell and duration bucket), and read only one bucket's instances
per bucket edge or rank, and those at the range's edges: the same page as reading every instance in range."""

from __future__ import annotations

import random
import sqlite3

import pytest
from conftest import ingest_built, kept_and_defined, report_of
from test_report_name_cells import cells_trace, grid, ranges

from datasette_perfetto import report_tables, schema
from datasette_perfetto.report.views import slices

DUR_CELLS = schema.REPORT_SLICE_NAME_DUR_CELL


@pytest.fixture(scope="module")
def dur_cells_db(tmp_path_factory):
    """cells_trace ingested with every name's durations counted per cell and bucket, as a large trace's names
    with REPORT_DUR_CELL_MIN_COUNT finished instances have them."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(report_tables, "REPORT_NAME_CELL_MIN_SLICES", 0)
        m.setattr(report_tables, "REPORT_DUR_CELL_MIN_COUNT", 1)
        return ingest_built(tmp_path_factory.mktemp("dur_cells"), cells_trace()).path


def test_duration_buckets_are_exact_and_increasing():
    conn = sqlite3.connect(":memory:")
    rng = random.Random(5)
    durations = [*range(300), *(rng.randrange(1 << 62) for _ in range(2000))]
    durations += [(1 << k) + j for k in range(6, 63) for j in (-1, 0, 1) if (1 << k) + j < 1 << 63]
    previous = -1
    for dur in sorted(durations):
        bucket = schema.dur_bucket(dur)
        assert schema.dur_bucket_low(bucket) <= dur < schema.dur_bucket_low(bucket + 1), dur
        assert bucket >= previous
        previous = bucket
        # At most 1/DUR_BUCKET_STEPS of its shortest duration wide.
        width = schema.dur_bucket_low(bucket + 1) - schema.dur_bucket_low(bucket)
        assert width == 1 or width * schema.DUR_BUCKET_STEPS <= schema.dur_bucket_low(bucket), dur
    for dur in durations[::7]:
        assert conn.execute(f"SELECT {schema._dur_bucket_sql(str(dur))}").fetchone()[0] == schema.dur_bucket(dur)


def test_dur_cells_equal_their_sql_definition(dur_cells_db, tmp_path):
    copy = tmp_path / "copy.db"
    copy.write_bytes(dur_cells_db.read_bytes())
    derived = next(d for d in schema.DERIVED if d.name == DUR_CELLS.name)
    populate = derived.populate.replace(f">= {schema.REPORT_NAME_CELL_MIN_SLICES}", ">= 0").replace(
        f">= {schema.REPORT_DUR_CELL_MIN_COUNT}", ">= 1"
    )
    kept, defined = kept_and_defined(copy, derived, populate)
    assert len(kept) > 100 and kept == defined
    names = {row[0] for row in kept}
    assert {"Run", "Draw", "Mark"} <= names and None not in names  # unnamed slices have no rows


def test_small_traces_keep_no_dur_cells(demo_db):
    assert demo_db.count(DUR_CELLS.name) == 0


def test_only_very_frequent_names_have_dur_cells(tmp_path):
    with pytest.MonkeyPatch.context() as m:
        m.setattr(report_tables, "REPORT_NAME_CELL_MIN_SLICES", 0)
        m.setattr(report_tables, "REPORT_DUR_CELL_MIN_COUNT", 150)
        db = ingest_built(tmp_path, cells_trace()).path
    conn = sqlite3.connect(db)
    kept = {n for (n,) in conn.execute(f"SELECT DISTINCT name FROM {DUR_CELLS.name}")}
    frequent = {
        n for (n,) in conn.execute("SELECT name FROM report_slice_name WHERE count - unfinished >= 150 AND name != ''")
    }
    conn.close()
    assert kept == frequent and 0 < len(kept) < 6


@pytest.mark.parametrize("view", ["histogram", "inspect"])
@pytest.mark.parametrize("buckets", ["20", "3", "1"])
def test_one_names_range_counted_through_the_duration_cells_is_the_same_page(dur_cells_db, monkeypatch, view, buckets):
    # A range holding whole cells: the instances of those cells per duration bucket, less those ending after the
    # range, plus those wholly inside its parts outside whole cells, and those across its edges: the same
    # figures, percentiles, buckets, longest instances and footnotes as reading the instances in range.
    conn = sqlite3.connect(dur_cells_db)
    names = [n for (n,) in conn.execute("SELECT name FROM report_slice_name WHERE name != '' ORDER BY name")]
    conn.close()
    monkeypatch.setattr(slices, "range_complement", lambda run, sn: None)  # the other way, tested on its own
    flags = {"buckets": buckets} if view == "histogram" else {"top": "7"}
    parts: dict[str, int] = {"extras": 0, "removed": 0, "edges": 0, "unfinished": 0}
    constructor = slices.range_dur_cells

    def counting(run, sn):
        known = constructor(run, sn)
        if known is not None:
            for part in ("extras", "removed", "edges"):
                parts[part] += len(getattr(known, part))
            parts["unfinished"] += known.unfinished
        return known

    monkeypatch.setattr(slices, "range_dur_cells", counting)

    def page(name: str, first: int, end: int, cells: bool):
        monkeypatch.setattr(slices, "DUR_CELL_EDGE_SLICES", 10**9 if cells else -1)
        result = report_of(dur_cells_db, "slices", view, {"name": name, "time": f"{first}ns,{end}ns", **flags})
        used = any("whole cells" in q.purpose for q in result.run.queries)
        report = result.report
        return used, (result.result_message(), list(report.footnotes), list(report.next_steps))

    used_ranges, checked = 0, 0
    cell, _, _ = grid(dur_cells_db)
    ms = 1_000_000  # the edges thread's Mark at 220 ms: an instant on the range's end, then on its start
    at_mark = [("ending on an instant", 150 * ms, 220 * ms), ("starting on an instant", 220 * ms, 700 * ms)]
    for label, first, end in ranges(dur_cells_db) + at_mark + [("one instant", 500 * cell, 500 * cell + 1)]:
        for name in names:
            by_cells, from_cells = page(name, first, end, True)
            by_instances, from_instances = page(name, first, end, False)
            assert not by_instances, (label, name)
            assert from_cells == from_instances, (label, name)
            used_ranges += by_cells
            checked += by_cells and from_cells[0].stats.count > 0
    assert checked > 40 and used_ranges > checked  # names with no instance in a range too
    # Ranges with parts outside whole cells, instances of the cells ending after the range, unfinished ones.
    assert all(parts.values()), parts


def test_a_name_longer_than_the_edges_allow_reads_its_instances(dur_cells_db, monkeypatch):
    # Reading a name's edge parts would cost more than its instances in range (DUR_CELL_EDGE_SLICES): the
    # instances, the same page.
    monkeypatch.setattr(slices, "range_complement", lambda run, sn: None)
    _, start, end = grid(dur_cells_db)
    flags = {"name": "Run", "time": f"100ms,{(end - start) // 2}ns"}
    pages = []
    for limit in (10**9, 0):
        monkeypatch.setattr(slices, "DUR_CELL_EDGE_SLICES", limit)
        result = report_of(dur_cells_db, "slices", "histogram", flags)
        pages.append((any("whole cells" in q.purpose for q in result.run.queries), result.result_message()))
    assert [used for used, _ in pages] == [True, False]
    assert pages[0][1] == pages[1][1] and pages[0][1].stats.count > 50
