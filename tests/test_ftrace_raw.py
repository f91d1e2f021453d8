"""Every kernel event is a row of ftrace_event (trace_processor's raw table) with its fields as args: typed
events by field, sched_switch and compact sched records from the sched path, legacy generic events, and
kernel-function fields as their symbols."""

from __future__ import annotations

from click.testing import CliRunner
from conftest import TraceDB
from conftest import ingest_built as conftest_ingest_built
from database_rows import assert_same_database
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from shared_data import CASES
from test_sched import compact_sched, switch, waking

from datasette_perfetto import parallel
from datasette_perfetto.cli import perfetto
from datasette_perfetto.importers.common.options import Content
from datasette_perfetto.ingest import ingest
from datasette_perfetto.trace_builder import TraceBuilder


def ingest_built(tmp_path, builder, ftrace_raw: bool = True) -> TraceDB:
    """The trace's database, kept with ftrace_event rows (ingest --ftrace-raw) unless `ftrace_raw` is False."""
    return conftest_ingest_built(
        tmp_path, builder, content=Content(ftrace_raw=ftrace_raw), name="raw.db" if ftrace_raw else "plain.db"
    )


def _events(db) -> list[tuple]:
    return db.rows("SELECT e.ts, e.name, t.tid, e.cpu, e.common_flags FROM ftrace_event e JOIN thread t USING (utid)")


def _args(db, name: str) -> list[list[tuple]]:
    """Per row of `name`, its args (key, value type, value)."""
    rows = db.rows("SELECT arg_set_id FROM ftrace_event WHERE name = ? ORDER BY id", (name,))
    return [
        db.rows(
            "SELECT key, value_type, coalesce(int_value, string_value, real_value) FROM args "
            "WHERE arg_set_id = ? ORDER BY id",
            (arg_set_id,),
        )
        for (arg_set_id,) in rows
    ]


def test_typed_events_and_sched_switch(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        2,
        switch(100, 0, "swapper/2", 0, 10, "worker", next_prio=110),
        waking(150, 10, 11, "helper"),
        {"timestamp": 160, "pid": 10, "print": {"ip": 1 << 63, "buf": "B|10|work\n"}},
        {"timestamp": 170, "pid": 10, "cpu_frequency": {"state": 1800000, "cpu_id": 2}},
        switch(200, 10, "worker", 1, 0, "swapper/2"),
    )
    db = ingest_built(tmp_path, b)
    # A sched_switch row is the switched-out task's.
    assert _events(db) == [
        (100, "sched_switch", 0, 2, None),
        (150, "sched_waking", 10, 2, None),
        (160, "print", 10, 2, None),
        (170, "cpu_frequency", 10, 2, None),
        (200, "sched_switch", 10, 2, None),
    ]
    assert _args(db, "sched_switch")[1] == [
        ("prev_comm", "string", "worker"),
        ("prev_pid", "int", 10),
        ("prev_prio", "int", 120),
        ("prev_state", "int", 1),
        ("next_comm", "string", "swapper/2"),
        ("next_pid", "int", 0),
        ("next_prio", "int", 120),
    ]
    assert _args(db, "sched_waking") == [
        [("comm", "string", "helper"), ("pid", "int", 11), ("prio", "int", 120), ("target_cpu", "int", 0)]
    ]
    # A uint64 beyond int64 is stored as trace_processor stores it (two's complement), typed uint.
    assert _args(db, "print") == [[("ip", "uint", -(1 << 63)), ("buf", "string", "B|10|work\n")]]
    assert _args(db, "cpu_frequency") == [[("state", "uint", 1800000), ("cpu_id", "uint", 2)]]
    assert db.rows("SELECT count(*) FROM raw") == db.rows("SELECT count(*) FROM ftrace_event") == [(5,)]
    # Without --ftrace-raw the table is empty (trace_processor's doc allows it), the rest the same.
    plain = ingest_built(tmp_path, b, ftrace_raw=False)
    assert plain.rows("SELECT count(*) FROM ftrace_event") == [(0,)]
    for table in ("sched", "thread_state", "thread", "slice"):
        assert plain.rows(f"SELECT * FROM {table}") == db.rows(f"SELECT * FROM {table}"), table


def test_kernel_functions_are_their_symbols_when_interned(tmp_path):
    b = TraceBuilder()
    b.sched(
        {
            0: [
                {"timestamp": 201, "pid": 0, "sched_blocked_reason": dict(pid=10, caller=5, io_wait=1)},
                {"timestamp": 202, "pid": 0, "sched_blocked_reason": dict(pid=10, caller=6, io_wait=0)},
                {"timestamp": 203, "pid": 3, "workqueue_execute_end": dict(work=1, function=5)},
            ]
        },
        kernel_symbols={5: "do_sys_poll"},
    )
    db = ingest_built(tmp_path, b)
    assert _args(db, "sched_blocked_reason") == [
        [("pid", "int", 10), ("caller", "string", "do_sys_poll"), ("io_wait", "uint", 1)],
        [("pid", "int", 10), ("caller", "uint", 6), ("io_wait", "uint", 0)],  # not interned: the address
    ]
    assert _args(db, "workqueue_execute_end") == [[("work", "uint", 1), ("function", "string", "do_sys_poll")]]


def test_legacy_generic_events(tmp_path):
    b = TraceBuilder()
    fields = [
        pb.GenericFtraceEvent.Field(name="a", int_value=-3),
        pb.GenericFtraceEvent.Field(name="b", uint_value=(1 << 64) - 1),
        pb.GenericFtraceEvent.Field(name="c", str_value="text"),
        pb.GenericFtraceEvent.Field(name="d"),  # no value: left out
    ]
    b.ftrace(0, {"timestamp": 10, "pid": 7, "generic": pb.GenericFtraceEvent(event_name="my_event", field=fields)})
    db = ingest_built(tmp_path, b)
    assert _events(db) == [(10, "my_event", 7, 0, None)]
    assert _args(db, "my_event") == [[("a", "int", -3), ("b", "int", -1), ("c", "string", "text")]]


def test_compact_sched_records(tmp_path):
    b = TraceBuilder()
    compact = compact_sched(waking_target_cpu=[3], waking_prio=[115])
    b.ftrace(0, compact_sched=compact)
    db = ingest_built(tmp_path, b)
    # The cpu's first switch only says who runs (no row); the others' prev_* are the last switch's next_*.
    assert _events(db) == [
        (200, "sched_switch", 10, 0, None),
        (250, "sched_waking", 11, 0, 0x10),
        (300, "sched_switch", 11, 0, None),
    ]
    assert _args(db, "sched_switch")[0] == [
        ("prev_comm", "string", "app"),
        ("prev_pid", "int", 10),
        ("prev_prio", "int", 120),
        ("prev_state", "int", 1),
        ("next_comm", "string", "bg"),
        ("next_pid", "int", 11),
        ("next_prio", "int", 110),
    ]
    assert _args(db, "sched_waking") == [
        [("comm", "string", "app"), ("pid", "int", 10), ("prio", "int", 115), ("target_cpu", "int", 3)]
    ]


def test_events_before_every_cpus_data_is_complete_are_raw_rows_only(tmp_path):
    """Before ftrace_latest_data_start_ns (soft drop) an event is only its raw row; a sched_switch not even
    that (its row comes with its parsing)."""
    b = TraceBuilder()
    b.ftrace(
        0,
        switch(100, 0, "swapper/0", 0, 10, "worker"),
        {"timestamp": 150, "pid": 10, "print": {"buf": "B|10|early\n"}},
        switch(600, 10, "worker", 1, 0, "swapper/0"),
        previous_bundle_end_timestamp=500,
    )
    db = ingest_built(tmp_path, b)
    assert _events(db) == [(150, "print", 10, 0, None), (600, "sched_switch", 10, 0, None)]
    assert db.rows("SELECT count(*) FROM slice") == [(0,)]  # the print itself was not parsed


def test_the_ingest_command_keeps_them_with_ftrace_raw(tmp_path):
    b = TraceBuilder()
    b.ftrace(0, switch(100, 0, "swapper/0", 0, 10, "worker"), waking(150, 10, 11, "helper"))
    trace = tmp_path / "t.pftrace"
    trace.write_bytes(b.to_bytes())
    counts = []
    for flags in ([], ["--ftrace-raw"]):
        db = tmp_path / f"t{len(flags)}.db"
        result = CliRunner().invoke(perfetto, ["ingest", "-q", str(trace), "-o", str(db), *flags])
        assert result.exit_code == 0, result.output
        counts.append(TraceDB(db).rows("SELECT count(*) FROM ftrace_event")[0][0])
    assert counts == [0, 2]


def test_a_parallel_ingest_keeps_the_same_rows(tmp_path):
    """--jobs merges each part's ftrace_event rows, their threads, cpus and arg sets remapped."""
    traces = sorted(str(p) for p in CASES.glob("parser.parsing.Parsing.test_sched*/trace.pb"))[:3]
    traces += sorted(str(p) for p in CASES.glob("parser.generic_kernel.*/trace.pb"))[:2]
    content = Content(ftrace_raw=True)
    ingest(traces, str(tmp_path / "serial.db"), content=content)
    parallel.ingest(traces, str(tmp_path / "parallel.db"), None, 2, None, content)
    assert TraceDB(tmp_path / "serial.db").rows("SELECT count(*) FROM ftrace_event")[0][0] > 0
    assert_same_database(str(tmp_path / "serial.db"), str(tmp_path / "parallel.db"))
