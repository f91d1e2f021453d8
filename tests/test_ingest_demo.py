"""The demo trace (trace_builder.build_demo_trace) ingested: every table holds what the builder wrote."""

from __future__ import annotations

from datasette_perfetto.trace_builder import (
    DEMO_END,
    DEMO_PROCESSES,
    DEMO_START,
    INCREMENTAL_CLOCK_TID,
    IPC_COUNTER_UUID,
    MEMORY_TRACK_UUID,
)


def test_processes_and_threads_resolve_names(demo_db):
    procs = dict(demo_db.rows("SELECT pid, name FROM process WHERE upid != 0"))
    assert procs == {pid: name for pid, name, _ in DEMO_PROCESSES}
    threads = {tid: (name, pid) for tid, name, pid in demo_db.rows(
        "SELECT t.tid, t.name, p.pid FROM thread t JOIN process p USING (upid) WHERE t.utid != 0")}
    assert threads == {tid: (tname, pid) for pid, _, ts in DEMO_PROCESSES for tid, tname, _ in ts}
    main = demo_db.rows("SELECT tid FROM thread WHERE is_main_thread = 1 AND utid != 0 ORDER BY tid")
    assert [r[0] for r in main] == [pid for pid, _, _ in DEMO_PROCESSES]
    # utid/upid 0 are the reserved swapper thread and idle process.
    assert demo_db.rows("SELECT tid, name, is_idle FROM thread WHERE utid = 0") == [(0, "swapper", 1)]
    assert demo_db.rows("SELECT pid, name FROM process WHERE upid = 0") == [(0, None)]


def test_slices_nest_inside_their_parents(demo_db):
    assert demo_db.one("SELECT count(*) FROM slice") == 683
    assert demo_db.one("SELECT count(*) FROM slice WHERE dur = 0") == 52
    assert demo_db.one("SELECT count(*) FROM slice WHERE dur < 0") == 0
    bad = demo_db.rows("""
        SELECT s.id FROM slice s JOIN slice p ON s.parent_id = p.id
        WHERE s.track_id != p.track_id OR s.depth != p.depth + 1
           OR s.ts < p.ts OR s.ts + s.dur > p.ts + p.dur""")
    assert bad == []
    assert demo_db.one("SELECT count(*) FROM slice WHERE depth = 0 AND parent_id IS NOT NULL") == 0
    # Ids follow timestamp order.
    ids = [r[0] for r in demo_db.rows("SELECT id FROM slice ORDER BY ts, id")]
    assert ids == sorted(ids)


def test_thread_slices_are_on_thread_tracks(demo_db):
    per_thread = dict(demo_db.rows("""
        SELECT t.name, count(*) FROM slice s JOIN thread_track tt ON s.track_id = tt.id
        JOIN thread t USING (utid) GROUP BY 1"""))
    assert set(per_thread) == {tname for _, _, ts in DEMO_PROCESSES for _, tname, _ in ts}
    assert sum(per_thread.values()) == 683 - 20  # the 20 NetworkRequests slices are on an async track
    assert demo_db.one("""SELECT count(*) FROM slice s JOIN track t ON s.track_id = t.id
                          WHERE t.name = 'NetworkRequests'""") == 20


def test_incremental_clock_sequence_is_converted_to_trace_time(demo_db):
    lo, hi = demo_db.rows("""
        SELECT min(s.ts), max(s.ts + s.dur) FROM slice s JOIN thread_track tt ON s.track_id = tt.id
        JOIN thread t USING (utid) WHERE t.tid = ?""", (INCREMENTAL_CLOCK_TID,))[0]
    assert DEMO_START <= lo < hi <= DEMO_END
    start, end = demo_db.rows("SELECT start_ts, end_ts FROM trace_bounds")[0]
    assert DEMO_START <= start < end <= DEMO_END


def test_counters(demo_db):
    rows = dict(demo_db.rows("""SELECT ct.name, count(*) FROM counter c
                                JOIN counter_track ct ON c.track_id = ct.id GROUP BY 1"""))
    assert rows == {"MemoryUsage": 40, "IPCMessagesSent": 20}
    units = dict(demo_db.rows("SELECT name, unit FROM counter_track"))
    assert units == {"MemoryUsage": "bytes", "IPCMessagesSent": "count"}
    # The incremental counter's values are running totals: never decreasing.
    values = [r[0] for r in demo_db.rows("""SELECT value FROM counter c JOIN counter_track ct
        ON c.track_id = ct.id WHERE ct.name = 'IPCMessagesSent' ORDER BY ts""")]
    assert values == sorted(values) and values[-1] > 0
    uuids = dict(demo_db.rows("""SELECT name, (SELECT int_value FROM args WHERE arg_set_id = source_arg_set_id
                                                  AND key = 'trace_id') FROM counter_track"""))
    assert uuids == {"MemoryUsage": MEMORY_TRACK_UUID, "IPCMessagesSent": IPC_COUNTER_UUID}


def test_flows_connect_slices_on_different_threads(demo_db):
    rows = demo_db.rows("""
        SELECT so.ts < si.ts, tto.utid != tti.utid FROM flow f
        JOIN slice so ON f.slice_out = so.id JOIN slice si ON f.slice_in = si.id
        JOIN thread_track tto ON so.track_id = tto.id JOIN thread_track tti ON si.track_id = tti.id""")
    assert len(rows) == 17
    assert all(earlier and cross_thread for earlier, cross_thread in rows)


def test_debug_annotations_become_typed_args(demo_db):
    types = dict(demo_db.rows("SELECT value_type, count(*) FROM args GROUP BY 1"))
    assert {"string", "int", "real", "bool"} <= set(types)
    nested = demo_db.rows("SELECT key, flat_key FROM args WHERE key LIKE 'debug.%[%]%' LIMIT 1")
    assert nested and "[" not in nested[0][1]
    # Every slice's args are reachable with extract_arg-style lookups on the same set.
    orphans = demo_db.one("""SELECT count(*) FROM slice s WHERE s.arg_set_id IS NOT NULL
                             AND NOT EXISTS (SELECT 1 FROM args a WHERE a.arg_set_id = s.arg_set_id)""")
    assert orphans == 0


def test_clean_trace_has_no_problem_stats(demo_db):
    assert demo_db.rows("SELECT name, value FROM stats WHERE value > 0 AND severity IN ('error', 'data_loss')") == []
    # Every single stat has a row, as in trace_processor.
    assert demo_db.one("SELECT count(*) FROM stats WHERE name = 'track_event_invalid_timestamp'") == 1


def test_metadata_and_trace_file(demo_db):
    meta = dict(demo_db.rows("SELECT name, coalesce(str_value, int_value) FROM metadata"))
    assert meta["trace_type"] == "proto"
    assert meta["trace_time_clock_id"] == 6
    assert demo_db.rows("SELECT name, trace_type FROM trace_file") == [("demo.pftrace", "proto")]
    assert demo_db.rows("SELECT id, raw_id FROM machine") == [(0, 0)]


def test_several_traces_in_one_database(tmp_path, demo_trace):
    from datasette_perfetto.ingest import ingest

    from conftest import TraceDB

    second = tmp_path / "second.pftrace"
    second.write_bytes(demo_trace.read_bytes())
    db_path = tmp_path / "both.db"
    summaries = ingest([str(demo_trace), str(second)], str(db_path))
    db = TraceDB(db_path)
    assert [s.path for s in summaries] == [str(demo_trace), str(second)]
    assert db.rows("SELECT id, name FROM trace_file ORDER BY id") == [(0, "demo.pftrace"), (1, "second.pftrace")]
    assert db.count("slice") == 2 * 683
    # Each input keeps its own processes (pids are per trace) with dense ids across files.
    assert db.one("SELECT count(*) FROM process WHERE upid != 0") == 6
    assert [r[0] for r in db.rows("SELECT upid FROM process ORDER BY upid")] == list(range(7))
    assert db.rows("SELECT trace_id, count(*) FROM track GROUP BY 1") == [(0, 13), (1, 13)]
    assert db.one("SELECT count(DISTINCT trace_id) FROM stats WHERE trace_id IS NOT NULL") == 2


def test_progress_is_reported_from_zero_to_one(tmp_path, demo_trace):
    from datasette_perfetto.ingest import ingest

    seen: list[float] = []
    ingest([str(demo_trace), str(demo_trace)], str(tmp_path / "p.db"), seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0
    assert any(0.4 < f <= 0.5 for f in seen)  # the first of two equal inputs is half the work
