"""The SQLite side of an import: rows in, a finished database file out.

`SqliteWriter` does the writing in this process. `WriterProcess` runs one in a
child process fed through a pipe: binding parameters and building indexes
hold the interpreter, so a thread would not help, but a second process lets
SQLite work while the importer parses (the machine's second core). Both offer
the same calls; `open_writer` picks one.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any

from . import derived, schema
from .schema import MULTI_ROWS, grouped_rows
from .scratch import die_with_parent, signals_held

# Tables whose rows are written out of id order: slices are written when they
# end, states when the next state begins.
OUT_OF_ORDER_TABLES = frozenset({"slice", "state"})

# Inputs at least this large are written by a child process; below it, starting
# one costs more than it saves.
PROCESS_THRESHOLD_BYTES = 2 << 20


# Binding None (NULL), Python 3.11's sqlite3 module looks for an adapter and, with none registered for it,
# ends up raising and clearing an AttributeError: about 1 us a value, 13% of a PyTorch JSON import's time.
# An adapter registered for None is found at once; it returns None, which binds NULL as before.
def _null(value: None) -> None:
    return None


sqlite3.register_adapter(type(None), _null)

# Rows per index that ANALYZE samples.
ANALYSIS_LIMIT = 1000

# Batches waiting for the child; bounds the memory a slow disk can pin.
PENDING_BATCHES = 32
# Seconds a stopped writer child has to end after its SIGTERM before it is killed: a SIGTERM that lands just
# before the child blocks reading its pipe runs Python's handler only once the read returns, which it never
# does (seen once in a kill test, on a loaded machine: the parent waited forever).
STOP_GRACE_SECONDS = 5.0


# The steps that complete a database, in order: (name shown by progress displays, SqliteWriter method).
FINISH_STEPS = (
    ("Building indexes and report tables", "build_derived"),
    ("Collecting planner statistics (ANALYZE)", "analyze"),
)


class WriterError(Exception):
    """The writer failed; str() says why."""


def prepare_rows(table: str, rows: list[tuple]) -> tuple[list[tuple], list[tuple]]:
    """Rows as the writer inserts them: in id order where they were written out of
    it, and flattened MULTI_ROWS to a statement; returns (groups, remaining rows)."""
    if table in OUT_OF_ORDER_TABLES:
        # Ids are unique, so tuples sort by id; appending to the b-tree in
        # order is much cheaper than random inserts.
        rows.sort()
    return grouped_rows(rows)


class SqliteWriter:
    """Writes the schema's tables into a new SQLite file."""

    def __init__(self, path: str, split_finish: bool | None = None) -> None:
        """`split_finish`: the derived tables built by two processes (derived.build's `split`)."""
        self.path = path
        self.split_finish = split_finish
        conn = sqlite3.connect(path, isolation_level=None)
        # The file is a temporary one renamed into place on success, so
        # durability during the import buys nothing.
        conn.execute("PRAGMA page_size = 16384")
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("PRAGMA cache_size = -16384")
        conn.execute("BEGIN")
        for t in schema.TABLES:
            conn.execute(t.create_sql())
            # Indexed from the start: kept up to date while the importer parses (in a
            # child process, time it would otherwise spend waiting), not built at the end.
            for sql in t.index_sql():
                conn.execute(sql)
        for d in schema.DERIVED:
            conn.execute(d.table.create_sql())  # indexed once filled, by finish()
        self.conn = conn
        tables = schema.TABLES + tuple(d.table for d in schema.DERIVED)
        self._insert_sql = {t.name: t.insert_sql() for t in tables}
        self._multi_insert_sql = {t.name: t.insert_sql(MULTI_ROWS) for t in tables}

    def rows(self, table: str, rows: list[tuple]) -> None:
        """Inserts complete rows (stored columns, id first where there is one)."""
        self.insert_prepared(table, *prepare_rows(table, rows))

    def insert_prepared(self, table: str, grouped: list[tuple], rest: list[tuple]) -> None:
        """Inserts prepare_rows()'s output."""
        if grouped:
            self.conn.executemany(self._multi_insert_sql[table], grouped)
        if rest:
            self.conn.executemany(self._insert_sql[table], rest)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: list[tuple]) -> None:
        self.conn.executemany(sql, rows)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.conn.execute(sql, params).fetchall()

    def finish(self, phase: Callable[[str], None] = lambda name: None) -> None:
        """Completes and closes the database: FINISH_STEPS, calling `phase(name)` as each begins."""
        for name, method in FINISH_STEPS:
            phase(name)
            getattr(self, method)()

    def build_derived(self) -> None:
        """Derived tables (derived.py: by this process and a helper for large traces) and views."""
        conn = self.conn
        derived.build(conn, self.path, self.split_finish)
        for v in schema.VIEWS:
            conn.execute(v.create_sql())
        conn.execute("COMMIT")

    def analyze(self) -> None:
        """Planner statistics, then the database is complete and closed."""
        conn = self.conn
        # Planner statistics from a sample of each index: exact for small tables, and
        # milliseconds instead of a full pass (~0.2 s on a Chrome startup trace) for large ones.
        conn.execute(f"PRAGMA analysis_limit = {ANALYSIS_LIMIT}")
        conn.execute("ANALYZE")
        conn.close()

    def abort(self) -> None:
        try:
            self.conn.close()
        except sqlite3.Error:
            pass


_FINISH_METHODS = frozenset(method for _, method in FINISH_STEPS)


def _serve(path: str, split_finish: bool | None, inbox, outbox, parent_pid: int, parent_ends: tuple) -> None:
    """The child process: runs the parent's calls on a SqliteWriter, in order.

    Calls answer only when the parent waits for them (query, the finish steps);
    the first failure is kept and reported at the next one, and later calls are
    skipped, so the parent never blocks on an answer it did not ask for. The
    child ends after the last finish step, or after a failed one (the parent
    stops there too).
    """
    die_with_parent(parent_pid)
    # The parent's ends of the pipes, inherited through fork: held here, the inbox would
    # never see the end of its input when the parent dies.
    for end in parent_ends:
        end.close()
    failure: str | None = None
    try:
        writer: SqliteWriter | None = SqliteWriter(path, split_finish)
    except sqlite3.Error as e:
        writer, failure = None, f"cannot create the database: {e}"
    while True:
        try:
            method, args = pickle.loads(inbox.recv_bytes())
        except EOFError:  # the parent is gone
            method, args = "abort", ()
        if method == "abort":
            if writer is not None:
                writer.abort()
            return
        finishing = method in _FINISH_METHODS
        answers = finishing or method == "query"
        result = None
        if failure is None:
            try:
                result = getattr(writer, method)(*args)
            except Exception as e:  # reported to the parent, which raises it
                failure = f"{type(e).__name__}: {e}"
        if answers:
            outbox.send_bytes(pickle.dumps((failure, result), protocol=pickle.HIGHEST_PROTOCOL))
            if finishing and (failure is not None or method == FINISH_STEPS[-1][1]):
                return


class WriterProcess:
    """A SqliteWriter in a child process. Calls are queued and sent by a thread
    (the pipe's write releases the interpreter), so the importer only pays for
    pickling; query() and finish() wait for everything before them."""

    def __init__(self, path: str, split_finish: bool | None = None) -> None:
        ctx = multiprocessing.get_context("fork")
        to_child_r, self._to_child = ctx.Pipe(duplex=False)
        self._from_child, from_child_w = ctx.Pipe(duplex=False)
        self.process = ctx.Process(
            target=_serve,
            args=(path, split_finish, to_child_r, from_child_w, os.getpid(), (self._to_child, self._from_child)),
            daemon=True,
            name="datasette-perfetto-writer",
        )
        with signals_held():
            self.process.start()
        to_child_r.close()
        from_child_w.close()
        self._queue: queue.Queue = queue.Queue(PENDING_BATCHES)
        self._send_error: BaseException | None = None
        self._sender = threading.Thread(target=self._send_loop, daemon=True, name="writer-pipe")
        self._sender.start()

    def _send_loop(self) -> None:
        while True:
            data = self._queue.get()
            if data is None:
                return
            if self._send_error is None:
                try:
                    self._to_child.send_bytes(data)
                except OSError as e:
                    self._send_error = e

    def _call(self, method: str, *args) -> None:
        if self._send_error is not None:
            raise WriterError(f"the writer process stopped: {self._send_error}")
        self._queue.put(pickle.dumps((method, args), protocol=pickle.HIGHEST_PROTOCOL))

    def _answer(self):
        try:
            failure, result = pickle.loads(self._from_child.recv_bytes())
        except EOFError:
            raise WriterError(f"the writer process stopped (exit code {self.process.exitcode})") from None
        if failure is not None:
            raise WriterError(failure)
        return result

    def rows(self, table: str, rows: list[tuple]) -> None:
        # Prepared here: the child is the busier of the two while the importer parses.
        self._call("insert_prepared", table, *prepare_rows(table, rows))

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._call("execute", sql, tuple(params))

    def executemany(self, sql: str, rows: list[tuple]) -> None:
        self._call("executemany", sql, rows)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        self._call("query", sql, tuple(params))
        return self._answer()

    def finish(self, phase: Callable[[str], None] = lambda name: None) -> None:
        # One answered call per step, so the phases are shown as the child reaches them.
        try:
            for name, method in FINISH_STEPS:
                phase(name)
                self._call(method)
                self._answer()
        except BaseException:
            # Interrupted (SIGTERM, Ctrl+C) between two steps: the child waits for the next one.
            self._terminate()
            raise
        finally:
            self._stop()

    def abort(self) -> None:
        # The database is thrown away: nothing the child still has queued matters.
        self._terminate()
        self._stop()

    def _terminate(self) -> None:
        """Ends the child: SIGTERM (its cleanup runs), then SIGKILL if it has not ended STOP_GRACE_SECONDS later."""
        self.process.terminate()
        self.process.join(STOP_GRACE_SECONDS)
        if self.process.exitcode is None:
            self.process.kill()

    def _stop(self) -> None:
        self.process.join()
        self._queue.put(None)  # the sender drains what is left (a dead child fails each send at once)
        self._sender.join()
        self._to_child.close()
        self._from_child.close()


def open_writer(
    path: str, input_bytes: int = 0, separate_process: bool | None = None, split_finish: bool | None = None
):
    """A writer for a new database at `path`: in a child process for large
    inputs (when the platform can fork), else in this one (`split_finish`: SqliteWriter's)."""
    if separate_process is None:
        separate_process = input_bytes >= PROCESS_THRESHOLD_BYTES
    if separate_process and "fork" in multiprocessing.get_all_start_methods():
        return WriterProcess(path, split_finish)
    return SqliteWriter(path, split_finish)
