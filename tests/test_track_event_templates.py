"""The tokenizer's decode cache for track events that differ only in their per-event values
(flow ids, extra counter values): such an event reuses an earlier one's decoding (its
"template", track_event_tokenizer.split_volatile_fields) and must tokenize exactly as if it
had been decoded whole."""

from __future__ import annotations

import itertools

import pytest
from conftest import FunctionsDB
from database_rows import assert_same_database
from google.protobuf import text_format
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from shared_data import TRACES

from datasette_perfetto.importers.proto import track_event_tokenizer
from datasette_perfetto.importers.proto.reader import ProtoReader, scan_simple_track_event
from datasette_perfetto.importers.proto.track_event_tokenizer import split_volatile_fields
from datasette_perfetto.ingest import ingest
from datasette_perfetto.stats import Stats
from datasette_perfetto.trace_builder import TraceBuilder

VOLATILE = ("extra_counter_values", "flow_ids", "terminating_flow_ids")


def without_volatile(event: pb.TrackEvent) -> pb.TrackEvent:
    copy = pb.TrackEvent()
    copy.CopyFrom(event)
    for name in VOLATILE:
        copy.ClearField(name)
    return copy


def test_split_takes_out_exactly_the_per_event_values_of_real_events():
    events = []
    with open(TRACES / "chrome_startup.pftrace", "rb") as f:
        for data in itertools.islice(ProtoReader(f, Stats()).packets(), 30_000):
            simple = scan_simple_track_event(data)
            if simple is not None:
                events.append(simple[3])
    split = 0
    for raw in events:
        event = pb.TrackEvent.FromString(raw)
        result = split_volatile_fields(raw)
        if result is None:
            assert not any(len(getattr(event, name)) for name in VOLATILE)
            continue
        split += 1
        rest, extra, flows, term = result
        assert pb.TrackEvent.FromString(rest) == without_volatile(event)
        assert (extra or [], flows or [], term or []) == (
            list(event.extra_counter_values),
            list(event.flow_ids),
            list(event.terminating_flow_ids),
        )
    assert split > len(events) // 2  # Chromium's events carry their thread time as an extra counter


def test_split_keeps_field_order_and_signed_values():
    event = pb.TrackEvent(name="a", type=pb.TrackEvent.TYPE_INSTANT)
    event.extra_counter_values.extend([-4, 2**40])
    event.flow_ids.extend([7, 2**64 - 1])
    event.terminating_flow_ids.append(3)
    event.flow_ids_old.append(9)  # the deprecated field stays in the template
    raw = event.SerializeToString()
    rest, extra, flows, term = split_volatile_fields(raw)
    assert (extra, flows, term) == ([-4, 2**40], [7, 2**64 - 1], [3])
    assert pb.TrackEvent.FromString(rest) == without_volatile(event)
    assert list(pb.TrackEvent.FromString(rest).flow_ids_old) == [9]


@pytest.mark.parametrize(
    "raw",
    [
        pb.TrackEvent(name="no per-event values").SerializeToString(),
        b"\x62\x02\x01\x02",  # extra_counter_values packed
        b"\xfa\x02\x08" + (5).to_bytes(8, "little"),  # flow_ids packed
        b"\xf9\x02\x01\x02",  # a flow id cut short
        b"\x60",  # an extra value missing
        b"\x60\x01\x0a\x05ab",  # a name longer than what is left
        b"\x67",  # wire type 7 does not exist
    ],
)
def test_split_declines_what_it_cannot_take_out_exactly(raw):
    assert split_volatile_fields(raw) is None


def descriptor(uuid: int, body: str) -> str:
    return f"packet {{ trusted_packet_sequence_id: 1 timestamp: 0 track_descriptor {{ uuid: {uuid} {body} }} }}"


def event(ts: int, body: str) -> str:
    return f"packet {{ trusted_packet_sequence_id: 1 sequence_flags: 2 timestamp: {ts} track_event {{ {body} }} }}"


def interned(names: str) -> str:
    return f"packet {{ trusted_packet_sequence_id: 1 sequence_flags: 2 timestamp: 1 interned_data {{ {names} }} }}"


def template_trace() -> TraceBuilder:
    """Events that repeat but for their flow ids and extra counter values, on an incremental and
    a plain counter; deprecated flow ids beside new ones; a name interned only after its first use."""
    task = "name_iid: 1 category_iids: 1 extra_counter_track_uuids: 20"
    late = "extra_counter_track_uuids: 21 extra_counter_values: 1"
    lines = [
        descriptor(1, 'process { pid: 5 process_name: "Browser" }'),
        descriptor(2, 'parent_uuid: 1 thread { pid: 5 tid: 6 thread_name: "Main" }'),
        descriptor(20, 'parent_uuid: 2 name: "thread_time" counter { unit_multiplier: 1000 is_incremental: true }'),
        descriptor(21, 'parent_uuid: 2 name: "plain" counter { }'),
        "packet { trusted_packet_sequence_id: 1 sequence_flags: 1 timestamp: 1 "
        'interned_data { event_names { iid: 1 name: "Task" } event_categories { iid: 1 name: "toplevel" } } '
        "trace_packet_defaults { track_event_defaults { track_uuid: 2 } } }",
    ]
    for i in range(6):
        ts = 100 + 20 * i
        term = f"terminating_flow_ids: {1000 + i - 1}" if i else ""
        lines.append(event(ts, f"type: TYPE_SLICE_BEGIN {task} flow_ids: {1000 + i} extra_counter_values: {5 + i}"))
        lines.append(event(ts + 5, f"type: TYPE_INSTANT {task} {term} extra_counter_values: {i}"))
        lines.append(event(ts + 10, f"type: TYPE_SLICE_END extra_counter_track_uuids: 20 extra_counter_values: {3}"))
    lines += [
        event(
            300,
            "type: TYPE_INSTANT name_iid: 1 flow_ids_old: 7 flow_ids: 8 extra_counter_track_uuids: 20 extra_counter_values: -2",
        ),
        event(310, "type: TYPE_INSTANT name_iid: 1 flow_ids_old: 7 terminating_flow_ids: 8"),
        event(320, "type: TYPE_INSTANT name_iid: 1 extra_counter_track_uuids: 21 extra_counter_values: -4"),
        event(330, "type: TYPE_INSTANT name_iid: 1 extra_counter_track_uuids: 21 extra_counter_values: 6"),
        # Not interned yet, so not remembered, neither as a template nor as these exact bytes.
        event(340, f"type: TYPE_INSTANT name_iid: 2 {late}"),
        interned('event_names { iid: 2 name: "Late" }'),
        event(345, f"type: TYPE_INSTANT name_iid: 2 {late}"),
        event(350, "type: TYPE_INSTANT name_iid: 2 flow_ids: 51"),
        event(360, "type: TYPE_INSTANT name_iid: 2 terminating_flow_ids: 51"),
    ]
    b = TraceBuilder()
    b.packets.extend(text_format.Parse("\n".join(lines), pb.Trace()).packet)
    return b


@pytest.fixture
def template_uses(monkeypatch) -> list:
    """Records the template each split event was decoded from (the bytes without its values)."""
    uses: list[bytes] = []
    split = track_event_tokenizer.split_volatile_fields

    def recording(raw):
        result = split(raw)
        if result is not None:
            uses.append(result[0])
        return result

    monkeypatch.setattr(track_event_tokenizer, "split_volatile_fields", recording)
    return uses


def ingest_twice(tmp_path, trace_path, monkeypatch, uses):
    with_templates = tmp_path / "templates.db"
    ingest([str(trace_path)], str(with_templates), split_tokenize=False)
    assert uses  # events were split
    monkeypatch.setattr(track_event_tokenizer, "split_volatile_fields", lambda raw: None)
    whole = tmp_path / "whole.db"
    ingest([str(trace_path)], str(whole), split_tokenize=False)
    return with_templates, whole


def test_events_from_a_template_import_as_if_decoded_whole(tmp_path, monkeypatch, template_uses):
    path = template_trace().write(tmp_path / "t.pftrace")
    with_templates, whole = ingest_twice(tmp_path, path, monkeypatch, template_uses)
    assert len(template_uses) > len(set(template_uses))  # some template served more than one event
    assert_same_database(with_templates, whole)
    db = FunctionsDB(with_templates)
    # Each event kept its own values: thread time accumulates per event, flows link their own slices.
    assert db.rows(
        "SELECT c.value FROM counter c JOIN counter_track t ON t.id = c.track_id "
        "WHERE t.name = 'thread_time' ORDER BY c.ts LIMIT 4"
    ) == [(5000.0,), (5000.0,), (8000.0,), (14000.0,)]
    assert db.rows(
        "SELECT c.value FROM counter c JOIN counter_track t ON t.id = c.track_id WHERE t.name = 'plain' ORDER BY c.ts"
    ) == [(-4.0,), (6.0,), (1.0,), (1.0,)]
    assert db.rows("SELECT ts, name FROM slice WHERE ts IN (340, 345) ORDER BY ts") == [(340, None), (345, "Late")]
    assert db.rows(
        "SELECT o.name, o.ts, i.name, i.ts FROM flow f JOIN slice o ON o.id = f.slice_out "
        "JOIN slice i ON i.id = f.slice_in ORDER BY o.ts, i.ts"
    ) == [("Task", 100 + 20 * i, "Task", 125 + 20 * i) for i in range(5)] + [
        ("Task", 300, "Task", 310),
        ("Late", 350, "Late", 360),
    ]


def test_the_demo_trace_imports_the_same_from_templates(tmp_path, monkeypatch, template_uses, demo_trace):
    with_templates, whole = ingest_twice(tmp_path, demo_trace, monkeypatch, template_uses)
    assert_same_database(with_templates, whole)
