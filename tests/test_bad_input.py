"""ingest() on damaged, hostile and mislabelled input: clean errors or counted damage, never a crash."""

from __future__ import annotations

import gzip
import random
import tracemalloc
import zlib

import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.ingest import IngestError, ingest
from datasette_perfetto.trace_builder import SEQ_NEEDS_INCREMENTAL_STATE, TraceBuilder

TE = pb.TrackEvent
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(17)


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def packet_offsets(data: bytes) -> list[int]:
    """Offset of each top-level field-1 (packet) record in a Trace."""
    offsets, pos = [], 0
    while pos < len(data):
        offsets.append(pos)
        assert data[pos] == 0x0A
        pos += 1
        length = shift = 0
        while True:
            b = data[pos]
            pos += 1
            length |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        pos += length
    return offsets


def middle_packet(data: bytes) -> tuple[int, int]:
    """(start, end) of a packet in the middle of the trace."""
    offsets = packet_offsets(data)
    i = len(offsets) // 2
    return offsets[i], offsets[i + 1]


def packets_record(payload: bytes) -> bytes:
    return b"\x0a" + varint(len(payload)) + payload


def compressed_block(inner_trace: bytes) -> bytes:
    return pb.Trace(packet=[pb.TracePacket(compressed_packets=inner_trace)]).SerializeToString()


def assert_clean_failure(excinfo, path, problem: str) -> None:
    message = str(excinfo.value)
    assert "\n" not in message
    assert str(path) in message
    assert problem in message


def failing_inputs(tmp_path, demo_bytes) -> dict[str, tuple[list, str]]:
    """name -> (input files, problem named in the error)."""
    cases = {
        "random bytes": (random.Random(0).randbytes(4096), "not a recognised trace format"),
        "random bytes after a packet tag": (b"\x0a" + random.Random(1).randbytes(4096), "no readable data"),
        "text": (b"hello, world\nthis is not a trace\n", "not a recognised trace format"),
        "empty": (b"", "empty file"),
        "png": (PNG, "not a recognised trace format"),
        "corrupt first length": (demo_bytes[:1] + b"\xff" * 10 + demo_bytes[11:], "not a recognised trace format"),
        # Starts like JSON but holds no event a JSON trace could have.
        "json": (b"{not json at all", "no readable data"),
        "corrupt gzip": (b"\x1f\x8b" + b"not deflate" * 10, "corrupt gzip data"),
        "gzip cut in its header": (gzip.compress(demo_bytes, mtime=0)[:12], "gzip file holds no data"),
    }
    out = {}
    for name, (data, problem) in cases.items():
        path = tmp_path / "in" / (name.replace(" ", "-") + ".pftrace")
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        out[name] = ([str(path)], problem)
    out["missing input"] = ([str(tmp_path / "in" / "missing.pftrace")], "cannot open")
    # The second of two inputs fails: nothing from the first may be written either.
    good = tmp_path / "in" / "good.pftrace"
    good.write_bytes(demo_bytes)
    out["second input bad"] = ([str(good), out["text"][0][0]], "not a recognised trace format")
    return out


FAILURES = [
    "random bytes",
    "random bytes after a packet tag",
    "text",
    "empty",
    "png",
    "corrupt first length",
    "json",
    "corrupt gzip",
    "gzip cut in its header",
    "missing input",
    "second input bad",
]


@pytest.mark.parametrize("case", FAILURES)
def test_unusable_input_fails_cleanly(tmp_path, demo_bytes, case):
    paths, problem = failing_inputs(tmp_path, demo_bytes)[case]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with pytest.raises(IngestError) as excinfo:
        ingest(paths, str(out_dir / "trace.db"))
    assert_clean_failure(excinfo, paths[-1], problem)
    assert list(out_dir.iterdir()) == []  # no database, no .ingest-*.db temp files


@pytest.mark.parametrize("case", ["text", "json", "gzip cut in its header", "second input bad"])
def test_failed_ingest_leaves_existing_database_untouched(tmp_path, demo_bytes, demo_db, case):
    paths, _ = failing_inputs(tmp_path, demo_bytes)[case]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    existing = out_dir / "trace.db"
    existing.write_bytes(demo_db.path.read_bytes())
    before = existing.read_bytes()
    with pytest.raises(IngestError):
        ingest(paths, str(existing))
    assert existing.read_bytes() == before
    assert [p.name for p in out_dir.iterdir()] == ["trace.db"]


def test_output_in_missing_directory_fails_cleanly(tmp_path, demo_trace):
    target = tmp_path / "no-such-dir" / "trace.db"
    with pytest.raises(IngestError) as excinfo:
        ingest([str(demo_trace)], str(target))
    assert_clean_failure(excinfo, target, "does not exist")
    assert not target.parent.exists()


def test_format_is_detected_by_content_not_name(ingest_data, demo_bytes, demo_counts):
    _, db = ingest_data(demo_bytes, "actually-proto.json")
    assert db.counts() == demo_counts
    assert db.one("SELECT str_value FROM metadata WHERE name = 'trace_type'") == "proto"


def test_gzipped_trace_imports_like_plain(ingest_data, demo_bytes, demo_counts):
    summaries, db = ingest_data(gzip.compress(demo_bytes, mtime=0), "demo.pftrace.gz")
    assert summaries[0].problems == []
    assert db.counts() == demo_counts


# -- damage inside a proto trace: import what is valid, count the rest ------------------------


@pytest.mark.parametrize("where", ["inside the packet", "inside the length varint"])
def test_truncated_trace_imports_the_complete_packets(ingest_data, demo_bytes, demo_counts, where):
    start, end = middle_packet(demo_bytes)
    cut = (start + end) // 2 if where == "inside the packet" else start + 1
    _, prefix_db = ingest_data(demo_bytes[:start], "prefix.pftrace")
    summaries, db = ingest_data(demo_bytes[:cut])
    assert 0 < db.count("slice") < demo_counts["slice"]
    assert db.counts() == prefix_db.counts()
    assert db.stat("proto_tokenizer_truncated_packet") == 1
    assert summaries[0].problems == [("proto_tokenizer_truncated_packet", 1)]


def test_truncated_gzip_imports_what_was_compressed_before_the_cut(ingest_data, demo_bytes, demo_counts):
    summaries, db = ingest_data(gzip.compress(demo_bytes, mtime=0)[:5000], "cut.pftrace.gz")
    assert 0 < db.count("slice") < demo_counts["slice"]
    assert db.stat("compressed_file_truncated") == 1
    assert ("compressed_file_truncated", 1) in summaries[0].problems


@pytest.mark.parametrize("damage", ["length 0xFF*10", "wire type 7", "field number 0"])
def test_corrupt_framing_imports_the_packets_before_it(ingest_data, demo_bytes, demo_counts, damage):
    start, _ = middle_packet(demo_bytes)
    replacement = {"length 0xFF*10": b"\x0a" + b"\xff" * 10, "wire type 7": b"\x0f", "field number 0": b"\x02"}[damage]
    data = demo_bytes[:start] + replacement + demo_bytes[start + len(replacement) :]
    _, prefix_db = ingest_data(demo_bytes[:start], "prefix.pftrace")
    _, db = ingest_data(data)
    assert 0 < db.count("slice") < demo_counts["slice"]
    assert db.counts() == prefix_db.counts()
    assert db.stat("proto_tokenizer_corrupt_data") == 1
    assert db.stat("proto_tokenizer_truncated_packet") == 0


@pytest.mark.parametrize(
    "garbage", [b"\xff\xff\xff", b"\x0f", b"\x12\x05ab"], ids=["unterminated varint", "wire type 7", "length past end"]
)
def test_undecodable_packet_is_counted_and_skipped(ingest_data, demo_bytes, demo_counts, garbage):
    start, _ = middle_packet(demo_bytes)
    _, db = ingest_data(demo_bytes[:start] + packets_record(garbage) + demo_bytes[start:])
    assert db.stat("proto_packet_parse_errors") == 1
    assert db.counts() == demo_counts


# -- compressed_packets (TracePacket field 50) ----------------------------------------------


def test_compressed_packets_import_like_plain(ingest_data, demo_bytes, demo_counts):
    summaries, db = ingest_data(compressed_block(zlib.compress(demo_bytes)))
    assert summaries[0].problems == []
    assert db.counts() == demo_counts


@pytest.mark.parametrize("block", ["not zlib", "truncated zlib stream"])
def test_damaged_compressed_block_is_counted_and_dropped(ingest_data, demo_bytes, demo_counts, block):
    compressed = zlib.compress(demo_bytes)
    payload = b"this is not zlib data" if block == "not zlib" else compressed[: len(compressed) // 2]
    _, db = ingest_data(demo_bytes + compressed_block(payload))
    assert db.stat("compressed_packets_errors") == 1
    assert db.counts() == demo_counts  # nothing from the damaged block


def test_zip_bomb_is_dropped_with_bounded_memory(ingest_data, demo_bytes, demo_counts):
    inflated_size = 200 << 20
    deflater = zlib.compressobj(9)
    zeros = bytes(1 << 20)
    bomb = b"".join(deflater.compress(zeros) for _ in range(inflated_size >> 20)) + deflater.flush()
    assert len(bomb) < 1 << 20
    tracemalloc.start()
    try:
        _, db = ingest_data(demo_bytes + compressed_block(bomb))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert db.stat("compressed_packets_errors") == 1
    assert db.counts() == demo_counts
    assert peak < inflated_size  # the block was never inflated in full


# -- incremental state --------------------------------------------------------------------


def main_thread_sequence():
    """A builder with one sequence describing thread 1 ("main"): (builder, sequence, track uuid)."""
    builder = TraceBuilder()
    seq = builder.sequence(1)
    return builder, seq, seq.thread(1, 1, "main", ts=100)


def slices(db) -> list[tuple]:
    return db.rows("SELECT ts, name, category FROM slice ORDER BY ts")


def test_unknown_interned_ids_are_counted_and_the_events_kept(ingest_data):
    builder, seq, track = main_thread_sequence()
    seq.slice_begin(1000, track, "known")
    seq.slice_end(2000, track)
    seq.packet(3000, track_event=TE(type=TE.TYPE_SLICE_BEGIN, track_uuid=track, name_iid=99))
    seq.packet(4000, track_event=TE(type=TE.TYPE_SLICE_END, track_uuid=track))
    seq.packet(5000, track_event=TE(type=TE.TYPE_INSTANT, track_uuid=track, name="named", category_iids=[7]))
    _, db = ingest_data(builder.to_bytes())
    # As trace_processor: a failed interned lookup gives a NULL name / "unknown(iid)"
    # category and counts interned_data_tokenizer_errors once per lookup.
    assert slices(db) == [(1000, "known", None), (3000, None, None), (5000, "named", "unknown(7)")]
    assert db.stat("interned_data_tokenizer_errors") == 2


def test_packets_needing_state_are_skipped_after_packet_loss(ingest_data):
    builder, seq, track = main_thread_sequence()
    seq.slice_begin(1000, track, "before loss")
    seq.slice_end(2000, track)
    seq.slice_begin(3000, track, "after loss").previous_packet_dropped = 1
    seq.slice_end(4000, track)
    seq.clear_incremental_state()
    seq.slice_begin(5000, track, "after clear")
    seq.slice_end(6000, track)
    _, db = ingest_data(builder.to_bytes())
    assert slices(db) == [(1000, "before loss", None), (5000, "after clear", None)]
    assert db.stat("packet_skipped_seq_needs_incremental_state_invalid") == 2


def test_packets_needing_state_are_skipped_before_the_first_clear(ingest_data):
    # trace_processor treats a sequence's incremental state as invalid until its
    # first incremental_state_cleared: the start of the sequence may have been lost.
    builder = TraceBuilder()
    builder.packet(
        trusted_packet_sequence_id=7,
        timestamp=100,
        sequence_flags=SEQ_NEEDS_INCREMENTAL_STATE,
        track_event=TE(type=TE.TYPE_INSTANT, name="orphan"),
    )
    seq = builder.sequence(1)
    seq.instant(200, seq.thread(1, 1, "main", ts=100), "ok")
    _, db = ingest_data(builder.to_bytes())
    assert slices(db) == [(200, "ok", None)]
    assert db.stat("packet_skipped_seq_needs_incremental_state_invalid") == 1


# -- fuzzing: whatever the damage, a clean error or an import, never a crash ----------------


@pytest.mark.parametrize("seed", range(60))
def test_randomly_damaged_traces_never_crash(tmp_path, demo_bytes, seed):
    rng = random.Random(seed)
    data = bytearray(demo_bytes)
    for _ in range(rng.randint(1, 20)):
        kind = rng.random()
        pos = rng.randrange(len(data))
        if kind < 0.5:
            data[pos] = rng.randrange(256)  # flip a byte
        elif kind < 0.75:
            del data[pos : pos + rng.randint(1, 64)]  # drop a run
        else:
            data[pos:pos] = rng.randbytes(rng.randint(1, 64))  # insert garbage
    path = tmp_path / "fuzzed.pftrace"
    path.write_bytes(bytes(data))
    out = tmp_path / "out.db"
    try:
        summaries = ingest([str(path)], str(out))
    except IngestError as e:
        assert "\n" not in str(e) and str(path) in str(e)
        assert not out.exists()
    else:
        assert out.exists() and summaries[0].trace_type == "proto"


def test_names_that_are_not_utf8_are_kept_escaped(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "QQQQthread")
    seq.slice_begin(1_000, track, "PPPPslice", category="CCCCcat", args={"k": "VVVVvalue"})
    seq.slice_end(2_000, track)
    data = b.to_bytes()
    for marker in (b"QQQQ", b"PPPP", b"CCCC", b"VVVV"):
        data = data.replace(marker, b"\xff\xfe\xfd\xfc")  # same length: framing stays valid
    _, db = ingest_data(data)
    assert db.rows("SELECT name, category FROM slice") == [("\\xff\\xfe\\xfd\\xfcslice", "\\xff\\xfe\\xfd\\xfccat")]
    assert db.one("SELECT name FROM thread WHERE tid = 2") == "\\xff\\xfe\\xfd\\xfcthread"
    assert db.one("SELECT string_value FROM args WHERE key = 'debug.k'") == "\\xff\\xfe\\xfd\\xfcvalue"


def test_translation_table_strings_that_are_not_utf8_are_kept_escaped(ingest_data):
    """upb raises on iterating a map whose strings are not UTF-8 (found by the fuzzer): the table is read from
    its wire format instead, and the renamed slice keeps its bytes, escaped."""
    b = TraceBuilder()
    b.packet(
        timestamp=500,
        trusted_packet_sequence_id=9,
        translation_table=pb.TranslationTable(
            slice_name=pb.SliceNameTranslationTable(raw_to_deobfuscated_name={"RRRRraw": "DDDDnice"})
        ),
    )
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "main")
    seq.slice_begin(1_000, track, "RRRRraw")
    seq.slice_end(2_000, track)
    data = b.to_bytes().replace(b"RRRR", b"\xff\xfe\xfd\xfc").replace(b"DDDD", b"\xe1\x80zz")
    _, db = ingest_data(data)
    assert db.rows("SELECT name FROM slice") == [("\\xe1\\x80zznice",)]
