"""Two trace databases compared table by table (as a parallel or split import must equal a serial one)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def table_rows(path: Path) -> dict[str, list[tuple]]:
    """Every table's rows in rowid order (SQLite's own tables left out), read-only."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        return {name: conn.execute(f"SELECT * FROM [{name}] ORDER BY rowid").fetchall() for name in names}
    finally:
        conn.close()


def differing_tables(a: Path, b: Path) -> list[str]:
    """The tables whose rows differ between two databases (or that only one has)."""
    rows_a, rows_b = table_rows(a), table_rows(b)
    return sorted(n for n in rows_a.keys() | rows_b.keys() if rows_a.get(n) != rows_b.get(n))


def assert_same_database(a: Path, b: Path) -> None:
    assert differing_tables(a, b) == []
