"""The `stack-samples` noun: where CPU samples landed, by function and as call trees (any CPU profiler:
V8, Chrome, perf, simpleperf; trace_processor's stack_sample with its callsites)."""

from __future__ import annotations

import json

from .. import format as fmt
from .. import report_pb2 as pb
from ..base import Cell, Flame, Link, ReportRun, Table, View
from ..filters import Where, owner_terms
from .calltree import (
    UNNAMED,
    Callsites,
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

NOT_PRESENT = "(not present in this trace)"
OWNER_FLAGS = ("pid", "process", "tid", "thread")
SCOPE_FLAGS = frozenset({*OWNER_FLAGS, "time", "name"})

# A sample → its task context → the thread and process sampled.
SAMPLE_FROM = """FROM stack_sample s
LEFT JOIN profiler_task_context tc ON tc.id = s.task_context_id
LEFT JOIN thread th ON th.id = tc.utid
LEFT JOIN process p ON p.id = coalesce(tc.upid, th.upid)"""


def table_exists(run: ReportRun, *names: str) -> bool:
    """Whether the database has these tables or views (a heap table may not exist before its importer)."""
    found = run.value(
        "are the tables there",
        "SELECT count(*) FROM sqlite_master WHERE name IN (SELECT value FROM json_each(:names))",
        {"names": json.dumps(list(names))},
    )
    return found == len(names)


def sample_where(run: ReportRun) -> tuple[str, Where]:
    """FROM and WHERE of the samples in scope (the thread/process joins only when a flag needs them)."""
    s = run.scope
    w = owner_terms(run)
    if s.time is not None:
        start, end = run.time_range()
        w.add("s.ts >= :range_start AND s.ts < :range_end", range_start=start, range_end=end)
    return (SAMPLE_FROM if any(getattr(s, f) is not None for f in OWNER_FLAGS) else "FROM stack_sample s"), w


def load_samples(run: ReportRun) -> Callsites:
    source, w = sample_where(run)
    weight_sql = f"""SELECT s.callsite_id, count(*) AS value, 0 AS count
{source}
{w.sql()}
GROUP BY s.callsite_id"""
    if has_aggregate_samples(run) and not w.terms:
        # Profiles without timestamps or threads (collapsed-stack files) count by their weights,
        # unless a process/thread/time flag asks for samples they cannot be placed in.
        weight_sql = """SELECT callsite_id, sum(value) AS value, 0 AS count FROM (
  SELECT s.callsite_id, 1 AS value FROM stack_sample s
  UNION ALL
  SELECT a.callsite_id, CAST(a.value AS INTEGER) FROM aggregate_sample a
)
GROUP BY callsite_id"""
    return load_callsites(run, "samples", weight_sql, w.params, run.scope.name)


def has_aggregate_samples(run: ReportRun) -> bool:
    return table_exists(run, "aggregate_sample") and bool(
        run.value("any weighted (collapsed-stack) sample", "SELECT EXISTS(SELECT 1 FROM aggregate_sample)")
    )


class StackSamplesBase(View):
    noun = "stack-samples"

    def has_data(self, run: ReportRun) -> bool:
        return (
            table_exists(run, "profiler_sample", "stack_profile_callsite")
            and bool(run.value("any stack sample", "SELECT EXISTS(SELECT 1 FROM stack_sample)"))
            or has_aggregate_samples(run)
        )

    def absent(self, run: ReportRun, out) -> bool:
        """Marks `out` not present when the trace has no stack samples at all."""
        if self.has_data(run):
            return False
        out.not_present = True
        return True

    def function_link(self, run: ReportRun, view: str, name: str) -> Link | None:
        return run.link(self.noun, view, name=_escape_glob(name), top=None, sort=None, min_count=None, max_lines=None)


def _escape_glob(name: str) -> str:
    """A glob matching exactly this name (GLOB's special characters in brackets)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


class FunctionsView(StackSamplesBase):
    name = "functions"
    title = "Stack samples by function"
    description = (
        "CPU samples per function: Self% with the function at the top of the stack, Total% with it "
        "anywhere in the stack (a recursive function counts once per sample)."
    )
    result_field = "stack_samples_functions"
    flags = SCOPE_FLAGS | {"min_count", "sort"}
    sorts = ("self", "total", "name")
    canned_sql = f"""WITH RECURSIVE
sampled AS (
  SELECT s.callsite_id AS leaf, count(*) AS samples
  FROM stack_sample s
  LEFT JOIN profiler_task_context tc ON tc.id = s.task_context_id
  LEFT JOIN thread th ON th.id = tc.utid
  LEFT JOIN process p ON p.id = coalesce(tc.upid, th.upid)
  WHERE (:pid = '' OR p.pid = :pid)
    AND (:process = '' OR p.name GLOB :process)
    AND (:tid = '' OR th.tid = :tid)
    AND (:thread = '' OR th.name GLOB :thread)
    AND (:time = '' OR (s.ts >= (SELECT report_range_start(:time)) AND s.ts < (SELECT report_range_end(:time))))
  GROUP BY s.callsite_id
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
  AND t.total >= CAST(coalesce(nullif(:min_count, ''), 0) AS INTEGER)
ORDER BY CASE coalesce(nullif(:sort, ''), 'self') WHEN 'self' THEN -coalesce(sf.self, 0) WHEN 'total' THEN -t.total
         END, CASE coalesce(nullif(:sort, ''), 'self') WHEN 'self' THEN -t.total END, t.name
LIMIT coalesce(nullif(:top, ''), 10)"""

    def compute(self, run: ReportRun, out: pb.StackFunctions) -> None:
        if self.absent(run, out):
            return
        s = run.scope
        cs = load_samples(run)
        totals = function_totals(top_down(cs))
        rows = sorted_functions(
            totals, cs.matched if s.name is not None else None, self.sort_key(s), s.min_count, lambda t: t.total_value
        )
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
        run.truncation(min(len(rows), s.top), len(rows), "functions")
        if out.rows:
            top = out.rows[0]
            run.next_step(f"Who calls {top.name}", self.function_link(run, "bottom-up", top.name))
            run.next_step(
                "The call tree, top-down", run.link(self.noun, "top-down", top=None, sort=None, min_count=None)
            )

    def tables(self, msg: pb.StackFunctions, run: ReportRun) -> list[Table]:
        rows = [
            [
                Cell(r.name, self.function_link(run, "bottom-up", r.name)),
                Cell(fmt.percent(r.self_percent)),
                Cell(fmt.percent(r.total_percent)),
                Cell(fmt.number(r.self_count), title=f"{r.self_count} self, {r.total_count} total"),
            ]
            for r in msg.rows
        ]
        return [
            Table(
                f"Stack Samples ({fmt.number(msg.total_samples)} total, {msg.total_rows} functions)",
                ("Function", "Self%", "Total%", "Samples"),
                rows,
                empty=NOT_PRESENT if msg.not_present else "(no stack samples in scope)",
            )
        ]


class TreeView(StackSamplesBase):
    flags = SCOPE_FLAGS | {"max_lines"}
    bottom = False
    # The tree's input: samples per callsite in scope, with every callsite above them (parent, function).
    # The report builds and prunes the tree from these rows.
    canned_sql = """WITH RECURSIVE
weight AS (
  SELECT s.callsite_id, count(*) AS samples
  FROM stack_sample s
  LEFT JOIN profiler_task_context tc ON tc.id = s.task_context_id
  LEFT JOIN thread th ON th.id = tc.utid
  LEFT JOIN process p ON p.id = coalesce(tc.upid, th.upid)
  WHERE (:pid = '' OR p.pid = :pid)
    AND (:process = '' OR p.name GLOB :process)
    AND (:tid = '' OR th.tid = :tid)
    AND (:thread = '' OR th.name GLOB :thread)
    AND (:time = '' OR (s.ts >= (SELECT report_range_start(:time)) AND s.ts < (SELECT report_range_end(:time))))
  GROUP BY s.callsite_id
),
chain(id) AS (
  SELECT callsite_id FROM weight
  UNION
  SELECT c.parent_id FROM chain JOIN stack_profile_callsite c ON c.id = chain.id WHERE c.parent_id IS NOT NULL
)
SELECT c.id AS callsite_id, c.parent_id, c.depth, coalesce(nullif(coalesce(f.deobfuscated_name, f.name), ''),
       '(unnamed)') AS function, coalesce(w.samples, 0) AS self_samples,
       (:name = '' OR coalesce(f.deobfuscated_name, f.name) GLOB :name) AS matches_name
FROM chain
JOIN stack_profile_callsite c ON c.id = chain.id
JOIN stack_profile_frame f ON f.id = c.frame_id
LEFT JOIN weight w ON w.callsite_id = c.id
ORDER BY c.depth, c.id"""

    def compute(self, run: ReportRun, out: pb.CallTree) -> None:
        if self.absent(run, out):
            return
        fill_call_tree(self, run, out, load_samples(run), "samples", "Samples by function")

    def tables(self, msg: pb.CallTree, run: ReportRun) -> list[Table]:
        def cells(n: pb.CallTree.Node) -> list[Cell]:
            return [
                Cell(fmt.percent(n.self_percent)),
                Cell(fmt.percent(n.total_percent)),
                Cell(fmt.number(n.total_value), title=f"{n.self_value} self, {n.total_value} total"),
            ]

        what = "callers" if self.bottom else "callees"
        title = f"Stack Samples {self.name} ({fmt.number(msg.total_value)} samples; children are {what})"
        return [
            tree_table(
                msg,
                title,
                ("Self%", "Total%", "Samples", "Function"),
                cells,
                lambda name: self.function_link(run, "bottom-up", name),
                NOT_PRESENT if msg.not_present else "(no stack samples in scope)",
            )
        ]

    def flames(self, msg: pb.CallTree, run: ReportRun) -> list[Flame]:
        if not msg.nodes:
            return []

        def describe(n: pb.CallTree.Node) -> str:
            return (
                f"{n.name or UNNAMED}: {n.total_value} samples ({n.total_percent:.1f}%), "
                f"self {n.self_value} ({n.self_percent:.1f}%)"
            )

        kind = "callers below" if self.bottom else "callees below"
        return [
            tree_flame(
                msg,
                f"Flame graph ({kind}; width = samples)",
                describe,
                lambda name: self.function_link(run, "bottom-up", name),
            )
        ]


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


VIEWS = [FunctionsView(), TopDownView(), BottomUpView()]
