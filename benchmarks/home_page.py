"""Datasette's home page and a database page with several trace databases served.

Ingests a trace once (default: the shared `chrome_startup.pftrace`), copies the
database N times (default 5), then requests `/` and `/{db}` through Datasette's
ASGI client, with the databases served mutable (`datasette a.db b.db`),
immutable (`datasette -i ...`) and as `datasette perfetto serve` serves its cache
(immutable, with the row counts it precomputed), and prints the first request and the p50/p95 of the rest.

Target (issue 12): `/` under 300 ms at p50 with five chrome_startup-sized databases.

Usage: python benchmarks/home_page.py [TRACE] [--copies 5] [--repeat 15]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from shared_data import TRACES  # noqa: E402  (the shared traces, wherever this checkout is)


async def measure(ds, path: str, repeat: int) -> tuple[float, list[float]]:
    start = time.perf_counter()
    response = await ds.client.get(path)
    first = time.perf_counter() - start
    assert response.status_code == 200, (path, response.status_code)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        response = await ds.client.get(path)
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, (path, response.status_code)
    return first, times


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


async def run(paths: list[str], repeat: int) -> None:
    from datasette.app import Datasette

    name = os.path.splitext(os.path.basename(paths[0]))[0]
    from datasette_perfetto.serve import build_datasette, write_inspect_data

    for path in paths:
        write_inspect_data(Path(path))  # as `serve` does for each database it caches
    for mode in ("mutable", "immutable", "serve"):
        if mode == "serve":
            ds = build_datasette([], paths)
        else:
            ds = Datasette(paths if mode == "mutable" else [], immutables=paths if mode == "immutable" else [])
        for label, path in (("/", "/"), ("/{db}", f"/{name}"), ("/{db}/-/report", f"/{name}/-/report")):
            first, times = await measure(ds, path, repeat)
            print(
                f"{mode:9} {label:15} first {first * 1000:7.1f} ms   p50 {statistics.median(times) * 1000:7.1f} ms"
                f"   p95 {p95(times) * 1000:7.1f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", default=None)
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    trace = args.trace or str(TRACES / "chrome_startup.pftrace")

    from datasette_perfetto.ingest import ingest

    with tempfile.TemporaryDirectory(prefix="home-page-") as tmp:
        first = os.path.join(tmp, "trace1.db")
        ingest([trace], first)
        paths = [first]
        for i in range(2, args.copies + 1):
            paths.append(os.path.join(tmp, f"trace{i}.db"))
            shutil.copyfile(first, paths[-1])
        print(f"{args.copies} copies of {os.path.basename(trace)} ({os.path.getsize(first) / 1e6:.1f} MB each)")
        asyncio.run(run(paths, args.repeat))


if __name__ == "__main__":
    main()
