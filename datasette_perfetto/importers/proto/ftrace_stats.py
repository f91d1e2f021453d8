"""FtraceStats packets (written by traced_probes at the start and end of a
trace) → the ftrace_cpu_* / ftrace_kprobe_* / ftrace_setup_errors stats, as
trace_processor's FtraceParser::ParseFtraceStats records them."""

from __future__ import annotations

from .packet_handlers import HandlerContext, packet_handler

START_OF_TRACE, END_OF_TRACE = 1, 2
FTRACE_STATUS_ABI_ZERO_DATA_LENGTH = 12
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# FtraceCpuStats field -> stat name stem (ftrace_cpu_<stem>_begin/_end/_delta)
CPU_STATS = (
    ("entries", "entries"),
    ("overrun", "overrun"),
    ("commit_overrun", "commit_overrun"),
    ("bytes_read", "bytes"),
    ("dropped_events", "dropped_events"),
    ("read_events", "read_events"),
)


def _seconds_to_ns(seconds: float) -> int:
    """A double of seconds as int64 nanoseconds: beyond the range, the nearest limit; NaN, INT64_MIN
    (trace_processor's plain C++ cast is undefined there; a fuzzed trace must not stop the import)."""
    ns = seconds * 1e9
    if ns != ns:
        return INT64_MIN
    return INT64_MAX if ns >= INT64_MAX else INT64_MIN if ns <= INT64_MIN else int(ns)


@packet_handler("ftrace_stats")
def _ftrace_stats(parser: HandlerContext, ts: int, evt) -> None:
    stats = parser.stats
    if evt.phase not in (START_OF_TRACE, END_OF_TRACE):
        return  # an unknown phase: nothing to compare against
    is_end = evt.phase == END_OF_TRACE
    suffix = "_end" if is_end else "_begin"
    for cpu_stats in evt.cpu_stats:
        cpu = cpu_stats.cpu
        for field, stem in CPU_STATS:
            value = getattr(cpu_stats, field)
            stats.set(f"ftrace_cpu_{stem}{suffix}", value, cpu)
            if is_end and (f"ftrace_cpu_{stem}_begin", cpu) in stats.indexed:
                stats.set(f"ftrace_cpu_{stem}_delta", value - stats.get(f"ftrace_cpu_{stem}_begin", cpu), cpu)
        stats.set(f"ftrace_cpu_now_ts{suffix}", _seconds_to_ns(cpu_stats.now_ts), cpu)
        # Can be huge when the kernel's value wrapped.
        stats.set(f"ftrace_cpu_oldest_event_ts{suffix}", _seconds_to_ns(cpu_stats.oldest_event_ts), cpu)
    kprobes = evt.kprobe_stats
    for what, value in (("hits", kprobes.hits), ("misses", kprobes.misses)):
        stats.set(f"ftrace_kprobe_{what}{suffix}", value)
        begin = stats.get(f"ftrace_kprobe_{what}_begin")
        if is_end and begin:
            stats.set(f"ftrace_kprobe_{what}_delta", value - begin)
    if not is_end:
        errors = (
            len(evt.failed_ftrace_events)
            + len(evt.unknown_ftrace_events)
            + bool(evt.atrace_errors)
            + bool(evt.exclusive_feature_error)
        )
        if errors:
            stats.inc("ftrace_setup_errors", errors)
    for code in evt.ftrace_parse_errors:
        if code == FTRACE_STATUS_ABI_ZERO_DATA_LENGTH:
            stats.inc("ftrace_abi_errors_skipped_zero_data_length")
