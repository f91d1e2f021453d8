"""Comparing a trace against a baseline: `baseline=` on the table views and the overview (issue 7).

A diff is a join in Python, never one query over two databases: the view's own queries
run on each database separately (each side is a plain run of the view), and the two typed
results are joined on the view's aggregation key. Keys hold names, never ids: pids, tids
and track ids differ between two recordings of one workload, so rows of one side sharing a
key (two processes called `renderer`) are summed. Value columns become Baseline / Target /
Delta; deltas are raw, with no normalization for trace length and no claim of significance.

The web handler computes each side on its own database's thread (`compute_side`) and joins
them (`join`); `run_diff` does the three steps for the command line and tests.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field, replace
from typing import Any

from . import format as fmt
from . import report_pb2 as pb
from .base import ALWAYS_ALLOWED, Cell, Link, Linker, ReportRun, Table, View
from .engine import ReportResult
from .scope import MAX_TOP, ReportError, Scope
from .views import NOUNS, find_view

# Rows each side's view returns for the join: all of them, up to the largest top there is.
JOIN_TOP = MAX_TOP
# Trace (or covered range) durations differing by more than this get a footnote.
MATERIAL_DURATION_CHANGE = 0.10
# Numbers inside names (addresses, ids, tids): what tells apart two names of one thing in two recordings.
_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")
# Flags whose meaning is per view: not carried into links to other views.
VIEW_LOCAL = frozenset({"sort", "name", "min_count", "baseline", "top"})


@dataclass(frozen=True)
class Measure:
    field: str  # the typed row's field; the diff row has `<field>_delta`
    label: str  # column heading: "dur" -> "Baseline dur"
    kind: str  # duration | count | percent | value
    merge: str = "sum"  # rows of one side sharing a key: sum | min | max | avg (weighted by `count`)


# -- formatting -----------------------------------------------------------------------------------


def show(kind: str, value: float) -> str:
    if kind == "duration":
        return fmt.duration(value)
    if kind == "percent":
        return fmt.percent(value)
    if kind == "value":
        return fmt.count(value) if abs(value) >= 1_000 else f"{value:.4g}"
    return fmt.count(value)


def signed(kind: str, delta: float) -> str:
    """A delta with its sign spelled out: +290ms, -93ms, +12, -1.5pp; 0 when equal."""
    if delta == 0:
        return "0"
    if kind == "percent":
        return f"{delta:+.1f}pp"
    text = show(kind, abs(delta))
    return ("+" if delta > 0 else "-") + text


def relative(delta: float, base: float) -> str:
    pct = 100.0 * delta / abs(base)
    return f"{pct:+.1f}%" if abs(pct) < 10 else f"{pct:+.0f}%"


def owner_key(process: str, pid: int, thread: str, tid: int, cpu: int | None, gpu: int | None) -> str:
    """Who a track belongs to, by name only (ids differ between recordings)."""
    if thread or tid:
        return f"thread {thread or '?'}" + (f" ({process})" if process else "")
    if process or pid:
        return f"process {process or '?'}"
    if cpu is not None:
        return f"cpu {cpu}"
    if gpu is not None:
        return f"gpu {gpu}"
    return "global"


def _optional(row, name: str) -> int | None:
    return getattr(row, name) if row.HasField(name) else None


# -- what each view's diff joins on and shows -------------------------------------------------------


@dataclass
class JoinedRow:
    key: tuple[str, ...]
    baseline: Any  # the view's Row (summed over the key), None when absent
    target: Any
    baseline_rows: int
    target_rows: int
    deltas: dict[str, float]
    change: str


class DiffSpec:
    """How one table view is diffed: its key, value columns and sort keys."""

    noun = ""
    view = ""
    field = ""  # the Report oneof field of the diff
    section = ""  # its OverviewDiff field
    title = ""
    what = ""  # what a row is, plural ("slice names")
    key_fields: tuple[str, ...] = ()
    key_headers: tuple[str, ...] = ()
    measures: tuple[Measure, ...] = ()
    sorts: dict[str, str] = {}  # sort key -> measure field ("" = by key)
    display: tuple[str, ...] = ()  # measures the tables show: the sort's first, then these
    row_filters: dict[str, str] = {}  # flag -> measure it hides rows below; either side passing keeps a row
    summed_ids: tuple[str, ...] = ()  # typed-row fields cleared when several rows are summed
    counts_rows = True  # the diff Row has baseline_rows / target_rows

    @property
    def label(self) -> str:
        return f"{self.noun} {self.view}"

    def plain_view(self) -> View:
        return NOUNS[self.noun][self.view]

    def key(self, row) -> tuple[str, ...]:
        raise NotImplementedError

    def default_sort(self, base_msg, target_msg) -> str:
        return next(iter(self.sorts))

    def measure(self, field_name: str) -> Measure:
        return next(m for m in self.measures if m.field == field_name)

    def fill_extra(self, out, base_msg, target_msg) -> None:
        """Per-view fields of the diff message besides rows and summary."""

    def key_cells(self, row, run: ReportRun, out) -> list[Cell]:
        return [Cell(getattr(row, f) or "-") for f in self.key_fields]

    def what_of(self, out) -> str:
        return self.what

    def display_of(self, out) -> tuple[str, ...]:
        return self.display

    # -- the join ------------------------------------------------------------------------------
    def merge(self, rows: list) -> Any:
        merged = type(rows[0])()
        merged.CopyFrom(rows[0])
        if len(rows) == 1:
            return merged
        for m in self.measures:
            values = [getattr(r, m.field) for r in rows]
            if m.merge == "sum":
                value = sum(values)
            elif m.merge in ("min", "max"):
                counted = [v for r, v in zip(rows, values) if getattr(r, "count", 1)] or values
                value = min(counted) if m.merge == "min" else max(counted)
            else:  # avg, weighted by the sample count
                total = sum(r.count for r in rows)
                value = sum(v * r.count for r, v in zip(rows, values)) / total if total else 0.0
            setattr(merged, m.field, value)
        for name in self.summed_ids:
            merged.ClearField(name)
        return merged

    def join(self, scope: Scope, base_msg, target_msg) -> tuple[list[JoinedRow], str]:
        """Both sides' rows joined on the key, row filters applied, ranked; and the sort key used."""
        groups: dict[tuple[str, ...], tuple[list, list]] = {}
        for side, msg in ((0, base_msg), (1, target_msg)):
            if msg is None:
                continue
            for row in msg.rows:
                groups.setdefault(self.key(row), ([], []))[side].append(row)
        joined = []
        for key, (base_rows, target_rows) in groups.items():
            base = self.merge(base_rows) if base_rows else None
            target = self.merge(target_rows) if target_rows else None
            if not self._passes(scope, base) and not self._passes(scope, target):
                continue
            deltas = {
                m.field: (getattr(target, m.field) if target is not None else 0)
                - (getattr(base, m.field) if base is not None else 0)
                for m in self.measures
            }
            if base is None:
                change = "added"
            elif target is None:
                change = "removed"
            else:
                # A share of the trace moves with the trace's length: only raw values make a change.
                change = (
                    "changed" if any(deltas[m.field] for m in self.measures if m.kind != "percent") else "unchanged"
                )
            joined.append(JoinedRow(key, base, target, len(base_rows), len(target_rows), deltas, change))
        sort = scope.sort or self.default_sort(base_msg, target_msg)
        by = self.sorts[sort]
        if by:
            others = [m.field for m in self.measures if m.field != by and m.kind != "percent"]
            joined.sort(key=lambda r: (-abs(r.deltas[by]), *(-abs(r.deltas[f]) for f in others), r.key))
        else:
            joined.sort(key=lambda r: r.key)
        return joined, sort

    def _passes(self, scope: Scope, row) -> bool:
        if row is None:
            return False
        return all(
            getattr(scope, flag) is None or getattr(row, name) >= getattr(scope, flag)
            for flag, name in self.row_filters.items()
        )

    def fill(self, out, scope: Scope, base_msg, target_msg, top: int, moved_only: bool) -> Filled:
        """Fills the view's diff message; returns what the footnotes need."""
        joined, sort = self.join(scope, base_msg, target_msg)
        s = out.summary
        s.sort, s.sort_column, s.total_rows = sort, self.sorts[sort], len(joined)
        for r in joined:
            setattr(s, r.change, getattr(s, r.change) + 1)
        for side, msg in (("baseline", base_msg), ("target", target_msg)):
            if msg is not None:
                setattr(s, f"{side}_total_rows", msg.total_rows)
                setattr(s, f"{side}_joined_rows", len(msg.rows))
        listed = [r for r in joined if r.change != "unchanged"] if moved_only else joined
        for r in listed[:top]:
            row = out.rows.add(change=r.change)
            for name, value in zip(self.key_fields, r.key):
                setattr(row, name, value)
            if r.baseline is not None:
                row.baseline.CopyFrom(r.baseline)
            if r.target is not None:
                row.target.CopyFrom(r.target)
            if self.counts_rows:
                row.baseline_rows, row.target_rows = r.baseline_rows, r.target_rows
            for name, delta in r.deltas.items():
                setattr(row, f"{name}_delta", delta)
        self.fill_extra(out, base_msg, target_msg)
        return Filled(len(listed) - min(top, len(listed)), renamed_pairs(joined))

    # -- rendering ----------------------------------------------------------------------------------
    def shown_measures(self, out) -> list[Measure]:
        """The sort's column (by name: the first displayed one), then the next displayed one."""
        display = self.display_of(out)
        first = out.summary.sort_column or display[0]
        fields = [first] + [f for f in display if f != first]
        return [self.measure(f) for f in fields[:2]]

    def counts_text(self, out) -> str:
        s = out.summary
        parts = [f"{s.added} added", f"{s.removed} removed", f"{s.changed} changed", f"{s.unchanged} unchanged"]
        order = f"by {s.sort} delta" if s.sort_column else "by name"
        return f"{s.total_rows} {self.what_of(out)}: {', '.join(parts)}; {order}"

    def table(self, out, run: ReportRun, moved_only: bool = False) -> Table:
        measures = self.shown_measures(out)
        rank = self.measure(out.summary.sort_column) if out.summary.sort_column else measures[0]
        headers = list(self.key_headers)
        for m in measures:
            headers += [f"Baseline {m.label}", f"Target {m.label}", f"Delta {m.label}"]
        headers.append("Change")
        rows = []
        for r in out.rows:
            base = r.baseline if r.HasField("baseline") else None
            target = r.target if r.HasField("target") else None
            cells = self.key_cells(r, run, out)
            for m in measures:
                delta = getattr(r, f"{m.field}_delta")
                cells += [
                    Cell(show(m.kind, getattr(base, m.field)) if base is not None else "(absent)"),
                    Cell(show(m.kind, getattr(target, m.field)) if target is not None else "(absent)"),
                    Cell(signed(m.kind, delta), css=_direction(delta)),
                ]
            cells.append(
                _change_cell(
                    r.change, getattr(r, f"{rank.field}_delta"), getattr(base, rank.field) if base is not None else 0
                )
            )
            rows.append(cells)
        title = f"{self.title} vs baseline ({self.counts_text(out)})"
        if moved_only and not out.rows and out.summary.total_rows:
            empty = "(no changes in scope)"
        else:
            empty = f"(no {self.what_of(out)} in scope on either side)"
        align = "l" * len(self.key_headers) + "rrr" * len(measures) + "l"
        return Table(title, tuple(headers), rows, align=align, empty=empty)


@dataclass
class Filled:
    hidden: int  # rows below top
    renamed: int  # added/removed pairs that differ only in numbers


def renamed_pairs(joined: list[JoinedRow]) -> int:
    """Added/removed pairs whose keys differ only in numbers (`object at 0x7f28...`): the join is by
    exact name (the RFC leaves canonicalizing such names open), so a footnote points them out."""
    removed: dict[tuple[str, ...], int] = {}
    for r in joined:
        if r.change == "removed":
            canon = tuple(_NUMBERS.sub("#", k) for k in r.key)
            removed[canon] = removed.get(canon, 0) + 1
    pairs = 0
    for r in joined:
        canon = tuple(_NUMBERS.sub("#", k) for k in r.key)
        if r.change == "added" and removed.get(canon):
            removed[canon] -= 1
            pairs += 1
    return pairs


def _renamed_note(run: ReportRun, spec: DiffSpec, pairs: int, link: Link) -> None:
    if pairs:
        run.footnote(
            f"{pairs} added {spec.what} match a removed one except for numbers in them (addresses, ids): "
            "rows are joined by exact name",
            link,
        )


def _direction(delta: float) -> str:
    return "diff-up" if delta > 0 else "diff-down" if delta < 0 else ""


def _change_cell(change: str, delta: float, base: float) -> Cell:
    if change in ("added", "removed"):
        return Cell(change, css=f"diff-{change}", title=f"only in the {'target' if change == 'added' else 'baseline'}")
    if change == "unchanged":
        return Cell("same")
    if delta and base:
        return Cell(relative(delta, base), css=_direction(delta), title="relative to the baseline")
    return Cell("changed", css=_direction(delta))


def single_link(run: ReportRun, noun: str, view: str, database: str = "", **changes: str | None) -> Link:
    """A single-trace report (of the target, or with database="baseline" of the baseline), keeping
    the scope flags that view takes."""
    target = NOUNS.get(noun, {}).get(view)
    allowed = target.flags if target is not None else frozenset()
    params = {k: v for k, v in run.scope.to_params().items() if k in allowed and k not in VIEW_LOCAL}
    for key, value in changes.items():
        if value is None:
            params.pop(key, None)
        else:
            params[key] = str(value)
    return Link.to(noun, view, params, database=database)


def _side(row) -> str:
    return "baseline" if row.change == "removed" else ""


def _glob(text: str) -> str:
    from .views.tracks import glob_escape

    return glob_escape(text)


class SlicesDiff(DiffSpec):
    noun, view, field, section = "slices", "table", "slices_table_diff", "slices"
    title, what = "Slices", "slice names"
    key_fields, key_headers = ("name",), ("Name",)
    measures = (
        Measure("count", "count", "count"),
        Measure("total_dur", "dur", "duration"),
        Measure("percent_of_trace", "% of trace", "percent"),
        Measure("max_dur", "max", "duration", "max"),
    )
    sorts = {"dur": "total_dur", "count": "count", "max": "max_dur", "name": ""}
    display = ("total_dur", "count")
    row_filters = {"min_count": "count"}
    counts_rows = False

    def key(self, row):
        return (row.name,)

    def fill_extra(self, out, base_msg, target_msg):
        out.baseline_total_slices = base_msg.total_slices if base_msg is not None else 0
        out.target_total_slices = target_msg.total_slices if target_msg is not None else 0

    def key_cells(self, row, run, out):
        return [Cell(row.name, single_link(run, "slices", "inspect", _side(row), name=row.name))]


class ProcessesDiff(DiffSpec):
    noun, view, field, section = "processes", "table", "processes_table_diff", "processes"
    title, what = "Processes", "process names"
    key_fields, key_headers = ("name",), ("Process",)
    measures = (
        Measure("cpu_time", "CPU", "duration"),
        Measure("slice_count", "slices", "count"),
        Measure("thread_count", "threads", "count"),
        Measure("percent_of_trace", "% of trace", "percent"),
    )
    sorts = {"cpu": "cpu_time", "slices": "slice_count", "threads": "thread_count", "name": ""}
    display = ("cpu_time", "slice_count")
    row_filters = {"min_count": "slice_count"}
    summed_ids = ("upid", "pid", "top_threads")

    def key(self, row):
        return (row.name,)

    @staticmethod
    def _has_sched(msg) -> bool:
        return msg is not None and msg.top_threads_by == "cpu_time"

    def default_sort(self, base_msg, target_msg):
        # Without scheduling data on either side every CPU time is 0: slices move instead.
        return "cpu" if self._has_sched(base_msg) or self._has_sched(target_msg) else "slices"

    def display_of(self, out):
        return self.display if out.top_threads_by == "cpu_time" else ("slice_count", "thread_count")

    def fill_extra(self, out, base_msg, target_msg):
        sched = self._has_sched(base_msg) or self._has_sched(target_msg)
        out.top_threads_by = "cpu_time" if sched else "slice_count"

    def key_cells(self, row, run, out):
        return [
            Cell(
                row.name or "(no name)",
                single_link(run, "processes", "table", _side(row), process=_glob(row.name)) if row.name else None,
            )
        ]


class SchedulingDiff(DiffSpec):
    noun, view, field, section = "scheduling", "summary", "scheduling_summary_diff", "scheduling"
    title, what = "Scheduling", "threads"
    key_fields, key_headers = ("name", "process"), ("Thread", "Process")
    measures = (
        Measure("cpu_time", "CPU", "duration"),
        Measure("runnable", "runnable", "duration"),
        Measure("sleeping", "sleeping", "duration"),
        Measure("percent_of_trace", "% of trace", "percent"),
    )
    sorts = {"cpu": "cpu_time", "runnable": "runnable", "sleeping": "sleeping", "name": ""}
    display = ("cpu_time", "runnable")
    row_filters = {"min_duration": "cpu_time"}
    summed_ids = ("tid", "pid")

    def key(self, row):
        return (row.name, row.process)

    def fill_extra(self, out, base_msg, target_msg):
        msg = target_msg if target_msg is not None else base_msg
        out.group_by = msg.group_by if msg is not None else "thread"
        out.baseline_cpu_count = base_msg.cpu_count if base_msg is not None else 0
        out.target_cpu_count = target_msg.cpu_count if target_msg is not None else 0

    def what_of(self, out):
        return "processes" if out.group_by == "process" else "threads"

    def table(self, out, run, moved_only=False):
        table = super().table(out, run, moved_only)
        if out.group_by == "process":  # the key is the process: no thread column
            table.headers = ("Process",) + tuple(table.headers[2:])
            table.rows = [row[1:] for row in table.rows]
            table.align = table.align[1:]
        return table

    def key_cells(self, row, run, out):
        side = _side(row)
        if out.group_by == "process":
            link = (
                single_link(run, "scheduling", "summary", side, process=_glob(row.name), group_by=None)
                if row.name != "(no process)"
                else None
            )
            return [Cell(""), Cell(row.name, link)]
        link = single_link(
            run,
            "scheduling",
            "timeline",
            side,
            thread=_glob(row.name),
            **({"process": _glob(row.process)} if row.process else {}),
        )
        return [Cell(row.name or "?", link if row.name else None), Cell(row.process or "-")]


class TracksDiff(DiffSpec):
    noun, view, field, section = "tracks", "table", "tracks_table_diff", ""
    title, what = "Tracks", "tracks"
    key_fields, key_headers = ("name", "type", "owner"), ("Track", "Type", "Owner")
    measures = (Measure("event_count", "events", "count"),)
    sorts = {"count": "event_count", "name": ""}
    display = ("event_count",)
    row_filters = {"min_count": "event_count"}
    summed_ids = ("id", "pid", "tid")

    def key(self, row):
        return (row.name, row.type, owner_key(row.process, row.pid, row.thread, row.tid, _optional(row, "cpu"), None))

    def key_cells(self, row, run, out):
        link = single_link(run, "tracks", "table", _side(row), track=_glob(row.name)) if row.name else None
        return [Cell(row.name or "-", link), Cell(row.type), Cell(row.owner)]


class CountersDiff(DiffSpec):
    noun, view, field, section = "counters", "list", "counters_list_diff", "counters"
    title, what = "Counters", "counters"
    key_fields, key_headers = ("name", "owner"), ("Counter", "Owner")
    measures = (
        Measure("count", "samples", "count"),
        Measure("avg", "avg", "value", "avg"),
        Measure("min", "min", "value", "min"),
        Measure("max", "max", "value", "max"),
    )
    sorts = {"count": "count", "avg": "avg", "max": "max", "name": ""}
    display = ("count", "avg")
    row_filters = {"min_count": "count"}
    summed_ids = ("track_id", "pid", "tid", "scope")

    def key(self, row):
        return (
            row.name,
            owner_key(row.process, row.pid, row.thread, row.tid, _optional(row, "cpu"), _optional(row, "gpu")),
        )

    def key_cells(self, row, run, out):
        sample = row.target if row.HasField("target") else row.baseline
        owner: dict[str, str | None] = {}
        if sample.thread or sample.tid:
            owner = {"thread": _glob(sample.thread)} if sample.thread else {}
        elif sample.process:
            owner = {"process": _glob(sample.process)}
        elif sample.HasField("cpu"):
            owner = {"cpu": str(sample.cpu)}
        link = single_link(run, "counters", "timeline", _side(row), name=_glob(row.name), **owner)
        return [Cell(row.name, link), Cell(row.owner)]


SPECS: dict[tuple[str, str], DiffSpec] = {
    (s.noun, s.view): s for s in (ProcessesDiff(), TracksDiff(), SlicesDiff(), SchedulingDiff(), CountersDiff())
}


def accepted_labels() -> list[str]:
    return ["overview"] + [spec.label for key, spec in SPECS.items() if key[1] in NOUNS.get(key[0], {})]


def overview_sections() -> list[tuple[DiffSpec, str]]:
    """(spec, Overview field) of the overview's sections, in its order."""
    from .views.overview import SECTIONS

    return [
        (SPECS[(noun, view)], name)
        for noun, view, name in SECTIONS
        if (noun, view) in SPECS and view in NOUNS.get(noun, {})
    ]


# -- the three steps ------------------------------------------------------------------------------


@dataclass
class DiffPlan:
    """A validated diff request: the view, the specs it joins, the scope as given and per side."""

    view: View
    specs: list[DiffSpec]
    scope: Scope  # as given, baseline included
    params: dict[str, str]  # the flags as given, baseline excluded

    @property
    def is_overview(self) -> bool:
        return not self.view.noun

    def side_scope(self, spec: DiffSpec, flags: frozenset[str]) -> Scope:
        """What a side runs: the view's flags, no sort or row filters (applied after the join), every row."""
        keep = {
            k: v
            for k, v in self.params.items()
            if k in flags and k != "sort" and k not in spec.row_filters and k != "top"
        }
        # top is not among the flags given, so the side's own links and footnotes do not carry it.
        return replace(Scope.parse(keep), top=JOIN_TOP)


def prepare(noun: str | None, view_name: str | None, params: dict[str, str]) -> DiffPlan:
    """Validates a diff request without touching a database; ReportError for anything wrong."""
    view = find_view(noun, view_name)
    scope = Scope.parse(params)
    if not view.noun:
        specs = [spec for spec, _ in overview_sections()]
    elif (view.noun, view.name) in SPECS:
        specs = [SPECS[(view.noun, view.name)]]
    else:
        accepted = accepted_labels()
        raise ReportError(
            f"{view.label()} does not take baseline; views that compare against a baseline: {', '.join(accepted)}",
            "baseline",
            accepted,
        )
    if scope.baseline is None:
        raise ReportError("baseline: name the database to compare against", "baseline")
    plain = {k: v for k, v in scope.given if k != "baseline"}
    view.check(Scope.parse(plain))
    if len(specs) == 1 and scope.sort is not None and scope.sort not in specs[0].sorts:
        sorts = list(specs[0].sorts)
        raise ReportError(
            f"sort: {scope.sort!r} is not a sort key of a {view.label()} diff; use one of {', '.join(sorts)}",
            "sort",
            sorts,
        )
    return DiffPlan(view, specs, scope, plain)


@dataclass
class Side:
    """One database's half of a diff: its run (trace facts, queries, footnotes) and typed results."""

    database: str
    run: ReportRun
    messages: dict[tuple[str, str], Any] = field(default_factory=dict)  # None: the noun has no data


def is_trace_connection(conn: sqlite3.Connection) -> bool:
    found = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('slice', 'trace_bounds', 'trace_file')"
    ).fetchone()[0]
    return found == 3


def _new_result(view: View):
    return type(getattr(pb.Report(), view.result_field))()


def compute_side(conn: sqlite3.Connection, plan: DiffPlan, linker: Linker, database: str) -> Side:
    """Runs the plan's view(s) on one database, as the single-trace report would (minus sort and
    row filters, with every row)."""
    try:
        trace = is_trace_connection(conn)
    except sqlite3.DatabaseError as e:
        raise ReportError(f"{database}: not a trace database ({e})") from None
    if not trace:
        raise ReportError(f"{database} is not a trace database (no slice and trace_bounds tables)")
    view = plan.view
    spec = plan.specs[0]
    run = ReportRun(conn, plan.side_scope(spec, view.flags), linker, view.noun, view.name)
    run.lean = True
    side = Side(database, run)
    for spec in plan.specs:
        plain = spec.plain_view()
        section = run
        if plan.is_overview:
            section = ReportRun(conn, plan.side_scope(spec, plain.flags), linker, spec.noun, spec.view, parent=run)
            if not plain.has_data(section):
                side.messages[(spec.noun, spec.view)] = None
                continue
        msg = _new_result(plain)
        plain.compute(section, msg)
        side.messages[(spec.noun, spec.view)] = msg
    return side


class DiffView(View):
    """The diff of a view (or of the overview): renders the joined rows."""

    def __init__(self, plan: DiffPlan) -> None:
        self.plan = plan
        self.noun, self.name = plan.view.noun, plan.view.name
        self.title = f"{plan.view.title} vs baseline"
        self.result_field = "overview_diff" if plan.is_overview else plan.specs[0].field
        self.description = (
            f"{plan.view.description} Compared with a baseline trace: the view runs on each "
            "database on its own and rows are joined by name; deltas are target minus baseline, "
            "raw (not normalized for trace length)."
        )

    def label(self) -> str:
        return f"{self.plan.view.label()} vs baseline"

    def tables(self, msg, run: ReportRun) -> list[Table]:
        if not self.plan.is_overview:
            return [self.plan.specs[0].table(msg, run)]
        out = []
        for spec, name in overview_sections():
            if msg.HasField(name):
                out.append(spec.table(getattr(msg, name), run, moved_only=True))
        for absent in msg.absent:
            out.append(Table(f"{absent.noun.replace('-', ' ').title()}: ({absent.reason})", (), []))
        return out


def _covered(run: ReportRun) -> int:
    """How much of the trace the report covers: its range clipped to the trace."""
    start, end = run.time_range()
    return max(min(end, run.trace.end) - max(start, run.trace.start), 0)


def join(plan: DiffPlan, baseline: Side, target: Side, linker: Linker) -> ReportResult:
    """The diff report of two computed sides. `linker` is the target's, with `.baseline` set."""
    view = DiffView(plan)
    run = ReportRun(None, plan.scope, linker, view.noun, view.name, parent=target.run)  # type: ignore[arg-type]
    run.queries, run.footnotes, run.lean = [], [], False
    report = pb.Report(noun=view.noun, view=view.name)
    out = getattr(report, view.result_field)
    out.SetInParent()
    if plan.is_overview:
        _join_overview(plan, baseline, target, run, out)
    else:
        spec = plan.specs[0]
        key = (spec.noun, spec.view)
        filled = spec.fill(
            out, plan.scope, baseline.messages[key], target.messages[key], plan.scope.top, moved_only=False
        )
        run.truncation(len(out.rows), len(out.rows) + filled.hidden, spec.what)
        _incomplete(run, spec, out.summary)
        _renamed_note(run, spec, filled.renamed, run.link(spec.noun, spec.view, sort="name", top=str(JOIN_TOP)))
        if out.rows:
            top = out.rows[0]
            link = next((c.link for c in spec.key_cells(top, run, out) if c.link is not None), None)
            if link is not None:
                where = "baseline" if top.change == "removed" else "target"
                run.next_step(
                    f"{' / '.join(v for v in (getattr(top, f) for f in spec.key_fields) if v)} "
                    f"(largest movement) in the {where}",
                    link,
                )
    _duration_note(run, baseline, target, plan)
    for side, label in ((baseline, "baseline"), (target, "target")):
        for note in side.run.footnotes:
            if f"below top {JOIN_TOP};" not in note.text:  # replaced by the join's own footnote
                report.footnotes.add(text=f"{label}: {note.text}", url=note.url, command=note.command)
    report.footnotes.extend(run.footnotes)
    plain_params = dict(plan.params)
    run.next_step(f"{plan.view.title}: the target alone", Link.to(view.noun, view.name, plain_params))
    run.next_step(
        f"{plan.view.title}: the baseline alone", Link.to(view.noun, view.name, plain_params, database="baseline")
    )
    run.next_step("The SQL behind this report", Link.to(view.noun, view.name, plan.scope.to_params(), format="sql"))
    report.next_steps.extend(run.next_steps)
    report.context.CopyFrom(run.context())
    report.context.database = target.database
    base_context = baseline.run.context()
    base_context.scope.clear()
    base_context.scope.update(plan.params)
    base_context.database = baseline.database
    report.baseline.CopyFrom(base_context)
    for side, label in ((baseline, "baseline"), (target, "target")):
        for q in side.run.queries:
            copy = report.queries.add()
            copy.CopyFrom(q)
            copy.purpose = f"{label}: {q.purpose}"
    return ReportResult(report, view, run)


def _join_overview(plan: DiffPlan, baseline: Side, target: Side, run: ReportRun, out: pb.OverviewDiff) -> None:
    from .views.absent import NOT_YET

    for spec, name in overview_sections():
        key = (spec.noun, spec.view)
        base_msg, target_msg = baseline.messages.get(key), target.messages.get(key)
        if base_msg is None and target_msg is None:
            out.absent.add(noun=spec.noun, reason="not present in either trace")
            continue
        section = run.section(spec.noun, spec.view, spec.plain_view().flags | ALWAYS_ALLOWED | {"baseline"})
        digest = getattr(out, name)
        filled = spec.fill(digest, section.scope, base_msg, target_msg, plan.scope.top, moved_only=True)
        if filled.hidden:
            section.footnote(
                f"{filled.hidden} more moved {spec.what} below top {plan.scope.top}; see the {spec.label} diff",
                section.link(spec.noun, spec.view),
            )
        _incomplete(section, spec, digest.summary)
        _renamed_note(section, spec, filled.renamed, section.link(spec.noun, spec.view, sort="name", top=str(JOIN_TOP)))
        run.next_step(f"{spec.noun}: {spec.plain_view().title} vs baseline", section.link(spec.noun, spec.view))
    for noun in NOT_YET:
        out.absent.add(noun=noun, reason="not present in either trace")
    # Overview nouns with no diff yet (the callstack nouns): said, not silently dropped.
    from .views.overview import SECTIONS

    for noun, view, _ in SECTIONS:
        if (noun, view) not in SPECS and view in NOUNS.get(noun, {}):
            out.absent.add(noun=noun, reason="not compared: no baseline diff for this noun yet")


def _incomplete(run: ReportRun, spec: DiffSpec, s: pb.DiffSummary) -> None:
    """A side with more rows than were joined: keys beyond them may show as added or removed."""
    for side in ("baseline", "target"):
        total, joined = getattr(s, f"{side}_total_rows"), getattr(s, f"{side}_joined_rows")
        if total > joined:
            run.footnote(
                f"the {side} has {total} {spec.what} in scope and only the top {joined} by the view's "
                f"default sort were compared: rows beyond them may show as added or removed; narrow the "
                f"scope (time=, process=, name=)",
                run.link(spec.noun, spec.view),
            )


def _duration_note(run: ReportRun, baseline: Side, target: Side, plan: DiffPlan) -> None:
    base_dur, target_dur = _covered(baseline.run), _covered(target.run)
    if not target_dur or not base_dur:
        return
    change = (base_dur - target_dur) / target_dur
    if abs(change) <= MATERIAL_DURATION_CHANGE:
        return
    what = "trace" if plan.scope.time is None else "covered range"
    longer = "longer" if change > 0 else "shorter"
    run.footnote(
        f"the baseline {what} is {abs(change) * 100:.0f}% {longer} than the target's "
        f"({fmt.duration(base_dur)} vs {fmt.duration(target_dur)}); deltas are raw, not normalized",
        Link.to(plan.view.noun, plan.view.name, plan.params, database="baseline"),
    )


def run_diff(
    target_conn: sqlite3.Connection,
    baseline_conn: sqlite3.Connection,
    noun: str | None,
    view_name: str | None,
    params: dict[str, str],
    linker: Linker,
    baseline_linker: Linker,
    target_db: str,
    baseline_db: str,
) -> ReportResult:
    """A diff report over two open databases (the command line and tests)."""
    plan = prepare(noun, view_name, params)
    target = compute_side(target_conn, plan, linker, target_db)
    baseline = compute_side(baseline_conn, plan, baseline_linker, baseline_db)
    return join(plan, baseline, target, with_baseline(linker, baseline_linker))


def with_baseline(linker: Linker, baseline_linker: Linker) -> Linker:
    """The diff page's linker: the target's, resolving links to the baseline's pages too."""
    joined = Linker(linker.url_base, linker.db_arg, linker.sql_url)
    joined.baseline = baseline_linker
    return joined


__all__ = [
    "prepare",
    "compute_side",
    "join",
    "run_diff",
    "with_baseline",
    "DiffPlan",
    "Side",
    "SPECS",
    "accepted_labels",
    "is_trace_connection",
]
