"""One SQL over a fleet of traces with DuckDB (`datasette perfetto batch`).

The inputs are Parquet exports (export.py's `DIR/<table>/trace=<name>/*.parquet`) and trace
databases; a database is first exported to a temporary Parquet folder, since DuckDB's sqlite scanner
is an extension DuckDB downloads from its own server, which this project's machines cannot reach.

The result is the union of the SQL's result on each trace alone, with a `trace` column first: the
SQL sees the tables as one trace database holds them (no `trace` or `trace_uuid` column), and the
schema's views (thread_track, counter_track, ...) as CTEs of their own SQL over those tables, so an
aggregate or a GROUP BY counts within one trace, never across traces, a join joins rows of one
trace, a window function numbers within one trace, a LIMIT limits each trace's rows. Rows come trace
by trace, in the order of the trace names, each trace's in the SQL's own order. Two ways to run it,
with the same result:

- One DuckDB query over the whole dataset, the SQL rewritten on DuckDB's own syntax tree
  (json_serialize_sql / json_deserialize_sql): every table is read with its partition's trace as a
  last column, and every SELECT (the statement's, its CTEs', its FROM subqueries') carries it on:
  it is added to the select list, the GROUP BY, every join condition (`USING` too) and every
  window's PARTITION BY, excluded from `*`, and the statement is ordered by it first. Each step
  keeps traces apart, so the result is exactly the per-trace union. Shapes where that is not so
  run the other way: a SELECT with aggregates and no GROUP BY (`SELECT count(*) FROM slice` must
  give a row for a trace whose table is empty; a grouped scan gives none), LIMIT / OFFSET /
  DISTINCT ON, subqueries in expressions (`IN (SELECT ...)`), ROLLUP / CUBE / GROUPING SETS,
  RIGHT and FULL joins, recursive CTEs, set operations, a SELECT without a table.
- Trace by trace: each table the SQL names becomes a view of that trace's partition, the SQL runs,
  and the rows are tagged. A few milliseconds a trace.

A trace without a partition of a table the SQL uses (its database has no such table) is skipped and
reported. The SQL is DuckDB's dialect: `/` of two integers is a real division (`//` is SQLite's),
and NULLs sort last.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import unquote

import duckdb

from .export import TRACE_COLUMN, ExportError, export_parquet, export_tables, part_file
from .schema import VIEWS
from .schema import table as declared_table

_TRACE = "__batch_trace"  # the rewritten query's trace column: last, so ordinals keep their meaning
_TABLES = {t.name for t in export_tables()}
_VIEWS = {v.name: v for v in VIEWS if v.name not in _TABLES}
_DUCKDB_TYPES = {"INTEGER": "BIGINT", "REAL": "DOUBLE", "TEXT": "VARCHAR", "BLOB": "BLOB"}


class BatchError(Exception):
    """Bad SQL or unusable inputs; the message is one line."""


@dataclass
class Dataset:
    """Every trace's partition folders, by trace and table."""

    partitions: dict[str, dict[str, str]] = field(default_factory=dict)  # trace -> table -> folder

    def traces(self) -> list[str]:
        return sorted(self.partitions)

    def files(self, trace: str, table: str) -> list[str]:
        """The Parquet files of one trace's table (export writes one; Spark may write several)."""
        folder = self.partitions[trace][table]
        return [os.path.join(folder, f) for f in _listdir(folder) if f.endswith(".parquet")]


@dataclass
class BatchResult:
    columns: list[str]  # "trace" first
    rows: list[list[Any]]
    skipped: list[tuple[str, str]]  # (trace, a table it has no data for)
    rewritten: bool  # ran as one query over the whole dataset


def run_batch(
    sql: str,
    sources: Sequence[str],
    on_skip: Callable[[str, str], None] | None = None,
    progress: Callable[[int], Any] | None = None,
    on_export: Callable[[str, str], None] | None = None,
) -> BatchResult:
    """Runs `sql` on every trace of `sources` (export folders and trace databases).

    `on_skip(trace, table)` hears of each skipped trace as it is skipped; `progress(total)` returns a
    callable called once per trace run; `on_export(trace, table)` follows the export of databases."""
    conn = duckdb.connect()
    try:
        statement = parse_select(conn, sql)
        if inline_views(conn, statement):
            sql = _to_sql(conn, statement)
        with dataset_of(sources, on_export) as dataset:
            return _run(conn, sql, statement, dataset, on_skip, progress)
    finally:
        conn.close()


@contextlib.contextmanager
def dataset_of(sources: Sequence[str], on_export: Callable[[str, str], None] | None = None) -> Iterator[Dataset]:
    """The traces of export folders and trace databases (exported to a temporary folder for the
    duration); BatchError for an input that is neither, or two traces of one name."""
    folders = [s for s in sources if os.path.isdir(s)]
    databases = [s for s in sources if not os.path.isdir(s)]
    temporary = None
    try:
        if databases:
            temporary = tempfile.mkdtemp(prefix="datasette-perfetto-batch-")
            try:
                export_parquet(databases, temporary, on_export)
            except ExportError as e:
                raise BatchError(str(e)) from None
            folders.append(temporary)
        dataset = Dataset()
        origin: dict[str, str] = {}
        for folder in folders:
            shown = "the trace databases" if folder == temporary else folder
            found = read_folder(folder)
            if not found:
                raise BatchError(f"{folder}: not a Parquet export (no <table>/trace=<name> folders in it)")
            for trace, tables in found.items():
                if trace in origin:
                    raise BatchError(f"trace {trace!r} is in both {origin[trace]} and {shown}")
                origin[trace] = shown
                dataset.partitions[trace] = tables
        yield dataset
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


def read_folder(folder: str) -> dict[str, dict[str, str]]:
    """An export folder's partitions: trace -> table -> partition folder."""
    found: dict[str, dict[str, str]] = {}
    for table in sorted(_TABLES):
        table_dir = os.path.join(folder, table)
        for entry in _listdir(table_dir):
            if entry.startswith(f"{TRACE_COLUMN}="):
                found.setdefault(unquote(entry[len(TRACE_COLUMN) + 1 :]), {})[table] = os.path.join(table_dir, entry)
    return found


def parse_select(conn: duckdb.DuckDBPyConnection, sql: str) -> dict:
    """DuckDB's syntax tree of the one SELECT statement `sql` holds; BatchError otherwise."""
    tree = json.loads(conn.execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchone()[0])  # type: ignore[index]
    if tree.get("error"):
        message = tree.get("error_message") or "not a SELECT statement"
        if "Only SELECT" in message or "only select" in message.lower():
            raise BatchError("batch runs one SELECT statement (no other kind)")
        raise BatchError(f"SQL error: {_one_line(message)}")
    statements = tree.get("statements") or []
    if len(statements) != 1:
        raise BatchError(f"batch runs one SELECT statement; this SQL has {len(statements)}")
    return statements[0]


def inline_views(conn: duckdb.DuckDBPyConnection, statement: dict) -> bool:
    """Puts the schema's views that the statement names (thread_track, counter_track, ...; and the views
    those name) in front of its CTEs, so that DuckDB reads them from the tables as a trace database
    does; whether there were any."""
    added: list[dict] = []
    seen: set[str] = set()

    def add(name: str) -> None:
        if name not in seen:
            seen.add(name)
            entry = _view_cte(conn, name)
            for dependency in sorted(_names_read(entry["value"]["query_node"], _VIEWS)):
                add(dependency)
            added.append(entry)

    for name in sorted(_names_read(statement, _VIEWS)):
        add(name)
    if not added:
        return False
    node = statement["node"]
    node.setdefault("cte_map", {"map": []})["map"][:0] = added
    return True


_VIEW_CTES: dict[str, str] = {}  # view name -> its CTE entry in DuckDB's syntax tree (JSON)


def _view_cte(conn: duckdb.DuckDBPyConnection, name: str) -> dict:
    if name not in _VIEW_CTES:
        wrapped = parse_select(conn, f"WITH {_quote(name)} AS ({_VIEWS[name].sql}) SELECT 1")
        _VIEW_CTES[name] = json.dumps(wrapped["node"]["cte_map"]["map"][0])
    return json.loads(_VIEW_CTES[name])  # a copy: rewriting changes it


def _names_read(statement: Any, names: Container[str]) -> set[str]:
    """The unqualified table names a syntax tree reads that are in `names` and not its own CTEs."""
    read: set[str] = set()
    ctes: set[str] = set()
    for node in _walk(statement):
        if node.get("type") == "BASE_TABLE" and not node.get("schema_name") and not node.get("catalog_name"):
            read.add(node["table_name"])
        for entry in (node.get("cte_map") or {}).get("map", []):
            ctes.add(entry["key"])
    return {n for n in read - ctes if n in names}


def _to_sql(conn: duckdb.DuckDBPyConnection, statement: dict) -> str:
    row = conn.execute(
        "SELECT json_deserialize_sql(?::JSON)", [json.dumps({"error": False, "statements": [statement]})]
    ).fetchone()
    return row[0] if row else ""


def tables_used(statement: dict) -> set[str]:
    """The trace tables a statement reads (its unqualified table names that are not CTEs)."""
    return _names_read(statement, _TABLES)


def _run(
    conn: duckdb.DuckDBPyConnection,
    sql: str,
    statement: dict,
    dataset: Dataset,
    on_skip: Callable[[str, str], None] | None,
    progress: Callable[[int], Any] | None,
) -> BatchResult:
    used = tables_used(statement)
    skipped = []
    runnable = []
    for trace in dataset.traces():
        missing = sorted(used - set(dataset.partitions[trace]))
        if missing:
            skipped.append((trace, missing[0]))
            if on_skip is not None:
                on_skip(trace, missing[0])
        else:
            runnable.append(trace)
    rewritten = _rewrite_for_dataset(conn, statement) if runnable and used else None
    if rewritten is not None:
        try:
            for table in sorted(used):
                _create_view(conn, table, [f for t in runnable for f in dataset.files(t, table)], partitioned=True)
            cur = conn.execute(rewritten)
            columns = [d[0] for d in cur.description]
            rows = [[r[-1], *(_plain(v) for v in r[:-1])] for r in cur.fetchall()]
            return BatchResult([TRACE_COLUMN, *columns[:-1]], rows, skipped, True)
        except duckdb.Error:
            pass  # bad SQL, or a rewrite DuckDB refuses: trace by trace, which says what is wrong with the SQL
    try:
        return _run_per_trace(conn, sql, used, dataset, runnable, skipped, progress)
    except duckdb.Error as e:
        raise BatchError(f"SQL error: {_one_line(str(e))}") from None


def _run_per_trace(
    conn: duckdb.DuckDBPyConnection,
    sql: str,
    used: set[str],
    dataset: Dataset,
    runnable: list[str],
    skipped: list[tuple[str, str]],
    progress: Callable[[int], Any] | None,
) -> BatchResult:
    step = progress(len(runnable)) if progress is not None else None
    columns: list[str] | None = None
    rows: list[list[Any]] = []
    for trace in runnable:
        for table in sorted(used):
            _create_view(conn, table, dataset.files(trace, table), partitioned=False)
        try:
            cur = conn.execute(sql)
        except duckdb.Error as e:
            where = f" (trace {trace})" if columns is not None else ""
            raise BatchError(f"SQL error{where}: {_one_line(str(e))}") from None
        if cur.description is None:
            raise BatchError("batch runs one SELECT statement; this one returns no rows")
        columns = columns or [TRACE_COLUMN, *(d[0] for d in cur.description)]
        rows.extend([trace, *(_plain(v) for v in r)] for r in cur.fetchall())
        if step is not None:
            step()
    if columns is None:  # no trace ran: the columns still come from the SQL (on empty tables)
        columns = [TRACE_COLUMN, *_columns_on_empty(conn, sql, used)]
    return BatchResult(columns, rows, skipped, False)


def _columns_on_empty(conn: duckdb.DuckDBPyConnection, sql: str, used: set[str]) -> list[str]:
    for table in used:
        _create_view(conn, table, [], partitioned=False)
    cur = conn.execute(sql)
    return [d[0] for d in cur.description] if cur.description else []


def _create_view(conn: duckdb.DuckDBPyConnection, table: str, files: list[str], partitioned: bool) -> None:
    conn.execute(f"CREATE OR REPLACE TEMP VIEW {_quote(table)} AS {_reader(table, files, partitioned)}")


def _reader(table: str, files: list[str], partitioned: bool) -> str:
    """A SELECT of a table's files as one trace database holds the table: its declared columns in their
    order and types, NULL where a file lacks one (an export by an older version: another part_file()
    name), no trace_uuid; `partitioned` adds the hive partition column `trace` as __batch_trace (always
    text: a trace named 2024 stays '2024'). No files, no rows."""
    columns = declared_table(table).columns
    names = [_quote(c.name) for c in columns] + ([f"{TRACE_COLUMN} AS {_TRACE}"] if partitioned else [])
    hive = f"true, hive_types = {{'{TRACE_COLUMN}': VARCHAR}}" if partitioned else "false"
    listed = "[" + ", ".join(_literal(f) for f in files) + "]"
    if files and all(os.path.basename(f) == part_file(table) for f in files):
        return f"SELECT {', '.join(names)} FROM read_parquet({listed}, hive_partitioning = {hive})"
    # Files of other schemas: each read by column name (union_by_name reads every file's schema, about
    # half a millisecond a file), below a typed empty row set that gives the declared columns and types.
    typed = [f"NULL::{_DUCKDB_TYPES[c.type]} AS {_quote(c.name)}" for c in columns]
    if partitioned:
        typed.append(f"NULL::VARCHAR AS {TRACE_COLUMN}")
    source = f"SELECT {', '.join(typed)} WHERE false"
    if files:
        source += (
            f" UNION ALL BY NAME SELECT * FROM read_parquet({listed}, hive_partitioning = {hive}, union_by_name = true)"
        )
    return f"SELECT {', '.join(names)} FROM ({source})"


class _NotLiftable(Exception):
    """A statement whose rewrite would not give exactly the per-trace union: it runs trace by trace."""


def _rewrite_for_dataset(conn: duckdb.DuckDBPyConnection, statement: dict) -> str | None:
    """The statement as one query over every trace's rows, its trace last (see the module's docstring),
    or None when its shape is not one whose rewrite gives exactly the per-trace union."""
    node = statement.get("node") or {}
    try:
        _lift(conn, node, set())
    except _NotLiftable:
        return None
    by_trace = {"type": "ASCENDING", "null_order": "ORDER_DEFAULT", "expression": _column_ref([_TRACE])}
    orders = [m for m in node["modifiers"] if m.get("type") == "ORDER_MODIFIER"]
    if orders:
        orders[0]["orders"].insert(0, by_trace)
    else:
        node["modifiers"].append({"type": "ORDER_MODIFIER", "orders": [by_trace]})
    try:
        return _to_sql(conn, statement) or None
    except duckdb.Error:
        return None


def _lift(conn: duckdb.DuckDBPyConnection, node: dict, ctes: set[str]) -> None:
    """Rewrites a SELECT in place into the union of its per-trace results, with each row's trace as its
    last column (__batch_trace); _NotLiftable for a shape where that would not be exact."""
    if node.get("type") != "SELECT_NODE" or node.get("sample") or node.get("qualify"):
        raise _NotLiftable
    ctes = set(ctes)
    for entry in (node.get("cte_map") or {}).get("map", []):
        _lift(conn, entry["value"]["query_node"], ctes)  # a recursive CTE is no SELECT_NODE: not lifted
        ctes.add(entry["key"])
    trace = _column_ref([_lift_relation(conn, node.get("from_table") or {}, ctes), _TRACE])
    modifiers = node.setdefault("modifiers", [])
    if any(
        m.get("type") not in ("ORDER_MODIFIER", "DISTINCT_MODIFIER") or m.get("distinct_on_targets") for m in modifiers
    ):
        raise _NotLiftable  # LIMIT / OFFSET / DISTINCT ON count within each trace
    own = [
        node.get("select_list"),
        node.get("where_clause"),
        node.get("group_expressions"),
        node.get("having"),
        modifiers,
    ]
    for inner in _walk(own):
        if inner.get("class") == "SUBQUERY" or (inner.get("class") == "STAR" and inner.get("columns")):
            raise _NotLiftable  # expression subqueries; COLUMNS(...)
    groups = node.get("group_expressions") or []
    if len(node.get("group_sets") or []) > 1:
        raise _NotLiftable  # ROLLUP, CUBE, GROUPING SETS: their total rows would pool traces
    grouped = bool(groups) or node.get("aggregate_handling") == "FORCE_AGGREGATES"
    if not grouped and (node.get("having") or _has_aggregate(conn, own)):
        raise _NotLiftable  # one row per trace even for an empty table, which a grouped scan cannot give
    for inner in _walk(own):
        if inner.get("class") == "STAR":
            inner["exclude_list"] = [*inner.get("exclude_list", []), _TRACE]
        elif inner.get("class") == "WINDOW":
            inner["partitions"] = [*inner.get("partitions", []), dict(trace)]
    node["select_list"].append({**trace, "alias": _TRACE})
    if groups:
        groups.append(dict(trace))
        node["group_sets"] = [[*(node.get("group_sets") or [[]])[0], len(groups) - 1]]


def _lift_relation(conn: duckdb.DuckDBPyConnection, ref: dict, ctes: set[str]) -> str:
    """Lifts a FROM clause; the name qualifying the trace column of its rows (its leftmost relation)."""
    kind = ref.get("type")
    if ref.get("sample") or ref.get("column_name_alias"):
        raise _NotLiftable
    if kind == "BASE_TABLE":
        name = ref.get("table_name")
        if ref.get("schema_name") or ref.get("catalog_name") or ref.get("at_clause") or name not in _TABLES | ctes:
            raise _NotLiftable
        return ref.get("alias") or name
    if kind == "SUBQUERY" and ref.get("alias"):
        _lift(conn, ref["subquery"]["node"], ctes)
        return ref["alias"]
    if kind != "JOIN" or ref.get("join_type") not in ("INNER", "LEFT", "SEMI", "ANTI"):
        raise _NotLiftable  # no FROM, table functions, RIGHT and FULL joins (their left side may be NULL)
    left = _lift_relation(conn, ref["left"], ctes)
    right = _lift_relation(conn, ref["right"], ctes)
    same_trace = {
        "class": "COMPARISON",
        "type": "COMPARE_EQUAL",
        "alias": "",
        "left": _column_ref([left, _TRACE]),
        "right": _column_ref([right, _TRACE]),
    }
    if ref.get("ref_type") == "NATURAL":
        return left  # joins on every common column: the trace too
    if ref.get("ref_type") == "CROSS":
        ref["ref_type"], ref["condition"] = "REGULAR", same_trace
    elif ref.get("ref_type") != "REGULAR":
        raise _NotLiftable  # ASOF, POSITIONAL, LATERAL
    elif ref.get("using_columns"):
        ref["using_columns"] = [*ref["using_columns"], _TRACE]
    elif ref.get("condition") is not None:
        ref["condition"] = {
            "class": "CONJUNCTION",
            "type": "CONJUNCTION_AND",
            "alias": "",
            "children": [ref["condition"], same_trace],
        }
    else:
        ref["condition"] = same_trace
    return left


def _column_ref(names: list[str]) -> dict:
    return {"class": "COLUMN_REF", "type": "COLUMN_REF", "alias": "", "column_names": names}


def _has_aggregate(conn: duckdb.DuckDBPyConnection, expressions: Any) -> bool:
    names = {
        n["function_name"].lower() for n in _walk(expressions) if n.get("class") == "FUNCTION" and "function_name" in n
    }
    if not names:
        return False
    found = conn.execute(
        "SELECT count(*) FROM duckdb_functions() WHERE function_type = 'aggregate' AND lower(function_name) IN "
        "(SELECT unnest(?::VARCHAR[]))",
        [sorted(names)],
    ).fetchone()
    return bool(found and found[0])


def _walk(value: Any) -> Iterator[dict]:
    """Every object in a JSON tree, depth first."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _plain(value: Any) -> Any:
    """A value as `query` prints it: numbers, text, NULL; bytes as hex."""
    if value is None or isinstance(value, (int, float, str, bool)):
        return value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return str(value)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _one_line(message: str) -> str:
    return " ".join(message.strip().splitlines()[0].split()) if message.strip() else "unknown error"


def _listdir(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []
