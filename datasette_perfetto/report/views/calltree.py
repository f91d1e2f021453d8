"""Call trees shared by the callstack nouns (stack-samples, heap-profile): function tables, top-down and
bottom-up trees pruned best-first to a node budget, and their flame graphs.

SQL does the heavy part: it aggregates samples (or allocations) per callsite and returns only the distinct
callsites involved with their ancestors; the trees are then built in Python over those callsites, never
over samples.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .. import format as fmt
from .. import report_pb2 as pb
from ..base import NOT_PRESENT, Cell, Flame, FlameBox, Link, ReportRun, Table, View
from ..diff_spec import DiffSpec, Filled, change_cell, diff_link, direction, show, signed
from ..links import glob_escape

# A node's priority is its total% times DECAY per indent level: deep detail never crowds out a big sibling.
DECAY = 0.8
UNNAMED = "(unnamed)"


@dataclass
class Callsite:
    parent: int | None
    names: tuple[str, ...]  # the frame's functions, outermost first (inlined ones after their caller)
    value: int = 0  # samples, or bytes allocated, with this callsite as the leaf
    count: int = 0  # allocations (heap profiles)


@dataclass
class Callsites:
    """The callsites of the samples in scope (and all their ancestors), parents before children."""

    sites: dict[int, Callsite]
    order: list[int]
    matched: frozenset[str]  # function names matching the name glob (empty without one)
    total_value: int
    total_count: int


def function_ctes(leaves: str) -> str:
    """SQL CTEs shared by the canned queries of the function views: `walk(leaf, id)`, every
    callsite from each leaf of the CTE `leaves` (column `leaf`) up to its root; `frame_name(id,
    name)`; and `on_stack(leaf, name)`, the distinct functions on each leaf's stack."""
    return f"""-- Every callsite from each leaf up to its root.
walk(leaf, id) AS (
  SELECT leaf, leaf FROM {leaves}
  UNION
  SELECT w.leaf, c.parent_id FROM walk w JOIN stack_profile_callsite c ON c.id = w.id WHERE c.parent_id IS NOT NULL
),
-- A frame's function: its outermost symbol, else its (deobfuscated) name; inlined frames are not expanded here.
frame_name AS (
  SELECT f.id, coalesce(nullif(coalesce((SELECT sy.name FROM stack_profile_symbol sy
                                          WHERE sy.symbol_set_id = f.symbol_set_id ORDER BY sy.id DESC LIMIT 1),
                                         f.deobfuscated_name, f.name), ''), '(unnamed)') AS name
  FROM stack_profile_frame f
),
on_stack AS (
  SELECT DISTINCT w.leaf, fn.name FROM walk w
  JOIN stack_profile_callsite c ON c.id = w.id JOIN frame_name fn ON fn.id = c.frame_id
),"""


def load_callsites(run: ReportRun, what: str, weight_sql: str, params: dict, name_glob: str | None) -> Callsites:
    """Runs `weight_sql` (columns: callsite_id, value, count; one row per callsite) and loads the callsites
    involved with their ancestors, frame names and inlined symbols."""
    matches = "coalesce(f.deobfuscated_name, f.name) GLOB :name" if name_glob is not None else "0"
    if name_glob is not None:
        params = {**params, "name": name_glob}
    rows = run.query(
        f"{what} per callsite, with every callsite above them and its function",
        f"""WITH RECURSIVE
weight AS MATERIALIZED (
{weight_sql}
),
chain(id) AS (
  SELECT callsite_id FROM weight
  UNION
  SELECT c.parent_id FROM chain JOIN stack_profile_callsite c ON c.id = chain.id WHERE c.parent_id IS NOT NULL
)
SELECT c.id, c.parent_id, c.depth, f.symbol_set_id, coalesce(f.deobfuscated_name, f.name) AS name,
       {matches} AS matches, w.value, w.count
FROM chain
JOIN stack_profile_callsite c ON c.id = chain.id
JOIN stack_profile_frame f ON f.id = c.frame_id
LEFT JOIN weight w ON w.callsite_id = c.id
ORDER BY c.depth, c.id""",
        params,
    )
    symbol_sets = sorted({r["symbol_set_id"] for r in rows if r["symbol_set_id"] is not None})
    symbols: dict[int, list[tuple[str, bool]]] = {}
    if symbol_sets:
        sym_params: dict = {"symbol_sets": json.dumps(symbol_sets)}
        if name_glob is not None:
            sym_params["name"] = name_glob
        # Rows of a set run from the innermost (inlined) function outwards, as trace_processor reads them.
        for r in run.query(
            "symbols of those frames (inlined functions)",
            f"""SELECT symbol_set_id, name,
       {"name GLOB :name" if name_glob is not None else "0"} AS matches
FROM stack_profile_symbol
WHERE symbol_set_id IN (SELECT value FROM json_each(:symbol_sets)) AND name IS NOT NULL
ORDER BY symbol_set_id, id DESC""",
            sym_params,
        ):
            symbols.setdefault(r["symbol_set_id"], []).append((r["name"], bool(r["matches"])))
    sites: dict[int, Callsite] = {}
    order: list[int] = []
    matched: set[str] = set()
    total_value = total_count = 0
    for cid, parent, _, symbol_set, name, matches, value, count in map(tuple, rows):
        named = symbols.get(symbol_set) if symbol_set is not None else None
        names: tuple[str, ...]
        if named is None:
            names = (name or UNNAMED,)
            if matches:
                matched.add(names[0])
        else:
            names = tuple(n or UNNAMED for n, _ in named)
            matched.update(n or UNNAMED for n, m in named if m)
        site = Callsite(parent, names, value or 0, count or 0)
        sites[cid] = site
        order.append(cid)
        total_value += site.value
        total_count += site.count
    return Callsites(sites, order, frozenset(matched), total_value, total_count)


class TreeNode(Protocol):
    """A call tree node: Node (top-down, built in full) or CallerNode (bottom-up, expanded on demand)."""

    name: str
    depth: int
    self_value: int
    self_count: int
    total_value: int
    total_count: int

    @property
    def children(self) -> Mapping[str, TreeNode]: ...


def shown_children(node: TreeNode) -> list[TreeNode]:
    """Children with weight, biggest first (ties by name, so output is stable)."""
    return sorted(
        (c for c in node.children.values() if c.total_value or c.total_count),
        key=lambda c: (-c.total_value, -c.total_count, c.name),
    )


class Node:
    __slots__ = ("name", "depth", "parent", "children", "self_value", "self_count", "total_value", "total_count")

    def __init__(self, name: str, depth: int, parent: Node | None = None) -> None:
        self.name = name
        self.depth = depth
        self.parent = parent
        self.children: dict[str, Node] = {}
        self.self_value = self.self_count = self.total_value = self.total_count = 0


def top_down(cs: Callsites, only_matching: bool = False) -> Node:
    """The callee tree under a virtual root (whose children are the outermost functions). With
    only_matching, only stacks containing a function matching the name glob count."""
    root = Node("", -1)
    node_of: dict[int | None, Node] = {}  # None: above the outermost callsites
    hit: dict[int | None, bool] = {}
    created: list[Node] = []  # parents before children
    matched = cs.matched
    for cid in cs.order:
        site = cs.sites[cid]
        node = node_of.get(site.parent, root)
        for name in site.names:
            children = node.children
            below = children.get(name)
            if below is None:
                below = children[name] = Node(name, node.depth + 1, node)
                created.append(below)
            node = below
        node_of[cid] = node
        if only_matching:
            hit[cid] = hit.get(site.parent, False) or any(n in matched for n in site.names)
            if not hit[cid]:
                continue
        if site.value or site.count:
            node.self_value += site.value
            node.self_count += site.count
    # Totals: each node's self plus its children's, children (created later) first.
    for node in created:
        node.total_value, node.total_count = node.self_value, node.self_count
    for node in reversed(created):
        parent = node.parent
        assert parent is not None  # only the root has none, and it is not in `created`
        parent.total_value += node.total_value
        parent.total_count += node.total_count
    return root


class CallerNode:
    """A bottom-up node, expanded only when the pruning asks for its children: the whole caller tree of a
    large profile has a node per distinct (stack suffix), far more than any view shows."""

    __slots__ = (
        "name",
        "depth",
        "cs",
        "entries",
        "self_value",
        "self_count",
        "total_value",
        "total_count",
        "_children",
    )

    def __init__(
        self, name: str, depth: int, cs: Callsites, entries: list, children: dict[str, CallerNode] | None = None
    ) -> None:
        self.name = name
        self.depth = depth
        self.cs = cs
        # (callsite id, index of this node's function in its names, value, count, whether the root was the leaf)
        self.entries = entries
        self.total_value = sum(e[2] for e in entries)
        self.total_count = sum(e[3] for e in entries)
        self.self_value = sum(e[2] for e in entries if e[4])
        self.self_count = sum(e[3] for e in entries if e[4])
        self._children = children

    @property
    def children(self) -> dict[str, CallerNode]:
        if self._children is None:
            sites = self.cs.sites
            groups: dict[str, list] = {}
            for cid, pos, value, count, is_self in self.entries:
                if pos == 0:  # the caller is the parent callsite's innermost function
                    cid = sites[cid].parent
                    if cid is None or cid not in sites:
                        continue
                    pos = len(sites[cid].names)
                pos -= 1
                groups.setdefault(sites[cid].names[pos], []).append((cid, pos, value, count, is_self))
            self._children = {name: CallerNode(name, self.depth + 1, self.cs, group) for name, group in groups.items()}
        return self._children


def bottom_up(cs: Callsites, roots_matching: bool = False) -> CallerNode:
    """The caller tree: roots are the functions at the top of the stack (with roots_matching: the
    innermost function of each stack that matches the name glob), children their callers. Each stack
    counts once, at one root, so a recursive function is never counted twice."""
    sites, matched = cs.sites, cs.matched
    nearest: dict[int | None, tuple[int, int] | None] = {}  # callsite -> innermost matching (callsite, index)
    groups: dict[str, list] = {}
    for cid in cs.order:
        site = sites[cid]
        last = len(site.names) - 1
        if roots_matching:
            own = next((i for i in range(last, -1, -1) if site.names[i] in matched), None)
            nearest[cid] = (cid, own) if own is not None else nearest.get(site.parent)
        if not (site.value or site.count):
            continue
        start = nearest[cid] if roots_matching else (cid, last)
        if start is None:
            continue
        at, pos = start
        groups.setdefault(sites[at].names[pos], []).append((at, pos, site.value, site.count, at == cid and pos == last))
    return CallerNode("", -1, cs, [], {name: CallerNode(name, 0, cs, group) for name, group in groups.items()})


@dataclass
class FunctionTotals:
    self_value: int = 0
    self_count: int = 0
    total_value: int = 0
    total_count: int = 0
    self_unreleased: int = 0
    total_unreleased: int = 0


def function_totals(tree: TreeNode) -> dict[str, FunctionTotals]:
    """Per function name: self from the nodes named so, total from the outermost such node on each path
    (so a recursive function counts each sample once)."""
    out: dict[str, FunctionTotals] = {}
    active: dict[str, int] = {}
    stack: list[tuple[TreeNode, bool]] = [(c, False) for c in tree.children.values()]
    while stack:
        node, leaving = stack.pop()
        if leaving:
            active[node.name] -= 1
            continue
        f = out.get(node.name)
        if f is None:
            f = out[node.name] = FunctionTotals()
        f.self_value += node.self_value
        f.self_count += node.self_count
        if not active.get(node.name):
            f.total_value += node.total_value
            f.total_count += node.total_count
        active[node.name] = active.get(node.name, 0) + 1
        stack.append((node, True))
        stack.extend((c, False) for c in node.children.values())
    return out


# -- pruning -------------------------------------------------------------------------------------------


def percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


def fill_tree(
    out: pb.CallTree, root: TreeNode, max_lines: int, unit: str, total_value: int, count_nodes: bool = True
) -> None:
    """The tree pruned to max_lines nodes, best-first by total% with a depth decay, in display order.
    count_nodes: count the whole tree (top-down, built in full); bottom-up trees are built lazily."""
    out.unit = unit
    out.total_value = total_value
    indent_of: dict[int, int] = {}
    if count_nodes:
        out.total_nodes = _count(root)

    def weight(node: TreeNode) -> float:
        return percent(node.total_value, total_value) if total_value else float(node.total_count)

    # Selection: a node becomes a candidate once its parent is shown; the best candidate goes in next.
    shown: set[int] = set()
    candidates: list[tuple[float, int, TreeNode, int]] = []
    seq = 0
    roots = shown_children(root)
    for node in roots:
        heapq.heappush(candidates, (-weight(node), seq, node, 0))
        seq += 1
    while candidates and len(shown) < max_lines:
        _, _, node, indent = heapq.heappop(candidates)
        shown.add(id(node))
        indent_of[id(node)] = indent
        children = shown_children(node)
        # A single child continues its parent's line of calls: same indent.
        child_indent = indent if len(children) == 1 else indent + 1
        for child in children:
            heapq.heappush(candidates, (-weight(child) * DECAY**child_indent, seq, child, child_indent))
            seq += 1

    # Display: pre-order over the shown nodes, biggest sibling first.
    walk: list[tuple[TreeNode, int]] = [(n, -1) for n in reversed(roots) if id(n) in shown]
    while walk:
        node, parent = walk.pop()
        index = len(out.nodes)
        children = shown_children(node)
        hidden = [c for c in children if id(c) not in shown]
        out.nodes.add(
            name=node.name,
            depth=node.depth,
            indent=indent_of[id(node)],
            parent=parent,
            self_value=node.self_value,
            total_value=node.total_value,
            self_percent=percent(node.self_value, total_value),
            total_percent=percent(node.total_value, total_value),
            self_count=node.self_count,
            total_count=node.total_count,
            hidden_children=len(hidden),
            hidden_percent=percent(sum(c.total_value for c in hidden), total_value),
            hidden_max_percent=max((percent(c.total_value, total_value) for c in hidden), default=0.0),
        )
        walk.extend((c, index) for c in reversed(children) if id(c) in shown)
    hidden_roots = [n for n in roots if id(n) not in shown]
    out.hidden_roots = len(hidden_roots)
    out.hidden_roots_percent = percent(sum(n.total_value for n in hidden_roots), total_value)
    out.hidden_roots_max_percent = max((percent(n.total_value, total_value) for n in hidden_roots), default=0.0)


def tree_footnote(run: ReportRun, out: pb.CallTree) -> None:
    """The footnote for nodes max_lines hid, linking to the same tree with a bigger budget."""
    if not (out.hidden_roots or any(n.hidden_children for n in out.nodes)):
        return
    max_lines = run.scope.max_lines
    bigger = min(max(max_lines * 5, 500), 10_000)
    hidden = f"{out.total_nodes - len(out.nodes)} more" if out.total_nodes else "More"
    run.footnote(
        f"{hidden} call tree nodes below max_lines {max_lines}; rerun with max_lines={bigger}",
        run.link(run.noun, run.view, max_lines=str(bigger)),
    )


def _count(root: TreeNode) -> int:
    """Nodes with weight in the whole tree (their ancestors have weight too)."""
    n, stack = 0, [root]
    while stack:
        node = stack.pop()
        for child in node.children.values():
            if child.total_value or child.total_count:
                n += 1
                stack.append(child)
    return n


def hidden_text(count: int, combined: float, largest: float, what: str = "children") -> str:
    return f"… ({count} more {what}: combined {combined:.1f}%, max {largest:.1f}%)"


def tree_table(
    msg: pb.CallTree,
    title: str,
    headers: tuple[str, ...],
    cells: Callable[[pb.CallTree.Node], list[Cell]],
    link: Callable[[str], Link | None],
    empty: str,
) -> Table:
    """The tree as a table: value columns, then the function indented by its display indent."""
    rows: list[list[Cell]] = []
    blanks = [Cell("") for _ in headers[:-1]]
    kids: dict[int, list[int]] = {}
    for i, node in enumerate(msg.nodes):
        kids.setdefault(node.parent, []).append(i)
    # Pre-order again, closing each subtree with the summary of the children it hides.
    walk: list[tuple[int, bool]] = [(i, False) for i in reversed(kids.get(-1, []))]
    while walk:
        i, closing = walk.pop()
        node = msg.nodes[i]
        if closing:
            text = hidden_text(node.hidden_children, node.hidden_percent, node.hidden_max_percent)
            rows.append(blanks + [Cell("  " * (node.indent + 1) + text, css="report-tree")])
            continue
        # A single-child chain keeps its indent; the arrow says "called by the line above", not a sibling.
        chained = node.parent >= 0 and msg.nodes[node.parent].indent == node.indent
        label = "  " * node.indent + ("↳ " if chained else "") + (node.name or UNNAMED)
        rows.append(cells(node) + [Cell(label, link(node.name), css="report-tree")])
        if node.hidden_children:
            walk.append((i, True))
        walk.extend((k, False) for k in reversed(kids.get(i, [])))
    if msg.hidden_roots:
        rows.append(
            blanks
            + [
                Cell(
                    hidden_text(msg.hidden_roots, msg.hidden_roots_percent, msg.hidden_roots_max_percent, "roots"),
                    css="report-tree",
                )
            ]
        )
    return Table(title, headers, rows, align="r" * (len(headers) - 1) + "l", empty=empty)


def tree_flame(
    msg: pb.CallTree, title: str, describe: Callable[[pb.CallTree.Node], str], link: Callable[[str], Link | None]
) -> Flame:
    """An icicle of the shown tree: each node as wide as its total, children under their parent, biggest
    first; the children max_lines hid are one grey box after the shown ones. The full width is the shown roots
    (and the roots max_lines hid), not every sample: `bottom-up --name X` fills the graph with X's callers."""
    boxes: list[FlameBox] = []
    if msg.total_value <= 0:
        return Flame(title, boxes)
    hidden_roots = msg.hidden_roots_percent / 100.0 * msg.total_value
    total = sum(n.total_value for n in msg.nodes if n.parent < 0) + hidden_roots
    if total <= 0:
        return Flame(title, boxes)
    if total < msg.total_value:
        title += f", full width = the roots shown: {100.0 * total / msg.total_value:.1f}% of the total"
    next_x: dict[int, float] = {}  # node index -> where its next child starts
    root_x = 0.0
    for i, node in enumerate(msg.nodes):
        width = node.total_value / total
        if node.parent < 0:
            x, root_x = root_x, root_x + width
        else:
            x = next_x[node.parent]
            next_x[node.parent] = x + width
        next_x[i] = x
        boxes.append(FlameBox(x, width, node.depth, node.name or UNNAMED, describe(node), link(node.name)))
    for i, node in enumerate(msg.nodes):
        if node.hidden_children:
            rest = node.hidden_percent / 100.0 * msg.total_value / total
            boxes.append(
                FlameBox(
                    next_x[i],
                    rest,
                    node.depth + 1,
                    f"… {node.hidden_children} more",
                    hidden_text(node.hidden_children, node.hidden_percent, node.hidden_max_percent),
                    pruned=True,
                )
            )
    if msg.hidden_roots:
        boxes.append(
            FlameBox(
                root_x,
                hidden_roots / total,
                0,
                f"… {msg.hidden_roots} more",
                hidden_text(msg.hidden_roots, msg.hidden_roots_percent, msg.hidden_roots_max_percent, "roots"),
                pruned=True,
            )
        )
    return Flame(title, boxes)


# -- the views ------------------------------------------------------------------------------------------


class MayBeAbsent(Protocol):
    not_present: bool


class FunctionRow(Protocol):
    """A functions view's row (StackFunctions.Row, HeapFunctions.Row)."""

    name: str


class CallstackView(View):
    """A view of a noun measured on callstacks: stack-samples (samples) or heap-profile (bytes allocated)."""

    empty = ""  # a table's text when nothing is in scope

    def absent(self, run: ReportRun, out: MayBeAbsent) -> bool:
        """Marks `out` not present when the trace has none of the noun's data."""
        if self.has_data(run):
            return False
        out.not_present = True
        return True

    def empty_text(self, msg: MayBeAbsent) -> str:
        return NOT_PRESENT if msg.not_present else self.empty

    def function_link(self, run: ReportRun, view: str, name: str) -> Link:
        return run.link(self.noun, view, name=glob_escape(name), top=None, sort=None, min_count=None, max_lines=None)

    def sorted_functions(
        self,
        run: ReportRun,
        cs: Callsites,
        totals: dict[str, FunctionTotals],
        count_of: Callable[[FunctionTotals], int],
    ) -> list[tuple[str, FunctionTotals]]:
        """A functions view's rows: the functions with weight (with name, the matching ones; with min_count, those
        whose count_of reaches it), in the sort flag's order."""
        s = run.scope
        keep = cs.matched if s.name is not None else None
        rows = [
            (name, t)
            for name, t in totals.items()
            if (keep is None or name in keep)
            and (t.total_value or t.total_count)
            and (s.min_count is None or count_of(t) >= s.min_count)
        ]
        keys = {
            "self": lambda r: (-r[1].self_value, -r[1].total_value, r[0]),
            "total": lambda r: (-r[1].total_value, -r[1].self_value, r[0]),
            "count": lambda r: (-r[1].self_count, -r[1].total_count, r[0]),
            "name": lambda r: (r[0],),
        }
        rows.sort(key=keys[self.sort_key(s)])
        return rows

    def min_count_footnote(
        self,
        run: ReportRun,
        cs: Callsites,
        totals: dict[str, FunctionTotals],
        count_of: Callable[[FunctionTotals], int],
        removed: Callable[[list[FunctionTotals]], str],
    ) -> None:
        """With min_count, a footnote saying what it hid (the functions sorted_functions leaves out for it,
        `removed` describing them), linking to the report without it."""
        s = run.scope
        if s.min_count is None:
            return
        keep = cs.matched if s.name is not None else None
        hidden = [
            t
            for name, t in totals.items()
            if (keep is None or name in keep) and (t.total_value or t.total_count) and count_of(t) < s.min_count
        ]
        if hidden:
            run.footnote(
                f"min_count={s.min_count} hid {fmt.plural(len(hidden), 'function')} ({removed(hidden)}); without it",
                run.link(self.noun, self.name, min_count=None),
            )

    def functions_steps(self, run: ReportRun, shown: Sequence[FunctionRow], total_rows: int, tree: str) -> None:
        """A functions view's footnote for the rows top hid, and its next steps from its first row."""
        run.truncation(len(shown), total_rows, "functions")
        if shown:
            top = shown[0].name
            run.next_step(f"Who calls {top}", self.function_link(run, "bottom-up", top))
            run.next_step(tree, run.link(self.noun, "top-down", top=None, sort=None, min_count=None))


class CallTreeView(CallstackView):
    """A top-down or bottom-up call tree, pruned to max_lines nodes, as a table and a flame graph."""

    bottom = False  # bottom-up: children are callers
    unit = ""  # what a node's value counts
    heading = ""  # the table title's first words
    headers: tuple[str, ...] = ()  # the value columns, then Function
    flame_width = ""  # what a flame box's width stands for
    functions_step = ""  # the next step to the noun's functions view

    def callsites(self, run: ReportRun) -> Callsites:
        """The callsites in scope with their values."""
        raise NotImplementedError

    def total_text(self, total_value: int) -> str:
        raise NotImplementedError

    def value_cells(self, n: pb.CallTree.Node) -> list[Cell]:
        raise NotImplementedError

    def describe(self, n: pb.CallTree.Node) -> str:
        """A flame box's hover text."""
        raise NotImplementedError

    def compute(self, run: ReportRun, out: pb.CallTree) -> None:
        if self.absent(run, out):
            return
        cs = self.callsites(run)
        s = run.scope
        tree: TreeNode
        if self.bottom:
            tree = bottom_up(cs, roots_matching=s.name is not None)
            if s.name is not None:
                out.roots = s.name
        else:
            tree = top_down(cs, only_matching=s.name is not None)
        fill_tree(out, tree, s.max_lines, self.unit, cs.total_value, count_nodes=not self.bottom)
        tree_footnote(run, out)
        if out.nodes:
            heaviest = max(out.nodes, key=lambda n: (n.self_value, -n.depth))
            if not self.bottom:
                run.next_step(
                    f"Who calls {heaviest.name or UNNAMED}", self.function_link(run, "bottom-up", heaviest.name)
                )
            run.next_step(self.functions_step, run.link(self.noun, "functions", max_lines=None))

    def tables(self, msg: pb.CallTree, run: ReportRun) -> list[Table]:
        what = "callers" if self.bottom else "callees"
        return [
            tree_table(
                msg,
                f"{self.heading} {self.name} ({self.total_text(msg.total_value)}; children are {what})",
                self.headers,
                self.value_cells,
                lambda name: self.function_link(run, "bottom-up", name),
                self.empty_text(msg),
            )
        ]

    def flames(self, msg: pb.CallTree, run: ReportRun) -> list[Flame]:
        if not msg.nodes:
            return []
        kind = "callers below" if self.bottom else "callees below"
        return [
            tree_flame(
                msg,
                f"Flame graph ({kind}; width = {self.flame_width})",
                self.describe,
                lambda name: self.function_link(run, "bottom-up", name),
            )
        ]


def tree_canned_sql(weight: str, self_columns: str) -> str:
    """A tree view's canned query: the `weight` CTE's callsites (columns callsite_id and values) with every
    callsite above them, their functions and `self_columns` (of the weight row w); the report builds and
    prunes the tree from these rows."""
    return f"""WITH RECURSIVE
weight AS (
{weight}
),
chain(id) AS (
  SELECT callsite_id FROM weight
  UNION
  SELECT c.parent_id FROM chain JOIN stack_profile_callsite c ON c.id = chain.id WHERE c.parent_id IS NOT NULL
)
SELECT c.id AS callsite_id, c.parent_id, c.depth, coalesce(nullif(coalesce(f.deobfuscated_name, f.name), ''),
       '(unnamed)') AS function, {self_columns},
       (:name = '' OR coalesce(f.deobfuscated_name, f.name) GLOB :name) AS matches_name
FROM chain
JOIN stack_profile_callsite c ON c.id = chain.id
JOIN stack_profile_frame f ON f.id = c.frame_id
LEFT JOIN weight w ON w.callsite_id = c.id
ORDER BY c.depth, c.id"""


# -- diffs ----------------------------------------------------------------------------------------------

# Nodes of each side's tree read for a diff: the best-first pruning keeps the biggest ones.
JOIN_NODES = 10_000


@dataclass
class _Joined:
    path: tuple[str, ...]
    base: pb.CallTree.Node | None
    target: pb.CallTree.Node | None
    change: str = ""

    def side(self, which: str, field: str) -> int:
        node = self.base if which == "baseline" else self.target
        return getattr(node, field) if node is not None else 0

    def delta(self, field: str) -> int:
        return self.side("target", field) - self.side("baseline", field)

    @property
    def weight(self) -> tuple[int, int]:
        """Movement first, then size: what the pruning and the display order rank by."""
        return abs(self.delta("total_value")), max(
            self.side("baseline", "total_value"), self.side("target", "total_value")
        )


def _paths(msg: pb.CallTree | None) -> dict[tuple[str, ...], pb.CallTree.Node]:
    """A side's nodes by call path (the names from its root down to it)."""
    if msg is None:
        return {}
    paths: list[tuple[str, ...]] = []
    for node in msg.nodes:
        paths.append((paths[node.parent] if node.parent >= 0 else ()) + (node.name,))
    return dict(zip(paths, msg.nodes))


def _avg(value: int, count: int) -> int:
    return value // count if count else 0


class CallTreeDiff(DiffSpec):
    """A top-down or bottom-up tree vs baseline: the union of both trees joined on the call path, pruned to
    max_lines nodes by the largest movement. Each side is the view's own tree, read up to JOIN_NODES nodes."""

    title = ""  # "Stack Samples top-down"
    what = "call tree nodes"
    key_fields, key_headers = ("name",), ("Function",)
    sorts = {"total": "total_value"}
    counts_rows = False
    side_changes = {"max_lines": JOIN_NODES}
    with_counts = False  # heap-profile: allocations and bytes per allocation
    value_kind = "count"

    def key_cells(self, row: Any, run: ReportRun, out: Any) -> list[Cell]:
        return [Cell(row.name or UNNAMED, diff_link(run, row, self.noun, "bottom-up", name=glob_escape(row.name)))]

    def fill(self, out: Any, scope: Any, base_msg: Any, target_msg: Any, top: int, moved_only: bool) -> Filled:
        base, target = _paths(base_msg), _paths(target_msg)
        joined = {p: _Joined(p, base.get(p), target.get(p)) for p in {*base, *target}}
        children: dict[tuple[str, ...], list[_Joined]] = {}
        for j in joined.values():
            if j.base is None:
                j.change = "added"
            elif j.target is None:
                j.change = "removed"
            else:
                moved = any(j.delta(f) for f in ("self_value", "total_value", "self_count", "total_count"))
                j.change = "changed" if moved else "unchanged"
            children.setdefault(j.path[:-1], []).append(j)
        for kids in children.values():
            kids.sort(key=lambda j: (-j.weight[0], -j.weight[1], j.path[-1]))
        # Best-first: a node becomes a candidate once its parent is shown; movement decays with depth.
        shown: set[tuple[str, ...]] = set()
        candidates: list[tuple[float, float, int, _Joined]] = []
        seq = 0
        for j in children.get((), []):
            heapq.heappush(candidates, (float(-j.weight[0]), float(-j.weight[1]), seq, j))
            seq += 1
        while candidates and len(shown) < scope.max_lines:
            *_, j = heapq.heappop(candidates)
            shown.add(j.path)
            for kid in children.get(j.path, []):
                decay = DECAY ** len(j.path)
                heapq.heappush(candidates, (-kid.weight[0] * decay, -kid.weight[1] * decay, seq, kid))
                seq += 1
        walk: list[tuple[_Joined, int]] = [(j, -1) for j in reversed(children.get((), [])) if j.path in shown]
        while walk:
            j, parent = walk.pop()
            index = len(out.rows)
            kids = children.get(j.path, [])
            row = out.rows.add(
                name=j.path[-1],
                change=j.change,
                depth=len(j.path) - 1,
                parent=parent,
                hidden_children=sum(1 for k in kids if k.path not in shown),
            )
            for field in ("self_value", "total_value", "total_count"):
                for which in ("baseline", "target"):
                    setattr(row, f"{which}_{field}", j.side(which, field))
                setattr(row, f"{field}_delta", j.delta(field))
            if self.with_counts:
                row.baseline_avg = _avg(row.baseline_total_value, row.baseline_total_count)
                row.target_avg = _avg(row.target_total_value, row.target_total_count)
                row.avg_delta = row.target_avg - row.baseline_avg
            walk.extend((k, index) for k in reversed(kids) if k.path in shown)
        out.hidden_roots = sum(1 for j in children.get((), []) if j.path not in shown)
        s = out.summary
        s.sort, s.sort_column, s.total_rows = "total", "total_value", len(joined)
        for j in joined.values():
            setattr(s, j.change, getattr(s, j.change) + 1)
        for which, msg in (("baseline", base_msg), ("target", target_msg)):
            if msg is None:
                continue
            setattr(out, f"{which}_total_value", msg.total_value)
            out.unit = out.unit or msg.unit
            out.roots = out.roots or msg.roots
            # Bottom-up trees are not counted in full: what max_lines hid is at least its hidden children.
            hidden = msg.hidden_roots + sum(n.hidden_children for n in msg.nodes)
            setattr(s, f"{which}_total_rows", msg.total_nodes or len(msg.nodes) + hidden)
            setattr(s, f"{which}_joined_rows", len(msg.nodes))
        return Filled(len(joined) - len(shown), 0)

    def hidden_note(self, run: ReportRun, shown: int, hidden: int) -> None:
        if hidden:
            max_lines = run.scope.max_lines
            bigger = min(max(max_lines * 5, 500), 10_000)
            run.footnote(
                f"{hidden} more call tree nodes below max_lines {max_lines}; rerun with max_lines={bigger}",
                run.link(run.noun, run.view, max_lines=str(bigger)),
            )

    def table(self, out: Any, run: ReportRun, moved_only: bool = False) -> Table:
        unit = "bytes" if self.value_kind == "bytes" else "samples"
        headers = [f"Baseline {unit}", f"Target {unit}", f"Delta {unit}", "Delta self"]
        if self.with_counts:
            headers += ["Delta count", "Delta avg"]
        headers += ["Change", "Function"]

        def cells(r: Any) -> list[Cell]:
            kind = self.value_kind
            base = show(kind, r.baseline_total_value) if r.change != "added" else "(absent)"
            target = show(kind, r.target_total_value) if r.change != "removed" else "(absent)"
            out_cells = [
                Cell(base, title=f"self {r.baseline_self_value}"),
                Cell(target, title=f"self {r.target_self_value}"),
                Cell(signed(kind, r.total_value_delta), css=direction(r.total_value_delta)),
                Cell(signed(kind, r.self_value_delta), css=direction(r.self_value_delta)),
            ]
            if self.with_counts:
                out_cells += [
                    Cell(signed("count", r.total_count_delta), css=direction(r.total_count_delta)),
                    Cell(
                        signed("bytes", r.avg_delta),
                        css=direction(r.avg_delta),
                        title=f"{r.baseline_avg} -> {r.target_avg} bytes per allocation",
                    ),
                ]
            return out_cells + [change_cell(r.change, r.total_value_delta, r.baseline_total_value)]

        rows: list[list[Cell]] = []
        blanks = [Cell("") for _ in headers[:-1]]
        kids: dict[int, list[int]] = {}
        for i, r in enumerate(out.rows):
            kids.setdefault(r.parent, []).append(i)
        walk: list[tuple[int, bool]] = [(i, False) for i in reversed(kids.get(-1, []))]
        while walk:
            i, closing = walk.pop()
            r = out.rows[i]
            if closing:
                text = f"… ({r.hidden_children} more {'child' if r.hidden_children == 1 else 'children'})"
                rows.append(blanks + [Cell("  " * (r.depth + 1) + text, css="report-tree")])
                continue
            link = diff_link(run, r, self.noun, "bottom-up", name=glob_escape(r.name))
            rows.append(cells(r) + [Cell("  " * r.depth + (r.name or UNNAMED), link, css="report-tree")])
            if r.hidden_children:
                walk.append((i, True))
            walk.extend((k, False) for k in reversed(kids.get(i, [])))
        if out.hidden_roots:
            roots = "root" if out.hidden_roots == 1 else "roots"
            rows.append(blanks + [Cell(f"… ({out.hidden_roots} more {roots})", css="report-tree")])
        s = out.summary
        counts = f"{s.added} added, {s.removed} removed, {s.changed} changed, {s.unchanged} unchanged"
        what = "callers" if self.view == "bottom-up" else "callees"
        totals = f"{show(self.value_kind, out.baseline_total_value)} -> {show(self.value_kind, out.target_total_value)}"
        if self.value_kind != "bytes":
            totals += f" {unit}"
        title = (
            f"{self.title} vs baseline ({s.total_rows} call paths: {counts}; {totals}; "
            f"children are {what}; by total delta)"
        )
        align = "r" * (len(headers) - 2) + "ll"
        empty = f"(no {self.what} in scope on either side)"
        return Table(title, tuple(headers), rows, align=align, empty=empty)
