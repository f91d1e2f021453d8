"""Request handling shared by the tracks and details pages: database, permissions, ids, HTML or JSON.

Each page module has `compute(conn, schema, ...) -> dict` (the page's data, which is also its JSON) and a
template that renders that dict; this module does everything around them.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from typing import Any

from . import data
from .links import Urls

_DB = r"^/(?P<database>[^/]+)/-/"
TRACKS_ROUTE = _DB + r"tracks(?:\.(?P<format>json))?$"
DETAILS_ROUTE = _DB + r"(?P<kind>track|slice|thread|process)/(?P<ident>[^/]*?)(?:\.(?P<format>json))?$"

_INTEGER = re.compile(r"-?[0-9]{1,19}")
# What the id of each kind is called in messages (thread and process ids are utid/upid, not tid/pid).
ID_NAMES = {"track": "id", "slice": "id", "thread": "utid", "process": "upid"}


class PageNotFound(Exception):
    """An unknown row: raised inside a compute function, answered with a 404."""


class PageBadRequest(Exception):
    """A bad query parameter: answered with a 400."""


def parse_id(kind: str, text: str) -> int:
    """The integer in a details URL, or a 404 explaining why it is not one."""
    if not _INTEGER.fullmatch(text) or not -(2**63) <= int(text) < 2**63:
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise PageNotFound(f"Malformed {kind} {ID_NAMES[kind]} {shown!r}: expected an integer")
    return int(text)


async def tracks_page(request, datasette):
    from .tracks import compute

    return await _serve(
        request, datasette, "perfetto_tracks.html", lambda conn, schema: compute(conn, schema, request.args)
    )


async def details_page(request, datasette):
    from datasette.utils import tilde_decode

    from . import process, slice, thread, track

    kind = request.url_vars["kind"]
    module = {"track": track, "slice": slice, "thread": thread, "process": process}[kind]
    # Datasette redirects %-escapes to its ~-escapes; decoded, a malformed id is shown as it was typed.
    text = tilde_decode(request.url_vars["ident"])
    return await _serve(
        request,
        datasette,
        f"perfetto_{kind}.html",
        lambda conn, schema: module.compute(conn, schema, parse_id(kind, text)),
    )


async def _serve(
    request, datasette, template: str, compute: Callable[[sqlite3.Connection, data.Schema], dict[str, Any]]
):
    from datasette.utils import sqlite_timelimit, tilde_decode
    from datasette.utils.asgi import BadRequest, Forbidden, NotFound, Response

    from ..compat import can

    route = tilde_decode(request.url_vars["database"])
    try:
        db = datasette.get_database(route=route)
    except KeyError:
        raise NotFound(f"Database not found: {route}") from None
    actor = request.actor
    if not await can(datasette, actor, "view-instance") or not await can(datasette, actor, "view-database", db.name):
        raise Forbidden("You do not have permission to view this database")
    urls = Urls(datasette, db.name)

    def run(conn: sqlite3.Connection) -> dict[str, Any]:
        schema = data.Schema(conn)
        if not {"track", "slice", "thread", "process"} <= schema.names:
            raise PageBadRequest(f"{db.name} is not a trace database (no track, slice, thread and process tables)")
        with sqlite_timelimit(conn, datasette.setting("sql_time_limit_ms")):
            page = compute(conn, schema)
        page["database"] = db.name
        page["dimensions_available"] = schema.has_dimensions
        return page

    try:
        page = await db.execute_fn(run)
    except PageNotFound as e:
        raise NotFound(str(e)) from None
    except PageBadRequest as e:
        raise BadRequest(str(e)) from None
    except sqlite3.OperationalError as e:
        if "interrupted" not in str(e):
            raise
        from datasette.views.base import DatasetteError

        raise DatasetteError(  # noqa: B904 (a page-level error, not a failure of the handler)
            f"This page took longer than the {datasette.setting('sql_time_limit_ms')} ms query "
            "limit (the sql_time_limit_ms setting)",
            title="Query took too long",
            status=503,
        )
    if request.url_vars.get("format") == "json":
        return Response.json(page, default=repr)
    from ..report import format as fmt

    query = f"?{request.query_string}" if request.query_string else ""
    context = {
        **page,
        "u": urls,
        "json_url": f"{request.path}.json{query}",
        "duration": fmt.duration,
        "offset": fmt.offset,
        "count": fmt.count,
    }
    html = await datasette.render_template(template, context, request=request, view_name="perfetto_page")
    return Response.html(html)
