"""trace_processor's table functions, for the `query` command and the conformance runner.

`SELECT ... FROM experimental_slice_layout('1,2')` reads rows a function computes from its arguments.
Python's sqlite3 module cannot register table-valued functions, so a statement's calls are computed
before it runs: each argument is evaluated (a constant or an uncorrelated subquery, as trace_processor's
tests pass them), the function's rows go into a TEMP table, and the call's text is replaced by that
table's name. A call whose arguments name columns of the enclosing query (correlated) is computed for
every argument value the trace holds, when the function can list them (TableFunction.calls), and becomes a
subquery of that table picking the rows of the enclosing row's values. Each function is ported from
trace_processor's plugin of the same name.
"""

from __future__ import annotations

import bisect
import json
import re
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .flamegraph import COLUMNS, experimental_flamegraph
from .sql_text import as_sqlite
from .stdlib import INTERVAL_COLUMNS, counter_leading_intervals, create_temp_table, run_metric

INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class TableFunction:
    arguments: int
    # compute(conn, *arguments) -> (column names, rows); ValueError for a bad argument.
    compute: Callable[..., tuple[list[str], list[tuple]]]
    # A PerfettoSQL macro (`name!(table)`): its argument is a table or subquery, which may name the
    # statement's own WITH tables; compute(conn, SQL selecting from it) instead.
    macro: bool = False
    # For correlated calls: calls(conn, argument values, CORRELATED for those naming the enclosing query's
    # columns) -> every argument tuple the call can take in this trace (None: not computable ahead), and the
    # columns of compute's rows.
    calls: Callable[[sqlite3.Connection, list[Any]], Iterable[tuple] | None] | None = None
    columns: tuple[str, ...] = ()


# An argument naming a column of the enclosing query: its value is known only per row.
CORRELATED = object()


def runnable(conn: sqlite3.Connection, statement: str, metrics_run: set[str]) -> str | None:
    """What SQLite runs for one of the user's statements: PerfettoSQL made SQLite (sql_text.as_sqlite) and its
    table function calls computed; None when the statement was run here (a span join, RUN_METRIC: metrics
    already run on this connection are in `metrics_run`)."""
    if run_span_join(conn, statement) or run_metric(conn, statement, metrics_run):
        return None
    return expand_table_functions(conn, as_sqlite(statement))


def expand_table_functions(conn: sqlite3.Connection, statement: str) -> str:
    """`statement` with each table function call replaced by a TEMP table of its rows; sqlite3.Error
    naming the function for a bad call."""
    out: list[str] = []
    pos = 0
    for start, end, name, arguments in _calls(statement):
        function = TABLE_FUNCTIONS[name]
        if len(arguments) != function.arguments:
            raise sqlite3.OperationalError(f"{name}: takes {function.arguments} argument(s), got {len(arguments)}")
        try:
            if function.macro:
                columns, rows = function.compute(conn, f"{_with_clause(statement)} SELECT * FROM {arguments[0]}")
            else:
                try:
                    values = conn.execute(f"SELECT {', '.join(arguments)}").fetchone()
                except sqlite3.OperationalError as e:
                    correlated = _correlated(conn, function, arguments) if "no such column" in str(e) else None
                    if correlated is None:
                        raise
                    out += [statement[pos:start], correlated]
                    pos = end
                    continue
                columns, rows = function.compute(conn, *values)
        except sqlite3.Error as e:
            hint = " (arguments are constants or subqueries: a column of the enclosing query cannot be one)"
            raise sqlite3.OperationalError(f"{name}: {e}" + (hint if "no such column" in str(e) else "")) from None
        except ValueError as e:
            message = str(e)
            raise sqlite3.OperationalError(
                message if message.startswith(f"{name}: ") else f"{name}: {message}"
            ) from None
        out += [statement[pos:start], _temp_table(conn, columns, rows)]
        pos = end
    return "".join(out) + statement[pos:] if out else statement


def _correlated(conn: sqlite3.Connection, function: TableFunction, arguments: list[str]) -> str | None:
    """A correlated call as a subquery of the rows of every call it can make (a column per correlated
    argument), picking those of the enclosing row's values; None when the function cannot list its calls."""
    if function.calls is None:
        return None
    values: list[Any] = []
    for argument in arguments:
        try:
            values.append(conn.execute(f"SELECT {argument}").fetchone()[0])
        except sqlite3.OperationalError as e:
            if "no such column" not in str(e):
                raise
            values.append(CORRELATED)
    calls = function.calls(conn, values)
    if calls is None:
        return None
    at = [i for i, v in enumerate(values) if v is CORRELATED]
    rows = []
    for call in calls:
        _, call_rows = function.compute(conn, *call)
        rows += [(*row, *(call[i] for i in at)) for row in call_rows]
    keys = [f"__argument_{i}" for i in at]
    table = _temp_table(conn, [*function.columns, *keys], rows)
    shown = ", ".join('"' + c.replace('"', '""') + '"' for c in function.columns)
    picked = " AND ".join(f"{key} IS ({arguments[i]})" for key, i in zip(keys, at))
    return f"(SELECT {shown} FROM {table} WHERE {picked})"


def _temp_table(conn: sqlite3.Connection, columns: list[str], rows: list[tuple]) -> str:
    (count,) = conn.execute("SELECT count(*) FROM temp.sqlite_master").fetchone()
    name = f"__table_function_{count}"
    create_temp_table(conn, name, columns, rows)
    return f"temp.{name}"


# What a call's scan skips: string literals, quoted identifiers and comments.
_SKIPPED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?(?:\*/|$)", re.S)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


def _calls(statement: str):
    """(start, end, name, argument texts) of each table function call in `statement`, in order."""
    pos = 0
    while pos < len(statement):
        skipped = _SKIPPED.match(statement, pos)
        if skipped:
            pos = skipped.end()
            continue
        word = _WORD.match(statement, pos)
        if word is None:
            pos += 1
            continue
        name = word.group(0).lower()
        end_of_name = word.end()
        if statement[end_of_name : end_of_name + 1] == "!":  # a macro
            name += "!"
            end_of_name += 1
        after = len(statement[end_of_name:]) - len(statement[end_of_name:].lstrip())
        open_at = end_of_name + after
        if name in TABLE_FUNCTIONS and statement[open_at : open_at + 1] == "(":
            end, arguments = _arguments(statement, open_at)
            yield word.start(), end, name, arguments
            pos = end
        else:
            pos = word.end()


def _with_clause(statement: str) -> str:
    """The statement's leading `WITH name AS (...), ...` (empty without one): the text before the first
    SELECT or VALUES outside parentheses."""
    code = _without_comments(statement).lstrip()
    if not re.match(r"WITH\b", code, re.I):
        return ""
    depth, pos = 0, 4
    while pos < len(code):
        skipped = _SKIPPED.match(code, pos)
        if skipped:
            pos = skipped.end()
            continue
        if code[pos] in "()":
            depth += 1 if code[pos] == "(" else -1
        elif depth == 0 and re.match(r"(SELECT|VALUES)\b", code[pos:], re.I) and code[pos - 1] in " \t\r\n)":
            return code[:pos]
        pos += 1
    return ""


def _arguments(statement: str, open_at: int) -> tuple[int, list[str]]:
    """(the position after the closing parenthesis, the comma-separated argument texts) of a call."""
    depth, pos, start = 0, open_at, open_at + 1
    arguments: list[str] = []
    while pos < len(statement):
        skipped = _SKIPPED.match(statement, pos)
        if skipped:
            pos = skipped.end()
            continue
        ch = statement[pos]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                last = statement[start:pos].strip()
                if last or arguments:
                    arguments.append(last)
                return pos + 1, arguments
        elif ch == "," and depth == 1:
            arguments.append(statement[start:pos].strip())
            start = pos + 1
        pos += 1
    raise sqlite3.OperationalError("a table function call's parenthesis is not closed")


# -- experimental_slice_layout (plugins/experimental_slice_layout) --------------------------------------


def slice_layout(conn: sqlite3.Connection, track_ids) -> tuple[list[str], list[tuple]]:
    """Each slice of the tracks listed ('1,2,3') with a depth that lays their trees out without overlap:
    each root and its descendants form a group; the deepest groups first (then the earliest) take the
    lowest rows free over the group's whole time range."""
    if not isinstance(track_ids, str):
        raise ValueError("invalid input track id list")
    ids = [int(token) for token in track_ids.split(",") if re.fullmatch(r"\s*\+?\d+", token)]
    slices = conn.execute(
        "SELECT id, ts, dur, depth, parent_id FROM slice WHERE track_id IN (SELECT value FROM json_each(?)) "
        "ORDER BY id",
        (json.dumps(ids),),
    ).fetchall()
    group_of: dict[int, int] = {}
    groups: list[list[int]] = []  # [start, end, max depth, layout depth]
    slice_groups = []
    for slice_id, ts, dur, depth, parent_id in slices:
        end = INT64_MAX if dur == -1 else ts + dur
        if parent_id is not None and parent_id in group_of:
            index = group_of[parent_id]
            group = groups[index]
            group[1] = max(group[1], end)
            group[2] = max(group[2], depth)
        else:
            index = len(groups)
            groups.append([ts, end, depth, 0])
        group_of[slice_id] = index
        slice_groups.append(index)
    occupied: list[list[tuple[int, int]]] = []  # per row, sorted (start, end) ranges
    for index in sorted(range(len(groups)), key=lambda i: (-groups[i][2], groups[i][0], i)):
        start, end, max_depth, _ = groups[index]
        layout_depth = run = 0
        row = 0
        while True:
            if row >= len(occupied) or _row_is_free(occupied[row], start, end):
                if run == 0:
                    layout_depth = row
                run += 1
                if run == max_depth + 1:
                    break
            else:
                run = 0
            row += 1
        groups[index][3] = layout_depth
        while len(occupied) <= layout_depth + max_depth:
            occupied.append([])
        for row in range(layout_depth, layout_depth + max_depth + 1):
            bisect.insort(occupied[row], (start, end))
    rows = [(s[0], s[3] + groups[g][3]) for s, g in zip(slices, slice_groups)]
    return ["id", "layout_depth"], rows


def _row_is_free(row: list[tuple[int, int]], start: int, end: int) -> bool:
    if not row or start >= row[-1][1]:
        return True
    at = bisect.bisect_left(row, start, key=lambda r: r[0])
    if at < len(row) and row[at][0] < end:
        return False
    return not (at > 0 and row[at - 1][1] > start)


# -- experimental_annotated_callstack (plugins/experimental_annotated_stack) ----------------------------

_INTERPRETER_FRAMES = ("nterp_", "Nterp", "ExecuteNterp", "ExecuteSwitchImpl", "_ZN3art11interpreter")


def _map_type(name: str) -> str:
    """What a mapping holds: ART interpreted (dex), jit or aot code, libart, another library, or other."""
    if not name:
        return "other"
    if name.startswith(("/memfd:jit-cache", "/memfd:jit-zygote-cache")):
        return "jit"
    slash = name.rfind("/")
    if slash >= 0 and name[slash:].startswith(("/libart.so", "/libartd.so")):
        return "libart"
    dot = name.rfind(".")
    if dot >= 0:
        suffix = name[dot:]
        if suffix.startswith(".so"):
            return "native"
        if suffix.startswith((".dex", ".vdex", ".jar", ".apk")):
            return "interp"
        if suffix.startswith((".oat", ".odex")):
            return "aot"
    return "other"


def annotated_callstack(conn: sqlite3.Connection, callsite_id) -> tuple[list[str], list[tuple]]:
    """A callsite and its ancestors (leaf first), each frame annotated walking from the root: managed
    frames with their execution mode (interp, jit, aot), ART runtime frames below managed code as
    common-frame (interpreter implementations: common-frame-interp), except the callee of an
    art_jni_trampoline."""
    columns = ["id", "depth", "parent_id", "frame_id", "annotation"]
    if callsite_id is None:
        return columns, []
    if not isinstance(callsite_id, int):
        raise ValueError("invalid input callsite id")
    chain = []
    next_id = callsite_id
    while next_id is not None:
        row = conn.execute(
            "SELECT c.id, c.depth, c.parent_id, c.frame_id, f.name, m.name FROM stack_profile_callsite c "
            "JOIN stack_profile_frame f ON f.id = c.frame_id JOIN stack_profile_mapping m ON m.id = f.mapping "
            "WHERE c.id = ?",
            (next_id,),
        ).fetchone()
        if row is None:
            raise ValueError(f"callsite with id {callsite_id} not found")
        chain.append(row)
        next_id = row[2]
    annotations = []
    state = "initial"  # then "erase libart" once in managed code; "keep next" after a JNI trampoline
    for _, _, _, _, frame_name, map_name in reversed(chain):
        annotation = None
        kind = _map_type(map_name or "")
        if state == "keep next":
            state = "erase libart"
        elif frame_name == "art_jni_trampoline":
            annotation, state = "common-frame", "keep next"
        elif kind in ("interp", "jit", "aot"):
            annotation = kind
            if state == "initial":
                state = "erase libart"
        elif state == "erase libart" and kind == "libart":
            interpreter = (frame_name or "").startswith(_INTERPRETER_FRAMES)
            annotation = "common-frame-interp" if interpreter else "common-frame"
        annotations.append(annotation)
    annotations.reverse()
    return columns, [(*row[:4], annotation) for row, annotation in zip(chain, annotations)]


def _counter_leading_intervals(conn: sqlite3.Connection, counters_sql: str) -> tuple[list[str], list[tuple]]:
    return INTERVAL_COLUMNS, counter_leading_intervals(conn, f"SELECT id, ts, track_id, value FROM ({counters_sql})")


# The profiles experimental_flamegraph reads by (ts, upid), per profile type.
_PROFILES = {
    "graph": "SELECT DISTINCT graph_sample_ts, upid FROM heap_graph_object ORDER BY 1, 2",
    "native": "SELECT DISTINCT ts, upid FROM heap_profile_allocation ORDER BY 1, 2",
}


def _flamegraph_calls(conn: sqlite3.Connection, values: list[Any]) -> list[tuple] | None:
    """The calls a correlated experimental_flamegraph can make: one per heap dump or heapprofd profile of its
    type whose ts and upid the correlated arguments may take (a constant one must match). Only ts and upid
    may be correlated."""
    profile_type, ts, ts_constraint, upid, upid_group, focus = values
    if any(v is CORRELATED for v in (profile_type, ts_constraint, upid_group, focus)):
        return None
    profiles = _PROFILES.get(profile_type)
    if profiles is None:
        return None
    return [
        (profile_type, p_ts, ts_constraint, p_upid, upid_group, focus)
        for p_ts, p_upid in conn.execute(profiles)
        if (ts is CORRELATED or ts == p_ts) and (upid is CORRELATED or upid == p_upid)
    ]


TABLE_FUNCTIONS: dict[str, TableFunction] = {
    # counters.intervals' macro: each counter value until the next on its track (stdlib.py).
    "counter_leading_intervals!": TableFunction(1, _counter_leading_intervals, macro=True),
    # (profile type, ts, ts constraint, upid, upid group, focus): flamegraph.py
    "experimental_flamegraph": TableFunction(6, experimental_flamegraph, calls=_flamegraph_calls, columns=COLUMNS),
    "experimental_slice_layout": TableFunction(1, slice_layout),
    "experimental_annotated_callstack": TableFunction(1, annotated_callstack),
}


# -- SPAN_JOIN (plugins/span_join_operator) ---------------------------------------------------------------

_SPAN_JOIN = re.compile(
    r"\s*CREATE\s+VIRTUAL\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s+USING\s+(SPAN_JOIN|SPAN_LEFT_JOIN|SPAN_OUTER_JOIN)"
    r"\s*\(\s*(\w+)(?:\s+PARTITIONED\s+(\w+))?\s*,\s*(\w+)(?:\s+PARTITIONED\s+(\w+))?\s*\)\s*;?\s*$",
    re.I,
)
_SHADOW_END = INT64_MAX


def run_span_join(conn: sqlite3.Connection, statement: str) -> bool:
    """Runs `CREATE VIRTUAL TABLE name USING SPAN_JOIN(t1 [PARTITIONED col], t2 [PARTITIONED col])` (or
    SPAN_LEFT_JOIN, SPAN_OUTER_JOIN) as trace_processor's operator table would answer it, into TEMP table
    `name`; False for any other statement. Rows: where a span of each table overlaps (a left join keeps
    every part of t1's spans, an outer join every part of either's, the other table's columns NULL there),
    ts the later start, dur to the earlier end, then the partition, t1's and t2's other columns."""
    match = _SPAN_JOIN.match(_without_comments(statement))
    if match is None:
        return False
    name, kind, left, left_partition, right, right_partition = match.groups()
    kind = kind.upper()
    if left_partition and right_partition and left_partition != right_partition:
        raise sqlite3.OperationalError("SPAN_JOIN: both tables must be partitioned by the same column")
    partition = left_partition or right_partition
    sides = [_SpanTable(conn, left, left_partition), _SpanTable(conn, right, right_partition)]
    columns = ["ts", "dur", *([partition] if partition else []), *sides[0].other_names, *sides[1].other_names]
    if len(set(columns)) != len(columns):
        raise sqlite3.OperationalError(
            f"SPAN_JOIN: the tables share a column other than ts, dur and the partition: {columns}"
        )
    # The right table of a left join, and both of an outer one, fill their gaps with NULL "shadow" spans.
    fills = (kind == "SPAN_OUTER_JOIN", kind in ("SPAN_LEFT_JOIN", "SPAN_OUTER_JOIN"))
    # An empty partitioned table on a filled side gives no rows (trace_processor's documented rule).
    if left_partition and right_partition:
        keys = sides[0].partitions.keys() & sides[1].partitions.keys()
        if kind == "SPAN_LEFT_JOIN" and sides[1].partitions:
            keys = set(sides[0].partitions)
        elif kind == "SPAN_OUTER_JOIN" and sides[0].partitions and sides[1].partitions:
            keys = sides[0].partitions.keys() | sides[1].partitions.keys()
    elif partition:
        keys = set((sides[0] if left_partition else sides[1]).partitions)
    else:
        keys = {None}
    rows = []
    for key in sorted(keys, key=lambda k: (k is None, k)):
        spans = [side.spans(key, fill) for side, fill in zip(sides, fills)]
        for start, end, first, second in _overlaps(*spans):
            rows.append(
                (
                    start,
                    end - start,
                    *([key] if partition else []),
                    *(first if first is not None else sides[0].nulls),
                    *(second if second is not None else sides[1].nulls),
                )
            )
    create_temp_table(conn, name, columns, rows)
    return True


def _without_comments(statement: str) -> str:
    return re.sub(r"--[^\n]*|/\*.*?(?:\*/|$)", " ", statement, flags=re.S)


class _SpanTable:
    """One side of a span join: its spans (start, adjusted end, raw end, other columns) by partition."""

    def __init__(self, conn: sqlite3.Connection, name: str, partition: str | None) -> None:
        cursor = conn.execute(f"SELECT * FROM {name}")
        names = [d[0] for d in cursor.description]
        if "ts" not in names:
            raise sqlite3.OperationalError(f"SPAN_JOIN: Missing ts column in table {name}")
        if partition and partition not in names:
            raise sqlite3.OperationalError(f"SPAN_JOIN: Missing partition column '{partition}' in table '{name}'")
        if partition in ("ts", "dur"):
            raise sqlite3.OperationalError(f"SPAN_JOIN: partition column cannot be any of {{ts, dur}} for table {name}")
        ts_at, dur_at = names.index("ts"), names.index("dur") if "dur" in names else None
        part_at = names.index(partition) if partition else None
        others = [i for i, n in enumerate(names) if i not in (ts_at, dur_at, part_at)]
        self.partitioned = partition is not None
        self.other_names = [names[i] for i in others]
        self.nulls = (None,) * len(others)
        self.partitions: dict = {}
        for row in cursor:
            if part_at is not None and row[part_at] is not None and not isinstance(row[part_at], int):
                raise sqlite3.OperationalError("SPAN_JOIN: partition is not an INT column")
            ts, dur = row[ts_at], row[dur_at] if dur_at is not None else 0
            span = (ts, ts if dur == -1 else ts + dur, ts + dur, tuple(row[i] for i in others))
            self.partitions.setdefault(row[part_at] if part_at is not None else None, []).append(span)
        for spans in self.partitions.values():
            spans.sort(key=lambda s: s[0])

    def spans(self, key, fill: bool) -> list:
        """The partition's spans (every partition's, unpartitioned), each (start, adjusted end, raw end,
        columns or None for a shadow); with `fill`, shadows cover the gaps from 0 to the end of time."""
        real = self.partitions.get(key if self.partitioned else None, [])
        if not fill:
            return real
        out, at = [], 0
        for span in real:
            if span[0] > at:
                out.append((at, span[0], span[0], None))
            out.append(span)
            at = max(at, span[1])
        out.append((at, _SHADOW_END, _SHADOW_END, None))
        return out


def _overlaps(first: list, second: list):
    """(start, raw end, first's columns, second's) of each overlapping pair with a real span, in time order:
    spans are [start, end), two real spans starting together overlap even when empty."""
    i = j = 0
    while i < len(first) and j < len(second):
        a, b = first[i], second[j]
        real = a[3] is not None or b[3] is not None
        overlapping = (
            (a[0] == b[0] and a[3] is not None and b[3] is not None) or b[0] <= a[0] < b[1] or a[0] <= b[0] < a[1]
        )
        if real and overlapping:
            yield max(a[0], b[0]), min(a[2], b[2]), a[3], b[3]
        if a[1] < b[1] or (a[1] == b[1] and a[0] <= b[0]):
            i += 1
        else:
            j += 1
