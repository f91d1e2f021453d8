"""Smoke test of the installed package (not collected by pytest): run by `.ci/run`.

Run it with the Python of a virtualenv that has the built wheel installed, from a
folder outside the checkout: `python /path/to/tests/smoke_installed.py SHARED_TRACES_DIR`.
It checks that the package it imports is the installed one, ingests the demo trace
and a real trace, serves both with `datasette perfetto serve`, and requests the
report overview, every noun's default view, the tracks list, one details page of
each kind, one canned query, `.json` twins and the stylesheet; every answer must be a 200.
"""

from __future__ import annotations

import glob
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from datasette_perfetto.report.views import NOUNS  # the installed package's noun registry: every noun


def fail(message: str) -> None:
    print(f"smoke: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def run(*args: str) -> str:
    result = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        fail(f"{' '.join(args)} exited {result.returncode}: {result.stderr.strip()}")
    return result.stdout


def first_id(database: str, sql: str) -> int:
    rows = json.loads(run(DATASETTE, "perfetto", "query", database, sql, "--format", "json"))["rows"]
    if not rows:
        fail(f"{database}: no row for {sql}")
    return rows[0][0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


def main() -> None:
    traces_dir = sys.argv[1]
    import datasette_perfetto

    installed = os.path.dirname(datasette_perfetto.__file__)
    if not installed.startswith(sys.prefix):
        fail(f"datasette_perfetto imported from {installed}, not from the virtualenv {sys.prefix}")
    print(f"smoke: datasette_perfetto from {installed}")

    with tempfile.TemporaryDirectory(prefix="smoke-") as tmp:
        os.chdir(tmp)
        demo_db = os.path.join(tmp, "demo.db")
        run(DATASETTE, "perfetto", "demo", "--no-serve", "-o", demo_db)
        trace = os.path.join(traces_dir, "chrome_startup.pftrace")
        cache = os.path.join(tmp, "cache")
        port = free_port()
        server = subprocess.Popen(
            [DATASETTE, "perfetto", "serve", demo_db, trace, "--port", str(port), "--cache-dir", cache],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 300
            while get_quiet(base + "/-/versions.json") != 200:
                if server.poll() is not None:
                    fail(f"serve exited {server.returncode}: {server.stdout.read().strip()}")
                if time.monotonic() > deadline:
                    fail("serve did not answer within 300 s")
                time.sleep(0.5)
            chrome_db = glob.glob(os.path.join(cache, "**", "chrome_startup.db"), recursive=True)
            if len(chrome_db) != 1:
                fail(f"expected one cached chrome_startup.db under {cache}, found {chrome_db}")
            checked = 0
            for name, path in (("demo", demo_db), ("chrome_startup", chrome_db[0])):
                slice_id = first_id(path, "select id from slice order by id limit 1")
                urls = [
                    "/",
                    f"/{name}",
                    f"/{name}/-/report",
                    f"/{name}/-/report.json",
                    *[f"/{name}/-/report/{noun}" for noun in NOUNS],
                    f"/{name}/-/report/slices.json",
                    f"/{name}/-/report/slices?group_by=machine",
                    f"/{name}/-/report/slices.txt",
                    f"/{name}/-/tracks",
                    f"/{name}/-/tracks.json",
                    f"/{name}/-/track/{first_id(path, 'select id from track order by id limit 1')}",
                    f"/{name}/-/slice/{slice_id}",
                    f"/{name}/-/slice/{slice_id}.json",
                    f"/{name}/-/thread/{first_id(path, 'select utid from thread where tid > 0 order by utid limit 1')}",
                    f"/{name}/-/process/{first_id(path, 'select upid from process where pid > 0 order by upid limit 1')}",
                    f"/{name}/slices_table?top=5",
                    f"/{name}/slices_table.json?top=5",
                    f"/{name}/slice",
                ]
                for url in urls:
                    status = get(base + url)
                    if status != 200:
                        fail(f"GET {url} answered {status}")
                    checked += 1
            # The stylesheet, under both spellings of the plugin's name (pages link the underscore one).
            for url in (
                "/-/static-plugins/datasette_perfetto/perfetto.css",
                "/-/static-plugins/datasette-perfetto/perfetto.css",
            ):
                if get(base + url) != 200:
                    fail(f"GET {url}: the installed package does not ship static/perfetto.css")
                checked += 1
            other = "chrome_startup"
            status = get(f"{base}/demo/-/report/slices?baseline={other}")
            if status != 200:
                fail(f"GET /demo/-/report/slices?baseline={other} answered {status}")
            print(f"smoke: {checked + 1} pages answered 200")
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()


def get_quiet(url: str) -> int:
    try:
        return get(url)
    except (urllib.error.URLError, ConnectionError, OSError):
        return 0


DATASETTE = os.path.join(os.path.dirname(sys.executable), "datasette")

if __name__ == "__main__":
    main()
