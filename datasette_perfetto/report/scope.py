"""A report's scope: the RFC's flags, parsed and validated once.

The same flags arrive as URL query parameters (`?thread=RenderThread&top=20`)
and as CLI options (`--thread RenderThread --top 20`); both become a `Scope`.
No state lives anywhere else, so a URL or a command is a reproducible report.

Times: a value with a unit (`2.7s`, `150ms`, `20us`, `5ns`) is an offset from
the start of the trace, as report output shows times; a bare integer is an
absolute trace timestamp in nanoseconds, as SQL shows them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace

# Flag name -> one-line help (also the CLI's option help and the canned query parameter docs).
FLAGS: dict[str, str] = {
    "pid": "Scope to a process ID.",
    "process": "Scope to a process by name (glob).",
    "tid": "Scope to a thread ID.",
    "thread": "Scope to a thread by name (glob).",
    "track": "Scope to a track by name (glob).",
    "cpu": "Scope to a CPU.",
    "time": "Scope to a time range: START,END (2.7s,3.1s or raw ns).",
    "ts": "A point in time, for inspect views (2.734s or raw ns).",
    "name": "Row filter (glob); single-series views need it to match one name.",
    "min_duration": "Hide rows below this duration (150ms, 20us, raw ns).",
    "min_count": "Hide rows with fewer instances.",
    "sort": "Sort key; the choices depend on the view.",
    "top": "Rows per table section (default 10).",
    "max_lines": "Node budget for tree views (default 100).",
    "buckets": "Buckets for timeline and histogram views (default 20).",
    "group_by": "Grouping key where a view has one (scheduling summary: thread | process); any dimension "
    "(rank, machine, ...) on the table views: rows split per value.",
    "measure": "Slices histogram: what each instance counts for, dur (its duration, the default) or self "
    "(its duration less its direct children's).",
    "exclude_idle": "Stack samples: leave out V8's pseudo-frames (idle), (program) and (garbage collector) "
    "(1/true/yes/on; 0/false/no/off).",
    "baseline": "Compare against a baseline trace: a database served alongside (web) or a database file (CLI); "
    "table views and the overview.",
    "dim": "Scope to the tracks (and their slices, samples, counters, threads, processes) whose dimension NAME has "
    "VALUE: NAME=VALUE, VALUE the typed value (rank=3), the label (rank=rank 3) or the display name; repeatable.",
    "by": "dimensions compare: the dimension whose values are compared (rank, machine, ...).",
    "baseline_value": "dimensions compare: compare every value of the by dimension against this one "
    "(a value, label or display name).",
}
# Flags that may be given more than once (on the web dim=a=1&dim=b=2, in the CLI --dim a=1 --dim b=2).
REPEATABLE_FLAGS = ("dim",)

DEFAULT_TOP = 10
MEASURES = ("dur", "self")
DEFAULT_MAX_LINES = 100
DEFAULT_BUCKETS = 20
MAX_TOP = 10_000
MAX_BUCKETS = 500
# The flags that are GLOB patterns, and the longest pattern SQLite matches: its LIKE/GLOB pattern length limit
# (SQLITE_MAX_LIKE_PATTERN_LENGTH, in UTF-8 bytes); a longer one fails the query ("pattern too complex").
GLOB_FLAGS = ("process", "thread", "track", "name")
MAX_PATTERN_BYTES = 50_000
# The other text flags (sort, group_by, baseline) name a choice, a database or a file.
MAX_TEXT = 4096
MAX_INT64 = (1 << 63) - 1
# The flags' values as parameters: one text per flag, a list of texts for a repeatable flag.
Params = Mapping[str, str | Sequence[str]]

_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "min": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_TIME_RE = re.compile(r"^\s*(-?\d+(?:\.\d*)?|-?\.\d+)\s*([a-zµ]*)\s*$")


class ReportError(Exception):
    """A request the report cannot answer; str() is the one-line message."""

    def __init__(self, message: str, param: str | None = None, options: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.options = list(options)


@dataclass(frozen=True)
class TimeValue:
    """A point in time as given: an offset from the trace start, or absolute ns."""

    ns: int
    relative: bool
    text: str
    param: str = "time"

    def resolve(self, trace_start: int) -> int:
        ts = trace_start + self.ns if self.relative else self.ns
        if abs(ts) > MAX_INT64:  # SQLite integers are 64-bit
            raise ReportError(
                f"{self.param}: {shown(self.text)} is out of range: times must fit 64-bit nanoseconds (±292 years)",
                self.param,
            )
        return ts


def shown(text: str, limit: int = 40, quote: bool = True) -> str:
    """A value as quoted in a message (repr, or as is), cut to `limit` characters: a huge value stays one short
    line."""
    show = repr if quote else str
    if len(text) <= limit:
        return show(text)
    return show(text[:limit]) + f"… ({len(text):,} characters)"


def _digits(number: str) -> int:
    """How many significant digits the integer part of a decimal number has (leading zeros and sign aside)."""
    return len(number.lstrip("+-").split(".")[0].lstrip("0_").replace("_", ""))


def _whole(number: str) -> int:
    """int(number), leading zeros dropped first: Python counts them against its 4,300-digit limit."""
    sign = number[:1] if number[:1] in "+-" else ""
    digits = number[len(sign) :]
    if digits.isdigit():
        digits = digits.lstrip("0") or "0"
    return int(sign + digits)


def parse_duration(text: str, param: str) -> int:
    """'150ms' / '2.7s' / '20us' / '1500' (ns) -> ns."""
    value = parse_time(text, param)
    if value.ns < 0:
        raise ReportError(f"{param}: must not be negative, got {shown(text)}", param)
    return value.ns


def parse_time(text: str, param: str) -> TimeValue:
    """A time as TimeValue; anything that is not one, or does not fit a 64-bit nanosecond count, is a
    ReportError naming `param` (never Python's own errors: huge digit strings, float overflow)."""
    m = _TIME_RE.match(text)
    if not m:
        raise ReportError(
            f"{param}: expected a time such as 2.7s, 150ms, 20us or raw nanoseconds, got {shown(text)}", param
        )
    number, unit = m.groups()
    if unit and unit not in _UNITS:
        raise ReportError(
            f"{param}: unknown unit {shown(unit)} in {shown(text)}; use one of ns, us, ms, s, m, h", param
        )
    out_of_range = ReportError(
        f"{param}: {shown(text.strip())} is out of range: times must fit 64-bit nanoseconds (±292 years)", param
    )
    if not unit:
        if "." in number:
            raise ReportError(f"{param}: raw nanoseconds must be a whole number, got {shown(text)}", param)
        if _digits(number) > 19:  # before int(): Python refuses to convert more than 4,300 digits
            raise out_of_range
        ns = _whole(number)
        if abs(ns) > MAX_INT64:
            raise out_of_range
        return TimeValue(ns, False, text.strip(), param)
    value = float(number) * _UNITS[unit]  # inf for 310 nines, not an error
    if not math.isfinite(value) or abs(value) >= 1 << 63:
        raise out_of_range
    ns = round(value)
    if abs(ns) > MAX_INT64:
        raise out_of_range
    return TimeValue(ns, True, text.strip(), param)


def _int(text: str, param: str, low: int = 0, high: int = MAX_INT64) -> int:
    number = text.strip()
    if _digits(number) > len(str(max(abs(low), abs(high)))):  # before int(): no 4,300-digit conversions
        raise ReportError(f"{param}: must be between {low} and {high}, got {shown(number)}", param)
    try:
        value = _whole(number)
    except ValueError:
        raise ReportError(f"{param}: expected a whole number, got {shown(text)}", param) from None
    if not low <= value <= high:
        raise ReportError(f"{param}: must be between {low} and {high}, got {value}", param)
    return value


TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def _bool(text: str, param: str) -> bool:
    word = text.strip().lower()
    if word not in TRUE_WORDS + FALSE_WORDS:
        raise ReportError(
            f"{param}: expected one of {', '.join(TRUE_WORDS + FALSE_WORDS)}, got {shown(text)}",
            param,
            TRUE_WORDS + FALSE_WORDS,
        )
    return word in TRUE_WORDS


def _text(text: str, param: str) -> str:
    """A text flag's value, within what its SQL can take: a GLOB pattern within SQLite's limit."""
    if param in GLOB_FLAGS:
        size = len(text.encode("utf-8"))
        if size > MAX_PATTERN_BYTES:
            raise ReportError(
                f"{param}: the pattern is {size:,} bytes long; a GLOB pattern can have at most "
                f"{MAX_PATTERN_BYTES:,} bytes",
                param,
            )
    elif len(text) > MAX_TEXT:
        raise ReportError(f"{param}: {len(text):,} characters is too long (at most {MAX_TEXT:,})", param)
    return text


def parse_dim(text: str) -> tuple[str, str]:
    """A dim flag's NAME=VALUE as (name, value); quotes around the value are optional (rank="rank 3")."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    if not sep or not name or not value:
        raise ReportError(f"dim: expected NAME=VALUE (e.g. rank=3, machine=1), got {shown(text)}", "dim")
    return name, value


def flag_values(key: str, raw: str | Sequence[str]) -> list[str]:
    """A flag's values as given: several only for a repeatable flag (a flag given twice is a bad request)."""
    values = [raw] if isinstance(raw, str) else [str(v) for v in raw]
    if len(values) > 1 and key not in REPEATABLE_FLAGS:
        raise ReportError(f"{key}: given more than once", key)
    return values


def grouped(pairs: Sequence[tuple[str, str]]) -> dict[str, str | list[str]]:
    """(flag, value) pairs as parameters: a repeatable flag's values in a list, in the order given."""
    out: dict[str, str | list[str]] = {}
    for key, value in pairs:
        if key in REPEATABLE_FLAGS:
            listed = out.setdefault(key, [])
            assert isinstance(listed, list)
            listed.append(value)
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class Scope:
    pid: int | None = None
    process: str | None = None
    tid: int | None = None
    thread: str | None = None
    track: str | None = None
    cpu: int | None = None
    time: tuple[TimeValue, TimeValue] | None = None
    ts: TimeValue | None = None
    name: str | None = None
    min_duration: int | None = None
    min_count: int | None = None
    sort: str | None = None
    top: int = DEFAULT_TOP
    max_lines: int = DEFAULT_MAX_LINES
    buckets: int = DEFAULT_BUCKETS
    group_by: str | None = None
    exclude_idle: bool = False
    measure: str = "dur"
    baseline: str | None = None
    dim: tuple[tuple[str, str], ...] | None = None  # (name, value) pairs, all of which a track must have
    by: str | None = None
    baseline_value: str | None = None
    # The flags as the user wrote them, for echoing and for links.
    given: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @classmethod
    def parse(cls, params: Params | Sequence[tuple[str, str]]) -> Scope:
        """Parameters (a repeatable flag's values as a list), or (flag, value) pairs as Scope.given holds them."""
        if not isinstance(params, Mapping):
            params = grouped(params)
        values: dict[str, object] = {}
        given: list[tuple[str, str]] = []
        for key, raw in params.items():
            if key not in FLAGS:
                raise ReportError(f"unknown parameter {key!r}", key, list(FLAGS))
            for text in flag_values(key, raw):
                if text.strip() == "":
                    continue  # an empty form field means "not set"
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:  # a command-line argument that was not UTF-8 (surrogate escapes)
                    raise ReportError(f"{key}: the value is not valid UTF-8 text", key) from None
                given.append((key, text))
                if key == "dim":
                    dims = values.setdefault("dim", ())
                    assert isinstance(dims, tuple)
                    values["dim"] = (*dims, parse_dim(_text(text, key)))
                else:
                    values[key] = parse_flag(key, text)
        return cls(**values, given=tuple(given))  # type: ignore[arg-type]

    def to_params(self) -> dict[str, str | list[str]]:
        return grouped(self.given)

    def with_params(self, **changes: str | None) -> dict[str, str | list[str]]:
        """The URL/CLI parameters of this scope with some flags changed (None drops one)."""
        return with_changes(self.to_params(), changes)

    def is_scoped(self) -> bool:
        """True when any flag narrows which data the report covers."""
        return (
            any(
                getattr(self, f) is not None
                for f in (
                    "pid",
                    "process",
                    "tid",
                    "thread",
                    "track",
                    "cpu",
                    "time",
                    "name",
                    "min_duration",
                    "min_count",
                    "dim",
                )
            )
            or self.exclude_idle
        )


def parse_flag(key: str, text: str) -> object:
    """One flag's value, validated (ReportError naming the flag otherwise)."""
    if key in ("pid", "tid", "cpu"):
        return _int(text, key, -(1 << 31), (1 << 32) - 1)
    elif key in ("min_count",):
        return _int(text, key)
    elif key == "top":
        return _int(text, key, 1, MAX_TOP)
    elif key == "max_lines":
        return _int(text, key, 1, MAX_TOP)
    elif key == "buckets":
        return _int(text, key, 1, MAX_BUCKETS)
    elif key == "exclude_idle":
        return _bool(text, key)
    elif key == "measure":
        if text not in MEASURES:
            raise ReportError(f"measure: expected one of {', '.join(MEASURES)}, got {shown(text)}", key)
        return text
    elif key == "min_duration":
        return parse_duration(text, key)
    elif key == "ts":
        return parse_time(text, key)
    elif key == "time":
        parts = text.split(",")
        if len(parts) != 2:
            raise ReportError(f"time: expected START,END (e.g. 2.7s,3.1s), got {shown(text)}", key)
        start, end = parse_time(parts[0], key), parse_time(parts[1], key)
        return (start, end)
    else:
        return _text(text, key)


def resolve_range(time: tuple[TimeValue, TimeValue], trace_start: int) -> tuple[int, int]:
    """A time flag's [start, end) in ns; a ReportError when it does not end after it starts."""
    start, end = (t.resolve(trace_start) for t in time)
    if end <= start:
        first, last = (shown(t.text, quote=False) for t in time)
        raise ReportError(f"time: the end ({last}) must be after the start ({first})", "time")
    return start, end


def with_changes(
    params: Mapping[str, str | list[str]], changes: Mapping[str, str | list[str] | None]
) -> dict[str, str | list[str]]:
    """URL/CLI parameters with some flags changed (None drops one; a list sets a repeatable flag's values);
    the others keep their order."""
    out = dict(params)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = list(value) if isinstance(value, list) else str(value)
    return out


def scope_fields() -> list[str]:
    return [f.name for f in fields(Scope) if f.name != "given"]


__all__ = ["Scope", "ReportError", "FLAGS", "parse_time", "parse_duration", "TimeValue", "replace"]
