"""derived.py: the derived tables built in stages, ALONGSIDE shared with a forked helper for large traces; the
database is the one building them in one process gives, whatever the helper does."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from database_rows import assert_same_database

from datasette_perfetto import derived, report_tables, schema
from datasette_perfetto.ingest import ingest

STAGES = (derived.BEFORE, derived.ALONGSIDE, derived.AFTER)


def test_every_task_is_in_one_stage_after_what_it_reads():
    built = [d.name for d in schema.DERIVED if not d.streamed]
    outputs = [t.name for stage in STAGES for task in stage for t in task.outputs]
    assert sorted(outputs) == sorted(built)  # each table filled by one task
    assert [t.name for t in derived.BEFORE] == ["report_grid"]
    assert [t.name for t in derived.AFTER] == ["report_slice_process_name"]
    ready = {t.name for task in derived.BEFORE for t in task.outputs}
    assert all(not task.reads for task in derived.BEFORE)
    # ALONGSIDE's tasks run at once: each reads BEFORE's tables only.
    assert all(task.reads <= ready for task in derived.ALONGSIDE)
    ready |= {t.name for task in derived.ALONGSIDE for t in task.outputs}
    for task in derived.AFTER:
        assert task.reads <= ready, task.name
        ready |= {t.name for t in task.outputs}
    # Found in the definitions (report_slice_name is streamed: no task's).
    reads = {task.name: task.reads for task in derived.TASKS}
    assert reads["report_slice_track_cell"] == {"report_grid"}
    assert reads["report_slice_process_name"] == {"report_slice_process_name_cell"}
    assert reads["report_slice_process_name_cell"] == {"report_grid"}  # with report_slice_name_cell's


def test_the_copied_tables_have_no_generated_columns():
    """The helper's tables are copied with SELECT * (SQLite's transfer optimization)."""
    for task in derived.ALONGSIDE:
        for table in task.outputs:
            assert len(table.stored_columns) == len(table.columns), table.name


def rebuilt(source: Path, target: Path, split: bool) -> Path:
    """A copy of the database at `source` with its derived tables emptied and built again (`split`)."""
    shutil.copy(source, target)
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "locking_mode = EXCLUSIVE"):
            conn.execute(f"PRAGMA {pragma}")
        conn.execute("BEGIN")
        for d in schema.DERIVED:
            if not d.streamed:
                conn.execute(f"DELETE FROM [{d.name}]")
            for (index,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL", (d.name,)
            ).fetchall():
                conn.execute(f"DROP INDEX [{index}]")
        derived.build(conn, str(target), split)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return target


def derived_indexes(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name").fetchall()
    finally:
        conn.close()


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".ingest-"))


def reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.fixture
def forked(monkeypatch) -> list[int]:
    """The pids of the processes forked by this process during the test."""
    pids: list[int] = []
    fork = os.fork

    def recorded_fork():
        pid = fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", recorded_fork)
    return pids


def no_child_left(pids: list[int]) -> bool:
    return bool(pids) and all(reaped(pid) for pid in pids)


@pytest.fixture(params=["demo_db", "sched_db", "v8_db"])
def database(request, tmp_path, monkeypatch) -> Path:
    """A trace database, in a folder of its own, with the cell tables built whatever its size."""
    source = request.getfixturevalue(request.param).path  # a session's database: made before the cells are forced
    monkeypatch.setattr(report_tables, "REPORT_NAME_CELL_MIN_SLICES", 0)
    folder = tmp_path / "db"
    folder.mkdir()
    return rebuilt(source, folder / "one.db", split=False)


def test_the_split_build_is_the_one_process_build(database, forked):
    split = rebuilt(database, database.with_name("split.db"), split=True)
    assert_same_database(database, split)
    assert derived_indexes(split) == derived_indexes(database)
    with sqlite3.connect(split) as conn:  # several of ALONGSIDE's tables have rows
        filled = [
            t.name
            for task in derived.ALONGSIDE
            for t in task.outputs
            if conn.execute(f"SELECT count(*) FROM [{t.name}]").fetchone()[0]
        ]
    assert len(filled) >= 2, filled
    assert leftovers(database.parent) == [] and no_child_left(forked)


@pytest.fixture
def helper_runs(monkeypatch, tmp_path):
    """Makes every task the helper takes call `fault()` (the helper only) after noting its name in a file;
    the writer's first task of ALONGSIDE waits until the helper has noted one, so that it takes one. Returns
    a function setting the fault and giving the noted names."""
    writer = os.getpid()
    notes = tmp_path / "helper_tasks.txt"
    run = derived.Task.run
    faults = {}

    def noted_run(task, conn):
        if os.getpid() != writer:
            with open(notes, "a") as f:
                f.write(task.name + "\n")
            faults["fault"]()
        elif task in derived.ALONGSIDE and not faults.get("waited"):
            faults["waited"] = True
            for _ in range(500):
                if notes.exists():
                    break
                time.sleep(0.01)
        run(task, conn)

    monkeypatch.setattr(derived.Task, "run", noted_run)

    def set_fault(fault):
        faults["fault"] = fault
        return lambda: notes.read_text().split() if notes.exists() else []

    return set_fault


def raise_error():
    raise RuntimeError("the helper's task failed")


def kill_self():
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize("fault", [raise_error, kill_self], ids=["raises", "killed"])
def test_tasks_the_helper_did_not_finish_are_run_by_the_writer(database, helper_runs, fault, forked):
    taken = helper_runs(fault)
    split = rebuilt(database, database.with_name("split.db"), split=True)
    assert len(taken()) == 1  # the helper took one task, failed it, and stopped
    assert_same_database(database, split)
    assert leftovers(database.parent) == [] and no_child_left(forked)


def test_a_task_failing_in_the_writer_fails_the_build_and_leaves_nothing(database, monkeypatch, forked):
    run = derived.Task.run

    def failing_run(task, conn):
        if task.name == "report_slice_dimension":  # in the helper, if it takes it: then run again by the writer
            raise RuntimeError("no dimensions today")
        run(task, conn)

    monkeypatch.setattr(derived.Task, "run", failing_run)
    with pytest.raises(RuntimeError, match="no dimensions today"):
        rebuilt(database, database.with_name("split.db"), split=True)
    assert leftovers(database.parent) == [] and no_child_left(forked)


@pytest.mark.parametrize("threshold, helped", [(0, True), (10**12, False)])
def test_an_ingest_splits_its_build_by_size(demo_trace, tmp_path, monkeypatch, threshold, helped, forked):
    """split_finish None: by rows (SPLIT_MIN_ROWS); the database is the same, written by a writer child or here."""
    monkeypatch.setattr(derived, "SPLIT_MIN_ROWS", threshold)
    calls = []
    build_alongside = derived._build_alongside
    monkeypatch.setattr(derived, "_build_alongside", lambda *a: calls.append(1) or build_alongside(*a))
    for separate_writer in (False, True):
        db = tmp_path / f"auto-{separate_writer}.db"
        ingest([str(demo_trace)], str(db), separate_writer=separate_writer)
        single = tmp_path / f"single-{separate_writer}.db"
        ingest([str(demo_trace)], str(single), separate_writer=separate_writer, split_finish=False)
        assert_same_database(db, single)
    # Counted here only for the writer in this process (a writer child's calls are its own).
    assert calls == ([1] if helped else [])
    assert leftovers(tmp_path) == [] and all(reaped(pid) for pid in forked)
