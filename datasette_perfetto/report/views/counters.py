"""The `counters` noun: counter tracks, and one counter's values over time.

A counter is a track: a name plus what it belongs to (a process, a thread, a CPU,
a GPU, or nothing). Names repeat across owners (`cpufreq` on every CPU,
`mem.rss` in every process), so the single-series views (timeline, histogram,
inspect) resolve `name` (a glob) to exactly one distinct counter name, and the
scope flags then choose which tracks of that name form the series: pid/process
take the process's counters and its threads', tid/thread a thread's, cpu a CPU's.
The tracks that remain are pooled and listed with their own stats.
"""

from __future__ import annotations

import bisect
import math
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from google.protobuf.internal.containers import RepeatedCompositeFieldContainer

from ...schema import REPORT_PERCENTILES as PERCENTILES
from .. import format as fmt
from .. import report_pb2 as pb
from ..base import Bar, Cell, Chart, ReportRun, Table, View, count_cell, percentile_index
from ..diff_spec import DiffSpec, Measure, diff_link, optional_field, owner_key
from ..filters import CANNED_RANGE, CANNED_TOP, Where, canned_sort
from ..grouping import Grouping, dim_params, grouping, track_values
from ..links import glob_escape, owner_params, scoped_link, view_link
from ..scope import MAX_TOP, ReportError, shown
from ..subtitles import dominant_names, track_subtitles, with_subtitle
from .tracks import CANNED_NAME, CANNED_OWNER, GPU_SQL, OWNER_COLUMNS, TRACK_FROM, owner_label, owner_where

SERIES_FLAGS = frozenset({"pid", "process", "tid", "thread", "cpu", "track", "time", "name", "dim"})
SCOPE_NOTE = (
    "name must match one counter name; pid/process (a process's counters and its threads'), "
    "tid/thread and cpu choose which tracks of that name form the series."
)

TRACK_COLUMNS = f"""tr.id AS track_id, tr.name, tr.type, tr.counter_unit AS unit,
         {OWNER_COLUMNS}, {GPU_SQL} AS gpu"""

# The default ranking: gauges that change, by their variation; then cumulative counters, by their rate; then
# counters that never change.
LIST_SORTS = {
    "variation": "CASE WHEN monotonic THEN 1 WHEN variation > 0 THEN 0 ELSE 2 END, "
    "CASE WHEN monotonic THEN -coalesce(rate, 0) ELSE -variation END, count DESC, name, track_id",
    "rate": "coalesce(rate, 0) DESC, count DESC, name, track_id",
    "count": "count DESC, name, track_id",
    "name": "name, track_id",
    "max": "max DESC, name, track_id",
    "avg": "avg DESC, name, track_id",
}

# A counter is cumulative (monotonic) when at most this share of its samples over the whole trace are lower
# than the one before: real thread time steps back now and then (samples at one timestamp out of order, a
# first value from another clock).
MONOTONIC_DROPS = 0.01
# The SQL of both (the report's and the canned query's), over a row with count/min/max and the whole
# trace's report_track_stats row as m.
MONOTONIC_SQL = (
    f"coalesce(m.event_count >= 3 AND m.max_value > m.min_value AND m.drops <= {MONOTONIC_DROPS} * m.event_count, 0)"
)


def rate_sql(range_dur: str) -> str:
    """A cumulative counter's rise over the report's range, per second of the range."""
    return f"CASE WHEN r.monotonic THEN (r.max - r.min) * 1e9 / nullif({range_dur}, 0) END"


VARIATION_SQL = "coalesce((r.max - r.min) / nullif(max(abs(r.max), abs(r.min)), 0), 0)"

# Value ranges wider than this ratio get log-spaced histogram buckets.
LOG_SCALE_RATIO = 100
SAMPLES_AROUND = 5
# Inspect ranks at most this many pooled samples for its percentiles (a sort of every one).
PERCENTILE_MAX = 50_000
MAX_NAMES_LISTED = 50


# -- scope --------------------------------------------------------------------------------------


def counter_where(run: ReportRun, with_name: bool = True) -> Where:
    """Counter tracks in the run's scope (aliases as in TRACK_FROM)."""
    w = Where()
    w.add("tr.event_type = 'counter'")
    w.extend(owner_where(run))
    if with_name and run.scope.name is not None:
        w.add("tr.name GLOB :name", name=run.scope.name)
    return w


def series_where(run: ReportRun, counter_name: str) -> Where:
    w = counter_where(run, with_name=False)
    w.add("tr.name = :counter_name", counter_name=counter_name)
    return w


def sample_range(run: ReportRun, alias: str = "c") -> tuple[str, dict]:
    """The samples a report covers: those in [start, end) of time, else every sample."""
    if run.scope.time is None:
        return "", {}
    start, end = run.time_range()
    return (f" AND {alias}.ts >= :range_start AND {alias}.ts < :range_end", {"range_start": start, "range_end": end})


def integral_at_sql(track_id: str, t: str) -> str:
    """The integral of the track's values from its first sample up to time t (at or after it): from the last
    sample at or before t, its report_counter_integral plus its value held until t."""
    return f"""(SELECT i.integral + coalesce(c.value, 0) * ({t} - c.ts)
           FROM counter c JOIN report_counter_integral i ON i.id = c.id
           WHERE c.track_id = {track_id} AND c.ts <= {t} ORDER BY c.ts DESC, c.id DESC LIMIT 1)"""


@dataclass(frozen=True)
class CellBounds:
    """Where a time range's whole report_counter_cell cells lie, as SQL expressions: cells [first, end) cover
    [start_ts, end_ts), and the samples in the range's parts before and after them are read (without cells:
    start_ts = end_ts = the range's end, the samples of the whole range)."""

    first: str
    end: str
    start_ts: str
    end_ts: str


# The report's: bound parameters (cell_params).
CELL_PARAMS = CellBounds(":first_cell", ":end_cell", ":cells_start", ":cells_end")


def cell_params(run: ReportRun, start: int, end: int) -> dict[str, int]:
    """CELL_PARAMS' values for [start, end): the cells wholly inside it, where the trace kept cells."""
    row = run.query(
        "counter cells: their width, where kept",
        "SELECT (SELECT cell_dur FROM report_grid) AS cell_dur, EXISTS (SELECT 1 FROM report_counter_cell) AS kept",
    )[0]
    cell_dur = row["cell_dur"]
    if not row["kept"] or not cell_dur:
        return {"first_cell": 0, "end_cell": 0, "cells_start": end, "cells_end": end}
    t0 = run.trace.start
    first = max(0, -((t0 - start) // cell_dur))  # the first cell starting at or after start
    last = max(first, (end - t0) // cell_dur)  # the first cell not ending by end
    return {
        "first_cell": first,
        "end_cell": last,
        "cells_start": min(t0 + first * cell_dur, end),
        "cells_end": min(t0 + last * cell_dur, end),
    }


def weights_sql(
    track_ids: str, start: str, end: str, trace_end: str, cells: CellBounds = CELL_PARAMS, also: str = ""
) -> str:
    """Per track of track_ids: count, min, max and total of its samples in [start, end); and what its
    time-weighted average over the range reads (weighted_avg_sql): the integral of its values over the range
    (weighted) and how long a value held in it (held). Each value holds until the track's next sample (in
    (ts, id) order), the last one until the trace end; the value in force at the range's start counts from
    there."""
    # The samples are the range's whole cells (large traces) and one index range per track before and after
    # them; the integral is two lookups per track (the integral at the range's end less the one at its start),
    # whatever the number of samples in between.
    at_hi, at_lo = integral_at_sql("w.track_id", "w.hi"), integral_at_sql("w.track_id", "w.lo")

    def samples(after: str, before: str) -> str:
        return f"""SELECT c.track_id, count(*) AS count, min(c.value) AS min, max(c.value) AS max,
                 sum(c.value) AS total
          FROM counter c
          WHERE c.track_id IN ({track_ids}) AND c.ts >= {after} AND c.ts < {before}{also}
          GROUP BY c.track_id"""

    return f"""SELECT w.track_id, w.count, w.min, w.max, w.total,
         CASE WHEN w.hi > w.lo THEN {at_hi}
                                  - {at_lo} ELSE 0 END AS weighted,
         max(w.hi - w.lo, 0) AS held
  FROM (SELECT b.id AS track_id, coalesce(sum(a.count), 0) AS count, min(a.min) AS min, max(a.max) AS max,
               sum(a.total) AS total,
               max({start}, (SELECT min(f.ts) FROM counter f WHERE f.track_id = b.id)) AS lo,
               min({end}, {trace_end}) AS hi
        FROM track b LEFT JOIN (
          {samples(start, cells.start_ts)}
          UNION ALL
          SELECT k.track_id, sum(k.count), min(k.min), max(k.max), sum(k.total)
          FROM report_counter_cell k
          WHERE k.track_id IN ({track_ids}) AND k.cell >= {cells.first} AND k.cell < {cells.end}{also}
          GROUP BY k.track_id
          UNION ALL
          {samples(cells.end_ts, end)}
        ) a ON a.track_id = b.id
        WHERE b.id IN ({track_ids}){also}
        GROUP BY b.id) w"""


def require_range_tables(run: ReportRun) -> None:
    """A time range's figures read report_counter_integral and report_counter_cell: a database ingested before
    they existed is told apart from a failing query."""
    for table in ("report_counter_integral", "report_counter_cell"):
        if not run.has_tables(table):
            raise ReportError(
                f"time: this database has no {table} table (it was ingested by an older datasette-perfetto); "
                "ingest the trace again for counter figures over a time range",
                "time",
            )


def weighted_avg_sql(pooled: bool = False) -> str:
    """The time-weighted average of weights_sql's rows (alias w): one track's, or pooled over the rows; the
    samples' plain average when no value held for any time (a range of no length)."""
    if pooled:
        return "coalesce(sum(w.weighted) / nullif(sum(w.held), 0), sum(w.total) / sum(w.count))"
    return "coalesce(w.weighted / nullif(w.held, 0), w.total / w.count)"


def weighted_note(run: ReportRun) -> None:
    """The footnote of views whose averages are time-weighted (under time)."""
    if run.scope.time is not None:
        run.footnote(
            "Averages are time-weighted over the time range: each sample's value holds until the track's next "
            "sample (the last one until the trace end), and the value in force at the range's start counts "
            "from there; the whole trace's are plain averages of the samples",
            # Every flag of the view but time: a single-series view needs its name.
            view_link(run, run.noun, run.view, time=None),
        )


def _counter_names(run: ReportRun, purpose: str, w: Where, limit: int) -> list[str]:
    return [
        r[0]
        for r in run.query(
            purpose,
            f"""SELECT DISTINCT tr.name
{TRACK_FROM}
{w.sql()}
ORDER BY tr.name
LIMIT {limit}""",
            w.params,
        )
    ]


def resolve_name(run: ReportRun) -> str:
    """The one counter name `name` matches in scope; a ReportError listing the choices otherwise."""
    names = _counter_names(run, "counter names matching name", counter_where(run), MAX_NAMES_LISTED + 1)
    glob = run.scope.name
    if len(names) == 1:
        return names[0]
    if not names:
        in_scope = _counter_names(run, "counter names in scope", counter_where(run, with_name=False), MAX_NAMES_LISTED)
        options = [name for name in in_scope if name is not None]
        scoped = any(getattr(run.scope, f) is not None for f in ("pid", "process", "tid", "thread", "cpu", "track"))
        where = " in this scope" if scoped else ""
        raise ReportError(
            f"name: no counter matches {shown(glob or '')}{where}; counters: {', '.join(options) or '(none)'}",
            "name",
            options,
        )
    more = " (and more)" if len(names) > MAX_NAMES_LISTED else ""
    names = names[:MAX_NAMES_LISTED]
    raise ReportError(
        f"name: {shown(glob or '')} matches {len(names)}{more} counter names; {run.noun} {run.view} shows one. "
        f"Choose one of: {', '.join(names)}",
        "name",
        names,
    )


# -- per track stats ------------------------------------------------------------------------------


def track_stats(
    run: ReportRun,
    w: Where,
    purpose: str,
    order: str,
    limit: int,
    min_count: int | None = None,
    keep_empty: bool = False,
) -> tuple[list[sqlite3.Row], int]:
    """Counter tracks under `w` with sample count/min/avg/max over the range, whether each is cumulative
    (monotonic over the whole trace) and then its rate per second over the range, its variation, and the
    total row count.

    keep_empty keeps tracks with no samples in the range (count 0), as a series' track list does.
    """
    params = dict(w.params)
    if run.scope.time is None:
        # Whole trace: the per track figures precomputed at import.
        stats = """SELECT st.track_id, st.event_count AS count, st.min_value AS min,
         st.sum_value / st.event_count AS avg, st.max_value AS max
  FROM report_track_stats st
  WHERE st.track_id IN (SELECT track_id FROM tracks)"""
    else:
        require_range_tables(run)
        weighted_note(run)
        # Time-weighted averages; count, min and max of the samples in the range.
        start, end = run.time_range()
        params.update(range_start=start, range_end=end, trace_end=run.trace.end, **cell_params(run, start, end))
        weights = weights_sql("SELECT track_id FROM tracks", ":range_start", ":range_end", ":trace_end")
        stats = f"""SELECT w.track_id, w.count, w.min, {weighted_avg_sql()} AS avg, w.max
  FROM ({weights}) w
  WHERE w.count > 0"""
    having = ""
    if min_count is not None:
        having = "WHERE r.count >= :min_count"
        params["min_count"] = min_count
    rows = run.query(
        purpose,
        f"""WITH tracks AS (
  SELECT {TRACK_COLUMNS}
  {TRACK_FROM.replace(chr(10), chr(10) + "  ")}
  {w.sql().replace(chr(10), chr(10) + "  ")}
),
stats AS (
  {stats}
),
counted AS (
  SELECT t.*, coalesce(s.count, 0) AS count, s.min, s.avg, s.max, {MONOTONIC_SQL} AS monotonic
  FROM tracks t {"LEFT JOIN" if keep_empty else "JOIN"} stats s ON s.track_id = t.track_id
  LEFT JOIN report_track_stats m ON m.track_id = t.track_id
)
SELECT r.*, {rate_sql(":range_dur")} AS rate, {VARIATION_SQL} AS variation, count(*) OVER () AS total_rows
FROM counted r {having}
ORDER BY {order}
LIMIT :top""",
        # A float: a range over the whole int64 span does not fit an SQLite integer.
        {**params, "range_dur": float(run.range_dur()), "top": limit},
    )
    return rows, (rows[0]["total_rows"] if rows else 0)


def fill_track_row(out: pb.CountersList.Row, r: sqlite3.Row) -> None:
    out.track_id = r["track_id"]
    out.name = r["name"] or ""
    out.track_type = r["type"] or ""
    out.unit = r["unit"] or ""
    out.scope = owner_label(r["thread"], r["tid"], r["process"], r["pid"], r["cpu"], r["gpu"])
    out.count = r["count"] or 0
    out.min = r["min"] if r["min"] is not None else 0.0
    out.avg = r["avg"] if r["avg"] is not None else 0.0
    out.max = r["max"] if r["max"] is not None else 0.0
    out.process = r["process"] or ""
    out.pid = r["pid"] or 0
    out.thread = r["thread"] or ""
    out.tid = r["tid"] or 0
    if r["cpu"] is not None:
        out.cpu = r["cpu"]
    if r["gpu"] is not None:
        out.gpu = r["gpu"]
    out.monotonic = bool(r["monotonic"])
    out.rate = r["rate"] or 0.0
    out.variation = r["variation"] or 0.0


def row_owner(row: pb.CountersList.Row) -> dict[str, str | None]:
    """Flags narrowing a series to this track's owner."""
    tid = row.tid if row.thread or row.tid else None
    pid = row.pid if row.process or row.pid else None
    return owner_params(tid, None if tid is not None else pid, row.cpu if row.HasField("cpu") else None)


def subtitle_tracks(run: ReportRun, rows: Iterable[pb.CountersList.Row]) -> None:
    """Sets each row's subtitle: its track's (RFC 0039 labels)."""
    listed = list(rows)
    subtitles = track_subtitles(run, [r.track_id for r in listed])
    for r in listed:
        r.subtitle = subtitles.get(r.track_id, "")


def series_tracks(
    run: ReportRun, counter_name: str, out_tracks: RepeatedCompositeFieldContainer[pb.CountersList.Row]
) -> dict[int, tuple[str, str]]:
    """Fills the series' tracks (top by sample count); returns every track's scope label and subtitle by id."""
    rows, total = track_stats(
        run, series_where(run, counter_name), f"tracks of {counter_name}", LIST_SORTS["count"], MAX_TOP, keep_empty=True
    )
    for r in rows[: run.scope.top]:
        fill_track_row(out_tracks.add(), r)
    subtitle_tracks(run, out_tracks)
    run.truncation(min(len(rows), run.scope.top), total, f"{counter_name} tracks")
    subtitles = track_subtitles(run, [r["track_id"] for r in rows])
    return {
        r["track_id"]: (
            owner_label(r["thread"], r["tid"], r["process"], r["pid"], r["cpu"], r["gpu"]),
            subtitles.get(r["track_id"], ""),
        )
        for r in rows
    }


def unit_of(tracks: Iterable[pb.CountersList.Row]) -> str:
    """The series' unit for labels ('count' says nothing, so it is left out)."""
    return next((t.unit for t in tracks if t.unit and t.unit != "count"), "")


# -- value formatting ---------------------------------------------------------------------------


def value_format(lo: float, hi: float, steps: int = 100) -> Callable[[float], str]:
    """Compact numbers (151.4M) with enough decimals to tell values `(hi - lo) / steps` apart.

    A k/M/G suffix is used only when it needs at most one decimal: 3000-4000 reads better than 3.00k-4.00k.
    """
    magnitude = max(abs(lo), abs(hi))
    step = (hi - lo) / steps
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0)):
        if magnitude < scale and scale > 1:
            continue
        if step > 0:
            decimals = max(0, math.ceil(-math.log10(step / scale)))
        else:
            decimals = 1 if suffix else 0 if float(lo).is_integer() else 2
        if decimals <= 1 or scale == 1:
            break
    if decimals > 6:  # tiny values: significant digits instead
        return lambda v: f"{v:.4g}"

    def text(v: float) -> str:
        return f"{v / scale:.{decimals}f}{suffix}"

    return text


TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
BYTE_UNITS = {"bytes": 1, "byte": 1, "b": 1, "kb": 1024, "kib": 1024}
PERCENT_UNITS = {"%", "percent"}


def unit_format(
    unit: str, lo: float, hi: float, steps: int = 100, number: Callable[[float], str] | None = None
) -> Callable[[float], str]:
    """Values with their unit folded in: times as 82ms, sizes as 1.4 MiB, shares as 12.5%; other units
    after a compact number (3000 Hz) telling values `(hi - lo) / steps` apart; no unit (or 'count') the
    number alone (`number` formats the numbers instead). Every view of the noun formats values with it."""
    key = (unit or "").strip().lower()
    if key in TIME_UNITS:
        scale = TIME_UNITS[key]
        return lambda v: fmt.duration(v * scale)
    if key in BYTE_UNITS:
        size = BYTE_UNITS[key]
        return lambda v: fmt.byte_size(round(v * size))
    compact = number or value_format(lo, hi, steps)

    def text(v: float) -> str:
        return compact(v) if v else "0"

    if key in PERCENT_UNITS:
        return lambda v: f"{text(v)}%"
    return lambda v: with_unit(text(v), unit)


def rate_text(unit: str, rate: float) -> str:
    """A cumulative counter's rate: time per second as a share of wall time (CPU % for thread time), else
    the unit per second."""
    key = (unit or "").strip().lower()
    if key in TIME_UNITS:
        return fmt.percent(100.0 * rate * TIME_UNITS[key] / 1e9)
    if key in BYTE_UNITS:
        return f"{fmt.byte_size(round(rate * BYTE_UNITS[key]))}/s"
    return f"{with_unit(fmt.count(rate), unit)}/s"


def with_unit(text: str, unit: str) -> str:
    return f"{text} {unit}" if unit and unit != "count" else text


def exact_offset(ts: int, start: int) -> str:
    """A trace offset to the nanosecond (1.242483123s), for links whose ts must hit a sample exactly."""
    delta = ts - start
    sign = "-" if delta < 0 else ""
    delta = abs(delta)
    return f"{sign}{delta // 1_000_000_000}.{delta % 1_000_000_000:09d}s"


def fill_value_stats(out: pb.ValueStats, values: list[float]) -> None:
    """Stats of sorted values."""
    if not values:
        return
    n = len(values)
    out.count = n
    out.min = values[0]
    out.max = values[-1]
    out.avg = math.fsum(values) / n
    out.p50 = values[percentile_index(n, 50)]
    out.p95 = values[percentile_index(n, 95)]
    out.p99 = values[percentile_index(n, 99)]


def series_ids(w: Where) -> str:
    """A subquery of the series' track ids, on one line (it goes inside other queries)."""
    return f"SELECT tr.id {TRACK_FROM} {w.sql()}".replace("\n", " ")


def sorted_values(run: ReportRun, counter_name: str) -> list[float]:
    w = series_where(run, counter_name)
    in_range, range_params = sample_range(run)
    return [
        r[0]
        for r in run.query(
            f"values of {counter_name}, sorted",
            f"""SELECT c.value
FROM counter c
WHERE c.track_id IN ({series_ids(w)}){in_range}
ORDER BY c.value""",
            {**w.params, **range_params},
        )
    ]


def value_stats(run: ReportRun, counter_name: str, out: pb.ValueStats) -> bool:
    """The series' count, min, avg, max and p50/p95/p99 (nearest rank, as fill_value_stats) without reading
    every value when it has many: the whole trace's come from report_track_stats (one track: its percentiles
    too), a range's from one pass over the index; percentiles of more than PERCENTILE_MAX pooled samples are
    left out, with a footnote linking the histogram (returns whether they were)."""
    w = series_where(run, counter_name)
    if run.scope.time is None:
        row = run.query(
            f"values of {counter_name}: stats of its tracks, precomputed",
            f"""SELECT sum(st.event_count) AS count, min(st.min_value) AS min,
       sum(st.sum_value) / sum(st.event_count) AS avg, max(st.max_value) AS max, count(*) AS tracks,
       {", ".join(f"max(st.p{p}_value) AS p{p}" for p in PERCENTILES)}
FROM report_track_stats st
WHERE st.track_id IN ({series_ids(w)}) AND st.event_count > 0""",
            w.params,
        )[0]
    else:
        # Count, min and max of the samples in the range; the average time-weighted, the tracks pooled.
        require_range_tables(run)
        start, end = run.time_range()
        row = run.query(
            f"values of {counter_name}: stats",
            f"""SELECT sum(w.count) AS count, min(w.min) AS min, {weighted_avg_sql(pooled=True)} AS avg,
       max(w.max) AS max, sum(w.count > 0) AS tracks
FROM ({weights_sql(series_ids(w), ":range_start", ":range_end", ":trace_end")}) w""",
            {
                **w.params,
                "range_start": start,
                "range_end": end,
                "trace_end": run.trace.end,
                **cell_params(run, start, end),
            },
        )[0]
    if not row["count"]:
        return False
    out.count = row["count"]
    out.min, out.avg, out.max = row["min"], row["avg"], row["max"]
    if run.scope.time is None and row["tracks"] == 1:
        out.p50, out.p95, out.p99 = (row[f"p{p}"] for p in PERCENTILES)
    elif out.count <= PERCENTILE_MAX:
        values = sorted_values(run, counter_name)
        out.p50, out.p95, out.p99 = (values[percentile_index(len(values), p)] for p in PERCENTILES)
    else:
        run.footnote(
            f"p50/p95/p99 left out: {out.count:,} samples to rank (over {PERCENTILE_MAX:,}); the histogram has them",
            scoped_link(run, "counters", "histogram", name=glob_escape(counter_name)),
        )
        return True
    return False


def tracks_table(tracks: Iterable[pb.CountersList.Row], fmt_value: Callable[[float], str], title: str) -> Table:
    rows = [
        [Cell(t.scope, subtitle=t.subtitle), Cell(t.track_type), Cell(t.unit or "-"), count_cell(t.count)]
        + [Cell(fmt_value(v) if t.count else "-") for v in (t.min, t.avg, t.max)]
        for t in tracks
    ]
    return Table(
        title, ("Scope", "Type", "Unit", "Samples", "Min", "Avg", "Max"), rows, align="lllrrrr", empty="(no tracks)"
    )


# -- views ----------------------------------------------------------------------------------------

# Canned queries: every flag an optional parameter ('' = not set). A series is every counter track whose
# name matches the name glob in scope (the report also insists the glob names a single counter).
CANNED_SERIES = f"""series AS (
  SELECT tr.id
  {TRACK_FROM.replace(chr(10), chr(10) + "  ")}
  WHERE tr.event_type = 'counter' AND tr.name GLOB :name
    AND {CANNED_OWNER}
)"""
# The range's whole cells of report_counter_cell, where kept (large traces): cell_params in SQL.
CANNED_COUNTER_CELLS = """counter_cells AS (
  SELECT first_cell, end_cell, min(trace_start() + first_cell * cell_dur, range_end) AS cells_start,
         min(trace_start() + end_cell * cell_dur, range_end) AS cells_end
  FROM (SELECT g.cell_dur, g.first_cell, max(g.first_cell, (range_end - trace_start()) / g.cell_dur) AS end_cell,
               range_end
        FROM (SELECT cell_dur, max(0, (range_start - trace_start() + cell_dur - 1) / cell_dur) AS first_cell
              FROM report_grid, range WHERE cell_dur > 0 AND EXISTS (SELECT 1 FROM report_counter_cell)) g, range)
  UNION ALL
  SELECT 0, 0, range_end, range_end FROM range
  WHERE NOT EXISTS (SELECT 1 FROM report_counter_cell) OR NOT EXISTS (SELECT 1 FROM report_grid WHERE cell_dur > 0)
)"""
# What time-weighted averages read, computed only with a time range.
CANNED_WEIGHTS = weights_sql(
    "{track_ids}",
    "(SELECT range_start FROM range)",
    "(SELECT range_end FROM range)",
    "trace_end()",
    CellBounds(*(f"(SELECT {c} FROM counter_cells)" for c in ("first_cell", "end_cell", "cells_start", "cells_end"))),
    " AND :time != ''",
).replace("\n", "\n  ")
CANNED_SAMPLES = """samples AS (
  SELECT c.track_id, c.ts, c.value
  FROM counter c, range
  WHERE c.track_id IN (SELECT id FROM series) AND c.ts >= range_start
    AND (c.ts < range_end OR (:time = '' AND c.ts = range_end))
)"""


class CountersListView(View):
    noun = "counters"
    name = "list"
    title = "Counters"
    description = (
        "Every counter track with the process, thread or CPU it belongs to, its sample count and the "
        "min, average (of the samples; with time, time-weighted over the range) and max of its values in its "
        "unit (times as ms, sizes as MiB). "
        "A cumulative counter (at most 1% of its samples over the trace lower than the one before: thread "
        "time, instructions) shows its rate: its rise over the range per second of the "
        "range (time per second as a share of wall time: CPU %). By default gauges that change come first, the "
        "ones that vary most (variation: (max - min) / max(|max|, |min|)) on top, then cumulative counters "
        "by rate, then counters that never change; "
        "sort=rate|count|max|avg|name ranks otherwise. Counter names repeat across owners "
        "(cpufreq per CPU, mem.rss per process): each row is one track. name is a glob on the "
        "counter name; pid/process include the process's thread counters; with time, only samples "
        "in the range count, and averages weigh each value by how long it held in the range."
    )
    result_field = "counters_list"
    uses_top = True
    flags = SERIES_FLAGS | {"min_count", "sort", "group_by"}
    sorts = tuple(LIST_SORTS)
    canned_sql = f"""WITH {CANNED_RANGE},
{CANNED_COUNTER_CELLS},
tracks AS (
  SELECT {TRACK_COLUMNS}
  {TRACK_FROM.replace(chr(10), chr(10) + "  ")}
  WHERE tr.event_type = 'counter'
    AND {CANNED_OWNER}
    AND {CANNED_NAME}
),
stats AS (
  -- The whole trace: precomputed at import; a time range: counted from the samples.
  SELECT st.track_id, st.event_count AS count, st.min_value AS min, st.sum_value / st.event_count AS avg,
         st.max_value AS max
  FROM report_track_stats st
  WHERE :time = '' AND st.track_id IN (SELECT track_id FROM tracks)
  UNION ALL
  -- In a range: count, min and max of its samples; the average time-weighted (each value holds until
  -- the track's next sample, the last until the trace end; the one in force at the start counts from there):
  -- the integral of the values over the range, from report_counter_integral, over the time a value held.
  SELECT w.track_id, w.count, w.min, {weighted_avg_sql()}, w.max
  FROM ({CANNED_WEIGHTS.format(track_ids="SELECT track_id FROM tracks")}) w
  WHERE w.count > 0
),
-- Cumulative (monotonic): over the whole trace at most {MONOTONIC_DROPS:.0%} of its samples are lower than the one before.
counted AS (
  SELECT t.*, s.count, s.min, s.avg, s.max, {MONOTONIC_SQL} AS monotonic
  FROM tracks t JOIN stats s ON s.track_id = t.track_id
  LEFT JOIN report_track_stats m ON m.track_id = t.track_id
  WHERE s.count >= coalesce(CAST(nullif(:min_count, '') AS INTEGER), 0)
),
ranked AS (
  -- rate: a cumulative counter's rise over the range, per second of the range
  SELECT r.*, {rate_sql("range_end - range_start")} AS rate, {VARIATION_SQL} AS variation
  FROM counted r, range
)
SELECT * FROM ranked
-- variation: gauges that change, by variation; then cumulative counters, by rate per second; then constants.
ORDER BY CASE WHEN {canned_sort(sorts[0])} = 'variation' THEN
           CASE WHEN monotonic THEN 1 WHEN variation > 0 THEN 0 ELSE 2 END END,
         CASE {canned_sort(sorts[0])} WHEN 'count' THEN -count WHEN 'max' THEN -max WHEN 'avg' THEN -avg
           WHEN 'rate' THEN -coalesce(rate, 0)
           WHEN 'variation' THEN CASE WHEN monotonic THEN -coalesce(rate, 0) ELSE -variation END END,
         CASE WHEN {canned_sort(sorts[0])} IN ('variation', 'rate') THEN -count END, name, track_id
LIMIT {CANNED_TOP}"""

    def has_data(self, run: ReportRun) -> bool:
        return bool(run.value("any counter values", "SELECT EXISTS(SELECT 1 FROM counter)"))

    def compute(self, run: ReportRun, out: pb.CountersList) -> None:
        s = run.scope
        group = grouping(run, self)
        if group is not None:
            self._grouped(run, out, group)
            return
        rows, out.total_rows = track_stats(
            run,
            counter_where(run),
            "counter tracks in scope, top by the sort key",
            LIST_SORTS[self.sort_key(s)],
            s.top,
            s.min_count,
        )
        for r in rows:
            fill_track_row(out.rows.add(), r)
        subtitle_tracks(run, out.rows)
        run.truncation(len(rows), out.total_rows, "counter tracks")
        if out.rows:
            top = out.rows[0]
            narrow = row_owner(top)
            run.next_step(
                f"{top.name} ({top.scope}) over time",
                scoped_link(run, "counters", "timeline", name=glob_escape(top.name), **narrow),
            )
            run.next_step(
                f"Distribution of {top.name} ({top.scope}) values",
                scoped_link(run, "counters", "histogram", name=glob_escape(top.name), **narrow),
            )

    def _grouped(self, run: ReportRun, out: pb.CountersList, group: Grouping) -> None:
        """One row per counter name and value of the dimension: the tracks in scope pooled (as a diff pools
        tracks sharing a key: count summed, min and max of all, avg weighted by count)."""
        s = run.scope
        out.group_by = group.name
        rows, _ = track_stats(run, counter_where(run), "counter tracks in scope", LIST_SORTS["name"], MAX_TOP)
        values = track_values(run, group, [r["track_id"] for r in rows])
        pools: dict[tuple[str, str | None], list[pb.CountersList.Row]] = {}
        for r in rows:
            row = pb.CountersList.Row()
            fill_track_row(row, r)
            pools.setdefault((row.name, values.get(row.track_id)), []).append(row)
        spec = CountersDiff()
        merged = []
        for (_, value), pooled in pools.items():
            row = spec.merge(pooled)
            for name in spec.summed_ids + ("process", "thread", "cpu", "gpu"):
                row.ClearField(name)
            row.group_value = value or ""
            # The label is the row's subtitle too: a diff keeps the values apart by it.
            row.scope = row.group_label = row.subtitle = group.label(value)
            merged.append(row)
        merged = [r for r in merged if s.min_count is None or r.count >= s.min_count]
        by = {"count": lambda r: -r.count, "max": lambda r: -r.max, "avg": lambda r: -r.avg}.get(self.sort_key(s))
        merged.sort(key=lambda r: (by(r) if by else 0, r.name, group.rank(r.group_value or None)))
        out.total_rows = len(merged)
        out.rows.extend(merged[: s.top])
        run.truncation(len(out.rows), out.total_rows, f"counters and {group.name} values")

    def tables(self, msg: pb.CountersList, run: ReportRun) -> list[Table]:
        rows = []
        for r in msg.rows:
            show = unit_format(r.unit, r.min, r.max)
            narrow: dict[str, str | list[str] | None] = dict(row_owner(r))
            if msg.group_by and r.group_value:
                narrow["dim"] = dim_params(run, msg.group_by, r.group_value)
            timeline = scoped_link(run, "counters", "timeline", name=glob_escape(r.name), **narrow)
            inspect = scoped_link(run, "counters", "inspect", name=glob_escape(r.name), **narrow)
            rows.append(
                [
                    Cell(
                        r.name,
                        timeline,
                        title=f"track id {r.track_id}" if r.track_id else None,
                        href=run.linker.details("track", r.track_id) if not msg.group_by else None,
                    ),
                    Cell(r.track_type),
                    Cell(r.scope, inspect, subtitle="" if msg.group_by else r.subtitle),
                    count_cell(r.count),
                    Cell(show(r.min)),
                    Cell(show(r.avg)),
                    Cell(show(r.max)),
                    Cell(rate_text(r.unit, r.rate) if r.monotonic else "-"),
                ]
            )
        return [
            Table(
                f"Counters by {msg.group_by} ({fmt.plural(msg.total_rows, 'row')})"
                if msg.group_by
                else f"Counters ({fmt.plural(msg.total_rows, 'track')} in scope)",
                ("Counter", "Type", msg.group_by.capitalize() or "Scope", "Samples", "Min", "Avg", "Max", "Rate"),
                rows,
                align="lllrrrrr",
                empty="(no counters in scope)",
            )
        ]


class CountersTimelineView(View):
    noun = "counters"
    name = "timeline"
    title = "Counter timeline"
    description = (
        "One counter's value over time, in buckets: the average of the samples in each bucket (the "
        "value held from the last earlier sample when a bucket has none), with the min and max the "
        "counter had during the bucket. " + SCOPE_NOTE + " With several tracks, a bucket's value is "
        "the mean over the tracks and its highest tracks are named."
    )
    result_field = "counters_timeline"
    uses_top = True
    flags = SERIES_FLAGS | {"buckets"}
    required = ("name",)
    canned_sql = f"""-- The samples in each bucket, pooled over the series' tracks. The report also carries each
-- track's value into buckets without samples and averages over tracks, so with several tracks or
-- sparse samples its values differ from these.
WITH {CANNED_RANGE},
{CANNED_SERIES},
{CANNED_SAMPLES},
buckets AS (
  SELECT range_start, range_end,
         max(1, (range_end - range_start + coalesce(CAST(nullif(:buckets, '') AS INTEGER), 20) - 1)
                / coalesce(CAST(nullif(:buckets, '') AS INTEGER), 20)) AS bucket_dur
  FROM range
)
SELECT min((s.ts - b.range_start) / b.bucket_dur, (b.range_end - b.range_start - 1) / b.bucket_dur) AS bucket,
       b.range_start + min((s.ts - b.range_start) / b.bucket_dur,
                           (b.range_end - b.range_start - 1) / b.bucket_dur) * b.bucket_dur AS start_ts,
       count(*) AS count, avg(s.value) AS avg, min(s.value) AS min, max(s.value) AS max
FROM samples s, buckets b
GROUP BY bucket
ORDER BY bucket"""

    def compute(self, run: ReportRun, out: pb.CountersTimeline) -> None:
        out.name = name = resolve_name(run)
        labels = series_tracks(run, name, out.tracks)
        start, end = run.time_range()
        out.bucket_dur = bucket_dur = max(1, -(-(end - start) // run.scope.buckets))
        n = max(1, -(-(end - start) // bucket_dur))  # fewer than asked when the range is shorter in ns
        w = series_where(run, name)
        in_range, range_params = sample_range(run)
        params = {**w.params, **range_params, "range_start": start, "bucket_dur": bucket_dur, "last_bucket": n - 1}
        series = series_ids(w)
        rows = run.query(
            f"{name} per track and bucket",
            f"""WITH per_bucket AS (
  SELECT c.track_id, min((c.ts - :range_start) / :bucket_dur, :last_bucket) AS bucket, count(*) AS count,
         avg(c.value) AS avg, min(c.value) AS min, max(c.value) AS max, min(c.ts) AS first_ts, max(c.ts) AS last_ts
  FROM counter c
  WHERE c.track_id IN ({series}){in_range}
  GROUP BY c.track_id, bucket
)
SELECT b.*, (SELECT c.value FROM counter c WHERE c.track_id = b.track_id AND c.ts = b.last_ts
             ORDER BY c.id DESC LIMIT 1) AS last_value
FROM per_bucket b
ORDER BY b.track_id, b.bucket""",
            params,
        )
        held: dict[int, float] = {}
        if run.scope.time is not None:
            for r in run.query(
                f"{name} value held at the start of the range",
                f"""SELECT s.id AS track_id,
       (SELECT c.value FROM counter c WHERE c.track_id = s.id AND c.ts < :range_start
        ORDER BY c.ts DESC, c.id DESC LIMIT 1) AS value
FROM ({series}) s""",
                {**w.params, "range_start": start},
            ):
                if r["value"] is not None:
                    held[r["track_id"]] = r["value"]
        self._fill(out, rows, held, labels, start, bucket_dur, n, end)
        if out.buckets and any(b.has_value for b in out.buckets):
            sampled = [b for b in out.buckets if b.count] or [b for b in out.buckets if b.has_value]
            peak = max(sampled, key=lambda b: b.max)
            run.next_step(
                f"{name} around its peak ({run.offset(peak.start_ts)})",
                scoped_link(
                    run,
                    "counters",
                    "inspect",
                    name=glob_escape(name),
                    time=f"{exact_offset(peak.start_ts, run.trace.start)},{exact_offset(peak.end_ts, run.trace.start)}",
                ),
            )
            run.next_step(
                f"Distribution of {name} values", scoped_link(run, "counters", "histogram", name=glob_escape(name))
            )

    @staticmethod
    def _fill(
        out: pb.CountersTimeline,
        rows: list[sqlite3.Row],
        held: dict[int, float],
        labels: dict[int, tuple[str, str]],
        start: int,
        bucket_dur: int,
        n: int,
        end: int,
    ) -> None:
        """Carries each track's value across buckets without samples, then combines the tracks per bucket."""
        by_track: dict[int, dict[int, sqlite3.Row]] = {}
        for r in rows:
            by_track.setdefault(r["track_id"], {})[r["bucket"]] = r
        tracks = sorted(set(by_track) | set(held))
        several = len(tracks) > 1
        current = {t: held.get(t) for t in tracks}
        for i in range(n):
            b_start = start + i * bucket_dur
            bucket = out.buckets.add(start_ts=b_start, end_ts=min(b_start + bucket_dur, end))
            values: list[tuple[float, tuple[str, str]]] = []
            lows: list[float] = []
            highs: list[float] = []
            for t in tracks:
                sampled = by_track.get(t, {}).get(i)
                before = current[t]
                if sampled is not None:
                    avg, lo, hi = sampled["avg"], sampled["min"], sampled["max"]
                    if before is not None and sampled["first_ts"] > b_start:
                        lo, hi = min(lo, before), max(hi, before)
                    current[t] = sampled["last_value"]
                    bucket.count += sampled["count"]
                elif before is not None:
                    avg = lo = hi = before
                else:
                    continue
                values.append((avg, labels.get(t, (f"track {t}", ""))))
                lows.append(lo)
                highs.append(hi)
            if not values:
                continue
            bucket.has_value = True
            bucket.value = math.fsum(v for v, _ in values) / len(values)
            bucket.min = min(lows)
            bucket.max = max(highs)
            if several:
                for v, (label, subtitle) in sorted(values, key=lambda x: -x[0])[:3]:
                    bucket.dominant.add(name=label, value=v, subtitle=subtitle)

    def charts(self, msg: pb.CountersTimeline, run: ReportRun) -> list[Chart]:
        named = dominant_names(msg.buckets)
        known = [b for b in msg.buckets if b.has_value]
        show = unit_format(
            unit_of(msg.tracks), min((b.min for b in known), default=0), max((b.max for b in known), default=0)
        )
        bars = []
        for b in msg.buckets:
            if not b.has_value:
                note = "(no value yet)"
            elif b.count == 0:
                note = f"{show(b.value)} (held; no samples)"
            else:
                note = f"{show(b.value)}  min {show(b.min)}  max {show(b.max)}  {fmt.plural(b.count, 'sample')}"
            if b.dominant:
                note += "  top: " + ", ".join(f"{named(d)} {show(d.value)}" for d in b.dominant)
            bars.append(Bar(run.offset(b.start_ts), b.value if b.has_value else 0.0, note))
        label = "average value per bucket"  # in its unit in each bar's note
        return [Chart(f"{msg.name} over time, {fmt.duration(msg.bucket_dur)} buckets", "linear", label, bars)]

    def tables(self, msg: pb.CountersTimeline, run: ReportRun) -> list[Table]:
        tracks = list(msg.tracks)
        show = unit_format(
            unit_of(tracks), min((t.min for t in tracks), default=0), max((t.max for t in tracks), default=0)
        )
        return [tracks_table(tracks, show, f"{msg.name}: {fmt.plural(len(tracks), 'track')}")]


class CountersHistogramView(View):
    noun = "counters"
    name = "histogram"
    title = "Counter histogram"
    description = (
        "The distribution of one counter's sample values. Buckets are log-spaced when the values "
        f"are positive and span more than a factor of {LOG_SCALE_RATIO}, else linear; the chart says "
        "which. JSON adds p50/p95/p99. " + SCOPE_NOTE + " The samples of all its tracks are pooled."
    )
    result_field = "counters_histogram"
    uses_top = True
    flags = SERIES_FLAGS | {"buckets"}
    required = ("name",)
    canned_sql = f"""-- Linear buckets with round edges; the report uses log-spaced ones (edges 1, 2, 5 x 10^k) when the
-- values are positive and span more than 100x.
WITH RECURSIVE {CANNED_RANGE},
{CANNED_SERIES},
{CANNED_SAMPLES},
bounds AS (
  SELECT min(value) AS low, max(value) AS high, count(*) AS n,
         coalesce(CAST(nullif(:buckets, '') AS INTEGER), 20) AS buckets
  FROM samples
),
exponent(k) AS (SELECT -12 UNION ALL SELECT k + 1 FROM exponent WHERE k < 18),
nice(v) AS (
  SELECT CAST(m.c || 'e' || e.k AS REAL)
  FROM exponent e, (SELECT '1' AS c UNION ALL SELECT '2' UNION ALL SELECT '2.5' UNION ALL SELECT '5') m
  WHERE m.c <> '2.5' OR e.k >= 1
),
layout AS (
  -- The narrowest 1, 2, 2.5 or 5 x 10^k wide buckets that cover the values in at most that many from a
  -- multiple of the width (one bucket when every value is the same).
  SELECT b.*, w.width, floor(b.low / w.width) * w.width AS start
  FROM bounds b, (
    SELECT min(n.v) AS width FROM nice n, bounds
    WHERE n.v >= (high - low) / buckets AND floor((high - floor(low / n.v) * n.v) / n.v) + 1 <= buckets
  ) w
),
shape AS (
  SELECT *, CASE WHEN high = low THEN 1 ELSE floor((high - start) / width) + 1 END AS used FROM layout
),
placed AS (
  SELECT CAST(min(floor((s.value - l.start) / l.width), l.used - 1) AS INTEGER) AS bucket, l.*
  FROM samples s, shape l
)
SELECT bucket,
       CASE WHEN high = low THEN low ELSE start + width * bucket END AS low,
       CASE WHEN high = low THEN low ELSE start + width * (bucket + 1) END AS high,
       count(*) AS count, round(100.0 * count(*) / n, 1) AS percent
FROM placed
GROUP BY bucket
ORDER BY bucket"""

    def compute(self, run: ReportRun, out: pb.CountersHistogram) -> None:
        out.name = name = resolve_name(run)
        series_tracks(run, name, out.tracks)
        values = sorted_values(run, name)
        fill_value_stats(out.stats, values)
        if not values:
            out.scale = "linear"
            return
        lo, hi = values[0], values[-1]
        n = run.scope.buckets
        if lo == hi:
            out.scale = "linear"
            out.buckets.add(low=lo, high=hi, count=len(values))
        else:
            if lo > 0 and hi / lo > LOG_SCALE_RATIO:
                out.scale = "log"
                edges = fmt.log_edges(lo, hi, n)
            else:
                out.scale = "linear"
                edges = fmt.linear_edges(lo, hi, n)
            n = len(edges) - 1
            # Bucket i holds [edges[i], edges[i+1]); the last one also holds the maximum.
            positions = [bisect.bisect_left(values, e) for e in edges[:-1]] + [len(values)]
            for i in range(n):
                out.buckets.add(low=edges[i], high=edges[i + 1], count=positions[i + 1] - positions[i])
        run.next_step(f"{name}: stats and delta", scoped_link(run, "counters", "inspect", name=glob_escape(name)))
        run.next_step(f"{name} over time", scoped_link(run, "counters", "timeline", name=glob_escape(name)))

    def charts(self, msg: pb.CountersHistogram, run: ReportRun) -> list[Chart]:
        # Bucket edges with the unit folded in; log-spaced edges are round numbers, so compact ones do.
        unit = unit_of(msg.tracks)
        steps = 10 * max(len(msg.buckets), 1)
        label = unit_format(unit, msg.stats.min, msg.stats.max, steps, fmt.count if msg.scale == "log" else None)
        total = msg.stats.count or 1
        bars = [
            Bar(f"{label(b.low)}-{label(b.high)}", b.count, f"{b.count} ({100.0 * b.count / total:.1f}%)")
            for b in msg.buckets
        ]
        title = f"Distribution of {msg.name} values, {msg.scale}-spaced buckets"
        return [Chart(title, "linear", "bar length: samples per bucket", bars)]

    def tables(self, msg: pb.CountersHistogram, run: ReportRun) -> list[Table]:
        st = msg.stats
        show = unit_format(unit_of(msg.tracks), st.min, st.max)
        stats = Table(
            f"{msg.name} values",
            ("Samples", "Min", "Avg", "Max", "p50", "p95", "p99"),
            [
                [
                    Cell(str(st.count)),
                    Cell(show(st.min)),
                    Cell(show(st.avg)),
                    Cell(show(st.max)),
                    Cell(show(st.p50)),
                    Cell(show(st.p95)),
                    Cell(show(st.p99)),
                ]
            ]
            if st.count
            else [],
            empty="(no samples in scope)",
        )
        tracks = list(msg.tracks)
        return [stats, tracks_table(tracks, show, f"{msg.name}: {fmt.plural(len(tracks), 'track')}")]


class CountersInspectView(View):
    noun = "counters"
    name = "inspect"
    title = "Counter inspect"
    description = (
        "One counter: its value at ts (the last sample at or before ts), and the min, average "
        "(time-weighted with time), max and delta (last minus first sample) over the range. "
        + SCOPE_NOTE
        + " With several tracks, each gets a row; narrow with pid, tid or cpu to see one in detail, "
        "with the samples around ts."
    )
    result_field = "counters_inspect"
    uses_top = True
    flags = SERIES_FLAGS | {"ts"}
    required = ("name",)
    canned_sql = f"""WITH {CANNED_RANGE},
{CANNED_COUNTER_CELLS},
{CANNED_SERIES},
{CANNED_SAMPLES},
-- With time: time-weighted averages (each value holds until the track's next sample, the last until the
-- trace end; the one in force at the range's start counts from there).
averages AS (
  SELECT w.track_id, {weighted_avg_sql()} AS avg
  FROM ({CANNED_WEIGHTS.format(track_ids="SELECT id FROM series")}) w
  WHERE w.count > 0
)
SELECT tr.id AS track_id, tr.name, {OWNER_COLUMNS},
       (SELECT c.value FROM counter c WHERE c.track_id = tr.id AND c.ts <= (SELECT report_time(:ts))
        ORDER BY c.ts DESC, c.id DESC LIMIT 1) AS value_at_ts,
       (SELECT count(*) FROM samples s WHERE s.track_id = tr.id) AS count,
       (SELECT min(s.value) FROM samples s WHERE s.track_id = tr.id) AS min,
       CASE WHEN :time = '' THEN (SELECT avg(s.value) FROM samples s WHERE s.track_id = tr.id)
            ELSE (SELECT a.avg FROM averages a WHERE a.track_id = tr.id) END AS avg,
       (SELECT max(s.value) FROM samples s WHERE s.track_id = tr.id) AS max,
       (SELECT s.value FROM samples s WHERE s.track_id = tr.id ORDER BY s.ts DESC LIMIT 1)
         - (SELECT s.value FROM samples s WHERE s.track_id = tr.id ORDER BY s.ts LIMIT 1) AS delta
{TRACK_FROM}
WHERE tr.id IN (SELECT id FROM series)
ORDER BY count DESC, tr.id
LIMIT {CANNED_TOP}"""

    def compute(self, run: ReportRun, out: pb.CountersInspect) -> None:
        out.name = name = resolve_name(run)
        ts = run.ts() if run.scope.ts is not None else None
        rows, total = track_stats(
            run, series_where(run, name), f"tracks of {name}", LIST_SORTS["count"], run.scope.top, keep_empty=True
        )
        run.truncation(len(rows), total, f"{name} tracks")
        out.percentiles_left_out = value_stats(run, name, out.stats)
        out.unit = next((r["unit"] for r in rows if r["unit"]), "")
        if ts is not None:
            out.ts = ts
        points = self._points(run, name, ts, [r["track_id"] for r in rows])
        subtitles = track_subtitles(run, [r["track_id"] for r in rows])
        for r in rows:
            entry = out.tracks.add()
            fill_track_row(entry.track, r)
            entry.track.subtitle = subtitles.get(r["track_id"], "")
            p = points.get(r["track_id"])
            if p is None:
                continue
            if p["at_ts"] is not None:
                entry.has_value_at_ts = True
                entry.value_at_ts = p["at_value"]
                entry.value_ts = p["at_ts"]
            if p["first_ts"] is not None:
                entry.first_ts, entry.last_ts = p["first_ts"], p["last_ts"]
                entry.delta = p["last_value"] - p["first_value"]
        if len(out.tracks) == 1:
            one = out.tracks[0]
            out.has_value_at_ts = one.has_value_at_ts
            out.value_at_ts = one.value_at_ts
            out.value_ts = one.value_ts
            out.delta, out.first_ts, out.last_ts = one.delta, one.first_ts, one.last_ts
            if ts is not None:
                self._samples_around(run, out, one.track.track_id, ts)
        elif len(out.tracks) > 1:
            first = out.tracks[0].track
            run.next_step(
                f"{name} on {first.scope} only",
                scoped_link(run, "counters", "inspect", name=glob_escape(name), **row_owner(first)),
            )
        if ts is None and out.stats.count:
            in_range, range_params = sample_range(run)
            peak = run.query(
                f"when {name} peaked",
                f"""SELECT c.ts FROM counter c
WHERE c.track_id IN (SELECT value FROM json_each(:track_ids)) AND c.value = :max_value{in_range}
ORDER BY c.ts LIMIT 1""",
                {
                    "track_ids": "[" + ",".join(str(t.track.track_id) for t in out.tracks) + "]",
                    "max_value": out.stats.max,
                    **range_params,
                },
            )
            if peak:
                run.next_step(
                    f"{name} at its maximum ({run.offset(peak[0][0])})",
                    scoped_link(
                        run, "counters", "inspect", name=glob_escape(name), ts=exact_offset(peak[0][0], run.trace.start)
                    ),
                )
        run.next_step(f"{name} over time", scoped_link(run, "counters", "timeline", name=glob_escape(name)))

    def _points(self, run: ReportRun, name: str, ts: int | None, track_ids: list[int]) -> dict[int, sqlite3.Row]:
        """Per track: the sample at or before ts, and the first and last samples in the range."""
        if not track_ids:
            return {}
        in_range, range_params = sample_range(run)
        params = {"track_ids": "[" + ",".join(map(str, track_ids)) + "]", **range_params}
        at = "NULL"
        if ts is not None:
            params["ts"] = ts
            at = """(SELECT c.id FROM counter c WHERE c.track_id = t.value AND c.ts <= :ts
          ORDER BY c.ts DESC, c.id DESC LIMIT 1)"""
        rows = run.query(
            f"{name}: value at ts, first and last samples in the range",
            f"""WITH ids AS (
  SELECT t.value AS track_id,
         {at} AS at_id,
         (SELECT c.id FROM counter c WHERE c.track_id = t.value{in_range}
          ORDER BY c.ts, c.id LIMIT 1) AS first_id,
         (SELECT c.id FROM counter c WHERE c.track_id = t.value{in_range}
          ORDER BY c.ts DESC, c.id DESC LIMIT 1) AS last_id
  FROM json_each(:track_ids) t
)
SELECT ids.track_id, a.ts AS at_ts, a.value AS at_value, f.ts AS first_ts, f.value AS first_value,
       l.ts AS last_ts, l.value AS last_value
FROM ids
LEFT JOIN counter a ON a.id = ids.at_id
LEFT JOIN counter f ON f.id = ids.first_id
LEFT JOIN counter l ON l.id = ids.last_id""",
            params,
        )
        return {r["track_id"]: r for r in rows}

    def _samples_around(self, run: ReportRun, out: pb.CountersInspect, track_id: int, ts: int) -> None:
        rows = run.query(
            "samples around ts",
            """SELECT ts, value FROM (
  SELECT * FROM (SELECT c.ts, c.value, c.id FROM counter c WHERE c.track_id = :track_id AND c.ts <= :ts
                 ORDER BY c.ts DESC, c.id DESC LIMIT :around)
  UNION ALL
  SELECT * FROM (SELECT c.ts, c.value, c.id FROM counter c WHERE c.track_id = :track_id AND c.ts > :ts
                 ORDER BY c.ts, c.id LIMIT :around)
)
ORDER BY ts, id""",
            {"track_id": track_id, "ts": ts, "around": SAMPLES_AROUND},
        )
        for r in rows:
            out.samples.add(ts=r["ts"], value=r["value"])

    def tables(self, msg: pb.CountersInspect, run: ReportRun) -> list[Table]:
        st = msg.stats
        unit = msg.unit
        # Exact numbers, with their unit folded in (times and sizes scaled: the exact figure is a sample's
        # cell title, and in the JSON).
        show = unit_format(unit, st.min, st.max, number=fmt.number)

        def pct(v: float) -> str:
            return "-" if msg.percentiles_left_out else show(v)

        at = run.offset(msg.ts) if msg.ts else ""
        out: list[Table] = []
        if len(msg.tracks) == 1:
            one = msg.tracks[0]
            facts: list[tuple[str, str]] = [
                ("Track", f"{with_subtitle(one.track.scope, one.track.subtitle)} ({one.track.track_type})")
            ]
            if msg.ts:
                facts.append(
                    (
                        f"Value at {at}",
                        f"{show(msg.value_at_ts)} (sampled at {run.offset(msg.value_ts)})"
                        if msg.has_value_at_ts
                        else "(no sample at or before ts)",
                    )
                )
            if st.count:
                facts += [
                    ("Samples", str(st.count)),
                    ("Min / avg / max", " / ".join(show(v) for v in (st.min, st.avg, st.max))),
                    ("p50 / p95 / p99", " / ".join(pct(v) for v in (st.p50, st.p95, st.p99))),
                    (
                        "Delta",
                        f"{'+' if msg.delta >= 0 else ''}{show(msg.delta)} "
                        f"({run.offset(msg.first_ts)} to {run.offset(msg.last_ts)})",
                    ),
                ]
            else:
                facts.append(("Samples", "0 in the range"))
            out.append(
                Table(
                    f"{msg.name} on {one.track.scope}",
                    ("Field", "Value"),
                    [[Cell(k), Cell(v)] for k, v in facts],
                    align="ll",
                )
            )
            if msg.samples:
                rows = []
                previous = None
                for s in msg.samples:
                    change = (
                        "" if previous is None else f"{'+' if s.value >= previous else ''}{show(s.value - previous)}"
                    )
                    marker = "<- value at ts" if msg.has_value_at_ts and s.ts == msg.value_ts else ""
                    rows.append(
                        [
                            Cell(exact_offset(s.ts, run.trace.start), title=str(s.ts)),
                            Cell(show(s.value), title=fmt.number(s.value)),
                            Cell(change),
                            Cell(marker),
                        ]
                    )
                    previous = s.value
                out.append(Table(f"Samples around {at}", ("Time", "Value", "Change", ""), rows, align="lrrl"))
            return out
        rows = []
        for t in msg.tracks:
            link = scoped_link(run, "counters", "inspect", name=glob_escape(msg.name), **row_owner(t.track))
            value = show(t.value_at_ts) if t.has_value_at_ts else "-"
            delta = f"{'+' if t.delta >= 0 else ''}{show(t.delta)}" if t.track.count else "-"
            rows.append(
                [
                    Cell(t.track.scope, link),
                    Cell(value if msg.ts else "-"),
                    count_cell(t.track.count),
                    Cell(show(t.track.min) if t.track.count else "-"),
                    Cell(show(t.track.avg) if t.track.count else "-"),
                    Cell(show(t.track.max) if t.track.count else "-"),
                    Cell(delta),
                ]
            )
        value_header = f"Value at {at}" if msg.ts else "Value at ts"
        out.append(
            Table(
                f"{msg.name}: {fmt.plural(len(msg.tracks), 'track')}",
                ("Scope", value_header, "Samples", "Min", "Avg", "Max", "Delta"),
                rows,
                align="lrrrrrr",
                empty="(no tracks)",
            )
        )
        if st.count:
            out.append(
                Table(
                    f"{msg.name}, all tracks pooled",
                    ("Samples", "Min", "Avg", "Max", "p50", "p95", "p99"),
                    [
                        [Cell(str(st.count))]
                        + [Cell(show(v)) for v in (st.min, st.avg, st.max)]
                        + [Cell(pct(v)) for v in (st.p50, st.p95, st.p99)]
                    ],
                )
            )
        return out


class CountersDiff(DiffSpec):
    noun, view, field = "counters", "list", "counters_list_diff"
    title, what = "Counters", "counters"
    key_fields, key_headers = ("name", "owner", "subtitle"), ("Counter", "Owner")
    measures = (
        Measure("count", "samples", "count"),
        Measure("avg", "avg", "value", "avg"),
        Measure("min", "min", "value", "min"),
        Measure("max", "max", "value", "max"),
    )
    sorts = {"count": "count", "avg": "avg", "max": "max", "name": ""}
    display = ("count", "avg")
    row_filters = {"min_count": "count"}
    summed_ids = ("track_id", "pid", "tid", "scope", "monotonic", "rate", "variation")

    def key(self, row: Any) -> tuple[str, ...]:
        return (
            row.name,
            owner_key(
                row.process, row.pid, row.thread, row.tid, optional_field(row, "cpu"), optional_field(row, "gpu")
            ),
            row.subtitle,
        )

    def key_cells(self, row: Any, run: ReportRun, out: Any) -> list[Cell]:
        sample = row.target if row.HasField("target") else row.baseline
        owner: dict[str, str | None] = {}
        if sample.thread or sample.tid:
            owner = {"thread": glob_escape(sample.thread)} if sample.thread else {}
        elif sample.process:
            owner = {"process": glob_escape(sample.process)}
        elif sample.HasField("cpu"):
            owner = {"cpu": str(sample.cpu)}
        link = diff_link(run, row, "counters", "timeline", name=glob_escape(row.name), **owner)
        return [Cell(row.name, link), Cell(row.owner, subtitle=row.subtitle)]


VIEWS = [CountersListView(), CountersTimelineView(), CountersHistogramView(), CountersInspectView()]
DIFFS = [CountersDiff()]
