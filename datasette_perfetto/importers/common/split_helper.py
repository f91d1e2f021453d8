"""A forked helper process that tokenizes part of one input while the importer tokenizes the rest.

Parsing needs every event in timestamp order, so an import is tokenize-all, then
parse-all; on two cores the tokenize half can be shared. The helper is forked from
the importer before it has read anything, so it starts from the same state; it
reads the input again (`reopen`), tokenizes its share into a Sorter spilling to a
runs folder, and hands the run files back (Sorter.handover / take_over). How the
input is shared is the format's: proto traces by packet sequence
(proto/split_tokenize.py), JSON traces by position in the events array
(json/importer.py).

The helper sends its messages through a pipe: any number of notes, then one
answer. It dies with the importer, and reports a failure instead of raising it:
the importer then does the helper's share itself (SplitFailed).
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import shutil
from collections.abc import Callable
from typing import Any

from ...scratch import OwnedFile, create_runs_folder, die_with_parent, signals_held

# Inputs smaller than this are tokenized by one process; forking costs more.
SPLIT_THRESHOLD_BYTES = 4 << 20

# The helper's sorter spills runs this small, so that little is left to sort and
# write once it has read its share: the importer waits for that.
HELPER_RUN_EVENTS = 25_000

_NOTE, _ANSWER, _FAILED = "note", "ok", "failed"


class SplitFailed(Exception):
    """The helper's share cannot be used (it failed, or the input cannot be shared as planned)."""


def split_wanted(setting: bool | None, size: int) -> bool:
    """Whether to split an input of `size` bytes: `setting` True always, False never, None for
    large inputs; only where processes can be forked."""
    if setting is None:
        setting = size >= SPLIT_THRESHOLD_BYTES
    return setting and "fork" in multiprocessing.get_all_start_methods()


class HelperSide:
    """What the helper's work function is given: the folder for its run files, and a way to
    send the importer a note before its answer."""

    def __init__(self, runs: str, send) -> None:
        self.runs = runs
        self._send = send

    def note(self, value: Any) -> None:
        self._send.send_bytes(pickle.dumps((_NOTE, value), protocol=pickle.HIGHEST_PROTOCOL))


class Helper:
    """The importer's handle on a forked helper running `work(side)`, whose return value
    (picklable) is the answer."""

    def __init__(self, work: Callable[[HelperSide], Any], ctx=None) -> None:
        ctx = ctx or multiprocessing.get_context("fork")
        receive, send = ctx.Pipe(duplex=False)
        runs: OwnedFile | None = None
        process = None
        try:
            # The runs folder (the child's sorted runs, for the importer) is created and held as one step, then
            # the fork: a SIGTERM held over either is raised as this block ends, before the importer holds this
            # helper to stop it.
            with signals_held():
                runs = create_runs_folder()
                process = ctx.Process(
                    target=_helper_main,
                    args=(work, send, runs.path, os.getpid()),
                    daemon=True,
                    name="datasette-perfetto-tokenizer",
                )
                process.start()
        except BaseException:
            if process is not None and process.pid is not None:
                process.kill()
                process.join()
            if runs is not None:
                _remove_runs(runs)
            raise
        self.runs, self.process = runs, process
        send.close()
        self.receive = receive
        self._closed = False

    def _next(self) -> tuple[str, Any]:
        if self._closed:
            raise SplitFailed("the tokenizer helper has already answered")
        try:
            message = pickle.loads(self.receive.recv_bytes())
        except EOFError:
            self.process.join()
            message = (_FAILED, f"exit code {self.process.exitcode}")
        if message[0] != _NOTE:
            self.receive.close()
            self.process.join()
            self._closed = True
        if message[0] == _FAILED:
            self.discard_runs()
            raise SplitFailed(f"the tokenizer helper failed: {message[1]}")
        return message

    def note(self) -> Any:
        """Waits for the helper's next note."""
        kind, value = self._next()
        if kind != _NOTE:
            raise SplitFailed("the tokenizer helper answered without the expected note")
        return value

    def result(self) -> Any:
        """Waits for the helper's answer (its notes not yet read are dropped)."""
        while True:
            kind, value = self._next()
            if kind != _NOTE:
                return value

    def stop(self) -> None:
        """Ends the helper (if still running) and removes its runs."""
        if self.process.is_alive():
            self.process.terminate()
        self.process.join()
        self.receive.close()
        self._closed = True
        self.discard_runs()

    def discard_runs(self) -> None:
        """Removes the runs folder (the importer has opened, and so unlinked, what it takes)."""
        _remove_runs(self.runs)


def _remove_runs(runs: OwnedFile) -> None:
    shutil.rmtree(runs.path, ignore_errors=True)
    runs.release()


def _helper_main(work: Callable[[HelperSide], Any], send, runs: str, parent_pid: int) -> None:
    die_with_parent(parent_pid)
    message: tuple
    try:
        message = (_ANSWER, work(HelperSide(runs, send)))
    except BaseException as e:  # reported; the importer does the helper's share itself
        message = (_FAILED, f"{type(e).__name__}: {e}")
    try:
        send.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
        send.close()
    except OSError:  # the importer is gone: so is any use for the runs
        shutil.rmtree(runs, ignore_errors=True)
    os._exit(0)  # nothing of the parent's (temporary files, the writer pipe) is the child's to clean up


__all__ = ["Helper", "HelperSide", "SplitFailed", "split_wanted", "SPLIT_THRESHOLD_BYTES", "HELPER_RUN_EVENTS"]
