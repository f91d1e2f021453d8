"""Every kernel event as a row of __intrinsic_ftrace_event (views ftrace_event, raw), its fields as args:
trace_processor's raw table (FtraceParser::ParseTypedFtraceToRaw and ParseLegacyGenericFtrace, and the
sched tracker's rows for sched_switch and compact sched records). Args are keyed by field name, in field
order, typed as trace_processor's InsertFieldIntoArgs types them; a repeated field keeps its last value (its
inserter updates a key added twice); message fields are left out. A field naming a kernel function is its
symbol when the trace interns it."""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor as FD

from ...model import TraceContext
from ...storage import Arg
from ..common.values import text

RAW_TABLE = "__intrinsic_ftrace_event"

# Proto field type -> arg value type.
_ARG_TYPES = {
    **dict.fromkeys((FD.TYPE_INT32, FD.TYPE_INT64, FD.TYPE_SFIXED32, FD.TYPE_SFIXED64), "int"),
    **dict.fromkeys((FD.TYPE_SINT32, FD.TYPE_SINT64, FD.TYPE_BOOL, FD.TYPE_ENUM), "int"),
    **dict.fromkeys((FD.TYPE_UINT32, FD.TYPE_UINT64, FD.TYPE_FIXED32, FD.TYPE_FIXED64), "uint"),
    **dict.fromkeys((FD.TYPE_STRING, FD.TYPE_BYTES), "string"),
    **dict.fromkeys((FD.TYPE_DOUBLE, FD.TYPE_FLOAT), "real"),
}


def field_args(payload, symbol_field: str | None = None, symbol: str | None = None) -> list[Arg]:
    """A typed event's fields as args; `symbol_field` (a kernel function address) as `symbol` if known."""
    out: list[Arg] = []
    for fd, value in payload.ListFields():
        value_type = _ARG_TYPES.get(fd.type)
        if value_type is None:
            continue
        if fd.is_repeated:
            value = value[-1]
        name = fd.name
        if name == symbol_field and symbol is not None:
            out.append((name, name, "string", symbol))
        elif value_type == "string":
            out.append((name, name, "string", text(value)))
        elif value_type == "real":
            out.append((name, name, "real", float(value)))
        else:
            out.append((name, name, value_type, int(value)))
    return out


def generic_args(generic) -> list[Arg]:
    """A legacy GenericFtraceEvent's fields: integers (an unsigned one as trace_processor stores it, a
    signed int64) and strings; a field with no value is left out."""
    out: list[Arg] = []
    for f in generic.field:
        name = text(f.name)
        kind = f.WhichOneof("value")
        if kind == "int_value":
            out.append((name, name, "int", f.int_value))
        elif kind == "uint_value":
            out.append((name, name, "int", f.uint_value))  # storage keeps it as its int64 bit pattern
        elif kind == "str_value":
            out.append((name, name, "string", text(f.str_value)))
    return out


def insert_raw(
    trace: TraceContext, ts: int, name: str, utid: int, ucpu: int, args: list[Arg], common_flags: int | None = None
) -> None:
    storage = trace.storage
    storage.insert(RAW_TABLE, (ts, name, utid, storage.arg_set(args) if args else None, common_flags, ucpu))


def sched_switch_args(
    prev_comm: str | None,
    prev_pid: int | None,
    prev_prio: int | None,
    prev_state: int,
    next_comm: str,
    next_pid: int,
    next_prio: int,
) -> list[Arg]:
    """A sched_switch row's args, in SchedSwitchFtraceEvent's field order (to_ftrace reads them by field)."""
    return [
        ("prev_comm", "prev_comm", "string", prev_comm),
        ("prev_pid", "prev_pid", "int", prev_pid),
        ("prev_prio", "prev_prio", "int", prev_prio),
        ("prev_state", "prev_state", "int", prev_state),
        ("next_comm", "next_comm", "string", next_comm),
        ("next_pid", "next_pid", "int", next_pid),
        ("next_prio", "next_prio", "int", next_prio),
    ]


def sched_waking_args(comm: str, pid: int, prio: int, target_cpu: int) -> list[Arg]:
    return [
        ("comm", "comm", "string", comm),
        ("pid", "pid", "int", pid),
        ("prio", "prio", "int", prio),
        ("target_cpu", "target_cpu", "int", target_cpu),
    ]
