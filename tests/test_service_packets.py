"""Packets about the recording itself: concurrent tracing sessions and ftrace buffer stats."""

from __future__ import annotations

from conftest import ingest_built
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.trace_builder import TraceBuilder


def test_concurrent_sessions_become_state_tracks(tmp_path):
    b = TraceBuilder()
    S = pb.ConcurrentSessionEvent
    for ts, state, sid, name in (
        (100, S.STATE_STARTED, 7, "boot"),
        (300, S.STATE_DISABLED, 7, "boot"),
        (200, S.STATE_CLONED_READ_ONLY, 8, "boot"),
        (250, S.STATE_UNSPECIFIED, 9, "future"),
    ):
        b.packet(
            timestamp=ts,
            trusted_packet_sequence_id=1,
            concurrent_session_event=S(state=state, session_id=sid, session_name=name, consumer_uid=1000),
        )
    db = ingest_built(tmp_path, b)
    rows = db.rows(
        "SELECT t.name, s.ts, s.dur, s.value FROM state s JOIN track t ON t.id = s.track_id "
        "WHERE t.type = 'concurrent_tracing_sessions' ORDER BY t.name, s.ts"
    )
    assert rows == [
        ("boot", 100, 200, "STARTED"),
        ("boot", 300, 0, "DISABLED"),
        ("boot (clone)", 200, -1, "CLONED_READ_ONLY"),
    ]
    assert (
        db.one(
            "SELECT display_value FROM args JOIN state s USING (arg_set_id) WHERE s.ts = 100 AND key = 'consumer_uid'"
        )
        == "1000"
    )
    # The state this version does not know is counted, not guessed.
    assert db.one("SELECT value FROM stats WHERE name = 'concurrent_session_event_unknown_state'") == 1


def test_ftrace_stats_begin_end_and_delta(tmp_path):
    b = TraceBuilder()
    for phase, overrun, errors in (
        (pb.FtraceStats.START_OF_TRACE, 2, ["sched/bogus"]),
        (pb.FtraceStats.END_OF_TRACE, 7, []),
    ):
        b.packet(
            trusted_packet_sequence_id=1,
            ftrace_stats=pb.FtraceStats(
                phase=phase,
                cpu_stats=[pb.FtraceCpuStats(cpu=1, overrun=overrun, entries=5)],
                unknown_ftrace_events=errors,
            ),
        )
    db = ingest_built(tmp_path, b)
    got = dict(db.rows("SELECT name, value FROM stats WHERE name LIKE 'ftrace_cpu_overrun%' AND idx = 1"))
    assert got == {"ftrace_cpu_overrun_begin": 2, "ftrace_cpu_overrun_end": 7, "ftrace_cpu_overrun_delta": 5}
    assert db.one("SELECT value FROM stats WHERE name = 'ftrace_setup_errors'") == 1


def test_ftrace_stats_times_beyond_int64_or_nan(tmp_path):
    """now_ts and oldest_event_ts are doubles of seconds: a NaN or a value beyond int64 nanoseconds
    (a wrapped kernel value, a damaged trace) is stored at a limit instead of stopping the import."""
    b = TraceBuilder()
    b.packet(
        trusted_packet_sequence_id=1,
        ftrace_stats=pb.FtraceStats(
            phase=pb.FtraceStats.START_OF_TRACE,
            cpu_stats=[
                pb.FtraceCpuStats(cpu=0, now_ts=float("nan"), oldest_event_ts=1e300),
                pb.FtraceCpuStats(cpu=1, now_ts=-float("inf"), oldest_event_ts=12.5),
            ],
        ),
    )
    db = ingest_built(tmp_path, b)
    got = dict(
        db.rows(
            "SELECT name || idx, value FROM stats WHERE name IN ('ftrace_cpu_now_ts_begin', 'ftrace_cpu_oldest_event_ts_begin')"
        )
    )
    assert got == {
        "ftrace_cpu_now_ts_begin0": -(2**63),
        "ftrace_cpu_oldest_event_ts_begin0": 2**63 - 1,
        "ftrace_cpu_now_ts_begin1": -(2**63),
        "ftrace_cpu_oldest_event_ts_begin1": 12_500_000_000,
    }
