"""The `heap-profile` noun: bytes allocated, by function and as call trees (heapprofd and other native heap
profilers; trace_processor's heap_profile_allocation, whose rows are per-dump deltas: allocations positive,
frees negative)."""

from __future__ import annotations

from typing import Any

from .. import format as fmt
from .. import report_pb2 as pb
from ..base import Cell, ReportRun, Table
from ..diff_spec import DiffSpec, Measure, diff_link
from ..filters import (
    CANNED_TOP,
    PROCESS_FLAGS,
    Where,
    canned_dim,
    canned_sort,
    dim_terms,
    in_canned_range,
    optional_terms,
    owner_terms,
)
from ..format import byte_size
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

SCOPE_FLAGS = frozenset({*PROCESS_FLAGS, "time", "name", "dim"})


def allocation_where(run: ReportRun) -> tuple[str, Where]:
    s = run.scope
    w = owner_terms(run, threads=False)
    w.extend(dim_terms(run, "process", "a.upid"))
    if s.time is not None:
        start, end = run.time_range()
        w.add("a.ts >= :range_start AND a.ts < :range_end", range_start=start, range_end=end)
    source = "FROM heap_profile_allocation a"
    if s.pid is not None or s.process is not None:
        source += "\nJOIN process p ON p.id = a.upid"
    return source, w


def load_allocations(run: ReportRun, with_unreleased: bool = False) -> tuple[Callsites, dict[int, int]]:
    """Bytes and allocations per callsite (positive rows), and, when asked, unreleased bytes per callsite."""
    source, w = allocation_where(run)
    weight_sql = f"""SELECT a.callsite_id, sum(max(a.size, 0)) AS value, sum(max(a.count, 0)) AS count
{source}
{w.sql()}
GROUP BY a.callsite_id"""
    cs = load_callsites(run, "bytes allocated", weight_sql, w.params, run.scope.name)
    unreleased: dict[int, int] = {}
    if with_unreleased:
        for r in run.query(
            "bytes allocated and not freed per callsite",
            f"""SELECT a.callsite_id, sum(a.size) AS unreleased
{source}
{w.sql()}
GROUP BY a.callsite_id""",
            w.params,
        ):
            unreleased[r["callsite_id"]] = r["unreleased"] or 0
    return cs, unreleased


def canned_allocations(callsite: str) -> str:
    """The canned queries' bytes and allocations per callsite in scope (`callsite`: its column, maybe renamed)."""
    return f"""  SELECT {callsite}, sum(max(a.size, 0)) AS bytes, sum(max(a.count, 0)) AS allocations
  FROM heap_profile_allocation a
  LEFT JOIN process p ON p.id = a.upid
  WHERE {optional_terms((*PROCESS_FLAGS, "time"), time=in_canned_range("a.ts"))}
    AND {canned_dim("process", "a.upid")}
  GROUP BY a.callsite_id"""


def own_allocations(t: FunctionTotals) -> int:
    """What the functions view's Self count column and min_count count: allocations with the function on top."""
    return t.self_count


class HeapProfileView(CallstackView):
    noun = "heap-profile"
    empty = "(no allocations in scope)"

    def has_data(self, run: ReportRun) -> bool:
        return run.has_tables("heap_profile_allocation", "stack_profile_callsite") and bool(
            run.value("any heap allocation", "SELECT EXISTS(SELECT 1 FROM heap_profile_allocation)")
        )


class FunctionsView(HeapProfileView):
    name = "functions"
    title = "Heap profile by function"
    description = (
        "Bytes allocated per function: self with the function at the top of the stack (its own "
        "allocations: their count and average size, '-' when it made none), total with it anywhere in the "
        "stack (with its callees' allocations: their count, and average on hover). min_count counts its own "
        "allocations, as the Self count column."
    )
    result_field = "heap_profile_functions"
    uses_top = True
    flags = SCOPE_FLAGS | {"min_count", "sort", "group_by"}
    sorts = ("self", "total", "count", "name")
    canned_sql = f"""WITH RECURSIVE
allocated AS (
{canned_allocations("a.callsite_id AS leaf")}
),
{function_ctes("allocated")}
totals AS (
  SELECT o.name, sum(al.bytes) AS total_bytes, sum(al.allocations) AS total_count
  FROM on_stack o JOIN allocated al ON al.leaf = o.leaf GROUP BY o.name
),
selfs AS (
  SELECT fn.name, sum(al.bytes) AS self_bytes, sum(al.allocations) AS self_count FROM allocated al
  JOIN stack_profile_callsite c ON c.id = al.leaf JOIN frame_name fn ON fn.id = c.frame_id GROUP BY fn.name
)
SELECT t.name AS function, coalesce(sf.self_bytes, 0) AS self_bytes, t.total_bytes,
       coalesce(sf.self_count, 0) AS count,
       CASE WHEN coalesce(sf.self_count, 0) > 0 THEN sf.self_bytes / sf.self_count ELSE 0 END AS avg_size,
       t.total_count
FROM totals t LEFT JOIN selfs sf ON sf.name = t.name
WHERE (:name = '' OR t.name GLOB :name)
  AND coalesce(sf.self_count, 0) >= CAST(coalesce(nullif(:min_count, ''), 0) AS INTEGER)
ORDER BY CASE {canned_sort(sorts[0])} WHEN 'self' THEN -coalesce(sf.self_bytes, 0)
                                                 WHEN 'total' THEN -t.total_bytes
                                                 WHEN 'count' THEN -coalesce(sf.self_count, 0) END,
         CASE {canned_sort(sorts[0])} WHEN 'self' THEN -t.total_bytes
                                                 WHEN 'total' THEN -coalesce(sf.self_bytes, 0)
                                                 WHEN 'count' THEN -t.total_count END, t.name
LIMIT {CANNED_TOP}"""

    def compute(self, run: ReportRun, out: pb.HeapFunctions) -> None:
        if self.absent(run, out):
            return
        group = grouping(run, self)
        if group is not None:
            orders = {"self": lambda r: (-r.self_bytes, r.name), "total": lambda r: (-r.total_bytes, r.name)}
            order = orders.get(self.sort_key(run.scope), lambda r: (r.name,))
            split_per_value(
                run,
                group,
                out,
                self._fill,
                lambda r: (*order(r), group.rank(r.group_value)),
                ("total_bytes", "total_count"),
            )
            return
        self._fill(run, out)

    def _fill(self, run: ReportRun, out: pb.HeapFunctions) -> None:
        s = run.scope
        cs, unreleased = load_allocations(run, with_unreleased=True)
        tree = top_down(cs)
        totals = function_totals(tree)
        # Unreleased bytes: the same walk with the allocated-minus-freed bytes as the weight.
        for cid, site in cs.sites.items():
            site.value, site.count = unreleased.get(cid, 0), 1 if cid in unreleased else 0
        for name, t in function_totals(top_down(cs)).items():
            if name in totals:
                totals[name].self_unreleased, totals[name].total_unreleased = t.self_value, t.total_value
        rows = self.sorted_functions(run, cs, totals, own_allocations)
        out.total_rows = len(rows)
        out.total_bytes = cs.total_value
        out.total_count = cs.total_count
        for name, t in rows[: s.top]:
            out.rows.add(
                name=name,
                self_bytes=t.self_value,
                total_bytes=t.total_value,
                self_count=t.self_count,
                total_count=t.total_count,
                avg_size=t.self_value // t.self_count if t.self_count else 0,
                self_percent=percent(t.self_value, cs.total_value),
                total_percent=percent(t.total_value, cs.total_value),
                self_unreleased_bytes=t.self_unreleased,
                total_unreleased_bytes=t.total_unreleased,
            )
        self.min_count_footnote(
            run,
            cs,
            totals,
            own_allocations,
            lambda hidden: (
                f"fewer than {s.min_count} own allocations: {sum(t.self_count for t in hidden):,} "
                f"allocations, {byte_size(sum(t.self_value for t in hidden))}"
            ),
        )
        self.functions_steps(run, out.rows, len(rows), "The allocation call tree, top-down")

    def tables(self, msg: pb.HeapFunctions, run: ReportRun) -> list[Table]:
        rows = [
            [
                Cell(r.name, self.function_link(run, "bottom-up", r.name)),
                *([Cell(r.group_label)] if msg.group_by else []),
                Cell(byte_size(r.self_bytes), title=f"{r.self_bytes} bytes ({r.self_percent:.1f}%)"),
                Cell(fmt.number(r.self_count)),
                Cell(byte_size(r.avg_size) if r.self_count else "-"),
                Cell(byte_size(r.total_bytes), title=f"{r.total_bytes} bytes ({r.total_percent:.1f}%)"),
                Cell(
                    fmt.number(r.total_count),
                    title=f"average {byte_size(r.total_bytes // r.total_count)}" if r.total_count else None,
                ),
            ]
            for r in msg.rows
        ]
        return [
            Table(
                f"Heap Profile ({byte_size(msg.total_bytes)} in "
                f"{fmt.plural(msg.total_count, 'allocation', fmt.number(msg.total_count))}, "
                f"{fmt.plural(msg.total_rows, 'function')})",
                (
                    "Function",
                    *([msg.group_by.capitalize()] if msg.group_by else []),
                    "Self bytes",
                    "Self count",
                    "Avg size",
                    "Total bytes",
                    "Total count",
                ),
                rows,
                empty=self.empty_text(msg),
            )
        ]


class TreeView(HeapProfileView, CallTreeView):
    flags = SCOPE_FLAGS | {"max_lines"}
    unit = "bytes"
    heading = "Heap Profile"
    headers = ("Self bytes", "Total bytes", "Total%", "Count", "Function")
    flame_width = "bytes allocated"
    functions_step = "Allocations by function"
    canned_sql = tree_canned_sql(
        canned_allocations("a.callsite_id"),
        "coalesce(w.bytes, 0) AS self_bytes, coalesce(w.allocations, 0) AS self_count",
    )

    def callsites(self, run: ReportRun) -> Callsites:
        return load_allocations(run)[0]

    def total_text(self, total_value: int) -> str:
        return f"{byte_size(total_value)} allocated"

    def value_cells(self, n: pb.CallTree.Node) -> list[Cell]:
        return [
            Cell(byte_size(n.self_value), title=f"{n.self_value} bytes ({n.self_percent:.1f}%)"),
            Cell(byte_size(n.total_value), title=f"{n.total_value} bytes"),
            Cell(fmt.percent(n.total_percent)),
            Cell(fmt.number(n.total_count), title=f"{n.self_count} self, {n.total_count} total"),
        ]

    def describe(self, n: pb.CallTree.Node) -> str:
        return (
            f"{n.name or UNNAMED}: {byte_size(n.total_value)} allocated ({n.total_percent:.1f}%) in "
            f"{fmt.plural(n.total_count, 'allocation')}, self {byte_size(n.self_value)} ({n.self_percent:.1f}%)"
        )


class TopDownView(TreeView):
    name = "top-down"
    title = "Heap profile: top-down call tree"
    description = (
        "Bytes allocated, from the outermost function down to the allocating callees; with name, only "
        "stacks containing a matching function. Pruned to max_lines nodes, best first."
    )
    result_field = "heap_profile_top_down"


class BottomUpView(TreeView):
    name = "bottom-up"
    title = "Heap profile: bottom-up call tree"
    description = (
        "Allocating functions, then their callers; with name, the matching functions are the roots "
        "(who calls them). Pruned to max_lines nodes, best first."
    )
    result_field = "heap_profile_bottom_up"
    bottom = True


class FunctionsDiff(DiffSpec):
    """Joined on the function name, as the view aggregates (see stack_samples.FunctionsDiff). avg_size, the
    per-allocation average of its own allocations, is the view's own: a function allocating 16 times instead of 8 doubles its
    bytes and count and keeps its average."""

    noun, view, field = "heap-profile", "functions", "heap_profile_functions_diff"
    title, what = "Heap Profile", "functions"
    key_fields, key_headers = ("name", "group_label"), ("Function",)
    measures = (
        Measure("self_bytes", "self", "bytes"),
        Measure("total_bytes", "total", "bytes"),
        Measure("self_count", "count", "count"),
        Measure("total_count", "total count", "count"),
        Measure("avg_size", "avg", "bytes", "derived"),
        Measure("self_percent", "self%", "percent"),
        Measure("total_percent", "total%", "percent"),
        Measure("self_unreleased_bytes", "unreleased", "bytes"),
        Measure("total_unreleased_bytes", "total unreleased", "bytes"),
    )
    sorts = {"self": "self_bytes", "total": "total_bytes", "count": "self_count", "name": ""}
    display = ("self_bytes", "self_count", "avg_size")
    shown_count = 3
    row_filters = {"min_count": "self_count"}
    counts_rows = False

    def derive(self, row: Any) -> None:
        # As the view computes it: its own allocations' average (0 when it made none).
        row.avg_size = row.self_bytes // row.self_count if row.self_count else 0

    def fill_extra(self, out: Any, base_msg: Any, target_msg: Any) -> None:
        for side, msg in (("baseline", base_msg), ("target", target_msg)):
            setattr(out, f"{side}_total_bytes", msg.total_bytes if msg is not None else 0)
            setattr(out, f"{side}_total_count", msg.total_count if msg is not None else 0)

    def key_cells(self, row: Any, run: ReportRun, out: Any) -> list[Cell]:
        link = diff_link(run, row, self.noun, "bottom-up", name=glob_escape(row.name))
        return [Cell(row.name, link, subtitle=row.group_label)]


class TreeDiff(CallTreeDiff):
    value_kind = "bytes"
    with_counts = True


class TopDownDiff(TreeDiff):
    noun, view, field = "heap-profile", "top-down", "heap_profile_top_down_diff"
    title = "Heap Profile top-down"


class BottomUpDiff(TreeDiff):
    noun, view, field = "heap-profile", "bottom-up", "heap_profile_bottom_up_diff"
    title = "Heap Profile bottom-up"


VIEWS = [FunctionsView(), TopDownView(), BottomUpView()]
DIFFS: list[DiffSpec] = [FunctionsDiff(), TopDownDiff(), BottomUpDiff()]
