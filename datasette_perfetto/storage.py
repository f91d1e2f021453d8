"""Writes the tables declared in schema.py into a SQLite file, in batches.

Ids are allocated here (dense from 0 per table, as trace_processor does) so a
row can be referenced before it is written: a slice gets its id when it
begins and is written when it ends.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from . import schema
from .aggregates import TIMED_TABLES, SliceNameAggregates, TimeBounds
from .writer import open_writer

BATCH_ROWS = 5_000

# Arg sets are content-deduplicated like trace_processor's; the cache is bounded
# so memory does not grow with the trace (identical sets far apart may then get
# two ids, which changes nothing a query can see except the id).
ARG_SET_CACHE_LIMIT = 20_000

_INT_TYPES = frozenset(("int", "uint", "pointer", "bool"))
_TEXT_TYPES = frozenset(("string", "json"))

# (flat_key, key, value_type, value)
Arg = tuple[str, str, str, Any]


SHARED_ARGS_LIMIT = 50_000
_shared_args: dict[Arg, Arg] = {}


def _shared_arg(arg: Arg) -> Arg:
    """One tuple per recurring arg, with its key strings shared (interned). The arg-set cache keeps
    thousands of sets alive, and args decoded (or unpickled) per event are each a copy otherwise."""
    found = _shared_args.get(arg)
    if found is not None:
        return found
    flat_key, key, value_type, value = arg
    if type(flat_key) is str and type(key) is str:
        arg = (sys.intern(flat_key), sys.intern(key), value_type, value)
    if len(_shared_args) >= SHARED_ARGS_LIMIT:
        _shared_args.clear()
    _shared_args[arg] = arg
    return arg


def to_int64(v: int) -> int:
    """uint64 values are stored as their int64 bit pattern, as trace_processor does."""
    if v >= 1 << 63:
        v = (v & 0xFFFFFFFFFFFFFFFF) - (1 << 64) if v < 1 << 64 else (1 << 63) - 1
    return v


class TraceStorage:
    def __init__(self, writer) -> None:
        self.writer = writer  # a writer.SqliteWriter or writer.WriterProcess
        self.next_id = {t.name: 0 for t in schema.TABLES}
        self._buffers: dict[str, list[tuple]] = {t.name: [] for t in schema.TABLES}
        self._arg_sets: dict[tuple, int] = {}
        self.time_bounds = TimeBounds()
        self.slice_names = SliceNameAggregates()

    @classmethod
    def create(
        cls, path: str, input_bytes: int = 0, separate_process: bool | None = None, split_finish: bool | None = None
    ) -> TraceStorage:
        return cls(open_writer(path, input_bytes, separate_process, split_finish))

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

    def flush(self, table: str | None = None) -> None:
        for name in [table] if table else list(self._buffers):
            buf = self._buffers[name]
            if buf:
                if name in TIMED_TABLES:
                    self.time_bounds.add(name, buf)
                    if name == "slice":
                        self.slice_names.add(buf)
                self.writer.rows(name, buf)
                buf.clear()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Runs a statement after every row written so far."""
        self.flush()
        self.writer.execute(sql, params)

    def executemany(self, sql: str, rows: list[tuple]) -> None:
        self.flush()
        self.writer.executemany(sql, rows)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """The rows of a query over everything written so far."""
        self.flush()
        return self.writer.query(sql, params)

    def arg_set(self, args: Sequence[Arg]) -> int | None:
        """Stores a set of args (deduplicated by content) and returns its id."""
        if not args:
            return None
        key = tuple(args)
        found = self._arg_sets.get(key)
        if found is not None:
            return found
        if len(self._arg_sets) >= ARG_SET_CACHE_LIMIT:
            self._arg_sets.clear()
        key = tuple(map(_shared_arg, key))  # kept alive by the cache: no copies of recurring args or keys
        set_id = self.next_id["args"]
        self.next_id["args"] = set_id + len(key)
        rows = self._buffers["args"]
        for i, (flat_key, k, value_type, value) in enumerate(key, set_id):
            if value is None:
                # A NULL string stays a string arg (trace_processor's null StringId); else a null arg.
                rows.append((i, set_id, flat_key, k, None, None, None, "string" if value_type == "string" else "null"))
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

    def forget_arg_sets(self) -> None:
        """Empties the deduplication cache: each input's arg sets (and the ones written at the end) are
        deduplicated among themselves only, so an input's ids do not depend on the inputs before it and
        a parallel ingest (merge.py) gives the serial one's ids."""
        self._arg_sets.clear()

    def trace_bounds(self) -> tuple[int, int]:
        """trace_bounds over everything written so far."""
        self.flush()
        return self.time_bounds.trace_bounds()

    def finish(self, phase: Callable[[str], None] = lambda name: None) -> None:
        """Flushes, writes the streamed aggregates and has the writer complete the database
        (`phase` as in writer.finish)."""
        self.flush()
        end = self.time_bounds.trace_bounds()[1]  # unfinished slices last to the end of the trace
        self.writer.rows("report_slice_track_name", list(self.slice_names.track_name_rows(end)))
        self.writer.rows("report_slice_name", list(self.slice_names.name_rows(end)))
        self.writer.finish(phase)

    def abort(self) -> None:
        self.writer.abort()
