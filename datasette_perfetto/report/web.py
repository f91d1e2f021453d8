"""The report pages: `/{db}/-/report[/{noun}[/{view}]][.json|.txt|.sql]`."""

from __future__ import annotations

import sqlite3
from urllib.parse import urlencode

from ..compat import can, sql_editor_url
from .base import Link, Linker
from .diff import compute_side, is_trace_connection, join, prepare, with_baseline
from .engine import run_report
from .render import error_json, to_json, to_sql, to_text
from .scope import ReportError

ROUTE = r"^/(?P<database>[^/]+)/-/report(?:/(?P<noun>[^/.]+)(?:/(?P<view>[^/.]+))?)?(?:\.(?P<format>json|txt|sql))?$"


async def report_page(request, datasette):
    from datasette.utils import tilde_decode
    from datasette.utils.asgi import Forbidden, NotFound, Response

    route = tilde_decode(request.url_vars["database"])
    try:
        db = datasette.get_database(route=route)
    except KeyError:
        raise NotFound(f"Database not found: {route}") from None
    actor = request.actor
    if not await can(datasette, actor, "view-instance") or not await can(datasette, actor, "view-database", db.name):
        raise Forbidden("You do not have permission to view this database")
    sql_allowed = await can(datasette, actor, "execute-sql", db.name)
    fmt = request.url_vars.get("format") or "html"
    noun, view = request.url_vars.get("noun"), request.url_vars.get("view")
    params = {k: request.args.getlist(k) for k in request.args.keys()}

    base = datasette.urls.path(f"/{request.url_vars['database']}/-/report")

    def sql_url(sql: str, bound: dict) -> str:
        return sql_editor_url(datasette, db.name, sql, bound)

    linker = Linker(base, f"{db.name}.db", sql_url if sql_allowed else None)

    def compute(conn: sqlite3.Connection):
        repeated = [k for k, values in params.items() if len(values) > 1]
        if repeated:
            raise ReportError(f"{repeated[0]}: given more than once", repeated[0])
        flags = {k: values[0] for k, values in params.items()}
        if not _is_trace_connection(conn):
            raise ReportError(f"{db.name} is not a trace database (no slice and trace_bounds tables)")
        from datasette.utils import sqlite_timelimit

        with sqlite_timelimit(conn, datasette.setting("sql_time_limit_ms")):
            return run_report(conn, noun, view, flags, linker)

    try:
        baseline = _single_value(params, "baseline")
        if baseline:
            result = await _diff(datasette, actor, db, noun, view, params, linker)
        else:
            result = await db.execute_fn(compute)
    except ReportError as e:
        return await _error(datasette, request, e, fmt, db.name, base, 400)
    except sqlite3.OperationalError as e:
        if "interrupted" in str(e):
            error = ReportError(
                f"this report took longer than the {datasette.setting('sql_time_limit_ms')} ms "
                f"query limit; narrow it with time=, name= or a process/thread flag"
            )
            return await _error(datasette, request, error, fmt, db.name, base, 503)
        raise
    if fmt == "json":
        return Response.json(to_json(result))
    if fmt == "txt":
        return Response.text(to_text(result))
    if fmt == "sql":
        return Response.text(to_sql(result))
    msg = result.result_message()
    picker = await _baseline_picker(datasette, actor, db.name, result.view, params)
    html = await datasette.render_template(
        "perfetto_report.html",
        {
            "database": db.name,
            "report": result.report,
            "view": result.view,
            "title": result.view.title,
            "charts": result.view.charts(msg, result.run),
            "flames": result.view.flames(msg, result.run),
            "tables": result.view.tables(msg, result.run),
            "url_for": result.run.linker.url,  # a diff's also resolves links to the baseline
            "context_line": _context_parts(result),
            "sql_allowed": sql_allowed,
            "base": base,
            "formats": _format_links(request, base, noun, view),
            "nouns": _diff_noun_links(base, result) if result.report.HasField("baseline") else _noun_links(base),
            "bar_width": _bar_pixels,
            "baseline_picker": picker,
            "single_pages": _single_pages(result),
        },
        request=request,
        view_name="perfetto_report",
    )
    return Response.html(html)


def _single_value(params: dict[str, list[str]], key: str) -> str:
    values = params.get(key) or []
    if len(values) > 1:
        raise ReportError(f"{key}: given more than once", key)
    return values[0].strip() if values else ""


async def trace_databases(datasette, actor) -> list[str]:
    """The trace databases served that the actor may view (the baseline choices)."""
    names = []
    for name, database in list(datasette.databases.items()):
        if name == "_internal" or not await can(datasette, actor, "view-database", name):
            continue
        try:
            if await database.execute_fn(is_trace_connection):
                names.append(name)
        except sqlite3.DatabaseError:  # not SQLite, or unreadable: not a choice
            continue
    return names


async def _diff(datasette, actor, db, noun, view, params: dict[str, list[str]], linker: Linker):
    """The report of `db` against the database named by baseline=: each side computed on its own
    database's connection, then joined. Both databases must be visible to the actor."""
    from datasette.utils import sqlite_timelimit
    from datasette.utils.asgi import Forbidden

    repeated = [k for k, values in params.items() if len(values) > 1]
    if repeated:
        raise ReportError(f"{repeated[0]}: given more than once", repeated[0])
    plan = prepare(noun, view, {k: values[0] for k, values in params.items()})
    name = plan.scope.baseline or ""
    other = datasette.databases.get(name) if name != "_internal" else None
    if other is None:
        served = [n for n in await trace_databases(datasette, actor) if n != db.name]
        raise ReportError(
            f"baseline: no database named {name!r} is served; trace databases: "
            f"{', '.join(served) or '(no other trace database)'}",
            "baseline",
            served,
        )
    if not await can(datasette, actor, "view-database", name):
        raise Forbidden("You do not have permission to view the baseline database")
    base_sql = await can(datasette, actor, "execute-sql", name)
    other_url = datasette.urls.database(name)

    def other_sql_url(sql: str, bound: dict) -> str:
        return sql_editor_url(datasette, name, sql, bound)

    base_linker = Linker(other_url + "/-/report", f"{name}.db", other_sql_url if base_sql else None)
    limit = datasette.setting("sql_time_limit_ms")

    def side(database, side_linker):
        def compute(conn: sqlite3.Connection):
            with sqlite_timelimit(conn, limit):
                return compute_side(conn, plan, side_linker, database.name)

        return compute

    # One side after the other: run together they would share the CPU and each could hit the time limit.
    target = await db.execute_fn(side(db, linker))
    baseline = await other.execute_fn(side(other, base_linker))
    return join(plan, baseline, target, with_baseline(linker, base_linker))


async def _baseline_picker(datasette, actor, database: str, view, params: dict[str, list[str]]):
    """The form choosing a baseline, on the views that take one: the other trace databases served."""
    if not _takes_baseline(view):
        return None
    current = (params.get("baseline") or [""])[0]
    choices = [n for n in await trace_databases(datasette, actor) if n != database]
    if not choices and not current:
        return None
    hidden = [(k, values[0]) for k, values in params.items() if k != "baseline" and values]
    return {"choices": choices, "current": current, "hidden": hidden}


def _takes_baseline(view) -> bool:
    from .diff import SPECS, DiffView

    return isinstance(view, DiffView) or not view.noun or (view.noun, view.name) in SPECS


def _diff_noun_links(base: str, result) -> list[tuple[str, str]]:
    """On a diff page the navigation stays in the comparison where the noun's default view takes a baseline."""
    from .diff import SPECS
    from .views import NOUNS

    query = "?" + urlencode({"baseline": result.run.scope.baseline})
    return [("overview", base + query)] + [
        (noun, f"{base}/{noun}" + (query if (noun, next(iter(views))) in SPECS else ""))
        for noun, views in NOUNS.items()
    ]


def _single_pages(result) -> list[tuple[str, str]]:
    """On a diff page: the two single-trace reports it joins."""
    if not result.report.HasField("baseline"):
        return []
    params = {k: v for k, v in result.run.scope.to_params().items() if k != "baseline"}
    noun, view, linker = result.view.noun, result.view.name, result.run.linker
    return [
        (f"target: {result.report.context.database}", linker.url(Link.to(noun, view, params))),
        (f"baseline: {result.report.baseline.database}", linker.url(Link.to(noun, view, params, database="baseline"))),
    ]


def _bar_pixels(value: float, top: float, scale: str) -> int:
    from .render import BAR_WIDTH, bar_length

    return bar_length(value, top, scale) * 460 // BAR_WIDTH


def _is_trace_connection(conn: sqlite3.Connection) -> bool:
    found = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('slice', 'trace_bounds', 'trace_file')"
    ).fetchone()[0]
    return found == 3


def _context_parts(result) -> list[str]:
    from .render import context_line

    return context_line(result).strip("[]").split(" | ")


def _format_links(request, base: str, noun, view) -> list[tuple[str, str]]:
    path = base + "".join(f"/{p}" for p in (noun, view) if p)
    query = ("?" + request.query_string) if request.query_string else ""
    return [(label, f"{path}{ext}{query}") for label, ext in (("JSON", ".json"), ("text", ".txt"), ("SQL", ".sql"))]


def _noun_links(base: str) -> list[tuple[str, str]]:
    from .views import NOUNS

    return [("overview", base)] + [(noun, f"{base}/{noun}") for noun in NOUNS]


async def _error(datasette, request, error: ReportError, fmt: str, database: str, base: str, status: int):
    from datasette.utils.asgi import Response

    if fmt == "json":
        return Response.json(error_json(error), status=status)
    if fmt in ("txt", "sql"):
        options = f"\nvalid options: {', '.join(error.options)}" if error.options else ""
        return Response.text(f"error: {error.message}{options}\n", status=status)
    html = await datasette.render_template(
        "perfetto_report_error.html",
        {
            "database": database,
            "error": error,
            "base": base,
            "nouns": _noun_links(base),
            "status": status,
        },
        request=request,
        view_name="perfetto_report",
    )
    return Response.html(html, status=status)
