"""The registry of per-event handlers for kernel events and sorted packet data.

Handlers live in modules by data source (`ftrace_sched`, `ftrace_counters`, `atrace`,
`system_probes`, ...) and register themselves here with `@ftrace_handler`,
`@packet_handler` or `@compact_sched_handler`; `FtraceParser` (ftrace.py) dispatches
to them, as trace_processor's FtraceParser switches on the event's field id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ...model import TraceContext
from .clock_tracker import ClockTracker

T = TypeVar("T")

# FtraceEvent oneof field name -> handler(parser, ts, cpu, pid, payload message[, resolved symbol])
FTRACE_HANDLERS: dict[str, Callable] = {}
# TracePacket oneof field name -> (payload class, handler(parser, ts, payload message)); the perfetto
# package's generated classes are untyped.
PACKET_HANDLERS: dict[str, tuple[Any, Callable]] = {}
# TracePacket extension field number (one the perfetto package's TracePacket does not declare, e.g.
# frame_timeline_event = 76) -> the PACKET_HANDLERS name its payload is parsed under.
EXTENSION_PACKETS: dict[int, str] = {}
# "switch" | "waking" -> handler(parser, ts, cpu, *fields) of a compact_sched record
COMPACT_SCHED_HANDLERS: dict[str, Callable] = {}
# TracePacket oneof field name -> handler(importer, packet, sequence state, ts) run by the
# tokenizer in file order (for packets needing interned data or tokenize-time effects);
# it queues what the parse phase needs itself, e.g. (EV_PACKET, name, payload, *resolved)
# for the packet_handler, which then gets the resolved values as extra arguments.
TOKENIZE_HANDLERS: dict[str, Callable] = {}


def ftrace_handler(*names: str) -> Callable[[Callable], Callable]:
    """Registers handler(parser, ts, cpu, pid, payload) for the FtraceEvent fields `names`."""

    def register(fn: Callable) -> Callable:
        for name in names:
            FTRACE_HANDLERS[name] = fn
        return fn

    return register


def packet_handler(name: str) -> Callable[[Callable], Callable]:
    """Registers handler(parser, ts, payload) for the TracePacket field `name`."""
    payload_class = getattr(pb, pb.TracePacket.DESCRIPTOR.fields_by_name[name].message_type.name)

    def register(fn: Callable) -> Callable:
        PACKET_HANDLERS[name] = (payload_class, fn)
        return fn

    return register


def extension_packet_handler(name: str, field_number: int, payload_class: Any) -> Callable[[Callable], Callable]:
    """Registers handler(parser, ts, payload) for the TracePacket extension field `field_number`
    (decoded with `payload_class`), parsed in timestamp order like a packet_handler's."""

    def register(fn: Callable) -> Callable:
        PACKET_HANDLERS[name] = (payload_class, fn)
        EXTENSION_PACKETS[field_number] = name
        return fn

    return register


def tokenize_handler(name: str) -> Callable[[Callable], Callable]:
    """Registers handler(importer, packet, seq, ts) for the TracePacket field `name`, run at
    tokenize time (ts is the last timestamp seen when the packet has none)."""

    def register(fn: Callable) -> Callable:
        TOKENIZE_HANDLERS[name] = fn
        return fn

    return register


def compact_sched_handler(kind: str) -> Callable[[Callable], Callable]:
    """Registers handler(parser, ts, cpu, *fields) for compact_sched's `kind` records."""

    def register(fn: Callable) -> Callable:
        COMPACT_SCHED_HANDLERS[kind] = fn
        return fn

    return register


class HandlerContext:
    """What every handler gets as its first argument: the trace, and per-source state
    (the sched tracker, counters per cpu, ...) that handler modules create on first use
    via `state(key, factory)`, so the modules stay independent of each other."""

    def __init__(self, trace: TraceContext, thread_track: Callable[[int], int] | None = None) -> None:
        self.trace = trace
        self.stats = trace.stats
        # utid -> the thread's slice track; shared with the track-event parser
        # so atrace and TrackEvent slices of a thread nest on one track.
        self.thread_track = thread_track
        self._state: dict[str, object] = {}
        self._finishers: list[Callable[[], None]] = []
        self.clocks: ClockTracker | None = None  # when the format has clocks (set by the proto importer)
        self.raw_only = False  # a soft-dropped kernel event (ftrace.py): update state, add no rows
        self.ftrace_raw = False  # every kernel event also a row of ftrace_event (options.Content.ftrace_raw)

    def state(self, key: str, factory: Callable[[], T]) -> T:
        value = self._state.get(key)
        if value is None:
            value = self._state[key] = factory()
            finish = getattr(value, "finish", None)
            if finish is not None:
                self._finishers.append(finish)
        return cast(T, value)  # each key is always made by the same factory

    def finish(self) -> None:
        for finish in self._finishers:
            finish()
