"""Ingest under fuzzing: a few hundred mutated copies of every input format per run (tests/fuzzer.py),
none of which may end in a traceback, a hang, a multi-line error, a changed existing output or a
leftover file. `./dev fuzz` runs the same fuzzer for 30 minutes with a fresh seed."""

from __future__ import annotations

import random

import pytest
from fuzzer import Finding, check_input, load_seeds, run

import datasette_perfetto.ingest as ingest_module

INPUTS_PER_FORMAT = 400


@pytest.fixture(scope="module")
def seeds():
    return load_seeds()


@pytest.mark.parametrize("fmt", ["proto", "json", "systrace"])
def test_mutated_inputs_import_or_fail_in_one_line(seeds, fmt):
    of_format = [s for s in seeds if s.fmt == fmt]
    assert of_format, f"no {fmt} seeds: the shared conformance cases are missing"
    findings: list[str] = []
    report = run(
        of_format,
        random.Random(f"ci-{fmt}"),
        count=INPUTS_PER_FORMAT,
        on_finding=lambda name, data, why: findings.append(f"{name} ({len(data)} bytes): {why}"),
    )
    assert findings == []
    assert report.inputs == INPUTS_PER_FORMAT
    # Both outcomes happen: the mutations are neither all harmless nor all fatal.
    assert report.imported > 0 and report.rejected > 0, report


def test_a_traceback_is_a_finding(tmp_path, monkeypatch):
    """The checker itself: an input that makes ingest raise anything but IngestError is a finding."""

    def broken(head):
        raise RuntimeError("boom")

    monkeypatch.setattr(ingest_module, "detect_format", broken)
    with pytest.raises(Finding, match="RuntimeError: boom"):
        check_input(b"[]", tmp_path)
