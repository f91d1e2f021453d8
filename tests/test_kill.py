"""A killed ingest (SIGKILL or SIGTERM at a random moment) leaves no process, no temporary file and an
existing database intact. SIGTERM cleans up at once, as Ctrl+C does; after SIGKILL the children die
with their parent and the next ingest removes the files the killed one could not."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from shared_data import TRACES

from datasette_perfetto.ingest import ingest
from datasette_perfetto.scratch import RUNS_PREFIX

# Large enough for the writer child and the tokenizer helper; and their slices.
BIG_TRACES = {TRACES / "chrome_startup.pftrace": 136_512, TRACES / "chrome_startup.json.gz": 142_382}
RUNS = 3  # per signal
rng = random.Random("kill-test")
MOMENTS = {sig: [rng.uniform(0.4, 2.0) for _ in range(RUNS)] for sig in ("SIGKILL", "SIGTERM")}


def group_processes(pgid: int) -> list[int]:
    """Live (not zombie) processes of the process group."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            found.append(int(entry.name))
    return found


def leftovers(folder: Path, pid: int) -> list[str]:
    mine = [p.name for p in folder.iterdir() if p.name.startswith(f".ingest-{pid}-")]
    runs = [p for p in os.listdir(tempfile.gettempdir()) if p.startswith(f"{RUNS_PREFIX}{pid}-")]
    return mine + runs


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def existing(tmp_path, demo_db) -> Path:
    out = tmp_path / "out.db"
    out.write_bytes(Path(demo_db.path).read_bytes())
    return out


@pytest.mark.skipif(not all(p.is_file() for p in BIG_TRACES), reason="needs the shared chrome_startup traces")
@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs /proc to find the child processes")
@pytest.mark.parametrize("trace", list(BIG_TRACES), ids=lambda p: p.name)
@pytest.mark.parametrize(
    "sig,moment", [(sig, moment) for sig, moments in MOMENTS.items() for moment in moments], ids=str
)
def test_killed_ingest_leaves_nothing_behind(tmp_path, existing, demo_trace, trace, sig, moment):
    before = digest(existing)
    command = [sys.executable, "-m", "datasette", "perfetto", "ingest", "-q", str(trace), "-o", str(existing)]
    process = subprocess.Popen(command, start_new_session=True, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(moment)
        process.send_signal(getattr(signal, sig))
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    if process.returncode == 0:
        pytest.skip(f"the ingest finished before {moment:.2f} s")  # a slow machine: nothing was killed
    deadline = time.monotonic() + 10
    while group_processes(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group_processes(process.pid) == [], "a child process outlived the killed ingest"
    if digest(existing) != before:
        # The kill came after the finished database was renamed into place: it is the whole new one.
        conn = sqlite3.connect(existing)
        try:
            assert conn.execute("SELECT count(*) FROM slice").fetchone()[0] == BIG_TRACES[trace]
        finally:
            conn.close()
        assert leftovers(tmp_path, process.pid) == []
        pytest.skip(f"the ingest had finished at {moment:.2f} s (only its exit was interrupted)")
    if sig == "SIGTERM":
        # -SIGTERM: it arrived while Python was still starting, before the ingest created anything.
        assert process.returncode in (128 + signal.SIGTERM, -signal.SIGTERM), stderr
        assert "Traceback" not in stderr
        assert leftovers(tmp_path, process.pid) == []
    else:
        assert process.returncode == -signal.SIGKILL
        ingest([str(demo_trace)], str(tmp_path / "next.db"))  # the next ingest in the folder
        assert leftovers(tmp_path, process.pid) == []
    assert digest(existing) == before


def test_a_temporary_database_of_a_live_ingest_is_not_swept(tmp_path, demo_trace):
    """Only files whose owner is gone are removed: a live owner (here: this process) keeps its file."""
    from datasette_perfetto.scratch import create_temp_database, sweep_abandoned

    live = create_temp_database(str(tmp_path))
    try:
        assert sweep_abandoned(str(tmp_path)) == []
        assert os.path.exists(live.path)
    finally:
        live.release()
        os.unlink(live.path)


def test_a_temporary_database_of_a_dead_owner_is_swept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    stale = tmp_path / f".ingest-{pid}-abcd1234.db"
    stale.write_bytes(b"half a database")
    journal = tmp_path / f".ingest-{pid}-abcd1234.db-journal"
    journal.write_bytes(b"")
    unrelated = tmp_path / ".ingest-notapid.db"  # not ours to judge
    unrelated.write_bytes(b"")
    from datasette_perfetto.scratch import sweep_abandoned

    assert str(stale) in sweep_abandoned(str(tmp_path))
    assert not stale.exists() and not journal.exists() and unrelated.exists()


def test_output_that_is_an_input_is_refused(tmp_path, demo_trace):
    trace = tmp_path / "in.pftrace"
    trace.write_bytes(demo_trace.read_bytes())
    result = subprocess.run(
        [sys.executable, "-m", "datasette", "perfetto", "ingest", str(trace), "-o", str(trace)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"Error: {trace}: the output is one of the input traces; choose another output file"
    ]
    assert trace.read_bytes() == demo_trace.read_bytes()


def test_a_sigterm_while_forking_is_delivered_after_the_fork():
    """Arriving during a fork, SIGTERM's SystemExit would be raised inside Python's at-fork callbacks,
    which print it and go on: it is held back until the fork is over, and the children do not hold it."""
    from datasette_perfetto import scratch
    from datasette_perfetto.importers.common.split_helper import Helper

    reached = []
    with pytest.raises(SystemExit) as raised:
        with scratch.sigterm_raises_system_exit():
            with scratch.signals_held():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
                reached.append("end of the fork")
    assert reached == ["end of the fork"] and raised.value.code == 128 + signal.SIGTERM

    with scratch.signals_held():
        helper = Helper(lambda side: scratch._held)
    assert helper.result() == 0  # the child's SIGTERM is not held
    assert scratch._held == 0 and scratch._pending is None


def test_a_sigterm_held_over_a_tokenizer_helper_fork_leaves_no_helper_and_no_runs(monkeypatch):
    """Raised once the fork is over, inside Helper(): the importer holds no helper to stop yet, so Helper()
    itself ends the child and removes its runs folder."""
    import multiprocessing.process

    from datasette_perfetto import scratch
    from datasette_perfetto.importers.common.split_helper import Helper

    start = multiprocessing.process.BaseProcess.start
    started = []

    def signalled_start(process):
        os.kill(os.getpid(), signal.SIGTERM)  # held: the fork goes on
        time.sleep(0.05)
        start(process)
        started.append(process)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", signalled_start)
    before = set(os.listdir(tempfile.gettempdir()))
    with pytest.raises(SystemExit):
        with scratch.sigterm_raises_system_exit():
            Helper(lambda side: time.sleep(30))
    assert len(started) == 1 and not started[0].is_alive()
    runs = [p for p in set(os.listdir(tempfile.gettempdir())) - before if p.startswith(f"{RUNS_PREFIX}{os.getpid()}-")]
    assert runs == []
    assert scratch._held == 0 and scratch._pending is None


def test_a_sigterm_held_over_the_report_tables_helper_fork_leaves_nothing(tmp_path, demo_db, monkeypatch):
    """derived.py's helper, forked while the derived tables are built: the SIGTERM is raised in the writer once
    the fork is over (the child exits at once), which removes the scratch files and reaps the child."""
    from test_derived import leftovers as scratch_files
    from test_derived import reaped, rebuilt

    from datasette_perfetto import scratch

    fork = os.fork
    forked = []

    def signalled_fork():
        os.kill(os.getpid(), signal.SIGTERM)  # held: the fork goes on
        time.sleep(0.05)
        pid = fork()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", signalled_fork)
    with pytest.raises(SystemExit):
        with scratch.sigterm_raises_system_exit():
            rebuilt(Path(demo_db.path), tmp_path / "copy.db", split=True)
    assert len(forked) == 1 and reaped(forked[0])
    assert scratch_files(tmp_path) == []
    assert scratch._held == 0 and scratch._pending is None


def signalled_after(function):
    """`function`, with a SIGTERM arriving as it returns: the handler runs at the caller's next check, before
    the caller can bind what it returned unless it holds signals."""

    def call(*args, **kwargs):
        result = function(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler runs here when nothing holds it
        return result

    return call


def test_a_sigterm_as_the_temporary_database_is_created_leaves_no_file(tmp_path, demo_trace, monkeypatch):
    """Created, then a SIGTERM before `_ingest` held the file: it was left behind (seen once in this file's
    kill test, at 1.40 s into an import)."""
    from datasette_perfetto import ingest as ingest_module
    from datasette_perfetto import scratch

    monkeypatch.setattr(ingest_module, "create_temp_database", signalled_after(ingest_module.create_temp_database))
    with pytest.raises(SystemExit):
        with scratch.sigterm_raises_system_exit():
            ingest([str(demo_trace)], str(tmp_path / "out.db"))
    assert os.listdir(tmp_path) == []
    assert scratch._held == 0 and scratch._pending is None


@pytest.mark.parametrize("step", ["create", "add_containers", "finish"])
def test_a_sigterm_at_any_step_of_an_ingest_leaves_no_file(tmp_path, demo_trace, monkeypatch, step):
    """Each step from the temporary database to its rename is inside the ingest's cleanup (the containers
    were once added outside it)."""
    from datasette_perfetto import scratch
    from datasette_perfetto.model import TraceModel

    real = getattr(TraceModel, step)
    if step == "create":
        monkeypatch.setattr(TraceModel, step, classmethod(lambda cls, *a: signalled_after(real)(*a)))
    else:
        monkeypatch.setattr(TraceModel, step, lambda self, *a: signalled_after(real)(self, *a))
    with pytest.raises(SystemExit):
        with scratch.sigterm_raises_system_exit():
            ingest([str(demo_trace)], str(tmp_path / "out.db"), separate_writer=True)
    assert os.listdir(tmp_path) == []
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("fmt", ["proto", "json"])
def test_a_sigterm_as_a_tokenizer_helper_starts_leaves_no_helper_and_no_runs(tmp_path, demo_trace, monkeypatch, fmt):
    """Forked, then a SIGTERM before the importer held the helper: its runs folder was left, and its process
    ran on until the parent exited."""
    from datasette_perfetto import scratch
    from datasette_perfetto.importers.json import importer as json_importer
    from datasette_perfetto.importers.proto import importer as proto_importer

    if fmt == "proto":
        monkeypatch.setattr(proto_importer, "start_helper", signalled_after(proto_importer.start_helper))
        trace = demo_trace
    else:
        monkeypatch.setattr(json_importer, "Helper", signalled_after(json_importer.Helper))
        trace = tmp_path / "trace.json"
        events = [{"ph": "X", "name": f"s{i}", "ts": i, "dur": 1, "pid": 1, "tid": 1} for i in range(2000)]
        trace.write_text(json.dumps({"traceEvents": events}))
    before = set(os.listdir(tempfile.gettempdir()))
    with pytest.raises(SystemExit):
        with scratch.sigterm_raises_system_exit():
            ingest([str(trace)], str(tmp_path / "out.db"), split_tokenize=True)
    runs = [p for p in set(os.listdir(tempfile.gettempdir())) - before if p.startswith(f"{RUNS_PREFIX}{os.getpid()}-")]
    assert runs == []
    assert multiprocessing.active_children() == []
    assert [p for p in os.listdir(tmp_path) if p.startswith(".ingest-")] == []


@pytest.mark.parametrize("sig,raised", [(signal.SIGTERM, SystemExit), (signal.SIGINT, KeyboardInterrupt)])
def test_a_signal_during_a_held_call_is_raised_after_it(sig, raised):
    """upb's UnknownFieldSet runs Python (a namedtuple) while it builds its entries, and an exception a signal
    handler raises there crashes the interpreter (a SIGTERM killed ingests with SIGSEGV): unknown_fields holds
    SIGTERM and Ctrl+C until it is built, and raises them after."""
    from datasette_perfetto import scratch
    from datasette_perfetto.importers.proto.unknown import unknown_fields

    built = []

    def signalled(message):
        os.kill(os.getpid(), sig)
        time.sleep(0.05)  # the handler has run by now, and held the signal
        built.extend((f.field_number, f.data) for f in unknown_fields(message))

    message = pb.TrackEvent.FromString(pb.TrackEvent(name="x").SerializeToString() + b"\xa0\x1f\x07")
    with pytest.raises(raised):
        with scratch.sigterm_raises_system_exit():
            scratch.call_with_signals_held(signalled, message)
    assert built == [(500, 7)]  # the call completed, then the signal was raised
    assert scratch._held == 0 and scratch._pending is None


def test_aborting_a_writer_whose_sigterm_is_lost_kills_it(tmp_path, monkeypatch):
    """A SIGTERM landing just before the writer child blocks reading its pipe runs Python's handler only once
    the read returns, which it never does: the parent waited for it forever (a hung `./dev test`, in
    test_a_sigterm_at_any_step_of_an_ingest_leaves_no_file on a loaded machine). Here the child's handler
    returns without acting, as in that race: abort() kills it after the grace period."""
    import threading

    from datasette_perfetto import writer

    real_serve = writer._serve

    def serve_ignoring_sigterm(*args):
        signal.signal(signal.SIGTERM, lambda signum, frame: None)
        real_serve(*args)

    monkeypatch.setattr(writer, "_serve", serve_ignoring_sigterm)
    monkeypatch.setattr(writer, "STOP_GRACE_SECONDS", 0.2)
    child = writer.WriterProcess(str(tmp_path / "out.db"))
    child.query("SELECT 1")  # the child is up, reading its pipe
    stopper = threading.Thread(target=child.abort, daemon=True)
    stopper.start()
    stopper.join(30)
    assert not stopper.is_alive(), "abort() still waiting for the writer child"
    assert child.process.exitcode == -signal.SIGKILL
    assert multiprocessing.active_children() == []
