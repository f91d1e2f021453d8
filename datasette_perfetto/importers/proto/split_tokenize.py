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

A sequence whose events leave nothing for the next one (no delta timestamps
or thread times, no incremental counters: the usual converter-written trace,
often all on one sequence) is shared instead: its events go to the two
processes by turns of 1,024 packets of the file (SHARE_TURN_SHIFT). An event of a shared
sequence that does use such state after all ends the split (`not_shareable`):
the import is done again in one process.

Everything else is the importer's alone: the helper counts no stats and
queues no events but the track events it owns.
"""

from __future__ import annotations

import mmap
import multiprocessing
from collections.abc import Callable
from typing import BinaryIO, Protocol

from google.protobuf.message import DecodeError
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TrackEvent

from ...stats import Stats
from ..common.sorter import Sorter
from ..common.split_helper import HELPER_RUN_EVENTS, Helper, HelperSide, SplitFailed, split_wanted

MAIN, HELPER, SHARED = 0, 1, 2

# A shared sequence's track events are tokenized by each process in turn, this many packets of the file at a time
# (long enough turns that each process's decode cache sees runs of the sequence's events).
SHARE_TURN_SHIFT = 10
# TrackEvent fields whose use at a sequence's first event keeps the sequence whole: the state they leave is the
# next event's.
_ORDER_DEPENDENT = (
    "timestamp_delta_us",
    "thread_time_delta_us",
    "thread_time_absolute_us",
    "thread_instruction_count_delta",
    "thread_instruction_count_absolute",
)


# Distinct sequences (with track events) the claims table holds; beyond, the
# import falls back to one process.
CLAIM_SLOTS = 1 << 16


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
        self._memory = mmap.mmap(-1, CLAIM_SLOTS * 9 + 1)
        view = memoryview(self._memory)
        self._keys = view[: CLAIM_SLOTS * 8].cast("Q")
        self._owners = view[CLAIM_SLOTS * 8 : CLAIM_SLOTS * 9]
        self._failed = view[CLAIM_SLOTS * 9 :]  # set by the process that found the split impossible
        self._lock = ctx.Lock()

    @property
    def failed(self) -> bool:
        """Whether either process found the split impossible (each checks now and then, and stops)."""
        return self._failed[0] != 0

    def fail(self) -> None:
        self._failed[0] = 1

    def claim(self, seq_id: int, process: int, shareable: bool = False) -> int:
        """The owner of `seq_id` (SHARED if the first to claim it found it `shareable`): `process`, unless
        the other one claimed it first."""
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
                    self._owners[slot] = owner = SHARED if shareable else process
                    return owner
                slot = (slot + 1) % CLAIM_SLOTS
        finally:
            self._lock.release()
        raise SplitFailed(f"more than {CLAIM_SLOTS} sequences")


class SequenceSplit:
    """This process's side of the split: its role, and the claims it shares with
    the other. The answer is kept in SequenceState.split_owner."""

    __slots__ = ("role", "claims", "reservations")

    def __init__(self, role: int, claims: SequenceClaims, reservations: dict) -> None:
        self.role = role
        self.claims = claims
        self.reservations = reservations  # the importer's tracks by uuid (whether a counter is incremental)

    def owner(self, seq, event: bytes) -> int:
        """Called at the first track event of `seq` this process sees (`event`: its bytes)."""
        seq.split_owner = self.claims.claim(seq.seq_id, self.role, shareable(seq, event, self.reservations))
        return seq.split_owner

    def pin_to_main(self, seq) -> None:
        """For a sequence whose other packets share state with its track events
        (streaming profile samples continue their delta timestamps): only the
        importer sees those packets, so it must own the sequence. A shared one's
        events use no delta timestamps (not_shareable), so its samples are the importer's alone."""
        if seq.split_owner is None:
            seq.split_owner = self.claims.claim(seq.seq_id, MAIN)
        if seq.split_owner == HELPER:
            raise SplitFailed(f"sequence {seq.seq_id} mixes helper-owned track events with profile samples")


def shareable(seq, event: bytes, reservations: dict) -> bool:
    """Whether a sequence's track events may be tokenized by turns: at its first event (`event`: its bytes),
    no state one event leaves for the next in sight, in the event (a counter value: on a track known
    not to be incremental) or in the sequence's defaults. (Delta baselines a thread descriptor sets say
    nothing: it sets them, zero, also for events with none.)"""
    if seq.default_extra_counter_uuids or seq.default_extra_double_counter_uuids:
        return False
    try:
        first = TrackEvent.FromString(event)
    except DecodeError:
        return False
    if first.extra_counter_values or first.extra_double_counter_values:
        return False
    if first.HasField("counter_value") or first.HasField("double_counter_value"):
        track = reservations.get(first.track_uuid if first.HasField("track_uuid") else seq.default_track_uuid)
        if track is None or track.counter is None or track.counter.is_incremental:
            return False
    return not any(first.HasField(name) for name in _ORDER_DEPENDENT)


def not_shareable(seq) -> None:
    """Called where a track event uses what an earlier event of its sequence left (a delta timestamp or
    thread time, an incremental counter): fails the split if the sequence is tokenized by turns."""
    if seq.split_owner == SHARED:
        raise SplitFailed(f"sequence {seq.seq_id}'s track events depend on earlier ones: tokenized in one process")


class OwnedContext:
    """What tokenize_track_event reads from its importer, with stats of its own:
    the helper reports only what its owned events counted."""

    __slots__ = ("stats", "clocks", "reservations", "counter_specs", "profiles", "extensions")

    def __init__(self, importer) -> None:
        self.stats = Stats()
        self.clocks = importer.clocks
        self.reservations = importer.reservations
        self.counter_specs = importer.counter_specs
        self.profiles = importer.profiles  # interned callstacks of track events
        self.extensions = importer.extensions  # TrackEvent extension fields known so far


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

    def work(side: HelperSide) -> tuple:
        sorter: Sorter[tuple] = Sorter(HELPER_RUN_EVENTS, spill_dir=side.runs)
        importer.become_helper(claims, sorter)
        with reopen() as stream:
            importer.tokenize_all(stream)
        paths, count = sorter.handover()
        stats, misses = importer.helper_share()
        return stats.single, stats.indexed, misses, paths, count

    return HelperHandle(work, ctx), claims


class HelperHandle(Helper):
    def result(self) -> tuple[Stats, int, list[str], int]:
        """Waits for the helper: (stats its events counted, interned lookups it missed,
        its sorted run files, events in them)."""
        single, indexed, misses, paths, count = super().result()
        stats = Stats()
        stats.single, stats.indexed = single, indexed
        return stats, misses, paths, count


__all__ = [
    "SequenceClaims",
    "SequenceSplit",
    "SplitTokenizer",
    "OwnedContext",
    "SplitFailed",
    "start_helper",
    "split_wanted",
    "shareable",
    "not_shareable",
    "MAIN",
    "HELPER",
    "SHARED",
    "SHARE_TURN_SHIFT",
]
