"""Shared fixtures: the demo, scheduling, V8 and cpufreq databases; helpers to ingest a trace (ingest_built,
ingest_named, ingest_case), to query a database read-only (TraceDB; FunctionsDB and connect_with_functions with
trace_processor's SQL functions) and to run a report without Datasette (report_of); helpers for tests marked
`web`, which run on Datasette 0.65 and 1.0 (see "Datasette 0.65 and 1.0" below).

Also makes `datasette perfetto` available when the package is not installed
(no entry point): the plugin is registered with Datasette's plugin manager
before `datasette.cli` is imported, since that import is what runs the
`register_commands` hook.
"""

from __future__ import annotations

import contextvars
import json
import random
import sqlite3
import string
from collections.abc import Callable
from pathlib import Path

import pytest
from datasette.app import Datasette
from datasette.plugins import pm

import datasette_perfetto
from datasette_perfetto.compat import is_datasette_1
from datasette_perfetto.connection import prepare
from datasette_perfetto.importers.common.options import DEFAULT_CONTENT, Content
from datasette_perfetto.ingest import ingest, ingest_bytes
from datasette_perfetto.report.base import Linker, ReportResult
from datasette_perfetto.report.engine import run_report
from datasette_perfetto.trace_builder import build_demo_trace

if not pm.is_registered(datasette_perfetto):
    try:
        pm.register(datasette_perfetto, name="perfetto-test")
    except Exception:
        # A hook that does not match Datasette's hookspecs; test_cli.py's
        # test_plugin_hooks_register_the_perfetto_group reports it. The
        # command tests still run against the commands themselves.
        pass

from datasette.cli import cli as datasette_cli  # noqa: E402  (after registration, on purpose)
from shared_data import CASES, TRACES

if "perfetto" not in datasette_cli.commands:
    datasette_perfetto.cli.register(datasette_cli)

DEMO_TABLES = ("slice", "thread", "process", "track", "args", "counter", "flow")


def query_rows(db, sql: str) -> list[list]:
    """The rows of `datasette perfetto query DB SQL --format json` (the last statement's), on a TraceDB or a
    path; the command must succeed."""
    from click.testing import CliRunner

    result = CliRunner().invoke(
        datasette_cli, ["perfetto", "query", str(getattr(db, "path", db)), sql, "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["rows"]


def connect_with_functions(path) -> sqlite3.Connection:
    """A read-only connection to a trace database with trace_processor's SQL functions (extract_arg, ...)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    prepare(conn)
    return conn


def report_of(path, noun: str, view: str, flags: dict[str, str], db_arg: str = "t.db") -> ReportResult:
    """A report computed straight from a database file (no Datasette); its links are commands on `db_arg`."""
    conn = connect_with_functions(path)
    try:
        return run_report(conn, noun, view, flags, Linker(None, db_arg))
    finally:
        conn.close()


class TraceDB:
    """Read-only helpers over an ingested database."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def connect(self) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        conn = self.connect()
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def one(self, sql: str, params: tuple = ()):
        (row,) = self.rows(sql, params)
        return row[0]

    def count(self, table: str) -> int:
        return self.one(f"SELECT count(*) FROM [{table}]")

    def counts(self, tables=DEMO_TABLES) -> dict[str, int]:
        return {t: self.count(t) for t in tables}

    def stat(self, name: str) -> int:
        """A stat's value summed over its indices, machines and inputs (0 when never counted)."""
        return self.one("SELECT coalesce(sum(value), 0) FROM stats WHERE name = ?", (name,))


class FunctionsDB(TraceDB):
    """A TraceDB whose queries can use trace_processor's SQL functions (extract_arg, ...)."""

    def connect(self) -> sqlite3.Connection:
        return connect_with_functions(self.path)


@pytest.fixture(scope="session")
def demo_bytes() -> bytes:
    return build_demo_trace()


@pytest.fixture(scope="session")
def demo_trace(tmp_path_factory, demo_bytes) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.pftrace"
    path.write_bytes(demo_bytes)
    return path


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory, demo_trace) -> TraceDB:
    return TraceDB(ingest_named(tmp_path_factory, demo_trace, "demo"))


@pytest.fixture(scope="session")
def demo_counts(demo_db) -> dict[str, int]:
    counts = demo_db.counts()
    assert all(counts.values()), counts  # the demo has some of everything
    return counts


@pytest.fixture(scope="session")
def sched_db(tmp_path_factory) -> TraceDB:
    """A kernel scheduling trace (tests/sched_trace.py: 2 CPUs, 8 threads, one second), ingested."""
    from sched_trace import build_sched_trace

    trace = tmp_path_factory.mktemp("sched") / "sched.pftrace"
    trace.write_bytes(build_sched_trace())
    path = trace.with_suffix(".db")
    ingest([str(trace)], str(path))
    return TraceDB(path)


V8_PROFILE = TRACES / "chrome_v8_cpu_profile.json.gz"


@pytest.fixture(scope="session")
def v8_db(tmp_path_factory) -> TraceDB:
    """chrome_v8_cpu_profile.json.gz (V8 CPU profiles in a Chrome JSON trace: 5,072 samples), ingested."""
    return TraceDB(ingest_named(tmp_path_factory, V8_PROFILE, "v8"))


def ingest_named(tmp_path_factory, trace: bytes | Path | list[Path], name: str) -> Path:
    """`{name}.db` (served as database `name`) in a temporary folder of its own, ingested from trace bytes or
    trace files."""
    path = tmp_path_factory.mktemp(name) / f"{name}.db"
    if isinstance(trace, bytes):
        ingest_bytes(trace, str(path))
    else:
        ingest([str(f) for f in (trace if isinstance(trace, list) else [trace])], str(path))
    return path


def ingest_built(
    tmp_path: Path, builder, db_class: type[TraceDB] = TraceDB, content: Content = DEFAULT_CONTENT, name: str = "t.db"
) -> TraceDB:
    """Ingest a TraceBuilder's trace into `tmp_path`/`name` (`content`: what to keep beyond the defaults)."""
    db = tmp_path / name
    ingest_bytes(builder.to_bytes(), str(db), content)
    return db_class(db)


@pytest.fixture
def ingest_data(tmp_path):
    """ingest_data(data, name="trace.pftrace") -> (summaries, TraceDB) for in-memory trace bytes."""

    def run(data: bytes, name: str = "trace.pftrace"):
        trace = tmp_path / name
        trace.write_bytes(data)
        db = tmp_path / (name + ".db")
        summaries = ingest([str(trace)], str(db))
        return summaries, TraceDB(db)

    return run


_SERVED: dict[tuple[str, ...], Datasette] = {}


def served(*paths) -> Datasette:
    """One Datasette per set of database files for the whole session, as Datasette's own tests share
    their app clients: pages only read, so tests can share it (and its connections and startup). A test
    that changes a served file, or needs settings or permissions, makes its own (`datasette_with`)."""
    key = tuple(str(p) for p in paths)
    if key not in _SERVED:
        # Made in an empty context: Datasette 1.0's pytest plugin closes every instance a test creates
        # (it tracks them through a context variable), and this one outlives the test.
        _SERVED[key] = contextvars.Context().run(Datasette, list(key))
    return _SERVED[key]


async def get_json(ds, url: str) -> dict:
    """A page's JSON, which must have answered 200; `ds` is a Datasette or a database file to serve."""
    if not isinstance(ds, Datasette):
        ds = served(ds)
    response = await ds.client.get(url)
    assert response.status_code == 200, response.text
    return response.json()


async def assert_fuzzed_flags_never_500(
    ds,
    paths: list[str],
    flags: list[str],
    seed: int,
    rounds: int,
    max_len: int,
    more: Callable[[random.Random, str], dict[str, str]] | None = None,
) -> None:
    """Random report pages in every format, each with one random flag set to a random string (printable,
    non-ASCII, a bidi override) and `more(rng, value)`'s params: each answers 200 or 400, never 500."""
    rng = random.Random(seed)
    alphabet = string.printable + "µé\u202e"
    for _ in range(rounds):
        path = rng.choice(paths) + rng.choice(["", ".json", ".txt", ".sql"])
        flag = rng.choice(flags)
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, max_len)))
        params = {**(more(rng, value) if more else {}), flag: value}
        r = await ds.client.get(path, params=params)
        assert r.status_code in (200, 400), (path, params, r.status_code, r.text[:300])


async def get_error(ds, url: str) -> dict:
    """A report page's JSON error object, which must have answered 400."""
    response = await ds.client.get(url)
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["ok"] is False
    return error


# -- Datasette 0.65 and 1.0 ------------------------------------------------------------------------------
# `./dev test` runs the tests marked `web` on both versions (.venv: 0.65, .venv-ds1: 1.0); these helpers
# absorb what differs between them, found by feature test as datasette_perfetto.compat does.

DATASETTE_1 = is_datasette_1(Datasette)


@pytest.fixture(autouse=True)
def _web_tests_are_marked(request, monkeypatch):
    """A test that starts Datasette must be marked `web`, or the 1.0 run would skip it silently."""
    if request.node.get_closest_marker("web") is not None:
        yield
        return
    started = []
    original = Datasette.invoke_startup

    async def invoke_startup(self):
        started.append(True)
        return await original(self)

    monkeypatch.setattr(Datasette, "invoke_startup", invoke_startup)
    yield
    if started:
        pytest.fail(
            f"{request.node.nodeid} starts Datasette: mark it @pytest.mark.web so it also runs on 1.0", pytrace=False
        )


def datasette_with(files, permissions: dict | None = None, **kwargs) -> Datasette:
    """Datasette serving `files`, with permission blocks (`allow`, `allow_sql`, `databases: {db: ...}`)
    where the version reads them: 0.65 from metadata, 1.0 from config."""
    if permissions is not None:
        kwargs["config" if DATASETTE_1 else "metadata"] = permissions
    return Datasette([str(f) for f in files], **kwargs)


def sql_path(database: str, fmt: str = "") -> str:
    """The SQL editor's path (add `?sql=`): `/{db}` on 0.65, `/{db}/-/query` on 1.0 (the old one redirects)."""
    return f"/{database}/-/query{fmt}" if DATASETTE_1 else f"/{database}{fmt}"


async def sql_rows(ds, database: str, sql: str, **params) -> list[dict]:
    """Ad-hoc SQL through Datasette's JSON API, as a list of row dicts (answered 200)."""
    response = await ds.client.get(sql_path(database, ".json"), params={"sql": sql, "_shape": "array", **params})
    assert response.status_code == 200, response.text
    return response.json()


async def query_names(ds, database: str, cookies: dict | None = None) -> list[str]:
    """The canned (1.0: stored) queries of `database` that Datasette lists to the actor: the database page's
    list on 0.65 (`/{db}.json`); `/{db}/-/queries.json` on 1.0, whose database page shows only five."""
    path = f"/{database}/-/queries.json" if DATASETTE_1 else f"/{database}.json"
    response = await ds.client.get(path, cookies=cookies)
    assert response.status_code == 200, response.text
    return sorted(q["name"] for q in response.json()["queries"])


async def metadata_of(ds) -> dict:
    """The metadata Datasette serves, shaped as 0.65's `/-/metadata.json` (`title`, `databases: {db:
    {description, ..., tables: {t: {description, columns: {c: doc}}}}}`); 1.0 has no such page, so its
    internal metadata store is read through the documented getters."""
    if not DATASETTE_1:
        return (await ds.client.get("/-/metadata.json")).json()
    await ds.invoke_startup()
    out: dict = dict(await ds.get_instance_metadata())
    databases = {}
    for name, db in ds.databases.items():
        if name.startswith("_"):
            continue
        block: dict = dict(await ds.get_database_metadata(name))
        tables = {}
        for table in await db.table_names() + await db.view_names():
            entry: dict = dict(await ds.get_resource_metadata(name, table))
            columns = {
                c: (await ds.get_column_metadata(name, table, c)).get("description")
                for c in await db.table_columns(table)
            }
            if any(columns.values()):
                entry["columns"] = {c: d for c, d in columns.items() if d}
            if entry:
                tables[table] = entry
        if tables:
            block["tables"] = tables
        if block:
            databases[name] = block
    if databases:
        out["databases"] = databases
    return out


def ingest_case(tmp_path_factory, case: Path, name: str) -> Path:
    """`{name}.db` (served as database `name`) ingested from a conformance case's trace."""
    assert case.is_dir(), f"conformance case not found at {case}"
    return ingest_named(tmp_path_factory, case / "trace.pb", name)


CPUFREQ_CASE = CASES / "tables.TablesCounters.test_counters_where_cpu_counters_where_cpu"


@pytest.fixture(scope="session")
def cpufreq(tmp_path_factory) -> Path:
    """A real trace's cpufreq counters (CPU 1: 3000 @1000, 4000 @1001; CPU 2: 5000 @1002), served as `cpufreq`."""
    return ingest_case(tmp_path_factory, CPUFREQ_CASE, "cpufreq")


def kept_and_defined(path, derived, populate: str | None = None) -> tuple[list[tuple], list[tuple]]:
    """A derived table's rows as the import kept them, and as its SQL definition (`populate`, else
    derived.populate) gives them over the same database; the table is rewritten, so pass a copy."""
    conn = sqlite3.connect(path)
    try:
        kept = conn.execute(f"SELECT * FROM [{derived.name}] ORDER BY rowid").fetchall()
        conn.execute(f"DELETE FROM [{derived.name}]")
        conn.execute(populate or derived.populate)
        defined = conn.execute(f"SELECT * FROM [{derived.name}] ORDER BY rowid").fetchall()
    finally:
        conn.close()
    return kept, defined
