"""The `heap-profile` noun: bytes allocated, by function and as call trees (heapprofd and other native heap
profilers; trace_processor's heap_profile_allocation, whose rows are per-dump deltas: allocations positive,
frees negative)."""

from __future__ import annotations

from .. import format as fmt
from .. import report_pb2 as pb
from ..base import Cell, Flame, Link, ReportRun, Table, View
from ..filters import Where, owner_terms
from .calltree import (
    UNNAMED,
    Callsites,
    byte_size,
    fill_call_tree,
    function_ctes,
    function_totals,
    load_callsites,
    percent,
    sorted_functions,
    top_down,
    tree_flame,
    tree_table,
)
from .stack_samples import NOT_PRESENT, _escape_glob, table_exists

SCOPE_FLAGS = frozenset({"pid", "process", "time", "name"})


def allocation_where(run: ReportRun) -> tuple[str, Where]:
    s = run.scope
    w = owner_terms(run, threads=False)
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


class HeapProfileBase(View):
    noun = "heap-profile"

    def has_data(self, run: ReportRun) -> bool:
        return table_exists(run, "heap_profile_allocation", "stack_profile_callsite") and bool(
            run.value("any heap allocation", "SELECT EXISTS(SELECT 1 FROM heap_profile_allocation)")
        )

    def absent(self, run: ReportRun, out) -> bool:
        if self.has_data(run):
            return False
        out.not_present = True
        return True

    def function_link(self, run: ReportRun, view: str, name: str) -> Link | None:
        return run.link(self.noun, view, name=_escape_glob(name), top=None, sort=None, min_count=None, max_lines=None)


class FunctionsView(HeapProfileBase):
    name = "functions"
    title = "Heap profile by function"
    description = (
        "Bytes allocated per function: self with the function at the top of the stack, total with it "
        "anywhere in the stack; count and average size of its own allocations."
    )
    result_field = "heap_profile_functions"
    flags = SCOPE_FLAGS | {"min_count", "sort"}
    sorts = ("self", "total", "count", "name")
    canned_sql = f"""WITH RECURSIVE
allocated AS (
  SELECT a.callsite_id AS leaf, sum(max(a.size, 0)) AS bytes, sum(max(a.count, 0)) AS allocations
  FROM heap_profile_allocation a
  LEFT JOIN process p ON p.id = a.upid
  WHERE (:pid = '' OR p.pid = :pid)
    AND (:process = '' OR p.name GLOB :process)
    AND (:time = '' OR (a.ts >= (SELECT report_range_start(:time)) AND a.ts < (SELECT report_range_end(:time))))
  GROUP BY a.callsite_id
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
       CASE WHEN coalesce(sf.self_count, 0) > 0 THEN sf.self_bytes / sf.self_count
            ELSE t.total_bytes / max(t.total_count, 1) END AS avg_size
FROM totals t LEFT JOIN selfs sf ON sf.name = t.name
WHERE (:name = '' OR t.name GLOB :name)
  AND t.total_count >= CAST(coalesce(nullif(:min_count, ''), 0) AS INTEGER)
ORDER BY CASE coalesce(nullif(:sort, ''), 'self') WHEN 'self' THEN -coalesce(sf.self_bytes, 0)
                                                 WHEN 'total' THEN -t.total_bytes
                                                 WHEN 'count' THEN -coalesce(sf.self_count, 0) END,
         CASE coalesce(nullif(:sort, ''), 'self') WHEN 'self' THEN -t.total_bytes
                                                 WHEN 'total' THEN -coalesce(sf.self_bytes, 0)
                                                 WHEN 'count' THEN -t.total_count END, t.name
LIMIT coalesce(nullif(:top, ''), 10)"""

    def compute(self, run: ReportRun, out: pb.HeapFunctions) -> None:
        if self.absent(run, out):
            return
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
        rows = sorted_functions(
            totals, cs.matched if s.name is not None else None, self.sort_key(s), s.min_count, lambda t: t.total_count
        )
        out.total_rows = len(rows)
        out.total_bytes = cs.total_value
        out.total_count = cs.total_count
        for name, t in rows[: s.top]:
            avg = t.self_value // t.self_count if t.self_count else t.total_value // max(t.total_count, 1)
            out.rows.add(
                name=name,
                self_bytes=t.self_value,
                total_bytes=t.total_value,
                self_count=t.self_count,
                total_count=t.total_count,
                avg_size=avg,
                self_percent=percent(t.self_value, cs.total_value),
                total_percent=percent(t.total_value, cs.total_value),
                self_unreleased_bytes=t.self_unreleased,
                total_unreleased_bytes=t.total_unreleased,
            )
        run.truncation(min(len(rows), s.top), len(rows), "functions")
        if out.rows:
            top = out.rows[0]
            run.next_step(f"Who calls {top.name}", self.function_link(run, "bottom-up", top.name))
            run.next_step(
                "The allocation call tree, top-down",
                run.link(self.noun, "top-down", top=None, sort=None, min_count=None),
            )

    def tables(self, msg: pb.HeapFunctions, run: ReportRun) -> list[Table]:
        rows = [
            [
                Cell(r.name, self.function_link(run, "bottom-up", r.name)),
                Cell(byte_size(r.self_bytes), title=f"{r.self_bytes} bytes ({r.self_percent:.1f}%)"),
                Cell(byte_size(r.total_bytes), title=f"{r.total_bytes} bytes ({r.total_percent:.1f}%)"),
                Cell(fmt.number(r.self_count), title=f"{r.self_count} self, {r.total_count} total"),
                Cell(byte_size(r.avg_size)),
            ]
            for r in msg.rows
        ]
        return [
            Table(
                f"Heap Profile ({byte_size(msg.total_bytes)} in {fmt.number(msg.total_count)} allocations, "
                f"{msg.total_rows} functions)",
                ("Function", "Self bytes", "Total bytes", "Count", "Avg size"),
                rows,
                empty=NOT_PRESENT if msg.not_present else "(no allocations in scope)",
            )
        ]


class TreeView(HeapProfileBase):
    flags = SCOPE_FLAGS | {"max_lines"}
    bottom = False
    # The tree's input: bytes and allocations per callsite in scope, with every callsite above them.
    # The report builds and prunes the tree from these rows.
    canned_sql = """WITH RECURSIVE
weight AS (
  SELECT a.callsite_id, sum(max(a.size, 0)) AS bytes, sum(max(a.count, 0)) AS allocations
  FROM heap_profile_allocation a
  LEFT JOIN process p ON p.id = a.upid
  WHERE (:pid = '' OR p.pid = :pid)
    AND (:process = '' OR p.name GLOB :process)
    AND (:time = '' OR (a.ts >= (SELECT report_range_start(:time)) AND a.ts < (SELECT report_range_end(:time))))
  GROUP BY a.callsite_id
),
chain(id) AS (
  SELECT callsite_id FROM weight
  UNION
  SELECT c.parent_id FROM chain JOIN stack_profile_callsite c ON c.id = chain.id WHERE c.parent_id IS NOT NULL
)
SELECT c.id AS callsite_id, c.parent_id, c.depth, coalesce(nullif(coalesce(f.deobfuscated_name, f.name), ''),
       '(unnamed)') AS function, coalesce(w.bytes, 0) AS self_bytes, coalesce(w.allocations, 0) AS self_count,
       (:name = '' OR coalesce(f.deobfuscated_name, f.name) GLOB :name) AS matches_name
FROM chain
JOIN stack_profile_callsite c ON c.id = chain.id
JOIN stack_profile_frame f ON f.id = c.frame_id
LEFT JOIN weight w ON w.callsite_id = c.id
ORDER BY c.depth, c.id"""

    def compute(self, run: ReportRun, out: pb.CallTree) -> None:
        if self.absent(run, out):
            return
        fill_call_tree(self, run, out, load_allocations(run)[0], "bytes", "Allocations by function")

    def tables(self, msg: pb.CallTree, run: ReportRun) -> list[Table]:
        def cells(n: pb.CallTree.Node) -> list[Cell]:
            return [
                Cell(byte_size(n.self_value), title=f"{n.self_value} bytes ({n.self_percent:.1f}%)"),
                Cell(byte_size(n.total_value), title=f"{n.total_value} bytes"),
                Cell(fmt.percent(n.total_percent)),
                Cell(fmt.number(n.total_count), title=f"{n.self_count} self, {n.total_count} total"),
            ]

        what = "callers" if self.bottom else "callees"
        title = f"Heap Profile {self.name} ({byte_size(msg.total_value)} allocated; children are {what})"
        return [
            tree_table(
                msg,
                title,
                ("Self bytes", "Total bytes", "Total%", "Count", "Function"),
                cells,
                lambda name: self.function_link(run, "bottom-up", name),
                NOT_PRESENT if msg.not_present else "(no allocations in scope)",
            )
        ]

    def flames(self, msg: pb.CallTree, run: ReportRun) -> list[Flame]:
        if not msg.nodes:
            return []

        def describe(n: pb.CallTree.Node) -> str:
            return (
                f"{n.name or UNNAMED}: {byte_size(n.total_value)} allocated ({n.total_percent:.1f}%) in "
                f"{n.total_count} allocations, self {byte_size(n.self_value)} ({n.self_percent:.1f}%)"
            )

        kind = "callers below" if self.bottom else "callees below"
        return [
            tree_flame(
                msg,
                f"Flame graph ({kind}; width = bytes allocated)",
                describe,
                lambda name: self.function_link(run, "bottom-up", name),
            )
        ]


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


VIEWS = [FunctionsView(), TopDownView(), BottomUpView()]
