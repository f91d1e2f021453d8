"""Chrome JSON ingest throughput and memory on a real trace.

Prints, for the trace: its uncompressed JSON size and event count, the time of
`ingest()` (median of runs, each in a fresh interpreter), the throughput in MB/s of
uncompressed JSON and in events/s, and the peak RSS of the ingesting process,
next to the same process's peak on a one-event trace (what Python, the modules
and SQLite cost before any data). With --scale N it also ingests a trace N times
larger (the events repeated N times, each copy shifted later in time) to show
that memory does not grow with the trace. With --single-process it also measures the ingest with
the tokenizing in one process (no tokenizer helper), for comparison.

Usage: python benchmarks/json_ingest.py [TRACE] [--repeat 3] [--scale 5] [--single-process]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from fresh_process import measure_in_fresh_process  # noqa: E402  (beside this script)
from shared_data import TRACES  # noqa: E402  (the shared traces, wherever this checkout is)

DEFAULT_TRACE = str(TRACES / "chrome_startup.json.gz")
ISSUE_SECONDS = 7.6  # this trace's ingest when issue 17 was filed
TINY_TRACE = b'[{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1}]'


def measure_one(trace: str, split_tokenize: bool | None = None) -> None:
    """In a fresh interpreter: ingest once and print ingest seconds and peak RSS (MB)."""
    fd, db = tempfile.mkstemp(suffix=".db")
    os.close(fd)
    os.unlink(db)
    from datasette_perfetto.ingest import ingest

    start = time.perf_counter()
    ingest([trace], db, split_tokenize=split_tokenize)
    seconds = time.perf_counter() - start
    os.unlink(db)
    # The child processes (large inputs: the SQLite writer, the tokenizer helper) are measured
    # apart: RUSAGE_CHILDREN's peak is the larger one's.
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
    print(f"{seconds:.3f} {me.ru_maxrss / 1024:.1f} {children.ru_maxrss / 1024:.1f} {cpu:.3f}")


def measure(trace: str, *options: str) -> tuple[float, float, float, float]:
    """(ingest seconds, peak RSS MB, its child processes' peak RSS MB, CPU seconds of the whole process and
    its children) of ingesting `trace` in a fresh process."""
    out = measure_in_fresh_process(__file__, trace, *options)
    return float(out[0]), float(out[1]), float(out[2]), float(out[3])


def _events(trace: str):
    """The trace's events, streamed (the measuring process imports no more than ingest itself)."""
    from datasette_perfetto.importers.json.reader import EVENT, JsonTraceReader
    from datasette_perfetto.ingest import open_trace
    from datasette_perfetto.stats import Stats

    _, stream = open_trace(trace)
    with stream:
        reader = JsonTraceReader(stream, Stats())
        for kind, ev in reader.parts():
            if kind == EVENT:
                yield reader, ev


def json_size_and_events(trace: str) -> tuple[int, int]:
    """Uncompressed size in bytes and number of trace events (streamed, not timed)."""
    reader, events = None, 0
    for reader, _ in _events(trace):  # noqa: B007 (the last reader is read after the loop)
        events += 1
    return (reader.bytes_read if reader else 0), events


def scaled_copy(trace: str, times: int, out_path: str) -> None:
    """Writes the trace's events `times` times, copy k shifted k trace lengths later."""

    def events():
        return (ev for _, ev in _events(trace))

    stamps = [ev["ts"] for ev in events() if isinstance(ev.get("ts"), (int, float))]
    span = max(stamps) - min(stamps) + 1_000_000  # microseconds
    with open(out_path, "w") as out:
        out.write('{"traceEvents": [\n')
        first = True
        for k in range(times):
            for ev in events():
                if k and isinstance(ev.get("ts"), (int, float)) and ev.get("ph") != "M":
                    ev["ts"] += k * span
                out.write(("" if first else ",\n") + json.dumps(ev))
                first = False
        out.write("\n]}\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", nargs="?", default=DEFAULT_TRACE)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measurement; medians are printed")
    ap.add_argument("--scale", type=int, default=0, help="also measure a trace this many times larger")
    ap.add_argument(
        "--single-process", action="store_true", help="also measure with the tokenizing in one process (no helper)"
    )
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        measure_one(args.trace, False if args.single_process else None)
        return
    size, events = json_size_and_events(args.trace)
    mb = size / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        tiny = os.path.join(tmp, "tiny.json")
        with open(tiny, "wb") as f:
            f.write(TINY_TRACE)
        _, baseline, _, _ = measure(tiny)
    # This machine's timings vary by tens of percent run to run: take medians.
    runs = [measure(args.trace) for _ in range(args.repeat)]
    seconds = statistics.median(r[0] for r in runs)
    peak = max(r[1] for r in runs)
    writer_peak = max(r[2] for r in runs)
    cpu = statistics.median(r[3] for r in runs)
    print(
        f"trace: {args.trace} ({os.path.getsize(args.trace) / 1e6:.1f} MB on disk, "
        f"{mb:.1f} MB of JSON, {events:,} events)"
    )
    print(
        f"ingest: {seconds:.2f} s (median of {args.repeat}): {mb / seconds:.1f} MB/s of JSON, "
        f"{events / seconds:,.0f} events/s; CPU {cpu:.2f} s (the whole process, its children included)"
    )
    if args.trace == DEFAULT_TRACE:
        print(f"speed-up against issue 17's {ISSUE_SECONDS} s: {ISSUE_SECONDS / seconds:.2f}x (target 3x)")
    if args.single_process:
        single = [measure(args.trace, "--single-process") for _ in range(args.repeat)]
        print(
            f"tokenizing in one process (no helper): {statistics.median(r[0] for r in single):.2f} s, "
            f"CPU {statistics.median(r[3] for r in single):.2f} s"
        )
    print(
        f"peak RSS: {peak:.0f} MB ({peak / mb:.2f}x the JSON size); "
        f"the same process on a one-event trace: {baseline:.0f} MB; its child processes (SQLite writer, "
        f"tokenizer helper): {writer_peak:.0f} MB at most"
    )
    if args.scale:
        with tempfile.TemporaryDirectory() as tmp:
            big = os.path.join(tmp, f"x{args.scale}.json")
            scaled_copy(args.trace, args.scale, big)
            big_mb = os.path.getsize(big) / 1e6
            big_seconds, big_peak, big_writer, _ = measure(big)
            print(
                f"x{args.scale} trace ({big_mb:.0f} MB of JSON): {big_seconds:.1f} s "
                f"({big_mb / big_seconds:.1f} MB/s), peak RSS {big_peak:.0f} MB, writer {big_writer:.0f} MB "
                f"(x1: {peak:.0f} MB, writer {writer_peak:.0f} MB)"
            )


if __name__ == "__main__":
    main()
