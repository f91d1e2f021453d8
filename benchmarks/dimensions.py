"""Latency of the report's dimension views on a synthetic distributed job (issue 16).

Builds a deterministic trace of a synchronous data-parallel job: RANKS ranks, RANKS_PER_MACHINE to a machine,
each a process `trainer` declaring its `rank` (and a `zone`, a string dimension with display names), whose
main thread runs STEPS `ProfilerStep#N` steps of forward, backward and a `gloo:all_reduce` that waits for the
slowest rank. One rank (the straggler) computes 1.5x longer, so every other rank waits for it inside the
collective. The trace is ingested once (cached beside the system temp dir unless --rebuild), then
`dimensions compare --by rank` and the slices table grouped by rank are requested through Datasette's ASGI
client with the default 1 s time limit, and their p50/p95 printed.

Target (issue 16): p50 under 250 ms for both.

Usage: python benchmarks/dimensions.py [--ranks 64] [--steps 40] [--repeat 9] [--rebuild]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from datasette_perfetto.trace_builder import TraceBuilder  # noqa: E402  (after the path is set)

RANKS_PER_MACHINE = 8
STEP_GAP = 1_000
# Per step (ns): forward and backward of a normal rank, the straggler's factor, the collective's own time.
FORWARD = 3_000_000
BACKWARD = 5_000_000
STRAGGLER_FACTOR = 1.5
TRANSFER = 400_000
OPS_PER_PHASE = 4  # aten:: children of forward and backward


def rank_job_trace(ranks: int, steps: int, straggler: int, ranks_per_machine: int = RANKS_PER_MACHINE) -> bytes:
    """The job's trace: ranks on machines 0.. (machine 0 the host, the others remote machines 1001..), each a
    process (pid 100 + its place on the machine: the same pids on every machine) declaring rank and zone."""
    b = TraceBuilder()
    machines = -(-ranks // ranks_per_machine)
    for m in range(machines):
        b.packet(
            trusted_packet_sequence_id=9,
            **({"machine_id": 1000 + m} if m else {}),
            system_info={"utsname": {"sysname": "Linux", "machine": "x86_64"}, "num_cpus": 8},
        )

    def compute(rank: int, base: int, step: int) -> int:
        jitter = (rank * 7919 + step * 104729) % 97 * 1_000  # deterministic, under 0.1 ms
        return int(base * (STRAGGLER_FACTOR if rank == straggler else 1)) + jitter

    slowest = [max(compute(r, FORWARD, s) + compute(r, BACKWARD, s) for r in range(ranks)) for s in range(steps)]
    runs: dict[tuple[int, int], list[tuple[int, int, int]]] = {}  # (machine, cpu) -> (start, end, tid)
    for rank in range(ranks):
        machine = rank // ranks_per_machine
        seq = b.sequence(1 + rank, machine_id=None if machine == 0 else 1000 + machine)
        pid = 100 + rank % ranks_per_machine
        zone = ("east", "East zone") if rank % 2 == 0 else ("west", "West zone")
        process = seq.process(pid, "trainer", ts=10, dimensions=[("rank", rank), ("zone", *zone)])
        thread = seq.thread(pid, pid, "python", ts=10)
        memory = seq.counter_track(1 << 40 | rank, "allocated", parent_uuid=process, unit="bytes", ts=10)
        t = 1_000
        for step in range(steps):
            seq.counter(t, memory, (1 + rank % 3) * 1_000_000 + step * 1_000)
            seq.slice_begin(t, thread, f"ProfilerStep#{step}")
            at = t
            for phase, base in (("forward", FORWARD), ("backward", BACKWARD)):
                dur = compute(rank, base, step)
                seq.slice_begin(at, thread, phase)
                for op in range(OPS_PER_PHASE):
                    seq.slice_begin(at + op * dur // OPS_PER_PHASE, thread, f"aten::op{op}")
                    seq.slice_end(at + (op + 1) * dur // OPS_PER_PHASE - 1, thread)
                seq.slice_end(at + dur, thread)
                at += dur
            # The collective ends when the slowest rank's data has arrived: the others wait in it.
            end = t + slowest[step] + TRANSFER
            seq.slice_begin(at, thread, "gloo:all_reduce")
            seq.slice_end(end, thread)
            seq.slice_end(end, thread)
            # On a CPU of its own while it computes (the collective waits off CPU).
            runs.setdefault((machine, rank % ranks_per_machine), []).append((t, at, pid))
            t = end + STEP_GAP
    for (machine, cpu), spans in sorted(runs.items()):
        events = []
        for start, stop, tid in spans:
            events.append({"timestamp": start, "pid": 0, "sched_switch": _switch(0, "swapper", tid, "python")})
            events.append({"timestamp": stop, "pid": tid, "sched_switch": _switch(tid, "python", 0, "swapper")})
        b.ftrace(cpu, *events, seq_id=100 + machine, machine_id=None if machine == 0 else 1000 + machine)
    return b.to_bytes()


def _switch(prev_pid: int, prev_comm: str, next_pid: int, next_comm: str) -> dict:
    return {
        "prev_comm": prev_comm,
        "prev_pid": prev_pid,
        "prev_prio": 120,
        "prev_state": 1 if prev_pid else 0,  # the thread sleeps (S) until its next step
        "next_comm": next_comm,
        "next_pid": next_pid,
        "next_prio": 120,
    }


def build(db: str, ranks: int, steps: int) -> None:
    from datasette_perfetto.ingest import ingest_bytes

    straggler = ranks * 5 // 8  # one rank, deterministic
    t0 = time.perf_counter()
    data = rank_job_trace(ranks, steps, straggler)
    if os.path.exists(db):
        os.remove(db)
    ingest_bytes(data, db)
    print(
        f"built {ranks} ranks x {steps} steps (straggler: rank {straggler}), {len(data):,} bytes, "
        f"ingested in {time.perf_counter() - t0:.1f}s -> {db}"
    )


def main() -> None:
    from report_latency import time_requests

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--db", default=os.path.join(tempfile.gettempdir(), "dimensions_ranks.db"))
    args = parser.parse_args()
    if args.rebuild or not os.path.exists(args.db):
        build(args.db, args.ranks, args.steps)
    name = os.path.splitext(os.path.basename(args.db))[0]
    base = f"/{name}/-/report"
    paths = [
        ("dimensions compare by=rank", f"{base}/dimensions/compare?by=rank"),
        ("dimensions compare .json", f"{base}/dimensions/compare.json?by=rank"),
        ("slices table group_by=rank", f"{base}/slices?group_by=rank"),
        ("slices table .json", f"{base}/slices.json?group_by=rank"),
        ("dimensions list", f"{base}/dimensions"),
        ("overview", base),
        ("slices table dim=rank=7", f"{base}/slices?dim=rank%3D7"),
    ]
    results = asyncio.run(time_requests(args.db, paths, args.repeat))
    print(f"{'page':<30} {'p50 ms':>8} {'p95 ms':>8}  status")
    for t in results:
        flag = "" if t.p50 < 250 and t.status == 200 else "  <-- over target"
        print(f"{t.label:<30} {t.p50:8.1f} {t.p95:8.1f}  {t.status}{flag}")
    print("target: p50 < 250 ms")


if __name__ == "__main__":
    main()
