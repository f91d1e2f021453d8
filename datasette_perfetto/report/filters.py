"""Scope flags as SQL: joins, WHERE terms and bound parameters, built once per report.

Every value is a bound parameter; names are GLOB patterns, as in the RFC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .base import ReportRun


@dataclass
class Where:
    terms: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def add(self, term: str, **params: Any) -> None:
        self.terms.append(term)
        self.params.update(params)

    def sql(self, prefix: str = "WHERE") -> str:
        return f"{prefix} " + "\n  AND ".join(self.terms) if self.terms else ""


# slice → its track → the track's thread and process (a thread track's process is the thread's).
# Joined on the tables' ids: utid/upid are generated aliases with no index, which costs an automatic index per query.
SLICE_FROM = """FROM slice s
JOIN track tr ON tr.id = s.track_id
LEFT JOIN thread th ON th.id = tr.utid
LEFT JOIN process p ON p.id = coalesce(tr.upid, th.upid)"""


def owner_terms(run: ReportRun, threads: bool = True) -> Where:
    """The pid/process (and, with `threads`, tid/thread) flags as terms on process alias p and
    thread alias th: the one place every view turns owner flags into SQL."""
    s = run.scope
    w = Where()
    if s.pid is not None:
        w.add("p.pid = :pid", pid=s.pid)
    if s.process is not None:
        w.add("p.name GLOB :process", process=s.process)
    if threads:
        if s.tid is not None:
            w.add("th.tid = :tid", tid=s.tid)
        if s.thread is not None:
            w.add("th.name GLOB :thread", thread=s.thread)
    return w


def track_terms(run: ReportRun) -> Where:
    """Terms on a track and its thread/process (aliases tr, th, p as in SLICE_FROM)."""
    w = owner_terms(run)
    if run.scope.track is not None:
        w.add("tr.name GLOB :track", track=run.scope.track)
    return w


def slice_where(run: ReportRun, name: bool = True) -> Where:
    """WHERE terms for slices (alias s) under the run's scope.

    Process/thread/track flags become `s.track_id IN (tracks in scope)`, so
    SQLite walks the (track_id, ts) index of just those tracks instead of
    joining every slice to its thread and process."""
    s = run.scope
    tracks = track_terms(run)
    w = Where()
    if tracks.terms:
        w.add(
            f"""s.track_id IN (
    SELECT tr.id FROM track tr
    LEFT JOIN thread th ON th.id = tr.utid
    LEFT JOIN process p ON p.id = coalesce(tr.upid, th.upid)
    {tracks.sql()})""",
            **tracks.params,
        )
    if s.time is not None:
        start, end = run.time_range()
        # Slices that overlap the range; an unfinished slice (dur -1) counts from its start.
        w.add("s.ts < :range_end AND s.ts + max(s.dur, 0) >= :range_start", range_start=start, range_end=end)
    if name and s.name is not None:
        w.add("s.name GLOB :name", name=s.name)
    if s.min_duration is not None:
        w.add("s.dur >= :min_duration", min_duration=s.min_duration)
    return w


def needs_slice_joins(run: ReportRun) -> bool:
    s = run.scope
    return any(v is not None for v in (s.pid, s.process, s.tid, s.thread, s.track))
