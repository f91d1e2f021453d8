"""One GROUP BY over a fleet of 200 small traces: DuckDB over the Parquet export against the same SQL
run on each SQLite database in a loop (open, query, close) with the results combined. Also a join
with a GROUP BY (one DuckDB query too) and a per-trace LIMIT (which `batch` runs trace by trace).

The traces are built with the trace builder (deterministic: trace i from seed i) and look like the
ranks of a training job of varied length: a trainer process with a few threads whose steps nest
forward / backward / allreduce / optimizer slices, plus a memory counter; 28 to 1,400 slices each.
They are ingested once into a cache folder (reused by later runs unless --rebuild), exported to
Parquet (timed), then the query is timed both ways (median of --repeat runs) and both results are
checked equal.

With --database DB, the fleet is --traces names (symbolic links) for that one database instead: the
same comparison on large traces.

Usage: python benchmarks/batch.py [--traces 200] [--repeat 3] [--dir /tmp/datasette-perfetto-batch] [--rebuild]
                                  [--database DB]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from datasette_perfetto.batch import run_batch  # noqa: E402
from datasette_perfetto.export import export_parquet, trace_name  # noqa: E402
from datasette_perfetto.ingest import ingest_bytes  # noqa: E402
from datasette_perfetto.trace_builder import TraceBuilder  # noqa: E402

SQL = (
    "SELECT name, count(*) AS n, sum(dur) AS total_dur, max(dur) AS max_dur "
    "FROM slice WHERE dur > 0 GROUP BY name ORDER BY name"
)
# A join with a GROUP BY: also one query (the trace joins and groups too).
JOIN_SQL = (
    "SELECT th.name AS thread, count(*) AS n, sum(s.dur) AS total_dur FROM slice s "
    "JOIN track t ON s.track_id = t.id JOIN thread th ON t.utid = th.id GROUP BY th.name ORDER BY th.name"
)
# A LIMIT counts within each trace: batch runs it trace by trace (see batch.py), the slower way.
TOP_SQL = "SELECT name, dur FROM slice ORDER BY dur DESC, id LIMIT 3"
PHASES = (("forward", 0.35), ("backward", 0.45), ("allreduce", 0.12), ("optimizer_step", 0.08))


def build_rank_trace(seed: int) -> bytes:
    """A training rank: 4-200 steps on 3 threads, each step's phases nested under it, and a counter."""
    rng = random.Random(seed)
    builder = TraceBuilder()
    seq = builder.sequence(1)
    pid = 1000 + seed
    seq.process(pid, f"trainer_rank{seed}", ts=0)
    threads = [seq.thread(pid, pid + k, name, ts=0) for k, name in enumerate(("main", "dataloader", "comm"))]
    memory = seq.counter_track(90_000 + seed, "gpu_memory", unit="bytes", ts=0)
    steps = rng.choice((4, 10, 25, 60, 120, 200))
    ts = 1_000_000
    for step in range(steps):
        step_dur = rng.randint(800_000, 1_200_000)
        track = threads[0]
        seq.slice_begin(ts, track, "step", "train", args={"step": step})
        t = ts
        for name, share in PHASES:
            d = int(step_dur * share * rng.uniform(0.8, 1.2))
            seq.slice_begin(t + 1, track, name, "train")
            seq.slice_end(t + d - 1, track)
            t += d
        seq.slice_end(t + 10, track)
        load = rng.randint(50_000, 300_000)
        seq.slice_begin(ts, threads[1], "data_load", "io")
        seq.slice_end(ts + load, threads[1])
        seq.slice_begin(t - 5000, threads[2], "nccl:all_reduce", "comm")
        seq.slice_end(t, threads[2])
        seq.counter(ts, memory, rng.randint(1 << 30, 4 << 30))
        ts = t + 1000
    return builder.to_bytes()


def build_fleet(folder: str, count: int, rebuild: bool) -> list[str]:
    databases = [os.path.join(folder, "db", f"rank{i:03d}.db") for i in range(count)]
    if rebuild:
        shutil.rmtree(os.path.join(folder, "db"), ignore_errors=True)
    os.makedirs(os.path.join(folder, "db"), exist_ok=True)
    began = time.monotonic()
    built = 0
    for i, path in enumerate(databases):
        if not os.path.exists(path):
            ingest_bytes(build_rank_trace(i), path)
            built += 1
    if built:
        print(f"built and ingested {built} traces in {time.monotonic() - began:.1f} s")
    return databases


def copies_of(database: str, folder: str, count: int) -> list[str]:
    """`count` names for one database (symbolic links): a fleet of large traces without the disk."""
    links = os.path.join(folder, "links")
    shutil.rmtree(links, ignore_errors=True)
    os.makedirs(links)
    paths = [os.path.join(links, f"copy{i:03d}.db") for i in range(count)]
    for path in paths:
        os.symlink(os.path.abspath(database), path)
    return paths


def sqlite_loop(databases: list[str], sql: str) -> list[tuple]:
    """The SQL on each database in turn (open, query, close), rows tagged with the trace."""
    rows = []
    for path in databases:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            name = trace_name(path)
            rows.extend((name, *r) for r in conn.execute(sql))
        finally:
            conn.close()
    return rows


def median_time(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        began = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default="/tmp/datasette-perfetto-batch")
    parser.add_argument("--rebuild", action="store_true", help="build and ingest the traces again")
    parser.add_argument("--database", help="a fleet of --traces links to this trace database instead (large traces)")
    args = parser.parse_args()

    if args.database:
        databases = copies_of(args.database, args.dir, args.traces)
    else:
        databases = build_fleet(args.dir, args.traces, args.rebuild)
    size = sum(os.path.getsize(p) for p in databases)
    slices = sum(sqlite3.connect(p).execute("SELECT count(*) FROM slice").fetchone()[0] for p in databases)
    print(f"{len(databases)} trace databases, {size / 1e6:.1f} MB, {slices:,} slices")

    out = os.path.join(args.dir, "parquet")
    shutil.rmtree(out, ignore_errors=True)
    began = time.perf_counter()
    export_parquet(databases, out)
    print(f"export to Parquet: {time.perf_counter() - began:.2f} s (once; every table of every trace)")

    for sql in (SQL, JOIN_SQL, TOP_SQL):
        duck, batch = median_time(lambda sql=sql: run_batch(sql, [out]), args.repeat)
        loop, rows = median_time(lambda sql=sql: sqlite_loop(databases, sql), args.repeat)
        if sorted(tuple(r) for r in batch.rows) != sorted(rows):
            raise SystemExit("the DuckDB result differs from the SQLite loop's")
        how = "one query over the dataset" if batch.rewritten else "trace by trace"
        print(f"query: {sql}")
        print(f"  DuckDB over the Parquet export ({how}): {duck:.3f} s ({len(batch.rows)} rows)")
        print(f"  SQLite, one database at a time: {loop:.3f} s ({len(rows)} rows)")
        print(f"  DuckDB / SQLite loop: {duck / loop:.2f}x (median of {args.repeat})")


if __name__ == "__main__":
    main()
