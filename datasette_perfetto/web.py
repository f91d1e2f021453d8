"""The request pipeline of every page the plugin serves: the report (`/{db}/-/report...`), the tracks list and
the details pages (`pages/`).

One place for what each of them does around its own work: the database named in the URL (tilde-decoded;
unknown: 404), permissions (`view-instance` and `view-database`: 403), the trace-database check (400), the
query time limit (503), the output format (HTML, `.json`, `.txt`, `.sql`), and how an error is answered in
that format (HTML page, JSON error object, `error: ...` text). 403 and 404 are Datasette's own answers, so
its `forbidden` hook and its 404 handling (retrying a %-escaped URL with ~-escapes) apply as on its pages.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .compat import can
from .metadata import is_trace_connection, not_a_trace_database

T = TypeVar("T")

# Appended to each page's route: the output formats a URL can ask for (HTML when none).
FORMAT_SUFFIX = r"(?:\.(?P<format>json|txt|sql))?$"


class PageError(Exception):
    """A request a page cannot answer: the HTTP status, the message and, for a bad parameter, its name and the
    valid values (the shape of report.scope.ReportError, which the report's pages answer as a 400)."""

    def __init__(self, message: str, status: int = 400, param: str | None = None, options: Sequence[str] = ()):
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param
        self.options = list(options)


@dataclass
class Page:
    """One request to a plugin page, its database found and the actor allowed to view it."""

    request: Any
    datasette: Any
    db: Any  # datasette.database.Database
    format: str  # "html", "json", "txt" or "sql"

    @property
    def actor(self) -> Any:
        return self.request.actor

    @property
    def time_limit_ms(self) -> int:
        return self.datasette.setting("sql_time_limit_ms")

    async def can(self, action: str, database: str | None = None) -> bool:
        return await can(self.datasette, self.actor, action, database)

    async def run(self, compute: Callable[[sqlite3.Connection], T], db: Any = None) -> T:
        """`compute(conn)` on the page's database (or `db`, a second database such as a diff's baseline), once it
        is known to be a trace database, within the query time limit (over it: a 503)."""
        from datasette.utils import sqlite_timelimit

        database = db if db is not None else self.db
        limit = self.time_limit_ms

        def checked(conn: sqlite3.Connection) -> T:
            try:
                trace = is_trace_connection(conn)
            except sqlite3.DatabaseError:  # not SQLite, or unreadable
                trace = False
            if not trace:
                raise PageError(not_a_trace_database(database.name))
            with sqlite_timelimit(conn, limit):
                # Datasette decodes every text value with a Python function (invalid UTF-8 replaced), a tenth of
                # a page reading 100,000 names; an import writes valid UTF-8, so SQLite's own decoding serves,
                # and a database someone changed since is read Datasette's way.
                lenient = conn.text_factory
                conn.text_factory = str
                try:
                    return compute(conn)
                except sqlite3.OperationalError as e:
                    if "decode" not in str(e):
                        raise
                finally:
                    conn.text_factory = lenient
                return compute(conn)

        try:
            return await database.execute_fn(checked)
        except sqlite3.OperationalError as e:
            if "interrupted" not in str(e):
                raise
            raise PageError(
                f"This page took longer than the {limit} ms query limit (the sql_time_limit_ms setting); "
                "narrow it with its filters",
                status=503,
            ) from None

    def render(self, template: str, context: Mapping[str, Any], status: int = 200) -> Awaitable[Any]:
        return _render(self.request, self.datasette, template, context, status)


async def serve(
    request: Any,
    datasette: Any,
    respond: Callable[[Page], Awaitable[Any]],
    error_context: Callable[[str], Mapping[str, Any]] | None = None,
) -> Any:
    """Answers a page request: finds the database, checks the actor may view it, then `respond(page)`; a
    PageError from any step is answered in the requested format. `error_context(route)` adds template
    variables to the HTML error page of a database that exists (the report's navigation)."""
    from datasette.utils import tilde_decode
    from datasette.utils.asgi import Forbidden, NotFound

    fmt = request.url_vars.get("format") or "html"
    route = tilde_decode(request.url_vars["database"])
    database = None  # the database's name once found
    try:
        try:
            db = datasette.get_database(route=route)
        except KeyError:
            raise PageError(f"Database not found: {route}", status=404) from None
        database = db.name
        # Datasette's own exception, so its `forbidden` plugin hook still applies.
        if not await can(datasette, request.actor, "view-instance") or not await can(
            datasette, request.actor, "view-database", db.name
        ):
            raise Forbidden("You do not have permission to view this database")
        return await respond(Page(request, datasette, db, fmt))
    except PageError as e:
        if e.status == 404:
            # Datasette's own 404: it first retries a %-escaped URL with its ~-escapes (ids typed in a URL).
            raise NotFound(e.message) from None
        context = dict(error_context(route)) if error_context and database else {}
        return await error_response(request, datasette, fmt, database, e, context)


async def error_response(
    request: Any, datasette: Any, fmt: str, database: str | None, error: PageError, context: Mapping[str, Any]
) -> Any:
    from datasette.utils.asgi import Response

    from .report.render import error_json

    if fmt == "json":
        return Response.json({**error_json(error), "status": error.status}, status=error.status)
    if fmt in ("txt", "sql"):
        options = f"\nvalid options: {', '.join(error.options)}" if error.options else ""
        return Response.text(f"error: {error.message}{options}\n", status=error.status)
    return await _render(
        request, datasette, "perfetto_error.html", {**context, "database": database, "error": error}, error.status
    )


async def _render(request: Any, datasette: Any, template: str, context: Mapping[str, Any], status: int) -> Any:
    from datasette.utils.asgi import Response

    html = await datasette.render_template(template, dict(context), request=request, view_name="perfetto")
    return Response.html(html, status=status)
