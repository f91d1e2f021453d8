"""Import logs (import_logs.py): a stat counted with a row of __intrinsic_trace_import_logs saying
when and why, read through _trace_import_logs as trace_processor's ImportLogsTracker and its view
give them: JSON parser errors (JsonTraceParser::RecordEventError) and the slice tracker's drops."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import TraceDB
from database_rows import assert_same_database

from datasette_perfetto.import_logs import ImportLogs
from datasette_perfetto.ingest import ingest
from datasette_perfetto.parallel import ingest as parallel_ingest
from datasette_perfetto.stats import Stats
from datasette_perfetto.storage import TraceStorage
from datasette_perfetto.trackers.slice_tracker import MAX_DEPTH, SliceTracker


def X(name, ts, dur, tid=1, pid=1):
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid}


def write(tmp_path: Path, events: list[dict], name: str = "trace.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def imported(tmp_path: Path, events: list[dict]) -> TraceDB:
    db = tmp_path / "t.db"
    ingest([str(write(tmp_path, events))], str(db))
    return TraceDB(db)


def logs(db: TraceDB) -> list[tuple]:
    """(id, trace_id, ts, byte_offset, severity, name, {key: value}) of every log, in id order."""
    out = []
    for id_, trace_id, ts, offset, severity, name, arg_set_id in db.rows(
        "SELECT id, trace_id, ts, byte_offset, severity, name, arg_set_id FROM _trace_import_logs ORDER BY id"
    ):
        args = dict(db.rows("SELECT key, display_value FROM args WHERE arg_set_id = ? ORDER BY id", (arg_set_id,)))
        out.append((id_, trace_id, ts, offset, severity, name, args))
    return out


def stat(db: TraceDB, name: str) -> int:
    return db.one("SELECT value FROM stats WHERE name = ?", (name,))


OVERLAP = {
    "overlap_start": "150000",
    "overlap_end": "200000",
    "conflicting_slice_name": "outer",
    "conflicting_slice_ts": "100000",
    "conflicting_slice_dur": "100000",
}


def test_overlapping_complete_event_spilled_is_logged_with_the_overlap(tmp_path):
    db = imported(tmp_path, [X("outer", 100, 100), X("inner", 150, 100)])
    assert logs(db) == [
        (
            0,
            0,
            150_000,
            None,
            "error",
            "slice_spill_overlapping_complete_event",
            {"event_name": "inner", "event_phase": "X", **OVERLAP},
        )
    ]
    assert stat(db, "slice_spill_overlapping_complete_event") == 1
    assert db.one("SELECT count(*) FROM slice") == 2  # spilled, not dropped


def test_json_parser_failure_is_logged_with_the_event(tmp_path):
    """A counter event without args and a complete event without a duration."""
    events = [
        {"ph": "C", "name": "ctr", "ts": 5, "pid": 1, "tid": 1},
        {"ph": "X", "name": "nodur", "ts": 7, "pid": 1, "tid": 1},
    ]
    db = imported(tmp_path, events)
    assert logs(db) == [
        (0, 0, 5_000, None, "error", "json_parser_failure", {"event_name": "ctr", "event_phase": "C"}),
        (1, 0, 7_000, None, "error", "json_parser_failure", {"event_name": "nodur", "event_phase": "X"}),
    ]
    assert stat(db, "json_parser_failure") == 2


def test_negative_duration_is_logged(tmp_path):
    db = imported(tmp_path, [X("ok", 10, 5), X("backwards", 20, -5)])
    assert logs(db) == [(0, 0, 20_000, None, "error", "slice_negative_duration", {})]
    assert stat(db, "slice_negative_duration") == 1


def test_max_depth_exceeded_is_logged_with_the_parent_and_the_slice(tmp_path):
    events = [{"ph": "B", "name": f"d{i}", "ts": i, "pid": 1, "tid": 1} for i in range(MAX_DEPTH + 1)]
    db = imported(tmp_path, events)
    assert logs(db) == [
        (
            0,
            0,
            MAX_DEPTH * 1000,
            None,
            "error",
            "slice_max_depth_exceeded",
            {"parent_slice_name": f"d{MAX_DEPTH - 1}", "current_slice_name": f"d{MAX_DEPTH}"},
        )
    ]
    assert stat(db, "slice_max_depth_exceeded") == 1


def test_overlapping_complete_slice_dropped_is_logged(tmp_path):
    """Where no caller places it elsewhere, the slice tracker drops the overlapping complete slice
    and logs it with the overlap."""
    storage = TraceStorage.create(str(tmp_path / "t.db"), separate_process=False)
    stats = Stats()
    slices = SliceTracker(storage, stats, logs=ImportLogs(storage, 0))
    assert slices.scoped(100_000, 100_000, 7, None, "outer", []) == 0
    assert slices.scoped(150_000, 100_000, 7, None, "inner", []) is None
    rows = storage.query(
        "SELECT id, trace_id, ts, byte_offset, stat_key, arg_set_id FROM __intrinsic_trace_import_logs"
    )
    assert rows == [(0, 0, 150_000, None, "slice_drop_overlapping_complete_event", 0)]
    assert dict(storage.query("SELECT key, display_value FROM args WHERE arg_set_id = 0")) == OVERLAP
    assert stats.get("slice_drop_overlapping_complete_event") == 1
    storage.abort()


def test_parallel_ingest_gives_the_serial_logs(tmp_path):
    """Each input's logs, arg sets and trace ids as a serial ingest writes them."""
    paths = [
        str(write(tmp_path, [X("outer", 100, 100), X(f"inner{i}", 150, 100), X("neg", 300, -1)], f"t{i}.json"))
        for i in range(3)
    ]
    serial, merged = tmp_path / "serial.db", tmp_path / "parallel.db"
    ingest(paths, str(serial))
    parallel_ingest(paths, str(merged), jobs=2)
    assert_same_database(serial, merged)
    rows = logs(TraceDB(merged))
    assert [(r[0], r[1], r[5], r[6].get("event_name")) for r in rows] == [
        (i * 2 + j, i, name, event)
        for i in range(3)
        for j, (name, event) in enumerate(
            (("slice_spill_overlapping_complete_event", f"inner{i}"), ("slice_negative_duration", None))
        )
    ]
    assert rows == logs(TraceDB(serial))
