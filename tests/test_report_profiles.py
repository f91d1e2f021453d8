"""The callstack nouns (stack-samples, heap-profile, heap-dump): numbers against the V8 profile's own JSON and
against small hand-built profiles; tree pruning, collapse, bottom-up roots, recursion; HTML flame graphs."""

from __future__ import annotations

import gzip
import json
import random
import shutil
import sqlite3
from collections import Counter

import pytest
from conftest import V8_PROFILE, connect_with_functions, report_of, served
from google.protobuf import json_format

from datasette_perfetto.report import report_pb2
from datasette_perfetto.report.render import to_json, to_text

HOSTILE = '<script>alert("x")</script>&amp;'


def report(path, noun, view, **flags):
    return report_of(path, noun, view, {k: str(v) for k, v in flags.items()})


def result(path, noun, view, **flags):
    r = report(path, noun, view, **flags)
    data = to_json(r)
    json_format.ParseDict(data, report_pb2.Report())  # valid against report.proto
    return r.result_message(), r


# -- the V8 CPU profile -----------------------------------------------------------------------------------


def v8_counts_from_json():
    """Per function: (self, total) sample counts computed straight from the Profile/ProfileChunk events."""
    with gzip.open(V8_PROFILE, "rt") as f:
        events = json.load(f)["traceEvents"]
    parents: dict[tuple, dict[int, int]] = {}
    names: dict[tuple, dict[int, str]] = {}
    samples: list[tuple[tuple, int]] = []
    for e in events:
        if e.get("name") != "ProfileChunk":
            continue
        key = (e["pid"], e["id"])
        profile = e["args"]["data"].get("cpuProfile", {})
        for node in profile.get("nodes", []):
            names.setdefault(key, {})[node["id"]] = node["callFrame"]["functionName"] or "(unnamed)"
            if "parent" in node:
                parents.setdefault(key, {})[node["id"]] = node["parent"]
        samples += [(key, s) for s in profile.get("samples", [])]
    self_count, total_count = Counter(), Counter()
    for key, node in samples:
        self_count[names[key][node]] += 1
        on_stack = set()
        while node is not None:
            on_stack.add(names[key][node])
            node = parents.get(key, {}).get(node)
        total_count.update(on_stack)
    return len(samples), self_count, total_count


def test_v8_top_down_root_is_every_sample(v8_db):
    msg, _ = result(v8_db.path, "stack-samples", "top-down")
    roots = [n for n in msg.nodes if n.parent == -1]
    assert [(n.name, n.total_value) for n in roots] == [("(root)", 5072)]
    assert msg.total_value == 5072 and roots[0].total_percent == 100.0
    # Every shown child's total fits within its parent's.
    for n in msg.nodes:
        if n.parent >= 0:
            assert n.total_value <= msg.nodes[n.parent].total_value - msg.nodes[n.parent].self_value


def test_v8_functions_match_a_count_from_the_json(v8_db):
    samples, self_count, total_count = v8_counts_from_json()
    assert samples == 5072
    msg, _ = result(v8_db.path, "stack-samples", "functions", top=10_000)
    assert msg.total_samples == 5072 and msg.total_rows == len(total_count)
    assert {r.name: r.self_count for r in msg.rows if r.self_count} == +self_count
    assert {r.name: r.total_count for r in msg.rows} == dict(total_count)
    # Sorted by self, most prominent first.
    assert [r.self_count for r in msg.rows] == sorted((r.self_count for r in msg.rows), reverse=True)


def test_v8_bottom_up_with_name_roots_are_that_function(v8_db):
    functions, _ = result(v8_db.path, "stack-samples", "functions", name="connectedCallback")
    (row,) = functions.rows
    msg, _ = result(v8_db.path, "stack-samples", "bottom-up", name="connectedCallback", max_lines=50)
    roots = [n for n in msg.nodes if n.parent == -1]
    assert [n.name for n in roots] == ["connectedCallback"] and msg.roots == "connectedCallback"
    # connectedCallback is recursive here: each sample still counts once.
    assert roots[0].total_value == row.total_count
    assert roots[0].self_value == row.self_count


def test_v8_scoping_by_process_and_time(v8_db):
    by_pid, _ = result(v8_db.path, "stack-samples", "functions", pid=1216)
    expected = v8_db.one("""SELECT count(*) FROM stack_sample s JOIN profiler_task_context tc
        ON tc.id = s.task_context_id JOIN process p ON p.id = tc.upid WHERE p.pid = 1216""")
    assert by_pid.total_samples == expected == 981
    start = v8_db.one("SELECT start_ts FROM trace_bounds")
    in_range = v8_db.one(
        "SELECT count(*) FROM stack_sample WHERE ts >= ? AND ts < ?", (start + 500_000_000, start + 800_000_000)
    )
    timed, _ = result(v8_db.path, "stack-samples", "top-down", time="0.5s,0.8s")
    assert timed.total_value == in_range and 0 < in_range < 5072


def test_v8_canned_functions_query_agrees_on_self_and_total(v8_db):
    from datasette_perfetto.report.views.stack_samples import FunctionsView

    conn = connect_with_functions(v8_db.path)
    params = {
        k: "" for k in ("pid", "process", "tid", "thread", "time", "name", "min_count", "sort", "exclude_idle", "dim")
    }
    rows = conn.execute(FunctionsView.canned_sql, {**params, "top": "20"}).fetchall()
    msg, _ = result(v8_db.path, "stack-samples", "functions", top=20)
    assert [(r[0], r[1], r[2]) for r in rows] == [(r.name, r.self_count, r.total_count) for r in msg.rows]


# -- hand-built profiles --------------------------------------------------------------------------------------

# Callsites: id -> (parent, function). main -> a -> rec -> rec -> leaf; main -> b -> HOSTILE | leaf.
CALLSITES = {
    1: (None, "main"),
    2: (1, "a"),
    3: (2, "rec"),
    4: (3, "rec"),
    5: (4, "leaf"),
    6: (1, "b"),
    7: (6, HOSTILE),
    8: (6, "leaf"),
}
SAMPLES = {5: 4, 3: 2, 7: 3, 8: 1, 1: 10}  # callsite -> samples: 20 in all

TP_TABLES = {
    "heap_profile_allocation": "id INTEGER PRIMARY KEY, ts INTEGER, upid INTEGER, heap_name TEXT, "
    "callsite_id INTEGER, count INTEGER, size INTEGER",
    "heap_graph_class": "id INTEGER PRIMARY KEY, name TEXT, deobfuscated_name TEXT, location TEXT, "
    "superclass_id INTEGER, classloader_id INTEGER, kind TEXT",
    "heap_graph_object": "id INTEGER PRIMARY KEY, upid INTEGER, graph_sample_ts INTEGER, self_size INTEGER, "
    "native_size INTEGER, reference_set_id INTEGER, reachable INTEGER, heap_type TEXT, "
    "type_id INTEGER, root_type TEXT, root_distance INTEGER",
    "heap_graph_dominator": "object_id INTEGER, idom_object_id INTEGER, retained_size INTEGER, retained_count INTEGER",
}


def add_callsites(conn, callsites):
    frames = {}
    for cid, (parent, name) in callsites.items():
        fid = frames.setdefault(name, len(frames) + 1000)
        depth = (
            0
            if parent is None
            else conn.execute("SELECT depth + 1 FROM stack_profile_callsite WHERE id = ?", (parent,)).fetchone()[0]
        )
        conn.execute(
            "INSERT INTO stack_profile_callsite (id, depth, parent_id, frame_id) VALUES (?, ?, ?, ?)",
            (cid, depth, parent, fid),
        )
    conn.executemany(
        "INSERT INTO stack_profile_frame (id, name, mapping, rel_pc) VALUES (?, ?, 0, 0)",
        [(fid, name) for name, fid in frames.items()],
    )


# The demo's own profiles, removed where a test builds its own with known ids and numbers.
DEMO_PROFILE_TABLES = (
    "profiler_sample",
    "stack_profile_callsite",
    "stack_profile_frame",
    "heap_profile_allocation",
    "heap_graph_object",
    "heap_graph_class",
    "heap_graph_reference",
    "heap_graph_dominator",
)


def copy_without_profiles(demo_db, path) -> sqlite3.Connection:
    """A copy of the demo database without its stack samples, heap profile and heap dump, opened."""
    shutil.copy(demo_db.path, path)
    conn = sqlite3.connect(path)
    conn.executescript("".join(f"DELETE FROM {table};" for table in DEMO_PROFILE_TABLES))
    return conn


@pytest.fixture
def profile_db(tmp_path, demo_db):
    """The demo database with hand-built stack samples, heap allocations and a heap dump (on process pid 100)
    instead of its own."""
    path = tmp_path / "profile.db"
    conn = copy_without_profiles(demo_db, path)
    for table, columns in TP_TABLES.items():
        conn.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")
    upid, utid = conn.execute(
        "SELECT p.id, t.id FROM process p JOIN thread t ON t.upid = p.id WHERE p.pid = 100 AND t.tid = 100"
    ).fetchone()
    start = conn.execute("SELECT start_ts FROM trace_bounds").fetchone()[0]
    add_callsites(conn, CALLSITES)
    conn.execute("INSERT INTO profiler_task_context (id, upid, utid) VALUES (900, ?, ?)", (upid, utid))
    ts = start
    for cid, n in SAMPLES.items():
        for _ in range(n):
            ts += 1000
            conn.execute(
                "INSERT INTO profiler_sample (ts, source, task_context_id, callsite_id) "
                "VALUES (?, 'legacy_v8', 900, ?)",
                (ts, cid),
            )
    # Heap: leaf allocates 200 B in 2 allocations and frees 100 B; HOSTILE allocates 1000 B once.
    conn.executemany(
        "INSERT INTO heap_profile_allocation (ts, upid, heap_name, callsite_id, count, size) "
        "VALUES (?, ?, 'libc.malloc', ?, ?, ?)",
        [(start + 10, upid, 5, 2, 200), (start + 10, upid, 5, -1, -100), (start + 10, upid, 7, 1, 1000)],
    )
    # Heap dump: Node o1 dominates Node o2 dominates Leaf o3; Leaf o4 on its own; o6 unreachable; o5 is an
    # earlier dump's.
    conn.executemany("INSERT INTO heap_graph_class (id, name) VALUES (?, ?)", [(1, "Node"), (2, HOSTILE)])
    dump = start + 500
    conn.executemany(
        "INSERT INTO heap_graph_object (id, upid, graph_sample_ts, self_size, native_size, reachable, "
        "type_id) VALUES (?, ?, ?, ?, 0, ?, ?)",
        [
            (1, upid, dump, 10, 1, 1),
            (2, upid, dump, 10, 1, 1),
            (3, upid, dump, 5, 1, 2),
            (4, upid, dump, 7, 1, 2),
            (6, upid, dump, 99, 0, 1),
            (5, upid, dump - 100, 3, 1, 1),
        ],
    )
    conn.executemany(
        "INSERT INTO heap_graph_dominator VALUES (?, ?, ?, ?)",
        [(1, None, 25, 3), (2, 1, 15, 2), (3, 2, 5, 1), (4, None, 7, 1), (5, None, 3, 1)],
    )
    conn.commit()
    conn.close()
    return path


def test_functions_count_a_recursive_function_once_per_sample(profile_db):
    msg, _ = result(profile_db, "stack-samples", "functions", top=50)
    rows = {r.name: (r.self_count, r.total_count) for r in msg.rows}
    assert msg.total_samples == 20
    assert rows == {"main": (10, 20), "a": (0, 6), "rec": (2, 6), "leaf": (5, 5), "b": (0, 4), HOSTILE: (3, 3)}
    assert [r.name for r in msg.rows] == ["main", "leaf", HOSTILE, "rec", "a", "b"]  # by self, then total


def test_top_down_tree_collapses_chains_and_sums(profile_db):
    msg, r = result(profile_db, "stack-samples", "top-down")
    shown = [(n.name, n.depth, n.indent, n.self_value, n.total_value) for n in msg.nodes]
    assert shown == [
        ("main", 0, 0, 10, 20),
        ("a", 1, 1, 0, 6),
        ("rec", 2, 1, 2, 6),
        ("rec", 3, 1, 0, 4),
        ("leaf", 4, 1, 4, 4),
        ("b", 1, 1, 0, 4),
        (HOSTILE, 2, 2, 3, 3),
        ("leaf", 2, 2, 1, 1),
    ]
    (table,) = r.view.tables(msg, r.run)
    # A single child keeps its parent's indent, marked as called by the line above.
    assert [row[-1].text for row in table.rows] == [
        "main",
        "  a",
        "  ↳ rec",
        "  ↳ rec",
        "  ↳ leaf",
        "  b",
        f"    {HOSTILE}",
        "    leaf",
    ]


def test_tree_prunes_best_first_and_summarizes(profile_db):
    msg, r = result(profile_db, "stack-samples", "top-down", max_lines=2)
    assert [n.name for n in msg.nodes] == ["main", "a"]
    main, a = msg.nodes
    assert (main.hidden_children, main.hidden_percent, main.hidden_max_percent) == (1, 20.0, 20.0)
    assert (a.hidden_children, a.hidden_percent) == (1, 30.0)
    assert msg.total_nodes == 8
    text = to_text(r)
    assert "… (1 more children: combined 30.0%, max 30.0%)" in text
    assert "… (1 more children: combined 20.0%, max 20.0%)" in text
    assert "6 more call tree nodes below max_lines 2; rerun with max_lines=500" in text
    # With budget for three, the chain below a (30%) wins over b (20%).
    three, _ = result(profile_db, "stack-samples", "top-down", max_lines=3)
    assert [n.name for n in three.nodes] == ["main", "a", "rec"]


def test_bottom_up_roots_and_callers(profile_db):
    msg, _ = result(profile_db, "stack-samples", "bottom-up")
    roots = [(n.name, n.total_value) for n in msg.nodes if n.parent == -1]
    assert roots == [("main", 10), ("leaf", 5), (HOSTILE, 3), ("rec", 2)]
    assert sum(v for _, v in roots) == 20
    callers, _ = result(profile_db, "stack-samples", "bottom-up", name="rec")
    tree = [(n.name, n.depth, n.self_value, n.total_value) for n in callers.nodes]
    # The innermost rec of each stack is the root: the recursion shows as a caller, never counted twice.
    assert tree == [
        ("rec", 0, 2, 6),
        ("rec", 1, 0, 4),
        ("a", 2, 0, 4),
        ("main", 3, 0, 4),
        ("a", 1, 2, 2),
        ("main", 2, 2, 2),
    ]
    only_b, _ = result(profile_db, "stack-samples", "top-down", name="b")
    assert [(n.name, n.total_value) for n in only_b.nodes][:2] == [("main", 4), ("b", 4)]
    assert only_b.total_value == 20  # percentages stay of every sample in scope


def test_scope_flags_select_samples(profile_db):
    by_thread, _ = result(profile_db, "stack-samples", "functions", thread="CrBrowserMain")
    assert by_thread.total_samples == 20
    other, _ = result(profile_db, "stack-samples", "functions", pid=200)
    assert other.total_samples == 0 and not other.rows and not other.not_present


def test_heap_profile_views(profile_db):
    msg, _ = result(profile_db, "heap-profile", "functions", top=50)
    rows = {r.name: (r.self_bytes, r.total_bytes, r.self_count, r.avg_size, r.self_unreleased_bytes) for r in msg.rows}
    assert msg.total_bytes == 1200 and msg.total_count == 3
    assert rows[HOSTILE] == (1000, 1000, 1, 1000, 1000)
    assert rows["leaf"] == (200, 200, 2, 100, 100)
    assert rows["main"] == (0, 1200, 0, 0, 0)  # no allocations of its own: no average of them
    assert rows["rec"][1] == 200  # through the recursion, once
    tree, r = result(profile_db, "heap-profile", "top-down")
    assert (tree.nodes[0].name, tree.nodes[0].total_value, tree.unit) == ("main", 1200, "bytes")
    assert "1.2 KiB" in to_text(r)
    callers, _ = result(profile_db, "heap-profile", "bottom-up", name="leaf")
    assert [(n.name, n.total_value) for n in callers.nodes if n.parent == -1] == [("leaf", 200)]
    none, _ = result(profile_db, "heap-profile", "functions", pid=200)
    assert none.total_bytes == 0 and not none.not_present


def test_stack_samples_min_count_counts_self_samples_and_says_what_it_hid(profile_db):
    # Self samples (the Samples column): main 10, leaf 4 + 1, HOSTILE 3, rec 2, a and b none.
    conn = sqlite3.connect(profile_db)
    own = dict(
        conn.execute(
            "SELECT f.name, count(*) FROM stack_sample s JOIN stack_profile_callsite c ON c.id = s.callsite_id "
            "JOIN stack_profile_frame f ON f.id = c.frame_id GROUP BY f.name"
        ).fetchall()
    )
    conn.close()
    assert own == {"main": 10, "leaf": 5, HOSTILE: 3, "rec": 2}
    msg, r = result(profile_db, "stack-samples", "functions", min_count=3)
    assert [(row.name, row.self_count) for row in msg.rows] == [("main", 10), ("leaf", 5), (HOSTILE, 3)]
    assert msg.total_rows == 3 and msg.total_samples == 20  # the percentages stay of every sample
    (note,) = [f for f in r.report.footnotes if f.text.startswith("min_count")]
    assert note.text == "min_count=3 hid 3 functions (fewer than 3 self samples: 2 samples); without it"
    assert "min_count" not in note.url
    # The canned query filters the same way.
    from datasette_perfetto.report.views.stack_samples import FunctionsView

    conn = connect_with_functions(profile_db)
    params = {k: "" for k in ("pid", "process", "tid", "thread", "time", "name", "sort", "exclude_idle", "dim")}
    rows = conn.execute(FunctionsView.canned_sql, {**params, "min_count": "3", "top": "20"}).fetchall()
    assert [(row[0], row[1]) for row in rows] == [(row.name, row.self_count) for row in msg.rows]
    # Without min_count, no footnote.
    _, r = result(profile_db, "stack-samples", "functions")
    assert not [f for f in r.report.footnotes if f.text.startswith("min_count")]


def test_heap_functions_count_and_average_describe_their_own_allocations(profile_db):
    # leaf: 2 allocations, 200 B; HOSTILE: 1, 1000 B; main, a, rec and b allocate only through their callees.
    msg, r = result(profile_db, "heap-profile", "functions", top=50)
    rows = {
        row.name: (row.self_bytes, row.self_count, row.avg_size, row.total_bytes, row.total_count) for row in msg.rows
    }
    assert rows["leaf"] == (200, 2, 100, 200, 2)
    assert rows["main"] == (0, 0, 0, 1200, 3)
    text = to_text(r)
    header = next(line for line in text.splitlines() if "Self bytes" in line)
    assert header.split() == [
        "Function",
        "Self",
        "bytes",
        "Self",
        "count",
        "Avg",
        "size",
        "Total",
        "bytes",
        "Total",
        "count",
    ]
    main = next(line for line in text.splitlines() if line.split()[:1] == ["main"])
    assert main.split() == ["main", "0", "B", "0", "-", "1.2", "KiB", "3"]  # no average of allocations it never made
    # min_count counts own allocations: leaf (2) stays; HOSTILE's one (1000 B) and the callers' none go.
    msg, r = result(profile_db, "heap-profile", "functions", min_count=2)
    assert [row.name for row in msg.rows] == ["leaf"]
    (note,) = [f for f in r.report.footnotes if f.text.startswith("min_count")]
    assert note.text == (
        "min_count=2 hid 5 functions (fewer than 2 own allocations: 1 allocations, 1000 B); without it"
    )
    from datasette_perfetto.report.views.heap_profile import FunctionsView

    conn = connect_with_functions(profile_db)
    params = {k: "" for k in ("pid", "process", "time", "name", "sort", "dim")}
    rows = conn.execute(FunctionsView.canned_sql, {**params, "min_count": "2", "top": "20"}).fetchall()
    assert [(row[0], row[3], row[4]) for row in rows] == [("leaf", 2, 100)]


def test_heap_dump_types_retained_counts_nested_objects_once(profile_db):
    msg, r = result(profile_db, "heap-dump", "types")
    rows = {row.name: (row.retained_size, row.live_objects, row.self_size) for row in msg.rows}
    # Node: o1 retains o2 (also a Node) and o3: 25, not 25 + 15. The unreachable and earlier-dump objects
    # are not counted.
    assert rows == {"Node": (25, 2, 20), HOSTILE: (12, 2, 12)}
    assert (msg.dump_count, msg.skipped_dumps, msg.total_objects, msg.total_size) == (1, 1, 4, 32)
    assert "1 earlier dumps of the same processes not shown" in to_text(r)
    by_count, _ = result(profile_db, "heap-dump", "types", sort="name", name="N*")
    assert [row.name for row in by_count.rows] == ["Node"]


def test_views_say_not_present_without_data_or_tables(profile_db, sched_db):
    for noun, view in (
        ("stack-samples", "functions"),
        ("stack-samples", "top-down"),
        ("heap-profile", "bottom-up"),
        ("heap-dump", "types"),
    ):
        msg, r = result(sched_db.path, noun, view)
        assert msg.not_present and "(not present in this trace)" in to_text(r)
    conn = sqlite3.connect(profile_db)
    conn.executescript("DROP TABLE heap_graph_dominator; DROP TABLE heap_profile_allocation;")
    conn.close()
    msg, _ = result(profile_db, "heap-profile", "functions")
    assert msg.not_present
    msg, r = result(profile_db, "heap-dump", "types")
    assert not msg.has_dominators and {row.name: row.retained_size for row in msg.rows} == {"Node": 0, HOSTILE: 0}
    assert "retained sizes need heap_graph_dominator" in to_text(r)
    overview, _ = result(profile_db, "", "")
    assert [a.noun for a in overview.absent] == ["heap-profile"]
    assert overview.stack_samples.total_samples == 20


@pytest.mark.web
@pytest.mark.asyncio
async def test_html_has_an_escaped_svg_flame_graph(profile_db):
    ds = served(profile_db)
    page = (await ds.client.get("/profile/-/report/stack-samples/top-down")).text
    assert "<svg" in page and "Flame graph" in page and "<title>main: 20 samples (100.0%)" in page
    assert "<script>alert" not in page and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;amp;" in page
    assert 'href="/profile/-/report/stack-samples/bottom-up?name=main"' in page
    pruned = (await ds.client.get("/profile/-/report/stack-samples/bottom-up?max_lines=2")).text
    assert "more roots: combined" in pruned and 'fill="#cccccc"' in pruned
    for path in (
        "/profile/-/report/heap-profile/top-down",
        "/profile/-/report/heap-dump/types",
        "/profile/-/report/stack-samples/functions",
        "/profile/-/report",
    ):
        r = await ds.client.get(path)
        assert r.status_code == 200 and "<script>alert" not in r.text, path
    data = (await ds.client.get("/profile/-/report/stack-samples/bottom-up.json?name=rec")).json()
    assert data["stack_samples_bottom_up"]["nodes"][0]["total_value"] == 6
    canned = (await ds.client.get("/profile/heap_dump_types.json?_shape=array")).json()
    assert {r["type"]: r["live_objects"] for r in canned} == {"Node": 2, HOSTILE: 2}
    canned = (await ds.client.get("/profile/heap_profile_functions.json?_shape=array&sort=total")).json()
    assert (canned[0]["function"], canned[0]["total_bytes"]) == ("main", 1200)
    tree = (await ds.client.get("/profile/stack_samples_top_down.json?_shape=array&pid=100")).json()
    assert len(tree) == 8 and sum(r["self_samples"] for r in tree) == 20


def test_trees_on_100k_samples_account_for_every_sample(tmp_path, demo_db):
    """100k samples over 20k distinct deep callsites: every view builds, and the totals add up.
    (Timing lives in benchmarks/, not in tests.)"""
    path = tmp_path / "big.db"
    conn = copy_without_profiles(demo_db, path)
    rng = random.Random(7)
    callsites: dict[int, tuple] = {}
    for cid in range(1, 20_001):
        parent = rng.randrange(1, cid) if cid > 50 else None
        callsites[cid] = (parent, f"fn{rng.randrange(2000)}")
    add_callsites(conn, callsites)
    start = conn.execute("SELECT start_ts FROM trace_bounds").fetchone()[0]
    conn.executemany(
        "INSERT INTO profiler_sample (ts, source, callsite_id) VALUES (?, 'perf_text', ?)",
        [(start + i, rng.randrange(1, 20_001)) for i in range(100_000)],
    )
    conn.commit()
    conn.close()
    for view, flags in (("functions", {}), ("top-down", {}), ("bottom-up", {}), ("bottom-up", {"name": "fn1*"})):
        msg, _ = result(path, "stack-samples", view, **flags)
        assert msg.ListFields(), view
    top_down, _ = result(path, "stack-samples", "top-down")
    assert top_down.total_value == 100_000  # every sample is in the tree's 100%
    roots = [n for n in top_down.nodes if n.depth == 0]
    assert roots and sum(n.total_value for n in roots) <= 100_000
    # Shown and hidden roots together cover all samples.
    assert abs(sum(n.total_percent for n in roots) + top_down.hidden_roots_percent - 100.0) < 0.01


def test_collapsed_stack_files_are_stack_samples(tmp_path):
    """A collapsed-stack file (no timestamps, weights per line) reads as stack samples by weight."""
    from datasette_perfetto.ingest import ingest

    folded = tmp_path / "app.folded"
    folded.write_text("main;run;work 30\nmain;run;idle 10\nmain;gc 5\n")
    ingest([str(folded)], str(tmp_path / "c.db"))
    functions, _ = result(tmp_path / "c.db", "stack-samples", "functions")
    got = {r.name: (r.self_count, r.total_count) for r in functions.rows}
    assert got == {"work": (30, 30), "idle": (10, 10), "gc": (5, 5), "main": (0, 45), "run": (0, 40)}
    tree, _ = result(tmp_path / "c.db", "stack-samples", "top-down")
    assert tree.total_value == 45
