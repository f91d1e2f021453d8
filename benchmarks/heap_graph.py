"""Heap-graph import benchmark: a synthetic Java heap dump of N objects (default one million)
→ ingest (objects, classes, references, reachability, dominator tree and retained sizes).

    .venv/bin/python benchmarks/heap_graph.py [--objects 1000000]

Prints the trace size, the import time and the peak RSS of the process (the trace is built
first, in a separate child process, so its memory does not count).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

OBJECTS_PER_PACKET = 2000
TYPES = 200


def build(path: str, n: int) -> None:
    """A random heap: object i (i > 0) is referred to by a random earlier object, a fifth of the
    objects get a second incoming reference, 1% of the objects are garbage and 100 are roots."""
    from datasette_perfetto.trace_builder import TraceBuilder

    rng = random.Random(1)
    refs: list[list[int]] = [[] for _ in range(n + 1)]  # object ids are 1..n
    for i in range(2, n + 1):
        if rng.random() < 0.01:
            continue  # garbage: nothing refers to it
        refs[rng.randrange(1, i)].append(i)
        if rng.random() < 0.2:
            refs[rng.randrange(1, n + 1)].append(i)
    b = TraceBuilder()
    packets = range(0, n, OBJECTS_PER_PACKET)
    for index, first in enumerate(packets):
        objects = []
        for i in range(first + 1, min(first + OBJECTS_PER_PACKET, n) + 1):
            out = refs[i]
            objects.append(
                dict(
                    id_delta=1 if objects else 0,
                    id=0 if objects else i,
                    type_id=1 + i % TYPES,
                    self_size=16 + (i * 7919) % 512,
                    reference_object_id=out,
                    reference_field_id=[1 + k % 4 for k in range(len(out))],
                )
            )
        extra = {}
        if index == 0:
            extra = dict(
                roots=[dict(root_type=3, object_ids=list(range(1, 101)))],
                types=[
                    dict(id=t, class_name=f"com.example.Type{t}".encode(), location_id=1) for t in range(1, TYPES + 1)
                ],
                field_names=[dict(iid=k, str=f"java.lang.Object com.example.Node.f{k}".encode()) for k in range(1, 5)],
                location_names=[dict(iid=1, str=b"base.apk")],
            )
        b.heap_graph(
            1000, seq_id=1, pid=1234, index=index, continued=index < len(packets) - 1, objects=objects, **extra
        )
    b.write(path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=1_000_000)
    parser.add_argument("--build-only", metavar="PATH")
    args = parser.parse_args()
    if args.build_only:
        build(args.build_only, args.objects)
        return
    from datasette_perfetto.ingest import ingest

    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "heap.pftrace")
        subprocess.run([sys.executable, __file__, "--objects", str(args.objects), "--build-only", trace], check=True)
        db = os.path.join(tmp, "heap.db")
        start = time.perf_counter()
        ingest([trace], db)
        elapsed = time.perf_counter() - start
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        conn = sqlite3.connect(db)
        objects, reachable = conn.execute("SELECT count(*), sum(reachable) FROM heap_graph_object").fetchone()
        dominated, top = conn.execute("SELECT count(*), max(retained_size) FROM heap_graph_dominator").fetchone()
        print(
            f"trace: {os.path.getsize(trace) / 1e6:.1f} MB, {objects:,} objects ({reachable:,} reachable, "
            f"{dominated:,} in the dominator tree, largest retained size {top:,} bytes)"
        )
        print(f"import: {elapsed:.1f} s, peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
