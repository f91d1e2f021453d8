"""`/{db}/-/thread/{utid}`: one thread: its process, its tracks and their dimensions, its longest slices."""

from __future__ import annotations

import sqlite3
from typing import Any

from ..web import PageError
from . import data, report_links
from .tracks import SORTS

MAX_TRACKS = 500
TOP_SLICES = 20

THREAD_TRACKS = "SELECT id FROM track WHERE utid = :utid"


def compute(conn: sqlite3.Connection, schema: data.Schema, utid: int) -> dict[str, Any]:
    thread = data.one(conn, "SELECT * FROM thread WHERE id = :utid", {"utid": utid})
    if thread is None:
        raise PageError(f"No thread with utid {utid} in this database", status=404)
    thread["machine_name"] = data.machine_name(conn, schema, thread.get("machine_id"))
    tracks, track_count = data.track_rows(
        conn,
        schema,
        data.TrackQuery(where="tr.utid = :utid", params={"utid": utid}, order=SORTS["owner"], limit=MAX_TRACKS),
    )
    owner = data.thread_and_process(conn, utid, thread["upid"])
    return {
        "kind": "thread",
        "thread": thread,
        "owner": owner,
        "report": report_links.for_thread(conn, schema, owner),
        "args": data.args(conn, thread.get("arg_set_id")),
        "tracks": tracks,
        "track_count": track_count,
        "dimensions": data.grouped_dimensions(conn, schema, THREAD_TRACKS, {"utid": utid}),
        "trace_start": data.trace_start(conn),
        "top_slices": _longest_slices(conn, utid),
    }


def _longest_slices(conn: sqlite3.Connection, utid: int) -> list[dict[str, Any]] | None:
    """Reads every slice of the thread's tracks, so it runs last: on a thread too busy to finish within the
    page's time limit, the page shows everything else (None: timed out)."""
    try:
        return data.rows(
            conn,
            f"""SELECT s.id, s.ts, s.dur, s.name, s.category, s.depth, s.track_id
FROM slice s
WHERE s.track_id IN ({THREAD_TRACKS})
ORDER BY s.dur DESC, s.id
LIMIT {TOP_SLICES}""",
            {"utid": utid},
        )
    except sqlite3.OperationalError as e:
        if "interrupted" not in str(e):
            raise
        return None
