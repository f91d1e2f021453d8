"""Several inputs parsed at once: `ingest --jobs N` (forked processes) and `--cluster ADDRESS` (Dask).

Each input but the first (the parent's own, imported as a serial ingest does while the others are
parsed) is imported by `import_part`, on its own: a TraceModel of its own writing a database of
its own, sent back as a merge.Part. The parent takes the parts in input order as they come
(merge.absorb: ids offset, shared identities mapped) while later inputs are still being parsed,
then finishes the database as a serial ingest does; the result is the serial ingest's database,
row for row. A part that cannot be merged (merge.NotMergeable) is imported again by the parent.

- `--jobs N`: a ProcessPoolExecutor of forked workers. A part's database is written beside the
  output (a temporary `.ingest-<pid>-*.db` named by the ingest's pid, scratch.py's rules: owner-locked
  while written, swept by a later ingest once this one is gone) and the parent reads it there. Workers die with the parent
  (`die_with_parent`) and report their bytes done through a queue (the progress display).
- `--cluster ADDRESS`: the same function as Dask tasks on the scheduler at ADDRESS (`local`: a
  LocalCluster of worker processes started here). Workers read the inputs by path (a shared
  filesystem, or this machine) and send each part's database back as bytes, so the output's folder
  need not be shared; the client merges. Dask is an optional dependency (the `cluster` extra).
"""

from __future__ import annotations

import functools
import gc
import logging
import multiprocessing
import os
import signal
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from .archives import TraceInput, archive_kind
from .importers.common.options import DEFAULT_CONTENT, Content
from .ingest import IngestError, Progress, TraceSummary, import_input
from .ingest import ingest as serial_ingest
from .merge import NotMergeable, Part, absorb, part_model
from .model import TraceModel
from .scratch import (
    OwnedFile,
    create_temp_database,
    die_with_parent,
    remove_database_files,
    signals_held,
    sweep_abandoned,
)
from .storage import TraceStorage
from .writer import SqliteWriter, WriterError

POLL_SECONDS = 0.2  # how often the parent shows progress while it waits for a part
MANAGER_EXIT_SECONDS = 5.0  # how long a stopped executor's thread may take to notice its workers are gone
REPORT_EVERY = 0.25  # seconds between two progress messages of a worker
CLUSTER_EXTRA = "pip install 'datasette-perfetto[cluster]'"


def import_part(
    source: TraceInput, index: int, directory: str | None, content: Content = DEFAULT_CONTENT, as_bytes: bool = False
) -> Part:
    """Imports trace number `index` (in import order) into a database of its own (in `directory`, or the
    temp folder) and returns it as a Part: by path, or its bytes with `as_bytes` (the file is then removed)."""
    if directory is None:  # a cluster worker's temp folder: what killed workers left there goes first
        directory = tempfile.gettempdir()
        sweep_abandoned(directory)
    temporary: OwnedFile | None = None
    gc_was_enabled = gc.isenabled()
    writer: SqliteWriter | None = None
    try:
        with signals_held():  # created and bound as one step: the except below removes it
            temporary = create_temp_database(directory, _ingest_pid)
        # As a serial ingest: the importers build no reference cycles (see ingest._ingest).
        gc.disable()
        try:
            writer = SqliteWriter(temporary.path)
            # Unindexed: the merge reads a part's rows once, in order (indexes would cost ~15% more).
            for (name,) in writer.query("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"):
                writer.execute(f"DROP INDEX [{name}]")
            model = TraceModel(TraceStorage(writer))
            first_id = part_model(model, index)
            summary = import_input(model, source, _reporter or Progress(), False, content)
            model.storage.flush()
            writer.conn.execute("COMMIT")
            writer.conn.close()
        except BaseException as e:
            if writer is not None:
                writer.abort()
            if isinstance(e, sqlite3.Error):  # as the writer process reports it: ingest names the output
                raise WriterError(f"{type(e).__name__}: {e}") from None
            raise
        if _reporter is not None:
            _reporter.flush()
        if not as_bytes:
            return Part.of(model, first_id, summary, temporary.path)
        with open(temporary.path, "rb") as f:
            data = f.read()
        remove_database_files(temporary.path)
        return Part.of(model, first_id, summary, None, data)
    except BaseException:
        if temporary is not None:
            remove_database_files(temporary.path)
        raise
    finally:
        if temporary is not None:
            temporary.release()
        if gc_was_enabled:
            gc.enable()


class _Forwarded(Progress):
    """The parent's own import's progress: its bytes added to the whole ingest's, the workers' taken in too."""

    def __init__(self, progress: Progress, drain: Callable[[], None]) -> None:
        self.progress = progress
        self.drain = drain

    def advanced(self, amount: int) -> None:
        self.progress.advanced(amount)
        self.drain()


class _QueueReporter(Progress):
    """A worker's progress: bytes done, sent to the parent a few times a second."""

    def __init__(self, queue) -> None:
        self.queue = queue
        self.pending = 0
        self.sent_at = 0.0

    def advanced(self, amount: int) -> None:
        self.pending += amount
        if time.monotonic() - self.sent_at >= REPORT_EVERY:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.queue.put(self.pending)
            self.pending = 0
        self.sent_at = time.monotonic()


_reporter: _QueueReporter | None = None  # set in --jobs workers
_ingest_pid: int | None = None  # in --jobs workers: the ingest's, which names their parts' files


def _worker_started(parent_pid: int, queue) -> None:
    global _reporter, _ingest_pid
    die_with_parent(parent_pid)
    _ingest_pid = parent_pid
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the parent's to handle: it stops us
    _reporter = _QueueReporter(queue)


def ingest(
    paths: Sequence[str],
    db_path: str,
    progress: Progress | None = None,
    jobs: int | None = None,
    cluster: str | None = None,
    content: Content = DEFAULT_CONTENT,
) -> list[TraceSummary]:
    """ingest.ingest with the inputs parsed in `jobs` processes (default: one per CPU), or on the Dask
    cluster at `cluster` (a scheduler's address, or "local": a LocalCluster of `jobs` worker processes
    started here). The database is the one ingest.ingest writes. A single input without a cluster is
    imported as ingest.ingest does: its own two-process import (writer, tokenizer helper) is faster. An
    archive's members are traces of their own, as separate files are (one archive: its members' jobs)."""
    if cluster is None and len(paths) == 1 and archive_kind(paths[0]) is None:
        return serial_ingest(paths, db_path, progress, content=content)
    import_inputs = functools.partial(import_in_parallel, jobs=jobs, cluster=cluster, content=content)
    return serial_ingest(paths, db_path, progress, content=content, import_inputs=import_inputs)


def import_in_parallel(
    model: TraceModel,
    inputs: Sequence[TraceInput],
    directory: str,
    progress: Progress,
    jobs: int | None = None,
    cluster: str | None = None,
    content: Content = DEFAULT_CONTENT,
) -> list[TraceSummary]:
    """Imports the traces `inputs` into `model` as a serial ingest would, parsing them in `jobs`
    processes or on the Dask cluster at `cluster`; returns their summaries in input order."""
    sizes = [source.disk_size for source in inputs]
    if cluster is not None:
        workers = f"cluster {cluster}" if cluster != "local" else "a local Dask cluster"
        progress.input_started(f"{len(inputs)} traces on {workers}", sum(sizes))
        return _on_cluster(model, inputs, sizes, directory, progress, cluster, jobs, content)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(inputs)))
    progress.input_started(f"{len(inputs)} traces, {jobs} jobs", sum(sizes))
    return _on_processes(model, inputs, directory, progress, jobs, content)


def _merge(model: TraceModel, source: TraceInput, part: Part, directory: str, content: Content) -> TraceSummary:
    """Absorbs one part (or imports its input here when it cannot be merged); removes its file."""
    written: list[str] = []

    def attach() -> str:
        if part.database is not None:
            return part.database
        with signals_held():  # created and listed as one step: the finally below removes it
            temporary = create_temp_database(directory)
            written.append(temporary.path)
        try:
            with open(temporary.path, "wb") as f:
                f.write(part.data or b"")
        finally:
            temporary.release()
        return temporary.path

    try:
        absorb(model, part, attach)
        return part.summary
    except NotMergeable:
        return import_input(model, source, Progress(), False, content)
    except sqlite3.Error as e:  # writing the merged database (a full disk, ...)
        raise WriterError(f"{type(e).__name__}: {e}") from None
    finally:
        for file in [*written, *([part.database] if part.database else [])]:
            remove_database_files(file)


def _on_processes(
    model: TraceModel, inputs: Sequence[TraceInput], directory: str, progress: Progress, jobs: int, content: Content
) -> list[TraceSummary]:
    if "fork" not in multiprocessing.get_all_start_methods():
        raise IngestError("--jobs needs a platform that can fork (Linux, macOS); use --cluster local")
    context = multiprocessing.get_context("fork")
    queue = context.SimpleQueue()
    executor = ProcessPoolExecutor(jobs, context, initializer=_worker_started, initargs=(os.getpid(), queue))

    def drain() -> None:
        while not queue.empty():
            progress.advanced(queue.get())

    futures: list[Future] = []
    summaries: list[TraceSummary] = []
    try:
        with signals_held():  # the workers are forked here
            futures = [
                executor.submit(import_part, source, i, directory, content) for i, source in enumerate(inputs) if i > 0
            ]
        # The first input is this process's own, as in a serial ingest: it would only wait for the first part
        # otherwise, and that input's rows go to the database once instead of through a part (written and
        # copied). Its own tokenizer helper would be a process too many.
        summaries.append(import_input(model, inputs[0], _Forwarded(progress, drain), False, content))
        for source, future in zip(inputs[1:], futures):
            part = _wait(future.result, drain)
            drain()
            summaries.append(_merge(model, source, part, directory, content))
    except BaseException:
        _stop(executor, futures)
        sweep_abandoned(directory, own=True)  # the parts of the workers just stopped
        raise
    executor.shutdown()
    return summaries


def _wait(result: Callable[[float], Any], idle: Callable[[], None]) -> Any:
    """result(timeout) once it is there, calling idle() while it is not."""
    while True:
        try:
            return result(POLL_SECONDS)
        except (FutureTimeout, TimeoutError):
            idle()


def _stop(executor: ProcessPoolExecutor, futures: list[Future]) -> None:
    """After a failure: the workers killed (their work is thrown away) and the parts made so far removed."""
    # The executor offers no way to stop a running task (Python 3.14's kill_workers() will): its
    # processes, the thread that manages them and its results queue, read before shutdown() forgets them.
    processes = list((getattr(executor, "_processes", None) or {}).values())
    manager = getattr(executor, "_executor_manager_thread", None)
    results = getattr(executor, "_result_queue", None)
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.kill()
    for process in processes:
        process.join()
    # A worker killed while it sent a result leaves part of it in the results pipe, and the managing thread
    # waits in its read for the rest for as long as a write end is open: this process's own is the last (the
    # workers' went with them), and the interpreter's exit would wait on that thread for ever. Closed, the
    # read ends (EOFError: the pool is broken) and the thread with it.
    writer = getattr(results, "_writer", None)
    if writer is not None:
        writer.close()
    if manager is not None:
        # Its end closes the pipe that wakes it. Until then, the interpreter's exit could write to that pipe
        # while it closes: a traceback (OSError, bad file descriptor) printed after the clean exit (Python
        # before 3.12 takes no lock there).
        manager.join(MANAGER_EXIT_SECONDS)
    for future in futures:
        if future.done() and not future.cancelled() and future.exception() is None:
            part = future.result()
            if part.database:
                remove_database_files(part.database)


def _on_cluster(
    model: TraceModel,
    inputs: Sequence[TraceInput],
    sizes: list[int],
    directory: str,
    progress: Progress,
    address: str,
    jobs: int | None,
    content: Content,
) -> list[TraceSummary]:
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise IngestError(f"--cluster needs Dask: {CLUSTER_EXTRA}") from None
    cluster = None
    try:
        if address == "local":
            cluster = LocalCluster(
                n_workers=jobs or os.cpu_count() or 1,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.CRITICAL,
            )
            client = Client(cluster)
        else:
            client = Client(address, timeout=10)
    except (OSError, TimeoutError) as e:
        if cluster is not None:
            cluster.close()
        raise IngestError(f"--cluster {address}: cannot connect to the Dask scheduler: {e}") from None
    try:
        return _run_on(client, model, inputs, sizes, directory, progress, content)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _run_on(client, model, inputs, sizes, directory, progress, content) -> list[TraceSummary]:
    """The inputs as tasks of `client`'s cluster, merged here in input order."""
    futures = client.map(import_part, list(inputs), range(len(inputs)), directory=None, content=content, as_bytes=True)
    reported: set[int] = set()

    def report_done() -> None:  # inputs done, in whatever order they finish
        for i, future in enumerate(futures):
            if i not in reported and future.done():
                reported.add(i)
                progress.advanced(sizes[i])

    summaries: list[TraceSummary] = []
    try:
        for source, future in zip(inputs, futures):
            part = _wait(functools.partial(_result, future), report_done)
            report_done()
            summaries.append(_merge(model, source, part, directory, content))
    finally:
        client.cancel(futures)
    return summaries


def _result(future, timeout: float) -> Any:
    """A Dask future's result, or TimeoutError after `timeout` seconds without it. Polls done() rather than
    passing the timeout to result(): distributed's timed wait can fail with its own UnboundLocalError when
    the timeout and the result race (seen under load)."""
    deadline = time.monotonic() + timeout
    while not future.done():
        if time.monotonic() >= deadline:
            raise TimeoutError
        time.sleep(0.01)
    return future.result()


def parse_jobs(value: str | int | None) -> int | None:
    """--jobs's value: a positive number of processes ("auto" or 0: one per CPU)."""
    if value is None:
        return None
    if str(value).strip().lower() in ("auto", "0"):
        return os.cpu_count() or 1
    try:
        jobs = int(value)
    except ValueError:
        jobs = -1
    if jobs < 1:
        raise IngestError(f"--jobs {value}: expected a positive number of processes (or auto)")
    return jobs


__all__ = ["ingest", "import_part", "import_in_parallel", "parse_jobs", "CLUSTER_EXTRA"]
