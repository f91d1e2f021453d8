"""atrace markers (ftrace print and the kernel tracing_mark_write variants),
syscalls and funcgraph slices, and systrace text traces."""

from __future__ import annotations

import gzip
import zlib

import pytest
from conftest import TraceDB, ingest_built

from datasette_perfetto.importers.proto.atrace import UNSUPPORTED, TracePoint, parse_marker
from datasette_perfetto.importers.systrace import importer as systrace
from datasette_perfetto.importers.systrace.importer import raw_prev_state, tokenize_line
from datasette_perfetto.ingest import IngestError, detect_format, ingest
from datasette_perfetto.trace_builder import TraceBuilder


def prints(*events):
    """(ts, pid, marker text) → ftrace print events."""
    return [{"timestamp": ts, "pid": pid, "print": {"buf": buf}} for ts, pid, buf in events]


def ingest_text(tmp_path, text: str | bytes, name: str = "trace.txt") -> TraceDB:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    db = tmp_path / "t.db"
    ingest([str(path)], str(db))
    return TraceDB(db)


def compressor_idx(column: str) -> str:
    """SQL for the track_compressor_idx dimension of the track in `column`."""
    return (
        f"(SELECT a.int_value FROM track t2 JOIN args a ON a.arg_set_id = t2.dimension_arg_set_id "
        f"WHERE t2.id = {column} AND a.key = 'track_compressor_idx')"
    )


def args_of(db: TraceDB, arg_set_id) -> dict:
    rows = db.rows(
        "SELECT key, coalesce(int_value, string_value, real_value) FROM args WHERE arg_set_id = ?", (arg_set_id,)
    )
    return dict(rows)


# -- marker text ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, point",
    [
        ("B|12|draw|frame", TracePoint("B", 12, "draw|frame")),
        ("B|12|", TracePoint("B", 12, "[empty slice name]")),
        ("E|12\n\0", TracePoint("E", 12)),
        ("E", TracePoint("E", 0)),
        ("C|12|queued|-5|Blob", TracePoint("C", 12, "queued", -5)),
        ("S|12|load|77", TracePoint("S", 12, "load", 77)),
        ("F|12|load|77", TracePoint("F", 12, "load", 77)),
        ("I|12|tick", TracePoint("I", 12, "tick")),
        ("N|12|track|tick", TracePoint("N", 12, "tick", 0, "track")),
        ("G|12|track|work|5", TracePoint("G", 12, "work", 5, "track")),
        ("H|12|track|work|5", TracePoint("H", 12, None, 5, "track")),
        ("H|12|track|5", TracePoint("H", 12, None, 5, "track")),
    ],
)
def test_marker_text_is_parsed(text, point):
    assert parse_marker(text) == point


@pytest.mark.parametrize(
    "text",
    [
        "",
        "B",
        "B|x|name",
        "C|12|name|1.5",
        "C|12|name",
        "S|12|name|",
        "I|12|",
        "G|12|track|name",
        "hello world",
        "X|1|y",
    ],
)
def test_bad_marker_text_is_a_failure(text):
    assert parse_marker(text) is None


def test_clock_sync_markers_are_ignored_silently():
    assert parse_marker("trace_event_clock_sync: parent_ts=12.5") is UNSUPPORTED


# -- atrace through ftrace print -----------------------------------------------------


def test_print_markers_make_thread_slices_counters_and_instants(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        *prints(
            (100, 11, "B|10|outer"),
            (110, 11, "B|10|inner"),
            (150, 11, "E|10"),
            (200, 11, "E|10"),
            (120, 11, "C|10|queue|3"),
            (130, 12, "C|10|queue|4"),
            (140, 11, "I|10|tick"),
            (160, 11, "this is not a marker"),
        ),
    )
    db = ingest_built(tmp_path, b)
    assert db.rows(
        "SELECT s.ts, s.dur, s.name, s.depth, t.tid, p.pid FROM slice s "
        "JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid) "
        "JOIN process p USING (upid) ORDER BY s.ts"
    ) == [(100, 100, "outer", 0, 11, 10), (110, 40, "inner", 1, 11, 10), (140, 0, "tick", 2, 11, 10)]
    counters = db.rows(
        "SELECT c.ts, c.value, t.name, t.type, p.pid, c.arg_set_id FROM counter c "
        "JOIN process_counter_track t ON c.track_id = t.id JOIN process p USING (upid) ORDER BY c.ts"
    )
    assert [r[:5] for r in counters] == [
        (120, 3.0, "queue", "atrace_counter", 10),
        (130, 4.0, "queue", "atrace_counter", 10),
    ]
    # The writing thread is an arg (every ftrace event gives its task a thread first).
    utid = dict(db.rows("SELECT tid, utid FROM thread"))
    assert args_of(db, counters[0][5]) == {"utid": utid[11]}
    assert args_of(db, counters[1][5]) == {"utid": utid[12]}
    assert db.one("SELECT upid FROM thread WHERE tid = 12") is None  # counters never tie pid to tgid
    assert db.stat("systrace_parse_failure") == 1


def test_async_slices_use_compressed_process_tracks(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        *prints(
            (100, 21, "S|20|load|1"),
            (110, 21, "S|20|load|2"),
            (150, 21, "F|20|load|1"),
            (160, 21, "S|20|load|3"),
            (170, 21, "F|20|load|3"),
            (180, 21, "F|20|load|2"),
        ),
    )
    db = ingest_built(tmp_path, b)
    rows = db.rows(
        "SELECT s.ts, s.dur, s.name, t.name, t.type, " + compressor_idx("t.id") + ", p.pid, s.arg_set_id "
        "FROM slice s JOIN track t ON s.track_id = t.id JOIN process p ON p.upid = t.upid ORDER BY s.ts"
    )
    # Overlapping cookies 1 and 2 get lanes 0 and 1; cookie 3 reuses lane 0 once 1 ended.
    assert [r[:7] for r in rows] == [
        (100, 50, "load", "load", "atrace_async_slice", 0, 20),
        (110, 70, "load", "load", "atrace_async_slice", 1, 20),
        (160, 10, "load", "load", "atrace_async_slice", 0, 20),
    ]
    assert args_of(db, rows[0][7]) == {
        "cookie": 1,
        "legacy_unnestable_begin_count": 1,
        "legacy_unnestable_last_begin_ts": 100,
    }
    # Begin counts are per track for its whole life, as trace_processor counts them.
    assert args_of(db, rows[2][7])["legacy_unnestable_begin_count"] == 2
    groups = db.rows("SELECT DISTINCT track_group_id FROM track WHERE type = 'atrace_async_slice'")
    assert len(groups) == 1 and groups[0][0] is not None


def test_repeated_async_begins_open_one_slice(tmp_path):
    b = TraceBuilder()
    b.ftrace(0, *prints((100, 21, "S|20|wakelock|7"), (120, 21, "S|20|wakelock|7"), (200, 21, "F|20|wakelock|7")))
    db = ingest_built(tmp_path, b)
    (row,) = db.rows("SELECT ts, dur, arg_set_id FROM slice")
    assert row[:2] == (100, 100)
    assert args_of(db, row[2]) == {
        "cookie": 7,
        "legacy_unnestable_begin_count": 2,
        "legacy_unnestable_last_begin_ts": 120,
    }


def test_track_scoped_async_markers(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        *prints(
            (100, 31, "G|30|Jobs|fetch|9"),
            (150, 32, "H|30|Jobs|9"),
            (120, 31, "N|30|Jobs|ping"),
            (130, 31, "N|30|DeviceStateChanged|folded"),
        ),
    )
    db = ingest_built(tmp_path, b)
    rows = db.rows(
        "SELECT s.ts, s.dur, s.name, t.name, t.type, s.arg_set_id FROM slice s "
        "JOIN track t ON s.track_id = t.id ORDER BY s.ts"
    )
    assert [r[:5] for r in rows] == [
        (100, 50, "fetch", "Jobs", "atrace_async_slice_for_track"),
        (120, 0, "ping", "Jobs", "atrace_async_slice_for_track"),
        (130, 0, "folded", "DeviceStateChanged", "android_device_state"),
    ]
    utid = {tid: u for u, tid in db.rows("SELECT utid, tid FROM thread")}
    assert args_of(db, rows[0][5]) == {"utid": utid[31], "end_utid": utid[32]}
    # Instants never share a lane that serves a cookie: 'ping' gets a lane of its own.
    lanes = db.rows(
        "SELECT s.name, " + compressor_idx("t.id") + " FROM slice s "
        "JOIN track t ON s.track_id = t.id WHERE t.type = 'atrace_async_slice_for_track' ORDER BY s.ts"
    )
    assert lanes == [("fetch", 0), ("ping", 1)]


def test_special_counters_and_lmk(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        *prints(
            (100, 41, "C|40|ScreenState|2"),
            (110, 41, "C|40|battery_stats.audio|1"),
            (120, 41, "C|40|kill_one_process|555"),
            (130, 41, "B|40|lmk,666,low_mem,900,extra"),
            (140, 41, "E|40"),
        ),
    )
    db = ingest_built(tmp_path, b)
    assert db.rows("SELECT t.type, t.name, c.value FROM counter c JOIN track t ON c.track_id = t.id ORDER BY c.ts") == [
        ("screen_state", "ScreenState", 2.0),
        ("battery_stats", "battery_stats.audio", 1.0),
        ("atrace_counter", "kill_one_process", 555.0),
        ("oom_score_adj", "oom_score_adj", 900.0),
    ]
    assert db.rows(
        "SELECT s.ts, s.name, t.type, p.pid FROM slice s JOIN track t ON s.track_id = t.id "
        "JOIN process p ON p.upid = t.upid WHERE t.type = 'android_lmk' ORDER BY s.ts"
    ) == [(120, "mem.lmk", "android_lmk", 555), (130, "mem.lmk", "android_lmk", 666)]


def test_kernel_tracing_mark_write_variants(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        {"timestamp": 100, "pid": 51, "tracing_mark_write": {"pid": 50, "trace_name": "mdss", "trace_begin": 1}},
        {"timestamp": 200, "pid": 51, "tracing_mark_write": {"pid": 50, "trace_begin": 0}},
        {
            "timestamp": 110,
            "pid": 51,
            "sde_tracing_mark_write": {"pid": 50, "trace_type": ord("C"), "trace_name": "sde", "value": 7},
        },
        {"timestamp": 120, "pid": 52, "zero": {"flag": 4, "name": "zero_counter", "pid": 50, "value": 9}},
        {"timestamp": 130, "pid": 53, "dpu_tracing_mark_write": {"pid": 50, "type": ord("I"), "name": "dpu"}},
        {"timestamp": 140, "pid": 51, "g2d_tracing_mark_write": {"pid": 50, "type": ord("X"), "name": "bad"}},
        {"timestamp": 150, "pid": 51, "tracing_mark_write": {"pid": 50, "trace_name": "no begin flag"}},
    )
    db = ingest_built(tmp_path, b)
    slices = db.rows(
        "SELECT s.name, s.dur, t.tid, t.upid IS NOT NULL FROM slice s "
        "JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid) ORDER BY s.ts"
    )
    # dpu instants drop the event's tgid (drivers fake it): thread 53 stays without a process.
    assert slices == [("mdss", 100, 51, 1), ("dpu", 0, 53, 0)]
    assert db.rows(
        "SELECT t.name, c.value, p.pid FROM counter c JOIN process_counter_track t ON c.track_id = t.id "
        "JOIN process p USING (upid) ORDER BY c.ts"
    ) == [("sde", 7.0, 50), ("zero_counter", 9.0, 50)]
    assert db.stat("systrace_parse_failure") == 2


def test_print_closes_an_open_sys_write(tmp_path):
    b = TraceBuilder()
    b.packet(system_info={"utsname": {"machine": "x86_64"}})
    b.ftrace(
        0,
        {"timestamp": 100, "pid": 42, "sys_enter": {"id": 1, "args": [3, 4096]}},  # write on x86_64
        {"timestamp": 105, "pid": 42, "print": {"buf": "B|42|work"}},
        {"timestamp": 110, "pid": 42, "sys_exit": {"id": 1, "ret": 10}},  # already closed
        {"timestamp": 120, "pid": 42, "sys_enter": {"id": 0}},
        {"timestamp": 130, "pid": 42, "sys_exit": {"id": 0, "ret": -4}},
        {"timestamp": 140, "pid": 42, "print": {"buf": "E|42"}},
        {"timestamp": 150, "pid": 42, "sys_enter": {"id": 15}},  # rt_sigreturn: instant
        {"timestamp": 160, "pid": 42, "sys_enter": {"id": 600}},
    )  # beyond any table
    db = ingest_built(tmp_path, b)
    rows = db.rows("SELECT ts, dur, name, depth, arg_set_id FROM slice ORDER BY ts")
    assert [r[:4] for r in rows] == [
        (100, 5, "sys_write", 0),
        (105, 35, "work", 0),
        (120, 10, "sys_read", 1),
        (150, 0, "sys_rt_sigreturn", 0),
    ]
    assert args_of(db, rows[0][4]) == {"args[0]": 3, "args[1]": 4096}
    assert args_of(db, rows[2][4]) == {"ret": -4}
    assert db.stat("truncated_sys_write_duration") == 1


def test_syscalls_without_an_architecture_are_numbered(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0, {"timestamp": 10, "pid": 5, "sys_enter": {"id": 64}}, {"timestamp": 20, "pid": 5, "sys_exit": {"id": 64}}
    )
    db = ingest_built(tmp_path, b)
    assert db.rows("SELECT ts, dur, name FROM slice") == [(10, 10, "sys_64")]


def test_funcgraph_slices_per_thread_and_per_cpu_for_idle(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        1,
        {"timestamp": 10, "pid": 7, "funcgraph_entry": {"depth": 0, "func": 0x1000}},
        {"timestamp": 15, "pid": 7, "funcgraph_exit": {"depth": 0, "func": 0x1000}},
        {"timestamp": 20, "pid": 0, "funcgraph_entry": {"depth": 0, "func": 0x2000}},
        {"timestamp": 30, "pid": 0, "funcgraph_exit": {"depth": 0, "func": 0x2000}},
        seq_id=3,
    )
    b.packets[-1].interned_data.kernel_symbols.add(iid=0x1000, str=b"do_work")
    b.packets[-1].sequence_flags = 1
    db = ingest_built(tmp_path, b)
    assert db.rows(
        "SELECT s.ts, s.dur, s.name, t.type, t.name FROM slice s JOIN track t ON s.track_id = t.id ORDER BY s.ts"
    ) == [
        (10, 5, "do_work", "thread_funcgraph", "Funcgraph"),
        (20, 10, "0x2000", "cpu_funcgraph", "swapper1 -funcgraph"),
    ]


def test_workqueue_items_are_thread_slices(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        2,
        {"timestamp": 10, "pid": 8, "workqueue_execute_start": {"work": 1, "function": 0xABC}},
        {"timestamp": 12, "pid": 8, "workqueue_execute_end": {"work": 1}},
        {"timestamp": 20, "pid": 8, "workqueue_execute_start": {"work": 2, "function": 0xDEF}},
        {"timestamp": 25, "pid": 8, "workqueue_execute_end": {"work": 2}},
        seq_id=4,
    )
    b.packets[-1].interned_data.kernel_symbols.add(iid=0xABC, str=b"vmstat_update")
    b.packets[-1].sequence_flags = 1
    db = ingest_built(tmp_path, b)
    rows = db.rows(
        "SELECT s.ts, s.dur, s.category, s.name, t.tid, s.arg_set_id FROM slice s "
        "JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid) ORDER BY s.ts"
    )
    assert [r[:5] for r in rows] == [(10, 2, "workqueue", "vmstat_update", 8), (20, 5, "workqueue", "0xdef", 8)]
    assert args_of(db, rows[0][5]) == {"cpu": 2}


# -- systrace text -------------------------------------------------------------------

SYSTRACE = """\
# tracer: nop
#
#           TASK-PID    TGID   CPU#  ||||    TIMESTAMP  FUNCTION
#              | |        |      |   ||||       |         |
          <idle>-0     (-----) [001] d..2  1000.000100: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=RenderThread next_pid=101 next_prio=110
    RenderThread-101   (  100) [001] ...1  1000.000200: tracing_mark_write: B|100|drawFrame
    RenderThread-101   (  100) [001] ...1  1000.000300: tracing_mark_write: C|100|frames|12
           <...>-101   (  100) [001] ...1  1000.000400: tracing_mark_write: E|100
this line is garbage
    RenderThread-101   (  100) [001] d..2  1000.000500: sched_switch: prev_comm=RenderThread prev_pid=101 prev_prio=110 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0     (-----) [001] d..3  1000.000501: sched_blocked_reason: pid=101 iowait=1 caller=wait_on_page_bit+0x40/0x80
    kworker/1:2-60     [001] ...1  1000.000600: cpu_frequency: state=1900800 cpu_id=1
    kworker/1:2-60     [001] ...1  1000.000700: workqueue_execute_start: work struct 0xffffff8 function vmstat_update
    kworker/1:2-60     [001] ...1  1000.000750: workqueue_execute_end: work struct 0xffffff8
   cut short-70 [00
"""


def test_systrace_text_is_detected():
    assert detect_format(b"# tracer: nop\n") == "systrace"
    assert detect_format(b"cpus=8\nx-1 [000] 1.0: print: B|1|a\n") == "systrace"
    assert detect_format(b"  <idle>-0 [000] 1.0: foo:") == "systrace"
    assert detect_format(b"<!DOCTYPE html><html>") == "systrace"
    assert detect_format(b"adb output\nTRACE:\n# tracer") == "systrace"
    assert detect_format(b"hello") is None


def test_systrace_lines_become_the_same_rows_as_ftrace_events(tmp_path):
    db = ingest_text(tmp_path, SYSTRACE)
    assert db.rows(
        "SELECT s.ts, s.dur, s.name, t.tid, t.name, p.pid FROM slice s "
        "JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid) "
        "LEFT JOIN process p USING (upid) ORDER BY s.ts"
    ) == [
        (1000000200000, 200000, "drawFrame", 101, "RenderThread", 100),
        (1000000700000, 50000, "vmstat_update", 60, "kworker/1:2", None),
    ]
    assert db.rows(
        "SELECT c.ts, c.value FROM counter c JOIN counter_track t ON c.track_id = t.id WHERE t.type = 'cpu_frequency'"
    ) == [(1000000600000, 1900800.0)]
    assert db.rows(
        "SELECT c.ts, t.name, c.value FROM counter c JOIN counter_track t ON c.track_id = t.id "
        "WHERE t.type = 'atrace_counter'"
    ) == [(1000000300000, "frames", 12.0)]
    # sched_switch lines go through the scheduling handlers.
    assert db.rows(
        "SELECT ts, dur, cpu, utid = (SELECT utid FROM thread WHERE tid = 101) FROM sched_slice ORDER BY ts"
    ) == [(1000000100000, 400000, 1, 1), (1000000500000, -1, 1, 0)]
    assert db.rows(
        "SELECT t.tid, s.state, s.io_wait, s.blocked_function FROM thread_state s "
        "JOIN thread t USING (utid) WHERE s.state = 'D'"
    ) == [(101, "D", 1, "wait_on_page_bit+0x40/0x80")]
    # The thread keeps its real name over "<...>"; kworker was named by its line alone.
    assert db.one("SELECT name FROM thread WHERE tid = 60") == "kworker/1:2"
    assert db.one("SELECT name FROM thread WHERE tid = 0") == "swapper"
    # The garbage line and the one cut short are counted; the rest is imported.
    assert db.stat("systrace_parse_failure") == 2
    assert db.one("SELECT str_value FROM metadata WHERE name = 'trace_type'") == "systrace"


def test_systrace_line_tokenizer_variants():
    line = tokenize_line(b"kworker/u16:1-77    (   77) [004] ....316.196720: 0: B|77|x")
    assert (line.task, line.pid, line.tgid, line.cpu, line.event, line.args) == (
        "kworker/u16:1",
        77,
        "77",
        4,
        "0",
        "B|77|x",
    )
    line = tokenize_line(b"chrome-10830 ( 10830) [000] dNsa. 4213.033572: tracing_mark_write: B|10830|hex")
    assert (line.ts, line.tgid) == (4213033572000, "10830")
    line = tokenize_line(b"<idle>-0     [000]  0.002188: task_newtask: pid=1")
    assert (line.task, line.pid, line.tgid, line.ts) == ("<idle>", 0, None, 2188000)
    assert tokenize_line(b"no event here") is None


def test_prev_state_letters_map_to_kernel_bits():
    assert raw_prev_state("R") == 0
    assert raw_prev_state("R+") == 0x800
    assert raw_prev_state("S") == 0x1
    assert raw_prev_state("D|K") == 0x82
    assert raw_prev_state("I") == 0x402
    assert raw_prev_state("Q") == 0xFFFF
    assert raw_prev_state("") == 0xFFFF


def test_atrace_capture_with_preamble_cpus_header_and_tgid(tmp_path):
    text = (
        "capturing trace... done\nTRACE:\n"
        "cpus=4\n"
        "   surfaceflinger-598   (  598) [004] .... 10852.771242: tracing_mark_write: B|598|some event\n"
        "   binder:598_2-610   (  598) [002] .... 10852.771243: tracing_mark_write: I|598|ping\n"
        "   surfaceflinger-598   (  598) [004] .... 10852.771245: tracing_mark_write: E|598\n"
    )
    db = ingest_text(tmp_path, text)
    assert db.rows("SELECT ts, dur, name FROM slice ORDER BY ts") == [
        (10852771242000, 3000, "some event"),
        (10852771243000, 0, "ping"),
    ]
    assert db.rows(
        "SELECT t.tid, t.name, p.pid FROM thread t JOIN process p USING (upid) WHERE t.tid > 0 ORDER BY t.tid"
    ) == [(598, "surfaceflinger", 598), (610, "binder:598_2", 598)]
    assert db.stat("systrace_parse_failure") == 0


def test_compressed_atrace_capture(tmp_path):
    body = (
        "  app-9 (9) [000] .... 5.000001: tracing_mark_write: B|9|zipped\n"
        "  app-9 (9) [000] .... 5.000002: tracing_mark_write: E|9\n"
    )
    db = ingest_text(tmp_path, b"TRACE:\n" + zlib.compress(body.encode()))
    assert db.rows("SELECT ts, dur, name FROM slice") == [(5000001000, 1000, "zipped")]


def test_compressed_capture_cut_short_keeps_its_complete_lines(tmp_path):
    body = "".join(f"  app-9 (9) [000] .... 5.{i:06d}: tracing_mark_write: I|9|tick{i}\n" for i in range(2000))
    packed = zlib.compress(body.encode())
    db = ingest_text(tmp_path, b"TRACE:\n" + packed[: len(packed) // 2])
    assert 0 < db.count("slice") < 2000
    assert db.stat("compressed_file_truncated") == 1


def test_gzipped_systrace(tmp_path):
    db = ingest_text(tmp_path, gzip.compress(SYSTRACE.encode()), "trace.gz")
    assert db.rows("SELECT name FROM slice ORDER BY ts") == [("drawFrame",), ("vmstat_update",)]


HTML = """\
<!DOCTYPE html>
<html><head></head><body>
<script class="trace-data" type="application/text">
PROCESS DUMP
USER           PID  PPID     VSZ    RSS WCHAN            ADDR S NAME                       COMMAND
root             1     0  100000   2000 0                   0 S init                       /init
u0_a1          300     1  200000   3000 0                   0 S com.example.app            com.example.app --flag
</script>
<script class="trace-data" type="application/json">
{"traceEvents": []}
</script>
<script class="trace-data" type="application/text">
# tracer: nop
#           TASK-PID    TGID   CPU#  ||||    TIMESTAMP  FUNCTION
        app-301   (  300) [000] ...1    20.000000: tracing_mark_write: B|300|inflate
        app-301   (  300) [000] ...1    20.000010: tracing_mark_write: E|300
</script>
<script class="trace-data" type="application/text">
        app-301   (  300) [000] ...1    30.000000: tracing_mark_write: B|300|ignored
</script>
</body></html>
"""


def test_html_systrace_reads_the_process_dump_and_first_ftrace_section(tmp_path):
    db = ingest_text(tmp_path, HTML, "trace.html")
    assert db.rows("SELECT ts, dur, name FROM slice") == [(20000000000, 10000, "inflate")]
    assert db.rows(
        "SELECT p.pid, p.name, parent.pid FROM process p LEFT JOIN process parent "
        "ON p.parent_upid = parent.upid WHERE p.pid > 0 ORDER BY p.pid"
    ) == [(1, "init", 0), (300, "com.example.app", 1)]
    assert db.one("SELECT upid FROM thread WHERE tid = 301") == db.one("SELECT upid FROM process WHERE pid = 300")


def test_an_endless_line_is_dropped_not_held(tmp_path, monkeypatch):
    monkeypatch.setattr(systrace, "CHUNK", 64)
    monkeypatch.setattr(systrace, "MAX_LINE", 256)
    text = (
        "  app-9 (9) [000] .... 5.000001: tracing_mark_write: I|9|before\n"
        + "x" * 5000
        + "\n"
        + "  app-9 (9) [000] .... 5.000002: tracing_mark_write: I|9|after\n"
    )
    db = ingest_text(tmp_path, text)
    assert db.rows("SELECT name FROM slice ORDER BY ts") == [("before",), ("after",)]
    assert db.stat("systrace_parse_failure") == 1


def test_systrace_of_only_garbage_imports_empty_with_stats(tmp_path):
    db = ingest_text(tmp_path, " not a trace line\n still not one\n")
    assert db.count("slice") == 0
    assert db.stat("systrace_parse_failure") == 2


def test_empty_systrace_header_only(tmp_path):
    db = ingest_text(tmp_path, "# tracer: nop\n#\n")
    assert db.count("slice") == 0


def test_text_that_is_no_trace_is_rejected(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\n")
    with pytest.raises(IngestError, match="notes.txt"):
        ingest([str(path)], str(tmp_path / "t.db"))
