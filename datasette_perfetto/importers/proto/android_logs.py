"""Android logcat (`TracePacket.android_log`, the android.log data source) → `android_logs`, as
trace_processor's AndroidProbesModule tokenizes it and its AndroidProbesParser parses it.

- Tokenize time, in file order: each LogEvent's `timestamp` (REALTIME, whatever the packet's own
  timestamp says) goes to the trace clock; an event the clocks cannot place is dropped (the clock
  tracker counts why). The others are sorted one by one on that time, as packets of their own.
  `stats` set `android_log_num_total` / `_failed` / `_skipped` (the last packet's values win).
- trace_processor re-writes each event as a new packet before sorting it, and that copy always holds
  `tag`, `message` and every arg's `name` (empty when the original had none). So what its parser
  sees, and what the table holds, is: `tag` '' for an event without one (never NULL), `msg` '' for an
  event without a message, and an arg without a name is not skipped.
- The message: `message`, then for an event with args (binary/event-log entries) a space and the args
  as `name=value` joined by spaces (strings quoted, floats as printf's %f), the args text cut to 4095
  bytes; so an event-log entry without a message reads ' name=value ...'.
- `prio`: the raw value's low byte (unknown values kept), 0 (unspecified) read as 4 (INFO).
- Parse time, in timestamp order: the thread of `tid` in process `pid` (both as uint32), created as
  needed, then the row. `uid` and `log_id` are not kept.
"""

from __future__ import annotations

import math

from google.protobuf.unknown_fields import UnknownFieldSet

from ..common.event_kinds import EV_PACKET
from ..common.values import UINT64_MASK, signed, text
from .packet_handlers import HandlerContext, packet_handler, tokenize_handler

REALTIME = 1  # BUILTIN_CLOCK_REALTIME: the clock of LogEvent.timestamp
PRIO_INFO = 4
PRIO_FIELD = 7  # LogEvent.prio
ARGS_BUFFER = 4096  # trace_processor formats the args into a char[4096]: 4095 bytes and the NUL
UINT32_MASK = 0xFFFFFFFF

# Stats fields -> their stat, in the order trace_processor sets them.
STATS = (
    ("num_failed", "android_log_num_failed"),
    ("num_skipped", "android_log_num_skipped"),
    ("num_total", "android_log_num_total"),
)


def _raw_prio(evt) -> int:
    """LogEvent.prio as written, values this proto version does not know included (protobuf keeps
    those aside as unknown fields and reads the field as 0; the last occurrence counts)."""
    if evt.HasField("prio"):
        return evt.prio
    value = 0
    for field in UnknownFieldSet(evt):
        if field.field_number == PRIO_FIELD and type(field.data) is int:
            value = field.data
    return value


def _c_bytes(value) -> bytes:
    """A proto string as printf's %.*s writes it: its bytes up to the first NUL."""
    raw = value if type(value) is bytes else value.encode("utf-8", "surrogateescape")
    end = raw.find(b"\0")
    return raw if end < 0 else raw[:end]


def _printf_f(value: float) -> str:
    """printf("%f") of a double, as glibc writes it (a negative NaN is '-nan')."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    return f"{value:f}"


def args_text(args) -> bytes:
    """The args of a LogEvent as trace_processor's parser formats them (' name=value' each, the whole
    cut to 4095 bytes), leading space included; b'' when there are none."""
    out = bytearray()
    for arg in args:
        out += b" " + _c_bytes(arg.name) + b"="
        which = arg.WhichOneof("value")
        # The tokenizer's copy keeps one value: int, else float, else string.
        if which == "int_value":
            out += str(arg.int_value).encode()
        elif which == "float_value":
            out += _printf_f(arg.float_value).encode()
        elif which == "string_value":
            out += b'"' + _c_bytes(arg.string_value) + b'"'
        if len(out) >= ARGS_BUFFER - 1:
            break
    return bytes(out[: ARGS_BUFFER - 1])


def log_message(evt) -> str:
    """The `msg` of a LogEvent: its message, then a space and its args when it has any."""
    msg = text(evt.message)
    formatted = args_text(evt.args)
    if formatted:
        msg += " " + formatted[1:].decode("utf-8", "backslashreplace")
    return msg


def log_priority(evt) -> int:
    prio = _raw_prio(evt) & 0xFF
    return prio if prio else PRIO_INFO


@tokenize_handler("android_log")
def _tokenize_android_log(importer, packet, seq, ts: int) -> None:
    """Each event sorted on its own REALTIME timestamp; the stats now."""
    parser: HandlerContext = importer.ftrace
    log = packet.android_log
    clocks = parser.clocks
    for evt in log.events:
        at = clocks.to_trace_time(REALTIME, signed(evt.timestamp & UINT64_MASK)) if clocks else None
        if at is None:
            continue  # the clock tracker counted why
        importer.push(
            at,
            (
                EV_PACKET,
                "android_log",
                b"",
                evt.tid & UINT32_MASK,
                evt.pid & UINT32_MASK,
                log_priority(evt),
                text(evt.tag),
                log_message(evt),
            ),
        )
    if log.HasField("stats"):
        stats = log.stats
        for field, name in STATS:
            if stats.HasField(field):
                parser.stats.set(name, signed(getattr(stats, field) & UINT64_MASK))


@packet_handler("android_log")
def _android_log(parser: HandlerContext, ts: int, _payload, tid: int, pid: int, prio: int, tag: str, msg: str) -> None:
    """One log event (the tokenizer's, with its values resolved), in timestamp order."""
    trace = parser.trace
    utid = trace.processes.update_thread(tid, pid)
    trace.insert_log(ts, utid, prio, tag, msg)
