"""The report's canned queries as Datasette serves them (`/{db}/slices_table?...`): their flags checked as the
report checks them, once Datasette has answered (an asgi_wrapper: Datasette runs a canned query itself)."""

from __future__ import annotations

import sqlite3
from typing import Any
from urllib.parse import parse_qsl

from ..web import PageError, error_response
from .canned import CANNED_FLAGS, flag_error
from .scope import ReportError


def checked_flags(datasette: Any, app: Any) -> Any:
    """ASGI middleware: a report canned query whose flags the report would refuse is answered as the report
    answers it (a 400 naming the flag, a JSON error object for .json), where SQLite could only say
    "user-defined function raised exception" or, for a flag no function reads, give rows for a wrong value.
    Only once Datasette has answered it (so its permission checks come first; a 401/403/404 is kept)."""

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
