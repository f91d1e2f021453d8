"""`ingest --jobs N` and `--cluster`: inputs parsed by several processes (or Dask workers) and merged
(parallel.py, merge.py). The database must be the one a serial ingest of the same inputs in the same
order writes, row for row in every table: same dense ids, dimensions, stats, metadata and report
tables. Failures behave as the serial ones: the same one-line error, nothing half-written left."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from database_rows import assert_same_database
from shared_data import CASES, TRACES
from test_kill import group_processes

from datasette_perfetto import merge, parallel, schema
from datasette_perfetto.cli import perfetto
from datasette_perfetto.ingest import IngestError, Progress, ingest
from datasette_perfetto.parallel import ingest as parallel_ingest
from datasette_perfetto.trace_builder import TraceBuilder

CASE_TRACES = sorted(str(p) for p in CASES.glob("*/trace*")) if CASES.is_dir() else []
RANKS = [str(TRACES / "pytorch_ddp" / f"rank{r}.json.gz") for r in (0, 1)]
needs_cases = pytest.mark.skipif(not CASE_TRACES, reason="needs the shared conformance cases")


def serial_and_parallel(tmp_path: Path, paths: list[str], **parallel_options) -> tuple[Path, Path]:
    serial, merged = tmp_path / "serial.db", tmp_path / "parallel.db"
    ingest(paths, str(serial))
    parallel_ingest(paths, str(merged), **parallel_options)
    return serial, merged


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".ingest-"))


@needs_cases
@pytest.mark.parametrize("jobs,order", [(2, "listed"), (3, "shuffled"), (2, "reversed")])
def test_every_conformance_trace_in_one_database_is_the_serial_one(tmp_path, jobs, order):
    """Every data source the conformance cases cover (sched, heap graphs, profiles, GPU, several
    machines, ...), each input after others: ids offset, shared rows (machines, CPUs, the idle
    thread) and id-valued args, dimensions and stats remapped exactly as the serial import numbers them."""
    paths = list(CASE_TRACES)
    if order == "shuffled":
        random.Random(jobs).shuffle(paths)
    elif order == "reversed":
        paths.reverse()
    serial, merged = serial_and_parallel(tmp_path, paths, jobs=jobs)
    assert_same_database(serial, merged)
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(not Path(RANKS[0]).is_file(), reason="needs the shared pytorch_ddp traces")
def test_real_traces_give_the_serial_database(tmp_path):
    """Two PyTorch ranks (distributedInfo dimensions, flows), a V8 CPU profile (callstacks, samples) and a
    Chrome proto trace (mojo methods' native symbols: args whose value is a stack_profile_mapping id)."""
    paths = [*RANKS, str(TRACES / "chrome_v8_cpu_profile.json.gz"), str(TRACES / "chrome_startup.pftrace"), RANKS[0]]
    serial, merged = serial_and_parallel(tmp_path, paths, jobs=2)
    assert_same_database(serial, merged)


def remote_machine_trace(machine: int, pid: int) -> bytes:
    """A trace whose every packet comes from remote machine `machine`: the first such input makes the
    host's row stand for it, later ones cannot."""
    b = TraceBuilder()
    seq = b.sequence(1, machine_id=machine)
    thread = seq.thread(pid, pid, "worker")
    seq.slice_begin(1_000, thread, "work")
    seq.slice_end(2_000, thread)
    b.ftrace(
        0,
        {
            "timestamp": 1_500,
            "pid": 0,
            "sched_switch": dict(
                prev_pid=0,
                prev_comm="swapper/0",
                prev_prio=120,
                prev_state=0,
                next_pid=pid,
                next_comm="worker",
                next_prio=120,
            ),
        },
        machine_id=machine,
    )
    return b.to_bytes()


def test_input_that_depends_on_earlier_ones_is_imported_by_the_parent(tmp_path, monkeypatch):
    """Two inputs from the same remote machine: each job's import adopts it as its host, which only the
    first may (the second's data then belong to that machine): the parent imports the second itself."""
    paths = []
    for i, (machine, pid) in enumerate([(5, 10), (5, 20), (7, 30)]):
        path = tmp_path / f"remote{i}.pftrace"
        path.write_bytes(remote_machine_trace(machine, pid))
        paths.append(str(path))
    refused = []
    absorb = merge.absorb

    def counting(model, part, attach):
        try:
            return absorb(model, part, attach)
        except merge.NotMergeable as e:
            refused.append(str(e))
            raise

    monkeypatch.setattr(parallel, "absorb", counting)
    serial, merged = serial_and_parallel(tmp_path, paths, jobs=2)
    assert_same_database(serial, merged)
    assert len(refused) == 2, refused  # the second and third inputs: the host is machine 5 by then


def test_every_id_column_declares_its_table():
    """The merge remaps the columns schema.py declares with Column.ref: every column whose doc names a
    table's ids ("→ thread.utid") declares it, and one naming a view's ids ("→ counter_track.id") the table
    that holds them."""
    tables = {t.name for t in schema.TABLES}
    arrow = re.compile(r"→ ([a-z_]+)\.(id|upid|utid|arg_set_id|ucpu|ugpu)\b")
    undeclared = []
    for t in schema.TABLES:
        for c in t.columns:
            ref = merge.column_ref(c)
            assert ref is None or ref in tables, f"{t.name}.{c.name}: ref {ref} is not a table"
            if c.stored and c.name != "id" and c.type == "INTEGER" and arrow.search(c.doc) and ref is None:
                undeclared.append(f"{t.name}.{c.name}")
    assert undeclared == []
    assert merge.column_ref(schema.table("slice").columns[3]) == "track"  # track_id
    assert merge.column_ref(schema.table("flow").columns[3]) is None  # trace_id: the trace's raw flow id


def test_the_merge_knows_every_piece_of_model_state():
    """A TraceModel or TraceStorage attribute that outlives an input is state a part must hand over:
    one the merge does not know would be lost or wrong in a parallel ingest."""
    model = merge.fresh_model()
    assert set(vars(model)) == merge.MODEL_STATE
    assert set(vars(model.storage)) == merge.STORAGE_STATE


def test_bad_input_fails_as_in_a_serial_ingest(tmp_path, demo_trace, demo_db):
    """The third of four inputs is not a trace: the same one-line error as without --jobs, the
    existing output untouched, no temporary file (the parent's or a job's) left."""
    bad = tmp_path / "bad.pftrace"
    bad.write_bytes(b"hello, world\nthis is not a trace\n")
    paths = [str(demo_trace), str(demo_trace), str(bad), str(demo_trace)]
    out = tmp_path / "out.db"
    out.write_bytes(Path(demo_db.path).read_bytes())
    before = out.read_bytes()
    with pytest.raises(IngestError) as serial_error:
        ingest(paths, str(out))
    with pytest.raises(IngestError) as parallel_error:
        parallel_ingest(paths, str(out), jobs=2)
    assert str(parallel_error.value) == str(serial_error.value)
    assert "\n" not in str(parallel_error.value) and str(bad) in str(parallel_error.value)
    assert out.read_bytes() == before
    assert leftovers(tmp_path) == []


def test_progress_counts_every_input_byte(tmp_path, demo_trace):
    """With --jobs the display gets the jobs' progress: one bar over all inputs, every byte reported."""

    class Recorder(Progress):
        def __init__(self) -> None:
            self.started: list[tuple[str, int]] = []
            self.done = 0

        def input_started(self, path: str, size: int) -> None:
            self.started.append((path, size))

        def advanced(self, amount: int) -> None:
            self.done += amount

    recorder = Recorder()
    paths = [str(demo_trace)] * 3
    parallel_ingest(paths, str(tmp_path / "out.db"), recorder, jobs=2)
    total = 3 * os.path.getsize(demo_trace)
    assert recorder.started == [("3 traces, 2 jobs", total)]
    assert recorder.done == total


def test_cli_jobs_option(tmp_path, demo_trace):
    runner = CliRunner()
    out = tmp_path / "out.db"
    result = runner.invoke(perfetto, ["ingest", str(demo_trace), str(demo_trace), "-o", str(out), "--jobs", "2"])
    assert result.exit_code == 0, result.output
    serial = tmp_path / "serial.db"
    ingest([str(demo_trace)] * 2, str(serial))
    assert_same_database(serial, out)
    for bad in ("-1", "many"):
        result = runner.invoke(perfetto, ["ingest", str(demo_trace), "-o", str(tmp_path / "x.db"), "--jobs", bad])
        assert result.exit_code == 1
        assert f"--jobs {bad}: expected a positive number of processes" in result.output
        assert not (tmp_path / "x.db").exists()


def test_cluster_without_dask_names_the_extra(tmp_path, demo_trace, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import fails as when Dask is missing
    with pytest.raises(IngestError) as excinfo:
        parallel_ingest([str(demo_trace)], str(tmp_path / "out.db"), cluster="local")
    assert str(excinfo.value) == "--cluster needs Dask: pip install 'datasette-perfetto[cluster]'"
    assert leftovers(tmp_path) == [] and not (tmp_path / "out.db").exists()


@needs_cases
def test_dask_cluster_in_threads_gives_the_serial_database(tmp_path):
    """A Dask LocalCluster of two workers in this process, reached by its scheduler's address."""
    distributed = pytest.importorskip("dask.distributed")
    paths = CASE_TRACES[:60]
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        serial, merged = serial_and_parallel(tmp_path, paths, cluster=cluster.scheduler_address)
    assert_same_database(serial, merged)
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(not Path(RANKS[0]).is_file(), reason="needs the shared pytorch_ddp traces")
def test_cluster_local_runs_worker_processes(tmp_path):
    """`--cluster local`: a LocalCluster of worker processes; parts come back as bytes."""
    pytest.importorskip("dask.distributed")
    paths = [*RANKS, str(TRACES / "chrome_v8_cpu_profile.json.gz")]
    serial, merged = serial_and_parallel(tmp_path, paths, cluster="local", jobs=2)
    assert_same_database(serial, merged)


def test_bad_input_on_a_cluster_fails_as_in_a_serial_ingest(tmp_path, demo_trace):
    distributed = pytest.importorskip("dask.distributed")
    missing = str(tmp_path / "missing.pftrace")
    with pytest.raises(IngestError) as serial_error:
        ingest([str(demo_trace), missing], str(tmp_path / "s.db"))
    with distributed.LocalCluster(n_workers=2, processes=False, dashboard_address=None) as cluster:
        with pytest.raises(IngestError) as cluster_error:
            parallel_ingest([str(demo_trace), missing], str(tmp_path / "c.db"), cluster=cluster.scheduler_address)
    assert str(cluster_error.value) == str(serial_error.value)
    assert leftovers(tmp_path) == []


def test_unreachable_scheduler_is_a_one_line_error(tmp_path, demo_trace):
    pytest.importorskip("dask.distributed")
    with pytest.raises(IngestError) as excinfo:
        parallel_ingest([str(demo_trace)], str(tmp_path / "out.db"), cluster="tcp://127.0.0.1:9")
    message = str(excinfo.value)
    assert (
        message.startswith("--cluster tcp://127.0.0.1:9: cannot connect to the Dask scheduler") and "\n" not in message
    )


def test_stopped_jobs_leave_no_executor_thread_for_the_exit_to_wake():
    """After a failure the executor's managing thread has ended and closed its wake-up pipe: the interpreter's
    exit wakes every such thread without a lock (Python before 3.12), and a pipe closing meanwhile printed a
    traceback after a SIGTERM'd ingest had cleaned up (seen once in CI)."""
    import concurrent.futures.process as futures_process
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    executor = ProcessPoolExecutor(2, multiprocessing.get_context("fork"))
    futures = [executor.submit(time.sleep, 30) for _ in range(3)]
    manager = executor._executor_manager_thread
    assert manager is not None and manager.is_alive()
    parallel._stop(executor, futures)
    assert not manager.is_alive()
    assert all(wakeup._closed for wakeup in list(futures_process._threads_wakeups.values()))


_EXECUTOR = None  # the executor whose results pipe _send_half_a_result writes to (a worker's copy, forked)


def _send_half_a_result() -> None:
    """As a worker killed while it sent its result: a message's length and part of its bytes, then nothing."""
    import struct

    writer = _EXECUTOR._result_queue._writer  # type: ignore[union-attr]
    os.write(writer.fileno(), struct.pack("!i", 1_000) + b"x" * 10)
    time.sleep(30)


def test_a_job_killed_while_it_sends_its_result_leaves_no_thread_for_the_exit_to_wait_on():
    """The executor's managing thread reads the half-sent result until a write end closes: after the workers
    are killed this process's own end is closed too, so the thread ends (the interpreter's exit joins it: a
    hang at the end of an ingest that failed, seen once after the test suite)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _EXECUTOR
    _EXECUTOR = executor = ProcessPoolExecutor(1, multiprocessing.get_context("fork"))
    try:
        futures = [executor.submit(_send_half_a_result)]
        manager = executor._executor_manager_thread
        time.sleep(0.5)  # the worker has written its half message; the thread waits for the rest
        assert manager is not None and manager.is_alive()
        started = time.monotonic()
        parallel._stop(executor, futures)
        assert not manager.is_alive()
        assert time.monotonic() - started < parallel.MANAGER_EXIT_SECONDS
    finally:
        _EXECUTOR = None


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs /proc to find the child processes")
@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_killed_parallel_ingest_leaves_nothing_behind(tmp_path, demo_trace, sig):
    """Killed while its jobs parse: no job outlives it, and no part database is left (at once after
    SIGTERM; after SIGKILL, once the next ingest in the folder has swept the dead jobs' files)."""
    big = tmp_path / "big.json"
    events = [
        f'{{"ph": "X", "name": "s{i % 50}", "ts": {i}, "dur": 1, "pid": 1, "tid": {i % 7}, "args": {{"i": {i}}}}}'
        for i in range(150_000)
    ]
    big.write_text("[" + ",\n".join(events) + "]")
    out = tmp_path / "out.db"
    command = [sys.executable, "-m", "datasette", "perfetto", "ingest", "-q", "--jobs", "2", *[str(big)] * 4]
    process = subprocess.Popen([*command, "-o", str(out)], start_new_session=True, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while len(group_processes(process.pid)) < 3 and time.monotonic() < deadline:  # the parent and its jobs
            time.sleep(0.05)
        time.sleep(1.0)
        process.send_signal(getattr(signal, sig))
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    if process.returncode == 0:
        pytest.skip("the ingest finished before it was killed")
    deadline = time.monotonic() + 10
    while group_processes(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group_processes(process.pid) == [], "a job outlived the killed ingest"
    assert not out.exists()
    if sig == "SIGTERM":
        assert "Traceback" not in stderr
    else:
        ingest([str(demo_trace)], str(tmp_path / "next.db"))  # sweeps what the dead ones left
    assert leftovers(tmp_path) == []
