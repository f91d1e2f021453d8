"""Kernel scheduling: ftrace sched events and generic kernel packets → sched, thread_state, threads."""

from __future__ import annotations

import pytest
from conftest import ingest_built
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.trace_builder import TraceBuilder
from datasette_perfetto.trackers.sched_tracker import kernel_version, task_state_string


def switch(ts, prev_pid, prev_comm, prev_state, next_pid, next_comm, prev_prio=120, next_prio=120):
    return {
        "timestamp": ts,
        "pid": prev_pid,
        "sched_switch": dict(
            prev_pid=prev_pid,
            prev_comm=prev_comm,
            prev_prio=prev_prio,
            prev_state=prev_state,
            next_pid=next_pid,
            next_comm=next_comm,
            next_prio=next_prio,
        ),
    }


def waking(ts, waker_pid, pid, comm):
    return {"timestamp": ts, "pid": waker_pid, "sched_waking": dict(pid=pid, comm=comm, prio=120, target_cpu=0)}


@pytest.fixture
def two_cpu_db(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        switch(100, 0, "swapper/0", 0, 10, "worker"),
        switch(300, 10, "worker", 1, 11, "helper"),  # worker sleeps (S)
        waking(350, 11, 10, "worker"),  # helper wakes worker
        switch(400, 11, "helper", 0, 10, "worker"),  # helper preempted: R
        switch(600, 10, "worker", 2, 0, "swapper/0"),
    )  # worker blocks (D)
    b.ftrace(1, switch(150, 0, "swapper/1", 0, 20, "other"))  # still running at the end
    return ingest_built(tmp_path, b)


def test_sched_slices_per_cpu(two_cpu_db):
    rows = two_cpu_db.rows(
        "SELECT s.ts, s.dur, s.cpu, t.tid, t.name, s.end_state FROM sched_slice s JOIN thread t USING (utid) "
        "ORDER BY s.cpu, s.ts"
    )
    assert rows == [
        (100, 200, 0, 10, "worker", "S"),
        (300, 100, 0, 11, "helper", "R"),
        (400, 200, 0, 10, "worker", "D"),
        (600, -1, 0, 0, "swapper", None),  # still open at the end of the trace
        (150, -1, 1, 20, "other", None),
    ]
    # sched has the legacy ts_end column; sched_slice does not.
    assert two_cpu_db.one("SELECT ts_end FROM sched WHERE ts = 300") == 400
    assert "ts_end" not in [r[1] for r in two_cpu_db.rows("PRAGMA table_info(sched_slice)")]


def test_thread_states_follow_switches_and_wakeups(two_cpu_db):
    rows = two_cpu_db.rows(
        "SELECT s.ts, s.dur, s.state, s.cpu, w.tid FROM thread_state s JOIN thread t USING (utid) "
        "LEFT JOIN thread w ON w.utid = s.waker_utid WHERE t.tid = 10 ORDER BY s.ts"
    )
    assert rows == [
        (100, 200, "Running", 0, None),
        (300, 50, "S", None, None),
        (350, 50, "R", None, 11),  # woken by helper, runnable until switched in
        (400, 200, "Running", 0, None),
        (600, -1, "D", None, None),
    ]
    # The wakeup points at the waker's Running state.
    waker_state = two_cpu_db.one(
        "SELECT w.state FROM thread_state s JOIN thread_state w ON w.id = s.waker_id WHERE s.ts = 350"
    )
    assert waker_state == "Running"
    # Every sched row has a Running thread_state row with the same ts, utid and cpu.
    assert (
        two_cpu_db.one(
            "SELECT count(*) FROM sched s WHERE s.utid != 0 AND NOT EXISTS (SELECT 1 FROM thread_state ts "
            "WHERE ts.utid = s.utid AND ts.ts = s.ts AND ts.state = 'Running' AND ts.cpu = s.cpu)"
        )
        == 0
    )
    # The idle task gets no thread_state rows.
    assert two_cpu_db.one("SELECT count(*) FROM thread_state WHERE utid = 0") == 0
    assert [r[0] for r in two_cpu_db.rows("SELECT cpu FROM cpu ORDER BY cpu")] == [0, 1]


def test_spurious_wakeup_of_running_thread(tmp_path):
    b = TraceBuilder()
    b.ftrace(0, switch(100, 0, "swapper/0", 0, 10, "a"), waking(150, 0, 10, "a"))
    db = ingest_built(tmp_path, b)
    assert db.rows("SELECT ts, thread_state_id FROM spurious_sched_wakeup") == [
        (150, db.one("SELECT id FROM thread_state WHERE state = 'Running'"))
    ]
    assert db.one("SELECT count(*) FROM thread_state WHERE state = 'R'") == 0


def test_mismatched_switch_is_counted_and_slice_left_open(tmp_path):
    b = TraceBuilder()
    b.ftrace(0, switch(100, 0, "swapper/0", 0, 10, "a"), switch(200, 99, "b", 1, 11, "c"))
    db = ingest_built(tmp_path, b)
    assert db.one("SELECT value FROM stats WHERE name = 'mismatched_sched_switch_tids'") == 1
    assert db.rows("SELECT ts, dur FROM sched ORDER BY ts") == [(100, -1), (200, -1)]


def test_fork_clone_rename_and_free(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        switch(50, 0, "swapper/0", 0, 1, "init"),
        {"timestamp": 100, "pid": 1, "task_newtask": dict(pid=200, comm="init", clone_flags=0x11)},
        {"timestamp": 110, "pid": 200, "task_newtask": dict(pid=201, comm="init", clone_flags=0x10000)},
        {"timestamp": 120, "pid": 200, "task_rename": dict(pid=200, oldcomm="init", newcomm="daemon")},
        {"timestamp": 130, "pid": 201, "task_rename": dict(pid=201, oldcomm="init", newcomm="daemon-io")},
        {"timestamp": 500, "pid": 0, "sched_process_free": dict(pid=201, comm="daemon-io")},
        {"timestamp": 600, "pid": 201, "task_rename": dict(pid=201, oldcomm="x", newcomm="reused")},
        {"timestamp": 700, "pid": 200, "task_newtask": dict(pid=300, comm="child", clone_flags=0x11)},
    )
    db = ingest_built(tmp_path, b)
    procs = db.rows(
        "SELECT p.pid, p.name, p.start_ts, pp.pid FROM process p LEFT JOIN process pp "
        "ON pp.upid = p.parent_upid WHERE p.pid IN (200, 300) ORDER BY p.pid"
    )
    # init's own process is unknown (no process tree), so 200's parent is too.
    assert procs == [(200, "daemon", 100, None), (300, "child", 700, 200)]
    threads = db.rows(
        "SELECT t.tid, t.name, t.start_ts, t.end_ts, p.pid FROM thread t LEFT JOIN process p "
        "USING (upid) WHERE t.tid IN (200, 201) ORDER BY t.utid"
    )
    assert threads == [
        (200, "daemon", 100, None, 200),
        (201, "daemon-io", 110, 500, 200),  # a thread of the forked process, ended by sched_process_free
        (201, "reused", None, None, None),  # the tid seen again after the free is a new thread
    ]
    # New tasks start runnable, woken by the task that created them.
    assert db.rows(
        "SELECT t.tid, s.state, w.tid FROM thread_state s JOIN thread t USING (utid) "
        "JOIN thread w ON w.utid = s.waker_utid ORDER BY s.ts"
    ) == [(200, "R", 1), (201, "R", 200), (300, "R", 200)]


def test_blocked_reason_sets_io_wait_and_function(tmp_path):
    b = TraceBuilder()
    b.packet(
        trusted_packet_sequence_id=1,
        interned_data=pb.InternedData(kernel_symbols=[pb.InternedString(iid=5, str=b"do_sys_poll")]),
        sequence_flags=1,
    )
    b.ftrace(
        0,
        switch(100, 0, "swapper/0", 0, 10, "a"),
        switch(200, 10, "a", 2, 0, "swapper/0"),
        {"timestamp": 201, "pid": 0, "sched_blocked_reason": dict(pid=10, caller=5, io_wait=1)},
    )
    db = ingest_built(tmp_path, b)
    assert db.rows("SELECT state, io_wait, blocked_function FROM thread_state WHERE state = 'D'") == [
        ("D", 1, "do_sys_poll")
    ]


def compact_sched(**fields) -> pb.FtraceEventBundle.CompactSched:
    """Three switches (app, bg, app at 100, 200, 300) and a waking of app at 250 (`fields` replace any)."""
    return pb.FtraceEventBundle.CompactSched(
        **{
            "intern_table": ["swapper/0", "app", "bg"],
            "switch_timestamp": [100, 100, 100],  # deltas: 100, 200, 300
            "switch_prev_state": [0, 1, 0],
            "switch_next_pid": [10, 11, 10],
            "switch_next_prio": [120, 110, 120],
            "switch_next_comm_index": [1, 2, 1],
            "waking_timestamp": [250],
            "waking_pid": [10],
            "waking_target_cpu": [0],
            "waking_prio": [120],
            "waking_comm_index": [1],
            "waking_common_flags": [0x10],
            **fields,
        }
    )


def test_compact_sched(tmp_path):
    b = TraceBuilder()
    b.ftrace(0, compact_sched=compact_sched())
    db = ingest_built(tmp_path, b)
    # The first switch of a cpu only says who runs: no slice, counted.
    assert db.one("SELECT value FROM stats WHERE name = 'compact_sched_switch_skipped'") == 1
    assert db.rows("SELECT ts, dur, t.name, end_state, priority FROM sched JOIN thread t USING (utid) ORDER BY ts") == [
        (200, 100, "bg", "R", 110),
        (300, -1, "app", None, 120),
    ]
    # The waking's waker is whoever runs on the cpu; flag 0x10 (softirq) marks irq context.
    assert db.rows(
        "SELECT t.tid, ts, irq_context, w.tid FROM thread_state JOIN thread t USING (utid) "
        "LEFT JOIN thread w ON w.utid = waker_utid WHERE state = 'R' ORDER BY ts"
    ) == [(10, 250, 1, 11), (11, 300, None, None)]


def test_bundle_without_cpu_is_counted_rest_imported(tmp_path):
    b = TraceBuilder()
    b.packet(
        trusted_packet_sequence_id=1,
        ftrace_events=pb.FtraceEventBundle(
            event=[pb.FtraceEvent(timestamp=5, pid=0, sched_switch=pb.SchedSwitchFtraceEvent(next_pid=3))]
        ),
    )
    b.ftrace(0, switch(100, 0, "swapper/0", 0, 10, "a"))
    db = ingest_built(tmp_path, b)
    assert db.one("SELECT value FROM stats WHERE name = 'ftrace_bundle_tokenizer_errors'") == 1
    assert db.rows("SELECT ts FROM sched") == [(100,)]


@pytest.mark.parametrize(
    "raw, version, expected",
    [
        (0, None, "R"),
        (1, None, "S"),
        (2, None, "D"),
        (0x800, None, "R+"),  # preempted, kernels before 4.8
        (0x1000, (4, 9), "R+"),  # preempted, 4.8 .. 4.14
        (0x100, (5, 10), "R+"),  # preempted, 4.14+
        (0x82, (4, 4), "DK"),  # uninterruptible + wakekill on old kernels
        (0x402, (4, 4), "I"),  # D + NOLOAD reads as idle
        (0x80, (5, 10), "I"),  # TASK_REPORT_IDLE
        (0x40, (5, 10), "P"),
        (0x200, (5, 10), None),  # bits beyond TASK_REPORT_MAX: invalid
    ],
)
def test_task_state_strings(raw, version, expected):
    assert task_state_string(raw, version) == expected


@pytest.mark.parametrize(
    "name,release,expected",
    [
        ("Linux", "4.19.113-g1ab2", (4, 19)),
        ("Linux", "5.10.0", (5, 10)),
        ("Linux", "6.1", (6, 1)),
        ("Linux", "5.10-android", None),  # the minor must be digits up to the next dot, as trace_processor reads it
        ("Darwin", "5.10.0", None),  # only Linux
        ("Linux", "", None),
        (None, "5.10.0", None),
    ],
)
def test_kernel_version_as_trace_processor_reads_utsname(name, release, expected):
    assert kernel_version(name, release) == expected


def test_a_compact_waking_names_no_thread(tmp_path):
    """trace_processor names threads from switches and typed wakings, not from a compact waking's comm."""
    b = TraceBuilder()
    b.ftrace(0, compact_sched=compact_sched(waking_pid=[99], waking_comm_index=[2]))
    db = ingest_built(tmp_path, b)
    assert db.rows("SELECT tid, name FROM thread WHERE tid IN (11, 99) ORDER BY tid") == [(11, "bg"), (99, None)]
