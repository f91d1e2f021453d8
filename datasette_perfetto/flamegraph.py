"""trace_processor's `experimental_flamegraph` table function, over an ingested database.

    experimental_flamegraph(conn, profile_type, ts, ts_constraint, upid, upid_group, focus_str)

takes the SQL arguments in trace_processor's order and returns (COLUMNS, rows): the rows trace_processor's
table would hold, in its order, with ids dense from 0. Bad arguments raise ValueError with a one-line
message naming the argument; so does a dump or profile there is nothing to build from (trace_processor's
"Failed to build flamegraph").

Profile types, as trace_processor builds them:

- 'graph' (a Java heap dump, needs ts and upid): the dump's objects as a tree of shortest paths from the
  GC roots (a breadth-first search from the roots sorted by class name then id; an object's parent is the
  first object the search reached it from; the referent field of weak, phantom and finalizer references is
  not followed), each object named by its class (deobfuscated when known) plus " [ROOT_TYPE]" for roots,
  siblings of the same name merged. Rows go by object id, each after its parent; an object with native
  memory gets a "[native] Name" child holding its native size, after all other rows. A truncated dump
  without roots gives one ERROR row. (The android.memory.heap_graph.experimental_flamegraph stdlib module
  run through flamegraph::Build.)
- 'native' (heapprofd, needs ts and upid): every callsite of the trace merged by (function, mapping,
  merged parent), symbolized frames expanded into their inlined functions; the process's allocations up
  to ts counted at their callsite (BuildHeapProfileFlamegraph).
- 'perf' (CPU samples, needs ts_constraint and upid or upid_group): the same callsite tree; samples of
  the processes' threads within the time constraints ('>=N', '>N', '<=N', comma separated) count 1 each
  (BuildNativeCallStackSamplingFlamegraph).

focus_str keeps the nodes whose name contains it (ASCII case-insensitively), their ancestors and their
descendants, and sums the cumulative columns again over what is kept.

Memory and time are linear in the dump (or the callsite table) plus sorting in SQLite.
"""

from __future__ import annotations

import re
import sqlite3
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

COLUMNS: tuple[str, ...] = (
    "id",
    "profile_type",
    "ts_in",
    "ts_constraint",
    "upid",
    "upid_group",
    "focus_str",
    "ts",
    "depth",
    "name",
    "map_name",
    "count",
    "cumulative_count",
    "size",
    "cumulative_size",
    "alloc_count",
    "cumulative_alloc_count",
    "alloc_size",
    "cumulative_alloc_size",
    "parent_id",
    "source_file",
    "line_number",
)

_PREFIX = "experimental_flamegraph: "
_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
_UINT64_MAX = (1 << 64) - 1
_INCOMPLETE = "ERROR: INCOMPLETE GRAPH (try increasing buffer size)"
_REFERENT = "java.lang.ref.Reference.referent"
_REFERENCE_KINDS = ("KIND_FINALIZER_REFERENCE", "KIND_PHANTOM_REFERENCE", "KIND_WEAK_REFERENCE")
# strtoll/strtoul: optional leading whitespace, a sign, decimal digits, nothing after.
_C_INTEGER = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class _Table:
    """The flamegraph under construction: one entry per node, parents before children. Its profile type, ts,
    upid and upid_group are the same on every row, but for the ts of a perf node with samples (node_ts)."""

    def __init__(self, profile_type: str, ts: int, upid: int | None, upid_group: str | None = None) -> None:
        self.profile_type, self.ts, self.upid, self.upid_group = profile_type, ts, upid, upid_group
        self.node_ts: dict[int, int] = {}
        self.depth: list[int] = []
        self.name: list[str | None] = []
        self.map_name: list[str | None] = []
        self.parent: list[int] = []  # -1 at the roots
        self.count: list[int] = []
        self.size: list[int] = []
        self.alloc_count: list[int] = []
        self.alloc_size: list[int] = []
        self.source: dict[int, tuple[str | None, int | None]] = {}  # node -> (source_file, line_number)

    def __len__(self) -> int:
        return len(self.name)

    def add(self, name: str | None, map_name: str | None, parent: int) -> int:
        node = len(self.name)
        self.depth.append(0 if parent < 0 else self.depth[parent] + 1)
        self.name.append(name)
        self.map_name.append(map_name)
        self.parent.append(parent)
        self.count.append(0)
        self.size.append(0)
        self.alloc_count.append(0)
        self.alloc_size.append(0)
        return node

    def rows(self, keep: Sequence[bool] | None = None) -> list[tuple]:
        """The table's rows (only those `keep` marks, numbered again), the cumulative columns summed over
        what is kept. trace_processor's focus leaves upid_group, source_file and line_number NULL."""
        n = len(self)
        selves = (self.count, self.size, self.alloc_count, self.alloc_size)
        cumulative = [own.copy() for own in selves]
        parent = self.parent
        for column in cumulative:
            for i in range(n - 1, -1, -1):
                p = parent[i]
                if p >= 0 and (keep is None or keep[i]):
                    column[p] += column[i]
            if n and (max(column) > _INT64_MAX or min(column) < _INT64_MIN):
                raise ValueError(_PREFIX + "an integer value overflows 64 bits")
        focused = keep is not None
        upid_group = None if focused else self.upid_group
        source = {} if focused else self.source
        node_ts = self.node_ts
        new_id = [-1] * n
        out: list[tuple] = []
        for i in range(n):
            if focused and not keep[i]:  # type: ignore[index]
                continue
            p = parent[i]
            new_id[i] = len(out)
            source_file, line_number = source.get(i, (None, None))
            out.append(
                (
                    len(out),
                    self.profile_type,
                    None,
                    None,
                    self.upid,
                    upid_group,
                    None,
                    node_ts.get(i, self.ts),
                    self.depth[i],
                    self.name[i],
                    self.map_name[i],
                    self.count[i],
                    cumulative[0][i],
                    self.size[i],
                    cumulative[1][i],
                    self.alloc_count[i],
                    cumulative[2][i],
                    self.alloc_size[i],
                    cumulative[3][i],
                    None if p < 0 else new_id[p],
                    source_file,
                    line_number,
                )
            )
        return out

    def focus(self, focus_str: str) -> list[bool]:
        """trace_processor's ComputeFocusedState: which rows a focus keeps."""
        needle = focus_str.translate(_ASCII_LOWER)
        not_focused, propagating, ancestor = 0, 1, 2
        state = [not_focused] * len(self)
        parent = self.parent
        for i, name in enumerate(self.name):
            p = parent[i]
            if needle in (name or "").translate(_ASCII_LOWER):
                state[i] = propagating
                while p >= 0 and state[p] == not_focused:
                    state[p] = ancestor
                    p = parent[p]
            elif p >= 0 and state[p] == propagating:
                state[i] = propagating
        return [s != not_focused for s in state]


def experimental_flamegraph(
    conn: sqlite3.Connection,
    profile_type: Any,
    ts: Any,
    ts_constraint: Any,
    upid: Any,
    upid_group: Any,
    focus_str: Any,
) -> tuple[list[str], list[tuple]]:
    """trace_processor's experimental_flamegraph(profile_type, ts, ts_constraint, upid, upid_group,
    focus_str): (COLUMNS, rows). See the module's documentation."""
    if not isinstance(profile_type, str):
        raise ValueError(_PREFIX + "profile_type must be a string")
    if ts is not None and not _is_int(ts):
        raise ValueError(_PREFIX + "ts must be an integer")
    if ts_constraint is not None and not isinstance(ts_constraint, str):
        raise ValueError(_PREFIX + "ts_constraint must be a string")
    if upid is not None and not _is_int(upid):
        raise ValueError(_PREFIX + "upid must be an integer")
    if upid_group is not None and not isinstance(upid_group, str):
        raise ValueError(_PREFIX + "upid_group must be a string")
    if focus_str is not None and not isinstance(focus_str, str):
        raise ValueError(_PREFIX + "focus_str must be a string")
    if ts is None and ts_constraint is None:
        raise ValueError(_PREFIX + "one of ts and ts_constraint must not be NULL")
    if upid is None and upid_group is None:
        raise ValueError(_PREFIX + "one of upid and upid_group must not be NULL")
    constraints = _time_constraints(ts_constraint)
    if profile_type not in ("graph", "native", "perf"):
        raise ValueError(_PREFIX + f"profile_type {profile_type!r} is not 'graph', 'native' or 'perf'")
    # trace_processor keeps the upid as a uint32.
    upid = None if upid is None else upid & 0xFFFFFFFF

    if profile_type == "perf":
        table = _perf(conn, upid, upid_group, constraints)
    elif ts is None or upid is None:
        what = "heap graph" if profile_type == "graph" else "heap profile"
        raise ValueError(_PREFIX + f"ts and upid must not be NULL for a {what} ('{profile_type}')")
    elif profile_type == "graph":
        table = _graph(conn, ts, upid)
    else:
        table = _native(conn, ts, upid)

    if focus_str and len(table):
        return list(COLUMNS), table.rows(table.focus(focus_str))
    return list(COLUMNS), table.rows()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _c_integer(text: str) -> int | None:
    match = _C_INTEGER.fullmatch(text)
    return None if match is None else int(match.group(1))


def _time_constraints(text: str | None) -> list[tuple[str, int]]:
    """'>=N,<=M' as [(op, N), ...]; trace_processor's ParseTimeConstraint (which knows no '<')."""
    if text is None:
        return []
    out = []
    for part in (p for p in text.split(",") if p):
        for op in ("=", ">=", ">", "<="):
            if part.startswith(op):
                value = _c_integer(part[len(op) :])
                if value is None:
                    raise ValueError(_PREFIX + f"ts_constraint {part!r}: unable to parse the timestamp")
                out.append((op, max(_INT64_MIN, min(_INT64_MAX, value))))
                break
        else:
            raise ValueError(_PREFIX + f"ts_constraint {part!r}: unknown time constraint (use >=N, >N or <=N)")
    return out


# -- 'graph': Java heap dumps ----------------------------------------------------------------------------------


def _graph(conn: sqlite3.Connection, ts: int, upid: int) -> _Table:
    table = _Table("graph", ts, upid)
    has_roots = conn.execute(
        "SELECT EXISTS(SELECT 1 FROM heap_graph_object WHERE upid = ? AND graph_sample_ts = ? AND root_type IS NOT NULL)",
        (upid, ts),
    ).fetchone()[0]
    if has_roots:
        dump = _Dump(conn, upid, ts)
        dump.frames(table, dump.shortest_path_tree(conn)[0])
        if not len(table):  # roots, but none with a class
            raise ValueError(
                _PREFIX + f"the heap graph of upid {upid} at ts {ts} has no frames (failed to build flamegraph)"
            )
        return table
    truncated = conn.execute("SELECT truncated FROM heap_graph WHERE upid = ? AND ts = ?", (upid, ts)).fetchone()
    if truncated is None or not truncated[0]:
        raise ValueError(_PREFIX + f"no heap graph with roots for upid {upid} at ts {ts} (failed to build flamegraph)")
    node = table.add(_INCOMPLETE, "JAVA", -1)
    table.count[node] = table.size[node] = 1
    return table


_UNREACHED = -2  # parent of an object no root reaches (-1: a root's)


class _Dump:
    """One heap dump's objects, by id, as parallel lists; `classes` holds the classes they are of."""

    def __init__(self, conn: sqlite3.Connection, upid: int, ts: int) -> None:
        self.upid, self.ts = upid, ts
        self.classes: dict[int, tuple[str | None, str | None]] = {}  # id -> (name, name shown)
        self.weak_classes: list[int] = []  # weak, phantom and finalizer references
        for class_id, name, deobfuscated, kind in conn.execute(
            "SELECT id, name, deobfuscated_name, kind FROM heap_graph_class WHERE id IN "
            "(SELECT DISTINCT type_id FROM heap_graph_object WHERE upid = ? AND graph_sample_ts = ?)",
            (upid, ts),
        ):
            self.classes[class_id] = (name, deobfuscated if deobfuscated is not None else name)
            if kind in _REFERENCE_KINDS:
                self.weak_classes.append(class_id)
        self.ids = array("q")
        self.type_ids: list[int | None] = []
        self.self_sizes: list[int | None] = []
        self.native_sizes: list[int | None] = []
        self.root_types: list[str | None] = []
        for object_id, type_id, self_size, native_size, root_type in conn.execute(
            "SELECT id, type_id, self_size, native_size, root_type FROM heap_graph_object "
            "WHERE upid = ? AND graph_sample_ts = ? ORDER BY id",
            (upid, ts),
        ):
            self.ids.append(object_id)
            self.type_ids.append(type_id)
            self.self_sizes.append(self_size)
            self.native_sizes.append(native_size)
            self.root_types.append(root_type)
        self._names: dict[tuple[int | None, str | None], str | None] = {}

    def references(self, conn: sqlite3.Connection) -> Iterator[tuple[int, int]]:
        """(owner, owned) positions of the references between the dump's objects that the search follows
        (all but the referent of a weak, phantom or finalizer reference), sorted."""
        ids, n = self.ids, len(self.ids)
        weak = self.weak_classes
        # A reference whose field_name is NULL is followed.
        excluded = f"AND NOT coalesce(r.field_name = ? AND o.type_id IN ({','.join('?' * len(weak))}), 0) "
        sql = (
            "SELECT r.owner_id - ?, r.owned_id - ? FROM heap_graph_object o "
            "JOIN heap_graph_reference r ON r.reference_set_id = o.reference_set_id "
            "WHERE o.upid = ? AND o.graph_sample_ts = ? AND r.owner_id IS NOT NULL AND r.owned_id IS NOT NULL "
            f"{excluded if weak else ''}ORDER BY r.owner_id, r.owned_id"
        )
        dump = (self.upid, self.ts, _REFERENT, *weak) if weak else (self.upid, self.ts)
        if not n:
            return
        if ids[-1] - ids[0] + 1 == n:  # ids first..first + n - 1: positions by subtraction
            for owner, owned in conn.execute(sql, (ids[0], ids[0], *dump)):
                if 0 <= owner < n and 0 <= owned < n:
                    yield owner, owned
            return
        position = {object_id: i for i, object_id in enumerate(ids)}
        for owner, owned in conn.execute(sql, (0, 0, *dump)):
            source, target = position.get(owner), position.get(owned)
            if source is not None and target is not None:
                yield source, target

    def name(self, i: int) -> str | None:
        """The frame name of object `i`: its class (deobfuscated when known), and " [ROOT_TYPE]" for a root
        (NULL for a class without a name, as in SQL)."""
        key = (self.type_ids[i], self.root_types[i])
        if key not in self._names:
            name = self.classes[self.type_ids[i]][1]  # type: ignore[index]
            if name is not None and self.root_types[i] is not None:
                name += f" [{self.root_types[i]}]"
            self._names[key] = name
        return self._names[key]

    def shortest_path_tree(self, conn: sqlite3.Connection) -> tuple[array, array]:
        """The stdlib's _heap_graph_object_min_depth_tree for this dump: parent position per object (-1 at
        a root, _UNREACHED when no root reaches it), and the reached positions in the order the search
        reached them (parents first). A breadth-first search from the roots sorted by class name then id,
        following an object's references in owned_id order, except the referent of a weak, phantom or
        finalizer reference."""
        n = len(self.ids)
        # The references in CSR form: object i refers to targets[starts[i]:starts[i + 1]], sorted.
        starts = array("q", [0]) * (n + 1)
        targets = array("q")
        for source, target in self.references(conn):
            starts[source + 1] += 1
            targets.append(target)
        for i in range(n):
            starts[i + 1] += starts[i]

        classes, type_ids, ids = self.classes, self.type_ids, self.ids

        def root_order(i: int) -> tuple:
            name = classes[type_ids[i]][0]  # type: ignore[index]
            return (name is not None, name or "", ids[i])

        # Roots without a class are no start nodes (the stdlib joins them with heap_graph_class).
        roots = sorted(
            (i for i, t in enumerate(self.root_types) if t is not None and type_ids[i] in classes), key=root_order
        )
        parent = array("q", [_UNREACHED]) * n
        queue = array("q")
        for r in roots:
            if parent[r] == _UNREACHED:
                parent[r] = -1
                queue.append(r)
        head = 0
        while head < len(queue):
            v = queue[head]
            head += 1
            for k in range(starts[v], starts[v + 1]):
                t = targets[k]
                if parent[t] == _UNREACHED:
                    parent[t] = v
                    queue.append(t)
        return parent, queue

    def frames(self, table: _Table, parent: array) -> None:
        """Adds the dump's flamegraph to `table` in trace_processor's order: the reached objects by id, each
        after its parent (a parent with a larger id first), then the "[native]" children. An object without
        a class has no frame (trace_processor fails when one has children)."""
        n, ids = len(self.ids), self.ids
        has_class = [t in self.classes for t in self.type_ids]
        for i in range(n):
            p = parent[i]
            if p >= 0 and not has_class[p]:
                raise ValueError(_PREFIX + f"heap graph object {ids[p]} has no class (failed to build flamegraph)")
        nodes: dict[tuple[int, str | None], int] = {}

        def intern(parent_node: int, name: str | None) -> int:
            node = nodes.get((parent_node, name))
            if node is None:
                node = nodes[(parent_node, name)] = table.add(name, "JAVA", parent_node)
            return node

        node_of = array("q", [-1]) * n
        counts, sizes = table.count, table.size
        for i in range(n):
            if parent[i] == _UNREACHED or node_of[i] >= 0 or not has_class[i]:
                continue
            chain = []
            j = i
            while j >= 0 and node_of[j] < 0:
                chain.append(j)
                j = parent[j]
            node = node_of[j] if j >= 0 else -1
            for j in reversed(chain):
                node = node_of[j] = intern(node, self.name(j))
                counts[node] += 1
                size = self.self_sizes[j]
                if size is not None:
                    if size < 0:
                        raise ValueError(_PREFIX + f"heap graph object {ids[j]} has a negative self_size")
                    sizes[node] += size
        for i in range(n):
            native = self.native_sizes[i]
            if node_of[i] < 0 or not native:
                continue
            if native < 0:
                raise ValueError(_PREFIX + f"heap graph object {ids[i]} has a negative native_size")
            name = self.name(i)
            node = intern(node_of[i], None if name is None else "[native] " + name)
            counts[node] += 1
            sizes[node] += native


def min_depth_tree(conn: sqlite3.Connection) -> list[tuple[int, int | None]]:
    """(object id, its parent's id or None at a root) of every object a root reaches, parents first: the
    stdlib's _heap_graph_object_min_depth_tree (graph_reachable_bfs! from every root at once). Each dump is
    searched alone: no reference crosses dumps, so the parents are those of one search of all."""
    rows: list[tuple[int, int | None]] = []
    for upid, ts in conn.execute("SELECT DISTINCT upid, graph_sample_ts FROM heap_graph_object ORDER BY 1, 2"):
        dump = _Dump(conn, upid, ts)
        parent, order = dump.shortest_path_tree(conn)
        ids = dump.ids
        rows += [(ids[i], None if parent[i] < 0 else ids[parent[i]]) for i in order]
    return rows


# -- 'native' and 'perf': callstack profiles ---------------------------------------------------------------------


def _callsite_tree(
    conn: sqlite3.Connection, ts: int, upid: int | None, upid_group: str | None, profile_type: str
) -> tuple[_Table, dict[int, int]]:
    """trace_processor's BuildFlamegraphTableTreeStructure: every callsite of the trace merged by (function,
    mapping, merged parent), a symbolized frame as its functions outermost first (inlined ones included);
    and callsite id -> the node its leaf function is."""
    table = _Table(profile_type, ts, upid, upid_group)
    symbols: dict[int, list[tuple[str | None, str | None, int | None]]] = {}
    for set_id, name, source_file, line_number in conn.execute(
        "SELECT symbol_set_id, name, source_file, line_number FROM stack_profile_symbol ORDER BY id"
    ):
        symbols.setdefault(set_id, []).append((name, source_file, line_number))
    nodes: dict[tuple[str | None, str | None, int], int] = {}
    merged: dict[int, int] = {}
    for callsite_id, parent_id, frame_name, deobfuscated, symbol_set_id, mapping_name in conn.execute(
        "SELECT c.id, c.parent_id, f.name, f.deobfuscated_name, f.symbol_set_id, m.name "
        "FROM stack_profile_callsite c JOIN stack_profile_frame f ON f.id = c.frame_id "
        "LEFT JOIN stack_profile_mapping m ON m.id = f.mapping ORDER BY c.id"
    ):
        parent = -1
        if parent_id is not None:
            if parent_id not in merged:
                raise ValueError(_PREFIX + f"callsite {callsite_id} comes before its parent {parent_id}")
            parent = merged[parent_id]
        functions = symbols.get(symbol_set_id) if symbol_set_id is not None else None
        if not functions:
            functions = [(deobfuscated if deobfuscated is not None else frame_name, None, None)]
        # Outermost (the frame's function) first, inlined functions after it.
        for name, source_file, line_number in reversed(functions):
            key = (name, mapping_name, parent)
            node = nodes.get(key)
            if node is None:
                node = nodes[key] = table.add(name, mapping_name, parent)
                if source_file is not None or line_number is not None:
                    # A node merging functions of other lines keeps those of the first.
                    table.source[node] = (source_file, line_number)
            parent = node
        merged[callsite_id] = parent
    return table, merged


def _native(conn: sqlite3.Connection, ts: int, upid: int) -> _Table:
    allocations = conn.execute(
        "SELECT callsite_id, count, size FROM heap_profile_allocation WHERE ts <= ? AND upid = ? ORDER BY id",
        (ts, upid),
    ).fetchall()
    if not allocations:
        raise ValueError(
            _PREFIX + f"no heap profile allocations of upid {upid} at or before ts {ts} (failed to build flamegraph)"
        )
    table, merged = _callsite_tree(conn, ts, upid, None, "native")
    for callsite_id, count, size in allocations:
        node = merged.get(callsite_id)
        if node is None:
            continue
        count = count or 0
        size = size or 0
        # Old heapprofd producers leave count 0, so size and count are looked at separately.
        if size > 0:
            table.alloc_size[node] += size
        if count > 0:
            table.alloc_count[node] += count
        table.size[node] += size
        table.count[node] += count
    return table


def _perf(
    conn: sqlite3.Connection, upid: int | None, upid_group: str | None, constraints: list[tuple[str, int]]
) -> _Table:
    if upid is not None:
        upids = {upid}
    else:
        assert upid_group is not None
        upids = set()
        for token in (t for t in upid_group.split(",") if t):
            value = _c_integer(token)
            if value is not None:
                upids.add(_strtoul(value) & 0xFFFFFFFF)
    if any(op == "=" for op, _ in constraints):
        raise ValueError(_PREFIX + "ts_constraint: '=' is not allowed for perf (use >=N, >N or <=N)")
    default_ts = 0
    if constraints:
        op, value = constraints[0]
        default_ts = value + 1 if op == ">" else value
    table, merged = _callsite_tree(conn, default_ts, upid, upid_group, "perf")

    utids = {
        utid
        for utid, thread_upid in conn.execute("SELECT utid, upid FROM thread WHERE upid IS NOT NULL")
        if thread_upid in upids
    }
    where = "".join(f" AND s.ts {op} ?" for op, _ in constraints)
    for sample_ts, callsite_id, utid in conn.execute(
        "SELECT s.ts, s.callsite_id, tc.utid FROM profiler_sample s "
        "JOIN profiler_task_context tc ON tc.id = s.task_context_id "
        f"WHERE s.callsite_id IS NOT NULL{where} ORDER BY s.id",
        tuple(value for _, value in constraints),
    ):
        if utid is None or utid not in utids:
            continue
        node = merged.get(callsite_id)
        if node is None:
            continue
        table.size[node] += 1
        table.count[node] += 1
        table.node_ts[node] = sample_ts
    return table


def _strtoul(value: int) -> int:
    """strtoul's result for a decimal it parsed: saturated at ULONG_MAX, a negative number negated modulo 2**64."""
    if value > _UINT64_MAX or value < -_UINT64_MAX:
        return _UINT64_MAX
    return value if value >= 0 else value + (1 << 64)


__all__ = ["COLUMNS", "experimental_flamegraph"]
