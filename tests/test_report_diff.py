"""Comparing a trace against a baseline (`baseline=`, issue 7): text goldens, JSON against report.proto,
HTML through datasette.client, errors, permissions and the command line.

The demo pair (tests/diff_traces.py) differs in known ways: BitmapDecode added (4 x 30 ms), LegacyDecode
removed (3 x 20 ms), Raster slower (+2 x 30 ms, same count), a counter added, and the target is ~0.43 s
longer. The scheduling pair is tests/sched_trace.py with two seeds (same threads, different schedules).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import assert_fuzzed_flags_never_500, connect_with_functions, datasette_with, served, sql_path
from datasette.cli import cli
from diff_traces import build_diff_trace
from shared_data import TRACES
from test_report_golden import case_id, check_golden, check_json

from datasette_perfetto.ingest import ingest
from datasette_perfetto.report.base import Linker
from datasette_perfetto.report.diff import accepted_labels, run_diff
from datasette_perfetto.report.engine import run_report
from datasette_perfetto.report.render import to_json, to_sql, to_text
from datasette_perfetto.report.scope import FLAGS, ReportError

PYTORCH = TRACES / "pytorch_ddp"

DEMO_CASES = [
    ("", "", {}),
    ("slices", "table", {}),
    ("slices", "table", {"sort": "count", "top": "5"}),
    ("slices", "table", {"thread": "DecodeThread", "min_count": "4"}),
    ("slices", "table", {"time": "0s,1s", "sort": "name", "top": "4"}),
    ("processes", "table", {}),
    ("tracks", "table", {"pid": "100", "top": "4"}),
    ("counters", "list", {}),
]
SCHED_CASES = [
    ("", "", {}),
    ("scheduling", "summary", {}),
    ("scheduling", "summary", {"group_by": "process", "sort": "runnable"}),
    ("scheduling", "summary", {"time": "0.2s,0.4s", "top": "3", "min_duration": "20ms"}),
]


@pytest.fixture(scope="module")
def demo_pair(tmp_path_factory) -> tuple[Path, Path]:
    """(baseline, target) databases, named base.db and target.db (the Datasette names base, target)."""
    root = tmp_path_factory.mktemp("diff")
    out = []
    for flavour, name in (("baseline", "base"), ("target", "target")):
        trace = root / f"{name}.pftrace"
        trace.write_bytes(build_diff_trace(flavour))
        ingest([str(trace)], str(root / f"{name}.db"))
        out.append(root / f"{name}.db")
    return out[0], out[1]


@pytest.fixture(scope="module")
def sched_pair(tmp_path_factory) -> tuple[Path, Path]:
    from sched_trace import build_sched_trace

    root = tmp_path_factory.mktemp("sched-diff")
    out = []
    for seed, name in ((7, "base"), (8, "target")):
        trace = root / f"{name}.pftrace"
        trace.write_bytes(build_sched_trace(seed))
        ingest([str(trace)], str(root / f"{name}.db"))
        out.append(root / f"{name}.db")
    return out[0], out[1]


def diff(pair, noun="", view="", **flags):
    base, target = (connect_with_functions(p) for p in pair)
    try:
        return run_diff(
            target,
            base,
            noun,
            view,
            {**flags, "baseline": "base.db"},
            Linker(None, "target.db"),
            Linker(None, "base.db"),
            "target.db",
            "base.db",
        )
    finally:
        base.close()
        target.close()


def lines_of(text: str) -> dict[str, list[str]]:
    """Table rows by their first cell, split on the column gaps."""
    return {cells[0]: cells for cells in (line.strip().split("   ") for line in text.splitlines()) if len(cells) > 2}


def cells(row: list[str]) -> list[str]:
    return [c.strip() for c in row if c.strip()]


# -- goldens --------------------------------------------------------------------------------------


def check_diff_golden(pair, case, golden: str) -> None:
    """The diff of a (noun, view, flags) case over a pair of databases: its text is the golden file, its JSON valid."""
    noun, view, flags = case
    result = diff(pair, noun, view, **flags)
    check_golden(to_text(result), golden)
    check_json(to_json(result))


@pytest.mark.parametrize("case", DEMO_CASES, ids=case_id)
def test_demo_diff_text_matches_golden(demo_pair, case):
    check_diff_golden(demo_pair, case, "diff-" + case_id(case))


@pytest.mark.parametrize("case", SCHED_CASES, ids=case_id)
def test_sched_diff_text_matches_golden(sched_pair, case):
    check_diff_golden(sched_pair, case, "diff-sched-" + case_id(case))


# -- what a diff says -----------------------------------------------------------------------------


def test_slices_diff_text_marks_every_known_difference(demo_pair):
    text = to_text(diff(demo_pair, "slices", "table"))
    assert text.startswith("[target target.db 2.4s | baseline base.db 2s | full trace | 4 processes]\n")
    rows = lines_of(text)
    # Self time (these have no children: equal to their duration), then the duration.
    assert cells(rows["BitmapDecode"]) == [
        "BitmapDecode",
        "(absent)",
        "120ms",
        "+120ms",
        "(absent)",
        "120ms",
        "+120ms",
        "added",
    ]
    assert cells(rows["LegacyDecode"]) == [
        "LegacyDecode",
        "60ms",
        "(absent)",
        "-60ms",
        "60ms",
        "(absent)",
        "-60ms",
        "removed",
    ]
    assert cells(rows["Raster"]) == ["Raster", "144ms", "204ms", "+60ms", "144ms", "204ms", "+60ms", "+42%"]
    # A parent shows its self time, less than its duration.
    assert cells(rows["ChannelMojo::OnMessageReceived"])[1:7] == ["96.5ms", "96.5ms", "0", "194ms", "194ms", "0"]
    # Ranked by the absolute self time delta: +120ms, -60ms, +60ms (tie broken by the count delta), then the rest.
    names = [line.split()[0] for line in text.splitlines()[4:7]]
    assert names == ["BitmapDecode", "LegacyDecode", "Raster"]
    assert "49 slice names: 1 added, 1 removed, 1 changed, 46 unchanged; by self delta" in text
    assert (
        "* the baseline trace is 18% shorter than the target's (2s vs 2.4s); deltas are raw, not normalized: "
        "datasette perfetto report base.db slices table"
    ) in text
    assert "* 39 more slice names below top 10; rerun with top=50" in text
    # Links to the two single-trace reports.
    assert "\n      datasette perfetto report target.db slices table\n" in text
    assert "\n      datasette perfetto report base.db slices table\n" in text


def test_slices_diff_json_deltas_match_sql_on_each_database(demo_pair):
    data = to_json(diff(demo_pair, "slices", "table", top="10000"))
    check_json(data)
    sides = []
    for path in demo_pair:
        conn = sqlite3.connect(path)
        sides.append(
            {
                name: (n, total, self_dur)
                for name, n, total, self_dur in conn.execute(
                    "SELECT s.name, count(*), sum(max(s.dur, 0)), sum(max(s.dur, 0) - coalesce("
                    "(SELECT sum(max(k.dur, 0)) FROM slice k WHERE k.parent_id = s.id), 0)) FROM slice s GROUP BY s.name"
                )
            }
        )
        conn.close()
    base, target = sides
    rows = data["slices_table_diff"]["rows"]
    assert {r["name"] for r in rows} == set(base) | set(target)
    for r in rows:
        b, t = base.get(r["name"], (0, 0, 0)), target.get(r["name"], (0, 0, 0))
        assert int(r.get("count_delta", 0)) == t[0] - b[0], r["name"]
        assert int(r.get("total_dur_delta", 0)) == t[1] - b[1], r["name"]
        assert int(r.get("self_dur_delta", 0)) == t[2] - b[2], r["name"]
        expected = (
            "added"
            if r["name"] not in base
            else "removed"
            if r["name"] not in target
            else "changed"
            if b != t
            else "unchanged"
        )
        assert r["change"] == expected, r["name"]
        assert (r["baseline"] is not None) == (r["name"] in base) and (r["target"] is not None) == (r["name"] in target)
    by_name = {r["name"]: r for r in rows}
    assert by_name["Raster"]["total_dur_delta"] == 60000000 and by_name["Raster"]["count_delta"] == 0
    assert by_name["LegacyDecode"]["baseline"]["total_dur"] == 60000000
    summary = data["slices_table_diff"]["summary"]
    assert summary == {
        "sort": "self",
        "sort_column": "self_dur",
        "total_rows": 49,
        "added": 1,
        "removed": 1,
        "changed": 1,
        "unchanged": 46,
        "baseline_total_rows": 48,
        "target_total_rows": 48,
        "baseline_joined_rows": 48,
        "target_joined_rows": 48,
    }
    # Both traces described; each side's queries ran on its own database.
    assert data["context"]["database"] == "target.db" and data["baseline"]["database"] == "base.db"
    assert data["context"]["trace"] == "target.pftrace" and data["baseline"]["trace"] == "base.pftrace"
    assert int(data["baseline"]["trace_dur"]) < int(data["context"]["trace_dur"])
    purposes = [q["purpose"] for q in data["queries"]]
    assert all(p.startswith(("baseline: ", "target: ")) for p in purposes)
    assert sum(p.startswith("baseline: ") for p in purposes) == sum(p.startswith("target: ") for p in purposes) > 1


def test_row_filters_apply_after_the_join(demo_pair):
    # min_count=4 hides a name only when neither side has 4: LegacyDecode (3, absent) goes, Raster stays.
    rows = to_json(diff(demo_pair, "slices", "table", min_count="4", top="100"))["slices_table_diff"]["rows"]
    names = {r["name"] for r in rows}
    assert "LegacyDecode" not in names and {"BitmapDecode", "Raster"} <= names
    # A name with 3 instances on one side and 50 on the other would not be reported "added".
    assert all(r["change"] != "added" or r["name"] == "BitmapDecode" for r in rows)


def test_sort_selects_the_delta_ranked_by(demo_pair):
    data = to_json(diff(demo_pair, "slices", "table", sort="count", top="3"))["slices_table_diff"]
    assert [r["name"] for r in data["rows"]] == ["BitmapDecode", "LegacyDecode", "Raster"]
    assert data["summary"]["sort"] == "count" and data["summary"]["sort_column"] == "count"
    by_name = to_json(diff(demo_pair, "slices", "table", sort="name", top="3"))["slices_table_diff"]["rows"]
    assert [r["name"] for r in by_name] == sorted(r["name"] for r in by_name)


def test_scheduling_diff_joins_threads_by_name(sched_pair):
    data = to_json(diff(sched_pair, "scheduling", "summary", top="100"))
    check_json(data)
    singles = []
    for path in sched_pair:
        conn = connect_with_functions(path)
        single = to_json(run_report(conn, "scheduling", "summary", {"top": "100"}, Linker(None, "x")))
        conn.close()
        singles.append({(r.get("name", ""), r.get("process", "")): r for r in single["scheduling_summary"]["rows"]})
    rows = data["scheduling_summary_diff"]["rows"]
    assert len(rows) == 8 and all(r["change"] == "changed" for r in rows)
    for r in rows:
        key = (r["name"], r.get("process", ""))
        b, t = singles[0][key], singles[1][key]
        assert r["baseline"]["tid"] == b["tid"] and r["target"]["cpu_time"] == t["cpu_time"]
        assert int(r.get("cpu_time_delta", 0)) == int(t["cpu_time"]) - int(b["cpu_time"])
        assert int(r.get("runnable_delta", 0)) == int(t.get("runnable", 0)) - int(b.get("runnable", 0))
    deltas = [abs(int(r.get("cpu_time_delta", 0))) for r in rows]
    assert deltas == sorted(deltas, reverse=True)
    assert data["scheduling_summary_diff"]["baseline_cpu_count"] == 2


def test_overview_diff_is_a_digest_of_movements(demo_pair):
    result = diff(demo_pair)
    data = to_json(result)
    check_json(data)
    overview = data["overview_diff"]
    assert [r["name"] for r in overview["slices"]["rows"]] == ["BitmapDecode", "LegacyDecode", "Raster"]
    assert [(r["name"], r["owner"], r["change"]) for r in overview["counters"]["rows"]] == [
        ("DecodeQueueDepth", "process browser", "added")
    ]
    assert [(r["name"], r["slice_count_delta"]) for r in overview["processes"]["rows"]] == [("browser", 1)]
    assert overview["processes"]["summary"]["sort"] == "cpu"  # the demo's scheduling data, on both sides
    # The same schedule on both sides: no CPU time moved; every thread sleeps through the target's extra time.
    assert {r["cpu_time_delta"] for r in overview["scheduling"]["rows"]} == {0}
    # The demo's profiles are the same on both sides: compared, nothing moved.
    assert overview["absent"] == []
    assert overview["stack_samples"]["rows"] == [] and overview["stack_samples"]["summary"]["unchanged"] == 35
    text = to_text(result)
    assert "Stack Samples vs baseline (35 functions: 0 added, 0 removed, 0 changed, 35 unchanged" in text
    assert "datasette perfetto report target.db slices table --baseline base.db" in text


def test_sql_rendering_lists_both_sides(demo_pair):
    sql = to_sql(diff(demo_pair, "counters", "list"))
    assert sql.startswith("-- counters list vs baseline:")
    assert "-- baseline: counter tracks in scope" in sql and "-- target: counter tracks in scope" in sql


def test_identical_traces_diff_to_unchanged(demo_pair):
    base = connect_with_functions(demo_pair[0])
    again = connect_with_functions(demo_pair[0])
    data = to_json(
        run_diff(
            again,
            base,
            "slices",
            "table",
            {"baseline": "base.db"},
            Linker(None, "base.db"),
            Linker(None, "base.db"),
            "base.db",
            "base.db",
        )
    )
    summary = data["slices_table_diff"]["summary"]
    assert summary["unchanged"] == summary["total_rows"] == 48
    assert not any(f["text"].startswith("the baseline") for f in data.get("footnotes", []))


@pytest.mark.parametrize(
    "noun, view, flags",
    [
        ("slices", "histogram", {"name": "Raster"}),
        ("slices", "timeline", {"name": "Raster"}),
        ("slices", "inspect", {"name": "Raster"}),
        ("counters", "timeline", {"name": "MemoryUsage"}),
        ("scheduling", "inspect", {"tid": "1", "ts": "1s"}),
        ("counters", "inspect", {"name": "MemoryUsage", "ts": "1s"}),
    ],
)
def test_views_without_a_diff_reject_baseline(demo_pair, noun, view, flags):
    with pytest.raises(ReportError) as e:
        diff(demo_pair, noun, view, **flags)
    assert e.value.message.startswith(
        f"{noun} {view} does not take baseline; views that compare against a "
        "baseline: overview, processes table, tracks table, slices table, stack-samples functions, "
        "stack-samples top-down, stack-samples bottom-up, heap-profile functions, heap-profile top-down, "
        "heap-profile bottom-up, heap-dump types, scheduling summary, counters list"
    )
    assert e.value.param == "baseline" and e.value.options == accepted_labels()


def test_a_diff_validates_flags_like_the_view(demo_pair):
    with pytest.raises(ReportError, match="overview does not take sort"):
        diff(demo_pair, sort="dur")
    with pytest.raises(ReportError, match="'type' is not a sort key of a tracks table diff; use one of count, name"):
        diff(demo_pair, "tracks", "table", sort="type")
    with pytest.raises(ReportError, match="slices table does not take cpu"):
        diff(demo_pair, "slices", "table", cpu="1")


def test_run_report_alone_refuses_baseline(demo_db):
    conn = connect_with_functions(demo_db.path)
    try:
        with pytest.raises(ReportError, match="slices histogram does not take baseline"):
            run_report(conn, "slices", "histogram", {"name": "Raster", "baseline": "x"}, Linker(None, "x"))
    finally:
        conn.close()


# -- pages ------------------------------------------------------------------------------------------


@pytest.fixture
def pair_ds(demo_pair):
    return served(demo_pair[0], demo_pair[1])


@pytest.mark.web
@pytest.mark.asyncio
async def test_diff_page_html(pair_ds):
    r = await pair_ds.client.get("/target/-/report/slices?baseline=base")
    assert r.status_code == 200
    page = r.text
    assert "<span>target target 2.4s</span><span>baseline base 2s</span>" in page
    # Marked in text and coloured: the change column and the signed deltas.
    assert '<td class="perfetto-align-l perfetto-diff-added" title="only in the target">added</td>' in page
    assert '<td class="perfetto-align-l perfetto-diff-removed" title="only in the baseline">removed</td>' in page
    assert (
        '<td class="perfetto-align-r perfetto-diff-up">+120ms</td>' in page
        and '<td class="perfetto-align-r perfetto-diff-down">-60ms</td>' in page
    )
    assert '<td class="perfetto-align-l perfetto-diff-up" title="relative to the baseline">+42%</td>' in page
    # A removed name links into the baseline's single-trace report, the others into the target's.
    assert '<a href="/base/-/report/slices/inspect?name=LegacyDecode">LegacyDecode</a>' in page
    assert '<a href="/target/-/report/slices/inspect?name=BitmapDecode">BitmapDecode</a>' in page
    # The two single-trace pages, the baseline picker with the current choice, navigation kept in the diff.
    assert '<a href="/target/-/report/slices/table">target: target</a>' in page
    assert '<a href="/base/-/report/slices/table">baseline: base</a>' in page
    assert '<option value="base" selected>base</option>' in page
    assert '<a href="/target/-/report/counters?baseline=base">counters</a>' in page
    assert "the baseline trace is 18% shorter than the target&#39;s" in page
    # each side's SQL opens on its database
    assert f'href="{sql_path("base")}?sql=' in page and f'href="{sql_path("target")}?sql=' in page


@pytest.mark.web
@pytest.mark.asyncio
async def test_every_table_view_has_a_baseline_picker(pair_ds):
    for path in (
        "/target/-/report",
        "/target/-/report/processes",
        "/target/-/report/tracks",
        "/target/-/report/slices",
        "/target/-/report/scheduling",
        "/target/-/report/counters",
    ):
        page = (await pair_ds.client.get(path + "?top=3")).text
        assert '<select name="baseline">' in page and '<option value="base">base</option>' in page, path
        assert '<input type="hidden" name="top" value="3">' in page, path
        assert (await pair_ds.client.get(path + "?top=3&baseline=base")).status_code == 200, path
    histogram = (await pair_ds.client.get("/target/-/report/slices/histogram?name=Raster")).text
    assert '<select name="baseline">' not in histogram
    # Choosing "(none)" submits an empty baseline: the single-trace report.
    single = await pair_ds.client.get("/target/-/report/slices?baseline=")
    assert single.status_code == 200 and "vs baseline" not in single.text


@pytest.mark.web
@pytest.mark.asyncio
async def test_diff_json_and_text_over_http(pair_ds):
    data = (await pair_ds.client.get("/target/-/report/slices.json?baseline=base&top=3")).json()
    check_json(data)
    assert [r["change"] for r in data["slices_table_diff"]["rows"]] == ["added", "removed", "changed"]
    assert data["context"]["scope"] == {"baseline": "base", "top": "3"}
    text = (await pair_ds.client.get("/target/-/report.txt?baseline=base")).text
    assert text.startswith("[target target 2.4s | baseline base 2s | full trace | 4 processes]")
    assert "datasette perfetto report target.db slices table --baseline base.db" in text


@pytest.mark.web
@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path, message",
    [
        (
            "/target/-/report/slices/histogram.json?name=Raster&baseline=base",
            "slices histogram does not take baseline; views that compare against a baseline: overview, processes table",
        ),
        ("/target/-/report/counters/timeline.json?name=MemoryUsage&baseline=base", "counters timeline does not take"),
        (
            "/target/-/report/slices.json?baseline=nope",
            "baseline: no database named 'nope' is served; trace databases: base",
        ),
        ("/target/-/report/slices.json?baseline=plain", "plain is not a trace database"),
        ("/target/-/report/slices.json?baseline=base&baseline=target", "baseline: given more than once"),
        ("/target/-/report/tracks.json?baseline=base&sort=type", "'type' is not a sort key of a tracks table diff"),
    ],
)
async def test_bad_diff_requests_are_400(demo_pair, tmp_path, path, message):
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).execute("CREATE TABLE t (x)")
    ds = served(demo_pair[0], demo_pair[1], plain)
    r = await ds.client.get(path)
    assert r.status_code == 400, r.text
    assert message in r.json()["error"]
    html = await ds.client.get(path.replace(".json", "", 1))
    assert html.status_code == 400


@pytest.mark.web
@pytest.mark.asyncio
async def test_unknown_baseline_lists_only_trace_databases(demo_pair, tmp_path):
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).execute("CREATE TABLE t (x)")
    ds = served(demo_pair[0], demo_pair[1], plain)
    body = (await ds.client.get("/target/-/report/slices.json?baseline=nope")).json()
    assert body["error"] == "baseline: no database named 'nope' is served; trace databases: base"
    assert body["options"] == ["base"]
    page = (await ds.client.get("/target/-/report/slices")).text
    assert '<option value="plain">' not in page


@pytest.mark.web
@pytest.mark.asyncio
async def test_permissions_are_checked_on_both_databases(demo_pair):
    ds = datasette_with(demo_pair, {"databases": {"base": {"allow": {"id": "root"}}}})
    denied = await ds.client.get("/target/-/report/slices.json?baseline=base")
    assert denied.status_code == 403
    assert "LegacyDecode" not in denied.text and "base.pftrace" not in denied.text
    # The hidden database is not offered, nor listed when the name is wrong.
    assert '<option value="base">' not in (await ds.client.get("/target/-/report/slices")).text
    assert (await ds.client.get("/target/-/report/slices.json?baseline=nope")).json()["options"] == []
    root = {"ds_actor": ds.sign({"a": {"id": "root"}}, "actor")}
    allowed = await ds.client.get("/target/-/report/slices.json?baseline=base", cookies=root)
    assert allowed.status_code == 200 and allowed.json()["baseline"]["database"] == "base"
    # And the other way round: the target must be visible too.
    reverse = await ds.client.get("/base/-/report/slices.json?baseline=target")
    assert reverse.status_code == 403


@pytest.mark.web
@pytest.mark.asyncio
async def test_sql_links_of_each_side_follow_that_database_permission(demo_pair):
    ds = datasette_with(demo_pair, {"databases": {"base": {"allow_sql": {"id": "root"}}}})
    data = (await ds.client.get("/target/-/report/slices.json?baseline=base")).json()
    base_queries = [q for q in data["queries"] if q["purpose"].startswith("baseline: ")]
    target_queries = [q for q in data["queries"] if q["purpose"].startswith("target: ")]
    assert base_queries and not any(q.get("url") for q in base_queries)
    assert target_queries and all(q["url"].startswith(sql_path("target") + "?sql=") for q in target_queries)


@pytest.mark.web
@pytest.mark.asyncio
async def test_fuzzed_diff_parameters_never_500(pair_ds):
    paths = [
        "/target/-/report",
        "/target/-/report/processes",
        "/target/-/report/tracks",
        "/target/-/report/slices",
        "/target/-/report/scheduling",
        "/target/-/report/counters",
        "/target/-/report/slices/inspect",
    ]
    flags = [f for f in FLAGS if f not in ("ts", "max_lines", "buckets")]  # the flags of the views that diff
    await assert_fuzzed_flags_never_500(
        pair_ds,
        paths,
        flags,
        seed=11,
        rounds=80,
        max_len=10,
        more=lambda rng, value: {"baseline": rng.choice(["base", "target", value])},
    )


# -- command line -----------------------------------------------------------------------------------


def test_cli_diff_exits_zero_in_text_and_json(demo_pair):
    base, target = (str(p) for p in demo_pair)
    text = CliRunner().invoke(cli, ["perfetto", "report", "--baseline", base, target, "--width", "0"])
    assert text.exit_code == 0, text.output
    assert text.output.startswith(f"[target {target} 2.4s | baseline {base} 2s | full trace")
    assert "BitmapDecode" in text.output and "added" in text.output
    data = CliRunner().invoke(cli, ["perfetto", "report", "--baseline", base, target, "slices", "--format", "json"])
    assert data.exit_code == 0, data.output
    check_json(json.loads(data.output))


def test_cli_diff_runs_without_a_server_and_exits_zero(demo_pair):
    """What a CI step runs: the installed command, its exit status, its output as an artifact."""
    base, target = (str(p) for p in demo_pair)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from datasette.cli import cli; cli()",
            "perfetto",
            "report",
            "--baseline",
            base,
            target,
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["overview_diff"]["slices"]["summary"]["added"] == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["--baseline", "{missing}", "{target}"], "baseline: {missing}: no such database file"),
        (["--baseline", "{junk}", "{target}", "slices"], "{junk}: not a trace database (file is not a database)"),
        (["--baseline", "{plain}", "{target}"], "{plain} is not a trace database"),
        (
            ["--baseline", "{base}", "{target}", "slices", "histogram", "--name", "Raster"],
            "slices histogram does not take baseline",
        ),
    ],
)
def test_cli_diff_errors_exit_non_zero(demo_pair, tmp_path, args, message):
    junk, plain = tmp_path / "junk.db", tmp_path / "plain.db"
    junk.write_text("not a database at all" * 100)
    sqlite3.connect(plain).execute("CREATE TABLE t (x)")
    names = {
        "missing": str(tmp_path / "missing.db"),
        "junk": str(junk),
        "plain": str(plain),
        "base": str(demo_pair[0]),
        "target": str(demo_pair[1]),
    }
    result = CliRunner().invoke(cli, ["perfetto", "report", *(a.format(**names) for a in args)])
    assert result.exit_code == 1
    assert message.format(**names) in result.output


# -- the PyTorch ranks --------------------------------------------------------------------------------


def test_pytorch_ranks_diff_reads_sensibly(tmp_path):
    dbs = []
    for rank in (0, 1):
        db = tmp_path / f"rank{rank}.db"
        ingest([str(PYTORCH / f"rank{rank}.json.gz")], str(db))
        dbs.append(db)
    result = diff(dbs, "slices", "table", top="10000")
    data = to_json(result)
    check_json(data)
    rows = {r["name"]: r for r in data["slices_table_diff"]["rows"]}
    # The collective both ranks run: same count, different time.
    all_reduce = rows["gloo:all_reduce"]
    assert all_reduce["change"] == "changed" and all_reduce["count_delta"] == 0
    assert all_reduce["baseline"]["count"] == all_reduce["target"]["count"]
    # Names embedding object addresses pair up as added/removed; a footnote says why.
    summary = data["slices_table_diff"]["summary"]
    assert summary["added"] == summary["removed"] != 0
    note = next(f["text"] for f in data["footnotes"] if "except for numbers" in f["text"])
    assert note.startswith(f"{summary['added']} added slice names match a removed one except for numbers")
    processes = to_json(diff(dbs, "processes", "table"))["processes_table_diff"]
    assert processes["summary"]["total_rows"] == processes["summary"]["unchanged"]
