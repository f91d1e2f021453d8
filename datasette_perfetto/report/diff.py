"""Comparing a trace against a baseline: `baseline=` on the table views and the overview (issue 7).

A diff is a join in Python, never one query over two databases: the view's own queries
run on each database separately (each side is a plain run of the view), and the two typed
results are joined on the view's aggregation key by the view's DiffSpec (diff_spec.py; each
noun's module holds its specs).

The web handler computes each side on its own database's thread (`compute_side`) and joins
them (`join`); `run_diff` does the three steps for the command line and tests.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field, replace
from typing import Any

from ..metadata import is_trace_connection, not_a_trace_database
from . import format as fmt
from . import report_pb2 as pb
from .base import ALWAYS_ALLOWED, DIM_SEPARATOR, Link, Linker, ReportResult, ReportRun, Table, View
from .diff_spec import DiffSpec
from .scope import MAX_TOP, Params, ReportError, Scope, grouped, shown
from .views import DIFF_SPECS, NOUNS, find_view
from .views.overview import SECTIONS

# Rows each side's view returns for the join: all of them, up to the largest top there is.
JOIN_TOP = MAX_TOP
# Trace (or covered range) durations differing by more than this get a footnote.
MATERIAL_DURATION_CHANGE = 0.10

SPECS = DIFF_SPECS


def plain_view(spec: DiffSpec) -> View:
    """The single-trace view a spec compares."""
    return NOUNS[spec.noun][spec.view]


def accepted_labels() -> list[str]:
    return ["overview"] + [spec.label for spec in SPECS.values()]


def overview_sections() -> list[tuple[DiffSpec, str]]:
    """(spec, Overview field) of the overview's sections, in its order."""
    return [(SPECS[(noun, view)], name) for noun, view, name in SECTIONS if (noun, view) in SPECS]


# -- the three steps ------------------------------------------------------------------------------


@dataclass
class DiffPlan:
    """A validated diff request: the view, the specs it joins, the scope as given and per side."""

    view: View
    specs: list[DiffSpec]
    scope: Scope  # as given, baseline included
    params: dict[str, str | list[str]]  # the flags as given, baseline excluded

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
        return replace(Scope.parse(keep), top=JOIN_TOP, **spec.side_changes)


def prepare(noun: str | None, view_name: str | None, params: Params) -> DiffPlan:
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
    plain = grouped([(k, v) for k, v in scope.given if k != "baseline"])
    view.check(Scope.parse(plain))
    if len(specs) == 1 and scope.sort is not None and scope.sort not in specs[0].sorts:
        sorts = list(specs[0].sorts)
        raise ReportError(
            f"sort: {shown(scope.sort)} is not a sort key of a {view.label()} diff; use one of {', '.join(sorts)}",
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


def _new_result(view: View) -> Any:
    return type(getattr(pb.Report(), view.result_field))()


def compute_side(conn: sqlite3.Connection, plan: DiffPlan, linker: Linker, database: str) -> Side:
    """Runs the plan's view(s) on one database, as the single-trace report would (minus sort and
    row filters, with every row)."""
    try:
        trace = is_trace_connection(conn)
    except sqlite3.DatabaseError as e:
        raise ReportError(f"{database}: not a trace database ({e})") from None
    if not trace:
        raise ReportError(not_a_trace_database(database))
    view = plan.view
    spec = plan.specs[0]
    try:
        run = ReportRun(conn, plan.side_scope(spec, view.flags), linker, view.noun, view.name)
    except ReportError as e:  # a dim value one side lacks: say which
        raise ReportError(f"{database}: {e.message}", e.param, e.options) from None
    run.lean = True
    side = Side(database, run)
    for spec in plan.specs:
        plain = plain_view(spec)
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

    def tables(self, msg: Any, run: ReportRun) -> list[Table]:
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
        spec.hidden_note(run, len(out.rows), filled.hidden)
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
    base_context.scope.update({k: v if isinstance(v, str) else DIM_SEPARATOR.join(v) for k, v in plan.params.items()})
    base_context.database = baseline.database
    report.baseline.CopyFrom(base_context)
    for side, label in ((baseline, "baseline"), (target, "target")):
        for q in side.run.queries:
            copy = report.queries.add()
            copy.CopyFrom(q)
            copy.purpose = f"{label}: {q.purpose}"
    return ReportResult(report, view, run)


def _join_overview(plan: DiffPlan, baseline: Side, target: Side, run: ReportRun, out: pb.OverviewDiff) -> None:
    for spec, name in overview_sections():
        key = (spec.noun, spec.view)
        base_msg, target_msg = baseline.messages.get(key), target.messages.get(key)
        if base_msg is None and target_msg is None:
            out.absent.add(noun=spec.noun, reason="not present in either trace")
            continue
        section = run.section(spec.noun, spec.view, plain_view(spec).flags | ALWAYS_ALLOWED | {"baseline"})
        digest = getattr(out, name)
        filled = spec.fill(digest, section.scope, base_msg, target_msg, plan.scope.top, moved_only=True)
        if filled.hidden:
            section.footnote(
                f"{filled.hidden} more moved {spec.what} below top {plan.scope.top}; see the {spec.label} diff",
                section.link(spec.noun, spec.view),
            )
        _incomplete(section, spec, digest.summary)
        _renamed_note(section, spec, filled.renamed, section.link(spec.noun, spec.view, sort="name", top=str(JOIN_TOP)))
        run.next_step(f"{spec.noun}: {plain_view(spec).title} vs baseline", section.link(spec.noun, spec.view))
    # Overview nouns with no diff yet (the callstack nouns): said, not silently dropped.
    for noun, view, _ in SECTIONS:
        if (noun, view) not in SPECS:
            out.absent.add(noun=noun, reason="not compared: no baseline diff for this noun yet")


def _renamed_note(run: ReportRun, spec: DiffSpec, pairs: int, link: Link) -> None:
    if pairs:
        run.footnote(
            f"{pairs} added {spec.what} match a removed one except for numbers in them (addresses, ids): "
            "rows are joined by exact name",
            link,
        )


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
    params: Params,
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
