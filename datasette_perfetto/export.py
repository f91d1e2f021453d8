"""Trace databases → one Parquet dataset for a fleet of traces (`datasette perfetto export`).

Every table declared in schema.TABLES (trace_processor's table and column names; not the report's
precomputed report_* tables, not SQLite's own) becomes `DIR/<table>/trace=<name>/part-<schema>.parquet`,
one partition per trace database, `<name>` being the database's file name without `.db` and
`<schema>` a digest of the table's declared columns and types (part_file()), so that a reader knows a
file's schema from its name: batch.py reads files of the current schema as they are, and files of
another (an export by an older version) by column name, NULL for the columns they lack.

Why this layout: `key=value` folders are Hive's partitioning convention, the one that DuckDB
(`read_parquet(..., hive_partitioning=true)`), Spark (`spark.read.parquet(DIR + "/slice")`), pyarrow
datasets and Polars all read as a partitioned dataset, adding the folder's `trace` as a column of
every row; one folder per table because a dataset has one schema. The value is percent-encoded the
way Spark escapes partition values ('/', '=', '%', ...), which DuckDB and Spark both decode. The
`trace` column lives only in the folder name, as Spark and DuckDB write partitioned datasets, so
the readers never see two `trace` columns that could disagree. Each file holds a `trace_uuid`
column (metadata's trace_uuid: the first input's, for a database of several inputs; NULL when there
is none), constant within the file.

Column types come from the declaration (INTEGER → int64, REAL → float64, TEXT → string, BLOB →
binary; every column nullable), never from the data, so every partition of a table has the same
Arrow schema; a column an older database lacks is written as NULLs. Rows are read and written in
batches of BATCH_ROWS, so memory stays flat whatever the table's size.

A database's tables are written into a hidden staging folder (`DIR/.export-<pid>-*`, which no
reader looks at) and only moved into place, one rename per table, once every table is written:
exporting a database again replaces its partitions, and a failed export leaves the previous ones
as they were.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .metadata import is_trace_connection, not_a_trace_database
from .schema import TABLES, Table
from .schema import table as declared_table

TRACE_COLUMN = "trace"  # the partition column: the trace database's name
UUID_COLUMN = "trace_uuid"
STAGING_PREFIX = ".export-"
BATCH_ROWS = 50_000

ARROW_TYPES = {"INTEGER": pa.int64(), "REAL": pa.float64(), "TEXT": pa.string(), "BLOB": pa.binary()}

# The characters Spark escapes in a partition value (ExternalCatalogUtils.escapePathName), as Hive
# does; both unescape any %XX when reading, and DuckDB does too. Other characters stay as they are.
_ESCAPED = set("\"#%'*/:=?\\{}[]^\x7f") | {chr(c) for c in range(0x20)}


class ExportError(Exception):
    """An export that cannot be done; the message is one line naming the file."""


@dataclass(frozen=True)
class ExportSummary:
    database: str
    trace: str
    trace_uuid: str | None
    rows: int  # over every table
    missing_tables: tuple[str, ...]  # declared tables the database does not have


def export_tables() -> tuple[Table, ...]:
    """The tables an export writes: every table the schema declares."""
    return TABLES


def arrow_schema(table: Table) -> pa.Schema:
    """A table's Parquet schema: its declared columns with their declared types, then trace_uuid."""
    return pa.schema(
        [pa.field(c.name, ARROW_TYPES[c.type]) for c in table.columns] + [pa.field(UUID_COLUMN, pa.string())]
    )


@functools.cache
def part_file(table_name: str) -> str:
    """The file name of a partition of a table: `part-<digest of its Arrow schema>.parquet`."""
    schema = arrow_schema(declared_table(table_name))
    digest = hashlib.sha1(",".join(f"{f.name}:{f.type}" for f in schema).encode()).hexdigest()[:12]
    return f"part-{digest}.parquet"


def trace_name(database: str) -> str:
    """The trace a database exports as: its file name without `.db`."""
    name = os.path.basename(database)
    return name[:-3] if name.endswith(".db") and len(name) > 3 else name


def partition_folder(trace: str) -> str:
    return TRACE_COLUMN + "=" + "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in trace)


def partition_path(out_dir: str, table: str, trace: str) -> str:
    return os.path.join(out_dir, table, partition_folder(trace))


def export_parquet(
    databases: Sequence[str],
    out_dir: str,
    on_table: Callable[[str, str], None] | None = None,
) -> list[ExportSummary]:
    """Exports each trace database's tables into `out_dir` (created if needed) as Parquet partitions.

    `on_table(trace, table)` is called after each table is written (progress). Every database is
    checked before anything is written; ExportError on the first problem, with nothing of that
    database's export left behind (databases exported before it stay exported)."""
    names: dict[str, str] = {}
    for database in databases:
        _check_database(database)
        name = trace_name(database)
        other = names.get(name)
        if other is not None and os.path.realpath(other) != os.path.realpath(database):
            raise ExportError(f"{other} and {database} would both be trace {name!r}: rename one of them")
        names[name] = database
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise ExportError(f"{out_dir}: cannot create the output folder: {e.strerror or e}") from None
    if not os.path.isdir(out_dir):
        raise ExportError(f"{out_dir}: not a folder")
    _sweep_abandoned(out_dir)
    return [export_database(database, out_dir, name, on_table) for name, database in names.items()]


def export_database(
    database: str, out_dir: str, name: str | None = None, on_table: Callable[[str, str], None] | None = None
) -> ExportSummary:
    """One database's partitions: written to a staging folder, then moved into place."""
    name = name or trace_name(database)
    try:
        staging = tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=out_dir)
    except OSError as e:
        raise ExportError(f"{out_dir}: cannot write there: {e.strerror or e}") from None
    try:
        conn = _connect(database)
        try:
            present = _table_columns(conn)
            uuid = _trace_uuid(conn) if "metadata" in present else None
            rows = 0
            written = []
            for table in export_tables():
                if table.name in present:
                    path = os.path.join(staging, f"{table.name}.parquet")
                    rows += write_table(conn, table, present[table.name], uuid, path)
                    written.append(table.name)
                if on_table is not None:
                    on_table(name, table.name)
        except sqlite3.Error as e:
            raise ExportError(f"{database}: cannot read it: {e}") from None
        except ExportError as e:
            raise ExportError(f"{database}: {e}") from None
        finally:
            conn.close()
        missing = tuple(t.name for t in export_tables() if t.name not in present)
        try:
            for table_name in written:
                _move_into_place(os.path.join(staging, f"{table_name}.parquet"), out_dir, table_name, name)
            for table_name in missing:  # a partition left from an earlier export of this name
                shutil.rmtree(partition_path(out_dir, table_name, name), ignore_errors=True)
        except OSError as e:
            raise ExportError(f"{out_dir}: cannot write there: {e.strerror or e}") from None
        return ExportSummary(database, name, uuid, rows, missing)
    except OSError as e:
        raise ExportError(f"{out_dir}: cannot write there: {e.strerror or e}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_table(conn: sqlite3.Connection, table: Table, present: set[str], uuid: str | None, path: str) -> int:
    """Writes one table to a Parquet file in batches; its row count."""
    schema = arrow_schema(table)
    select = ", ".join(f"[{c.name}]" if c.name in present else f"NULL AS [{c.name}]" for c in table.columns)
    order = " ORDER BY [id]" if "id" in present else ""
    cur = conn.execute(f"SELECT {select} FROM [{table.name}]{order}")
    rows = cur.fetchmany(BATCH_ROWS)
    if not rows:  # most tables of most traces: the same bytes every time
        with open(path, "wb") as f:
            f.write(_empty_file(table.name))
        return 0
    count = 0
    with pq.ParquetWriter(path, schema) as writer:
        while rows:
            writer.write_batch(_batch(table, schema, rows, uuid))
            count += len(rows)
            rows = cur.fetchmany(BATCH_ROWS)
    return count


@functools.cache
def _empty_file(table_name: str) -> bytes:
    """An empty table's Parquet file: its schema and no rows."""
    sink = pa.BufferOutputStream()
    pq.write_table(arrow_schema(declared_table(table_name)).empty_table(), sink)
    return sink.getvalue().to_pybytes()


def _batch(table: Table, schema: pa.Schema, rows: list[tuple], uuid: str | None) -> pa.RecordBatch:
    columns: list[Any] = list(zip(*rows))
    arrays = [_array(table, c.name, c.type, values) for c, values in zip(table.columns, columns)]
    arrays.append(pa.array([uuid] * len(rows), pa.string()))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _array(table: Table, column: str, sql_type: str, values: Sequence[Any]) -> pa.Array:
    arrow_type = ARROW_TYPES[sql_type]
    try:
        return pa.array(values, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        # SQLite lets a column hold any type: convert what means the same, refuse what does not.
        return pa.array([_coerce(table, column, sql_type, v) for v in values], arrow_type)


def _coerce(table: Table, column: str, sql_type: str, value: Any) -> Any:
    if value is None:
        return None
    if sql_type == "TEXT":
        return value.hex() if isinstance(value, bytes) else str(value)
    if sql_type == "REAL" and isinstance(value, int):
        return float(value)
    if sql_type == "INTEGER" and isinstance(value, float) and value.is_integer():
        return int(value)
    if sql_type == "INTEGER" and isinstance(value, int) or sql_type == "REAL" and isinstance(value, float):
        return value
    if sql_type == "BLOB" and isinstance(value, str):
        return value.encode()
    raise ExportError(f"{table.name}.{column} holds {value!r}, which is not {sql_type}")


def _move_into_place(staged: str, out_dir: str, table: str, trace: str) -> None:
    folder = partition_path(out_dir, table, trace)
    os.makedirs(folder, exist_ok=True)
    os.replace(staged, os.path.join(folder, part_file(table)))
    for other in os.listdir(folder):  # the partition is exactly this file
        if other != part_file(table):
            path = os.path.join(folder, other)
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)


def _check_database(database: str) -> None:
    if not os.path.isfile(database):
        raise ExportError(f"{database}: no such database file")
    conn = _connect(database)
    try:
        if not is_trace_connection(conn):
            raise ExportError(not_a_trace_database(database))
    except sqlite3.Error as e:
        raise ExportError(f"{database}: not a trace database ({e})") from None
    finally:
        conn.close()


def _connect(database: str) -> sqlite3.Connection:
    try:
        return sqlite3.connect(f"file:{os.path.abspath(database)}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise ExportError(f"{database}: cannot open it: {e}") from None


def _table_columns(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """Each declared table the database has, with the columns it has (generated ones too)."""
    have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return {
        t.name: {r[1] for r in conn.execute(f"PRAGMA table_xinfo([{t.name}])")}
        for t in export_tables()
        if t.name in have
    }


def _trace_uuid(conn: sqlite3.Connection) -> str | None:
    row = conn.execute(
        "SELECT str_value FROM metadata WHERE name = 'trace_uuid' AND str_value IS NOT NULL "
        "ORDER BY trace_id IS NOT NULL, trace_id, id LIMIT 1"
    ).fetchone()
    return row[0] if row else None


_STAGING_NAME = re.compile(rf"^{re.escape(STAGING_PREFIX)}(\d+)-")


def _sweep_abandoned(out_dir: str) -> None:
    """Staging folders of exports that were killed outright (their process is gone)."""
    for entry in _listdir(out_dir):
        m = _STAGING_NAME.match(entry)
        if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
            shutil.rmtree(os.path.join(out_dir, entry), ignore_errors=True)


def _listdir(folder: str) -> Iterator[str]:
    try:
        yield from os.listdir(folder)
    except OSError:
        return


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
