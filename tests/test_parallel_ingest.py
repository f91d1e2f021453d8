"""Ingest on two cores: SQLite writes in a child process (writer.py) and proto traces tokenized
by a forked helper that takes some packet sequences (importers/proto/split_tokenize.py).

Large inputs use both by default; these tests force them on for small traces too, and check that
the database is the one a single process writes, row for row, and that every failure of the extra
processes ends as the single-process import or as a clean error.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from conftest import kept_and_defined
from database_rows import assert_same_database, table_rows
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from shared_data import CASES, TRACES

from datasette_perfetto import ingest as ingest_module
from datasette_perfetto import schema, writer
from datasette_perfetto.conformance import load_passing_list, run_case
from datasette_perfetto.importers.proto import importer as proto_importer
from datasette_perfetto.importers.proto import split_tokenize
from datasette_perfetto.importers.proto.sequence_state import SequenceState
from datasette_perfetto.importers.proto.track_descriptor import CounterDetails, Reservation
from datasette_perfetto.ingest import IngestError, ingest
from datasette_perfetto.trace_builder import TraceBuilder

HERE = Path(__file__).parent
CHROME = TRACES / "chrome_startup.pftrace"
PARALLEL = {"separate_writer": True, "split_tokenize": True}
SERIAL = {"separate_writer": False, "split_tokenize": False}


@pytest.fixture(scope="module")
def chrome_pair(tmp_path_factory) -> tuple[Path, Path]:
    """chrome_startup.pftrace ingested by one process and by three."""
    folder = tmp_path_factory.mktemp("parallel")
    serial, parallel = folder / "serial.db", folder / "parallel.db"
    ingest([str(CHROME)], str(serial), **SERIAL)
    ingest([str(CHROME)], str(parallel), **PARALLEL)
    return serial, parallel


def test_real_trace_gives_the_same_database_either_way(chrome_pair):
    serial, parallel = chrome_pair
    assert_same_database(serial, parallel)
    assert table_rows(parallel)["slice"].__len__() == 136_512


@pytest.fixture
def shares(monkeypatch) -> dict:
    """Filled by the next split import: "helper", the events its helper tokenized."""
    seen = {}
    original = split_tokenize.HelperHandle.result

    def result(self):
        stats, misses, runs, count = original(self)
        seen["helper"] = count
        return stats, misses, runs, count

    monkeypatch.setattr(split_tokenize.HelperHandle, "result", result)
    return seen


def test_the_helper_really_took_a_share(tmp_path, monkeypatch, shares):
    """Both processes tokenized track events (which sequences each took depends on timing)."""
    original_parse = proto_importer.ProtoImporter.parse_all

    def parse_all(self, progress):
        shares["all"] = self.sorter.count
        return original_parse(self, progress)

    monkeypatch.setattr(proto_importer.ProtoImporter, "parse_all", parse_all)
    ingest([str(CHROME)], str(tmp_path / "x.db"), **PARALLEL)
    assert shares["all"] > 245_446  # every track event, and the other packets' events
    assert 0.1 < shares["helper"] / shares["all"] < 0.9


@pytest.mark.parametrize("derived", [d for d in schema.DERIVED if d.streamed], ids=lambda d: d.name)
def test_streamed_aggregates_equal_their_sql(chrome_pair, derived):
    """On the real trace, with many slices per name (test_report_tables.py checks them on more traces)."""
    kept, defined = kept_and_defined(chrome_pair[1], derived)
    assert len(kept) > 100
    assert kept == defined


def test_trace_bounds_equal_their_sql(chrome_pair):
    conn = sqlite3.connect(chrome_pair[1])
    try:
        kept = conn.execute("SELECT start_ts, end_ts FROM trace_bounds").fetchone()
        computed = conn.execute("""SELECT min(s), max(e) FROM (
            SELECT min(ts) AS s, max(ts + max(dur, 0)) AS e FROM slice
            UNION ALL SELECT min(ts), max(ts) FROM counter)""").fetchone()
    finally:
        conn.close()
    assert kept == computed


PROTO_CASES = [
    c
    for c in load_passing_list(str(HERE / "conformance_passing.txt"))
    if (CASES / c / "trace.pb").exists() and (c.startswith("parser.track_event") or c.startswith("tables"))
]


@pytest.mark.parametrize("case_id", PROTO_CASES)
def test_conformance_cases_pass_with_both_processes_forced(case_id, tmp_path):
    result = run_case(str(CASES / case_id), str(tmp_path), **PARALLEL)
    assert result.passed, result.reason


def streaming_profile_after_track_events() -> bytes:
    """Sequence 2 has track events, then streaming profile samples, whose delta timestamps
    continue the track events' own."""
    b = TraceBuilder()
    busy = b.sequence(1)
    busy.process(10, "app")
    main = busy.thread(10, 11, "main")
    for i in range(50):
        busy.slice_begin(1_000 + i * 100, main, "Busy")
        busy.slice_end(1_050 + i * 100, main)
    shared = b.sequence(2)
    worker = shared.thread(10, 12, "worker")
    shared.slice_begin(500, worker, "Work")
    shared.slice_end(900, worker)
    shared.packet(1_000, streaming_profile_packet=pb.StreamingProfilePacket(callstack_iid=[1], timestamp_delta_us=[5]))
    return b.to_bytes()


@pytest.fixture
def attempts(monkeypatch) -> list:
    """The split_tokenize setting of each import ingest() attempts."""
    seen = []
    original = ingest_module._ingest

    def recording(paths, db_path, progress, separate_writer, split_tokenize, *rest):
        seen.append(split_tokenize)
        return original(paths, db_path, progress, separate_writer, split_tokenize, *rest)

    monkeypatch.setattr(ingest_module, "_ingest", recording)
    return seen


def test_a_sequence_both_processes_need_falls_back_to_one_process(tmp_path, attempts, monkeypatch):
    # Who claims a sequence depends on timing; here the helper is always first to sequence 2.
    monkeypatch.setattr(
        split_tokenize.SequenceClaims,
        "claim",
        lambda self, seq_id, process, shareable=False: split_tokenize.HELPER if seq_id == 2 else split_tokenize.MAIN,
    )
    path = tmp_path / "t.pftrace"
    path.write_bytes(streaming_profile_after_track_events())
    ingest([str(path)], str(tmp_path / "parallel.db"), **PARALLEL)
    assert attempts == [True, False]
    ingest([str(path)], str(tmp_path / "serial.db"), **SERIAL)
    assert_same_database(tmp_path / "serial.db", tmp_path / "parallel.db")


def one_sequence_trace(late: str | None = None, incremental_clock: bool = False, slices: int = 3_000) -> bytes:
    """Everything on one sequence, as trace converters often write it: slices with args on four threads
    and a counter, nothing one event leaves for the next; `late`: near the end, one event that does need
    what earlier events left (the sequence's events were shared by the two processes by then)."""
    b = TraceBuilder()
    seq = b.sequence(1, use_incremental_clock=incremental_clock)
    seq.process(10, "app")
    threads = [seq.thread(10, 11 + i, f"t{i}") for i in range(4)]
    gauge = seq.counter_track(500, "gauge")
    total = seq.counter_track(501, "total", is_incremental=True)
    ts = 1_000
    for i in range(slices):
        if i % 10 == 0:
            seq.counter(ts, gauge, i * 0.5)
        seq.slice_begin(ts, threads[i % 4], f"work{i % 7}", args={"i": i})
        seq.slice_end(ts + 50, threads[i % 4])
        ts += 100
    if late == "incremental counter":
        seq.counter(ts, total, 5)
        seq.counter(ts + 10, total, 7)
    elif late == "delta timestamp":
        event = pb.TrackEvent(type=pb.TrackEvent.TYPE_INSTANT, track_uuid=threads[0], name="delta")
        event.timestamp_delta_us = 3
        seq.packet(None, track_event=event)
    elif late == "thread time delta":
        seq.instant(ts, threads[1], "timed").track_event.thread_time_delta_us = 7
    elif late == "incremental extra counter":
        event = seq.instant(ts, threads[2], "counted").track_event
        event.extra_counter_track_uuids.append(total)
        event.extra_counter_values.append(3)
    return b.to_bytes()


@pytest.mark.parametrize("incremental_clock", [False, True], ids=["absolute", "incremental clock"])
def test_one_sequence_is_shared_by_the_two_processes(tmp_path, attempts, shares, incremental_clock):
    """A sequence whose events leave nothing for the next is tokenized by both processes, by turns of
    packets: each took a share, and the database is the single process's."""
    path = tmp_path / "t.pftrace"
    path.write_bytes(one_sequence_trace(incremental_clock=incremental_clock))
    ingest([str(path)], str(tmp_path / "parallel.db"), **PARALLEL)
    assert attempts == [True]
    ingest([str(path)], str(tmp_path / "serial.db"), **SERIAL)
    assert_same_database(tmp_path / "serial.db", tmp_path / "parallel.db")
    assert len(table_rows(tmp_path / "parallel.db")["slice"]) == 3_000
    assert 0.3 < shares["helper"] / 6_300 < 0.7  # 6,000 slice events and 300 counter values


@pytest.mark.parametrize(
    "late", ["incremental counter", "delta timestamp", "thread time delta", "incremental extra counter"]
)
def test_a_shared_sequence_that_needs_order_after_all_falls_back_to_one_process(tmp_path, attempts, late):
    path = tmp_path / "t.pftrace"
    path.write_bytes(one_sequence_trace(late))
    ingest([str(path)], str(tmp_path / "parallel.db"), **PARALLEL)
    assert attempts == [True, False]
    ingest([str(path)], str(tmp_path / "serial.db"), **SERIAL)
    assert_same_database(tmp_path / "serial.db", tmp_path / "parallel.db")


def test_a_process_stops_when_the_other_found_the_split_impossible(tmp_path, attempts, monkeypatch):
    """Each process looks at the shared flag every 16,384 packets: the importer gives up at its first look
    (the fallback then imports in one process), not after reading the whole file."""
    monkeypatch.setattr(split_tokenize.SequenceClaims, "failed", property(lambda self: True))
    read = []
    original = proto_importer.ProtoImporter.parse_all

    def parse_all(self, progress):
        read.append(self.packet_index)
        return original(self, progress)

    monkeypatch.setattr(proto_importer.ProtoImporter, "parse_all", parse_all)
    path = tmp_path / "t.pftrace"
    path.write_bytes(one_sequence_trace(slices=9_000))
    ingest([str(path)], str(tmp_path / "parallel.db"), **PARALLEL)
    assert attempts == [True, False] and read == [0]  # the single-process import counts no packets
    ingest([str(path)], str(tmp_path / "serial.db"), **SERIAL)
    assert_same_database(tmp_path / "serial.db", tmp_path / "parallel.db")


TE = pb.TrackEvent
KNOWN_TRACKS = {
    5: Reservation(5),
    6: Reservation(6, counter=CounterDetails()),
    7: Reservation(7, counter=CounterDetails(is_incremental=True)),
}


@pytest.mark.parametrize(
    "first, defaults, expected",
    [
        (TE(type=TE.TYPE_SLICE_BEGIN, track_uuid=5, name_iid=1), (), True),
        (TE(type=TE.TYPE_SLICE_BEGIN, track_uuid=5, timestamp_absolute_us=9), (), True),
        (TE(type=TE.TYPE_COUNTER, track_uuid=6, double_counter_value=3.5), (), True),
        (TE(type=TE.TYPE_SLICE_BEGIN, track_uuid=5, timestamp_delta_us=9), (), False),
        (TE(type=TE.TYPE_SLICE_BEGIN, track_uuid=5, thread_time_delta_us=9), (), False),
        (TE(type=TE.TYPE_SLICE_BEGIN, track_uuid=5, thread_time_absolute_us=9), (), False),
        (TE(type=TE.TYPE_INSTANT, extra_counter_values=[1], extra_counter_track_uuids=[6]), (), False),
        (TE(type=TE.TYPE_COUNTER, track_uuid=7, counter_value=3), (), False),  # an incremental counter
        (TE(type=TE.TYPE_COUNTER, track_uuid=8, counter_value=3), (), False),  # a track not described yet
        (TE(type=TE.TYPE_SLICE_END), (6,), False),  # Chromium: thread time on every event, from the defaults
    ],
)
def test_which_sequences_are_shared(first, defaults, expected):
    seq = SequenceState(1)
    seq.default_extra_counter_uuids = defaults
    assert split_tokenize.shareable(seq, first.SerializeToString(), KNOWN_TRACKS) is expected
    assert split_tokenize.shareable(seq, b"\xff", KNOWN_TRACKS) is False  # bytes that are no TrackEvent


def test_a_failing_helper_falls_back_to_one_process(tmp_path, monkeypatch, demo_trace, attempts):
    def broken(self):
        raise RuntimeError("helper broke")

    monkeypatch.setattr(proto_importer.ProtoImporter, "become_helper", broken)
    ingest([str(demo_trace)], str(tmp_path / "parallel.db"), **PARALLEL)
    assert attempts == [True, False]
    ingest([str(demo_trace)], str(tmp_path / "serial.db"), **SERIAL)
    assert_same_database(tmp_path / "serial.db", tmp_path / "parallel.db")


def test_the_helper_does_not_fall_back_on_a_plain_trace(tmp_path, demo_trace, attempts):
    ingest([str(demo_trace)], str(tmp_path / "parallel.db"), **PARALLEL)
    assert attempts == [True]


def test_a_failing_writer_is_a_clean_error(tmp_path, monkeypatch, demo_trace):
    """The child's SQLite error reaches the caller as one line; no database or temporary file is left."""

    def broken(self, table, grouped, rest):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(writer.SqliteWriter, "insert_prepared", broken)
    out = tmp_path / "out" / "x.db"
    out.parent.mkdir()
    with pytest.raises(IngestError) as e:
        ingest([str(demo_trace)], str(out), **PARALLEL)
    assert "disk I/O error" in str(e.value) and str(out) in str(e.value)
    assert os.listdir(out.parent) == []


def test_a_writer_that_dies_is_a_clean_error(tmp_path, monkeypatch, demo_trace):
    def dies(self, table, grouped, rest):
        os._exit(3)

    monkeypatch.setattr(writer.SqliteWriter, "insert_prepared", dies)
    out = tmp_path / "out" / "x.db"
    out.parent.mkdir()
    with pytest.raises(IngestError) as e:
        ingest([str(demo_trace)], str(out), **PARALLEL)
    assert "writer process stopped" in str(e.value)
    assert os.listdir(out.parent) == []


def test_absurd_durations_saturate_the_name_totals(tmp_path):
    """Three slices of 5e18 ns named alike: their total passes int64, where SQLite's sum() would
    fail the import. The total is kept at INT64_MAX; each slice is imported as it is."""
    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(10, "app")
    for tid in (11, 12, 13):
        track = seq.thread(10, tid, f"t{tid}")
        seq.slice_begin(1_000, track, "Forever")
        seq.slice_end(5 * 10**18 + 1_000, track)
    path = tmp_path / "t.pftrace"
    path.write_bytes(b.to_bytes())
    for options in (SERIAL, PARALLEL):
        db = tmp_path / f"{options['split_tokenize']}.db"
        ingest([str(path)], str(db), **options)
        conn = sqlite3.connect(db)
        try:
            assert conn.execute(
                "SELECT count, total_dur, max_dur FROM report_slice_name WHERE name = 'Forever'"
            ).fetchone() == (3, (1 << 63) - 1, 5 * 10**18)
            assert conn.execute("SELECT count(*), min(dur) FROM slice WHERE name = 'Forever'").fetchone() == (
                3,
                5 * 10**18,
            )
        finally:
            conn.close()


@pytest.mark.parametrize("damage", ["truncated", "flipped bytes"])
def test_damaged_trace_gives_the_same_database_with_both_processes(tmp_path, demo_trace, damage):
    """Garbage inside a trace is counted and skipped the same way whoever tokenizes it."""
    data = bytearray(demo_trace.read_bytes())
    if damage == "truncated":
        data = data[: len(data) * 2 // 3]
    else:
        for i in range(200, len(data), 997):
            data[i] ^= 0x5A
    path = tmp_path / "damaged.pftrace"
    path.write_bytes(bytes(data))
    ingest([str(path)], str(tmp_path / "serial.db"), **SERIAL)
    ingest([str(path)], str(tmp_path / "parallel.db"), **PARALLEL)
    assert_same_database(tmp_path / "serial.db", tmp_path / "parallel.db")
    conn = sqlite3.connect(tmp_path / "parallel.db")
    try:  # the damage was seen and counted, and the rest imported
        assert conn.execute("SELECT sum(value) FROM stats WHERE severity IN ('error', 'data_loss')").fetchone()[0] > 0
        assert conn.execute("SELECT count(*) FROM slice").fetchone()[0] > 0
    finally:
        conn.close()


def test_a_file_that_is_not_a_trace_fails_alike_with_both_processes(tmp_path):
    path = tmp_path / "garbage.pftrace"
    path.write_bytes(b"\x0a\xff\xff\xff\xff\x0f" + bytes(range(256)) * 64)
    out = tmp_path / "out"
    out.mkdir()
    errors = []
    for options in (SERIAL, PARALLEL):
        with pytest.raises(IngestError) as e:
            ingest([str(path)], str(out / "x.db"), **options)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and str(path) in errors[0]
    assert os.listdir(out) == []
