"""Datasette metadata for trace databases, derived from schema.py.

Three consumers:

* the `get_metadata` plugin hook (`plugin_metadata`), which documents every
  served database that looks like a trace database, whatever its name;
* on Datasette 1.0, which has no such hook, `store_metadata()` at startup;
* `render_yaml()`, the content of the repository's `metadata.yml`, for
  `datasette trace.db -m metadata.yml` without the plugin.

Units are written into the column descriptions ("(ns)") and deliberately not
into Datasette's `units:` key. On Datasette 0.65 `units:` makes the table page
render values through pint rounded to 6 significant decimals (ts 1004736123
shows as "1.004736 s"), and it runs every filter value on such a column
through pint: `?dur__in=0,1000` and `?dur__gt=abc` answer 500.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from . import schema

#: Tables whose presence marks a trace database.
MARKER_TABLES = ("slice", "trace_bounds")
#: The database name metadata.yml is written for.
YAML_DATABASE = "trace"

DATABASE_DESCRIPTION = (
    "A Perfetto trace, imported by datasette-perfetto into trace_processor's tables and views. "
    "trace_processor functions such as EXTRACT_ARG(arg_set_id, key) work in SQL queries. "
    "Timestamps and durations are in nanoseconds."
)
ABOUT = "Perfetto SQL tables"
ABOUT_URL = "https://perfetto.dev/docs/analysis/sql-tables"


def column_description(column: schema.Column) -> str:
    if column.unit:
        return f"{column.doc} ({column.unit})"
    return column.doc


# ---------------------------------------------------------------------------
# View columns. schema.View.columns is usually empty, so the columns of a view
# are read from SQLite (the view built from the schema's DDL) and documented
# from the declarations they come from: View.columns first, then `x AS name`
# (x a column of a table or of an earlier view), then the same-named column of
# the table or view the outermost FROM names.


def _ddl_connection() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    for t in schema.TABLES:
        conn.execute(t.create_sql())
    for v in schema.VIEWS:
        conn.execute(v.create_sql())
    return conn


_AS = re.compile(r"(?:\[?(\w+)\]?\.)?\[?(\w+)\]?\s+AS\s+\[?(\w+)\]?", re.IGNORECASE)
_FROM = re.compile(r"\bFROM\s+\[?(\w+)\]?", re.IGNORECASE)


@cache
def _view_columns() -> dict[str, list[tuple[str, str | None]]]:
    """{view name: [(column, description or None), ...]} in SELECT * order."""
    docs: dict[str, dict[str, str]] = {
        t.name: {c.name: column_description(c) for c in t.columns} for t in schema.TABLES
    }
    conn = _ddl_connection()
    out: dict[str, list[tuple[str, str | None]]] = {}
    try:
        for v in schema.VIEWS:
            declared = {c.name: column_description(c) for c in v.columns}
            froms = _FROM.findall(v.sql)
            base = docs.get(froms[-1], {}) if froms else {}
            aliases = {}
            for qualifier, source, alias in _AS.findall(v.sql):
                source_docs = docs.get(qualifier, base) if qualifier else base
                if source in source_docs:
                    aliases[alias] = source_docs[source]
            cols: list[tuple[str, str | None]] = []
            for row in conn.execute(f"PRAGMA table_info([{v.name}])"):
                name = row[1]
                cols.append((name, declared.get(name) or aliases.get(name) or base.get(name)))
            out[v.name] = cols
            docs[v.name] = {n: d for n, d in cols if d}
    finally:
        conn.close()
    return out


# ---------------------------------------------------------------------------
# Metadata documents


@cache
def _tables_metadata() -> tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]:
    """(name, description, ((column, description), ...)) for tables then views."""
    entries = [
        (t.name, t.doc, tuple((c.name, column_description(c)) for c in t.columns))
        for t in schema.TABLES + tuple(d.table for d in schema.DERIVED)
    ]
    view_columns = _view_columns()
    for v in schema.VIEWS:
        cols = tuple((n, d) for n, d in view_columns[v.name] if d)
        entries.append((v.name, v.doc, cols))
    return tuple(entries)


def database_metadata() -> dict[str, Any]:
    """The per-database block: description and tables. A new dict on every call.

    Datasette 0.65 mutates metadata dicts it is handed (it merges user metadata
    into them and adds source/license keys on the table page), so nothing
    returned here may be shared with a cache.
    """
    tables: dict[str, Any] = {}
    for name, doc, cols in _tables_metadata():
        entry: dict[str, Any] = {"description": doc}
        if cols:
            entry["columns"] = dict(cols)
        tables[name] = entry
    return {
        "description": DATABASE_DESCRIPTION,
        "about": ABOUT,
        "about_url": ABOUT_URL,
        "tables": tables,
    }


def datasette_metadata(database_name: str) -> dict[str, Any]:
    """Datasette metadata documenting one trace database called database_name.

    Shaped like a metadata.yml document (and a get_metadata hook's answer):
    {"databases": {database_name: {"description", "about", "about_url",
    "tables": {table or view: {"description", "columns": {column: doc}}}}}}.
    """
    return {"databases": {database_name: database_metadata()}}


def instance_title(trace_database_count: int) -> str:
    return "Perfetto trace" if trace_database_count == 1 else "Perfetto traces"


YAML_HEADER = f"""\
# Datasette metadata for a datasette-perfetto trace database.
#
# GENERATED from datasette_perfetto/schema.py by
# datasette_perfetto.metadata.render_yaml(); do not edit by hand
# (tests/test_metadata.py fails when this file drifts).
#
# With the datasette-perfetto plugin installed you do not need this file:
# the plugin's get_metadata hook documents every served database that has
# {" and ".join(MARKER_TABLES)} tables, whatever its name.
#
# Without the plugin, Datasette 0.65 only accepts table metadata under a
# database name, so this file is written for a database named "{YAML_DATABASE}",
# i.e. a file called {YAML_DATABASE}.db:
#
#     datasette {YAML_DATABASE}.db -m metadata.yml
#
# For another file name, serve a copy or symlink named {YAML_DATABASE}.db, or
# replace the "{YAML_DATABASE}:" key below with the file's stem.
#
# Units (ns, bytes) are part of the column descriptions. Datasette's `units:`
# key is not used: with it, Datasette 0.65 shows timestamps rounded by pint
# ("1.004736 s") and answers 500 to filters such as ?dur__in=0,1000.
"""


def render_yaml() -> str:
    import yaml

    document = {"title": instance_title(1), **datasette_metadata(YAML_DATABASE)}
    body = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    return YAML_HEADER + "\n" + body


# ---------------------------------------------------------------------------
# The get_metadata hook (Datasette 0.65)

# Served database name -> (file identity, is a trace database). get_metadata
# is synchronous and called many times per request (often with database=None,
# asking for everything), so sqlite_master is read once per file version.
_detected: dict[str, tuple[tuple, bool]] = {}

# Not "tables": Datasette asks for that key only for table permissions (`allow`) and facet
# settings, neither of which we provide, and answering deep-copies every table's
# descriptions once per table on the home page (seconds with a few trace databases).
_PROVIDED_KEYS = frozenset({"databases", "title", "description", "about", "about_url", "columns"})


def _file_identity(db) -> tuple | None:
    if getattr(db, "is_memory", False) or not getattr(db, "path", None):
        return None
    if not db.is_mutable:
        return (db.path, False)
    try:
        st = os.stat(db.path)
    except OSError:
        return None
    # An ingest replaces the file (os.replace), so mtime and size change.
    return (db.path, True, st.st_ino, st.st_mtime_ns, st.st_size)


def is_trace_connection(conn: sqlite3.Connection) -> bool:
    """Whether a database has the marker tables: the one test of a trace database (pages, report, metadata)."""
    names = {
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ({})".format(
                ", ".join("?" for _ in MARKER_TABLES)
            ),
            MARKER_TABLES,
        )
    }
    return names == set(MARKER_TABLES)


def not_a_trace_database(database: str) -> str:
    """The one message for a database that fails is_trace_connection."""
    return f"{database} is not a trace database (no {' and '.join(MARKER_TABLES)} tables)"


def read_is_trace(path: str, immutable: bool) -> bool | None:
    """None when the answer is unknown for now (file locked): do not cache."""
    uri = Path(path).resolve().as_uri() + ("?immutable=1" if immutable else "?mode=ro")
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=0.2, check_same_thread=False)
    except sqlite3.Error:
        return False
    try:
        return is_trace_connection(conn)
    except sqlite3.OperationalError as e:
        if "locked" in str(e) or "busy" in str(e):
            return None
        return False
    except sqlite3.DatabaseError:
        return False  # not a database, encrypted, ...
    finally:
        conn.close()


def is_trace_database(db) -> bool:
    """Whether a datasette Database object is a trace database (cached)."""
    identity = _file_identity(db)
    if identity is None:
        return False
    cached = _detected.get(db.name)
    if cached is not None and cached[0] == identity:
        return cached[1]
    result = read_is_trace(db.path, immutable=not db.is_mutable)
    if result is None:
        return False
    _detected[db.name] = (identity, result)
    return result


def trace_database_names(datasette, names: Iterable[str] | None = None) -> list[str]:
    databases = datasette.databases
    if names is None:
        names = list(databases)
    return [n for n in names if n in databases and not n.startswith("_") and is_trace_database(databases[n])]


def plugin_metadata(datasette, key: str | None, database: str | None) -> dict | None:
    """The get_metadata hook's answer: metadata for the served trace databases."""
    if key is not None and key not in _PROVIDED_KEYS:
        return None  # metadata(key) reads only item[key]; we provide none of it
    served = [n for n in datasette.databases if not n.startswith("_")]
    traces = trace_database_names(datasette, served)
    if not traces:
        return None
    result: dict[str, Any] = {}
    if len(traces) == len(served):
        result["title"] = instance_title(len(traces))
    wanted = traces if database is None else [n for n in traces if n == database]
    if wanted:
        result["databases"] = {n: database_metadata() for n in wanted}
    return result


# ---------------------------------------------------------------------------
# Datasette 1.0: metadata lives in the internal database, written at startup


async def store_metadata(datasette, traces: list[str]) -> None:
    """What plugin_metadata answers on 0.65, stored for the trace databases `traces` (Datasette 1.0).

    Written straight into the internal metadata tables rather than through `set_*_metadata()`: those
    overwrite, and the user's own metadata (stored before startup hooks run) must win, as it does on
    0.65; and one transaction instead of one commit per value (0.68 s per trace database measured).
    """
    if not traces:
        return
    served = [n for n in datasette.databases if not n.startswith("_")]
    instance = [("title", instance_title(len(traces)))] if len(traces) == len(served) else []
    databases, resources, columns = [], [], []
    for name in traces:
        block = database_metadata()
        databases += [(name, key, block[key]) for key in ("description", "about", "about_url")]
        for table, entry in block["tables"].items():
            resources.append((name, table, "description", entry["description"]))
            columns += [(name, table, column, "description", doc) for column, doc in entry.get("columns", {}).items()]

    def write(conn: sqlite3.Connection) -> None:
        conn.executemany("INSERT OR IGNORE INTO metadata_instance (key, value) VALUES (?, ?)", instance)
        conn.executemany(
            "INSERT OR IGNORE INTO metadata_databases (database_name, key, value) VALUES (?, ?, ?)", databases
        )
        conn.executemany(
            "INSERT OR IGNORE INTO metadata_resources (database_name, resource_name, key, value) VALUES (?, ?, ?, ?)",
            resources,
        )
        conn.executemany(
            "INSERT OR IGNORE INTO metadata_columns (database_name, resource_name, column_name, key, "
            "value) VALUES (?, ?, ?, ?, ?)",
            columns,
        )

    await datasette.get_internal_database().execute_write_fn(write)
