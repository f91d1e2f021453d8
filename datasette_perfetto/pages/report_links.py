"""The details pages' links back to the report: the report's views scoped to exactly one track, slice, thread or
process.

The report scopes by flags (pid, tid, process and thread names, a track name glob, ts), not by row ids, and
tids, pids and names repeat across processes and machines. So each page picks the fewest flags that select
exactly its row, checked with the report's own terms (report/filters.py: FLAG_TERMS) on the same joins the views
use; when no combination of flags does, the page says so instead of linking to a report about more than it.
A view is linked only when the row has its kind of data (slices, counter values, scheduling, stack samples,
heap allocations or dumps); the others are listed greyed out.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from ..report.filters import FLAG_TERMS
from ..report.links import glob_escape
from . import data

# (label, noun, view, the flags the view takes) per kind of page, in the order shown.
_SLICES = ("slices", "slices", "table", frozenset({"pid", "process", "tid", "thread", "track"}))
_COUNTERS = ("counters", "counters", "list", frozenset({"pid", "process", "tid", "thread", "track", "cpu"}))
_SCHEDULING = ("scheduling", "scheduling", "summary", frozenset({"pid", "process", "tid", "thread"}))
_SAMPLES = ("stack samples", "stack-samples", "functions", frozenset({"pid", "process", "tid", "thread"}))
_HEAP_PROFILE = ("heap profile", "heap-profile", "functions", frozenset({"pid", "process"}))
_HEAP_DUMP = ("heap dump", "heap-dump", "types", frozenset({"pid", "process"}))
_TRACKS = ("tracks", "tracks", "table", frozenset({"pid", "process", "tid", "thread", "track", "cpu"}))
_INSPECT = (
    "inspect this slice",
    "slices",
    "inspect",
    frozenset({"pid", "process", "tid", "thread", "track", "name", "ts"}),
)


# SQLite's limit on a GLOB pattern (SQLITE_MAX_LIKE_PATTERN_LENGTH, bytes): a longer name is not a flag.
_MAX_PATTERN_BYTES = 50_000


def _glob(name: str | None) -> str | None:
    """A flag value matching exactly `name`, or None when a flag cannot carry it (empty, blank or padded: a
    URL's blank value means "not set"; too long for a pattern)."""
    if not name or name != name.strip():
        return None
    escaped = glob_escape(name)
    return escaped if len(escaped.encode("utf-8")) <= _MAX_PATTERN_BYTES else None


def _exists(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> bool:
    return bool(conn.execute(f"SELECT EXISTS({sql})", params).fetchone()[0])


def _count(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> int:
    return conn.execute(f"SELECT count(*) FROM ({sql})", params).fetchone()[0]


def _where(flags: dict[str, Any], extra: Iterable[str] = ()) -> str:
    terms = [FLAG_TERMS[f] if f != "cpu" else f"{data.CPU_SQL} = :cpu" for f in flags if f not in ("name", "ts")]
    terms += list(extra)
    return "WHERE " + " AND ".join(terms) if terms else ""


def _owner_candidates(
    tid: int | None, thread: str | None, pid: int | None, process: str | None
) -> list[dict[str, Any]]:
    """Flag sets for an owner, fewest first: ids, then ids and names."""
    ids: dict[str, Any] = {}
    if pid is not None:
        ids["pid"] = pid
    if tid is not None:
        ids["tid"] = tid
    named = dict(ids)
    if _glob(process):
        named["process"] = _glob(process)
    if _glob(thread):
        named["thread"] = _glob(thread)
    return [c for c in ((ids, named) if named != ids else (ids,)) if c]


def _first_exact(conn: sqlite3.Connection, select: str, candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
    for flags in candidates:
        if _count(conn, f"{select}\n{_where(flags)}", flags) == 1:
            return flags
    return None


_THREAD_SELECT = "SELECT th.id FROM thread th\nLEFT JOIN process p ON p.id = th.upid"
_PROCESS_SELECT = "SELECT p.id FROM process p"
_TRACK_SELECT = f"SELECT tr.id {data.TRACK_FROM}"


def thread_flags(conn: sqlite3.Connection, owner: dict[str, Any]) -> dict[str, Any] | None:
    """The flags that select exactly this thread (tid, and pid when it has a process; names if those repeat)."""
    if owner["tid"] is None:
        return None
    pid = owner["pid"] if owner["upid"] is not None else None
    candidates = _owner_candidates(owner["tid"], owner["thread_name"], pid, owner["process_name"])
    return _first_exact(conn, _THREAD_SELECT, candidates)


def process_flags(conn: sqlite3.Connection, owner: dict[str, Any]) -> dict[str, Any] | None:
    if owner["pid"] is None:
        return None
    return _first_exact(conn, _PROCESS_SELECT, _owner_candidates(None, None, owner["pid"], owner["process_name"]))


def _link(spec: tuple, flags: dict[str, Any] | None, has_data: bool) -> dict[str, Any]:
    """One report view for the page: its URL flags (those of `flags` it takes; None: not linkable) and whether
    the row has its data."""
    label, noun, view, takes = spec
    return {
        "label": label,
        "noun": noun,
        "view": view,
        "params": {k: str(v) for k, v in flags.items() if k in takes} if flags is not None else None,
        "has_data": has_data,
    }


def _sampled(conn: sqlite3.Connection, schema: data.Schema, term: str, params: dict[str, Any]) -> bool:
    """Whether a task context matching `term` (alias tc) exists in a trace with stack samples: contexts are only
    made for samples, and profiler_sample has no index to look a context's samples up by."""
    if not {"profiler_task_context", "stack_sample"} <= schema.names:
        return False
    return _exists(conn, "SELECT 1 FROM stack_sample", {}) and _exists(
        conn, f"SELECT 1 FROM profiler_task_context tc WHERE {term}", params
    )


def for_thread(conn: sqlite3.Connection, schema: data.Schema, owner: dict[str, Any]) -> dict[str, Any]:
    """The report views of one thread (owner: data.thread_and_process), scoped by thread_flags."""
    flags = thread_flags(conn, owner)
    params = {"utid": owner["utid"]}
    tracks = "SELECT id FROM track WHERE utid = :utid"
    sched = "sched" in schema.names and _exists(conn, "SELECT 1 FROM sched WHERE utid = :utid", params)
    links = [
        _link(_SLICES, flags, _exists(conn, f"SELECT 1 FROM slice WHERE track_id IN ({tracks})", params)),
        _link(_COUNTERS, flags, _exists(conn, f"SELECT 1 FROM counter WHERE track_id IN ({tracks})", params)),
        _link(_SCHEDULING, flags, sched),
        _link(_SAMPLES, flags, _sampled(conn, schema, "tc.utid = :utid", params)),
        _link(_TRACKS, flags, _exists(conn, tracks, params)),
    ]
    return {"links": links, "ambiguous": None if flags else "its tid, pid and names are shared with another thread"}


def for_process(conn: sqlite3.Connection, schema: data.Schema, owner: dict[str, Any]) -> dict[str, Any]:
    """The report views of one process (owner: data.thread_and_process), scoped by process_flags."""
    flags = process_flags(conn, owner)
    params = {"upid": owner["upid"]}
    threads = "SELECT id FROM thread WHERE upid = :upid"
    tracks = f"SELECT id FROM track WHERE upid = :upid UNION ALL SELECT id FROM track WHERE utid IN ({threads})"
    sched = "sched" in schema.names and _exists(conn, f"SELECT 1 FROM sched WHERE utid IN ({threads})", params)
    heap_profile = "heap_profile_allocation" in schema.names and _exists(
        conn, "SELECT 1 FROM heap_profile_allocation WHERE upid = :upid", params
    )
    heap_dump = "heap_graph_object" in schema.names and _exists(
        conn, "SELECT 1 FROM heap_graph_object WHERE upid = :upid", params
    )
    links = [
        _link(_SLICES, flags, _exists(conn, f"SELECT 1 FROM slice WHERE track_id IN ({tracks})", params)),
        _link(_COUNTERS, flags, _exists(conn, f"SELECT 1 FROM counter WHERE track_id IN ({tracks})", params)),
        _link(_SCHEDULING, flags, sched),
        _link(_SAMPLES, flags, _sampled(conn, schema, f"tc.upid = :upid OR tc.utid IN ({threads})", params)),
        _link(_HEAP_PROFILE, flags, heap_profile),
        _link(_HEAP_DUMP, flags, heap_dump),
        _link(_TRACKS, flags, _exists(conn, tracks, params)),
    ]
    return {"links": links, "ambiguous": None if flags else "its pid and name are shared with another process"}


def track_flags(conn: sqlite3.Connection, track: dict[str, Any], owner: dict[str, Any], same_kind: bool) -> dict | None:
    """The flags that select exactly this track: its owner's and its name; with `same_kind`, exactly it among the
    tracks of its kind (slice or counter tracks: what the slices and counters views read)."""
    if owner["utid"] is not None:
        base = _owner_candidates(owner["tid"], owner["thread_name"], owner["pid"], owner["process_name"])
    elif owner["upid"] is not None:
        base = _owner_candidates(None, None, owner["pid"], owner["process_name"])
    elif track.get("cpu") is not None and track["event_type"] == "counter":
        base = [{"cpu": track["cpu"]}]
    else:
        base = [{}]
    candidates = []
    for flags in base:
        if _glob(track["name"]):
            candidates.append({**flags, "track": _glob(track["name"])})
        elif flags:
            candidates.append(flags)
    extra = ["tr.event_type = :event_type"] if same_kind else []
    for flags in candidates:
        params = {**flags, "event_type": track["event_type"]} if same_kind else flags
        if _count(conn, f"{_TRACK_SELECT}\n{_where(flags, extra)}", params) == 1:
            return flags
    return None


def for_track(
    conn: sqlite3.Connection, schema: data.Schema, track: dict[str, Any], owner: dict[str, Any]
) -> dict[str, Any]:
    kind = track["event_type"]
    cpu = conn.execute(f"SELECT {data.CPU_SQL} FROM track tr WHERE tr.id = :id", {"id": track["id"]}).fetchone()[0]
    track = {**track, "cpu": cpu}
    links = []
    for spec, event_type in ((_SLICES, "slice"), (_COUNTERS, "counter")):
        if kind == event_type:
            flags = track_flags(conn, track, owner, same_kind=True)
            links.append(_link(spec, flags, track["event_count"] > 0))
    tracks_flags = track_flags(conn, track, owner, same_kind=False)
    links.append(_link(_TRACKS, tracks_flags, True))
    exact = any(link["params"] is not None for link in links)
    return {
        "links": links,
        "ambiguous": None if exact else "its owner's ids and names and its own name are shared with another track",
    }


def for_slice(
    conn: sqlite3.Connection, slice_row: dict[str, Any], track: dict[str, Any] | None, owner: dict[str, Any]
) -> dict[str, Any]:
    """The slices inspect view of exactly this slice: its name, its start (raw ns) and its track's flags."""
    links = []
    if track is not None and _glob(slice_row["name"]):
        base = track_flags(conn, track, owner, same_kind=True)
        if base is not None:
            flags = {**base, "name": _glob(slice_row["name"]), "ts": slice_row["ts"]}
            tracks = f"{_TRACK_SELECT}\n{_where(base)}"
            matched = _count(
                conn,
                f"SELECT id FROM slice WHERE name GLOB :name AND ts = :ts AND track_id IN ({tracks})",
                {**base, "name": flags["name"], "ts": slice_row["ts"]},
            )
            if matched == 1:
                links.append(_link(_INSPECT, flags, True))
    if not links:
        links.append(_link(_INSPECT, None, True))
    return {
        "links": links,
        "ambiguous": None
        if links[0]["params"] is not None
        else "its track's flags, its name and its start select other slices too",
    }
