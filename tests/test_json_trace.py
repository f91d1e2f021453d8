"""Chrome JSON traces: the real traces in shared/traces and crafted files, good and bad."""

from __future__ import annotations

import collections
import gzip
import io
import json
import os
import random
from pathlib import Path

import pytest
from conftest import FunctionsDB, TraceDB
from shared_data import TRACES

from datasette_perfetto.importers.common import sorter as sorter_module
from datasette_perfetto.importers.common.json_args import add_json_args
from datasette_perfetto.importers.common.sorter import Sorter
from datasette_perfetto.importers.json import reader as json_reader
from datasette_perfetto.importers.json.importer import BadValue, to_ns
from datasette_perfetto.importers.json.reader import JsonTraceReader
from datasette_perfetto.ingest import IngestError, ingest
from datasette_perfetto.stats import REGISTRY, Stats

CHROME_STARTUP = TRACES / "chrome_startup.json.gz"
V8_PROFILE = TRACES / "chrome_v8_cpu_profile.json.gz"
PYTORCH = [TRACES / "pytorch_ddp" / "rank0.json.gz", TRACES / "pytorch_ddp" / "rank1.json.gz"]


def load_events(path: Path) -> dict:
    with gzip.open(path) as f:
        return json.load(f)


def problems(db: TraceDB) -> dict[str, int]:
    """Non-zero stats of error and data-loss severity."""
    return dict(db.rows("SELECT name, value FROM stats WHERE value > 0 AND severity IN ('error', 'data_loss')"))


def assert_valid_nesting(db: TraceDB) -> None:
    assert db.one("SELECT count(*) FROM slice WHERE dur < -1") == 0
    # Every child lies within its parent, on the same track, one level deeper.
    assert (
        db.one("""SELECT count(*) FROM slice c JOIN slice p ON c.parent_id = p.id
                     WHERE c.ts < p.ts OR c.track_id != p.track_id OR c.depth != p.depth + 1
                        OR (p.dur >= 0 AND (c.dur < 0 OR c.ts + c.dur > p.ts + p.dur))""")
        == 0
    )
    assert db.one("SELECT count(*) FROM slice WHERE (depth = 0) != (parent_id IS NULL)") == 0
    # Slice ids follow timestamp order.
    assert db.one("SELECT count(*) FROM slice a JOIN slice b ON b.id = a.id + 1 WHERE b.ts < a.ts") == 0


def expected_slice_count(events: list[dict]) -> int:
    """Slices the events make: complete events and instants with a thread, begins, async begins and instants."""
    n = 0
    for e in events:
        ph = e.get("ph")
        if ph == "X" or ph == "B" or ph == "b" or ph == "n":
            n += 1
        elif ph in ("i", "I", "R") and ("tid" in e or e.get("s") in ("g", "p")):
            n += 1
    return n


@pytest.fixture(scope="module")
def real_db(tmp_path_factory):
    """Each real trace ingested once: path -> TraceDB."""
    cache: dict[Path, TraceDB] = {}

    def get(path: Path) -> TraceDB:
        if path not in cache:
            db = tmp_path_factory.mktemp("json") / (path.name + ".db")
            ingest([str(path)], str(db))
            cache[path] = FunctionsDB(db)
        return cache[path]

    return get


# -- real traces ---------------------------------------------------------------------


def test_chrome_startup_imports_every_event(real_db):
    db = real_db(CHROME_STARTUP)
    trace = load_events(CHROME_STARTUP)
    events = trace["traceEvents"]
    assert db.count("slice") == expected_slice_count(events)
    assert_valid_nesting(db)
    # Every flow start finds its end on the next slice of the end's thread.
    assert db.count("flow") == sum(1 for e in events if e.get("ph") == "s")
    assert (
        db.one("""SELECT count(*) FROM flow JOIN slice o ON o.id = flow.slice_out JOIN slice i ON i.id = flow.slice_in
                     WHERE o.ts > i.ts""")
        == 0
    )
    assert db.one("SELECT count(*) FROM args WHERE arg_set_id IN (SELECT arg_set_id FROM flow) AND key = 'name'") > 0
    names = {
        (e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"
    }
    got = dict(
        ((pid, tid), name)
        for pid, tid, name in db.rows(
            "SELECT process.pid, thread.tid, thread.name FROM thread JOIN process USING (upid) WHERE thread.name IS NOT NULL"
        )
    )
    assert got == names
    # Metadata: one row per non-null field, prefixed.
    fields = {k for k, v in trace["metadata"].items() if v is not None}
    assert {
        n[len("json_metadata.") :] for (n,) in db.rows("SELECT name FROM metadata WHERE name GLOB 'json_metadata.*'")
    } == fields


def test_chrome_startup_only_damage_is_the_traces_own(real_db):
    db = real_db(CHROME_STARTUP)
    # One B/E slice ("ThreadController active") is still open when its enclosing
    # complete event ends: the trace itself nests wrongly there, and the open
    # slice is cut at the parent's end, as trace_processor does.
    assert problems(db) == {"misplaced_end_event": 1}
    cut = db.rows("""SELECT c.name FROM slice c JOIN slice p ON c.parent_id = p.id
                     WHERE c.ts + c.dur = p.ts + p.dur AND c.name = 'ThreadController active' AND p.name = 'EpollEvent'""")
    assert cut


def test_chrome_startup_tracks_are_typed_as_trace_processor_types_them(real_db):
    db = real_db(CHROME_STARTUP)
    types = dict(db.rows("SELECT type, count(*) FROM track GROUP BY type"))
    assert set(types) == {
        "thread_execution",
        "legacy_async_process_slice",
        "legacy_async_global_slice",
        "chrome_process_instant",
        "legacy_chrome_global_instants",
    }
    # Complete events sit on their thread's track, which is shared with the thread.
    assert (
        db.one("""SELECT count(*) FROM slice JOIN track ON slice.track_id = track.id
                     WHERE track.type = 'thread_execution' AND track.utid IS NULL""")
        == 0
    )
    assert db.one("SELECT count(DISTINCT utid) FROM thread_track") == types["thread_execution"]
    # Async tracks of one set share a group.
    assert db.one("""SELECT count(*) FROM track WHERE type LIKE 'legacy_async_%' AND track_group_id IS NULL""") == 0


def test_v8_cpu_profile_samples(real_db):
    db = real_db(V8_PROFILE)
    events = load_events(V8_PROFILE)["traceEvents"]
    assert problems(db) == {}
    assert db.count("cpu_profile_stack_sample") == 5072
    assert db.count("stack_sample") == 5072
    assert_valid_nesting(db)
    # Each sample's thread is its ProfileChunk's; each profile its own placeholder mapping.
    chunks = [e for e in events if e.get("ph") == "P" and e["name"] == "ProfileChunk"]
    per_tid = collections.Counter()
    for e in chunks:
        per_tid[e["tid"]] += len(e["args"]["data"].get("cpuProfile", {}).get("samples", []))
    got = dict(
        db.rows("""SELECT thread.tid, count(*) FROM cpu_profile_stack_sample s JOIN thread USING (utid)
                          GROUP BY thread.tid""")
    )
    assert got == dict(per_tid)
    assert db.count("stack_profile_mapping") == sum(1 for e in events if e.get("ph") == "P" and e["name"] == "Profile")
    # Callsites form trees rooted at "(root)"; depth is the distance to the root.
    assert (
        db.one("""SELECT count(*) FROM stack_profile_callsite c JOIN stack_profile_callsite p ON c.parent_id = p.id
                     WHERE c.depth != p.depth + 1""")
        == 0
    )
    assert {
        n
        for (n,) in db.rows("""SELECT f.name FROM stack_profile_callsite c JOIN stack_profile_frame f
                                     ON c.frame_id = f.id WHERE c.parent_id IS NULL""")
    } == {"(root)"}
    # Sample times are the Profile's startTime plus the running sum of timeDeltas, in ns.
    start = next(e for e in events if e.get("ph") == "P" and e["name"] == "Profile" and e["pid"] == 1226)
    first = next(e for e in chunks if e["pid"] == 1226)
    first_ts = (start["args"]["data"]["startTime"] + first["args"]["data"]["timeDeltas"][0]) * 1000
    assert (
        db.one("""SELECT min(s.ts) FROM cpu_profile_stack_sample s JOIN thread USING (utid)
                     JOIN process USING (upid) WHERE process.pid = 1226""")
        == first_ts
    )
    # Script URLs are the frames' source files.
    assert db.one("SELECT count(*) FROM stack_profile_symbol WHERE source_file LIKE 'chrome://%'") > 0
    assert db.one("SELECT start_ts <= (SELECT min(ts) FROM profiler_sample) FROM trace_bounds") == 1


@pytest.mark.parametrize("path", PYTORCH, ids=lambda p: p.name)
def test_pytorch_traces(real_db, path):
    db = real_db(path)
    trace = load_events(path)
    events = trace["traceEvents"]
    assert db.count("slice") == expected_slice_count(events)
    assert_valid_nesting(db)
    assert db.stat("json_display_time_unit") == 1  # "displayTimeUnit": "ms", ignored
    # The only error: complete events that partially overlap another on their thread.
    # Each is kept on an overflow track of its thread, and really does overlap.
    spilled = db.stat("slice_spill_overlapping_complete_event")
    assert set(problems(db)) <= {"slice_spill_overlapping_complete_event"}
    assert (
        spilled
        == db.one("""SELECT count(*) FROM slice JOIN track ON slice.track_id = track.id
                                WHERE track.type = 'thread_overlapping_slice'""")
        > 0
    )
    assert (
        db.one("""SELECT count(*) FROM slice s JOIN track t ON s.track_id = t.id
                     WHERE t.type = 'thread_overlapping_slice' AND NOT EXISTS (
                       SELECT 1 FROM slice m JOIN track mt ON m.track_id = mt.id
                       WHERE mt.type = 'thread_execution' AND mt.utid = t.utid
                         AND ((m.ts < s.ts AND s.ts < m.ts + m.dur AND m.ts + m.dur < s.ts + s.dur)
                           OR (s.ts < m.ts AND m.ts < s.ts + s.dur AND s.ts + s.dur < m.ts + m.dur)))""")
        == 0
    )
    sort_hints = {
        e["tid"]: e["args"]["sort_index"] for e in events if e.get("ph") == "M" and e["name"] == "thread_sort_index"
    }
    got = dict(
        db.rows(
            "SELECT tid, extract_arg(arg_set_id, 'thread_sort_index_hint') FROM thread "
            "WHERE extract_arg(arg_set_id, 'thread_sort_index_hint') IS NOT NULL"
        )
    )
    assert got == sort_hints
    assert db.count("flow") == sum(1 for e in events if e.get("ph") == "s")


def test_both_pytorch_ranks_in_one_database(tmp_path):
    """Several inputs, one database: each rank is its own source trace, ids dense across them."""
    db_path = tmp_path / "ddp.db"
    ingest([str(p) for p in PYTORCH], str(db_path))
    db = FunctionsDB(db_path)
    assert db.rows("SELECT id, name, trace_type FROM trace_file ORDER BY id") == [
        (0, "rank0.json.gz", "json"),
        (1, "rank1.json.gz", "json"),
    ]
    per_trace = dict(db.rows("SELECT t.trace_id, count(*) FROM slice s JOIN track t ON t.id = s.track_id GROUP BY 1"))
    assert per_trace == {i: expected_slice_count(load_events(p)["traceEvents"]) for i, p in enumerate(PYTORCH)}
    # Each rank keeps its own python process (pids differ per rank) and the ids have no gaps.
    assert [r[0] for r in db.rows("SELECT pid FROM process WHERE name = 'python' ORDER BY upid")] == [32212, 32213]
    for table, key in (("process", "upid"), ("thread", "utid"), ("slice", "id"), ("track", "id")):
        assert db.one(f"SELECT max({key}) + 1 - count(*) FROM [{table}]") == 0
    # Stats and metadata are kept per source trace.
    assert db.one("SELECT count(DISTINCT trace_id) FROM stats WHERE trace_id IS NOT NULL") == 2
    assert dict(db.rows("SELECT trace_id, value FROM stats WHERE name = 'slice_spill_overlapping_complete_event'")) == {
        0: 21,
        1: 25,
    }
    # Ids follow timestamp order within each input (each input's slices come after the previous input's).
    assert (
        db.one("""SELECT count(*) FROM slice a JOIN slice b ON b.id = a.id + 1
                     JOIN track ta ON ta.id = a.track_id JOIN track tb ON tb.id = b.track_id
                     WHERE ta.trace_id = tb.trace_id AND b.ts < a.ts""")
        == 0
    )


# -- crafted traces ------------------------------------------------------------------


@pytest.fixture
def ingest_json(tmp_path):
    """ingest_json(events or text, name) -> TraceDB."""

    def run(content, name: str = "trace.json") -> TraceDB:
        path = tmp_path / name
        if isinstance(content, (bytes, bytearray)):
            data = bytes(content)
        elif isinstance(content, str):
            data = content.encode()
        else:
            data = json.dumps(content).encode()
        if name.endswith(".gz"):
            data = gzip.compress(data)
        path.write_bytes(data)
        db = tmp_path / (name + ".db")
        ingest([str(path)], str(db))
        return FunctionsDB(db)

    return run


def X(name, ts, dur, tid=1, pid=1, **extra):
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid, **extra}


def test_malformed_event_in_the_middle_is_counted_and_the_rest_imported(ingest_json):
    text = (
        '{"traceEvents": [' + json.dumps(X("a", 1, 1)) + ",\n"
        '{"ph": "X", "name": "broken", "ts": 2,, "dur": 1},\n'
        '{"ph": "X", "name": "also broken", "ts": 3, "dur": [1, 2 3]},\n'
        + json.dumps(X("b", 5, 1))
        + ', 17, "junk",\n'
        + json.dumps(X("c", 7, 1))
        + "]}"
    )
    db = ingest_json(text)
    assert [n for (n,) in db.rows("SELECT name FROM slice ORDER BY ts")] == ["a", "b", "c"]
    assert db.stat("json_tokenizer_failure") == 4  # two broken objects, two elements that are not objects


def test_wrong_field_types(ingest_json):
    events = [
        {"ph": "X", "name": "ts is a bool", "ts": True, "dur": 1, "pid": 1, "tid": 1},
        {"ph": "X", "name": "dur is a list", "ts": 1, "dur": [1], "pid": 1, "tid": 1},
        {"ph": "X", "name": "tts is a string", "ts": 1, "dur": 1, "tts": "soon", "pid": 1, "tid": 1},
        {"ph": 7, "name": "ph is a number", "ts": 1},
        {"ph": "X", "name": 42, "ts": 2, "dur": 1, "pid": 1, "tid": 1, "args": "not an object"},
        {"ph": "X", "name": "pid is a list", "ts": 3, "dur": 1, "pid": [1], "tid": 1},
        {"ph": "X", "name": "huge pid", "ts": 4, "dur": 1, "pid": 1 << 40, "tid": 2},
        {"ph": "X", "name": "cat is a number", "cat": 5, "ts": 5, "dur": 1, "pid": 1, "tid": 1},
        {"ph": "X", "name": "ts beyond int64", "ts": 1 << 62, "dur": 1, "pid": 1, "tid": 1},
        {"ph": "X", "name": "ts is NaN", "ts": "NaN", "dur": 1, "pid": 1, "tid": 1},
    ]
    db = ingest_json(events)
    assert db.stat("json_tokenizer_failure") == 6
    rows = db.rows("""SELECT slice.name, slice.category, slice.arg_set_id, process.pid FROM slice
                      JOIN thread_track ON slice.track_id = thread_track.id JOIN thread USING (utid)
                      JOIN process USING (upid) ORDER BY slice.ts""")
    # A name that is not a string is no name; a pid that is neither a number nor a string is 0,
    # one out of uint32 range is 0 too (trace_processor's coercion).
    assert rows == [
        ("[No name]", None, None, 1),
        ("pid is a list", None, None, 0),
        ("huge pid", None, None, 0),
        ("cat is a number", None, None, 1),
    ]


def test_missing_keys(ingest_json):
    events = [
        {},  # a filler element: skipped without a stat
        {"name": "no phase", "ts": 1, "pid": 1, "tid": 1},
        {"ph": "X", "name": "no ts", "dur": 1, "pid": 1, "tid": 1},
        {"ph": "X", "name": "no dur", "ts": 1, "pid": 1, "tid": 1},
        {"ph": "C", "name": "no args", "ts": 1, "pid": 1},
        {"ph": "b", "name": "no id", "ts": 1, "pid": 1, "cat": "c"},
        {"ph": "b", "name": "no pid", "ts": 1, "id": 5, "cat": "c"},
        {"ph": "i", "name": "no tid", "ts": 1, "pid": 1},
        {"ph": "i", "name": "process instant without pid", "ts": 1, "s": "p", "tid": 3},
        {"ph": "s", "name": "flow without id", "ts": 1, "pid": 1, "tid": 1},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": ""}},
        {"ph": "M", "name": "process_sort_index", "pid": 1, "args": {"sort_index": "first"}},
        {"ph": "i", "name": "kept", "ts": 2, "pid": 1, "tid": 1},
    ]
    db = ingest_json(events)
    assert db.stat("json_tokenizer_failure") == 2
    assert db.stat("json_parser_failure") == 8
    assert db.stat("flow_invalid_id") == 1
    assert db.rows("SELECT name, ts, dur FROM slice") == [("kept", 2000, 0)]


def test_mismatched_begin_and_end(ingest_json):
    events = [
        {"ph": "E", "name": "end before any begin", "ts": 1, "pid": 1, "tid": 1},
        {"ph": "B", "name": "outer", "ts": 2, "pid": 1, "tid": 1, "args": {"a": 1}},
        {"ph": "B", "name": "never ends", "ts": 3, "pid": 1, "tid": 1},
        {"ph": "E", "name": "outer", "ts": 6, "pid": 1, "tid": 1, "args": {"b": [1, None, 2]}},
        {"ph": "B", "name": "open at the end", "ts": 7, "pid": 1, "tid": 2},
        {"ph": "E", "ts": 8, "pid": 1, "tid": 3},
    ]
    db = ingest_json(events)
    rows = db.rows("SELECT name, ts, dur, depth FROM slice ORDER BY id")
    # The end named "outer" closes outer; its unclosed child stays open (-1), as in trace_processor.
    assert rows == [("outer", 2000, 4000, 0), ("never ends", 3000, -1, 1), ("open at the end", 7000, -1, 0)]
    # The end's args join the begin's; array elements that are null are left out.
    args = db.rows("""SELECT key, int_value FROM args WHERE arg_set_id = (SELECT arg_set_id FROM slice
                      WHERE name = 'outer') ORDER BY id""")
    assert args == [("args.a", 1), ("args.b[0]", 1), ("args.b[1]", 2)]


@pytest.mark.parametrize("name", ["trace.json", "trace.json.gz"])
def test_truncated_file_imports_what_came_before(ingest_json, name):
    events = [X(f"s{i}", i * 10, 5, args={"i": i, "pad": "x" * 50}) for i in range(200)]
    text = json.dumps({"traceEvents": events, "metadata": {"a": 1}})
    cut = text.index('"s150"') + 3
    db = ingest_json(text[:cut], name)
    assert db.count("slice") == 150
    assert db.stat("json_tokenizer_failure") == 1  # the cut-off event
    assert_valid_nesting(db)


def test_gzip_cut_short_is_counted(tmp_path):
    events = [X(f"s{i}", i * 10, 5, args={"noise": random.Random(i).randbytes(64).hex()}) for i in range(3000)]
    data = gzip.compress(json.dumps(events).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 2])
    ingest([str(path)], str(tmp_path / "cut.db"))
    db = FunctionsDB(tmp_path / "cut.db")
    assert db.stat("compressed_file_truncated") == 1
    assert 0 < db.count("slice") < 3000
    assert db.stat("json_tokenizer_failure") == 1


@pytest.mark.parametrize(
    "content",
    [
        b'{"traceEvents": []}',
        b'{"metadata": {"a": 1}}',
        b"[ ]",
        b'{"traceEvents": [',
        b"{not json at all",
        b'[{"ph": "X", "ts": 1',
    ],
)
def test_unusable_files_fail_with_one_line_and_leave_no_database(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    db = tmp_path / "out.db"
    with pytest.raises(IngestError) as err:
        ingest([str(path)], str(db))
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    assert os.listdir(tmp_path) == ["bad.json"]


def test_format_is_detected_from_content(tmp_path):
    path = tmp_path / "trace.bin"
    # Leading newline: the first byte is a proto packet's tag too.
    path.write_bytes(b"\n  [" + json.dumps(X("a", 1, 1)).encode() + b"]")
    summaries = ingest([str(path)], str(tmp_path / "out.db"))
    assert summaries[0].trace_type == "json"
    assert TraceDB(tmp_path / "out.db").one("SELECT str_value FROM metadata WHERE name = 'trace_type'") == "json"
    bad = tmp_path / "notes.txt"
    bad.write_bytes(b"hello")
    with pytest.raises(IngestError, match="Chrome JSON"):
        ingest([str(bad)], str(tmp_path / "out2.db"))


def test_tolerated_json(ingest_json):
    # Trailing commas, raw control characters in strings, bytes that are not UTF-8,
    # escapes of lone surrogates, a missing closing bracket of a bare array.
    text = (
        '[{"ph": "X", "name": "tab\there", "ts": 1, "dur": 1, "pid": 1, "tid": 1, "args": {"raw": "line\nbreak"}},\n'
        '{"ph": "X", "name": "lone \\ud800 surrogate", "ts": 3, "dur": 1, "pid": 1, "tid": 1},\n'
    )
    data = text.encode() + b'{"ph": "X", "name": "bad \xff byte", "ts": 5, "dur": 1, "pid": 1, "tid": 1},,\n'
    db = ingest_json(data)
    assert [n for (n,) in db.rows("SELECT name FROM slice ORDER BY ts")] == [
        "tab\there",
        "lone \\ud800 surrogate",
        "bad \\xff byte",
    ]
    assert db.one("SELECT string_value FROM args WHERE key = 'args.raw'") == "line\nbreak"
    assert problems(db) == {}


def test_timestamps_in_microseconds_strings_and_ties(ingest_json):
    events = [
        {"ph": "X", "name": "string ts", "ts": "1.5", "dur": "2", "pid": 1, "tid": 1},
        {"ph": "B", "name": "b", "ts": 10, "pid": 1, "tid": 2},
        {"ph": "X", "name": "short", "ts": 20, "dur": 1, "pid": 1, "tid": 2},
        {"ph": "X", "name": "long", "ts": 20, "dur": 5, "pid": 1, "tid": 2},
        {"ph": "E", "ts": 20, "pid": 1, "tid": 2},
        {"ph": "X", "name": "rounded", "ts": 30.0004, "dur": 0.0005, "pid": 1, "tid": 3},
        {"ph": "X", "name": "exponent", "ts": "4e1", "dur": 1, "pid": 1, "tid": 3},
        {"ph": "X", "name": "negative", "ts": -5, "dur": 1, "pid": 1, "tid": 3},
    ]
    db = ingest_json(events)
    rows = db.rows("SELECT name, ts, dur, depth FROM slice ORDER BY id")
    # At equal timestamps: the end first, then the longer complete event (it encloses the shorter).
    assert rows == [
        ("string ts", 1500, 2000, 0),
        ("b", 10000, 10000, 0),
        ("long", 20000, 5000, 0),
        ("short", 20000, 1000, 1),
        ("rounded", 30000, 1, 0),
        ("exponent", 40000, 1000, 0),
    ]
    assert db.stat("trace_sorter_negative_timestamp_dropped") == 1


def test_to_ns_follows_trace_processor():
    assert to_ns(3473608.458) == 3473608458
    assert to_ns("200.5") == 200500
    assert to_ns(7) == 7000
    for bad in ("100a", " 100", "01", "1.", "", "invalid", None, True, float("inf")):
        with pytest.raises(BadValue):
            to_ns(bad)


def test_args_flatten_like_trace_processor():
    out: list = []
    add_json_args(
        out, "args", "args", {"a": {"b": [1, None, [2.5, "x"]], "empty": {}}, "t": True, "big": 1 << 70, "n": None}
    )
    assert out == [
        ("args.a.b", "args.a.b[0]", "int", 1),
        ("args.a.b", "args.a.b[1][0]", "real", 2.5),
        ("args.a.b", "args.a.b[1][1]", "string", "x"),
        ("args.t", "args.t", "bool", 1),
        # Beyond int64: trace_processor's digit accumulation wraps (2^70 keeps no low bits).
        ("args.big", "args.big", "real", 0.0),
    ]


def test_async_slices_flows_counters_and_instants(ingest_json):
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "browser"}},
        {"ph": "b", "name": "load", "cat": "net", "id": "0x1", "ts": 1, "pid": 1, "tid": 1},
        {"ph": "b", "name": "load", "cat": "net", "id": "0x2", "ts": 2, "pid": 1, "tid": 1},
        {"ph": "n", "name": "step", "cat": "net", "id": "0x1", "ts": 3, "pid": 1, "tid": 1},
        {"ph": "e", "name": "load", "cat": "net", "id": "0x1", "ts": 4, "pid": 1, "tid": 1},
        {"ph": "e", "name": "load", "cat": "net", "id": "0x2", "ts": 5, "pid": 1, "tid": 1},
        {"ph": "b", "name": "local", "cat": "net", "id2": {"local": 7}, "ts": 6, "pid": 1, "tid": 1},
        {"ph": "e", "name": "local", "cat": "net", "id2": {"local": 7}, "ts": 7, "pid": 1, "tid": 1},
        X("send", 10, 5, bind_id="0xa", flow_out=True),
        X("relay", 20, 5, tid=2, bind_id="0xa", flow_in=True, flow_out=True),
        X("receive", 30, 5, tid=3, bind_id="0xa", flow_in=True),
        X("lost", 40, 5, tid=3, bind_id="0xb"),
        {"ph": "C", "name": "mem", "id": "gpu", "ts": 1, "pid": 1, "args": {"used": 5, "free": "7.5", "bad": "x"}},
        {"ph": "i", "name": "everywhere", "s": "g", "ts": 50, "pid": 1, "tid": 1},
        {"ph": "I", "name": "process", "s": "p", "ts": 51, "pid": 1, "tid": 1},
        {"ph": "T", "name": "Running", "ts": 60, "dur": 5, "pid": 1, "tid": 1, "args": {"cpu": 2}},
        {"ph": "O", "name": "snapshot", "id": "0x9", "ts": 70, "pid": 2, "tid": 9, "args": {"snapshot": {}}},
    ]
    db = ingest_json(events)
    tracks = db.rows("""SELECT slice.name, track.type, track.name, track.track_group_id IS NOT NULL FROM slice
                        JOIN track ON slice.track_id = track.id WHERE slice.dur != 5000 OR track.type LIKE 'legacy%'
                        ORDER BY slice.id""")
    assert tracks == [
        ("load", "legacy_async_global_slice", "load", 1),
        ("load", "legacy_async_global_slice", "load", 1),  # overlapping ids: a second track of the set
        ("step", "legacy_async_global_slice", "load", 1),
        ("local", "legacy_async_process_slice", "local", 1),
        ("everywhere", "legacy_chrome_global_instants", None, 0),
        ("process", "chrome_process_instant", None, 0),
    ]
    assert db.one("SELECT count(DISTINCT track_id) FROM slice WHERE name = 'load'") == 2
    assert db.rows("""SELECT o.name, i.name FROM flow JOIN slice o ON o.id = slice_out JOIN slice i ON i.id = slice_in
                      ORDER BY flow.id""") == [("send", "relay"), ("relay", "receive")]
    assert db.stat("flow_without_direction") == 1
    assert db.rows("""SELECT counter_track.name, value FROM counter JOIN counter_track ON counter.track_id = counter_track.id
                      ORDER BY counter_track.name""") == [("mem id: gpu free", 7.5), ("mem id: gpu used", 5.0)]
    assert db.stat("json_parser_failure") == 1  # the counter value that is not a number
    assert db.rows("SELECT ts, dur, state FROM thread_state") == [(60000, 5000, "Running")]
    assert db.rows("SELECT ts, dur, cpu FROM sched") == [(60000, 5000, 2)]
    assert db.one("SELECT name FROM process WHERE pid = 1") == "browser"
    assert db.one("SELECT count(*) FROM thread WHERE tid = 9") == 1  # an object snapshot only makes its thread known


def test_flow_v1_end_binds_to_next_slice_or_enclosing(ingest_json):
    events = [
        X("sender", 1, 10, tid=1, cat="ipc"),
        {"ph": "s", "name": "msg", "cat": "ipc", "id": 1, "ts": 2, "pid": 1, "tid": 1},
        {"ph": "f", "name": "msg", "cat": "ipc", "id": 1, "ts": 20, "pid": 1, "tid": 2},
        X("next on the end's thread", 25, 3, tid=2, cat="ipc"),
        {"ph": "s", "name": "other", "cat": "ipc", "id": 2, "ts": 3, "pid": 1, "tid": 1},
        X("enclosing", 30, 10, tid=3),
        {"ph": "f", "name": "other", "cat": "ipc", "id": 2, "ts": 31, "bp": "e", "pid": 1, "tid": 3},
    ]
    db = ingest_json(events)
    assert db.rows("""SELECT o.name, i.name, extract_arg(flow.arg_set_id, 'name') FROM flow
                      JOIN slice o ON o.id = slice_out JOIN slice i ON i.id = slice_in ORDER BY flow.id""") == [
        ("sender", "next on the end's thread", "msg"),
        ("sender", "enclosing", "other"),
    ]


def test_v8_profile_nodes_by_children_and_damage(ingest_json):
    def chunk(ts, nodes, samples, deltas, pid=5, tid=6):
        return {
            "ph": "P",
            "name": "ProfileChunk",
            "id": "0x2",
            "ts": ts,
            "pid": pid,
            "tid": tid,
            "args": {"data": {"cpuProfile": {"nodes": nodes, "samples": samples}, "timeDeltas": deltas}},
        }

    frame = lambda name, url="": {"functionName": name, "url": url}  # noqa: E731
    events = [
        chunk(1, [], [1], [1], pid=9),  # no Profile event for this profile
        {"ph": "P", "name": "Profile", "id": "0x2", "ts": 1, "pid": 5, "tid": 5, "args": {"data": {"startTime": 100}}},
        # DevTools style: children listed by the parent, a child seen before its parent.
        chunk(
            2,
            [
                {"id": 3, "callFrame": frame("leaf", "a.js")},
                {"id": 1, "callFrame": frame("(root)"), "children": [2]},
                {"id": 2, "callFrame": frame("mid", "a.js"), "children": [3]},
                {"id": 4, "parent": 99, "callFrame": frame("orphan")},
            ],
            [3, 2, 3, 42],
            [10, 5, 5, 5],
        ),
    ]
    db = ingest_json(events)
    assert db.stat("json_tokenizer_failure") == 1
    assert db.stat("legacy_v8_cpu_profile_invalid_callsite") == 1
    assert db.stat("legacy_v8_cpu_profile_invalid_sample") == 1
    rows = db.rows("""SELECT s.ts, f.name, c.depth, thread.tid FROM cpu_profile_stack_sample s
                      JOIN stack_profile_callsite c ON s.callsite_id = c.id JOIN stack_profile_frame f ON c.frame_id = f.id
                      JOIN thread USING (utid) ORDER BY s.ts""")
    assert rows == [(110000, "leaf", 2, 6), (115000, "mid", 1, 6), (120000, "leaf", 2, 6)]
    assert db.rows("SELECT name, source_file FROM stack_profile_symbol ORDER BY id")[:2] == [
        ("leaf", "a.js"),
        ("(root)", None),
    ]


def test_reader_is_the_same_whatever_the_chunk_size(monkeypatch):
    events = [X(f"é{i}", i, 1, args={"s": '}]\\"{[' * (i % 3), "n": [i, {"k": None}]}) for i in range(60)]
    text = json.dumps(
        {
            "other": {"nested": ["]}", 1.5]},
            "traceEvents": events + [{}],
            "displayTimeUnit": "ns",
            "metadata": {"m": [1, 2]},
            "after": "x",
        },
        ensure_ascii=False,
        indent=1,
    )
    data = text.encode()

    def read(chunk_bytes: int):
        monkeypatch.setattr(json_reader, "CHUNK_BYTES", chunk_bytes)
        stats = Stats()
        parts = list(JsonTraceReader(io.BytesIO(data), stats).parts())
        return parts, stats.single

    expected = read(1 << 20)
    assert [k for k, _ in expected[0]].count("event") == 61
    assert expected[0][-1] == ("metadata", '{\n  "m": [\n   1,\n   2\n  ]\n }')
    for size in (1, 2, 3, 7, 64):
        assert read(size) == expected


def test_reader_skips_large_values_without_holding_them(monkeypatch):
    """Values the importer does not use (systemTraceEvents, stackFrames, ...) stream past."""
    monkeypatch.setattr(json_reader, "CHUNK_BYTES", 1 << 14)
    big = "x" * (4 << 20)
    data = json.dumps(
        {"systemTraceEvents": big, "stackFrames": {"1": {"name": big}}, "traceEvents": [X("a", 1, 1)]}
    ).encode()
    longest = 0

    class Watched(JsonTraceReader):
        def _fill(self, at_least=json_reader.CHUNK_BYTES):
            nonlocal longest
            more = super()._fill(at_least)
            longest = max(longest, len(self.buf))
            return more

    parts = list(Watched(io.BytesIO(data), Stats()).parts())
    assert [k for k, _ in parts] == ["event"]
    assert longest < 1 << 16


def test_sorter_merges_many_runs_without_opening_them_all(monkeypatch):
    monkeypatch.setattr(sorter_module, "MERGE_FAN_IN", 3)
    rng = random.Random(7)
    items = [(rng.randrange(100), i) for i in range(2000)]
    s = Sorter(run_events=10, spill_batch=4)
    for ts, i in items:
        s.push(ts, (i,), i % 2)
    assert len(s._spills) < 20  # 200 runs, merged in threes as they came
    got = [(ts, event[0]) for ts, event in s.drain()]
    assert got == [(ts, i) for ts, _, i in sorted((ts, i % 2, i) for ts, i in items)]


def test_stat_names_exist():
    for name in (
        "json_tokenizer_failure",
        "json_parser_failure",
        "json_display_time_unit",
        "slice_spill_overlapping_complete_event",
        "legacy_v8_cpu_profile_invalid_callsite",
        "legacy_v8_cpu_profile_invalid_sample",
        "trace_sorter_negative_timestamp_dropped",
    ):
        assert name in REGISTRY
