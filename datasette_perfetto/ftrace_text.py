"""to_ftrace(id): an ftrace_event row as a systrace text line (trace_processor's to_ftrace plugin:
SystraceSerializer and ArgsSerializer in src/trace_processor/plugins/to_ftrace/to_ftrace.cc).

The line is a prefix (task name and tid, tgid, cpu, time) then the event's name and fields. Most events
print every field as ` key=value` in field order; some print the kernel's own format (sched_switch,
binder, workqueue, i2c, ...). trace_processor finds those fields by proto field number; here a number
becomes the field's name through the event's message in the perfetto package's protos, and the name
finds the arg.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from .trackers.sched_tracker import kernel_version, task_state_string

_U64 = (1 << 64) - 1
USAGE = "Usage: to_ftrace(id)"

# softirq vector names (trace_processor's kActionNames).
_ACTION_NAMES = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "BLOCK_IOPOLL", "TASKLET", "SCHED", "HRTIMER", "RCU")

# An arg's value: (type, value), types as args.value_type; uint and pointer values unsigned 64-bit.
Value = tuple[str, Any]
Writer = Callable[[Value], None]


@lru_cache(maxsize=1024)
def _field_names(event_name: str) -> dict[int, str]:
    """Field number -> name of the event's proto message (trace_processor's ftrace descriptors)."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    field = pb.FtraceEvent.DESCRIPTOR.fields_by_name.get(event_name)
    if field is None or field.message_type is None:
        return {}
    return {f.number: f.name for f in field.message_type.fields}


# -- kernel version (SystemInfoTracker::SetKernelVersion) ------------------------------------------------


def task_state_text(raw_state: int, version: tuple[int, int] | None) -> str:
    """TaskState::FromRawPrevState(state, version).ToString('|'): e.g. 'R+', 'S', 'D|K'; '?' if invalid."""
    letters = task_state_string(raw_state & 0xFFFF, version)
    if letters is None:
        return "?"
    text = letters if letters.startswith("R") else "|".join(letters)
    return text[:3]  # TaskStateStr holds 3 characters


# -- GFP flags (types/gfp_flags.cc) -----------------------------------------------------------------------

_R44 = 0x400000 | 0x2000000  # __GFP_RECLAIM before 4.14
_R414 = 0x400000 | 0x1000000

_GFP_3_4 = (
    ((0x10 | 0x40 | 0x80 | 0x20000 | 0x02 | 0x08) | 0x4000 | 0x10000 | 0x1000 | 0x200 | 0x400000, "GFP_TRANSHUGE"),
    (0x10 | 0x40 | 0x80 | 0x20000 | 0x02 | 0x08, "GFP_HIGHUSER_MOVABLE"),
    (0x10 | 0x40 | 0x80 | 0x20000 | 0x02, "GFP_HIGHUSER"),
    (0x10 | 0x40 | 0x80 | 0x20000, "GFP_USER"),
    (0x10 | 0x40 | 0x80 | 0x80000, "GFP_TEMPORARY"),
    (0x10 | 0x40 | 0x80, "GFP_KERNEL"),
    (0x10 | 0x40, "GFP_NOFS"),
    (0x20, "GFP_ATOMIC"),
    (0x10, "GFP_NOIO"),
    (0x20, "GFP_HIGH"),
    (0x10, "GFP_WAIT"),
    (0x40, "GFP_IO"),
    (0x100, "GFP_COLD"),
    (0x200, "GFP_NOWARN"),
    (0x400, "GFP_REPEAT"),
    (0x800, "GFP_NOFAIL"),
    (0x1000, "GFP_NORETRY"),
    (0x4000, "GFP_COMP"),
    (0x8000, "GFP_ZERO"),
    (0x10000, "GFP_NOMEMALLOC"),
    (0x20000, "GFP_HARDWALL"),
    (0x40000, "GFP_THISNODE"),
    (0x80000, "GFP_RECLAIMABLE"),
    (0x08, "GFP_MOVABLE"),
    (0, "GFP_NOTRACK"),
    (0x400000, "GFP_NO_KSWAPD"),
    (0x800000, "GFP_OTHER_NODE"),
)
_GFP_3_10 = (
    *_GFP_3_4[:19],
    (0x10000, "GFP_NOMEMALLOC"),
    (0x2000, "GFP_MEMALLOC"),
    (0x20000, "GFP_HARDWALL"),
    (0x40000, "GFP_THISNODE"),
    (0x80000, "GFP_RECLAIMABLE"),
    (0x100000, "GFP_KMEMCG"),
    (0x08, "GFP_MOVABLE"),
    (0x200000, "GFP_NOTRACK"),
    (0x400000, "GFP_NO_KSWAPD"),
    (0x800000, "GFP_OTHER_NODE"),
)
_GFP_4_4 = (
    ((_R44 | 0x40 | 0x80 | 0x20000 | 0x02 | 0x08 | 0x4000 | 0x10000 | 0x1000 | 0x200) & ~0x2000000, "GFP_TRANSHUGE"),
    (_R44 | 0x40 | 0x80 | 0x20000 | 0x02 | 0x08, "GFP_HIGHUSER_MOVABLE"),
    (_R44 | 0x40 | 0x80 | 0x20000 | 0x02, "GFP_HIGHUSER"),
    (_R44 | 0x40 | 0x80 | 0x20000, "GFP_USER"),
    (_R44 | 0x40 | 0x80 | 0x10, "GFP_TEMPORARY"),
    (_R44 | 0x40 | 0x80, "GFP_KERNEL"),
    (_R44 | 0x40, "GFP_NOFS"),
    (0x20 | 0x80000 | 0x2000000, "GFP_ATOMIC"),
    (_R44, "GFP_NOIO"),
    (0x20, "GFP_HIGH"),
    (0x80000, "GFP_ATOMIC"),
    (0x40, "GFP_IO"),
    (0x100, "GFP_COLD"),
    (0x200, "GFP_NOWARN"),
    (0x400, "GFP_REPEAT"),
    (0x800, "GFP_NOFAIL"),
    (0x1000, "GFP_NORETRY"),
    (0x4000, "GFP_COMP"),
    (0x8000, "GFP_ZERO"),
    (0x10000, "GFP_NOMEMALLOC"),
    (0x2000, "GFP_MEMALLOC"),
    (0x20000, "GFP_HARDWALL"),
    (0x40000, "GFP_THISNODE"),
    (0x10, "GFP_RECLAIMABLE"),
    (0x08, "GFP_MOVABLE"),
    (0x200000, "GFP_NOTRACK"),
    (0x400000, "GFP_DIRECT_RECLAIM"),
    (0x2000000, "GFP_KSWAPD_RECLAIM"),
    (0x800000, "GFP_OTHER_NODE"),
)
_TRANSHUGE_LIGHT_4_14 = (_R414 | 0x40 | 0x80 | 0x20000 | 0x02 | 0x08 | 0x4000 | 0x10000 | 0x200) & ~_R414
_GFP_4_14 = (
    (_TRANSHUGE_LIGHT_4_14 | 0x400000, "GFP_TRANSHUGE"),
    (_TRANSHUGE_LIGHT_4_14, "GFP_TRANSHUGE_LIGHT"),
    (_R414 | 0x40 | 0x80 | 0x20000 | 0x02 | 0x08, "GFP_HIGHUSER_MOVABLE"),
    (_R414 | 0x40 | 0x80 | 0x20000 | 0x02, "GFP_HIGHUSER"),
    (_R414 | 0x40 | 0x80 | 0x20000, "GFP_USER"),
    (_R414 | 0x40 | 0x80 | 0x100000, "GFP_KERNEL_ACCOUNT"),
    (_R414 | 0x40 | 0x80, "GFP_KERNEL"),
    (_R414 | 0x40, "GFP_NOFS"),
    (0x20 | 0x80000 | 0x1000000, "GFP_ATOMIC"),
    (_R414, "GFP_NOIO"),
    (0x1000000, "GFP_NOWAIT"),
    (0x01, "GFP_DMA"),
    (0x02, "__GFP_HIGHMEM"),
    (0x04, "GFP_DMA32"),
    (0x20, "__GFP_HIGH"),
    (0x80000, "__GFP_ATOMIC"),
    (0x40, "__GFP_IO"),
    (0x80, "__GFP_FS"),
    (0x100, "__GFP_COLD"),
    (0x200, "__GFP_NOWARN"),
    (0x400, "__GFP_RETRY_MAYFAIL"),
    (0x800, "__GFP_NOFAIL"),
    (0x1000, "__GFP_NORETRY"),
    (0x4000, "__GFP_COMP"),
    (0x8000, "__GFP_ZERO"),
    (0x10000, "__GFP_NOMEMALLOC"),
    (0x2000, "__GFP_MEMALLOC"),
    (0x20000, "__GFP_HARDWALL"),
    (0x40000, "__GFP_THISNODE"),
    (0x10, "__GFP_RECLAIMABLE"),
    (0x08, "__GFP_MOVABLE"),
    (0x100000, "__GFP_ACCOUNT"),
    (0x800000, "__GFP_WRITE"),
    (_R414, "__GFP_RECLAIM"),
    (0x400000, "__GFP_DIRECT_RECLAIM"),
    (0x1000000, "__GFP_KSWAPD_RECLAIM"),
)


def gfp_flags_text(value: int, version: tuple[int, int] | None) -> str:
    """WriteGfpFlag: the flag names of the kernel version's bitmask (4.4's when unknown), '|'-separated,
    leftover bits as 0x..."""
    value &= _U64
    if value == 0:
        return "GFP_NOWAIT"
    v = version or (4, 4)
    masks = _GFP_3_4 if v < (3, 10) else _GFP_3_10 if v < (4, 4) else _GFP_4_4 if v < (4, 14) else _GFP_4_14
    names = []
    for mask, name in masks:
        if value & mask != mask:
            continue
        value &= ~mask
        names.append(name + "|")
    result = "".join(names)
    return f"{result}0x{value:x}" if value else result[:-1]


# -- values -------------------------------------------------------------------------------------------------


def value_text(value: Value) -> str:
    """ArgsSerializer::WriteValue."""
    kind, v = value
    if kind in ("int", "uint", "pointer"):
        return str(v)
    if kind in ("string", "json"):
        return v or ""
    if kind == "real":
        return f"{v:.16g}"
    if kind == "bool":
        return "true" if v else "false"
    return "[NULL]"


def _unsigned(value: Value) -> int:
    """A value read as Variadic's uint_value (a signed int's bits as unsigned 64-bit)."""
    kind, v = value
    if kind == "real":
        return 0
    return int(v or 0) & _U64


def _is_int(value: Value) -> bool:
    return value[0] in ("int", "uint", "pointer", "bool")


def _raw_bytes(s: str) -> bytes:
    """A bytes field's arg (text() kept undecodable bytes as \\xNN) back as its bytes."""
    return re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m.group(1), 16)]), s.encode("utf-8"))


class _ArgsSerializer:
    """ArgsSerializer: writes an event's fields after its name."""

    def __init__(
        self, out: list[str], event_name: str, args: list[tuple[str, Value]], version: Callable[[], Any]
    ) -> None:
        self.out = out
        self.event_name = event_name
        self.args = args
        self.version = version  # the kernel version, looked up only when needed
        names = _field_names(event_name)
        keys = {key: value for key, value in args}  # a key present twice: its last row, as field_id_to_arg_index
        self.fields: dict[int, Value] = {n: keys[name] for n, name in names.items() if name in keys}
        self.field_keys = names

    # WriteArgForField / WriteValueForField / WriteArg
    def arg(self, field: int, writer: Writer | None = None, key: str | None = None) -> None:
        value = self.fields.get(field)
        if value is not None:
            self.write_arg(key or self.field_keys[field], value, writer or self.value)

    def field_value(self, field: int, writer: Writer | None = None) -> None:
        value = self.fields.get(field)
        if value is not None:
            (writer or self.value)(value)

    def write_arg(self, key: str, value: Value, writer: Writer) -> None:
        self.out.append(f" {key}=")
        if key == "gfp_flags" and _is_int(value):
            self.out.append(gfp_flags_text(_unsigned(value), self.version()))
            return
        writer(value)

    # value writers
    def value(self, value: Value) -> None:
        self.out.append(value_text(value))

    def kernel_fn(self, value: Value) -> None:
        """WriteKernelFnValue: an address in hex, or the symbol the trace interned for it."""
        if value[0] == "uint":
            self.out.append(f"{value[1]:x}")
        elif value[0] == "string":
            self.value(value)

    def hex(self, value: Value) -> None:
        if _is_int(value):
            self.out.append(f"{_unsigned(value):x}")
        else:
            self.value(value)

    def u32(self, value: Value) -> None:
        if _is_int(value):
            self.out.append(str(_unsigned(value) & 0xFFFFFFFF))
        else:
            self.value(value)

    def char(self, value: Value) -> None:
        self.out.append(chr(_unsigned(value) & 0xFF) if _is_int(value) else value_text(value))

    def padded_hex(self, width: int) -> Writer:
        return lambda value: self.out.append(f"{_unsigned(value):0{width}x}" if _is_int(value) else value_text(value))

    def lit(self, text: str) -> None:
        self.out.append(text)

    # SerializeArgs
    def serialize(self) -> None:
        if not self.args:
            return
        special = getattr(self, "_" + self.event_name, None) if self.event_name in _SPECIAL else None
        if special is not None:
            special()
            return
        for key, value in self.args:
            self.write_arg(key, value, self.value)

    def _sched_switch(self) -> None:
        self.arg(1)  # prev_comm
        self.arg(2)  # prev_pid
        self.arg(3)  # prev_prio

        def state(value: Value) -> None:
            self.lit(task_state_text(_unsigned(value), self.version()))

        self.arg(4, state)  # prev_state
        self.lit(" ==>")
        self.arg(5)  # next_comm
        self.arg(6)  # next_pid
        self.arg(7)  # next_prio

    def _sched_wakeup(self) -> None:
        self.arg(1)  # comm
        self.arg(2)  # pid
        self.arg(3)  # prio
        self.arg(5, lambda v: self.lit(_padded_int(v, 3) if _is_int(v) else value_text(v)))  # target_cpu

    def _clock_set_rate(self) -> None:
        self.lit(" ")
        self.field_value(1)  # name
        self.arg(2)  # state
        self.arg(3)  # cpu_id

    def _clk_set_rate(self) -> None:
        self.lit(" ")
        self.field_value(1)  # name
        self.lit(" ")
        self.field_value(2)  # rate

    def _clock_enable(self) -> None:
        self.field_value(1)  # name
        self.arg(2)  # state
        self.arg(3)  # cpu_id

    _clock_disable = _clock_enable

    def _binder_transaction(self) -> None:
        self.lit(" transaction=")
        self.field_value(1, self.u32)  # debug_id
        self.lit(" dest_node=")
        self.field_value(2, self.u32)  # target_node
        self.lit(" dest_proc=")
        self.field_value(3)  # to_proc
        self.lit(" dest_thread=")
        self.field_value(4)  # to_thread
        self.lit(" reply=")
        self.field_value(5)  # reply
        self.lit(" flags=0x")
        self.field_value(7, self.hex)  # flags
        self.lit(" code=0x")
        self.field_value(6, self.hex)  # code

    def _binder_transaction_alloc_buf(self) -> None:
        self.lit(" transaction=")
        self.field_value(2, self.u32)  # debug_id
        self.arg(1)  # data_size
        self.arg(3)  # offsets_size

    def _binder_transaction_received(self) -> None:
        self.lit(" transaction=")
        self.field_value(1, self.u32)  # debug_id

    def _mm_filemap_add_to_page_cache(self) -> None:
        self.lit(" dev ")
        self.field_value(4, lambda v: self.lit(str(_unsigned(v) >> 20)))  # s_dev
        self.lit(":")
        self.field_value(4, lambda v: self.lit(str(_unsigned(v) & ((1 << 20) - 1))))
        self.lit(" ino ")
        self.field_value(2, self.hex)  # i_ino
        self.lit(" page=0000000000000000")
        self.lit(" pfn=")
        self.field_value(1)  # pfn
        self.lit(" ofs=")
        self.field_value(3, lambda v: self.lit(str((_unsigned(v) << 12) & _U64)))  # index

    def _print(self) -> None:
        self.lit(" ")

        def buf(value: Value) -> None:
            text = value_text(value)
            self.lit(text[:-1] if text.endswith("\n") else text)  # a print's final newline is dropped

        self.field_value(2, buf)  # buf

    def _sched_blocked_reason(self) -> None:
        self.arg(1)  # pid
        self.arg(3, key="iowait")  # io_wait
        self.arg(2, self.kernel_fn)  # caller

    def _workqueue_activate_work(self) -> None:
        self.lit(" work struct ")
        self.field_value(1, self.hex)  # work

    _workqueue_execute_end = _workqueue_activate_work

    def _workqueue_execute_start(self) -> None:
        self.lit(" work struct ")
        self.field_value(1, self.hex)  # work
        self.lit(": function ")
        self.field_value(2, self.kernel_fn)  # function

    def _workqueue_queue_work(self) -> None:
        self.lit(" work struct=")
        self.field_value(1, self.hex)  # work
        self.arg(2, self.kernel_fn)  # function
        self.arg(6, self.hex)  # workqueue (a string in the proto: printed as is)
        self.field_value(4)  # req_cpu
        self.field_value(5)  # cpu

    def _irq_handler_entry(self) -> None:
        self.arg(1)  # irq
        self.arg(2)  # name

    def _irq_handler_exit(self) -> None:
        self.arg(1)  # irq
        self.lit(" ret=")
        self.field_value(2, lambda v: self.lit("handled" if _unsigned(v) else "unhandled"))  # ret

    def _softirq_entry(self) -> None:
        self.arg(1)  # vec
        self.lit(" [action=")

        def action(value: Value) -> None:
            vec = _unsigned(value)
            self.lit(_ACTION_NAMES[vec] if vec < len(_ACTION_NAMES) else str(vec))

        self.field_value(1, action)
        self.lit("]")

    _softirq_exit = _softirq_entry

    def _tracing_mark_write(self) -> None:
        self.field_value(3, lambda v: self.lit("B" if _unsigned(v) else "E"))  # trace_begin
        self.lit("|")
        self.field_value(1)  # pid
        self.lit("|")
        self.field_value(2)  # trace_name

    def _mark(self, type_field: int, pid_field: int, name_field: int, value_field: int) -> None:
        self.field_value(type_field, self.char)
        self.lit("|")
        self.field_value(pid_field)
        self.lit("|")
        self.field_value(name_field)
        self.lit("|")
        self.field_value(value_field)

    def _dpu_tracing_mark_write(self) -> None:
        self._mark(5, 1, 4, 6)  # type, pid, name, value

    _panel_write_generic = _dpu_tracing_mark_write
    _g2d_tracing_mark_write = _dpu_tracing_mark_write

    def _samsung_tracing_mark_write(self) -> None:
        self._mark(4, 1, 2, 5)  # trace_type, pid, trace_name, value

    def _cgroup_attach_task(self) -> None:
        self.arg(1)  # dst_root
        self.arg(2)  # dst_id
        self.arg(5, key="cgroup")  # cname
        self.arg(6)  # dst_level
        self.arg(7)  # dst_path
        self.arg(3)  # pid
        self.arg(4)  # comm

    def _hrtimer_expire_entry(self) -> None:
        self.arg(3, self.kernel_fn)  # function

    def _i2c(self) -> None:
        """SerializeI2cEvent: adapter_nr 1, msg_nr 2, addr 3, flags 4, len 5."""
        self.lit(" i2c-")
        self.field_value(1)
        self.lit(" #")
        self.field_value(2)
        self.arg(3, self.padded_hex(3), key="a")
        self.arg(4, self.padded_hex(4), key="f")
        self.arg(5, key="l")

    def _i2c_buf(self) -> None:
        def buf(value: Value) -> None:
            data = _raw_bytes(value_text(value))[:64]  # the kernel prints at most 64 bytes
            self.lit(" [" + "-".join(f"{b:02x}" for b in data) + "]")

        self.field_value(7, buf)  # buf

    def _i2c_write(self) -> None:
        self._i2c()
        self._i2c_buf()

    _i2c_reply = _i2c_write
    _i2c_read = _i2c

    def _i2c_result(self) -> None:
        self.lit(" i2c-")
        self.field_value(1)  # adapter_nr
        self.arg(2, key="n")  # nr_msgs
        self.arg(3, key="ret")  # ret


_SPECIAL = frozenset(
    {
        "sched_switch",
        "sched_wakeup",
        "clock_set_rate",
        "clk_set_rate",
        "clock_enable",
        "clock_disable",
        "binder_transaction",
        "binder_transaction_alloc_buf",
        "binder_transaction_received",
        "mm_filemap_add_to_page_cache",
        "print",
        "sched_blocked_reason",
        "workqueue_activate_work",
        "workqueue_execute_start",
        "workqueue_execute_end",
        "workqueue_queue_work",
        "irq_handler_entry",
        "irq_handler_exit",
        "softirq_entry",
        "softirq_exit",
        "tracing_mark_write",
        "dpu_tracing_mark_write",
        "panel_write_generic",
        "g2d_tracing_mark_write",
        "samsung_tracing_mark_write",
        "cgroup_attach_task",
        "hrtimer_expire_entry",
        "i2c_write",
        "i2c_read",
        "i2c_reply",
        "i2c_result",
    }
)


def _padded_int(value: Value, width: int, pad: str = "0") -> str:
    """AppendPaddedInt: the sign, then the absolute value padded to `width`."""
    n = int(value[1]) if value[0] == "int" else _unsigned(value)
    digits = str(abs(n)).rjust(width, pad)
    return ("-" if n < 0 else "") + digits


def _trunc_div(a: int, b: int) -> int:
    """C integer division (toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def prefix(ts: int, cpu: int | None, tid: int, thread_name: str | None, tgid: int) -> str:
    """SerializePrefix: '<name>-<tid> (<tgid>) [<cpu>] .... <s>.<us>:'."""
    name = "<idle>" if tid == 0 else thread_name or "<unknown>"
    secs = _trunc_div(ts, 1_000_000_000)
    micros = _trunc_div(ts - secs * 1_000_000_000, 1000)
    tid_text = str(tid)
    return "".join(
        (
            " " * (16 - len(name.encode("utf-8", "surrogateescape"))),  # padded by bytes, as in C++
            name.replace("-", "_"),
            "-",
            tid_text.ljust(5),
            " (",
            "-----" if tgid == 0 else _padded_int(("int", tgid), 5, " "),
            ") [",
            _padded_int(("int", cpu or 0), 3),
            "] .... ",
            str(secs),
            ".",
            _padded_int(("int", micros), 6),
            ":",
        )
    )


_EVENT_SQL = (
    "SELECT e.ts, e.name, e.arg_set_id, c.cpu, t.tid, t.name, p.pid FROM ftrace_event e "
    "LEFT JOIN cpu c ON c.id = e.ucpu LEFT JOIN thread t ON t.id = e.utid LEFT JOIN process p ON p.id = t.upid "
    "WHERE e.id = ?"
)
_ARGS_SQL = "SELECT key, value_type, int_value, string_value, real_value FROM args WHERE arg_set_id = ? ORDER BY id"
_METADATA_SQL = "SELECT str_value FROM metadata WHERE name = ? ORDER BY id LIMIT 1"


def _arg_value(value_type: str, int_value: Any, string_value: Any, real_value: Any) -> Value:
    """GetArgValue: an args row as a Variadic."""
    if value_type in ("uint", "pointer"):
        return (value_type, int(int_value or 0) & _U64)
    if value_type in ("int", "bool"):
        return (value_type, int(int_value or 0))
    if value_type in ("string", "json"):
        return (value_type, string_value)
    if value_type == "real":
        return ("real", float(real_value or 0.0))
    return ("null", None)


def serialize(conn: sqlite3.Connection, row_id: int) -> str | None:
    """SystraceSerializer::SerializeToString: the line, or None for no such row or a Chrome/track event."""
    row = conn.execute(_EVENT_SQL, (row_id,)).fetchone()
    if row is None:
        return None
    ts, name, arg_set_id, cpu, tid, thread_name, pid = row
    name = name or ""
    if name.startswith(("chrome_event.", "track_event.")):
        return None
    out = [prefix(ts, cpu, tid or 0, thread_name, pid or 0), " "]
    out.append("tracing_mark_write" if name in ("print", "g2d_tracing_mark_write", "dpu_tracing_mark_write") else name)
    out.append(":")
    args = []
    if arg_set_id is not None:
        args = [(key, _arg_value(*rest)) for key, *rest in conn.execute(_ARGS_SQL, (arg_set_id,))]

    version_cache: list = []

    def version() -> tuple[int, int] | None:
        if not version_cache:
            meta = [conn.execute(_METADATA_SQL, (key,)).fetchone() for key in ("system_name", "system_release")]
            version_cache.append(kernel_version(*(m[0] if m else None for m in meta)))
        return version_cache[0]

    _ArgsSerializer(out, name, args, version).serialize()
    line = "".join(out)
    return line.split("\0", 1)[0]  # trace_processor returns the line as a C string


def to_ftrace_function(conn: sqlite3.Connection) -> Callable[[Any], str | None]:
    """The SQL function to_ftrace(id) reading `conn`'s tables."""

    def to_ftrace(row_id: Any) -> str | None:
        if not isinstance(row_id, int):
            raise ValueError(USAGE)
        row = row_id & 0xFFFFFFFF  # the row number is a uint32
        try:
            line = serialize(conn, row)
        except sqlite3.OperationalError:
            return None  # no such table: not a trace database
        if line is None:
            raise ValueError(f"to_ftrace: Cannot serialize row id {row}")
        return line

    return to_ftrace
