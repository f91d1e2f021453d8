"""Chrome JSON traces tokenized by two processes (common/split_helper.py, JsonImporter's split):
a forked helper tokenizes the events from about the middle of the text to the end of their
array while the importer tokenizes the rest.

Large inputs are split by default; these tests force it on for small traces too and check that
the database is the one a single process writes, row for row, stats included, and that the
helper's share was really used (or, where the input cannot be split as planned, that the
importer read on alone).
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest
from database_rows import assert_same_database, table_rows
from shared_data import CASES, TRACES

from datasette_perfetto.conformance import load_passing_list, run_case
from datasette_perfetto.importers.common import split_helper
from datasette_perfetto.importers.json import importer as json_importer
from datasette_perfetto.ingest import ingest

HERE = Path(__file__).parent
SPLIT = {"separate_writer": True, "split_tokenize": True}
SINGLE = {"separate_writer": False, "split_tokenize": False}


@pytest.fixture
def handoffs(monkeypatch) -> list:
    """What each split import's importer got from its helper: (end, closed), or None when it read on alone."""
    seen: list = []
    original = json_importer.JsonImporter._take_helper_share

    def recording(self, at):
        taken = original(self, at)
        seen.append(taken)
        return taken

    monkeypatch.setattr(json_importer.JsonImporter, "_take_helper_share", recording)
    return seen


def both_ways(trace: Path, tmp_path: Path) -> tuple[Path, Path]:
    single, split = tmp_path / "single.db", tmp_path / "split.db"
    ingest([str(trace)], str(single), **SINGLE)
    ingest([str(trace)], str(split), **SPLIT)
    return single, split


def write(path: Path, document: object, gz: bool = False) -> Path:
    text = json.dumps(document, separators=(",", ":")).encode()
    path.write_bytes(gzip.compress(text) if gz else text)
    return path


def no_leftovers(tmp_path: Path) -> None:
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith((".db", ".json", ".gz"))) == []


@pytest.mark.parametrize("name", ["chrome_startup.json.gz", "chrome_v8_cpu_profile.json.gz"])
def test_real_traces_give_the_same_database(name, tmp_path, handoffs):
    single, split = both_ways(TRACES / name, tmp_path)
    assert_same_database(single, split)
    assert len(handoffs) == 1 and handoffs[0] is not None  # the helper's share was used
    no_leftovers(tmp_path)


def test_the_helper_tokenized_about_half(tmp_path, monkeypatch):
    shares = {}
    original = split_helper.Helper.result

    def result(self):
        share = original(self)
        shares["helper"] = share["events_read"]
        return share

    monkeypatch.setattr(split_helper.Helper, "result", result)
    ingest([str(TRACES / "chrome_startup.json.gz")], str(tmp_path / "x.db"), **SPLIT)
    assert 0.3 < shares["helper"] / 203_133 < 0.7  # of the trace's events


def tie_events(first_x: int | None, events: int = 4000) -> list[dict]:
    """Pairs of slices on a few threads where a slice ends at the very timestamp the next begins,
    with the `E` after the `B` in the file: which comes first depends on whether an `X` event was
    seen before the `E` (trace_processor sorts ends first from then on). One `X` at event
    `first_x` (None: none)."""
    out: list[dict] = []
    ts = 1000
    while len(out) < events:
        tid = 1 + len(out) % 3
        out.append({"ph": "B", "name": "outer", "pid": 1, "tid": tid, "ts": ts})
        out.append({"ph": "B", "name": "next", "pid": 1, "tid": tid, "ts": ts + 10})
        out.append({"ph": "E", "pid": 1, "tid": tid, "ts": ts + 10})
        out.append({"ph": "E", "pid": 1, "tid": tid, "ts": ts + 20})
        ts += 30
    if first_x is not None:
        at = out[first_x]["ts"]
        out.insert(first_x, {"ph": "X", "name": "complete", "pid": 2, "tid": 2, "ts": at, "dur": 5})
    return out


@pytest.mark.parametrize(
    "first_x", [None, 100, 3000, 3990], ids=["no-X", "X-in-the-importer-share", "X-in-the-helper-share", "X-at-the-end"]
)
def test_end_events_sort_as_one_process_sorts_them(first_x, tmp_path, handoffs):
    trace = write(tmp_path / "ties.json", tie_events(first_x))
    single, split = both_ways(trace, tmp_path)
    assert_same_database(single, split)
    assert handoffs and handoffs[0] is not None


def test_the_order_really_depends_on_the_x(tmp_path):
    """The ties above are observable: `next` nests under `outer` before the first X, not after."""
    trace = write(tmp_path / "ties.json", tie_events(2000))
    db = tmp_path / "x.db"
    ingest([str(trace)], str(db), **SINGLE)
    slices = table_rows(db)["slice"]
    depth_of_next = [row[6] for row in slices if row[5] == "next"]
    assert 1 in depth_of_next and 0 in depth_of_next


def v8_profile(pid: int, tid: int, ts: int, profile_id: str) -> list[dict]:
    nodes = [
        {"callFrame": {"functionName": "(root)", "scriptId": 0}, "id": 1},
        {"callFrame": {"functionName": "work", "scriptId": 1, "url": "a.js"}, "id": 2, "parent": 1},
    ]
    out: list[dict] = [
        {
            "ph": "P",
            "name": "Profile",
            "id": profile_id,
            "pid": pid,
            "tid": tid,
            "ts": ts,
            "args": {"data": {"startTime": ts}},
        }
    ]
    for i in range(3):
        data = {"cpuProfile": {"nodes": nodes if i == 0 else [], "samples": [2, 1, 2]}, "timeDeltas": [10, 20, 30]}
        out.append(
            {
                "ph": "P",
                "name": "ProfileChunk",
                "id": profile_id,
                "pid": pid,
                "tid": tid,
                "ts": ts + i,
                "args": {"data": data},
            }
        )
    return out


def test_profile_chunks_on_both_sides_of_the_split(tmp_path, handoffs):
    """A V8 profile whose chunks straddle the split: the helper passes its `P` events to the
    importer, which tokenizes them after its own (their sample times are deltas in file order)."""
    events: list[dict] = []
    for i in range(2000):
        events.append({"ph": "X", "name": f"task{i % 7}", "pid": 1, "tid": 1, "ts": 1000 + i * 10, "dur": 5})
        if i % 400 == 0:
            profile = v8_profile(1, 1, 1000 + i * 10, "0x1")
            events.extend(profile[1:] if i else profile)
    single, split = both_ways(write(tmp_path / "v8.json", {"traceEvents": events}), tmp_path)
    assert_same_database(single, split)
    assert handoffs and handoffs[0] is not None
    conn = sqlite3.connect(split)
    try:
        assert conn.execute("SELECT count(*) FROM cpu_profile_stack_sample").fetchone()[0] == 5 * 3 * 3
    finally:
        conn.close()


def test_the_rest_of_the_object_after_the_events(tmp_path, handoffs):
    """systemTraceEvents, metadata and a second traceEvents array after the helper's share: read by the
    importer, sorted after the helper's events at equal timestamps, an `X` in the helper's share counted."""
    events = [{"ph": "B", "name": f"s{i}", "pid": 1, "tid": 1, "ts": 1000 + i} for i in range(1500)]
    events += [{"ph": "X", "name": "late", "pid": 1, "tid": 2, "ts": 1000, "dur": 10}]
    events += [{"ph": "E", "pid": 1, "tid": 1, "ts": 2500} for _ in range(1500)]
    events += [{"ph": "B", "name": "first", "pid": 1, "tid": 3, "ts": 2000}]
    document = {
        "traceEvents": events,
        "systemTraceEvents": "# tracer: nop\n  <idle>-0 (-----) [000] d..2 0.001000: sched_switch: prev_comm=a "
        "prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=b next_pid=8 next_prio=120\n",
        "metadata": {"clock-domain": "LINUX_CLOCK_MONOTONIC", "nested": {"a": [1, 2]}},
    }
    second = [
        {"ph": "E", "pid": 1, "tid": 2, "ts": 2500},
        {"ph": "B", "name": "second", "pid": 1, "tid": 3, "ts": 2000},
    ]
    text = json.dumps(document)[:-1] + f', "traceEvents": {json.dumps(second)}}}'
    trace = tmp_path / "object.json"
    trace.write_text(text)
    single, split = both_ways(trace, tmp_path)
    assert_same_database(single, split)
    depths = {row[5]: row[6] for row in table_rows(split)["slice"] if row[5] in ("first", "second")}
    assert depths == {"first": 0, "second": 1}  # in file order at the same timestamp
    assert handoffs and handoffs[0] is not None and handoffs[0][1] is True


def test_a_cut_gzip_file(tmp_path, handoffs, monkeypatch):
    """Cut inside the helper's share: the same events, and the cut counted once. (A cut file's
    trailer holds no size: the split point is taken from the text here.)"""
    events = [
        {"ph": "X", "name": f"s{i % 5}", "pid": 1, "tid": 1 + i % 4, "ts": 1000 + i, "dur": 3} for i in range(6000)
    ]
    text = json.dumps({"traceEvents": events}).encode()
    monkeypatch.setattr(json_importer, "estimated_text_size", lambda path, size: len(text))
    whole = gzip.compress(text)
    trace = tmp_path / "cut.json.gz"
    trace.write_bytes(whole[: int(len(whole) * 0.8)])
    single, split = both_ways(trace, tmp_path)
    assert_same_database(single, split)
    stats = {r[1]: r[5] for r in table_rows(single)["stats"]}
    assert stats["compressed_file_truncated"] == 1
    assert handoffs and handoffs[0] is not None and handoffs[0][1] is False


def test_a_bare_array_without_its_end_and_bad_elements(tmp_path, handoffs):
    events = [json.dumps({"ph": "X", "name": "s", "pid": 1, "tid": 1, "ts": 1000 + i, "dur": 3}) for i in range(3000)]
    events[2500] = '{"ph": "X", "ts": "soon", "dur": 1}'  # counted as json_tokenizer_failure (by the helper)
    events[2600] = "17"  # not an event object
    events[2700] = '{"ph": "X", "name": "trailing", "ts": 5, "dur": 1,}'  # read by the lenient decoder
    trace = tmp_path / "bare.json"
    trace.write_text("[" + ",\n".join(events) + ",")
    single, split = both_ways(trace, tmp_path)
    assert_same_database(single, split)
    stats = {r[1]: r[5] for r in table_rows(single)["stats"]}
    assert stats["json_tokenizer_failure"] == 2
    assert handoffs and handoffs[0] is not None


def test_a_wrong_guess_of_where_an_event_starts(tmp_path, handoffs):
    """Strings that look like event boundaries right after the split: the helper starts at one,
    the importer's event there starts elsewhere, so the importer reads on alone."""
    events = [{"ph": "X", "name": "s", "pid": 1, "tid": 1, "ts": 1000 + i, "dur": 3} for i in range(800)]
    events.insert(400, {"ph": "i", "name": "odd", "pid": 1, "tid": 1, "ts": 1400, "args": {"v": "},{" * 20_000}})
    single, split = both_ways(write(tmp_path / "tricky.json", events), tmp_path)
    assert_same_database(single, split)
    assert handoffs == [None]
    no_leftovers(tmp_path)


def test_a_failed_helper_leaves_the_importer_reading_alone(tmp_path, handoffs, monkeypatch):
    def failing(self, side, reopen, split_at):
        raise RuntimeError("no")

    monkeypatch.setattr(json_importer.JsonImporter, "_helper_share", failing)
    events = [{"ph": "X", "name": "s", "pid": 1, "tid": 1, "ts": 1000 + i, "dur": 3} for i in range(800)]
    single, split = both_ways(write(tmp_path / "plain.json", events), tmp_path)
    assert_same_database(single, split)
    assert handoffs == [None]
    no_leftovers(tmp_path)


def test_events_that_end_before_the_split_point(tmp_path, handoffs):
    """Most of the text after the events (a large metadata object): the importer never reaches
    the split point inside the array, and stops the helper."""
    events = [{"ph": "X", "name": "s", "pid": 1, "tid": 1, "ts": 1000 + i, "dur": 3} for i in range(50)]
    document = {"traceEvents": events, "metadata": {"blob": ["x" * 100] * 500}}
    single, split = both_ways(write(tmp_path / "meta.json", document), tmp_path)
    assert_same_database(single, split)
    assert handoffs == []
    no_leftovers(tmp_path)


JSON_CASES = [
    c for c in load_passing_list(str(HERE / "conformance_passing.txt")) if (CASES / c / "trace.json").exists()
]


@pytest.mark.parametrize("case_id", JSON_CASES)
def test_conformance_cases_pass_split(case_id, tmp_path):
    result = run_case(str(CASES / case_id), str(tmp_path), **SPLIT)
    assert result.passed, result.reason


def test_the_text_size_of_plain_and_gzip_files(tmp_path):
    text = json.dumps([{"ph": "X", "name": "s", "ts": i, "dur": 1} for i in range(1000)]).encode()
    plain, packed = tmp_path / "a.json", tmp_path / "a.json.gz"
    plain.write_bytes(text)
    packed.write_bytes(gzip.compress(text))
    assert json_importer.estimated_text_size(str(plain), len(text)) == len(text)
    # From the gzip trailer; never less than the file itself.
    assert json_importer.estimated_text_size(str(packed), packed.stat().st_size) == len(text)
    assert json_importer.estimated_text_size(str(tmp_path / "gone.json"), 123) == 123
