"""Tokenizing one proto trace in two processes, split by packet sequence.

Decoding track events is most of the time a proto import takes, and each
sequence's events depend only on that sequence's state (interned data,
delta timestamps, incremental counters). So a forked helper reads the same
file and tokenizes the track events of some sequences while the importer
does the rest; the importer then merges the helper's sorted events into its
own sorter. Both processes apply every packet's effect on shared state
(clocks, track descriptors, sequence state); which sequences are whose is
settled in a small shared table (SequenceClaims). Each event's sort key
carries its packet's position in the file, so the merged order is the order
one process would have produced, whoever tokenized what.

Everything else is the importer's alone: the helper counts no stats and
queues no events but the track events it owns.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import pickle
import shutil
from collections.abc import Callable
from typing import BinaryIO, Protocol

from ...scratch import OwnedFile, create_runs_folder, die_with_parent
from ...stats import Stats
from ..common.sorter import Sorter

# Files smaller than this are tokenized by one process; forking costs more.
SPLIT_THRESHOLD_BYTES = 4 << 20

MAIN, HELPER = 0, 1


class SplitFailed(Exception):
    """The split import cannot give the single-process result (helper failure or a
    sequence whose state both processes need); the caller imports again without it."""


# Distinct sequences (with track events) the claims table holds; beyond, the
# import falls back to one process.
CLAIM_SLOTS = 1 << 16

# The helper's sorter spills runs this small, so that little is left to sort and
# write once it has read the file: the importer waits for that.
HELPER_RUN_EVENTS = 25_000


class SequenceClaims:
    """Which process tokenizes each sequence's track events, shared by both.

    The first process to reach a sequence's first track event claims it: that
    process is ahead in the file, so it has the time to spare, and a process
    slowed by a busy sequence leaves the next new ones to the other. Who owns
    what changes only which process does the work, never the result.

    A hash table of seq id + 1 -> owner in anonymous shared memory (inherited
    through fork), with linear probing; claims are rare (once per sequence
    per process), so a lock around each costs nothing.
    """

    def __init__(self, ctx) -> None:
        self._memory = mmap.mmap(-1, CLAIM_SLOTS * 9)
        view = memoryview(self._memory)
        self._keys = view[: CLAIM_SLOTS * 8].cast("Q")
        self._owners = view[CLAIM_SLOTS * 8 :]
        self._lock = ctx.Lock()

    def claim(self, seq_id: int, process: int) -> int:
        """The owner of `seq_id`: `process`, unless the other one claimed it first."""
        key = seq_id + 1
        if not self._lock.acquire(timeout=30):
            raise SplitFailed("the other tokenizer process holds the sequence claims")
        try:
            slot = (key * 0x9E3779B1) % CLAIM_SLOTS
            for _ in range(CLAIM_SLOTS):
                found = self._keys[slot]
                if found == key:
                    return self._owners[slot]
                if found == 0:
                    self._keys[slot] = key
                    self._owners[slot] = process
                    return process
                slot = (slot + 1) % CLAIM_SLOTS
        finally:
            self._lock.release()
        raise SplitFailed(f"more than {CLAIM_SLOTS} sequences")


class SequenceSplit:
    """This process's side of the split: its role, and the claims it shares with
    the other. The answer is kept in SequenceState.split_owner."""

    __slots__ = ("role", "claims")

    def __init__(self, role: int, claims: SequenceClaims) -> None:
        self.role = role
        self.claims = claims

    def owner(self, seq) -> int:
        """Called at the first track event of `seq` this process sees."""
        seq.split_owner = self.claims.claim(seq.seq_id, self.role)
        return seq.split_owner

    def pin_to_main(self, seq) -> None:
        """For a sequence whose other packets share state with its track events
        (streaming profile samples continue their delta timestamps): only the
        importer sees those packets, so it must own the sequence."""
        if seq.split_owner is None:
            seq.split_owner = self.claims.claim(seq.seq_id, MAIN)
        if seq.split_owner != MAIN:
            raise SplitFailed(f"sequence {seq.seq_id} mixes helper-owned track events with profile samples")


class OwnedContext:
    """What tokenize_track_event reads from its importer, with stats of its own:
    the helper reports only what its owned events counted."""

    __slots__ = ("stats", "clocks", "reservations", "counter_specs", "profiles")

    def __init__(self, importer) -> None:
        self.stats = Stats()
        self.clocks = importer.clocks
        self.reservations = importer.reservations
        self.counter_specs = importer.counter_specs
        self.profiles = importer.profiles  # interned callstacks of track events


class SplitTokenizer(Protocol):
    """The importer as the helper process uses it (ProtoImporter)."""

    def become_helper(self, claims: SequenceClaims, sorter: Sorter) -> None:
        """From now on: tokenize only the track events of the sequences the helper owns, into `sorter`."""

    def tokenize_all(self, stream: BinaryIO) -> None:
        """Reads the whole file."""

    def helper_share(self) -> tuple[Stats, int]:
        """After tokenize_all: (stats its own events counted, interned lookups it missed)."""
        raise NotImplementedError


def start_helper(importer: SplitTokenizer, reopen: Callable[[], BinaryIO]) -> tuple[HelperHandle, SequenceClaims]:
    """Forks the helper for `importer` (which has read nothing yet), reading the file `reopen`
    opens; returns it and the claims they share."""
    ctx = multiprocessing.get_context("fork")
    claims = SequenceClaims(ctx)
    receive, send = ctx.Pipe(duplex=False)
    runs = create_runs_folder()  # the child's sorted runs, for the parent
    process = ctx.Process(
        target=_helper_main,
        args=(importer, reopen, claims, send, runs.path, os.getpid()),
        daemon=True,
        name="datasette-perfetto-tokenizer",
    )
    process.start()
    send.close()
    return HelperHandle(process, receive, runs), claims


def split_wanted(setting: bool | None, size: int) -> bool:
    """Whether to split a file of `size` bytes: `setting` True always, False never, None
    for large files; only where processes can be forked."""
    if setting is None:
        setting = size >= SPLIT_THRESHOLD_BYTES
    return setting and "fork" in multiprocessing.get_all_start_methods()


class HelperHandle:
    def __init__(self, process, receive, runs: OwnedFile) -> None:
        self.process = process
        self.receive = receive
        self.runs = runs

    def result(self) -> tuple[Stats, int, list[str], int]:
        """Waits for the helper: (stats its events counted, interned lookups it missed,
        its sorted run files, events in them)."""
        try:
            answer = pickle.loads(self.receive.recv_bytes())
        except EOFError:
            answer = ("failed", f"exit code {self.process.exitcode}")
        finally:
            self.receive.close()
            self.process.join()
        if answer[0] == "failed":
            self.discard_runs()
            raise SplitFailed(f"the tokenizer helper failed: {answer[1]}")
        _, single, indexed, misses, paths, count = answer
        stats = Stats()
        stats.single, stats.indexed = single, indexed
        return stats, misses, paths, count

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join()
        self.receive.close()
        self.discard_runs()

    def discard_runs(self) -> None:
        """Removes the runs folder (the importer has opened, and so unlinked, what it takes)."""
        shutil.rmtree(self.runs.path, ignore_errors=True)
        self.runs.release()


def _helper_main(
    importer: SplitTokenizer, reopen: Callable[[], BinaryIO], claims: SequenceClaims, send, runs: str, parent_pid: int
) -> None:
    die_with_parent(parent_pid)
    answer: tuple
    try:
        sorter: Sorter[tuple] = Sorter(HELPER_RUN_EVENTS, spill_dir=runs)
        importer.become_helper(claims, sorter)
        with reopen() as stream:
            importer.tokenize_all(stream)
        paths, count = sorter.handover()
        stats, misses = importer.helper_share()
        answer = ("ok", stats.single, stats.indexed, misses, paths, count)
    except BaseException as e:  # reported; the parent imports again without the helper
        answer = ("failed", f"{type(e).__name__}: {e}")
    try:
        send.send_bytes(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
        send.close()
    except OSError:  # the importer is gone: so is any use for the runs
        shutil.rmtree(runs, ignore_errors=True)
    os._exit(0)  # nothing of the parent's (temporary files, the writer pipe) is the child's to clean up


__all__ = [
    "SequenceClaims",
    "SequenceSplit",
    "SplitTokenizer",
    "OwnedContext",
    "SplitFailed",
    "start_helper",
    "split_wanted",
    "MAIN",
    "HELPER",
]
