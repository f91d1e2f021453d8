"""Many traces at once: a 16-rank PyTorch-like job ingested serially, with --jobs 2 and on a local
Dask cluster.

Writes (once, deterministically) one Chrome JSON trace per rank as the PyTorch profiler does
(`distributedInfo`, nested python_function / cpu_op / user_annotation slices, instant events,
forward-backward flows, a GPU stream per rank with kernels), each a few MB so parsing dominates.
Then runs `datasette perfetto ingest` on them in a fresh process per run: serial, `--jobs N` and
`--cluster local` (N workers), and ingest() in one process (no tokenizer helper, no writer child: the
issue's baseline); prints the wall times (median of --repeat runs), the speedups against both
serial runs, the machine's load average before each run (other processes compete for the cores:
read the figures next to it) and the CPU seconds each mode spends in all its processes. Every
database is checked to be the serial one, table by table.

Usage: python benchmarks/parallel_ingest.py [--dir DIR] [--ranks 16] [--events 24000] [--jobs 2]
                                            [--repeat 3] [--no-cluster]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
CLI = [os.path.join(os.path.dirname(sys.executable), "datasette"), "perfetto"]


def write_rank(path: str, rank: int, world: int, events: int) -> None:
    """One rank's trace: `events` slices on a few CPU threads and a GPU stream, deterministic."""
    rng = random.Random(rank)
    pid, main_tid, loader_tid = 1000 + rank, 1000 + rank, 2000 + rank
    out: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": main_tid, "args": {"name": f"thread {main_tid}"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": loader_tid, "args": {"name": "pt_data_loader"}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": f"GPU {rank}"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
    ]
    ops = ["aten::mm", "aten::add_", "aten::relu", "aten::conv2d", "aten::copy_", "aten::empty", "aten::view"]
    kernels = ["volta_sgemm_128x64_nn", "elementwise_kernel", "reduce_kernel", "nccl:all_reduce"]
    ts = 1_000_000.0
    step, flow, external = 0, 0, 0
    written = 0
    gpu_free = 0.0
    while written < events:
        step_start = ts
        step += 1
        children = []
        for _ in range(rng.randint(20, 40)):  # a forward/backward pass: functions with ops inside
            start = ts
            ts += rng.uniform(1, 5)
            for _ in range(rng.randint(1, 4)):
                external += 1
                dur = rng.uniform(5, 40)
                shapes = [[rng.choice((32, 64, 128)), rng.choice((256, 512))]]
                args = {"External id": external, "Input Dims": shapes, "Input type": ["float"], "Ev Idx": written}
                children.append(
                    {
                        "ph": "X",
                        "cat": "cpu_op",
                        "name": rng.choice(ops),
                        "pid": pid,
                        "tid": main_tid,
                        "ts": ts,
                        "dur": dur,
                        "args": args,
                    }
                )
                kernel_ts = max(ts + rng.uniform(5, 20), gpu_free)  # one kernel at a time on the stream
                gpu_free = kernel_ts + dur / 2 + 0.5
                children.append(
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": rng.choice(kernels),
                        "pid": 0,
                        "tid": 7,
                        "ts": kernel_ts,
                        "dur": dur / 2,
                        "args": {
                            "External id": external,
                            "device": rank,
                            "stream": 7,
                            "grid": [rng.randint(1, 512), 1, 1],
                            "block": [256, 1, 1],
                        },
                    }
                )
                flow += 1
                children.append(
                    {"ph": "s", "id": flow, "pid": pid, "tid": main_tid, "ts": ts, "cat": "ac2g", "name": "ac2g"}
                )
                children.append(
                    {
                        "ph": "f",
                        "id": flow,
                        "pid": 0,
                        "tid": 7,
                        "ts": kernel_ts,
                        "cat": "ac2g",
                        "name": "ac2g",
                        "bp": "e",
                    }
                )
                ts += dur + rng.uniform(0.5, 3)
            children.append(
                {
                    "ph": "X",
                    "cat": "python_function",
                    "name": f"torch/nn/modules/module.py({rng.randint(1, 2000)})",
                    "pid": pid,
                    "tid": main_tid,
                    "ts": start,
                    "dur": ts - start,
                    "args": {"Python id": written},
                }
            )
            children.append(
                {
                    "ph": "i",
                    "cat": "cpu_instant_event",
                    "name": "[memory]",
                    "pid": pid,
                    "tid": main_tid,
                    "ts": ts,
                    "s": "t",
                    "args": {"Total Allocated": rng.randint(1, 1 << 30), "Bytes": rng.randint(-4096, 4096)},
                }
            )
            ts += rng.uniform(1, 10)
        load = rng.uniform(50, 200)
        children.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": "enumerate(DataLoader)",
                "pid": pid,
                "tid": loader_tid,
                "ts": step_start,
                "dur": load,
                "args": {},
            }
        )
        out.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{step}",
                "pid": pid,
                "tid": main_tid,
                "ts": step_start,
                "dur": ts - step_start,
                "args": {},
            }
        )
        out.extend(children)
        written += len(children) + 1
    trace = {
        "schemaVersion": 1,
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
        "displayTimeUnit": "ms",
        "traceEvents": out,
        "traceName": f"rank{rank}",
    }
    with open(path, "w") as f:
        json.dump(trace, f, indent=1)


def build(folder: str, ranks: int, events: int) -> list[str]:
    os.makedirs(folder, exist_ok=True)
    paths = []
    for rank in range(ranks):
        path = os.path.join(folder, f"rank{rank}.json")
        if not os.path.exists(path):
            write_rank(path, rank, ranks, events)
        paths.append(path)
    return paths


# The baseline: every input imported one after another by one process (ingest() with its
# tokenizer helper, writer child and report tables' helper off), which is what the serial ingest was when
# --jobs was asked for.
# It starts as `datasette perfetto ingest` does (Datasette's CLI and its plugins loaded: about 1 s that
# every other mode pays too), so the modes differ only in how they import.
ONE_PROCESS = (
    "import sys; import datasette.cli; from datasette_perfetto.ingest import ingest; "
    "ingest(sys.argv[2:], sys.argv[1], separate_writer=False, split_tokenize=False, split_finish=False)"
)


def run(paths: list[str], db: str, extra: list[str] | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of it and every process it waited for) of `datasette perfetto ingest`
    (extra: its options; None: ONE_PROCESS) in a fresh process."""
    if os.path.exists(db):
        os.unlink(db)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    if extra is None:
        command = [sys.executable, "-c", ONE_PROCESS, db, *paths]
    else:
        command = [*CLI, "ingest", *paths, "-o", db, "-q", *extra]
    subprocess.run(command, check=True, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def tables(db: str) -> dict[str, list]:
    """Every table's rows (not SQLite's own: ANALYZE's sampled estimates follow the b-tree layout)."""
    conn = sqlite3.connect(db)
    names = [
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    ]
    return {n: conn.execute(f"SELECT * FROM [{n}] ORDER BY rowid").fetchall() for n in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=os.path.join("/tmp", "datasette-perfetto-bench-ranks"))
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--events", type=int, default=24_000, help="slices per rank (about 250 bytes each)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-cluster", action="store_true", help="skip --cluster local")
    args = parser.parse_args()
    paths = build(os.path.join(args.dir, f"{args.ranks}x{args.events}"), args.ranks, args.events)
    size = sum(os.path.getsize(p) for p in paths)
    print(
        f"{len(paths)} traces, {size / 1e6:.1f} MB of JSON ({size / len(paths) / 1e6:.1f} MB each), "
        f"{os.cpu_count()} CPUs"
    )
    modes: list[tuple[str, list[str] | None]] = [
        ("serial, one process", None),
        ("serial", []),
        (f"--jobs {args.jobs}", ["--jobs", str(args.jobs)]),
    ]
    if not args.no_cluster:
        modes.append((f"--cluster local ({args.jobs} workers)", ["--cluster", "local", "--jobs", str(args.jobs)]))
    times: dict[str, list[float]] = {name: [] for name, _ in modes}
    cpu: dict[str, list[float]] = {name: [] for name, _ in modes}
    loads: dict[str, list[float]] = {name: [] for name, _ in modes}
    dbs = {name: os.path.join(args.dir, f"bench-{i}.db") for i, (name, _) in enumerate(modes)}
    for _ in range(args.repeat):
        for name, extra in modes:  # interleaved, so a busy moment does not favour one mode
            loads[name].append(os.getloadavg()[0])
            wall, seconds = run(paths, dbs[name], extra)
            times[name].append(wall)
            cpu[name].append(seconds)
    serial = statistics.median(times["serial"])
    one_process = statistics.median(times["serial, one process"])
    reference = tables(dbs["serial"])
    print("speedups: against the serial ingest (its own tokenizer helper and writer child use both cores), and")
    print("against the serial ingest in one process (the issue's baseline)")
    for name, _ in modes:
        wall = statistics.median(times[name])
        same = "same database" if tables(dbs[name]) == reference else "DIFFERENT DATABASE"
        print(
            f"{name:30} {wall:6.2f} s wall (median of {args.repeat}, {min(times[name]):.2f} best)  "
            f"{serial / wall:4.2f}x  {one_process / wall:4.2f}x  CPU {statistics.median(cpu[name]):5.2f} s  "
            f"load before runs {', '.join(f'{x:.1f}' for x in loads[name])}  {same}"
        )
    for db in dbs.values():
        os.unlink(db)


if __name__ == "__main__":
    main()
