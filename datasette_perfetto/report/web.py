"""The report pages, `/{db}/-/report[/{noun}[/{view}]][.json|.txt|.sql]`, on the plugin's request pipeline
(datasette_perfetto/web.py): the report or diff computed, then rendered in the format asked for."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import jinja2
from markupsafe import Markup, escape

from ..compat import sql_editor_url, template_loader
from ..metadata import trace_database_names
from ..web import FORMAT_SUFFIX, Page, PageError, serve
from .base import Cell, Link, Linker, ReportRun, Table
from .diff import compute_side, join, prepare, with_baseline
from .engine import run_report
from .render import to_json, to_sql, to_text
from .scope import ReportError, Scope, shown
from .views import NOUNS

ROUTE = r"^/(?P<database>[^/]+)/-/report(?:/(?P<noun>[^/.]+)(?:/(?P<view>[^/.]+))?)?" + FORMAT_SUFFIX


async def report_page(request, datasette):
    base = datasette.urls.path(f"/{request.url_vars['database']}/-/report")
    return await serve(request, datasette, lambda page: _respond(page, base), lambda _: {"nouns": _noun_links(base)})


async def _respond(page: Page, base: str):
    from datasette.utils.asgi import Response

    request, datasette, db = page.request, page.datasette, page.db
    sql_allowed = await page.can("execute-sql", db.name)
    noun, view = request.url_vars.get("noun"), request.url_vars.get("view")
    params = {k: request.args.getlist(k) for k in request.args.keys()}

    def sql_url(sql: str, bound: dict) -> str:
        return sql_editor_url(datasette, db.name, sql, bound)

    linker = Linker(base, f"{db.name}.db", sql_url if sql_allowed else None)
    try:
        # .txt has no terminal: no width limit unless width=N asks for one (a rendering option, not a flag).
        width = _width(params.pop("width")) if page.format == "txt" and "width" in params else 0
        flags = _flags(params)
        baseline = flags.get("baseline")
        if isinstance(baseline, str) and baseline.strip():
            result = await _diff(page, noun, view, flags, linker)
        else:
            result = await page.run(lambda conn: run_report(conn, noun, view, flags, linker))
    except ReportError as e:
        raise PageError(e.message, 400, e.param, e.options) from None
    if page.format == "json":
        return Response.json(to_json(result))
    if page.format == "txt":
        return Response.text(to_text(result, width))
    if page.format == "sql":
        return Response.text(to_sql(result))
    msg = result.result_message()
    picker = await _baseline_picker(page, result.view, params)
    # The navigation greys the nouns with no data (on a diff page: in neither trace).
    with_data = await page.run(nouns_with_data)
    if result.report.HasField("baseline"):
        other = page.datasette.databases[result.run.scope.baseline]
        with_data |= await page.run(nouns_with_data, db=other)
    return await page.render(
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
            "table_html": _table_html(page.datasette, result.run.linker.url),
            "context_line": _context_parts(result),
            "sql_allowed": sql_allowed,
            "base": base,
            "formats": _format_links(request, base, noun, view),
            "nouns": _diff_noun_links(base, result) if result.report.HasField("baseline") else _noun_links(base),
            "empty_nouns": {noun for noun in NOUNS if noun not in with_data},
            "empty_title": "not present in either trace"
            if result.report.HasField("baseline")
            else "not present in this trace",
            "bar_width": _bar_pixels,
            "baseline_picker": picker,
            "single_pages": _single_pages(result),
        },
    )


# The report's tables, rendered by a synchronous Jinja environment: Datasette's is asynchronous, which takes
# twice as long over a table of thousands of cells (dimensions compare by thread). One per Datasette, over
# its environment's loader, so the templates are found where Datasette finds them (--template-dir first).
_TABLE_ENVIRONMENTS: weakref.WeakKeyDictionary[Any, jinja2.Environment] = weakref.WeakKeyDictionary()


def _table_html(datasette, url_for: Callable[[Link], str]) -> Callable[[Table], Markup]:
    """table -> its HTML (_report_table.html, as `datasette` finds it), links resolved by `url_for`."""
    environment = _TABLE_ENVIRONMENTS.get(datasette)
    if environment is None:
        environment = jinja2.Environment(loader=template_loader(datasette), autoescape=True)
        _TABLE_ENVIRONMENTS[datasette] = environment
    template = environment.get_template("_report_table.html")
    return lambda table: Markup(template.render(table=table, rows_html=rows_html(table, url_for), url_for=url_for))


def rows_html(table: Table, url_for: Callable[[Link], str]) -> list[Markup]:
    """Each row of `table` as its <td> cells, for _report_table.html: rendered here rather than cell by cell in
    the template, as Datasette renders its table cells (render_cell), because a page of thousands of cells
    (dimensions compare by thread: 22,800) takes a third of the time."""
    classes = [f"perfetto-align-{escape(align)}" for align in table.alignment()]  # per column, escaped once
    return [
        Markup("".join([_cell_html(cell, classes[i], url_for) for i, cell in enumerate(row)])) for row in table.rows
    ]


def _cell_html(cell: Cell, align_class: str, url_for: Callable[[Link], str]) -> str:
    """One cell: its text, linked to its report (with a link to its details page after it) or to its details
    page; its hover text, extra class and subtitle; every value escaped (`align_class` already)."""
    text = escape(cell.text)
    if cell.link is not None:
        inner = f'<a href="{escape(url_for(cell.link))}">{text}</a>'
        if cell.href:
            inner += f' <a class="perfetto-report-details" href="{escape(cell.href)}" title="details page">details</a>'
    elif cell.href:
        inner = f'<a href="{escape(cell.href)}">{text}</a>'
    else:
        inner = text
    if cell.subtitle:
        inner += f'<span class="perfetto-report-subtitle">{escape(cell.subtitle)}</span>'
    css = f" perfetto-{escape(cell.css)}" if cell.css else ""
    title = f' title="{escape(cell.title)}"' if cell.title else ""
    return f'<td class="{align_class}{css}"{title}>{inner}</td>'


def _flags(params: dict[str, list[str]]) -> dict[str, str | list[str]]:
    """A flag's value, or its values when given more than once (Scope.parse accepts that of repeatable
    flags only)."""
    return {k: values[0] if len(values) == 1 else values for k, values in params.items()}


def _width(values: list[str]) -> int:
    if len(values) != 1 or not values[0].strip().isdigit():
        raise ReportError("width: a number of columns (0: no limit), given once", "width")
    return int(values[0])


async def trace_databases(page: Page) -> list[str]:
    """The trace databases served that the actor may view (the baseline choices)."""
    return [name for name in trace_database_names(page.datasette) if await page.can("view-database", name)]


async def _diff(page: Page, noun, view, flags: dict[str, str | list[str]], linker: Linker):
    """The report of the page's database against the database named by baseline=: each side computed on its own
    database's connection, then joined. Both databases must be visible to the actor."""
    from datasette.utils.asgi import Forbidden

    datasette, db = page.datasette, page.db
    plan = prepare(noun, view, flags)
    name = plan.scope.baseline or ""
    other = datasette.databases.get(name) if name != "_internal" else None
    if other is None:
        served = [n for n in await trace_databases(page) if n != db.name]
        raise ReportError(
            f"baseline: no database named {shown(name)} is served; trace databases: "
            f"{', '.join(served) or '(no other trace database)'}",
            "baseline",
            served,
        )
    if not await page.can("view-database", name):
        raise Forbidden("You do not have permission to view the baseline database")
    base_sql = await page.can("execute-sql", name)

    def other_sql_url(sql: str, bound: dict) -> str:
        return sql_editor_url(datasette, name, sql, bound)

    base_linker = Linker(datasette.urls.database(name) + "/-/report", f"{name}.db", other_sql_url if base_sql else None)
    # One side after the other: run together they would share the CPU and each could hit the time limit.
    target = await page.run(lambda conn: compute_side(conn, plan, linker, db.name))
    baseline = await page.run(lambda conn: compute_side(conn, plan, base_linker, name), db=other)
    return join(plan, baseline, target, with_baseline(linker, base_linker))


async def _baseline_picker(page: Page, view, params: dict[str, list[str]]):
    """The form choosing a baseline, on the views that take one: the other trace databases served."""
    if not _takes_baseline(view):
        return None
    current = (params.get("baseline") or [""])[0]
    choices = [n for n in await trace_databases(page) if n != page.db.name]
    if not choices and not current:
        return None
    hidden = [(k, value) for k, values in params.items() if k != "baseline" for value in values]
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


def _context_parts(result) -> list[str]:
    from .render import context_line

    return context_line(result).strip("[]").split(" | ")


def _format_links(request, base: str, noun, view) -> list[tuple[str, str]]:
    path = base + "".join(f"/{p}" for p in (noun, view) if p)
    query = ("?" + request.query_string) if request.query_string else ""
    return [(label, f"{path}{ext}{query}") for label, ext in (("JSON", ".json"), ("text", ".txt"), ("SQL", ".sql"))]


def nouns_with_data(conn) -> set[str]:
    """The nouns whose default view has data in the trace (a few EXISTS queries, not recorded in any report)."""
    run = ReportRun(conn, Scope(), Linker(None, ""), "", "")
    return {noun for noun, views in NOUNS.items() if next(iter(views.values())).has_data(run)}


def _noun_links(base: str) -> list[tuple[str, str]]:
    from .views import NOUNS

    return [("overview", base)] + [(noun, f"{base}/{noun}") for noun in NOUNS]
