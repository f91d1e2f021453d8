"""The writer's binding of values: None is written as SQL NULL, in grouped and single-row inserts alike
(writer.py registers an adapter for None, for speed; it must not change what is stored)."""

from __future__ import annotations

import sqlite3

from datasette_perfetto import schema
from datasette_perfetto.writer import SqliteWriter


def test_none_is_stored_as_null(tmp_path):
    path = str(tmp_path / "w.db")
    writer = SqliteWriter(path)
    # One more row than a grouped insert holds: MULTI_ROWS go in one statement, the last one alone.
    rows = [(i, 0, "debug.k", "debug.k", None if i % 2 else i, None, None, "int") for i in range(schema.MULTI_ROWS + 1)]
    writer.rows("args", rows)
    writer.conn.execute("COMMIT")
    writer.conn.close()
    conn = sqlite3.connect(path)
    types = conn.execute(
        "SELECT id, typeof(int_value), typeof(string_value), typeof(real_value) FROM args ORDER BY id"
    ).fetchall()
    conn.close()
    assert types == [(i, "null" if i % 2 else "integer", "null", "null") for i in range(schema.MULTI_ROWS + 1)]
