"""Golden text output for every (noun, view) over the bundled demo trace (and, for kernel
scheduling in depth, over tests/sched_trace.py).

The text rendering is locked here so any change to a report is explicit in
review. Regenerate after an intended change with:
    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_report_golden.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import report_of
from google.protobuf import json_format

from datasette_perfetto.report import report_pb2
from datasette_perfetto.report.render import message_json, to_json, to_text
from datasette_perfetto.report.views import NOUNS

GOLDEN = Path(__file__).parent / "golden" / "report"

# (noun, view, flags): every view at least once; single-series and inspect views with the flags they need.
CASES = [
    ("", "", {}),
    ("slices", "table", {}),
    ("slices", "table", {"thread": "CrBrowserMain", "sort": "count", "top": "5"}),
    ("slices", "histogram", {"name": "Raster"}),
    ("slices", "histogram", {"name": "URLRequest", "buckets": "5"}),
    ("slices", "timeline", {"name": "Raster", "buckets": "10"}),
    ("slices", "timeline", {"name": "URLRequest", "time": "0.5s,1.5s", "buckets": "4"}),
    ("slices", "inspect", {"name": "URLRequest"}),
    ("slices", "inspect", {"name": "URLRequest", "ts": "953.371ms", "pid": "100"}),
    ("slices", "inspect", {"name": "LayoutView*", "ts": "370ms", "thread": "CrBrowserMain"}),
    ("scheduling", "summary", {}),
    ("processes", "table", {}),
    ("processes", "table", {"time": "0.5s,1s", "sort": "name"}),
    ("tracks", "table", {}),
    ("tracks", "table", {"pid": "100", "sort": "name", "top": "20"}),
    ("counters", "list", {}),
    ("counters", "timeline", {"name": "MemoryUsage", "buckets": "10"}),
    ("counters", "histogram", {"name": "IPCMessagesSent"}),
    ("counters", "inspect", {"name": "MemoryUsage", "ts": "1s"}),
    ("counters", "inspect", {"name": "IPC*", "time": "0.5s,1.5s"}),
    # Dimensions (RFC 0039): the demo's phone is machine 1, its two displays a custom dimension.
    ("dimensions", "list", {}),
    ("dimensions", "compare", {"by": "machine", "top": "5"}),
    ("dimensions", "compare", {"by": "machine", "baseline_value": "0", "top": "3"}),
    ("slices", "table", {"group_by": "machine", "top": "8"}),
    ("slices", "table", {"dim": "machine=1"}),
    ("slices", "histogram", {"name": "Raster", "group_by": "thread"}),
    ("processes", "table", {"group_by": "machine"}),
    ("tracks", "table", {"group_by": "display"}),
    ("counters", "list", {"group_by": "display"}),
    ("scheduling", "summary", {"group_by": "machine"}),
    *[
        (noun, view, {})
        for noun, views in (
            ("stack-samples", ("functions", "top-down", "bottom-up")),
            ("heap-profile", ("functions", "top-down", "bottom-up")),
            ("heap-dump", ("types",)),
        )
        for view in views
    ],
]


# The same over a busier kernel scheduling trace (2 CPUs, contention, D sleeps, an unknown process); goldens sched-*.
SCHED_CASES = [
    ("", "", {}),
    ("scheduling", "summary", {}),
    ("scheduling", "summary", {"group_by": "process"}),
    ("scheduling", "summary", {"cpu": "1", "sort": "runnable"}),
    ("scheduling", "summary", {"time": "0.2s,0.4s", "top": "3"}),
    ("scheduling", "timeline", {}),
    ("scheduling", "timeline", {"tid": "1002", "buckets": "5"}),
    ("scheduling", "inspect", {"tid": "1002", "ts": "310ms"}),
    ("scheduling", "inspect", {"tid": "1002", "ts": "302ms"}),
    ("scheduling", "inspect", {"thread": "main", "ts": "310ms"}),
    ("scheduling", "inspect", {"thread": "Worker-1", "ts": "295.2ms"}),
]


# The same over a real V8 CPU profile (chrome_v8_cpu_profile.json.gz: 5,072 samples); goldens named v8-*.
V8_CASES = [
    ("", "", {}),
    ("stack-samples", "functions", {}),
    ("stack-samples", "functions", {"pid": "1216", "sort": "total", "top": "5"}),
    ("stack-samples", "top-down", {"max_lines": "25"}),
    ("stack-samples", "top-down", {"name": "finalize", "max_lines": "8"}),
    ("stack-samples", "bottom-up", {"max_lines": "20"}),
    ("stack-samples", "bottom-up", {"name": "connectedCallback", "max_lines": "10", "time": "0.5s,0.8s"}),
]


def case_id(case) -> str:
    noun, view, flags = case
    name = "-".join(p for p in (noun or "overview", view) if p)
    if flags:
        name += "-" + "-".join(f"{k}={v}" for k, v in sorted(flags.items())).replace("/", "_").replace("*", "x")
    return name


def sched_case_id(case) -> str:
    return f"sched-{case_id(case)}"


def run(db_path, case, db_arg="demo.db"):
    noun, view, flags = case
    return report_of(db_path, noun, view, flags, db_arg)


def test_every_view_has_a_golden_case():
    covered = {(noun, view) for noun, view, _ in CASES + SCHED_CASES}
    missing = [(noun, view) for noun, views in NOUNS.items() for view in views if (noun, view) not in covered]
    assert not missing, f"views without a golden case: {missing}"


def check_golden(text: str, name: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path.name}; run with UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_text_output_matches_golden(demo_db, case):
    check_golden(to_text(run(demo_db.path, case)), case_id(case))


@pytest.mark.parametrize("case", SCHED_CASES, ids=sched_case_id)
def test_sched_trace_text_output_matches_golden(sched_db, case):
    check_golden(to_text(run(sched_db.path, case, "sched.db")), sched_case_id(case))


@pytest.mark.parametrize("case", V8_CASES, ids=lambda case: f"v8-{case_id(case)}")
def test_v8_profile_text_output_matches_golden(v8_db, case):
    check_golden(to_text(run(v8_db.path, case, "v8.db")), f"v8-{case_id(case)}")


@pytest.mark.parametrize("case", V8_CASES, ids=lambda case: f"v8-{case_id(case)}")
def test_v8_profile_json_output_parses_as_report_proto(v8_db, case):
    check_json(to_json(run(v8_db.path, case, "v8.db")))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_json_output_parses_as_report_proto(demo_db, case):
    check_json(to_json(run(demo_db.path, case)))


@pytest.mark.parametrize("case", SCHED_CASES, ids=sched_case_id)
def test_sched_trace_json_output_parses_as_report_proto(sched_db, case):
    check_json(to_json(run(sched_db.path, case, "sched.db")))


def check_json(data: dict) -> None:
    # Round-trips through the schema: every key is a field of report.proto, nothing is lost.
    message = json_format.ParseDict(json.loads(json.dumps(data)), report_pb2.Report())
    assert message_json(message) == data
    assert message.WhichOneof("result") is not None
    assert message.queries, "every report shows the SQL it ran"
