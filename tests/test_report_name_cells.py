"""The slices table of a time range made of whole cells reads report_slice_name_cell (kept in large traces),
or for a thread's, process's or track's slices report_slice_track_name_cell, instead of the instances: the
same rows, totals and slice time as reading the instances. Its canned query reads the same cells. One name's
percentiles over a range read the instances wholly inside it in rank order: the ranked durations."""

from __future__ import annotations

import random
import re
import sqlite3
from contextlib import closing

import pytest
from conftest import connect_with_functions, datasette_with, ingest_built, kept_and_defined, report_of

from datasette_perfetto import report_tables, schema
from datasette_perfetto.report.base import Linker
from datasette_perfetto.report.engine import run_report
from datasette_perfetto.report.scope import ReportError
from datasette_perfetto.report.views import slices
from datasette_perfetto.trace_builder import TraceBuilder

CELLS = schema.REPORT_SLICE_NAME_CELL.name
TRACK_CELLS = schema.REPORT_SLICE_TRACK_NAME_CELL.name
PROCESS_CELLS = schema.REPORT_SLICE_PROCESS_NAME_CELL.name
PARTS_SEEN: set[str] = set()
# An edge's first parameter: inside the range (added to the cells) or outside it (the rest of a cell read whole,
# subtracted).
EDGES = {"before_start", "after_start", "before_out_start", "after_out_start"}
TABLES_READ: set[str] = set()
LONGEST_READ: set[str] = set()  # the purposes of the queries that found each name's longest instance


def cells_trace() -> TraceBuilder:
    """One second of nested slices on four threads, with slices across cell edges, ending exactly on one,
    instants on one, unfinished ones, an unnamed one."""
    rng = random.Random(3)
    builder = TraceBuilder()
    seq = builder.sequence(1)
    seq.process(1, "app")
    # A producer's dimension on three of them (the others have none: their own group_by row).
    seq.process(20, "other")
    ranks = [[("rank", 0)], [("rank", 1)], [("rank", 1)], None]
    # t3 in a second process; "global" on a track of no process (its group_by=process row has no value).
    threads = [seq.thread(1 if i < 3 else 20, 2 + i, f"t{i}", dimensions=ranks[i]) for i in range(4)]
    threads.append(seq.track(77, "global"))
    ms = 1_000_000
    for k, track in enumerate(threads):
        ts = 1_000 + k * 7 + (300 * ms if track == threads[-1] else 0)  # the global track from 0.3 s on
        while ts < 900 * ms:
            name = rng.choice(["Run", "Draw", "Layout", ""])
            dur = rng.choice([3 * ms, 17 * ms, 40 * ms, 150_000])
            seq.slice_begin(ts, track, name)
            inner = ts + rng.randrange(1, 1_000)
            seq.slice_begin(inner, track, rng.choice(["Child", "Run"]))
            seq.slice_end(min(inner + rng.randrange(0, dur // 2), ts + dur), track)
            seq.instant(ts + dur // 2, track, "Mark")
            seq.slice_end(ts + dur, track)
            ts += dur + rng.choice([0, 5_000, 2 * ms])
    # Cells are 10 ms from the first timestamp (1,000 ns): slices ending, starting and instants exactly on edges.
    edges = seq.thread(1, 9, "edges")
    for start, stop, name in [(105, 110, "Run"), (130, 150, "Draw"), (220, 220, "Mark"), (300, 410, "Run")]:
        seq.slice_begin(1_000 + start * ms, edges, name)
        seq.slice_end(1_000 + stop * ms, edges)
    seq.slice_begin(500 * ms, threads[0], "Forever")  # unfinished: open to the end of the trace
    seq.slice_begin(600 * ms + 1, threads[0], "Run")
    seq.instant(950 * ms, threads[1], "Last")
    return builder


@pytest.fixture(scope="module")
def cells_db(tmp_path_factory):
    """cells_trace ingested with cells kept whatever its size."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(report_tables, "REPORT_NAME_CELL_MIN_SLICES", 0)
        return ingest_built(tmp_path_factory.mktemp("cells"), cells_trace()).path


def with_track_cells(source, path, width: str) -> None:
    """A copy of `source` at `path` with report_slice_track_name_cell on report_grid's `width` (cell_dur or
    name_cell_dur), filled as the import fills it (report_tables.slice_track_cells)."""
    path.write_bytes(source.read_bytes())
    with closing(sqlite3.connect(path)) as conn, pytest.MonkeyPatch.context() as m:
        m.setattr(report_tables, "REPORT_NAME_CELL_MIN_SLICES", 0)
        conn.execute(f"UPDATE report_grid SET track_name_cell_dur = {width}")
        conn.execute(f"DELETE FROM {TRACK_CELLS}")
        report_tables.slice_track_cells(conn)
        conn.commit()


@pytest.fixture(scope="module")
def fine_track_cells_db(cells_db, tmp_path_factory):
    """cells_db with track cells as fine as its name cells, as a trace dense in slices has them
    (schema.TRACK_NAME_FINE_CELL_SLICES)."""
    path = tmp_path_factory.mktemp("fine") / "fine.db"
    with_track_cells(cells_db, path, "name_cell_dur")
    return path


@pytest.fixture(scope="module")
def sampled_db(tmp_path_factory):
    """cells_trace ingested with every name's durations sampled (report_slice_name_dur_rank), every 4th, as a
    large trace's frequent names are every REPORT_RANK_STEP-th."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(report_tables, "REPORT_NAME_CELL_MIN_SLICES", 0)
        m.setattr(report_tables, "REPORT_CELL_MIN_COUNT", 1)
        m.setattr(report_tables, "REPORT_RANK_STEP", 4)
        return ingest_built(tmp_path_factory.mktemp("sampled"), cells_trace()).path


def grid(db, by_track: bool = False) -> tuple[int, int, int]:
    """(report_slice_name_cell's cell width, or for an owner's tracks ten of it (report_grid.cell_dur: ranges as
    long as before track cells were as fine), trace start, trace end)."""
    width = "cell_dur" if by_track else "name_cell_dur"
    conn = sqlite3.connect(db)
    try:
        return conn.execute(f"SELECT {width}, start_ts, end_ts FROM report_grid, trace_bounds").fetchone()
    finally:
        conn.close()


@pytest.mark.parametrize("table", [CELLS, TRACK_CELLS, PROCESS_CELLS, schema.REPORT_SLICE_PROCESS_NAME.name])
def test_cells_equal_their_sql_definition(cells_db, tmp_path, table):
    copy = tmp_path / "copy.db"
    copy.write_bytes(cells_db.read_bytes())
    derived = next(d for d in schema.DERIVED if d.name == table)
    kept, defined = kept_and_defined(
        copy, derived, derived.populate.replace(f">= {schema.REPORT_NAME_CELL_MIN_SLICES}", ">= 0")
    )
    conn = sqlite3.connect(copy)
    try:
        edge_ending = conn.execute(
            "SELECT count(*) FROM slice, report_grid, trace_bounds WHERE dur > 0 "
            "AND (ts + dur - start_ts) % cell_dur = 0"
        ).fetchone()[0]
    finally:
        conn.close()
    assert (len(kept) > 100 or table == schema.REPORT_SLICE_PROCESS_NAME.name) and kept == defined
    if table == PROCESS_CELLS:  # both processes, and the track of none
        assert {row[0] for row in kept} == {"1", "2", None}
    assert edge_ending > 0  # slices ending exactly where a cell starts: open there, for no time


def test_small_traces_keep_no_cells(demo_db):
    assert demo_db.count(CELLS) == 0 and demo_db.count(TRACK_CELLS) == 0 and demo_db.count(PROCESS_CELLS) == 0


def report(db, flags: dict, cells: bool, longest_by_time: bool = True):
    """The slices table, from the cells or (cells=False) from the instances; with the cells, each name's longest
    instance found in one pass over the range (small ranges: this trace's always) or, not `longest_by_time`,
    through the (name, dur) index as in large ranges."""
    conn = connect_with_functions(db)
    original, by_time_max = slices.cell_split, slices.LONGEST_BY_TIME_MAX
    if not cells:
        slices.cell_split = lambda run, per="name": None
    if not longest_by_time:
        slices.LONGEST_BY_TIME_MAX = -1
    try:
        result = run_report(conn, "slices", "table", flags, Linker(None, "t.db"))
    finally:
        slices.cell_split, slices.LONGEST_BY_TIME_MAX = original, by_time_max
    if cells:
        LONGEST_READ.update(q.purpose for q in result.run.queries if q.purpose.startswith("the longest part"))
    used_cells = any("range's cells" in q.purpose for q in result.run.queries)
    if used_cells:  # which parts of the range were read from the instances, and which cell tables
        PARTS_SEEN.update(p for q in result.run.queries for p in EDGES if p in q.params)
        TABLES_READ.update(t for q in result.run.queries for t in (TRACK_CELLS, PROCESS_CELLS) if f"FROM {t}" in q.sql)
    instances = {}
    for row in result.result_message().rows:
        inst = row.max_instance
        (start, end) = result.run.time_range()
        stop = result.run.trace.end if inst.dur < 0 else inst.ts + inst.dur
        instances[row.name, row.group_value] = max(min(stop, end) - max(inst.ts, start), 0)
    conn.close()
    return result.result_message(), used_cells, instances


def table_figures(msg) -> tuple:
    rows = [(r.name, r.group_value, r.count, r.total_dur, r.self_dur, r.max_dur) for r in msg.rows]
    return rows, msg.total_rows, msg.total_slices, msg.slice_time


def ranges(db, by_track: bool = False) -> list[tuple[str, int, int]]:
    """(label, start, end) offsets from the trace start: whole cells, and parts of cells before and after."""
    cell, start, end = grid(db, by_track)
    last = (end - start) // cell
    rng = random.Random(11)
    # In name cells (1 ms); for an owner's tracks, in ten of them (their share of the slices is smaller).
    scale = 10 if by_track else 1
    whole = [
        ("one cell", 30 // scale, 30 // scale + 1),
        ("a few", 100 // scale, 170 // scale),
        ("from the start", 0, 250 // scale),
        ("to past the end", last - 50 // scale, last + 500),
        ("the unfinished one's start", 500 // scale, 510 // scale),
        ("everything", 0, last + 1),
    ]
    out = [(label, a * cell, b * cell) for label, a, b in whole]
    for k in range(12):  # edges inside cells: a part before the whole cells, after them, or both
        a = rng.randrange(0, last * cell)
        b = a + rng.choice([2 * cell, 7 * cell + 3, 40 * cell, (last * cell) // 3])
        out.append((f"inside cells {k}", a + (cell if k % 3 == 0 else 0) - a % cell if k % 3 == 0 else a, b))
    return out


@pytest.mark.parametrize(
    "extra",
    [{}, {"sort": "dur"}, {"sort": "count", "top": "3"}, {"name": "R*"}, {"min_count": "5"}, {"sort": "name"}],
    ids=lambda e: "&".join(f"{k}={v}" for k, v in e.items()) or "default",
)
def test_whole_cell_ranges_read_the_cells_and_agree_with_the_instances(cells_db, extra):
    PARTS_SEEN.clear()
    LONGEST_READ.clear()
    for label, first, end in ranges(cells_db):
        flags = {"time": f"{first}ns,{end}ns", **extra}
        from_cells, used, longest = report(cells_db, flags, cells=True)
        from_instances, used_raw, _ = report(cells_db, flags, cells=False)
        by_index, _, _ = report(cells_db, flags, cells=True, longest_by_time=False)
        assert used and not used_raw, label
        assert table_figures(from_cells) == table_figures(from_instances) == table_figures(by_index), label
        assert from_cells.rows or "min_count" in extra, label
        for row in from_cells.rows:  # the instance shown is a longest one (ties may pick another)
            assert longest[row.name, row.group_value] == row.max_dur, (label, row.name)
    assert PARTS_SEEN == EDGES  # ranges with parts outside whole cells were among them
    # Both ways to find each name's longest instance were taken.
    assert "the longest part of each name shown inside the range" in LONGEST_READ
    assert any(purpose.startswith("the longest part of a ") for purpose in LONGEST_READ)


@pytest.mark.parametrize(
    "extra",
    [
        {"thread": "t1"},
        {"thread": "t*", "sort": "dur"},
        {"thread": "edges"},
        {"process": "app", "name": "R*"},
        {"tid": "3", "sort": "count", "top": "2"},
        {"thread": "t0", "min_count": "3"},
        {"group_by": "rank"},
        {"group_by": "rank", "sort": "dur", "name": "R*"},
        {"group_by": "thread", "thread": "t*", "top": "30"},
        {"group_by": "process", "top": "40"},
        {"group_by": "process", "sort": "count", "name": "R*"},
        {"group_by": "process", "process": "app"},
    ],
    ids=lambda e: "&".join(f"{k}={v}" for k, v in e.items()),
)
@pytest.mark.parametrize("fine", [False, True], ids=["track cells of cell_dur", "of name_cell_dur"])
def test_an_owners_or_per_value_whole_cell_ranges_read_the_track_cells_and_agree_with_the_instances(
    cells_db, fine_track_cells_db, extra, fine
):
    if fine:
        cells_db = fine_track_cells_db
    PARTS_SEEN.clear()
    TABLES_READ.clear()
    values: set[str] = set()
    for label, first, end in ranges(cells_db, by_track=True):
        flags = {"time": f"{first}ns,{end}ns", **extra}
        from_cells, used, longest = report(cells_db, flags, cells=True)
        from_instances, used_raw, _ = report(cells_db, flags, cells=False)
        by_index, _, _ = report(cells_db, flags, cells=True, longest_by_time=False)
        assert used and not used_raw, label
        assert table_figures(from_cells) == table_figures(from_instances) == table_figures(by_index), label
        assert from_cells.rows or "min_count" in extra or extra.get("thread") == "edges", label
        for row in from_cells.rows:
            assert longest[row.name, row.group_value] == row.max_dur, (label, row.name)
        values.update(row.group_value for row in from_cells.rows)
    assert PARTS_SEEN == EDGES
    # group_by=process alone: the per process cells' running totals; else the per track cells.
    per_process = extra.get("group_by") == "process" and "process" not in extra
    assert TABLES_READ == ({PROCESS_CELLS} if per_process else {TRACK_CELLS})
    if extra.get("group_by") == "rank":
        assert values == {"0", "1", ""}  # "": the tracks without a rank
    if extra == {"group_by": "process", "top": "40"}:
        assert values == {"1", "2", ""}  # "": the track of no process


def test_min_duration_hides_the_same_names(cells_db):
    cell, _, _ = grid(cells_db)
    flags = {"time": f"{20 * cell + 5}ns,{300 * cell - 9}ns", "min_duration": "50ms"}
    from_cells, used, _ = report(cells_db, flags, cells=True)
    from_instances, _, _ = report(cells_db, flags, cells=False)
    assert used and table_figures(from_cells) == table_figures(from_instances)


@pytest.mark.parametrize("longest_by_time", [True, False])
@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"thread": "t1"},
        {"name": "R*", "top": "2"},
        {"group_by": "thread", "top": "6"},
        {"group_by": "process"},
        {"group_by": "thread", "min_count": "3", "top": "4"},
        {"group_by": "thread", "min_duration": "2ms", "top": "3"},
    ],
)
def test_ranked_by_the_longest_every_names_longest_is_looked_up(cells_db, extra, longest_by_time):
    # sort=max over a range with whole cells: each name's (and value's) figures from the cells, its longest in
    # the range looked up before the rows are ranked (per value: those that rank first, names by their longest
    # over the trace, instances longest first); the same table as from the instances.
    checked = 0
    for label, first, end in ranges(cells_db, by_track="thread" in extra or extra.get("group_by") == "thread"):
        flags = {"time": f"{first}ns,{end}ns", "sort": "max", **extra}
        from_cells, used, longest = report(cells_db, flags, cells=True, longest_by_time=longest_by_time)
        from_instances, _, longest_read = report(cells_db, flags, cells=False)
        assert table_figures(from_cells) == table_figures(from_instances), label
        assert longest == longest_read, label
        checked += used
    assert checked >= 10


@pytest.mark.parametrize(
    "start, end, extra",
    [
        (20.2, 20.8, {"thread": "t1"}),
        (20.5, 21.4, {}),
        (20.1, 20.9, {}),
    ],
    ids=["thread, inside one track cell", "no whole cell", "inside one cell"],
)
def test_other_ranges_and_scopes_read_the_instances(cells_db, start, end, extra):
    cell, _, _ = grid(cells_db)
    flags = {"time": f"{int(start * cell)}ns,{int(end * cell)}ns", **extra}
    _, used, _ = report(cells_db, flags, cells=True)
    assert not used
    _, used, _ = report(cells_db, {"time": f"{20 * cell}ns,{90 * cell}ns"}, cells=True)
    assert used


@pytest.mark.parametrize("time", ["abc", "2s,1s", "1s", "9" * 30 + "s,1s", "1s,1s"])
def test_bad_time_ranges_are_refused_on_a_database_with_cells(cells_db, time):
    from datasette_perfetto.report.scope import ReportError

    with pytest.raises(ReportError) as caught:
        report(cells_db, {"time": time}, cells=True)
    assert caught.value.param == "time" and "\n" not in caught.value.message


@pytest.mark.parametrize(
    "flag, value",
    [("min_count", "abc"), ("min_count", "-1"), ("min_duration", "1 parsec"), ("top", "0"), ("top", "9" * 30)],
)
@pytest.mark.parametrize("extra", [{"group_by": "thread"}, {}])
def test_bad_flags_of_a_range_ranked_by_the_longest_are_refused(cells_db, extra, flag, value):
    """Ranked by the longest over whole cells (top_longest): a bad min_count, min_duration or top is a 400
    naming it, as on every other path, before anything is read."""
    from datasette_perfetto.report.scope import ReportError

    cell, _, _ = grid(cells_db, by_track=True)
    flags = {"time": f"{20 * cell}ns,{90 * cell}ns", "sort": "max", **extra, flag: value}
    with pytest.raises(ReportError) as caught:
        report(cells_db, flags, cells=True)
    assert caught.value.param == flag and "\n" not in caught.value.message
    _, used, _ = report(cells_db, {k: v for k, v in flags.items() if k != flag}, cells=True)
    assert used  # the same range without the bad flag reads the cells: the path the flag would have taken


def test_databases_without_the_track_cells_read_the_instances(cells_db, tmp_path):
    """A database from before report_slice_track_name_cell: an owner's time range reads the instances."""
    copy = tmp_path / "old.db"
    copy.write_bytes(cells_db.read_bytes())
    conn = sqlite3.connect(copy)
    conn.execute(f"DROP TABLE {TRACK_CELLS}")
    conn.commit()
    conn.close()
    cell, _, _ = grid(cells_db, by_track=True)
    flags = {"time": f"{2 * cell}ns,{60 * cell + 7}ns", "thread": "t*"}
    from_old, used, _ = report(copy, flags, cells=True)
    from_cells, used_cells, _ = report(cells_db, flags, cells=True)
    assert not used and used_cells
    assert table_figures(from_old) == table_figures(from_cells)


@pytest.mark.parametrize("scope", [{"thread": "t*"}, {"group_by": "thread"}])
def test_track_cells_of_a_database_from_before_their_own_width_are_read_on_cell_dur(
    fine_track_cells_db, tmp_path, scope
):
    """A database from before report_grid.track_name_cell_dur has its track cells cell_dur wide (ten name cells):
    a range's figures from them are the instances' (read on name_cell_dur, they would not be)."""
    cells_db = fine_track_cells_db
    copy = tmp_path / "old.db"
    with_track_cells(cells_db, copy, "cell_dur")
    with closing(sqlite3.connect(copy)) as conn:
        conn.execute("ALTER TABLE report_grid DROP COLUMN track_name_cell_dur")
        conn.commit()
        cell, name_cell = conn.execute("SELECT cell_dur, name_cell_dur FROM report_grid").fetchone()
    assert cell == 10 * name_cell
    read = 0
    for label, first, end in ranges(cells_db):
        flags = {"time": f"{first}ns,{end}ns", "sort": "name", "top": "50", **scope}
        old, used, _ = report(copy, flags, cells=True)
        from_instances, _, _ = report(cells_db, flags, cells=False)
        assert table_figures(old) == table_figures(from_instances), label
        read += used
    assert read >= 5  # the ranges holding whole cell_dur cells read them


def test_fine_track_cells_equal_their_sql_definition(fine_track_cells_db, cells_db, tmp_path):
    copy = tmp_path / "copy.db"
    copy.write_bytes(fine_track_cells_db.read_bytes())
    derived = next(d for d in schema.DERIVED if d.name == TRACK_CELLS)
    populate = derived.populate.replace(f">= {schema.REPORT_NAME_CELL_MIN_SLICES}", ">= 0")
    kept, defined = kept_and_defined(copy, derived, populate)
    assert kept == defined
    with closing(sqlite3.connect(cells_db)) as conn:
        assert conn.execute(f"SELECT count(*) FROM {TRACK_CELLS}").fetchone()[0] < len(kept)


@pytest.mark.parametrize("extra_slices, fine", [(-1, False), (0, False), (1, True)])
def test_track_cells_are_as_fine_as_the_name_cells_where_cells_hold_many_slices(tmp_path, extra_slices, fine):
    """report_grid: track_name_cell_dur is cell_dur, or name_cell_dur once a cell_dur cell holds more than
    TRACK_NAME_FINE_CELL_SLICES slices on average (the count is the last slice id + 1)."""
    span = 1_000_000_000  # a 1 s trace: 20 buckets of 50 ms, cells of 10 ms, name cells of 1 ms
    at_limit = schema.TRACK_NAME_FINE_CELL_SLICES * span // 10_000_000
    with closing(sqlite3.connect(tmp_path / "grid.db")) as conn:
        for table in (schema.SLICE, schema.TRACE_BOUNDS, schema.REPORT_GRID):
            conn.execute(table.create_sql())
        conn.execute("INSERT INTO trace_bounds (start_ts, end_ts) VALUES (5, ?)", (5 + span,))
        conn.execute("INSERT INTO slice (id, ts, dur) VALUES (?, 5, 1)", (at_limit + extra_slices - 1,))
        conn.execute(next(d for d in schema.DERIVED if d.name == "report_grid").populate)
        row = conn.execute("SELECT cell_dur, name_cell_dur, track_name_cell_dur FROM report_grid").fetchone()
    assert row == (10_000_000, 1_000_000, 1_000_000 if fine else 10_000_000)


def without_running_totals(source, path, table: str):
    """A copy of `source` at `path` as a database from before `table`'s running totals (and the per track cells'
    (track_id, name, cell) index that finds them) had them."""
    path.write_bytes(source.read_bytes())
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(f"DROP INDEX {TRACK_CELLS}_track_id_name_cell")
        for column in schema.SLICE_CELL_TOTALS:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN cum_{column}")
        conn.commit()
    return path


def test_a_compare_over_cells_without_running_totals_is_the_same(cells_db, tmp_path):
    # A database from before the per track cells' running totals: the compare by thread over a range sums its
    # whole cells per name and track, and gives the same page.
    copy = without_running_totals(cells_db, tmp_path / "old.db", TRACK_CELLS)
    read = 0
    for label, first, end in ranges(cells_db, by_track=True):
        flags = {"by": "thread", "time": f"{first}ns,{end}ns"}
        totals = report_of(cells_db, "dimensions", "compare", flags)
        summed = report_of(copy, "dimensions", "compare", flags)
        assert summed.result_message() == totals.result_message(), label
        read += any("range's cells" in q.purpose for q in summed.run.queries)
    assert read >= 8


@pytest.mark.parametrize("scope", [{}, {"thread": "t*"}, {"group_by": "thread"}])
def test_cells_without_running_totals_are_summed(cells_db, tmp_path, scope):
    """A database from before the name (or per track) cells' running totals: a range's whole cells are summed,
    with the same rows as through the running totals (two rows per name, or per track and name)."""
    copy = without_running_totals(cells_db, tmp_path / "old.db", CELLS if not scope else TRACK_CELLS)
    read = 0
    for label, first, end in ranges(cells_db, by_track=bool(scope)):
        flags = {"time": f"{first}ns,{end}ns", "sort": "name", "top": "50", **scope}
        totals = report_of(cells_db, "slices", "table", flags)
        summed = report_of(copy, "slices", "table", flags)
        assert table_figures(summed.result_message()) == table_figures(totals.result_message()), label
        read_totals = any("hi.cum_covered" in q.sql for q in totals.run.queries)
        assert read_totals == any("range's cells" in q.purpose for q in totals.run.queries), label
        assert not any("hi.cum_covered" in q.sql for q in summed.run.queries), label
        read += read_totals
    assert read >= 10


@pytest.mark.parametrize(
    "extra",
    [
        {"by": "thread"},
        {"by": "process"},
        {"by": "thread", "sort": "total", "top": "3"},
        {"by": "thread", "name": "R*", "baseline_value": "t0"},
        {"by": "process", "thread": "t*", "sort": "count"},
        {"by": "thread", "sort": "max", "top": "3"},
        {"by": "process", "sort": "max", "min_count": "2"},
    ],
)
@pytest.mark.parametrize("longest_by_time", [True, False])
def test_comparing_many_values_over_a_range_reads_the_track_cells(cells_db, monkeypatch, extra, longest_by_time):
    # by=thread or process over a range: per name and value the slices table's figures from the track (or
    # process) cells and the range's edges, and the longest of each value for the names shown (sort=max: the
    # names that rank first by their longest, in one pass by time or, as in large ranges, by the (name, dur)
    # index); the same page as from the instances.
    if not longest_by_time:
        monkeypatch.setattr(slices, "LONGEST_BY_TIME_MAX", -1)

    def compare(time: str):
        try:
            result = report_of(cells_db, "dimensions", "compare", {"time": time, **extra})
        except ReportError as e:  # no slices of the baseline's thread there: refused alike
            return str(e), []
        msg = result.result_message()
        rows = [
            (
                n.name,
                n.count,
                n.total_dur,
                n.spread,
                n.straggler,
                [
                    (v.value, v.stats.count, v.stats.total, v.stats.max, v.self_dur, v.stats.p50, v.max_dur_delta)
                    for v in n.values
                ],
            )
            for n in msg.names
        ]
        totals = [(t.value, t.slice_count, t.slice_time) for t in msg.totals]
        return (rows, msg.total_rows, totals), [q.purpose for q in result.run.queries]

    from datasette_perfetto.report.views import dimensions

    few_instances = dimensions._few_instances
    read = 0
    for label, first, end in ranges(cells_db, by_track=True):
        time = f"{first}ns,{end}ns"
        from_cells, purposes = compare(time)
        with monkeypatch.context() as m:
            m.setattr(dimensions, "cell_split", lambda run, per="name": None)
            # The names shown read through the other index (name, or track and time) than the range would pick.
            m.setattr(dimensions, "_few_instances", lambda run, names, few=few_instances: not few(run, names))
            from_instances, slow = compare(time)
        assert not any("in the range's cells" in p for p in slow), label
        read += any("in the range's cells" in p for p in purposes)
        assert from_cells == from_instances and from_cells[0], label
    assert read >= 8


def test_what_only_a_subtracted_edge_held_is_not_compared(tmp_path, monkeypatch):
    # by=thread over a range starting early in a cell: that cell is read whole and its part before the range
    # subtracted, so what lies only there nets to no instance: t2 (its one slice there) is no value of the
    # compare, "Gone" no name of it; "Sliver" is, by t0's instance inside the range. As from the instances.
    builder = TraceBuilder()
    seq = builder.sequence(1)
    seq.process(1, "app")
    t0, t1, t2 = (seq.thread(1, 2 + i, f"t{i}") for i in range(3))
    ms = 1_000_000
    for track in (t0, t1):
        for k in range(90):
            seq.slice_begin(1_000 + k * 10 * ms, track, "Run")
            seq.slice_end(1_000 + k * 10 * ms + 4 * ms, track)
    for track, name, at in [(t1, "Sliver", 200), (t1, "Gone", 201), (t2, "Lonely", 200), (t0, "Sliver", 500)]:
        seq.slice_begin(1_000 + at * ms + 100, track, name)
        seq.slice_end(1_000 + at * ms + ms // 2, track)
    with monkeypatch.context() as m:
        m.setattr(report_tables, "REPORT_NAME_CELL_MIN_SLICES", 0)
        db = ingest_built(tmp_path, builder).path
    cell, _, _ = grid(db, by_track=True)
    assert cell == 10 * ms  # the range below starts 2 ms into the cell [200 ms, 210 ms)
    flags = {"by": "thread", "time": "202ms,700ms"}

    def compared() -> tuple[dict, list[str], list[str]]:
        result = report_of(db, "dimensions", "compare", flags)
        msg = result.result_message()
        names = {n.name: {v.label: (v.stats.count, v.stats.total) for v in n.values} for n in msg.names}
        return names, [t.label for t in msg.totals], [q.purpose for q in result.run.queries]

    *from_cells, purposes = compared()
    assert any("per slice name and track in the range's cells" in p for p in purposes)
    from datasette_perfetto.report.views import dimensions

    with monkeypatch.context() as m:
        m.setattr(dimensions, "cell_split", lambda run, per="name": None)
        *from_instances, slow = compared()
    assert not any("in the range's cells" in p for p in slow)
    assert from_cells == from_instances
    names, values = from_cells
    assert set(names) == {"Run", "Sliver"}
    assert [label.split(" ")[0] for label in values] == ["t0", "t1"], values
    assert [figures[0] for figures in names["Sliver"].values()] == [1, 0]


@pytest.mark.parametrize("time", [None, "range"])
@pytest.mark.parametrize("sort", ["spread", "total", "count", "max", "name"])
def test_compare_orders_names_by_the_sort_key(cells_db, sort, time):
    cell, start, end = grid(cells_db, by_track=True)
    flags = {"by": "thread", "sort": sort, "top": "100"}
    if time:
        flags["time"] = f"{3 * cell + 7}ns,{(end - start) * 2 // 3}ns"
    names = report_of(cells_db, "dimensions", "compare", flags).result_message().names
    keys = {
        "spread": lambda n: (any(not v.stats.count for v in n.values), -n.spread, -n.total_dur, n.name),
        "total": lambda n: (-n.total_dur, n.name),
        "count": lambda n: (-n.count, n.name),
        "max": lambda n: (-max(v.stats.max for v in n.values), n.name),
        "name": lambda n: (n.name,),
    }
    assert len(names) > 3 and len({keys[sort](n)[0] for n in names}) > 1  # not all alike
    assert [n.name for n in names] == [n.name for n in sorted(names, key=keys[sort])]


@pytest.mark.web
@pytest.mark.asyncio
async def test_the_page_shows_the_sql_it_ran_over_the_track_cells(cells_db):
    cell, _, _ = grid(cells_db, by_track=True)
    db_name = cells_db.stem
    ds = datasette_with([cells_db])
    time = f"{3 * cell - 11}ns,{70 * cell + 5}ns"  # short parts before and after the whole cells
    response = await ds.client.get(f"/{db_name}/-/report/slices.json?thread=t*&time={time}&top=4")
    assert response.status_code == 200, response.text
    data = response.json()
    query = next(q for q in data["queries"] if q["purpose"].startswith("slice names, top by the sort key"))
    assert TRACK_CELLS in query["sql"] and "before_start" in query["params"] and "after_start" in query["params"]
    conn = sqlite3.connect(cells_db)
    params = {k: (int(v) if v.lstrip("-").isdigit() else v) for k, v in query["params"].items()}
    shown = [r[0] for r in conn.execute(query["sql"], params)]
    conn.close()
    assert shown == [r["name"] for r in data["slices_table"]["rows"]] and len(shown) == 4
    sql = (await ds.client.get(f"/{db_name}/-/report/slices.sql?thread=t*&time={time}")).text
    assert TRACK_CELLS in sql
    bad = await ds.client.get(f"/{db_name}/-/report/slices.json?thread=t*&time={time.split(',')[0]}")
    assert bad.status_code == 400 and bad.json()["parameter"] == "time"


@pytest.mark.web
@pytest.mark.asyncio
async def test_the_page_per_process_shows_the_sql_it_ran_over_the_running_totals(cells_db):
    cell, _, _ = grid(cells_db)
    db_name = cells_db.stem
    ds = datasette_with([cells_db])
    # Long parts before and after the whole cells: each read as its whole cell less the rest.
    time = f"{30 * cell - 9 * cell // 10}ns,{700 * cell + 9 * cell // 10}ns"
    response = await ds.client.get(f"/{db_name}/-/report/slices.json?group_by=process&time={time}&top=6")
    assert response.status_code == 200, response.text
    data = response.json()
    query = next(q for q in data["queries"] if q["purpose"].startswith("slice names, top by the sort key"))
    assert PROCESS_CELLS in query["sql"] and {"before_out_start", "after_out_start"} <= query["params"].keys()
    conn = sqlite3.connect(cells_db)
    params = {k: (int(v) if v.lstrip("-").isdigit() else v) for k, v in query["params"].items()}
    shown = [(r[0], r[1] or "") for r in conn.execute(query["sql"], params)]
    conn.close()
    rows = data["slices_table"]["rows"]
    assert shown == [(r["name"], r.get("group_value", "")) for r in rows] and len(shown) == 6
    assert {r.get("group_value", "") for r in rows} >= {"1", "2"}


def _canned_rows(conn: sqlite3.Connection, flags: dict[str, str]) -> list[tuple]:
    """The canned slices_table's rows for `flags` (every other parameter empty), as the report's figures."""
    sql = slices.SlicesTableView.canned_sql
    params = {name: flags.get(name, "") for name in set(re.findall(r":(\w+)", sql))}
    rows = conn.execute(sql, params).fetchall()
    columns = [d[0] for d in conn.execute(sql, params).description]
    return [dict(zip(columns, row)) for row in rows]


@pytest.fixture(scope="module")
def skewed_cells_db(cells_db, tmp_path_factory):
    """cells_db with one nanosecond more covered time in every name cell: what a query reads from them shows."""
    skewed = tmp_path_factory.mktemp("skewed") / "skewed.db"
    skewed.write_bytes(cells_db.read_bytes())
    with closing(sqlite3.connect(skewed)) as conn, conn:
        conn.execute(f"UPDATE {CELLS} SET covered = covered + 1")
    return skewed


def _figures(canned: list[dict]) -> list[tuple]:
    return [(r["name"], r["count"], r["total_dur"], r["self_dur"], r["max_dur"]) for r in canned]


def _report_figures(msg) -> list[tuple]:
    return [(r.name, r.count, r.total_dur, r.self_dur, r.max_dur) for r in msg.rows]


@pytest.mark.parametrize(
    "extra",
    [{}, {"sort": "dur"}, {"sort": "count", "top": "3"}, {"name": "R*"}, {"min_count": "5"}, {"sort": "name"}],
    ids=lambda e: "&".join(f"{k}={v}" for k, v in e.items()) or "default",
)
def test_the_canned_slices_table_reads_the_cells_and_shows_the_reports_rows(cells_db, skewed_cells_db, extra):
    skews_seen = 0
    with closing(connect_with_functions(cells_db)) as conn, closing(connect_with_functions(skewed_cells_db)) as skewed:
        for label, first, end in ranges(cells_db):
            flags = {"time": f"{first}ns,{end}ns", **extra}
            msg, used, _ = report(cells_db, flags, cells=True)
            assert used, label
            canned = _canned_rows(conn, flags)
            assert _figures(canned) == _report_figures(msg), label
            assert [r["max_ts"] for r in canned] == [r.max_instance.ts for r in msg.rows], label
            assert [r["percent_of_slice_time"] for r in canned] == [
                round(100.0 * r.self_dur / msg.slice_time, 1) for r in msg.rows
            ], label
            assert [r["percent_of_trace"] for r in canned] == [
                round(100.0 * r.total_dur / (end - first), 1) for r in msg.rows
            ], label
            if canned:  # the cells were read
                skews_seen += 1
                totals = {r["name"]: r["total_dur"] for r in _canned_rows(skewed, flags)}
                assert any(totals.get(r["name"]) != r["total_dur"] for r in canned), label
    assert skews_seen >= 5


@pytest.mark.parametrize(
    "extra", [{"sort": "max"}, {"thread": "t1"}], ids=lambda e: "&".join(f"{k}={v}" for k, v in e.items())
)
def test_the_canned_slices_table_reads_the_instances_where_the_report_does(cells_db, skewed_cells_db, extra):
    # sort=max and an owner's slices: the report reads the instances (or the track cells), so does the canned
    # query, whatever the name cells hold.
    with closing(connect_with_functions(cells_db)) as conn, closing(connect_with_functions(skewed_cells_db)) as skewed:
        for label, first, end in ranges(cells_db)[:6]:
            flags = {"time": f"{first}ns,{end}ns", **extra}
            msg, _, _ = report(cells_db, flags, cells=True)
            canned = _canned_rows(conn, flags)
            assert _figures(canned) == _report_figures(msg), label
            assert _canned_rows(skewed, flags) == canned, label


@pytest.mark.parametrize("view", ["histogram", "inspect"])
def test_one_names_percentiles_in_a_range_are_the_ranked_durations(cells_db, view):
    # A name's minimum and percentiles over a range come from the instances wholly inside it, in the (name, dur)
    # index's order, and the few across its edges (or unfinished) merged in: the same values as ranking every
    # instance's duration inside the range.
    conn = sqlite3.connect(cells_db)
    trace_end = conn.execute("SELECT end_ts FROM trace_bounds").fetchone()[0]
    instances = conn.execute("SELECT name, ts, dur, id FROM slice WHERE name IS NOT NULL AND name != ''").fetchall()
    conn.close()
    names = sorted({name for name, _, _, _ in instances})
    cell, _, _ = grid(cells_db)
    checked = set()
    for label, first, end in ranges(cells_db) + [("one instant", 500 * cell, 500 * cell + 1)]:
        for name in names:
            result = report_of(cells_db, "slices", view, {"name": name, "time": f"{first}ns,{end}ns"})
            start, stop = result.run.time_range()
            counted = {
                slice_id: max(min(trace_end if dur < 0 else ts + dur, stop) - max(ts, start), 0)
                for n, ts, dur, slice_id in instances
                if n == name and ts < stop and (trace_end if dur < 0 else ts + dur) >= start
            }
            inside = sorted(counted.values())
            message = result.result_message()
            stats = message.stats
            if view == "inspect":  # longest first (the latest among equals)
                longest = sorted(counted, key=lambda i: (-counted[i], -i))[: len(message.instances)]
                assert [i.id for i in message.instances] == longest, (label, name)
            assert stats.count == len(inside), (label, name)
            if not inside:
                continue
            expected = [inside[0], *(inside[slices.percentile_index(len(inside), p)] for p in slices.PERCENTILES)]
            assert [stats.min, stats.p50, stats.p95, stats.p99] == expected, (label, name)
            in_scope = [
                (ts, dur)
                for n, ts, dur, _ in instances
                if n == name and ts < stop and (trace_end if dur < 0 else ts + dur) >= start
            ]
            checked.add(any(dur < 0 or ts < start or ts + dur > stop for ts, dur in in_scope))
    assert checked == {True, False}  # names with instances across the range's edges (or unfinished), and without


@pytest.mark.parametrize("view", ["histogram", "inspect"])
@pytest.mark.parametrize("buckets", ["20", "3", "1"])
def test_one_names_range_read_through_what_lies_outside_it_is_the_same_page(sampled_db, monkeypatch, view, buckets):
    # Over most of the trace, a name's instances in range are its finished ones less the few outside, and those
    # across the range's edges: the same figures, percentiles, buckets, longest instances and footnotes as
    # reading the instances in range.
    conn = sqlite3.connect(sampled_db)
    names = [n for (n,) in conn.execute("SELECT name FROM report_slice_name WHERE name != '' ORDER BY name")]
    assert conn.execute("SELECT count(DISTINCT name) FROM report_slice_name_dur_rank").fetchone()[0] == len(names) + 1
    conn.close()
    monkeypatch.setattr(slices, "REPORT_CELL_MIN_COUNT", 1)
    cell, _, _ = grid(sampled_db)
    flags = {"buckets": buckets} if view == "histogram" else {"top": "7"}

    def page(name: str, first: int, end: int, share: float):
        monkeypatch.setattr(slices, "COMPLEMENT_SHARE", share)
        result = report_of(sampled_db, "slices", view, {"name": name, "time": f"{first}ns,{end}ns", **flags})
        complement = any("what lies outside it" in q.purpose for q in result.run.queries)
        report = result.report
        return complement, (result.result_message(), list(report.footnotes), list(report.next_steps))

    checked = 0
    ms = 1_000_000  # the edges thread's Mark at 220 ms: an instant on the range's end, then on its start
    at_mark = [("ending on an instant", 150 * ms, 220 * ms), ("starting on an instant", 220 * ms, 700 * ms)]
    for label, first, end in ranges(sampled_db) + at_mark + [("one instant", 500 * cell, 500 * cell + 1)]:
        for name in names:
            read_outside, outside = page(name, first, end, float("inf"))
            read_inside, inside = page(name, first, end, -1)
            assert (read_outside, read_inside) == (True, False), (label, name)
            assert outside == inside, (label, name)
            checked += outside[0].stats.count > 0
    assert checked > 80


@pytest.mark.parametrize("extra", [{}, {"name": "R*"}, {"sort": "max", "top": "3"}], ids=lambda e: str(e))
def test_comparing_the_one_machine_over_a_range_reads_the_name_cells(cells_db, monkeypatch, extra):
    # by=machine on a one-machine trace: the per name figures of the range, as the slices table reads them.
    def compare(time: str):
        result = report_of(cells_db, "dimensions", "compare", {"by": "machine", "time": time, **extra})
        rows = [
            (
                n.name,
                n.count,
                n.total_dur,
                [(v.value, v.stats.count, v.stats.total, v.stats.max, v.self_dur) for v in n.values],
            )
            for n in result.result_message().names
        ]
        return rows, [q.purpose for q in result.run.queries]

    from datasette_perfetto.report.views import dimensions

    for label, first, end in ranges(cells_db)[:10]:
        time = f"{first}ns,{end}ns"
        from_cells, purposes = compare(time)
        with monkeypatch.context() as m:
            m.setattr(dimensions, "cell_split", lambda run, per="name": None)
            from_instances, _ = compare(time)
        assert any("in the range's cells" in p for p in purposes), label
        assert from_cells == from_instances and from_cells, label


def timeline(db, flags: dict[str, str]) -> tuple[tuple, bool]:
    """The slices timeline's page (result, footnotes, next steps), and whether it read the running totals."""
    result = report_of(db, "slices", "timeline", flags)
    report = result.report
    from_totals = any("running totals per track" in q.purpose for q in result.run.queries)
    return (result.result_message(), list(report.footnotes), list(report.next_steps)), from_totals


@pytest.mark.parametrize("owner", [{}, {"thread": "t0"}, {"process": "app"}], ids=["every track", "thread", "process"])
@pytest.mark.parametrize("fine", [False, True], ids=["cell_dur track cells", "fine track cells"])
def test_a_timeline_over_a_range_from_the_running_totals_is_the_instances_one(
    cells_db, fine_track_cells_db, monkeypatch, owner, fine
):
    # Each bucket's instances (those open at the range's start in the first) and covered time per track, and so
    # its top threads: the running totals at the cell edges nearest the bucket edges, corrected by the instances
    # between, equal reading the instances. Nested, unfinished, zero-length and unnamed-sibling instances, edges
    # on cell edges and inside cells, ranges past the trace's end.
    db = fine_track_cells_db if fine else cells_db
    conn = sqlite3.connect(db)
    names = [n for (n,) in conn.execute("SELECT name FROM report_slice_name WHERE name != '' ORDER BY name")]
    conn.close()
    monkeypatch.setattr(slices, "TIMELINE_TOTALS_MAX_EDGE_SHARE", float("inf"))  # every name, however long
    ms = 1_000_000
    odd = [("on the edges thread's slice ends", 110 * ms, 410 * ms), ("one nanosecond", 300 * ms, 300 * ms + 1)]
    checked = from_totals_seen = 0
    for k, (label, first, end) in enumerate(ranges(db, by_track=not fine) + odd):
        for name in names:
            flags = {"name": name, "time": f"{first}ns,{end}ns", "buckets": "20" if k % 2 else "3", **owner}
            monkeypatch.setattr(slices, "TIMELINE_TOTALS_MIN_INSTANCES", 10**18)
            from_instances, read_totals = timeline(db, flags)
            assert not read_totals
            monkeypatch.setattr(slices, "TIMELINE_TOTALS_MIN_INSTANCES", 0)
            from_totals, read_totals = timeline(db, flags)
            assert from_totals == from_instances, (label, name)
            from_totals_seen += read_totals
            checked += any(b.count for b in from_totals[0].buckets)
    assert checked > 60 and from_totals_seen > 60


def test_a_timeline_over_a_range_reads_the_instances_when_the_totals_would_not_spare_reading_them(
    cells_db, monkeypatch
):
    # Too few instances in the range, min_duration (the cells count every instance), or instances long against
    # the cells (the parts around the bucket edges, inside 10 ms cells here, reaching back by Run's longest,
    # 110 ms, would read more slices than Run has in the range).
    monkeypatch.setattr(slices, "TIMELINE_TOTALS_MIN_INSTANCES", 0)
    ms = 1_000_000
    inside_cells = f"{100 * ms + 3}ns,{800 * ms + 3}ns"
    assert timeline(cells_db, {"name": "Mark", "time": inside_cells})[1]
    assert not timeline(cells_db, {"name": "Mark", "time": inside_cells, "min_duration": "1ns"})[1]
    assert not timeline(cells_db, {"name": "Run", "time": inside_cells})[1]
    monkeypatch.setattr(slices, "TIMELINE_TOTALS_MIN_INSTANCES", 10**9)
    assert not timeline(cells_db, {"name": "Mark", "time": inside_cells})[1]


@pytest.mark.parametrize("by", ["rank", "thread", "process"])
@pytest.mark.parametrize("owner", [{}, {"process": "app"}], ids=["every track", "process=app"])
def test_histogram_per_value_over_a_range_beyond_its_ranking_budget_reads_the_cells(cells_db, monkeypatch, by, owner):
    # Over a time range holding whole cells, beyond GROUP_RANKING_BUDGET instances each value's count, total and
    # average come from the per track (or process) cells and the range's edges, its longest from the (name, dur)
    # index: the same as ranking gives; minimum and percentiles are left out.
    checked = 0
    for label, first, end in ranges(cells_db, by_track=True):
        flags = {"name": "Run", "group_by": by, "time": f"{first}ns,{end}ns", **owner}
        monkeypatch.setattr(slices, "GROUP_RANKING_BUDGET", 10**9)
        ranked = report_of(cells_db, "slices", "histogram", flags).result_message()
        monkeypatch.setattr(slices, "GROUP_RANKING_BUDGET", 0)
        result = report_of(cells_db, "slices", "histogram", flags)
        totals = result.result_message()
        from_cells = any("in the range's cells" in q.purpose for q in result.run.queries)
        assert from_cells == totals.group_percentiles_left_out, label
        assert [(g.value, g.label, g.stats.count, g.stats.total, g.stats.avg, g.stats.max) for g in totals.groups] == [
            (g.value, g.label, g.stats.count, g.stats.total, g.stats.avg, g.stats.max) for g in ranked.groups
        ], label
        assert totals.stats == ranked.stats and list(totals.buckets) == list(ranked.buckets), label
        if from_cells:
            assert all(g.stats.min == g.stats.p50 == g.stats.p99 == 0 for g in totals.groups), label
            checked += len(totals.groups) > (0 if by == "process" and owner else 1)  # app: one process
    assert checked >= 8
