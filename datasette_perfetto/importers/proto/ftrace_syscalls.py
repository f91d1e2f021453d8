"""Kernel slices on thread tracks: syscalls (raw_syscalls sys_enter / sys_exit),
function-graph tracing (funcgraph_entry / funcgraph_exit), workqueue work
items and kprobes, as trace_processor's SyscallTracker and FtraceParser build them."""

from __future__ import annotations

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ..common.values import text
from .packet_handlers import HandlerContext, ftrace_handler
from .syscall_tables import syscall_names

# trace_processor names numbers below this (kMaxSyscalls) and ignores the rest.
MAX_SYSCALLS = 550


def thread_slice_track(parser: HandlerContext, utid: int) -> int:
    """The thread's slice track (shared with atrace and track events)."""
    if parser.thread_track is not None:
        return parser.thread_track(utid)
    return parser.trace.tracks.intern("thread_execution", (("utid", utid),), "slice")


class SyscallTracker:
    """One open syscall slice per thread at a time, named from the trace's
    architecture (SystemInfo's uname machine; unknown → "sys_<number>")."""

    def __init__(self, parser: HandlerContext) -> None:
        self.parser = parser
        self.trace = parser.trace
        self._names: list[str] | None = None
        # Threads inside a sys_write that an atrace marker may cut short.
        self.in_sys_write: set[int] = set()

    def name(self, number: int) -> str | None:
        if self._names is None:
            # SystemInfo is read while tokenizing, so the machine is known by now.
            machine = self.trace.metadata.get("system_machine")
            table = syscall_names(machine if isinstance(machine, str) else None)
            self._names = [
                f"sys_{table[i]}" if i < len(table) and table[i] else f"sys_{i}" for i in range(MAX_SYSCALLS)
            ]
        return self._names[number] if 0 <= number < MAX_SYSCALLS else None

    def enter(self, ts: int, utid: int, number: int, args: list) -> None:
        name = self.name(number)
        if name is None:
            return
        track = thread_slice_track(self.parser, utid)
        if name == "sys_rt_sigreturn":
            # It never returns: an instant, as trace_processor records it.
            self.trace.slices.scoped(ts, 0, track, None, name, args)
        else:
            self.trace.slices.begin(ts, track, None, name, args)
        if name == "sys_write":
            self.in_sys_write.add(utid)

    def exit(self, ts: int, utid: int, number: int, args: list) -> None:
        name = self.name(number)
        if name is None:
            return
        if name == "sys_write":
            # An exit without its enter (before the trace began), or one
            # already closed by truncate_write().
            if utid not in self.in_sys_write:
                return
            self.in_sys_write.discard(utid)
        self.trace.slices.end(ts, thread_slice_track(self.parser, utid), None, name, args)

    def truncate_write(self, ts: int, utid: int) -> None:
        """An atrace marker is written by a sys_write: end that write where the
        marker's slice begins or ends, so the two nest (stat truncated_sys_write_duration)."""
        if utid not in self.in_sys_write:
            return
        self.in_sys_write.discard(utid)
        self.trace.stats.inc("truncated_sys_write_duration")
        self.trace.slices.end(ts, thread_slice_track(self.parser, utid), None, "sys_write", [])


def syscall_tracker(parser: HandlerContext) -> SyscallTracker:
    return parser.state("syscalls", lambda: SyscallTracker(parser))


def _live_thread(parser: HandlerContext, tid: int) -> int:
    return parser.trace.processes.get_or_create_live_thread(tid)


@ftrace_handler("sys_enter")
def _sys_enter(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, *_) -> None:
    args = [("args", f"args[{i}]", "uint", value) for i, value in enumerate(ev.args)]
    syscall_tracker(parser).enter(ts, _live_thread(parser, pid), ev.id, args)


@ftrace_handler("sys_exit")
def _sys_exit(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, *_) -> None:
    args = [("ret", "ret", "int", ev.ret)] if ev.HasField("ret") else []
    syscall_tracker(parser).exit(ts, _live_thread(parser, pid), ev.id, args)


# -- function graph ------------------------------------------------------------------


def _funcgraph_track(parser: HandlerContext, cpu: int, pid: int) -> int:
    if pid == 0:
        # Every cpu's idle task is tid 0 and they run at once: one track per cpu instead.
        return parser.trace.tracks.intern("cpu_funcgraph", (("cpu", cpu),), "slice", f"swapper{cpu} -funcgraph")
    utid = _live_thread(parser, pid)
    return parser.trace.tracks.intern("thread_funcgraph", (("utid", utid),), "slice", "Funcgraph")


def kernel_function_name(address: int, symbol: str | None) -> str:
    """The interned kernel symbol, else the address in hex (as trace_processor shows it)."""
    if symbol is not None:
        return symbol
    return f"{address:#x}" if address else "0"


@ftrace_handler("funcgraph_entry")
def _funcgraph_entry(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, symbol: str | None = None) -> None:
    name = kernel_function_name(ev.func, symbol)
    parser.trace.slices.begin(ts, _funcgraph_track(parser, cpu, pid), None, name, [])


@ftrace_handler("funcgraph_exit")
def _funcgraph_exit(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, symbol: str | None = None) -> None:
    name = kernel_function_name(ev.func, symbol)
    parser.trace.slices.end(ts, _funcgraph_track(parser, cpu, pid), None, name, [])


# -- workqueues ----------------------------------------------------------------------


@ftrace_handler("workqueue_execute_start")
def _workqueue_start(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, symbol: str | None = None) -> None:
    track = thread_slice_track(parser, _live_thread(parser, pid))
    name = kernel_function_name(ev.function, symbol)
    parser.trace.slices.begin(ts, track, "workqueue", name, [("cpu", "cpu", "int", cpu)])


@ftrace_handler("workqueue_execute_end")
def _workqueue_end(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, *_) -> None:
    parser.trace.slices.end(ts, thread_slice_track(parser, _live_thread(parser, pid)), "workqueue", None, [])


# -- kprobes (trace_processor's FtraceParser::ParseKprobe) ----------------------------------------

KPROBE_BEGIN, KPROBE_END, KPROBE_INSTANT = (
    pb.KprobeEvent.KPROBE_TYPE_BEGIN,
    pb.KprobeEvent.KPROBE_TYPE_END,
    pb.KprobeEvent.KPROBE_TYPE_INSTANT,
)


@ftrace_handler("kprobe_event")
def _kprobe(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    """A probe's begin / end / instant: a slice named by the probe on the thread it hit."""
    track = thread_slice_track(parser, _live_thread(parser, pid))
    name = text(ev.name)
    if ev.type == KPROBE_BEGIN:
        parser.trace.slices.begin(ts, track, None, name, [])
    elif ev.type == KPROBE_END:
        parser.trace.slices.end(ts, track, None, name, [])
    elif ev.type == KPROBE_INSTANT:
        parser.trace.slices.scoped(ts, 0, track, None, name, [])
