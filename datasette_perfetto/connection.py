"""How every connection to a trace database is set up, by Datasette (the prepare_connection hook) and by the
CLI: trace_processor's SQL functions (functions.py), and pages read through a memory map."""

from __future__ import annotations

import sqlite3

from .functions import register_functions

# Trace databases are read far more than written and run to gigabytes: reading their pages through a memory
# map skips a system call and a copy per page (scans of a large table about twice as fast). SQLite caps the
# map at its build's limit (2 GiB by default); pages beyond it are read as usual.
MMAP_BYTES = 1 << 34


def prepare(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    register_functions(conn)
