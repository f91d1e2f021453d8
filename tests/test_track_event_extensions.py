"""TrackEvent extension fields as args (trace_processor's reflection over its descriptor pool): Chromium's
ChromeTrackEvent, bundled; others declared by the trace in extension_descriptor packets, even after the
events using them; the typed fields trace_processor reads itself, in its order."""

from __future__ import annotations

from google.protobuf import descriptor_pb2
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.importers.proto.track_event_extensions import TrackEventExtensions
from datasette_perfetto.trace_builder import TraceBuilder

CHROME = TrackEventExtensions().holder  # a message whose fields are ChromeTrackEvent's extensions


def _event(seq, ts: int, track: int, name: str, extensions=None, **fields) -> pb.TracePacket:
    event = pb.TrackEvent(type=pb.TrackEvent.TYPE_INSTANT, track_uuid=track, name=name, **fields)
    if extensions is not None:
        event.MergeFromString(extensions.SerializeToString())  # unknown fields to the perfetto package
    return seq.packet(ts, track_event=event)


def _args(db, name: str) -> list[tuple]:
    return db.rows(
        "SELECT a.flat_key, a.key, a.value_type, a.display_value FROM slice s JOIN args a USING (arg_set_id) "
        "WHERE s.name = ? ORDER BY a.id",
        (name,),
    )


def test_chrome_extension_fields_become_args(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "CrBrowserMain", ts=0)
    chrome = CHROME()
    chrome.chrome_app_state = 1  # an enum: its value's name
    dump = chrome.android_view_dump.activity.add(name="A1")
    dump.view.add(class_name="abc")
    dump.view.add(class_name="def")
    _event(seq, 1000, track, "with extensions", chrome)
    _, db = ingest_data(b.to_bytes())
    assert _args(db, "with extensions") == [
        ("chrome_app_state", "chrome_app_state", "string", "APP_STATE_FOREGROUND"),
        ("android_view_dump.activity.name", "android_view_dump.activity[0].name", "string", "A1"),
        (
            "android_view_dump.activity.view.class_name",
            "android_view_dump.activity[0].view[0].class_name",
            "string",
            "abc",
        ),
        (
            "android_view_dump.activity.view.class_name",
            "android_view_dump.activity[0].view[1].class_name",
            "string",
            "def",
        ),
    ]
    assert db.stat("unknown_extension_fields") == 0


def test_interned_source_location_in_an_extension(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "CrBrowserMain", ts=0)
    chrome = CHROME()
    chrome.chrome_memory_pressure_notification.creation_location_iid = 7
    packet = _event(seq, 1000, track, "pressure", chrome)
    packet.interned_data.source_locations.add(iid=7, file_name="memory.cc", function_name="Notify", line_number=12)
    unresolved = CHROME()
    unresolved.chrome_memory_pressure_notification.creation_location_iid = 8  # never interned: the iid stays
    _event(seq, 2000, track, "unresolved", unresolved)
    _, db = ingest_data(b.to_bytes())
    key = "chrome_memory_pressure_notification"
    assert [row[1:] for row in _args(db, "pressure")] == [
        (f"{key}.file_name", "string", "memory.cc"),
        (f"{key}.function_name", "string", "Notify"),
        (f"{key}.line_number", "int", "12"),  # an int here, a uint for the event's own location
    ]
    assert [row[1:] for row in _args(db, "unresolved")] == [(f"{key}.creation_location_iid", "uint", "8")]


def test_active_processes_extension_lists_processes(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 1, "CrBrowserMain", ts=0)
    chrome = CHROME()
    chrome.active_processes.pid.extend([1, 300])
    _event(seq, 1_000_000_000, track, "ActiveProcesses", chrome)
    _, db = ingest_data(b.to_bytes())
    # The browser sent its descriptor long before; 300 never did.
    assert db.rows(
        "SELECT p.pid FROM experimental_missing_chrome_processes m JOIN process p USING (upid) ORDER BY p.pid"
    ) == [(1,), (300,)]
    assert [row[1] for row in _args(db, "ActiveProcesses")] == ["active_processes.pid[0]", "active_processes.pid[1]"]


def _declaration(number: int, name: str, label: int = 1, **field) -> pb.TracePacket:
    """An extension_descriptor packet declaring one extension of TrackEvent in an unnamed holder message
    (as producers write them), its file also defining Child (a string and debug annotations)."""
    file = descriptor_pb2.FileDescriptorProto(name="app_extensions.proto", package="app")
    file.message_type.add().extension.add(
        name=name, number=number, extendee=".perfetto.protos.TrackEvent", label=label, **field
    )
    child = file.message_type.add(name="Child")
    child.field.add(name="label", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, label=1)
    child.field.add(name="debug_annotations", number=99, type=11, label=3, type_name=".perfetto.protos.DebugAnnotation")
    packet = pb.TracePacket()
    packet.extension_descriptor.extension_set.file.add().MergeFromString(file.SerializeToString())
    return packet


def test_extensions_declared_by_the_trace_after_their_events(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "app", ts=0)
    # Field 5000: a Child message; 5001: repeated ints; 5002: never declared, so dropped and counted.
    child = pb.DebugAnnotation(name="note", string_value="hi")
    raw = (
        b"\xc2\xb8\x02"  # field 5000, length-delimited
        + bytes(
            [len(b"\n\x03top" + b"\x9a\x06" + bytes([len(child.SerializeToString())])) + len(child.SerializeToString())]
        )
        + b"\n\x03top"
        + b"\x9a\x06"
        + bytes([len(child.SerializeToString())])
        + child.SerializeToString()
        + b"\xc8\xb8\x02\x2a"  # field 5001 = 42
        + b"\xc8\xb8\x02\x07"  # field 5001 = 7
        + b"\xd2\xb8\x02\x01x"  # field 5002 = "x"
    )
    event = pb.TrackEvent(type=pb.TrackEvent.TYPE_INSTANT, track_uuid=track, name="app event")
    event.MergeFromString(raw)
    seq.packet(1000, track_event=event)
    b.packets.append(_declaration(5000, "child_ext", type=11, type_name=".app.Child"))
    b.packets.append(_declaration(5001, "numbers", label=3, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32))
    _, db = ingest_data(b.to_bytes())
    assert [row[1:] for row in _args(db, "app event")] == [
        ("child_ext.label", "string", "top"),
        ("child_ext.note", "string", "hi"),  # a DebugAnnotation field is named by the annotation
        ("numbers[0]", "int", "42"),
        ("numbers[1]", "int", "7"),
    ]
    assert db.stat("unknown_extension_fields") == 1


def test_typed_fields_in_trace_processors_order(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "CrBrowserMain", ts=0)
    annotation = pb.DebugAnnotation(name="d", int_value=1)
    packet = _event(
        seq, 1000, track, "interned", source_location_iid=3, correlation_id=99, debug_annotations=[annotation]
    )
    packet.interned_data.source_locations.add(iid=3, file_name="base\\interned.cc", function_name="G")
    _event(seq, 2000, track, "inline", source_location=pb.SourceLocation(file_name="inline.cc", function_name="F"))
    _, db = ingest_data(b.to_bytes())
    assert [row[1:] for row in _args(db, "interned")] == [
        # The interned location, its path with forward slashes and always a line (0 when it has none)...
        ("source.file_name", "string", "base/interned.cc"),
        ("source.function_name", "string", "G"),
        ("source.line_number", "uint", "0"),
        ("correlation_id", "string", "tp:#99"),
        # ... then the fields reflected, then the debug annotations.
        ("source_location_iid", "uint", "3"),
        ("debug.d", "int", "1"),
    ]
    assert [row[1:] for row in _args(db, "inline")] == [
        ("source_location.file_name", "string", "inline.cc"),
        ("source_location.function_name", "string", "F"),
    ]


def test_view_dump_class_names_are_deobfuscated(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "app", ts=0)
    chrome = CHROME()
    activity = chrome.android_view_dump.activity.add(name="A1")
    activity.view.add(class_name="a.b")
    activity.view.add(class_name="unknown")
    _event(seq, 1000, track, "dump", chrome)
    mapping = pb.DeobfuscationMapping(package_name="com.app")
    mapping.obfuscated_classes.add(obfuscated_name="a.b", deobfuscated_name="com.app.MainView")
    other = pb.DeobfuscationMapping(package_name="com.other")  # only the first package is used
    other.obfuscated_classes.add(obfuscated_name="unknown", deobfuscated_name="com.other.View")
    b.packets.append(pb.TracePacket(timestamp=2000, deobfuscation_mapping=mapping))
    b.packets.append(pb.TracePacket(timestamp=2000, deobfuscation_mapping=other))
    _, db = ingest_data(b.to_bytes())
    assert [row[3] for row in _args(db, "dump")] == ["A1", "com.app.MainView", "unknown"]


def test_a_declared_chrome_proto_merges_with_the_bundled_one(ingest_data):
    """Chrome sends its own chrome_track_event.proto: messages already bundled gain what they lack, and a
    newer Chrome's extension of a new type is parsed."""
    file = descriptor_pb2.FileDescriptorProto(
        name="base/tracing/protos/chrome_track_event.proto", package="perfetto.protos"
    )
    newer = file.message_type.add(name="NewerThing")
    newer.field.add(name="label", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, label=1)
    chrome = file.message_type.add(name="ChromeTrackEvent")  # bundled already: merged
    chrome.extension.add(
        name="newer_thing",
        number=1999,
        extendee=".perfetto.protos.TrackEvent",
        label=1,
        type=11,
        type_name=".perfetto.protos.NewerThing",
    )
    b = TraceBuilder()
    declaration = pb.TracePacket()
    declaration.extension_descriptor.extension_set.file.add().MergeFromString(file.SerializeToString())
    b.packets.append(declaration)
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "CrBrowserMain", ts=0)
    known = CHROME()
    known.chrome_app_state = 1
    event = pb.TrackEvent(type=pb.TrackEvent.TYPE_INSTANT, track_uuid=track, name="newer")
    event.MergeFromString(known.SerializeToString() + b"\xfa\x7c\x05\x0a\x03new")  # field 1999 {label: "new"}
    seq.packet(1000, track_event=event)
    _, db = ingest_data(b.to_bytes())
    assert [row[1:] for row in _args(db, "newer")] == [
        ("chrome_app_state", "string", "APP_STATE_FOREGROUND"),
        ("newer_thing.label", "string", "new"),
    ]
    assert db.stat("unknown_extension_fields") == 0


def test_a_thread_events_log_message_is_an_android_log_line(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "CrBrowserMain", ts=0)
    packet = _event(seq, 1000, track, "logged", log_message=pb.LogMessage(body_iid=1, source_location_iid=2, prio=5))
    packet.interned_data.log_message_body.add(iid=1, body="disk full")
    packet.interned_data.source_locations.add(iid=2, file_name="disk.cc", function_name="Write", line_number=7)
    no_prio = _event(seq, 2000, track, "plain", log_message=pb.LogMessage(body_iid=3))
    no_prio.interned_data.log_message_body.add(iid=3, body="hello")
    _, db = ingest_data(b.to_bytes())
    assert db.rows(
        "SELECT l.ts, t.tid, l.prio, l.tag, l.msg FROM android_logs l JOIN thread t USING (utid) ORDER BY l.ts"
    ) == [(1000, 2, 5, "disk.cc:7", "disk full"), (2000, 2, 4, None, "hello")]  # no priority: INFO
    assert [row[1:] for row in _args(db, "logged")] == [
        ("track_event.log_message.message", "string", "disk full"),
        ("track_event.log_message.file_name", "string", "disk.cc"),
        ("track_event.log_message.function_name", "string", "Write"),
        ("track_event.log_message.line_number", "int", "7"),
        ("track_event.priority", "int", "5"),
    ]


def test_gzipped_and_damaged_extension_descriptors(ingest_data):
    import gzip

    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "app", ts=0)
    event = pb.TrackEvent(type=pb.TrackEvent.TYPE_INSTANT, track_uuid=track, name="app event")
    event.MergeFromString(b"\xc8\xb8\x02\x2a")  # field 5001 = 42
    seq.packet(1000, track_event=event)
    plain = _declaration(5001, "numbers", label=3, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32)
    zipped = pb.TracePacket()
    zipped.extension_descriptor.extension_set_gzip = gzip.compress(
        plain.extension_descriptor.extension_set.SerializeToString()
    )
    b.packets.append(pb.TracePacket(extension_descriptor={"extension_set_gzip": b"not gzip at all"}))
    b.packets.append(zipped)
    _, db = ingest_data(b.to_bytes())
    # The damaged one is ignored; the gzipped one declares the field.
    assert [row[1:] for row in _args(db, "app event")] == [("numbers[0]", "int", "42")]
    assert db.stat("unknown_extension_fields") == 0
