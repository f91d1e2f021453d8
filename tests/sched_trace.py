"""A deterministic kernel-scheduling trace for the scheduling report tests.

Busier than the demo's scheduling, so the scheduling views are tested in depth
on this one: two CPUs, an app (4 threads), surfaceflinger (2 threads), a kernel
worker and a thread whose process is unknown, simulated for one second in 100 us
ticks by trace_builder.simulate_sched. Threads run random bursts, sleep (S, or D
with a blocked-in function), are woken by a fixed waker thread and wait in a
per-CPU FIFO queue; a thread that has run for 4 ms is preempted (R) when another
is waiting. Everything comes out of sched_switch / sched_waking /
sched_blocked_reason ftrace events, as a real kernel trace would.
"""

from __future__ import annotations

import random

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.trace_builder import D, S, SchedTask, TraceBuilder, simulate_sched

START = 1_000_000_000  # absolute ns of the first tick: offsets and raw timestamps differ
TICK = 100_000  # 100 us
TICKS = 10_000  # one second
TIMESLICE = 40  # ticks a thread runs before a waiting one preempts it

# Kernel functions a D sleep is blocked in (interned kernel symbols).
BLOCKED_IN = {1: "filemap_fault", 2: "blkdev_read"}

PROCESSES = [  # pid, ppid, cmdline
    (1000, 1, ["com.example.app"]),
    (500, 1, ["/system/bin/surfaceflinger"]),
    (30, 2, ["kworker/0:1"]),
]


def tasks() -> list[SchedTask]:
    # tid, tgid (None: the process is unknown), name, cpu, burst and sleep ticks, sleep state, waker
    return [
        SchedTask(1000, 1000, "main", 0, (10, 30), (50, 150), S, 500),
        SchedTask(1001, 1000, "RenderThread", 0, (20, 60), (80, 120), S, 1000),
        SchedTask(1002, 1000, "Worker-1", 1, (50, 200), (20, 100), D, 30),
        SchedTask(1003, 1000, "Worker-2", 0, (10, 20), (200, 400), S, 1002),
        SchedTask(500, 500, "surfaceflinger", 1, (10, 20), (140, 180), S, 1001),
        SchedTask(501, 500, "RenderEngine", 1, (20, 40), (140, 180), S, 500),
        SchedTask(30, 30, "kworker/0:1", 0, (2, 5), (50, 100), S, 0),
        SchedTask(777, None, "logd.writer", 1, (5, 10), (300, 500), S, 0),
    ]


def build_sched_trace(seed: int = 7) -> bytes:
    all_tasks = tasks()
    events = simulate_sched(
        all_tasks,
        start=START,
        tick=TICK,
        ticks=TICKS,
        cpus=2,
        rng=random.Random(seed),
        kernel_symbols=BLOCKED_IN,
        timeslice=TIMESLICE,
    )
    b = TraceBuilder()
    tree = pb.ProcessTree(
        processes=[pb.ProcessTree.Process(pid=pid, ppid=ppid, cmdline=cmdline) for pid, ppid, cmdline in PROCESSES],
        threads=[pb.ProcessTree.Thread(tid=t.tid, tgid=t.tgid, name=t.name) for t in all_tasks if t.tgid],
    )
    b.packet(timestamp=START, process_tree=tree, trusted_packet_sequence_id=2)
    b.sched(events, kernel_symbols=BLOCKED_IN)
    return b.to_bytes()
