"""Gigabyte traces: ingest throughput and peak memory as a trace grows from 100 MB to 1 GB, and report
latency on the result.

Writes synthetic Perfetto traces of the sizes asked for (track-event slices on 200 threads, nested two deep,
counter values on 50 counter tracks and ftrace scheduling on 8 CPUs, in the proportions of
benchmarks/report_latency.py's trace), packet by packet with hand-encoded protobuf (the generator holds
nothing but the current packet), roughly in time order as recorders write them. Each is ingested in a fresh
process: wall time, MB/s, peak RSS of the ingesting process and of its
writer/tokenizer children. Then the report's pages on the largest database, p50/p95 over several requests
(benchmarks/report_latency.py's measurement).

Targets (issue 17): at 1 GB, peak RSS under 1 GB and at most 1.5x the peak at 100 MB; throughput within
25% of the 100 MB trace's; report pages p50 under 250 ms.

Usage: python benchmarks/big_trace.py [--sizes 100,1000] [--keep DIR] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))  # this checkout's package
from report_latency import measure as measure_pages  # noqa: E402  (beside this script)

from datasette_perfetto.trace_builder import encode_varint as varint  # noqa: E402

PROCESSES = 20
THREADS_PER_PROCESS = 10
CPUS = 8
COUNTER_TRACKS = 50
THREAD_UUID = 1 << 32
COUNTER_UUID = 900_000
NAMES = [f"Task{i}::Run" for i in range(400)] + [f"Frame{i}" for i in range(100)]
STEP_NS = 50_000  # per thread, a root slice and its child every step
# Per 100 slices (50 steps x 2 per thread...): a counter value every 10 steps per thread set, a sched
# switch every 5 steps per CPU; the proportions of report_latency.py's trace (1M slices, 100k each).


def field_varint(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def field_bytes(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def record(packet: bytes) -> bytes:
    return field_bytes(1, packet)


# TracePacket fields
TIMESTAMP, SEQ_ID, TRACK_EVENT, INTERNED, SEQ_FLAGS, CLEARED = 8, 10, 11, 12, 13, 41
TRACK_DESCRIPTOR, FTRACE = 60, 1
SEQ = field_varint(SEQ_ID, 1)


def track_event(ts: int, kind: int, uuid: int, name_iid: int = 0, value: int | None = None) -> bytes:
    event = field_varint(9, kind) + field_varint(11, uuid)
    if name_iid:
        event += field_varint(10, name_iid)
    if value is not None:
        event += field_varint(30, value)  # counter_value
    return record(field_varint(TIMESTAMP, ts) + SEQ + field_bytes(TRACK_EVENT, event))


def preamble() -> bytes:
    names = b"".join(field_bytes(2, field_varint(1, i + 1) + field_bytes(2, n.encode())) for i, n in enumerate(NAMES))
    out = [record(SEQ + field_varint(SEQ_FLAGS, 1) + field_varint(CLEARED, 1) + field_bytes(INTERNED, names))]
    for p in range(PROCESSES):
        pid = 1000 + p * 100
        process = field_varint(1, pid) + field_bytes(6, f"proc{p}".encode())
        out.append(record(SEQ + field_bytes(TRACK_DESCRIPTOR, field_varint(1, pid) + field_bytes(3, process))))
        for t in range(THREADS_PER_PROCESS):
            tid = pid + t
            thread = field_varint(1, pid) + field_varint(2, tid) + field_bytes(5, f"thread{t}".encode())
            desc = field_varint(1, THREAD_UUID + tid) + field_varint(5, pid) + field_bytes(4, thread)
            out.append(record(SEQ + field_bytes(TRACK_DESCRIPTOR, desc)))
    for c in range(COUNTER_TRACKS):
        desc = field_varint(1, COUNTER_UUID + c) + field_bytes(2, f"counter{c}".encode()) + field_bytes(8, b"")
        desc += field_varint(5, 1000 + (c % PROCESSES) * 100)
        out.append(record(SEQ + field_bytes(TRACK_DESCRIPTOR, desc)))
    return b"".join(out)


def sched_bundle(cpu: int, events: list[tuple[int, int, int, int]]) -> bytes:
    """An FtraceEventBundle of sched_switch events (ts, prev pid, prev state, next pid)."""
    body = field_varint(1, cpu)
    for ts, prev, state, nxt in events:
        switch = (
            field_bytes(1, b"x") + field_varint(2, prev) + field_varint(3, 120) + field_varint(4, state)
            + field_bytes(5, b"x") + field_varint(6, nxt) + field_varint(7, 120)
        )  # fmt: skip
        event = field_varint(1, ts) + field_varint(2, prev) + field_bytes(4, switch)
        body += field_bytes(2, event)
    return record(field_varint(SEQ_ID, 2) + field_bytes(FTRACE, body))


def write_trace(path: str, size_mb: float) -> int:
    """Writes a trace of about `size_mb` MB; returns the number of slices in it."""
    rng = random.Random(1)
    weights = [1 / (i + 1) for i in range(len(NAMES))]
    threads = [1000 + p * 100 + t for p in range(PROCESSES) for t in range(THREADS_PER_PROCESS)]
    target = int(size_mb * 1e6)
    begin, end, counter = 1, 2, 4
    slices = 0
    with open(path, "wb") as f:
        f.write(preamble())
        ts0 = 1_000_000
        step = 0
        prev = [0] * CPUS
        pending: list[list[tuple[int, int, int, int]]] = [[] for _ in range(CPUS)]
        while f.tell() < target:
            base = ts0 + step * STEP_NS
            chunk = []
            for tid in threads:
                root, child = rng.choices(range(1, len(NAMES) + 1), weights, k=2)
                dur = rng.randint(STEP_NS // 4, STEP_NS - 10)
                ts = base + (tid % 97)
                chunk.append(track_event(ts, begin, THREAD_UUID + tid, root))
                chunk.append(track_event(ts + 5, begin, THREAD_UUID + tid, child))
                chunk.append(track_event(ts + dur // 2, end, THREAD_UUID + tid))
                chunk.append(track_event(ts + dur, end, THREAD_UUID + tid))
            slices += 2 * len(threads)
            if step % 4 == 0:  # counters: one value per track every 4 steps
                for c in range(COUNTER_TRACKS):
                    chunk.append(track_event(base + c, counter, COUNTER_UUID + c, value=rng.randint(0, 1 << 20)))
            if step % 2 == 0:  # scheduling: a switch per CPU every 2 steps, bundled 50 at a time
                for cpu in range(CPUS):
                    nxt = rng.choice(threads) if step % 3 else 0
                    pending[cpu].append((base + cpu, prev[cpu], rng.choice((0, 1, 2)), nxt))
                    prev[cpu] = nxt
                    if len(pending[cpu]) >= 50:
                        chunk.append(sched_bundle(cpu, pending[cpu]))
                        pending[cpu] = []
            f.write(b"".join(chunk))
            step += 1
        f.write(b"".join(sched_bundle(cpu, events) for cpu, events in enumerate(pending) if events))
    return slices


def measure_one(trace: str, db: str) -> None:
    """In a fresh interpreter: ingest `trace` into `db`; print wall seconds and the peak RSS (MB) of this
    process and of its largest child (the writer or the tokenizer helper)."""
    from datasette_perfetto.ingest import ingest

    start = time.perf_counter()
    ingest([trace], db)
    wall = time.perf_counter() - start
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{wall:.3f} {own:.1f} {children:.1f}")


def measure(trace: str, db: str) -> tuple[float, float, float]:
    """(ingest seconds, peak RSS MB, largest child's peak RSS MB) of ingesting `trace` into `db`, fresh process."""
    if os.path.exists(db):
        os.unlink(db)
    out = subprocess.run(
        [sys.executable, __file__, "--one", trace, db],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.path.join(HERE, "..")},
    ).stdout.split()
    return float(out[0]), float(out[1]), float(out[2])


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        measure_one(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000", help="trace sizes in MB, comma-separated (default 100,1000)")
    parser.add_argument("--keep", help="folder to keep the traces and databases in (default: a temporary one)")
    parser.add_argument("--repeat", type=int, default=5, help="requests per report page")
    args = parser.parse_args()
    sizes = [float(s) for s in args.sizes.split(",")]
    folder = args.keep or tempfile.mkdtemp(prefix="big-trace-")
    os.makedirs(folder, exist_ok=True)
    rows = []
    for size in sizes:
        trace = os.path.join(folder, f"synthetic-{size:g}MB.pftrace")
        if not os.path.exists(trace):
            t0 = time.perf_counter()
            slices = write_trace(trace, size)
            print(f"wrote {trace}: {slices:,} slices in {time.perf_counter() - t0:.0f} s", flush=True)
        actual_mb = os.path.getsize(trace) / 1e6
        wall, peak, child_peak = measure(trace, os.path.join(folder, f"synthetic-{size:g}MB.db"))
        rows.append((actual_mb, wall, peak, child_peak))
        print(
            f"{actual_mb:7.0f} MB: ingest {wall:6.1f} s ({actual_mb / wall:5.2f} MB/s), peak RSS {peak:5.0f} MB, "
            f"writer/tokenizer children {child_peak:5.0f} MB",
            flush=True,
        )
    if len(rows) > 1:
        (small_mb, small_wall, small_peak, small_child), (big_mb, big_wall, big_peak, big_child) = rows[0], rows[-1]
        throughput = (big_mb / big_wall) / (small_mb / small_wall)
        print(
            f"largest vs smallest: peak RSS {max(big_peak, big_child):.0f} MB vs {max(small_peak, small_child):.0f} MB "
            f"({max(big_peak, big_child) / max(small_peak, small_child):.2f}x; targets < 1000 MB and <= 1.5x); "
            f"throughput {throughput:.2f}x of the smaller's (target >= 0.75x)"
        )
    # Report pages on the largest trace's database.
    db = os.path.join(folder, f"synthetic-{sizes[-1]:g}MB.db")
    results = asyncio.run(measure_pages(db, args.repeat))
    worst = max(t.p50 for t in results)
    for t in results:
        print(f"  {t.label:<30} p50 {t.p50:7.1f} ms  p95 {t.p95:7.1f} ms  first {t.first:7.1f} ms  {t.status}")
    print(f"report pages on the {sizes[-1]:g} MB trace's database: worst p50 {worst:.0f} ms (target < 250 ms)")


if __name__ == "__main__":
    main()
