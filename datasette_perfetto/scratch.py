"""Temporary files and child processes of an ingest, and what happens to them when it is killed.

An ingest writes its database to `.ingest-<pid>-*.db` beside the output and the tokenizer
helper's sorted runs to a `datasette-perfetto-<pid>-*` folder in the system temp folder.
Each is created with an owner lock (`flock`) held by the ingest and inherited by its
children, so a later ingest can prove one abandoned: its owner's pid is gone and nobody
holds the lock. `sweep_abandoned` removes those; a run that is killed outright (SIGKILL)
leaves its files only until the next ingest. Children call `die_with_parent` first thing,
so none outlives the ingest that forked it, and SIGTERM is turned into SystemExit so a
terminated run cleans up as an interrupted one does.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

DATABASE_PREFIX = ".ingest-"
RUNS_PREFIX = "datasette-perfetto-"
OWNER_LOCK = "owner.lock"  # inside a runs folder
T = TypeVar("T")

_DATABASE_NAME = re.compile(rf"^{re.escape(DATABASE_PREFIX)}(\d+)-[^/]*\.db$")
_RUNS_NAME = re.compile(rf"^{re.escape(RUNS_PREFIX)}(\d+)-[^/]*$")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class OwnedFile:
    """A temporary file created with its owner lock held; `release()` drops the lock (not the file)."""

    def __init__(self, path: str, lock_fd: int) -> None:
        self.path = path
        self._lock_fd: int | None = lock_fd

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor drops the flock
            self._lock_fd = None


def create_temp_database(directory: str, owner_pid: int | None = None) -> OwnedFile:
    """An empty `.ingest-<pid>-*.db` in `directory`, owner-locked; OSError when it cannot be created.
    `owner_pid` names the ingest it belongs to when a child creates it (a parallel ingest's job):
    the file is then swept once that ingest is gone."""
    pid = os.getpid() if owner_pid is None else owner_pid
    fd, path = tempfile.mkstemp(prefix=f"{DATABASE_PREFIX}{pid}-", suffix=".db", dir=directory)
    fcntl.flock(fd, fcntl.LOCK_EX)  # SQLite's own locks are fcntl locks: independent of this one
    return OwnedFile(path, fd)


def create_runs_folder() -> OwnedFile:
    """A `datasette-perfetto-<pid>-*` folder in the system temp folder, owner-locked."""
    folder = tempfile.mkdtemp(prefix=f"{RUNS_PREFIX}{os.getpid()}-")
    fd = os.open(os.path.join(folder, OWNER_LOCK), os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return OwnedFile(folder, fd)


def remove_database_files(path: str) -> None:
    """A database file and SQLite's files beside it, where they exist."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)


def sweep_abandoned(directory: str, own: bool = False) -> list[str]:
    """Removes the temporary databases in `directory` and the runs folders in the system temp
    folder whose ingest is provably gone; returns what it removed. Never raises for a file it
    cannot inspect or remove: sweeping is a courtesy, not part of the import. With `own`, also
    this process's files that nobody holds (its stopped children's, after a failure)."""
    removed = []
    for folder, pattern, is_database in (
        (directory, _DATABASE_NAME, True),
        (tempfile.gettempdir(), _RUNS_NAME, False),
    ):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            match = pattern.match(name)
            pid = int(match.group(1)) if match else 0
            if match is None or (_pid_alive(pid) and not (own and pid == os.getpid())):
                continue
            path = os.path.join(folder, name)
            lock_path = path if is_database else os.path.join(path, OWNER_LOCK)
            try:
                with _unowned(lock_path):
                    if is_database:
                        remove_database_files(path)
                    else:
                        shutil.rmtree(path)
            except OSError:
                continue
            removed.append(path)
    return removed


@contextlib.contextmanager
def _unowned(lock_path: str) -> Iterator[None]:
    """Holds the owner lock of `lock_path` while the body runs; BlockingIOError when someone holds it.
    A runs folder whose lock file was never made (killed in between) has no owner either."""
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except FileNotFoundError:
        if os.path.basename(lock_path) != OWNER_LOCK:
            raise
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def die_with_parent(parent_pid: int) -> None:
    """In a forked child: be killed when the parent dies (Linux's parent-death signal), and
    exit now if it already has. Elsewhere the children notice the closed pipe instead."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:
        os._exit(1)
    global _held
    _held = 0  # forked inside signals_held: for this process the fork is over
    if _pending is not None:
        os._exit(128 + _pending)


# Signals held back: while _held > 0, the first SIGTERM or Ctrl+C to arrive is kept in _pending and raised
# when the last hold ends. Two kinds of code must not see an exception from a signal handler: a fork (raised
# inside Python's at-fork callbacks, it is printed and the import goes on), and C code that runs Python
# without checking for errors (upb's UnknownFieldSet builds its entries with a namedtuple: an exception raised
# there crashes the interpreter).
_held = 0
_pending: int | None = None


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Holds SIGTERM's SystemExit and Ctrl+C's KeyboardInterrupt (sigterm_raises_system_exit) back while the
    body runs, and raises the first that arrived after it. Forks happen in the main thread, where Python runs
    signal handlers; the forked children do not hold what their parent held (die_with_parent)."""
    global _held
    _held += 1
    try:
        yield
    finally:
        _release()


def call_with_signals_held(function: Callable[..., T], *args: Any) -> T:
    """function(*args) with signals held (signals_held), at a function call's cost: for per-event calls."""
    global _held
    _held += 1
    try:
        return function(*args)
    finally:
        _release()


def _release() -> None:
    """Ends one hold; the last one raises the signal that arrived during it, if any."""
    global _held, _pending
    _held -= 1
    if not _held and _pending is not None:
        signum, _pending = _pending, None
        _on_signal(signum, None)


@contextlib.contextmanager
def sigterm_raises_system_exit() -> Iterator[None]:
    """While the body runs (in the main thread), SIGTERM raises SystemExit(143) where the program is, so the
    ingest's cleanup runs as it does for Ctrl+C (KeyboardInterrupt, as Python raises it), unless held
    (signals_held). Elsewhere (a thread) it does nothing."""
    try:
        previous = signal.signal(signal.SIGTERM, _on_signal)
    except ValueError:  # not the main thread
        yield
        return
    previous_interrupt = signal.getsignal(signal.SIGINT)
    own_interrupt = previous_interrupt is signal.default_int_handler
    if own_interrupt:
        signal.signal(signal.SIGINT, _on_signal)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if own_interrupt:
            signal.signal(signal.SIGINT, previous_interrupt)


def _on_signal(signum: int, frame: object) -> None:
    global _pending
    if _held:
        if _pending is None:
            _pending = signum  # raised once the hold is over
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not interrupt the cleanup
    raise SystemExit(128 + signal.SIGTERM)


def is_temporary_database(path: Path) -> bool:
    return _DATABASE_NAME.match(path.name) is not None


__all__ = [
    "OwnedFile",
    "signals_held",
    "call_with_signals_held",
    "create_temp_database",
    "create_runs_folder",
    "remove_database_files",
    "sweep_abandoned",
    "die_with_parent",
    "sigterm_raises_system_exit",
    "is_temporary_database",
]
