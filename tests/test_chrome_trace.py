"""The real Chromium startup trace (../shared/traces/chrome_startup.pftrace)."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import TraceDB, ingest_named
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from shared_data import TRACES

from datasette_perfetto.importers.proto.reader import ProtoReader
from datasette_perfetto.stats import Stats

TRACE = TRACES / "chrome_startup.pftrace"


@pytest.fixture(scope="module")
def chrome_db(tmp_path_factory) -> TraceDB:
    return TraceDB(ingest_named(tmp_path_factory, TRACE, "chrome"))


@pytest.fixture(scope="module")
def event_counts() -> Counter:
    """Track event kinds counted straight from the file."""
    counts: Counter = Counter()
    with open(TRACE, "rb") as f:
        for data in ProtoReader(f, Stats()).packets():
            p = pb.TracePacket.FromString(data)
            if p.HasField("track_event"):
                ev = p.track_event
                phase = chr(ev.legacy_event.phase) if ev.HasField("legacy_event") else None
                counts[phase or pb.TrackEvent.Type.Name(ev.type)] += 1
    return counts


def test_every_begin_and_instant_became_a_slice(chrome_db, event_counts):
    assert sum(event_counts.values()) == 245_446
    expected = event_counts["TYPE_SLICE_BEGIN"] + event_counts["TYPE_INSTANT"] + event_counts["R"]  # R: legacy mark
    assert chrome_db.count("slice") == expected == 136_512


def test_no_error_or_data_loss_stats(chrome_db):
    # Only what trace_processor reports about this recording's config and final flush: it was
    # written into a file (write_into_file) with DISCARD buffers and no flush period.
    assert sorted(chrome_db.rows("SELECT name, idx, value FROM stats WHERE value > 0 AND severity != 'info'")) == [
        ("config_write_into_file_discard", 0, 1),
        ("config_write_into_file_discard", 1, 1),
        ("config_write_into_file_no_flush", None, 1),
        ("traced_final_flush_failed", None, 1),
    ]
    # The tracing service's own counters are copied from the trace's trace_stats.
    assert chrome_db.one("SELECT value FROM stats WHERE name = 'traced_buf_buffer_size' AND idx = 0") == 209_715_200


def test_every_slice_lies_inside_its_parent(chrome_db):
    assert (
        chrome_db.one("""
        SELECT count(*) FROM slice s JOIN slice p ON s.parent_id = p.id
        WHERE s.track_id != p.track_id OR s.depth != p.depth + 1 OR s.ts < p.ts
           OR (p.dur >= 0 AND (s.dur < 0 OR s.ts + s.dur > p.ts + p.dur))""")
        == 0
    )
    assert chrome_db.one("SELECT count(*) FROM slice WHERE dur < -1") == 0


def test_thread_tracks_resolve_thread_and_process_names(chrome_db):
    unnamed = chrome_db.rows("""
        SELECT tt.id FROM thread_track tt JOIN thread t USING (utid) LEFT JOIN process p USING (upid)
        WHERE t.name IS NULL OR p.name IS NULL""")
    assert unnamed == []
    names = {r[0] for r in chrome_db.rows("SELECT name FROM process WHERE upid != 0")}
    assert {"Browser", "GPU Process", "Renderer"} <= names
    assert chrome_db.one("SELECT count(*) FROM thread WHERE name = 'CrBrowserMain'") == 1


def test_counters_flows_and_trace_clock(chrome_db, event_counts):
    # Every track event carries a thread-time extra counter value; plus the counter events.
    assert chrome_db.count("counter") > event_counts["TYPE_COUNTER"]
    assert chrome_db.one("SELECT count(*) FROM flow") > 10_000
    meta = dict(chrome_db.rows("SELECT name, coalesce(str_value, int_value) FROM metadata"))
    assert meta["trace_time_clock_id"] == 3  # the trace asks for CLOCK_MONOTONIC
    start, end = chrome_db.rows("SELECT start_ts, end_ts FROM trace_bounds")[0]
    assert 3e9 < end - start < 6e9  # a few seconds of startup
