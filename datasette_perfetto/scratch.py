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
from collections.abc import Iterator
from pathlib import Path

DATABASE_PREFIX = ".ingest-"
RUNS_PREFIX = "datasette-perfetto-"
OWNER_LOCK = "owner.lock"  # inside a runs folder

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
    global _forking, _sigterm_pending
    _forking = 0  # forked inside sigterm_held_while_forking: for this process the fork is over
    if _sigterm_pending:
        os._exit(128 + signal.SIGTERM)


# A SIGTERM that arrived while a child process was being forked, raised once the fork is over.
_forking = 0
_sigterm_pending = False


@contextlib.contextmanager
def sigterm_held_while_forking() -> Iterator[None]:
    """Holds SIGTERM's SystemExit (sigterm_raises_system_exit) back while the body forks child processes,
    and raises it after. Raised during a fork, it would come from inside Python's at-fork callbacks (logging's
    lock release), which print it and go on: the import would not stop. Forks happen in the main thread,
    where Python runs signal handlers."""
    global _forking, _sigterm_pending
    _forking += 1
    try:
        yield
    finally:
        _forking -= 1
        if not _forking and _sigterm_pending:
            _sigterm_pending = False
            _exit_on_sigterm(signal.SIGTERM, None)


@contextlib.contextmanager
def sigterm_raises_system_exit() -> Iterator[None]:
    """While the body runs (in the main thread), SIGTERM raises SystemExit(143) where the program is,
    so the ingest's cleanup runs as it does for Ctrl+C. Elsewhere (a thread) it does nothing."""
    try:
        previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    global _sigterm_pending
    if _forking:
        _sigterm_pending = True  # raised once the fork is over (sigterm_held_while_forking)
        return
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not interrupt the cleanup
    raise SystemExit(128 + signal.SIGTERM)


def is_temporary_database(path: Path) -> bool:
    return _DATABASE_NAME.match(path.name) is not None


__all__ = [
    "OwnedFile",
    "sigterm_held_while_forking",
    "create_temp_database",
    "create_runs_folder",
    "remove_database_files",
    "sweep_abandoned",
    "die_with_parent",
    "sigterm_raises_system_exit",
    "is_temporary_database",
]
