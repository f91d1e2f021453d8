"""The report and RFC 0039's dimensions (issue 16): dim scope, subtitles, group_by a dimension, the
`dimensions` noun. Every figure is compared with SQL over track_dimension.

Two databases: the two-rank PyTorch DDP trace (a custom `rank` from distributedInfo) and a built job
(benchmarks/dimensions.py: 4 ranks on 2 machines, a `rank` and a string `zone` with display names, rank 3 the
straggler), whose ranks 0 and 2 (1 and 3) share a label ("rank 0": numbering is per machine) and whose
processes and threads differ only by their dimensions (pid 100 and 101 on both machines).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import (
    TraceDB,
    connect_with_functions,
    get_error,
    get_json,
    ingest_built,
    ingest_named,
    report_of,
    served,
)
from datasette.cli import cli
from shared_data import TRACES
from test_report_golden import case_id, check_golden, check_json

from datasette_perfetto.ingest import ingest
from datasette_perfetto.report.base import Linker
from datasette_perfetto.report.canned import canned_queries
from datasette_perfetto.report.diff import run_diff
from datasette_perfetto.report.render import to_json, to_sql, to_text
from datasette_perfetto.report.scope import ReportError
from datasette_perfetto.trace_builder import TraceBuilder

PYTORCH = TRACES / "pytorch_ddp"
BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "dimensions.py"


def rank_job_trace(*args, **kwargs) -> bytes:
    """benchmarks/dimensions.py's job, loaded by path (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location("dimensions_benchmark", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.rank_job_trace(*args, **kwargs)


@pytest.fixture(scope="session")
def ddp(tmp_path_factory) -> TraceDB:
    return TraceDB(ingest_named(tmp_path_factory, sorted(PYTORCH.glob("rank*.json.gz")), "ddp"))


@pytest.fixture(scope="session")
def job(tmp_path_factory) -> TraceDB:
    folder = tmp_path_factory.mktemp("job")
    trace = folder / "job.pftrace"  # the name the report's header shows
    trace.write_bytes(rank_job_trace(4, 3, 3, ranks_per_machine=2))
    ingest([str(trace)], str(folder / "job.db"))
    return TraceDB(folder / "job.db")


def report(db: TraceDB, noun: str, view: str = "", **flags) -> dict:
    """The report's JSON message of (noun, view) computed straight from the database."""
    result = report_of(db.path, noun, view, flags)
    return to_json(result)


def tracks_with(db: TraceDB, *dims: tuple[str, object]) -> set[int]:
    """The tracks whose effective dimensions have every (name, typed value), by SQL."""
    out = None
    for name, value in dims:
        column = "int_value" if isinstance(value, int) else "string_value"
        ids = {
            r[0]
            for r in db.rows(f"SELECT track_id FROM track_dimension WHERE name = ? AND {column} = ?", (name, value))
        }
        out = ids if out is None else out & ids
    return out or set()


def slices_by_name(db: TraceDB, tracks: set[int]) -> dict[str, tuple[int, int]]:
    """name -> (count, total dur) of the slices on `tracks`, by SQL."""
    marks = ",".join("?" * len(tracks))
    return {
        name: (count, total)
        for name, count, total in db.rows(
            f"SELECT name, count(*), sum(dur) FROM slice WHERE track_id IN ({marks}) GROUP BY name", tuple(tracks)
        )
    }


# -- 1. scope by dimension ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1", "rank 1", '"rank 1"', "'rank 1'"])
def test_dim_scope_keeps_the_slices_of_one_rank(ddp, value):
    msg = report(ddp, "slices", "table", dim=[f"rank={value}"], top="1000")["slices_table"]
    expected = slices_by_name(ddp, tracks_with(ddp, ("rank", 1)))
    assert {r["name"]: (r["count"], r["total_dur"]) for r in msg["rows"]} == expected
    assert msg["total_slices"] == sum(c for c, _ in expected.values())


def test_dim_scope_by_display_name_and_repeated(job):
    east = report(job, "slices", "table", dim=["zone=East zone"], top="1000")["slices_table"]
    assert {r["name"]: (r["count"], r["total_dur"]) for r in east["rows"]} == slices_by_name(
        job, tracks_with(job, ("zone", "east"))
    )
    both = report(job, "slices", "table", dim=["machine=1", "zone=east"], top="1000")["slices_table"]
    tracks = tracks_with(job, ("machine", 1), ("zone", "east"))
    assert len(tracks) == 3  # rank 2's process, thread and counter tracks
    assert {r["name"]: (r["count"], r["total_dur"]) for r in both["rows"]} == slices_by_name(job, tracks)


def test_a_shared_label_selects_every_value_with_it(job):
    # Numbering is per machine: rank 0 and rank 2 are both labelled "rank 0".
    msg = report(job, "tracks", "table", dim=["rank=rank 0"], top="100")["tracks_table"]
    assert {r["id"] for r in msg["rows"]} == tracks_with(job, ("rank", 0)) | tracks_with(job, ("rank", 2))


def test_dim_scope_on_tracks_processes_and_counters(job):
    tracks = report(job, "tracks", "table", dim=["rank=3"], top="100")["tracks_table"]
    assert {r["id"] for r in tracks["rows"]} == tracks_with(job, ("rank", 3))
    processes = report(job, "processes", "table", dim=["rank=3"])["processes_table"]
    expected = job.rows(
        "SELECT DISTINCT p.id, p.pid FROM track tr LEFT JOIN thread th ON th.id = tr.utid "
        "JOIN process p ON p.id = coalesce(tr.upid, th.upid) "
        "JOIN track_dimension d ON d.track_id = tr.id WHERE d.name = 'rank' AND d.int_value = 3"
    )
    assert [(r["upid"], r["pid"]) for r in processes["rows"]] == expected
    assert processes["rows"][0]["slice_count"] == sum(
        c for c, _ in slices_by_name(job, tracks_with(job, ("rank", 3))).values()
    )


def test_every_view_takes_dim(job):
    from datasette_perfetto.report.views import NOUNS

    for noun, views in NOUNS.items():
        for view in views.values():
            assert "dim" in view.flags, (noun, view.name)
            assert ":dim" in view.canned_sql, (noun, view.name)


def test_unknown_dimension_or_value_lists_what_is_there(job):
    with pytest.raises(ReportError) as e:
        report(job, "slices", "table", dim=["shard=1"])
    assert e.value.param == "dim"
    assert e.value.options == ["machine", "process", "thread", "rank", "zone"]
    with pytest.raises(ReportError) as e:
        report(job, "slices", "table", dim=["rank=9"])
    assert "rank 0" in e.value.message and e.value.options == ["0", "1", "2", "3"]
    with pytest.raises(ReportError, match="NAME=VALUE"):
        report(job, "slices", "table", dim=["rank"])


def test_dim_in_header_links_and_sql(job):
    result = report_of(job.path, "slices", "table", {"dim": ["rank=3", "zone=west"]})
    text = to_text(result)
    assert text.splitlines()[0].endswith("| dim=rank=3 & zone=west]")
    assert "--dim rank=3 --dim zone=west" in text  # next steps keep the scope
    sql = to_sql(result)
    assert "track_dimension" in sql and '--   :dim_name_0 = "rank"' in sql and '--   :dim_value_1 = "west"' in sql


def test_cli_dim_is_repeatable_and_errors_exit_1(job):
    runner = CliRunner()
    ok = runner.invoke(
        cli,
        ["perfetto", "report", str(job.path), "tracks", "--dim", "rank=3", "--dim", "machine=1", "--format", "json"],
    )
    assert ok.exit_code == 0, ok.output
    assert {r["id"] for r in json.loads(ok.output)["tracks_table"]["rows"]} == tracks_with(job, ("rank", 3))
    bad = runner.invoke(cli, ["perfetto", "report", str(job.path), "--dim", "rank=7", "--format", "json"])
    assert bad.exit_code == 1
    assert json.loads(bad.output)["parameter"] == "dim"
    bad = runner.invoke(cli, ["perfetto", "report", str(job.path), "--dim", "nope=1"])
    assert bad.exit_code == 1 and "dimensions: machine, process, thread, rank, zone" in bad.output


def test_canned_queries_take_one_dim(job):
    conn = connect_with_functions(job.path)
    try:
        for name in ("slices_table", "tracks_table", "processes_table"):
            q = canned_queries()[name]
            params = {p: "" for p in q["params"]}
            params.update(dim="rank=rank 1", top="100")
            rows = conn.execute(q["sql"], params).fetchall()
            noun = name.split("_")[0]
            msg = report(job, noun, "table", dim=["rank=rank 1"], top="100")[name]
            assert len(rows) == len(msg["rows"]), name
    finally:
        conn.close()


def test_diff_with_dim_on_both_sides(job, tmp_path):
    copy = tmp_path / "base.db"
    shutil.copy(job.path, copy)
    target, base = connect_with_functions(job.path), connect_with_functions(copy)
    try:
        result = run_diff(
            target,
            base,
            "slices",
            "table",
            {"dim": ["rank=3"], "baseline": "base"},
            Linker(None, "t.db"),
            Linker(None, "b.db"),
            "t",
            "base",
        )
    finally:
        target.close()
        base.close()
    diff = result.report.slices_table_diff
    expected = slices_by_name(job, tracks_with(job, ("rank", 3)))
    assert {r.name: r.target.count for r in diff.rows} == {k: v[0] for k, v in expected.items()}
    assert all(r.change == "unchanged" for r in diff.rows)
    assert result.report.context.scope["dim"] == "rank=3"


@pytest.mark.web
@pytest.mark.asyncio
async def test_web_dim_scope_and_errors(job):
    ds = served(job.path)
    page = await get_json(ds, "/job/-/report/slices.json?dim=rank%3D3&dim=machine%3D1&top=100")
    expected = slices_by_name(job, tracks_with(job, ("rank", 3), ("machine", 1)))
    assert {r["name"]: r["count"] for r in page["slices_table"]["rows"]} == {k: v[0] for k, v in expected.items()}
    assert any("dim=rank%3D3&dim=machine%3D1" in s["url"] for s in page["next_steps"])
    error = await get_error(ds, "/job/-/report/slices.json?dim=rank%3D8")
    assert error["parameter"] == "dim" and error["options"] == ["0", "1", "2", "3"]
    error = await get_error(ds, "/job/-/report.json?dim=gpu%3D1")
    assert "dimensions: machine, process, thread, rank, zone" in error["error"]
    html = await ds.client.get("/job/-/report/processes?dim=zone%3DWest+zone")
    assert html.status_code == 200 and "dim=zone=West zone" in html.text
    bad = await ds.client.get("/job/-/report/processes?dim=zone%3Dnorth")
    assert bad.status_code == 400


# -- 2. subtitles -------------------------------------------------------------------------------------


def track_subtitle(db: TraceDB) -> dict[int, str]:
    return dict(db.rows("SELECT track_id, subtitle FROM track_subtitle"))


def expected_process_subtitles(db: TraceDB) -> dict[int, str]:
    """upid -> the labels all its own and its threads' tracks share, by SQL over track_dimension (the collapse
    rule: dimensions with more than one value; never process or thread)."""
    shown = {
        name
        for (name,) in db.rows(
            "SELECT name FROM track_dimension WHERE name NOT IN ('process', 'thread') GROUP BY name "
            "HAVING count(DISTINCT coalesce(int_value, string_value)) > 1"
        )
    }
    labels: dict[int, list[set[str]]] = {}
    for upid, track, name, label in db.rows(
        "SELECT coalesce(tr.upid, th.upid), tr.id, d.name, d.label FROM track tr LEFT JOIN thread th ON th.id = tr.utid "
        "JOIN track_dimension d ON d.track_id = tr.id WHERE coalesce(tr.upid, th.upid) IS NOT NULL"
    ):
        per_track = labels.setdefault(upid, [])
        per_track.append((track, label if name in shown else None))
    out = {}
    for upid, pairs in labels.items():
        tracks: dict[int, set[str]] = {}
        for track, label in pairs:
            tracks.setdefault(track, set()).update({label} if label else set())
        out[upid] = set.intersection(*tracks.values())
    return out


def test_processes_differing_only_by_rank_get_subtitles(job, ddp):
    for db in (job, ddp):
        rows = report(db, "processes", "table", top="100")["processes_table"]["rows"]
        expected = expected_process_subtitles(db)
        assert {r["upid"]: set(r["subtitle"].split(" · ")) - {""} for r in rows} == {
            r["upid"]: expected.get(r["upid"], set()) for r in rows
        }
    rows = report(job, "processes", "table")["processes_table"]["rows"]
    # Two machines, two ranks each, the same pids: four rows, four subtitles.
    assert sorted(r["subtitle"] for r in rows) == [
        "machine 0 · rank 0 · East zone",
        "machine 0 · rank 1 · West zone",
        "machine 1 · rank 0 · East zone",
        "machine 1 · rank 1 · West zone",
    ]
    python = [
        r["subtitle"] for r in report(ddp, "processes", "table")["processes_table"]["rows"] if r["name"] == "python"
    ]
    assert sorted(python) == ["rank 0", "rank 1"]


def test_track_and_instance_subtitles_are_track_subtitle(job):
    subtitles = track_subtitle(job)
    tracks = report(job, "tracks", "table", top="100")["tracks_table"]["rows"]
    assert {r["id"]: r["subtitle"] for r in tracks} == {r["id"]: subtitles[r["id"]] for r in tracks}
    inspect = report(job, "slices", "inspect", name="gloo:all_reduce", top="100")["slices_inspect"]
    assert len(inspect["instances"]) == 12
    assert all(i["subtitle"] == subtitles[i["track_id"]] for i in inspect["instances"])
    table = report(job, "slices", "table")["slices_table"]["rows"]
    assert all(r["max_instance"]["subtitle"] == subtitles[r["max_instance"]["track_id"]] for r in table)
    timeline = report(job, "slices", "timeline", name="forward", buckets="2")["slices_timeline"]
    for bucket in timeline["buckets"]:  # python [100] of two machines stays two owners
        dominant = [(d["name"], d["subtitle"]) for d in bucket["dominant"]]
        assert len(set(dominant)) == len(dominant)
    assert {d["subtitle"] for b in timeline["buckets"] for d in b["dominant"]} == set(track_subtitle(job).values())


def test_text_shows_the_subtitle_after_the_name_and_keeps_it_when_cut(ddp, job):
    text = to_text(report_of(ddp.path, "processes", "table", {}))
    assert any(line.strip().startswith("python · rank 1") for line in text.splitlines())
    narrow = to_text(report_of(job.path, "processes", "table", {}), width=60)
    assert all(
        any(line.strip().split("   ")[0].endswith(f"· {sub}") for line in narrow.splitlines())
        for sub in ("rank 0 · East zone", "rank 1 · West zone")
    )


def test_diff_keys_keep_ranks_apart(job, tmp_path):
    copy = tmp_path / "base.db"
    shutil.copy(job.path, copy)
    target, base = connect_with_functions(job.path), connect_with_functions(copy)
    try:
        for noun, field in (("processes", "processes_table_diff"), ("tracks", "tracks_table_diff")):
            result = run_diff(
                target,
                base,
                noun,
                "table",
                {"baseline": "base", "top": "100"},
                Linker(None, "t.db"),
                Linker(None, "b.db"),
                "t",
                "base",
            )
            rows = getattr(result.report, field).rows
            subtitles = [r.subtitle for r in rows]
            assert (
                len(rows)
                == len({(r.name, getattr(r, "type", ""), r.subtitle) for r in rows})
                == 4 * len({(r.name, getattr(r, "type", "")) for r in rows})
            )
            assert all(r.baseline_rows == 1 and r.target_rows == 1 for r in rows), noun
            assert {s for s in subtitles} >= {"machine 1 · rank 1 · West zone", "machine 0 · rank 1 · West zone"}
    finally:
        target.close()
        base.close()


@pytest.mark.web
@pytest.mark.asyncio
async def test_html_shows_the_subtitle_under_the_name(ddp):
    page = await served(ddp.path).client.get("/ddp/-/report/processes")
    assert page.status_code == 200
    assert '<span class="perfetto-report-subtitle">rank 1</span>' in page.text


# -- 3. group_by a dimension --------------------------------------------------------------------------

VALUE = "coalesce(CAST(d.int_value AS TEXT), d.string_value)"


def per_value_slices(db: TraceDB, name: str, where: str = "1", params: tuple = ()) -> dict[tuple[str, str], tuple]:
    """(slice name, value) -> (count, total dur, max dur), by SQL GROUP BY over track_dimension."""
    return {
        (n, v): (c, t, m)
        for n, v, c, t, m in db.rows(
            f"SELECT s.name, {VALUE}, count(*), sum(s.dur), max(s.dur) FROM slice s "
            f"JOIN track_dimension d ON d.track_id = s.track_id AND d.name = ? WHERE {where} GROUP BY 1, 2",
            (name, *params),
        )
    }


def nearest_rank(values: list[int], p: int) -> int:
    from datasette_perfetto.report.base import percentile_index

    ordered = sorted(values)
    return ordered[percentile_index(len(ordered), p)]


@pytest.mark.parametrize("flags", [{}, {"time": "0s,20ms"}])
def test_slices_table_grouped_by_rank_is_sql_group_by(job, flags):
    rows = report(job, "slices", "table", group_by="rank", top="1000", **flags)["slices_table"]
    assert rows["group_by"] == "rank"
    got = {(r["name"], r["group_value"]): (r["count"], r["total_dur"]) for r in rows["rows"]}
    if not flags:
        expected = {k: v[:2] for k, v in per_value_slices(job, "rank").items()}
        assert got == expected
        labels = {r["group_value"]: r["group_label"] for r in rows["rows"]}
        assert labels == {
            "0": "rank 0 (rank=0)",
            "1": "rank 1 (rank=1)",
            "2": "rank 0 (rank=2)",
            "3": "rank 1 (rank=3)",
        }
    else:  # the slices with a part in the range, clipped to it
        start = job.one("SELECT start_ts FROM trace_bounds")
        clipped = job.rows(
            f"SELECT s.name, {VALUE}, count(*), sum(min(s.ts + s.dur, ?) - max(s.ts, ?)) FROM slice s "
            "JOIN track_dimension d ON d.track_id = s.track_id AND d.name = 'rank' "
            "WHERE s.ts < ? AND s.ts + s.dur >= ? GROUP BY 1, 2",
            (start + 20_000_000, start, start + 20_000_000, start),
        )
        assert got == {(n, v): (c, t) for n, v, c, t in clipped}


def test_ddp_slices_grouped_by_rank(ddp):
    rows = report(ddp, "slices", "table", group_by="rank", top="10000")["slices_table"]["rows"]
    expected = per_value_slices(ddp, "rank")
    ranked = [r for r in rows if r["group_value"]]
    assert {(r["name"], r["group_value"]): (r["count"], r["total_dur"], r["max_dur"]) for r in ranked} == expected
    assert {r["group_label"] for r in rows} == {"rank 0", "rank 1", "(no rank)"}
    # The global instant tracks carry no rank: a group of their own.
    unranked = ddp.one(
        "SELECT count(*) FROM slice WHERE track_id NOT IN (SELECT track_id FROM track_dimension WHERE name = 'rank')"
    )
    assert sum(r["count"] for r in rows if not r["group_value"]) == unranked > 0


def test_histogram_groups_are_per_value_stats(job):
    msg = report(job, "slices", "histogram", name="gloo:all_reduce", group_by="rank")["slices_histogram"]
    durations: dict[str, list[int]] = {}
    for value, dur in job.rows(
        f"SELECT {VALUE}, s.dur FROM slice s JOIN track_dimension d ON d.track_id = s.track_id AND d.name = 'rank' "
        "WHERE s.name = 'gloo:all_reduce'"
    ):
        durations.setdefault(value, []).append(dur)
    assert [g["value"] for g in msg["groups"]] == ["0", "1", "2", "3"]
    for g in msg["groups"]:
        ds = durations[g["value"]]
        stats = g["stats"]
        assert (stats["count"], stats["total"], stats["min"], stats["max"]) == (len(ds), sum(ds), min(ds), max(ds))
        assert (stats["p50"], stats["p95"]) == (nearest_rank(ds, 50), nearest_rank(ds, 95))


def test_scheduling_processes_tracks_counters_grouped(job):
    sched = report(job, "scheduling", "summary", group_by="rank")["scheduling_summary"]
    cpu = dict(
        job.rows(
            f"SELECT {VALUE}, sum(sc.dur) FROM sched sc JOIN thread th ON th.id = sc.utid "
            "JOIN track tr ON tr.utid = th.id JOIN track_dimension d ON d.track_id = tr.id AND d.name = 'rank' "
            "WHERE sc.utid != 0 GROUP BY 1"
        )
    )
    assert {r["group_value"]: r["cpu_time"] for r in sched["rows"] if r["group_value"]} == cpu
    assert sched["group_by"] == "rank" and {r["name"] for r in sched["rows"]} >= {"rank 1 (rank=3)"}
    processes = report(job, "processes", "table", group_by="rank")["processes_table"]
    slices = dict(
        job.rows(
            f"SELECT {VALUE}, count(*) FROM slice s JOIN track_dimension d ON d.track_id = s.track_id "
            "AND d.name = 'rank' GROUP BY 1"
        )
    )
    assert {r["group_value"]: r["slice_count"] for r in processes["rows"]} == slices
    tracks = report(job, "tracks", "table", group_by="machine")["tracks_table"]
    expected = job.rows(
        f"SELECT {VALUE}, count(*), sum(coalesce(st.event_count, 0)) FROM track_dimension d "
        "LEFT JOIN report_track_stats st ON st.track_id = d.track_id WHERE d.name = 'machine' GROUP BY 1"
    )
    assert {(r["group_value"], r["track_count"], r["event_count"]) for r in tracks["rows"]} == set(expected)
    counters = report(job, "counters", "list", group_by="zone")["counters_list"]
    expected = job.rows(
        f"SELECT tr.name, {VALUE}, count(*), min(c.value), max(c.value) FROM counter c JOIN track tr ON tr.id = c.track_id "
        "JOIN track_dimension d ON d.track_id = tr.id AND d.name = 'zone' GROUP BY 1, 2"
    )
    assert {(r["name"], r["group_value"], r["count"], r["min"], r["max"]) for r in counters["rows"]} == set(expected)
    assert {r["scope"] for r in counters["rows"]} == {"East zone", "West zone"}


def test_stack_sample_functions_grouped_by_process(tmp_path_factory):
    v8 = TraceDB(ingest_named(tmp_path_factory, TRACES / "chrome_v8_cpu_profile.json.gz", "v8dims"))
    msg = report(v8, "stack-samples", "functions", group_by="process", top="10000")["stack_samples_functions"]
    per_value: dict[str, int] = {}
    for r in msg["rows"]:
        per_value[r["group_value"]] = per_value.get(r["group_value"], 0) + r["self_count"]
    expected = dict(
        v8.rows(
            "SELECT CAST(coalesce(tc.upid, th.upid) AS TEXT), count(*) FROM stack_sample s "
            "JOIN profiler_task_context tc ON tc.id = s.task_context_id LEFT JOIN thread th ON th.id = tc.utid GROUP BY 1"
        )
    )
    assert per_value == expected
    assert msg["total_samples"] == sum(expected.values())


def test_group_by_errors_and_own_keys(job):
    with pytest.raises(ReportError) as e:
        report(job, "slices", "table", group_by="shard")
    assert e.value.options == ["machine", "process", "thread", "rank", "zone"]
    with pytest.raises(ReportError) as e:
        report(job, "scheduling", "summary", group_by="shard")
    assert e.value.options[:2] == ["thread", "process"]
    assert report(job, "scheduling", "summary", group_by="process")["scheduling_summary"]["group_by"] == "process"


def test_grouped_diff_keeps_values_apart(job, tmp_path):
    copy = tmp_path / "base.db"
    shutil.copy(job.path, copy)
    target, base = connect_with_functions(job.path), connect_with_functions(copy)
    try:
        result = run_diff(
            target,
            base,
            "slices",
            "table",
            {"baseline": "base", "group_by": "rank", "top": "1000"},
            Linker(None, "t.db"),
            Linker(None, "b.db"),
            "t",
            "base",
        )
    finally:
        target.close()
        base.close()
    rows = result.report.slices_table_diff.rows
    assert len(rows) == len(per_value_slices(job, "rank"))
    assert all(r.change == "unchanged" and r.target.count == r.baseline.count for r in rows)


# -- 4. the dimensions noun ---------------------------------------------------------------------------


def test_dimensions_list_counts_tracks_threads_processes(job, ddp):
    for db in (job, ddp):
        msg = report(db, "dimensions", "list", top="1000")["dimensions_list"]
        expected = {
            (name, value): (label, display or "", tracks, threads, processes)
            for name, value, label, display, tracks, threads, processes in db.rows(
                f"SELECT d.name, {VALUE}, min(d.label), min(d.display_name), count(DISTINCT d.track_id), "
                "count(DISTINCT tr.utid), count(DISTINCT coalesce(tr.upid, th.upid)) FROM track_dimension d "
                "JOIN track tr ON tr.id = d.track_id LEFT JOIN thread th ON th.id = tr.utid GROUP BY 1, 2"
            )
        }
        got = {
            (d["name"], v["value"]): (
                v["label"],
                v["display_name"],
                v["track_count"],
                v["thread_count"],
                v["process_count"],
            )
            for d in msg["dimensions"]
            for v in d["values"]
        }
        assert got == expected
        sources = {d["name"]: d["sources"] for d in msg["dimensions"]}
        for name, source in db.rows("SELECT DISTINCT name, source FROM track_dimension"):
            assert source in sources[name]
    msg = report(job, "dimensions", "list")["dimensions_list"]
    assert [d["name"] for d in msg["dimensions"]] == ["machine", "process", "thread", "rank", "zone"]
    assert {d["name"]: d["in_subtitles"] for d in msg["dimensions"]} == {
        "machine": True,
        "process": False,
        "thread": False,
        "rank": True,
        "zone": True,
    }
    zone = next(d for d in msg["dimensions"] if d["name"] == "zone")
    assert [(v["value"], v["display_name"]) for v in zone["values"]] == [("east", "East zone"), ("west", "West zone")]


def sql_compare(db: TraceDB, by: str) -> dict[str, dict[str, dict]]:
    """name -> value -> count, total, self, max, durations: by SQL over slice and track_dimension."""
    out: dict[str, dict[str, dict]] = {}
    for name, value, dur, self_dur in db.rows(
        f"SELECT s.name, {VALUE}, s.dur, s.dur - coalesce((SELECT sum(k.dur) FROM slice k WHERE k.parent_id = s.id), 0) "
        "FROM slice s JOIN track_dimension d ON d.track_id = s.track_id AND d.name = ?",
        (by,),
    ):
        v = out.setdefault(name, {}).setdefault(value, {"count": 0, "total": 0, "self": 0, "max": 0, "durs": []})
        v["count"] += 1
        v["total"] += dur
        v["self"] += self_dur
        v["max"] = max(v["max"], dur)
        v["durs"].append(dur)
    return out


# By rank the figures are precomputed at import; by thread they are summed per track and the percentiles ranked
# from the instances (grouping.group_stats).
@pytest.mark.parametrize("which, by", [("job", "rank"), ("ddp", "rank"), ("job", "thread"), ("ddp", "thread")])
def test_compare_figures_are_sql(which, by, job, ddp):
    import statistics

    db = {"job": job, "ddp": ddp}[which]
    msg = report(db, "dimensions", "compare", by=by, top="10000")["dimensions_compare"]
    expected = sql_compare(db, by)
    values = sorted({v for per in expected.values() for v in per}, key=int)
    assert [t["value"] for t in msg["totals"]] == values
    assert msg["total_rows"] == len(expected) == len(msg["names"])
    for n in msg["names"]:
        per = expected[n["name"]]
        assert [v["value"] for v in n["values"]] == values
        for v in n["values"]:
            e = per.get(v["value"])
            if e is None:
                assert v["stats"]["count"] == 0 and v["stats"]["total"] == 0
                continue
            stats = v["stats"]
            assert (stats["count"], stats["total"], v["self_dur"], stats["max"]) == (
                e["count"],
                e["total"],
                e["self"],
                e["max"],
            ), (n["name"], v["value"])
            assert (stats["p50"], stats["p95"]) == (nearest_rank(e["durs"], 50), nearest_rank(e["durs"], 95))
        totals = [per.get(v, {"total": 0})["total"] for v in values]
        median = statistics.median(totals)
        assert n["median_total"] == median
        if max(totals) == min(totals):
            assert n["spread"] == 1.0 and n["straggler"] == ""
            continue
        assert n["spread"] == (max(totals) / median if median else "Infinity")
        far = max(abs(t - median) for t in totals)
        assert abs(per.get(n["straggler"], {"total": 0})["total"] - median) == far
    # Sorted by spread, the names every value has first.
    keys = [(any(v["stats"]["count"] == 0 for v in n["values"]), n["spread"]) for n in msg["names"]]
    complete = [s for missing, s in keys if not missing]
    assert complete == sorted(complete, reverse=True) and keys == sorted(keys, key=lambda k: k[0])


@pytest.mark.parametrize(
    "inputs, by, shortcut",
    [
        (["rank0.json.gz", "rank1.json.gz"], "machine", True),  # one machine, on every track
        (["rank0.json.gz"], "rank", False),  # one rank, but two tracks have none
    ],
)
def test_compare_of_a_dimension_with_one_value(tmp_path_factory, inputs, by, shortcut):
    db = TraceDB(ingest_named(tmp_path_factory, [PYTORCH / name for name in inputs], "one-value"))
    result = report_of(db.path, "dimensions", "compare", {"by": by, "top": "10000"})
    msg = to_json(result)["dimensions_compare"]
    expected = sql_compare(db, by)
    [value] = {v for per in expected.values() for v in per}
    assert sorted(n["name"] for n in msg["names"]) == sorted(expected)
    for n in msg["names"]:
        [v] = n["values"]
        e = expected[n["name"]][value]
        assert v["value"] == value
        assert (v["stats"]["count"], v["stats"]["total"], v["self_dur"], v["stats"]["max"]) == (
            e["count"],
            e["total"],
            e["self"],
            e["max"],
        ), n["name"]
    # With one value on every track with slices, that value's figures are report_slice_name's.
    assert ("FROM report_slice_name n" in to_sql(result)) == shortcut


def test_compare_charts_keep_both_ends_and_the_straggler_of_many_values(job, monkeypatch):
    from datasette_perfetto.report.views import dimensions

    monkeypatch.setattr(dimensions, "CHART_VALUES", 2)
    result = report_of(job.path, "dimensions", "compare", {"by": "thread", "top": "100"})
    msg = result.result_message()
    charts = result.view.charts(msg, result.run)
    assert len(charts) == len(msg.names) > 0
    for name, chart in zip(msg.names, charts):
        values = list(name.values)
        totals = [v.stats.total for v in values]
        labels = [bar.label for bar in chart.bars]
        assert len(values) > 2 and len(labels) <= 3
        # In the values' order, with their totals: the largest, the smallest and the straggler.
        assert [(bar.label, bar.value) for bar in chart.bars] == [
            (v.label, v.stats.total) for v in values if v.label in labels
        ]
        assert max(bar.value for bar in chart.bars) == max(totals)
        assert min(bar.value for bar in chart.bars) == min(totals)
        assert {v.label for v in values if v.straggler} <= set(labels)
        assert chart.title.endswith(f"the 1 largest and smallest of {len(values)} values (all in the table)")


def test_compare_leaves_percentiles_out_beyond_its_ranking_budget(job, monkeypatch):
    # Ranking the shown names' instances stops beyond PERCENTILE_BUDGET of them: no percentile is shown (rather than
    # some), a footnote says why and links the histogram that has them; within it, every value has them.
    from datasette_perfetto.report.views import dimensions

    flags = {"by": "thread", "top": "3", "time": "0s,10s"}  # a range: the instances are ranked, not precomputed
    within_result = report_of(job.path, "dimensions", "compare", flags)
    within = within_result.result_message()
    instances = sum(n.count for n in within.names)
    assert 0 < instances <= dimensions.PERCENTILE_BUDGET
    assert all(v.stats.p50 > 0 for n in within.names for v in n.values if v.stats.count)
    monkeypatch.setattr(dimensions, "PERCENTILE_BUDGET", instances - 1)
    result = report_of(job.path, "dimensions", "compare", flags)
    beyond = result.result_message()
    assert [(n.name, n.count) for n in beyond.names] == [(n.name, n.count) for n in within.names]
    assert all(v.stats.p50 == v.stats.p95 == v.stats.min == 0 for n in beyond.names for v in n.values)
    notes = [f for f in result.report.footnotes if f.text.startswith("Percentiles are left out")]
    assert len(notes) == 1 and f"{instances:,} instances" in notes[0].text
    assert " slices histogram " in notes[0].command and "--group-by thread" in notes[0].command
    # Shown as left out, not as zero.
    assert beyond.percentiles_left_out and not within.percentiles_left_out
    table = next(t for t in result.view.tables(beyond, result.run) if "p50" in t.headers)
    p50, p95 = table.headers.index("p50"), table.headers.index("p95")
    assert {(row[p50].text, row[p95].text) for row in table.rows} == {("-", "-")}
    kept_table = next(t for t in within_result.view.tables(within, within_result.run) if "p50" in t.headers)
    assert all(row[p50].text not in ("-", "0ns") for row in kept_table.rows if row[3].text != "0")


@pytest.mark.parametrize("by", ["rank", "thread", "process"])
def test_histogram_per_value_beyond_its_ranking_budget_keeps_counts_totals_and_longest(job, monkeypatch, by):
    # Over the whole trace, beyond GROUP_RANKING_BUDGET instances each value's count, total, average and longest
    # come from the per track aggregates kept at import, the same as ranking gives; minimum and percentiles are
    # left out (flagged, "-" in the table, a footnote linking one value's histogram). A time range still ranks.
    from datasette_perfetto.report.views import slices

    with closing(sqlite3.connect(job.path)) as conn:
        (name,) = conn.execute("SELECT name FROM report_slice_name ORDER BY count DESC LIMIT 1").fetchone()
    flags = {"name": name, "group_by": by}
    ranked = report_of(job.path, "slices", "histogram", flags).result_message()
    monkeypatch.setattr(slices, "GROUP_RANKING_BUDGET", 0)
    result = report_of(job.path, "slices", "histogram", flags)
    totals = result.result_message()
    assert totals.group_percentiles_left_out and not ranked.group_percentiles_left_out
    assert len(ranked.groups) > 1
    assert [(g.value, g.label, g.stats.count, g.stats.total, g.stats.avg, g.stats.max) for g in totals.groups] == [
        (g.value, g.label, g.stats.count, g.stats.total, g.stats.avg, g.stats.max) for g in ranked.groups
    ]
    assert all(g.stats.min == g.stats.p50 == g.stats.p99 == 0 for g in totals.groups)
    assert totals.stats == ranked.stats and list(totals.buckets) == list(ranked.buckets)
    notes = [f for f in result.report.footnotes if f.text.startswith(f"Minimum and percentiles per {by}")]
    assert len(notes) == 1 and f"--dim {by}=" in notes[0].command and "--group-by" not in notes[0].command
    table = result.view.tables(totals, result.run)[-1]
    assert {tuple(row[i].text for i in (3, 5, 6, 7)) for row in table.rows} == {("-",) * 4}
    in_range = report_of(job.path, "slices", "histogram", {**flags, "time": "0s,10s"}).result_message()
    assert not in_range.group_percentiles_left_out and all(g.stats.p50 > 0 for g in in_range.groups)


def test_compare_finds_the_injected_straggler(job):
    msg = report(job, "dimensions", "compare", by="rank")["dimensions_compare"]
    computing = [n for n in msg["names"] if n["name"] in ("forward", "backward") or n["name"].startswith("aten::")]
    assert computing and all(n["straggler"] == "3" for n in computing)
    assert msg["collectives"] == ["gloo:all_reduce"] and msg["steps"] == "ProfilerStep#*"
    assert msg["likely_straggler"] == "3" and msg["likely_straggler_label"] == "rank 1 (rank=3)"
    # Inside collectives: the all_reduce slices (one thread per rank, no overlap) within the steps, by SQL.
    waits = dict(
        job.rows(
            f"SELECT {VALUE}, sum(s.dur) FROM slice s JOIN track_dimension d ON d.track_id = s.track_id "
            "AND d.name = 'rank' WHERE s.name = 'gloo:all_reduce' GROUP BY 1"
        )
    )
    steps = dict(
        job.rows(
            f"SELECT {VALUE}, sum(s.dur) FROM slice s JOIN track_dimension d ON d.track_id = s.track_id "
            "AND d.name = 'rank' WHERE s.name GLOB 'ProfilerStep#*' GROUP BY 1"
        )
    )
    assert {w["value"]: (w["in_collectives"], w["step_time"], w["outside"]) for w in msg["waits"]} == {
        v: (waits[v], steps[v], steps[v] - waits[v]) for v in waits
    }
    assert [w["likely_straggler"] for w in msg["waits"]] == [False, False, False, True]


def test_compare_on_the_pytorch_ranks_names_the_rank_that_waits_least(ddp):
    msg = report(ddp, "dimensions", "compare", by="rank")["dimensions_compare"]
    assert set(msg["collectives"]) == {"c10d::allreduce_", "gloo:all_reduce"}

    # Per rank: the union of its collective slices inside its outermost steps, by SQL and interval arithmetic.
    def union(spans):
        total, reach = 0, None
        for a, b in sorted(spans):
            if reach is None or a > reach:
                total, reach = total + b - a, b
            elif b > reach:
                total, reach = total + b - reach, b
        return total

    expected = {}
    for value in ("0", "1"):
        steps = ddp.rows(
            f"SELECT s.ts, s.ts + s.dur FROM slice s JOIN track_dimension d ON d.track_id = s.track_id AND d.name = 'rank' "
            f"WHERE {VALUE} = ? AND s.name GLOB 'ProfilerStep#*'",
            (value,),
        )
        spans = ddp.rows(
            f"SELECT s.ts, s.ts + s.dur FROM slice s JOIN track_dimension d ON d.track_id = s.track_id AND d.name = 'rank' "
            f"WHERE {VALUE} = ? AND s.name IN ('c10d::allreduce_', 'gloo:all_reduce')",
            (value,),
        )
        clipped = [(max(a, sa), min(b, sb)) for a, b in spans for sa, sb in steps if a < sb and b > sa]
        expected[value] = (union(clipped), sum(b - a for a, b in steps))
    got = {w["value"]: (w["in_collectives"], w["step_time"]) for w in msg["waits"]}
    assert got == expected
    least = min(expected, key=lambda v: expected[v][0] / expected[v][1])
    assert msg["likely_straggler"] == least == "1"


def test_compare_against_a_baseline_value(job):
    # The value, or its label as the report shows it (shared labels carry the value).
    assert (
        report(job, "dimensions", "compare", by="rank", baseline_value="rank 1 (rank=1)")["dimensions_compare"][
            "baseline_value"
        ]
        == "1"
    )
    with pytest.raises(ReportError):
        report(job, "dimensions", "compare", by="rank", baseline_value="rank 9")
    msg = report(job, "dimensions", "compare", by="rank", baseline_value="1", top="1000")["dimensions_compare"]
    assert msg["baseline_value"] == "1"
    expected = sql_compare(job, "rank")
    for n in msg["names"]:
        base = expected[n["name"]]["1"]
        for v in n["values"]:
            e = expected[n["name"]][v["value"]]
            assert v["total_dur_delta"] == e["total"] - base["total"]
            assert v["count_delta"] == e["count"] - base["count"]
            assert v["avg_dur_delta"] == e["total"] // e["count"] - base["total"] // base["count"]
            assert v["change"] == (
                "baseline" if v["value"] == "1" else "changed" if v["total_dur_delta"] else "unchanged"
            )
    text = to_text(report_of(job.path, "dimensions", "compare", {"by": "rank", "baseline_value": "1"}))
    assert "Δ total vs rank 1 (rank=1)" in text and "baseline" in text


def test_compare_filters_sorts_and_scopes(job):
    msg = report(job, "dimensions", "compare", by="rank", name="aten::*", sort="total", top="100")["dimensions_compare"]
    assert {n["name"] for n in msg["names"]} == {f"aten::op{i}" for i in range(4)}
    assert [n["total_dur"] for n in msg["names"]] == sorted((n["total_dur"] for n in msg["names"]), reverse=True)
    machine = report(job, "dimensions", "compare", by="rank", dim=["machine=1"], top="100")["dimensions_compare"]
    assert [t["value"] for t in machine["totals"]] == ["2", "3"]
    assert report(job, "dimensions", "compare", by="zone")["dimensions_compare"]["by"] == "zone"
    with pytest.raises(ReportError) as e:
        report(job, "dimensions", "compare", by="shard")
    assert e.value.param == "by" and "rank" in e.value.options
    with pytest.raises(ReportError) as e:
        report(job, "dimensions", "compare")
    assert e.value.message == "dimensions compare needs by, the dimension to compare the values of: " + (
        "machine, process, thread, rank, zone"
    )


def test_compare_canned_query_agrees(job):
    conn = connect_with_functions(job.path)
    try:
        q = canned_queries()["dimensions_compare"]
        params = {p: "" for p in q["params"]}
        params.update(by="rank", top="100")
        conn.row_factory = __import__("sqlite3").Row
        rows = conn.execute(q["sql"], params).fetchall()
    finally:
        conn.close()
    expected = sql_compare(job, "rank")
    assert {(r["name"], r["value"]): (r["count"], r["total_dur"], r["self_dur"], r["max_dur"]) for r in rows} == {
        (name, value): (e["count"], e["total"], e["self"], e["max"])
        for name, per in expected.items()
        for value, e in per.items()
    }


def test_overview_has_a_section_per_dimension_with_values(job, ddp):
    msg = report(job, "")["overview"]
    assert [b["by"] for b in msg["by_dimension"]] == ["machine", "rank", "zone"]
    rank = msg["by_dimension"][1]
    assert len(rank["names"]) == 3 and all(n["straggler"] == "3" for n in rank["names"])
    text = to_text(report_of(ddp.path, "", "", {}))
    assert "By rank: the slice names whose per-rank totals disagree most:" in text
    assert [b["by"] for b in report(ddp, "")["overview"]["by_dimension"]] == ["rank"]


@pytest.mark.web
@pytest.mark.asyncio
async def test_web_dimensions_pages(job, ddp):
    ds = served(ddp.path)
    page = await ds.client.get("/ddp/-/report/dimensions/compare?by=rank")
    assert page.status_code == 200 and "likely straggler" in page.text
    data = await get_json(ds, "/ddp/-/report/dimensions/compare.json?by=rank")
    assert data["dimensions_compare"]["likely_straggler"] == "1"
    listed = await get_json(ds, "/ddp/-/report/dimensions.json")
    assert [d["name"] for d in listed["dimensions_list"]["dimensions"]] == ["machine", "process", "thread", "rank"]
    nav = await ds.client.get("/ddp/-/report")
    assert 'href="/ddp/-/report/dimensions"' in nav.text
    error = await get_error(ds, "/ddp/-/report/dimensions/compare.json?by=shard")
    assert error["parameter"] == "by" and error["options"] == ["machine", "process", "thread", "rank"]
    error = await get_error(ds, "/ddp/-/report/dimensions/compare.json?by=rank&baseline_value=7")
    assert error["parameter"] == "baseline_value" and error["options"] == ["0", "1"]
    sql = await ds.client.get("/ddp/-/report/dimensions/compare.sql?by=rank")
    assert sql.status_code == 200 and ":group_dim" in sql.text


# -- goldens over the built job: the straggler question answered ------------------------------------------

JOB_CASES = [
    ("", "", {}),
    ("dimensions", "list", {}),
    ("dimensions", "compare", {"by": "rank", "top": "4"}),
    ("dimensions", "compare", {"by": "rank", "name": "forward", "baseline_value": "0"}),
    ("slices", "table", {"group_by": "rank", "top": "8"}),
    ("slices", "histogram", {"name": "*all_reduce", "group_by": "rank"}),
    ("processes", "table", {}),
    ("scheduling", "summary", {"dim": "zone=west"}),
]


@pytest.mark.parametrize("case", JOB_CASES, ids=lambda case: f"dims-job-{case_id(case)}")
def test_job_text_matches_golden(job, case):
    noun, view, flags = case
    check_golden(to_text(report_of(job.path, noun, view, flags, "job.db")), f"dims-job-{case_id(case)}")
    check_json(to_json(report_of(job.path, noun, view, flags, "job.db")))


def test_compare_scoped_path_agrees_with_the_precomputed_one(job):
    whole = report(job, "dimensions", "compare", by="rank", top="100")["dimensions_compare"]
    # A time range covering the whole trace reads the slices themselves: the same figures.
    ranged = report(job, "dimensions", "compare", by="rank", top="100", time="0s,1s")["dimensions_compare"]
    assert [n["name"] for n in whole["names"]] == [n["name"] for n in ranged["names"]]
    assert [[v["stats"] for v in n["values"]] for n in whole["names"]] == [
        [v["stats"] for v in n["values"]] for n in ranged["names"]
    ]
    assert whole["waits"] == ranged["waits"]


def test_links_from_a_row_select_that_row_alone(job):
    """pid 101 is on both machines: a process row's links add its dimension values."""
    result = report_of(job.path, "processes", "table", {})
    rows = result.report.processes_table.rows
    top = rows[0]
    assert (top.pid, list(top.dims)) == (101, ["machine=1", "rank=3", "zone=west"])
    step = next(s for s in result.report.next_steps if s.label.startswith("Slices of"))
    assert step.command.endswith("slices table --pid 101 --dim machine=1 --dim rank=3 --dim zone=west")
    narrowed = report(job, "slices", "table", pid="101", dim=list(top.dims), top="100")["slices_table"]
    expected = job.one(
        "SELECT count(*) FROM slice s JOIN track tr ON tr.id = s.track_id LEFT JOIN thread th ON th.id = tr.utid "
        "WHERE coalesce(tr.upid, th.upid) = ?",
        (top.upid,),
    )
    assert narrowed["total_slices"] == expected == top.slice_count
    sched = report_of(job.path, "scheduling", "summary", {})
    assert all(r.dims for r in sched.report.scheduling_summary.rows if r.subtitle)


def test_a_dim_value_one_side_lacks_is_named_with_its_database(job, ddp):
    target, base = connect_with_functions(job.path), connect_with_functions(ddp.path)
    try:
        with pytest.raises(ReportError) as e:
            run_diff(
                target,
                base,
                "slices",
                "table",
                {"dim": ["rank=3"], "baseline": "ddp"},
                Linker(None, "t.db"),
                Linker(None, "b.db"),
                "job",
                "ddp",
            )
    finally:
        target.close()
        base.close()
    assert e.value.message.startswith("ddp: dim: dimension rank has no value '3'") and e.value.options == ["0", "1"]


def test_compare_counts_unnamed_and_empty_named_slices_as_one_name(tmp_path):
    # Slices without a name (NULL) and named "" are both shown as "": one row per value with all of them, not
    # one replacing the other.
    builder = TraceBuilder()
    seq = builder.sequence(1)
    seq.process(1, "app")
    threads = [seq.thread(1, 2 + i, f"t{i}") for i in range(2)]
    for i, track in enumerate(threads):
        for k in range(3 + i):
            ts = 1_000 + k * 100
            seq.slice_begin(ts, track, "" if k % 2 else None)
            seq.slice_end(ts + 50 + i, track)
    db = ingest_built(tmp_path, builder).path
    with closing(sqlite3.connect(db)) as conn:
        kinds = conn.execute(
            "SELECT count(*) FILTER (WHERE name IS NULL), count(*) FILTER (WHERE name = '') FROM slice"
        )
        assert kinds.fetchone() == (4, 3)
    msg = report_of(db, "dimensions", "compare", {"by": "thread"}).result_message()
    (row,) = msg.names
    assert row.name == "" and row.count == 7
    assert [(v.label, v.stats.count, v.stats.total) for v in row.values] == [
        ("t0", 3, 150),
        ("t1", 4, 204),
    ]
