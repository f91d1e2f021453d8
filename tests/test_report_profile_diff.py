"""Baseline diffs of the callstack nouns (stack-samples and heap-profile functions and call trees, heap-dump types) and
the per-instance average of the slices diff: every delta against hand-computed figures and against SQL over each
database; web (`?baseline=`) and the command line give the same figures; the JSON follows report.proto.

The pair (tests/profile_diff_traces.py): `hot` sampled 8 then 16 times, `old` removed, `fresh` added;
`alloc_buf` 8 allocations of 64 B then 16 of 128 B; com.Cache 2 x 100 B then 4 x 120 B, com.Old removed,
com.New added.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import get_json, served
from datasette.cli import cli
from profile_diff_traces import ALLOCATIONS, OBJECTS, SAMPLES, build_profile_diff_trace
from test_report_diff import check_diff_golden, demo_pair, diff  # noqa: F401 (demo_pair: a fixture)
from test_report_golden import case_id, check_json

from datasette_perfetto.ingest import ingest
from datasette_perfetto.report.render import to_json, to_text

CASES = [
    ("stack-samples", "functions", {}),
    ("stack-samples", "functions", {"sort": "total", "min_count": "5"}),
    ("stack-samples", "top-down", {}),
    ("stack-samples", "bottom-up", {}),
    ("heap-profile", "functions", {}),
    ("heap-profile", "top-down", {}),
    ("heap-profile", "bottom-up", {"max_lines": "3"}),
    ("heap-dump", "types", {}),
    ("", "", {}),
]


@pytest.fixture(scope="module")
def profile_pair(tmp_path_factory) -> tuple[Path, Path]:
    """(baseline, target) databases, base.db and target.db (the Datasette names base, target)."""
    root = tmp_path_factory.mktemp("profile-diff")
    out = []
    for flavour, name in (("baseline", "base"), ("target", "target")):
        trace = root / f"{name}.pftrace"
        trace.write_bytes(build_profile_diff_trace(flavour))
        ingest([str(trace)], str(root / f"{name}.db"))
        out.append(root / f"{name}.db")
    return out[0], out[1]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_profile_diff_text_matches_golden(profile_pair, case):
    check_diff_golden(profile_pair, case, "diff-profile-" + case_id(case))


def diff_json(pair, noun, view, **flags) -> dict:
    data = to_json(diff(pair, noun, view, **flags))
    check_json(data)
    return data


def by_name(rows: list[dict]) -> dict[str, dict]:
    return {r["name"]: r for r in rows}


def side(row: dict, which: str, field: str) -> int | float:
    return row[which][field] if row[which] is not None else 0


# -- hand-computed figures ----------------------------------------------------------------------------------


def sample_counts(flavour: str) -> dict[str, tuple[int, int]]:
    """function -> (self, total) samples from the trace's own definition."""
    out: dict[str, list[int]] = {}
    for stack, n in SAMPLES[flavour].items():
        out.setdefault(stack[-1], [0, 0])[0] += n
        for f in set(stack):
            out.setdefault(f, [0, 0])[1] += n
    return {k: (v[0], v[1]) for k, v in out.items()}


def test_stack_functions_diff_marks_every_known_difference(profile_pair):
    data = diff_json(profile_pair, "stack-samples", "functions")
    out = data["stack_samples_functions_diff"]
    rows = by_name(out["rows"])
    assert {n: r["change"] for n, r in rows.items()} == {
        "hot": "changed",
        "work": "changed",
        "main": "changed",
        "idle": "unchanged",
        "old": "removed",
        "fresh": "added",
    }
    assert (rows["hot"]["self_count_delta"], rows["hot"]["total_count_delta"]) == (8, 8)  # 8 -> 16
    assert (rows["work"]["self_count_delta"], rows["work"]["total_count_delta"]) == (0, 8)
    assert (rows["main"]["self_count_delta"], rows["main"]["total_count_delta"]) == (0, 7)
    assert (rows["old"]["self_count_delta"], rows["old"]["target"]) == (-3, None)
    assert (rows["fresh"]["total_count_delta"], rows["fresh"]["baseline"]) == (2, None)
    assert (out["baseline_total_samples"], out["target_total_samples"]) == (20, 27)
    assert [r["name"] for r in out["rows"]][:3] == ["hot", "old", "fresh"]  # by |self delta|
    s = out["summary"]
    assert (s["sort"], s["sort_column"], s["added"], s["removed"], s["changed"], s["unchanged"]) == (
        "self",
        "self_count",
        1,
        1,
        3,
        1,
    )
    base, target = sample_counts("baseline"), sample_counts("target")
    for name, r in rows.items():
        b, t = base.get(name, (0, 0)), target.get(name, (0, 0))
        assert (r["self_count_delta"], r["total_count_delta"]) == (t[0] - b[0], t[1] - b[1]), name
        assert r["self_percent_delta"] == pytest.approx(100 * t[0] / 27 - 100 * b[0] / 20), name


def sql_samples(path: Path) -> dict[str, tuple[int, int]]:
    """function -> (self, total) samples, straight from stack_sample and the callsite tables."""
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            """WITH RECURSIVE walk(sample, leaf, id) AS (
  SELECT s.id, s.callsite_id, s.callsite_id FROM stack_sample s
  UNION ALL
  SELECT w.sample, w.leaf, c.parent_id FROM walk w JOIN stack_profile_callsite c ON c.id = w.id
  WHERE c.parent_id IS NOT NULL
)
SELECT f.name, sum(w.id = w.leaf), count(DISTINCT w.sample)
FROM walk w JOIN stack_profile_callsite c ON c.id = w.id JOIN stack_profile_frame f ON f.id = c.frame_id
GROUP BY f.name"""
        ).fetchall()
    finally:
        conn.close()
    return {name: (own, total) for name, own, total in rows}


def test_stack_functions_deltas_match_sql_on_each_database(profile_pair):
    base, target = (sql_samples(p) for p in profile_pair)
    rows = by_name(diff_json(profile_pair, "stack-samples", "functions")["stack_samples_functions_diff"]["rows"])
    assert set(rows) == set(base) | set(target)
    for name, r in rows.items():
        b, t = base.get(name, (0, 0)), target.get(name, (0, 0))
        assert (side(r, "baseline", "self_count"), side(r, "baseline", "total_count")) == b, name
        assert (side(r, "target", "self_count"), side(r, "target", "total_count")) == t, name
        assert (r["self_count_delta"], r["total_count_delta"]) == (t[0] - b[0], t[1] - b[1]), name


def sql_allocations(path: Path) -> dict[str, tuple[int, int, int]]:
    """leaf function -> (bytes allocated, allocations, bytes allocated minus freed)."""
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            """SELECT f.name, sum(max(a.size, 0)), sum(max(a.count, 0)), sum(a.size)
FROM heap_profile_allocation a
JOIN stack_profile_callsite c ON c.id = a.callsite_id JOIN stack_profile_frame f ON f.id = c.frame_id
GROUP BY f.name"""
        ).fetchall()
    finally:
        conn.close()
    return {name: (size, count, unreleased) for name, size, count, unreleased in rows}


def test_heap_functions_diff_has_per_allocation_deltas(profile_pair):
    out = diff_json(profile_pair, "heap-profile", "functions")["heap_profile_functions_diff"]
    rows = by_name(out["rows"])
    assert {n: r["change"] for n, r in rows.items()} == {
        "alloc_buf": "changed",
        "main": "changed",
        "old_alloc": "removed",
        "new_alloc": "added",
    }
    buf = rows["alloc_buf"]
    # 8 allocations of 64 B, then 16 of 128 B: totals and the per-allocation average both move.
    assert (buf["baseline"]["self_count"], buf["target"]["self_count"], buf["self_count_delta"]) == (8, 16, 8)
    assert (buf["baseline"]["self_bytes"], buf["target"]["self_bytes"], buf["self_bytes_delta"]) == (512, 2048, 1536)
    assert (buf["baseline"]["avg_size"], buf["target"]["avg_size"], buf["avg_size_delta"]) == (64, 128, 64)
    assert buf["self_unreleased_bytes_delta"] == 2048 - (512 - 128)
    assert (rows["old_alloc"]["avg_size_delta"], rows["new_alloc"]["avg_size_delta"]) == (-100, 100)
    assert (out["baseline_total_bytes"], out["target_total_bytes"]) == (712, 2448)
    assert (out["baseline_total_count"], out["target_total_count"]) == (10, 20)
    # main allocates nothing itself: its total is every allocation under it; its average, of its own
    # allocations, is none on either side.
    assert (rows["main"]["total_bytes_delta"], rows["main"]["avg_size_delta"]) == (2448 - 712, 0)
    assert (rows["main"]["baseline"]["avg_size"], rows["main"]["target"]["avg_size"]) == (0, 0)
    # Against SQL on each database, and the trace's own definition.
    base, target = (sql_allocations(p) for p in profile_pair)
    for name, r in rows.items():
        if name == "main":
            continue
        b, t = base.get(name, (0, 0, 0)), target.get(name, (0, 0, 0))
        assert (r["self_bytes_delta"], r["self_count_delta"]) == (t[0] - b[0], t[1] - b[1]), name
        assert r["self_unreleased_bytes_delta"] == t[2] - b[2], name
        avg = (t[0] // t[1] if t[1] else 0) - (b[0] // b[1] if b[1] else 0)
        assert r["avg_size_delta"] == avg, name
        defined = {
            f: ALLOCATIONS[f][("main", name)] if ("main", name) in ALLOCATIONS[f] else (0, 0, 0, 0)
            for f in ("baseline", "target")
        }
        assert r["self_bytes_delta"] == defined["target"][0] - defined["baseline"][0], name


def sql_types(path: Path) -> dict[str, tuple[int, int]]:
    """class -> (reachable objects, their self size)."""
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            """SELECT c.name, count(*), sum(o.self_size) FROM heap_graph_object o
JOIN heap_graph_class c ON c.id = o.type_id WHERE o.reachable GROUP BY c.name"""
        ).fetchall()
    finally:
        conn.close()
    return {name: (count, size) for name, count, size in rows}


def test_heap_dump_types_diff_has_per_object_deltas(profile_pair):
    out = diff_json(profile_pair, "heap-dump", "types")["heap_dump_types_diff"]
    rows = by_name(out["rows"])
    assert {n: r["change"] for n, r in rows.items()} == {
        "com.Cache": "changed",
        "byte[]": "unchanged",
        "com.Old": "removed",
        "com.New": "added",
    }
    cache = rows["com.Cache"]
    assert (cache["live_objects_delta"], cache["self_size_delta"], cache["avg_size_delta"]) == (2, 480 - 200, 20)
    # Retained: each cache and the byte[] the first two hold.
    assert (cache["baseline"]["retained_size"], cache["target"]["retained_size"]) == (2 * 150, 4 * 120 + 2 * 50)
    assert cache["retained_size_delta"] == 280
    assert (rows["com.Old"]["retained_size_delta"], rows["com.New"]["retained_size_delta"]) == (-30, 40)
    assert out["summary"]["sort"] == "retained" and out["has_dominators"]
    assert (out["baseline_total_objects"], out["target_total_objects"]) == (5, 7)
    base, target = (sql_types(p) for p in profile_pair)
    for name, r in rows.items():
        b, t = base.get(name, (0, 0)), target.get(name, (0, 0))
        assert (r["live_objects_delta"], r["self_size_delta"]) == (t[0] - b[0], t[1] - b[1]), name
        avg = (t[1] // t[0] if t[0] else 0) - (b[1] // b[0] if b[0] else 0)
        assert r["avg_size_delta"] == avg, name
        defined = {f: OBJECTS[f].get(name, (0, 0)) for f in ("baseline", "target")}
        assert r["live_objects_delta"] == defined["target"][0] - defined["baseline"][0], name


def test_row_filters_and_sorts_of_the_profile_diffs(profile_pair):
    # min_count counts self samples (the Samples column) and keeps a function when either side reaches it:
    # work (4 and 4), main (0), fresh (2) and old (3) go.
    out = diff_json(profile_pair, "stack-samples", "functions", min_count="5", sort="total")
    rows = out["stack_samples_functions_diff"]["rows"]
    assert [r["name"] for r in rows] == ["hot", "idle"]
    assert out["stack_samples_functions_diff"]["summary"]["sort_column"] == "total_count"
    counted = diff_json(profile_pair, "heap-dump", "types", sort="count")["heap_dump_types_diff"]
    assert [r["name"] for r in counted["rows"]][0] == "com.Cache"
    named = diff_json(profile_pair, "heap-profile", "functions", sort="name")["heap_profile_functions_diff"]
    assert [r["name"] for r in named["rows"]] == sorted(r["name"] for r in named["rows"])


def test_overview_diff_has_the_callstack_nouns(profile_pair):
    out = diff_json(profile_pair, "", "")["overview_diff"]
    assert [r["name"] for r in out["stack_samples"]["rows"]] == ["hot", "old", "fresh", "work", "main"]
    assert out["heap_profile"]["summary"]["added"] == 1 and out["heap_dump"]["summary"]["removed"] == 1
    assert {a["noun"] for a in out["absent"]} == {"slices", "scheduling", "counters"}


def test_slices_diff_has_the_per_instance_average(demo_pair):  # noqa: F811
    import sqlite3

    rows = by_name(to_json(diff(demo_pair, "slices", "table"))["slices_table_diff"]["rows"])
    ms = 1_000_000
    # Only on the decode thread: 4 x 30 ms added, 3 x 20 ms removed.
    assert rows["BitmapDecode"]["avg_dur_delta"] == 30 * ms and rows["LegacyDecode"]["avg_dur_delta"] == -20 * ms
    averages = []
    for path in demo_pair:
        conn = sqlite3.connect(path)
        averages.append(
            dict(conn.execute("SELECT name, sum(max(dur, 0)) / count(*) FROM slice GROUP BY name").fetchall())
        )
        conn.close()
    base, target = averages
    # Raster: the same count, 60 ms more in all (2 x 10 ms became 2 x 40 ms among the demo's own).
    raster = rows["Raster"]
    assert (raster["baseline"]["stats"]["avg"], raster["target"]["stats"]["avg"]) == (base["Raster"], target["Raster"])
    assert raster["avg_dur_delta"] == target["Raster"] - base["Raster"] > 0
    for name, r in rows.items():
        assert r["avg_dur_delta"] == target.get(name, 0) - base.get(name, 0), name
    # The table keeps its two value columns (total and count); the average is in the JSON.
    assert "Baseline avg" not in to_text(diff(demo_pair, "slices", "table"))


def tree_paths(rows: list[dict]) -> dict[tuple[str, ...], dict]:
    paths: list[tuple[str, ...]] = []
    for r in rows:
        paths.append((paths[r["parent"]] if r["parent"] >= 0 else ()) + (r["name"],))
    return dict(zip(paths, rows))


def defined_tree(weights: dict[tuple[str, ...], tuple[int, int]], bottom: bool) -> dict[tuple[str, ...], list[int]]:
    """call path -> [self, total, count], from (stack outermost first) -> (value, count)."""
    out: dict[tuple[str, ...], list[int]] = {}
    for stack, (value, count) in weights.items():
        chain = tuple(reversed(stack)) if bottom else stack
        for i in range(1, len(chain) + 1):
            node = out.setdefault(chain[:i], [0, 0, 0])
            node[1] += value
            node[2] += count
            # top-down: self at the leaf; bottom-up: every node of the chain carries its root's self
            if bottom or i == len(chain):
                node[0] += value
    return out


@pytest.mark.parametrize("view", ["top-down", "bottom-up"])
def test_stack_tree_diffs_join_on_the_call_path(profile_pair, view):
    out = diff_json(profile_pair, "stack-samples", view)[f"stack_samples_{view.replace('-', '_')}_diff"]
    rows = tree_paths(out["rows"])
    bottom = view == "bottom-up"
    base, target = (defined_tree({k: (n, 0) for k, n in SAMPLES[f].items()}, bottom) for f in ("baseline", "target"))
    assert set(rows) == set(base) | set(target)  # every node fits in the default max_lines
    for path, r in rows.items():
        b, t = base.get(path, [0, 0, 0]), target.get(path, [0, 0, 0])
        assert (r["baseline_total_value"], r["target_total_value"]) == (b[1], t[1]), path
        assert (r["baseline_self_value"], r["target_self_value"]) == (b[0], t[0]), path
        assert (r["total_value_delta"], r["self_value_delta"]) == (t[1] - b[1], t[0] - b[0]), path
        expected = "added" if path not in base else "removed" if path not in target else None
        assert r["change"] == (expected or ("changed" if b != t else "unchanged")), path
    top = ("hot", "work", "main") if bottom else ("main", "work", "hot")
    assert rows[top]["total_value_delta"] == 8 and rows[top]["change"] == "changed"  # 8 -> 16 samples
    assert rows[("old",) if bottom else ("main", "old")]["change"] == "removed"
    assert rows[("fresh", "main") if bottom else ("main", "fresh")]["change"] == "added"
    assert (out["baseline_total_value"], out["target_total_value"], out["unit"]) == (20, 27, "samples")
    # The largest movement first among siblings.
    roots = [r["name"] for r in out["rows"] if r["parent"] == -1]
    assert roots[0] == ("hot" if bottom else "main")


def test_heap_tree_diff_has_per_allocation_deltas(profile_pair):
    out = diff_json(profile_pair, "heap-profile", "top-down")["heap_profile_top_down_diff"]
    rows = tree_paths(out["rows"])
    weights = {f: {k: (v[0], v[2]) for k, v in ALLOCATIONS[f].items()} for f in ("baseline", "target")}
    base, target = (defined_tree(weights[f], False) for f in ("baseline", "target"))
    assert set(rows) == set(base) | set(target)
    for path, r in rows.items():
        b, t = base.get(path, [0, 0, 0]), target.get(path, [0, 0, 0])
        assert (r["total_value_delta"], r["total_count_delta"]) == (t[1] - b[1], t[2] - b[2]), path
        avg = (t[1] // t[2] if t[2] else 0) - (b[1] // b[2] if b[2] else 0)
        assert r["avg_delta"] == avg, path
    buf = rows[("main", "alloc_buf")]
    assert (buf["baseline_avg"], buf["target_avg"], buf["avg_delta"]) == (64, 128, 64)
    assert (buf["baseline_total_count"], buf["target_total_count"]) == (8, 16)
    # Pruned: max_lines bounds the union shown, a footnote counts the rest.
    result = diff(profile_pair, "heap-profile", "bottom-up", max_lines="3")
    data = to_json(result)
    check_json(data)
    assert len(data["heap_profile_bottom_up_diff"]["rows"]) == 3
    assert any("3 more call tree nodes below max_lines 3" in f["text"] for f in data["footnotes"])


# -- the same figures on the web and the command line --------------------------------------------------------


def cli_json(pair, *args) -> dict:
    base, target = (str(p) for p in pair)
    done = CliRunner().invoke(cli, ["perfetto", "report", "--baseline", base, target, *args, "--format", "json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


FIGURES = {
    "stack_samples_functions_diff": ("self_count_delta", "total_count_delta", "self_percent_delta"),
    "heap_profile_functions_diff": ("self_bytes_delta", "self_count_delta", "avg_size_delta", "total_bytes_delta"),
    "heap_dump_types_diff": ("retained_size_delta", "live_objects_delta", "avg_size_delta", "self_size_delta"),
    "stack_samples_top_down_diff": ("baseline_total_value", "target_total_value", "total_value_delta", "parent"),
    "heap_profile_bottom_up_diff": ("total_value_delta", "total_count_delta", "avg_delta", "parent"),
}


@pytest.mark.web
@pytest.mark.asyncio
@pytest.mark.parametrize(
    "noun, view, field",
    [
        ("stack-samples", "functions", "stack_samples_functions_diff"),
        ("heap-profile", "functions", "heap_profile_functions_diff"),
        ("heap-dump", "types", "heap_dump_types_diff"),
        ("stack-samples", "top-down", "stack_samples_top_down_diff"),
        ("heap-profile", "bottom-up", "heap_profile_bottom_up_diff"),
    ],
)
async def test_web_and_cli_give_the_same_figures(profile_pair, noun, view, field):
    ds = served(*profile_pair)
    web = await get_json(ds, f"/target/-/report/{noun}/{view}.json?baseline=base")
    check_json(web)
    cli_out = cli_json(profile_pair, noun, view)
    check_json(cli_out)

    def figures(data: dict) -> list:
        return [
            (r["name"], r["change"], r.get("baseline"), r.get("target"), *(r[f] for f in FIGURES[field]))
            for r in data[field]["rows"]
        ]

    assert figures(web) == figures(cli_out) and len(figures(web)) >= 4
    assert web[field]["summary"] == cli_out[field]["summary"]


@pytest.mark.web
@pytest.mark.asyncio
async def test_profile_diff_page_html(profile_pair):
    ds = served(*profile_pair)
    r = await ds.client.get("/target/-/report/heap-profile?baseline=base")
    assert r.status_code == 200
    page = r.text
    assert '<td class="perfetto-align-l perfetto-diff-added" title="only in the target">added</td>' in page
    assert '<td class="perfetto-align-r perfetto-diff-up">+64 B</td>' in page  # alloc_buf's average
    # A removed function links to who called it in the baseline, the others in the target.
    assert '<a href="/base/-/report/heap-profile/bottom-up?name=old_alloc">old_alloc</a>' in page
    assert '<a href="/target/-/report/heap-profile/bottom-up?name=alloc_buf">alloc_buf</a>' in page
    for path in ("/target/-/report/stack-samples", "/target/-/report/heap-dump"):
        page = (await ds.client.get(path)).text
        assert '<select name="baseline">' in page, path
    tree = (await ds.client.get("/target/-/report/stack-samples/top-down?baseline=base")).text
    assert '<td class="perfetto-align-l perfetto-diff-removed" title="only in the baseline">removed</td>' in tree
    assert '<a href="/base/-/report/stack-samples/bottom-up?name=old">' in tree
