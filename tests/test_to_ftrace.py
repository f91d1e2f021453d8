"""to_ftrace(id): an ftrace_event row as a systrace text line, as trace_processor prints it."""

from __future__ import annotations

import sqlite3
from typing import cast

import pytest
from conftest import FunctionsDB
from conftest import ingest_built as conftest_ingest_built
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from test_sched import switch as sched_switch

from datasette_perfetto.ftrace_text import (
    _SPECIAL,
    _field_names,
    gfp_flags_text,
    kernel_version,
    task_state_text,
    to_ftrace_function,
)
from datasette_perfetto.importers.common.options import Content
from datasette_perfetto.trace_builder import TraceBuilder


def ingest_built(tmp_path, builder: TraceBuilder) -> FunctionsDB:
    """The trace's database with its ftrace_event rows (ingest --ftrace-raw)."""
    return cast(FunctionsDB, conftest_ingest_built(tmp_path, builder, FunctionsDB, Content(ftrace_raw=True)))


def lines(db: FunctionsDB, where: str = "1") -> list[str]:
    return [r[0] for r in db.rows(f"SELECT to_ftrace(id) FROM ftrace_event WHERE {where} ORDER BY id")]


def system_info(b: TraceBuilder, release: str, sysname: str = "Linux") -> None:
    b.packet(system_info=pb.SystemInfo(utsname=pb.Utsname(sysname=sysname, release=release)))


def switch(ts, prev_pid, prev_comm, prev_state, next_pid, next_comm):
    return sched_switch(ts, prev_pid, prev_comm, prev_state, next_pid, next_comm, next_prio=100)


def test_prefix_names_tids_tgid_cpu_and_time(tmp_path):
    b = TraceBuilder()
    b.packet(
        process_tree=pb.ProcessTree(
            processes=[pb.ProcessTree.Process(pid=10, ppid=1, cmdline=["app"])],
            threads=[
                pb.ProcessTree.Thread(tid=11, tgid=10, name="my-worker"),
                pb.ProcessTree.Thread(tid=123456, tgid=10, name="a_very_long_thread_name"),
            ],
        )
    )
    b.ftrace(
        2,
        {"timestamp": 1_234_567_890, "pid": 11, "print": dict(buf="hello\n")},  # '-' in comm becomes '_'
        {"timestamp": 5_000_001_999, "pid": 0, "print": dict(buf="idle")},  # tid 0: <idle>, no tgid
        {"timestamp": 7_000_000_000, "pid": 77, "print": dict(buf="x")},  # nameless thread
        {"timestamp": 8_000_000_000, "pid": 123456, "print": dict(buf="y")},  # no padding when too long
    )
    b.ftrace(12, {"timestamp": 9_999_999_999, "pid": 11, "print": dict(buf="")})
    db = ingest_built(tmp_path, b)
    assert lines(db) == [
        "       my_worker-11    (   10) [002] .... 1.234567: tracing_mark_write: hello",
        "          <idle>-0     (-----) [002] .... 5.000001: tracing_mark_write: idle",
        "       <unknown>-77    (-----) [002] .... 7.000000: tracing_mark_write: x",
        "a_very_long_thread_name-123456 (   10) [002] .... 8.000000: tracing_mark_write: y",
        "       my_worker-11    (   10) [012] .... 9.999999: tracing_mark_write: ",
    ]


def test_sched_switch_states_by_kernel_version(tmp_path):
    events = [
        switch(1000, 0, "swapper/0", 0, 10, "worker"),
        switch(2000, 10, "worker", 0x100, 11, "helper"),
        switch(3000, 11, "helper", 0x82, 10, "worker"),
        switch(4000, 10, "worker", 0x7, 0, "swapper/0"),
        switch(5000, 0, "swapper/0", 0x200, 12, "other"),
    ]
    b = TraceBuilder()
    system_info(b, "4.19.112-android")
    b.ftrace(1, *events)
    db = ingest_built(tmp_path, b)
    assert lines(db, "name = 'sched_switch'") == [
        "          <idle>-0     (-----) [001] .... 0.000001: sched_switch: prev_comm=swapper/0 prev_pid=0 "
        "prev_prio=120 prev_state=R ==> next_comm=worker next_pid=10 next_prio=100",
        "          worker-10    (-----) [001] .... 0.000002: sched_switch: prev_comm=worker prev_pid=10 "
        "prev_prio=120 prev_state=R+ ==> next_comm=helper next_pid=11 next_prio=100",
        "          helper-11    (-----) [001] .... 0.000003: sched_switch: prev_comm=helper prev_pid=11 "
        "prev_prio=120 prev_state=D|I ==> next_comm=worker next_pid=10 next_prio=100",
        # S|D|T, cut to three characters as trace_processor does
        "          worker-10    (-----) [001] .... 0.000004: sched_switch: prev_comm=worker prev_pid=10 "
        "prev_prio=120 prev_state=S|D ==> next_comm=swapper/0 next_pid=0 next_prio=100",
        "          <idle>-0     (-----) [001] .... 0.000005: sched_switch: prev_comm=swapper/0 prev_pid=0 "
        "prev_prio=120 prev_state=? ==> next_comm=other next_pid=12 next_prio=100",
    ]

    # No kernel version: the 4.4 layout.
    b = TraceBuilder()
    b.ftrace(1, *events)
    (tmp_path / "old").mkdir()
    db = ingest_built(tmp_path / "old", b)
    states = [line.split("prev_state=")[1].split(" ")[0] for line in lines(db, "name = 'sched_switch'")]
    assert states == ["R", "W", "D|K", "S|D", "P"]


def test_task_state_and_kernel_version_helpers():
    assert kernel_version("Linux", "5.10.43-android12") == (5, 10)
    assert kernel_version("Linux", "5.10-android") is None  # trace_processor needs digits between the dots
    assert kernel_version("Darwin", "5.10.1") is None
    assert kernel_version(None, None) is None
    assert task_state_text(0x800, None) == "R+"
    assert task_state_text(0x402, None) == "I"
    assert task_state_text(0x1000, (4, 9)) == "R+"
    assert task_state_text(0x80, (5, 4)) == "I"
    assert gfp_flags_text(0, None) == "GFP_NOWAIT"
    assert gfp_flags_text(0x24000C0, None) == "GFP_KERNEL"
    assert gfp_flags_text(0x24000C0 | 0x1, None) == "GFP_KERNEL|0x1"
    assert gfp_flags_text(0x14000C0, (5, 4)) == "GFP_KERNEL"


def test_sched_wakeup_pads_target_cpu(tmp_path):
    b = TraceBuilder()
    b.ftrace(0, {"timestamp": 10, "pid": 5, "sched_wakeup": dict(comm="foo", pid=6, prio=120, success=1, target_cpu=3)})
    db = ingest_built(tmp_path, b)
    assert lines(db) == [
        "       <unknown>-5     (-----) [000] .... 0.000000: sched_wakeup: comm=foo pid=6 prio=120 target_cpu=003"
    ]


def test_print_drops_one_final_newline_and_tracing_mark_write(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        {"timestamp": 10, "pid": 5, "print": dict(ip=1, buf="B|5|work\n\n")},
        {"timestamp": 20, "pid": 5, "tracing_mark_write": dict(pid=5, trace_name="slice", trace_begin=1)},
        {"timestamp": 30, "pid": 5, "tracing_mark_write": dict(pid=5, trace_name="slice", trace_begin=0)},
    )
    db = ingest_built(tmp_path, b)
    assert [line.split(": ", 1)[1] for line in lines(db)] == [
        "tracing_mark_write: B|5|work\n",
        "tracing_mark_write:B|5|slice",  # trace_processor writes no space here
        "tracing_mark_write:E|5|slice",
    ]


def test_generic_typed_event_prints_fields_in_order_unsigned(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        {
            "timestamp": 10,
            "pid": 5,
            "kmalloc": dict(bytes_alloc=32, bytes_req=16, call_site=(1 << 64) - 16, gfp_flags=0x24000C1, ptr=1 << 63),
        },
        {"timestamp": 20, "pid": 5, "cpu_frequency": dict(state=1800000, cpu_id=2)},
        {
            "timestamp": 30,
            "pid": 5,
            "generic": pb.GenericFtraceEvent(
                event_name="my_event",
                field=[
                    pb.GenericFtraceEvent.Field(name="count", int_value=-3),
                    pb.GenericFtraceEvent.Field(name="label", str_value="abc"),
                ],
            ),
        },
    )
    db = ingest_built(tmp_path, b)
    assert [line.split(": ", 1)[1] for line in lines(db)] == [
        "kmalloc: bytes_alloc=32 bytes_req=16 call_site=18446744073709551600 gfp_flags=GFP_KERNEL|0x1 "
        "ptr=9223372036854775808",
        "cpu_frequency: state=1800000 cpu_id=2",
        "my_event: count=-3 label=abc",
    ]


def test_kernel_function_fields_with_and_without_symbol(tmp_path):
    b = TraceBuilder()
    b.sched(
        {
            0: [
                {"timestamp": 201, "pid": 0, "sched_blocked_reason": dict(pid=10, caller=5, io_wait=1)},
                {"timestamp": 202, "pid": 0, "sched_blocked_reason": dict(pid=10, caller=0xABC, io_wait=0)},
                {"timestamp": 203, "pid": 3, "workqueue_execute_start": dict(work=0x1F, function=5)},
                {"timestamp": 204, "pid": 3, "workqueue_execute_start": dict(work=0x1F, function=0xDEF)},
                {"timestamp": 205, "pid": 3, "workqueue_execute_end": dict(work=0x1F, function=5)},
            ]
        },
        kernel_symbols={5: "do_sys_poll"},
    )
    db = ingest_built(tmp_path, b)
    assert [line.split(": ", 1)[1] for line in lines(db)] == [
        "sched_blocked_reason: pid=10 iowait=1 caller=do_sys_poll",
        "sched_blocked_reason: pid=10 iowait=0 caller=abc",
        "workqueue_execute_start: work struct 1f: function do_sys_poll",
        "workqueue_execute_start: work struct 1f: function def",
        "workqueue_execute_end: work struct 1f",
    ]


def test_special_formats(tmp_path):
    b = TraceBuilder()
    ev = [
        {"clock_set_rate": dict(name="clk0", state=100, cpu_id=1)},
        {"clk_set_rate": dict(name="clk1", rate=200)},
        {"clock_enable": dict(name="clk2", state=1, cpu_id=0)},
        {"binder_transaction": dict(debug_id=-1, target_node=2, to_proc=3, to_thread=4, reply=0, code=0xAB, flags=16)},
        {"binder_transaction_received": dict(debug_id=7)},
        {"irq_handler_exit": dict(irq=9, ret=1)},
        {"softirq_entry": dict(vec=3)},
        {"softirq_exit": dict(vec=42)},
        {"cgroup_attach_task": dict(dst_root=1, dst_id=2, pid=3, comm="foo", cname="bar")},
        {"i2c_write": dict(adapter_nr=1, msg_nr=0, addr=0x2A, flags=1, len=2, buf=b"\x01\xff")},
        {"i2c_result": dict(adapter_nr=1, nr_msgs=2, ret=2)},
        {"mm_filemap_add_to_page_cache": dict(pfn=5, i_ino=0x10, index=2, s_dev=(8 << 20) | 3)},
        {"workqueue_queue_work": dict(work=0x10, function=0x20, req_cpu=1, cpu=2)},
    ]
    b.ftrace(0, *({"timestamp": 10 * i, "pid": 5, **e} for i, e in enumerate(ev)))
    db = ingest_built(tmp_path, b)
    assert [line.split(": ", 1)[1] for line in lines(db)] == [
        "clock_set_rate: clk0 state=100 cpu_id=1",
        "clk_set_rate: clk1 200",
        "clock_enable:clk2 state=1 cpu_id=0",  # no space, as trace_processor
        "binder_transaction: transaction=4294967295 dest_node=2 dest_proc=3 dest_thread=4 reply=0 flags=0x10 code=0xab",
        "binder_transaction_received: transaction=7",
        "irq_handler_exit: irq=9 ret=handled",
        "softirq_entry: vec=3 [action=NET_RX]",
        "softirq_exit: vec=42 [action=42]",
        "cgroup_attach_task: dst_root=1 dst_id=2 cgroup=bar pid=3 comm=foo",
        "i2c_write: i2c-1 #0 a=02a f=0001 l=2 [01-ff]",
        "i2c_result: i2c-1 n=2 ret=2",
        "mm_filemap_add_to_page_cache: dev 8:3 ino 10 page=0000000000000000 pfn=5 ofs=8192",
        "workqueue_queue_work: work struct=10 function=2012",  # req_cpu and cpu follow with no separator
    ]


def test_special_cases_name_fields_of_their_protos():
    for name in _SPECIAL:
        assert _field_names(name), name


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_errors(tmp_path):
    b = TraceBuilder()
    b.ftrace(0, {"timestamp": 10, "pid": 5, "print": dict(buf="x")})
    db = ingest_built(tmp_path, b)
    conn = sqlite3.connect(db.path)
    conn.execute(
        "INSERT INTO __intrinsic_ftrace_event (id, ts, name, utid, arg_set_id, common_flags, ucpu) "
        "SELECT 1, 20, 'chrome_event.metadata', utid, NULL, NULL, ucpu FROM __intrinsic_ftrace_event WHERE id = 0"
    )
    conn.commit()
    to_ftrace = to_ftrace_function(conn)
    assert to_ftrace(0).endswith("tracing_mark_write: x")
    for bad in ("0", 0.0, None, b"0"):
        with pytest.raises(ValueError, match=r"^Usage: to_ftrace\(id\)$"):
            to_ftrace(bad)
    with pytest.raises(ValueError, match="^to_ftrace: Cannot serialize row id 1$"):
        to_ftrace(1)
    with pytest.raises(ValueError, match="^to_ftrace: Cannot serialize row id 99$"):
        to_ftrace(99)
    with pytest.raises(ValueError, match="^to_ftrace: Cannot serialize row id 4294967295$"):
        to_ftrace(-1)
    conn.close()
    with pytest.raises(sqlite3.OperationalError):
        db.rows("SELECT to_ftrace('0')")
    with pytest.raises(sqlite3.OperationalError):
        db.rows("SELECT to_ftrace(99)")
