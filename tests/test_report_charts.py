"""The report's charts: round histogram bucket edges, charts whose text fits, timelines, flame graphs, and the
stack-sample flags. Each page is compared with SQL or a figure computed by hand on a built trace."""

from __future__ import annotations

import re
from html import unescape

import pytest
from conftest import get_error, get_json, served

from datasette_perfetto.report import format as fmt

CHAR_PX = 7.3  # _report_chart.html: monospace text at 12px, at most this wide per character


# -- 1. round bucket edges ---------------------------------------------------------------------------------


def test_round_edges_by_hand():
    # Log: 1, 2, 5 x 10^k from the round value at or below the smallest to the one at or above the largest.
    assert fmt.log_edges(70_300, 8_900_000, 20) == [
        50_000,
        100_000,
        200_000,
        500_000,
        1_000_000,
        2_000_000,
        5_000_000,
        10_000_000,
    ]
    # Too many for the buckets asked: every decade, then every 2nd decade, ...
    assert fmt.log_edges(9, 1000, 3) == [1, 10, 100, 1000]
    assert fmt.log_edges(3, 2_000_000, 2) == [1, 10_000, 100_000_000]  # every 4th decade
    # Linear: the narrowest 1, 2, 2.5 or 5 x 10^k wide from a multiple of the width.
    assert fmt.linear_edges(0, 228, 4) == [0, 100, 200, 300]
    assert fmt.linear_edges(0, 228, 20) == list(range(0, 241, 20))
    assert fmt.linear_edges(28, 144, 5) == [25, 50, 75, 100, 125, 150]
    assert fmt.linear_edges(0.013, 0.71, 20) == [round(0.05 * i, 2) for i in range(16)]
    assert fmt.linear_edges(7, 7, 20) == [7, 7]


def sql_counts(db, sql: str, params: tuple, edges: list[float]) -> list[int]:
    values = [r[0] for r in db.rows(sql, params)]
    last = len(edges) - 2
    return [
        sum(1 for v in values if lo <= v and (v < hi or (i == last and v <= hi)))
        for i, (lo, hi) in enumerate(zip(edges, edges[1:]))
    ]


def mantissa(value: float) -> str:
    """1.5e6 -> '1.5'."""
    return f"{value:e}".split("e")[0].rstrip("0").rstrip(".").lstrip("-")


def is_round(value: float) -> bool:
    return value == 0 or mantissa(value) in ("1", "2", "2.5", "5")


@pytest.mark.web
@pytest.mark.asyncio
@pytest.mark.parametrize(
    "query, scale",
    [("name=Raster", "log"), ("name=Raster&buckets=3", "log"), ("name=URLRequest&buckets=7", "linear")],
)
async def test_slices_histogram_edges_are_round_and_counts_match_sql(demo_db, query, scale):
    hist = (await get_json(demo_db.path, f"/demo/-/report/slices/histogram.json?{query}"))["slices_histogram"]
    assert hist["scale"] == scale
    edges = [hist["buckets"][0]["low"]] + [b["high"] for b in hist["buckets"]]
    if scale == "log":  # every edge 1, 2 or 5 x 10^k
        assert all(mantissa(e) in ("1", "2", "5") for e in edges), edges
    else:  # one round width, edges its multiples
        widths = {b - a for a, b in zip(edges, edges[1:])}
        assert len(widths) == 1 and is_round(widths.pop()) and edges[0] % (edges[1] - edges[0]) == 0, edges
    name = query.split("&")[0].split("=")[1]
    counts = sql_counts(demo_db, "SELECT max(dur, 0) FROM slice WHERE name = ?", (name,), edges)
    assert [int(b.get("count", 0)) for b in hist["buckets"]] == counts and sum(counts) == int(hist["stats"]["count"])


@pytest.mark.web
@pytest.mark.asyncio
@pytest.mark.parametrize("query", ["name=IPCMessagesSent&buckets=4", "name=IPCMessagesSent", "name=MemoryUsage"])
async def test_counters_histogram_edges_are_round_and_the_canned_query_agrees(demo_db, query):
    ds = served(demo_db.path)
    hist = (await get_json(ds, f"/demo/-/report/counters/histogram.json?{query}"))["counters_histogram"]
    assert hist["scale"] == "linear"
    edges = [hist["buckets"][0].get("low", 0)] + [b["high"] for b in hist["buckets"]]
    assert (
        all(is_round(b - a) for a, b in zip(edges, edges[1:])) and len({b - a for a, b in zip(edges, edges[1:])}) == 1
    )
    name = query.split("&")[0].split("=")[1]
    sql = "SELECT c.value FROM counter c JOIN track t ON t.id = c.track_id WHERE t.name = ?"
    counts = sql_counts(demo_db, sql, (name,), edges)
    assert [int(b.get("count", 0)) for b in hist["buckets"]] == counts
    # The canned query lists the non-empty buckets with the same edges and counts.
    canned = (await ds.client.get(f"/demo/counters_histogram.json?_shape=array&{query}")).json()
    shown = [(b.get("low", 0), b["high"], int(b.get("count", 0))) for b in hist["buckets"] if int(b.get("count", 0))]
    assert [(r["low"], r["high"], r["count"]) for r in canned] == [
        (pytest.approx(lo), pytest.approx(hi), n) for lo, hi, n in shown
    ]


def svg_texts(page: str) -> list[tuple[float, float, str, str]]:
    """Each chart's (svg width, x, anchor, text) for the text elements of the bar charts."""
    out = []
    for figure in re.findall(r'<figure class="perfetto-report-chart">(.*?)</figure>', page, re.S):
        width = float(re.search(r'<svg[^>]* width="([\d.]+)"', figure).group(1))
        for x, anchor, text in re.findall(r'<text x="([\d.]+)" y="13"(?: text-anchor="(\w+)")?>(.*?)</text>', figure):
            out.append((width, float(x), anchor, unescape(text)))
    return out


@pytest.mark.web
@pytest.mark.asyncio
@pytest.mark.parametrize(
    "url",
    [
        "/demo/-/report/slices/histogram?name=Raster",
        "/demo/-/report/counters/histogram?name=MemoryUsage",
    ],
)
async def test_chart_text_fits_inside_the_chart(demo_db, url):
    page = (await served(demo_db.path).client.get(url)).text
    texts = svg_texts(page)
    assert texts
    for width, x, anchor, text in texts:
        if anchor == "end":
            assert x - CHAR_PX * len(text) >= 0, text
        else:
            assert x + CHAR_PX * len(text) <= width, text


# -- 2. timelines run left to right ---------------------------------------------------------------------------


def timeline_columns(page: str) -> list[tuple[int, int, str]]:
    """The timeline's columns in document order: (x, height, hover title)."""
    svg = re.search(r'<svg class="perfetto-report-timeline".*?</svg>', page, re.S).group(0)
    return [
        (int(x), int(h), unescape(title))
        for title, x, h in re.findall(
            r'<title>(.*?)</title>\s*<rect x="\d+" y="0"[^>]*/>\s*<rect x="(\d+)" y="\d+" width="\d+" height="(\d+)"',
            svg,
        )
    ]


@pytest.mark.web
@pytest.mark.asyncio
async def test_slices_timeline_draws_time_left_to_right(demo_db):
    page = (await served(demo_db.path).client.get("/demo/-/report/slices/timeline?name=Raster")).text
    columns = timeline_columns(page)
    assert len(columns) == 20
    # Bucket i (the i-th 100ms of the trace) is the i-th column from the left, 920 // 20 = 46 px wide.
    assert [x for x, _, _ in columns] == [46 * i for i in range(20)]
    assert columns[0][2].startswith("0ns: ") and columns[7][2].startswith("700ms: ")
    # Heights follow the time each bucket covers, computed here in SQL: the busiest bucket is full height.
    start = demo_db.one("SELECT start_ts FROM trace_bounds")
    covered = [
        demo_db.one(
            """SELECT coalesce(sum(max(0, min(ts + dur, :end) - max(ts, :start))), 0) FROM slice
            WHERE name = 'Raster' AND ts < :end AND ts + dur > :start""",
            {"start": start + i * 100_000_000, "end": start + (i + 1) * 100_000_000},
        )
        for i in range(20)
    ]
    top = max(covered)
    assert [h for _, h, _ in columns] == [round(160 * c / top) for c in covered]
    assert columns[covered.index(top)][1] == 160
    # The tick labels on the time axis read left to right.
    ticks = re.findall(r'<text x="(\d+)" y="177">(.*?)</text>', page)
    assert [label for _, label in ticks][:3] == ["0ns", "200ms", "400ms"]
    assert [int(x) for x, _ in ticks] == sorted(int(x) for x, _ in ticks)
    # Every bucket's details stay readable in a list under the chart.
    assert "<summary>Each bucket</summary>" in page and "<td>700ms</td>" in page


# -- 3. flame graphs fill their width with the roots shown ------------------------------------------------


def flame_boxes(page: str) -> list[tuple[str, float, float, int]]:
    """The flame graph's boxes: (hover title, x, width, y)."""
    svg = re.search(r'<figure class="perfetto-report-flame">.*?</figure>', page, re.S).group(0)
    return [
        (unescape(title), float(x), float(w), int(y))
        for title, x, y, w in re.findall(r'<title>(.*?)</title>\s*<rect x="([\d.]+)" y="(\d+)" width="([\d.]+)"', svg)
    ]


V8_SAMPLES_IN = """WITH RECURSIVE up(sample, cs) AS (
  SELECT s.id, s.callsite_id FROM cpu_profile_stack_sample s
  UNION ALL
  SELECT up.sample, c.parent_id FROM up JOIN stack_profile_callsite c ON c.id = up.cs WHERE c.parent_id IS NOT NULL
)
SELECT count(DISTINCT up.sample) FROM up
JOIN stack_profile_callsite c ON c.id = up.cs JOIN stack_profile_frame f ON f.id = c.frame_id
WHERE f.name = ?"""


@pytest.mark.web
@pytest.mark.asyncio
async def test_bottom_up_flame_graph_of_one_function_is_scaled_to_its_roots(v8_db):
    ds = served(v8_db.path)
    tick = v8_db.one(V8_SAMPLES_IN, ("tick",))  # samples with tick on the stack: 963 of 5,072
    total = v8_db.one("SELECT count(*) FROM cpu_profile_stack_sample")
    assert 0 < tick < total / 4
    page = (await ds.client.get("/v8/-/report/stack-samples/bottom-up?name=tick")).text
    boxes = flame_boxes(page)
    roots = [b for b in boxes if b[3] == 0]
    assert [(b[1], b[2]) for b in roots] == [(0, 1199.5)]  # the one root, tick, is the full 1200 px
    assert f"full width = the roots shown: {100 * tick / total:.1f}% of the total" in page
    # Its callers share its width by their samples (from the tree's JSON).
    tree = (await get_json(ds, "/v8/-/report/stack-samples/bottom-up.json?name=tick"))["stack_samples_bottom_up"]
    assert int(tree["nodes"][0]["total_value"]) == tick
    callers = [n for n in tree["nodes"] if int(n.get("parent", -1)) == 0]
    row1 = [b for b in boxes if b[3] == 18]
    assert [b[2] for b in row1] == [
        pytest.approx(1200 * int(n["total_value"]) / tick - 0.5, abs=0.01)
        for n in callers
        if 1200 * int(n["total_value"]) / tick >= 0.3
    ]
    # Without name the roots are every sample's leaf: the full width is all samples, as before.
    page = (await ds.client.get("/v8/-/report/stack-samples/bottom-up")).text
    assert "full width = the roots shown" not in page


# -- 4. stack samples: exclude_idle, and scoping by thread -----------------------------------------------------

PSEUDO = ("(idle)", "(program)", "(garbage collector)")
# Samples by their leaf frame and thread (the sampled thread: the sample's task context).
V8_SAMPLES = """SELECT count(*) FROM stack_sample s
JOIN profiler_task_context tc ON tc.id = s.task_context_id
JOIN thread th ON th.id = tc.utid
JOIN stack_profile_callsite c ON c.id = s.callsite_id
JOIN stack_profile_frame f ON f.id = c.frame_id
WHERE {where}"""


@pytest.mark.web
@pytest.mark.asyncio
async def test_exclude_idle_leaves_out_v8_pseudo_frames(v8_db):
    ds = served(v8_db.path)
    busy = v8_db.one(V8_SAMPLES.format(where="f.name NOT IN (?, ?, ?)"), PSEUDO)
    assert 0 < busy < v8_db.one("SELECT count(*) FROM stack_sample")  # 1,707 of 5,072
    functions = (await get_json(ds, "/v8/-/report/stack-samples.json?exclude_idle=1&top=500"))[
        "stack_samples_functions"
    ]
    assert int(functions["total_samples"]) == busy
    assert not {r["name"] for r in functions["rows"]} & set(PSEUDO)
    for view in ("top-down", "bottom-up"):
        tree = await get_json(ds, f"/v8/-/report/stack-samples/{view}.json?exclude_idle=true")
        assert int(tree[f"stack_samples_{view.replace('-', '_')}"]["total_value"]) == busy
    # "0" / "false" mean not set; anything else is a 400 naming the flag.
    everything = (await get_json(ds, "/v8/-/report/stack-samples.json?exclude_idle=0"))["stack_samples_functions"]
    assert int(everything["total_samples"]) == v8_db.one("SELECT count(*) FROM stack_sample")
    error = await get_error(ds, "/v8/-/report/stack-samples.json?exclude_idle=maybe")
    assert error["parameter"] == "exclude_idle" and "true" in error["options"]
    # The canned query takes the flag too and agrees.
    canned = (await ds.client.get("/v8/stack_samples_functions.json?_shape=array&exclude_idle=1&top=20")).json()
    page = (await get_json(ds, "/v8/-/report/stack-samples.json?exclude_idle=1&top=20"))["stack_samples_functions"]
    assert [(r["function"], r["self_samples"], r["total_samples"]) for r in canned] == [
        (r["name"], int(r.get("self_count", 0)), int(r["total_count"])) for r in page["rows"]
    ]
    # The page says what it left out.
    html = (await ds.client.get("/v8/-/report/stack-samples?exclude_idle=1")).text
    assert "exclude_idle=1" in html


@pytest.mark.web
@pytest.mark.asyncio
@pytest.mark.parametrize("view", ["functions", "top-down", "bottom-up"])
async def test_stack_samples_scope_to_a_thread(v8_db, view):
    ds = served(v8_db.path)
    # V8 samples belong to the thread of their profile chunks (each process's v8:ProfEvntProc).
    tid = v8_db.one(
        "SELECT th.tid FROM stack_sample s JOIN profiler_task_context tc ON tc.id = s.task_context_id "
        "JOIN thread th ON th.id = tc.utid GROUP BY th.tid ORDER BY count(*) DESC LIMIT 1"
    )
    expected = v8_db.one(V8_SAMPLES.format(where="th.tid = ?"), (tid,))
    assert 0 < expected < v8_db.one("SELECT count(*) FROM stack_sample")
    key = f"stack_samples_{view.replace('-', '_')}"
    total = "total_samples" if view == "functions" else "total_value"
    data = await get_json(ds, f"/v8/-/report/stack-samples/{view}.json?tid={tid}")
    assert int(data[key][total]) == expected
    data = await get_json(ds, f"/v8/-/report/stack-samples/{view}.json?thread=v8:*&exclude_idle=1")
    assert int(data[key][total]) == v8_db.one(
        V8_SAMPLES.format(where="th.name GLOB 'v8:*' AND f.name NOT IN (?, ?, ?)"), PSEUDO
    )
