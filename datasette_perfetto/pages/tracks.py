"""`/{db}/-/tracks`: every track, one page at a time, with its subtitle, owner and event count.

A trace can have thousands of tracks, so the list is paged (`limit`, `offset`) and filtered (`name`: a
case-insensitive substring of the track's title; `type`: an exact track type) in SQL.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..report.scope import MAX_PATTERN_BYTES, shown
from ..web import PageError
from . import data

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000

# Owner order groups a process's tracks with its threads' tracks; global tracks (no process) come first.
SORTS = {
    "owner": "p.pid IS NOT NULL, p.pid, coalesce(tr.upid, th.upid), th.tid IS NOT NULL, th.tid, tr.utid, "
    "title IS NULL, title COLLATE NOCASE, tr.id",
    "events": "event_count DESC, tr.id",
    "name": "title IS NULL, title COLLATE NOCASE, tr.id",
    "id": "tr.id",
}
PARAMS = ("name", "type", "sort", "limit", "offset")


def compute(conn: sqlite3.Connection, schema: data.Schema, args) -> dict[str, Any]:
    unknown = sorted(k for k in args.keys() if k not in PARAMS and not k.startswith("_"))
    if unknown:
        raise PageError(
            f"unknown parameter {unknown[0]!r}; the tracks page takes {', '.join(PARAMS)}",
            param=unknown[0],
            options=PARAMS,
        )
    name = args.get("name") or ""
    track_type = args.get("type") or ""
    sort = args.get("sort") or "owner"
    if sort not in SORTS:
        raise PageError(f"sort: {shown(sort)} is not one of {', '.join(SORTS)}", param="sort", options=list(SORTS))
    limit = _integer(args.get("limit"), "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    offset = _integer(args.get("offset"), "offset", 0, 0, 2**62)

    terms, params = [], {}
    if name:
        pattern = "%" + _like_escape(name) + "%"
        if len(pattern.encode("utf-8")) > MAX_PATTERN_BYTES:  # SQLite's LIKE pattern limit ("pattern too complex")
            raise PageError(
                f"name: {len(name):,} characters is too long to search for (the search pattern can have at most "
                f"{MAX_PATTERN_BYTES:,} bytes)",
                param="name",
            )
        terms.append(r"coalesce(tr.name, th.name, p.name, '') LIKE :name_pattern ESCAPE '\'")
        params["name_pattern"] = pattern
    if track_type:
        terms.append("tr.type = :type")
        params["type"] = track_type
    tracks, total = data.track_rows(
        conn,
        schema,
        data.TrackQuery(where=" AND ".join(terms), params=params, order=SORTS[sort], limit=limit, offset=offset),
    )
    types = [r[0] for r in conn.execute("SELECT DISTINCT type FROM track WHERE type IS NOT NULL ORDER BY type")]
    return {
        "kind": "tracks",
        "filters": {"name": name, "type": track_type, "sort": sort, "limit": limit, "offset": offset},
        "total": total,
        "tracks": tracks,
        # Datasette's pagination: `next` is the token for the next page (here its offset), null on the last.
        "next": str(offset + limit) if offset + limit < total else None,
        "types": types,
        "sorts": list(SORTS),
        "subtitles_available": schema.has_subtitles,
    }


def _integer(text, name: str, default: int, low: int, high: int) -> int:
    if text in (None, ""):
        return default
    if len(text.strip()) > 40:  # before int(): no conversions of thousands of digits
        raise PageError(f"{name}: must be between {low} and {high}, got {shown(text)}", param=name)
    try:
        value = int(text)
    except ValueError:
        raise PageError(f"{name}: {shown(text)} is not an integer", param=name) from None
    if not low <= value <= high:
        raise PageError(f"{name}: must be between {low} and {high}", param=name)
    return value


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
