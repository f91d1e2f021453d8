"""A report's scope: the RFC's flags, parsed and validated once.

The same flags arrive as URL query parameters (`?thread=RenderThread&top=20`)
and as CLI options (`--thread RenderThread --top 20`); both become a `Scope`.
No state lives anywhere else, so a URL or a command is a reproducible report.

Times: a value with a unit (`2.7s`, `150ms`, `20us`, `5ns`) is an offset from
the start of the trace, as report output shows times; a bare integer is an
absolute trace timestamp in nanoseconds, as SQL shows them.
"""

from __future__ import annotations

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
    "group_by": "Grouping key where a view has one (scheduling summary: thread | process).",
    "baseline": "Compare against a baseline trace: a database served alongside (web) or a database file (CLI); "
    "table views and the overview.",
}

DEFAULT_TOP = 10
DEFAULT_MAX_LINES = 100
DEFAULT_BUCKETS = 20
MAX_TOP = 10_000
MAX_BUCKETS = 500

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

    def resolve(self, trace_start: int) -> int:
        ts = trace_start + self.ns if self.relative else self.ns
        if abs(ts) >= 1 << 63:  # SQLite integers are 64-bit
            raise ReportError(f"{self.text!r} is out of range")
        return ts


def parse_duration(text: str, param: str) -> int:
    """'150ms' / '2.7s' / '20us' / '1500' (ns) -> ns."""
    value = parse_time(text, param)
    if value.ns < 0:
        raise ReportError(f"{param}: must not be negative, got {text!r}", param)
    return value.ns


def parse_time(text: str, param: str) -> TimeValue:
    m = _TIME_RE.match(text)
    if not m:
        raise ReportError(f"{param}: expected a time such as 2.7s, 150ms, 20us or raw nanoseconds, got {text!r}", param)
    number, unit = m.groups()
    if unit and unit not in _UNITS:
        raise ReportError(f"{param}: unknown unit {unit!r} in {text!r}; use one of ns, us, ms, s, m, h", param)
    if not unit:
        if "." in number:
            raise ReportError(f"{param}: raw nanoseconds must be a whole number, got {text!r}", param)
        if abs(int(number)) >= 1 << 63:
            raise ReportError(f"{param}: {text!r} is out of range", param)
        return TimeValue(int(number), False, text.strip())
    ns = round(float(number) * _UNITS[unit])
    if abs(ns) >= 1 << 63:
        raise ReportError(f"{param}: {text!r} is out of range", param)
    return TimeValue(ns, True, text.strip())


def _int(text: str, param: str, low: int = 0, high: int = (1 << 63) - 1) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ReportError(f"{param}: expected a whole number, got {text!r}", param) from None
    if not low <= value <= high:
        raise ReportError(f"{param}: must be between {low} and {high}, got {value}", param)
    return value


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
    baseline: str | None = None
    # The flags as the user wrote them, for echoing and for links.
    given: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> Scope:
        values: dict[str, object] = {}
        given: list[tuple[str, str]] = []
        for key, raw in params.items():
            if key not in FLAGS:
                raise ReportError(f"unknown parameter {key!r}", key, list(FLAGS))
            text = str(raw)
            if text.strip() == "":
                continue  # an empty form field means "not set"
            given.append((key, text))
            if key in ("pid", "tid", "cpu"):
                values[key] = _int(text, key, -(1 << 31), (1 << 32) - 1)
            elif key in ("min_count",):
                values[key] = _int(text, key)
            elif key == "top":
                values[key] = _int(text, key, 1, MAX_TOP)
            elif key == "max_lines":
                values[key] = _int(text, key, 1, MAX_TOP)
            elif key == "buckets":
                values[key] = _int(text, key, 1, MAX_BUCKETS)
            elif key == "min_duration":
                values[key] = parse_duration(text, key)
            elif key == "ts":
                values[key] = parse_time(text, key)
            elif key == "time":
                parts = text.split(",")
                if len(parts) != 2:
                    raise ReportError(f"time: expected START,END (e.g. 2.7s,3.1s), got {text!r}", key)
                start, end = parse_time(parts[0], key), parse_time(parts[1], key)
                values[key] = (start, end)
            else:
                values[key] = text
        return cls(**values, given=tuple(given))  # type: ignore[arg-type]

    def to_params(self) -> dict[str, str]:
        return dict(self.given)

    def with_params(self, **changes: str | None) -> dict[str, str]:
        """The URL/CLI parameters of this scope with some flags changed (None drops one)."""
        return with_changes(self.to_params(), changes)

    def is_scoped(self) -> bool:
        """True when any flag narrows which data the report covers."""
        return any(
            getattr(self, f) is not None
            for f in ("pid", "process", "tid", "thread", "track", "cpu", "time", "name", "min_duration", "min_count")
        )


def with_changes(params: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """URL/CLI parameters with some flags changed (None drops one); the others keep their order."""
    out = dict(params)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = str(value)
    return out


def scope_fields() -> list[str]:
    return [f.name for f in fields(Scope) if f.name != "given"]


__all__ = ["Scope", "ReportError", "FLAGS", "parse_time", "parse_duration", "TimeValue", "replace"]
