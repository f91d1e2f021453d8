"""The `stack-samples` noun: where CPU samples landed, by function and as call trees (any CPU profiler:
V8, Chrome, perf, simpleperf; trace_processor's stack_sample with its callsites)."""

from __future__ import annotations

from typing import Any

from .. import format as fmt
from .. import report_pb2 as pb
from ..base import Cell, ReportRun, Table
from ..diff_spec import DiffSpec, Measure, diff_link
from ..filters import (
    CANNED_TOP,
    OWNER_FLAGS,
    Where,
    canned_dim,
    canned_sort,
    dim_terms,
    in_canned_range,
    optional_terms,
    owner_terms,
)
from ..grouping import grouping, split_per_value
from ..links import glob_escape
from .calltree import (
    UNNAMED,
    Callsites,
    CallstackView,
    CallTreeDiff,
    CallTreeView,
    FunctionTotals,
    function_ctes,
    function_totals,
    load_callsites,
    percent,
    top_down,
    tree_canned_sql,
)

SCOPE_FLAGS = frozenset({*OWNER_FLAGS, "time", "name", "exclude_idle", "dim"})

# V8's pseudo-frames: a sample whose leaf is one of these ran no JavaScript (exclude_idle leaves them out).
IDLE_FRAMES = ("(idle)", "(program)", "(garbage collector)")
IDLE_CALLSITES = """SELECT c.id FROM stack_profile_callsite c JOIN stack_profile_frame f ON f.id = c.frame_id
  WHERE f.name IN ({names})"""
IDLE_PARAMS = {f"idle_{i}": name for i, name in enumerate(IDLE_FRAMES)}
# The canned queries' exclude_idle term: a sample whose leaf is not a pseudo-frame (always true when unset or false).
CANNED_NOT_IDLE = (
    "(lower(trim(:exclude_idle)) IN ('', '0', 'false', 'no', 'off') OR s.callsite_id NOT IN ("
    + IDLE_CALLSITES.format(names=", ".join(f"'{n}'" for n in IDLE_FRAMES))
    + "))"
)

# A sample → its task context → the thread and process sampled.
SAMPLE_FROM = """FROM stack_sample s
LEFT JOIN profiler_task_context tc ON tc.id = s.task_context_id
LEFT JOIN thread th ON th.id = tc.utid
LEFT JOIN process p ON p.id = coalesce(tc.upid, th.upid)"""


def not_idle_term(column: str) -> str:
    """A sample's (or weighted sample's) callsite `column` is not one of V8's pseudo-frames (exclude_idle)."""
    return f"{column} NOT IN ({IDLE_CALLSITES.format(names=', '.join(':' + p for p in IDLE_PARAMS))})"


def sample_where(run: ReportRun) -> tuple[str, Where]:
    """FROM and WHERE of the samples in scope (the thread/process joins only when a flag needs them)."""
    s = run.scope
    w = owner_terms(run)
    w.extend(dim_terms(run, "owner"))
    if s.time is not None:
        start, end = run.time_range()
        w.add("s.ts >= :range_start AND s.ts < :range_end", range_start=start, range_end=end)
    owned = any(getattr(s, f) is not None for f in (*OWNER_FLAGS, "dim"))
    return (SAMPLE_FROM if owned else "FROM stack_sample s"), w


def canned_samples(callsite: str) -> str:
    """The canned queries' samples per callsite in scope (`callsite`: the callsite column, maybe renamed)."""
    return f"""  SELECT {callsite}, count(*) AS samples
  {SAMPLE_FROM.replace(chr(10), chr(10) + "  ")}
  WHERE {optional_terms((*OWNER_FLAGS, "time"), time=in_canned_range("s.ts"))}
    AND {canned_dim("owner")}
    AND {CANNED_NOT_IDLE}
  GROUP BY s.callsite_id"""


def load_samples(run: ReportRun) -> Callsites:
    source, w = sample_where(run)
    placed = bool(w.terms)  # process, thread or time flags: weighted samples have none of those
    if run.scope.exclude_idle:
        w.add(not_idle_term("s.callsite_id"), **IDLE_PARAMS)
    weight_sql = f"""SELECT s.callsite_id, count(*) AS value, 0 AS count
{source}
{w.sql()}
GROUP BY s.callsite_id"""
    if has_aggregate_samples(run) and not placed:
        # Profiles without timestamps or threads (collapsed-stack files) count by their weights,
        # unless a process/thread/time flag asks for samples they cannot be placed in.
        not_idle = f"\nWHERE {not_idle_term('callsite_id')}" if run.scope.exclude_idle else ""
        weight_sql = f"""SELECT callsite_id, sum(value) AS value, 0 AS count FROM (
  SELECT s.callsite_id, 1 AS value FROM stack_sample s
  UNION ALL
  SELECT a.callsite_id, CAST(a.value AS INTEGER) FROM aggregate_sample a
){not_idle}
GROUP BY callsite_id"""
    return load_callsites(run, "samples", weight_sql, w.params, run.scope.name)


def has_aggregate_samples(run: ReportRun) -> bool:
    return run.has_tables("aggregate_sample") and bool(
        run.value("any weighted (collapsed-stack) sample", "SELECT EXISTS(SELECT 1 FROM aggregate_sample)")
    )


def self_samples(t: FunctionTotals) -> int:
    """What the functions view's Samples column and min_count count: samples with the function on top."""
    return t.self_value


class StackSamplesView(CallstackView):
    noun = "stack-samples"
    empty = "(no stack samples in scope)"

    def has_data(self, run: ReportRun) -> bool:
        return (
            run.has_tables("profiler_sample", "stack_profile_callsite")
            and bool(run.value("any stack sample", "SELECT EXISTS(SELECT 1 FROM stack_sample)"))
            or has_aggregate_samples(run)
        )


class FunctionsView(StackSamplesView):
    name = "functions"
    title = "Stack samples by function"
    description = (
        "CPU samples per function: Self% with the function at the top of the stack, Total% with it "
        "anywhere in the stack (a recursive function counts once per sample); Samples and min_count "
        "count the self samples, as the RFC's Samples column."
    )
    result_field = "stack_samples_functions"
    uses_top = True
    flags = SCOPE_FLAGS | {"min_count", "sort", "group_by"}
    sorts = ("self", "total", "name")
    canned_sql = f"""WITH RECURSIVE
sampled AS (
{canned_samples("s.callsite_id AS leaf")}
),
{function_ctes("sampled")}
totals AS (
  SELECT o.name, sum(sm.samples) AS total FROM on_stack o JOIN sampled sm ON sm.leaf = o.leaf GROUP BY o.name
),
selfs AS (
  SELECT fn.name, sum(sm.samples) AS self FROM sampled sm
  JOIN stack_profile_callsite c ON c.id = sm.leaf JOIN frame_name fn ON fn.id = c.frame_id GROUP BY fn.name
)
SELECT t.name AS function, coalesce(sf.self, 0) AS self_samples, t.total AS total_samples,
       round(100.0 * coalesce(sf.self, 0) / (SELECT sum(samples) FROM sampled), 1) AS self_percent,
       round(100.0 * t.total / (SELECT sum(samples) FROM sampled), 1) AS total_percent
FROM totals t LEFT JOIN selfs sf ON sf.name = t.name
WHERE (:name = '' OR t.name GLOB :name)
  AND coalesce(sf.self, 0) >= CAST(coalesce(nullif(:min_count, ''), 0) AS INTEGER)
ORDER BY CASE {canned_sort(sorts[0])} WHEN 'self' THEN -coalesce(sf.self, 0) WHEN 'total' THEN -t.total
         END, CASE {canned_sort(sorts[0])} WHEN 'self' THEN -t.total END, t.name
LIMIT {CANNED_TOP}"""

    def compute(self, run: ReportRun, out: pb.StackFunctions) -> None:
        if self.absent(run, out):
            return
        group = grouping(run, self)
        if group is not None:
            orders = {"self": lambda r: (-r.self_count, r.name), "total": lambda r: (-r.total_count, r.name)}
            order = orders.get(self.sort_key(run.scope), lambda r: (r.name,))
            split_per_value(
                run, group, out, self._fill, lambda r: (*order(r), group.rank(r.group_value)), ("total_samples",)
            )
            return
        self._fill(run, out)

    def _fill(self, run: ReportRun, out: pb.StackFunctions) -> None:
        s = run.scope
        cs = load_samples(run)
        totals = function_totals(top_down(cs))
        rows = self.sorted_functions(run, cs, totals, self_samples)
        out.total_rows = len(rows)
        out.total_samples = cs.total_value
        for name, t in rows[: s.top]:
            out.rows.add(
                name=name,
                self_count=t.self_value,
                total_count=t.total_value,
                self_percent=percent(t.self_value, cs.total_value),
                total_percent=percent(t.total_value, cs.total_value),
            )
        self.min_count_footnote(
            run,
            cs,
            totals,
            self_samples,
            lambda hidden: f"fewer than {s.min_count} self samples: {_samples(sum(t.self_value for t in hidden))}",
        )
        self.functions_steps(run, out.rows, len(rows), "The call tree, top-down")

    def tables(self, msg: pb.StackFunctions, run: ReportRun) -> list[Table]:
        rows = [
            [
                Cell(r.name, self.function_link(run, "bottom-up", r.name)),
                *([Cell(r.group_label)] if msg.group_by else []),
                Cell(fmt.percent(r.self_percent)),
                Cell(fmt.percent(r.total_percent)),
                Cell(fmt.number(r.self_count), title=f"{r.self_count} self, {r.total_count} total"),
            ]
            for r in msg.rows
        ]
        return [
            Table(
                f"Stack Samples ({fmt.number(msg.total_samples)} total, {fmt.plural(msg.total_rows, 'function')})",
                ("Function", *([msg.group_by.capitalize()] if msg.group_by else []), "Self%", "Total%", "Samples"),
                rows,
                empty=self.empty_text(msg),
            )
        ]


class TreeView(StackSamplesView, CallTreeView):
    flags = SCOPE_FLAGS | {"max_lines"}
    unit = "samples"
    heading = "Stack Samples"
    headers = ("Self%", "Total%", "Samples", "Function")
    flame_width = "samples"
    functions_step = "Samples by function"
    canned_sql = tree_canned_sql(canned_samples("s.callsite_id"), "coalesce(w.samples, 0) AS self_samples")

    def callsites(self, run: ReportRun) -> Callsites:
        return load_samples(run)

    def total_text(self, total_value: int) -> str:
        return _samples(total_value)

    def value_cells(self, n: pb.CallTree.Node) -> list[Cell]:
        return [
            Cell(fmt.percent(n.self_percent)),
            Cell(fmt.percent(n.total_percent)),
            Cell(fmt.number(n.total_value), title=f"{n.self_value} self, {n.total_value} total"),
        ]

    def describe(self, n: pb.CallTree.Node) -> str:
        return (
            f"{n.name or UNNAMED}: {fmt.plural(n.total_value, 'sample')} ({n.total_percent:.1f}%), "
            f"self {n.self_value} ({n.self_percent:.1f}%)"
        )


class TopDownView(TreeView):
    name = "top-down"
    title = "Stack samples: top-down call tree"
    description = (
        "Where samples landed, from the outermost function down to its callees; with name, only the "
        "stacks containing a matching function. The tree is pruned to max_lines nodes, best first."
    )
    result_field = "stack_samples_top_down"


class BottomUpView(TreeView):
    name = "bottom-up"
    title = "Stack samples: bottom-up call tree"
    description = (
        "Functions at the top of the stack, then their callers; with name, the matching functions are "
        "the roots (who calls them). The tree is pruned to max_lines nodes, best first."
    )
    result_field = "stack_samples_bottom_up"
    bottom = True


class FunctionsDiff(DiffSpec):
    """Joined on the function name, as the view aggregates (its rows are per name, whatever binary or mapping
    the frames came from; mapping paths and build ids change between builds, which is what a CI diff compares)."""

    noun, view, field = "stack-samples", "functions", "stack_samples_functions_diff"
    title, what = "Stack Samples", "functions"
    key_fields, key_headers = ("name", "group_label"), ("Function",)
    measures = (
        Measure("self_count", "self", "count"),
        Measure("total_count", "total", "count"),
        Measure("self_percent", "self%", "percent"),
        Measure("total_percent", "total%", "percent"),
    )
    sorts = {"self": "self_count", "total": "total_count", "name": ""}
    display = ("self_count", "total_count")
    row_filters = {"min_count": "self_count"}
    counts_rows = False

    def fill_extra(self, out: Any, base_msg: Any, target_msg: Any) -> None:
        out.baseline_total_samples = base_msg.total_samples if base_msg is not None else 0
        out.target_total_samples = target_msg.total_samples if target_msg is not None else 0

    def key_cells(self, row: Any, run: ReportRun, out: Any) -> list[Cell]:
        link = diff_link(run, row, self.noun, "bottom-up", name=glob_escape(row.name))
        return [Cell(row.name, link, subtitle=row.group_label)]


class TopDownDiff(CallTreeDiff):
    noun, view, field = "stack-samples", "top-down", "stack_samples_top_down_diff"
    title = "Stack Samples top-down"


class BottomUpDiff(CallTreeDiff):
    noun, view, field = "stack-samples", "bottom-up", "stack_samples_bottom_up_diff"
    title = "Stack Samples bottom-up"


VIEWS = [FunctionsView(), TopDownView(), BottomUpView()]
DIFFS: list[DiffSpec] = [FunctionsDiff(), TopDownDiff(), BottomUpDiff()]


def _samples(n: int) -> str:
    """`n samples`, n with thousands separators (a tree's total, the samples of hidden functions)."""
    return fmt.plural(n, "sample", fmt.number(n))
