"""atrace markers → slices, async slices, instants and counters.

Userspace writes markers into the kernel's trace_marker; they arrive as ftrace
`print` events (or systrace text lines) whose text is "B|tgid|name", "E|tgid",
"C|tgid|name|value", "S|tgid|name|cookie", "F|tgid|name|cookie", "I|tgid|name",
"N|tgid|track|name", "G|tgid|track|name|cookie", "H|tgid|track|[name|]cookie".
Some kernel drivers emit the same points as their own ftrace events
(tracing_mark_write, sde_/dpu_/g2d_/mali_/lwis_/samsung_tracing_mark_write,
zero). All of them end up in `AtraceParser.apply`, as in trace_processor's
SystraceParser.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ...model import TraceContext
from ...trackers.async_track_set import AsyncTrackSet
from ..common.values import text
from .ftrace_syscalls import syscall_tracker
from .packet_handlers import HandlerContext, ftrace_handler

EMPTY_SLICE_NAME = "[empty slice name]"


class TracePoint(NamedTuple):
    phase: str
    tgid: int
    name: str | None = None
    value: int = 0  # counter value or async cookie
    track_name: str | None = None  # N/G/H


# Result of parse_marker besides a TracePoint: not a marker we count as broken.
UNSUPPORTED = "unsupported"

_C_SPACE = " \t\n\v\f\r"


def c_uint32(s: str) -> int | None:
    """C's strtoul then a cast to uint32, accepting only a fully consumed string
    (trace_processor's StringToUInt32): leading blanks and a sign are allowed,
    negative numbers wrap."""
    value = _c_integer(s)
    if value is None:
        return None
    if abs(value) > (1 << 64) - 1:
        return 0xFFFFFFFF  # strtoul saturates at ULONG_MAX
    return value & 0xFFFFFFFF


def c_int64(s: str) -> int | None:
    """C's strtoll, saturating, accepting only a fully consumed string (StringToInt64)."""
    value = _c_integer(s)
    if value is None:
        return None
    return max(min(value, (1 << 63) - 1), -(1 << 63))


def c_int32(s: str) -> int | None:
    """strtol (64-bit long) then a cast to int32 (StringToInt32)."""
    value = c_int64(s)
    if value is None:
        return None
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


_BEYOND_64_BITS = 1 << 70  # what every caller saturates, whatever the digits


def _c_integer(s: str) -> int | None:
    if len(s) < 40 and s.isascii() and s.isdigit():
        return int(s)  # the usual case
    body = s.lstrip(_C_SPACE)
    sign = 1
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if not body or not body.isascii() or not body.isdigit():
        return None
    body = body.lstrip("0") or "0"
    if len(body) > 30:  # past 64 bits (and past int()'s digit limit): saturated by the callers
        return sign * _BEYOND_64_BITS
    return sign * int(body)


def parse_marker(buf: str):
    """A TracePoint, None when the text is not a valid marker (a parse failure),
    or UNSUPPORTED for text that is deliberately ignored."""
    s, fields = _marker_fields(buf)
    if not fields[0]:
        return None
    parse = _PHASE_PARSERS.get(fields[0][0])
    if parse is not None:
        return parse(s, fields, c_uint32(_field(fields, 1)))
    if s.startswith("trace_event_clock_sync:"):
        return UNSUPPORTED
    return None


def _marker_fields(buf: str) -> tuple[str, list[str]]:
    """The marker without trailing newlines and NULs, and its fields."""
    end = len(buf)
    while end and buf[end - 1] in "\n\0":
        end -= 1
    s = buf[:end]
    fields: list[str] = []
    start = 0
    # Fields end at '|' or NUL, as the kernel writer may embed either.
    for i, ch in enumerate(s):
        if ch == "|" or ch == "\0":
            fields.append(s[start:i])
            start = i + 1
    fields.append(s[start:])
    return s, fields


def _field(fields: list[str], i: int) -> str:
    return fields[i] if i < len(fields) else ""


# Per phase letter: (marker, fields, tgid or None if missing) -> TracePoint, or None if invalid.


def _begin(s: str, fields: list[str], tgid: int | None) -> TracePoint | None:
    if tgid is None:
        return None
    # The name is everything after the tgid, '|' included.
    name_start = len(fields[0]) + 1 + len(_field(fields, 1)) + 1
    return TracePoint("B", tgid, s[name_start:] or EMPTY_SLICE_NAME)


def _end(s: str, fields: list[str], tgid: int | None) -> TracePoint | None:
    # Some writers (Flutter) send a bare "E": end events are thread-scoped anyway.
    return TracePoint("E", tgid or 0)


def _async(s: str, fields: list[str], tgid: int | None) -> TracePoint | None:
    name, cookie = _field(fields, 2), c_int64(_field(fields, 3))
    if tgid is None or not name or cookie is None:
        return None
    return TracePoint(fields[0][0], tgid, name, cookie)


def _instant(s: str, fields: list[str], tgid: int | None) -> TracePoint | None:
    if tgid is None or not _field(fields, 2):
        return None
    return TracePoint("I", tgid, fields[2])


def _track_instant(s: str, fields: list[str], tgid: int | None) -> TracePoint | None:
    track, name = _field(fields, 2), _field(fields, 3)
    if tgid is None or not track or not name:
        return None
    return TracePoint("N", tgid, name, 0, track)


def _counter(s: str, fields: list[str], tgid: int | None) -> TracePoint | None:
    name, value = _field(fields, 2), c_int64(_field(fields, 3))
    if tgid is None or not name or value is None:
        return None
    return TracePoint("C", tgid, name, value)  # a trailing category group is ignored


def _track_begin(s: str, fields: list[str], tgid: int | None) -> TracePoint | None:
    track, name, cookie = _field(fields, 2), _field(fields, 3), c_int64(_field(fields, 4))
    if tgid is None or not track or not name or cookie is None:
        return None
    return TracePoint("G", tgid, name, cookie, track)


def _track_end(s: str, fields: list[str], tgid: int | None) -> TracePoint | None:
    track, cookie = _field(fields, 2), c_int64(_field(fields, 4) or _field(fields, 3))
    if tgid is None or not track or cookie is None:
        return None
    return TracePoint("H", tgid, None, cookie, track)


_PHASE_PARSERS: dict[str, Callable[[str, list[str], int | None], TracePoint | None]] = {
    "B": _begin,
    "E": _end,
    "S": _async,
    "F": _async,
    "I": _instant,
    "N": _track_instant,
    "C": _counter,
    "G": _track_begin,
    "H": _track_end,
}


class AtraceParser:
    def __init__(self, trace: TraceContext, thread_track: Callable[[int], int] | None = None) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.procs = trace.processes
        self.slices = trace.slices
        # utid -> the thread's slice track, shared with track events so both nest together.
        self.thread_track = thread_track or (
            lambda utid: trace.tracks.intern("thread_execution", (("utid", utid),), "slice")
        )
        self._compressed: dict[tuple, AsyncTrackSet] = {}
        # Per async track: how many 'S' began on it and when the last did (they do not nest).
        self._unnestable: dict[int, list[int]] = {}

    # -- entry points ------------------------------------------------------------
    def parse(self, ts: int, ev: tuple) -> None:
        """An (EV_ATRACE, tid, marker text) event."""
        self.print_event(ts, ev[1], ev[2])

    def print_event(self, ts: int, pid: int, buf: str) -> None:
        point = parse_marker(buf)
        if point is None:
            self.stats.inc("systrace_parse_failure")
        elif point is not UNSUPPORTED:
            self.apply(ts, pid, point)

    def kernel_mark(self, ts: int, pid: int, trace_type: int, begin: bool, name: str, tgid: int, value: int) -> None:
        """A driver's own tracing_mark_write event: type B/E/C/I, or 0 with a begin flag."""
        if trace_type == 0:
            phase = "B" if begin else "E"
        elif trace_type in (0x42, 0x45, 0x43, 0x49):  # B E C I
            phase = chr(trace_type)
        else:
            self.stats.inc("systrace_parse_failure")
            return
        # For counters pid need not be in tgid (drivers use placeholder pids):
        # apply() never ties them together for 'C'.
        self.apply(ts, pid, TracePoint(phase, tgid, name, value))

    def zero_event(self, ts: int, pid: int, flag: int, name: str, tgid: int, value: int) -> None:
        """The msm kernels' "0" event: flag bits begin (1), end (2), int64 counter (4)."""
        if flag & 1:
            phase = "B"
        elif flag & 2:
            phase = "E"
        elif flag & 4:
            phase = "C"
        else:
            self.stats.inc("systrace_parse_failure")
            return
        self.apply(ts, pid, TracePoint(phase, tgid, name, value))

    # -- semantics ---------------------------------------------------------------
    def _utid(self, pid: int, tgid: int) -> int:
        if tgid == 0:
            return self.procs.get_or_create_live_thread(pid)
        return self.procs.update_thread(pid, tgid)

    def _compressed_tracks(self, type: str, upid: int, key: str | None, name: str | None) -> AsyncTrackSet:
        dims = (("upid", upid), ("name", key))
        tracks = self._compressed.get((type, dims))
        if tracks is None:
            group_id = self.trace.new_track_group()

            def make(idx: int, _event_name: str | None) -> int:  # named after the set
                track_id = self.trace.tracks.create(type, dims + (("track_compressor_idx", idx),), "slice", name)
                self.trace.tracks.row(track_id).track_group_id = group_id
                return track_id

            tracks = self._compressed[(type, dims)] = AsyncTrackSet(make)
        return tracks

    def apply(self, ts: int, pid: int, p: TracePoint) -> None:
        phase = p.phase
        utid: int | None
        if phase == "B":
            utid = self._utid(pid, p.tgid)
            self.slices.begin(ts, self.thread_track(utid), None, p.name, [])
            if p.name is not None and p.name.startswith("lmk,"):
                self._lmk_slice(ts, p.name)
        elif phase == "E":
            if p.tgid == 0:
                # No tgid (older Android): a thread never seen cannot have begun a slice.
                utid = self.procs.get_thread_or_null(pid)
                if utid is None:
                    return
            else:
                utid = self.procs.update_thread(pid, p.tgid)
            self.slices.end(ts, self.thread_track(utid), None, None, [])
        elif phase == "I":
            utid = self._utid(pid, p.tgid)
            self.slices.scoped(ts, 0, self.thread_track(utid), None, p.name, [])
        elif phase in ("S", "F"):
            self._async(ts, p)
        elif phase in ("N", "G", "H"):
            self._async_on_track(ts, pid, p)
        elif phase == "C":
            self._counter(ts, pid, p)

    def _async(self, ts: int, p: TracePoint) -> None:
        upid = self.procs.get_or_create_process(p.tgid)
        tracks = self._compressed_tracks("atrace_async_slice", upid, p.name, p.name)
        if p.phase == "F":
            track = tracks.track_for(p.value, "end")
            counts = self._unnestable.get(track)
            end_args = (
                []
                if counts is None
                else [
                    ("legacy_unnestable_begin_count", "legacy_unnestable_begin_count", "int", counts[0]),
                    ("legacy_unnestable_last_begin_ts", "legacy_unnestable_last_begin_ts", "int", counts[1]),
                ]
            )
            self.slices.end(ts, track, None, None, end_args)
            return
        # Android's async slices never nested, and some writers (PowerManager's
        # wakelocks) send many 'S' for one slice: only the first one opens it,
        # the rest are counted on the slice when it ends.
        track = tracks.track_for(p.value, "begin_once")
        counts = self._unnestable.setdefault(track, [0, 0])
        counts[0] += 1
        counts[1] = ts
        if self.slices.stacks.get(track):
            return
        self.slices.begin(ts, track, None, p.name, [("cookie", "cookie", "int", p.value)])

    def _async_on_track(self, ts: int, pid: int, p: TracePoint) -> None:
        if p.phase == "N" and p.track_name == "DeviceStateChanged":
            # Promoted to its own global track.
            track = self.trace.tracks.intern("android_device_state", (), "slice", "DeviceStateChanged")
            self.slices.scoped(ts, 0, track, None, p.name, [])
            return
        upid = self.procs.get_or_create_process(p.tgid)
        tracks = self._compressed_tracks("atrace_async_slice_for_track", upid, p.track_name, p.track_name)
        if p.phase == "N":
            track = tracks.for_interval(ts, 0)
            utid = self.procs.get_or_create_live_thread(pid)
            self.slices.scoped(ts, 0, track, None, p.name, [("utid", "utid", "uint", utid)])
        elif p.phase == "G":
            track = tracks.track_for(p.value, "begin")
            utid = self.procs.get_or_create_live_thread(pid)
            self.slices.begin(ts, track, None, p.name, [("utid", "utid", "uint", utid)])
        else:
            track = tracks.track_for(p.value, "end")
            utid = self.procs.get_or_create_live_thread(pid)
            self.slices.end(ts, track, None, None, [("end_utid", "end_utid", "uint", utid)])

    def _counter(self, ts: int, pid: int, p: TracePoint) -> None:
        # Never assume pid is a thread of tgid here: kernel drivers emit
        # counters from placeholder or unrelated pids.
        name = p.name or ""  # parse_marker gives every counter a name
        if name == "kill_one_process":
            # Userspace LMK: the value is the killed pid (0 when the kill is done),
            # shown as an instant like kernel LMK events; the counter is kept too.
            killed_pid = p.value & 0xFFFFFFFF
            if killed_pid:
                self._lmk_instant(ts, self.procs.get_or_create_process(killed_pid))
        elif name == "ScreenState":
            track = self.trace.tracks.intern("screen_state", (), "counter", "ScreenState")
            self.trace.insert_counter(ts, track, float(p.value))
            return
        elif name.startswith("battery_stats."):
            track = self.trace.tracks.intern("battery_stats", (("counter_key", name),), "counter", name)
            self.trace.insert_counter(ts, track, float(p.value))
            return
        # Per process on purpose: some counters are pushed from any of its threads.
        upid = self.procs.get_or_create_process(p.tgid)
        utid = self.procs.get_thread_or_null(pid)
        track = self.trace.tracks.intern("atrace_counter", (("upid", upid), ("name", name)), "counter", name)
        args = None if utid is None else [("utid", "utid", "uint", utid)]
        self.trace.insert_counter(ts, track, float(p.value), args)

    def _lmk_slice(self, ts: int, name: str) -> None:
        """ "lmk,<pid>,<reason>,<oom_score_adj>,..." slices (lmkd): the kill as an
        instant and the victim's oom_score_adj as a counter."""
        parts = [part for part in name.split(",") if part]
        if len(parts) < 4:
            return
        killed_pid, oom_score_adj = c_uint32(parts[1]), c_int32(parts[3])
        if killed_pid is None or oom_score_adj is None:
            return
        upid = self.procs.get_or_create_process(killed_pid)
        track = self.trace.tracks.intern("oom_score_adj", (("upid", upid),), "counter", "oom_score_adj")
        self.trace.insert_counter(ts, track, float(oom_score_adj))
        self._lmk_instant(ts, upid)

    def _lmk_instant(self, ts: int, upid: int) -> None:
        track = self.trace.tracks.intern("android_lmk", (("upid", upid),), "slice", "LMK")
        self.slices.scoped(ts, 0, track, None, "mem.lmk", [])


def atrace_parser(parser: HandlerContext) -> AtraceParser:
    return parser.state("atrace", lambda: AtraceParser(parser.trace, parser.thread_track))


# -- ftrace events ---------------------------------------------------------------------


@ftrace_handler("print")
def _print(parser: HandlerContext, ts: int, cpu: int, pid: int, event, *_) -> None:
    # The marker was written by a sys_write: when syscalls are traced too, end
    # that write here so it and the marker's slice nest on the thread's track.
    utid = parser.trace.processes.get_thread_or_null(pid)
    if utid is not None:
        syscall_tracker(parser).truncate_write(ts, utid)
    atrace_parser(parser).print_event(ts, pid, text(event.buf))


@ftrace_handler("mark_victim")
def _mark_victim(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, *_) -> None:
    """The kernel OOM killer chose a victim: an instant on the victim thread's track."""
    trace = parser.trace
    utid = trace.processes.get_or_create_thread(ev.pid & 0xFFFFFFFF)
    if parser.thread_track is None:
        return
    trace.slices.scoped(ts, 0, parser.thread_track(utid), None, "mem.oom_kill", [])


@ftrace_handler("zero")
def _zero(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, *_) -> None:
    atrace_parser(parser).zero_event(ts, pid, ev.flag, text(ev.name), ev.pid & 0xFFFFFFFF, ev.value)


@ftrace_handler("tracing_mark_write")
def _mdss_mark(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, *_) -> None:
    if not ev.HasField("trace_begin"):
        parser.stats.inc("systrace_parse_failure")
        return
    atrace_parser(parser).kernel_mark(ts, pid, 0, bool(ev.trace_begin), text(ev.trace_name), ev.pid & 0xFFFFFFFF, 0)


@ftrace_handler("sde_tracing_mark_write")
def _sde_mark(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, *_) -> None:
    if not ev.HasField("trace_type") and not ev.HasField("trace_begin"):
        parser.stats.inc("systrace_parse_failure")
        return
    atrace_parser(parser).kernel_mark(
        ts, pid, ev.trace_type & 0xFF, bool(ev.trace_begin), text(ev.trace_name), ev.pid & 0xFFFFFFFF, ev.value
    )


@ftrace_handler("samsung_tracing_mark_write")
def _samsung_mark(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, *_) -> None:
    if not ev.HasField("trace_type"):
        parser.stats.inc("systrace_parse_failure")
        return
    atrace_parser(parser).kernel_mark(
        ts, pid, ev.trace_type & 0xFF, False, text(ev.trace_name), ev.pid & 0xFFFFFFFF, ev.value
    )


@ftrace_handler("dpu_tracing_mark_write")
def _dpu_mark(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, *_) -> None:
    if not ev.type:
        parser.stats.inc("systrace_parse_failure")
        return
    trace_type = ev.type & 0xFF
    # Some drivers claim their thread belongs to another process: only
    # counters keep the event's tgid (their track is per process anyway).
    tgid = ev.pid & 0xFFFFFFFF if trace_type == ord("C") else 0
    atrace_parser(parser).kernel_mark(ts, pid, trace_type, False, text(ev.name), tgid, ev.value)


@ftrace_handler("g2d_tracing_mark_write", "mali_tracing_mark_write")
def _typed_mark(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, *_) -> None:
    if not ev.type:
        parser.stats.inc("systrace_parse_failure")
        return
    atrace_parser(parser).kernel_mark(ts, pid, ev.type & 0xFF, False, text(ev.name), ev.pid & 0xFFFFFFFF, ev.value)


@ftrace_handler("lwis_tracing_mark_write")
def _lwis_mark(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, *_) -> None:
    if not ev.type:
        parser.stats.inc("systrace_parse_failure")
        return
    atrace_parser(parser).kernel_mark(ts, pid, ev.type & 0xFF, False, text(ev.func_name), ev.pid & 0xFFFFFFFF, ev.value)
