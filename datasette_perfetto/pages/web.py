"""The tracks list and details pages on the plugin's request pipeline (datasette_perfetto/web.py).

Each page module has `compute(conn, schema, ...) -> dict` (the page's data, which is also its JSON) and a
template that renders that dict; this module parses the URL and renders the result as HTML or JSON.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from typing import Any

from ..web import Page, PageError, serve
from . import data
from .links import Urls

_DB = r"^/(?P<database>[^/]+)/-/"
_JSON = r"(?:\.(?P<format>json))?$"  # HTML or JSON: these pages have no text rendering
TRACKS_ROUTE = _DB + r"tracks" + _JSON
DETAILS_ROUTE = _DB + r"(?P<kind>track|slice|thread|process)/(?P<ident>[^/]*?)" + _JSON

_INTEGER = re.compile(r"-?[0-9]{1,19}")
# What the id of each kind is called in messages (thread and process ids are utid/upid, not tid/pid).
ID_NAMES = {"track": "id", "slice": "id", "thread": "utid", "process": "upid"}

Compute = Callable[[sqlite3.Connection, data.Schema], dict[str, Any]]


def parse_id(kind: str, text: str) -> int:
    """The integer in a details URL, or a 404 explaining why it is not one."""
    if not _INTEGER.fullmatch(text) or not -(2**63) <= int(text) < 2**63:
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise PageError(f"Malformed {kind} {ID_NAMES[kind]} {shown!r}: expected an integer", status=404)
    return int(text)


async def tracks_page(request, datasette):
    from .tracks import compute

    return await serve(
        request,
        datasette,
        lambda page: _respond(page, "perfetto_tracks.html", lambda conn, schema: compute(conn, schema, request.args)),
    )


async def details_page(request, datasette):
    from datasette.utils import tilde_decode

    from . import process, slice, thread, track

    kind = request.url_vars["kind"]
    module = {"track": track, "slice": slice, "thread": thread, "process": process}[kind]
    # Datasette redirects %-escapes to its ~-escapes; decoded, a malformed id is shown as it was typed.
    text = tilde_decode(request.url_vars["ident"])
    return await serve(
        request,
        datasette,
        lambda page: _respond(
            page, f"perfetto_{kind}.html", lambda conn, schema: module.compute(conn, schema, parse_id(kind, text))
        ),
    )


async def _respond(page: Page, template: str, compute: Compute):
    from datasette.utils import path_with_replaced_args
    from datasette.utils.asgi import Response

    from ..report import format as fmt

    database = page.db.name

    def run(conn: sqlite3.Connection) -> dict[str, Any]:
        schema = data.Schema(conn)
        result = compute(conn, schema)
        result["database"] = database
        result["dimensions_available"] = schema.has_dimensions
        return result

    result = await page.run(run)
    request, datasette = page.request, page.datasette
    if "next" in result:  # a paged list: the next page's URL as Datasette's table JSON gives it
        result["next_url"] = (
            datasette.absolute_url(
                request, datasette.urls.path(path_with_replaced_args(request, {"offset": result["next"]}))
            )
            if result["next"] is not None
            else None
        )
    if page.format == "json":
        return Response.json(result, default=repr)
    query = f"?{request.query_string}" if request.query_string else ""
    context = {
        **result,
        "u": Urls(datasette, database),
        "json_url": f"{request.path}.json{query}",
        "duration": fmt.duration,
        "offset": fmt.offset,
        "count": fmt.count,
        "owner_word": data.owner_word,
    }
    return await page.render(template, context)
