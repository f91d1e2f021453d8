"""The ingest speed floor: split a proto trace into packets, parse each with the
generated TracePacket class, and bulk-insert one row per track event.

Anything a real importer does costs more than this; benchmarks/ingest.py
reports our ingest time as a multiple of it.

Usage: python benchmarks/floor.py TRACE
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
import time

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.importers.proto.reader import ProtoReader
from datasette_perfetto.stats import Stats


def floor(path: str) -> tuple[float, int]:
    """Returns (seconds, track events inserted)."""
    start = time.perf_counter()
    fd, db_path = tempfile.mkstemp(suffix=".db")
    os.close(fd)
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("CREATE TABLE event (id INTEGER PRIMARY KEY, ts INTEGER, name_iid INTEGER, type INTEGER)")
    conn.execute("BEGIN")
    rows = []
    n = 0
    with open(path, "rb") as f:
        for data in ProtoReader(f, Stats()).packets():
            packet = pb.TracePacket.FromString(data)
            if packet.HasField("track_event"):
                ev = packet.track_event
                rows.append((n, packet.timestamp, ev.name_iid, ev.type))
                n += 1
                if len(rows) >= 20_000:
                    conn.executemany("INSERT INTO event VALUES (?, ?, ?, ?)", rows)
                    rows.clear()
    conn.executemany("INSERT INTO event VALUES (?, ?, ?, ?)", rows)
    conn.execute("COMMIT")
    conn.close()
    os.unlink(db_path)
    return time.perf_counter() - start, n


if __name__ == "__main__":
    seconds, events = floor(sys.argv[1])
    print(f"floor: {seconds:.2f} s for {events:,} track events")
