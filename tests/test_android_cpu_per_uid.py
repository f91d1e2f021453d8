"""CPU time per Android UID (importers/proto/android_cpu_per_uid.py): TracePacket.cpu_per_uid_data → the
android_cpu_per_uid and android_cpu_per_uid_totals counter tracks and __intrinsic_android_cpu_per_uid_track,
as trace_processor's AndroidCpuPerUidModule makes them; and the android.cpu.cpu_per_uid stdlib module."""

from __future__ import annotations

import pytest
from conftest import FunctionsDB, ingest_built, query_rows
from database_rows import assert_same_database

from datasette_perfetto.importers.proto.android_cpu_per_uid import grouped_uid, is_grouped
from datasette_perfetto.ingest import ingest
from datasette_perfetto.parallel import ingest as parallel_ingest
from datasette_perfetto.trace_builder import TraceBuilder

CLEARED = 1  # SEQ_INCREMENTAL_STATE_CLEARED


def cpu(b: TraceBuilder, ts: int, uids, times, clusters=None, seq=1, flags=0) -> None:
    data = dict(uid=list(uids), total_time_ms=list(times))
    if clusters is not None:
        data["cluster_count"] = clusters
    b.packet(timestamp=ts, trusted_packet_sequence_id=seq, sequence_flags=flags, cpu_per_uid_data=data)


def counters(db, track_type: str) -> list[tuple]:
    return db.rows(
        f"""SELECT t.name, c.ts, c.value FROM counter c JOIN counter_track t ON t.id = c.track_id
            WHERE t.type = '{track_type}' ORDER BY t.name, c.ts"""
    )


def test_grouped_uids():
    assert [is_grouped(u) for u in (1000, 10123, 50000, 59999, 60000, 90000, 99999, 1090123, 1100000)] == [
        False,
        False,
        True,
        True,
        False,
        True,
        True,
        True,
        False,
    ]
    assert grouped_uid(1090123) == 1090000
    assert grouped_uid(55555) == 50000
    assert grouped_uid(10123) == 10123


def test_values_deltas_totals_and_tracks(tmp_path):
    b = TraceBuilder()
    # First values are since boot; later ones add to them. Two clusters per UID.
    cpu(b, 100, [1000, 10050], [500, 600, 700, 800], clusters=2)
    cpu(b, 200, [1000, 10050], [10, 0, 5, 0])
    cpu(b, 300, [1000], [0, 0])  # nothing changes
    cpu(b, 400, [10050], [1, 2])
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert counters(db, "android_cpu_per_uid") == [
        ("CPU for UID 1000 CL0", 100, 500.0),
        ("CPU for UID 1000 CL0", 200, 510.0),
        ("CPU for UID 1000 CL1", 100, 600.0),  # repeats left out
        ("CPU for UID 10050 CL0", 100, 700.0),
        ("CPU for UID 10050 CL0", 200, 705.0),
        ("CPU for UID 10050 CL0", 300, 705.0),  # the last repeat kept: the value changes after it
        ("CPU for UID 10050 CL0", 400, 706.0),
        ("CPU for UID 10050 CL1", 100, 800.0),
        ("CPU for UID 10050 CL1", 300, 800.0),
        ("CPU for UID 10050 CL1", 400, 802.0),
    ]
    assert counters(db, "android_cpu_per_uid_totals") == [
        ("CPU for Apps CL0", 100, 0.0),
        ("CPU for Apps CL0", 200, 5.0),
        ("CPU for Apps CL0", 300, 5.0),
        ("CPU for Apps CL0", 400, 6.0),
        ("CPU for Apps CL1", 100, 0.0),
        ("CPU for Apps CL1", 300, 0.0),
        ("CPU for Apps CL1", 400, 2.0),
        ("CPU for System CL0", 100, 0.0),
        ("CPU for System CL0", 200, 10.0),
        ("CPU for System CL1", 100, 0.0),
    ]
    tracks = db.rows(
        """SELECT type, name, counter_unit, extract_arg(dimension_arg_set_id, 'uid'),
                  extract_arg(dimension_arg_set_id, 'type'), extract_arg(dimension_arg_set_id, 'cluster')
           FROM track WHERE type GLOB 'android_cpu_per_uid*' ORDER BY id"""
    )
    assert sorted(tracks) == sorted(
        [
            ("android_cpu_per_uid_totals", "CPU for System CL0", "ms", None, "System", 0),
            ("android_cpu_per_uid_totals", "CPU for System CL1", "ms", None, "System", 1),
            ("android_cpu_per_uid_totals", "CPU for Apps CL0", "ms", None, "Apps", 0),
            ("android_cpu_per_uid_totals", "CPU for Apps CL1", "ms", None, "Apps", 1),
            ("android_cpu_per_uid", "CPU for UID 1000 CL0", "ms", 1000, None, 0),
            ("android_cpu_per_uid", "CPU for UID 1000 CL1", "ms", 1000, None, 1),
            ("android_cpu_per_uid", "CPU for UID 10050 CL0", "ms", 10050, None, 0),
            ("android_cpu_per_uid", "CPU for UID 10050 CL1", "ms", 10050, None, 1),
        ]
    )
    table = db.rows(
        """SELECT t.name, u.uid, u.cluster, u.total_cpu_millis FROM __intrinsic_android_cpu_per_uid_track u
           JOIN track t ON t.id = u.track_id ORDER BY u.id"""
    )
    assert table == [
        ("CPU for UID 1000 CL0", 1000, 0, 10),
        ("CPU for UID 1000 CL1", 1000, 1, 0),
        ("CPU for UID 10050 CL0", 10050, 0, 6),
        ("CPU for UID 10050 CL1", 10050, 1, 2),
    ]
    # In track id order.
    ids = db.rows("SELECT track_id FROM __intrinsic_android_cpu_per_uid_track ORDER BY id")
    assert ids == sorted(ids)


def test_incremental_state_reset(tmp_path):
    """Cleared incremental state: the next value is absolute again (and the cluster count forgotten); the
    increase is counted from the last value whatever the sequence, a decrease as none."""
    b = TraceBuilder()
    cpu(b, 100, [1000], [500, 100], clusters=2, flags=CLEARED)
    cpu(b, 200, [1000], [20, 0])
    cpu(b, 300, [1000], [530], flags=CLEARED)  # no cluster count: one time per UID
    cpu(b, 400, [1000], [400, 50], clusters=2, flags=CLEARED)  # lower than before: no increase
    cpu(b, 500, [1000], [10, 5])
    db = ingest_built(tmp_path, b)
    assert counters(db, "android_cpu_per_uid") == [
        ("CPU for UID 1000 CL0", 100, 500.0),
        ("CPU for UID 1000 CL0", 200, 520.0),
        ("CPU for UID 1000 CL0", 300, 530.0),
        ("CPU for UID 1000 CL0", 400, 400.0),
        ("CPU for UID 1000 CL0", 500, 410.0),
        ("CPU for UID 1000 CL1", 100, 100.0),
        ("CPU for UID 1000 CL1", 200, 100.0),  # the last repeat (the cleared sequence has no CL1 at 300)
        ("CPU for UID 1000 CL1", 400, 50.0),
        ("CPU for UID 1000 CL1", 500, 55.0),
    ]
    assert db.rows("SELECT uid, cluster, total_cpu_millis FROM __intrinsic_android_cpu_per_uid_track") == [
        (1000, 0, 20 + 10 + 10),
        (1000, 1, 5),
    ]
    assert counters(db, "android_cpu_per_uid_totals")[-1] == ("CPU for System CL1", 500, 5.0)


def test_sequences_have_their_own_state(tmp_path):
    b = TraceBuilder()
    cpu(b, 100, [1000], [500], clusters=1, seq=1)
    cpu(b, 150, [1000], [520], clusters=1, seq=2)  # absolute on its own sequence: +20
    cpu(b, 200, [1000], [5], seq=1)  # 505 on sequence 1: below 520, no increase
    db = ingest_built(tmp_path, b)
    assert counters(db, "android_cpu_per_uid") == [
        ("CPU for UID 1000 CL0", 100, 500.0),
        ("CPU for UID 1000 CL0", 150, 520.0),
        ("CPU for UID 1000 CL0", 200, 505.0),
    ]
    assert db.rows("SELECT uid, total_cpu_millis FROM __intrinsic_android_cpu_per_uid_track") == [(1000, 20)]


def test_grouped_uids_share_one_track(tmp_path):
    b = TraceBuilder()
    cpu(b, 100, [1090001, 1090002, 55001, 10001], [1000, 2000, 300, 7], clusters=1)
    cpu(b, 200, [1090002, 55001], [40, 3])
    cpu(b, 300, [1090001, 10001], [2, 1])
    db = ingest_built(tmp_path, b)
    assert counters(db, "android_cpu_per_uid") == [
        ("CPU for UID 10001 CL0", 100, 7.0),
        ("CPU for UID 10001 CL0", 200, 7.0),
        ("CPU for UID 10001 CL0", 300, 8.0),
        ("CPU for UID 1090000 CL0", 100, 0.0),
        ("CPU for UID 1090000 CL0", 200, 40.0),
        ("CPU for UID 1090000 CL0", 300, 42.0),
        ("CPU for UID 50000 CL0", 100, 0.0),
        ("CPU for UID 50000 CL0", 200, 3.0),
    ]
    assert db.rows("SELECT uid, cluster, total_cpu_millis FROM __intrinsic_android_cpu_per_uid_track ORDER BY uid") == [
        (10001, 0, 1),
        (50000, 0, 3),
        (1090000, 0, 42),
    ]
    assert counters(db, "android_cpu_per_uid_totals") == [
        ("CPU for Apps CL0", 100, 0.0),
        ("CPU for Apps CL0", 200, 43.0),
        ("CPU for Apps CL0", 300, 46.0),
    ]


def test_malformed_lists(tmp_path):
    b = TraceBuilder()
    cpu(b, 100, [0, 1000], [1, 2, 3, 4, 5], clusters=3)  # too few times: UID 1000 gets two
    cpu(b, 200, [0], [1, 1, 1, 9, 9])  # too many: the extra are left out
    db = ingest_built(tmp_path, b)
    assert db.rows("SELECT uid, cluster FROM __intrinsic_android_cpu_per_uid_track ORDER BY uid, cluster") == [
        (0, 0),
        (0, 1),
        (0, 2),
        (1000, 0),
        (1000, 1),
    ]
    assert counters(db, "android_cpu_per_uid")[:2] == [("CPU for UID 0 CL0", 100, 1.0), ("CPU for UID 0 CL0", 200, 2.0)]


def test_stdlib_module(tmp_path):
    b = TraceBuilder()
    b.packet(packages_list=dict(packages=[dict(name="com.example", uid=10050)]))
    cpu(b, 1_000_000, [1000, 1010050], [500, 700], clusters=1)
    cpu(b, 2_000_000, [1000, 1010050], [1, 2])
    cpu(b, 3_000_000, [1000, 1010050], [1, 0])
    db = ingest_built(tmp_path, b)
    assert query_rows(
        db,
        "INCLUDE PERFETTO MODULE android.cpu.cpu_per_uid;\n"
        "SELECT uid, cluster, total_cpu_millis, package_name FROM android_cpu_per_uid_track ORDER BY uid",
    ) == [[1000, 0, 2, None], [1010050, 0, 2, "com.example"]]
    assert query_rows(
        db,
        "INCLUDE PERFETTO MODULE android.cpu.cpu_per_uid;\n"
        "SELECT t.uid, c.ts, c.dur, c.diff_ms, c.cpu_ratio FROM android_cpu_per_uid_counter c "
        "JOIN android_cpu_per_uid_track t ON t.id = c.track_id ORDER BY t.uid, c.ts",
    ) == [
        [1000, 1_000_000, 1_000_000, 1.0, 1.0],
        [1000, 2_000_000, 1_000_000, 1.0, 1.0],
        [1010050, 1_000_000, 1_000_000, 2.0, 2.0],  # unchanged at 3 ms: not written, no interval after 2 ms
    ]


def cpu_trace(offset: int) -> bytes:
    b = TraceBuilder()
    cpu(b, 100, [1000 + offset, 1090001], [500, 50, 600, 60], clusters=2)
    cpu(b, 200, [1000 + offset, 1090005], [5, 0, 6, 7])
    return b.to_bytes()


@pytest.mark.parametrize("jobs", [2])
def test_jobs_ingest_is_the_serial_database(tmp_path, jobs):
    """`ingest --jobs`: each input's tracks and table rows offset as a serial ingest numbers them."""
    paths = []
    for i in range(3):
        path = tmp_path / f"cpu{i}.pftrace"
        path.write_bytes(cpu_trace(i))
        paths.append(str(path))
    serial, merged = tmp_path / "serial.db", tmp_path / "parallel.db"
    ingest(paths, str(serial))
    parallel_ingest(paths, str(merged), jobs=jobs)
    assert_same_database(serial, merged)
    db = FunctionsDB(merged)
    rows = db.rows(
        """SELECT u.uid, u.cluster, u.total_cpu_millis, t.trace_id FROM __intrinsic_android_cpu_per_uid_track u
           JOIN track t ON t.id = u.track_id ORDER BY u.id"""
    )
    assert len(rows) == 12
    assert {r[3] for r in rows} == {0, 1, 2}
    assert (1002, 0, 5, 2) in rows
    assert (1090000, 0, 0, 2) in rows  # 1090005's first time is since boot: no increase
