"""Every report view under many scopes, on the big synthetic trace: no page over Datasette's 1 s limit.

benchmarks/report_latency.py times one page per view (and a few scoped ones) against p50/p95 targets; this
one requests each view of the slices, processes, tracks, scheduling and counters nouns, and dimensions compare
by thread, under every combination of a time range (none, 40% of the trace, 0.3% of it) and a flag (none,
group_by process or thread, a process, a thread glob, a sort, group_by thread ranked by the longest,
min_duration, a name glob), through Datasette's ASGI client with the default 1 s limit, and prints how many
answered 200, the slowest, and any that did not.

Usage: python benchmarks/report_scopes.py [--repeat 1] [--db PATH] [--rebuild] [--slices 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from report_latency import build, time_requests  # noqa: E402  (beside this script)

VIEWS = [
    ("slices", "table"),
    ("slices", "histogram"),
    ("slices", "timeline"),
    ("processes", "table"),
    ("tracks", "table"),
    ("scheduling", "summary"),
    ("scheduling", "timeline"),
    ("counters", "list"),
    ("dimensions", "compare"),  # by=thread, the dimension with the most values
]
FLAGS = [
    {},
    {"group_by": "process"},
    {"group_by": "thread"},
    {"process": "proc1"},
    {"thread": "thread1*"},
    {"sort": "count"},
    {"sort": "max"},
    {"group_by": "thread", "sort": "max"},
    {"min_duration": "1ms"},
    {"name": "Task1*"},
]


def paths(db: str) -> list[tuple[str, str]]:
    """(label, path) of every view under every scope."""
    conn = sqlite3.connect(db)
    try:
        start, end = conn.execute("SELECT start_ts, end_ts FROM trace_bounds").fetchone()
        top_name = conn.execute("SELECT name FROM report_slice_name ORDER BY count DESC LIMIT 1").fetchone()[0]
    finally:
        conn.close()
    dur = end - start
    ranges = [None, f"{int(0.2 * dur)}ns,{int(0.6 * dur)}ns", f"{int(0.5 * dur)}ns,{int(0.503 * dur)}ns"]
    db_name = os.path.splitext(os.path.basename(db))[0]
    out = []
    for time in ranges:
        for flags in FLAGS:
            for noun, view in VIEWS:
                params = dict(flags)
                if noun == "slices" and view != "table":
                    params.setdefault("name", top_name)  # one series: the most frequent name
                if noun == "dimensions":
                    params.setdefault("by", "thread")
                if time is not None:
                    params["time"] = time
                query = "&".join(f"{k}={v}" for k, v in params.items())
                label = f"{noun} {view} " + " ".join(f"{k}={v}" for k, v in params.items())
                out.append((label, f"/{db_name}/-/report/{noun}/{view}" + (f"?{query}" if query else "")))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--slices", type=int, default=1_000_000)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--db", default=os.path.join(tempfile.gettempdir(), "report_latency_big.db"))
    args = parser.parse_args()
    if args.rebuild or not os.path.exists(args.db):
        build(args.db, args.slices)
    results = asyncio.run(time_requests(args.db, paths(args.db), args.repeat))
    answered = [r for r in results if r.status == 200]
    refused = [r for r in results if r.status == 400]  # a flag the view does not take: refused, as it should be
    print(
        f"{len(results)} pages (views x scopes): {len(answered)} answered 200 within Datasette's 1 s limit, "
        f"{len(refused)} refused a flag their view does not take (400)"
    )
    print("slowest that answered (p50 ms):")
    for t in sorted(answered, key=lambda r: -r.p50)[:10]:
        print(f"  {t.p50:7.1f}  {t.label}")
    others = [r for r in results if r.status not in (200, 400)]
    for t in others:
        print(f"  {t.status} (p50 {t.p50:.0f} ms): {t.label}")
    print(f"pages over the limit or failing: {len(others)} (target 0)")


if __name__ == "__main__":
    main()
