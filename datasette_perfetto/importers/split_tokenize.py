"""Tokenizing one proto trace in two processes, split by packet sequence.

Decoding track events is most of the time a proto import takes, and each
sequence's events depend only on that sequence's state (interned data,
delta timestamps, incremental counters). So a forked helper reads the same
file and tokenizes the track events of some sequences while the importer
does the rest; the importer then merges the helper's sorted events into its
own sorter. Both processes apply every packet's effect on shared state
(clocks, track descriptors, sequence state) and decide which sequences are
whose by the same rule over the same packet stream, so they agree without
talking. Each event's sort key carries its packet's position in the file,
so the merged order is the order one process would have produced.

Everything else is the importer's alone: the helper counts no stats and
queues no events but the track events it owns.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import tempfile
from typing import Optional
from ..stats import Stats

# Files smaller than this are tokenized by one process; forking costs more.
SPLIT_THRESHOLD_BYTES = 4 << 20

MAIN, HELPER = 0, 1


class SplitFailed(Exception):
    """The split import cannot give the single-process result (helper failure or a
    sequence whose state both processes need); the caller imports again without it."""


# A new sequence goes to the helper while its share of the track events so far,
# scaled by this, is below the importer's: the importer also handles every
# other packet, and the helper's sorted events cost it a merge at the end.
HELPER_WEIGHT = 0.8


class SequenceSplit:
    """Which process tokenizes each sequence's track events.

    A sequence is given, when its first track event is seen, to whichever
    process has so far been given less (SequenceState.split_owner); both
    processes see the same packets, so both make the same choices. The
    importer counts each event in `load` itself, inline (the hot path).
    """

    __slots__ = ("role", "load")

    def __init__(self, role: int) -> None:
        self.role = role
        self.load = [0, 0]  # track events seen so far, by the process owning their sequence

    def assign(self, seq) -> int:
        load = self.load
        seq.split_owner = HELPER if load[HELPER] * HELPER_WEIGHT < load[MAIN] else MAIN
        return seq.split_owner

    @staticmethod
    def pin_to_main(seq) -> None:
        """For a sequence whose other packets share state with its track events
        (streaming profile samples continue their delta timestamps): only the
        importer sees those packets, so it must own the sequence."""
        if seq.split_owner is None:
            seq.split_owner = MAIN
        elif seq.split_owner != MAIN:
            raise SplitFailed(f"sequence {seq.seq_id} mixes helper-owned track events with profile samples")


class OwnedContext:
    """What tokenize_track_event reads from its importer, with stats of its own:
    the helper reports only what its owned events counted."""

    __slots__ = ("stats", "clocks", "reservations", "counter_specs")

    def __init__(self, importer) -> None:
        self.stats = Stats()
        self.clocks = importer.clocks
        self.reservations = importer.reservations
        self.counter_specs = importer.counter_specs


def start_helper(importer) -> "HelperHandle":
    """Forks the helper for `importer` (which has read nothing yet)."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    events = tempfile.TemporaryFile()  # shared with the child: it writes, the parent reads after
    process = ctx.Process(target=_helper_main, args=(importer, send, events), daemon=True,
                          name="datasette-perfetto-tokenizer")
    process.start()
    send.close()
    return HelperHandle(process, receive, events)


def split_wanted(setting: Optional[bool], size: int) -> bool:
    """Whether to split a file of `size` bytes: `setting` True always, False never, None
    for large files; only where processes can be forked."""
    if setting is None:
        setting = size >= SPLIT_THRESHOLD_BYTES
    return setting and "fork" in multiprocessing.get_all_start_methods()


class HelperHandle:
    def __init__(self, process, receive, events) -> None:
        self.process = process
        self.receive = receive
        self.events = events

    def result(self) -> tuple[Stats, int, int]:
        """Waits for the helper; (stats its events counted, interned lookups it missed, events)."""
        try:
            answer = pickle.loads(self.receive.recv_bytes())
        except EOFError:
            answer = ("failed", f"exit code {self.process.exitcode}")
        finally:
            self.receive.close()
            self.process.join()
        if answer[0] == "failed":
            self.events.close()
            raise SplitFailed(f"the tokenizer helper failed: {answer[1]}")
        _, single, indexed, misses, count = answer
        stats = Stats()
        stats.single, stats.indexed = single, indexed
        return stats, misses, count

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join()
        self.receive.close()
        self.events.close()


def _helper_main(importer, send, events) -> None:
    try:
        from ..ingest import open_trace

        importer.become_helper()
        _, stream = open_trace(importer.trace.path)
        with stream:
            importer.tokenize_all(stream)
        count = importer.sorter.export(events)
        owned = importer.te_context
        # Interned lookups happen only while tokenizing track events: all of the helper's are its own.
        misses = sum(seq.misses for seq in importer.sequences.values())
        answer = ("ok", owned.stats.single, owned.stats.indexed, misses, count)
    except BaseException as e:  # reported; the parent imports again without the helper
        answer = ("failed", f"{type(e).__name__}: {e}")
    send.send_bytes(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    send.close()
    os._exit(0)  # nothing of the parent's (temporary files, the writer pipe) is the child's to clean up


__all__ = ["SequenceSplit", "OwnedContext", "SplitFailed", "start_helper", "split_wanted", "MAIN", "HELPER"]
