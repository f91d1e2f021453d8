"""The `dimensions` noun (RFC 0039): which dimensions the trace has (`list`), and where the values of one
disagree (`compare`): "which rank is slow, and at what?", for any dimension, as a URL.

compare: per slice name, one row per value (count, total, self, average, p50, p95, max) and across values the
spread, max / median of the per-value totals; the value furthest from the median is the name's straggler.
In a synchronous job the slow rank is the one that waits least: the others wait for it inside the collective
operations, so per value the time inside collectives (within each step) is set against the time outside.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...schema import REPORT_PERCENTILES as PERCENTILES
from .. import format as fmt
from .. import report_pb2 as pb
from ..base import LEFT_OUT, Bar, Cell, Chart, ReportRun, Table, View, count_cell, duration_cell
from ..diff_spec import Measure, change_cell, signed
from ..filters import (
    CANNED_TOP,
    TRACK_FLAGS,
    Where,
    canned_dim,
    canned_sort,
    dim_terms,
    optional_terms,
)
from ..grouping import VALUE_TEXT, Grouping, dim_params, dimension_grouping, group_stats, track_values
from ..links import glob_escape, scoped_link, view_link
from ..scope import ReportError, shown
from .slices import (
    CELL_TABLES,
    IN_RANGE,
    CellSplit,
    SlicesTableView,
    cell_split,
    cell_table,
    longest_in_range,
    owner_tracks,
    scope_dur,
    scope_self,
    scope_where,
    top_longest,
)

# Collective operations (torch.distributed, gloo, NCCL): a name with one of these words, or one of these
# prefixes. Matched without case.
COLLECTIVE_WORDS = (
    "all_reduce",
    "allreduce",
    "broadcast",
    "barrier",
    "all_gather",
    "allgather",
    "reduce_scatter",
    "reducescatter",
    "all_to_all",
    "alltoall",
)
COLLECTIVE_PREFIXES = ("gloo:", "nccl:", "nccl", "c10d::")
# A training step: the outermost slices with these names on a value's tracks.
STEP_GLOBS = ("ProfilerStep#*", "train_step*")
# Ranking every instance of the names shown (their p50 and p95 per value) stops beyond this many instances: 1 to
# 2 us each, after the range's cells query of a wide range by thread (0.3-0.5 s on a million-slice trace), within
# the query limit.
PERCENTILE_BUDGET = 150_000
SORTS = ("spread", "total", "count", "max", "name")
# A name's chart draws at most this many values (half the largest totals, half the smallest; and the straggler).
CHART_VALUES = 24
# The likely straggler waits in collectives for less than this share of the median value's waiting share.
LIKELY_STRAGGLER = 0.8


def whole_trace(run: ReportRun) -> bool:
    """Whether no flag scopes the report to a time range or to some tracks."""
    s = run.scope
    return s.time is None and all(getattr(s, f) is None for f in TRACK_FLAGS)


def precomputed(run: ReportRun, group: Grouping) -> bool:
    """Whether the whole trace's per value and name figures precomputed at import apply: no scope flag, and
    the dimension one with several values (report_slice_dimension holds those)."""
    if not whole_trace(run):
        return False
    return run.has_tables("report_slice_dimension") and bool(
        run.value(
            f"are the {group.name} figures precomputed",
            "SELECT EXISTS(SELECT 1 FROM report_slice_dimension WHERE dimension = :group_dim)",
            group.params,
        )
    )


def one_value_on_every_track(run: ReportRun, group: Grouping) -> bool:
    """Whether, with no track flag, the dimension has one value and every track with slices has it (a single
    machine's trace, by=machine): then that value's per name figures are every slice's, per name (over the
    whole trace report_slice_name's; a name filter applies to those as well)."""
    if any(getattr(run.scope, f) is not None for f in TRACK_FLAGS) or len(group.order) != 1:
        return False
    return not run.value(
        f"are there tracks with slices and not this {group.name}",
        "SELECT EXISTS(SELECT 1 FROM (SELECT DISTINCT track_id FROM report_slice_track_name) t WHERE t.track_id NOT IN "
        f"(SELECT track_id FROM track_dimension g WHERE g.name = :group_dim AND {VALUE_TEXT.format(d='g')} = :value))",
        {**group.params, "value": group.order[0]},
    )


def is_collective(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith(COLLECTIVE_PREFIXES) or any(word in lowered for word in COLLECTIVE_WORDS)


def by_dimension(run: ReportRun, view: View) -> Grouping:
    """The dimension `by` names, checked against the dimensions present."""
    name = run.scope.by
    names = run.dimension_names()
    if name is None:
        raise ReportError(
            f"{view.label()} needs by, the dimension to compare the values of: {', '.join(names) or '(none)'}",
            "by",
            names,
        )
    if name not in names:
        raise ReportError(
            f"by: no dimension {shown(name)} in this trace; dimensions: {', '.join(names) or '(none)'}", "by", names
        )
    return dimension_grouping(run, name)


def shown_dimensions(run: ReportRun) -> list[str]:
    """The dimensions subtitles show: more than one value (process and thread aside, which always have)."""
    if not run.dimension_names():
        return []
    return [
        r["name"]
        for r in run.query(
            "dimensions with more than one value",
            f"""SELECT d.name FROM track_dimension d
WHERE d.name NOT IN ('process', 'thread')
GROUP BY d.name
HAVING count(DISTINCT {VALUE_TEXT.format(d="d")}) > 1
ORDER BY d.name""",
        )
    ]


# -- list -------------------------------------------------------------------------------------------------

_LIST_SQL = """SELECT d.name, {value} AS value, d.value_type, min(d.label) AS label,
       min(d.display_name) AS display_name, count(DISTINCT d.track_id) AS track_count,
       count(DISTINCT tr.utid) AS thread_count, count(DISTINCT coalesce(tr.upid, th.upid)) AS process_count,
       group_concat(DISTINCT d.source) AS sources
FROM track_dimension d
JOIN track tr ON tr.id = d.track_id
LEFT JOIN thread th ON th.id = tr.utid
{where}
GROUP BY d.name, d.value_type, d.int_value, d.string_value
ORDER BY d.name, d.value_type, d.int_value, d.string_value"""


class DimensionsListView(View):
    noun = "dimensions"
    name = "list"
    title = "Dimensions"
    description = (
        "Every track dimension in the trace (RFC 0039): well-known (machine, gpu, cpu, process, thread, "
        "synthesized at import) or custom (rank, shard, ..., declared by the producer), with each value, its "
        "label and display name, and how many tracks, threads and processes carry it; where it is declared. "
        "Dimensions with more than one value (but process and thread) label every track, thread and process "
        "the report names. name is a glob on the dimension name; top caps the values listed per dimension."
    )
    result_field = "dimensions_list"
    uses_top = True
    flags = frozenset({"name", "dim"})
    canned_sql = _LIST_SQL.format(
        value=VALUE_TEXT.format(d="d"),
        where=f"WHERE (:name = '' OR d.name GLOB :name)\n  AND {canned_dim('track', 'd.track_id')}",
    )

    def has_data(self, run: ReportRun) -> bool:
        return bool(run.dimension_names())

    def compute(self, run: ReportRun, out: pb.DimensionsList) -> None:
        names = run.dimension_names()
        if not names:
            return
        registry = {
            r["name"]: r
            for r in run.query("the dimension registry", "SELECT name, is_well_known, label_template FROM dimension")
        }
        w = dim_terms(run, "track", "d.track_id")
        if run.scope.name is not None:
            w.add("d.name GLOB :name", name=run.scope.name)
        rows = run.query(
            "each dimension's values, with the tracks, threads and processes that carry them",
            _LIST_SQL.format(value=VALUE_TEXT.format(d="d"), where=w.sql()),
            w.params,
        )
        in_subtitles = set(shown_dimensions(run))
        by_name: dict[str, list] = {}
        for r in rows:
            by_name.setdefault(r["name"], []).append(r)
        for name in names:
            if name not in by_name:
                continue
            values = by_name[name]
            dim = out.dimensions.add(
                name=name,
                is_well_known=bool(registry[name]["is_well_known"]) if name in registry else False,
                label_template=(registry[name]["label_template"] or "") if name in registry else "",
                in_subtitles=name in in_subtitles,
                track_count=sum(v["track_count"] for v in values),
            )
            dim.sources.extend(sorted({s for v in values for s in (v["sources"] or "").split(",") if s}))
            for v in values[: run.scope.top]:
                dim.values.add(
                    value=v["value"],
                    label=v["label"] or "",
                    display_name=v["display_name"] or "",
                    track_count=v["track_count"],
                    thread_count=v["thread_count"],
                    process_count=v["process_count"],
                )
            run.truncation(len(dim.values), len(values), f"values of {name}")
        for name in sorted(in_subtitles, key=lambda n: (n in registry and registry[n]["is_well_known"], n)):
            run.next_step(f"Which {name} is slow, and at what", scoped_link(run, "dimensions", "compare", by=name))

    def tables(self, msg: pb.DimensionsList, run: ReportRun) -> list[Table]:
        out = []
        for d in msg.dimensions:
            kind = "well-known" if d.is_well_known else "custom"
            shown_in = "; labels subtitles" if d.in_subtitles else ""
            title = (
                f"{d.name} ({kind}, from {', '.join(d.sources) or '?'}; "
                f"{fmt.plural(len(d.values), 'value')} shown{shown_in})"
            )
            rows = [
                [
                    Cell(v.value, scoped_link(run, "slices", "table", dim=dim_params(run, d.name, v.value))),
                    Cell(v.label),
                    Cell(v.display_name or "-"),
                    count_cell(v.track_count),
                    count_cell(v.thread_count),
                    count_cell(v.process_count),
                ]
                for v in d.values
            ]
            out.append(
                Table(
                    title,
                    ("Value", "Label", "Display name", "Tracks", "Threads", "Processes"),
                    rows,
                    align="lllrrr",
                )
            )
        if not msg.dimensions:
            out.append(Table("Dimensions: (no track dimensions in this trace)", (), []))
        return out


# -- compare ----------------------------------------------------------------------------------------------


# A name's figures on one value: a list [count, total, self, max] read by these positions. Lists, not dicts: a large
# trace's compare by thread builds a hundred thousand of them and reads each several times.
COUNT, TOTAL, SELF, MAX = range(4)
NO_FIGURES = (0, 0, 0, 0)  # a value without the name


@dataclass
class NameValues:
    """One slice name's figures per value (the raw rows before they become a message)."""

    name: str
    per_value: dict[str, list[int]] = field(default_factory=dict)  # value -> [count, total, self, max]

    def total(self, value: str) -> int:
        return self.per_value.get(value, NO_FIGURES)[TOTAL]


def _name_cell_figures(run: ReportRun, group: Grouping, cells: CellSplit) -> tuple[dict[str, NameValues], set[str]]:
    """_per_value over a time range holding whole cells (large traces) for a dimension with one value on every
    track: the slices table's rows per name from the name cells and the edges around them
    (SlicesTableView._by_cells), each name's longest instance in the range (longest_in_range)."""
    grouped, params = SlicesTableView._by_cells(run, cells, None, None)
    found = run.query("count, total and self time per slice name in the range's cells", grouped, params)
    return _name_values(
        (r["name"], group.order[0], r["count"], r["total_dur"], r["self_dur"], r["max_dur"])
        for r in longest_in_range(run, found)
    )


def _value_cell_figures(
    run: ReportRun, group: Grouping, owner: Where | None, cells: CellSplit
) -> tuple[dict[str, NameValues], set[str]]:
    """_per_value over a time range holding whole cells (large traces) for a dimension with many values: the
    slices table's rows per name and value, from the per track (or process) cells and the edges around them
    (SlicesTableView._by_cells); the longest left at 0, for the names shown only (_longest)."""
    if cells.table != CELL_TABLES["track"][0]:  # per process: few keys, summed by SQLite
        grouped, params = SlicesTableView._by_cells(run, cells, owner, group)
        # Tracks without the dimension are not compared.
        found = run.rows(
            f"count, total and self time per slice name and {group.name} in the range's cells",
            f"""SELECT name, group_value, count, total_dur, self_dur, 0 FROM (
{grouped}
) WHERE group_value IS NOT NULL""",
            params,
        )
        return _name_values(found)
    # Per track and name (a hundred thousand keys in a large trace), summed per name and value here: SQLite's
    # grouping of them cost as much again as reading them.
    per_track, params = SlicesTableView._by_cells(run, cells, owner, group, per_track=True)
    values = track_values(run, group)  # tracks without the dimension are not compared
    # A sum can come to nothing only through a part that subtracts (count <= 0): those keys are checked after.
    subtracted: list[tuple[str, str]] = []

    def per_value_rows() -> Iterator[tuple]:
        for name, track_id, count, total, _, self_dur in run.rows(
            f"count, total and self time per slice name and track in the range's cells (summed per {group.name} value)",
            per_track,
            params,
        ):
            value = values.get(track_id)
            if value is not None:
                if count <= 0:
                    subtracted.append((name or "", value))
                yield name, value, count, total, self_dur, 0

    names = _summed(per_value_rows())
    for name, value in subtracted:  # what the parts left no instance of (the grouped query's HAVING)
        nv = names.get(name)
        if nv is not None and value in nv.per_value and nv.per_value[value][COUNT] <= 0:
            del nv.per_value[value]
            if not nv.per_value:
                del names[name]
    return names, _values_of(names)


def _name_values(rows: Iterable[Sequence[Any]]) -> tuple[dict[str, NameValues], set[str]]:
    """_summed's NameValues, and the values seen."""
    names = _summed(rows)
    return names, _values_of(names)


def _values_of(names: dict[str, NameValues]) -> set[str]:
    return set().union(*(nv.per_value for nv in names.values()))


def _summed(rows: Iterable[Sequence[Any]]) -> dict[str, NameValues]:
    """Rows of (name, value, count, total, self, longest) as NameValues by name; rows of one name (NULL and "" are
    one name, "") and value summed."""
    names: dict[str, NameValues] = {}
    for name, value, count, total, self_dur, longest in rows:
        key = name or ""
        nv = names.get(key)
        if nv is None:
            nv = names[key] = NameValues(key)
        figures = nv.per_value.get(value)
        if figures is None:
            nv.per_value[value] = [count, total or 0, self_dur or 0, longest if longest and longest > 0 else 0]
        else:
            figures[COUNT] += count
            figures[TOTAL] += total or 0
            figures[SELF] += self_dur or 0
            if longest and longest > figures[MAX]:
                figures[MAX] = longest
    return names


def _stored_names(name: str) -> tuple[str | None, ...]:
    """The slice names a NameValues name stands for: "" is NULL names too."""
    return (name, None) if name == "" else (name,)


def _set_longest(names: dict[str, NameValues], longest: dict[tuple[str, str], int]) -> None:
    """Each (name, value)'s longest, as _longest or _ranked found it, into the names' figures."""
    for (name, value), most in longest.items():
        figures = names[name].per_value.get(value) if name in names else None
        if figures is not None:
            figures[MAX] = most


def _few_instances(run: ReportRun, names: str) -> bool:
    """Whether the names (a JSON list) have fewer instances in the whole trace than the time range holds slices:
    their instances are then read through the name index (scope_where's names_first)."""
    if run.scope.time is None:
        return False
    row = run.query(
        "instances of the names shown, and of every name",
        "SELECT (SELECT coalesce(sum(count), 0) FROM report_slice_name WHERE name IN (SELECT value FROM "
        "json_each(:names))) AS shown, (SELECT coalesce(sum(count), 0) FROM report_slice_name) AS every",
        {"names": names},
    )[0]
    start, end = run.time_range()
    inside = max(min(end, run.trace.end) - max(start, run.trace.start), 0)
    return row["shown"] < row["every"] * inside / max(run.trace.dur, 1)


def _order(key: str, nv: NameValues, count: int, values: list[str]) -> tuple:
    """A name's place in the compare by the sort `key`, from its figures (only the names shown become
    messages). By spread, the names every value has first: a name missing on some values (an address in it, one
    rank's own work) disagrees trivially."""
    if key == "name":
        return (nv.name,)
    if key == "count":
        return (-count, nv.name)
    if key == "max":
        return (-max(nv.per_value.get(v, NO_FIGURES)[MAX] for v in values), nv.name)
    # Every name is ordered (hundreds of them, by as many values): each value's figures looked up once.
    figures = [nv.per_value.get(v, NO_FIGURES) for v in values]
    totals = [f[TOTAL] for f in figures]
    if key == "total":
        return (-sum(totals), nv.name)
    missing = not all(f[COUNT] for f in figures)
    return (missing, -_spread(totals)[1], -sum(totals), nv.name)


def _spread(totals: list[int]) -> tuple[float, float]:
    """(median, max / median: 1 when every value has the same total)."""
    median = statistics.median(totals)
    highest = max(totals)
    if highest == min(totals):
        return median, 1.0
    return median, highest / median if median else math.inf


def _straggler(totals: list[int], median: float) -> int | None:
    """The index of the value furthest from the median (the larger total on a tie; the first of equals); None
    when every value has the same total."""
    if max(totals) == min(totals):
        return None
    return max(range(len(totals)), key=lambda i: (abs(totals[i] - median), totals[i], -i))


# The canned query: per slice name and value of the dimension `by`, the slices' count, total, self and
# longest duration over the whole trace (the per track aggregates precomputed at import); across values the
# median total and the spread (max / median, of the values that have the name). The report also fills in
# values without the name (as 0), percentiles, the straggler and, for collective operations, the wait.
_CANNED_COMPARE = f"""WITH per_value AS (
  SELECT t.name, {VALUE_TEXT.format(d="g")} AS value, min(g.label) AS label, sum(t.count) AS count,
         sum(t.total_dur) AS total_dur, sum(t.self_dur) AS self_dur, max(t.max_dur) AS max_dur
  FROM report_slice_track_name t
  JOIN track tr ON tr.id = t.track_id
  LEFT JOIN thread th ON th.id = tr.utid
  LEFT JOIN process p ON p.id = coalesce(tr.upid, th.upid)
  JOIN track_dimension g ON g.track_id = t.track_id AND g.name = :by
  WHERE (:name = '' OR t.name GLOB :name)
    AND {optional_terms(TRACK_FLAGS, " " * 4)}
  GROUP BY t.name, value
),
ranked AS (
  SELECT *, row_number() OVER (PARTITION BY name ORDER BY total_dur) AS i, count(*) OVER (PARTITION BY name) AS n,
         max(total_dur) OVER (PARTITION BY name) AS most, sum(total_dur) OVER (PARTITION BY name) AS name_total,
         sum(count) OVER (PARTITION BY name) AS name_count
  FROM per_value
),
medians AS (
  SELECT name, avg(total_dur) AS median FROM ranked WHERE i IN ((n + 1) / 2, (n + 2) / 2) GROUP BY name
)
SELECT r.name, r.value, r.label, r.count, r.total_dur, r.self_dur, r.total_dur / r.count AS avg_dur, r.max_dur,
       m.median AS median_total, r.most / nullif(m.median, 0) AS spread, r.name_total, r.name_count
FROM ranked r JOIN medians m USING (name)
WHERE r.name_count >= CAST(coalesce(nullif(:min_count, ''), 0) AS INTEGER)
  AND r.name IN (
    SELECT name FROM (SELECT DISTINCT r2.name, r2.most / nullif(m2.median, 0) AS spread, r2.name_total, r2.name_count
                      FROM ranked r2 JOIN medians m2 USING (name))
    ORDER BY CASE {canned_sort("spread")} WHEN 'spread' THEN -coalesce(spread, 1e308) WHEN 'total' THEN -name_total
             WHEN 'count' THEN -name_count END, name
    LIMIT {CANNED_TOP})
ORDER BY r.name, length(r.value), r.value"""


class DimensionsCompareView(View):
    noun = "dimensions"
    name = "compare"
    title = "Values of a dimension compared"
    description = (
        "by a dimension (rank, machine, ...): for each slice name, one row per value with its count, total, self "
        "time, average, p50, p95 and max; across values the spread (max / median of the per-value totals) and "
        "the straggler, the value furthest from the median. Sorted by spread: the first names are where the "
        "values disagree most (names some values lack come after the ones all have). For collective operations "
        "(all_reduce, broadcast, barrier, all_gather, "
        "reduce_scatter; gloo, nccl, c10d) the time each value spends inside them within its steps "
        "(ProfilerStep#N / train_step) against the time outside: in a synchronous job the value that waits least "
        "is the likely straggler. baseline_value compares every value against one, with a diff's deltas."
    )
    result_field = "dimensions_compare"
    uses_top = True
    flags = frozenset({*TRACK_FLAGS, "time", "name", "sort", "min_count", "by", "baseline_value"})  # by required
    sorts = SORTS
    canned_sql = _CANNED_COMPARE

    def has_data(self, run: ReportRun) -> bool:
        return bool(run.dimension_names())

    def compute(self, run: ReportRun, out: pb.DimensionsCompare) -> None:
        s = run.scope
        group = by_dimension(run, self)
        out.by = group.name
        key = self.sort_key(s)
        names, order, longest_pending = self._per_value(run, group)
        values = [v for v in group.order if v in order]
        self._totals(run, group, names, values, out)
        counts = {}
        for nv in names.values():
            count = sum(figures[COUNT] for figures in nv.per_value.values())
            if s.min_count is not None and count < s.min_count:
                continue
            counts[nv.name] = count
        baseline = self._baseline_value(run, group, values) if s.baseline_value is not None else None
        if longest_pending and key == "max":
            # Ranked by the longest: the names that rank first by their longest on the tracks with a value (the
            # per value ones of those shown are looked up below), then the rest.
            wanted = {(stored, None) for name in counts for stored in _stored_names(name)}
            first = list(
                dict.fromkeys(name or "" for name, _ in top_longest(run, owner_tracks(run), group, wanted, True))
            )
            ordered = first + sorted(set(counts) - set(first))
        else:
            ordered = sorted(counts, key=lambda name: _order(key, names[name], counts[name], values))
        out.total_rows = len(ordered)
        shown = ordered[: s.top]
        ranked = None
        if longest_pending:  # the order does not depend on the longest: looked up for the names shown only
            if "" not in shown and sum(counts[name] for name in shown) <= PERCENTILE_BUDGET:
                # Their instances ranked for the percentiles give the longest too: read once.
                ranked = self._ranked(run, group, json.dumps(shown))
                _set_longest(names, {pair: stats.max for pair, stats in ranked.items()})
            else:
                _set_longest(names, self._longest(run, group, names, shown))
        out.names.extend(self._name(names[name], counts[name], group, values, baseline) for name in shown)
        if baseline is not None:
            out.baseline_value, out.baseline_label = baseline, group.label(baseline)
        self._percentiles(run, group, out, ranked)
        run.truncation(len(out.names), out.total_rows, "slice names")
        self._collectives(run, group, names, out)
        self._steps(run, out, values)

    @staticmethod
    def _per_value(run: ReportRun, group: Grouping) -> tuple[dict[str, NameValues], set[str], bool]:
        """Per slice name and value: count, total, self time and longest, of the slices in scope on tracks with
        the dimension (the per track aggregates precomputed at import, unless a time range clips them), and
        whether the longest were left for _longest (a time range holding whole cells of a large trace: the
        slices table's rows per value, from the cells and the range's edges)."""
        s = run.scope
        owner = owner_tracks(run)
        if s.time is not None and not one_value_on_every_track(run, group):
            cells = cell_split(run, cell_table(owner, group))
            if cells is not None:
                return (*_value_cell_figures(run, group, owner, cells), True)
        params: dict[str, Any] = dict(group.params)
        if precomputed(run, group):
            w = Where()
            w.add("r.dimension = :group_dim")
            if s.name is not None:
                w.add("r.name GLOB :name", name=s.name)
            sql = f"""SELECT r.name, r.value, r.count, r.total_dur AS total, r.self_dur AS self, r.max_dur AS longest
FROM report_slice_dimension r
{w.sql()}"""
        elif s.time is None and one_value_on_every_track(run, group):
            # That value's figures are the whole trace's per name ones, precomputed at import.
            w = Where()
            if s.name is not None:
                w.add("n.name GLOB :name", name=s.name)
            params["group_value"] = group.order[0]
            sql = f"""SELECT n.name, :group_value AS value, n.count, n.total_dur AS total, n.self_dur AS self,
       n.max_dur AS longest
FROM report_slice_name n
{w.sql()}"""
        elif s.time is None:
            w = Where()
            if owner is not None:
                w.add(f"t.track_id IN {owner.terms[0]}", **owner.params)
            if s.name is not None:
                w.add("t.name GLOB :name", name=s.name)
            values = track_values(run, group)  # tracks without the dimension are not compared
            if 2 * len(set(values.values())) > len(values):
                # About a track per value (threads: a hundred thousand keys in a large trace): the per track and
                # name rows summed per name and value here, as over a range; SQLite's grouping of them took 2.5
                # times as long as reading them. Fewer values (processes): SQLite's grouping leaves fewer rows.
                per_track = run.rows(
                    f"count, total, self time and longest per slice name and track (summed per {group.name} value)",
                    f"""SELECT t.name, t.track_id, t.count, t.total_dur, t.self_dur, t.max_dur
FROM report_slice_track_name t
{w.sql()}""",
                    w.params,
                )
                return (
                    *_name_values(
                        (name, values[track_id], count, total, self_dur, longest)
                        for name, track_id, count, total, self_dur, longest in per_track
                        if track_id in values
                    ),
                    False,
                )
            sql = f"""SELECT t.name, {VALUE_TEXT.format(d="g")} AS value, sum(t.count) AS count,
       sum(t.total_dur) AS total, sum(t.self_dur) AS self, max(t.max_dur) AS longest
FROM report_slice_track_name t
JOIN track_dimension g ON g.track_id = t.track_id AND g.name = :group_dim
{w.sql()}
GROUP BY t.name, value"""
        elif s.time is not None and one_value_on_every_track(run, group) and (cells := cell_split(run)) is not None:
            # That value's figures over the range are the slices table's per name ones, from the name cells
            # (finer than the track cells the first branch reads).
            return (*_name_cell_figures(run, group, cells), False)
        else:
            w = scope_where(run, min_duration=False)
            dur = scope_dur(run)
            sql = f"""SELECT s.name, {VALUE_TEXT.format(d="g")} AS value, count(*) AS count, sum({dur}) AS total,
       sum({scope_self(run)}) AS self, max({dur}) AS longest
FROM slice s
JOIN track_dimension g ON g.track_id = s.track_id AND g.name = :group_dim
{w.sql()}
GROUP BY +s.name, value"""
        params.update(w.params)
        return (
            *_name_values(
                run.rows(f"count, total, self time and longest per slice name and {group.name}", sql, params)
            ),
            False,
        )

    @staticmethod
    def _longest(run: ReportRun, group: Grouping, names: dict[str, NameValues], shown: list[str]) -> dict:
        """(name, value) -> the longest instance in scope (its part inside the time range) of each of the `shown`
        names on each value's tracks it has instances on (top_longest, every one); "" also matches NULL names
        (NameValues shows them as "")."""
        wanted = {
            (stored, value)
            for name in shown
            for value, figures in names[name].per_value.items()
            if figures[COUNT]
            for stored in _stored_names(name)
        }
        longest: dict[tuple[str, str], int] = {}
        for (name, value), (d, _) in top_longest(run, owner_tracks(run), group, wanted, every=True).items():
            longest[(name or "", value)] = max(longest.get((name or "", value), 0), d, 0)
        return longest

    @staticmethod
    def _name(
        nv: NameValues, count: int, group: Grouping, values: list[str], baseline: str | None
    ) -> pb.DimensionsCompare.Name:
        row = pb.DimensionsCompare.Name(name=nv.name, count=count, collective=is_collective(nv.name))
        totals = [nv.total(v) for v in values]
        row.total_dur = sum(totals)
        median, spread = _spread(totals)
        far = _straggler(totals, median)
        row.median_total, row.spread = median, spread
        if far is not None:
            row.straggler, row.straggler_label = values[far], group.label(values[far])
        base = nv.per_value.get(baseline, NO_FIGURES) if baseline is not None else NO_FIGURES
        for i, value in enumerate(values):
            figures = nv.per_value.get(value, NO_FIGURES)
            n = figures[COUNT]
            v = row.values.add(value=value, label=group.label(value), straggler=i == far)
            v.stats.count, v.stats.total, v.stats.max = n, figures[TOTAL], figures[MAX]
            v.stats.avg = v.stats.total // n if n else 0
            v.self_dur = figures[SELF]
            if baseline is None:
                continue
            b_count, b_total = base[COUNT], base[TOTAL]
            v.count_delta = n - b_count
            v.total_dur_delta = v.stats.total - b_total
            v.self_dur_delta = v.self_dur - base[SELF]
            v.avg_dur_delta = v.stats.avg - (b_total // b_count if b_count else 0)
            v.max_dur_delta = v.stats.max - base[MAX]
            if value == baseline:
                v.change = "baseline"
            elif not b_count and n:
                v.change = "added"
            elif b_count and not n:
                v.change = "removed"
            else:
                moved = any(m.value(v) for m in VALUE_DELTAS if m.kind != "percent")
                v.change = "changed" if moved else "unchanged"
        return row

    @staticmethod
    def _baseline_value(run: ReportRun, group: Grouping, values: list[str]) -> str:
        """The value baseline_value names (its value, label or display name) among those with slices in scope."""
        wanted = run.scope.baseline_value or ""
        for v in run.dimension_values(group.name):
            if wanted in (v["value"], v["label"], v["display_name"], group.label(v["value"])) and v["value"] in values:
                return v["value"]
        options = [group.label(v) for v in values]
        raise ReportError(
            f"baseline_value: {group.name} has no value {shown(wanted)} with slices in scope; its values: "
            f"{', '.join(values)} ({', '.join(options)})",
            "baseline_value",
            values,
        )

    @staticmethod
    def _totals(
        run: ReportRun, group: Grouping, names: dict[str, NameValues], values: list[str], out: pb.DimensionsCompare
    ) -> None:
        """Per value: its slices in scope (of every name) and their self time; and its tracks."""
        w = dim_terms(run, "track", "g.track_id")
        tracks = {
            r["value"]: r["n"]
            for r in run.query(
                f"tracks per {group.name} value",
                f"""SELECT {VALUE_TEXT.format(d="g")} AS value, count(*) AS n FROM track_dimension g
WHERE g.name = :group_dim{"".join(chr(10) + "  AND " + t for t in w.terms)}
GROUP BY value""",
                {**group.params, **w.params},
            )
        }
        counts: dict[str, int] = {}
        times: dict[str, int] = {}
        for nv in names.values():
            for value, figures in nv.per_value.items():
                counts[value] = counts.get(value, 0) + figures[COUNT]
                times[value] = times.get(value, 0) + figures[SELF]
        for value in values:
            out.totals.add(
                value=value,
                label=group.label(value),
                slice_count=counts.get(value, 0),
                slice_time=times.get(value, 0),
                track_count=tracks.get(value, 0),
            )

    @staticmethod
    def _percentiles(run: ReportRun, group: Grouping, out: pb.DimensionsCompare, ranked: dict | None = None) -> None:
        """p50/p95/p99 and minimum per value of the names shown: their instances ranked (within a budget;
        `ranked`: already, by _ranked)."""
        if not out.names:
            return
        instances = sum(n.count for n in out.names)
        if instances > PERCENTILE_BUDGET:
            out.percentiles_left_out = True
            run.footnote(
                f"Percentiles are left out: the names shown have {instances:,} instances in scope (ranking "
                f"stops at {PERCENTILE_BUDGET:,}); the histogram of one name has them per {group.name}",
                view_link(run, "slices", "histogram", name=glob_escape(out.names[0].name), group_by=group.name),
            )
            return
        names = json.dumps([n.name for n in out.names])
        if precomputed(run, group):
            rows = run.query(
                f"minimum and percentiles per slice name and {group.name} value (precomputed)",
                f"""SELECT name, value, min_dur, {", ".join(f"p{p}_dur" for p in PERCENTILES)}
FROM report_slice_dimension
WHERE dimension = :group_dim AND name IN (SELECT value FROM json_each(:names))""",
                {**group.params, "names": names},
            )
            stats = {
                (r["name"], r["value"]): pb.DurationStats(
                    min=r["min_dur"], **{f"p{p}": r[f"p{p}_dur"] or 0 for p in PERCENTILES}
                )
                for r in rows
            }
        else:
            stats = ranked if ranked is not None else DimensionsCompareView._ranked(run, group, names)
        for n in out.names:
            for v in n.values:
                found = stats.get((n.name, v.value))
                if found is not None:
                    v.stats.min, v.stats.p50, v.stats.p95, v.stats.p99 = found.min, found.p50, found.p95, found.p99

    @staticmethod
    def _ranked(run: ReportRun, group: Grouping, names: str) -> dict:
        w = scope_where(run, name=False, min_duration=False, names_first=_few_instances(run, names))
        w.add("s.name IN (SELECT value FROM json_each(:names))", names=names)
        dur = scope_dur(run)
        return group_stats(
            run,
            group,
            f"minimum and percentiles per slice name and {group.name} value (nearest rank)",
            f"""SELECT s.track_id, s.name, {dur} AS d FROM slice s
  {w.sql().replace(chr(10), chr(10) + "  ")}""",
            w.params,
        )

    @staticmethod
    def _collectives(run: ReportRun, group: Grouping, names: dict[str, NameValues], out: pb.DimensionsCompare) -> None:
        """Per value: the wall time inside collective operations (the union of their slices) within its steps,
        and the time outside; the value waiting least, if materially less (under LIKELY_STRAGGLER of the median
        value's share of its step time), is the likely straggler."""
        collectives = sorted(n for n in names if is_collective(n))
        if not collectives:
            return
        out.collectives.extend(collectives)
        s = run.scope
        start, end = run.time_range()
        w = Where()
        owner = owner_tracks(run)
        if owner is not None:
            w.add(f"s.track_id IN {owner.terms[0]}", **owner.params)
        if s.time is not None:
            w.add(IN_RANGE, range_start=start, range_end=end)
        extra = "".join(f"\n  AND {t}" for t in w.terms)
        params = {**w.params, **group.params, "trace_end": run.trace.end}
        row_end = "CASE WHEN s.dur < 0 THEN :trace_end ELSE s.ts + s.dur END"
        steps = run.query(
            f"the steps of each {group.name} value (ProfilerStep#N, train_step)",
            f"""SELECT {VALUE_TEXT.format(d="g")} AS value, s.name, s.ts, {row_end} AS end_ts
FROM slice s
JOIN track_dimension g ON g.track_id = s.track_id AND g.name = :group_dim
WHERE ({" OR ".join(f"s.name GLOB '{glob}'" for glob in STEP_GLOBS)}){extra}
ORDER BY value, s.ts, end_ts DESC""",
            params,
        )
        spans = run.query(
            f"the collective operations of each {group.name} value",
            f"""SELECT {VALUE_TEXT.format(d="g")} AS value, s.ts, {row_end} AS end_ts
FROM slice s
JOIN track_dimension g ON g.track_id = s.track_id AND g.name = :group_dim
WHERE s.name IN (SELECT value FROM json_each(:collectives)){extra}
ORDER BY value, s.ts""",
            {**params, "collectives": json.dumps(collectives)},
        )
        windows: dict[str, list[tuple[int, int]]] = {}
        for r in steps:  # the outermost steps: a step inside another one is part of it
            kept = windows.setdefault(r["value"], [])
            if kept and r["ts"] < kept[-1][1]:
                kept[-1] = (kept[-1][0], max(kept[-1][1], r["end_ts"]))
                continue
            kept.append((r["ts"], r["end_ts"]))
        out.steps = ", ".join(sorted({_step_glob(r["name"]) for r in steps})) if steps else ""
        values = [t.value for t in out.totals]
        inside: dict[str, list[tuple[int, int]]] = {}
        for r in spans:
            inside.setdefault(r["value"], []).append((r["ts"], r["end_ts"]))
        waits = []
        for value in values:
            steps_of = [(max(a, start), min(b, end)) for a, b in windows.get(value, [(start, end)]) if b > a]
            if not steps or value not in windows:
                steps_of = [(start, end)] if not steps else []
            step_time = sum(b - a for a, b in steps_of)
            clipped = [
                (max(a, sa), min(b, sb)) for a, b in inside.get(value, []) for sa, sb in steps_of if a < sb and b > sa
            ]
            in_collectives = _union(clipped)
            waits.append((value, len(steps_of), step_time, in_collectives))
        measured = [w for w in waits if w[2] > 0]
        least = min(measured, key=lambda w: (w[3] / w[2], w[0])) if len(measured) > 1 else None
        typical = statistics.median(w[3] / w[2] for w in measured) if measured else 0
        if least is not None and least[3] / least[2] >= LIKELY_STRAGGLER * typical:
            least = None  # no value waits materially less than the others
        for value, count, step_time, in_collectives in waits:
            out.waits.add(
                value=value,
                label=group.label(value),
                steps=count if steps else 0,
                step_time=step_time,
                in_collectives=in_collectives,
                outside=step_time - in_collectives,
                likely_straggler=least is not None and value == least[0],
            )
        if least is not None:
            out.likely_straggler, out.likely_straggler_label = least[0], group.label(least[0])

    @staticmethod
    def _steps(run: ReportRun, out: pb.DimensionsCompare, values: list[str]) -> None:
        by = out.by
        if out.likely_straggler:
            run.next_step(
                f"The slices of {out.likely_straggler_label}, the likely straggler",
                scoped_link(run, "slices", "table", dim=dim_params(run, by, out.likely_straggler)),
            )
        if out.names:
            top = out.names[0]
            run.next_step(
                f"{top.name} per {by}: durations and percentiles",
                view_link(run, "slices", "histogram", name=glob_escape(top.name), group_by=by),
            )
            if top.straggler and top.straggler != out.likely_straggler:
                run.next_step(
                    f"The slices of {top.straggler_label}, the straggler of {top.name}",
                    scoped_link(run, "slices", "table", dim=dim_params(run, by, top.straggler)),
                )
            if not out.baseline_value and len(values) > 1:
                typical = min(top.values, key=lambda v: (abs(v.stats.total - top.median_total), v.value))
                run.next_step(
                    f"Every {by} against {typical.label} (the closest to the median of {top.name})",
                    run.link(run.noun, run.view, baseline_value=typical.value),
                )
        run.next_step(f"The slices table per {by}", scoped_link(run, "slices", "table", group_by=by))

    # -- rendering ----------------------------------------------------------------------------------------
    def tables(self, msg: pb.DimensionsCompare, run: ReportRun) -> list[Table]:
        out = [totals_table(msg, run)]
        if msg.waits:
            out.append(waits_table(msg))
        out.append(self._names_table(msg, run))
        return out

    def _names_table(self, msg: pb.DimensionsCompare, run: ReportRun) -> Table:
        by = msg.by.capitalize()
        with_base = bool(msg.baseline_value)
        rows = []
        for n in msg.names:
            for i, v in enumerate(n.values):
                first = i == 0
                name_cell = (
                    Cell(n.name, view_link(run, "slices", "histogram", name=glob_escape(n.name), group_by=msg.by))
                    if first
                    else Cell("")
                )
                spread = Cell(spread_text(n.spread) if first else "")
                value_cell = Cell(
                    v.label,
                    scoped_link(run, "slices", "table", dim=dim_params(run, msg.by, v.value), name=glob_escape(n.name)),
                )
                cells = [name_cell, spread, value_cell, count_cell(v.stats.count), duration_cell(v.stats.total)]
                if with_base:
                    cells += [
                        Cell(signed("duration", v.total_dur_delta) if v.change != "baseline" else "-"),
                        Cell(signed("duration", v.avg_dur_delta) if v.change != "baseline" else "-"),
                        _change(v),
                    ]
                else:
                    cells += [
                        duration_cell(v.self_dur),
                        duration_cell(v.stats.avg),
                        *(
                            (LEFT_OUT, LEFT_OUT)
                            if msg.percentiles_left_out
                            else (duration_cell(v.stats.p50), duration_cell(v.stats.p95))
                        ),
                        duration_cell(v.stats.max),
                        Cell("straggler" if v.straggler else "", css="diff-up" if v.straggler else ""),
                    ]
                rows.append(cells)
        headers: tuple[str, ...]
        if with_base:
            headers = ("Name", "Spread", by, "Count", "Total", f"Δ total vs {msg.baseline_label}", "Δ avg", "Change")
            align = "lrlrrrrl"
        else:
            headers = ("Name", "Spread", by, "Count", "Total", "Self", "Avg", "p50", "p95", "Max", "")
            align = "lrlrrrrrrrl"
        title = (
            f"Slice names by {msg.by} ({fmt.plural(msg.total_rows, 'name')}; "
            f"spread: max / median of the per-{msg.by} totals)"
        )
        return Table(title, headers, rows, align=align, empty="(no slices on tracks with this dimension in scope)")

    def charts(self, msg: pb.DimensionsCompare, run: ReportRun) -> list[Chart]:
        charts = []
        for n in msg.names:
            values = list(n.values)
            title = f"{n.name}: total per {msg.by} (spread {spread_text(n.spread)})"
            if len(values) > CHART_VALUES:
                # Both ends of the spread and the straggler, in the values' order; every value is in the table.
                by_total = sorted(range(len(values)), key=lambda i: values[i].stats.total)
                half = CHART_VALUES // 2
                kept = {*by_total[:half], *by_total[-half:], *(i for i, v in enumerate(values) if v.straggler)}
                title += f": the {half} largest and smallest of {len(values)} values (all in the table)"
                values = [v for i, v in enumerate(values) if i in kept]
            bars = [
                Bar(v.label, v.stats.total, fmt.duration(v.stats.total) + ("  straggler" if v.straggler else ""))
                for v in values
            ]
            charts.append(Chart(title, "linear", "total duration", bars))
        return charts


def _step_glob(name: str) -> str:
    return next((glob for glob in STEP_GLOBS if _glob_match(name, glob)), name)


def _glob_match(name: str, glob: str) -> bool:
    from fnmatch import fnmatchcase

    return fnmatchcase(name, glob)


def _union(spans: Iterable[tuple[int, int]]) -> int:
    """How long the union of [start, end) spans lasts."""
    total, reach = 0, None
    for a, b in sorted(spans):
        if reach is None or a > reach:
            total += b - a
            reach = b
        elif b > reach:
            total += b - reach
            reach = b
    return total


# The deltas of a value against the chosen one, as a diff's Measures (their kinds format the deltas).
VALUE_DELTAS = (
    Measure("count_delta", "count", "count"),
    Measure("total_dur_delta", "total", "duration"),
    Measure("self_dur_delta", "self", "duration"),
    Measure("max_dur_delta", "max", "duration"),
)


def _change(v: pb.DimensionsCompare.Value) -> Cell:
    if v.change == "baseline":
        return Cell("baseline")
    base_total = v.stats.total - v.total_dur_delta
    return change_cell(v.change, v.total_dur_delta, base_total)


def spread_text(spread: float) -> str:
    return "∞" if math.isinf(spread) else f"{spread:.2f}x"


def totals_table(msg: pb.DimensionsCompare, run: ReportRun) -> Table:
    rows = [
        [
            Cell(t.label, scoped_link(run, "slices", "table", dim=dim_params(run, msg.by, t.value))),
            count_cell(t.track_count),
            count_cell(t.slice_count),
            duration_cell(t.slice_time),
        ]
        for t in msg.totals
    ]
    return Table(
        f"Per {msg.by} ({fmt.plural(len(msg.totals), 'value')} with slices in scope)",
        (msg.by.capitalize(), "Tracks", "Slices", "Slice time"),
        rows,
        empty="(no slices on tracks with this dimension in scope)",
    )


def waits_table(msg: pb.DimensionsCompare) -> Table:
    rows = [
        [
            Cell(w.label),
            Cell(str(w.steps) if msg.steps else "-"),
            duration_cell(w.step_time),
            duration_cell(w.in_collectives),
            duration_cell(w.outside),
            Cell(fmt.percent(100.0 * w.in_collectives / w.step_time) if w.step_time else "-"),
            Cell(
                "likely straggler: waits least" if w.likely_straggler else "",
                css="diff-up" if w.likely_straggler else "",
            ),
        ]
        for w in msg.waits
    ]
    within = f"within its steps ({msg.steps})" if msg.steps else "over the trace (no step slices)"
    return Table(
        f"Collectives per {msg.by}, {within}: {', '.join(msg.collectives[:4])}{', ...' if len(msg.collectives) > 4 else ''}",
        (msg.by.capitalize(), "Steps", "Step time", "In collectives", "Outside", "% waiting", ""),
        rows,
        align="lrrrrrl",
    )


VIEWS = [DimensionsListView(), DimensionsCompareView()]
DIFFS: list = []
