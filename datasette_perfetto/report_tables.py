"""Faster ways to fill some of schema.DERIVED's report tables than their SQL definitions.

The definitions rank every row with window functions (a sort of the whole slice or counter
table); these read the indexes the import builds anyway and the aggregates streamed while rows
were written (aggregates.py), and sort one group at a time. Each gives the rows its
`populate` SQL gives, in the same order (tests/test_report_tables.py compares them; REAL sums may
differ in the last bits, as summing in another order does).

COMPUTE maps a derived table's name to its function `(conn) -> None`, which writes its rows (and those of
the tables FILLED_WITH it); derived.py runs it instead of the SQL.
"""

from __future__ import annotations

import bisect
import functools
import math
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate
from operator import mul, sub
from typing import Any

from . import schema
from .aggregates import clamp_int64, text_order_key
from .schema import (
    REPORT_CELL_MIN_COUNT,
    REPORT_COUNTER_CELL_MIN_SAMPLES,
    REPORT_DUR_CELL_MIN_COUNT,
    REPORT_NAME_CELL_MIN_SLICES,
    REPORT_PERCENTILES,
    REPORT_RANK_STEP,
    REPORT_TRACK_CELL_MIN_EVENTS,
    SHOWN_DIMENSIONS_SQL,
    SLICE_DUR,
    TRACK_EVENT_CELLS_SQL,
    TRACK_EVENTS_SQL,
)

# Groups at most this large are read whole; larger ones pick their ranks with OFFSET in the index.
_READ_WHOLE = 64
# Durations per read while report_slice_name_dur_rank samples a name's.
_RANK_BATCH = 65_536


def nearest_rank(n: int, p: float) -> int:
    """Nearest-rank index into n sorted values (the report's percentile_index; its SQL twin is
    schema._nearest_rank)."""
    return min(n - 1, max(0, int(round(p / 100 * (n - 1)))))


@functools.lru_cache(maxsize=4096)
def _ranks(n: int) -> tuple[int, ...]:
    """The sorted positions a group of n values keeps: the smallest, then each percentile's (cached: most groups
    are small, of a few sizes)."""
    return (0, *(nearest_rank(n, p) for p in REPORT_PERCENTILES))


def slice_name_percentiles(conn: sqlite3.Connection) -> None:
    """report_slice_name_percentile: per name (report_slice_name gives each one's count), the durations at
    the kept ranks, read from the (name, dur) index; names with unfinished slices are sorted here."""
    rows = []
    names = conn.execute("SELECT name, count, unfinished FROM report_slice_name ORDER BY name").fetchall()
    for name, count, unfinished in names:
        ranks = _ranks(count)
        if unfinished or count <= _READ_WHOLE:
            # An unfinished slice's duration (dur -1 in the index) depends on its start: sort here.
            durations = sorted(
                d for (d,) in conn.execute(f"SELECT {SLICE_DUR} FROM slice WHERE name IS :name", {"name": name})
            )
            picked = [durations[r] for r in ranks]
        else:
            picked = [
                conn.execute(
                    "SELECT dur FROM slice WHERE name IS ? ORDER BY dur LIMIT 1 OFFSET ?", (name, r)
                ).fetchone()[0]
                for r in ranks
            ]
        rows.append((name, *picked))
    _insert(conn, schema.REPORT_SLICE_NAME_PERCENTILE, rows)


def track_stats(conn: sqlite3.Connection) -> None:
    """report_track_stats: slice counts from report_slice_track_name, state counts from the state table's
    (track_id, ts) index, and counter figures from one pass over the counter index in (track_id, ts, id)
    order, one track's values sorted at a time."""
    by_track: dict[int, list] = {}
    nothing = (None,) * (4 + len(REPORT_PERCENTILES))
    for track_id, count in conn.execute("SELECT track_id, sum(count) FROM report_slice_track_name GROUP BY track_id"):
        by_track[track_id] = [count, *nothing]
    for track_id, count in conn.execute("SELECT track_id, count(*) FROM state GROUP BY track_id"):
        _add_count(by_track, track_id, count, nothing)
    for track_id, figures in _counter_figures(conn):
        kept = by_track.get(track_id)
        if kept is None:
            by_track[track_id] = list(figures)
        else:  # a track with counter values and slices or states as well: counts add up, the figures are its values'
            kept[0] += figures[0]
            kept[1:] = figures[1:]
    _insert(conn, schema.REPORT_TRACK_STATS, [(track_id, *figures) for track_id, figures in sorted(by_track.items())])


def _add_count(by_track: dict[int, list], track_id: int, count: int, nothing: tuple) -> None:
    kept = by_track.get(track_id)
    if kept is None:
        by_track[track_id] = [count, *nothing]
    else:
        kept[0] += count


def _counter_counts(conn: sqlite3.Connection) -> list[tuple[int, int]]:
    """(track_id, samples) per counter track in track_id order: each track's fetchmany size in the passes below."""
    return conn.execute("SELECT track_id, count(*) FROM counter GROUP BY track_id ORDER BY track_id").fetchall()


def _counter_figures(conn: sqlite3.Connection) -> Iterator[tuple[int, tuple]]:
    """Per counter track, in track_id order: its values' _figures, one track's values read at a time from the
    (track_id, ts, id, value) index (a fetchmany of its count: no per-row test of the track, 10% faster)."""
    counts = _counter_counts(conn)
    in_order = conn.execute("SELECT value FROM counter ORDER BY track_id, ts, id")
    for track_id, count in counts:
        yield track_id, _figures([value for (value,) in in_order.fetchmany(count)])


def counter_integrals(conn: sqlite3.Connection) -> None:
    """report_counter_integral, and in traces of at least REPORT_COUNTER_CELL_MIN_SAMPLES samples
    report_counter_cell: one pass over the counter index in (track_id, ts, id) order, a track's samples read
    (a fetchmany of its count) and its rows written at a time. A task apart from track_stats, so the two passes
    run side by side (derived.py)."""
    counts = _counter_counts(conn)
    grid = None
    if sum(count for _, count in counts) >= REPORT_COUNTER_CELL_MIN_SAMPLES:
        grid = conn.execute("SELECT b.start_ts, g.cell_dur FROM trace_bounds b, report_grid g").fetchone()
    in_order = conn.execute("SELECT id, ts, value FROM counter ORDER BY track_id, ts, id")
    for track_id, count in counts:
        ids, times, values = zip(*in_order.fetchmany(count))
        _insert_grouped(conn, schema.REPORT_COUNTER_INTEGRAL, list(zip(ids, _integrals(times, values))))
        if grid is not None:
            _insert_grouped(conn, schema.REPORT_COUNTER_CELL, list(_counter_cells(track_id, times, values, *grid)))


def _integrals(times: tuple, values: tuple) -> Iterator[float]:
    """Each sample's integral (report_counter_integral): value x time held summed over the samples before it, a
    NULL value holding 0; one C-level pass (accumulate over map) instead of a Python loop per sample."""
    if None in values:
        values = tuple(0.0 if v is None else v for v in values)
    return accumulate(map(mul, values, map(sub, times[1:], times)), initial=0.0)


def _counter_cells(track_id: int, times: tuple, values: tuple, start: int, cell_dur: int) -> Iterator[tuple]:
    """A track's report_counter_cell rows from its samples in time order: count, and min, max and sum of the
    values but NULLs (as SQL's aggregates); each cell's samples found by bisection, a slice of values."""
    i, n = 0, len(times)
    while i < n:
        cell = (times[i] - start) // cell_dur
        j = bisect.bisect_left(times, start + (cell + 1) * cell_dur, i)
        in_cell = values[i:j]
        present = [value for value in in_cell if value is not None] if None in in_cell else in_cell
        if present:
            yield (track_id, cell, j - i, min(present), max(present), sum(present))
        else:
            yield (track_id, cell, j - i, None, None, None)
        i = j


def _figures(values: list) -> tuple:
    """(count, min, max, sum, drops, percentiles...) of values in time order: a NULL value is skipped by
    min/max/sum and ranked first, as SQL does."""
    present = [v for v in values if v is not None]
    drops = sum(1 for a, b in zip(values, values[1:]) if a is not None and b is not None and b < a)
    ordered = sorted(present)
    ordered[:0] = [None] * (len(values) - len(present))
    percentiles = [ordered[r] for r in _ranks(len(values))[1:]]
    if not present:
        return (len(values), None, None, None, drops, *percentiles)
    return (len(values), min(present), max(present), math.fsum(present), drops, *percentiles)


def slice_dimension(conn: sqlite3.Connection) -> None:
    """report_slice_dimension: one dimension value at a time, its tracks' slices read from the slice index
    that starts with track_id (durations grouped by name, each name's sorted here); self times summed from
    report_slice_track_name. Memory: one value's durations."""
    self_by_track: dict[int, list[tuple]] = {}
    for track_id, name, track_self in conn.execute("SELECT track_id, name, self_dur FROM report_slice_track_name"):
        self_by_track.setdefault(track_id, []).append((name, track_self))
    rows = []
    for (dimension,) in conn.execute(f"{SHOWN_DIMENSIONS_SQL} ORDER BY name").fetchall():
        tracks_of: dict[str | None, list[int]] = {}
        for track_id, value in conn.execute(
            "SELECT track_id, coalesce(CAST(int_value AS TEXT), string_value) FROM track_dimension WHERE name = ?",
            (dimension,),
        ):
            tracks_of.setdefault(value, []).append(track_id)
        for value in sorted(tracks_of, key=text_order_key):
            durations: dict[str | None, list[int]] = {}
            self_dur: dict[str | None, int] = {}
            for track_id in tracks_of[value]:
                for name, duration in conn.execute(
                    f"SELECT name, {SLICE_DUR} FROM slice WHERE track_id = :track", {"track": track_id}
                ):
                    kept = durations.get(name)
                    if kept is None:
                        kept = durations[name] = []
                    kept.append(duration)
                for name, track_self in self_by_track.get(track_id, ()):
                    self_dur[name] = self_dur.get(name, 0) + track_self
            for name in sorted(durations, key=text_order_key):
                ordered = sorted(durations[name])
                ranks = _ranks(len(ordered))
                rows.append(
                    (
                        dimension,
                        value,
                        name,
                        len(ordered),
                        sum(ordered),
                        self_dur.get(name, 0),
                        ordered[0],
                        ordered[-1],
                        *(ordered[r] for r in ranks[1:]),
                    )
                )
    _insert(conn, schema.REPORT_SLICE_DIMENSION, rows)


def slice_name_dur_ranks(conn: sqlite3.Connection) -> None:
    """report_slice_name_dur_rank: each frequent name's finished durations read in (name, dur) index order, a
    batch at a time, every REPORT_RANK_STEP-th kept with how many last at most as long (4x faster than the
    window functions' sort of them all). Memory: one batch (a gigabyte trace's most frequent name has millions)."""
    rows: list[tuple] = []
    names = conn.execute(
        "SELECT name FROM report_slice_name WHERE count - unfinished >= ? AND name IS NOT NULL ORDER BY name",
        (REPORT_CELL_MIN_COUNT,),
    ).fetchall()
    for (name,) in names:
        cursor = conn.execute("SELECT dur FROM slice WHERE name = ? AND dur >= 0 ORDER BY dur", (name,))
        read = 0  # durations in the batches before this one
        sample = 0  # the position of the next duration to keep
        last = None  # the last duration kept: equal ones at later positions are the same row (DISTINCT)
        open_run = False  # whether last's run of equal durations may go on into the next batch
        while batch := [d for (d,) in cursor.fetchmany(_RANK_BATCH)]:
            if open_run:
                end = bisect.bisect_right(batch, last)
                if end < len(batch):
                    rows.append((name, last, read + end))
                    open_run = False
            while sample < read + len(batch):
                dur = batch[sample - read]
                if dur != last:
                    end = bisect.bisect_right(batch, dur)
                    if end < len(batch):
                        rows.append((name, dur, read + end))
                    else:
                        open_run = True
                    last = dur
                sample += REPORT_RANK_STEP
            read += len(batch)
        if open_run:
            rows.append((name, last, read))
    _insert(conn, schema.REPORT_SLICE_NAME_DUR_RANK, rows)


def _keeps_name_cells(conn: sqlite3.Connection) -> bool:
    """Whether the trace has REPORT_NAME_CELL_MIN_SLICES slices or more (the definitions' count(*) of slice):
    summed from report_slice_name (streamed, so written by now) rather than counted again over every slice."""
    slices = conn.execute("SELECT coalesce(sum(count), 0) FROM report_slice_name").fetchone()[0]
    return slices >= REPORT_NAME_CELL_MIN_SLICES


def slice_name_dur_cells(conn: sqlite3.Connection) -> None:
    """report_slice_name_dur_cell: each very frequent name's finished instances read once, in (name, dur) index
    order (its bucket found again only where the duration passes the bucket's end), counted per cell and bucket."""
    if not _keeps_name_cells(conn):
        return
    grid = conn.execute("SELECT g.name_cell_dur, b.start_ts FROM report_grid g, trace_bounds b").fetchone()
    if grid is None:
        return
    cell_dur, t0 = grid
    names = conn.execute(
        "SELECT name FROM report_slice_name WHERE count - unfinished >= ? AND name IS NOT NULL ORDER BY name",
        (REPORT_DUR_CELL_MIN_COUNT,),
    ).fetchall()
    for (name,) in names:
        cells: dict[tuple[int, int], list[int]] = {}
        bucket, bucket_end = -1, 0
        for ts, dur in conn.execute("SELECT ts, dur FROM slice WHERE name = ? AND dur >= 0 ORDER BY dur", (name,)):
            if dur >= bucket_end:
                bucket = schema.dur_bucket(dur)
                bucket_end = schema.dur_bucket_low(bucket + 1)
            key = ((ts - t0) // cell_dur, bucket)
            figures = cells.get(key)
            if figures is None:
                cells[key] = [1, dur]
            else:
                figures[0] += 1
                figures[1] += dur
        _insert(
            conn,
            schema.REPORT_SLICE_NAME_DUR_CELL,
            [(name, cell, bucket, n, total) for (cell, bucket), (n, total) in sorted(cells.items())],
        )


# A slice name's entries per cell, while report_slice_name_cell is built: what starts or ends in the cell, and
# the changes of the per-cell counts that hold over a run of cells (difference arrays, so a slice spanning many
# cells costs as little as one in a single cell).
_STARTING, _UNFINISHED_STARTING, _TIME, _TOP_TIME, _CHILD_TIME = range(5)
_OPEN, _UNFINISHED_OPEN, _WHOLE, _TOP_WHOLE, _CHILD_WHOLE = range(5, 10)
# Rows per executemany while a cell table is written.
_CELL_ROWS_BATCH = 50_000


def slice_process_cells(conn: sqlite3.Connection) -> None:
    """report_slice_process_name_cell, and report_slice_name_cell (its rows summed over processes): _slice_cells
    per process and name."""
    process_of = dict(
        conn.execute(
            "SELECT track_id, coalesce(CAST(int_value AS TEXT), string_value) FROM track_dimension "
            "WHERE name = 'process'"
        )
    )
    _slice_cells(
        conn,
        "name_cell_dur",
        lambda g, t0: _Cells(
            conn,
            schema.REPORT_SLICE_PROCESS_NAME_CELL,
            g,
            t0,
            lambda k: (text_order_key(k[0]), text_order_key(k[1])),
            _itself,
            rollup=functools.partial(_name_cells, conn, {}),
        ),
        lambda track_id, name: (process_of.get(track_id), name),
    )


def slice_track_cells(conn: sqlite3.Connection) -> None:
    """report_slice_track_name_cell: _slice_cells per track and name."""
    _slice_cells(
        conn,
        "track_name_cell_dur",
        lambda g, t0: _Cells(
            conn,
            schema.REPORT_SLICE_TRACK_NAME_CELL,
            g,
            t0,
            lambda k: (k[0], text_order_key(k[1])),
            _itself,
        ),
        lambda track_id, name: (track_id, name),
    )


def _slice_cells(
    conn: sqlite3.Connection,
    width: str,
    make_cells: Callable[[int, int], _Cells],
    key: Callable[[int, str | None], tuple],
) -> None:
    """A cell table of slices keyed by `key(track_id, name)`, in traces with at least
    REPORT_NAME_CELL_MIN_SLICES slices: one pass over the slices in time order (each with its parent's name),
    noting per key what each slice adds in its first and last cell and over the cells between (open there,
    covering every whole one); a cell's rows are written as soon as no slice can start in it any more, so memory
    holds the cells still open, not the trace. `make_cells(cell width, trace start)` gives the table's _Cells,
    its cells report_grid's `width` wide."""
    if not _keeps_name_cells(conn):
        return
    grid = conn.execute(
        f"SELECT {width}, (SELECT start_ts FROM trace_bounds), (SELECT end_ts FROM trace_bounds) FROM report_grid"
    ).fetchone()
    if grid is None:
        return
    g, t0, t1 = grid
    cells = make_cells(g, t0)
    add = cells.add
    # A slice's parent is on its track (slices nest per track), so under the same key's track and process.
    for ts, dur, name, parent_name, top, track_id in conn.execute(
        "SELECT s.ts, s.dur, s.name, p.name, s.parent_id IS NULL, s.track_id FROM slice s "
        "LEFT JOIN slice p ON p.id = s.parent_id ORDER BY s.ts"
    ):
        unfinished = dur < 0
        end = t1 if unfinished else ts + dur
        add(ts, end, unfinished, top, key(track_id, name), None if top else key(track_id, parent_name))
    cells.write_until(None)


def _name_cells(conn: sqlite3.Connection, totals: dict[str | None, list[int]], rows: list[tuple]) -> None:
    """report_slice_name_cell's rows for whole cells of report_slice_process_name_cell rows: summed over processes
    (in Python: a sum beyond int64 is kept at its limit, where SQL's sum() would fail), in (cell, name) order,
    with each name's running totals (`totals`, carried from one batch of cells to the next)."""
    sums: dict[tuple, list[int]] = {}
    for row in rows:
        key = (row[2], row[1])  # (cell, name)
        acc = sums.get(key)
        if acc is None:
            sums[key] = list(row[3:10])
        else:
            for i, v in enumerate(row[3:10]):
                acc[i] += v
    order = sorted(sums, key=lambda k: (k[0], text_order_key(k[1])))
    out = []
    for cell, name in order:
        figures = sums[cell, name]
        running = totals.setdefault(name, [0, 0, 0, 0])
        for i, column in enumerate(_TOTALLED):
            running[i] += figures[column]
        out.append((name, cell, *figures, *running))
    _insert(conn, schema.REPORT_SLICE_NAME_CELL, out)


# The positions, among a slice cell's figures (starting, open, unfinished_starting, ...), of those with running
# totals (schema.SLICE_CELL_TOTALS).
_TOTALLED = [[c.name for c in schema.REPORT_SLICE_NAME_CELL.columns[2:]].index(t) for t in schema.SLICE_CELL_TOTALS]


def _itself(key: tuple) -> tuple:
    return key


class _Cells:
    """A cell table's pending entries (cell -> key -> the ten counts) and per key running counts (open,
    unfinished open, whole, top-level whole, children's whole), written cell by cell in (cell, key) order. A key
    is a name, or (track id, name)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        table: schema.Table,
        g: int,
        t0: int,
        order: Callable[[Any], tuple],
        columns: Callable[[Any], tuple],
        rollup: Callable[[list[tuple]], None] | None = None,
    ) -> None:
        self.conn = conn
        self.table = table
        self.g = g
        self.t0 = t0
        self.order = order  # of keys, as SQLite orders the key columns
        self.columns = columns  # a key's column values, as a tuple
        self.entries: dict[int, dict[Any, list[int]]] = {}
        self.running: dict[Any, list[int]] = {}  # keys with a slice open over the cells being written
        self.done = -1  # cells up to this one are written
        self.rows: list[tuple] = []
        # Each row also carries its key's schema.SLICE_CELL_TOTALS summed so far.
        self.totals: dict[Any, list[int]] = {}
        self.rollup = rollup  # given each batch of rows written (whole cells), to write a coarser table's

    def add(self, ts: int, end: int, unfinished: bool, top: bool, key, parent_key) -> None:
        """One slice, in time order: [ts, end), of `key`, its parent's key `parent_key` (unless `top`)."""
        g = self.g
        first = (ts - self.t0) // g
        if first > self.done + 1:
            self.write_until(first - 1)
        first_end = self.t0 + (first + 1) * g
        entries = self.entries
        in_first = entries.get(first)
        if in_first is None:
            in_first = entries[first] = {}
        at_first = in_first.get(key)
        if at_first is None:
            at_first = in_first[key] = [0] * 10
        at_first[_STARTING] += 1
        if unfinished:
            at_first[_UNFINISHED_STARTING] += 1
        if end < first_end:  # within one cell: the usual case, inline
            time = end - ts if end > ts else 0
            at_first[_TIME] += time
            if top:
                at_first[_TOP_TIME] += time
            else:
                parent_first = in_first.get(parent_key)
                if parent_first is None:
                    parent_first = in_first[parent_key] = [0] * 10
                parent_first[_CHILD_TIME] += time
            return
        # Open in cells first + 1 .. last (the cell holding its end, even at its very start), covering the
        # whole of those between.
        last = (end - self.t0) // g
        head, tail = first_end - ts, end - (self.t0 + last * g)
        entry = self.entry
        at_last = entry(last, key)
        at_first[_TIME] += head
        at_last[_TIME] += tail
        after_first, after_last = entry(first + 1, key), entry(last + 1, key)
        after_first[_OPEN] += 1
        after_last[_OPEN] -= 1
        if unfinished:
            after_first[_UNFINISHED_OPEN] += 1
            after_last[_UNFINISHED_OPEN] -= 1
        after_first[_WHOLE] += 1
        at_last[_WHOLE] -= 1
        if top:
            at_first[_TOP_TIME] += head
            at_last[_TOP_TIME] += tail
            after_first[_TOP_WHOLE] += 1
            at_last[_TOP_WHOLE] -= 1
        else:
            entry(first, parent_key)[_CHILD_TIME] += head
            entry(last, parent_key)[_CHILD_TIME] += tail
            entry(first + 1, parent_key)[_CHILD_WHOLE] += 1
            entry(last, parent_key)[_CHILD_WHOLE] -= 1

    def entry(self, cell: int, key) -> list[int]:
        in_cell = self.entries.get(cell)
        if in_cell is None:
            in_cell = self.entries[cell] = {}
        kept = in_cell.get(key)
        if kept is None:
            kept = in_cell[key] = [0] * 10
        return kept

    def write_until(self, last: int | None) -> None:
        """Writes the rows of every cell up to `last` (None: all that remain)."""
        entries, running, rows = self.entries, self.running, self.rows
        pending = sorted(cell for cell in entries if last is None or cell <= last)
        cell = self.done + 1
        for next_cell in pending:
            self._between(cell, next_cell)
            here = entries.pop(next_cell)
            for key in self._sorted(here.keys() | running.keys() if running else here.keys()):
                kept = here.get(key, _NO_ENTRY)
                state = running.get(key)
                if kept[_OPEN] or kept[_UNFINISHED_OPEN] or kept[_WHOLE] or kept[_TOP_WHOLE] or kept[_CHILD_WHOLE]:
                    if state is None:
                        state = running[key] = [0, 0, 0, 0, 0]
                    state[0] += kept[_OPEN]
                    state[1] += kept[_UNFINISHED_OPEN]
                    state[2] += kept[_WHOLE]
                    state[3] += kept[_TOP_WHOLE]
                    state[4] += kept[_CHILD_WHOLE]
                if state is None:  # nothing of the key's open over the cell: the usual case
                    if kept[_STARTING]:
                        rows.append(self._row(key, next_cell, kept, _NOTHING_OPEN))
                    continue
                if kept[_STARTING] or state[0]:
                    rows.append(self._row(key, next_cell, kept, state))
                if not any(state):
                    del running[key]
            cell = next_cell + 1
            if len(rows) >= _CELL_ROWS_BATCH:
                self._flush()
        if last is not None:
            self._between(cell, last + 1)
            self.done = max(self.done, last)
        self._flush()

    def _between(self, first: int, end: int) -> None:
        """The rows of cells first .. end - 1, which have no entries: the open slices cover them whole."""
        for between in range(first, end) if self.running else ():
            for key in self._sorted(self.running):
                state = self.running[key]
                if state[0]:
                    self.rows.append(self._row(key, between, _NO_ENTRY, state))

    def _row(self, key, cell: int, kept: list[int], state: list[int]) -> tuple:
        """The row of `key` in `cell`: its entry there (`kept`) and what it has open over the cell (`state`:
        open, unfinished open, whole, top-level whole, children's whole)."""
        g = self.g
        open_, unfinished_open, whole, top_whole, child_whole = state
        covered = kept[_TIME] + whole * g
        self_covered = covered - kept[_CHILD_TIME] - child_whole * g
        row = self.columns(key) + (
            cell,
            kept[_STARTING],
            open_,
            kept[_UNFINISHED_STARTING],
            unfinished_open,
            covered,
            self_covered,
            kept[_TOP_TIME] + top_whole * g,
        )
        totals = self.totals.get(key)
        if totals is None:
            totals = self.totals[key] = [0, 0, 0, 0]
        totals[0] += kept[_STARTING]
        totals[1] += kept[_UNFINISHED_STARTING]
        totals[2] += covered
        totals[3] += self_covered
        return row + tuple(totals)

    def _sorted(self, keys: Iterable) -> list:
        """Keys in SQLite's order: Python's own for text, unless a name is NULL (None)."""
        try:
            return sorted(keys)
        except TypeError:
            return sorted(keys, key=self.order)

    def _flush(self) -> None:
        if self.rows:  # whole cells: write_until flushes between cells
            _insert(self.conn, self.table, self.rows)
            if self.rollup is not None:
                self.rollup(self.rows)
            self.rows.clear()


_NO_ENTRY = [0] * 10
_NOTHING_OPEN = [0] * 5


def _insert(conn: sqlite3.Connection, table: schema.Table, rows: list) -> None:
    """Inserts rows of `table` (its stored columns, in order); sums beyond int64 (only absurd durations reach
    them) are kept at its limits, where the SQL definitions' sum() would fail the import (as aggregates.py
    keeps its sums)."""
    before = conn.execute(f"SELECT coalesce(max(rowid), 0) FROM [{table.name}]").fetchone()[0]
    try:
        _insert_grouped(conn, table, rows)
    except OverflowError:
        # The rows before the one that overflowed are in (the writer journals nothing to roll back): out again.
        conn.execute(f"DELETE FROM [{table.name}] WHERE rowid > ?", (before,))
        _insert_grouped(conn, table, [tuple(clamp_int64(v) if type(v) is int else v for v in row) for row in rows])


def _insert_grouped(conn: sqlite3.Connection, table: schema.Table, rows: list) -> None:
    groups, rest = schema.grouped_rows(rows)
    if groups:
        conn.executemany(table.insert_sql(schema.MULTI_ROWS), groups)
    if rest:
        conn.executemany(table.insert_sql(), rest)


def track_event_cells(conn: sqlite3.Connection) -> None:
    """report_track_event_cell: its definition, the trace's size tested here (so a test can lower
    REPORT_TRACK_CELL_MIN_EVENTS)."""
    if conn.execute(f"SELECT {TRACK_EVENTS_SQL}").fetchone()[0] >= REPORT_TRACK_CELL_MIN_EVENTS:
        conn.execute(TRACK_EVENT_CELLS_SQL.format(large="SELECT 1"))


COMPUTE: dict[str, Callable[[sqlite3.Connection], None]] = {
    "report_slice_name_percentile": slice_name_percentiles,
    "report_track_stats": track_stats,
    "report_counter_integral": counter_integrals,
    "report_slice_dimension": slice_dimension,
    "report_slice_name_dur_rank": slice_name_dur_ranks,
    "report_slice_name_dur_cell": slice_name_dur_cells,
    "report_slice_track_name_cell": slice_track_cells,
    "report_slice_process_name_cell": slice_process_cells,
    "report_track_event_cell": track_event_cells,
}
# Derived tables filled by another one's computation, in the same pass: table -> the one whose COMPUTE fills it.
FILLED_WITH: dict[str, str] = {
    "report_slice_name_cell": "report_slice_process_name_cell",
    "report_counter_cell": "report_counter_integral",
}
