"""Time from `datasette perfetto serve TRACE` to a server that answers, with an empty cache
(the trace is imported) and again with the cache filled (it is not).

Each run starts the real command on a free port with a fresh cache folder for the first run,
and measures (a) until the report URL is printed and (b) until `/-/versions.json` answers 200,
then the report page's own first answer. Runs are repeated and the median printed.

Usage: python benchmarks/serve_startup.py [TRACE] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from shared_data import TRACES  # noqa: E402  (the shared traces, wherever this checkout is)


def start_to_answer(trace: str, cache: str) -> tuple[float, float, float]:
    """(seconds to the printed URL, to the first answer, to the report's first answer)."""
    began = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "datasette", "perfetto", "serve", trace, "-p", "0", "-q", "--cache-dir", cache],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        ready, _, _ = select.select([process.stdout], [], [], 600)
        if not ready:
            raise SystemExit("no URL printed within 600 s")
        url = process.stdout.readline().decode().strip()
        printed = time.monotonic() - began
        root = url.split("/", 3)
        with urllib.request.urlopen("/".join(root[:3]) + "/-/versions.json", timeout=600) as r:
            assert r.status == 200
        answered = time.monotonic() - began
        with urllib.request.urlopen(url, timeout=600) as r:
            assert r.status == 200
        return printed, answered, time.monotonic() - began
    finally:
        process.kill()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", default=str(TRACES / "chrome_startup.pftrace"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    first, second = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="serve-bench-") as cache:
            first.append(start_to_answer(args.trace, cache))
            second.append(start_to_answer(args.trace, cache))
    for label, runs in (("first run (imports)", first), ("second run (cached)", second)):
        url, answer, report = (statistics.median(r[i] for r in runs) for i in range(3))
        print(
            f"{label}: URL printed {url:.2f} s, first answer {answer:.2f} s, report page {report:.2f} s "
            f"(median of {len(runs)})"
        )


if __name__ == "__main__":
    main()
