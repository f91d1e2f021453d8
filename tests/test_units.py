"""Unit tests of the pieces the importer is built from."""

from __future__ import annotations

import random
import sqlite3

import pytest

from datasette_perfetto.functions import fnv1a_hash, register_functions, str_split, to_timecode, unhex
from datasette_perfetto.importers.common.sorter import Sorter
from datasette_perfetto.importers.proto.clock_tracker import ClockTracker
from datasette_perfetto.stats import Stats
from datasette_perfetto.storage import TraceStorage
from datasette_perfetto.trackers.slice_tracker import SliceTracker, _merge_args

# -- sorter --------------------------------------------------------------------------


@pytest.mark.parametrize("run_events", [7, 1000])  # 7: many spilled runs; 1000: all in memory
def test_sorter_orders_by_ts_then_stream_then_arrival(run_events):
    rng = random.Random(3)
    pushed = [(rng.randrange(50), rng.randrange(2), i) for i in range(300)]
    sorter = Sorter(run_events=run_events)
    for ts, stream, i in pushed:
        sorter.push(ts, ("event", i), stream)
    got = [(ts, event[1]) for ts, event in sorter.drain()]
    expected = [(ts, i) for ts, stream, i in sorted(pushed, key=lambda p: (p[0], p[1], p[2]))]
    assert got == expected


# -- clocks --------------------------------------------------------------------------


def test_clock_conversion_uses_latest_snapshot_and_multi_hop_paths():
    clocks = ClockTracker(Stats())
    clocks.set_trace_clock(6)
    clocks.add_snapshot([(6, 1000, False, 1), (3, 500, False, 1)], seq_id=1)
    clocks.add_snapshot([(6, 2000, False, 1), (3, 1400, False, 1)], seq_id=1)
    clocks.add_snapshot([(3, 100, False, 1), (1, 10, False, 1000)], seq_id=1)  # REALTIME in us
    assert clocks.to_trace_time(3, 600) == 1100  # first snapshot
    assert clocks.to_trace_time(3, 1500) == 2100  # second snapshot
    assert clocks.to_trace_time(6, 1234) == 1234  # trace clock itself
    # REALTIME -> MONOTONIC -> BOOTTIME: 10_000 ns REALTIME is 100 on MONOTONIC.
    assert clocks.to_trace_time(1, 10_000) == 600


def test_incremental_and_sequence_scoped_clocks():
    clocks = ClockTracker(Stats())
    clocks.add_snapshot([(6, 5_000, False, 1), (64, 5, True, 1000)], seq_id=7)
    key = (7, 64)
    assert clocks.resolve_incremental(key, 2) == 7_000
    assert clocks.resolve_incremental(key, 3) == 10_000
    assert clocks.to_trace_time(key, 10_000) == 10_000
    # Clock 64 of another sequence is a different clock.
    stats = Stats()
    other = ClockTracker(stats)
    other.add_snapshot([(6, 5_000, False, 1), (64, 5, True, 1000)], seq_id=7)
    assert other.to_trace_time((8, 64), 1) is None
    assert stats.get("clock_sync_failure_unknown_source_clock") == 1


# -- slice nesting -------------------------------------------------------------------


def _tracker(tmp_path):
    storage = TraceStorage.create(str(tmp_path / "t.db"))
    stats = Stats()
    return storage, stats, SliceTracker(storage, stats)


def _rows(storage):
    storage.flush()
    return storage.query("SELECT id, ts, dur, name, depth, parent_id FROM slice ORDER BY id")


def test_begin_end_nesting_and_unfinished(tmp_path):
    storage, stats, st = _tracker(tmp_path)
    st.begin(10, 1, None, "a", [])
    st.begin(20, 1, None, "b", [])
    st.end(30, 1, None, None, [])
    st.scoped(35, 0, 1, None, "i", [])
    st.begin(40, 1, None, "c", [])
    st.flush()
    assert _rows(storage) == [
        (0, 10, -1, "a", 0, None),
        (1, 20, 10, "b", 1, 0),
        (2, 35, 0, "i", 1, 0),
        (3, 40, -1, "c", 1, 0),
    ]


def test_end_closes_matching_name_and_truncates_open_children(tmp_path):
    storage, stats, st = _tracker(tmp_path)
    st.begin(10, 1, "cat", "parent", [])
    st.begin(20, 1, "cat", "child", [])
    st.end(30, 1, "cat", "parent", [])  # parent ends while child is open
    st.begin(40, 1, "cat", "next", [])  # the next event truncates the child
    st.flush()
    rows = {r[3]: r for r in _rows(storage)}
    assert rows["parent"][2] == 20
    assert rows["child"][2] == 10  # cut at the parent's end (30)
    assert rows["next"][4] == 0  # back at depth 0
    assert stats.get("misplaced_end_event") == 1


def test_end_with_a_category_never_matches_a_slice_without_one(tmp_path):
    storage, stats, st = _tracker(tmp_path)
    st.begin(10, 1, None, "a", [])
    assert st.end(20, 1, "cat", None, []) is None
    st.flush()
    assert _rows(storage)[0][2] == -1


def test_overlapping_complete_event_is_dropped_and_counted(tmp_path):
    storage, stats, st = _tracker(tmp_path)
    st.scoped(10, 100, 1, None, "a", [])
    assert st.scoped(50, 100, 1, None, "b", []) is None
    assert stats.get("slice_drop_overlapping_complete_event") == 1


def test_max_depth(tmp_path):
    storage, stats, st = _tracker(tmp_path)
    for i in range(513):
        st.begin(i, 1, None, f"s{i}", [])
    assert stats.get("slice_max_depth_exceeded") == 1
    st.flush()
    storage.flush()
    assert storage.query("SELECT max(depth), count(*) FROM slice") == [(511, 512)]


def test_end_args_merge_like_trace_processor():
    begin = [("debug.a", "debug.a[0]", "int", 1), ("debug.a", "debug.a[1]", "int", 2), ("debug.x", "debug.x", "int", 3)]
    end = [("debug.a", "debug.a[0]", "int", 9), ("debug.x", "debug.x", "int", 4), ("debug.y", "debug.y", "int", 5)]
    assert _merge_args(begin, end) == [
        ("debug.a", "debug.a[0]", "int", 1),
        ("debug.a", "debug.a[1]", "int", 2),
        ("debug.x", "debug.x", "int", 4),
        ("debug.a", "debug.a[2]", "int", 9),
        ("debug.y", "debug.y", "int", 5),
    ]


# -- storage ---------------------------------------------------------------------------


def test_arg_sets_are_deduplicated_and_ids_are_first_row_ids(tmp_path):
    storage = TraceStorage.create(str(tmp_path / "t.db"))
    a = storage.arg_set([("k", "k", "int", 1), ("s", "s", "string", "x")])
    b = storage.arg_set([("k", "k", "int", 2)])
    c = storage.arg_set([("k", "k", "int", 1), ("s", "s", "string", "x")])
    assert (a, b, c) == (0, 2, 0)
    big = storage.arg_set([("u", "u", "uint", (1 << 64) - 1)])
    storage.flush()
    assert storage.query("SELECT int_value FROM args WHERE arg_set_id = ?", (big,)) == [(-1,)]


# -- SQL functions -----------------------------------------------------------------------


def test_sql_functions(demo_db):
    conn = sqlite3.connect(demo_db.path)
    register_functions(conn)
    arg_set_id, key, value = conn.execute(
        "SELECT arg_set_id, key, coalesce(string_value, int_value, real_value) FROM args "
        "WHERE value_type IN ('string', 'int', 'real') LIMIT 1"
    ).fetchone()
    assert conn.execute("SELECT extract_arg(?, ?)", (arg_set_id, key)).fetchone()[0] == value
    assert conn.execute("SELECT extract_arg(NULL, 'x'), extract_arg(?, 'no.such.key')", (arg_set_id,)).fetchone() == (
        None,
        None,
    )
    start, end = conn.execute("SELECT start_ts, end_ts FROM trace_bounds").fetchone()
    assert conn.execute("SELECT trace_start(), trace_end(), trace_dur()").fetchone() == (start, end, end - start)
    parent, child = conn.execute("SELECT parent_id, id FROM slice WHERE depth = 2 LIMIT 1").fetchone()
    grand = conn.execute("SELECT parent_id FROM slice WHERE id = ?", (parent,)).fetchone()[0]
    assert conn.execute(
        "SELECT slice_is_ancestor(?, ?), slice_is_ancestor(?, ?)", (grand, child, child, grand)
    ).fetchone() == (1, 0)
    assert conn.execute("SELECT time_to_ms(2500000), time_from_ms(3)").fetchone() == (2, 3_000_000)
    assert conn.execute("SELECT 'abc' REGEXP 'b', regexp_extract('id=42', 'id=(\\d+)')").fetchone() == (1, "42")
    conn.close()


def test_pure_functions():
    assert str_split("a,b,c", ",", 1) == "b" and str_split("a", ",", 3) is None
    assert unhex("0xff") == 255 and unhex("ffffffffffffffff") == -1
    assert fnv1a_hash("") == -3750763034362895579  # the FNV-1a offset basis as int64
    assert to_timecode(3_723_004_005_006) == "01:02:03 004 005 006"


def test_merge_batches_equals_sorting_everything():
    """Random sorted sources cut into random batches (empty ones too) merge into one sorted order."""
    from datasette_perfetto.importers.common.sorter import merge_batches

    rng = random.Random(3)
    for _ in range(300):
        sources, everything = [], []
        for j in range(rng.randint(1, 6)):
            items = sorted((rng.randint(0, 30), j, i, ("event",)) for i in range(rng.randint(0, 50)))
            everything += items
            batches, i = [], 0
            while i < len(items):
                size = rng.randint(0, 7)
                batches.append(items[i : i + size])
                i += size
            sources.append(iter(batches))
        assert [item for batch in merge_batches(sources) for item in batch] == sorted(everything)
