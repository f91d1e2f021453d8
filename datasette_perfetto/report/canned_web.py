"""The report's canned queries as Datasette serves them (`/{db}/slices_table?...`): their flags checked as the
report checks them, and what a database written by an older version lacks named, once Datasette has answered (an
asgi_wrapper: Datasette runs a canned query itself)."""

from __future__ import annotations

import os
import sqlite3
from typing import Any
from urllib.parse import parse_qsl

from ..web import PageError, error_response
from .canned import CANNED_FLAGS, canned_queries, flag_error
from .scope import ReportError


def checked_flags(datasette: Any, app: Any) -> Any:
    """ASGI middleware: a report canned query whose flags the report would refuse is answered as the report
    answers it (a 400 naming the flag, a JSON error object for .json), where SQLite could only say
    "user-defined function raised exception" or, for a flag no function reads, give rows for a wrong value; one
    that a database written by an older version cannot run (a table or column it reads is missing) says so
    rather than giving SQLite's error. Only once Datasette has answered it (so its permission checks come first;
    a 401/403/404 is kept)."""

    async def middleware(scope: dict, receive: Any, send: Any) -> None:
        target = _canned_target(datasette, scope) if scope["type"] == "http" else None
        if target is None:
            await app(scope, receive, send)
            return
        route, query, fmt = target
        replaced = False

        async def checked_send(message: dict) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] not in (301, 302, 401, 403, 404):
                error = await _request_flag_error(datasette, scope, route, query)
                if error is None:  # Datasette 1.0 shows an HTML query's SQL error on a 200 page
                    error = await _older_database_error(datasette, route, query)
                if error is not None:
                    from datasette.utils.asgi import Request

                    # Outside Datasette's middleware: no CSRF token (the error page has no form) and no actor.
                    request = Request({**scope, "csrftoken": lambda: ""}, receive)
                    response = await error_response(
                        request, datasette, fmt, None, PageError(error.message, 400, error.param, error.options), {}
                    )
                    await response.asgi_send(send)
                    replaced = True
                    return
            if not replaced:
                await send(message)

        await app(scope, receive, checked_send)

    return middleware


def _canned_target(datasette: Any, scope: dict) -> tuple[str, str, str] | None:
    """(database route, query name, response format) of a request for one of the report's canned queries."""
    path = scope.get("path", "")
    base = datasette.setting("base_url") or "/"
    if base != "/" and path.startswith(base):
        path = "/" + path[len(base) :]
    parts = path.strip("/").split("/")
    if len(parts) != 2:
        return None
    route, query = parts
    query, _, extension = query.partition(".")
    if query not in CANNED_FLAGS:
        return None
    fmt = {"json": "json", "csv": "txt", "": "html"}.get(extension)
    return None if fmt is None else (route, query, fmt)


async def _request_flag_error(datasette: Any, scope: dict, route: str, query: str) -> ReportError | None:
    from datasette.utils import tilde_decode

    params = parse_qsl(scope.get("query_string", b"").decode("utf-8", "replace"), keep_blank_values=True)
    if not any(key in CANNED_FLAGS[query] for key, _ in params):
        return None
    start = 0
    if any(key == "time" for key, _ in params):
        try:
            db = datasette.get_database(route=tilde_decode(route))
            row = (await db.execute("SELECT start_ts FROM trace_bounds")).first()
        except (KeyError, sqlite3.Error):  # not a trace database: Datasette's answer stands
            return None
        start = row[0] if row is not None and row[0] is not None else 0
    return flag_error(query, params, start)


async def _older_database_error(datasette: Any, route: str, query: str) -> ReportError | None:
    """The table or column the canned `query` reads that the database lacks (written by an older version of this
    package), found by compiling its SQL there once per database file; None when it compiles."""
    from datasette.utils import tilde_decode

    try:
        db = datasette.get_database(route=tilde_decode(route))
        stat = os.stat(db.path) if db.path else None
    except (KeyError, OSError):
        return None
    key = (db.path, stat.st_size, stat.st_mtime_ns, query) if stat is not None else None
    missing = _COMPILE_ERRORS.get(key, _UNKNOWN) if key is not None else _UNKNOWN
    if missing is _UNKNOWN:
        sql = canned_queries()[query]["sql"]

        def compile_error(conn: sqlite3.Connection) -> str | None:
            try:
                conn.execute(f"EXPLAIN {sql}", dict.fromkeys(CANNED_FLAGS[query], ""))
            except sqlite3.OperationalError as e:
                text = str(e)
                return text if text.startswith(("no such table", "no such column")) else None
            return None

        try:
            missing = await db.execute_fn(compile_error)
        except sqlite3.Error:
            return None
        if key is not None:
            _COMPILE_ERRORS[key] = missing
    if missing is None:
        return None
    return ReportError(
        f"{query}: this database was written by an older version of datasette-perfetto ({missing}); ingest the "
        "trace again to run this query"
    )


# (database file, its size and modification time, canned query) -> what the query lacks there, or None.
_COMPILE_ERRORS: dict[tuple, str | None] = {}
_UNKNOWN = object()
