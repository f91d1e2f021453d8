"""URLs of the tracks and details pages, and the `render_cell` links to them from Datasette's tables."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

KINDS = ("track", "slice", "thread", "process")

# Columns that name the same kind of row wherever they appear, SQL results included.
_ANY_TABLE = {
    "track_id": "track",
    "slice_id": "slice",
    "utid": "thread",
    "upid": "process",
    "parent_upid": "process",
    "declaring_track_id": "track",
    "max_slice_id": "slice",
}
_TRACK_TABLES = (
    "track",
    "thread_track",
    "process_track",
    "counter_track",
    "thread_counter_track",
    "process_counter_track",
    "cpu_counter_track",
    "gpu_counter_track",
    "cpu_track",
    "state_track",
)
# Columns whose meaning depends on the table: `id` and `parent_id` of slices and tracks, flow ends.
_BY_TABLE = {
    **{(t, c): "track" for t in _TRACK_TABLES for c in ("id", "parent_id")},
    ("slice", "id"): "slice",
    ("slices", "id"): "slice",
    ("slice", "parent_id"): "slice",
    ("slices", "parent_id"): "slice",
    ("flow", "slice_out"): "slice",
    ("flow", "slice_in"): "slice",
    ("thread", "id"): "thread",
    ("process", "id"): "process",
}
# Every column name the hook can link, for a one-lookup early exit on all other cells.
LINK_COLUMNS = frozenset(_ANY_TABLE) | frozenset(c for _, c in _BY_TABLE)


class Urls:
    """Page URLs for one database (base_url and the database's route encoding included)."""

    def __init__(self, datasette, database: str) -> None:
        self.datasette = datasette
        self.database = database
        self.root = datasette.urls.database(database)

    def details(self, kind: str, ident: Any) -> str | None:
        if ident is None:
            return None
        return f"{self.root}/-/{kind}/{ident}"

    def track(self, ident: Any) -> str | None:
        return self.details("track", ident)

    def slice(self, ident: Any) -> str | None:
        return self.details("slice", ident)

    def thread(self, ident: Any) -> str | None:
        return self.details("thread", ident)

    def process(self, ident: Any) -> str | None:
        return self.details("process", ident)

    def report(self, noun: str, view: str, params: dict[str, str]) -> str:
        """A report view of this database under those flags (pages/report_links.py picks them)."""
        path = f"{self.root}/-/report/{noun}/{view}"
        return path + (f"?{urlencode(params)}" if params else "")

    def tracks(self, **params: Any) -> str:
        given = {k: v for k, v in params.items() if v not in (None, "")}
        return f"{self.root}/-/tracks" + (f"?{urlencode(given)}" if given else "")

    def row(self, table: str, ident: Any) -> str | None:
        if ident is None:
            return None
        return f"{self.datasette.urls.table(self.database, table)}/{ident}"

    def table(self, table: str) -> str:
        return self.datasette.urls.table(self.database, table)


def cell_link(datasette, database: str | None, table: str | None, column: str, value: Any):
    """A link to the details page for an id cell of a trace database, or None to leave the cell alone.

    Runs for every cell Datasette renders, so the common case (a column it never links) is one set lookup.
    """
    if column not in LINK_COLUMNS or type(value) is not int or database is None:
        return None
    kind = _BY_TABLE.get((table, column)) if table is not None else None
    kind = kind or _ANY_TABLE.get(column)
    if kind is None:
        return None
    db = datasette.databases.get(database)
    if db is None:
        return None
    from ..metadata import is_trace_database

    if not is_trace_database(db):
        return None
    from markupsafe import Markup, escape

    href = f"{datasette.urls.database(database)}/-/{kind}/{value}"
    return Markup(f'<a href="{escape(href)}" title="{kind} details">{value}</a>')
