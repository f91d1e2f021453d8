"""How schema.DERIVED's tables are built once an import is complete: by the writer, or by the writer and a
forked helper.

Each derived table that is not streamed is a Task: its report_tables.COMPUTE function (which also fills the
tables FILLED_WITH it) or its `populate` SQL. A task reads what its SQL definitions read (a computed table
gives its definition's rows); the streamed tables are written before any task runs. So the tasks fall into
three stages, derived from the declarations: BEFORE (read by other tasks, reading none: report_grid),
ALONGSIDE (reading only BEFORE's tables) and AFTER (the rest, in declaration order).

With a helper (large traces; `split`), ALONGSIDE is shared by the writer and a process forked from it. Each
takes the next task from a pipe holding their numbers (a one-byte read of a pipe is atomic), runs it on a
connection of its own whose main database is a scratch file holding the task's output tables, with the
trace's database attached read-only (unqualified names find the outputs there, everything else in the
trace), and commits it; the helper reports each task done through a second pipe. The writer then copies the
scratch tables in (SQLite transfers whole records) and runs whatever the helper did not report (it failed,
or was killed) itself. Each table is filled by one task either way, so the database is the one building
them one after another gives.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import report_tables, schema
from .scratch import OwnedFile, create_temp_database, die_with_parent, remove_database_files, signals_held

# With split None, traces with fewer rows than this in the tables the tasks read build their derived tables
# in one process: forking and copying cost more than the helper saves.
SPLIT_MIN_ROWS = 100_000
_ROWS_SQL = "SELECT " + schema.row_count_sql("slice", "counter", "sched", "thread_state")

# Taken first, longest first, measured (a gigabyte trace's cells take minutes, a 16-rank PyTorch job's
# dimensions half a second): the last task to end is then a short one.
_LONGEST = (
    "report_slice_process_name_cell",
    "report_slice_track_name_cell",
    "report_track_event_cell",
    "report_counter_integral",
    "report_slice_dimension",
    "report_thread_sched",
    "report_sched_cell",
    "report_slice_track_cell",
    "report_slice_self",
    "report_track_stats",
)


@dataclass(frozen=True)
class Task:
    """Fills a derived table, and the tables filled with it."""

    derived: schema.Derived
    outputs: tuple[schema.Table, ...]
    reads: frozenset[str]  # the other tasks' tables it reads

    @property
    def name(self) -> str:
        return self.derived.name

    def run(self, conn: sqlite3.Connection) -> None:
        compute = report_tables.COMPUTE.get(self.name)
        if compute is not None:
            compute(conn)
        else:
            conn.execute(self.derived.populate)


def _tasks() -> list[Task]:
    by_name = {d.name: d for d in schema.DERIVED}
    filled: dict[str, list[str]] = {}
    for name, by in report_tables.FILLED_WITH.items():
        filled.setdefault(by, []).append(name)
    built = [d.name for d in schema.DERIVED if not d.streamed]
    tasks = []
    for d in schema.DERIVED:
        if d.streamed or d.name in report_tables.FILLED_WITH:
            continue
        outputs = (d.table, *(by_name[name].table for name in filled.get(d.name, ())))
        sql = " ".join(by_name[t.name].populate for t in outputs)
        mine = {t.name for t in outputs}
        reads = frozenset(name for name in built if name not in mine and re.search(rf"\b{name}\b", sql))
        tasks.append(Task(d, outputs, reads))
    return tasks


def stages(tasks: Sequence[Task]) -> tuple[list[Task], list[Task], list[Task]]:
    """(BEFORE, ALONGSIDE, AFTER): see the module's docstring. ALONGSIDE longest first."""
    read = {name for t in tasks for name in t.reads}
    before = [t for t in tasks if not t.reads and any(o.name in read for o in t.outputs)]
    ready = {o.name for t in before for o in t.outputs}
    alongside = [t for t in tasks if t not in before and t.reads <= ready]
    after = [t for t in tasks if t not in before and t not in alongside]
    alongside.sort(key=lambda t: _LONGEST.index(t.name) if t.name in _LONGEST else len(_LONGEST))
    return before, alongside, after


TASKS = _tasks()
BEFORE, ALONGSIDE, AFTER = stages(TASKS)


def build(conn: sqlite3.Connection, path: str, split: bool | None = None) -> None:
    """Fills every derived table that is not streamed, and indexes them all, on `conn` (the writer's
    connection to the database at `path`, in its transaction). `split`: ALONGSIDE shared with a forked
    helper (None: for traces of at least SPLIT_MIN_ROWS rows, on a machine with a second core)."""
    for task in BEFORE:
        _run_and_index(conn, task)
    copied: set[str] = set()
    if _split_wanted(conn, split):
        copied = _build_alongside(conn, path, ALONGSIDE)
    for task in ALONGSIDE:
        if task.name in copied:
            _index(conn, task)
        else:
            _run_and_index(conn, task)
    for task in AFTER:
        _run_and_index(conn, task)
    for d in schema.DERIVED:
        if d.streamed:
            _index_table(conn, d.table)


def _split_wanted(conn: sqlite3.Connection, split: bool | None) -> bool:
    if not hasattr(os, "fork") or not ALONGSIDE:
        return False
    if split is None:
        return (os.cpu_count() or 1) > 1 and conn.execute(_ROWS_SQL).fetchone()[0] >= SPLIT_MIN_ROWS
    return split


def _run_and_index(conn: sqlite3.Connection, task: Task) -> None:
    task.run(conn)
    _index(conn, task)


def _index(conn: sqlite3.Connection, task: Task) -> None:
    for table in task.outputs:
        _index_table(conn, table)


def _index_table(conn: sqlite3.Connection, table: schema.Table) -> None:
    for sql in table.index_sql():
        conn.execute(sql)


def _build_alongside(conn: sqlite3.Connection, path: str, tasks: Sequence[Task]) -> set[str]:
    """Runs `tasks` in this process and a forked helper, into scratch files beside `path`, and copies their
    tables into `conn`'s; returns the names of the tasks copied (the rest are the caller's to run)."""
    directory = os.path.dirname(os.path.abspath(path))
    # Readable by the task connections: committed, and the writer's exclusive lock given up (a change of
    # locking mode takes effect at the next access).
    conn.execute("COMMIT")
    conn.execute("PRAGMA locking_mode = NORMAL")
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    scratch: list[OwnedFile] = []
    fds: list[int] = []
    helper: int | None = None
    try:
        for _ in range(2):  # this process's tables, the helper's
            with signals_held():  # created and listed as one step: the finally below removes it
                scratch.append(create_temp_database(directory))
        claims, claims_in = os.pipe()
        fds.append(claims)
        os.write(claims_in, bytes(range(len(tasks))))
        os.close(claims_in)  # emptied, the pipe reads as its end: no task left
        reports, reports_in = os.pipe()
        fds += [reports, reports_in]
        parent = os.getpid()
        # os.fork, not split_helper.Helper: the writer is often a daemonic multiprocessing child, which
        # multiprocessing does not let start processes of its own.
        with signals_held():
            helper = os.fork()
            if helper == 0:  # never returns (die_with_parent: a signal held over the fork is not the child's)
                _helper_main(parent, scratch[1].path, path, tasks, claims, reports_in)
        os.close(reports_in)
        fds.remove(reports_in)
        mine = _run_claimed(scratch[0].path, path, tasks, claims, lambda i: None)
        with open(reports, "rb", closefd=False) as done:  # to its end: the helper has exited
            theirs = set(done.read())
        os.waitpid(helper, 0)
        helper = None
        conn.execute("ATTACH DATABASE ? AS mine", (scratch[0].path,))
        conn.execute("ATTACH DATABASE ? AS theirs", (scratch[1].path,))
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("BEGIN")
        copied = set()
        for i, task in enumerate(tasks):
            source = "mine" if i in mine else "theirs" if i in theirs else None
            if source is None:
                continue
            for table in task.outputs:
                # Column for column (derived tables have no generated columns): SQLite's transfer optimization.
                conn.execute(f"INSERT INTO main.[{table.name}] SELECT * FROM {source}.[{table.name}]")
            copied.add(task.name)
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE mine")
        conn.execute("DETACH DATABASE theirs")
        conn.execute("BEGIN")
        return copied
    finally:
        if helper:  # this process failed or was interrupted: the helper's work is of no use
            os.kill(helper, signal.SIGKILL)
            os.waitpid(helper, 0)
        for fd in fds:
            os.close(fd)
        for file in scratch:
            remove_database_files(file.path)
            file.release()


def _helper_main(parent: int, scratch: str, path: str, tasks: Sequence[Task], claims: int, reports: int) -> None:
    """The forked helper: runs tasks until none is left, reporting each one done; never returns."""
    code = 1
    try:
        die_with_parent(parent)
        _run_claimed(scratch, path, tasks, claims, lambda i: os.write(reports, bytes([i])))
        code = 0
    except BaseException:  # the writer runs what was not reported done
        pass
    finally:
        os._exit(code)  # nothing of the writer's (its connection, its temporary files) is the helper's


def _run_claimed(
    scratch: str, path: str, tasks: Sequence[Task], claims: int, done: Callable[[int], object]
) -> set[int]:
    """Claims tasks from the pipe `claims` until it is empty, runs each into the database `scratch` (the
    trace's at `path` attached read-only) and calls done(number) once it is committed; returns the numbers."""
    conn = sqlite3.connect(Path(scratch).absolute().as_uri(), uri=True, isolation_level=None)
    ran: set[int] = set()
    try:
        for pragma in ("page_size = 16384", "journal_mode = OFF", "synchronous = OFF", "cache_size = -16384"):
            conn.execute(f"PRAGMA {pragma}")
        conn.execute("ATTACH DATABASE ? AS trace", (Path(path).absolute().as_uri() + "?mode=ro",))
        while claimed := os.read(claims, 1):
            task = tasks[claimed[0]]
            conn.execute("BEGIN")
            for table in task.outputs:
                conn.execute(table.create_sql())
            task.run(conn)
            conn.execute("COMMIT")
            ran.add(claimed[0])
            done(claimed[0])
    finally:
        conn.close()
    return ran


__all__ = ["Task", "TASKS", "BEFORE", "ALONGSIDE", "AFTER", "SPLIT_MIN_ROWS", "build", "stages"]
