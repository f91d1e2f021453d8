"""The kinds of event the tokenizers queue in their sorter, declared once.

Every queued event is a tuple (a list for JSON) `(kind, ...)`; the parse phase
dispatches on the kind.
"""

from __future__ import annotations

from enum import IntEnum


class EventKind(IntEnum):
    """Proto traces (proto/importer.py)."""

    TRACK_EVENT = 0  # a tokenized TrackEvent (proto/track_event_tokenizer.py), parsed by TrackEventParser
    DESCRIPTOR = 1  # a process or thread TrackDescriptor
    THREAD_DESCRIPTOR = 2  # a legacy ThreadDescriptor packet
    ATRACE = 3  # (ATRACE, tid, marker text): an atrace marker pushed directly
    FTRACE = 4  # (FTRACE, cpu, serialized FtraceEvent[, resolved kernel symbol])
    PACKET = 5  # (PACKET, TracePacket oneof name, serialized payload): parsed in timestamp order
    COMPACT_SCHED = 6  # (COMPACT_SCHED, cpu, "switch"|"waking", *fields) from compact_sched bundles
    MACHINE = 9  # (MACHINE, machine index, event): an event of another machine's importer
    PROFILE = 12  # (PROFILE, kind, *fields): parsed by ProfileParser


class JsonEventKind(IntEnum):
    """Chrome JSON traces (json/importer.py)."""

    EVENT = 0  # [EVENT, phase, pid, tid, ...]: one trace event (json/importer.py's J_* positions)
    V8_SAMPLE = 1  # (V8_SAMPLE, session id, pid, tid, node id): a V8 CPU profile sample
    SYSTRACE_LINE = 2  # (SYSTRACE_LINE, cpu, pid, task, tgid, ftrace event): a `systemTraceEvents` line


# The tuples carry plain ints: enum members would make every queued event slower to
# compare and to pickle when the sorter spills.
EV_TRACK_EVENT = EventKind.TRACK_EVENT.value
EV_DESCRIPTOR = EventKind.DESCRIPTOR.value
EV_THREAD_DESCRIPTOR = EventKind.THREAD_DESCRIPTOR.value
EV_ATRACE = EventKind.ATRACE.value
EV_FTRACE = EventKind.FTRACE.value
EV_PACKET = EventKind.PACKET.value
EV_COMPACT_SCHED = EventKind.COMPACT_SCHED.value
EV_MACHINE = EventKind.MACHINE.value
EV_PROFILE = EventKind.PROFILE.value
EV_JSON = JsonEventKind.EVENT.value
EV_V8_SAMPLE = JsonEventKind.V8_SAMPLE.value
EV_SYSTRACE_LINE = JsonEventKind.SYSTRACE_LINE.value
