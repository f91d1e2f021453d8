"""benchmarks/ingest.py's step times: the steps an ingest reports through Progress, in order, covering its
wall time (the README's "where the time goes" comes from them)."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

from datasette_perfetto.importers.common.streams import READ_SHARE, read_progress
from datasette_perfetto.ingest import ingest
from datasette_perfetto.writer import FINISH_STEPS

BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "ingest.py"


def _step_times_class(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARK.parent))  # its modules beside it, as when run as a script
    spec = importlib.util.spec_from_file_location("ingest_benchmark", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.StepTimes


def test_the_steps_of_an_ingest_are_timed_in_order_and_cover_it(demo_trace, tmp_path, monkeypatch):
    start = time.perf_counter()
    steps = _step_times_class(monkeypatch)(start)
    ingest([str(demo_trace)], str(tmp_path / "demo.db"), steps)
    wall = time.perf_counter() - start
    durations = steps.durations(wall)
    names = [name for name, _ in durations]
    assert names[:3] == ["read and tokenize", "parse", "end of parse"]
    # The importer reports the end of tokenizing (half the input's progress) apart from the end of parsing:
    # the parse's events were done between them.
    assert durations[1][1] > 1e-3
    # Then the model's and the writer's named steps, the writer's last.
    assert names[-len(FINISH_STEPS) :] == [name for name, _ in FINISH_STEPS]
    assert all(seconds >= 0 for _, seconds in durations)
    assert abs(sum(seconds for _, seconds in durations) - wall) < 1e-6


def test_reading_reports_its_share_only_once_tokenizing_has_ended():
    # The whole file read is not the end of tokenizing (the last chunk's packets are still to do), so the
    # display learns that end from the importer's own report of READ_SHARE alone.
    assert read_progress(0, 1000) == 0
    assert read_progress(500, 1000) == READ_SHARE * 0.5
    assert read_progress(1000, 1000) < READ_SHARE
