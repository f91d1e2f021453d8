"""trace_processor's clock and metadata SQL functions: TO_REALTIME, TO_MONOTONIC and ABS_TIME_STR convert
trace time through the clock_snapshot table (trace_processor's ClockConverter); extract_metadata_for_machine,
_for_trace and extract_exact_metadata pick a key's value per machine and trace file."""

from __future__ import annotations

import sqlite3

import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.connection import prepare
from datasette_perfetto.trace_builder import TraceBuilder

BOOTTIME, REALTIME, MONOTONIC = 6, 1, 3


def _connect(ingest_data, snapshots: list[list[tuple[int, int]]]) -> sqlite3.Connection:
    b = TraceBuilder()
    for clocks in snapshots:
        b.packet(
            trusted_packet_sequence_id=1,
            clock_snapshot=pb.ClockSnapshot(
                clocks=[pb.ClockSnapshot.Clock(clock_id=c, timestamp=t) for c, t in clocks]
            ),
        )
    _, db = ingest_data(b.to_bytes())
    conn = sqlite3.connect(db.path)
    prepare(conn)
    return conn


def test_trace_time_converts_between_snapshots_without_going_back(ingest_data):
    # REALTIME runs slower than BOOTTIME between the two snapshots: the earlier offset, capped at the later
    # snapshot's value.
    conn = _connect(ingest_data, [[(BOOTTIME, 1_000), (REALTIME, 50_000)], [(BOOTTIME, 2_000), (REALTIME, 50_500)]])

    def realtime(ts):
        return conn.execute("SELECT to_realtime(?)", (ts,)).fetchone()[0]

    assert realtime(1_000) == 50_000  # at a snapshot
    assert realtime(500) == 50_000  # before the first: its value
    assert realtime(1_200) == 50_200  # the earlier snapshot's offset
    assert realtime(1_800) == 50_500  # ... never past the later one's value
    assert realtime(3_000) == 51_500  # after the last: its offset
    assert realtime(None) is None
    assert realtime((1 << 63) - 1) == (1 << 63) - 1  # beyond int64 after the offset: kept at its limit
    assert conn.execute("SELECT to_monotonic(1000)").fetchone()[0] is None  # no MONOTONIC snapshot: NULL
    assert conn.execute("SELECT abs_time_str(1200)").fetchone()[0] == "1970-01-01T00:00:00.000050200"
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("SELECT to_realtime('1200')").fetchone()


def test_unit_multiplier_and_monotonic(ingest_data):
    b = TraceBuilder()
    b.packet(
        trusted_packet_sequence_id=1,
        clock_snapshot=pb.ClockSnapshot(
            clocks=[
                pb.ClockSnapshot.Clock(clock_id=REALTIME, timestamp=42, unit_multiplier_ns=10),
                pb.ClockSnapshot.Clock(clock_id=MONOTONIC, timestamp=7),
                pb.ClockSnapshot.Clock(clock_id=BOOTTIME, timestamp=0),
            ]
        ),
    )
    _, db = ingest_data(b.to_bytes())
    conn = sqlite3.connect(db.path)
    prepare(conn)
    assert conn.execute("SELECT to_realtime(0), to_monotonic(5)").fetchone() == (420, 12)


def test_metadata_per_machine_and_trace(ingest_data):
    b = TraceBuilder()
    b.packet(trusted_packet_sequence_id=1, system_info=pb.SystemInfo(utsname=pb.Utsname(sysname="Linux")))
    b.packet(
        trusted_packet_sequence_id=2, machine_id=1001, system_info=pb.SystemInfo(utsname=pb.Utsname(sysname="Darwin"))
    )
    _, db = ingest_data(b.to_bytes())
    conn = sqlite3.connect(db.path)
    prepare(conn)
    assert conn.execute(
        "SELECT extract_metadata('system_name'), extract_metadata_for_machine(0, 'system_name'), "
        "extract_metadata_for_machine(1, 'system_name'), extract_metadata_for_machine(2, 'system_name'), "
        "extract_metadata_for_trace(0, 'trace_type'), extract_exact_metadata(0, 0, 'trace_type'), "
        "extract_metadata_for_machine(NULL, 'system_name')"
    ).fetchone() == ("Linux", "Linux", "Darwin", None, "proto", None, None)
