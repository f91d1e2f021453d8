"""`/{db}/-/process/{upid}`: one process: its parent and children, threads, tracks and their dimensions."""

from __future__ import annotations

import sqlite3
from typing import Any

from ..web import PageError
from . import data, report_links
from .tracks import SORTS

MAX_THREADS = 500
MAX_TRACKS = 500

# The process's own tracks and its threads' tracks (the track.upid and track.utid indexes).
PROCESS_TRACKS = (
    "SELECT id FROM track WHERE upid = :upid "
    "UNION ALL SELECT tr.id FROM track tr JOIN thread th ON th.id = tr.utid WHERE th.upid = :upid"
)


def compute(conn: sqlite3.Connection, schema: data.Schema, upid: int) -> dict[str, Any]:
    process = data.one(conn, "SELECT * FROM process WHERE id = :upid", {"upid": upid})
    if process is None:
        raise PageError(f"No process with upid {upid} in this database", status=404)
    process["machine_name"] = data.machine_name(conn, schema, process.get("machine_id"))
    parent = None
    if process.get("parent_upid") is not None:
        parent = data.one(
            conn, "SELECT id AS upid, pid, name FROM process WHERE id = :parent", {"parent": process["parent_upid"]}
        )
    children = data.rows(
        conn,
        "SELECT id AS upid, pid, name FROM process WHERE parent_upid = :upid ORDER BY pid, id LIMIT 500",
        {"upid": upid},
    )
    thread_count = conn.execute("SELECT count(*) FROM thread WHERE upid = :upid", {"upid": upid}).fetchone()[0]
    threads = data.rows(
        conn,
        f"""SELECT th.id AS utid, th.tid, th.name, th.is_main_thread, th.start_ts, th.end_ts,
       (SELECT count(*) FROM track tr WHERE tr.utid = th.id) AS track_count
FROM thread th
WHERE th.upid = :upid
ORDER BY th.tid, th.id
LIMIT {MAX_THREADS}""",
        {"upid": upid},
    )
    tracks, track_count = data.track_rows(
        conn,
        schema,
        data.TrackQuery(
            where=f"tr.id IN ({PROCESS_TRACKS})", params={"upid": upid}, order=SORTS["owner"], limit=MAX_TRACKS
        ),
    )
    return {
        "kind": "process",
        "process": process,
        "parent": parent,
        "report": report_links.for_process(conn, schema, data.thread_and_process(conn, None, upid)),
        "children": children,
        "args": data.args(conn, process.get("arg_set_id")),
        "threads": threads,
        "thread_count": thread_count,
        "tracks": tracks,
        "track_count": track_count,
        "dimensions": data.grouped_dimensions(conn, schema, PROCESS_TRACKS, {"upid": upid}),
        "trace_start": data.trace_start(conn),
    }
