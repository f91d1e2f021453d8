"""Faster ways to fill some of schema.DERIVED's report tables than their SQL definitions.

The definitions rank every row with window functions (a sort of the whole slice or counter
table); these read the indexes the import builds anyway and the aggregates streamed while rows
were written (aggregates.py), and sort one group at a time. Each gives the rows its
`populate` SQL gives, in the same order (tests/test_report_tables.py compares them; REAL sums may
differ in the last bits, as summing in another order does).

COMPUTE maps a derived table's name to its function `(conn) -> None`, which writes its rows;
writer.build_derived runs it instead of the SQL.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterable, Iterator

from .aggregates import text_order_key
from .schema import REPORT_NAME_CELL_MIN_SLICES, REPORT_PERCENTILES, SHOWN_DIMENSIONS_SQL

# A slice's duration as the report counts it (schema._SLICE_DUR): unfinished ones last to the trace's end.
_SLICE_DUR = "CASE WHEN dur < 0 THEN max(:end - ts, 0) ELSE dur END"
# Groups at most this large are read whole; larger ones pick their ranks with OFFSET in the index.
_READ_WHOLE = 64


def nearest_rank(n: int, p: float) -> int:
    """report.base.percentile_index (its SQL twin is schema._nearest_rank)."""
    return min(n - 1, max(0, int(round(p / 100 * (n - 1)))))


def _ranks(n: int) -> list[int]:
    """The sorted positions a group of n values keeps: the smallest, then each percentile's."""
    return [0, *(nearest_rank(n, p) for p in REPORT_PERCENTILES)]


def _trace_end(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT end_ts FROM trace_bounds").fetchone()
    return row[0] if row else 0


def slice_name_percentiles(conn: sqlite3.Connection) -> None:
    """report_slice_name_percentile: per name (report_slice_name gives each one's count), the durations at
    the kept ranks, read from the (name, dur) index; names with unfinished slices are sorted here."""
    end = _trace_end(conn)
    rows = []
    names = conn.execute("SELECT name, count, unfinished FROM report_slice_name ORDER BY name").fetchall()
    for name, count, unfinished in names:
        ranks = _ranks(count)
        if unfinished or count <= _READ_WHOLE:
            # An unfinished slice's duration (dur -1 in the index) depends on its start: sort here.
            durations = sorted(
                d
                for (d,) in conn.execute(
                    f"SELECT {_SLICE_DUR} FROM slice WHERE name IS :name", {"name": name, "end": end}
                )
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
    columns = ", ".join(f"p{p}_dur" for p in REPORT_PERCENTILES)
    marks = ", ".join("?" for _ in range(len(REPORT_PERCENTILES) + 2))
    conn.executemany(f"INSERT INTO report_slice_name_percentile (name, min_dur, {columns}) VALUES ({marks})", rows)


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
    for track_id, figures in _counter_figures(
        conn.execute("SELECT track_id, value FROM counter ORDER BY track_id, ts, id")
    ):
        kept = by_track.get(track_id)
        if kept is None:
            by_track[track_id] = list(figures)
        else:  # a track with counter values and slices or states as well: counts add up, the figures are its values'
            kept[0] += figures[0]
            kept[1:] = figures[1:]
    columns = ", ".join(f"p{p}_value" for p in REPORT_PERCENTILES)
    marks = ", ".join("?" for _ in range(6 + len(REPORT_PERCENTILES)))
    conn.executemany(
        "INSERT INTO report_track_stats (track_id, event_count, min_value, max_value, sum_value, drops, "
        f"{columns}) VALUES ({marks})",
        [(track_id, *figures) for track_id, figures in sorted(by_track.items())],
    )


def _add_count(by_track: dict[int, list], track_id: int, count: int, nothing: tuple) -> None:
    kept = by_track.get(track_id)
    if kept is None:
        by_track[track_id] = [count, *nothing]
    else:
        kept[0] += count


def _counter_figures(rows: Iterable[tuple]) -> Iterator[tuple[int, tuple]]:
    """Per track of (track_id, value) rows grouped by track in time order: (count, min, max, sum, drops,
    percentiles...); a NULL value is skipped by min/max/sum and ranked first, as SQL does."""
    current: int = -1
    values: list = []
    for track_id, value in rows:
        if track_id != current:
            if values:
                yield current, _figures(values)
            current, values = track_id, []
        values.append(value)
    if values:
        yield current, _figures(values)


def _figures(values: list) -> tuple:
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
    end = _trace_end(conn)
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
                    f"SELECT name, {_SLICE_DUR} FROM slice WHERE track_id = :track", {"track": track_id, "end": end}
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
                        self_dur[name],
                        ordered[0],
                        ordered[-1],
                        *(ordered[r] for r in ranks[1:]),
                    )
                )
    columns = ", ".join(f"p{p}_dur" for p in REPORT_PERCENTILES)
    marks = ", ".join("?" for _ in range(8 + len(REPORT_PERCENTILES)))
    conn.executemany(
        "INSERT INTO report_slice_dimension (dimension, value, name, count, total_dur, self_dur, min_dur, max_dur, "
        f"{columns}) VALUES ({marks})",
        rows,
    )


def slice_name_cells(conn: sqlite3.Connection) -> None:
    """report_slice_name_cell, in traces with at least REPORT_NAME_CELL_MIN_SLICES slices: one pass over the
    slices (each with its parent's name), most of which lie in one cell."""
    if conn.execute("SELECT count(*) >= ? FROM slice", (REPORT_NAME_CELL_MIN_SLICES,)).fetchone()[0] == 0:
        return
    grid = conn.execute(
        "SELECT name_cell_dur, (SELECT start_ts FROM trace_bounds), (SELECT end_ts FROM trace_bounds) FROM report_grid"
    ).fetchone()
    if grid is None:
        return
    g, t0, t1 = grid
    # (name, cell) -> [starting, open, unfinished starting, unfinished open, covered, top-level covered]
    own: dict[tuple, list[int]] = {}
    children: dict[tuple, int] = {}  # (parent's name, cell) -> the children's time inside the cell
    for ts, dur, name, parent_name, top in conn.execute(
        "SELECT s.ts, s.dur, s.name, p.name, s.parent_id IS NULL FROM slice s LEFT JOIN slice p ON p.id = s.parent_id"
    ):
        unfinished = dur < 0
        end = t1 if unfinished else ts + dur
        cell = (ts - t0) // g
        cell_end = t0 + (cell + 1) * g
        start = ts
        first = True
        while True:
            time = max(min(end, cell_end) - start, 0)
            key = (name, cell)
            kept = own.get(key)
            if kept is None:
                kept = own[key] = [0, 0, 0, 0, 0, 0]
            kept[0 if first else 1] += 1
            if unfinished:
                kept[2 if first else 3] += 1
            kept[4] += time
            if top:
                kept[5] += time
            else:
                key = (parent_name, cell)
                children[key] = children.get(key, 0) + time
            if cell_end > end:  # reaches the next cell only when it ends there or later
                break
            cell, start, cell_end, first = cell + 1, cell_end, cell_end + g, False
    rows = [
        (name, cell, *kept[:5], kept[4] - children.get((name, cell), 0), kept[5])
        for (name, cell), kept in sorted(own.items(), key=lambda kv: (text_order_key(kv[0][0]), kv[0][1]))
    ]
    conn.executemany(
        "INSERT INTO report_slice_name_cell (name, cell, starting, open, unfinished_starting, unfinished_open, "
        "covered, self_covered, top_covered) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


COMPUTE: dict[str, Callable[[sqlite3.Connection], None]] = {
    "report_slice_name_percentile": slice_name_percentiles,
    "report_track_stats": track_stats,
    "report_slice_dimension": slice_dimension,
    "report_slice_name_cell": slice_name_cells,
}
