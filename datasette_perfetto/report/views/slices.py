"""The `slices` noun: where wall time went, by slice name; one name's distribution, timeline and instances."""

from __future__ import annotations

import bisect
import heapq
import json
import math
import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from ...pages import data
from ...schema import REPORT_CELL_MIN_COUNT, REPORT_PERCENTILES, dur_bucket, dur_bucket_low
from .. import format as fmt
from .. import report_pb2 as pb
from ..base import (
    LEFT_OUT,
    Bar,
    Cell,
    Chart,
    Link,
    ReportRun,
    Table,
    View,
    count_cell,
    duration_cell,
    percentile_index,
)
from ..diff_spec import DiffSpec, Measure, diff_link
from ..filters import (
    CANNED_NICE,
    CANNED_RANGE,
    CANNED_RANGE_END,
    CANNED_RANGE_START,
    CANNED_TOP,
    TRACK_FLAGS,
    Where,
    canned_sort,
    flag_terms,
    optional_terms,
    subquery,
    unset,
)
from ..grouping import VALUE_TEXT, Grouping, dim_params, group_stats, grouping, track_values
from ..links import glob_escape, view_link
from ..scope import MAX_INT64, ReportError
from ..scope import shown as quoted
from ..subtitles import dominant_names, track_subtitles

# slice → its track → the track's thread and process (a thread track's process is its thread's). Joined on
# the tables' ids: utid/upid are generated aliases with no index, which costs an automatic index per query.
SLICE_FROM = """FROM slice s
JOIN track tr ON tr.id = s.track_id
LEFT JOIN thread th ON th.id = tr.utid
LEFT JOIN process p ON p.id = coalesce(tr.upid, th.upid)"""

# The flags every slices view takes.
SCOPE_FLAGS = frozenset({*TRACK_FLAGS, "time", "name", "min_duration"})
SORT_COLUMNS = {
    "self": "self_dur DESC",
    "dur": "total_dur DESC",
    "count": "count DESC",
    "max": "max_dur DESC",
    "name": "name",
}


def fill_instance(out: pb.SliceInstance, row: sqlite3.Row) -> None:
    out.id = row["id"]
    out.ts = row["ts"]
    out.dur = row["dur"]
    out.name = row["name"] or ""
    out.depth = row["depth"] or 0
    out.track = row["track"] or ""
    out.thread = row["thread"] or ""
    out.tid = row["tid"] or 0
    out.process = row["process"] or ""
    out.pid = row["pid"] or 0
    out.track_id = row["track_id"]
    if row["utid"] is not None:
        out.utid = row["utid"]
    if row["upid"] is not None:
        out.upid = row["upid"]


def subtitle_instances(run: ReportRun, instances: Iterable[pb.SliceInstance]) -> None:
    """Sets each instance's subtitle: its track's (RFC 0039 labels)."""
    listed = list(instances)
    subtitles = track_subtitles(run, [i.track_id for i in listed])
    for inst in listed:
        inst.subtitle = subtitles.get(inst.track_id, "")


def instance_where(inst: pb.SliceInstance) -> str:
    """Where an instance ran, for tables: thread, else process, else track."""
    if inst.thread or inst.tid:
        return f"{inst.thread or '?'} [{inst.tid}]"
    if inst.process or inst.pid:
        return f"{inst.process or '?'} [{inst.pid}]"
    return inst.track


# -- canned queries: each view's SQL with every flag an optional :named parameter ('' = not set) ----------

_CANNED_NO_OWNER = f"({unset(TRACK_FLAGS)})"
# The names `name` selects: the name equal to it, else every name the glob matches (the report needs
# exactly one and fails otherwise; here they are pooled).
_CANNED_NAMES = """(SELECT c.name FROM report_slice_name c WHERE c.name = :name
                     OR (c.name GLOB :name AND NOT EXISTS (SELECT 1 FROM report_slice_name e WHERE e.name = :name)))"""
_CANNED_OWNER_TRACKS = f"""(SELECT tr.id FROM track tr
                       LEFT JOIN thread th ON th.id = tr.utid
                       LEFT JOIN process p ON p.id = coalesce(tr.upid, th.upid)
                       WHERE {optional_terms(TRACK_FLAGS, " " * 25)})"""
# An instance clipped to the range and the bucket it starts in (timeline, with layout).
_CANNED_PIECE_COLUMNS = """max(s.ts, range_start) AS piece_start,
         min(CASE WHEN s.dur < 0 THEN trace_end() ELSE s.ts + s.dur END, range_end) AS instance_end,
         min(n - 1, (max(s.ts, range_start) - range_start) / bucket_dur) AS bucket"""


def wholly_inside(start: str, end: str) -> str:
    """Whether instance s finished within [start, end]."""
    return f"s.dur >= 0 AND s.ts >= {start} AND s.ts + s.dur <= {end}"


def clipped_dur(start: str, end: str, trace_end: str) -> str:
    """Instance s's part inside [start, end] (SQL expressions); a still-open one (dur -1) runs to `trace_end`.
    Most instances of a wide range lie wholly inside it: their duration, without min() and max() calls (about
    half the time of a pass over a million of them)."""
    return (
        f"CASE WHEN {wholly_inside(start, end)} THEN s.dur"
        f" ELSE max(min(CASE WHEN s.dur < 0 THEN {trace_end} ELSE s.ts + s.dur END, {end}) - max(s.ts, {start}), 0)"
        " END"
    )


# An instance's duration as the report counts it: its part inside the range (the trace without `time`; an
# unfinished one lasts to the range's end), as CLIPPED_DUR; of the `range` CTE's columns, or of `time` itself.
CANNED_DUR = clipped_dur("range_start", "range_end", "trace_end()")
_CANNED_TIME_DUR = CANNED_DUR.replace("range_end", CANNED_RANGE_END).replace("range_start", CANNED_RANGE_START)


def self_value(dur: str, inside: str | None = None) -> str:
    """An instance's self time: `dur` (an expression of slice s) less its direct children's, each counted as
    `dur` counts it (so a child outside the time range subtracts nothing). Through the parent_id index; or, where
    `inside` holds (the instance finished wholly inside what `dur` counts, so its children are too), the self
    time stored at import (report_slice_self: traces below REPORT_NAME_CELL_MIN_SLICES slices; without a row,
    summed)."""
    child = re.sub(r"\bs\.", "k.", dur)
    summed = f"({dur} - coalesce((SELECT sum({child}) FROM slice k WHERE k.parent_id = s.id), 0))"
    if inside is None:
        return summed
    return f"coalesce(CASE WHEN {inside} THEN (SELECT x.self_dur FROM report_slice_self x WHERE x.id = s.id) END, {summed})"


def canned_instances(columns: str, range_table: str = "range", unless: str = "", near_ts: bool = False) -> str:
    """The instances of the names `name` selects in scope, as a query of `columns` (of slice s;
    range_start/range_end come from `range_table`); none when the `unless` query has a row. One branch
    runs, by the flags given: the owners' tracks drive (their index also holds dur and name), else with
    `near_ts` the instants around ts (the `at` query), else the time range, else the name's index."""
    longest = f"(SELECT max(max_dur) FROM report_slice_name WHERE name IN {_CANNED_NAMES})"
    rest = """
    AND (:time = '' OR s.ts < range_end AND (s.dur < 0 AND trace_end() >= range_start OR s.ts + s.dur >= range_start))
    AND (:min_duration = '' OR s.dur >= report_duration(:min_duration)
         OR s.dur < 0 AND trace_end() - s.ts >= report_duration(:min_duration))"""
    if unless:
        rest += f"\n    AND NOT EXISTS (SELECT 1 FROM {unless})"
    no_ts = " AND :ts = ''" if near_ts else ""
    branches = [
        f"""NOT {_CANNED_NO_OWNER}
    AND s.track_id IN {_CANNED_OWNER_TRACKS}
    AND +s.name IN {_CANNED_NAMES}"""
    ]
    if near_ts:
        branches.append(f"""{_CANNED_NO_OWNER} AND :ts != ''
    AND s.ts BETWEEN (SELECT ts - half FROM at) - {longest} AND (SELECT ts + half FROM at)
    AND +s.name IN {_CANNED_NAMES}""")
    branches.append(f"""{_CANNED_NO_OWNER}{no_ts} AND :time != ''
    AND s.ts < range_end AND s.ts >= range_start - {longest}
    AND +s.name IN {_CANNED_NAMES}""")
    branches.append(f"""{_CANNED_NO_OWNER}{no_ts} AND :time = ''
    AND s.name IN {_CANNED_NAMES}""")
    return "\n  UNION ALL\n  ".join(
        f"""SELECT {columns}
  FROM slice s, {range_table}
  WHERE {branch}{rest}"""
        for branch in branches
    )


# The flags on a slice s and its owners (as SLICE_FROM joins them) but min_duration, which the slices table
# applies to names' totals.
# The slices table's scope whatever name selects (self time subtracts children of any name).
_CANNED_TABLE_TERMS = optional_terms(
    (*TRACK_FLAGS, "time"),
    time="(s.ts < (SELECT report_range_end(:time))"
    " AND (s.dur < 0 AND trace_end() >= (SELECT report_range_start(:time))"
    " OR s.ts + s.dur >= (SELECT report_range_start(:time))))",
)


# The time range as bounds on ts an index can seek to (none without `time`): a slice overlapping the range
# starts before its end and at most the longest slice's duration before its start (over 0.4% of the 100 MB
# benchmark trace, 2.07 s without them, 0.10 s with); none where the cells are read (slice_cells).
_CANNED_TS_BOUNDS = """s.ts < CASE WHEN EXISTS (SELECT 1 FROM slice_cells) THEN -9223372036854775807
                ELSE coalesce((SELECT report_range_end(:time)), 9223372036854775807) END
    AND s.ts >= coalesce((SELECT report_range_start(:time)) - (SELECT max(max_dur) FROM report_slice_name),
                         -9223372036854775807)"""


class SlicesTableView(View):
    noun = "slices"
    name = "table"
    title = "Slices by name"
    description = (
        "Count, total and maximum duration of each slice name; min_duration hides names with less time in "
        "total, min_count those with fewer instances."
    )
    result_field = "slices_table"
    uses_top = True
    flags = SCOPE_FLAGS | {"min_count", "sort", "group_by"}
    sorts = ("self", "dur", "count", "max", "name")
    # Set below (slices_table_canned_sql), once the cell split it shares with the report is defined.
    canned_sql = ""

    def has_data(self, run: ReportRun) -> bool:
        return bool(run.value("any slice", "SELECT EXISTS(SELECT 1 FROM slice)"))

    def compute(self, run: ReportRun, out: pb.SlicesTable) -> None:
        s = run.scope
        order = SORT_COLUMNS[self.sort_key(s)]
        owner = owner_tracks(run)
        group = grouping(run, self)
        # group_by a dimension: rows per (name, value of the slices' tracks).
        group_column, group_key, group_join, group_params = "", "", "", {}
        if group is not None:
            out.group_by = group.name
            group_column = f"{VALUE_TEXT.format(d='g')} AS group_value, "
            group_key = ", group_value"
            group_params = group.params
        # min_duration hides names with less time in total (the RFC's row filter), as min_count those with fewer
        # instances: it selects no instances.
        narrowed = owner is not None or s.time is not None
        by_max = self.sort_key(s) == "max"
        cells = cell_split(run, cell_table(owner, group))
        if cells is not None:
            w = scope_where(run, min_duration=False)
            grouped, grouped_params, slice_time = self._from_cells(run, cells, owner, group, by_max)
        elif s.time is None and (owner is not None or group is not None):
            # A thread's, process's or track's slices, or slices per dimension value: the per track and name
            # aggregates precomputed at import.
            w = scope_where(run, min_duration=False)
            by_track = Where()
            if owner is not None:
                by_track.add(f"t.track_id IN {owner.terms[0]}", **owner.params)
            if s.name is not None:
                by_track.add("t.name GLOB :name", name=s.name)
            if group is not None:
                group_join = "\nLEFT JOIN track_dimension g ON g.track_id = t.track_id AND g.name = :group_dim"
            grouped = f"""SELECT t.name, {group_column}sum(t.count) AS count, sum(t.total_dur) AS total_dur,
       max(t.max_dur) AS max_dur, t.max_slice_id AS max_id, sum(t.unfinished) AS unfinished, sum(t.self_dur) AS self_dur
FROM report_slice_track_name t{group_join}
{by_track.sql()}
GROUP BY t.name{group_key}"""
            grouped_params = {**by_track.params, **group_params}
            owned = f" WHERE t.track_id IN {owner.terms[0]}" if owner is not None else ""
            slice_time = run.value(
                "the slice time in scope: the self time of every slice (the top-level slices' time)",
                f"SELECT coalesce(sum(t.self_dur), 0) FROM report_slice_track_name t{owned}",
                owner.params if owner is not None else {},
            )
        elif narrowed:
            w = scope_where(run, min_duration=False)
            # +s.name: group with a sort rather than scan the whole name index (SQLite's pick otherwise).
            dur = scope_dur(run)
            # Self time: less the direct children's counted durations (of every name; a child outside the range
            # counts nothing), stored for a slice wholly inside the range.
            if group is not None:
                group_join = "\nLEFT JOIN track_dimension g ON g.track_id = s.track_id AND g.name = :group_dim"
            grouped = f"""SELECT s.name AS name, {group_column}count(*) AS count, sum({dur}) AS total_dur,
       max({dur}) AS max_dur, s.id AS max_id, sum(s.dur < 0) AS unfinished,
       sum({scope_self(run)}) AS self_dur
FROM slice s{group_join}
{w.sql()}
GROUP BY +s.name{group_key}"""
            grouped_params = {**w.params, **group_params}
            # Every slice's self time summed is the top-level slices' time (each child is subtracted once).
            top_level = scope_where(run, name=False, min_duration=False)
            # Unary +: the parent_id index would read every top-level slice (ANALYZE's sample takes NULL for a
            # rare value); the time range's ts index or the owner's track index is the one to use.
            top_level.add("+s.parent_id IS NULL")
            slice_time = run.value(
                "the slice time in scope: the self time of every slice (the top-level slices' time)",
                f"SELECT coalesce(sum({dur}), 0) FROM slice s {top_level.sql()}",
                top_level.params,
            )
        else:
            # Unscoped: the per-name aggregates precomputed at ingest.
            w = Where()
            if s.name is not None:
                w.add("name GLOB :name", name=s.name)
            grouped = f"""SELECT name, count, total_dur, max_dur, max_slice_id AS max_id, unfinished, self_dur
FROM report_slice_name
{w.sql()}"""
            grouped_params = w.params
            slice_time = run.value(
                "the slice time in scope: the self time of every slice (the top-level slices' time)",
                "SELECT coalesce(sum(self_dur), 0) FROM report_slice_name",
            )
        having = Where()
        if s.min_count is not None:
            having.add("count >= :min_count", min_count=s.min_count)
        shown = Where()
        if s.min_duration is not None:
            shown.add("total_dur >= :min_duration", min_duration=s.min_duration)
        # The names min_duration hides are counted before it applies (for its footnote). The totals: one aggregate
        # over the materialized names, not window sums over every row (9% faster on 100,000 rows). The names are
        # materialized once and judged as they are read, not copied again with their judgement (7% faster).
        rows: list[Any] = run.query(
            "slice names, top by the sort key (with the totals in scope)",
            f"""WITH by_name AS MATERIALIZED (
{grouped}
),
judged AS NOT MATERIALIZED (
  SELECT *, {" AND ".join(shown.terms) or "1"} AS shown FROM by_name {having.sql()}
),
totals AS (
  SELECT sum(shown) AS total_names, sum(CASE WHEN shown THEN count END) AS total_slices,
         sum(CASE WHEN shown THEN unfinished END) AS total_unfinished,
         sum(NOT shown) AS hidden_names, sum(CASE WHEN NOT shown THEN count END) AS hidden_slices
  FROM judged
)
SELECT * FROM judged, totals
WHERE shown
ORDER BY {order}, name{", length(group_value), group_value" if group is not None else ""}
LIMIT :top""",
            {**grouped_params, **having.params, **shown.params, "top": s.top},
        )
        if cells is not None and not by_max:
            rows = longest_in_range(run, rows, owner, group)
        out.total_rows = rows[0]["total_names"] if rows else 0
        out.total_slices = rows[0]["total_slices"] if rows else 0
        out.slice_time = slice_time or 0
        range_dur = run.range_dur()
        instances = fetch_instances(run, "the longest instance of each name", [r["max_id"] for r in rows])
        for r in rows:
            row = out.rows.add(
                name=r["name"] or "", count=r["count"], total_dur=r["total_dur"] or 0, max_dur=r["max_dur"] or 0
            )
            row.percent_of_trace = 100.0 * row.total_dur / range_dur
            row.self_dur = r["self_dur"] or 0
            row.percent_of_slice_time = 100.0 * row.self_dur / out.slice_time if out.slice_time else 0.0
            if group is not None:
                row.group_value = r["group_value"] or ""
                row.group_label = group.label(r["group_value"])
            if r["max_id"] in instances:
                fill_instance(row.max_instance, instances[r["max_id"]])
        subtitle_instances(run, [row.max_instance for row in out.rows if row.HasField("max_instance")])
        self._percentiles(run, out, rows, w, narrowed, group is not None)
        run.truncation(len(rows), out.total_rows, "slice names")
        if s.min_duration is not None:
            self._min_duration_footnote(run, rows, grouped, {**grouped_params, **having.params, **shown.params})
        if not run.lean:
            self._self_time_footnote(run, out.slice_time)
        clipped_footnote(run)
        if rows and rows[0]["total_unfinished"]:
            first = next(r["name"] for r in rows if r["unfinished"]) if any(r["unfinished"] for r in rows) else None
            unfinished_footnote(
                run,
                rows[0]["total_unfinished"],
                view_link(run, "slices", "inspect", name=glob_escape(first))
                if first is not None
                else run.link(run.noun, run.view),
            )
        if out.rows:
            top = out.rows[0]
            run.next_step(f"Distribution of {top.name} durations", view_link(run, "slices", "histogram", name=top.name))
            run.next_step(f"The longest {top.name} instance", inspect_link(run, top.max_instance))

    @staticmethod
    def _from_cells(
        run: ReportRun, cells: CellSplit, owner: Where | None, group: Grouping | None, by_max: bool
    ) -> tuple[str, dict, int]:
        """(the rows per name SQL, its parameters, the slice time in scope) of a range holding whole cells;
        `by_max`: the longest in the range of the rows that rank found before they are ranked (top_longest)."""
        grouped, params = SlicesTableView._by_cells(run, cells, owner, group)
        if by_max:
            grouped, params = _with_longest(run, grouped, params, owner, group)
        # Every track's slice time (group_by alone) is the per name cells', finer: shorter parts to read.
        every_track = cell_split(run) if owner is None and group is not None else None
        return grouped, params, SlicesTableView._slice_time_by_cells(run, every_track or cells, owner)

    @staticmethod
    def _by_cells(
        run: ReportRun, cells: CellSplit, owner: Where | None, group: Grouping | None, per_track: bool = False
    ) -> tuple[str, dict]:
        """A time range holding whole cells: per name (or, for an owner's tracks or per dimension value, per
        track and name; per process and name) and cell aggregates precomputed at import (large traces) for
        those cells, the instances for the edges before and after them (at most half a cell each: a longer
        part is read as its whole cell less the rest, Edge.outside); the longest instance of each row shown is
        looked up after (longest_in_range). A slice open at the range's start is counted by the part before the
        cells, or by the first cell's `open`. Names that net no instance (all in a subtracted part) are left
        out. Returns (the per-name SQL, its parameters). `per_track` (per track cells and a `group`): the parts'
        rows per name and track instead, (name, track_id, count, total_dur, unfinished, self_dur) to be summed per
        name and value by the caller (reading them costs less than SQLite's grouping of 100,000 keys)."""
        name = run.scope.name
        params: dict[str, Any] = {"first_cell": cells.first_cell, "end_cell": cells.end_cell}
        value, value_key, by_value = "", "", ""
        if group is not None:  # rows per name and value of the slices' tracks
            params.update(group.params)
            value, value_key = f", {VALUE_TEXT.format(d='g')} AS group_value", ", group_value"
            by_value = "\n  LEFT JOIN track_dimension g ON g.track_id = c.track_id AND g.name = :group_dim"
        by_cell, owned = _cell_scope(cells, owner)
        if name is not None:
            by_cell.add("c.name GLOB :name", name=name)
        params.update(by_cell.params)
        if run.has_columns(cells.table, "cum_covered"):
            parts = [
                _by_running_totals(
                    cells.table, _counts_open(cells), name is not None, owner, group is not None, per_track
                )
            ]
        else:
            opened = "0" if _counts_open(cells) else "CASE WHEN c.cell = :first_cell THEN c.{} ELSE 0 END"
            if per_track:
                value, value_key, by_value = ", c.track_id AS track_id", ", c.track_id", ""
            parts = [_whole_cells_by_name(cells.table, opened, by_cell.sql(), value, value_key, by_value)]
        for side, edge in (("before", cells.before), ("after", cells.after)):
            if edge is None:
                continue
            label = edge.label(side)
            params[f"{label}_start"], params[f"{label}_end"] = edge.start, edge.end
            parts.append(_edge_by_name(side, edge, name is not None, owned, group is not None, per_track))
        if name is not None:
            params["name"] = name
        union = "\n  UNION ALL\n".join(parts)
        if per_track:
            return union, params
        grouped = f"""SELECT name{value_key}, sum(count) AS count, sum(total_dur) AS total_dur, NULL AS max_dur,
       NULL AS max_id, sum(unfinished) AS unfinished, sum(self_dur) AS self_dur
FROM (
{union}
)
GROUP BY name{value_key}
HAVING sum(count) > 0"""
        return grouped, params

    @staticmethod
    def _slice_time_by_cells(run: ReportRun, cells: CellSplit, owner: Where | None) -> int:
        """The slice time in a range holding whole cells (every name's, on the owner's tracks): the time the
        top-level slices cover in those cells, from the cells, and in the edges (added, or subtracted when
        outside the range)."""
        in_cells, owned = _cell_scope(cells, owner)
        params: dict[str, Any] = {"first_cell": cells.first_cell, "end_cell": cells.end_cell, **in_cells.params}
        tops = [f"(SELECT coalesce(sum(c.top_covered), 0) FROM {cells.table} c {in_cells.sql()})"]
        for side, edge in (("before", cells.before), ("after", cells.after)):
            if edge is not None:
                label = edge.label(side)
                params[f"{label}_start"], params[f"{label}_end"] = edge.start, edge.end
                tops.append(_edge_top_level(label, edge.outside, owned))
        slice_time = run.value(
            "the slice time in scope: the time the top-level slices cover in the range's cells and the rest of it",
            "SELECT " + "\n  + ".join(tops),
            params,
        )
        return slice_time or 0

    @staticmethod
    def _percentiles(run: ReportRun, out: pb.SlicesTable, rows: list, w: Where, narrowed: bool, grouped: bool) -> None:
        """Each row's duration stats with percentiles, for the JSON (text shows count/total/max)."""
        known = {r["name"]: (r["count"], r["total_dur"] or 0, r["max_dur"]) for r in rows}
        if run.lean:
            pass  # a side of a diff: its rows are only joined
        elif grouped:
            run.footnote(
                f"Rows per {out.group_by} value: percentiles per value are in the histogram of one name",
                view_link(run, "slices", "histogram", name=glob_escape(out.rows[0].name))
                if out.rows
                else run.link(run.noun, run.view),
            )
        elif narrowed:
            stats_in_scope(run, {row.name: row.stats for row in out.rows}, w, known, out.total_slices)
        else:
            for row in out.rows:
                sn = SliceName(row.name, row.count, row.total_dur, row.max_dur)
                where = name_where(run, sn, min_duration=False)
                duration_stats(run, row.stats, where, row.name, known[row.name], narrowed=False)

    @staticmethod
    def _self_time_footnote(run: ReportRun, slice_time: int) -> None:
        """What self time and its percentage are, with the denominator."""
        other = ("dur", "total duration") if SlicesTableView().sort_key(run.scope) == "self" else ("self", "self time")
        run.footnote(
            "Self dur: each slice's duration less its direct children's. % of slice time: of "
            f"{fmt.duration(slice_time)}, the self time of every slice in scope (whatever name selects), which is "
            f"the time the top-level slices cover, summed over their tracks; rank by {other[1]} with sort={other[0]}",
            run.link(run.noun, run.view, sort=other[0]),
        )

    @staticmethod
    def _min_duration_footnote(run: ReportRun, rows: list, grouped: str, params: dict) -> None:
        """What min_duration hid: the names (and their slices) with less time in total."""
        if rows:
            names, slices = rows[0]["hidden_names"] or 0, rows[0]["hidden_slices"] or 0
        else:  # nothing shown: count them alone
            having = "WHERE count >= :min_count" if "min_count" in params else ""
            hidden = run.query(
                "slice names below min_duration",
                f"""WITH by_name AS (
{grouped}
)
SELECT count(*) AS names, coalesce(sum(count), 0) AS slices FROM by_name {having}""",
                params,
            )[0]
            names, slices = hidden["names"], hidden["slices"]
        if names:
            run.footnote(
                f"min_duration={fmt.duration(run.scope.min_duration or 0)} hid {fmt.plural(names, 'slice name')} "
                f"({fmt.plural(slices, 'slice', fmt.count(slices))}) with less time in total; "
                "rerun without it",
                run.link(run.noun, run.view, min_duration=None),
            )

    def tables(self, msg: pb.SlicesTable, run: ReportRun) -> list[Table]:
        rows = []
        dims = [f"{name}={value}" for name, value in run.scope.dim or ()]
        for r in msg.rows:
            inst = r.max_instance
            unfinished = " (unfinished)" if inst.dur < 0 else ""
            max_text = f"{fmt.duration(r.max_dur)}{unfinished} @ {run.offset(inst.ts)} ({instance_where(inst)})"
            by_value = (
                [
                    Cell(
                        r.group_label,
                        view_link(run, "slices", "table", dim=[*dims, f"{msg.group_by}={r.group_value}"], group_by=None)
                        if r.group_value
                        else None,
                    )
                ]
                if msg.group_by
                else []
            )
            rows.append(
                [
                    Cell(r.name, view_link(run, "slices", "inspect", name=r.name)),
                    *by_value,
                    count_cell(r.count),
                    Cell(fmt.duration(r.self_dur)),
                    Cell(fmt.percent(r.percent_of_slice_time)),
                    Cell(fmt.duration(r.total_dur)),
                    Cell(max_text, inspect_link(run, inst), subtitle=inst.subtitle),
                ]
            )
        if msg.group_by:
            title = f"Slices ({fmt.count(msg.total_slices)} total, {msg.total_rows} names and {msg.group_by} values)"
        else:
            title = f"Slices ({fmt.count(msg.total_slices)} total, {fmt.plural(msg.total_rows, 'name')})"
        group = (msg.group_by.capitalize(),) if msg.group_by else ()
        return [
            Table(
                title,
                ("Name", *group, "Count", "Self dur", "% of slice time", "Total dur", "Max dur"),
                rows,
                align="l" + "l" * len(group) + "rrrrl",
                empty="(no slices in scope)",
            )
        ]


# -- shared by the slices views ---------------------------------------------------------------

INSTANCE_COLUMNS = """s.id, s.ts, s.dur, s.name, s.depth, tr.name AS track, th.name AS thread, th.tid,
       p.name AS process, p.pid, s.track_id, th.id AS utid, p.id AS upid"""


def is_narrowed(run: ReportRun) -> bool:
    """Whether flags select a subset of the slices (else the precomputed per-name aggregates apply)."""
    s = run.scope
    return any(getattr(s, f) is not None for f in (*TRACK_FLAGS, "time", "min_duration"))


# An instance that lies wholly inside the time range (its duration is the part of it there); bound by
# :range_start / :range_end, which name_where and scope_where add.
WHOLLY_INSIDE = wholly_inside(":range_start", ":range_end")
# An instance's duration inside the time range (the part of it there), as scheduling clips: a still-open slice
# (dur -1) runs to the end of the trace (or of the range, if sooner).
CLIPPED_DUR = clipped_dur(":range_start", ":range_end", "(SELECT end_ts FROM trace_bounds)")


# An instance's duration over the whole trace: an unfinished one lasts to the end of the trace (as in
# report_slice_name).
WHOLE_DUR = "CASE WHEN s.dur < 0 THEN max((SELECT end_ts FROM trace_bounds) - s.ts, 0) ELSE s.dur END"
# Instances at least min_duration long, an unfinished one to the end of the trace.
MIN_DURATION = f"(s.dur >= :min_duration OR s.dur < 0 AND {WHOLE_DUR} >= :min_duration)"
# Slices not over by the range's start (an unfinished one is open from its start on).
OVERLAPS_START = "s.dur < 0 AND (SELECT end_ts FROM trace_bounds) >= :range_start OR s.ts + s.dur >= :range_start"
# Slices with a part in the range.
IN_RANGE = f"s.ts < :range_end\n  AND ({OVERLAPS_START})"


# Every track, as a term on slice s: a time range over all of them is then read from the (track_id, ts, ...)
# index alone, one range per track, where the ts index would read each slice's row.
EVERY_TRACK = "s.track_id IN (SELECT id FROM track)"

# A time range's scan reaches back by the longest slice (an unfinished one's max_dur lasts to the end of the
# trace), so the ts index applies.
REACH_BACK = "s.ts >= :range_start - (SELECT max(max_dur) FROM report_slice_name)"


def scope_dur(run: ReportRun) -> str:
    """The duration each instance counts for: clipped to the range under `time`, else its own, an
    unfinished one's to the end of the trace."""
    return CLIPPED_DUR if run.scope.time is not None else WHOLE_DUR


def scope_self(run: ReportRun) -> str:
    """self_value of scope_dur: read where stored, unless the database predates report_slice_self."""
    if not run.has_tables("report_slice_self"):
        return self_value(scope_dur(run))
    inside = wholly_inside(":range_start", ":range_end") if run.scope.time is not None else "s.dur >= 0"
    return self_value(scope_dur(run), inside)


def unfinished_footnote(run: ReportRun, unfinished: int, link: Link) -> None:
    """Say how many of the instances counted never ended, and what they were counted to."""
    if unfinished:
        to = (
            "the end of the time range (or of the trace, if sooner)"
            if run.scope.time is not None
            else "the end of the trace"
        )
        run.footnote(
            f"{fmt.plural(unfinished, 'unfinished slice')} (never ended: dur -1) "
            f"{'are' if unfinished != 1 else 'is'} counted up to {to}",
            link,
        )


def longest_first(run: ReportRun, w: Where, in_range: RangeInstances | None = None) -> str:
    """The ids of the instances under `w` (with a name term), longest first by the counted duration, at most
    :top. The (name, dur) index gives the longest of those that count their own duration: over the whole
    trace the finished ones, in a time range the ones wholly inside it; the others (unfinished, or across the
    range's edges: few; given the range's instances known as `in_range`, its :edge_ids) are ranked by the time
    they count for."""
    own = Where(list(w.terms), dict(w.params))
    rest = Where(list(w.terms), dict(w.params))
    if in_range is not None:
        own.add(WHOLLY_INSIDE)
        rest = Where(["s.id IN (SELECT value FROM json_each(:edge_ids))"])
        counted = CLIPPED_DUR
    elif run.scope.time is not None:
        own.add(WHOLLY_INSIDE)
        rest.add(f"NOT ({WHOLLY_INSIDE})")
        counted = CLIPPED_DUR
    else:
        own.add("s.dur >= 0")
        rest.add("s.dur < 0")
        counted = WHOLE_DUR
    return f"""SELECT id FROM (
  SELECT * FROM (SELECT s.id, s.dur AS d FROM slice s
    {own.sql().replace(chr(10), chr(10) + "    ")}
    ORDER BY s.dur DESC, s.id DESC LIMIT :top)
  UNION ALL
  SELECT s.id, {counted} FROM slice s
  {rest.sql().replace(chr(10), chr(10) + "  ")}
)
ORDER BY d DESC, id DESC LIMIT :top"""


@dataclass(frozen=True)
class CellSplit:
    """A time range [start, end) as a cell table (one of CELL_TABLES) sees it: cells [first_cell, end_cell), and
    the edges before and after them (None when empty), read from the instances."""

    table: str
    first_cell: int
    end_cell: int
    before: Edge | None
    after: Edge | None


@dataclass(frozen=True)
class Edge:
    """A part [start, end) at a range's edge, read from the instances: inside the range, added to its whole cells;
    or (`outside`) the rest of the cell the edge lies in, when shorter: that cell is read whole from the cells and
    this part subtracted, so no edge reads more than half a cell of instances."""

    start: int
    end: int
    outside: bool = False

    def label(self, side: str) -> str:
        """The part's parameter prefix on `side` ("before" or "after"): :{label}_start, :{label}_end."""
        return f"{side}_out" if self.outside else side


# The cell tables of large traces, per name, per track and name or per process and name, with their cell width
# in report_grid.
CELL_TABLES = {
    "name": ("report_slice_name_cell", "name_cell_dur"),
    "track": ("report_slice_track_name_cell", "track_name_cell_dur"),
    "process": ("report_slice_process_name_cell", "name_cell_dur"),
}


def kept_cell_width(run: ReportRun, per: str) -> int | None:
    """The cell width of the cell table `per` (CELL_TABLES) when the import filled it (large traces), else None."""
    table, width = CELL_TABLES[per]
    if not run.has_tables(table, "report_grid"):
        return None
    return run.value(
        "the cell width, where cells were kept",
        f"SELECT {grid_width(run, width)} FROM report_grid WHERE EXISTS (SELECT 1 FROM {table})",
    )


def cell_split(run: ReportRun, per: str = "name") -> CellSplit | None:
    """Under `time`, the range split around the whole cells inside it of the cell table `per` name (for an
    owner's tracks or per dimension value: "track"; per process: "process"; CELL_TABLES), when that table was
    filled (large traces) and holds at least one whole cell of the range; else None. Before the trace's start
    and past its end nothing lies: the range reaches the first or last cell there."""
    if run.scope.time is None:
        return None
    table = CELL_TABLES[per][0]
    cell_dur = kept_cell_width(run, per)
    start, end = run.time_range()
    t0, t1 = run.trace.start, run.trace.end
    if not cell_dur or end <= t0 or start >= t1:
        return None
    first = 0 if start <= t0 else -((t0 - start) // cell_dur)  # the first cell starting at or after start
    last = None if end >= t1 else (end - t0) // cell_dur  # the first cell not ending by end (None: to the last)
    if last is not None and last <= first:
        return None  # no whole cell inside: the instances are few
    cell_start = t0 + first * cell_dur
    cell_end = None if last is None else t0 + last * cell_dur
    before = after = None
    if start > t0 and start < cell_start:
        if cell_start - start > cell_dur // 2:  # the cell holding start, less its part before start
            first -= 1
            before = Edge(cell_start - cell_dur, start, outside=True)
        else:
            before = Edge(start, cell_start)
    if cell_end is not None and last is not None and cell_end < end:
        if end - cell_end > cell_dur // 2:  # the cell holding end, less its part from end on
            last += 1
            after = Edge(end, cell_end + cell_dur, outside=True)
        else:
            after = Edge(cell_end, end)
    return CellSplit(table, first, MAX_INT64 if last is None else last, before, after)


def cell_table(owner: Where | None, group: Grouping | None) -> str:
    """The CELL_TABLES entry for a slices table: per name, unless scoped to an owner's tracks or split by a
    dimension's values (per track and name; per process and name for group_by=process alone)."""
    if owner is None and group is not None and group.name == "process":
        return "process"
    return "name" if owner is None and group is None else "track"


def _cell_scope(cells: CellSplit, owner: Where | None) -> tuple[Where, str]:
    """The terms selecting a range's whole cells (of an owner's tracks) in cells table c, and the terms on slice s
    selecting the owner's tracks in the parts outside them (EVERY_TRACK without an owner)."""
    in_cells = Where()
    in_cells.add("c.cell >= :first_cell AND c.cell < :end_cell")
    if owner is None:
        return in_cells, f"\n  AND {EVERY_TRACK}"
    in_cells.add(f"c.track_id IN {owner.terms[0]}", **owner.params)
    return in_cells, f"\n  AND s.track_id IN {owner.terms[0]}"


def _whole_cells_by_name(
    table: str, opened: str, where: str, value: str = "", value_key: str = "", by_value: str = ""
) -> str:
    """Per name (and `value`) over the whole cells of cell table c that the `where` terms select: a slice open at
    the first cell's start counted as `opened` says (a template of the cell's column: its open count, or 0).
    Grouped by +c.name: the rows are read through their cells (stored in cell order), not name by name through
    the (name, cell) index, a lookup each (over 98% of a gigabyte trace's cells, 300 -> 68 ms)."""
    return f"""  SELECT c.name AS name{value}, sum(c.starting) + sum({opened.format("open")}) AS count,
         sum(c.covered) AS total_dur, sum(c.unfinished_starting) + sum({opened.format("unfinished_open")})
           AS unfinished, sum(c.self_covered) AS self_dur
  FROM {table} c{by_value}
  {where.replace(chr(10), chr(10) + "  ")}
  GROUP BY +c.name{value_key}"""


# Per cell table: the table of its keys (every key with a row in it), and the key columns before the name.
_RUNNING_TOTAL_KEYS = {
    "report_slice_name_cell": ("report_slice_name", ()),
    "report_slice_process_name_cell": ("report_slice_process_name", ("process",)),
    "report_slice_track_name_cell": ("report_slice_track_name", ("track_id",)),
}


def _by_running_totals(
    table: str,
    open_counted_before: bool | str,
    by_name: bool,
    owner: Where | None = None,
    by_value: bool = False,
    per_track: bool = False,
) -> str:
    """Per key of the cell table `table` (name; process and name; track and name: _RUNNING_TOTAL_KEYS), the whole
    cells [:first_cell, :end_cell) from its running totals: those of the key's last row before :end_cell less
    those before the cells; two index lookups per key, however many cells the range holds. Keys with no row among
    the cells had nothing there. A slice open at the range's start is counted by a part of the range before the
    cells (`open_counted_before`: _counts_open), or else by the first cell's `open`: the key's first row from
    :first_cell on then gives both that and the totals before the cells (its running totals less its own figures:
    they are exact sums over the key's cells), one lookup where the last row before :first_cell and the row of
    :first_cell took two. `open_counted_before` may be an SQL expression instead (the canned query, whose split is
    SQL): the first row from :first_cell on is read, its `open` added where the expression is false. `by_name`:
    only the names matching :name; `owner`: only the owner's tracks (per track); `by_value`: each track's value of
    the group_by dimension as group_value (per track; per process the process is the group_value); `per_track`:
    each track's id as track_id instead (per track)."""
    keys, key_columns = _RUNNING_TOTAL_KEYS[table]
    same = "".join(f"c.{k} IS k.{k} AND " for k in key_columns)

    def row(alias: str, where: str, order: str) -> str:
        # Found by its rowid, which the (key, name, cell) index holds: one lookup fewer than by its cell.
        return (
            f"{table} {alias} ON {alias}.rowid = (SELECT c.rowid FROM {table} c WHERE {same}"
            f"c.name IS k.name AND {where} ORDER BY {order} LIMIT 1)"
        )

    last = f"JOIN {row('hi', 'c.cell < :end_cell', 'c.cell DESC')}"
    if open_counted_before is True:
        # Without the first cell's open slices, the last row before :first_cell (none for a key that starts
        # later: no lookup of its row) costs less than the first row from it on.
        lookups = f"{last}\n  LEFT JOIN {row('lo', 'c.cell < :first_cell', 'c.cell DESC')}"
        in_range = "hi.cell >= :first_cell"
    else:
        lookups = f"JOIN {row('since', 'c.cell >= :first_cell', 'c.cell')}\n  {last}"
        in_range = "since.cell < :end_cell"
    first_open = "since.cell = :first_cell" + (f" AND NOT {open_counted_before}" if open_counted_before else "")

    def in_cells(column: str, opened: str = "") -> str:
        """`column` summed over the whole cells, and the first cell's `opened` when no part before them counts it."""
        if open_counted_before is True:
            return f"hi.cum_{column} - coalesce(lo.cum_{column}, 0)"
        total = f"hi.cum_{column} - since.cum_{column} + since.{column}"
        return f"{total} + iif({first_open}, since.{opened}, 0)" if opened else total

    value, value_join = "", ""
    if key_columns == ("process",):
        value = ", k.process AS group_value"
    elif per_track:
        value = ", k.track_id AS track_id"
    elif by_value:
        value = f", {VALUE_TEXT.format(d='g')} AS group_value"
        value_join = "\n  LEFT JOIN track_dimension g ON g.track_id = k.track_id AND g.name = :group_dim"
    terms = [" AND k.name GLOB :name" if by_name else ""]
    if owner is not None:
        terms.append(f" AND k.track_id IN {owner.terms[0]}")
    return f"""  SELECT k.name AS name{value},
         {in_cells("starting", "open")} AS count,
         {in_cells("covered")} AS total_dur,
         {in_cells("unfinished_starting", "unfinished_open")} AS unfinished,
         {in_cells("self_covered")} AS self_dur
  FROM {keys} k
  {lookups}{value_join}
  WHERE {in_range}{"".join(terms)}"""


def _edge_dur(label: str) -> str:
    """CLIPPED_DUR for the part of a range named `label` (:{label}_start, :{label}_end)."""
    return CLIPPED_DUR.replace(":range_end", f":{label}_end").replace(":range_start", f":{label}_start")


def _edge_range(label: str, owned: str = "") -> str:
    """WHERE terms on slice s: the instances with a time in the range part named `label` (scope_where's time
    terms), and the `owned` terms (an owner's tracks)."""
    terms = f"{IN_RANGE}\n  AND {REACH_BACK}"
    return "WHERE " + terms.replace(":range_end", f":{label}_end").replace(":range_start", f":{label}_start") + owned


def _edge_top_level(label: str, outside: bool, owned: str = "") -> str:
    """The time the top-level slices cover in the part of a range named `label`: a term of the range's slice
    time, subtracted for a part outside the range."""
    return (
        f"{'-' if outside else ''}(SELECT coalesce(sum({_edge_dur(label)}), 0) FROM slice s\n"
        f"  {_edge_range(label, owned)}\n  AND +s.parent_id IS NULL)"
    )


def _counts_open(cells: CellSplit) -> bool:
    """Whether the slices open at the range's start are counted by a part before the cells (else by the first
    cell's `open`)."""
    return cells.before is not None and not cells.before.outside


def _edge_by_name(
    side: str, edge: Edge, by_name: bool, owned: str = "", by_value: bool = False, per_track: bool = False
) -> str:
    """Per name (and, `by_value`, per value of the group_by dimension of their tracks) over one edge of a range,
    as the slices table reads instances: their time inside the part, and self time less their direct
    children's (of any name) there; `owned`: terms selecting an owner's tracks (children are on their parent's
    track). Before the cells every instance there counts; after them only those starting in the part (the
    others were counted before it). An edge outside the range is subtracted: after it, what starts in it; before
    it, the instances ending in it (the cells counted them, open at or starting after the cell's start).
    `per_track`: per name and track (track_id), the value left to the caller."""
    label = edge.label(side)
    d = _edge_dur(label)
    sign = "-" if edge.outside else ""
    if side == "after":
        count = f"{sign}sum(s.ts >= :{label}_start)"
        unfinished = f"{sign}sum(s.dur < 0 AND s.ts >= :{label}_start)"
    elif edge.outside:  # every instance here ends at or after its start (the overlap terms)
        count, unfinished = f"-sum(s.dur >= 0 AND s.ts + s.dur < :{label}_end)", "0"
    else:
        count, unfinished = "count(*)", "sum(s.dur < 0)"
    name_term = "\n    AND s.name GLOB :name" if by_name else ""
    per_name = f"""  SELECT s.name AS name{", s.track_id AS track_id" if by_value else ""}, {count} AS count,
         {sign}sum({d}) AS total_dur, {unfinished} AS unfinished, {sign}sum({d} - coalesce(c.dur, 0)) AS self_dur
  FROM slice s
  LEFT JOIN (
    SELECT s.parent_id, sum({d}) AS dur FROM slice s
    {_edge_range(label, owned).replace(chr(10), chr(10) + "    ")}
    AND s.parent_id IS NOT NULL
    GROUP BY s.parent_id
  ) c ON c.parent_id = s.id
  {_edge_range(label, owned).replace(chr(10), chr(10) + "  ")}{name_term}
  GROUP BY +s.name{", s.track_id" if by_value else ""}"""
    if not by_value or per_track:
        return per_name
    # Per name and track first, then each track's value: one dimension lookup a track and name, not a slice.
    return f"""  SELECT e.name, {VALUE_TEXT.format(d="g")} AS group_value, e.count, e.total_dur, e.unfinished, e.self_dur
  FROM (
  {per_name.replace(chr(10), chr(10) + "  ")}
  ) e
  LEFT JOIN track_dimension g ON g.track_id = e.track_id AND g.name = :group_dim"""


# The canned slices table's cell split: the report's parameters of a range split around its whole cells
# (cell_split, for a range over every track), as the columns of the slice_cells CTE.
_CANNED_SPLIT_COLUMNS = (
    "first_cell",
    "end_cell",
    "before_start",
    "before_end",
    "before_out_start",
    "before_out_end",
    "after_start",
    "after_end",
    "after_out_start",
    "after_out_end",
    "counts_open",
)
_CANNED_SLICE_CELLS = """slice_cells_grid AS (
  -- With time over every track (no flag but name, min_duration and min_count) and any sort but max, where
  -- report_slice_name_cell was kept (large traces): the range split around its whole cells as the report splits
  -- it (before the trace's start and past its end nothing lies); no row when no whole cell is inside it.
  SELECT g.name_cell_dur AS cd, range_start AS rs, range_end AS re, trace_start() AS t0, trace_end() AS t1
  FROM report_grid g, range
  WHERE :time != '' AND {no_owner} AND {sort} != 'max'
    AND g.name_cell_dur > 0 AND EXISTS (SELECT 1 FROM {cells})
),
slice_cells_first AS (
  -- The first cell starting at or after the range's start; the first not ending by its end (NULL: to the last).
  SELECT *, CASE WHEN rs <= t0 THEN 0 ELSE (rs - t0 + cd - 1) / cd END AS f0,
         CASE WHEN re < t1 THEN (re - t0) / cd END AS l0
  FROM slice_cells_grid
  WHERE re > t0 AND rs < t1
),
slice_cells_edges AS (
  SELECT *, t0 + f0 * cd AS cs, t0 + l0 * cd AS ce, rs > t0 AND rs < t0 + f0 * cd AS has_before,
         l0 IS NOT NULL AND t0 + l0 * cd < re AS has_after
  FROM slice_cells_first
  WHERE l0 IS NULL OR l0 > f0
),
slice_cells AS (
  -- The parts before and after the whole cells (NULL where there is none): an edge longer than half a cell is
  -- read as its whole cell less the part outside the range (an _out part, subtracted).
  SELECT f0 - (has_before AND cs - rs > cd / 2) AS first_cell,
         coalesce(l0 + (has_after AND re - ce > cd / 2), {max_int64}) AS end_cell,
         CASE WHEN has_before AND cs - rs <= cd / 2 THEN rs END AS before_start,
         CASE WHEN has_before AND cs - rs <= cd / 2 THEN cs END AS before_end,
         CASE WHEN has_before AND cs - rs > cd / 2 THEN cs - cd END AS before_out_start,
         CASE WHEN has_before AND cs - rs > cd / 2 THEN rs END AS before_out_end,
         CASE WHEN has_after AND re - ce <= cd / 2 THEN ce END AS after_start,
         CASE WHEN has_after AND re - ce <= cd / 2 THEN re END AS after_end,
         CASE WHEN has_after AND re - ce > cd / 2 THEN re END AS after_out_start,
         CASE WHEN has_after AND re - ce > cd / 2 THEN ce + cd END AS after_out_end,
         has_before AND cs - rs <= cd / 2 AS counts_open
  FROM slice_cells_edges
)"""


def _from_slice_cells(sql: str) -> str:
    """The report's SQL over a cell split (its parameters, an optional name glob) as the canned query's: the
    split read from the slice_cells CTE (absent parts NULL, so they select nothing), the name glob optional."""
    for column in sorted(_CANNED_SPLIT_COLUMNS, key=len, reverse=True):
        sql = sql.replace(f":{column}", f"(SELECT {column} FROM slice_cells)")
    for alias in ("s", "c", "k"):
        sql = sql.replace(f"{alias}.name GLOB :name", f"(:name = '' OR {alias}.name GLOB :name)")
    return sql


# Every edge the canned range may have, as (side, an Edge of its kind: inside the range or outside it); its
# bounds are the slice_cells columns, NULL where there is no such edge. And the owner terms for every track.
_CANNED_EDGES = [(side, Edge(0, 0, outside)) for side in ("before", "after") for outside in (False, True)]
_EVERY_TRACK_OWNED = f"\n  AND {EVERY_TRACK}"


def _canned_cells_by_name() -> str:
    """Per name, the parts of the canned slices table's range from the cells (_by_cells' for every track): its
    whole cells and each edge there may be (before or after them, inside the range or outside it)."""
    whole = _by_running_totals(CELL_TABLES["name"][0], ":counts_open", True)
    edges = [_edge_by_name(side, edge, True, _EVERY_TRACK_OWNED) for side, edge in _CANNED_EDGES]
    return _from_slice_cells("\n  UNION ALL\n".join([whole, *edges]))


def _canned_cells_slice_time() -> str:
    """The slice time of the canned slices table's range from the cells (_slice_time_by_cells' for every track)."""
    terms = [
        f"(SELECT coalesce(sum(c.top_covered), 0) FROM {CELL_TABLES['name'][0]} c\n"
        "   WHERE c.cell >= :first_cell AND c.cell < :end_cell)",
        *(_edge_top_level(edge.label(side), edge.outside, _EVERY_TRACK_OWNED) for side, edge in _CANNED_EDGES),
    ]
    return _from_slice_cells("\n  + ".join(terms))


# A name's longest part inside the canned range, for a name counted from the cells (b.name): its instance, the
# latest among equals (longest_in_range's). Only instances at least as long as the longest wholly inside the
# range can be it, so the (name, dur) index reads those (and the few unfinished ones).
# The range's bounds as values, not the range CTE joined: inside a correlated subquery that join made SQLite build
# an automatic index per outer row.
_CANNED_LONGEST_IN_RANGE = f"""(SELECT id FROM (
         SELECT s.id, {_CANNED_TIME_DUR} AS d FROM slice s
         WHERE s.name IS b.name AND s.dur >= coalesce(
             (SELECT w.dur FROM slice w
              WHERE w.name IS b.name AND w.dur >= 0 AND w.ts >= {CANNED_RANGE_START}
                AND w.ts + w.dur <= {CANNED_RANGE_END}
              ORDER BY w.dur DESC LIMIT 1), 0)
           AND +s.ts < {CANNED_RANGE_END} AND s.ts + s.dur >= {CANNED_RANGE_START}
         UNION ALL
         SELECT s.id, {_CANNED_TIME_DUR} FROM slice s
         WHERE s.name IS b.name AND s.dur < 0 AND +s.ts < {CANNED_RANGE_END} AND trace_end() >= {CANNED_RANGE_START}
       ) ORDER BY d DESC, id DESC LIMIT 1)"""


def slices_table_canned_sql(sorts: tuple[str, ...]) -> str:
    """SlicesTableView's canned query: the report's rows for its flags, from the cells where the report reads
    them (a time range over every track of a large trace), else from the instances in scope."""
    order = (
        f"CASE {canned_sort(sorts[0])} WHEN 'self' THEN -b.self_dur WHEN 'dur' THEN -b.total_dur\n"
        "                                                WHEN 'count' THEN -b.count WHEN 'max' THEN -b.max_dur END, b.name"
    )
    slice_cells = _CANNED_SLICE_CELLS.format(
        no_owner=_CANNED_NO_OWNER, sort=canned_sort(sorts[0]), cells=CELL_TABLES["name"][0], max_int64=MAX_INT64
    )
    return f"""WITH {CANNED_RANGE},
{slice_cells},
in_scope AS (
  -- The slices in scope whatever name selects, each with its self time: its duration (clipped to the time
  -- range) less its direct children's, stored at import for a slice wholly inside the range (traces
  -- without cells). Not needed for the whole trace, nor where the cells are read.
  SELECT s.id, s.name, s.parent_id, {_CANNED_TIME_DUR} AS dur,
         {self_value(_CANNED_TIME_DUR, wholly_inside(CANNED_RANGE_START, CANNED_RANGE_END))} AS self_dur
  {SLICE_FROM.replace(chr(10), chr(10) + "  ")}
  WHERE NOT ({_CANNED_NO_OWNER} AND :time = '')
    AND {_CANNED_TS_BOUNDS}
    AND {_CANNED_TABLE_TERMS}
),
cells_by_name AS (
{_canned_cells_by_name()}
),
by_name AS (
  -- The whole trace: the per-name aggregates precomputed at import; the cells and the edges around them; else
  -- the slices in scope.
  SELECT name, count, self_dur, total_dur, max_dur, max_slice_id, 0 AS from_cells
  FROM report_slice_name
  WHERE {_CANNED_NO_OWNER} AND :time = '' AND (:name = '' OR name GLOB :name)
  UNION ALL
  SELECT name, sum(count), sum(self_dur), sum(total_dur), NULL, NULL, 1
  FROM cells_by_name
  GROUP BY name
  HAVING sum(count) > 0
  UNION ALL
  SELECT name, count(*), sum(self_dur), sum(dur), max(dur), id, 0
  FROM in_scope
  WHERE :name = '' OR name GLOB :name
  GROUP BY name
),
slice_time AS (
  -- Every slice's self time summed: the time the top-level slices cover.
  SELECT coalesce(sum(self_dur), 0) AS ns FROM report_slice_name WHERE {_CANNED_NO_OWNER} AND :time = ''
  UNION ALL
  SELECT {_canned_cells_slice_time()} FROM slice_cells
  UNION ALL
  SELECT coalesce(sum(dur), 0) FROM in_scope WHERE parent_id IS NULL AND NOT ({_CANNED_NO_OWNER} AND :time = '')
),
shown AS MATERIALIZED (
  SELECT b.* FROM by_name b
  WHERE b.count >= CAST(coalesce(nullif(:min_count, ''), 0) AS INTEGER)
    -- min_duration hides names with less time in total.
    AND (:min_duration = '' OR b.total_dur >= report_duration(:min_duration))
  ORDER BY {order}
  LIMIT {CANNED_TOP}
),
longest AS (
  SELECT b.*, CASE WHEN b.from_cells THEN {_CANNED_LONGEST_IN_RANGE} ELSE b.max_slice_id END AS longest_id
  FROM shown b
)
SELECT b.name, b.count, b.self_dur,
       round(100.0 * b.self_dur / max((SELECT sum(ns) FROM slice_time), 1), 1) AS percent_of_slice_time,
       b.total_dur,
       round(100.0 * b.total_dur / max(coalesce((SELECT report_range_end(:time)), trace_end())
                                       - coalesce((SELECT report_range_start(:time)), trace_start()), 1), 1)
         AS percent_of_trace,
       CASE WHEN b.from_cells THEN {CANNED_DUR.replace("s.", "m.")} ELSE b.max_dur END AS max_dur, m.ts AS max_ts,
       th.name AS max_thread
FROM longest b
CROSS JOIN range
LEFT JOIN slice m ON m.id = b.longest_id
LEFT JOIN track tr ON tr.id = m.track_id
LEFT JOIN thread th ON th.id = tr.utid
ORDER BY {order}"""


SlicesTableView.canned_sql = slices_table_canned_sql(SlicesTableView.sorts)


# Instances read per name, longest first, to find the longest part inside a range (doubled while a longer
# one could still be among the rest).
LONGEST_PROBE = 8


# A range whose instances (reaching back by the longest of the names shown) are at most this many has each
# name's longest one found in one pass over them by time; beyond, by the (name, dur) index.
LONGEST_BY_TIME_MAX = 50_000


def longest_in_range(
    run: ReportRun, rows: list, owner: Where | None = None, group: Grouping | None = None
) -> list[dict]:
    """`rows` (of the names in a range, from the cell tables) with max_dur and max_id: each name's longest part
    inside the range (on the `owner`'s tracks; with `group`, on the tracks of the row's dimension value) and its
    instance (the highest id among equals). In a short range, one pass over its instances by time; else the
    (name, dur) index gives the longest finished instances in the range first: one wholly inside bounds every
    shorter one, so reading stops there; unfinished instances are few and read whole."""
    if not rows:
        return []
    start, end = run.time_range()
    range_dur = end - start
    owned_all, owner_params = _owned(owner)
    shown, by_time = _longest_reads(run, rows)
    if by_time is not None:
        per_row = {
            (r["name"], r["group_value"]): r
            for r in _longest_by_time(run, shown, by_time, owned_all, owner_params, group)
        }
        out = []
        for row in rows:
            row = dict(row)
            hit = per_row.get((row["name"], row["group_value"] if group is not None else None))
            if hit is not None:
                row["max_dur"], row["max_id"] = hit["d"], hit["id"]
            out.append(row)
        return out
    out = []
    for row in rows:
        row = dict(row)
        owned, value_params = owned_all, {}
        if group is not None:
            value_params = {**group.params, "group_value": row["group_value"]}
            if row["group_value"] is None:  # the tracks without the dimension
                owned += " AND +s.track_id NOT IN (SELECT track_id FROM track_dimension WHERE name = :group_dim)"
            else:
                owned += (
                    f" AND +s.track_id IN (SELECT g.track_id FROM track_dimension g WHERE g.name = :group_dim "
                    f"AND {VALUE_TEXT.format(d='g')} = :group_value)"
                )
        probe = LONGEST_PROBE
        while True:
            found = run.query(
                f"the longest part of a {row['name']} inside the range",
                f"""SELECT id, d, dur FROM (
  SELECT s.id, {CLIPPED_DUR} AS d, s.dur FROM slice s
  WHERE s.name IS :name AND s.dur >= 0 AND +s.ts < :range_end AND s.ts + s.dur >= :range_start{owned}
  ORDER BY s.dur DESC, s.id DESC LIMIT :probe
)
UNION ALL
SELECT s.id, {CLIPPED_DUR}, s.dur FROM slice s
WHERE s.name IS :name AND s.dur < 0 AND +s.ts < :range_end AND (SELECT end_ts FROM trace_bounds) >= :range_start{owned}""",
                {
                    "name": row["name"],
                    "probe": probe,
                    "range_start": start,
                    "range_end": end,
                    **owner_params,
                    **value_params,
                },
            )
            finished = [r for r in found if r["dur"] >= 0]
            best = max(found, key=lambda r: (r["d"], r["id"]), default=None)
            # Nothing unread is longer inside the range than the last one read, nor than the range itself.
            if len(finished) < probe or (best is not None and best["d"] >= min(finished[-1]["dur"], range_dur)):
                break
            probe *= 8
        if best is not None:
            row["max_dur"], row["max_id"] = best["d"], best["id"]
        out.append(row)
    return out


def _owned(owner: Where | None) -> tuple[str, dict]:
    """The term (after AND) keeping the slices on the owner's tracks, and its parameters."""
    return ("", {}) if owner is None else (f" AND +s.track_id IN {owner.terms[0]}", owner.params)


def _longest_reads(run: ReportRun, rows: list) -> tuple[dict, int | None]:
    """(the :names and :any_null parameters of the rows' names, how far back the longest of them reaches when one
    pass over the range's instances by time reads few enough (_longest_by_time), else None)."""
    start, end = run.time_range()
    # The names shown, for IN (json_each(:names)); a NULL name is matched apart.
    shown: dict[str, Any] = {
        "names": json.dumps(sorted({row["name"] for row in rows if row["name"] is not None})),
        "any_null": any(row["name"] is None for row in rows),
    }
    reach = run.query(
        "how far back the longest instance of the names shown reaches, and the slices per ns",
        "SELECT (SELECT max(max_dur) FROM report_slice_name WHERE name IN (SELECT value FROM json_each(:names))"
        " OR (:any_null AND name IS NULL)) AS longest, (SELECT sum(count) FROM report_slice_name) AS slices",
        shown,
    )[0]
    per_ns = (reach["slices"] or 0) / max(run.trace.dur, 1)
    longest = max(reach["longest"] or 0, 0)
    return shown, longest if per_ns * (end - start + longest) <= LONGEST_BY_TIME_MAX else None


def _with_longest(
    run: ReportRun, grouped: str, params: dict, owner: Where | None, group: Grouping | None
) -> tuple[str, dict]:
    """The rows per name (and value of `group`) of `grouped` (a range's, from the cell tables) with max_dur and
    max_id for the :top rows ranked first by them (top_longest), bound as a JSON array; the other rows' are NULL,
    so they rank after (looking up every row's longest would take a query each, or a pass over the whole
    range)."""
    s = run.scope
    value = "group_value" if group is not None else "NULL"
    wanted = None
    if s.min_count is not None or s.min_duration is not None:  # the rows the ranking query can show
        wanted = {
            (r["name"], r["value"])
            for r in run.query(
                "the rows min_count and min_duration keep",
                f"""SELECT name, {value} AS value FROM (
{grouped}
) WHERE (:min_count IS NULL OR count >= :min_count) AND (:min_duration IS NULL OR total_dur >= :min_duration)""",
                {**params, "min_count": s.min_count, "min_duration": s.min_duration},
            )
        }
    longest = top_longest(run, owner, group, wanted)
    by_value = " AND l.group_value IS c.group_value" if group is not None else ""
    return (
        f"""SELECT c.name{", c.group_value" if group is not None else ""}, c.count, c.total_dur, l.max_dur, l.max_id,
       c.unfinished, c.self_dur
FROM (
{grouped}
) c
LEFT JOIN (
  WITH shown AS MATERIALIZED (
    SELECT value ->> '$[0]' AS name, value ->> '$[1]' AS group_value, value ->> '$[2]' AS max_dur,
           value ->> '$[3]' AS max_id
    FROM json_each(:longest)
  )
  SELECT * FROM shown
) l ON l.name IS c.name{by_value}""",
        {**params, "longest": json.dumps([[*key, *found] for key, found in longest.items()])},
    )


def top_longest(
    run: ReportRun,
    owner: Where | None,
    group: Grouping | None,
    wanted: set | None = None,
    per_name: bool = False,
    every: bool = False,
) -> dict[tuple[Any, Any], tuple[int, int]]:
    """(name, value of `group`, or None without one) -> (its longest part inside the range, that instance's id:
    the highest among equals) in scope, as longest_in_range finds them, for the :top rows that rank first by it
    (`wanted`: among those; `every`: all of those); `per_name`: (name, None), of the tracks with a value of
    `group`. In a short range, one pass by time gives every row's. Else the names by their longest over the whole
    trace on the tracks in scope (a bound on their parts inside the range), each one's instances in the range by
    the (name, dur) index, longest first, counted for their track's value: a name's reading stops at an instance
    shorter than the :top-th row's longest found so far, or than the longest of each of its rows (one a name;
    `wanted`: those), and the names bound below the :top-th are not read."""
    rows_of: dict[Any, set] | None = None  # of the rows wanted, each name's
    if wanted is not None:
        rows_of = {}
        for key in wanted:
            rows_of.setdefault(key[0], set()).add(key)
    bounds = _name_bounds(run, owner, rows_of)
    if not bounds:
        return {}
    shown, by_time = _longest_reads(run, bounds)
    owned, owner_params = _owned(owner)
    best: dict[tuple[Any, Any], tuple[int, int]] = {}
    if by_time is not None:
        for hit in _longest_by_time(run, shown, by_time, owned, owner_params, group):
            if not per_name:
                best[(hit["name"], hit["group_value"])] = (hit["d"], hit["id"])
            elif hit["group_value"] is not None:
                best[(hit["name"], None)] = max(best.get((hit["name"], None), (-1, -1)), (hit["d"], hit["id"]))
    else:
        top = None if every else run.scope.top
        best = _top_longest_first(run, bounds, shown, owned, owner_params, group, rows_of, per_name, top)
    # The ranking query's order (max_dur DESC, name, length(group_value), group_value; NULL first), its first :top.
    ranked = sorted(
        (key for key in best if wanted is None or key in wanted),
        key=lambda k: (-best[k][0], k[0] is not None, k[0] or "", k[1] is not None, len(k[1] or ""), k[1] or ""),
    )
    return {key: best[key] for key in ranked[: None if every else run.scope.top]}


def _name_bounds(run: ReportRun, owner: Where | None, rows_of: dict | None) -> list[sqlite3.Row]:
    """The names in scope (of `rows_of`, if given) with their longest over the whole trace on the owner's tracks
    (an unfinished one's to the trace's end): a bound on their parts inside the range; longest first."""
    w = Where()
    if run.scope.name is not None:
        w.add("t.name GLOB :name", name=run.scope.name)
    if owner is None:
        sql = f"SELECT t.name, t.max_dur FROM report_slice_name t {w.sql()} ORDER BY t.max_dur DESC"
    else:
        w.add(f"t.track_id IN {owner.terms[0]}", **owner.params)
        sql = f"""SELECT t.name, max(t.max_dur) AS max_dur FROM report_slice_track_name t
{w.sql()}
GROUP BY t.name ORDER BY max_dur DESC"""
    rows = run.query("the longest instance of each name in scope over the whole trace", sql, w.params)
    return [r for r in rows if rows_of is None or r["name"] in rows_of]


def _top_longest_first(
    run: ReportRun,
    bounds: list,
    shown: dict,
    owned: str,
    owner_params: dict,
    group: Grouping | None,
    rows_of: dict | None,
    per_name: bool,
    top: int | None,
) -> dict[tuple[Any, Any], tuple[int, int]]:
    """top_longest's reading of the names' instances longest first (`bounds`: the names, longest first; `top`:
    how many rows rank, None for every one)."""
    values = track_values(run, group) if group is not None else {}
    one_per_name = per_name or group is None
    start, end = run.time_range()
    params = {"range_start": start, "range_end": end, **owner_params}
    best: dict[tuple[Any, Any], tuple[int, int]] = {}
    threshold = -1  # the :top-th row's longest found so far

    def found(name: Any, track_id: int, d: int, slice_id: int) -> tuple | None:
        """Keeps the instance if it is its row's longest so far: that row's key, else None."""
        nonlocal threshold
        if per_name and track_id not in values:
            return None
        key = (name, None if one_per_name else values.get(track_id))
        if (rows_of is not None and key not in rows_of.get(name, ())) or best.get(key, (-1, -1)) >= (d, slice_id):
            return None
        best[key] = (d, slice_id)
        if top is not None and d > threshold and len(best) >= top:
            threshold = heapq.nlargest(top, (v[0] for v in best.values()))[-1]
        return key

    for unfinished in _unfinished_in_range(run, shown, owned, params):
        found(*unfinished)
    for bound in bounds:
        if (bound["max_dur"] or 0) < threshold:
            break
        name = bound["name"]
        mine = {(name, None)} if one_per_name else rows_of[name] if rows_of is not None else set()
        unseen = {key for key in mine if key not in best}
        floor = None  # the shortest longest among the name's rows, once each has one
        for slice_id, track_id, d, dur in _longest_first(run, name, owned, params):
            if dur < threshold:  # nothing unread can rank
                break
            key = found(name, track_id, d, slice_id)
            if key is not None:
                unseen.discard(key)
                floor = None
            if mine and not unseen:
                floor = min(best[k][0] for k in mine) if floor is None else floor
                if dur < floor:  # nothing unread is the longest of any of its rows
                    break
    return best


def _unfinished_in_range(run: ReportRun, shown: dict, owned: str, params: dict) -> Iterator[tuple]:
    """The unfinished instances (lasting to the range's end) in the range of the names `shown` holds:
    (name, track_id, d, id). Few: read whole."""
    return run.rows(
        "the unfinished instances of the names in the range",
        f"""SELECT s.name, s.track_id, {CLIPPED_DUR} AS d, s.id FROM slice s
WHERE (s.name IN (SELECT value FROM json_each(:names)) OR :any_null AND s.name IS NULL) AND s.dur < 0
  AND +s.ts < :range_end AND (SELECT end_ts FROM trace_bounds) >= :range_start{owned}""",
        {**params, **shown},
    )


def _longest_first(run: ReportRun, name: Any, owned: str, params: dict) -> Iterator[tuple]:
    """A name's finished instances in the range, longest first (the (name, dur) index, read as far as the caller
    goes): (id, track_id, d, dur)."""
    return run.rows(
        f"the longest parts of a {name} inside the range, longest first",
        f"""SELECT s.id, s.track_id, {CLIPPED_DUR} AS d, s.dur FROM slice s
WHERE s.name IS :name AND s.dur >= 0 AND +s.ts < :range_end AND s.ts + s.dur >= :range_start{owned}
ORDER BY s.dur DESC, s.id DESC""",
        {**params, "name": name},
    )


def _longest_by_time(
    run: ReportRun, shown: dict, longest: int, owned: str, owner_params: dict, group: Grouping | None
) -> list[sqlite3.Row]:
    """longest_in_range in one pass over the range's instances by the ts index (reaching back by `longest`;
    `shown`: the :names and :any_null parameters of the names): rows of (name, group_value, id, d), the longest
    per name (and value of the group's dimension) ranked as the probe ranks them."""
    start, end = run.time_range()
    value, value_join, params = "NULL", "", {}
    if group is not None:
        value = VALUE_TEXT.format(d="g")
        value_join = "\n  LEFT JOIN track_dimension g ON g.track_id = s.track_id AND g.name = :group_dim"
        params = group.params
    return run.query(
        "the longest part of each name shown inside the range",
        f"""SELECT name, group_value, id, d FROM (
  SELECT s.name, {value} AS group_value, s.id, {CLIPPED_DUR} AS d,
         row_number() OVER (PARTITION BY s.name, {value} ORDER BY {CLIPPED_DUR} DESC, s.id DESC) AS rank
  FROM slice s{value_join}
  WHERE s.ts < :range_end AND s.ts >= :range_start - :longest
    AND (s.dur < 0 AND (SELECT end_ts FROM trace_bounds) >= :range_start OR s.ts + s.dur >= :range_start)
    AND (s.name IN (SELECT value FROM json_each(:names)) OR :any_null AND s.name IS NULL){owned}
)
WHERE rank = 1""",
        {
            "range_start": start,
            "range_end": end,
            "longest": max(longest, 0),
            **shown,
            **owner_params,
            **params,
        },
    )


def clipped_footnote(run: ReportRun) -> None:
    """Under `time`, say that durations are the parts of the instances inside the range."""
    if run.scope.time is not None:
        start, end = run.time_range()
        if end <= run.trace.start or start >= run.trace.end:
            return  # an empty window: its own footnote says so
        run.footnote(
            f"Durations are clipped to the time range {run.offset(start)}-{run.offset(end)}: an instance counts "
            "only its part inside it; see the instances whole",
            run.link(run.noun, run.view, time=None),
        )


def owner_tracks(run: ReportRun) -> Where | None:
    """The tracks the owner flags select, as a subquery (None when no owner flag is set)."""
    return subquery(
        flag_terms(run, TRACK_FLAGS),
        """SELECT tr.id FROM track tr
LEFT JOIN thread th ON th.id = tr.utid
LEFT JOIN process p ON p.id = coalesce(tr.upid, th.upid)""",
    )


def scope_where(run: ReportRun, name: bool = True, min_duration: bool = True, names_first: bool = False) -> Where:
    """WHERE terms on `slice s` alone for the run's scope, for queries over many names.

    Owner flags become the set of tracks they select, so the (track_id, ts) index stays usable; a
    time range overlaps slices (an unfinished one counts as an instant at its start), bounded below
    by the longest slice so the ts index applies too. `names_first`: the caller's terms on the name select
    fewer instances than the range holds, so the time terms are kept from choosing the index (the
    (name, dur, ts, track_id) one is read).
    """
    s = run.scope
    w = Where()
    owner = owner_tracks(run)
    if owner is not None:
        w.add(f"s.track_id IN {owner.terms[0]}", **owner.params)
    elif s.time is not None and not names_first:
        w.add(EVERY_TRACK)
    if s.time is not None:
        start, end = run.time_range()
        terms = f"{IN_RANGE}\n  AND {REACH_BACK}"
        if names_first:
            terms = re.sub(r"(?<![\w.+])s\.ts\b", "+s.ts", terms)
        w.add(terms, range_start=start, range_end=end)
    if name and s.name is not None:
        w.add("s.name GLOB :name", name=s.name)
    if min_duration and s.min_duration is not None:
        w.add(MIN_DURATION, min_duration=s.min_duration)
    return w


@dataclass(frozen=True)
class SliceName:
    """One slice name with its whole-trace count and longest instance (from report_slice_name)."""

    name: str
    count: int
    total_dur: int
    max_dur: int
    unfinished: int = 0


def name_where(
    run: ReportRun,
    sn: SliceName,
    at: tuple[int, int] | None = None,
    at_start: bool = False,
    min_duration: bool = True,
) -> Where:
    """WHERE terms on `slice s` for the instances of one name in scope (and, for inspect, containing
    the instants `at`, or with `at_start` starting at them).

    Whichever of the name, the owner's tracks, the time range or the instant selects the fewest
    slices drives the scan; a unary + keeps SQLite off the other indexes (it misjudges IN-subquery
    and range sizes). Time bounds reach back by the name's longest instance, so they use the ts index.
    """
    s = run.scope
    terms: dict[str, tuple[str, dict]] = {"name": ("{+}s.name = :slice_name", {"slice_name": sn.name})}
    cost: dict[str, float] = {"name": sn.count}
    longest = max(sn.max_dur or 0, 0)
    owner = owner_tracks(run)
    if owner is not None:
        terms["owner"] = (f"{{+}}s.track_id IN {owner.terms[0]}", owner.params)
        cost["owner"] = (
            run.value(
                "slices on the tracks in scope (to pick the index to scan)",
                f"SELECT coalesce(sum(event_count), 0) FROM report_track_stats WHERE track_id IN {owner.terms[0]}",
                owner.params,
            )
            or 0
        )
    if s.time is not None or at is not None:
        total = trace_slices(run, "slices in the trace (to pick the index to scan)")
        per_ns = total / max(run.trace.dur, 1)
        if s.time is not None:
            start, end = run.time_range()
            terms["time"] = (
                "{+}s.ts < :range_end AND {+}s.ts >= :range_start - :longest\n"
                "  AND (s.dur < 0 AND (SELECT end_ts FROM trace_bounds) >= :range_start OR s.ts + s.dur >= :range_start)",
                {"range_start": start, "range_end": end, "longest": longest},
            )
            cost["time"] = per_ns * (end - start + longest)
            if "owner" in cost:  # each of the owner's tracks read over the range only: its (track_id, ts) index
                cost["owner"] *= min(1.0, (end - start + longest) / max(run.trace.dur, 1))
        if at is not None and at_start:
            terms["at"] = ("{+}s.ts BETWEEN :ts_low AND :ts_high", {"ts_low": at[0], "ts_high": at[1]})
            cost["at"] = per_ns * (at[1] - at[0] + 1)
        elif at is not None:
            # Still-open slices (dur -1) contain every later instant.
            terms["at"] = (
                "{+}s.ts <= :ts_high AND s.ts >= :ts_low - :longest\n  AND (s.dur < 0 OR s.ts + s.dur >= :ts_low)",
                {"ts_low": at[0], "ts_high": at[1], "longest": longest},
            )
            cost["at"] = per_ns * (at[1] - at[0] + longest)
    driver = min(cost, key=lambda k: cost[k])
    w = Where(driver=driver)
    for key, (term, params) in terms.items():
        # The owner's tracks are read through their (track_id, ts) index: its time bounds stay usable with them.
        drives = key == driver or (driver == "owner" and key in ("time", "at"))
        w.add(term.replace("{+}", "" if drives else "+"), **params)
    if min_duration and s.min_duration is not None:
        w.add(MIN_DURATION, min_duration=s.min_duration)
    return w


def fetch_instances(run: ReportRun, purpose: str, ids: list[int]) -> dict[int, Any]:
    """Slices by id with their owners, for display."""
    if not ids:
        return {}
    rows = run.query(
        purpose,
        f"""SELECT {INSTANCE_COLUMNS}
{SLICE_FROM}
WHERE s.id IN (SELECT value FROM json_each(:ids))""",
        {"ids": json.dumps(ids)},
    )
    return {r["id"]: r for r in rows}


def resolve_name(run: ReportRun, view: View) -> SliceName:
    """The one slice name the `name` glob selects in scope; a ReportError listing the names otherwise.

    A name equal to the glob wins (names can contain glob characters), then the names matching it
    anywhere in the trace, then only those that have slices in scope.
    """
    glob = run.scope.name or ""
    found = {
        r["name"]: SliceName(r["name"], r["count"], r["total_dur"], r["max_dur"], r["unfinished"])
        for r in run.query(
            "slice names matching name",
            """SELECT name, count, total_dur, max_dur, unfinished
FROM report_slice_name
WHERE name = :name OR name GLOB :name
ORDER BY name = :name DESC, name
LIMIT :limit""",
            {"name": glob, "limit": NAME_LIST_LIMIT + 1},
        )
    }
    if glob in found:
        return found[glob]
    if len(found) > 1 and is_narrowed(run):
        w = scope_where(run, name=False)
        found = {
            r["name"]: SliceName(r["name"], r["count"], r["total_dur"], r["max_dur"], r["unfinished"])
            for r in run.query(
                "slice names matching name that have slices in scope",
                f"""SELECT c.name, c.count, c.total_dur, c.max_dur, c.unfinished
FROM report_slice_name c
WHERE c.name GLOB :name
  AND EXISTS (SELECT 1 FROM slice s {w.sql()} AND s.name = c.name)
ORDER BY c.name
LIMIT :limit""",
                {**w.params, "name": glob, "limit": NAME_LIST_LIMIT + 1},
            )
        }
    if not found:
        raise ReportError(
            f"name: no slice name matches {quoted(glob)}"
            + (" in this scope" if is_narrowed(run) else "")
            + "; see the slice names in the slices table",
            "name",
        )
    if len(found) > 1:
        shown = list(found)[:NAME_LIST_LIMIT]
        more = " and more" if len(found) > NAME_LIST_LIMIT else ""
        raise ReportError(
            f"name: {quoted(glob)} matches {len(shown)}{'+' if more else ''} slice names; {view.label()} "
            f"needs exactly one: {', '.join(shown)}{more}",
            "name",
            shown,
        )
    return next(iter(found.values()))


def duration_stats(
    run: ReportRun,
    out: pb.DurationStats,
    w: Where,
    name: str,
    known: tuple[int, int, int] | None = None,
    narrowed: bool = True,
    value: str | None = None,
    in_range: RangeInstances | None = None,
) -> None:
    """count/total/min/avg/max and nearest-rank p50/p95/p99 of what each instance counts for (`value`, an
    expression of slice s; default its duration in scope) over `slice s` under `w` (which selects instances
    of `name` only). A `value` other than the duration is always ranked (nothing is precomputed for it); the
    duration inside a time range is read in rank order where it is an instance's own (_clipped_ranks, through
    the range's instances known as `in_range` when given)."""
    value = value or scope_dur(run)
    if known is None:
        agg = run.query(
            "count, total and longest",
            f"""SELECT count(*) AS n, coalesce(sum({value}), 0) AS total,
       max({value}) AS longest
FROM slice s
{w.sql()}""",
            w.params,
        )[0]
        known = (agg["n"], agg["total"], agg["longest"])
    if run.scope.time is not None and value == CLIPPED_DUR and known[0]:
        wanted = sorted({0, *(percentile_index(known[0], p) for p in PERCENTILES)})
        _fill_stats(out, known, _clipped_ranks(run, w, wanted, in_range))
        return
    if narrowed or value != scope_dur(run):
        stats_in_scope(run, {name: out}, w, {name: known}, value=value)
        return
    n, total, longest = known
    if not n:
        return
    if run.has_tables("report_slice_name_percentile"):  # the whole trace's: precomputed at import
        rows = run.query(
            "minimum and percentiles (nearest rank), precomputed",
            f"""SELECT min_dur AS min, {", ".join(f"p{p}_dur AS p{p}" for p in PERCENTILES)}
FROM report_slice_name_percentile WHERE name = :name""",
            {"name": name},
        )
        if rows:
            row = rows[0]
            _fill_stats(out, known, {0: row["min"], **{percentile_index(n, p): row[f"p{p}"] for p in PERCENTILES}})
            return
    # A database without the precomputed percentiles: rank the counted durations.
    ranks = {"min": 0, **{f"p{p}": percentile_index(n, p) for p in PERCENTILES}}
    picks = ",\n       ".join(
        f"(SELECT {scope_dur(run)} AS d FROM slice s {w.sql()} ORDER BY d LIMIT 1 OFFSET :rank_{k}) AS {k}"
        for k in ranks
    )
    row = run.query(
        "minimum and percentiles (nearest rank)",
        f"SELECT {picks}",
        {**w.params, **{f"rank_{k}": v for k, v in ranks.items()}},
    )[0]
    _fill_stats(out, known, {0: row["min"], **{ranks[f"p{p}"]: row[f"p{p}"] for p in PERCENTILES}})


def _clipped_ranks(
    run: ReportRun, w: Where, ranks: list[int], in_range: RangeInstances | None = None
) -> dict[int, int]:
    """The durations inside the time range at `ranks` (nearest rank, from 0) of the instances under `w` (one
    name's, with the range's terms), without ranking them all: those wholly inside the range count their own
    duration, in order in the (name, dur) index (or, given `in_range`, the range's instances known otherwise, its
    window); the others (across its edges, unfinished: few) are sorted here. Of m others, the one at rank r
    lies among the wholly inside ones from rank r - m to r, and the others: one index read of at most m + 1
    durations a rank."""
    if in_range is not None:
        others = sorted(counted for _, counted in in_range.edges)
        window = in_range.window
    else:
        edges = Where(list(w.terms), dict(w.params))
        edges.add(f"NOT ({WHOLLY_INSIDE})")
        others = sorted(
            r["d"]
            for r in run.query(
                "the durations inside the range of the instances across its edges",
                f"SELECT {CLIPPED_DUR} AS d FROM slice s {edges.sql()}",
                edges.params,
            )
        )
        inside = Where(list(w.terms), dict(w.params))
        inside.add(WHOLLY_INSIDE)

        def window(base: int, size: int) -> list[int]:
            return [
                r["dur"]
                for r in run.query(
                    f"the durations wholly inside the range from rank {base}",
                    f"SELECT s.dur FROM slice s {inside.sql()} ORDER BY s.dur LIMIT :window OFFSET :base",
                    {**inside.params, "window": size, "base": base},
                )
            ]

    m, found = len(others), {}
    for rank in ranks:
        base = max(rank - m, 0)
        durations = window(base, rank - base + 1)
        if base == 0:  # the first rank + 1 in order lie among these and the others' first rank + 1
            found[rank] = sorted(durations + others[: rank + 1])[rank]
        elif durations:
            # The others below the window's first come before it, as the base durations wholly inside do.
            below = bisect.bisect_left(others, durations[0])
            found[rank] = sorted(durations + others[below:])[rank - base - below]
    return found


# An owner's instances of one name are read once, every histogram figure computed from them, when the owner's
# tracks drive the scan (each query would read all their slices again) and they number at most this many.
READ_ONCE_MAX = 500_000


@dataclass
class InstancesReadOnce:
    """One name's instances on an owner's tracks (in the time range, if any), read in one pass when the owner's
    tracks (not the name's or the time's index) drive the scan: the histogram's count, total, longest,
    percentiles and buckets from their counted durations, sorted here (each from its own query would read
    every slice of those tracks again: four passes or more, over a second on a gigabyte trace)."""

    ordered: list[int]  # the counted durations, sorted
    longest_id: int | None  # the longest (the highest id among equals, as longest_first ranks them)
    unfinished: int

    @staticmethod
    def of(run: ReportRun, sn: SliceName, w: Where, dur: str) -> InstancesReadOnce | None:
        """Read, if the owner's tracks drive the scan of `w` (name_where's) and their instances of the name
        (report_slice_track_name, over the whole trace) are at most READ_ONCE_MAX; else None. Under `time` the
        duration each counts for (`dur`) is its part inside the range, as the histogram's queries count it."""
        owner = owner_tracks(run)
        if owner is None or w.driver != "owner":
            return None
        expected = run.value(
            "instances of the name on the tracks in scope (few enough: read once)",
            f"""SELECT coalesce(sum(t.count), 0) FROM report_slice_track_name t
WHERE t.name = :slice_name AND t.track_id IN {owner.terms[0]}""",
            {**owner.params, "slice_name": sn.name},
        )
        if not expected or expected > READ_ONCE_MAX:
            return None
        rows = run.rows(
            "the instances in scope with the duration each counts for (the figures below are computed from them)",
            f"SELECT s.id, s.dur < 0 AS unfinished, {dur} AS d FROM slice s\n{w.sql()}",
            w.params,
        )
        longest: tuple[int, int] | None = None
        ordered, unfinished = [], 0
        for slice_id, is_unfinished, d in rows:
            ordered.append(d)
            unfinished += is_unfinished
            if longest is None or (d, slice_id) > longest:
                longest = (d, slice_id)
        ordered.sort()
        return InstancesReadOnce(ordered, longest[1] if longest else None, unfinished)

    @property
    def count(self) -> int:
        return len(self.ordered)

    @property
    def total(self) -> int:
        return sum(self.ordered)

    @property
    def longest(self) -> int:
        return self.ordered[-1] if self.ordered else 0

    def shortest_positive(self) -> int | None:
        first = bisect.bisect_right(self.ordered, 0)
        return self.ordered[first] if first < len(self.ordered) else None

    def at_ranks(self) -> dict[int, int]:
        """The minimum and the percentiles' nearest ranks (_fill_stats's)."""
        n = self.count
        return {r: self.ordered[r] for r in (0, *(percentile_index(n, p) for p in PERCENTILES))}

    def bucket_counts(self, edges: list[float], log_scale: bool) -> dict[int, int]:
        """Instances per bucket as the histogram's CASE counts them: below the first inner edge bucket 0, ...;
        on a log scale those at or below zero in a bucket of their own (-1)."""
        ordered = self.ordered
        below = [bisect.bisect_left(ordered, e) for e in edges[1:-1]]  # how many lie below each inner edge
        zero = bisect.bisect_right(ordered, 0) if log_scale else 0
        return counts_between_cuts(zero, below, len(ordered), log_scale)


def counts_between_cuts(zero: int, below: list[int], total: int, log_scale: bool) -> dict[int, int]:
    """Histogram bucket counts from how many of `total` sorted values lie below each inner edge (`below`); on a
    log scale the `zero` values at or below zero have a bucket of their own (-1), before bucket 0."""
    cuts = [zero, *below, total]
    counts = {i: cuts[i + 1] - cuts[i] for i in range(len(cuts) - 1)}
    if log_scale:
        counts[-1] = zero
    return counts


# A name's instances in a time range are read through what lies outside it when the slices (of any name)
# starting outside it number less than this many times the name's instances: most of the trace is in range.
# Reading the instances takes several passes over them, the complement one over the slices outside (measured
# on the 100 MB trace of benchmarks/big_trace.py: even at 2-7x, by name and view).
COMPLEMENT_SHARE = 2


def _finished_below(x: str) -> str:
    """SQL: how many finished instances of :slice_name last less than `x`: the nearest report_slice_name_dur_rank
    sample below it (how many last at most that long) plus the (name, dur) index entries between the two, fewer
    than REPORT_RANK_STEP."""
    sample = f"FROM report_slice_name_dur_rank r WHERE r.name = :slice_name AND r.dur < {x}"
    return (
        f"coalesce((SELECT r.at_most {sample} ORDER BY r.dur DESC LIMIT 1), 0)\n"
        f"      + (SELECT count(*) FROM slice s WHERE s.name = :slice_name AND s.dur < {x}\n"
        f"           AND s.dur > coalesce((SELECT max(r.dur) {sample}), -1))"
    )


def _outside_part(terms: str) -> str:
    return f"""SELECT s.id, s.dur, {WHOLE_DUR} AS whole,
       CASE WHEN {IN_RANGE.replace(chr(10), " ")} THEN {CLIPPED_DUR} END AS counted
FROM slice s
WHERE {terms}"""


# The instances of :slice_name not wholly inside the range (each with the duration it counts for over the whole
# trace, and inside the range if it has a part there): those starting before it, those starting in it or after
# that end after it (no earlier than its end less the name's longest finished instance), and the unfinished
# ones starting in it. The first two are read in each track's ts order (every track, with the name beside ts
# in the index), so their cost is the slices outside the range, not the name's instances. Returned as one row
# (JSON arrays): the finished ones' durations, their whole durations' sum and those with a part in the range
# (tens of thousands of rows in a gigabyte trace would cost twice the query).
_OUTSIDE_PARTS = "\nUNION ALL\n".join(
    _outside_part(terms)
    for terms in (
        f"{EVERY_TRACK} AND s.ts < :range_start AND +s.name = :slice_name",
        f"{EVERY_TRACK} AND s.ts >= max(:range_start, :range_end - :longest_finished) AND +s.name = :slice_name\n"
        "  AND s.dur >= 0 AND (s.ts >= :range_end OR s.ts + s.dur > :range_end)",
        "s.name = :slice_name AND s.dur < 0 AND +s.ts >= :range_start",
    )
)
_OUTSIDE_RANGE = f"""WITH outside AS MATERIALIZED (
{_OUTSIDE_PARTS}
)
SELECT (SELECT json_group_array(dur) FROM outside WHERE dur >= 0) AS finished,
       (SELECT coalesce(sum(whole), 0) FROM outside) AS whole,
       (SELECT json_group_array(json_array(id, counted, dur < 0)) FROM outside WHERE counted IS NOT NULL) AS edges"""


@dataclass
class RangeInstances:
    """One name's instances in a time range, known without a pass over them all (at a gigabyte trace's most
    frequent name, millions): those wholly inside the range (W), counting their own duration, as the
    subclasses find them in rank order (window) and count them below a duration (below); and the few others
    with a part in the range (`edges`: across its edges, or unfinished), counting that part."""

    run: ReportRun
    name: str
    count: int  # instances with a part in the range
    total: int  # their durations inside it
    wholly_inside: int
    edges: list[tuple[int, int]]  # (id, duration inside the range) of those across its edges or unfinished
    unfinished: int  # unfinished instances in the range

    @property
    def params(self) -> dict[str, str]:
        return {"edge_ids": json.dumps([i for i, _ in self.edges])}

    def window(self, base: int, size: int) -> list[int]:
        """The durations of W from rank `base` (from 0, in order), at most `size`."""
        raise NotImplementedError

    def below(self, xs: list[float]) -> list[int]:
        """How many of W last less than each of `xs`."""
        raise NotImplementedError

    def longest(self) -> int:
        inside = self.window(self.wholly_inside - 1, 1)
        return max([*inside, *(counted for _, counted in self.edges)], default=0)

    def shortest_positive(self) -> int | None:
        zero = self.below([1])[0]
        inside = self.window(zero, 1)
        return min([*inside, *(counted for _, counted in self.edges if counted > 0)], default=None)

    def bucket_counts(self, edges: list[float], log_scale: bool) -> dict[int, int]:
        """Instances per histogram bucket (as the view's CASE over `edges` buckets them; -1: zero, log scale)."""
        buckets = len(edges) - 1
        xs = ([1] if log_scale else []) + list(edges[1:buckets])
        below = self.below(xs) if xs else []
        zero = below.pop(0) if log_scale else 0
        counts = counts_between_cuts(zero, below, self.wholly_inside, log_scale)
        for _, counted in self.edges:
            bucket = -1 if log_scale and counted <= 0 else bisect.bisect_right(edges, counted, 1, buckets) - 1
            counts[bucket] = counts.get(bucket, 0) + 1
        return counts


@dataclass
class RangeComplement(RangeInstances):
    """One name's instances in a time range over most of the trace, known from the few outside it.

    W is the name's finished instances (report_slice_name, the samples of report_slice_name_dur_rank, the
    (name, dur) index) less the finished ones that are not wholly inside (`finished_outside`)."""

    finished_outside: list[int]  # sorted
    samples: list[tuple[int, int]]  # (dur, W at most that long) of report_slice_name_dur_rank

    def __post_init__(self) -> None:
        self._at_most = [at_most for _, at_most in self.samples]

    def window(self, base: int, size: int) -> list[int]:
        """The durations of W from rank `base` (from 0, in order), at most `size`: the (name, dur) index read
        from the last sample below that rank, less the finished instances outside the range."""
        size = min(size, self.wholly_inside - base)
        if size <= 0 or base < 0:
            return []
        # The first sample with more than `base` of W at or below it: W's rank `base` lies after the sample before
        # it, at most at its duration (fewer than REPORT_RANK_STEP durations lie between the two).
        k = bisect.bisect_right(self._at_most, base)
        lower, rank = (self.samples[k - 1][0], self.samples[k - 1][1]) if k else (-1, 0)
        upper = self.samples[k][0] if k < len(self.samples) and base + size <= self.samples[k][1] else MAX_INT64
        outside = self.finished_outside
        skip = Counter(outside[bisect.bisect_right(outside, lower) : bisect.bisect_right(outside, upper)])
        rows = self.run.query(
            f"the durations wholly inside the range from rank {base} (the name's, less those outside it)",
            "SELECT s.dur FROM slice s WHERE s.name = :slice_name AND s.dur > :lower AND s.dur <= :upper\n"
            "ORDER BY s.dur LIMIT :limit",
            {"slice_name": self.name, "lower": lower, "upper": upper, "limit": base - rank + size + sum(skip.values())},
        )
        found = []
        for (dur,) in rows:
            if skip.get(dur):
                skip[dur] -= 1
            elif rank >= base:
                found.append(dur)
                if len(found) == size:
                    break
            else:
                rank += 1
        return found

    def below(self, xs: list[float]) -> list[int]:
        """How many of W last less than each of `xs`."""
        values = ", ".join(f"({i}, :x_{i})" for i in range(len(xs)))
        rows = self.run.query(
            "finished instances of the name lasting less than each bucket edge",
            f"WITH edge(i, x) AS (VALUES {values})\nSELECT i, {_finished_below('e.x')} AS n\nFROM edge e ORDER BY i",
            {"slice_name": self.name, **{f"x_{i}": x for i, x in enumerate(xs)}},
        )
        return [r["n"] - bisect.bisect_left(self.finished_outside, x) for r, x in zip(rows, xs)]


def only_time_narrows(run: ReportRun) -> bool:
    """Whether a time range, and no other flag, narrows the instances of a name (RangeInstances' condition)."""
    s = run.scope
    return (
        s.time is not None
        and s.min_duration is None
        and s.ts is None
        and all(getattr(s, flag) is None for flag in TRACK_FLAGS)
    )


def trace_slices(run: ReportRun, purpose: str = "slices in the trace") -> int:
    """How many slices the trace holds (report_slice_name's counts summed)."""
    return run.value(purpose, "SELECT coalesce(sum(count), 0) FROM report_slice_name") or 0


def longest_finished(run: ReportRun, name: str) -> int:
    """The duration of `name`'s longest finished instance (0 without one), from the (name, dur) index."""
    return (
        run.value(
            "the longest finished instance",
            "SELECT s.dur FROM slice s WHERE s.name = :slice_name AND s.dur >= 0 ORDER BY s.dur DESC LIMIT 1",
            {"slice_name": name},
        )
        or 0
    )


def range_complement(run: ReportRun, sn: SliceName) -> RangeComplement | None:
    """The RangeComplement of `sn` in the run's time range, when only that range narrows the scope, the name has
    duration samples and the slices outside the range are few beside its instances (else None)."""
    if not only_time_narrows(run):
        return None
    if sn.count - sn.unfinished < REPORT_CELL_MIN_COUNT or not run.has_tables("report_slice_name_dur_rank"):
        return None
    start, end = run.time_range()
    params: dict[str, Any] = {"slice_name": sn.name, "range_start": start, "range_end": end}
    params["longest_finished"] = longest_finished(run, sn.name)
    if trace_slices(run) * run.outside_range_ns(params["longest_finished"]) / max(run.trace.dur, 1) > (
        sn.count * COMPLEMENT_SHARE
    ):
        return None
    outside = run.query(
        "the instances not wholly inside the range (read through what lies outside it)", _OUTSIDE_RANGE, params
    )[0]
    samples = [
        (r["dur"], r["at_most"])
        for r in run.query(
            "the name's finished durations, every REPORT_RANK_STEP-th",
            "SELECT dur, at_most FROM report_slice_name_dur_rank WHERE name = :slice_name ORDER BY dur",
            {"slice_name": sn.name},
        )
    ]
    finished_outside = sorted(json.loads(outside["finished"]))
    # At most so long, W: the name's finished instances less those outside.
    samples = [(dur, at_most - bisect.bisect_right(finished_outside, dur)) for dur, at_most in samples]
    in_range = json.loads(outside["edges"])
    edges = [(slice_id, counted) for slice_id, counted, _ in in_range]
    wholly_inside = sn.count - sn.unfinished - len(finished_outside)
    return RangeComplement(
        run,
        sn.name,
        count=wholly_inside + len(edges),
        total=sn.total_dur - outside["whole"] + sum(counted for _, counted in edges),
        wholly_inside=wholly_inside,
        finished_outside=finished_outside,
        edges=edges,
        unfinished=sum(unfinished for _, _, unfinished in in_range),
        samples=samples,
    )


# A name's instances in a time range are counted through report_slice_name_dur_cell (where it has rows for the
# name) when its edge parts hold at most this many slices (of any name) to read: the parts outside whole cells and
# the name's longest finished instance's reach before the range and before its end. Over it (a name with an
# instance as long as much of the trace), reading the instances costs less.
DUR_CELL_EDGE_SLICES = 300_000


@dataclass
class RangeDurCells(RangeInstances):
    """One name's instances in a time range holding whole cells of report_slice_name_dur_cell, known from its
    rows and the few instances at the range's edges.

    W is the finished instances starting in the whole cells (C: counted per duration bucket by the table; read
    in order from the (name, dur) index, those of a time between the cells' bounds), less those of C ending
    after the range (`removed`), plus the wholly inside ones starting in the range's parts outside whole cells
    (`extras`). A count below a duration reads at most the instances of C in one bucket; a rank, those from its
    bucket's start."""

    cells_start: int  # the whole cells' time span [cells_start, cells_end)
    cells_end: int
    buckets: list[tuple[int, int]]  # (bucket, instances of C in it), by bucket
    removed: list[int]  # sorted durations
    extras: list[int]  # sorted durations

    def __post_init__(self) -> None:
        self._before = [0, *accumulate(n for _, n in self.buckets)]  # instances of C in the buckets before k

    def _c_params(self, **more: Any) -> dict[str, Any]:
        return {"slice_name": self.name, "cells_start": self.cells_start, "cells_end": self.cells_end, **more}

    def _below_bucket(self, k: int) -> int:
        """How many of W last less than bucket number k's (of self.buckets) shortest duration."""
        low = dur_bucket_low(self.buckets[k][0])
        return self._before[k] - bisect.bisect_left(self.removed, low) + bisect.bisect_left(self.extras, low)

    def window(self, base: int, size: int) -> list[int]:
        size = min(size, self.wholly_inside - base)
        if size <= 0 or base < 0:
            return []
        # The last bucket with at most `base` of W below its start: W's rank `base` lies at or after that start.
        k, rank, lower = 0, 0, 0
        if self.buckets:
            lo, hi = 0, len(self.buckets) - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if self._below_bucket(mid) <= base:
                    lo = mid
                else:
                    hi = mid - 1
            k = lo
            lower = dur_bucket_low(self.buckets[k][0])
            rank = self._below_bucket(k)
            if rank > base:  # W's first durations are extras shorter than C's shortest
                lower, rank = 0, 0
        removed = self.removed[bisect.bisect_left(self.removed, lower) :]
        limit = base - rank + size + len(removed)
        read = (
            []
            if not self.buckets
            else [
                dur
                for (dur,) in self.run.rows(
                    f"the durations wholly inside the range's whole cells from rank {base} (less those ending after it)",
                    "SELECT s.dur FROM slice s WHERE s.name = :slice_name AND s.dur >= :lower\n"
                    "  AND s.ts >= :cells_start AND s.ts < :cells_end\nORDER BY s.dur LIMIT :limit",
                    self._c_params(lower=lower, limit=limit),
                )
            ]
        )
        # Read up to `limit` only: past the last duration read, C's are unknown, so the extras there wait too.
        top = read[-1] if len(read) == limit else MAX_INT64
        skip = Counter(removed)
        kept = []
        for dur in read:
            if skip.get(dur):
                skip[dur] -= 1
            else:
                kept.append(dur)
        extras = self.extras[bisect.bisect_left(self.extras, lower) : bisect.bisect_right(self.extras, top)]
        return sorted(kept + extras)[base - rank : base - rank + size]

    def below(self, xs: list[float]) -> list[int]:
        buckets = [b for b, _ in self.buckets]
        # Per x, C's instances below it: its buckets wholly below x from the table, and in the bucket of the
        # longest duration below x those below x, read (unless the bucket lies wholly below x too).
        whole: list[int] = []
        reads: dict[int, tuple[int, float]] = {}  # i -> (that bucket's shortest duration, x)
        for i, x in enumerate(xs):
            longest_below = math.ceil(x) - 1
            k = bisect.bisect_right(buckets, dur_bucket(longest_below)) - 1 if longest_below >= 0 else -1
            if k < 0:
                whole.append(0)
            elif buckets[k] < dur_bucket(longest_below) or dur_bucket_low(buckets[k] + 1) <= x:
                whole.append(self._before[k + 1])
            else:
                whole.append(self._before[k])
                reads[i] = (dur_bucket_low(buckets[k]), x)
        counted: dict[int, int] = {}
        if reads:
            values = ", ".join(f"({i}, :low_{i}, :x_{i})" for i in reads)
            rows = self.run.query(
                "instances of the range's whole cells in the duration bucket of each bucket edge, below it",
                f"""WITH edge(i, low, x) AS (VALUES {values})
SELECT i, (SELECT count(*) FROM slice s WHERE s.name = :slice_name AND s.dur >= e.low AND s.dur < e.x
           AND s.ts >= :cells_start AND s.ts < :cells_end) AS n
FROM edge e ORDER BY i""",
                self._c_params(
                    **{f"low_{i}": low for i, (low, _) in reads.items()}, **{f"x_{i}": x for i, (_, x) in reads.items()}
                ),
            )
            counted = {r["i"]: r["n"] for r in rows}
        return [
            whole[i] + counted.get(i, 0) - bisect.bisect_left(self.removed, x) + bisect.bisect_left(self.extras, x)
            for i, x in enumerate(xs)
        ]


def range_dur_cells(run: ReportRun, sn: SliceName) -> RangeDurCells | None:
    """The RangeDurCells of `sn` in the run's time range, when only that range narrows the scope, the name has
    rows in report_slice_name_dur_cell, the range holds a whole cell of it and its edge parts are short (else
    None)."""
    if not only_time_narrows(run) or not run.has_tables("report_slice_name_dur_cell"):
        return None
    params: dict[str, Any] = {"slice_name": sn.name}
    if not run.value(
        "whether the name's durations are counted per cell",
        "SELECT EXISTS (SELECT 1 FROM report_slice_name_dur_cell WHERE name = :slice_name)",
        params,
    ):
        return None
    cell_dur = kept_cell_width(run, "name")  # its cells are report_slice_name_cell's
    start, end = run.time_range()
    t0, t1 = run.trace.start, run.trace.end
    if not cell_dur or end <= t0 or start >= t1:
        return None
    first = max(-((t0 - start) // cell_dur), 0)  # the first cell starting at or after start
    # The first cell not ending by end; past the trace's end, every cell (each slice starts by then).
    end_cell = (end - t0) // cell_dur if end <= t1 else (t1 - t0) // cell_dur + 1
    if end_cell <= first:
        return None
    cells_start, cells_end = t0 + first * cell_dur, t0 + end_cell * cell_dur
    longest_dur = longest_finished(run, sn.name)
    # The parts read from the instances: the name's reach before the range to the cells, and from the cells' end
    # (or the longest's reach before the range's end) to the range's end.
    params.update(
        before_start=start - longest_dur,
        before_end=cells_start,
        after_start=max(cells_start, min(cells_end, end - longest_dur)),
        after_end=end,
    )
    edge_ns = (params["before_end"] - params["before_start"]) + (params["after_end"] - params["after_start"])
    if trace_slices(run) * edge_ns / max(run.trace.dur, 1) > DUR_CELL_EDGE_SLICES:
        return None
    rows = run.query(
        "the instances at the range's edges, and the unfinished ones",
        f"""SELECT s.id, s.ts, s.dur FROM slice s
WHERE {EVERY_TRACK} AND s.ts >= :before_start AND s.ts < :before_end AND +s.name = :slice_name
UNION
SELECT s.id, s.ts, s.dur FROM slice s
WHERE {EVERY_TRACK} AND s.ts >= :after_start AND s.ts < :after_end AND +s.name = :slice_name
UNION
SELECT s.id, s.ts, s.dur FROM slice s WHERE s.name = :slice_name AND s.dur < 0""",
        params,
    )
    removed, extras, edges, unfinished = [], [], [], 0
    for slice_id, ts, dur in rows:
        stop = t1 if dur < 0 else ts + dur
        if ts >= end or (stop < start if dur >= 0 else t1 < start):  # no part in the range (IN_RANGE)
            continue
        in_cells = dur >= 0 and cells_start <= ts < cells_end
        if dur >= 0 and ts >= start and stop <= end:  # wholly inside
            if not in_cells:
                extras.append(dur)
            continue
        edges.append((slice_id, max(min(stop, end) - max(ts, start), 0)))
        unfinished += dur < 0
        if in_cells:
            removed.append(dur)
    buckets = run.query(
        "finished instances of the name starting in the range's whole cells, per duration bucket",
        """SELECT bucket, sum(count) AS n, sum(total_dur) AS total FROM report_slice_name_dur_cell
WHERE name = :slice_name AND cell >= :first_cell AND cell < :end_cell
GROUP BY bucket ORDER BY bucket""",
        {**params, "first_cell": first, "end_cell": end_cell},
    )
    removed.sort()
    extras.sort()
    wholly_inside = sum(r["n"] for r in buckets) - len(removed) + len(extras)
    return RangeDurCells(
        run,
        sn.name,
        count=wholly_inside + len(edges),
        total=sum(r["total"] for r in buckets) - sum(removed) + sum(extras) + sum(d for _, d in edges),
        wholly_inside=wholly_inside,
        edges=edges,
        unfinished=unfinished,
        cells_start=cells_start,
        cells_end=cells_end,
        buckets=[(r["bucket"], r["n"]) for r in buckets],
        removed=removed,
        extras=extras,
    )


def range_known(run: ReportRun, sn: SliceName) -> RangeInstances | None:
    """`sn`'s instances in the run's time range known without reading them all: through the few outside the
    range (RangeComplement), or through report_slice_name_dur_cell (RangeDurCells); None where neither applies."""
    return range_complement(run, sn) or range_dur_cells(run, sn)


def stats_in_scope(
    run: ReportRun,
    outs: dict[str, pb.DurationStats],
    w: Where,
    known: dict[str, tuple[int, int, int]],
    in_scope: int | None = None,
    value: str | None = None,
) -> None:
    """Duration stats of several names in one pass over the slices in scope (`w` without a name term):
    each name's durations (or `value`s, an expression of slice s) ranked, and only the ranks the
    percentiles need kept.

    Given `in_scope` (the slices in scope, all read to find the names'), names get their minimum and
    percentiles (in the order given) only while their instances total at most PERCENTILE_BUDGET, and
    none when the scope holds more than SCOPE_BUDGET slices: ranking costs a sort of every instance
    (the rest is known). A footnote names the others and links to their histogram, which has them."""
    if in_scope is not None:
        budget = PERCENTILE_BUDGET if in_scope <= SCOPE_BUDGET else 0
        ranked_names = {}
        for name, (n, _, _) in known.items():
            if n <= budget:
                ranked_names[name] = known[name]
                budget -= n
        skipped = [name for name, (n, _, _) in known.items() if n and name not in ranked_names]
        for name in skipped:
            _fill_stats(outs[name], known[name], {}, with_ranks=False)
        if skipped:
            run.footnote(
                f"Minimum and percentiles are left out for {fmt.plural(len(skipped), 'name')} "
                f"with too many instances in scope to rank on this page "
                f"({', '.join(skipped[:3])}{', ...' if len(skipped) > 3 else ''}); the histogram of one "
                "name has them",
                view_link(run, "slices", "histogram", name=glob_escape(skipped[0])),
            )
        known = ranked_names
    wanted = [
        [name, rank]
        for name, (n, _, _) in known.items()
        if n
        for rank in sorted({0, *(percentile_index(n, p) for p in PERCENTILES)})
    ]
    if not wanted:
        return
    # +s.name: reach the names through the scope's tracks or time range, not the whole name index.
    names_term = "\n    AND +s.name IN (SELECT value FROM json_each(:names))"
    rows = run.query(
        "minimum and percentiles (nearest rank) of each name in scope",
        f"""WITH in_scope AS MATERIALIZED (
  SELECT s.name, {value or scope_dur(run)} AS dur
  FROM slice s
  {w.sql().replace(chr(10), chr(10) + "  ")}{names_term}
),
ranked AS (
  SELECT name, dur, row_number() OVER (PARTITION BY name ORDER BY dur) - 1 AS rank FROM in_scope
),
wanted AS MATERIALIZED (
  SELECT json_extract(value, '$[0]') AS name, json_extract(value, '$[1]') AS rank FROM json_each(:wanted)
)
SELECT r.name, r.rank, r.dur FROM ranked r
WHERE r.rank IN (SELECT rank FROM wanted)
  AND EXISTS (SELECT 1 FROM wanted w WHERE w.name = r.name AND w.rank = r.rank)""",
        {**w.params, "names": json.dumps(list(known)), "wanted": json.dumps(wanted)},
    )
    by_name: dict[str, dict[int, int]] = {}
    for r in rows:
        by_name.setdefault(r["name"], {})[r["rank"]] = r["dur"]
    for name, (n, _, _) in known.items():
        if n:
            _fill_stats(outs[name], known[name], by_name.get(name, {}))


def _fill_stats(
    out: pb.DurationStats, known: tuple[int, int, int], at_rank: Mapping[int, int | None], with_ranks: bool = True
) -> None:
    n, total, longest = known
    out.count = n
    out.total = total
    out.max = max(longest or 0, 0)
    out.avg = total // n
    if with_ranks:
        out.min = at_rank.get(0) or 0
        out.p50, out.p95, out.p99 = (at_rank.get(percentile_index(n, p)) or 0 for p in PERCENTILES)


def owner_link_params(inst: pb.SliceInstance) -> dict[str, str | None]:
    """Flags that narrow to an instance's owner: its thread, else its process, else its track."""
    if inst.tid or inst.thread:
        return {"tid": str(inst.tid)}
    if inst.pid or inst.process:
        return {"pid": str(inst.pid)}
    return {"track": glob_escape(inst.track)} if inst.track else {}


def ts_window(run: ReportRun) -> tuple[int, int]:
    """The instants `ts` stands for. Report output prints offsets in s and ms to the microsecond
    (953.371ms), so such an offset covers the microsecond around it; us, ns and raw ns are exact."""
    at = run.ts()
    value = run.scope.ts
    if value is not None and value.relative and not value.text.rstrip().endswith(("us", "µs", "ns")):
        return at - 500, at + 500
    return at, at


def bucket_range(run: ReportRun) -> tuple[int, int, int, int]:
    """(range start, range end, bucket count, bucket duration) for a timeline: at most `buckets`
    buckets of a round duration (1, 2 or 5 x 10^k ns) from the range start; the last one ends with the range."""
    start, end = run.time_range()
    span = max(end - start, 1)
    bucket_dur = nice_ceil(span / run.scope.buckets)
    return start, end, -(-span // bucket_dur), bucket_dur


def grid_width(run: ReportRun, width: str) -> str:
    """report_grid's column `width` of a cell table, or cell_dur in a database from before that column existed
    (its cells were cell_dur wide)."""
    return width if run.has_columns("report_grid", width) else "cell_dur"


def cells_per_bucket(run: ReportRun, bucket_dur: int, width: str = "cell_dur") -> int:
    """How many cells of the grid precomputed at import (report_grid's `width`) make one timeline bucket: the
    whole trace in buckets of whole cells; 0 when the buckets are not (a time range, a width the grid does not
    divide) or min_duration leaves instances out."""
    if run.scope.time is not None or run.scope.min_duration is not None:
        return 0
    width = grid_width(run, width)
    cell = run.value("the grid of the per-cell aggregates", f"SELECT {width} FROM report_grid") or 0
    return bucket_dur // cell if cell and bucket_dur % cell == 0 else 0


def nice_ceil(value: float) -> int:
    """The smallest 1, 2, 2.5 or 5 x 10^k (ns, at least 1) not below value."""
    if value <= 1:
        return 1
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * exp >= value and float(step * exp).is_integer():
            return int(step * exp)
    return int(10 * exp)


NAME_LIST_LIMIT = 50
PERCENTILES = REPORT_PERCENTILES  # report_slice_name_percentile's
# The slices table in a narrowed scope ranks at most this many instances for the minimum and percentiles
# of its names, and none in a scope of more than SCOPE_BUDGET slices: ranking reads the whole scope again
# (about 40 ms for 100,000 slices when idle, several times that under load; the histogram of a name has them).
PERCENTILE_BUDGET = 20_000
SCOPE_BUDGET = 50_000
# Durations spread over more than this factor get log-spaced histogram buckets.
LOG_SCALE_SPREAD = 100
DOMINANT = 3


def stats_table(title: str, stats: pb.DurationStats) -> Table:
    cells = [count_cell(stats.count)] + [
        duration_cell(v) for v in (stats.total, stats.min, stats.avg, stats.p50, stats.p95, stats.p99, stats.max)
    ]
    return Table(
        title,
        ("Count", "Total", "Min", "Avg", "p50", "p95", "p99", "Max"),
        [cells] if stats.count else [],
        empty="(no instances in scope)",
    )


def groups_table(title: str, dimension: str, groups: Iterable[pb.GroupStats], ranked: bool = True) -> Table:
    """Duration stats per value of a dimension: one row per value, its label first; `ranked`: False when the
    minimum and percentiles were left out ("-")."""
    rows = [
        [Cell(g.label), count_cell(g.stats.count), duration_cell(g.stats.total)]
        + [duration_cell(g.stats.min) if ranked else LEFT_OUT, duration_cell(g.stats.avg)]
        + [duration_cell(v) if ranked else LEFT_OUT for v in (g.stats.p50, g.stats.p95, g.stats.p99)]
        + [duration_cell(g.stats.max)]
        for g in groups
    ]
    headers = (dimension.capitalize(), "Count", "Total", "Min", "Avg", "p50", "p95", "p99", "Max")
    return Table(title, headers, rows, empty="(no instances in scope)")


def inspect_link(run: ReportRun, inst: pb.SliceInstance) -> Link:
    """slices inspect narrowed to one instance: its name, an instant inside it and its owner (in place of
    the report's owner flags)."""
    changes: dict[str, str | None] = {flag: None for flag in TRACK_FLAGS}
    changes.update(owner_link_params(inst))
    return view_link(run, "slices", "inspect", name=inst.name, ts=run.offset(inst.ts), **changes)


def instance_track_title(inst: pb.SliceInstance) -> str:
    """The instance's track as the tracks pages title it (an unnamed thread track by its thread's name)."""
    return data.track_title(inst.track, inst.thread, inst.process, None)


def instance_owner_cells(run: ReportRun, inst: pb.SliceInstance) -> tuple[Cell, Cell, Cell]:
    """The instance's thread, process and track, each linking its details page."""
    thread = f"{inst.thread or '?'} [{inst.tid}]" if inst.tid or inst.thread else "-"
    process = f"{inst.process or '?'} [{inst.pid}]" if inst.pid or inst.process else "-"
    return (
        Cell(
            thread,
            href=run.linker.details("thread", inst.utid) if inst.HasField("utid") else None,
            subtitle=inst.subtitle if thread != "-" else "",
        ),
        Cell(
            process,
            href=run.linker.details("process", inst.upid) if inst.HasField("upid") else None,
            subtitle=inst.subtitle if process != "-" else "",
        ),
        Cell(
            instance_track_title(inst),
            title=f"track id {inst.track_id}",
            href=run.linker.details("track", inst.track_id),
            subtitle=inst.subtitle,
        ),
    )


def instance_dur(inst: pb.SliceInstance) -> str:
    """An instance's own duration; an unfinished one (dur -1) says so."""
    return fmt.duration(inst.dur) if inst.dur >= 0 else "(unfinished)"


def instance_cells(run: ReportRun, inst: pb.SliceInstance) -> list[Cell]:
    thread, process, track = instance_owner_cells(run, inst)
    return [
        Cell(
            run.offset(inst.ts),
            inspect_link(run, inst),
            title=f"ts {inst.ts}",
            href=run.linker.details("slice", inst.id),
        ),
        Cell(instance_dur(inst), title=f"{inst.dur} ns"),
        thread,
        process,
        track,
        Cell(str(inst.depth)),
    ]


# -- histogram --------------------------------------------------------------------------------


# What a histogram instance counts for: its duration in scope, or with :measure = 'self' that less its direct
# children's (each counted the same way).
_CANNED_MEASURE = (
    f"CASE WHEN :measure = 'self' THEN {self_value(CANNED_DUR, wholly_inside('range_start', 'range_end'))} "
    f"ELSE {CANNED_DUR} END"
)


def _ranked_bucket_counts_sql(unfinished_bucket: str, unfinished_where: str, buckets: int, log_scale: bool) -> str:
    """The histogram's counts per bucket for a name with rows in report_slice_name_dur_rank, over the whole
    trace: how many finished instances last less than each edge is the nearest sample below it (how many last
    at most that long) plus the index entries between the two, at most REPORT_RANK_STEP; a bucket is the
    difference of its two edges' figures. Bucket 0 starts at 0 (linear) or 1 ns (log: zero has bucket -1);
    the last one ends with the name's finished instances. Unfinished instances (dur -1) count as in
    report_slice_name, by the time they last to the end of the trace."""
    lower = "1" if log_scale else "0"
    edges = ", ".join([f"(0, {lower})", *(f"({i}, :edge_{i})" for i in range(1, buckets)), f"({buckets}, NULL)"])
    return f"""WITH edge(i, x) AS (VALUES {edges}),
below(i, n) AS (
  SELECT i, CASE WHEN x IS NULL THEN (SELECT count - unfinished FROM report_slice_name WHERE name = :slice_name)
    ELSE {_finished_below("e.x")} END
  FROM edge e
)
SELECT bucket, sum(n) AS count FROM (
  SELECT * FROM (SELECT i - 1 AS bucket, n - lag(n) OVER (ORDER BY i) AS n FROM below) WHERE bucket >= 0
  UNION ALL
  SELECT -1, n FROM below WHERE i = 0 AND {int(log_scale)}
  UNION ALL
  SELECT {unfinished_bucket} AS bucket, count(*)
  FROM slice s
  {unfinished_where}
  GROUP BY bucket
)
GROUP BY bucket"""


class SlicesHistogramView(View):
    noun = "slices"
    name = "histogram"
    title = "Slice duration histogram"
    description = (
        "The distribution of one slice name's durations: instance counts per duration bucket, "
        "log-spaced when the durations span more than two orders of magnitude (the scale is "
        "labelled), with p50/p95/p99. name must match exactly one slice name; unfinished slices "
        "last to the end of the trace (or of the range); with time, each instance counts its part inside the range. "
        "measure=self: the distribution of self times (each instance's duration less its direct children's)."
    )
    result_field = "slices_histogram"
    flags = SCOPE_FLAGS | {"buckets", "measure", "group_by"}
    required = ("name",)
    canned_sql = f"""WITH RECURSIVE {CANNED_RANGE},
{CANNED_NICE},
instance AS MATERIALIZED (
  {canned_instances(_CANNED_MEASURE + " AS dur")}
),
bounds AS (
  SELECT min(dur) AS low, max(dur) AS high, min(CASE WHEN dur > 0 THEN dur END) AS positive,
         coalesce(CAST(nullif(:buckets, '') AS INTEGER), 20) AS buckets
  FROM instance
  HAVING count(*) > 0
),
level(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM level WHERE j < 18),
ladder(j, v) AS (
  -- Round log-scale edges: 1, 2, 5 x 10^k at level 0, every j-th power of ten at level j.
  SELECT 0, p.v * m.c FROM power p, (SELECT 1 AS c UNION ALL SELECT 2 UNION ALL SELECT 5) m
  UNION ALL
  SELECT l.j, p.v FROM power p, level l WHERE l.j > 0 AND (length(p.v) - 1) % l.j = 0
),
rung AS (
  SELECT l.j, (SELECT max(d.v) FROM ladder d WHERE d.j = l.j AND d.v <= b.positive) AS lo,
         coalesce((SELECT min(d.v) FROM ladder d WHERE d.j = l.j AND d.v >= b.high), b.high) AS hi
  FROM level l, bounds b
),
log_rung AS (
  -- The finest level whose edges from the shortest non-zero duration to the longest make at most that
  -- many buckets.
  SELECT r.* FROM rung r, bounds b
  WHERE (SELECT count(*) FROM ladder d WHERE d.j = r.j AND d.v BETWEEN r.lo AND r.hi) - 1 <= b.buckets
     OR (SELECT count(*) FROM ladder d WHERE d.j = r.j AND d.v BETWEEN r.lo AND r.hi) <= 2
  ORDER BY r.j
  LIMIT 1
),
edge(i, v) AS (
  SELECT row_number() OVER (ORDER BY d.v) - 1, d.v
  FROM ladder d, log_rung g WHERE d.j = g.j AND d.v BETWEEN g.lo AND g.hi
),
layout AS (
  -- Log-spaced buckets with round edges (above) when the durations span more than 100x (zero durations
  -- get a bucket of their own, numbered -1); else linear ones, the narrowest 1, 2, 2.5 or 5 x 10^k wide
  -- that cover them in at most that many buckets from a multiple of the width.
  SELECT b.*, coalesce(b.positive > 0 AND b.high * 1.0 / b.positive > 100, 0) AS log_scale,
         w.width, b.low / w.width * w.width AS start
  FROM bounds b, (
    SELECT min(n.v) AS width FROM nice n, bounds
    WHERE n.v >= (high - low) * 1.0 / buckets AND (high - low / n.v * n.v) / n.v + 1 <= buckets
  ) w
),
shape AS (
  SELECT *, CASE WHEN log_scale THEN (SELECT count(*) FROM edge) - 1 ELSE (high - start) / width + 1 END AS n
  FROM layout
),
counts AS (
  SELECT CASE WHEN log_scale AND dur <= 0 THEN -1
              WHEN log_scale THEN min(n - 1, (SELECT count(*) FROM edge e WHERE e.v <= dur) - 1)
              ELSE min(n - 1, (dur - start) / width) END AS bucket,
         count(*) AS count
  FROM instance, shape
  GROUP BY bucket
),
series(i) AS (SELECT -1 UNION ALL SELECT i + 1 FROM series, shape WHERE i + 1 < n)
SELECT i AS bucket, CASE WHEN log_scale THEN 'log' ELSE 'linear' END AS scale,
       CASE WHEN i = -1 THEN 0 WHEN log_scale THEN (SELECT e.v FROM edge e WHERE e.i = series.i)
            ELSE start + width * i END AS low,
       CASE WHEN i = -1 THEN 0
            WHEN log_scale THEN (SELECT e.v FROM edge e WHERE e.i = series.i + 1)
            WHEN high = low THEN low
            WHEN i = n - 1 THEN max(start + width * n, high)
            ELSE start + width * (i + 1) END AS high,
       coalesce(c.count, 0) AS count
FROM series, shape
LEFT JOIN counts c ON c.bucket = series.i
WHERE i >= 0 OR c.count > 0
ORDER BY i"""

    def compute(self, run: ReportRun, out: pb.SlicesHistogram) -> None:
        sn = resolve_name(run, self)
        name = out.name = sn.name
        w = name_where(run, sn)
        # The duration each instance counts for: under `time` its part inside the range; an unfinished one's
        # to the end of the range or trace. With measure=self, that less its direct children's.
        out.measure = run.scope.measure
        by_self = out.measure == "self"
        dur = scope_self(run) if by_self else f"({scope_dur(run)})"
        ranked = is_narrowed(run) or by_self  # nothing precomputed applies
        in_range = None if by_self else range_known(run, sn)
        once = None if in_range is not None else InstancesReadOnce.of(run, sn, w, dur)
        if in_range is not None:
            known = (in_range.count, in_range.total, in_range.longest())
            positive = in_range.shortest_positive()
            unfinished = in_range.unfinished
        elif once is not None:
            known = (once.count, once.total, once.longest)
            positive = once.shortest_positive()
            unfinished = once.unfinished
        elif ranked:
            agg = run.query(
                "count, total, longest and shortest non-zero",
                f"""SELECT count(*) AS n,
       coalesce(sum({dur}), 0) AS total, max({dur}) AS longest,
       min(CASE WHEN {dur} > 0 THEN {dur} END) AS shortest_positive, sum(s.dur < 0) AS unfinished
FROM slice s
{w.sql()}""",
                w.params,
            )[0]
            known = (agg["n"], agg["total"], agg["longest"])
            positive = agg["shortest_positive"]
            unfinished = agg["unfinished"] or 0
        else:
            known = (sn.count, sn.total_dur, sn.max_dur)
            # The (name, dur) index gives the shortest finished one (ORDER BY ... LIMIT 1: inside a UNION, SQLite
            # would compute min() by reading them all); the unfinished ones (dur -1) are few.
            positive = run.value(
                "the shortest non-zero duration",
                f"""SELECT min(d) FROM (
  SELECT * FROM (SELECT s.dur AS d FROM slice s {w.sql()} AND s.dur > 0 ORDER BY s.dur LIMIT 1)
  UNION ALL
  SELECT min({dur}) FROM slice s
  {w.sql()} AND s.dur < 0
) WHERE d > 0""",
                w.params,
            )
            unfinished = sn.unfinished
        if once is not None:
            if once.count:
                _fill_stats(out.stats, known, once.at_ranks())
        else:
            # Durations over the whole trace: their percentiles are precomputed (a self time never is).
            duration_stats(run, out.stats, w, name, known, ranked, value=dur if by_self else None, in_range=in_range)
        group = grouping(run, self)
        if group is not None:
            out.group_by = group.name
            per_value = None
            if known[0] > GROUP_RANKING_BUDGET and run.scope.min_duration is None and not by_self:
                # Beyond the budget, whatever is kept: over the whole trace the per track aggregates, over a range
                # the cells (none in small traces: those rank).
                whole = run.scope.time is None
                per_value = _group_totals(run, sn, group) if whole else _group_range_totals(run, sn, group)
            if per_value is not None:
                out.group_percentiles_left_out = True
                first = min((v for _, v in per_value if v is not None), key=group.rank, default=None)
                one = dim_params(run, group.name, first) if first is not None else None
                run.footnote(
                    f"Minimum and percentiles per {group.name} are left out: {known[0]:,} instances in scope (ranking "
                    f"stops at {GROUP_RANKING_BUDGET:,}); the histogram of one {group.name} has them",
                    view_link(run, "slices", "histogram", group_by=None, dim=one),
                )
            else:
                per_value = group_stats(
                    run,
                    group,
                    f"count, total and percentiles per {group.name} value",
                    f"SELECT s.track_id, '' AS name, {dur} AS d FROM slice s\n  {w.sql()}",
                    w.params,
                )
            for (_, value), stats in sorted(per_value.items(), key=lambda kv: group.rank(kv[0][1])):
                out.groups.add(value=value or "", label=group.label(value), stats=stats)
        if not out.stats.count:
            out.scale = "linear"
            return
        low, high = out.stats.min, out.stats.max
        buckets = run.scope.buckets
        if positive and high / positive > LOG_SCALE_SPREAD:
            out.scale = "log"
            edges = fmt.log_edges(positive, high, buckets)
        else:
            out.scale = "linear"
            edges = fmt.linear_edges(low, high, buckets)
        buckets = len(edges) - 1
        # A value's bucket by comparing it with the edges (arithmetic on a width such as 0.2 ns would be
        # inexact); log scales give zero a bucket of its own (-1).
        params = {f"edge_{i}": e for i, e in enumerate(edges[1:-1], 1)}
        whens = ("WHEN {d} <= 0 THEN -1 " if out.scale == "log" else "") + "".join(
            f"WHEN {{d}} < :edge_{i} THEN {i - 1} " for i in range(1, buckets)
        )
        index = f"CASE {whens}ELSE {buckets - 1} END" if whens else "0"
        if in_range is not None:
            counts = in_range.bucket_counts(edges, out.scale == "log")
        elif once is not None:
            counts = once.bucket_counts(edges, out.scale == "log")
        else:
            sql = self._bucket_sql(run, sn, w, dur, index, buckets, out.scale == "log", ranked, by_self)
            counts = {r["bucket"]: r["count"] for r in run.query("instances per bucket", sql, {**w.params, **params})}
        if counts.get(-1):  # zero-length instances (log scale); the range counts give a row even when none
            out.buckets.add(low=0, high=0, count=counts[-1])
        for i in range(buckets):
            out.buckets.add(low=edges[i], high=edges[i + 1], count=counts.get(i, 0))
        if once is not None:
            top_ids = ":longest_id"
        elif by_self:
            top_ids = f"SELECT s.id FROM slice s\n{w.sql()}\nORDER BY {dur} DESC, s.id DESC LIMIT :top"
        else:
            top_ids = longest_first(run, w, in_range)
        longest = run.query(
            "the instance with the most self time" if by_self else "the longest instance",
            f"""SELECT {INSTANCE_COLUMNS}
{SLICE_FROM}
WHERE s.id IN ({top_ids})""",
            {
                **w.params,
                "top": 1,
                **(in_range.params if in_range else {}),
                **({"longest_id": once.longest_id} if once else {}),
            },
        )
        clipped_footnote(run)
        unfinished_footnote(run, unfinished, view_link(run, "slices", "inspect", name=name))
        if by_self:
            run.footnote(
                "Self time: each instance's duration less its direct children's (of any name); see the durations",
                run.link(run.noun, run.view, measure=None),
            )
        else:
            run.next_step(f"{name} by self time (less its children)", run.link(run.noun, run.view, measure="self"))
        run.next_step(f"{name} over time", view_link(run, "slices", "timeline", name=name))
        if longest:
            inst = pb.SliceInstance()
            fill_instance(inst, longest[0])
            what = f"The {name} with the most self time" if by_self else f"The longest {name}"
            run.next_step(f"{what} ({instance_dur(inst)})", inspect_link(run, inst))

    @staticmethod
    def _bucket_sql(
        run: ReportRun,
        sn: SliceName,
        w: Where,
        dur: str,
        index: str,
        buckets: int,
        log_scale: bool,
        ranked: bool,
        by_self: bool,
    ) -> str:
        """SQL: the instances under `w` per bucket (`index`, a CASE over {d}, the duration `dur` counts)."""
        unfinished_w = Where(list(w.terms), dict(w.params))
        unfinished_w.add("s.dur < 0")
        if not ranked and sn.count - sn.unfinished >= REPORT_CELL_MIN_COUNT:  # the whole trace, a frequent name
            return _ranked_bucket_counts_sql(
                index.format(d=dur), unfinished_w.sql().replace(chr(10), chr(10) + "  "), buckets, log_scale
            )
        if run.scope.time is None and not by_self and w.driver == "name":
            # Finished instances by dur alone: each bucket's count is a range of the (name, dur) index, counted
            # without reading a row or sorting; the few unfinished ones (dur -1) by the time they count for,
            # which needs their start. (When an owner's tracks drive the scan, each range would read all their
            # slices again: one pass below.)
            # One lower and one upper bound per range (with two lower bounds SQLite seeks to the wrong one).
            # Bucket 0 starts at the shortest (linear) or above zero (log, where zero has a bucket of its own).
            ranges = [(-1, ["s.dur = 0"])] if log_scale else []
            for i in range(buckets):
                terms = [f"s.dur >= :edge_{i}" if i else ("s.dur > 0" if log_scale else "s.dur >= 0")]
                if i < buckets - 1:
                    terms.append(f"s.dur < :edge_{i + 1}")
                ranges.append((i, terms))
            finished = "\n  UNION ALL\n".join(
                f"  SELECT {i} AS bucket, count(*) AS n\n  FROM slice s\n  {w.sql().replace(chr(10), chr(10) + '  ')}"
                + "".join(f"\n    AND {t}" for t in terms)
                for i, terms in ranges
            )
            return f"""SELECT bucket, sum(n) AS count FROM (
{finished}
  UNION ALL
  SELECT {index.format(d=dur)} AS bucket, count(*)
  FROM slice s
  {unfinished_w.sql().replace(chr(10), chr(10) + "  ")}
  GROUP BY bucket
)
GROUP BY bucket"""
        # Each instance's duration computed once (LIMIT: the subquery is not flattened into each WHEN).
        return f"""SELECT {index.format(d="d")} AS bucket,
       count(*) AS count
FROM (SELECT {dur} AS d FROM slice s
{w.sql()}
LIMIT -1)
GROUP BY bucket"""

    def charts(self, msg: pb.SlicesHistogram, run: ReportRun) -> list[Chart]:
        total = max(msg.stats.count, 1)
        bars = []
        for b in msg.buckets:
            if b.low == b.high:
                label = fmt.duration(b.low) if b.low else "0 (instant)"
            else:
                label = f"{fmt.duration(b.low)}-{fmt.duration(b.high)}"
            bars.append(Bar(label, b.count, f"{b.count} ({100.0 * b.count / total:.1f}%)" if b.count else ""))
        spaced = [b for b in msg.buckets if b.high > 0]
        if msg.scale == "log" and spaced and spaced[0].low > 0:
            buckets = "log-scale buckets with round edges"
        else:
            width = spaced[0].high - spaced[0].low if spaced else 0
            buckets = f"linear buckets of {fmt.duration(width)}" if width else "one bucket (all equal)"
        return [Chart(f"{msg.name} {measure_label(msg)} in {buckets}", "linear", "bar length: instances", bars)]

    def tables(self, msg: pb.SlicesHistogram, run: ReportRun) -> list[Table]:
        out = [stats_table(f"{msg.name} {measure_label(msg)}", msg.stats)]
        if msg.group_by:
            out.append(
                groups_table(
                    f"{msg.name} {measure_label(msg)} per {msg.group_by}",
                    msg.group_by,
                    msg.groups,
                    ranked=not msg.group_percentiles_left_out,
                )
            )
        return out


# The histogram per value of a dimension ranks at most this many instances (1 to 2 us each); beyond, over the
# whole trace, each value's count, total, average and longest come from report_slice_track_name.
GROUP_RANKING_BUDGET = 300_000


def _group_totals(run: ReportRun, sn: SliceName, group: Grouping) -> dict[tuple[str, str | None], pb.DurationStats]:
    """group_stats's figures but the minimum and percentiles, per value of `group`, of the name's instances on the
    owner's tracks over the whole trace: summed from the per track and name aggregates kept at import."""
    w = Where()
    w.add("t.name = :slice_name", slice_name=sn.name)
    owner = owner_tracks(run)
    if owner is not None:
        w.add(f"t.track_id IN {owner.terms[0]}", **owner.params)
    rows = run.query(
        f"count, total and longest per track (kept at import), for each {group.name} value",
        f"SELECT t.track_id, t.count, t.total_dur, t.max_dur FROM report_slice_track_name t\n{w.sql()}",
        w.params,
    )
    values = track_values(run, group, [r["track_id"] for r in rows])
    per_value: dict[tuple[str, str | None], list[int]] = {}
    for r in rows:
        figures = per_value.setdefault(("", values.get(r["track_id"])), [0, 0, 0])
        figures[0] += r["count"]
        figures[1] += r["total_dur"]
        figures[2] = max(figures[2], r["max_dur"])
    return {
        key: pb.DurationStats(count=n, total=total, avg=total // n, max=max(longest, 0))
        for key, (n, total, longest) in per_value.items()
        if n
    }


def _group_range_totals(
    run: ReportRun, sn: SliceName, group: Grouping
) -> dict[tuple[str, str | None], pb.DurationStats] | None:
    """_group_totals over a time range holding whole cells (large traces): each value's count and total from the
    per track (or per process) cells and the range's edges (SlicesTableView._by_cells), its longest part inside
    the range by the (name, dur) index (top_longest); None without such cells."""
    owner = owner_tracks(run)
    cells = cell_split(run, cell_table(owner, group))
    if cells is None:
        return None
    grouped, params = SlicesTableView._by_cells(run, cells, owner, group)
    rows = [
        r
        for r in run.query(f"count and total of the name per {group.name} value in the range's cells", grouped, params)
        if r["name"] == sn.name
    ]
    longest = top_longest(run, owner, group, {(sn.name, r["group_value"]) for r in rows}, every=True)
    return {
        ("", r["group_value"]): pb.DurationStats(
            count=r["count"],
            total=r["total_dur"] or 0,
            avg=(r["total_dur"] or 0) // r["count"],
            max=max(longest.get((sn.name, r["group_value"]), (0, 0))[0], 0),
        )
        for r in rows
    }


def measure_label(msg: pb.SlicesHistogram) -> str:
    return "self times" if msg.measure == "self" else "durations"


# -- timeline ---------------------------------------------------------------------------------


class SlicesTimelineView(View):
    noun = "slices"
    name = "timeline"
    title = "Slice timeline"
    description = (
        "One slice name over time: per bucket of the trace (or time range), the instances that "
        "start in it, the time they cover inside it, and the threads (or processes, tracks) with "
        "the most of that time. name must match exactly one slice name."
    )
    result_field = "slices_timeline"
    flags = SCOPE_FLAGS | {"buckets"}
    required = ("name",)
    canned_sql = f"""-- Per bucket the instances starting in it and the time they cover inside it; the report also
-- names the threads with the most of that time.
WITH RECURSIVE {CANNED_RANGE},
{CANNED_NICE},
layout AS (
  SELECT range_start, range_end, bucket_dur, (max(range_end - range_start, 1) + bucket_dur - 1) / bucket_dur AS n
  FROM (SELECT range_start, range_end,
               (SELECT min(v) FROM nice WHERE v >= max(range_end - range_start, 1) * 1.0
                                                  / coalesce(CAST(nullif(:buckets, '') AS INTEGER), 20)) AS bucket_dur
        FROM range)
),
cells AS (
  -- The whole trace in buckets of whole cells, of names with many slices: the per-cell aggregates.
  SELECT bucket_dur / g.cell_dur AS per_bucket
  FROM layout, report_grid g
  WHERE :time = '' AND :min_duration = '' AND bucket_dur % g.cell_dur = 0
    AND NOT EXISTS (SELECT 1 FROM {_CANNED_NAMES} c
                    WHERE c.name NOT IN (SELECT name FROM report_slice_track_cell))
),
instance AS MATERIALIZED (
  {canned_instances(_CANNED_PIECE_COLUMNS, "layout", unless="cells")}
),
piece(bucket, piece_start, instance_end, first) AS (
  SELECT bucket, piece_start, instance_end, 1 FROM instance, layout
  WHERE instance_end > range_start + (bucket + 1) * bucket_dur
  UNION ALL
  SELECT bucket + 1, range_start + (bucket + 1) * bucket_dur, instance_end, 0 FROM piece, layout
  WHERE bucket < n - 1 AND range_start + (bucket + 1) * bucket_dur < instance_end
),
per_bucket AS (
  SELECT bucket, sum(first) AS count, sum(max(covered, 0)) AS total_dur
  FROM (
    SELECT bucket, 1 AS first, instance_end - piece_start AS covered FROM instance, layout
    WHERE instance_end <= range_start + (bucket + 1) * bucket_dur
    UNION ALL
    SELECT bucket, first, min(instance_end, range_start + (bucket + 1) * bucket_dur) - piece_start
    FROM piece, layout
  )
  GROUP BY bucket
  UNION ALL
  SELECT min(n - 1, c.cell / cells.per_bucket) AS bucket, sum(c.count), sum(c.covered)
  FROM report_slice_track_cell c, cells, layout
  WHERE c.name IN {_CANNED_NAMES}
    AND ({_CANNED_NO_OWNER} OR c.track_id IN {_CANNED_OWNER_TRACKS})
  GROUP BY bucket
),
series(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM series, layout WHERE i + 1 < n)
SELECT i AS bucket, range_start + i * bucket_dur AS start_ts,
       min(range_start + (i + 1) * bucket_dur, range_end) AS end_ts,
       coalesce(b.count, 0) AS count, coalesce(b.total_dur, 0) AS total_dur
FROM series, layout
LEFT JOIN per_bucket b ON b.bucket = series.i
ORDER BY i"""

    def compute(self, run: ReportRun, out: pb.SlicesTimeline) -> None:
        sn = resolve_name(run, self)
        name = out.name = sn.name
        start, end, buckets, bucket_dur = bucket_range(run)
        out.bucket_dur = bucket_dur
        per_bucket_cells = cells_per_bucket(run, bucket_dur) if sn.count >= REPORT_CELL_MIN_COUNT else 0
        rows: Sequence[Any] | None = None
        if per_bucket_cells:
            rows = self._from_cells(run, sn, buckets, per_bucket_cells)
        else:
            rows = _from_running_totals(run, sn, [start + i * bucket_dur for i in range(buckets)] + [end])
        if rows is None:
            rows = self._from_instances(run, sn, start, end, buckets, bucket_dur)
        track_ids = sorted({r["track_id"] for r in rows})
        owners, subtitles = track_owners(run, track_ids), track_subtitles(run, track_ids)
        per_bucket: dict[int, dict[tuple[str, str], int]] = {}
        counts: dict[int, int] = {}
        for r in rows:
            counts[r["bucket"]] = counts.get(r["bucket"], 0) + r["count"]
            # Owners of different ranks (machines) alike but for their subtitle stay apart.
            owner = (owners.get(r["track_id"], "?"), subtitles.get(r["track_id"], ""))
            by_owner = per_bucket.setdefault(r["bucket"], {})
            by_owner[owner] = by_owner.get(owner, 0) + r["covered"]
        for i in range(buckets):
            bucket = out.buckets.add(start_ts=start + i * bucket_dur, end_ts=min(start + (i + 1) * bucket_dur, end))
            by_owner = per_bucket.get(i, {})
            bucket.count = counts.get(i, 0)
            bucket.value = bucket.count
            bucket.total_dur = sum(by_owner.values())
            for (label, subtitle), covered in sorted(by_owner.items(), key=lambda kv: (-kv[1], kv[0]))[:DOMINANT]:
                bucket.dominant.add(name=label, value=covered, subtitle=subtitle)
        busiest = max(out.buckets, key=lambda b: (b.total_dur, b.count), default=None)
        if is_narrowed(run):
            w = name_where(run, sn)
            unfinished = run.value(
                "unfinished instances", f"SELECT count(*) FROM slice s\n{w.sql()} AND s.dur < 0", w.params
            )
        else:
            unfinished = sn.unfinished
        unfinished_footnote(run, unfinished or 0, view_link(run, "slices", "inspect", name=name))
        run.next_step(f"Distribution of {name} durations", view_link(run, "slices", "histogram", name=name))
        if busiest is not None and busiest.total_dur + busiest.count:
            run.next_step(
                f"{name} instances in the busiest bucket",
                view_link(
                    run,
                    "slices",
                    "inspect",
                    name=name,
                    time=f"{run.offset(busiest.start_ts)},{run.offset(busiest.end_ts)}",
                ),
            )

    @staticmethod
    def _from_instances(run: ReportRun, sn: SliceName, start: int, end: int, buckets: int, bucket_dur: int) -> list:
        """(bucket, track_id, count, covered) from the instances: each is clipped to the range; the few that
        cross a bucket edge are split at the edges (recursively), and an instance counts in its first bucket."""
        w = name_where(run, sn)
        return run.query(
            "time covered per bucket and track",
            f"""WITH RECURSIVE instance AS MATERIALIZED (
  SELECT s.track_id, max(s.ts, :range_start) AS piece_start,
         min(CASE WHEN s.dur < 0 THEN (SELECT end_ts FROM trace_bounds) ELSE s.ts + s.dur END, :range_end)
           AS instance_end,
         min(:last_bucket, (max(s.ts, :range_start) - :range_start) / :bucket_dur) AS bucket
  FROM slice s
  {w.sql().replace(chr(10), chr(10) + "  ")}
),
piece(bucket, track_id, piece_start, instance_end, first) AS (
  SELECT bucket, track_id, piece_start, instance_end, 1 FROM instance
  WHERE instance_end > :range_start + (bucket + 1) * :bucket_dur
  UNION ALL
  SELECT bucket + 1, track_id, :range_start + (bucket + 1) * :bucket_dur, instance_end, 0
  FROM piece
  WHERE bucket < :last_bucket AND :range_start + (bucket + 1) * :bucket_dur < instance_end
)
SELECT bucket, track_id, sum(first) AS count, sum(max(covered, 0)) AS covered
FROM (
  SELECT bucket, track_id, 1 AS first, instance_end - piece_start AS covered FROM instance
  WHERE instance_end <= :range_start + (bucket + 1) * :bucket_dur
  UNION ALL
  SELECT bucket, track_id, first, min(instance_end, :range_start + (bucket + 1) * :bucket_dur) - piece_start FROM piece
)
GROUP BY bucket, track_id""",
            {**w.params, "range_start": start, "range_end": end, "bucket_dur": bucket_dur, "last_bucket": buckets - 1},
        )

    @staticmethod
    def _from_cells(run: ReportRun, sn: SliceName, buckets: int, per_bucket_cells: int) -> list:
        """The same from the per track and cell aggregates of a name with many instances: the whole trace in
        buckets of whole cells."""
        w = Where()
        w.add("c.name = :slice_name", slice_name=sn.name)
        owner = owner_tracks(run)
        if owner is not None:
            w.add(f"c.track_id IN {owner.terms[0]}", **owner.params)
        return run.query(
            "time covered per bucket and track (from the per-cell aggregates)",
            f"""SELECT
  min(:last_bucket, c.cell / :cells_per_bucket) AS bucket, c.track_id, sum(c.count) AS count,
  sum(c.covered) AS covered
FROM report_slice_track_cell c
{w.sql()}
GROUP BY bucket, c.track_id""",
            {**w.params, "cells_per_bucket": per_bucket_cells, "last_bucket": buckets - 1},
        )

    def charts(self, msg: pb.SlicesTimeline, run: ReportRun) -> list[Chart]:
        named = dominant_names(msg.buckets)
        bars = []
        for b in msg.buckets:
            note = f"{b.count} started, {fmt.duration(b.total_dur)}" if b.count or b.total_dur else ""
            if b.dominant:
                note += ": " + ", ".join(f"{named(d)} {fmt.duration(d.value)}" for d in b.dominant)
            bars.append(Bar(run.offset(b.start_ts), b.total_dur, note))
        return [
            Chart(
                f"{msg.name} per {fmt.duration(msg.bucket_dur)}",
                "linear",
                "bars: time covered in the bucket; started instances, top threads",
                bars,
            )
        ]


# A timeline over a time range reads the running totals of report_slice_track_name_cell, where kept, instead of
# the instances once the name has about this many instances in the range (read one by one, 1.6 us each)...
TIMELINE_TOTALS_MIN_INSTANCES = 50_000
# ... unless the slices its edges read (every name's on the name's tracks, each part reaching back by the name's
# longest instance) would be more than this share of the instances in the range.
TIMELINE_TOTALS_MAX_EDGE_SHARE = 0.5


def _from_running_totals(run: ReportRun, sn: SliceName, edges: list[int]) -> list[dict] | None:
    """SlicesTimelineView._from_instances's rows for the buckets between `edges` (the range's start, the bucket
    edges, its end), from the per track and name cells' running totals: at each edge, per track, the instances
    started before it and the time they cover before it, as of the cell edge nearest it (two index lookups),
    corrected by the instances between the two (at most half a cell, read through the (track_id, ts) index);
    a bucket's figures are the differences at its edges. The instances open at the range's start count in the
    first bucket, as they do there. None when the cells were not kept, min_duration leaves instances out, or the
    range holds few enough instances to read them."""
    s = run.scope
    table = CELL_TABLES["track"][0]
    start, end = edges[0], edges[-1]
    t0, t1 = run.trace.start, run.trace.end
    share = min(1.0, max(end - start, 0) / max(t1 - t0, 1))
    if s.time is None or s.min_duration is not None or sn.count * share < TIMELINE_TOTALS_MIN_INSTANCES:
        return None
    cell_dur = kept_cell_width(run, "track")
    if not cell_dur or not run.has_columns(table, "cum_covered"):
        return None
    w = Where()
    w.add(f"EXISTS (SELECT 1 FROM {table} c WHERE c.track_id = tr.id AND c.name = :slice_name)", slice_name=sn.name)
    owner = owner_tracks(run)
    if owner is not None:
        w.add(f"tr.id IN {owner.terms[0]}", **owner.params)
    tracks = [
        r[0]
        for r in run.rows("the tracks with instances of the name", f"SELECT tr.id FROM track tr\n{w.sql()}", w.params)
    ]
    cells, parts = _nearest_cell_edges(edges, t0, cell_dur)
    params = {"slice_name": sn.name, "tracks": json.dumps(tracks)}
    reach = run.value("the longest finished instance", "SELECT max(dur) FROM slice WHERE name = :slice_name", params)
    reach = max(reach or 0, 0)
    on_tracks = run.value(
        "slices on those tracks (to weigh reading the edges against reading the instances)",
        "SELECT coalesce(sum(event_count), 0) FROM report_track_stats\n"
        "WHERE track_id IN (SELECT value FROM json_each(:tracks))",
        params,
    )
    edge_time = reach + sum(high - low + reach for low, high, sign in parts if sign)
    if (on_tracks or 0) * edge_time / max(t1 - t0, 1) > sn.count * share * TIMELINE_TOTALS_MAX_EDGE_SHARE:
        return None  # cells wide or instances long against the buckets: the edges would read as much
    started: dict[tuple[int, int], int] = {}  # (edge, track) -> instances started before the edge
    covered: dict[tuple[int, int], int] = {}  # (edge, track) -> the time they cover before it
    for j, track_id, cum_starting, cum_covered in run.rows(
        "the running totals per track at the cell edge nearest each bucket edge",
        f"""SELECT e.key, t.value, coalesce(r.cum_starting, 0), coalesce(r.cum_covered, 0)
FROM json_each(:cells) e
CROSS JOIN json_each(:tracks) t
LEFT JOIN {table} r ON r.rowid = (
  SELECT c.rowid FROM {table} c
  WHERE c.track_id = t.value AND c.name = :slice_name AND c.cell < e.value
  ORDER BY c.cell DESC LIMIT 1)""",
        {**params, "cells": json.dumps(cells)},
    ):
        started[j, track_id] = cum_starting
        covered[j, track_id] = cum_covered
    # The instances in each part, and those open at the range's start (the last window): finished ones through
    # the (track_id, ts) index, reaching back by the name's longest; the unfinished ones (to the trace's end) apart.
    windows = {j: (low, high) for j, (low, high, sign) in enumerate(parts) if sign}
    opening = len(parts)
    windows[opening] = (start, start)
    found = list(
        run.rows(
            "the instances near each bucket edge, and those open at the range's start",
            """SELECT e.key, s.track_id, s.ts, s.ts + s.dur
FROM json_each(:windows) e
CROSS JOIN json_each(:tracks) t
CROSS JOIN slice s
WHERE s.track_id = t.value
  AND s.ts >= json_extract(e.value, '$[0]') - :reach AND s.ts <= json_extract(e.value, '$[1]')
  AND +s.name = :slice_name AND s.dur >= 0 AND s.ts + s.dur >= json_extract(e.value, '$[0]')""",
            {**params, "windows": json.dumps({str(j): window for j, window in windows.items()}), "reach": reach},
        )
    )
    in_scope = set(tracks)
    for track_id, ts in run.rows(
        "the unfinished instances", "SELECT track_id, ts FROM slice WHERE name = :slice_name AND dur < 0", params
    ):
        if track_id in in_scope:
            found.extend((j, track_id, ts, t1) for j, (low, high) in windows.items() if ts <= high and t1 >= low)
    opened: dict[int, int] = {}
    for j, track_id, ts, instance_end in found:
        j = int(j)
        low, high = windows[j]
        if j == opening:  # open at the range's start: started before it, not ended before it
            if ts < start <= instance_end:
                opened[track_id] = opened.get(track_id, 0) + 1
            continue
        sign = parts[j][2]
        if low <= ts < high:
            started[j, track_id] = started.get((j, track_id), 0) + sign
        overlap = min(instance_end, high) - max(ts, low)
        if overlap > 0:
            covered[j, track_id] = covered.get((j, track_id), 0) + sign * overlap
    return _bucket_rows(len(edges) - 1, tracks, started, covered, opened)


def _nearest_cell_edges(edges: list[int], t0: int, cell_dur: int) -> tuple[list[int], list[tuple[int, int, int]]]:
    """Per edge: the cell whose running totals stand for it (those of the cells before it: the cell edge nearest
    the edge), and the part between the two as (low, high, sign): added when the edge lies after that cell edge,
    subtracted when before it, none (sign 0) when on it."""
    cells: list[int] = []
    parts: list[tuple[int, int, int]] = []
    for t in edges:
        cell = (t - t0) // cell_dur
        cell_start = t0 + cell * cell_dur
        if t == cell_start:
            cells.append(cell)
            parts.append((t, t, 0))
        elif t - cell_start <= cell_dur // 2:
            cells.append(cell)
            parts.append((cell_start, t, 1))
        else:
            cells.append(cell + 1)
            parts.append((t, cell_start + cell_dur, -1))
    return cells, parts


def _bucket_rows(
    buckets: int,
    tracks: list[int],
    started: dict[tuple[int, int], int],
    covered: dict[tuple[int, int], int],
    opened: dict[int, int],
) -> list[dict]:
    """(bucket, track_id, count, covered) rows from the instances started and the time covered before each edge
    per track (`opened`: those open at the range's start, counted in the first bucket); none for a track with
    nothing in a bucket."""
    rows = []
    for i in range(buckets):
        for track_id in tracks:
            count = started.get((i + 1, track_id), 0) - started.get((i, track_id), 0)
            if i == 0:
                count += opened.get(track_id, 0)
            time = covered.get((i + 1, track_id), 0) - covered.get((i, track_id), 0)
            if count or time:
                rows.append({"bucket": i, "track_id": track_id, "count": count, "covered": time})
    return rows


def track_owners(run: ReportRun, track_ids: list[int]) -> dict[int, str]:
    """track id -> 'thread [tid]', else 'process [pid]', else the track's name."""
    if not track_ids:
        return {}
    rows = run.query(
        "the threads and processes of those tracks",
        """SELECT tr.id, tr.name AS track,
       th.name AS thread, th.tid, p.name AS process, p.pid
FROM track tr
LEFT JOIN thread th ON th.id = tr.utid
LEFT JOIN process p ON p.id = coalesce(tr.upid, th.upid)
WHERE tr.id IN (SELECT value FROM json_each(:ids))""",
        {"ids": json.dumps(track_ids)},
    )
    out = {}
    for r in rows:
        if r["tid"] is not None:
            out[r["id"]] = f"{r['thread'] or '?'} [{r['tid']}]"
        elif r["pid"] is not None:
            out[r["id"]] = f"{r['process'] or '?'} [{r['pid']}]"
        else:
            out[r["id"]] = r["track"] or f"track {r['id']}"
    return out


# -- inspect ----------------------------------------------------------------------------------


_INSPECT_COLUMNS = f"s.id, s.dur AS raw_dur, {CANNED_DUR} AS dur, CASE WHEN :ts = '' THEN NULL ELSE s.ts END AS ts"


class SlicesInspectView(View):
    noun = "slices"
    name = "inspect"
    title = "Slice instances"
    description = (
        "The instances of one slice name: how many match, their duration percentiles and the longest "
        "ones with where and when they ran. Narrow with ts (the instances starting then, to the "
        "microsecond report output shows, else those running then), thread, tid, time, min_duration; "
        "when exactly one instance matches: its duration, self duration, args, ancestors and "
        "children. name must match exactly one slice name."
    )
    result_field = "slices_inspect"
    uses_top = True
    flags = SCOPE_FLAGS | {"ts"}
    required = ("name",)
    canned_sql = f"""-- The matching instances, longest first (an unfinished one lasts to the end of the trace
-- or range), with how many match. ts picks those starting then (an offset in s or ms covers the
-- microsecond around it), else those running then. The report also shows a single match's args,
-- ancestors and children.
WITH {CANNED_RANGE},
at AS (
  SELECT (SELECT report_time(:ts)) AS ts,
         CASE WHEN trim(:ts) GLOB '*[a-z]' AND trim(:ts) NOT GLOB '*[uµn]s' THEN 500 ELSE 0 END AS half
),
matched AS MATERIALIZED (
  {canned_instances(_INSPECT_COLUMNS, near_ts=True)}
),
starting AS (
  SELECT m.id, m.dur FROM matched m, at WHERE m.ts BETWEEN at.ts - at.half AND at.ts + at.half
),
picked AS (
  SELECT id, dur FROM matched WHERE :ts = ''
  UNION ALL
  SELECT id, dur FROM starting
  UNION ALL
  SELECT m.id, m.dur FROM matched m, at
  WHERE :ts != '' AND NOT EXISTS (SELECT 1 FROM starting)
    AND m.ts <= at.ts + at.half AND (m.raw_dur < 0 OR m.ts + m.raw_dur >= at.ts - at.half)
),
longest AS (
  -- By the time each counts for: an unfinished one lasts to the end of the range.
  SELECT id, dur, count(*) OVER () AS matched FROM picked
  ORDER BY dur DESC, id DESC
  LIMIT {CANNED_TOP}
)
SELECT {INSTANCE_COLUMNS}, longest.matched
FROM longest
JOIN slice s ON s.id = longest.id
JOIN track tr ON tr.id = s.track_id
LEFT JOIN thread th ON th.id = tr.utid
LEFT JOIN process p ON p.id = coalesce(tr.upid, th.upid)
ORDER BY longest.dur DESC, s.id DESC"""

    def compute(self, run: ReportRun, out: pb.SlicesInspect) -> None:
        sn = resolve_name(run, self)
        name = out.name = sn.name
        if run.scope.ts is None:
            w = name_where(run, sn)
        else:
            # ts picks the instances that start then (report output prints instances by their start),
            # else the ones running then.
            at = ts_window(run)
            w = name_where(run, sn, at, at_start=True)
            starting = run.value("instances starting at ts", f"SELECT count(*) FROM slice s\n{w.sql()}", w.params)
            if not starting:
                w = name_where(run, sn, at)
        narrowed = is_narrowed(run) or run.scope.ts is not None
        in_range = range_known(run, sn)
        # Every instance of the name: its count, total and longest are report_slice_name's.
        known = None if narrowed else (sn.count, sn.total_dur, sn.max_dur)
        if in_range is not None:
            known = (in_range.count, in_range.total, in_range.longest())
        duration_stats(run, out.stats, w, name, known, narrowed=narrowed, in_range=in_range)
        clipped_footnote(run)
        out.matched = out.stats.count
        rows = run.query(
            "the longest instances (an unfinished one by the time it counts for)",
            f"""SELECT {INSTANCE_COLUMNS}, s.arg_set_id, s.parent_id, {scope_dur(run)} AS counted
{SLICE_FROM}
WHERE s.id IN ({longest_first(run, w, in_range)})
ORDER BY counted DESC, s.id DESC""",
            {**w.params, "top": run.scope.top, **(in_range.params if in_range else {})},
        )
        if in_range is not None:
            unfinished = in_range.unfinished
        else:
            unfinished = run.value(
                "unfinished instances", f"SELECT count(*) FROM slice s\n{w.sql()} AND s.dur < 0", w.params
            )
        unfinished_footnote(run, unfinished or 0, run.link(run.noun, run.view))
        for r in rows:
            fill_instance(out.instances.add(), r)
        subtitle_instances(run, out.instances)
        run.truncation(len(rows), out.matched, f"{name} instances")
        if out.matched == 1 and rows:
            self._detail(run, out, rows[0])
        elif out.matched == 0 and run.scope.ts is not None:
            run.next_step(f"Every {name} instance", view_link(run, "slices", "inspect", name=name, ts=None))
        elif out.matched > 1:
            inst, runner_up = out.instances[0], out.instances[1]
            if run.scope.ts is None:
                run.next_step(
                    f"Only the longest ({instance_dur(inst)} at {run.offset(inst.ts)})", inspect_link(run, inst)
                )
            elif inst.dur > runner_up.dur and runner_up.dur >= 0:
                # Already at this instant: instances alike but for their duration (async tracks of one
                # process, say) part by it.
                run.next_step(
                    f"Only the longest ({fmt.duration(inst.dur)})",
                    view_link(run, "slices", "inspect", min_duration=str(inst.dur)),
                )
            run.next_step(f"Distribution of {name} durations", view_link(run, "slices", "histogram", name=name))

    def _detail(self, run: ReportRun, out: pb.SlicesInspect, row: sqlite3.Row) -> None:
        fill_instance(out.slice, row)
        out.self_dur = (
            run.value(
                "self duration: the slice minus its children",
                """SELECT max(max(s.dur, 0)
       - coalesce((SELECT sum(max(c.dur, 0)) FROM slice c WHERE c.parent_id = s.id), 0), 0)
FROM slice s
WHERE s.id = :id""",
                {"id": row["id"]},
            )
            or 0
        )
        if row["arg_set_id"] is not None:
            for a in run.query(
                "args",
                """SELECT key, display_value, value_type FROM args
WHERE arg_set_id = :arg_set_id
ORDER BY id""",
                {"arg_set_id": row["arg_set_id"]},
            ):
                out.args.add(key=a["key"] or "", value=a["display_value"] or "", type=a["value_type"] or "")
        for r in run.query(
            "ancestors, outermost first",
            f"""WITH RECURSIVE ancestor(id) AS (
  SELECT parent_id FROM slice WHERE id = :id AND parent_id IS NOT NULL
  UNION ALL
  SELECT s.parent_id FROM slice s JOIN ancestor a ON s.id = a.id WHERE s.parent_id IS NOT NULL
)
SELECT {INSTANCE_COLUMNS}
{SLICE_FROM}
WHERE s.id IN (SELECT id FROM ancestor)
ORDER BY s.depth""",
            {"id": row["id"]},
        ):
            fill_instance(out.ancestors.add(), r)
        children = run.query(
            "children, in time order",
            f"""SELECT {INSTANCE_COLUMNS}, count(*) OVER () AS total
{SLICE_FROM}
WHERE s.parent_id = :id
ORDER BY s.ts, s.id
LIMIT :top""",
            {"id": row["id"], "top": run.scope.top},
        )
        for r in children:
            fill_instance(out.children.add(), r)
        # A slice's ancestors and children share its track: its subtitle.
        for inst in (out.slice, *out.ancestors, *out.children):
            inst.subtitle = out.instances[0].subtitle if out.instances else ""
        if children:
            run.truncation(len(children), children[0]["total"], "children")
        if out.ancestors:
            parent = out.ancestors[-1]
            run.next_step(f"The parent, {parent.name}", inspect_link(run, parent))
        run.next_step(f"Distribution of {out.name} durations", view_link(run, "slices", "histogram", name=out.name))

    def tables(self, msg: pb.SlicesInspect, run: ReportRun) -> list[Table]:
        out = [stats_table(f"{msg.name}: {fmt.plural(msg.matched, 'matching instance')}", msg.stats)]
        if msg.matched != 1:
            title = "Longest instances" if msg.matched > 1 else "Instances"
            out.append(
                Table(
                    title,
                    ("Ts", "Dur", "Thread", "Process", "Track", "Depth"),
                    [instance_cells(run, i) for i in msg.instances],
                    align="rrllll",
                    empty="(no instances in scope)",
                )
            )
            return out
        inst = msg.slice
        thread, process, track = instance_owner_cells(run, inst)
        fields = [
            ("Slice id", Cell(str(inst.id), href=run.linker.details("slice", inst.id))),
            ("Name", Cell(inst.name)),
            ("Start", Cell(f"{run.offset(inst.ts)} (ts {inst.ts})")),
            ("Dur", Cell(instance_dur(inst))),
            ("Self dur", Cell(fmt.duration(msg.self_dur))),
            ("Thread", thread),
            ("Process", process),
            ("Track", track),
            ("Depth", Cell(str(inst.depth))),
        ]
        out.append(Table("The slice", ("Field", "Value"), [[Cell(k), v] for k, v in fields], align="ll"))
        out.append(
            Table(
                "Args",
                ("Key", "Value", "Type"),
                [[Cell(a.key), Cell(a.value), Cell(a.type)] for a in msg.args],
                align="lll",
                empty="(no args)",
            )
        )
        out.append(self._relatives(run, "Ancestors (outermost first)", msg.ancestors, "(a root slice)"))
        out.append(self._relatives(run, "Children", msg.children, "(no children)"))
        return out

    @staticmethod
    def _relatives(run: ReportRun, title: str, instances: Iterable[pb.SliceInstance], empty: str) -> Table:
        rows = [
            [
                Cell(str(inst.depth)),
                Cell(inst.name, inspect_link(run, inst), href=run.linker.details("slice", inst.id)),
                Cell(run.offset(inst.ts), title=f"ts {inst.ts}"),
                Cell(instance_dur(inst)),
            ]
            for inst in instances
        ]
        return Table(title, ("Depth", "Name", "Ts", "Dur"), rows, align="rlrr", empty=empty)


class SlicesDiff(DiffSpec):
    noun, view, field = "slices", "table", "slices_table_diff"
    title, what = "Slices", "slice names"
    key_fields, key_headers = ("name", "group_label"), ("Name",)
    measures = (
        Measure("count", "count", "count"),
        Measure("self_dur", "self", "duration"),
        Measure("percent_of_slice_time", "% of slice time", "percent"),
        Measure("total_dur", "dur", "duration"),
        Measure("percent_of_trace", "% of trace", "percent"),
        Measure("max_dur", "max", "duration", "max"),
        Measure("stats.avg", "avg", "duration", "derived", delta="avg_dur_delta"),  # per instance
    )
    sorts = {"self": "self_dur", "dur": "total_dur", "count": "count", "max": "max_dur", "name": ""}
    display = ("self_dur", "total_dur", "count")
    row_filters = {"min_count": "count", "min_duration": "total_dur"}
    counts_rows = False

    def derive(self, row: Any) -> None:
        row.stats.avg = row.total_dur // row.count if row.count else 0

    def fill_extra(self, out: Any, base_msg: Any, target_msg: Any) -> None:
        out.baseline_total_slices = base_msg.total_slices if base_msg is not None else 0
        out.target_total_slices = target_msg.total_slices if target_msg is not None else 0

    def key_cells(self, row: Any, run: ReportRun, out: Any) -> list[Cell]:
        return [Cell(row.name, diff_link(run, row, "slices", "inspect", name=row.name), subtitle=row.group_label)]


VIEWS = [SlicesTableView(), SlicesHistogramView(), SlicesTimelineView(), SlicesInspectView()]
DIFFS = [SlicesDiff()]
