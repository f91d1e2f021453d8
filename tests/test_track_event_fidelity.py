"""TrackEvent fidelity: state tracks (scopes, views, events on tracks that are not state
tracks), v1 flow events (begin / step / end, bound to the enclosing or to the next slice),
descriptor sort indexes, and the args trace_processor's proto content analysis leaves
(an option, on in its diff tests) — each compared with what track_event_event_importer,
TrackEventTracker and FlowTracker make of the same packets."""

from __future__ import annotations

from conftest import FunctionsDB, ingest_built
from database_rows import assert_same_database
from google.protobuf import text_format
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.importers.common.options import Content
from datasette_perfetto.ingest import ingest
from datasette_perfetto.trace_builder import TraceBuilder


def built(textproto: str) -> TraceBuilder:
    b = TraceBuilder()
    b.packets.extend(text_format.Parse(textproto, pb.Trace()).packet)
    return b


def descriptor(uuid: int, body: str, seq: int = 1) -> str:
    return f"packet {{ trusted_packet_sequence_id: {seq} timestamp: 0 track_descriptor {{ uuid: {uuid} {body} }} }}"


def event(ts: int, body: str, seq: int = 1) -> str:
    return f"packet {{ trusted_packet_sequence_id: {seq} timestamp: {ts} track_event {{ {body} }} }}"


PROCESS_AND_THREAD = "\n".join(
    [
        descriptor(1, 'process { pid: 5 process_name: "Browser" }'),
        descriptor(2, 'parent_uuid: 1 thread { pid: 5 tid: 6 thread_name: "Main" }'),
    ]
)


# -- state tracks --------------------------------------------------------------------------


def test_state_tracks_of_each_scope_and_their_views(tmp_path):
    trace = "\n".join(
        [
            PROCESS_AND_THREAD,
            descriptor(10, 'parent_uuid: 1 name: "Visibility" state {}'),
            descriptor(11, 'parent_uuid: 2 name: "Power" state {}'),
            descriptor(12, 'name: "Network" state {}'),
            event(100, 'track_uuid: 10 type: TYPE_STATE categories: "ui" name: "visible"'),
            event(150, 'track_uuid: 11 type: TYPE_STATE name: "awake" debug_annotations { name: "why" int_value: 3 }'),
            event(200, 'track_uuid: 10 type: TYPE_STATE categories: "ui" name: "hidden"'),
            event(250, "track_uuid: 11 type: TYPE_STATE"),  # no name: closes the open state
            event(300, 'track_uuid: 12 type: TYPE_STATE name: "online"'),
        ]
    )
    db = ingest_built(tmp_path, built(trace), FunctionsDB)
    assert db.rows(
        """SELECT s.ts, s.dur, s.category, s.value, t.name, t.type, extract_arg(s.arg_set_id, 'debug.why')
           FROM state s JOIN track t ON t.id = s.track_id ORDER BY s.ts"""
    ) == [
        (100, 100, "ui", "visible", "Visibility", "process_state_track_event", None),
        (150, 100, None, "awake", "Power", "thread_state_track_event", 3),
        (200, -1, "ui", "hidden", "Visibility", "process_state_track_event", None),
        (300, -1, None, "online", "Network", "global_state_track_event", None),
    ]
    assert db.rows("SELECT name FROM state_track ORDER BY name") == [("Network",), ("Power",), ("Visibility",)]
    assert db.rows("SELECT p.pid, t.name FROM process_state_track t JOIN process p USING (upid)") == [(5, "Visibility")]
    assert db.rows("SELECT th.tid, t.name FROM thread_state_track t JOIN thread th USING (utid)") == [(6, "Power")]
    assert db.stat("track_event_parser_errors") == 0


def test_state_events_anywhere_but_a_state_track_are_parser_errors(tmp_path):
    trace = "\n".join(
        [
            PROCESS_AND_THREAD,
            descriptor(20, 'name: "Plain"'),  # a global track merged by name: a set of tracks
            descriptor(21, 'parent_uuid: 1 name: "Child" sibling_merge_behavior: SIBLING_MERGE_BEHAVIOR_NONE'),
            event(100, 'track_uuid: 20 type: TYPE_STATE name: "high"'),
            event(110, 'track_uuid: 21 type: TYPE_STATE name: "high"'),
            event(120, 'track_uuid: 2 type: TYPE_STATE name: "high"'),  # a thread's own track
            event(130, 'track_uuid: 20 type: TYPE_SLICE_BEGIN name: "work"'),
            event(140, "track_uuid: 20 type: TYPE_SLICE_END"),
        ]
    )
    # Nor on the legacy pid/tid fallback (uuid 0 with a pid override); without any track uuid a
    # state event is dropped before parsing, with a stat of its own.
    trace += "\n" + "\n".join(
        [
            event(150, 'track_uuid: 0 type: TYPE_STATE name: "x" legacy_event { pid_override: 9 }', seq=2),
            event(160, 'type: TYPE_STATE name: "y"', seq=2),
        ]
    )
    db = ingest_built(tmp_path, built(trace), FunctionsDB)
    assert db.one("SELECT count(*) FROM state") == 0
    assert db.stat("track_event_parser_errors") == 4
    assert db.stat("track_event_state_missing_track_uuid") == 1
    assert db.rows("SELECT ts, dur, name FROM slice") == [(130, 10, "work")]


def test_state_on_a_thread_or_process_descriptor_is_ignored(tmp_path):
    trace = "\n".join(
        [
            descriptor(30, "thread { pid: 5 tid: 6 } state {}"),
            descriptor(31, "process { pid: 5 } state {}"),
            event(100, 'track_uuid: 30 type: TYPE_STATE name: "running"'),
            event(200, 'track_uuid: 31 type: TYPE_STATE name: "foreground"'),
            event(300, 'track_uuid: 30 type: TYPE_INSTANT name: "tick"'),
        ]
    )
    db = ingest_built(tmp_path, built(trace), FunctionsDB)
    # A thread or process descriptor is that, whatever else it says: no state track.
    assert db.one("SELECT count(*) FROM state") == 0
    assert db.stat("track_event_parser_errors") == 2
    assert db.rows("SELECT s.name, t.type FROM slice s JOIN track t ON t.id = s.track_id") == [
        ("tick", "thread_execution")
    ]
    assert db.one("SELECT count(*) FROM state_track") == 0


# -- v1 flows ---------------------------------------------------------------------------------


def legacy(ts: int, uuid: int, name: str, phase: str, extra: str = "", category: str = "cat") -> str:
    return event(
        ts, f'track_uuid: {uuid} name: "{name}" categories: "{category}" legacy_event {{ phase: {ord(phase)} {extra} }}'
    )


def flows(db) -> list[tuple]:
    return db.rows(
        """SELECT o.name, i.name, f.trace_id, extract_arg(f.arg_set_id, 'name'), extract_arg(f.arg_set_id, 'cat')
           FROM flow f JOIN slice o ON o.id = f.slice_out JOIN slice i ON i.id = f.slice_in ORDER BY f.id"""
    )


def test_v1_flow_ends_bind_to_the_enclosing_slice_or_to_the_next_one(tmp_path):
    trace = "\n".join(
        [
            descriptor(1, 'thread { pid: 1 tid: 1 thread_name: "a" }'),
            descriptor(2, 'thread { pid: 1 tid: 2 thread_name: "b" }'),
            legacy(1000, 1, "Send", "X", "duration_us: 1"),
            legacy(1500, 1, "msg", "s", "unscoped_id: 7"),
            # Not bound to the enclosing slice: waits for the next slice that begins on track 2,
            # here a begin/end pair ("Receive"), whatever made it.
            legacy(3000, 2, "msg", "f", "unscoped_id: 7"),
            event(4000, 'track_uuid: 2 type: TYPE_SLICE_BEGIN name: "Receive"'),
            legacy(4500, 2, "reply", "s", "unscoped_id: 8", "ipc"),
            event(5000, "track_uuid: 2 type: TYPE_SLICE_END"),
            legacy(6000, 1, "Step", "X", "duration_us: 1"),
            legacy(6500, 1, "reply", "t", "unscoped_id: 8", "ipc"),
            legacy(8000, 2, "Done", "X", "duration_us: 1"),
            legacy(8500, 2, "reply", "f", "unscoped_id: 8 bind_to_enclosing: true", "ipc"),
        ]
    )
    db = ingest_built(tmp_path, built(trace), FunctionsDB)
    # v1 flow ids count from 0 as first seen, and name their rows.
    assert flows(db) == [
        ("Send", "Receive", 0, "msg", "cat"),
        ("Receive", "Step", 1, "reply", "ipc"),
        ("Step", "Done", 1, "reply", "ipc"),
    ]
    assert db.stat("flow_no_enclosing_slice") == 0


def test_v1_flow_errors_are_counted(tmp_path):
    trace = "\n".join(
        [
            descriptor(1, 'thread { pid: 1 tid: 1 thread_name: "a" }'),
            legacy(100, 1, "lonely", "s", "unscoped_id: 1"),  # no enclosing slice
            legacy(200, 1, "S", "X", "duration_us: 1"),
            legacy(200, 1, "noid", "s"),  # no unscoped id
            legacy(200, 1, "never", "t", "unscoped_id: 2"),  # step without a start
            legacy(200, 1, "never", "f", "unscoped_id: 3 bind_to_enclosing: true"),  # end without a start
            legacy(210, 1, "dup", "s", "unscoped_id: 4"),
            legacy(210, 1, "dup", "s", "unscoped_id: 4"),  # same id, category and name again
        ]
    )
    db = ingest_built(tmp_path, built(trace), FunctionsDB)
    assert db.count("flow") == 0
    assert db.stat("flow_no_enclosing_slice") == 1
    assert db.stat("flow_invalid_id") == 1
    assert db.stat("flow_step_without_start") == 1
    assert db.stat("flow_end_without_start") == 1
    assert db.stat("flow_duplicate_id") == 1


def test_complete_events_and_v1_flows_need_a_plain_track(tmp_path):
    trace = "\n".join(
        [
            descriptor(1, 'thread { pid: 1 tid: 1 thread_name: "a" }'),
            descriptor(5, 'parent_uuid: 1 name: "Merged"'),  # merged by name: a set of tracks
            descriptor(6, 'parent_uuid: 1 name: "Own" sibling_merge_behavior: SIBLING_MERGE_BEHAVIOR_NONE'),
            legacy(1000, 5, "OnMerged", "X", "duration_us: 1"),
            legacy(1500, 5, "flow", "s", "unscoped_id: 1"),
            legacy(2000, 6, "OnOwn", "X", "duration_us: 1"),
            legacy(3000, 1, "Negative", "X", "duration_us: -1"),
            event(4000, 'track_uuid: 5 type: TYPE_INSTANT name: "typed events may use the set"'),
        ]
    )
    db = ingest_built(tmp_path, built(trace), FunctionsDB)
    assert db.rows("SELECT s.name, t.name FROM slice s JOIN track t ON t.id = s.track_id ORDER BY s.ts") == [
        ("OnOwn", "Own"),
        ("typed events may use the set", "Merged"),
    ]
    assert db.stat("track_event_parser_errors") == 3


def test_legacy_metadata_events_name_threads_and_processes(tmp_path):
    def meta(ts: int, name: str, annotations: str, seq: int = 1) -> str:
        return event(ts, f'name: "{name}" {annotations} legacy_event {{ phase: {ord("M")} }}', seq)

    trace = "\n".join(
        [
            "packet { trusted_packet_sequence_id: 1 timestamp: 1 incremental_state_cleared: true "
            "thread_descriptor { pid: 20 tid: 21 } }",
            meta(10, "thread_name", 'debug_annotations { name: "whatever" string_value: "Worker" }'),
            meta(11, "process_name", 'debug_annotations { name: "name" string_value: "Renderer" }'),
            meta(12, "thread_name", 'debug_annotations { name: "n" int_value: 3 }'),  # not a string: nothing
            meta(13, "thread_name", ""),  # no annotation: an error
            meta(14, "other_metadata", ""),  # raw only in trace_processor: no error
        ]
    )
    db = ingest_built(tmp_path, built(trace), FunctionsDB)
    assert db.rows("SELECT tid, name FROM thread WHERE tid = 21") == [(21, "Worker")]
    assert db.rows("SELECT pid, name FROM process WHERE pid = 20") == [(20, "Renderer")]
    assert db.stat("track_event_parser_errors") == 1


# -- descriptors -------------------------------------------------------------------------------


def test_sibling_order_rank_is_a_sort_hint_only_under_explicit_ordering(tmp_path):
    for ordering, expected in (
        ("process_ordering: PROCESS_ORDERING_EXPLICIT thread_ordering: THREAD_ORDERING_EXPLICIT", (3, -2)),
        ("process_ordering: PROCESS_ORDERING_UNSPECIFIED", (None, None)),
    ):
        trace = "\n".join(
            [
                descriptor(0, ordering),
                descriptor(1, 'process { pid: 40 process_name: "P" } sibling_order_rank: 3'),
                descriptor(2, 'thread { pid: 40 tid: 41 thread_name: "T" } sibling_order_rank: -2'),
            ]
        )
        path = tmp_path / ordering.split(":")[0] / ordering[-5:]
        path.mkdir(parents=True)
        db = ingest_built(path, built(trace), FunctionsDB)
        got = (
            db.one("SELECT extract_arg(arg_set_id, 'process_sort_index_hint') FROM process WHERE pid = 40"),
            db.one("SELECT extract_arg(arg_set_id, 'thread_sort_index_hint') FROM thread WHERE tid = 41"),
        )
        assert got == expected


# -- proto content annotations -------------------------------------------------------------------


def analyzed(tmp_path, b: TraceBuilder) -> FunctionsDB:
    """Ingested as trace_processor's diff tests run: with --analyze-trace-proto-content."""
    ingest([str(b.write(tmp_path / "t.pftrace"))], str(tmp_path / "t.db"), content=Content(analyze_proto_content=True))
    return FunctionsDB(tmp_path / "t.db")


def test_each_category_and_name_pair_leaves_one_arg_set(tmp_path):
    trace = "\n".join(
        [
            descriptor(1, 'thread { pid: 1 tid: 1 thread_name: "a" }'),
            event(100, 'track_uuid: 1 type: TYPE_SLICE_BEGIN categories: "c1" name: "A"'),
            event(110, 'track_uuid: 1 type: TYPE_SLICE_END categories: "c1"'),
            event(120, 'track_uuid: 1 type: TYPE_SLICE_BEGIN categories: "c1" name: "A"'),
            event(130, 'track_uuid: 1 type: TYPE_INSTANT categories: "c2" categories: "c3" name: "B"'),
            event(140, "track_uuid: 1 type: TYPE_SLICE_END"),
            event(150, "track_uuid: 1"),  # no type nor phase: an error, not an annotation
        ]
    )
    db = analyzed(tmp_path, built(trace))
    pairs = db.rows(
        """SELECT c.string_value, n.string_value FROM args c JOIN args n USING (arg_set_id)
           WHERE c.key = 'event.category' AND n.key = 'event.name' ORDER BY 1, 2"""
    )
    assert pairs == [(None, None), ("c1", None), ("c1", "A"), ("c2,c3", "B")]
    assert db.one("SELECT count(*) FROM args WHERE key = 'skipped_packet'") == 0


def test_packets_skipped_for_lack_of_incremental_state_leave_their_annotation(tmp_path):
    trace = (
        "packet { trusted_packet_sequence_id: 3 timestamp: 10 sequence_flags: 2 "
        'track_event { type: TYPE_INSTANT name: "lost" } }'
    )
    db = analyzed(tmp_path, built(trace))
    assert db.stat("packet_skipped_seq_needs_incremental_state_invalid") == 1
    assert db.rows("SELECT key, string_value FROM args WHERE key = 'skipped_packet'") == [
        ("skipped_packet", "invalid_incremental_state")
    ]


def test_a_normal_import_leaves_no_content_annotations(tmp_path):
    trace = "\n".join(
        [
            descriptor(1, 'thread { pid: 1 tid: 1 thread_name: "a" }'),
            event(100, 'track_uuid: 1 type: TYPE_INSTANT categories: "c" name: "A"'),
            "packet { trusted_packet_sequence_id: 3 timestamp: 10 sequence_flags: 2 track_event { type: TYPE_INSTANT } }",
        ]
    )
    db = ingest_built(tmp_path, built(trace), FunctionsDB)
    assert db.one("SELECT count(*) FROM args WHERE key IN ('event.category', 'event.name', 'skipped_packet')") == 0


# -- callstacks ---------------------------------------------------------------------------------

CALLSTACK_INTERNING = """
packet { trusted_packet_sequence_id: 1 incremental_state_cleared: true interned_data {
  mapping_paths { iid: 1 str: "libapp.so" }
  function_names { iid: 1 str: "Outer" }
  function_names { iid: 2 str: "Inner" }
  frames { iid: 1 function_name_id: 1 mapping_id: 1 rel_pc: 16 }
  frames { iid: 2 function_name_id: 2 mapping_id: 1 rel_pc: 32 }
  callstacks { iid: 1 frame_ids: 1 frame_ids: 2 }
  mappings { iid: 1 path_string_ids: 1 start: 4096 end: 8192 }
} }
"""


def test_slice_events_keep_their_callstacks(tmp_path):
    trace = "\n".join(
        [
            descriptor(1, 'thread { pid: 9 tid: 10 thread_name: "w" }'),
            CALLSTACK_INTERNING,
            event(
                100,
                'track_uuid: 1 type: TYPE_SLICE_BEGIN name: "Draw" callstack_weight: 1.5 callstack { '
                'frames { function_name: "main" source_file: "main.cc" line_number: 3 } '
                'frames { function_name: "draw" } }',
            ),
            event(150, 'track_uuid: 1 type: TYPE_SLICE_END name: "Draw" callstack_iid: 1 callstack_weight: 2'),
            event(200, 'track_uuid: 1 type: TYPE_INSTANT name: "Tick" callstack_iid: 1'),
            event(210, 'track_uuid: 1 type: TYPE_INSTANT name: "Bad" callstack_iid: 99'),  # not interned
            event(220, 'track_uuid: 1 type: TYPE_INSTANT name: "Weightless" callstack_weight: 3'),  # no stack
            event(300, 'track_uuid: 1 type: TYPE_SLICE_END name: "Nothing open" callstack_iid: 1'),
        ]
    )
    db = ingest_built(tmp_path, built(trace), FunctionsDB)
    rows = db.rows(
        """WITH RECURSIVE stack(row, id, names) AS (
             SELECT c.id, coalesce(c.callsite_id, c.end_callsite_id), '' FROM __intrinsic_track_event_callstacks c
             UNION ALL
             SELECT stack.row, cs.parent_id, f.name || '/' || stack.names FROM stack
             JOIN stack_profile_callsite cs ON cs.id = stack.id JOIN stack_profile_frame f ON f.id = cs.frame_id
           )
           SELECT s.name, c.callsite_id IS NOT NULL, c.end_callsite_id IS NOT NULL, c.weight, t.type, stack.names
           FROM __intrinsic_track_event_callstacks c JOIN slice s ON s.id = c.slice_id
           JOIN track t ON t.id = c.track_id JOIN stack ON stack.row = c.id AND stack.id IS NULL
           ORDER BY c.id"""
    )
    assert rows == [
        ("Draw", 1, 0, 1.5, "thread_execution", "main/draw/"),
        ("Draw", 0, 1, 2.0, "thread_execution", "Outer/Inner/"),
        ("Tick", 1, 0, None, "thread_execution", "Outer/Inner/"),
    ]
    # Inline frames live in one placeholder mapping, with their source locations as symbols.
    assert db.rows(
        """SELECT f.name, m.name, s.source_file, s.line_number FROM stack_profile_frame f
           JOIN stack_profile_mapping m ON m.id = f.mapping LEFT JOIN stack_profile_symbol s USING (symbol_set_id)
           WHERE m.name = 'track_event_inline' ORDER BY f.id"""
    ) == [("main", "track_event_inline", "main.cc", 3), ("draw", "track_event_inline", None, None)]
    assert db.stat("track_event_parser_errors") == 1
    assert db.stat("stackprofile_invalid_callstack_id") == 1


def test_callstacks_are_the_same_when_tokenized_by_two_processes(tmp_path):
    trace = "\n".join(
        [descriptor(1, 'thread { pid: 9 tid: 10 thread_name: "w" }'), CALLSTACK_INTERNING]
        + [event(100 + 10 * i, f'track_uuid: 1 type: TYPE_INSTANT name: "e{i}" callstack_iid: 1') for i in range(5)]
    )
    path = built(trace).write(tmp_path / "t.pftrace")
    results = []
    for split in (False, True):
        db_path = tmp_path / f"split{split}.db"
        ingest([str(path)], str(db_path), split_tokenize=split)
        results.append(
            FunctionsDB(db_path).rows(
                """SELECT s.name, f.name FROM __intrinsic_track_event_callstacks c JOIN slice s ON s.id = c.slice_id
                   JOIN stack_profile_callsite cs ON cs.id = c.callsite_id JOIN stack_profile_frame f ON f.id = cs.frame_id
                   ORDER BY s.ts"""
            )
        )
    assert results[0] == results[1] == [(f"e{i}", "Inner") for i in range(5)]


# -- track events on a clock of their own --------------------------------------------------


def test_track_events_on_a_clock_of_their_own_are_read_on_the_hot_path(tmp_path, monkeypatch):
    from datasette_perfetto.importers.proto import reader

    snapshot = (
        "packet { trusted_packet_sequence_id: 1 timestamp: 1000 clock_snapshot { primary_trace_clock: 6 "
        "clocks { clock_id: 6 timestamp: 1000 } clocks { clock_id: 3 timestamp: 500 } } }"
    )

    def on_clock(ts: int, name: str, clock: int | None) -> str:
        clock_field = f"timestamp_clock_id: {clock}" if clock is not None else ""
        return (
            f"packet {{ trusted_packet_sequence_id: 2 timestamp: {ts} {clock_field} "
            f'track_event {{ track_uuid: 1 type: TYPE_INSTANT name: "{name}" }} }}'
        )

    trace = "\n".join(
        [
            snapshot,
            descriptor(1, 'thread { pid: 9 tid: 10 thread_name: "w" }', seq=2),
            on_clock(700, "monotonic", 3),
            on_clock(1300, "boottime", None),
            on_clock(850, "monotonic again", 3),
            on_clock(1400, "boottime named", 6),
            on_clock(900, "unknown clock", 99),
        ]
    )
    path = built(trace).write(tmp_path / "t.pftrace")
    scanned: list = []
    scan = reader.scan_track_event_range

    def recording(data, pos, n):
        result = scan(data, pos, n)
        scanned.append(result and result[4])
        return result

    monkeypatch.setattr(reader, "scan_track_event_range", recording)
    results = []
    for split in (False, True):
        db_path = tmp_path / f"split{split}.db"
        ingest([str(path)], str(db_path), split_tokenize=split)
        results.append(FunctionsDB(db_path))
    assert {3, 6, 99} <= set(scanned)  # read without a TracePacket
    expected = [(1200, "monotonic"), (1300, "boottime"), (1350, "monotonic again"), (1400, "boottime named")]
    for db in results:
        assert db.rows("SELECT ts, name FROM slice ORDER BY ts") == expected
    # As the packets decoded whole give it (the scan declining them).
    monkeypatch.setattr(reader, "scan_track_event_range", lambda data, pos, n: None)
    whole = tmp_path / "whole.db"
    ingest([str(path)], str(whole), split_tokenize=False)
    assert_same_database(results[0].path, whole)
    assert_same_database(results[1].path, whole)
