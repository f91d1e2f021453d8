"""Report pages under load: a real server and N concurrent clients.

Reuses report_latency.py's big synthetic trace (built once, cached beside the system temp dir; 1,000,000
slices, 100,000 scheduling slices, 100,000 counter values), serves it with `datasette perfetto serve` on
127.0.0.1 at a free port (a subprocess, default settings: the 1 s query limit), then runs --clients bounded
concurrent clients (threads, one keep-alive connection each, one request at a time) for --seconds over a mix
of report pages, HTML and JSON, and prints requests/s, p50 and p95, the responses per status and the same per
page. The server is stopped at the end. Loopback only.

Target (issue 15): no 503 and p95 under 500 ms at 20 clients on a 2-core machine.

Usage: python benchmarks/report_load.py [--clients 20] [--seconds 60] [--rebuild] [--db PATH]
"""

from __future__ import annotations

import argparse
import collections
import http.client
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import quote

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
from report_latency import build  # noqa: E402  (the trace builder, shared)


def pages(db: str) -> list[tuple[str, str]]:
    """(label, path): the mix every client cycles through, starting at a different place."""
    name = os.path.splitext(os.path.basename(db))[0]
    conn = sqlite3.connect(db)
    try:
        slice_name = conn.execute("SELECT name FROM report_slice_name ORDER BY total_dur DESC LIMIT 1").fetchone()[0]
        counter = conn.execute("SELECT name FROM counter_track ORDER BY id LIMIT 1").fetchone()[0]
    finally:
        conn.close()
    base = f"/{quote(name)}/-/report"
    q = quote(slice_name)
    mix = [
        ("overview", ""),
        ("slices", "/slices"),
        ("slices time=1s,2s", "/slices?time=1s,2s"),
        ("slices thread=", "/slices?thread=thread3"),
        ("slices timeline", f"/slices/timeline?name={q}"),
        ("slices histogram", f"/slices/histogram?name={q}"),
        ("slices inspect", f"/slices/inspect?name={q}&ts=5s"),
        ("tracks", "/tracks"),
        ("processes", "/processes"),
        ("scheduling", "/scheduling"),
        ("scheduling timeline", "/scheduling/timeline"),
        ("counters", "/counters"),
        ("counters timeline", f"/counters/timeline?name={quote(counter)}"),
    ]
    out = []
    for label, path in mix:
        head, _, query = path.partition("?")
        query = f"?{query}" if query else ""
        out.append((label, f"{base}{head}{query}"))
        out.append((f"{label} .json", f"{base}{head}.json{query}"))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(db: str, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "datasette", "perfetto", "serve", db, "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=os.path.join(HERE, ".."))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/-/versions.json")
            if conn.getresponse().status == 200:
                conn.close()
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not start within 60 s")


def client(port: int, mix: list[tuple[str, str]], start: int, until: float, out: list) -> None:
    """Requests one after another until `until`, each recorded as (label, status, ms)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    i = start
    while time.monotonic() < until:
        label, path = mix[i % len(mix)]
        i += 1
        t0 = time.perf_counter()
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            status = 0  # connection error
        out.append((label, status, (time.perf_counter() - t0) * 1000))
    conn.close()


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) a process has used so far: Linux's /proc, else None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))]


def run(db: str, clients: int, seconds: float, warmup: float) -> None:
    mix = pages(db)
    port = free_port()
    server = start_server(db, port)
    try:
        # One pass over the mix first: startup work (table counts, caches) is not what is measured.
        for _, path in mix:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("GET", path)
            conn.getresponse().read()
            conn.close()
        if warmup:
            client(port, mix, 0, time.monotonic() + warmup, [])
        results: list[tuple[str, int, float]] = []
        until = time.monotonic() + seconds
        threads = [
            threading.Thread(target=client, args=(port, mix, i * len(mix) // clients, until, results))
            for i in range(clients)
        ]
        cpu0 = cpu_seconds(server.pid)
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        cpu1 = cpu_seconds(server.pid)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
    report(results, elapsed, clients)
    if cpu0 is not None and cpu1 is not None:
        print(f"server CPU: {cpu1 - cpu0:.1f} s in {elapsed:.1f} s ({(cpu1 - cpu0) / elapsed:.2f} cores)")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")


def report(results: list[tuple[str, int, float]], elapsed: float, clients: int) -> None:
    times = [ms for _, _, ms in results]
    statuses = collections.Counter(status for _, status, _ in results)
    print(f"{clients} clients, {elapsed:.1f} s: {len(results)} requests, {len(results) / elapsed:.1f} requests/s")
    print(f"p50 {statistics.median(times):.0f} ms, p95 {percentile(times, 0.95):.0f} ms, max {max(times):.0f} ms")
    print("status: " + ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items())))
    by_page: dict[str, list[tuple[int, float]]] = collections.defaultdict(list)
    for label, status, ms in results:
        by_page[label].append((status, ms))
    print(f"\n{'page':<28} {'n':>5} {'p50 ms':>7} {'p95 ms':>7}  not 200")
    for label, rows in by_page.items():
        ms = [m for _, m in rows]
        bad = collections.Counter(s for s, _ in rows if s != 200)
        print(
            f"{label:<28} {len(rows):5d} {statistics.median(ms):7.0f} {percentile(ms, 0.95):7.0f}  "
            + (", ".join(f"{s}: {n}" for s, n in sorted(bad.items())) or "-")
        )
    p95 = percentile(times, 0.95)
    ok = statuses.get(503, 0) == 0 and p95 < 500
    print(f"\ntarget (no 503, p95 < 500 ms): {'met' if ok else 'NOT met'}")


def stale(db: str) -> bool:
    """Whether a database built before lacks a report table this version precomputes (then it is rebuilt)."""
    from datasette_perfetto.schema import DERIVED

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()
    return any(d.name not in have for d in DERIVED)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=2, help="seconds of one client before measuring")
    parser.add_argument("--slices", type=int, default=1_000_000)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--db", default=os.path.join(tempfile.gettempdir(), "report_latency_big.db"))
    args = parser.parse_args()
    if not 1 <= args.clients <= 200 or not 0 < args.seconds <= 3600:
        raise SystemExit("--clients: 1 to 200; --seconds: up to 3600")
    if args.rebuild or not os.path.exists(args.db) or stale(args.db):
        build(args.db, args.slices)
    run(args.db, args.clients, args.seconds, args.warmup)


if __name__ == "__main__":
    main()
