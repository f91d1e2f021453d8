"""Ingest speed and memory on a real trace, against the floor (benchmarks/floor.py).

Prints, for each trace: whole-process wall time of `ingest`, the floor's wall
time, their ratio, the peak RSS of the ingesting process, and where the wall time goes (reading and
tokenizing, parsing, each named step of the finish; medians). With --scale N
it also builds a trace N times larger (the input repeated N times, each copy
shifted later in time so tracks continue rather than overlap) to show that
memory does not grow with trace size.

Usage: python benchmarks/ingest.py [TRACE] [--scale 10]
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from fresh_process import measure_in_fresh_process  # noqa: E402  (beside this script)
from shared_data import TRACES  # noqa: E402  (the shared traces, wherever this checkout is)

from datasette_perfetto.importers.common.streams import READ_SHARE  # noqa: E402
from datasette_perfetto.ingest import Progress  # noqa: E402

DEFAULT_TRACE = str(TRACES / "chrome_startup.pftrace")


class StepTimes(Progress):
    """Progress that notes when each step of an ingest begins: reading and tokenizing, parsing (the importers
    report READ_SHARE of the input's progress once tokenizing has ended, the rest as the sorted events are
    parsed), the rest of the parse (finishing the trackers), then each named step of the finish (Progress.phase)."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.size = 0
        self.done = 0
        self.began: list[tuple[str, float]] = [("read and tokenize", 0.0)]  # (step, seconds since start)

    def input_started(self, path: str, size: int) -> None:
        self.size = size

    def advanced(self, amount: int) -> None:
        before, self.done = self.done, self.done + amount
        for name, at in (("parse", int(READ_SHARE * self.size)), ("end of parse", self.size)):
            if before < at <= self.done:
                self._begin(name)

    def phase(self, name: str) -> None:
        self._begin(name)

    def _begin(self, name: str) -> None:
        self.began.append((name, time.perf_counter() - self.start))

    def durations(self, end: float) -> list[tuple[str, float]]:
        """(step, seconds) in order, the last one ending at `end`."""
        ends = [at for _, at in self.began[1:]] + [end]
        return [(name, stop - at) for (name, at), stop in zip(self.began, ends)]


def measure_one(trace: str) -> None:
    """In a fresh interpreter: ingest once and print wall time, peak RSS and the steps' times."""
    fd, db = tempfile.mkstemp(suffix=".db")
    os.close(fd)
    os.unlink(db)
    from datasette_perfetto.ingest import ingest

    start = time.perf_counter()
    steps = StepTimes(start)
    summaries = ingest([trace], db, steps)
    wall = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # The writer and tokenizer helper processes (ingest's children): the larger one's peak.
    child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    size = os.path.getsize(db)
    os.unlink(db)
    print(f"{wall:.3f} {peak_mb:.1f} {size} {sum(v for _, v in summaries[0].problems)} {child_mb:.1f}", end=" ")
    # Then each step as name=seconds (spaces in names as underscores): the figures are split on whitespace.
    print(" ".join(f"{name.replace(' ', '_')}={seconds:.3f}" for name, seconds in steps.durations(wall)))


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children and theirs."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(trace: str) -> tuple[float, float, float, float, float, list[tuple[str, float]]]:
    """(process wall seconds, ingest seconds, peak RSS MB, largest child's peak RSS MB, CPU seconds of the
    whole process and its writer/tokenizer children, (step, seconds) of the ingest) of ingesting trace in a
    fresh process."""
    cpu = children_cpu()
    start = time.perf_counter()
    out = measure_in_fresh_process(__file__, trace)
    process_wall = time.perf_counter() - start
    steps = [(name.replace("_", " "), float(seconds)) for name, seconds in (f.split("=") for f in out[5:])]
    return process_wall, float(out[0]), float(out[1]), float(out[4]), children_cpu() - cpu, steps


def floor(trace: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of benchmarks/floor.py on trace, in a fresh process."""
    cpu = children_cpu()
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, os.path.join(HERE, "floor.py"), trace],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": os.path.join(HERE, "..")},
    )
    return time.perf_counter() - start, children_cpu() - cpu


def scaled_copy(trace: str, times: int, out_path: str) -> None:
    """Writes `trace` repeated `times` times, copy k shifted by k trace lengths.

    Shifting every non-sequence-scoped clock in the ClockSnapshots moves all
    converted timestamps; everything else is copied byte for byte.
    """
    # Imported here, not at the top: the measured process (--one) should load only what ingest does.
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    from datasette_perfetto.importers.proto.reader import ProtoReader
    from datasette_perfetto.stats import Stats
    from datasette_perfetto.trace_builder import trace_record

    first = last = None
    with open(trace, "rb") as f:
        for data in ProtoReader(f, Stats()).packets():
            p = pb.TracePacket.FromString(data)
            if p.HasField("clock_snapshot"):
                for c in p.clock_snapshot.clocks:
                    if c.clock_id == 6:  # BOOTTIME: how long the recording lasted
                        first = c.timestamp if first is None else min(first, c.timestamp)
                        last = c.timestamp if last is None else max(last, c.timestamp)
    span = (last - first) + 10_000_000_000 if first is not None else 0
    with open(out_path, "wb") as out:
        for k in range(times):
            with open(trace, "rb") as f:
                for data in ProtoReader(f, Stats()).packets():
                    if k:
                        p = pb.TracePacket.FromString(data)
                        if p.HasField("clock_snapshot"):
                            for c in p.clock_snapshot.clocks:
                                if c.clock_id < 64:
                                    c.timestamp += k * span
                            data = p.SerializeToString()
                    out.write(trace_record(data))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", nargs="?", default=DEFAULT_TRACE)
    ap.add_argument("--scale", type=int, default=0, help="also measure a trace this many times larger")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measurement; medians are printed")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        measure_one(args.trace)
        return
    # Measure the package as installed: byte-compiled (pip install does it; ./dev does it for the
    # editable checkout), not compiled again by every process as PYTHONDONTWRITEBYTECODE would have it.
    compileall.compile_dir(os.path.join(HERE, "..", "datasette_perfetto"), quiet=1)
    # This machine's timings vary by tens of percent run to run: take medians.
    floors = [floor(args.trace) for _ in range(args.repeat)]
    floor_s = statistics.median(f[0] for f in floors)
    floor_cpu = statistics.median(f[1] for f in floors)
    runs = [measure(args.trace) for _ in range(args.repeat)]
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[4] for r in runs)
    ingest_s = statistics.median(r[1] for r in runs)
    peak = max(r[2] for r in runs)
    child_peak = max(r[3] for r in runs)
    size_mb = os.path.getsize(args.trace) / 1e6
    print(f"trace: {args.trace} ({size_mb:.1f} MB)")
    print(
        f"floor (split + parse TracePacket + insert one row per track event): {floor_s:.2f} s (median of {args.repeat})"
    )
    print(
        f"ingest: {wall:.2f} s whole process ({ingest_s:.2f} s in ingest()), median of {args.repeat}; "
        f"peak RSS {peak:.0f} MB (its writer/tokenizer child processes: {child_peak:.0f} MB at most)"
    )
    print(f"ratio ingest / floor: {wall / floor_s:.2f}x wall (target 3x)")
    print(
        f"CPU: ingest {cpu:.2f} s (with its child processes), floor {floor_cpu:.2f} s: "
        f"{cpu / floor_cpu:.2f}x (target 5x)"
    )
    steps = [name for name, _ in runs[0][5]]
    if all([name for name, _ in r[5]] == steps for r in runs):
        medians = [statistics.median(r[5][i][1] for r in runs) for i in range(len(steps))]
        print(
            "where the wall time of ingest() goes (medians): "
            + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in zip(steps, medians))
        )
    if args.scale:
        with tempfile.TemporaryDirectory() as tmp:
            big = os.path.join(tmp, f"x{args.scale}.pftrace")
            scaled_copy(args.trace, args.scale, big)
            big_mb = os.path.getsize(big) / 1e6
            wall_big, ingest_big, peak_big, child_big, _, _ = measure(big)
            print(
                f"x{args.scale} trace ({big_mb:.0f} MB): {wall_big:.1f} s whole process, peak RSS {peak_big:.0f} MB, "
                f"children {child_big:.0f} MB (x1: {peak:.0f} MB, children {child_peak:.0f} MB)"
            )


if __name__ == "__main__":
    main()
