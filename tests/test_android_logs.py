"""Android logcat (importers/proto/android_logs.py): TracePacket.android_log → android_logs, checked
against what trace_processor's AndroidProbesModule (tokenizer) and AndroidProbesParser produce."""

from __future__ import annotations

import pytest
from conftest import TraceDB, ingest_built
from database_rows import assert_same_database
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.importers.proto.android_logs import args_text
from datasette_perfetto.ingest import ingest
from datasette_perfetto.parallel import ingest as parallel_ingest
from datasette_perfetto.trace_builder import TraceBuilder, encode_varint, trace_record

BOOT = 1_000_000
REAL = 1_700_000_000_000_000_000  # REALTIME at BOOT: log timestamps are REALTIME
Event = pb.AndroidLogPacket.LogEvent


def real(boot_ts: int) -> int:
    return REAL + (boot_ts - BOOT)


def clocked() -> TraceBuilder:
    """A trace whose clock snapshot ties REALTIME to BOOTTIME (the trace clock)."""
    b = TraceBuilder()
    b.packet(
        timestamp=BOOT,
        trusted_packet_sequence_id=1,
        clock_snapshot=dict(
            clocks=[dict(clock_id=pb.BUILTIN_CLOCK_BOOTTIME, timestamp=BOOT), dict(clock_id=1, timestamp=REAL)]
        ),
    )
    return b


def logs(db: TraceDB) -> list[tuple]:
    """(id, ts, tid, pid, prio, tag, msg) of every log entry, in id order."""
    return db.rows("""SELECT l.id, l.ts, t.tid, p.pid, l.prio, l.tag, l.msg FROM android_logs l
                      LEFT JOIN thread t USING (utid) LEFT JOIN process p USING (upid) ORDER BY l.id""")


def stats(db: TraceDB) -> dict[str, int]:
    return dict(
        db.rows(
            "SELECT name, value FROM stats WHERE value != 0 AND (name GLOB 'android_log_*' OR name GLOB 'clock_sync_*')"
        )
    )


def test_text_entries_on_the_trace_clock_in_time_order(tmp_path):
    """Each event's own REALTIME timestamp is converted (the packet's is ignored) and the entries of
    several packets are sorted together; pid/tid make processes and threads."""
    b = clocked()
    b.packet(
        timestamp=BOOT + 900_000,
        trusted_packet_sequence_id=2,
        android_log=dict(
            events=[
                dict(pid=100, tid=101, timestamp=real(BOOT + 5_000), tag="ActivityManager", prio=4, message="Start"),
                dict(pid=100, tid=100, timestamp=real(BOOT + 1_000), tag="zygote", prio=3, message="fork"),
            ]
        ),
    )
    b.packet(
        timestamp=BOOT + 10,
        trusted_packet_sequence_id=2,
        android_log=dict(
            events=[
                dict(pid=200, tid=202, timestamp=real(BOOT + 3_000), tag="Camera", prio=6, message="oops"),
                dict(pid=200, tid=202, timestamp=real(BOOT + 3_000), tag="Camera", prio=7, message="fatal"),
            ]
        ),
    )
    db = ingest_built(tmp_path, b)
    assert logs(db) == [
        (0, BOOT + 1_000, 100, 100, 3, "zygote", "fork"),
        (1, BOOT + 3_000, 202, 200, 6, "Camera", "oops"),
        (2, BOOT + 3_000, 202, 200, 7, "Camera", "fatal"),
        (3, BOOT + 5_000, 101, 100, 4, "ActivityManager", "Start"),
    ]
    # Threads are made in time order, each in its process (a new process comes with its main thread).
    assert db.rows("SELECT tid, upid, is_main_thread FROM thread WHERE tid != 0 ORDER BY utid") == [
        (100, 1, 1),
        (200, 2, 1),
        (202, 2, 0),
        (101, 1, 0),
    ]
    # The log entries alone make the trace's bounds.
    assert db.rows("SELECT start_ts, end_ts FROM trace_bounds") == [(BOOT + 1_000, BOOT + 5_000)]


def test_event_log_args_become_the_message(tmp_path):
    """Binary/event-log entries: args as name=value after the message and a space (the message is ''
    when absent, so the text starts with the space, as trace_processor's copy of the event leaves it)."""
    b = clocked()
    args = [dict(name="uid", int_value=-7), dict(name="pkg", string_value="com.x"), dict(name="f", float_value=0.25)]
    b.packet(
        trusted_packet_sequence_id=2,
        android_log=dict(
            events=[
                dict(pid=1, tid=1, timestamp=real(BOOT + 1), tag="am_proc_start", prio=4, args=args),
                dict(pid=1, tid=1, timestamp=real(BOOT + 2), tag="am", message="started", args=args[:1]),
            ]
        ),
    )
    db = ingest_built(tmp_path, b)
    assert db.rows("SELECT tag, msg FROM android_logs ORDER BY id") == [
        ("am_proc_start", ' uid=-7 pkg="com.x" f=0.250000'),
        ("am", "started uid=-7"),
    ]


def test_missing_fields(tmp_path):
    """No tag: '' (trace_processor's copy always writes one); no message: ''; no prio: INFO; no pid/tid:
    thread 0; a negative pid read as uint32."""
    b = clocked()
    b.packet(
        trusted_packet_sequence_id=2,
        android_log=dict(
            events=[
                dict(timestamp=real(BOOT + 1)),
                dict(pid=-1, tid=5, timestamp=real(BOOT + 2), tag="t", prio=2, message="verbose"),
            ]
        ),
    )
    db = ingest_built(tmp_path, b)
    assert logs(db) == [(0, BOOT + 1, 0, 0, 4, "", ""), (1, BOOT + 2, 5, 4294967295, 2, "t", "verbose")]
    assert db.rows("SELECT count(*) FROM android_logs WHERE tag IS NULL OR msg IS NULL") == [(0,)]


def test_arg_edge_cases():
    """What trace_processor's formatting does with odd args: an arg without a name is kept (its copy
    writes an empty name), one without a value ends at '=', strings stop at a NUL, and the whole text
    stops at 4095 bytes."""
    event = Event(
        args=[
            Event.Arg(int_value=3),
            Event.Arg(name="none"),
            Event.Arg(name="nul", string_value="ab\0cd"),
            Event.Arg(name="big", int_value=-(1 << 63)),
        ]
    )
    assert args_text(event.args) == b' =3 none= nul="ab" big=-9223372036854775808'
    long = Event(args=[Event.Arg(name="k", string_value="x" * 3000), Event.Arg(name="l", string_value="y" * 3000)])
    text = args_text(long.args)
    assert len(text) == 4095
    assert text.startswith(b' k="' + b"x" * 3000 + b'" l="yyy') and text.endswith(b"y")


def test_unknown_priority_is_kept(ingest_data):
    """A priority this proto version does not name is stored as written (its low byte)."""
    b = clocked()
    event = Event(pid=3, tid=3, timestamp=real(BOOT + 1), tag="t", message="m").SerializeToString()
    event += b"\x38" + encode_varint(9)  # prio = 9
    log = b"\x0a" + encode_varint(len(event)) + event
    packet = pb.TracePacket(trusted_packet_sequence_id=2).SerializeToString()
    packet += b"\xba\x02" + encode_varint(len(log)) + log  # TracePacket.android_log = 39
    _, db = ingest_data(b.to_bytes() + trace_record(packet))
    assert db.rows("SELECT prio, tag, msg FROM android_logs") == [(9, "t", "m")]


def test_stats_last_packet_wins(tmp_path):
    b = clocked()
    b.packet(trusted_packet_sequence_id=2, android_log=dict(stats=dict(num_total=10, num_failed=2, num_skipped=1)))
    b.packet(trusted_packet_sequence_id=2, android_log=dict(stats=dict(num_total=25)))
    db = ingest_built(tmp_path, b)
    assert stats(db) == {"android_log_num_total": 25, "android_log_num_failed": 2, "android_log_num_skipped": 1}
    assert db.rows("SELECT count(*) FROM android_logs") == [(0,)]


def test_events_without_a_clock_path_are_dropped(tmp_path):
    """Without a snapshot linking REALTIME to the trace clock, no event can be placed: each is counted
    by the clock tracker and left out; the packet's stats still count."""
    b = TraceBuilder()
    b.packet(
        timestamp=5,
        trusted_packet_sequence_id=2,
        android_log=dict(
            events=[dict(pid=1, tid=1, timestamp=123, message="a"), dict(pid=1, tid=1, timestamp=124, message="b")],
            stats=dict(num_total=2),
        ),
    )
    db = ingest_built(tmp_path, b)
    assert db.rows("SELECT count(*) FROM android_logs") == [(0,)]
    assert stats(db) == {"clock_sync_failure_unknown_source_clock": 2, "android_log_num_total": 2}


def test_damaged_packet_is_counted(ingest_data):
    """An android_log packet that does not decode: a proto parse error, the rest of the trace kept."""
    b = clocked()
    b.packet(trusted_packet_sequence_id=2, android_log=dict(events=[dict(timestamp=real(BOOT + 7), message="ok")]))
    broken = b"\xba\x02\x05\x0a\x09\x28\x01"  # android_log: an event longer than the packet
    _, db = ingest_data(b.to_bytes() + trace_record(broken))
    assert db.rows("SELECT ts, msg FROM android_logs") == [(BOOT + 7, "ok")]
    assert db.rows("SELECT value FROM stats WHERE name = 'proto_packet_parse_errors'") == [(1,)]


def test_invalid_utf8_keeps_every_byte(ingest_data):
    b = clocked()
    event = Event(pid=1, tid=1, timestamp=real(BOOT + 1)).SerializeToString()
    event += b"\x32\x02\xff\x41"  # tag
    event += b"\x42\x03a\xfeb"  # message
    log = b"\x0a" + encode_varint(len(event)) + event
    packet = b"\xba\x02" + encode_varint(len(log)) + log
    _, db = ingest_data(b.to_bytes() + trace_record(packet))
    assert db.rows("SELECT tag, msg FROM android_logs") == [("\\xffA", "a\\xfeb")]


def log_trace(tid: int, message: str) -> bytes:
    b = clocked()
    b.packet(
        trusted_packet_sequence_id=2,
        android_log=dict(
            events=[
                dict(pid=tid, tid=tid, timestamp=real(BOOT + 10), tag="a", message=message),
                dict(pid=tid, tid=tid + 1, timestamp=real(BOOT + 20), tag="b", message=message),
            ],
            stats=dict(num_total=2),
        ),
    )
    return b.to_bytes()


@pytest.mark.parametrize("jobs", [2])
def test_jobs_ingest_is_the_serial_database(tmp_path, jobs):
    """`ingest --jobs`: each input's log ids offset and utids remapped as a serial ingest numbers them."""
    paths = []
    for i, tid in enumerate((10, 20, 30)):
        path = tmp_path / f"logs{i}.pftrace"
        path.write_bytes(log_trace(tid, f"input {i}"))
        paths.append(str(path))
    serial, merged = tmp_path / "serial.db", tmp_path / "parallel.db"
    ingest(paths, str(serial))
    parallel_ingest(paths, str(merged), jobs=jobs)
    assert_same_database(serial, merged)
    rows = TraceDB(merged).rows(
        "SELECT l.id, t.tid, l.msg FROM android_logs l JOIN thread t USING (utid) ORDER BY l.id"
    )
    assert rows == [
        (0, 10, "input 0"),
        (1, 11, "input 0"),
        (2, 20, "input 1"),
        (3, 21, "input 1"),
        (4, 30, "input 2"),
        (5, 31, "input 2"),
    ]
