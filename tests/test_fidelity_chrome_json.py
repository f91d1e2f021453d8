"""Chrome JSON input as trace_processor's tokenizer accepts it, and Chrome's own proto data:
sandboxed tids, process/thread descriptors, metadata packets, log messages."""

# JSON templates read best with %-formatting (their braces are JSON's).
# ruff: noqa: UP031

from __future__ import annotations

import base64
import json

import pytest
from conftest import FunctionsDB, TraceDB
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.importers.json.lenient import JsonError, number_value, parse_event
from datasette_perfetto.ingest import ingest, ingest_bytes

TE = pb.TrackEvent


def X(name: str, ts: int, dur: int = 1, pid: int = 1, tid: int = 1, **extra) -> dict:
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid, **extra}


@pytest.fixture
def ingest_text(tmp_path):
    """ingest_text(json text) -> FunctionsDB."""

    def run(text: str) -> FunctionsDB:
        path = tmp_path / "t.json"
        path.write_text(text, encoding="utf-8")
        db = tmp_path / "t.db"
        ingest([str(path)], str(db))
        return FunctionsDB(db)

    return run


def args_of(db: TraceDB, slice_name: str) -> list[tuple]:
    return db.rows(
        "SELECT a.key, a.value_type, a.int_value, a.real_value, a.string_value FROM slice s "
        "JOIN args a USING (arg_set_id) WHERE s.name = ? ORDER BY a.id",
        (slice_name,),
    )


# -- numbers --------------------------------------------------------------------------------


def test_numbers_read_as_trace_processor_reads_them():
    assert number_value("12") == 12 and type(number_value("12")) is int
    assert number_value("-9223372036854775808") == -(1 << 63)
    assert number_value("1e3") == 1000.0 and type(number_value("1e3")) is float
    assert number_value("2.5") == 2.5
    # Beyond int64: a double of the low 64 bits its digits leave in a wrapping int64.
    assert number_value("9223372036854775808") == float(-(1 << 63))
    assert number_value("1" + "0" * 400) == 0.0  # 10^400 is a multiple of 2^64
    assert number_value("9" * 5000) == -1.0  # 10^5000 - 1: all 64 low bits set
    assert number_value("-" + "9" * 5000) == 1.0
    for bad in ("01", "-", "1.", "1e", ".5", "+1", "1e400", "NaN", "Infinity", "0x10"):
        with pytest.raises(JsonError):
            number_value(bad)


def test_huge_integer_in_metadata_does_not_fail(ingest_text):
    db = ingest_text(
        '{"traceEvents": [%s], "metadata": {"huge": 1%s, "neg": -12345678901234567890123, "ok": 7}}'
        % (json.dumps(X("a", 1)), "0" * 400)
    )
    assert db.rows(
        "SELECT name, int_value, str_value FROM metadata WHERE name GLOB 'json_metadata.*' ORDER BY name"
    ) == [
        ("json_metadata.huge", 0, None),
        ("json_metadata.neg", -4807115922877858816, None),
        ("json_metadata.ok", 7, None),
    ]


def test_five_thousand_digit_numbers(ingest_text):
    nines = "9" * 5000
    db = ingest_text(
        "[%s, %s, %s]"
        % (
            '{"ph": "X", "name": "big", "ts": 1, "dur": 1, "pid": 1, "tid": 1, "args": {"v": %s, "w": 2}}' % nines,
            '{"ph": "X", "name": "big ts", "ts": "%s", "dur": 1, "pid": 1, "tid": 1}' % nines,
            json.dumps(X("after", 5)),
        )
    )
    assert args_of(db, "big") == [("args.v", "real", None, -1.0, None), ("args.w", "int", 2, None, None)]
    # The string timestamp reads as -1 µs: before the trace's time, dropped and counted.
    assert db.rows("SELECT name FROM slice ORDER BY ts") == [("big",), ("after",)]
    assert db.stat("trace_sorter_negative_timestamp_dropped") == 1


def test_deeply_nested_args_and_metadata(ingest_text):
    deep_object = '{"a":' * 950 + "1" + "}" * 950
    deep_array = "[" * 1200 + '"x"' + "]" * 1200
    db = ingest_text(
        '{"traceEvents": [%s, %s], "metadata": {"deep": %s}}'
        % (
            '{"ph": "X", "name": "obj", "ts": 1, "dur": 1, "pid": 1, "tid": 1, "args": %s}' % deep_object,
            '{"ph": "X", "name": "arr", "ts": 2, "dur": 1, "pid": 1, "tid": 1, "args": {"l": %s}}' % deep_array,
            "[" * 5000 + "]" * 5000,
        )
    )
    ((key, value_type, value, *_),) = args_of(db, "obj")
    assert key == "args" + ".a" * 950 and (value_type, value) == ("int", 1)
    ((key, value_type, _, _, text),) = args_of(db, "arr")
    assert key == "args.l" + "[0]" * 1200 and (value_type, text) == ("string", "x")
    assert db.one("SELECT str_value FROM metadata WHERE name = 'json_metadata.deep'") == "[" * 5000 + "]" * 5000


def test_lone_surrogates_deep_in_args_are_escaped(ingest_text):
    """Found by the fuzzer: cleaning lone UTF-16 surrogates out of a deeply nested value recursed."""
    deep = '{"a":' * 1500 + '"\\ud800x"' + "}" * 1500
    db = ingest_text('[{"ph": "X", "name": "s", "ts": 1, "dur": 1, "pid": 1, "tid": 1, "args": %s}]' % deep)
    ((key, value_type, _, _, text),) = args_of(db, "s")
    assert key == "args" + ".a" * 1500 and (value_type, text) == ("string", "\\ud800x")


def test_trailing_commas_and_partial_args(ingest_text):
    db = ingest_text(
        '[{"ph": "X", "name": "commas", "ts": 1, "dur": 1, "pid": 1, "tid": 1, "args": {"a": [1, 2,], "b": {"c": 3,},},},'
        ' {"ph": "X", "name": "nan", "ts": 2, "dur": 1, "pid": 1, "tid": 1, "args": {"first": 1, "bad": NaN, "later": 2}},'
        ' {"ph": "X", "name": "bad top", "ts": 3, "dur": NaN, "pid": 1, "tid": 1},'
        ' {"ph": "X", "name": "last", "ts": 4, "dur": 1, "pid": 1, "tid": 1}]'
    )
    assert args_of(db, "commas") == [
        ("args.a[0]", "int", 1, None, None),
        ("args.a[1]", "int", 2, None, None),
        ("args.b.c", "int", 3, None, None),
    ]
    # Args are read up to their first error, keeping what came before (trace_processor inserts one by one).
    assert args_of(db, "nan") == [("args.first", "int", 1, None, None)]
    # An event whose own field is malformed is counted and skipped; the rest is imported.
    assert db.rows("SELECT name FROM slice ORDER BY ts") == [("commas",), ("nan",), ("last",)]
    assert db.stat("json_tokenizer_failure") == 1


def test_exponent_and_float_args(ingest_text):
    db = ingest_text(
        '[{"ph": "X", "name": "n", "ts": 1e0, "dur": 2.5, "pid": 1, "tid": 1, "args": {"e": 1e3, "f": 0.5}}]'
    )
    assert db.rows("SELECT ts, dur FROM slice") == [(1000, 2500)]
    assert args_of(db, "n") == [("args.e", "real", None, 1000.0, None), ("args.f", "real", None, 0.5, None)]


def test_lenient_event_parser_keeps_trace_processor_strings():
    event = parse_event('{"name": "a\\tb\\u00e9\\ud83d\\ude00\\q", "args": {"s": "x",}, }')
    assert event == {"name": "a\tbé😀", "args": {"s": "x"}}
    assert parse_event('{"name": "a" "b"}') is None  # no comma between fields


# -- systemTraceEvents, outer-object key order -----------------------------------------------


SYSTRACE_LINES = (
    "# tracer: nop\\n"
    "          <idle>-0     [000] d..3  1000.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120"
    " prev_state=R ==> next_comm=app next_pid=10 next_prio=120\\n"
    "             app-10    (   10) [000] ...1  1000.000100: tracing_mark_write: B|10|from systrace\\n"
    "             app-10    (   10) [000] ...1  1000.000200: tracing_mark_write: E|10\\n"
    "             app-10    (   10) [000] ...1  1000.000300: tracing_mark_write: B|10|no newline, not a line"
)


def test_system_trace_events_go_through_the_systrace_parser(ingest_text):
    db = ingest_text(
        '{"systemTraceEvents": "%s", "traceEvents": [%s], "displayTimeUnit": "ns", "otherKey": {"x": [1]}}'
        % (SYSTRACE_LINES, json.dumps(X("json", 1_000_000_050, 10, pid=10, tid=10)))
    )
    assert db.rows("SELECT ts, dur, name FROM slice ORDER BY ts") == [
        (1_000_000_050_000, 10_000, "json"),
        (1_000_000_100_000, 100_000, "from systrace"),
    ]
    assert db.rows("SELECT ts, dur, utid IS NOT NULL FROM sched") == [(1_000_000_000_000, -1, 1)]
    assert db.one("SELECT name FROM thread WHERE tid = 10") == "app"
    assert db.stat("json_display_time_unit") == 1


def test_only_system_trace_events(ingest_text):
    db = ingest_text('{"systemTraceEvents": "%s"}' % SYSTRACE_LINES)
    assert db.rows("SELECT name FROM slice") == [("from systrace",)]


# -- Chrome proto data ---------------------------------------------------------------------


def ingest_packets(tmp_path, packets: list) -> FunctionsDB:
    db = tmp_path / "t.db"
    ingest_bytes(pb.Trace(packet=packets).SerializeToString(), str(db))
    return FunctionsDB(db)


def process_packet(uuid: int, pid: int, **chrome) -> pb.TracePacket:
    td = pb.TrackDescriptor(uuid=uuid, process=pb.ProcessDescriptor(pid=pid))
    if chrome:
        td.chrome_process.CopyFrom(pb.ChromeProcessDescriptor(**chrome))
    return pb.TracePacket(timestamp=1, trusted_packet_sequence_id=1, track_descriptor=td)


def test_sandboxed_tid_becomes_a_synthetic_tid(tmp_path):
    thread = pb.TrackDescriptor(
        uuid=11,
        parent_uuid=10,
        thread=pb.ThreadDescriptor(pid=1234, tid=1, thread_name="sandboxed"),
        chrome_thread=pb.ChromeThreadDescriptor(is_sandboxed_tid=True),
    )
    plain = pb.TrackDescriptor(uuid=12, thread=pb.ThreadDescriptor(pid=1234, tid=2, thread_name="plain"))
    db = ingest_packets(
        tmp_path,
        [
            pb.TracePacket(
                timestamp=1, trusted_packet_sequence_id=1, incremental_state_cleared=True, track_descriptor=thread
            ),
            pb.TracePacket(timestamp=1, trusted_packet_sequence_id=1, track_descriptor=plain),
            process_packet(10, 1234),
            pb.TracePacket(
                timestamp=5,
                trusted_packet_sequence_id=1,
                sequence_flags=2,
                track_event=TE(type=TE.TYPE_SLICE_BEGIN, track_uuid=11, name="work"),
            ),
        ],
    )
    # pid in the high 32 bits, the tid Chrome saw in the low ones: never confused with another process's tid 1.
    assert db.rows(
        "SELECT t.tid, t.name, p.pid FROM thread t JOIN process p USING (upid) WHERE p.pid = 1234 ORDER BY t.tid"
    ) == [(2, "plain", 1234), (1234, None, 1234), ((1234 << 32) | 1, "sandboxed", 1234)]  # and its main thread
    assert db.one(
        "SELECT t.tid FROM slice s JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid)"
    ) == ((1234 << 32) | 1)


def test_chrome_process_and_thread_descriptors(tmp_path):
    db = ingest_packets(
        tmp_path,
        [
            process_packet(10, 100, process_type=9, host_app_package_name="com.example", crash_trace_id=1 << 40),
            process_packet(20, 200, process_type=42),
            process_packet(30, 300, host_app_package_name="com.other"),
            pb.TracePacket(
                timestamp=1,
                trusted_packet_sequence_id=1,
                track_descriptor=pb.TrackDescriptor(
                    uuid=21,
                    parent_uuid=20,
                    thread=pb.ThreadDescriptor(pid=200, tid=201),
                    chrome_thread=pb.ChromeThreadDescriptor(thread_type=19),
                ),
            ),
            # The legacy field of ThreadDescriptor names a thread that has no name of its own.
            pb.TracePacket(
                timestamp=1,
                trusted_packet_sequence_id=1,
                track_descriptor=pb.TrackDescriptor(
                    uuid=22, parent_uuid=20, thread=pb.ThreadDescriptor(pid=200, tid=202, chrome_thread_type=3)
                ),
            ),
        ],
    )
    assert db.rows("SELECT pid, name FROM process WHERE pid IN (100, 200) ORDER BY pid") == [
        (100, "Service: network.mojom.NetworkService"),
        (200, "PROCESS_RENDERER_TOP_WEBUI"),  # no friendly name: the enum value's
    ]
    assert db.rows(
        "SELECT a.key, a.value_type, coalesce(a.string_value, a.int_value) FROM process p JOIN args a USING (arg_set_id) "
        "WHERE p.pid = 100 ORDER BY a.key"
    ) == [
        ("chrome.crash_trace_id", "uint", 1 << 40),
        ("chrome.host_app_package_name", "string", "com.example"),
        ("chrome.process_type", "string", "Service: network.mojom.NetworkService"),
    ]
    # A Chrome process of no (or an unknown) type still gets the arg, NULL.
    assert db.rows(
        "SELECT a.value_type, a.string_value FROM process p JOIN args a USING (arg_set_id) "
        "WHERE p.pid = 300 AND a.key = 'chrome.process_type'"
    ) == [("string", None)]
    assert db.rows("SELECT tid, name FROM thread WHERE tid IN (201, 202) ORDER BY tid") == [
        (201, "CacheThread_BlockFile"),
        (202, "ThreadPoolBackgroundWorker&"),
    ]


def test_chrome_metadata_and_benchmark_metadata(tmp_path):
    background = pb.BackgroundTracingMetadata(scenario_name_hash=77)
    background.triggered_rule.name_hash = 5
    metadata = pb.ChromeMetadataPacket(
        chrome_version_code=101,
        app_package_name="com.android.chrome",
        field_trial_hashes=[pb.ChromeMetadataPacket.FinchHash(name=i, group=i + 10) for i in range(1, 4)],
        background_tracing_metadata=background,
    )
    bench = pb.ChromeBenchmarkMetadata(
        benchmark_name="speedometer", story_name="s1", story_tags=["a", "b"], story_run_index=2, had_failures=False
    )
    db = ingest_packets(
        tmp_path,
        [
            pb.TracePacket(timestamp=1, trusted_packet_sequence_id=1, chrome_metadata=metadata),
            pb.TracePacket(timestamp=1, trusted_packet_sequence_id=1, chrome_benchmark_metadata=bench),
            pb.TracePacket(timestamp=2, trusted_packet_sequence_id=1, track_event=TE(type=TE.TYPE_INSTANT, name="e")),
        ],
    )
    meta = dict(
        db.rows(
            "SELECT name, coalesce(str_value, int_value) FROM metadata WHERE name GLOB 'cr-*' OR "
            "(name GLOB 'benchmark_*' AND name != 'benchmark_story_tags')"
        )
    )
    assert meta.pop("cr-a-field_trial_hashes") == (
        "{ name: 1, group: 11 } { name: 2, group: 12 } \n{ name: 3, group: 13 } "  # two a line
    )
    assert meta.pop("cr-background_tracing_metadata") == base64.b64encode(background.SerializeToString()).decode()
    assert meta == {
        "cr-a-playstore_version_code": 101,
        "cr-a-package-name": "com.android.chrome",
        "cr-scenario_name_hash": 77,  # the triggered rule is not read from this packet
        "benchmark_name": "speedometer",
        "benchmark_story_name": "s1",
        "benchmark_story_run_index": 2,
        "benchmark_had_failures": 0,
    }
    assert db.rows("SELECT str_value FROM metadata WHERE name = 'benchmark_story_tags' ORDER BY id") == [("a",), ("b",)]


def test_log_message_args(tmp_path):
    interned = pb.InternedData(
        log_message_body=[pb.LogMessageBody(iid=1, body="hello")],
        source_locations=[pb.SourceLocation(iid=2, file_name="foo.cc", function_name="f", line_number=12)],
    )
    db = ingest_packets(
        tmp_path,
        [
            pb.TracePacket(
                timestamp=1,
                trusted_packet_sequence_id=1,
                incremental_state_cleared=True,
                track_descriptor=pb.TrackDescriptor(uuid=1, thread=pb.ThreadDescriptor(pid=5, tid=6)),
            ),
            pb.TracePacket(
                timestamp=2,
                trusted_packet_sequence_id=1,
                sequence_flags=2,
                interned_data=interned,
                track_event=TE(
                    type=TE.TYPE_INSTANT,
                    track_uuid=1,
                    name="log",
                    log_message=pb.LogMessage(body_iid=1, source_location_iid=2),
                ),
            ),
            pb.TracePacket(
                timestamp=3,
                trusted_packet_sequence_id=1,
                sequence_flags=2,
                track_event=TE(
                    type=TE.TYPE_INSTANT, track_uuid=1, name="bad body", log_message=pb.LogMessage(body_iid=9)
                ),
            ),
        ],
    )
    assert db.rows(
        "SELECT extract_arg(arg_set_id, 'track_event.log_message.message'), "
        "extract_arg(arg_set_id, 'track_event.log_message.file_name'), "
        "extract_arg(arg_set_id, 'track_event.log_message.line_number') FROM slice ORDER BY ts"
    ) == [("hello", "foo.cc", 12), (None, None, None)]


def test_legacy_chrome_event_bundle_metadata(tmp_path):
    def bundle(*metadata: pb.ChromeMetadata) -> pb.TracePacket:
        return pb.TracePacket(
            timestamp=1, trusted_packet_sequence_id=1, chrome_events=pb.ChromeEventBundle(metadata=list(metadata))
        )

    db = ingest_packets(
        tmp_path,
        [
            bundle(
                pb.ChromeMetadata(name="product-version", string_value="Chrome/1"),
                pb.ChromeMetadata(name="num-cpus", int_value=8),
                pb.ChromeMetadata(name="highres-ticks", bool_value=True),
                pb.ChromeMetadata(name="gpu", json_value='{"a": 1}'),
                pb.ChromeMetadata(name="empty"),
            ),
            bundle(pb.ChromeMetadata(name="product-version", string_value="Chrome/2")),
            pb.TracePacket(timestamp=2, trusted_packet_sequence_id=1, track_event=TE(type=TE.TYPE_INSTANT, name="e")),
        ],
    )
    assert db.rows(
        "SELECT name, coalesce(str_value, int_value) FROM metadata WHERE name GLOB 'cr-*' ORDER BY name"
    ) == [
        ("cr-2-product-version", "Chrome/2"),  # a second Chrome instance
        ("cr-gpu", '{"a": 1}'),
        ("cr-highres-ticks", 1),
        ("cr-num-cpus", 8),
        ("cr-product-version", "Chrome/1"),
    ]
    assert db.stat("empty_chrome_metadata") == 1


def test_damaged_system_trace_lines_are_counted(ingest_text):
    nines = "9" * 5000
    lines = (
        "   app-10   (10) [000] ...1  1000.000100: tracing_mark_write: C|10|ctr|%s\\n"  # saturates, as strtoll
        "   app-10   (10) [000] ...1  %s.0: tracing_mark_write: B|10|too late\\n"  # not a timestamp
        "   app-10   (10) [000] ...1  1000.000200: tracing_mark_write: B|10|odd \\q escape\\n"
    ) % (nines, nines)
    db = ingest_text('{"traceEvents": [], "systemTraceEvents": "%s"}' % lines)
    assert db.rows("SELECT name FROM slice") == [("odd  escape",)]  # an unknown escape is dropped
    assert db.rows("SELECT value FROM counter") == [(float((1 << 63) - 1),)]
    assert db.stat("systrace_parse_failure") == 1


def test_legacy_chrome_process_and_thread_types(tmp_path):
    legacy_process = pb.TrackDescriptor(uuid=40, process=pb.ProcessDescriptor(pid=400, chrome_process_type=2))
    db = ingest_packets(
        tmp_path,
        [
            pb.TracePacket(timestamp=1, trusted_packet_sequence_id=1, track_descriptor=legacy_process),
            pb.TracePacket(
                timestamp=1,
                trusted_packet_sequence_id=2,
                incremental_state_cleared=True,
                thread_descriptor=pb.ThreadDescriptor(pid=400, tid=401, chrome_thread_type=2),
            ),
            pb.TracePacket(timestamp=2, trusted_packet_sequence_id=2, track_event=TE(type=TE.TYPE_INSTANT, name="e")),
        ],
    )
    # The deprecated enums name the process and thread; no chrome.process_type arg.
    assert db.rows("SELECT name, arg_set_id FROM process WHERE pid = 400") == [("Renderer", None)]
    assert db.one("SELECT name FROM thread WHERE tid = 401") == "ChromeIOThread"
