"""trace_processor's proto content analysis (ingest --analyze-proto-content): experimental_proto_path and
experimental_proto_content (importers/proto/content_analyzer.py). Sizes are worked out by hand from
trace_processor's SizeProfileComputer (util/proto_profiler.cc): a field's value without its tag and length,
a message's own row the tag and length bytes of its fields, unknown fields under #unknown."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FunctionsDB, TraceDB
from database_rows import assert_same_database
from google.protobuf import descriptor_pb2
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.cli import perfetto
from datasette_perfetto.importers.common.options import Content
from datasette_perfetto.ingest import ingest
from datasette_perfetto.parallel import ingest as parallel_ingest
from datasette_perfetto.trace_builder import build_demo_trace, encode_varint, trace_record

ANALYZE = Content(analyze_proto_content=True)


def packet(**fields) -> bytes:
    return pb.TracePacket(**fields).SerializeToString()


def tag(number: int, wire: int) -> bytes:
    return encode_varint(number << 3 | wire)


def analyzed(tmp_path: Path, packets: list[bytes], name: str = "t", content: Content = ANALYZE, **options) -> TraceDB:
    trace = tmp_path / f"{name}.pftrace"
    trace.write_bytes(b"".join(map(trace_record, packets)))
    db = tmp_path / f"{name}.db"
    ingest([str(trace)], str(db), content=content, **options)
    return TraceDB(db)


def path_rows(db: TraceDB) -> list[tuple]:
    return db.rows("SELECT id, parent_id, field_type, field_name, arg_set_id IS NOT NULL FROM experimental_proto_path")


def content_rows(db: TraceDB) -> list[tuple]:
    return db.rows("SELECT path, path_id, total_size, size, count FROM experimental_proto_content ORDER BY id")


def sizes(db: TraceDB) -> dict[str, tuple[int, int]]:
    """path -> (total_size, count), over every annotation."""
    rows = db.rows("SELECT path, SUM(total_size), SUM(count) FROM experimental_proto_content GROUP BY path")
    return {path: (size, count) for path, size, count in rows}


# A thread's track descriptor (no annotation): 15 bytes.
DESCRIPTOR = packet(
    timestamp=0,
    trusted_packet_sequence_id=1,
    track_descriptor=pb.TrackDescriptor(uuid=1, thread=pb.ThreadDescriptor(pid=5, tid=6)),
)


def instant(ts: int, **fields) -> bytes:
    return packet(
        timestamp=ts,
        trusted_packet_sequence_id=1,
        track_event=pb.TrackEvent(track_uuid=1, type=pb.TrackEvent.TYPE_INSTANT, **fields),
    )


# Dropped for want of incremental state (sequence 2 was never cleared): 17 bytes.
SKIPPED = packet(
    timestamp=50,
    trusted_packet_sequence_id=2,
    sequence_flags=2,
    track_event=pb.TrackEvent(type=pb.TrackEvent.TYPE_INSTANT, name="lost"),
)
# Fields the pool does not name, one id protozero skips, a message field sent as a varint: 24 bytes.
ODD = b"".join(
    [
        tag(8, 0) + b"\x05",  # timestamp = 5: tag 1, value 1
        tag(10, 0) + b"\x01",  # trusted_packet_sequence_id = 1: tag 1, value 1
        tag(60, 0) + b"\x07",  # track_descriptor as a varint: tag 2, value 1 -> #track_descriptor.message
        tag(5000, 0) + encode_varint(300),  # unknown: tag 3, value 2
        tag(5001, 2) + b"\x03abc",  # unknown: tag 3, length 1, payload 3
        tag(1 << 24, 0) + b"\x01",  # beyond protozero's field ids: tag 4, value 1, all overhead
    ]
)


def test_every_field_of_every_packet_counted_as_trace_processor_counts_it(tmp_path):
    events = [instant(1000, categories=["cat"], name="ev"), instant(2000, categories=["cat"], name="ev")]
    assert (len(DESCRIPTOR), len(events[0]), len(events[1]), len(SKIPPED), len(ODD)) == (15, 22, 22, 17, 24)
    db = analyzed(tmp_path, [DESCRIPTOR, *events, SKIPPED, ODD])
    assert path_rows(db) == [
        # No annotation: the descriptor and the odd packet.
        (0, None, "TracePacket", None, False),
        (1, 0, "uint64", "#timestamp", False),
        (2, 0, "uint32", "#trusted_packet_sequence_id", False),
        (3, 0, "TrackDescriptor", "#track_descriptor", False),
        (4, 3, "uint64", "#uuid", False),
        (5, 3, "ThreadDescriptor", "#thread", False),
        (6, 5, "int32", "#pid", False),
        (7, 5, "int64", "#tid", False),
        (8, 0, "message", "#track_descriptor", False),
        (9, 0, "", "#unknown", False),
        # The track events of (cat, ev): a tree of their own, the annotation on its root.
        (10, None, "TracePacket", None, True),
        (11, 10, "uint64", "#timestamp", False),
        (12, 10, "uint32", "#trusted_packet_sequence_id", False),
        (13, 10, "TrackEvent", "#track_event", False),
        (14, 13, "enum", "#type", False),
        (15, 13, "uint64", "#track_uuid", False),
        (16, 13, "string", "#categories", False),
        (17, 13, "string", "#name", False),
        # The skipped packet.
        (18, None, "TracePacket", None, True),
        (19, 18, "uint64", "#timestamp", False),
        (20, 18, "uint32", "#trusted_packet_sequence_id", False),
        (21, 18, "TrackEvent", "#track_event", False),
        (22, 21, "enum", "#type", False),
        (23, 21, "string", "#name", False),
        (24, 18, "uint32", "#sequence_flags", False),
    ]
    assert content_rows(db) == [
        # 15 - (1 + 1 + 8) = 5 tag and length bytes, and 24 - (1 + 1 + 1 + 2 + 3) = 16 (the skipped field too).
        ("TracePacket", 0, 21, 21, 2),
        ("TracePacket.#timestamp.uint64", 1, 2, 2, 2),
        ("TracePacket.#trusted_packet_sequence_id.uint32", 2, 2, 2, 2),
        ("TracePacket.#track_descriptor.TrackDescriptor", 3, 3, 3, 1),  # 8 - (1 + 4)
        ("TracePacket.#track_descriptor.TrackDescriptor.#uuid.uint64", 4, 1, 1, 1),
        ("TracePacket.#track_descriptor.TrackDescriptor.#thread.ThreadDescriptor", 5, 2, 2, 1),
        ("TracePacket.#track_descriptor.TrackDescriptor.#thread.ThreadDescriptor.#pid.int32", 6, 1, 1, 1),
        ("TracePacket.#track_descriptor.TrackDescriptor.#thread.ThreadDescriptor.#tid.int64", 7, 1, 1, 1),
        ("TracePacket.#track_descriptor.message", 8, 1, 1, 1),
        ("TracePacket.#unknown.", 9, 5, 5, 1),
        ("TracePacket", 10, 8, 8, 2),  # 22 - (2 + 1 + 15), twice
        ("TracePacket.#timestamp.uint64", 11, 4, 4, 2),  # 1000 and 2000: two-byte varints
        ("TracePacket.#trusted_packet_sequence_id.uint32", 12, 2, 2, 2),
        ("TracePacket.#track_event.TrackEvent", 13, 16, 16, 2),  # 15 - (1 + 1 + 3 + 2), twice
        ("TracePacket.#track_event.TrackEvent.#type.enum", 14, 2, 2, 2),
        ("TracePacket.#track_event.TrackEvent.#track_uuid.uint64", 15, 2, 2, 2),
        ("TracePacket.#track_event.TrackEvent.#categories.string", 16, 6, 6, 2),
        ("TracePacket.#track_event.TrackEvent.#name.string", 17, 4, 4, 2),
        ("TracePacket", 18, 5, 5, 1),  # 17 - (1 + 1 + 1 + 9)
        ("TracePacket.#timestamp.uint64", 19, 1, 1, 1),
        ("TracePacket.#trusted_packet_sequence_id.uint32", 20, 1, 1, 1),
        ("TracePacket.#track_event.TrackEvent", 21, 4, 4, 1),  # 9 - (1 + 4)
        ("TracePacket.#track_event.TrackEvent.#type.enum", 22, 1, 1, 1),
        ("TracePacket.#track_event.TrackEvent.#name.string", 23, 4, 4, 1),
        ("TracePacket.#sequence_flags.uint32", 24, 1, 1, 1),
    ]
    # Every byte of the packets is counted once.
    assert db.one("SELECT SUM(total_size) FROM experimental_proto_content") == 15 + 22 + 22 + 17 + 24
    annotations = db.rows(
        """SELECT p.id, a.key, a.string_value FROM experimental_proto_path p JOIN args a USING (arg_set_id)
           ORDER BY p.id, a.key"""
    )
    assert annotations == [
        (10, "event.category", "cat"),
        (10, "event.name", "ev"),
        (18, "skipped_packet", "invalid_incremental_state"),
    ]


def test_repeated_and_nested_fields_are_samples_of_one_path(tmp_path):
    """trace_processor's own unit test, on TrackEvent: each occurrence of a repeated field is a sample (count),
    each message its overhead."""
    nested = pb.DebugAnnotation(name="d", dict_entries=[pb.DebugAnnotation(name="k", int_value=300)])
    event = instant(
        1000,
        name="e",
        debug_annotations=[
            pb.DebugAnnotation(name="a", int_value=1),
            pb.DebugAnnotation(name="b", int_value=2),
            nested,
        ],
        flow_ids=[1, 2, 3],
    )
    db = analyzed(tmp_path, [DESCRIPTOR, event])
    got = sizes(db)
    te = "TracePacket.#track_event.TrackEvent"
    da = f"{te}.#debug_annotations.DebugAnnotation"
    assert got[f"{te}.#flow_ids.fixed64"] == (24, 3)  # repeated fixed64, not packed: 8 bytes each
    # Two: the name's tag and length, int_value's tag; the third: the tags and lengths of name and dict_entries.
    assert got[da] == (3 + 3 + 4, 3)
    assert got[f"{da}.#name.string"] == (3, 3)
    assert got[f"{da}.#int_value.int64"] == (2, 2)
    assert got[f"{da}.#dict_entries.DebugAnnotation"] == (3, 1)
    assert got[f"{da}.#dict_entries.DebugAnnotation.#int_value.int64"] == (2, 1)  # 300: two bytes
    assert got[f"{da}.#dict_entries.DebugAnnotation.#name.string"] == (1, 1)
    # The event's own tags and lengths: type, track_uuid, name (tag 2, length 1), three annotations (1 + 1 each),
    # three flow ids (tag 2 each).
    assert got[te] == (1 + 1 + 3 + 6 + 6, 1)
    assert sum(size for size, _ in got.values()) == len(DESCRIPTOR) + len(event)
    parents = db.rows(
        """SELECT c.field_name, p.field_name FROM experimental_proto_path c
           JOIN experimental_proto_path p ON p.id = c.parent_id WHERE c.field_name = '#dict_entries'"""
    )
    assert parents == [("#dict_entries", "#debug_annotations")]


def test_without_the_option_the_tables_are_empty(tmp_path):
    db = analyzed(tmp_path, [DESCRIPTOR, instant(1000, name="ev"), SKIPPED], content=Content())
    assert db.count("experimental_proto_path") == 0
    assert db.count("experimental_proto_content") == 0
    assert db.one("SELECT count(*) FROM args WHERE key IN ('event.category', 'event.name', 'skipped_packet')") == 0
    assert db.count("slice") == 1  # the import itself is the same


def test_packets_trace_processor_consumes_first_are_left_out(tmp_path):
    """Clock snapshots, service events, extension descriptors: not analyzed; compressed_packets: their
    packets one by one, not the wrapper; track events only once parsed."""
    clock = packet(
        clock_snapshot=pb.ClockSnapshot(clocks=[pb.ClockSnapshot.Clock(clock_id=6, timestamp=0)]),
        trusted_packet_sequence_id=1,
    )
    service = packet(
        timestamp=1, trusted_packet_sequence_id=1, service_event=pb.TracingServiceEvent(all_data_sources_started=True)
    )
    inner = instant(3000, name="inside")
    compressed = packet(
        trusted_packet_sequence_id=1, compressed_packets=zlib.compress(trace_record(inner) + trace_record(DESCRIPTOR))
    )
    no_type = packet(timestamp=4000, trusted_packet_sequence_id=1, track_event=pb.TrackEvent(track_uuid=1, name="x"))
    db = FunctionsDB(analyzed(tmp_path, [clock, service, DESCRIPTOR, compressed, no_type]).path)
    by_root = db.rows(
        """SELECT extract_arg(p.arg_set_id, 'event.name'), c.count FROM experimental_proto_path p
           JOIN experimental_proto_content c ON c.path_id = p.id WHERE p.parent_id IS NULL ORDER BY p.id"""
    )
    # The descriptor twice (once inside the compressed block); the event inside; not the one without a type
    # (trace_processor's parser refuses it before its analysis).
    assert by_root == [(None, 2), ("inside", 1)]
    assert db.one("SELECT SUM(total_size) FROM experimental_proto_content") == 2 * len(DESCRIPTOR) + len(inner)
    assert "TracePacket.#clock_snapshot.ClockSnapshot" not in sizes(db)


def test_other_machines_packets_are_left_out(tmp_path):
    """trace_processor gives another machine's reader an analyzer of its own that it never writes out."""
    remote = packet(
        timestamp=0,
        trusted_packet_sequence_id=7,
        machine_id=42,
        track_descriptor=pb.TrackDescriptor(uuid=9, thread=pb.ThreadDescriptor(pid=50, tid=60)),
    )
    db = analyzed(tmp_path, [DESCRIPTOR, remote, instant(1000, name="ev")])
    assert db.count("machine") == 2
    assert db.one("SELECT SUM(total_size) FROM experimental_proto_content") == len(DESCRIPTOR) + len(
        instant(1000, name="ev")
    )


def test_a_field_that_does_not_parse_ends_its_message(tmp_path):
    """protozero stops at a field it cannot read: the rest of the message is counted as its overhead, and the
    packet goes on with the next field of the enclosing message."""
    broken = pb.TrackDescriptor(uuid=1).SerializeToString() + tag(2, 2) + b"\x32ab"  # a name 50 bytes long: 2 left
    data = tag(8, 0) + b"\x05" + tag(60, 2) + encode_varint(len(broken)) + broken + tag(10, 0) + b"\x01"
    db = analyzed(tmp_path, [data])
    got = sizes(db)
    assert got["TracePacket.#track_descriptor.TrackDescriptor"] == (len(broken) - 1, 1)
    assert got["TracePacket.#track_descriptor.TrackDescriptor.#uuid.uint64"] == (1, 1)
    assert got["TracePacket.#trusted_packet_sequence_id.uint32"] == (1, 1)
    assert got["TracePacket"] == (1 + 3 + 1, 1)  # timestamp's tag; track_descriptor's (2 bytes) and length


def test_extensions_the_trace_declares_name_their_fields(tmp_path):
    """An extension_descriptor joins the pool: its TrackEvent fields are named for every event (parsed after
    the whole file is read), other packets from where it appears."""
    files = descriptor_pb2.FileDescriptorSet()
    f = files.file.add(name="my.proto", package="my")
    f.dependency.append("protos/perfetto/trace/track_event/track_event.proto")
    f.extension.add(
        name="my_value",
        number=9900,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
        extendee=".perfetto.protos.TrackEvent",
    )
    f.extension.add(
        name="my_packet_value",
        number=1500,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
        extendee=".perfetto.protos.TracePacket",
    )
    declaration = packet(
        trusted_packet_sequence_id=1,
        extension_descriptor=pb.ExtensionDescriptor(
            extension_set=pb.FileDescriptorSet.FromString(files.SerializeToString())
        ),
    )
    body = pb.TrackEvent(track_uuid=1, type=pb.TrackEvent.TYPE_INSTANT, name="ev").SerializeToString()
    body += tag(9900, 0) + b"\x07"
    event = tag(8, 0) + encode_varint(1000) + tag(10, 0) + b"\x01" + tag(11, 2) + encode_varint(len(body)) + body
    plain = tag(10, 0) + b"\x01" + tag(1500, 0) + encode_varint(300)  # a TracePacket extension: two bytes
    db = analyzed(tmp_path, [DESCRIPTOR, plain, event, declaration, plain])
    got = sizes(db)
    assert got["TracePacket.#track_event.TrackEvent.#my_value.int32"] == (1, 1)
    assert "TracePacket.#track_event.TrackEvent.#unknown." not in got
    assert got["TracePacket.#unknown."] == (2, 1)  # before the declaration
    assert got["TracePacket.#my_packet_value.int32"] == (2, 1)  # after it


def test_bundled_extensions_are_in_the_pool(tmp_path):
    """Chromium's TrackEvent extensions, and Android's TracePacket ones trace_processor compiles in."""
    chrome = pb.TrackEvent(track_uuid=1, type=pb.TrackEvent.TYPE_INSTANT, name="c").SerializeToString()
    chrome += tag(1000, 0) + b"\x02"  # ChromeTrackEvent.chrome_app_state (an enum)
    event = tag(8, 0) + encode_varint(1000) + tag(10, 0) + b"\x01" + tag(11, 2) + encode_varint(len(chrome)) + chrome
    heap_graph = tag(10, 0) + b"\x01" + tag(56, 2) + b"\x02" + tag(1, 0) + b"\x05"  # HeapGraph { pid: 5 }
    db = analyzed(tmp_path, [DESCRIPTOR, event, heap_graph])
    got = sizes(db)
    assert got["TracePacket.#track_event.TrackEvent.#chrome_app_state.enum"] == (1, 1)
    assert got["TracePacket.#heap_graph.HeapGraph.#pid.int32"] == (1, 1)


@pytest.mark.parametrize("split", [False, True])
def test_the_split_tokenizer_gives_the_same_tables(tmp_path, split):
    """The forked helper's track events carry their packets too."""
    data = build_demo_trace()
    trace = tmp_path / "demo.pftrace"
    trace.write_bytes(data)
    one, two = tmp_path / "one.db", tmp_path / f"split{split}.db"
    ingest([str(trace)], str(one), content=ANALYZE, split_tokenize=False)
    ingest([str(trace)], str(two), content=ANALYZE, split_tokenize=split)
    tables = "SELECT * FROM experimental_proto_path ORDER BY id", "SELECT * FROM experimental_proto_content ORDER BY id"
    for sql in tables:
        assert TraceDB(one).rows(sql) == TraceDB(two).rows(sql)
    assert TraceDB(one).count("experimental_proto_content") > 50


def test_jobs_give_the_serial_database(tmp_path):
    a = tmp_path / "a.pftrace"
    a.write_bytes(b"".join(map(trace_record, [DESCRIPTOR, instant(1000, categories=["cat"], name="ev"), SKIPPED])))
    b = tmp_path / "b.pftrace"
    b.write_bytes(build_demo_trace())
    paths = [str(a), str(b), str(a)]
    serial, merged = tmp_path / "serial.db", tmp_path / "merged.db"
    ingest(paths, str(serial), content=ANALYZE)
    parallel_ingest(paths, str(merged), jobs=2, content=ANALYZE)
    assert_same_database(serial, merged)
    db = TraceDB(serial)
    # Each input's rows: its own trees, ids after the previous input's.
    assert db.one("SELECT count(*) FROM experimental_proto_path WHERE parent_id IS NULL AND arg_set_id IS NULL") == 3
    assert (
        db.one(
            """SELECT count(*) FROM experimental_proto_content c JOIN experimental_proto_path p ON p.id = c.path_id
           WHERE c.path NOT LIKE '%' || p.field_type"""
        )
        == 0
    )


def test_the_demo_trace_counts_every_byte_of_its_analyzed_packets(tmp_path):
    """Every packet but its clock snapshots and the phone's (another machine) is analyzed, and all its track
    events are parsed: the sizes add up to their lengths."""
    data = build_demo_trace()
    trace = pb.Trace.FromString(data)
    expected = sum(p.ByteSize() for p in trace.packet if p.WhichOneof("data") != "clock_snapshot" and not p.machine_id)
    db = analyzed(tmp_path, [p.SerializeToString() for p in trace.packet])
    assert db.one("SELECT SUM(total_size) FROM experimental_proto_content") == expected
    orphans = db.one(
        """SELECT count(*) FROM experimental_proto_path c LEFT JOIN experimental_proto_path p ON p.id = c.parent_id
           WHERE c.parent_id IS NOT NULL AND (p.id IS NULL OR p.id >= c.id)"""
    )
    assert orphans == 0


def test_the_cli_option(tmp_path):
    trace = tmp_path / "t.pftrace"
    trace.write_bytes(b"".join(map(trace_record, [DESCRIPTOR, instant(1000, name="ev")])))
    out = tmp_path / "t.db"
    result = CliRunner().invoke(perfetto, ["ingest", str(trace), "-o", str(out), "-q", "--analyze-proto-content"])
    assert result.exit_code == 0, result.output
    assert TraceDB(out).one("SELECT SUM(total_size) FROM experimental_proto_content") == len(DESCRIPTOR) + len(
        instant(1000, name="ev")
    )
