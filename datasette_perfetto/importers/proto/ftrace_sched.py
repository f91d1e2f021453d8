"""Scheduling from kernel events: ftrace sched_switch / sched_waking / task
lifecycle events and the OS-neutral generic_kernel_* packets → sched,
thread_state and thread/process lifetimes (trace_processor's
FtraceSchedEventTracker, ThreadStateTracker and GenericKernelParser)."""

from __future__ import annotations

from ...trackers.process_tracker import THREAD_NAME_PRIORITY_FTRACE, THREAD_NAME_PRIORITY_PROCESS_TREE
from ...trackers.sched_tracker import (
    RUNNING,
    S_DUR,
    S_TS,
    PendingSched,
    SchedTracker,
    kernel_version,
    task_state_string,
)
from ..common.values import text
from .ftrace_counters import cpu_counter_track
from .ftrace_raw import insert_raw, sched_switch_args, sched_waking_args
from .packet_handlers import HandlerContext, compact_sched_handler, ftrace_handler, packet_handler

CLONE_THREAD = 0x00010000

# GenericKernelTaskStateEvent.TaskStateEnum → thread_state.state (index = enum value).
GENERIC_TASK_STATES = ("Unknown", "Created", "R", "Running", "S", "D", "T", "Z", "X")
TASK_STATE_UNKNOWN, TASK_STATE_CREATED, TASK_STATE_RUNNING, TASK_STATE_DESTROYED = 0, 1, 3, 8
GENERIC_KERNEL_THREAD_PRIORITY = THREAD_NAME_PRIORITY_FTRACE  # same rank as ftrace in trace_processor


class KernelSched:
    """Per-trace scheduling state shared by the ftrace and generic-kernel paths."""

    def __init__(self, parser: HandlerContext) -> None:
        self.trace = parser.trace
        self.stats = parser.stats
        self.procs = parser.trace.processes
        self.tracker = SchedTracker(parser.trace.storage)
        self._kernel_version: tuple | None = None
        # generic kernel: slices closed by another task's switch-in, awaiting their end state
        self.hanging: dict[int | None, PendingSched] = {}

    def kernel_version(self) -> tuple | None:
        if self._kernel_version is None:
            meta = self.trace.metadata
            self._kernel_version = kernel_version(meta.get("system_name"), meta.get("system_release")) or ()
        return self._kernel_version or None

    def thread(self, tid: int, comm: str | None = None, priority: int = THREAD_NAME_PRIORITY_FTRACE) -> int:
        utid = self.procs.get_or_create_live_thread(tid)
        if comm:
            self.procs.set_thread_name(utid, comm, priority)
        return utid

    def state_string(self, raw: int) -> str | None:
        state = task_state_string(raw, self.kernel_version())
        if state is None:
            self.stats.inc("task_state_invalid")
        return state

    def finish(self) -> None:
        self.tracker.finish()


def kernel_sched(parser: HandlerContext) -> KernelSched:
    return parser.state("kernel_sched", lambda: KernelSched(parser))


# -- ftrace ------------------------------------------------------------------------


@ftrace_handler("sched_switch")
def _sched_switch(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    ks = kernel_sched(parser)
    next_pid = ev.next_pid & 0xFFFFFFFF
    prev_pid = ev.prev_pid & 0xFFFFFFFF
    next_utid = ks.thread(next_pid, text(ev.next_comm))
    pending = ks.tracker.pending_for(cpu)
    prev_state = ks.state_string(ev.prev_state)
    if pending.row is not None:
        if prev_pid == pending.last_pid:
            ks.tracker.close_slice(pending.row, ts, prev_state)
        else:
            ks.stats.inc("mismatched_sched_switch_tids")
    # prev_comm again: the thread may have been renamed while it ran.
    prev_comm = text(ev.prev_comm)
    prev_utid = ks.thread(prev_pid, prev_comm)
    if parser.ftrace_raw:
        args = sched_switch_args(
            prev_comm, prev_pid, ev.prev_prio, ev.prev_state, text(ev.next_comm), next_pid, ev.next_prio
        )
        insert_raw(parser.trace, ts, "sched_switch", prev_utid, parser.trace.cpu(cpu), args)
    switch_in(ks, cpu, ts, next_pid, next_utid, ev.next_prio)
    ks.tracker.push_sched_switch(ts, parser.trace.cpu(cpu), prev_utid, prev_state, next_utid)


def switch_in(ks: KernelSched, cpu: int, ts: int, pid: int, utid: int, prio: int) -> None:
    pending = ks.tracker.pending_for(cpu)
    pending.row = ks.tracker.start_slice(ks.trace.cpu(cpu), ts, utid, prio)
    pending.last_pid, pending.last_utid, pending.last_prio = pid, utid, prio


@ftrace_handler("sched_waking")
def _sched_waking(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    ks = kernel_sched(parser)
    wakee = ks.thread(ev.pid & 0xFFFFFFFF, text(ev.comm))
    waker = ks.thread(pid)
    ks.tracker.push_waking(ts, wakee, waker)


@ftrace_handler("sched_process_free")
def _sched_process_free(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    kernel_sched(parser).procs.end_thread(ts, ev.pid & 0xFFFFFFFF)


@ftrace_handler("task_newtask")
def _task_newtask(parser: HandlerContext, ts: int, cpu: int, source_tid: int, ev) -> None:
    ks = kernel_sched(parser)
    procs = ks.procs
    new_tid = ev.pid & 0xFFFFFFFF
    comm = text(ev.comm)
    if new_tid == 0:
        return  # boot-time tracing: init creating the swapper/N idle tasks
    if not ev.clone_flags & CLONE_THREAD:
        # fork(): a new process whose main thread is the new task.
        upid = procs.start_new_process(new_tid)
        proc = procs.process(upid)
        proc.start_ts = ts
        procs.set_process_name(upid, comm, 4)
        new_utid = procs.get_or_create_live_thread(new_tid)
        procs.thread(new_utid).start_ts = ts
        procs.set_thread_name(new_utid, comm, THREAD_NAME_PRIORITY_FTRACE)
        source_utid = procs.get_or_create_live_thread(source_tid)
        procs.set_parent_from_thread(upid, source_utid)
        ks.tracker.push_new_task(ts, new_utid, source_utid)
        return
    # A thread (clone with CLONE_THREAD): same process as its creator.
    source_utid = procs.get_or_create_live_thread(source_tid)
    new_utid = procs.start_new_thread(ts, new_tid)
    procs.set_thread_name(new_utid, comm, THREAD_NAME_PRIORITY_FTRACE)
    procs.associate_threads(source_utid, new_utid)
    ks.tracker.push_new_task(ts, new_utid, source_utid)


@ftrace_handler("task_rename")
def _task_rename(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    procs = kernel_sched(parser).procs
    utid = procs.get_or_create_live_thread(ev.pid & 0xFFFFFFFF)
    procs.set_thread_name_and_maybe_process_name(utid, text(ev.newcomm), THREAD_NAME_PRIORITY_FTRACE)


@ftrace_handler("sched_blocked_reason")
def _sched_blocked_reason(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, blocked_function=None) -> None:
    ks = kernel_sched(parser)
    utid = ks.procs.get_or_create_live_thread(ev.pid & 0xFFFFFFFF)
    ks.tracker.push_blocked_reason(utid, bool(ev.io_wait) if ev.HasField("io_wait") else None, blocked_function)


@ftrace_handler("sched_cpu_util_cfs")
def _sched_cpu_util_cfs(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, *_) -> None:
    """The CFS class's view of a CPU (Android kernels): its utilisation, capacity and number
    of runnable tasks, one counter track each per CPU of the event's machine."""
    target = ev.cpu & 0xFFFFFFFF
    trace = parser.trace
    for kind, name, value in (
        ("cpu_utilization", "Util", ev.cpu_util),
        ("cpu_capacity", "Cap", ev.capacity),
        ("cpu_nr_running", "Nr Running", ev.nr_running),
    ):
        track = cpu_counter_track(trace, kind, target, f"Cpu {target} {name}")
        trace.insert_counter(ts, track, float(value))


# -- compact sched (tokenized into these calls) -------------------------------------


@compact_sched_handler("switch")
def compact_sched_switch(
    parser: HandlerContext, ts: int, cpu: int, prev_state: int, next_pid: int, next_prio: int, next_comm: str
) -> None:
    ks = kernel_sched(parser)
    next_utid = ks.thread(next_pid, next_comm)
    pending = ks.tracker.pending_for(cpu)
    if pending.last_utid is None:
        # The first switch of a CPU has no prev_* fields to infer: it only primes the state.
        ks.stats.inc("compact_sched_switch_skipped")
        pending.last_pid, pending.last_utid, pending.last_prio = next_pid, next_utid, next_prio
        return
    state = ks.state_string(prev_state)
    if pending.row is not None:
        ks.tracker.close_slice(pending.row, ts, state)
    prev_utid = pending.last_utid
    # The prev_* fields are the last switch's next_*, its name looked up afresh (a task_rename may
    # have come since).
    if parser.ftrace_raw:
        prev_comm = ks.procs.thread(prev_utid).name
        args = sched_switch_args(
            prev_comm, pending.last_pid, pending.last_prio, prev_state, next_comm, next_pid, next_prio
        )
        insert_raw(parser.trace, ts, "sched_switch", prev_utid, parser.trace.cpu(cpu), args)
    if parser.raw_only:  # soft-dropped (ftrace.py): the cpu's state follows, no slice starts
        pending.row = None
        pending.last_pid, pending.last_utid, pending.last_prio = next_pid, next_utid, next_prio
        return
    switch_in(ks, cpu, ts, next_pid, next_utid, next_prio)
    ks.tracker.push_sched_switch(ts, parser.trace.cpu(cpu), prev_utid, state, next_utid)


@compact_sched_handler("waking")
def compact_sched_waking(
    parser: HandlerContext,
    ts: int,
    cpu: int,
    pid: int,
    comm: str,
    common_flags: int | None,
    target_cpu: int,
    prio: int,
) -> None:
    ks = kernel_sched(parser)
    pending = ks.tracker.pending_for(cpu)
    if pending.last_utid is None:
        ks.stats.inc("compact_sched_waking_skipped")  # the waker is whoever runs on the cpu: unknown yet
        return
    if parser.ftrace_raw:
        args = sched_waking_args(comm, pid, prio, target_cpu)
        insert_raw(parser.trace, ts, "sched_waking", pending.last_utid, parser.trace.cpu(cpu), args, common_flags)
    if parser.raw_only:  # soft-dropped (ftrace.py)
        return
    # The wakee's comm names nothing here (trace_processor names threads from switches and typed wakings).
    wakee = ks.procs.get_or_create_live_thread(pid)
    ks.tracker.push_waking(ts, wakee, pending.last_utid, common_flags)


# -- generic kernel packets ------------------------------------------------------------


@packet_handler("generic_kernel_task_state_event")
def _generic_task_state(parser: HandlerContext, ts: int, ev) -> None:
    ks = kernel_sched(parser)
    comm = text(ev.comm)
    state = ev.state
    utid = _generic_utid(ks, ts, ev.tid, comm, state)
    if utid is None:
        return
    state_name = GENERIC_TASK_STATES[state]
    cpu = ev.cpu
    pending = ks.tracker.pending_for(cpu)
    previous_last_utid = pending.last_utid
    outcome = _generic_switch(ks, ts, cpu, ev.tid, utid, state_name, ev.prio)
    tracker = ks.tracker
    if outcome == "update_end_state":
        tracker.update_pending_state(utid, state_name)
        return
    if outcome == "start_with_pending" and previous_last_utid is not None:  # set with the pending slice
        # The task switched out had no state event of its own: its state is unknown.
        tracker.push_thread_state(ts, previous_last_utid, None, None, ks.stats)
    ucpu = parser.trace.cpu(cpu) if state_name == RUNNING else None
    tracker.push_thread_state(ts, utid, state_name, ucpu, ks.stats)


def _generic_utid(ks: KernelSched, ts: int, tid: int, comm: str, state: int) -> int | None:
    procs = ks.procs
    utid: int | None
    if state == TASK_STATE_CREATED:
        if procs.get_thread_or_null(tid) is not None:
            ks.stats.inc("generic_task_state_invalid_order")
            return None
        utid = procs.start_new_thread(ts, tid)
        procs.set_thread_name(utid, comm, GENERIC_KERNEL_THREAD_PRIORITY)
        return utid
    if state == TASK_STATE_DESTROYED:
        utid = procs.get_thread_or_null(tid)
        if utid is None:
            utid = procs.get_or_create_live_thread(tid)
            procs.set_thread_name(utid, comm, GENERIC_KERNEL_THREAD_PRIORITY)
        procs.end_thread(ts, tid)
        return utid
    if state == TASK_STATE_UNKNOWN or state >= len(GENERIC_TASK_STATES):
        ks.stats.inc("task_state_invalid")
        return None
    utid = procs.get_thread_or_null(tid)
    if utid is not None:
        previous = ks.tracker.last_state_of(utid)
        # Nothing follows death but destruction, and a running task cannot start running.
        if previous == "Z" or (state == TASK_STATE_RUNNING and previous == RUNNING):
            ks.stats.inc("generic_task_state_invalid_order")
            return None
    else:
        utid = procs.get_or_create_live_thread(tid)
    procs.set_thread_name(utid, comm, GENERIC_KERNEL_THREAD_PRIORITY)
    return utid


def _generic_switch(ks: KernelSched, ts: int, cpu: int, tid: int, utid: int, state: str, prio: int) -> str:
    tracker = ks.tracker
    pending = tracker.pending_for(cpu)
    if state == RUNNING:
        outcome = "start"
        if pending.row is not None:
            # Switched out without its own event yet: keep the slice for a late end state.
            tracker.close_slice(pending.row, ts, None, keep=True)
            kept = PendingSched()
            kept.row, kept.last_pid, kept.last_utid = pending.row, pending.last_pid, pending.last_utid
            old = ks.hanging.get(pending.last_utid)
            if old is not None and old.row is not None:
                tracker.release_slice(old.row)
            ks.hanging[pending.last_utid] = kept
            outcome = "start_with_pending"
        switch_in(ks, cpu, ts, tid, utid, prio)
        return outcome
    if pending.row is not None and tid == pending.last_pid:
        tracker.close_slice(pending.row, ts, state)
        tracker.pending[cpu] = PendingSched()
        return "close"
    hanging = ks.hanging.get(utid)
    if hanging is not None and hanging.row is not None:
        row = hanging.row
        if row[S_DUR] >= 0 and ts == row[S_TS] + row[S_DUR]:
            row[4] = state  # its end state, reported at the instant it was switched out
            tracker.release_slice(row)
            del ks.hanging[utid]
            return "update_end_state"
    return "none"


@packet_handler("generic_kernel_task_rename_event")
def _generic_task_rename(parser: HandlerContext, ts: int, ev) -> None:
    procs = kernel_sched(parser).procs
    utid = procs.get_or_create_live_thread(ev.tid)
    procs.set_thread_name_and_maybe_process_name(utid, text(ev.comm), GENERIC_KERNEL_THREAD_PRIORITY)


@packet_handler("generic_kernel_process_tree")
def _generic_process_tree(parser: HandlerContext, ts: int, tree) -> None:
    procs = kernel_sched(parser).procs
    for proc in tree.processes:
        if not proc.HasField("cmdline"):
            continue
        cmdline = text(proc.cmdline)
        name = cmdline.split(" ", 1)[0]  # argv0 when the command line has arguments
        parent_upid = procs.get_or_create_process(proc.ppid, with_main_thread=False)
        upid = procs.get_or_create_process(proc.pid, with_main_thread=False)
        row = procs.process(upid)
        row.parent_upid = parent_upid
        procs.set_process_name(upid, name, 4)
        row.cmdline = cmdline
    for thread in tree.threads:
        upid = procs.get_or_create_process(thread.pid, with_main_thread=False)
        utid = procs.thread_in_process(thread.tid, upid)
        thread_row = procs.thread(utid)
        thread_row.is_main_thread = int(thread.is_main_thread)
        thread_row.is_idle = int(thread.is_idle)
        if thread.HasField("comm"):
            procs.set_thread_name(utid, text(thread.comm), THREAD_NAME_PRIORITY_PROCESS_TREE)
