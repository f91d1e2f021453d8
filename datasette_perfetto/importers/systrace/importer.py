"""Systrace: ftrace's text output (`cat trace`, `atrace`, `trace-cmd report`,
systrace's HTML wrapper, atrace's zlib-compressed "ctrace").

Each event line, e.g.

    surfaceflinger-598   (  598) [004] d..2 10852.771242: tracing_mark_write: B|598|frame

is turned into the `FtraceEvent` a Perfetto trace would hold for it and goes
through the same handlers (importers/proto/ftrace.py), in timestamp order. What the
line says besides the event is applied first, as trace_processor's
SystraceLineParser does: the task name names the thread (not "<...>", which
ftrace prints when it has forgotten the name) and a tgid column puts the
thread in its process.

Only the events trace_processor reads from text are converted (sched_switch,
sched_waking, sched_blocked_reason, print/tracing_mark_write, cpu_frequency,
cpu_frequency_limits, cpu_idle, clock_*, workqueue_execute_*, thermal_temperature,
cdev_update, rss_stat); other lines still name their thread. Lines that are
not events count as `systrace_parse_failure`. As in trace_processor, a last
line without its newline is not read, and in an HTML file only the first
ftrace section is.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ...model import TraceContext
from ...trackers.process_tracker import THREAD_NAME_PRIORITY_FTRACE
from ..common.options import ImportOptions
from ..common.sorter import Sorter
from ..common.streams import READ_SHARE, file_position, parse_progress, read_progress
from ..proto.atrace import c_int32, c_int64, c_uint32
from ..proto.ftrace import FtraceParser

CHUNK = 1 << 20
MAX_LINE = 16 << 20  # longer "lines" are not ftrace text
LOOKAHEAD = 128  # how far into the file format markers are looked for (trace_processor's)
MONOTONIC_CLOCK_ID = 3  # systrace timestamps are CLOCK_MONOTONIC
UNKNOWN_TASK = "<...>"

# "TASK-PID (TGID) [CPU] FLAGS TIMESTAMP: EVENT:" — the tgid column and the irq
# flags are optional; the task name (before the match) can hold any character.
_LINE = re.compile(rb"-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*([a-zA-Z.]{3}[0-9a-f.]{1,2}\s*)?(\d+\.\d+):\s+(\S+):")
_CPUS_HEADER = re.compile(rb"cpus=\d*\Z")
_TRACE_DATA_SECTION = b'<script class="trace-data" type="application/text">'
_ZLIB_HEADER = b"\x78\x9c"

# Line reader states (trace_processor's SystraceTraceParser::ParseState).
BEFORE_SYSTRACE, IN_DATA_SECTION, SYSTRACE, PROCESS_DUMP_LONG, PROCESS_DUMP_SHORT, CGROUP_DUMP, END = range(7)


def looks_like_systrace(head: bytes) -> bool:
    """trace_processor's content sniffing for systrace text."""
    start = head[:LOOKAHEAD]
    if b"# tracer" in start:
        return True
    lower = start.lower()
    if lower.startswith(b"<!doctype html>") or lower.startswith(b"<html>"):
        return True
    return b"TRACE:\n" in start or start.startswith(b"cpus=") or start.startswith(b" ")


@dataclass(slots=True, eq=False)
class SystraceLine:
    ts: int
    pid: int
    cpu: int
    task: str
    tgid: str | None
    event: str
    args: str


def tokenize_line(raw: bytes) -> SystraceLine | None:
    """One ftrace text line, or None when it is not one."""
    m = _LINE.search(raw)
    if m is None:
        return None
    pid = c_uint32(m.group(1).decode())
    cpu = c_uint32(m.group(3).decode())
    try:
        seconds = float(m.group(5))
    except ValueError:
        return None
    if pid is None or cpu is None or not 0 <= seconds * 1e9 < 2**63:
        return None  # (a timestamp beyond int64 nanoseconds is not a line either)
    task = _text(raw[: m.start()]).strip()
    tgid = m.group(2).decode() if m.group(2) is not None else None
    return SystraceLine(int(seconds * 1e9), pid, cpu, task, tgid, _text(m.group(6)), _text(raw[m.end() :]).strip())


def _text(b: bytes) -> str:
    return b.decode("utf-8", "backslashreplace")


def _split_args(args: str) -> dict[str, str]:
    """ "a=1 b=2 word" → {"a": "1", "b": "2", "name": "word"}: bare words are
    keyed "name"; for a=b=c the first part is the key and the last the value."""
    out: dict[str, str] = {}
    for token in args.split(" "):
        if not token:
            continue
        if "=" not in token:
            out["name"] = token
            continue
        parts = [p for p in token.split("=") if p]
        if not parts:
            continue
        out[parts[0]] = parts[-1] if len(parts) > 1 else ""
    return out


# -- task states ---------------------------------------------------------------------

_STATE_LETTERS = {
    "S": 0x1,
    "D": 0x2,
    "T": 0x4,
    "t": 0x8,
    "X": 0x10,
    "Z": 0x20,
    "x": 0x40,
    "K": 0x80,
    "W": 0x100,
    "P": 0x200,
    "N": 0x400,
    "I": 0x2 | 0x400,
}
_INVALID_STATE = 0xFFFF


def raw_prev_state(text: str) -> int:
    """A sched_switch prev_state letter string ("R", "R+", "D", "S|K", ...) as the
    kernel's raw bits in the 4.4 layout, which is how a trace without a kernel
    version is read."""
    if not text:
        return _INVALID_STATE
    if text[0] == "R":
        return 0x800 if text[:2] == "R+" and len(text) == 2 else 0
    raw = 0
    for ch in text:
        if ch == "|":
            continue
        bits = _STATE_LETTERS.get(ch)
        if bits is None:
            return _INVALID_STATE
        raw |= bits
    return raw


# -- line → FtraceEvent --------------------------------------------------------------


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _number(s: str | None) -> float | None:
    if not s:
        return None
    try:
        value = float(s)
    except ValueError:
        return None
    return value if math.isfinite(value) else None  # an out-of-range number is no value


def _uint(value: float, bits: int) -> int:
    return int(value) & ((1 << bits) - 1)


def _sched_switch(ev, line: SystraceLine, args: dict) -> bool:
    prev_pid, next_pid = c_uint32(args.get("prev_pid", "")), c_uint32(args.get("next_pid", ""))
    prev_prio, next_prio = c_int32(args.get("prev_prio", "")), c_int32(args.get("next_prio", ""))
    if prev_pid is None or next_pid is None or prev_prio is None or next_prio is None:
        return False
    e = ev.sched_switch
    e.prev_comm = args.get("prev_comm", "")
    e.prev_pid = _int32(prev_pid)
    e.prev_prio = prev_prio
    e.prev_state = raw_prev_state(args.get("prev_state", ""))
    e.next_comm = args.get("next_comm", "")
    e.next_pid = _int32(next_pid)
    e.next_prio = next_prio
    return True


def _print(ev, line: SystraceLine, args: dict) -> bool:
    ev.print.buf = line.args
    return True


def _sched_waking(ev, line: SystraceLine, args: dict) -> bool:
    pid = c_uint32(args.get("pid", ""))
    if pid is None:
        return False
    ev.sched_waking.pid = _int32(pid)
    ev.sched_waking.comm = args.get("comm", "")
    return True


def _cpu_counter(kind: str) -> Callable:
    def convert(ev, line: SystraceLine, args: dict) -> bool:
        cpu, state = c_uint32(args.get("cpu_id", "")), _number(args.get("state"))
        if cpu is None or state is None:
            return False
        e = getattr(ev, kind)
        e.cpu_id = cpu
        e.state = _uint(state, 32)
        return True

    return convert


def _cpu_frequency_limits(ev, line: SystraceLine, args: dict) -> bool:
    cpu = c_uint32(args.get("cpu_id", ""))
    if cpu is None:
        return False
    high = _number(args["max"] if "max" in args else args.get("max_freq"))
    low = _number(args["min"] if "min" in args else args.get("min_freq"))
    if high is None and low is None:
        return False
    e = ev.cpu_frequency_limits
    e.cpu_id = cpu
    if high is not None:
        e.max_freq = _uint(high, 32)
    if low is not None:
        e.min_freq = _uint(low, 32)
    return True


def _clock(kind: str) -> Callable:
    def convert(ev, line: SystraceLine, args: dict) -> bool:
        state = c_uint32(args.get("state", ""))
        if state is None:
            return False
        e = getattr(ev, kind)
        e.name = args.get("name", "")
        e.state = state
        cpu = c_uint32(args.get("cpu_id", ""))
        if cpu is not None:
            e.cpu_id = cpu
        return True

    return convert


def _thermal_temperature(ev, line: SystraceLine, args: dict) -> bool:
    temp = c_int32(args.get("temp", ""))
    if temp is None:
        return False
    ev.thermal_temperature.thermal_zone = args.get("thermal_zone", "")
    ev.thermal_temperature.temp = temp
    return True


def _cdev_update(ev, line: SystraceLine, args: dict) -> bool:
    target = _number(args.get("target"))
    if target is None:
        return False
    ev.cdev_update.type = args.get("type", "")
    ev.cdev_update.target = _uint(target, 64)
    return True


def _rss_stat(ev, line: SystraceLine, args: dict) -> bool:
    size, member = c_int64(args.get("size", "")), c_uint32(args.get("member", ""))
    if size is None or member is None:
        return False
    e = ev.rss_stat
    e.size = size
    e.member = _int32(member)
    mm_id = c_int64(args.get("mm_id", ""))
    if mm_id is not None:
        e.mm_id = mm_id & 0xFFFFFFFF
    return True


def _workqueue_start(ev, line: SystraceLine, args: dict):
    parts = [p for p in line.args.split("function ") if p]
    if len(parts) < 2:
        return False
    ev.workqueue_execute_start.function = 0
    return (parts[1],)  # the function's name, in place of its address


def _workqueue_end(ev, line: SystraceLine, args: dict) -> bool:
    ev.workqueue_execute_end.SetInParent()
    return True


def _sched_blocked_reason(ev, line: SystraceLine, args: dict):
    pid, io_wait = c_uint32(args.get("pid", "")), c_int32(args.get("iowait", ""))
    if pid is None or io_wait is None:
        return False
    ev.sched_blocked_reason.pid = _int32(pid)
    ev.sched_blocked_reason.io_wait = 1 if io_wait else 0
    return (args.get("caller", ""),)  # the blocked function's name, in place of its address


# event name → convert(FtraceEvent, line, args): True, or a tuple of values resolved
# in place of kernel addresses (passed to the handler), or False when the line is unusable.
CONVERTERS: dict[str, Callable] = {
    "sched_switch": _sched_switch,
    "tracing_mark_write": _print,
    "0": _print,
    "print": _print,
    "sched_waking": _sched_waking,
    "cpu_frequency": _cpu_counter("cpu_frequency"),
    "cpu_frequency_limits": _cpu_frequency_limits,
    "cpu_idle": _cpu_counter("cpu_idle"),
    "clock_set_rate": _clock("clock_set_rate"),
    "clock_enable": _clock("clock_enable"),
    "clock_disable": _clock("clock_disable"),
    "workqueue_execute_start": _workqueue_start,
    "workqueue_execute_end": _workqueue_end,
    "thermal_temperature": _thermal_temperature,
    "cdev_update": _cdev_update,
    "sched_blocked_reason": _sched_blocked_reason,
    "rss_stat": _rss_stat,
}


def to_ftrace_event(line: SystraceLine) -> tuple | None:
    """(serialized FtraceEvent, *resolved values) for the line's event, or None."""
    convert = CONVERTERS.get(line.event)
    if convert is None:
        return None
    ev = pb.FtraceEvent()
    ev.timestamp = line.ts
    ev.pid = line.pid
    result = convert(ev, line, _split_args(line.args))
    if result is False:
        return None  # unusable arguments: trace_processor drops the event without a stat
    return (ev.SerializeToString(),) + (result if isinstance(result, tuple) else ())


# -- reading -------------------------------------------------------------------------


class _Inflater:
    """The zlib stream of an `atrace -z` capture, read on demand."""

    def __init__(self, stream: BinaryIO, first: bytes) -> None:
        self.stream = stream
        self.z = zlib.decompressobj()
        self.pending = first
        self.truncated = False

    def read(self, n: int) -> bytes:
        while not self.z.eof:
            data = self.z.unconsumed_tail or self.pending or self.stream.read(CHUNK)
            self.pending = b""
            if not data:
                self.truncated = True
                return b""
            out = self.z.decompress(data, n)
            if out:
                return out
        return b""


def _after_next_newline(stream: BinaryIO) -> bytes | None:
    """Reads past the next newline; what follows it, or None at the end of the stream."""
    while True:
        data = stream.read(CHUNK)
        if not data:
            return None
        newline = data.find(b"\n")
        if newline >= 0:
            return data[newline + 1 :]


class SystraceImporter:
    def __init__(self, trace: TraceContext, options: ImportOptions | None = None) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.sorter: Sorter[tuple] = Sorter()
        self.ftrace = FtraceParser(trace, lambda utid: trace.tracks.intern("thread_execution", (("utid", utid),)))
        self.ftrace.ftrace_raw = options is not None and options.content.ftrace_raw
        self.state = SYSTRACE

    def run(self, stream: BinaryIO, progress: Callable[[float], None]) -> None:
        position = file_position(stream)
        size = max(self.trace.size, 1)
        for i, line in enumerate(self._lines(stream)):
            self.trace.packets_read += 1
            self._read_line(line)
            if self.state == END:
                break
            if i & 0x3FFF == 0:
                progress(read_progress(position(), size))
        progress(READ_SHARE)
        convert = self.trace.model.trace_time_converter(MONOTONIC_CLOCK_ID)
        if convert is None:
            self.trace.metadata["trace_time_clock_id"] = MONOTONIC_CLOCK_ID
        total = max(self.sorter.count, 1)
        for i, (ts, event) in enumerate(self.sorter.drain()):
            self.parse(ts if convert is None else convert(ts), event)
            if i & 0x3FFF == 0:
                progress(parse_progress(i, total))
        self.ftrace.finish()
        progress(1.0)

    def _lines(self, stream: BinaryIO) -> Iterator[bytes]:
        """Complete lines (without their newline) after the preamble."""
        buf = stream.read(CHUNK)
        # `adb shell atrace ... > out.txt` starts with the command's output up to "TRACE:".
        marker = buf.find(b"TRACE:\n", 0, LOOKAHEAD)
        if marker >= 0:
            buf = buf[marker + 7 :]
            if buf.startswith(_ZLIB_HEADER):
                source: BinaryIO = _Inflater(stream, buf)  # type: ignore[assignment]  # reads like one: read(n) is all used
                buf = source.read(CHUNK)
                stream = source
        # trace-cmd's text output starts with "cpus=N".
        newline = buf.find(b"\n")
        if newline >= 0 and _CPUS_HEADER.match(buf[:newline]):
            buf = buf[newline + 1 :]
        self.state = BEFORE_SYSTRACE if buf[:1] == b"<" else SYSTRACE
        while True:
            lines = buf.split(b"\n")
            buf = lines.pop()
            yield from lines
            if len(buf) > MAX_LINE:
                # No newline in sight (not text after all): drop it rather than hold the file.
                self.stats.inc("systrace_parse_failure")
                rest = _after_next_newline(stream)
                if rest is None:
                    break
                buf = rest
                continue
            more = stream.read(CHUNK)
            if not more:
                break
            buf += more
        if getattr(stream, "truncated", False):
            self.stats.inc("compressed_file_truncated")  # a .gz or `atrace -z` capture cut short

    def _read_line(self, line: bytes) -> None:
        state = self.state
        if state == SYSTRACE:
            if b"</script>" in line:
                self.state = END
            elif line and not line.startswith(b"#"):
                self._event_line(line)
        elif state == BEFORE_SYSTRACE:
            if _TRACE_DATA_SECTION in line:
                self.state = IN_DATA_SECTION
        elif state == IN_DATA_SECTION:
            if line.startswith(b"#") and b"TASK-PID" in line:
                self.state = SYSTRACE
            elif line.startswith(b"PROCESS DUMP"):
                self.state = PROCESS_DUMP_LONG
            elif line.startswith(b"CGROUP DUMP"):
                self.state = CGROUP_DUMP
            elif b"</script>" in line:
                self.state = BEFORE_SYSTRACE
        elif state in (PROCESS_DUMP_LONG, PROCESS_DUMP_SHORT):
            if b"</script>" in line:
                self.state = BEFORE_SYSTRACE
            else:
                self._process_dump_line(line)
        elif state == CGROUP_DUMP:
            if b"</script>" in line:
                self.state = BEFORE_SYSTRACE

    def _event_line(self, raw: bytes) -> None:
        event = self.line_event(raw)
        if event is not None:
            self.sorter.push(*event)

    def line_event(self, raw: bytes) -> tuple[int, tuple] | None:
        """(ts, event for parse()) of one event line; None, counted, if it is not one.
        Also used by the JSON importer for `systemTraceEvents`."""
        line = tokenize_line(raw)
        if line is None:
            self.stats.inc("systrace_parse_failure")
            return None
        converted = to_ftrace_event(line)
        task = None if line.task == UNKNOWN_TASK else line.task
        tgid = c_uint32(line.tgid) if line.tgid and line.tgid[0] != "-" else None
        return line.ts, (line.cpu, line.pid, task, tgid, converted)

    def _process_dump_line(self, line: bytes) -> None:
        """systrace's `ps` dump: the long form names processes and their parents,
        the short one names threads and their processes."""
        tokens = _text(line).split()
        procs = self.trace.processes
        if tokens[:4] == ["USER", "PID", "TID", "CMD"] and len(tokens) == 4:
            self.state = PROCESS_DUMP_SHORT
        elif tokens[:4] == ["USER", "PID", "PPID", "VSZ"] and len(tokens) > 4:
            self.state = PROCESS_DUMP_LONG
        elif self.state == PROCESS_DUMP_LONG and len(tokens) >= 10:
            pid, ppid = c_uint32(tokens[1]), c_uint32(tokens[2])
            if pid is None or ppid is None:
                self.stats.inc("systrace_parse_failure")
                return
            parent = procs.get_or_create_process(ppid)
            upid = procs.get_or_create_process(pid)
            procs.process(upid).parent_upid = parent
            procs.set_process_name(upid, tokens[8])
        elif self.state == PROCESS_DUMP_SHORT and len(tokens) >= 4:
            tgid, tid = c_uint32(tokens[1]), c_uint32(tokens[2])
            if tgid is None or tid is None:
                self.stats.inc("systrace_parse_failure")
                return
            utid = procs.update_thread(tid, tgid)
            procs.set_thread_name(utid, _text(line).split(None, 3)[3])  # the command line, spaces and all

    def parse(self, ts: int, event: tuple) -> None:
        """One event of line_event(), in timestamp order."""
        cpu, pid, task, tgid, converted = event
        procs = self.trace.processes
        utid = procs.get_or_create_live_thread(pid)
        if task:
            procs.set_thread_name(utid, task, THREAD_NAME_PRIORITY_FTRACE)
        if tgid is not None:
            procs.update_thread(pid, tgid)
        if converted is not None:
            raw, *resolved = converted
            self.ftrace.parse_ftrace_event(ts, cpu, pb.FtraceEvent.FromString(raw), *resolved)
