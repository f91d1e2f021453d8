"""Kernel events (ftrace) and sorted packet data: dispatch to per-event handlers.

The tokenizer turns each FtraceEvent into a sorter event
`(EV_FTRACE, cpu, serialized FtraceEvent)`, and each TracePacket payload that
must be parsed in timestamp order into `(EV_PACKET, oneof name, serialized
payload)`. At parse time `FtraceParser` decodes the event and calls the
handler registered for its oneof field, as trace_processor's FtraceParser
switches on the event's field id.

Handlers live in modules by data source (`ftrace_sched`, `ftrace_counters`,
`atrace`, `system_probes`, ...) and register themselves with `@ftrace_handler`
or `@packet_handler`; `HANDLER_MODULES` lists them so importing this module
is enough for every handler to be known.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator

from google.protobuf.message import DecodeError
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ..model import TraceContext

EV_FTRACE = 4
EV_PACKET = 5
EV_COMPACT_SCHED = 6  # (EV_COMPACT_SCHED, cpu, "switch"|"waking", *fields) from compact_sched bundles
EV_MACHINE = 9  # (EV_MACHINE, machine index, event): an event of another machine's importer (TracePacket.machine_id)

# FtraceEvent oneof field name -> handler(parser, ts, cpu, pid, payload message)
FTRACE_HANDLERS: dict[str, Callable] = {}
# TracePacket oneof field name -> (payload class, handler(parser, ts, payload message))
PACKET_HANDLERS: dict[str, tuple[type, Callable]] = {}

# Modules whose import registers handlers (each a module of datasette_perfetto.importers).
HANDLER_MODULES = (
    "ftrace_sched",
    "ftrace_counters",
    "ftrace_stats",
    "ftrace_syscalls",
    "system_probes",
    "atrace",
    "concurrent_sessions",
)


def ftrace_handler(*names: str) -> Callable:
    def register(fn: Callable) -> Callable:
        for name in names:
            FTRACE_HANDLERS[name] = fn
        return fn

    return register


def packet_handler(name: str) -> Callable:
    """Registers handler(parser, ts, payload) for the TracePacket field `name`."""
    payload_class = getattr(pb, pb.TracePacket.DESCRIPTOR.fields_by_name[name].message_type.name)

    def register(fn: Callable) -> Callable:
        PACKET_HANDLERS[name] = (payload_class, fn)
        return fn

    return register


def _load_handlers() -> None:
    for name in HANDLER_MODULES:
        try:
            importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__package__}.{name}":
                raise


class FtraceParser:
    """Parses sorted kernel events and sorted packets of one trace.

    Per-source state (the sched tracker, counters per cpu, ...) hangs off this
    object as attributes that handler modules create on first use via
    `state(key, factory)`, so the modules stay independent of each other.
    """

    def __init__(self, trace: TraceContext, thread_track: Callable[[int], int] | None = None) -> None:
        _load_handlers()
        self.trace = trace
        self.stats = trace.stats
        # utid -> the thread's slice track; shared with the track-event parser
        # so atrace and TrackEvent slices of a thread nest on one track.
        self.thread_track = thread_track
        self._state: dict[str, object] = {}
        self._finishers: list[Callable[[], None]] = []
        self.clocks = None  # the trace's ClockTracker, when the format has clocks (set by the proto importer)

    def state(self, key: str, factory: Callable[[], object]) -> object:
        value = self._state.get(key)
        if value is None:
            value = self._state[key] = factory()
            finish = getattr(value, "finish", None)
            if finish is not None:
                self._finishers.append(finish)
        return value

    def parse_ftrace(self, ts: int, event: tuple) -> None:
        """event: (EV_FTRACE, cpu, serialized FtraceEvent[, value resolved at tokenize time])."""
        try:
            ev = pb.FtraceEvent.FromString(event[2])
        except DecodeError:
            self.stats.inc("ftrace_bundle_tokenizer_errors")
            return
        self.parse_ftrace_event(ts, event[1], ev, *event[3:])

    def parse_ftrace_event(self, ts: int, cpu: int, ev, *resolved) -> None:
        kind = ev.WhichOneof("event")
        if kind is None:
            return
        if kind != "sched_switch":
            # trace_processor records every other event in its raw table first, which
            # gives the emitting task a thread (and the cpu a row) before the event's own logic.
            self.trace.processes.get_or_create_live_thread(ev.pid)
            self.trace.cpu(cpu)
        handler = FTRACE_HANDLERS.get(kind)
        if handler is None:
            return  # an event we keep no table for (trace_processor keeps it only in ftrace_event)
        handler(self, ts, cpu, ev.pid, getattr(ev, kind), *resolved)

    def parse_compact_sched(self, ts: int, event: tuple) -> None:
        from .ftrace_sched import compact_sched_switch, compact_sched_waking

        _, cpu, kind, *fields = event
        (compact_sched_switch if kind == "switch" else compact_sched_waking)(self, ts, cpu, *fields)

    def parse_packet(self, ts: int, event: tuple) -> None:
        _, kind, raw = event
        payload_class, handler = PACKET_HANDLERS[kind]
        try:
            payload = payload_class.FromString(raw)
        except DecodeError:
            self.stats.inc("proto_packet_parse_errors")
            return
        handler(self, ts, payload)

    def finish(self) -> None:
        for finish in self._finishers:
            finish()


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
