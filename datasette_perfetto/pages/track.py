"""`/{db}/-/track/{id}`: one track: what it is, whose it is, its dimensions, its place in the hierarchy,
and its first and last events."""

from __future__ import annotations

import sqlite3
from typing import Any

from ..web import PageError
from . import data, report_links

EDGE_EVENTS = 5  # events shown at each end of the track
MAX_CHILDREN = 200
MAX_DEPTH = 64  # parent chains are short; the bound only guards against a cycle in bad data


def compute(conn: sqlite3.Connection, schema: data.Schema, track_id: int) -> dict[str, Any]:
    track = data.one(
        conn,
        f"""SELECT tr.*, coalesce(tr.name, th.name, p.name) AS title
{data.TRACK_FROM}
WHERE tr.id = :id""",
        {"id": track_id},
    )
    if track is None:
        raise PageError(f"No track with id {track_id} in this database", status=404)
    track["trace_file"] = data.trace_file_name(conn, schema, track.get("trace_id"))
    track["machine_name"] = data.machine_name(conn, schema, track.get("machine_id"))
    track["subtitle"] = data.subtitle(conn, schema, track_id)
    track["event_count"] = data.track_event_count(conn, schema, track_id)
    ancestors = data.rows(
        conn,
        f"""{data.ancestors_cte("track", MAX_DEPTH)}
SELECT tr.id, coalesce(tr.name, th.name, p.name) AS title, tr.type
FROM chain JOIN track tr ON tr.id = chain.id
LEFT JOIN thread th ON th.id = tr.utid
LEFT JOIN process p ON p.id = coalesce(tr.upid, th.upid)
ORDER BY chain.depth DESC""",
        {"id": track_id},
    )
    children, child_count = data.track_rows(
        conn, schema, data.TrackQuery(where="tr.parent_id = :parent", params={"parent": track_id}, limit=MAX_CHILDREN)
    )
    owner = data.thread_and_process(conn, track["utid"], track["upid"])
    return {
        "kind": "track",
        "track": track,
        "owner": owner,
        "report": report_links.for_track(conn, schema, track, owner),
        "dimensions": data.track_dimensions(conn, schema, track_id),
        "dimension_args": data.args(conn, track["dimension_arg_set_id"]),
        "source_args": data.args(conn, track["source_arg_set_id"]),
        "ancestors": ancestors,
        "children": children,
        "child_count": child_count,
        "trace_start": data.trace_start(conn),
        "first_events": _events(conn, track, "ASC"),
        "last_events": _events(conn, track, "DESC")[::-1] if track["event_count"] > EDGE_EVENTS else [],
    }


def _events(conn: sqlite3.Connection, track: dict[str, Any], direction: str) -> list[dict[str, Any]]:
    """The first or last events on the track, by ts (the (track_id, ts) index of its event table)."""
    columns = {
        "slice": "id, ts, dur, name, category, depth",
        "counter": "id, ts, value",
        "state": "id, ts, dur, value",
    }.get(track["event_type"])
    if columns is None:
        return []
    return data.rows(
        conn,
        f"SELECT {columns} FROM {track['event_type']} WHERE track_id = :id "
        f"ORDER BY ts {direction}, id {direction} LIMIT {EDGE_EVENTS}",
        {"id": track["id"]},
    )
