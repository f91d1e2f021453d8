"""`datasette perfetto ...`: a thin click layer over ingest(), queries and the conformance runner."""

from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import sys
import webbrowser
from pathlib import Path
from typing import Any

import click

from .connection import prepare
from .importers.common.options import Content
from .ingest import IngestError, TraceSummary, ingest
from .scratch import sigterm_raises_system_exit
from .sql_text import comment_params, split_includes, split_statements
from .stdlib import UnknownModule, include
from .table_functions import runnable


def register(cli: click.Group) -> None:
    cli.add_command(perfetto)


@click.group()
def perfetto() -> None:
    "Perfetto trace tools: ingest traces into SQLite, query them."


@perfetto.command(name="ingest")
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Database file to write")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar or summary")
@click.option(
    "-j",
    "--jobs",
    help="Parse the traces in this many processes (auto: one per CPU); the database is the same",
)
@click.option(
    "--cluster",
    metavar="ADDRESS",
    help="Parse the traces on the Dask cluster at ADDRESS (local: start one here, --jobs workers)",
)
@click.option(
    "--ftrace-raw",
    is_flag=True,
    help="Also keep every kernel event as a row of ftrace_event (raw), its fields as args, for to_ftrace() "
    "(trace_processor's default; ~70% more time on scheduling-heavy traces)",
)
@click.option(
    "--analyze-proto-content",
    is_flag=True,
    help="Also break the trace's bytes down by proto field path: experimental_proto_path and "
    "experimental_proto_content (trace_processor's --analyze-trace-proto-content)",
)
def ingest_command(
    traces: tuple[str, ...],
    output: str,
    quiet: bool,
    jobs: str | None = None,
    cluster: str | None = None,
    ftrace_raw: bool = False,
    analyze_proto_content: bool = False,
) -> None:
    """Import TRACES into a new SQLite database: Perfetto protobuf, Chrome JSON,
    systrace or collapsed stacks, each plain or gzipped, or zip/tar archives of them.

    The database is only written if every trace imports; an existing OUTPUT
    is replaced on success and left untouched on failure.

    \b
    Example:
        datasette perfetto ingest trace.pftrace -o trace.db
        datasette perfetto ingest rank*.json.gz -o job.db --jobs 4
    """
    from . import parallel
    from .progress import progress_for  # here: tqdm is not loaded for every `datasette` command

    content = Content(ftrace_raw=ftrace_raw, analyze_proto_content=analyze_proto_content)
    try:
        workers = parallel.parse_jobs(jobs)
        with sigterm_raises_system_exit():
            if workers is None and cluster is None:
                summaries = ingest(list(traces), output, progress_for(quiet), content=content)
            else:
                summaries = parallel.ingest(list(traces), output, progress_for(quiet), workers, cluster, content)
    except IngestError as e:
        raise click.ClickException(str(e)) from None
    if not quiet:
        for s in summaries:
            click.echo(summary_line(s), err=True)
        click.echo(f"Wrote {output}", err=True)


def summary_line(s: TraceSummary) -> str:
    problems = ", ".join(f"{n}={v}" for n, v in s.problems)
    return f"{s.path}: {s.trace_type}, {s.size:,} bytes" + (f"; stats: {problems}" if problems else "")


@perfetto.command(name="serve")
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-h", "--host", default="127.0.0.1", show_default=True, help="Host to listen on")
@click.option(
    "-p",
    "--port",
    default=8001,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on; 0 picks a free one",
)
@click.option("-o", "--open", "open_browser", is_flag=True, help="Open the first report in a browser")
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where imported traces are kept [default: $DATASETTE_PERFETTO_CACHE, else "
    "$XDG_CACHE_HOME/datasette-perfetto, else ~/.cache/datasette-perfetto]",
)
@click.option("-q", "--quiet", is_flag=True, help="No import progress or summaries")
def serve_command(
    traces: tuple[str, ...], host: str, port: int, open_browser: bool, cache_dir: str | None, quiet: bool
) -> None:
    """Import TRACES (once: the databases are cached) and serve them all in one Datasette.

    A trace database (.db) is served as it is. With two or more, each report can
    compare against another (`baseline=`).

    \b
    Example:
        datasette perfetto serve trace.pftrace --open
        datasette perfetto serve base.pftrace target.pftrace
    """
    from .progress import progress_for
    from .serve import (
        build_datasette,
        cache_target,
        cached_database,
        check_served_database,
        check_trace,
        default_cache_dir,
        is_sqlite_file,
    )

    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    served: dict[str, bool] = {}  # database -> mutable, in argument order; a file given twice is served once
    targets: dict[str, Path] = {}  # trace -> its database in the cache
    sock = None
    try:
        # Every argument is checked before anything is imported: a typo fails at once.
        for path in traces:
            if is_sqlite_file(path):
                check_served_database(path)
                continue
            try:
                targets[path] = cache_target(path, cache)
            except IngestError:
                check_trace(path)  # names the problem as an import would
                raise
            if not targets[path].is_file():  # imported before: nothing to check (an archive is not listed again)
                check_trace(path)
        sock = _listen(host, port)  # a port in use fails before a long import, not after
        for path in traces:
            if is_sqlite_file(path):
                served.setdefault(os.path.realpath(path), True)  # the user's own file: it may change while served
                continue

            def waiting(path: str = path) -> None:
                if not quiet:
                    click.echo(f"{path}: waiting for another process importing it", err=True)

            with sigterm_raises_system_exit():
                db, summaries = cached_database(
                    path, cache, progress=progress_for(quiet), on_wait=waiting, target=targets[path]
                )
            if not quiet:
                if summaries is None:
                    click.echo(f"{path}: imported before, {db}", err=True)
                else:
                    for s in summaries:
                        click.echo(f"{summary_line(s)}; imported into {db}", err=True)
            served.setdefault(str(db), False)
    except IngestError as e:
        if sock is not None:
            sock.close()
        raise click.ClickException(str(e)) from None
    ds = build_datasette(
        [p for p, mutable in served.items() if mutable], [p for p, mutable in served.items() if not mutable]
    )
    _serve_until_stopped(ds, list(served), sock, host, open_browser)


def _listen(host: str, port: int):
    from .serve import listen

    try:
        return listen(host, port)
    except OSError as e:
        raise click.ClickException(f"cannot listen on {host}:{port}: {e.strerror or e}") from None


def _serve_until_stopped(ds, paths: list[str], sock, host: str, open_browser: bool) -> None:
    """Prints each database's report URL (stdout) and serves on `sock` until Ctrl+C."""
    from .serve import database_names, report_url, run_server, server_url

    urls = [report_url(ds, sock, host, name) for name in database_names(ds, paths)]
    click.echo(f"Serving on {server_url(sock, host)}{ds.urls.instance()} (Ctrl+C to stop); the reports:", err=True)
    for url in urls:
        click.echo(url)
    sys.stdout.flush()
    if open_browser:
        webbrowser.open(urls[0])
    run_server(ds, sock)


@perfetto.command(context_settings={"ignore_unknown_options": True})  # SQL may begin with "--" (a comment)
@click.argument("database", type=click.Path(exists=True, dir_okay=False))
@click.argument("sql", required=False)
@click.option("-f", "--file", "sql_file", help="Read the SQL from this file")
@click.option(
    "-p", "--param", "params", type=(str, str), multiple=True, help="Bind :NAME to VALUE (text) in every statement"
)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "csv"]), default="text", show_default=True)
def query(database: str, sql: str | None, sql_file, params: tuple[tuple[str, str], ...], fmt: str) -> None:
    """Run SQL against a trace database, with trace_processor's functions.

    SQL is the text itself (it may begin with a -- comment), or - for standard
    input; --file reads it from a file. Several statements run in order, each
    printing its rows (JSON: one object per line). A `-- :name = "value"` comment
    line before a statement binds :name for that statement (the way
    `report --format sql` prints its values); --param binds for every statement.

    \b
    Example:
        datasette perfetto query trace.db "select name, count(*) from slice group by 1"
        datasette perfetto report trace.db slices --format sql | datasette perfetto query trace.db -
    """
    text = _query_text(sql, sql_file)
    try:
        statements, modules = split_includes(split_statements(text))
    except UnknownModule as e:
        raise click.ClickException(str(e)) from None
    if not statements:  # modules alone would vanish with the connection
        raise click.ClickException("no SQL statement given")
    # Datasette switches on tracebacks from SQL functions process-wide; a CLI
    # user gets the one-line SQL error instead.
    sqlite3.enable_callback_tracebacks(False)
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    prepare(conn)
    results = []
    try:
        included: set[str] = set()
        metrics_run: set[str] = set()
        for module in modules:
            include(conn, module, included)
        for statement in statements:
            bound = {**comment_params(statement), **dict(params)}
            sql = runnable(conn, statement, metrics_run)
            if sql is None:
                continue
            cur = conn.execute(sql, bound)
            if cur.description is None:  # a statement without rows prints nothing
                continue
            columns = [d[0] for d in cur.description]
            rows = [[v.hex() if isinstance(v, bytes) else v for v in r] for r in cur.fetchall()]
            results.append((columns, rows))
    except sqlite3.Error as e:
        raise click.ClickException(f"SQL error: {' '.join(str(e).split())}") from None
    finally:
        conn.close()
    echo_results(results, fmt)


def echo_results(results: list[tuple[list[str], list[list]]], fmt: str) -> None:
    """Each result's rows on stdout: an aligned table (text), CSV, or one JSON object per result
    (`{"columns": [...], "rows": [[...], ...]}`); text and CSV put a blank line between results."""
    for n, (columns, rows) in enumerate(results):
        if fmt == "json":
            click.echo(json.dumps({"columns": columns, "rows": rows}))
            continue
        if n:
            click.echo("")
        if fmt == "csv":
            w = csv.writer(sys.stdout)
            w.writerow(columns)
            w.writerows(rows)
            sys.stdout.flush()
        else:
            click.echo(format_table(columns, rows))


def _read_sql(name: str) -> str:
    """The SQL text of a file or of standard input ("-"), which must be UTF-8: one line otherwise."""
    try:
        if name == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(name, "rb") as f:
                data = f.read()
        return data.decode("utf-8")
    except OSError as e:
        raise click.ClickException(f"{name}: cannot read the SQL: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        shown = "standard input" if name == "-" else name
        raise click.ClickException(f"{shown}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def _query_text(sql: str | None, sql_file) -> str:
    if sql_file is not None:
        if sql is not None:
            raise click.ClickException("give the SQL either as an argument or with --file, not both")
        return _read_sql(sql_file)
    if sql is None:
        raise click.ClickException("no SQL given: pass it as an argument, - for standard input, or --file FILE")
    if sql == "-":
        return _read_sql("-")
    if sql.startswith("-") and not any(c.isspace() for c in sql):
        # An option click does not know (ignore_unknown_options passes it on as the SQL argument).
        raise click.ClickException(f"no such option: {sql}")
    return sql


def format_table(columns: list[str], rows: list[list]) -> str:
    cells = [columns] + [["NULL" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


@perfetto.command()
@click.option(
    "-o",
    "--output",
    default="demo.db",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="Database to write the demo into",
)
@click.option("-p", "--port", default=8001, show_default=True, help="Port to serve on (127.0.0.1)")
@click.option("--no-serve", is_flag=True, help="Only build the database")
def demo(output: str, port: int, no_serve: bool) -> None:
    """Build the bundled demo trace, ingest it and serve it with Datasette on 127.0.0.1.

    \b
    Example:
        datasette perfetto demo --port 8001
    """
    from .trace_builder import write_demo_trace

    trace_path = os.path.splitext(output)[0] + ".pftrace"
    try:
        write_demo_trace(trace_path)
    except OSError as e:
        raise click.ClickException(f"{trace_path}: cannot write the demo trace: {e.strerror or e}") from None
    try:
        with sigterm_raises_system_exit():
            ingest([trace_path], output)
    except IngestError as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"Ingested {trace_path} into {output}", err=True)
    if no_serve:
        return
    from .serve import build_datasette

    sock = _listen("127.0.0.1", port)
    _serve_until_stopped(build_datasette([output]), [output], sock, "127.0.0.1", open_browser=False)


@perfetto.command()
@click.argument("cases_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--prefix", default="", help="Only cases whose id starts with this")
@click.option("-v", "--verbose", is_flag=True, help="Show why failing cases fail")
def conformance(cases_dir: str, prefix: str, verbose: bool) -> None:
    """Run trace_processor diff tests from CASES_DIR; prints one line per case.

    Exits non-zero when a case fails.
    """
    from .conformance import run_cases

    passed = failed = 0
    for r in run_cases(cases_dir, prefix):
        if r.passed:
            passed += 1
            click.echo(f"PASS {r.case_id}")
        else:
            failed += 1
            click.echo(f"FAIL {r.case_id}" + (f": {r.reason}" if verbose else ""))
    click.echo(f"{passed} passed, {failed} failed")
    if failed:
        sys.exit(1)


def _report_options(fn):
    """One --flag per report scope flag (--min-duration for min_duration)."""
    from .report.scope import FLAGS, REPEATABLE_FLAGS

    for flag, help_text in reversed(list(FLAGS.items())):
        repeatable = flag in REPEATABLE_FLAGS
        fn = click.option(f"--{flag.replace('_', '-')}", flag, default=None, multiple=repeatable, help=help_text)(fn)
    return fn


@perfetto.command(name="report")
@click.argument("database", type=click.Path(exists=True, dir_okay=False))
@click.argument("noun", required=False)
@click.argument("view", required=False)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "sql"]),
    default="text",
    help="text tables, JSON (protos/report.proto) or the SQL the view runs",
)
@click.option(
    "--width",
    default=None,
    help="Fit text tables to this many columns, cutting the widest text column (0: no limit) "
    "[default: $COLUMNS, else the terminal's width, else 80]",
)
@click.option("--show-sql", is_flag=True, help="Print the queries the view ran after the text (as --format sql)")
@_report_options
def report_command(database: str, noun, view, output_format: str, width: str | None, show_sql: bool, **flags) -> None:
    """An opinionated report of a trace database: NOUN and VIEW as in the report RFC.

    \b
    Examples:
        datasette perfetto report trace.db
        datasette perfetto report trace.db slices --top 20
        datasette perfetto report trace.db slices inspect --name doFrame --ts 2.734s
        datasette perfetto report --baseline base.db target.db   # diff two traces (exits 0)
        datasette perfetto report --baseline base.db target.db slices --sort count
    """
    from .metadata import is_trace_connection, not_a_trace_database
    from .report.base import Linker
    from .report.diff import run_diff
    from .report.engine import run_report
    from .report.render import error_json, to_json, to_sql, to_text
    from .report.scope import ReportError

    if show_sql and output_format == "json":
        raise click.ClickException("--show-sql goes with text output; the JSON has the queries already (queries)")
    if width is None:
        columns = shutil.get_terminal_size((80, 24)).columns
    elif width.strip().isdigit():
        columns = int(width)
    else:
        raise click.ClickException(f"width: expected a whole number of columns (0: no limit), got {width!r}")
    params = {k: list(v) if isinstance(v, tuple) else v for k, v in flags.items() if v not in (None, ())}
    baseline = str(params.get("baseline") or "").strip()
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    prepare(conn)
    base_conn = None
    try:
        if not is_trace_connection(conn):
            raise ReportError(not_a_trace_database(database), "database")
        if baseline:
            # A diff is not a failure: it exits 0 like any report, so CI can keep it as an artifact.
            if not os.path.isfile(baseline):
                raise ReportError(f"baseline: {baseline}: no such database file", "baseline")
            if not os.access(baseline, os.R_OK):
                raise ReportError(f"baseline: {baseline}: not readable", "baseline")
            base_conn = sqlite3.connect(f"file:{baseline}?mode=ro", uri=True)
            prepare(base_conn)
            result = run_diff(
                conn, base_conn, noun, view, params, Linker(None, database), Linker(None, baseline), database, baseline
            )
        else:
            result = run_report(conn, noun, view, params, Linker(None, database))
    except ReportError as e:
        if output_format == "json":
            click.echo(json.dumps(error_json(e), indent=2))
            sys.exit(1)
        raise click.ClickException(e.message) from None
    except sqlite3.Error as e:
        raise click.ClickException(f"{database}: not a trace database ({e})") from None
    finally:
        conn.close()
        if base_conn is not None:
            base_conn.close()
    if output_format == "json":
        click.echo(json.dumps(to_json(result), indent=2, ensure_ascii=False))
    elif output_format == "sql":
        click.echo(to_sql(result), nl=False)
    else:
        click.echo(to_text(result, columns), nl=False)
        if show_sql:
            click.echo("\n" + to_sql(result), nl=False)


def _fleet_module(name: str):
    """export.py or batch.py, which need pyarrow and duckdb (the `fleet` extra): one line when missing."""
    import importlib

    try:
        return importlib.import_module(f".{name}", __package__)
    except ModuleNotFoundError as e:
        if e.name in ("pyarrow", "duckdb"):
            raise click.ClickException(
                f"{e.name} is not installed; it comes with: pip install 'datasette-perfetto[fleet]'"
            ) from None
        raise


@perfetto.command(name="export")
@click.argument("databases", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["parquet"]), default="parquet", show_default=True)
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="Folder of the dataset")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar or summary")
def export_command(databases: tuple[str, ...], fmt: str, output: str, quiet: bool) -> None:
    """Write every table of trace DATABASES as Parquet under OUTPUT, one partition per trace.

    Each table is OUTPUT/<table>/trace=<name>/part-<schema>.parquet (name: the database's file name
    without .db), as DuckDB, Spark and pyarrow read a partitioned dataset. Exporting a database
    again replaces its partitions; a failed export leaves them as they were.

    \b
    Example:
        datasette perfetto export rank*.db --format parquet -o fleet/
        datasette perfetto batch "select name, count(*) from slice group by 1" fleet/
    """
    from .progress import counting_bar

    export = _fleet_module("export")
    bar = counting_bar(len(databases) * len(export.export_tables()), "export", "table")
    bar.disable = bar.disable or quiet
    try:
        with sigterm_raises_system_exit():
            summaries = export.export_parquet(list(databases), output, lambda trace, table: bar.update(1))
    except export.ExportError as e:
        raise click.ClickException(str(e)) from None
    finally:
        bar.close()
    if not quiet:
        for s in summaries:
            missing = f"; lacks {', '.join(s.missing_tables)}" if s.missing_tables else ""
            click.echo(f"{s.database}: trace {s.trace}, {s.rows:,} rows{missing}", err=True)
        click.echo(f"Wrote {output}", err=True)


@perfetto.command(name="batch", context_settings={"ignore_unknown_options": True})  # SQL may begin with "--"
@click.argument("sql")
@click.argument("sources", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json", "csv"]), default="text", show_default=True)
def batch_command(sql: str, sources: tuple[str, ...], fmt: str) -> None:
    """Run one SELECT on every trace of SOURCES with DuckDB: the union of the per-trace results,
    with a `trace` column first.

    SOURCES are folders written by `export` and trace databases (.db, exported to a temporary
    folder first). The SQL sees one trace's tables and views at a time, so a GROUP BY groups
    within each trace; it is DuckDB's SQL (`/` of integers is a real division). A trace without a
    table the SQL uses is reported on stderr and skipped. SQL `-` reads it from standard input.

    \b
    Example:
        datasette perfetto batch "select name, count(*) as n from slice group by name" fleet/
        datasette perfetto batch "select count(*) from sched" a.db b.db --format json
    """
    from .progress import counting_bar

    text = _query_text(sql, None)
    batch = _fleet_module("batch")
    for source in sources:
        if not os.path.exists(source):
            raise click.ClickException(f"{source}: no such file or folder")
    bars: dict[str, Any] = {}  # desc -> tqdm bar, made on first use, closed at the end
    exported = sum(1 for s in sources if not os.path.isdir(s)) * len(batch.export_tables())

    def on_export(trace: str, table: str) -> None:
        if "export" not in bars:
            bars["export"] = counting_bar(exported, "export", "table")
        bars["export"].update(1)

    def on_skip(trace: str, table: str) -> None:
        click.echo(f"{trace}: no {table} table; skipped", err=True)

    def progress(total: int):
        bar = bars["batch"] = counting_bar(total, "batch", "trace")
        return lambda: bar.update(1)

    try:
        with sigterm_raises_system_exit():
            result = batch.run_batch(text, list(sources), on_skip, progress, on_export)
    except batch.BatchError as e:
        raise click.ClickException(str(e)) from None
    finally:
        for bar in bars.values():
            bar.close()
    echo_results([(result.columns, result.rows)], fmt)
