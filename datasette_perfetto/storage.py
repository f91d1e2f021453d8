"""Writes the tables declared in schema.py into a SQLite file, in batches.

Ids are allocated here (dense from 0 per table, as trace_processor does) so a
row can be referenced before it is written: a slice gets its id when it
begins and is written when it ends.
"""

from __future__ import annotations

import sqlite3
from itertools import chain
from typing import Any, Optional, Sequence

from . import schema

BATCH_ROWS = 20_000
MULTI_ROWS = 50  # rows per INSERT statement (13 columns x 50 stays far below SQLite's variable limit)

# Arg sets are content-deduplicated like trace_processor's; the cache is bounded
# so memory does not grow with the trace (identical sets far apart may then get
# two ids, which changes nothing a query can see except the id).
ARG_SET_CACHE_LIMIT = 20_000

_INT_TYPES = frozenset(("int", "uint", "pointer", "bool"))
_TEXT_TYPES = frozenset(("string", "json"))

# (flat_key, key, value_type, value)
Arg = tuple[str, str, str, Any]


# Tables whose rows are written out of id order: slices are written when they
# end, states when the next state begins.
OUT_OF_ORDER_TABLES = frozenset({"slice", "state"})


def to_int64(v: int) -> int:
    """uint64 values are stored as their int64 bit pattern, as trace_processor does."""
    if v >= 1 << 63:
        v = (v & 0xFFFFFFFFFFFFFFFF) - (1 << 64) if v < 1 << 64 else (1 << 63) - 1
    return v


class TraceStorage:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.next_id = {t.name: 0 for t in schema.TABLES}
        self._buffers: dict[str, list[tuple]] = {t.name: [] for t in schema.TABLES}
        self._insert_sql = {t.name: t.insert_sql() for t in schema.TABLES}
        self._multi_insert_sql = {t.name: t.insert_sql(MULTI_ROWS) for t in schema.TABLES}
        self._arg_sets: dict[tuple, int] = {}

    @classmethod
    def create(cls, path: str) -> "TraceStorage":
        conn = sqlite3.connect(path, isolation_level=None)
        # The file is a temporary one renamed into place on success, so
        # durability during the import buys nothing.
        conn.execute("PRAGMA page_size = 16384")
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("PRAGMA cache_size = -8192")
        conn.execute("BEGIN")
        for t in schema.TABLES:
            conn.execute(t.create_sql())
        return cls(conn)

    def buffer(self, table: str) -> list[tuple]:
        """The pending-rows list of a table, for hot paths that append directly
        (they must call flush(table) once it holds BATCH_ROWS rows)."""
        return self._buffers[table]

    def reserve_id(self, table: str) -> int:
        i = self.next_id[table]
        self.next_id[table] = i + 1
        return i

    def insert(self, table: str, row: Sequence[Any]) -> int:
        """Appends a row whose first value is not the id; returns the new id."""
        i = self.reserve_id(table)
        self.write(table, (i, *row))
        return i

    def write(self, table: str, row: tuple) -> None:
        """Queues a complete row (stored columns, id first where there is one)."""
        buf = self._buffers[table]
        buf.append(row)
        if len(buf) >= BATCH_ROWS:
            self.flush(table)

    def flush(self, table: Optional[str] = None) -> None:
        for name in [table] if table else list(self._buffers):
            buf = self._buffers[name]
            if buf:
                if name in OUT_OF_ORDER_TABLES:
                    # Ids are unique, so tuples sort by id; appending to the
                    # b-tree in order is much cheaper than random inserts.
                    buf.sort()
                # Many rows per statement: SQLite's per-statement cost is paid
                # once per MULTI_ROWS rows (inserts ~35% faster than one by one).
                whole = len(buf) - len(buf) % MULTI_ROWS
                if whole:
                    flat = chain.from_iterable
                    self.conn.executemany(self._multi_insert_sql[name],
                                          [tuple(flat(buf[i:i + MULTI_ROWS])) for i in range(0, whole, MULTI_ROWS)])
                if whole < len(buf):
                    self.conn.executemany(self._insert_sql[name], buf[whole:])
                buf.clear()

    def arg_set(self, args: Sequence[Arg]) -> Optional[int]:
        """Stores a set of args (deduplicated by content) and returns its id."""
        if not args:
            return None
        key = tuple(args)
        found = self._arg_sets.get(key)
        if found is not None:
            return found
        if len(self._arg_sets) >= ARG_SET_CACHE_LIMIT:
            self._arg_sets.clear()
        set_id = self.next_id["args"]
        self.next_id["args"] = set_id + len(key)
        rows = self._buffers["args"]
        for i, (flat_key, k, value_type, value) in enumerate(key, set_id):
            if value is None:
                rows.append((i, set_id, flat_key, k, None, None, None, "null"))
            elif value_type in _INT_TYPES:
                rows.append((i, set_id, flat_key, k, to_int64(int(value)), None, None, value_type))
            elif value_type in _TEXT_TYPES:
                rows.append((i, set_id, flat_key, k, None, value, None, value_type))
            elif value_type == "real":
                rows.append((i, set_id, flat_key, k, None, None, float(value), value_type))
            else:
                rows.append((i, set_id, flat_key, k, None, None, None, "null"))
        if len(rows) >= BATCH_ROWS:
            self.flush("args")
        self._arg_sets[key] = set_id
        return set_id

    def finish(self) -> None:
        """Flushes, indexes and creates the views; the database is then complete."""
        self.flush()
        for t in schema.TABLES:
            for sql in t.index_sql():
                self.conn.execute(sql)
        for d in schema.DERIVED:
            self.conn.execute(d.table.create_sql())
            self.conn.execute(d.populate)
            for sql in d.table.index_sql():
                self.conn.execute(sql)
        for v in schema.VIEWS:
            self.conn.execute(v.create_sql())
        self.conn.execute("COMMIT")
        self.conn.execute("ANALYZE")
        self.conn.close()

    def abort(self) -> None:
        try:
            self.conn.close()
        except sqlite3.Error:
            pass
