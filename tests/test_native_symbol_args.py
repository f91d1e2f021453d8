"""Chrome's mojo methods known by native symbol (trace_processor's MaybeParseUnsymbolizedSourceLocation and
ArgsTranslationTable): a slice's interned method (mapping + rel_pc) is named from the trace's ModuleSymbols,
or kept as raw mapping_id / rel_pc args when no symbol is known."""

from __future__ import annotations

import sqlite3

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.ingest import ingest
from datasette_perfetto.trace_builder import TraceBuilder

PREFIX = "chrome_mojo_event_info.mojo_interface_method.native_symbol"


def _trace(slices: list[tuple[str, pb.ChromeMojoEventInfo]], symbols: dict[int, str]) -> bytes:
    """Slices with mojo event info on one thread; locations iid 1..4 at rel_pc 100..400 of /lib.so; the
    ModuleSymbols packet (for `symbols`: rel_pc -> function name) comes last."""
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    seq.packet(
        1,
        interned_data=pb.InternedData(
            mapping_paths=[pb.InternedString(iid=1, str=b"lib.so")],
            build_ids=[pb.InternedString(iid=2, str=b"bid")],
            mappings=[pb.Mapping(iid=1, path_string_ids=[1], build_id=2)],
            unsymbolized_source_locations=[
                pb.UnsymbolizedSourceLocation(iid=i, mapping_id=1, rel_pc=100 * i) for i in range(1, 5)
            ],
        ),
    )
    track = seq.thread(1, 2, "main")
    for i, (name, info) in enumerate(slices):
        ts = 1_000 * (i + 1)
        seq.packet(
            ts,
            track_event=pb.TrackEvent(
                type=pb.TrackEvent.TYPE_SLICE_BEGIN, track_uuid=track, name=name, chrome_mojo_event_info=info
            ),
        )
        seq.slice_end(ts + 10, track)
    b.packet(
        timestamp=50_000,
        module_symbols=pb.ModuleSymbols(
            path="/lib.so",
            build_id="bid",
            address_symbols=[
                pb.AddressSymbols(address=pc, lines=[pb.Line(function_name="inlined"), pb.Line(function_name=fn)])
                for pc, fn in symbols.items()
            ],
        ),
    )
    return b.to_bytes()


def _args(db, slice_name: str) -> list[tuple]:
    return db.rows(
        "SELECT a.key, a.int_value, a.string_value FROM slice s JOIN args a USING (arg_set_id) "
        "WHERE s.name = ? AND a.key GLOB 'chrome_mojo_event_info.*' ORDER BY a.id",
        (slice_name,),
    )


def test_methods_are_named_from_module_symbols(ingest_data):
    symbols = {
        100: "storage::mojom::Directory::OpenFile_Sym::IPCStableHash",
        200: "storage::mojom::File::Close_Sym::IPCStableHash()",  # Windows-style
        300: "Class::Method",  # too few parts for a tag: kept as is
    }
    slices = [
        ("open", pb.ChromeMojoEventInfo(mojo_interface_method_iid=1, payload_size=5)),
        ("close", pb.ChromeMojoEventInfo(mojo_interface_method_iid=2)),
        ("plain", pb.ChromeMojoEventInfo(mojo_interface_method_iid=3)),
    ]
    _, db = ingest_data(_trace(slices, symbols))
    # The other fields stay where they are; the names come at the end (the last line's function: the
    # least inlined).
    assert _args(db, "open") == [
        ("chrome_mojo_event_info.payload_size", 5, None),
        ("chrome_mojo_event_info.mojo_method_name", None, "storage::mojom::Directory::OpenFile"),
        ("chrome_mojo_event_info.mojo_interface_tag", None, "storage.mojom.Directory"),
    ]
    assert _args(db, "close") == [
        ("chrome_mojo_event_info.mojo_method_name", None, "storage::mojom::File::Close"),
        ("chrome_mojo_event_info.mojo_interface_tag", None, "storage.mojom.File"),
    ]
    assert _args(db, "plain") == [
        ("chrome_mojo_event_info.mojo_method_name", None, "Class::Method"),
        ("chrome_mojo_event_info.mojo_interface_tag", None, "Class::Method"),
    ]
    # One mapping, made for the slices (the sequence's interned mapping outlives it there).
    assert db.rows("SELECT name, build_id FROM stack_profile_mapping") == [("/lib.so", b"bid".hex())]


def test_without_a_symbol_the_raw_location_is_kept(ingest_data):
    slices = [
        ("unknown_pc", pb.ChromeMojoEventInfo(mojo_interface_method_iid=4, is_reply=True)),
        ("unknown_iid", pb.ChromeMojoEventInfo(mojo_interface_method_iid=9)),
    ]
    _, db = ingest_data(_trace(slices, {100: "a::B::C_Sym::IPCStableHash"}))
    (mapping_id,) = db.rows("SELECT id FROM stack_profile_mapping")[0]
    assert _args(db, "unknown_pc") == [
        ("chrome_mojo_event_info.is_reply", 1, None),
        (f"{PREFIX}.mapping_id", mapping_id, None),
        (f"{PREFIX}.rel_pc", 400, None),
    ]
    # An iid the sequence never interned: the iid itself.
    assert _args(db, "unknown_iid") == [("chrome_mojo_event_info.mojo_interface_method_iid", 9, None)]


def test_a_raw_interface_tag_in_the_trace_is_kept(ingest_data):
    slices = [("tagged", pb.ChromeMojoEventInfo(mojo_interface_tag="raw.Tag", mojo_interface_method_iid=1))]
    _, db = ingest_data(_trace(slices, {100: "ns::Iface::Method_Sym::IPCStableHash"}))
    assert _args(db, "tagged") == [
        ("chrome_mojo_event_info.mojo_interface_tag", None, "raw.Tag"),
        ("chrome_mojo_event_info.mojo_method_name", None, "ns::Iface::Method"),
    ]


def test_events_that_are_no_slices_keep_the_location_with_its_mapping_id(ingest_data):
    """Only slices' args are translated; a counter's mojo location keeps mapping_id and rel_pc, the mapping
    given its id (never left as an unresolved value)."""
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    seq.packet(
        1,
        interned_data=pb.InternedData(
            mapping_paths=[pb.InternedString(iid=1, str=b"lib.so")],
            mappings=[pb.Mapping(iid=1, path_string_ids=[1])],
            unsymbolized_source_locations=[pb.UnsymbolizedSourceLocation(iid=1, mapping_id=1, rel_pc=100)],
        ),
    )
    seq.counter_track(77, "ctr")
    seq.packet(
        1_000,
        track_event=pb.TrackEvent(
            type=pb.TrackEvent.TYPE_COUNTER,
            track_uuid=77,
            counter_value=5,
            chrome_mojo_event_info=pb.ChromeMojoEventInfo(mojo_interface_method_iid=1),
        ),
    )
    _, db = ingest_data(b.to_bytes())
    (mapping_id,) = db.rows("SELECT id FROM stack_profile_mapping")[0]
    assert db.rows(
        "SELECT a.key, a.value_type, a.int_value FROM counter c JOIN args a USING (arg_set_id) ORDER BY a.id"
    ) == [(f"{PREFIX}.mapping_id", "uint", mapping_id), (f"{PREFIX}.rel_pc", "uint", 100)]


def test_two_sequences_mappings_stay_apart_when_tokenized_by_two_processes(tmp_path):
    """Two threads of one process on their own sequences, each interning mapping iid 1 (different
    libraries): whichever process tokenizes a sequence, each slice's location keeps its own mapping."""
    b = TraceBuilder()
    for seq_id, tid, lib in ((1, 11, b"a.so"), (2, 12, b"b.so")):
        seq = b.sequence(seq_id, intern=False)
        seq.packet(
            1,
            interned_data=pb.InternedData(
                mapping_paths=[pb.InternedString(iid=1, str=lib)],
                mappings=[pb.Mapping(iid=1, path_string_ids=[1], start=0x1000, end=0x2000)],
                unsymbolized_source_locations=[pb.UnsymbolizedSourceLocation(iid=1, mapping_id=1, rel_pc=7)],
            ),
        )
        track = seq.thread(10, tid, f"t{tid}")
        for i in range(200):
            seq.packet(
                1_000 + 10 * i,
                track_event=pb.TrackEvent(
                    type=pb.TrackEvent.TYPE_INSTANT,
                    track_uuid=track,
                    name=f"m{tid}",
                    chrome_mojo_event_info=pb.ChromeMojoEventInfo(mojo_interface_method_iid=1),
                ),
            )
    path = tmp_path / "t.pftrace"
    path.write_bytes(b.to_bytes())
    for split in (False, True):
        db_path = tmp_path / f"split{split}.db"
        ingest([str(path)], str(db_path), split_tokenize=split)
        rows = sqlite3.connect(db_path).execute(
            "SELECT DISTINCT s.name, m.name FROM slice s JOIN args a USING (arg_set_id) "
            f"JOIN stack_profile_mapping m ON m.id = a.int_value WHERE a.key = '{PREFIX}.mapping_id' ORDER BY 1"
        )
        assert rows.fetchall() == [("m11", "/a.so"), ("m12", "/b.so")], split
