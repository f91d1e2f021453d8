"""Subtitles of the tracks, threads and processes a report names (RFC 0039): the labels of the dimensions
with more than one value in the database, "machine 1 · rank 3", so that two rows differing only by a
dimension (two ranks' `python [100]`) never read alike.

A track's is track_subtitle's (the import applies the collapse rule). A thread's and a process's derive
from their tracks' in one way: the labels every one of their tracks carries (a thread: its own tracks, else,
having none, its process's; a process: its own and its threads' tracks), in the tracks' order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from .base import ReportRun

SEPARATOR = " · "  # between labels, and between a name and its subtitle in text


def with_subtitle(text: str, subtitle: str) -> str:
    """A name as text shows it: `python [100] · rank 3`."""
    return f"{text}{SEPARATOR}{subtitle}" if subtitle else text


def dominant_names(buckets: Iterable) -> Callable[[Any], str]:
    """How a chart's notes name a bucket's dominant threads (tracks): with their subtitle when the chart's
    differ (two ranks' `python [100]`), else by name alone (a subtitle all share tells nothing)."""
    subtitles = {d.subtitle for b in buckets for d in b.dominant}
    if len(subtitles) > 1:
        return lambda d: with_subtitle(d.name, d.subtitle)
    return lambda d: d.name


def common_labels(subtitles: Iterable[str]) -> str:
    """The labels every subtitle has, in the first one's order ("" when they share none)."""
    listed = [s.split(SEPARATOR) if s else [] for s in subtitles]
    if not listed:
        return ""
    shared = set(listed[0]).intersection(*listed[1:])
    return SEPARATOR.join(label for label in listed[0] if label in shared)


def _has_subtitles(run: ReportRun) -> bool:
    return run.has_tables("track_subtitle") and bool(
        run.value("any subtitle shown", "SELECT EXISTS(SELECT 1 FROM track_subtitle WHERE subtitle != '')")
    )


def track_subtitles(run: ReportRun, track_ids: Iterable[int]) -> dict[int, str]:
    """track id -> its subtitle (empty ones left out)."""
    ids = sorted({i for i in track_ids if i is not None})
    if not ids or not _has_subtitles(run):
        return {}
    rows = run.query(
        "the subtitles of those tracks (RFC 0039 labels)",
        """SELECT track_id, subtitle FROM track_subtitle
WHERE track_id IN (SELECT value FROM json_each(:ids)) AND subtitle != ''""",
        {"ids": json.dumps(ids)},
    )
    return {r["track_id"]: r["subtitle"] for r in rows}


# The tracks of each process: its own and its threads'.
_PROCESS_TRACKS = """SELECT coalesce(tr.upid, th.upid) AS upid, st.subtitle
  FROM track tr
  LEFT JOIN thread th ON th.id = tr.utid
  JOIN track_subtitle st ON st.track_id = tr.id
  WHERE tr.upid IN (SELECT value FROM json_each(:upids))
     OR tr.utid IN (SELECT id FROM thread WHERE upid IN (SELECT value FROM json_each(:upids)))"""


def process_subtitles(run: ReportRun, upids: Iterable[int | None]) -> dict[int, str]:
    """upid -> the labels all its own and its threads' tracks carry (empty ones left out)."""
    ids = sorted({i for i in upids if i is not None})
    if not ids or not _has_subtitles(run):
        return {}
    rows = run.query("the subtitles of those processes' tracks", _PROCESS_TRACKS, {"upids": json.dumps(ids)})
    return _common(rows, "upid")


def thread_subtitles(run: ReportRun, utids: Iterable[int | None]) -> dict[int, str]:
    """utid -> the labels all its tracks carry; a thread with no track of its own takes its process's."""
    ids = sorted({i for i in utids if i is not None})
    if not ids or not _has_subtitles(run):
        return {}
    rows = run.query(
        "the subtitles of those threads' tracks",
        """SELECT tr.utid, st.subtitle
FROM track tr JOIN track_subtitle st ON st.track_id = tr.id
WHERE tr.utid IN (SELECT value FROM json_each(:utids))""",
        {"utids": json.dumps(ids)},
    )
    out = _common(rows, "utid")
    trackless = {
        r["id"]: r["upid"]
        for r in run.query(
            "the processes of those threads with no track of their own",
            """SELECT th.id, th.upid FROM thread th
WHERE th.id IN (SELECT value FROM json_each(:utids)) AND th.upid IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM track tr WHERE tr.utid = th.id)""",
            {"utids": json.dumps(ids)},
        )
    }
    if trackless:
        of_process = process_subtitles(run, trackless.values())
        out.update({utid: of_process[upid] for utid, upid in trackless.items() if upid in of_process})
    return out


def _common(rows: Iterable, key: str) -> dict[int, str]:
    by_key: dict[int, list[str]] = {}
    for r in rows:
        by_key.setdefault(r[key], []).append(r["subtitle"])
    shared = {k: common_labels(subtitles) for k, subtitles in by_key.items()}
    return {k: labels for k, labels in shared.items() if labels}


def owner_dims(run: ReportRun, kind: str, ids: Iterable[int | None]) -> dict[int, list[str]]:
    """id -> the dim flags (NAME=VALUE) of the dimensions subtitles show whose value every track of the
    process (`kind` "process": its own and its threads' tracks) or thread ("thread") shares, for those whose
    pid (tid) repeats across ranks or machines: with it they select the row alone."""
    wanted = sorted({i for i in ids if i is not None})
    if not wanted or not _has_subtitles(run):
        return {}
    owner = "coalesce(tr.upid, th.upid)" if kind == "process" else "tr.utid"
    # Only where the pid (tid) repeats: elsewhere it selects the row alone.
    repeated = (
        "SELECT p.id FROM process p WHERE p.id IN (SELECT value FROM json_each(:ids)) "
        "AND (SELECT count(*) FROM process q WHERE q.pid = p.pid) > 1"
        if kind == "process"
        else "SELECT t.id FROM thread t WHERE t.id IN (SELECT value FROM json_each(:ids)) "
        "AND (SELECT count(*) FROM thread q WHERE q.tid = t.tid) > 1"
    )
    rows = run.query(
        f"the dimension values all tracks of those {kind}es share"
        if kind == "process"
        else "the dimension values all tracks of those threads share",
        f"""WITH shown AS (
  SELECT name FROM track_dimension WHERE name NOT IN ('process', 'thread') GROUP BY name
  HAVING count(DISTINCT coalesce(CAST(int_value AS TEXT), string_value)) > 1
)
SELECT {owner} AS owner, tr.id AS track, g.name, coalesce(CAST(g.int_value AS TEXT), g.string_value) AS value
FROM track tr
LEFT JOIN thread th ON th.id = tr.utid
LEFT JOIN track_dimension g ON g.track_id = tr.id AND g.name IN (SELECT name FROM shown)
WHERE {owner} IN ({repeated})""",
        {"ids": json.dumps(wanted)},
    )
    tracks: dict[int, set[int]] = {}
    carrying: dict[tuple[int, str, str], set[int]] = {}
    for r in rows:
        tracks.setdefault(r["owner"], set()).add(r["track"])
        if r["name"] is not None:
            carrying.setdefault((r["owner"], r["name"], r["value"]), set()).add(r["track"])
    out: dict[int, list[str]] = {}
    for (ident, name, value), with_it in sorted(carrying.items()):
        if with_it == tracks[ident]:
            out.setdefault(ident, []).append(f"{name}={value}")
    return out


def with_dims(run: ReportRun, dims: Iterable[str]) -> dict[str, list[str]]:
    """A link's changes adding `dims` to the report's own dim flags ({} when that adds nothing: the link keeps
    the report's)."""
    own = [f"{name}={value}" for name, value in run.scope.dim or ()]
    named = {o.split("=", 1)[0] for o in own}
    added = [d for d in dims if d.split("=", 1)[0] not in named]
    return {"dim": own + added} if added else {}
