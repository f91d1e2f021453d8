"""Kernel events (ftrace) and sorted packet data: dispatch to per-event handlers.

The tokenizer turns each FtraceEvent into a sorter event
`(EV_FTRACE, cpu, serialized FtraceEvent)`, and each TracePacket payload that
must be parsed in timestamp order into `(EV_PACKET, oneof name, serialized
payload)`. At parse time `FtraceParser` decodes the event and calls the
handler registered for its oneof field (packet_handlers.py), as
trace_processor's FtraceParser switches on the event's field id.
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.message import DecodeError
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ..common.event_kinds import EV_COMPACT_SCHED, EV_FTRACE, EV_MACHINE
from ..common.values import text

# Imported for their handlers, which register themselves in packet_handlers.
from . import (  # noqa: F401
    android_cpu_per_uid,
    android_logs,
    android_packages,
    atrace,
    concurrent_sessions,
    frame_events,
    frame_timeline,
    ftrace_block,
    ftrace_counters,
    ftrace_display,
    ftrace_drm,
    ftrace_gpu,
    ftrace_memory,
    ftrace_sched,
    ftrace_stats,
    ftrace_syscalls,
    ftrace_video,
    gpu,
    journald,
    power,
    system_probes,
    trace_metadata,
)
from .ftrace_raw import field_args, generic_args, insert_raw
from .ftrace_tokenizer import KERNEL_SYMBOL_FIELDS, SYMBOL_TAKING_HANDLERS
from .packet_handlers import COMPACT_SCHED_HANDLERS, FTRACE_HANDLERS, PACKET_HANDLERS, HandlerContext


class FtraceParser(HandlerContext):
    """Parses sorted kernel events and sorted packets of one trace: decodes each and calls
    the handler registered for it, with this object as its HandlerContext."""

    def parse_ftrace(self, ts: int, event: tuple) -> None:
        """event: (EV_FTRACE, cpu, serialized FtraceEvent[, value resolved at tokenize time]); a retimed event's
        halves (ftrace_tokenizer.RETIMED_EVENTS) add the kernel's time for the handler's half, None for the
        ftrace_event row's."""
        try:
            ev = pb.FtraceEvent.FromString(event[2])
        except DecodeError:
            self.stats.inc("ftrace_bundle_tokenizer_errors")
            return
        if len(event) > 4:
            raw_ts = event[4]
            if raw_ts is None:
                self.parse_ftrace_event(ts, event[1], ev, handle=False)
            else:  # the drop windows judge it by the kernel's time, as trace_processor's raw_ts
                self.parse_ftrace_event(ts, event[1], ev, raw_row=False, window_ts=raw_ts)
            return
        self.parse_ftrace_event(ts, event[1], ev, *event[3:])

    # trace_processor's drop windows, set at the first kernel event: events before tracing
    # started are dropped (counted), and events before every CPU's buffer holds complete data
    # (soft drop) only make their task and cpu known. Until then every event checks.
    _soft_drop_before = 1 << 63
    _drop_before = 0
    _windows_set = False

    def _set_drop_windows(self) -> None:
        self._windows_set = True
        meta = self.trace.metadata
        started = meta.get("tracing_started_ns")
        self._drop_before = started if isinstance(started, int) else 0
        complete = meta.get("ftrace_latest_data_start_ns")
        self._soft_drop_before = max(complete if isinstance(complete, int) else 0, self._drop_before)

    def _in_drop_window(self, ts: int) -> bool:
        """For an event before the soft-drop bound: True (counted) if it is before tracing started."""
        if not self._windows_set:
            self._set_drop_windows()
        if ts < self._drop_before:
            self.stats.inc("ftrace_packet_before_tracing_start")
            return True
        return False

    def parse_ftrace_event(
        self, ts: int, cpu: int, ev, *resolved, raw_row: bool = True, handle: bool = True, window_ts: int | None = None
    ) -> None:
        """The event's ftrace_event row (unless not `raw_row`), then its handler (if `handle`); the drop
        windows judge it by `window_ts` (default: ts)."""
        kind = ev.WhichOneof("event")
        if kind is None:
            return
        judged = ts if window_ts is None else window_ts
        if judged < self._soft_drop_before and (self._in_drop_window(judged) or judged < self._soft_drop_before):
            if raw_row and kind != "sched_switch" and judged >= self._drop_before:
                self._raw_event(ts, cpu, ev, kind, resolved)  # soft drop: the raw event only
            return
        if raw_row and kind != "sched_switch":
            # Every other event is a raw row first (the sched_switch handler writes its own), which
            # gives the emitting task a thread (and the cpu a row) before the event's own logic.
            self._raw_event(ts, cpu, ev, kind, resolved)
        if not handle:
            return
        handler = FTRACE_HANDLERS.get(kind)
        if handler is None:
            return  # an event we keep no table for: only its raw row
        if kind in SYMBOL_TAKING_HANDLERS:
            handler(self, ts, cpu, ev.pid, getattr(ev, kind), *resolved)
        else:
            handler(self, ts, cpu, ev.pid, getattr(ev, kind))

    def _raw_event(self, ts: int, cpu: int, ev, kind: str, resolved: tuple) -> None:
        """The event's ftrace_event row: its task, CPU and fields."""
        utid = self.trace.processes.get_or_create_live_thread(ev.pid)
        ucpu = self.trace.cpu(cpu)
        if not self.ftrace_raw:
            return  # the task and the cpu are known all the same, as trace_processor's row makes them
        payload = getattr(ev, kind)
        if kind == "generic":
            insert_raw(self.trace, ts, text(payload.event_name), utid, ucpu, generic_args(payload))
        else:
            symbol_field = KERNEL_SYMBOL_FIELDS.get(kind)
            symbol = resolved[0] if symbol_field and resolved else None
            insert_raw(self.trace, ts, kind, utid, ucpu, field_args(payload, symbol_field, symbol))

    def parse_compact_sched(self, ts: int, event: tuple) -> None:
        _, cpu, kind, *fields = event
        if ts < self._soft_drop_before and (self._in_drop_window(ts) or ts < self._soft_drop_before):
            if ts >= self._drop_before:
                self.raw_only = True  # soft drop: per-cpu state follows, no rows
                try:
                    COMPACT_SCHED_HANDLERS[kind](self, ts, cpu, *fields)
                finally:
                    self.raw_only = False
            return
        COMPACT_SCHED_HANDLERS[kind](self, ts, cpu, *fields)

    def parse_packet(self, ts: int, event: tuple) -> None:
        kind, raw = event[1], event[2]
        payload_class, handler = PACKET_HANDLERS[kind]
        try:
            payload = payload_class.FromString(raw)
        except DecodeError:
            self.stats.inc("proto_packet_parse_errors")
            return
        handler(self, ts, payload, *event[3:])  # values a tokenize_handler resolved


def queue_of(event: tuple) -> int:
    """trace_processor's sorter queue: one per CPU for kernel events, 0 for the rest."""
    kind = event[0]
    if kind == EV_MACHINE:
        return (event[1] + 1) * 4096 + queue_of(event[2])  # another machine's queues come after the host's
    return event[1] + 1 if kind == EV_FTRACE or kind == EV_COMPACT_SCHED else 0


def order_ties_by_queue(events: Iterator[tuple[int, tuple]]) -> Iterator[tuple[int, tuple]]:
    """Reorders events that share a timestamp the way trace_processor's sorter
    emits them. It merges per-CPU queues by draining the queue with the
    smallest head while its events are <= every other head, so at a tie the
    queue it was already draining goes first, then the others by CPU order.
    Per-CPU interleavings at equal timestamps change sched/thread_state row
    order, which queries without a full ORDER BY see."""
    current = -1
    group: list[tuple[int, tuple]] = []
    group_ts = None
    for item in events:
        if item[0] != group_ts:
            if group:
                current = yield from _emit_group(group, current)
                group = []
            group_ts = item[0]
        group.append(item)
    if group:
        yield from _emit_group(group, current)


def _emit_group(group: list[tuple[int, tuple]], current: int):
    if len(group) == 1:
        yield group[0]
        return queue_of(group[0][1])
    by_queue: dict[int, list] = {}
    for item in group:
        by_queue.setdefault(queue_of(item[1]), []).append(item)
    order = sorted(by_queue)
    if current in by_queue:
        order.remove(current)
        order.insert(0, current)
    for q in order:
        yield from by_queue[q]
    return order[-1]
