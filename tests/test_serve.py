"""`datasette perfetto serve`: the ingest cache, `.db` passthrough, bad input, and the served reports."""

from __future__ import annotations

import hashlib
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import urllib.request
import webbrowser
from pathlib import Path

import pytest
from click.testing import CliRunner
from datasette.cli import cli
from shared_data import TRACES

from datasette_perfetto import serve
from datasette_perfetto.ingest import IngestError, ingest

RANK0 = TRACES / "pytorch_ddp" / "rank0.json.gz"
RANK1 = TRACES / "pytorch_ddp" / "rank1.json.gz"


@pytest.fixture
def counted_ingests(monkeypatch):
    """Every ingest() the cache runs, by trace path."""
    calls: list[str] = []

    def counting(paths, db_path, progress=None):
        calls.extend(paths)
        return ingest(paths, db_path, progress)

    monkeypatch.setattr(serve, "ingest", counting)
    return calls


@pytest.fixture
def served(monkeypatch):
    """Runs `datasette perfetto serve|demo` up to the server: records the Datasette and the socket instead."""
    seen: dict = {}

    def record(ds, sock):
        seen["ds"], seen["port"] = ds, sock.getsockname()[1]
        sock.close()

    monkeypatch.setattr(serve, "run_server", record)
    monkeypatch.setattr(webbrowser, "open", lambda url: seen.setdefault("opened", url))
    return seen


def run(*args: str):
    return CliRunner().invoke(cli, ["perfetto", *args])


def entries(cache: Path) -> list[str]:
    """The cache's database files, as key/name."""
    return sorted(str(p.relative_to(cache)) for p in cache.glob("*/*.db")) if cache.exists() else []


def test_second_run_uses_the_cached_database(tmp_path, demo_trace, counted_ingests):
    db, summaries = serve.cached_database(str(demo_trace), tmp_path, version="1")
    assert summaries is not None and summaries[0].trace_type == "proto"
    assert db.parent.parent == tmp_path and db.name == "demo.db"
    before = db.stat()
    again, summaries = serve.cached_database(str(demo_trace), tmp_path, version="1")
    assert (again, summaries) == (db, None)
    assert counted_ingests == [str(demo_trace)]  # imported once
    after = again.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert entries(tmp_path) == [f"{db.parent.name}/demo.db"]


@pytest.mark.web
@pytest.mark.asyncio
async def test_cached_databases_are_served_with_their_row_counts(tmp_path, demo_trace):
    # The inspect data written beside a cache entry: Datasette's home page reads these counts
    # instead of counting every table of every database.
    db, _ = serve.cached_database(str(demo_trace), tmp_path, version="1")
    conn = sqlite3.connect(db)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    expected = {t: conn.execute(f"SELECT count(*) FROM [{t}]").fetchone()[0] for t in tables}
    conn.close()
    assert expected["slice"] > 0
    ds = serve.build_datasette([], [str(db)])
    assert ds.inspect_data["demo"]["hash"] == hashlib.sha256(db.read_bytes()).hexdigest()
    assert await ds.get_database("demo").table_counts(limit=1) == expected
    assert (await ds.client.get("/")).status_code == 200
    # An entry cached without it (an older version) gets it on its next use.
    serve.inspect_path(db).unlink()
    serve.cached_database(str(demo_trace), tmp_path, version="1")
    assert serve.inspect_path(db).is_file()


def test_the_version_includes_the_code(tmp_path, monkeypatch):
    # A changed module (an editable install keeps its version number) must not reuse old databases.
    version = serve.package_version()
    assert version.endswith("+" + serve.code_fingerprint()) and len(serve.code_fingerprint()) == 16
    package = tmp_path / "datasette_perfetto"
    package.mkdir()
    (package / "serve.py").write_text("# one version of the code\n")
    monkeypatch.setattr(serve, "__file__", str(package / "serve.py"))
    serve.code_fingerprint.cache_clear()
    first = serve.code_fingerprint()
    (package / "schema.py").write_text("# a changed table\n")
    serve.code_fingerprint.cache_clear()
    assert serve.code_fingerprint() != first
    serve.code_fingerprint.cache_clear()


def test_changed_content_or_version_imports_again(tmp_path, demo_trace, demo_bytes, counted_ingests):
    trace = tmp_path / "in" / "t.pftrace"
    trace.parent.mkdir()
    trace.write_bytes(demo_bytes)
    cache = tmp_path / "cache"
    first, _ = serve.cached_database(str(trace), cache, version="1")
    trace.write_bytes(demo_bytes[: len(demo_bytes) // 2 + 3])  # same name, other content
    changed, summaries = serve.cached_database(str(trace), cache, version="1")
    assert summaries is not None and changed != first
    assert "proto_tokenizer_truncated_packet" in dict(summaries[0].problems)
    other_version, summaries = serve.cached_database(str(trace), cache, version="2")
    assert summaries is not None and other_version not in (first, changed)
    assert len(counted_ingests) == 3 and len(entries(cache)) == 3


def test_the_key_is_the_content_and_the_version(tmp_path, demo_trace):
    copy = tmp_path / "copy.bin"
    shutil.copyfile(demo_trace, copy)
    assert serve.cache_key(str(copy), "1") == serve.cache_key(str(demo_trace), "1")
    assert serve.cache_key(str(copy), "1") != serve.cache_key(str(copy), "2")
    assert serve.cache_key(str(copy), serve.package_version()) != serve.cache_key(str(copy), "unknown")


def test_default_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("DATASETTE_PERFETTO_CACHE", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert serve.default_cache_dir() == tmp_path / "a"
    monkeypatch.delenv("DATASETTE_PERFETTO_CACHE")
    assert serve.default_cache_dir() == tmp_path / "xdg" / "datasette-perfetto"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert serve.default_cache_dir() == tmp_path / "home" / ".cache" / "datasette-perfetto"


def test_names_follow_the_trace():
    assert serve.database_stem("/x/chrome_startup.pftrace") == "chrome_startup"
    assert serve.database_stem("rank0.json.gz") == "rank0"
    assert serve.database_stem("trace") == "trace"


def test_a_concurrent_import_of_the_same_trace_waits_and_reuses_it(tmp_path, demo_trace, monkeypatch):
    importing, proceed = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow_ingest(paths, db_path, progress=None):
        calls.extend(paths)
        importing.set()
        assert proceed.wait(30)
        return ingest(paths, db_path, progress)

    monkeypatch.setattr(serve, "ingest", slow_ingest)
    results: dict = {}
    first = threading.Thread(
        target=lambda: results.setdefault("a", serve.cached_database(str(demo_trace), tmp_path, version="1"))
    )
    first.start()
    assert importing.wait(30)
    waited = threading.Event()
    second = threading.Thread(
        target=lambda: results.setdefault(
            "b", serve.cached_database(str(demo_trace), tmp_path, version="1", on_wait=waited.set)
        )
    )
    second.start()
    assert waited.wait(30)  # the second found the entry locked...
    assert not (tmp_path / serve.cache_key(str(demo_trace), "1") / "demo.db").exists()
    proceed.set()
    first.join(60)
    second.join(60)
    assert results["a"][0] == results["b"][0] and results["b"][1] is None  # ...and reused the first's import
    assert calls == [str(demo_trace)]


def test_failed_import_leaves_nothing_in_the_cache(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"{not json at all")  # a known format, so only the import itself finds the problem
    cache = tmp_path / "cache"
    with pytest.raises(IngestError, match="no readable data"):
        serve.cached_database(str(bad), cache, version="1")
    assert list(cache.iterdir()) == []


def test_leftovers_of_a_killed_import_are_removed(tmp_path, demo_trace):
    folder = tmp_path / serve.cache_key(str(demo_trace), "1")
    folder.mkdir()
    (folder / ".ingest-killed.db").write_bytes(b"half")
    db, _ = serve.cached_database(str(demo_trace), tmp_path, version="1")
    assert sorted(p.name for p in folder.iterdir()) == ["demo.db", "demo.inspect.json"]


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"{not json at all", "no readable data"),
        (b"hello, world\n", "not a recognised trace format"),
        (None, "cannot open"),
    ],
)
def test_serve_bad_input_is_one_line_and_caches_nothing(tmp_path, demo_trace, served, content, problem):
    bad = tmp_path / "bad.pftrace"
    if content is not None:
        bad.write_bytes(content)
    cache = tmp_path / "cache"
    result = run("serve", str(demo_trace), str(bad), "--cache-dir", str(cache), "-q")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"Error: {bad}: ") and problem in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert "ds" not in served
    # Every argument is checked before any import, so only a problem found by the import itself
    # (after the good trace's) leaves anything: the good trace's complete entry.
    assert entries(cache) == (
        []
        if problem != "no readable data"
        else [f"{serve.cache_key(str(demo_trace), serve.package_version())}/demo.db"]
    )


def test_serving_a_cached_archive_again_does_not_open_it(tmp_path, demo_trace, served, monkeypatch):
    import tarfile

    archive = tmp_path / "traces.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(demo_trace, arcname="demo.pftrace")
    cache = tmp_path / "cache"
    checked: list[str] = []
    check_trace = serve.check_trace
    monkeypatch.setattr(serve, "check_trace", lambda path: checked.append(path) or check_trace(path))
    first = run("serve", str(archive), "--cache-dir", str(cache), "-p", "0")
    assert first.exit_code == 0, first.output
    assert checked == [str(archive)] and "imported into" in first.stderr
    # A gzipped tar is inflated whole to list its members: a cached one is only hashed.
    again = run("serve", str(archive), "--cache-dir", str(cache), "-p", "0")
    assert again.exit_code == 0, again.output
    assert checked == [str(archive)] and "imported before" in again.stderr
    assert entries(cache) == [f"{serve.cache_key(str(archive), serve.package_version())}/traces.db"]


def test_serve_a_database_that_is_not_a_trace_database(tmp_path, served):
    import sqlite3

    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    result = run("serve", str(other), "--cache-dir", str(tmp_path / "cache"))
    assert result.exit_code == 1
    assert result.stderr == f"Error: {other}: a SQLite database but not a trace database (ingest the trace instead)\n"
    assert not (tmp_path / "cache").exists()


@pytest.mark.web
@pytest.mark.asyncio
async def test_serve_traces_and_a_trace_database(tmp_path, demo_db, served):
    own = tmp_path / "own.db"
    shutil.copyfile(demo_db.path, own)
    cache = tmp_path / "cache"
    result = run("serve", str(RANK0), str(RANK1), str(own), "--cache-dir", str(cache), "-p", "0", "--open")
    assert result.exit_code == 0, result.output
    ds, port = served["ds"], served["port"]
    assert port > 0  # --port 0: the port the socket got
    urls = result.stdout.splitlines()
    assert urls == [f"http://127.0.0.1:{port}/{name}/-/report" for name in ("rank0", "rank1", "own")]
    assert served["opened"] == urls[0]
    # The cached databases are served immutable and the user's own file mutable, in place.
    assert not ds.databases["rank0"].is_mutable and not ds.databases["rank1"].is_mutable
    assert ds.databases["own"].is_mutable and ds.databases["own"].path == str(own)
    assert Path(ds.databases["rank0"].path).parent.parent == cache
    assert "imported into" in result.stderr
    for name in ("rank0", "rank1", "own"):
        assert (await ds.client.get(f"/{name}/-/report")).status_code == 200
    diff = await ds.client.get("/rank0/-/report/slices?baseline=rank1")
    assert diff.status_code == 200
    assert "rank1" in diff.text
    # Served again: nothing imported, the same files.
    again = run("serve", str(RANK0), str(RANK1), "--cache-dir", str(cache), "-p", "0")
    assert again.exit_code == 0, again.output
    assert again.stderr.count("imported before") == 2 and "imported into" not in again.stderr
    assert served["ds"].databases["rank0"].path == ds.databases["rank0"].path


@pytest.mark.web
@pytest.mark.asyncio
async def test_build_datasette_serves_each_report_and_a_baseline(tmp_path):
    a, _ = serve.cached_database(str(RANK0), tmp_path)
    b, _ = serve.cached_database(str(RANK1), tmp_path)
    ds = serve.build_datasette([], [str(a), str(b)])
    assert serve.database_names(ds, [str(a), str(b)]) == ["rank0", "rank1"]
    for path in ("/rank0/-/report", "/rank1/-/report", "/rank1/-/report/slices?baseline=rank0"):
        assert (await ds.client.get(path)).status_code == 200, path
    assert (await ds.client.get("/rank0/-/report/slices?baseline=nope")).status_code == 400


@pytest.mark.web
@pytest.mark.asyncio
async def test_demo_serves_through_the_same_function(tmp_path, served):
    result = run("demo", "-o", str(tmp_path / "demo.db"), "-p", "0")
    assert result.exit_code == 0, result.output
    ds = served["ds"]
    assert result.stdout == f"http://127.0.0.1:{served['port']}/demo/-/report\n"
    assert ds.databases["demo"].is_mutable
    assert (await ds.client.get("/demo/-/report")).status_code == 200


@pytest.mark.web
def test_port_in_use_is_one_line(tmp_path, demo_trace, served):
    taken = serve.listen("127.0.0.1", 0)
    try:
        port = taken.getsockname()[1]
        result = run("serve", str(demo_trace), "--cache-dir", str(tmp_path), "-p", str(port), "-q")
    finally:
        taken.close()
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: cannot listen on 127.0.0.1:{port}: ")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.web
def test_the_real_command_serves_until_stopped(tmp_path):
    """`datasette perfetto serve` as a user runs it: a process listening on a free port."""
    env = {**os.environ, "DATASETTE_PERFETTO_CACHE": str(tmp_path / "cache")}
    with subprocess.Popen(
        [sys.executable, "-m", "datasette", "perfetto", "serve", str(RANK0), "-p", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    ) as process:
        try:
            ready, _, _ = select.select([process.stdout], [], [], 60)
            assert ready, "no report URL printed within 60 s"
            url = process.stdout.readline().decode().strip()
            assert url.startswith("http://127.0.0.1:") and url.endswith("/rank0/-/report")
            with urllib.request.urlopen(url, timeout=30) as response:
                assert response.status == 200
                assert b"rank0" in response.read()
            # Stopped as a user stops it (Ctrl+C): a clean exit, which also lets Datasette remove its
            # temporary internal database (a SIGKILL would leave it behind).
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=30) == 0
        finally:
            if process.poll() is None:
                process.kill()
