"""Orders tokenized events by timestamp, with memory bounded by a run size.

trace_processor sorts every event by timestamp before parsing. Doing that in
memory would hold the whole trace, so this is an external merge sort: events
are collected into runs; a full run is sorted and spilled to a temporary file
(pickle, whose loads are several times faster than marshal's for these tuples); at the end the
runs are merged. Ties keep arrival order, as trace_processor's stable sort does.
"""

from __future__ import annotations

import heapq
import pickle
import tempfile
from typing import IO, Iterable, Iterator

RUN_EVENTS = 150_000
SPILL_BATCH = 2_000
# Spilled runs are merged in groups of this many runs of equal size as they
# accumulate, so the final merge (one batch in memory per run) reads from few
# files however long the trace; each event is rewritten log16(runs) times.
MERGE_FAN_IN = 16


class Sorter:
    def __init__(self, run_events: int = RUN_EVENTS, spill_batch: int = SPILL_BATCH) -> None:
        self.run_events = run_events
        self.spill_batch = spill_batch  # events per pickle in a spill file: the merge holds one per file
        self._run: list[tuple] = []
        self._spills: list[IO[bytes]] = []
        self._levels: list[int] = []  # per spill: how many merges it has been through (non-increasing)
        self.count = 0  # events pushed
        self._arrival = 0
        # Added to every arrival number. Importers that split one file across
        # processes set it from the packet's position in the file (shifted past
        # any per-process push count), so arrival order is file order in each.
        self.arrival_base = 0

    def push(self, ts: int, event: tuple, stream: int = 0) -> None:
        """event is a tuple of plain values (picklable, no objects).

        At equal timestamps lower streams come first (trace_processor parses
        descriptor packets before the track events of the same instant)."""
        self._run.append((ts, stream, self.arrival_base + self._arrival, event))
        self.count += 1
        self._arrival += 1
        if len(self._run) >= self.run_events:
            self._spill()

    def _spill(self) -> None:
        self._run.sort()
        self._spills.append(self._write(self._run))
        self._levels.append(0)
        self._run = []
        levels = self._levels
        while len(levels) >= MERGE_FAN_IN and levels[-MERGE_FAN_IN] == levels[-1]:
            group = self._spills[-MERGE_FAN_IN:]
            del self._spills[-MERGE_FAN_IN:]
            level = levels[-1] + 1
            del levels[-MERGE_FAN_IN:]
            self._spills.append(self._write(heapq.merge(*map(self._read, group))))
            levels.append(level)

    def _write(self, events: Iterable[tuple]) -> IO[bytes]:
        f = tempfile.TemporaryFile()
        batch: list[tuple] = []
        size = self.spill_batch
        for item in events:
            batch.append(item)
            if len(batch) >= size:
                pickle.dump(batch, f, protocol=pickle.HIGHEST_PROTOCOL)
                batch = []
        if batch:
            pickle.dump(batch, f, protocol=pickle.HIGHEST_PROTOCOL)
        f.seek(0)
        return f

    @staticmethod
    def _read(f: IO[bytes]) -> Iterator[tuple]:
        try:
            while True:
                try:
                    batch = pickle.load(f)
                except EOFError:
                    return
                yield from batch
        finally:
            f.close()

    @staticmethod
    def _consume(run: list[tuple]) -> Iterator[tuple]:
        """Yields a run in order while releasing each event as it goes, so the
        parser's allocations reuse that memory instead of adding to it."""
        run.sort(reverse=True)
        pop = run.pop
        while run:
            yield pop()

    def export(self, f: IO[bytes]) -> int:
        """Writes every event, in order and with its sort key, to `f` (in the
        spill format) for another process's add_sorted(); returns how many."""
        streams = [self._read(spill) for spill in self._spills]
        streams.append(iter(sorted(self._run)))
        count = self.count
        self._spills, self._levels, self._run = [], [], []
        for batch in _batches(heapq.merge(*streams), self.spill_batch):
            pickle.dump(batch, f, protocol=pickle.HIGHEST_PROTOCOL)
        f.flush()
        return count

    def add_sorted(self, f: IO[bytes], count: int) -> None:
        """Merges in the events another sorter export()ed to `f` (rewound here)."""
        f.seek(0)
        self._spills.append(f)
        self._levels.append(len(self._levels) and self._levels[-1])  # never merged before the drain
        self.count += count

    def drain(self) -> Iterator[tuple[int, tuple]]:
        """Yields (ts, event) in timestamp order; the sorter is empty afterwards."""
        if not self._spills:
            run, self._run = self._run, []
            for ts, _, _, event in self._consume(run):
                yield ts, event
            return
        streams = [self._read(f) for f in self._spills]
        streams.append(self._consume(self._run))
        self._spills, self._levels, self._run = [], [], []
        for ts, _, _, event in heapq.merge(*streams):
            yield ts, event


def _batches(items: Iterable, size: int) -> Iterator[list]:
    batch: list = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
