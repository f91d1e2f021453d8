"""Orders tokenized events by timestamp, with memory bounded by a run size.

trace_processor sorts every event by timestamp before parsing. Doing that in
memory would hold the whole trace, so this is an external merge sort: events
are collected into runs; a full run is sorted and spilled to a temporary file
(pickle, whose loads are several times faster than marshal's for these tuples); at the end the
runs are merged. Ties keep arrival order, as trace_processor's stable sort does.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import IO, Generic, TypeVar

RUN_EVENTS = 150_000
SPILL_BATCH = 2_000
# Spilled runs are merged in groups of this many runs of equal size as they
# accumulate, so the final merge (one batch in memory per run) reads from few
# files however long the trace; each event is rewritten log16(runs) times.
MERGE_FAN_IN = 16


# An event: plain values, picklable (a tuple, or a pickle already made: JSON events).
E = TypeVar("E")


class Sorter(Generic[E]):
    def __init__(
        self, run_events: int = RUN_EVENTS, spill_batch: int = SPILL_BATCH, spill_dir: str | None = None
    ) -> None:
        self.run_events = run_events
        self.spill_batch = spill_batch  # events per pickle in a spill file: the merge holds one per file
        # Spill files are anonymous, or named files in spill_dir that another process can open (handover()).
        self.spill_dir = spill_dir
        self._run: list[tuple] = []
        self._spills: list[IO[bytes]] = []
        self._levels: list[int] = []  # per spill: how many merges it has been through (non-increasing)
        self.count = 0  # events pushed
        self._arrival = 0
        # Added to every arrival number. Importers that split one file across
        # processes set it from the packet's position in the file (shifted past
        # any per-process push count), so arrival order is file order in each.
        self.arrival_base = 0

    def push(self, ts: int, event: E, stream: int = 0) -> None:
        """event is made of plain values (picklable, no objects).

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
            self._spills.append(self._write(chain.from_iterable(merge_batches(map(self._read_batches, group)))))
            levels.append(level)

    def _write(self, events: Iterable[tuple]) -> IO[bytes]:
        f: IO[bytes]
        if self.spill_dir is None:
            f = tempfile.TemporaryFile()
        else:
            f = tempfile.NamedTemporaryFile(dir=self.spill_dir, suffix=".run", delete=False)
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
    def _read_batches(f: IO[bytes]) -> Iterator[list]:
        """A spill file's events, a pickled batch at a time (the file is closed at the end)."""
        try:
            while True:
                try:
                    yield pickle.load(f)
                except EOFError:
                    return
        finally:
            f.close()

    @staticmethod
    def _consume_batches(run: list[tuple], size: int) -> Iterator[list]:
        """A run in order, a batch at a time, releasing each batch's events as it goes
        so the parser's allocations reuse that memory instead of adding to it."""
        run.sort(reverse=True)
        while run:
            batch = run[-size:]
            del run[-size:]
            batch.reverse()
            yield batch

    def handover(self) -> tuple[list[str], int]:
        """For a sorter with a spill_dir: spills what is left and gives up its runs,
        (the paths of the sorted run files, events) for another process's take_over()."""
        if self._run:
            self._spill()
        paths = []
        for f in self._spills:
            paths.append(f.name)
            f.close()
        count = self.count
        self._spills, self._levels, self.count = [], [], 0
        return paths, count

    def take_over(self, paths: list[str], count: int) -> None:
        """Adds another sorter's handed-over runs, to be merged by drain(); the files are
        removed once open (the runs are read from the open files)."""
        for path in paths:
            f = open(path, "rb")
            os.unlink(path)
            self._spills.append(f)
            self._levels.append(0)
        self.count += count

    def drain(self) -> Iterator[tuple[int, E]]:
        """Yields (ts, event) in timestamp order; the sorter is empty afterwards."""
        run, self._run = self._run, []
        batches = self._consume_batches(run, self.spill_batch)
        if self._spills:
            sources = [self._read_batches(f) for f in self._spills]
            sources.append(batches)
            self._spills, self._levels = [], []
            batches = merge_batches(sources)
        for batch in batches:
            for ts, _, _, event in batch:
                yield ts, event


def merge_batches(sources: Iterable[Iterator[list]]) -> Iterator[list]:
    """Merges sorted sources, each given as consecutive sorted batches, into sorted
    batches (keys must be unique, as (ts, stream, arrival) are).

    Whatever is not above the lowest of the sources' last-read items can no longer
    be preceded by anything unread, so it goes out; the buffer is ordered by
    list.sort(), which merges its already sorted runs in C. Per event that costs a
    fraction of heapq.merge's Python-level step, with the same memory: about one
    batch per source.
    """
    sources = [(b for b in s if b) for s in sources]  # an empty batch says nothing
    frontier: list = []  # per live source: its last-read item
    live: list = []
    pending: list = []
    for source in sources:
        batch = next(source, None)
        if batch is not None:
            pending.extend(batch)
            frontier.append(batch[-1])
            live.append(source)
    pending.sort()
    while live:
        # Read on from the source holding everything back.
        lowest = min(range(len(live)), key=frontier.__getitem__)
        batch = next(live[lowest], None)
        if batch is not None:
            pending.extend(batch)
            pending.sort()
            frontier[lowest] = batch[-1]
        else:
            del live[lowest], frontier[lowest]
        if not live:
            break
        cut = bisect_right(pending, min(frontier))
        if cut:
            yield pending[:cut]
            del pending[:cut]
    if pending:
        yield pending
