"""Report page latency on a big synthetic trace.

Builds (once, cached beside the system temp dir unless --rebuild) a trace with
1,000,000 slices on 200 threads, 100,000 scheduling slices on 8 CPUs and
100,000 counter values, ingests it, then requests every (noun, view) of the
report — HTML, several times each — through Datasette's ASGI client with the
default 1 s query limit, and prints p50/p95 per view, the first request's time, and a status
other than 200 if any request got one.

Targets (issue 5): p50 under 250 ms and p95 under 1 s for every view.

Usage: python benchmarks/report_latency.py [--repeat 7] [--rebuild] [--slices 1000000] [--only LABEL] [--db PATH]
                                          [--warm]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from typing import NamedTuple

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from datasette_perfetto.trace_builder import trace_record  # noqa: E402  (after the path is set)

PROCESSES = 20
THREADS_PER_PROCESS = 10
CPUS = 8
THREAD_UUID = 1 << 32  # thread track uuids, apart from process uuids (= pid; a main thread's tid is its pid)
COUNTER_TRACKS = 50


def write_trace(path: str, slices: int, sched: int, counters: int) -> None:
    rng = random.Random(1)
    names = [f"Task{i}::Run" for i in range(400)] + [f"Frame{i}" for i in range(100)]
    weights = [1 / (i + 1) for i in range(len(names))]  # a few names dominate, as in real traces

    with open(path, "wb") as f:

        def emit(packet: pb.TracePacket) -> None:
            data = packet.SerializeToString()
            f.write(trace_record(data))

        seq = 1
        emit(
            pb.TracePacket(
                trusted_packet_sequence_id=seq,
                sequence_flags=1,
                incremental_state_cleared=True,
                interned_data=pb.InternedData(
                    event_names=[pb.EventName(iid=i + 1, name=n) for i, n in enumerate(names)]
                ),
            )
        )
        threads = []
        for p in range(PROCESSES):
            pid = 1000 + p * 100
            emit(
                pb.TracePacket(
                    trusted_packet_sequence_id=seq,
                    track_descriptor=pb.TrackDescriptor(
                        uuid=pid, process=pb.ProcessDescriptor(pid=pid, process_name=f"proc{p}")
                    ),
                )
            )
            for t in range(THREADS_PER_PROCESS):
                tid = pid + t
                emit(
                    pb.TracePacket(
                        trusted_packet_sequence_id=seq,
                        track_descriptor=pb.TrackDescriptor(
                            uuid=THREAD_UUID + tid,
                            parent_uuid=pid,
                            thread=pb.ThreadDescriptor(pid=pid, tid=tid, thread_name=f"thread{t}"),
                        ),
                    )
                )
                threads.append((pid, tid))
        for c in range(COUNTER_TRACKS):
            desc = pb.TrackDescriptor(uuid=900_000 + c, name=f"counter{c}", parent_uuid=threads[c][0])
            desc.counter.SetInParent()
            emit(pb.TracePacket(trusted_packet_sequence_id=seq, track_descriptor=desc))

        span = 10_000_000_000  # 10 s of trace
        per_thread = slices // len(threads)
        step = span // per_thread
        begin, end = pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END
        for _, tid in threads:
            ts = 1_000_000
            made = 0
            while made < per_thread:
                # a root slice with one nested child: two slices per step
                root = rng.choices(range(len(names)), weights)[0] + 1
                child = rng.choices(range(len(names)), weights)[0] + 1
                dur = rng.randint(step // 4, step - 10)
                emit(
                    pb.TracePacket(
                        timestamp=ts,
                        trusted_packet_sequence_id=seq,
                        track_event=pb.TrackEvent(type=begin, track_uuid=THREAD_UUID + tid, name_iid=root),
                    )
                )
                emit(
                    pb.TracePacket(
                        timestamp=ts + 5,
                        trusted_packet_sequence_id=seq,
                        track_event=pb.TrackEvent(type=begin, track_uuid=THREAD_UUID + tid, name_iid=child),
                    )
                )
                emit(
                    pb.TracePacket(
                        timestamp=ts + dur // 2,
                        trusted_packet_sequence_id=seq,
                        track_event=pb.TrackEvent(type=end, track_uuid=THREAD_UUID + tid),
                    )
                )
                emit(
                    pb.TracePacket(
                        timestamp=ts + dur,
                        trusted_packet_sequence_id=seq,
                        track_event=pb.TrackEvent(type=end, track_uuid=THREAD_UUID + tid),
                    )
                )
                ts += step * 2
                made += 2
        for i in range(counters):
            c = i % COUNTER_TRACKS
            emit(
                pb.TracePacket(
                    timestamp=1_000_000 + (i // COUNTER_TRACKS) * (span // (counters // COUNTER_TRACKS)),
                    trusted_packet_sequence_id=seq,
                    track_event=pb.TrackEvent(
                        type=pb.TrackEvent.TYPE_COUNTER, track_uuid=900_000 + c, counter_value=rng.randint(0, 1 << 20)
                    ),
                )
            )
        per_cpu = sched // CPUS
        for cpu in range(CPUS):
            bundle = pb.FtraceEventBundle(cpu=cpu)
            prev = 0
            for i in range(per_cpu):
                ts = 1_000_000 + i * (span // per_cpu)
                nxt = rng.choice(threads)[1] if i % 3 else 0
                bundle.event.append(
                    pb.FtraceEvent(
                        timestamp=ts,
                        pid=prev,
                        sched_switch=pb.SchedSwitchFtraceEvent(
                            prev_pid=prev,
                            prev_comm="x",
                            prev_state=rng.choice((0, 1, 2)),
                            prev_prio=120,
                            next_pid=nxt,
                            next_comm="x",
                            next_prio=120,
                        ),
                    )
                )
                prev = nxt
                if len(bundle.event) >= 1000:
                    emit(pb.TracePacket(trusted_packet_sequence_id=2, ftrace_events=bundle))
                    bundle = pb.FtraceEventBundle(cpu=cpu)
            if bundle.event:
                emit(pb.TracePacket(trusted_packet_sequence_id=2, ftrace_events=bundle))


def build(db: str, slices: int) -> None:
    from datasette_perfetto.ingest import ingest

    trace = db + ".pftrace"
    t0 = time.perf_counter()
    write_trace(trace, slices, 100_000, 100_000)
    t1 = time.perf_counter()
    ingest([trace], db)
    t2 = time.perf_counter()
    os.unlink(trace)
    print(f"built {db}: trace written in {t1 - t0:.1f}s, ingested in {t2 - t1:.1f}s", file=sys.stderr)


def requests(conn, db_name: str) -> list[tuple[str, str]]:
    """(label, path) for every (noun, view), with the flags single-series and inspect views need."""
    from datasette_perfetto.report.views import NOUNS

    name = conn.execute("SELECT name FROM report_slice_name ORDER BY total_dur DESC LIMIT 1").fetchone()[0]
    counter = conn.execute("SELECT name FROM counter_track ORDER BY id LIMIT 1").fetchone()[0]
    thread = conn.execute("SELECT name FROM thread WHERE tid = 1001").fetchone()[0]
    # Times as shares of the trace (on this script's 10 s trace: 2s,6s and 5s): any trace's pages look inside it.
    dur = conn.execute("SELECT end_ts - start_ts FROM trace_bounds").fetchone()[0]

    def at(share: float) -> str:
        return f"{int(share * dur)}ns"

    needs = {
        ("slices", "histogram"): {"name": name},
        ("slices", "timeline"): {"name": name},
        ("slices", "inspect"): {"name": name},
        ("counters", "timeline"): {"name": counter},
        ("counters", "histogram"): {"name": counter},
        ("counters", "inspect"): {"name": counter, "ts": at(0.5)},
        ("scheduling", "inspect"): {"tid": "1001", "ts": at(0.5)},
        ("dimensions", "compare"): {"by": "machine"},  # the one dimension every trace has
    }
    out = [("overview", f"/{db_name}/-/report")]
    for noun, views in NOUNS.items():
        for view in views:
            params = needs.get((noun, view), {})
            query = "&".join(f"{k}={v}" for k, v in params.items())
            out.append((f"{noun} {view}", f"/{db_name}/-/report/{noun}/{view}" + (f"?{query}" if query else "")))
    base = f"/{db_name}/-/report"
    wide = f"{at(0.2)},{at(0.6)}"
    # The 11th bucket of a default (20-bucket) timeline, where a click on it leads: 1, 2, 2.5 or 5 x 10^k wide.
    bucket = min(m * 10**k for k in range(20) for m in (1, 2, 2.5, 5) if m * 10**k >= dur / 20)
    one_bucket = f"{int(10 * bucket)}ns,{int(11 * bucket)}ns"
    out += [
        ("slices table thread=", f"{base}/slices?thread={thread}"),
        ("slices table thread= time=", f"{base}/slices?thread={thread}&time={wide}"),
        ("slices table group_by= time=", f"{base}/slices?group_by=process&time={wide}"),
        # One bucket of a default timeline; the cost grows with the slices in the range (or, in traces with
        # report_slice_name_cell, with the names and cells).
        ("slices table time=", f"{base}/slices?time={one_bucket}"),
        ("slices table time= (unaligned)", f"{base}/slices?time={at(0.5)},{at(0.53)}"),
        ("slices timeline tid= time=", f"{base}/slices/timeline?name={name}&tid=1001&time={wide}"),
        ("slices inspect ts=", f"{base}/slices/inspect?name={name}&ts={at(0.5)}"),
        # One name's instances over most of the trace: each pass reads them all.
        ("slices histogram time=", f"{base}/slices/histogram?name={name}&time={at(0.01)},{at(0.99)}"),
        ("slices inspect time=", f"{base}/slices/inspect?name={name}&time={at(0.01)},{at(0.99)}"),
        # The one machine's figures over most of the trace (the dimensions page links there).
        ("dimensions compare time=", f"{base}/dimensions/compare?by=machine&time={at(0.01)},{at(0.99)}"),
        # Many values over a range: per track (or process) cells, the longest for the names shown.
        ("dimensions compare process time=", f"{base}/dimensions/compare?by=process&time={wide}"),
        ("dimensions compare thread time=", f"{base}/dimensions/compare?by=thread&time={wide}"),
        ("slices table group_by=thread time=", f"{base}/slices?group_by=thread&time={wide}"),
        # Each track's events in a range (report_track_event_cell, where kept).
        ("tracks table time=", f"{base}/tracks?time={wide}"),
        ("processes table time=", f"{base}/processes?time={wide}"),
        # The SQL links' canned queries over a range of every track (the cells, where kept).
        ("canned slices_table time=", f"/{db_name}/slices_table?time={wide}"),
        ("canned slices_table time= (98%)", f"/{db_name}/slices_table?time={at(0.01)},{at(0.99)}"),
        # A range's averages are time-weighted: each track's samples in it, and the one held from before it.
        ("counters table time=", f"{base}/counters?time={wide}"),
        ("counters inspect time=", f"{base}/counters/inspect?name={counter}&time={wide}"),
        ("scheduling summary cpu=", f"{base}/scheduling?cpu=3"),
        ("scheduling summary time=", f"{base}/scheduling?time={wide}&group_by=process"),
        ("scheduling timeline b=500", f"{base}/scheduling/timeline?buckets=500"),
        ("scheduling timeline tid=", f"{base}/scheduling/timeline?tid=1001"),
        ("overview .json", f"{base}.json"),
        ("slices table .json", f"{base}/slices.json"),
        ("slices timeline .json", f"{base}/slices/timeline.json?name={name}"),
        ("scheduling summary .json", f"{base}/scheduling.json?cpu=3"),
        ("counters timeline .json", f"{base}/counters/timeline.json?name={counter}"),
    ]
    return out


async def measure(db: str, repeat: int, only: str = "") -> list[Timing]:
    import sqlite3

    db_name = os.path.splitext(os.path.basename(db))[0]
    conn = sqlite3.connect(db)
    paths = [(label, path) for label, path in requests(conn, db_name) if only in label]
    conn.close()
    return await time_requests(db, paths, repeat)


class Timing(NamedTuple):
    """A page's figures over its requests: p50 and p95 in ms; the first non-200 status any request got, else 200
    (a page answering only some of its requests within the limit is not a 200); the first request's ms (the file
    perhaps not yet in the page cache, as when a database is first opened)."""

    label: str
    p50: float
    p95: float
    status: int
    first: float


async def time_requests(db: str, paths: list[tuple[str, str]], repeat: int) -> list[Timing]:
    """The Timing of each (label, path), requested `repeat` times through Datasette's ASGI client with the
    default 1 s time limit (benchmarks/dimensions.py times its pages with it too)."""
    from datasette.app import Datasette

    db_name = os.path.splitext(os.path.basename(db))[0]
    ds = Datasette([db], settings={"sql_time_limit_ms": 1000})
    await ds.client.get(f"/{db_name}/-/report/slices")  # startup, table counts
    results = []
    for label, path in paths:
        times, status = [], 200
        for _ in range(repeat):
            t0 = time.perf_counter()
            r = await ds.client.get(path)
            times.append((time.perf_counter() - t0) * 1000)
            if status == 200:
                status = r.status_code
        first = times[0]
        times.sort()
        p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
        results.append(Timing(label, statistics.median(times), p95, status, first))
    return results


def read_into_page_cache(path: str) -> float:
    """Reads the file `path` once, so that the pages are timed from memory rather than from disk (some VMs drop
    a large file from the page cache within minutes); returns the seconds it took."""
    start = time.perf_counter()
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--slices", type=int, default=1_000_000)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--only", default="", help="measure only the requests whose label contains this")
    parser.add_argument("--db", default=os.path.join(tempfile.gettempdir(), "report_latency_big.db"))
    parser.add_argument(
        "--warm", action="store_true", help="read the database file into the page cache before the requests"
    )
    args = parser.parse_args()
    if args.rebuild or not os.path.exists(args.db):
        build(args.db, args.slices)
    if args.warm:
        print(f"read {args.db} into the page cache in {read_into_page_cache(args.db):.1f} s")
    results = asyncio.run(measure(args.db, args.repeat, args.only))
    print(f"{'view':<30} {'p50 ms':>8} {'p95 ms':>8} {'first ms':>8}  status")
    worst = 0.0
    for t in results:
        flag = "" if t.p50 < 250 and t.p95 < 1000 and t.status == 200 else "  <-- over target"
        print(f"{t.label:<30} {t.p50:8.1f} {t.p95:8.1f} {t.first:8.1f}  {t.status}{flag}")
        worst = max(worst, t.p95)
    print(f"worst p95: {worst:.1f} ms (targets: p50 < 250 ms, p95 < 1000 ms; status: the first other than 200, if any)")


if __name__ == "__main__":
    main()
