"""trace_processor's scalar SQL functions, for any sqlite3 connection.

Registered on every Datasette connection (prepare_connection) and by the CLI,
so trace_processor users' queries keep working. Functions that read tables
(extract_arg, trace_start, ...) query the connection they are registered on,
and return NULL where the table does not exist (e.g. Datasette's _internal).
"""

from __future__ import annotations

import bisect
import ctypes
import ctypes.util
import datetime
import functools
import json
import re
import sqlite3
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

from .aggregates import clamp_int64
from .ftrace_text import to_ftrace_function

_VALUE_BY_TYPE = (
    "CASE value_type WHEN 'real' THEN real_value "
    "WHEN 'string' THEN string_value WHEN 'json' THEN string_value "
    "WHEN 'null' THEN NULL ELSE int_value END"
)


def _reader(conn: sqlite3.Connection, sql: str) -> Callable[..., Any]:
    """A function running `sql` on conn, returning the first column or None."""

    def run(*params: Any) -> Any:
        try:
            row = conn.execute(sql, params).fetchone()
        except sqlite3.OperationalError:
            return None  # no such table: not a trace database
        return row[0] if row else None

    return run


def register_functions(conn: sqlite3.Connection) -> None:
    lookup_arg = _reader(conn, f"SELECT {_VALUE_BY_TYPE} FROM args WHERE arg_set_id = ? AND key = ?")

    def extract_arg(arg_set_id: Any, key: Any) -> Any:
        if arg_set_id is None:
            return None
        if not isinstance(arg_set_id, int):
            raise ValueError("EXTRACT_ARG: arg_set_id must be an integer")
        if not isinstance(key, str):
            raise ValueError("EXTRACT_ARG: key must be text")
        return lookup_arg(arg_set_id, key)

    bounds_start = _reader(conn, "SELECT start_ts FROM trace_bounds")
    bounds_end = _reader(conn, "SELECT end_ts FROM trace_bounds")
    metadata = _reader(conn, "SELECT coalesce(str_value, int_value) FROM metadata WHERE name = ? ORDER BY id LIMIT 1")
    # A machine's, a trace file's, or both's value of a key (trace_processor's metadata plugin): the first row.
    metadata_for_machine = _reader(
        conn,
        "SELECT coalesce(str_value, int_value) FROM metadata WHERE machine_id = ? AND name = ? ORDER BY id LIMIT 1",
    )
    metadata_for_trace = _reader(
        conn, "SELECT coalesce(str_value, int_value) FROM metadata WHERE trace_id = ? AND name = ? ORDER BY id LIMIT 1"
    )
    exact_metadata = _reader(
        conn,
        "SELECT coalesce(str_value, int_value) FROM metadata WHERE machine_id = ? AND trace_id = ? AND name = ? "
        "ORDER BY id LIMIT 1",
    )
    clocks = ClockConverter(conn)

    def trace_dur() -> int | None:
        start, end = bounds_start(), bounds_end()
        return None if start is None or end is None else end - start

    slice_span = _reader(conn, "SELECT json_array(track_id, depth, ts, dur) FROM slice WHERE id = ?")

    def slice_is_ancestor(ancestor_id: Any, descendant_id: Any) -> int | None:
        if ancestor_id is None or descendant_id is None:
            return None
        a, d = slice_span(ancestor_id), slice_span(descendant_id)
        if a is None or d is None:
            return 0
        a_track, a_depth, a_ts, a_dur = json.loads(a)
        d_track, d_depth, d_ts, d_dur = json.loads(d)
        if a_track != d_track or a_depth >= d_depth:
            return 0
        a_end = float("inf") if a_dur == -1 else a_ts + a_dur
        d_end = float("inf") if d_dur == -1 else d_ts + d_dur
        return int(a_ts <= d_ts and d_end <= a_end)

    functions: dict[tuple[str, int], Callable] = {
        ("extract_arg", 2): extract_arg,
        ("trace_start", 0): bounds_start,
        ("trace_end", 0): bounds_end,
        ("trace_dur", 0): trace_dur,
        ("extract_metadata", 1): metadata,
        ("extract_metadata_for_machine", 2): metadata_for_machine,
        ("extract_metadata_for_trace", 2): metadata_for_trace,
        ("extract_exact_metadata", 3): exact_metadata,
        ("to_realtime", 1): lambda ts: clocks.convert("TO_REALTIME", REALTIME_CLOCK, ts),
        ("to_monotonic", 1): lambda ts: clocks.convert("TO_MONOTONIC", MONOTONIC_CLOCK, ts),
        ("abs_time_str", 1): clocks.abs_time_str,
        ("slice_is_ancestor", 2): slice_is_ancestor,
        ("str_split", 3): str_split,
        ("hash", -1): fnv1a_hash,
        ("unhex", 1): unhex,
        ("reverse", 1): lambda s: None if s is None else str(s)[::-1],
        ("regexp", 2): regexp,
        ("regexp_extract", 2): regexp_extract,
        ("regexp_replace_simple", 3): regexp_replace_simple,
        ("to_timecode", 1): to_timecode,
        # Report flags inside canned queries: the same time syntax as report URLs.
        ("report_time", 1): lambda text: _report_time(text, bounds_start),
        ("report_range_start", 1): lambda text: _report_range(text, bounds_start, 0),
        ("report_range_end", 1): lambda text: _report_range(text, bounds_start, 1),
        ("report_duration", 1): _report_duration,
        ("to_ftrace", 1): to_ftrace_function(conn),
        ("demangle", 1): demangle,
        ("__intrinsic_arg_set_to_json", 1): partial(arg_set_to_json, conn),
        ("__intrinsic_demangle", 1): demangle,
    }
    for unit, ns in (
        ("us", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("min", 60_000_000_000),
        ("hours", 3_600_000_000_000),
        ("days", 86_400_000_000_000),
    ):
        functions[(f"time_to_{unit}", 1)] = _divide_by(ns)
        functions[(f"time_from_{unit}", 1)] = _multiply_by(ns)
    for (name, nargs), fn in functions.items():
        conn.create_function(name, nargs, fn, deterministic=name not in _TABLE_READERS)


# Functions that read tables must not be marked deterministic: their result
# depends on the database, not only the arguments.
_TABLE_READERS = {
    "extract_arg",
    "__intrinsic_arg_set_to_json",
    "trace_start",
    "trace_end",
    "trace_dur",
    "extract_metadata",
    "extract_metadata_for_machine",
    "extract_metadata_for_trace",
    "extract_exact_metadata",
    "to_realtime",
    "to_monotonic",
    "abs_time_str",
    "slice_is_ancestor",
    "report_time",
    "report_range_start",
    "report_range_end",
    "to_ftrace",
}


def _report_time(text: Any, trace_start: Callable[[], Any]) -> int | None:
    """'2.7s' (offset from the trace start) or '123456' (absolute ns) -> ns; NULL for ''."""
    from .report.scope import ReportError, parse_time

    if text is None or str(text).strip() == "":
        return None
    try:
        return parse_time(str(text), "time").resolve(trace_start() or 0)
    except ReportError as e:
        raise ValueError(e.message) from None


def _report_range(text: Any, trace_start: Callable[[], Any], index: int) -> int | None:
    if text is None or str(text).strip() == "":
        return None
    from .report.scope import ReportError, parse_flag, resolve_range

    try:  # as the report parses it: a range that does not end after it starts is refused, not empty
        time = parse_flag("time", str(text))
        return resolve_range(time, trace_start() or 0)[index]  # type: ignore[arg-type]
    except ReportError as e:
        raise ValueError(e.message) from None


def _report_duration(text: Any) -> int | None:
    from .report.scope import ReportError, parse_duration

    if text is None or str(text).strip() == "":
        return None
    try:
        return parse_duration(str(text), "min_duration")
    except ReportError as e:
        raise ValueError(e.message) from None


def _divide_by(ns: int) -> Callable[[Any], int | None]:
    # trace_processor's time.conversion uses integer division (truncating).
    return lambda v: None if v is None else int(v / ns) if isinstance(v, float) else _trunc_div(int(v), ns)


def _multiply_by(ns: int) -> Callable[[Any], int | None]:
    return lambda v: None if v is None else int(v * ns)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // b
    return q if a >= 0 else -q


def str_split(s: Any, delim: Any, n: Any) -> str | None:
    if not isinstance(delim, str) or not delim:
        raise ValueError("STR_SPLIT: delimiter must be a non-empty string")
    if not isinstance(n, int) or n < 0:
        raise ValueError("STR_SPLIT: field index must be a non-negative integer")
    if not isinstance(s, str):
        return None
    parts = s.split(delim)
    return parts[n] if n < len(parts) else None


def fnv1a_hash_bytes(data: bytes, h: int = 0xCBF29CE484222325) -> int:
    """64-bit FNV-1a, unsigned."""
    for byte in data:
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def fnv1a_hash(*values: Any) -> int:
    """trace_processor's HASH(): FNV-1a over the values, as a signed int64."""
    h = 0xCBF29CE484222325
    for v in values:
        if isinstance(v, bool) or isinstance(v, int):
            data = int(v).to_bytes(8, "little", signed=True)
        elif isinstance(v, str):
            data = v.encode("utf-8")
        else:
            raise ValueError("HASH: arguments must be integers or text")
        h = fnv1a_hash_bytes(data, h)
    return h - (1 << 64) if h >= 1 << 63 else h


def unhex(s: Any) -> int | None:
    if s is None:
        return None
    text = str(s).strip()
    if text[:2].lower() == "0x":
        text = text[2:]
    if not text:
        raise ValueError("UNHEX: empty input")
    try:
        v = int(text, 16)
    except ValueError:
        raise ValueError(f"UNHEX: invalid hex {s!r}") from None
    v &= 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v >= 1 << 63 else v


@lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def regexp(pattern: Any, value: Any) -> int | None:
    if pattern is None or value is None:
        return None
    return int(_compile(str(pattern)).search(str(value)) is not None)


def regexp_extract(value: Any, pattern: Any) -> str | None:
    if pattern is None or value is None:
        return None
    rx = _compile(str(pattern))
    if rx.groups > 1:
        raise ValueError("REGEXP_EXTRACT: at most one capture group")
    m = rx.search(str(value))
    if not m:
        return None
    return m.group(1) if rx.groups == 1 else m.group(0)


def regexp_replace_simple(value: Any, pattern: Any, replacement: Any) -> str | None:
    if value is None or pattern is None or replacement is None:
        return None
    return _compile(str(pattern)).sub(lambda _m: str(replacement), str(value))


# Clock ids (ClockSnapshot.Clock / BuiltinClock) of the clocks trace time converts to.
REALTIME_CLOCK, MONOTONIC_CLOCK = 1, 3


class ClockConverter:
    """Trace time to the REALTIME or MONOTONIC clock from the clock_snapshot table (trace_processor's
    ClockConverter): between two snapshots the earlier one's offset, never past the later one's value;
    after the last, its offset; before the first, its value. Read once per connection, when first used."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.timelines: dict[int, tuple[list[int], list[int]]] | None = None

    def _timeline(self, clock_id: int) -> tuple[list[int], list[int]]:
        if self.timelines is None:
            self.timelines = {REALTIME_CLOCK: ([], []), MONOTONIC_CLOCK: ([], [])}
            try:
                rows = self.conn.execute(
                    "SELECT clock_id, ts, clock_value FROM clock_snapshot WHERE clock_id IN (?, ?) ORDER BY id",
                    (REALTIME_CLOCK, MONOTONIC_CLOCK),
                ).fetchall()
            except sqlite3.OperationalError:
                rows = []  # not a trace database
            by_ts: dict[int, dict[int, int]] = {REALTIME_CLOCK: {}, MONOTONIC_CLOCK: {}}
            for clock, ts, value in rows:
                by_ts[clock].setdefault(ts, value)  # the first snapshot at a time stands
            for clock, points in by_ts.items():
                times = sorted(points)
                self.timelines[clock] = (times, [points[t] for t in times])
        return self.timelines[clock_id]

    def to_clock(self, clock_id: int, ts: int) -> int | None:
        """`ts` on clock `clock_id`; None when the trace has no snapshot of that clock."""
        times, values = self._timeline(clock_id)
        if not times:
            return None
        at = bisect.bisect_left(times, ts)
        if at == len(times):
            return clamp_int64(values[-1] + ts - times[-1])
        if at == 0 or times[at] == ts:
            return values[at]
        return min(values[at - 1] + ts - times[at - 1], values[at])

    def convert(self, function: str, clock_id: int, ts: Any) -> int | None:
        """A SQL function's value: NULL for NULL or a trace without the clock (one bad timestamp does not stop
        the query, as in trace_processor); an error for a value that is not an integer."""
        if ts is None:
            return None
        if type(ts) is not int:
            raise ValueError(f"{function}: first argument should be timestamp")
        return self.to_clock(clock_id, ts)

    def abs_time_str(self, ts: Any) -> str | None:
        """ABS_TIME_STR: the REALTIME clock's time as ISO 8601 in UTC, to the nanosecond."""
        real = self.convert("ABS_TIME_STR", REALTIME_CLOCK, ts)
        if real is None:
            return None
        seconds, ns = divmod(real, 1_000_000_000)
        try:
            moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None  # beyond the years a date can hold
        return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns:09d}"


def to_timecode(ns: Any) -> str | None:
    if ns is None:
        return None
    ns = int(ns)
    s, rem = divmod(ns, 1_000_000_000)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    ms, rem = divmod(rem, 1_000_000)
    us, n = divmod(rem, 1_000)
    return f"{h:02d}:{m:02d}:{s:02d} {ms:03d} {us:03d} {n:03d}"


@functools.cache
def _cxa_demangle():
    """libstdc++'s __cxa_demangle (what trace_processor's demangle calls when built without LLVM), with
    libc's free for its result; None where there is no libstdc++."""
    path = ctypes.util.find_library("stdc++")
    if path is None:
        return None
    try:
        library, libc = ctypes.CDLL(path), ctypes.CDLL(None)
    except OSError:
        return None
    function = library.__cxa_demangle
    function.restype = ctypes.c_void_p
    function.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    libc.free.argtypes = [ctypes.c_void_p]
    return function, libc.free


def demangle(name):
    """A C++ symbol demangled; NULL when it is not a mangled name (or no demangler is there)."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise ValueError("Unsupported type of arg passed to DEMANGLE")
    functions = _cxa_demangle()
    if functions is None or "\0" in name:
        return None
    cxa_demangle, free = functions
    status = ctypes.c_int(0)
    result = cxa_demangle(name.encode("utf-8", "surrogateescape"), None, None, ctypes.byref(status))
    if not result:
        return None
    try:
        return ctypes.string_at(result).decode("utf-8", "replace")
    finally:
        free(result)


_ARG_PATH = re.compile(r"([^.\[]+)|\[(\d+)\]")


def arg_set_to_json(conn: sqlite3.Connection, arg_set_id: Any) -> str | None:
    """An arg set as one JSON object, its keys' dotted paths and [i] indices made nested objects and arrays
    (trace_processor's __intrinsic_arg_set_to_json), in the set's order; NULL for NULL."""
    if arg_set_id is None:
        return None
    if not isinstance(arg_set_id, int):
        raise ValueError("PRINT_ARGS: 1st argument should be arg set id")
    root: dict = {}
    rows = conn.execute(
        "SELECT key, int_value, string_value, real_value, value_type FROM args WHERE arg_set_id = ? ORDER BY id",
        (arg_set_id,),
    )
    for key, int_value, string_value, real_value, value_type in rows:
        parts = [name if name else int(index) for name, index in _ARG_PATH.findall(key)]
        node: Any = root
        for part, following in zip(parts, parts[1:]):
            empty: Any = [] if isinstance(following, int) else {}
            if isinstance(part, int):
                node.extend([None] * (part + 1 - len(node)))
                if node[part] is None:
                    node[part] = empty
                node = node[part]
            else:
                node = node.setdefault(part, empty)
        last = parts[-1] if parts else key
        value = _json_arg_value(value_type, int_value, string_value, real_value)
        if isinstance(last, int):
            node.extend([None] * (last + 1 - len(node)))
            node[last] = value
        elif isinstance(node, dict):
            node[last] = value
    return json.dumps(root, separators=(",", ":"), ensure_ascii=False)


def _json_arg_value(value_type: str, int_value, string_value, real_value) -> Any:
    if value_type == "bool":
        return bool(int_value)
    if value_type == "uint":
        return int_value % (1 << 64)  # stored with its int64 bit pattern
    if value_type == "pointer":
        return f"0x{int_value % (1 << 64):x}"
    if value_type == "int":
        return int_value
    if value_type == "real":
        return real_value
    return string_value  # string, json; NULL for null
