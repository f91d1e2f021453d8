"""report_tables.py fills some report tables faster than their SQL definitions (schema.DERIVED's
`populate`): both must give the same rows in the same order."""

from __future__ import annotations

import random
import sqlite3
from contextlib import closing

import pytest
from conftest import ingest_built, ingest_named, kept_and_defined
from shared_data import TRACES

from datasette_perfetto import report_tables, schema
from datasette_perfetto.trace_builder import TraceBuilder

COMPUTED = [d for d in schema.DERIVED if d.name in report_tables.COMPUTE or d.name in report_tables.FILLED_WITH]


def test_every_computed_table_is_a_derived_one():
    assert sorted(d.name for d in COMPUTED) == sorted([*report_tables.COMPUTE, *report_tables.FILLED_WITH])
    assert set(report_tables.FILLED_WITH.values()) <= set(report_tables.COMPUTE)


@pytest.fixture(scope="module")
def edge_db(tmp_path_factory):
    """Slices and counters with what the fast paths treat apart: names with more and fewer instances than
    are read whole, ties, unfinished slices (dur -1, lasting to the trace's end), an unnamed slice, counters
    going down, a constant counter, a counter track of a single value."""
    rng = random.Random(17)
    builder = TraceBuilder()
    seq = builder.sequence(1)
    seq.process(10, "app")
    # A rank per thread, one of them unnamed ("" sorts before the others), and a dimension of one value.
    threads = [
        seq.thread(10, 10 + i, f"worker{i}", dimensions=[("rank", i), ("zone", "z" if i else ""), ("pool", "one")])
        for i in range(3)
    ]
    ts = 1_000
    for n in range(400):
        track = threads[n % 3]
        name = "Big" if n % 2 else ("Tied" if n % 5 else "Small")
        seq.slice_begin(ts, track, name)
        seq.slice_begin(ts + 1, track, "Child")
        seq.slice_end(ts + 2 + rng.randrange(3), track)
        seq.slice_end(ts + 10 + (7 if name == "Tied" else rng.randrange(1_000)), track)
        ts += 2_000
    seq.slice_begin(ts, threads[0], "Big")  # never ends: unfinished, with finished ones of its name
    seq.slice_begin(ts + 5, threads[1], "Open")  # only unfinished ones
    seq.slice_begin(ts + 9, threads[2], "")
    seq.slice_end(ts + 50, threads[2])
    counters = [seq.counter_track(100 + i, f"counter{i}") for i in range(3)]
    for k in range(300):
        seq.counter(1_000 + k * 1_700, counters[0], rng.choice([1.5, 2.25, -3.0, 1e9, 0.1]))
        seq.counter(1_000 + k * 1_700, counters[1], 42)
    seq.counter(5_000, counters[2], 7.75)
    return ingest_built(tmp_path_factory.mktemp("edges"), builder).path


@pytest.fixture(scope="module")
def ddp_db(tmp_path_factory):
    """The two-rank PyTorch job: rank dimensions on real data."""
    return ingest_named(tmp_path_factory, sorted((TRACES / "pytorch_ddp").glob("rank*.json.gz")), "ddp")


@pytest.fixture(
    params=["edge_db", "ddp_db", "demo_db", "sched_db", "v8_db"],
)
def database(request, tmp_path):
    """A copy of a database (the check rewrites its tables)."""
    source = request.getfixturevalue(request.param)
    source = getattr(source, "path", source)
    copy = tmp_path / "copy.db"
    copy.write_bytes(source.read_bytes())
    return copy


@pytest.mark.parametrize("derived", COMPUTED, ids=lambda d: d.name)
def test_computed_rows_equal_their_sql(database, derived):
    computed, defined = kept_and_defined(database, derived)
    assert len(computed) == len(defined)
    for got, want in zip(computed, defined):
        # A REAL sum in another order may differ in the last bits; everything else is exact.
        assert [type(v) for v in got] == [type(v) for v in want], (got, want)
        for g, w in zip(got, want):
            assert g == (pytest.approx(w, rel=1e-12) if isinstance(w, float) else w), (got, want)


@pytest.mark.parametrize("derived", [d for d in schema.DERIVED if d.streamed], ids=lambda d: d.name)
def test_streamed_aggregates_equal_their_sql(database, derived):
    """report_slice_name and report_slice_track_name are kept as slices are written (aggregates.py)."""
    kept, defined = kept_and_defined(database, derived)
    assert kept == defined


def test_counter_figures_with_null_values_equal_their_sql(edge_db, tmp_path):
    """NULL counter values (none of our importers writes one, a database edited by hand may hold them) are
    skipped by min/max/sum, ranked first and hold 0 in the integrals, as the SQL definitions do; the other tracks
    take the fast path."""
    copy = tmp_path / "nulls.db"
    copy.write_bytes(edge_db.read_bytes())
    conn = sqlite3.connect(copy)
    try:
        tracks = [t for (t,) in conn.execute("SELECT DISTINCT track_id FROM counter ORDER BY track_id")]
        conn.execute("UPDATE counter SET value = NULL WHERE track_id = ? AND id % 3 = 0", (tracks[0],))
        conn.execute("UPDATE counter SET value = NULL WHERE track_id = ?", (tracks[-1],))  # nothing but NULLs
        conn.execute("DELETE FROM report_track_stats")
        conn.execute("DELETE FROM report_counter_integral")
        conn.execute("DELETE FROM report_counter_cell")
        conn.commit()
        with pytest.MonkeyPatch.context() as patch:  # cells whatever the number of samples
            patch.setattr(report_tables, "REPORT_COUNTER_CELL_MIN_SAMPLES", 0)
            report_tables.track_stats(conn)
            report_tables.counter_integrals(conn)
        conn.commit()
        nulls = conn.execute("SELECT count(*) FROM counter WHERE value IS NULL").fetchone()[0]
    finally:
        conn.close()
    assert len(tracks) >= 2 and nulls > 1
    limit = f">= {schema.REPORT_COUNTER_CELL_MIN_SAMPLES}"
    # A NULL value holds 0 in the integral; cells count it, their min, max and sum skip it.
    for name in ("report_track_stats", "report_counter_integral", "report_counter_cell"):
        derived = next(d for d in COMPUTED if d.name == name)
        computed, defined = kept_and_defined(copy, derived, derived.populate.replace(limit, ">= 0"))
        assert len(computed) == len(defined) and (computed or name != "report_counter_cell")
        for got, want in zip(computed, defined):
            assert [type(v) for v in got] == [type(v) for v in want], (got, want)
            for g, w in zip(got, want):
                assert g == (pytest.approx(w, rel=1e-12) if isinstance(w, float) else w), (got, want)


def test_rows_beyond_int64_in_a_multi_row_insert_are_clamped_once(tmp_path):
    """Report rows go in MULTI_ROWS to a statement: a value beyond int64 in the second statement leaves the
    first statement's rows in; they are taken out again and every row written once, the value clamped."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    table = schema.REPORT_SLICE_NAME_DUR_RANK
    conn.execute(table.create_sql())
    conn.execute("INSERT INTO report_slice_name_dur_rank VALUES ('earlier', 1, 1)")  # rows already there stay
    rows = [(f"n{i}", i, i) for i in range(2 * schema.MULTI_ROWS + 7)]
    rows[schema.MULTI_ROWS + 3] = ("huge", 1 << 70, 5)
    report_tables._insert(conn, table, rows)
    got = conn.execute("SELECT name, dur, at_most FROM report_slice_name_dur_rank ORDER BY rowid").fetchall()
    want = [("earlier", 1, 1), *rows]
    want[1 + schema.MULTI_ROWS + 3] = ("huge", (1 << 63) - 1, 5)
    assert got == want


def test_the_edge_trace_has_the_cases_it_is_for(edge_db):
    conn = sqlite3.connect(edge_db)
    try:
        counts = dict(conn.execute("SELECT name, count FROM report_slice_name"))
        unfinished = dict(conn.execute("SELECT name, unfinished FROM report_slice_name"))
        dimensions = conn.execute("SELECT DISTINCT dimension, value FROM report_slice_dimension").fetchall()
        drops = dict(conn.execute("SELECT t.name, s.drops FROM report_track_stats s JOIN track t ON t.id = s.track_id"))
    finally:
        conn.close()
    assert counts["Big"] > 64 >= counts["Small"]  # read by OFFSET, and read whole
    assert unfinished["Big"] == 1 and unfinished["Open"] == 1
    assert sorted(dimensions) == [("rank", "0"), ("rank", "1"), ("rank", "2"), ("zone", ""), ("zone", "z")]
    assert drops["counter0"] > 0 and drops["counter1"] == 0 and drops["counter2"] == 0


def test_absurd_durations_are_kept_within_int64(tmp_path):
    """Sums beyond int64 (durations near 2^62, several of them) are kept at INT64_MAX, as the streamed
    aggregates keep them, instead of failing the import."""
    builder = TraceBuilder()
    seq = builder.sequence(1)
    seq.process(1, "p")
    seq.process(5, "q")
    threads = [seq.thread(1 + 4 * i, 2 + i, f"t{i}", dimensions=[("rank", i)]) for i in range(2)]
    for track in threads:
        seq.slice_begin(10, track, "Apple")  # a row written before the one that overflows
        seq.slice_end(20, track)
        for k in range(3):
            seq.slice_begin(1_000 + k, track, "Huge")
        for k in range(3):
            seq.slice_end((1 << 62) + 1_000 + k, track)
    original = report_tables.REPORT_NAME_CELL_MIN_SLICES
    report_tables.REPORT_NAME_CELL_MIN_SLICES = 0  # the cell tables too, over a grid of 2^62 ns
    try:
        db = ingest_built(tmp_path, builder)
    finally:
        report_tables.REPORT_NAME_CELL_MIN_SLICES = original
    conn = sqlite3.connect(db.path)
    try:
        cells = [
            conn.execute(f"SELECT count(*), sum(covered) FROM {table} WHERE name = 'Apple'").fetchone()
            for table in ("report_slice_name_cell", "report_slice_track_name_cell")
        ]
        totals = conn.execute("SELECT total_dur FROM report_slice_dimension WHERE name = 'Huge'").fetchall()
        names = conn.execute("SELECT total_dur FROM report_slice_name WHERE name = 'Huge'").fetchall()
        apples = conn.execute("SELECT value, total_dur FROM report_slice_dimension WHERE name = 'Apple'").fetchall()
        # The per process running totals pass int64 (kept at its limit); per name cells sum both processes.
        huge_cells = conn.execute(
            "SELECT (SELECT max(cum_covered) FROM report_slice_process_name_cell WHERE name = 'Huge'), "
            "(SELECT count(DISTINCT process) FROM report_slice_process_name_cell WHERE name = 'Huge'), "
            "(SELECT count(*) FROM report_slice_name_cell n WHERE name = 'Huge' AND covered = (SELECT sum(covered) "
            "FROM report_slice_process_name_cell p WHERE p.name = n.name AND p.cell = n.cell))"
        ).fetchone()
    finally:
        conn.close()
    assert totals == [((1 << 63) - 1,), ((1 << 63) - 1,)] and names == [((1 << 63) - 1,)]
    assert sorted(apples) == [("0", 10), ("1", 10)]  # once each
    assert huge_cells[:2] == ((1 << 63) - 1, 2) and huge_cells[2] > 1
    assert cells == [(1, 20), (2, 20)]  # both Apples in the first cell: one row per name, one per track


@pytest.mark.parametrize("batch", [1, 7, 4096])
def test_duration_ranks_across_read_batches_equal_their_sql(monkeypatch, batch):
    """report_slice_name_dur_rank reads a name's durations a batch at a time: a run of equal durations that
    crosses batches (or fills several) is one row, counted to its end; names just at the threshold, below
    it, with unfinished instances; against the table's SQL definition."""
    rng = random.Random(batch)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE slice (name TEXT, dur INTEGER)")
    conn.execute("CREATE TABLE report_slice_name (name TEXT, count INTEGER, unfinished INTEGER)")
    conn.execute(schema.REPORT_SLICE_NAME_DUR_RANK.create_sql())
    threshold = schema.REPORT_CELL_MIN_COUNT
    for name, count, spread, unfinished in [
        ("ties", threshold + 3000, 3, 2),  # runs of thousands of equal durations
        ("spread", threshold, 10**6, 0),  # every step's duration distinct
        ("few", 5, 10, 0),  # below the threshold: no rows
        ("unfinished", threshold - 1, 7, 1),  # below once its unfinished instance is not counted
    ]:
        durations = [rng.randrange(spread) for _ in range(count)] + [-1] * unfinished
        conn.executemany("INSERT INTO slice VALUES (?, ?)", [(name, d) for d in durations])
        conn.execute("INSERT INTO report_slice_name VALUES (?, ?, ?)", (name, len(durations), unfinished))
    conn.execute("CREATE INDEX slice_name_dur ON slice (name, dur)")
    defined = next(d for d in schema.DERIVED if d.name == "report_slice_name_dur_rank")
    conn.execute(defined.populate)
    want = conn.execute("SELECT name, dur, at_most FROM report_slice_name_dur_rank ORDER BY rowid").fetchall()
    conn.execute("DELETE FROM report_slice_name_dur_rank")
    monkeypatch.setattr(report_tables, "_RANK_BATCH", batch)
    report_tables.slice_name_dur_ranks(conn)
    got = conn.execute("SELECT name, dur, at_most FROM report_slice_name_dur_rank ORDER BY rowid").fetchall()
    assert {name for name, _, _ in want} == {"spread", "ties"}
    assert got == want


def test_slice_self_times_are_stored_only_below_the_cell_tables_size(demo_db, tmp_path):
    """report_slice_self holds every finished slice's self time in traces below REPORT_NAME_CELL_MIN_SLICES
    slices (larger ones read the cell tables), none above: the demo's 743 slices against that limit and a
    lower one."""
    copy = tmp_path / "copy.db"
    copy.write_bytes(demo_db.path.read_bytes())
    derived = next(d for d in schema.DERIVED if d.name == "report_slice_self")
    limit = f"< {schema.REPORT_NAME_CELL_MIN_SLICES}"
    assert limit in derived.populate
    with closing(sqlite3.connect(copy)) as conn:
        finished = conn.execute("SELECT count(*) FROM slice WHERE dur >= 0").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM report_slice_self").fetchone()[0] == finished > 0
        # Above the limit no slice is read (a WHERE term tested on each row read them all: 0.2-0.4 s for no row
        # at 2.4M slices), counted in SQLite's virtual machine steps: the full build's against the refused one's.
        steps = []
        for bound in ("< 1000000", "< 743"):
            conn.execute("DELETE FROM report_slice_self")
            steps.append(0)
            conn.set_progress_handler(lambda: steps.__setitem__(-1, steps[-1] + 1), 100)
            conn.execute(derived.populate.replace(limit, bound))
            conn.set_progress_handler(None, 0)
        assert conn.execute("SELECT count(*) FROM report_slice_self").fetchone()[0] == 0
        assert steps[1] * 20 < steps[0], steps
