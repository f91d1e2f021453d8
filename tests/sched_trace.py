"""A deterministic kernel-scheduling trace for the scheduling report tests.

The demo trace has no kernel data, so the scheduling views are tested on this
one: two CPUs, an app (4 threads), surfaceflinger (2 threads), a kernel worker
and a thread whose process is unknown, simulated for one second in 100 us
ticks. Threads run bursts, sleep (S, or D with a blocked-in function), are
woken by a fixed waker thread and wait in a per-CPU FIFO queue; a thread that
has run for 4 ms is preempted (R) when another is waiting. Everything comes
out of sched_switch / sched_waking / sched_blocked_reason ftrace events, as a
real kernel trace would.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Optional

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.trace_builder import TraceBuilder

START = 1_000_000_000   # absolute ns of the first tick: offsets and raw timestamps differ
TICK = 100_000          # 100 us
TICKS = 10_000          # one second
TIMESLICE = 40          # ticks a thread runs before a waiting one preempts it
S, D = 1, 2             # sched_switch prev_state values (R is 0)

# Kernel functions a D sleep is blocked in (interned kernel symbols).
BLOCKED_IN = {1: "filemap_fault", 2: "blkdev_read"}

PROCESSES = [  # pid, ppid, cmdline
    (1000, 1, ["com.example.app"]),
    (500, 1, ["/system/bin/surfaceflinger"]),
    (30, 2, ["kworker/0:1"]),
]


@dataclass
class Task:
    tid: int
    tgid: Optional[int]   # None: the process is unknown (not in the process tree)
    name: str
    cpu: int
    burst: tuple[int, int]    # ticks of CPU per run
    sleep: tuple[int, int]    # ticks asleep between runs
    sleep_state: int
    waker: int                # tid whose wakeups end the sleep (0: an interrupt on the idle CPU)
    # simulation state
    wake_at: int = 0
    left: int = 0
    ran: int = 0
    history: list = field(default_factory=list)


def tasks() -> list[Task]:
    return [
        Task(1000, 1000, "main", 0, (10, 30), (50, 150), S, 500),
        Task(1001, 1000, "RenderThread", 0, (20, 60), (80, 120), S, 1000),
        Task(1002, 1000, "Worker-1", 1, (50, 200), (20, 100), D, 30),
        Task(1003, 1000, "Worker-2", 0, (10, 20), (200, 400), S, 1002),
        Task(500, 500, "surfaceflinger", 1, (10, 20), (140, 180), S, 1001),
        Task(501, 500, "RenderEngine", 1, (20, 40), (140, 180), S, 500),
        Task(30, 30, "kworker/0:1", 0, (2, 5), (50, 100), S, 0),
        Task(777, None, "logd.writer", 1, (5, 10), (300, 500), S, 0),
    ]


def build_sched_trace(seed: int = 7) -> bytes:
    rng = random.Random(seed)
    all_tasks = tasks()
    by_tid = {t.tid: t for t in all_tasks}
    events: dict[int, list[dict]] = {0: [], 1: []}
    current: dict[int, int] = {0: 0, 1: 0}          # cpu -> running tid (0: idle)
    queues: dict[int, list[int]] = {0: [], 1: []}
    comm = {0: "swapper", **{t.tid: t.name for t in all_tasks}}
    for t in all_tasks:
        t.wake_at = rng.randint(0, 50)
        t.left = rng.randint(*t.burst)

    def running_cpu(tid: int) -> Optional[int]:
        return next((cpu for cpu, run in current.items() if run == tid and tid), None)

    def switch(ts: int, cpu: int, prev_state: int, next_tid: int) -> None:
        prev = current[cpu]
        events[cpu].append({"timestamp": ts, "pid": prev, "sched_switch": dict(
            prev_pid=prev, prev_comm=comm[prev] if prev else f"swapper/{cpu}", prev_prio=120,
            prev_state=prev_state, next_pid=next_tid, next_comm=comm[next_tid] if next_tid else f"swapper/{cpu}",
            next_prio=120)})
        current[cpu] = next_tid

    for tick in range(TICKS):
        ts = START + tick * TICK
        # Wakeups: emitted on the waker's CPU when it is running, else by whatever runs on the target CPU.
        for t in all_tasks:
            if t.wake_at == tick:
                waker_cpu = running_cpu(t.waker)
                cpu = waker_cpu if waker_cpu is not None else t.cpu
                events[cpu].append({"timestamp": ts, "pid": current[cpu], "sched_waking": dict(
                    pid=t.tid, comm=t.name, prio=120, target_cpu=t.cpu)})
                queues[t.cpu].append(t.tid)
        for cpu in (0, 1):
            tid = current[cpu]
            if tid:
                t = by_tid[tid]
                t.left -= 1
                t.ran += 1
                if t.left <= 0:
                    t.wake_at = tick + rng.randint(*t.sleep)
                    t.left = rng.randint(*t.burst)
                    t.ran = 0
                    nxt = queues[cpu].pop(0) if queues[cpu] else 0
                    switch(ts, cpu, t.sleep_state, nxt)
                    if t.sleep_state == D:
                        caller = rng.choice(sorted(BLOCKED_IN))
                        events[cpu].append({"timestamp": ts, "pid": nxt, "sched_blocked_reason": dict(
                            pid=tid, caller=caller, io_wait=1)})
                elif t.ran >= TIMESLICE and queues[cpu]:
                    t.ran = 0
                    queues[cpu].append(tid)
                    switch(ts, cpu, 0, queues[cpu].pop(0))
            elif queues[cpu]:
                switch(ts, cpu, 0, queues[cpu].pop(0))

    b = TraceBuilder()
    tree = pb.ProcessTree(
        processes=[pb.ProcessTree.Process(pid=pid, ppid=ppid, cmdline=cmdline) for pid, ppid, cmdline in PROCESSES],
        threads=[pb.ProcessTree.Thread(tid=t.tid, tgid=t.tgid, name=t.name) for t in all_tasks if t.tgid])
    b.packet(timestamp=START, process_tree=tree, trusted_packet_sequence_id=2)
    b.packet(trusted_packet_sequence_id=1, sequence_flags=1, interned_data=pb.InternedData(
        kernel_symbols=[pb.InternedString(iid=iid, str=name.encode()) for iid, name in BLOCKED_IN.items()]))
    for cpu in (0, 1):
        b.ftrace(cpu, *events[cpu])
    return b.to_bytes()
