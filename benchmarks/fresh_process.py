"""Running a benchmark's own measurement in a fresh interpreter, so its figures (time, peak RSS)
are that run's alone: `python SCRIPT --one TRACE` prints space-separated figures."""

from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def measure_in_fresh_process(script: str, trace: str, *options: str) -> list[str]:
    """The figures `script --one trace [options]` prints, with this checkout's package on the path."""
    return subprocess.run(
        [sys.executable, script, "--one", trace, *options],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.path.join(HERE, "..")},
    ).stdout.split()
