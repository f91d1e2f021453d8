"""group_by a dimension (RFC 0039): any dimension present splits a table view's rows per value, and the label
column shows the value's label ("rank 1"). The value of a track is its effective dimension's; of a thread,
its tracks' (having none, its process's); of a process, its own and its threads' tracks' (as dim scope).
Tracks without the dimension make a group of their own, "(no rank)".

Also the per-group duration statistics (count, total, min, avg, nearest-rank percentiles, max) that the slices
histogram and `dimensions compare` share.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..schema import REPORT_PERCENTILES
from . import report_pb2 as pb
from .base import ReportRun, View, percentile_index
from .scope import MAX_TOP, ReportError, shown

# A dimension value as text (the int as its digits), the form group_value and dim= take.
VALUE_TEXT = "coalesce(CAST({d}.int_value AS TEXT), {d}.string_value)"


def track_value(track: str) -> str:
    """The value of the :group_dim dimension of a track (a column), NULL when it has none."""
    return (
        f"(SELECT {VALUE_TEXT.format(d='g')} FROM track_dimension g WHERE g.track_id = {track} AND g.name = :group_dim)"
    )


def process_value(upid: str) -> str:
    """The value of the :group_dim dimension of a process (a column): its own and its threads' tracks'."""
    return f"""(SELECT min({VALUE_TEXT.format(d="g")}) FROM track gt
   LEFT JOIN thread gth ON gth.id = gt.utid
   JOIN track_dimension g ON g.track_id = gt.id AND g.name = :group_dim
   WHERE gt.upid = {upid} OR gt.utid IN (SELECT id FROM thread WHERE upid = {upid}))"""


def thread_value(utid: str, upid: str) -> str:
    """The value of the :group_dim dimension of a thread (columns of its utid and upid): its tracks', else (but
    for the thread dimension) its process's."""
    return f"""coalesce((SELECT min({VALUE_TEXT.format(d="g")}) FROM track gt
   JOIN track_dimension g ON g.track_id = gt.id AND g.name = :group_dim WHERE gt.utid = {utid}),
   CASE WHEN :group_dim != 'thread' THEN {process_value(upid)} END)"""


@dataclass(frozen=True)
class Grouping:
    """A dimension the rows are split by: its name and each value's label."""

    name: str
    labels: dict[str, str]  # value (as text) -> label; labels shared by several values carry the value too
    order: list[str]  # the values in the dimension's order (type, then value)

    @property
    def params(self) -> dict[str, str]:
        return {"group_dim": self.name}

    @property
    def header(self) -> str:
        return self.name.capitalize()

    def label(self, value: str | None) -> str:
        if value is None:
            return f"(no {self.name})"
        return self.labels.get(value, value)

    def rank(self, value: str | None) -> int:
        """A value's place in the dimension's order (no value last)."""
        return self.order.index(value) if value in self.order else len(self.order)


def grouping(run: ReportRun, view: View, own_keys: Sequence[str] = ()) -> Grouping | None:
    """The dimension group_by names (None when unset or one of the view's own keys); a ReportError listing the
    choices when it names neither."""
    name = run.scope.group_by
    if name is None or name in own_keys:
        return None
    names = run.dimension_names()
    if name not in names:
        choices = [*own_keys, *names]
        raise ReportError(
            f"group_by: {shown(name)} is not a grouping of {view.label()}; use "
            f"{', '.join(choices) or '(no dimension in this trace)'}",
            "group_by",
            choices,
        )
    return dimension_grouping(run, name)


def dimension_grouping(run: ReportRun, name: str) -> Grouping:
    values = run.dimension_values(name)
    labels = [v["label"] or v["value"] for v in values]
    shared = {label for label in labels if labels.count(label) > 1}
    return Grouping(
        name,
        {
            v["value"]: f"{label} ({name}={v['value']})" if label in shared else label
            for v, label in zip(values, labels)
        },
        [v["value"] for v in values],
    )


def group_stats(run: ReportRun, group: Grouping, purpose: str, source: str, params: dict) -> dict:
    """Duration statistics per group of `source`, a query of (track_id, name, d): per name and value of the
    grouping's dimension (a track's: track_values; None for tracks without it) the count, total, minimum, maximum
    and nearest-rank percentiles of d, as DurationStats. The rows are ranked here, each group's durations sorted:
    SQLite's window functions (row_number per group) took four times as long, its value lookup per row twice.
    Durations are kept as arrays of int64 (8 bytes each: a name's 3.4M instances in 27 MB), one group sorted at
    a time."""
    per_track: dict[tuple[str, int], array[int]] = {}
    for track_id, name, d in run.rows(purpose, source, params):
        found = per_track.get((name, track_id))
        if found is None:
            found = per_track[(name, track_id)] = array("q")
        found.append(d)
    values = track_values(run, group, [track_id for _, track_id in per_track])
    durations: dict[tuple[str, str | None], array[int]] = {}
    for (name, track_id), ds in per_track.items():
        found = durations.setdefault((name, values.get(track_id)), ds)
        if found is not ds:
            found.extend(ds)
    per_track.clear()
    out: dict[tuple[str, str | None], pb.DurationStats] = {}
    for key in list(durations):
        ordered = sorted(durations.pop(key))
        n, total = len(ordered), sum(ordered)
        stats = pb.DurationStats(count=n, total=total, min=ordered[0], max=max(ordered[-1], 0), avg=total // n)
        stats.p50, stats.p95, stats.p99 = (ordered[percentile_index(n, p)] for p in REPORT_PERCENTILES)
        out[key] = stats
    return out


def dim_params(run: ReportRun, name: str, value: str) -> list[str]:
    """The dim flags of a link narrowing this report to one value of a dimension (its other dims kept)."""
    return [f"{n}={v}" for n, v in run.scope.dim or () if n != name] + [f"{name}={value}"]


def track_values(run: ReportRun, group: Grouping, track_ids: Sequence[int] | None = None) -> dict[int, str]:
    """track id -> its value of the grouping's dimension, for `track_ids` (None: every track) (tracks without it
    left out)."""
    params = dict(group.params)
    if track_ids is None:
        which, among = "every track", ""
    elif not track_ids:
        return {}
    else:
        which, among = "those tracks", " AND d.track_id IN (SELECT value FROM json_each(:ids))"
        params["ids"] = json.dumps(sorted(set(track_ids)))
    rows = run.query(
        f"the {group.name} of {which}",
        f"""SELECT d.track_id, {VALUE_TEXT.format(d="d")} AS value FROM track_dimension d
WHERE d.name = :group_dim{among}""",
        params,
    )
    return {r["track_id"]: r["value"] for r in rows}


def split_per_value(
    run: ReportRun,
    group: Grouping,
    out: Any,
    fill: Callable[[ReportRun, Any], None],
    order: Callable[[Any], Any],
    totals: Sequence[str] = (),
) -> None:
    """Fills a functions view's `out` per value of the dimension: the view's own `fill` run once per value
    (dim scope narrowed to it), its rows labelled with the value, ranked together by `order` and cut to top;
    `totals` (fields of `out`) summed over the values."""
    rows = []
    notes = len(run.footnotes)
    for value in group.order:
        scope = replace(run.scope, dim=(*(run.scope.dim or ()), (group.name, value)), top=MAX_TOP)
        part = type(out)()
        fill(ReportRun(run.conn, scope, run.linker, run.noun, run.view, parent=run), part)
        for name in totals:
            setattr(out, name, getattr(out, name) + getattr(part, name))
        for row in part.rows:
            row.group_value, row.group_label = value, group.label(value)
            rows.append(row)
    del run.footnotes[notes:]  # the per-value runs' notes (top, min_count) are not this table's
    rows.sort(key=order)
    out.group_by = group.name
    out.total_rows = len(rows)
    out.rows.extend(rows[: run.scope.top])
    run.truncation(len(out.rows), out.total_rows, f"functions and {group.name} values")
