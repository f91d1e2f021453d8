"""TranslationTable packets name the hashes some Chrome args carry (trace_processor's ArgsTranslationTable):
a slice's hash arg is kept and followed by the name the trace gives for it."""

from __future__ import annotations

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.importers.common.values import string_map_items
from datasette_perfetto.trace_builder import TraceBuilder


def _slice_with(seq, track: int, ts: int, name: str, **typed) -> None:
    seq.packet(ts, track_event=pb.TrackEvent(type=pb.TrackEvent.TYPE_SLICE_BEGIN, track_uuid=track, name=name, **typed))
    seq.slice_end(ts + 10, track)


def _args(db, slice_name: str) -> list[tuple]:
    return db.rows(
        "SELECT a.key, a.value_type, a.int_value, a.string_value FROM slice s JOIN args a USING (arg_set_id) "
        "WHERE s.name = ? AND a.key NOT LIKE 'event.%' ORDER BY a.id",
        (slice_name,),
    )


def test_hashes_gain_the_names_the_trace_gives(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "main")
    _slice_with(seq, track, 1_000, "h1", chrome_histogram_sample=pb.ChromeHistogramSample(name_hash=10, sample=7))
    _slice_with(seq, track, 2_000, "h2", chrome_histogram_sample=pb.ChromeHistogramSample(name_hash=99))
    _slice_with(seq, track, 3_000, "u1", chrome_user_event=pb.ChromeUserEvent(action_hash=20))
    # The tables come after the slices in the file: they name them all the same (rules are the whole trace's).
    for table in (
        pb.TranslationTable(chrome_histogram=pb.ChromeHistorgramTranslationTable(hash_to_name={10: "Memory.Total"})),
        pb.TranslationTable(chrome_user_event=pb.ChromeUserEventTranslationTable(action_hash_to_name={20: "Back"})),
    ):
        b.packet(timestamp=5_000, trusted_packet_sequence_id=9, translation_table=table)
    _, db = ingest_data(b.to_bytes())
    assert _args(db, "h1") == [
        ("chrome_histogram_sample.name_hash", "uint", 10, None),
        ("chrome_histogram_sample.name", "string", None, "Memory.Total"),
        ("chrome_histogram_sample.sample", "int", 7, None),
    ]
    assert _args(db, "h2") == [("chrome_histogram_sample.name_hash", "uint", 99, None)]  # no name for it
    assert _args(db, "u1") == [
        ("chrome_user_event.action_hash", "uint", 20, None),
        ("chrome_user_event.action", "string", None, "Back"),
    ]


def test_a_trigger_gains_its_study_name(ingest_data):
    b = TraceBuilder()
    b.packet(
        timestamp=1,
        trusted_packet_sequence_id=9,
        translation_table=pb.TranslationTable(chrome_study=pb.ChromeStudyTranslationTable(hash_to_name={30: "study"})),
    )
    b.packet(timestamp=1_000, trusted_packet_sequence_id=2, chrome_trigger=pb.ChromeTrigger(trigger_name_hash=30))
    _, db = ingest_data(b.to_bytes())
    assert db.rows("SELECT key, int_value, string_value FROM args WHERE key GLOB 'chrome_trigger.*' ORDER BY id") == [
        ("chrome_trigger.name_hash", 30, None),
        ("chrome_trigger.name", None, "study"),
    ]


def test_a_key_added_twice_keeps_its_place_and_the_later_value(ingest_data):
    """A histogram sample with its own name after the hash (field order): the translated name takes the
    name's place, and the sample's own name, added after it, wins (trace_processor's add-or-update)."""
    b = TraceBuilder()
    b.packet(
        timestamp=1,
        trusted_packet_sequence_id=9,
        translation_table=pb.TranslationTable(
            chrome_histogram=pb.ChromeHistorgramTranslationTable(hash_to_name={10: "From.Table"})
        ),
    )
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "main")
    sample = pb.ChromeHistogramSample(name_hash=10, name="Own.Name", sample=3)
    _slice_with(seq, track, 1_000, "h", chrome_histogram_sample=sample)
    _, db = ingest_data(b.to_bytes())
    assert _args(db, "h") == [
        ("chrome_histogram_sample.name_hash", "uint", 10, None),
        ("chrome_histogram_sample.name", "string", None, "Own.Name"),
        ("chrome_histogram_sample.sample", "int", 3, None),
    ]


def test_the_first_name_given_for_a_hash_stays(ingest_data):
    b = TraceBuilder()
    for name in ("First", "Second"):
        b.packet(
            timestamp=1,
            trusted_packet_sequence_id=9,
            translation_table=pb.TranslationTable(
                chrome_user_event=pb.ChromeUserEventTranslationTable(action_hash_to_name={20: name})
            ),
        )
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "main")
    _slice_with(seq, track, 1_000, "u", chrome_user_event=pb.ChromeUserEvent(action_hash=20))
    _, db = ingest_data(b.to_bytes())
    assert _args(db, "u")[-1] == ("chrome_user_event.action", "string", None, "First")


def test_integer_keyed_maps_are_read_from_the_wire_when_strings_are_not_utf8():
    table = pb.ChromeHistorgramTranslationTable(hash_to_name={7: "QQQQ", 1 << 40: "ok"})
    broken = pb.ChromeHistorgramTranslationTable.FromString(table.SerializeToString().replace(b"QQQQ", b"\xff\xfeQQ"))
    assert sorted(string_map_items(broken, "hash_to_name")) == [(7, "\\xff\\xfeQQ"), (1 << 40, "ok")]
