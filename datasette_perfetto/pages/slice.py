"""`/{db}/-/slice/{id}`: one slice: timing, name, args, its parent chain and children, flows, its track
with that track's dimensions, and the thread and process it ran on."""

from __future__ import annotations

import sqlite3
from typing import Any

from ..web import PageError
from . import data, report_links

MAX_CHILDREN = 200
MAX_FLOWS = 100
MAX_DEPTH = 1000  # deeper than any real stack; guards against a parent cycle in bad data

_RELATIVE = "s.id, s.ts, s.dur, s.name, s.category, s.depth"


def compute(conn: sqlite3.Connection, schema: data.Schema, slice_id: int) -> dict[str, Any]:
    found = data.one(
        conn,
        "SELECT id, ts, dur, track_id, category, name, depth, parent_id, arg_set_id, thread_ts, "
        "thread_dur, thread_instruction_count, thread_instruction_delta "
        "FROM slice WHERE id = :id",
        {"id": slice_id},
    )
    if found is None:
        raise PageError(f"No slice with id {slice_id} in this database", status=404)
    track = data.one(
        conn,
        f"""SELECT tr.id, tr.name, coalesce(tr.name, th.name, p.name) AS title, tr.type, tr.event_type,
       tr.utid, tr.upid
{data.TRACK_FROM}
WHERE tr.id = :track_id""",
        {"track_id": found["track_id"]},
    )
    if track is not None:
        track["subtitle"] = data.subtitle(conn, schema, track["id"])
    owner = data.thread_and_process(conn, track["utid"] if track else None, track["upid"] if track else None)
    ancestors = data.rows(
        conn,
        f"""{data.ancestors_cte("slice", MAX_DEPTH)}
SELECT {_RELATIVE} FROM chain JOIN slice s ON s.id = chain.id ORDER BY chain.depth DESC""",
        {"id": slice_id},
    )
    child_count = conn.execute("SELECT count(*) FROM slice WHERE parent_id = :id", {"id": slice_id}).fetchone()[0]
    children = data.rows(
        conn,
        f"SELECT {_RELATIVE} FROM slice s WHERE s.parent_id = :id ORDER BY s.ts, s.id LIMIT {MAX_CHILDREN}",
        {"id": slice_id},
    )
    return {
        "kind": "slice",
        "slice": found,
        "end_ts": found["ts"] + found["dur"] if found["dur"] is not None and found["dur"] >= 0 else None,
        "trace_start": data.trace_start(conn),
        "track": track,
        "owner": owner,
        "report": report_links.for_slice(conn, found, track, owner),
        "args": data.args(conn, found["arg_set_id"]),
        "ancestors": ancestors,
        "children": children,
        "child_count": child_count,
        "flows_out": _flows(conn, schema, "slice_out", "slice_in", slice_id),
        "flows_in": _flows(conn, schema, "slice_in", "slice_out", slice_id),
        "dimensions": data.track_dimensions(conn, schema, found["track_id"])
        if track
        else (None if not schema.has_dimensions else []),
    }


def _flows(
    conn: sqlite3.Connection, schema: data.Schema, this_end: str, other_end: str, slice_id: int
) -> list[dict[str, Any]]:
    """Flow arrows leaving (or entering) the slice, with the slice at the other end."""
    if "flow" not in schema.names:
        return []
    return data.rows(
        conn,
        f"""SELECT f.id AS flow_id, {_RELATIVE}
FROM flow f JOIN slice s ON s.id = f.{other_end}
WHERE f.{this_end} = :id
ORDER BY s.ts, s.id
LIMIT {MAX_FLOWS}""",
        {"id": slice_id},
    )
