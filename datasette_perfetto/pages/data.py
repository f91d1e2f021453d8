"""The SQL the tracks and details pages share: track summaries, owners, event counts, args, dimensions.

Everything here reads one connection and returns plain dicts, so each page's
result is both its JSON and its template's input. Tables that only newer
databases have (`track_dimension`, `dimension`, `track_subtitle`,
`report_track_stats`, `report_track_event_cell`) are looked up first and used only when present: a page on
an older database shows everything else.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

DIMENSION_COLUMNS = (
    "track_id",
    "name",
    "value_type",
    "int_value",
    "string_value",
    "display_name",
    "declaring_track_id",
    "is_inherited",
    "is_well_known",
    "label",
)

# machine, gpu, cpu, process, thread, then custom names alphabetically: the subtitle order.
DIMENSION_ORDER = (
    "CASE d.name WHEN 'machine' THEN 0 WHEN 'gpu' THEN 1 WHEN 'cpu' THEN 2 WHEN 'process' THEN 3 "
    "WHEN 'thread' THEN 4 ELSE 5 END, d.name"
)

# track → its thread → the process of the track or of its thread. A track's title is its name, else its
# thread's or process's name (thread tracks are often unnamed). Joined on id (= utid, upid): the row id, where
# utid and upid are computed columns no index can serve.
TRACK_FROM = """FROM track tr
LEFT JOIN thread th ON th.id = tr.utid
LEFT JOIN process p ON p.id = coalesce(tr.upid, th.upid)"""

# TRACK_FROM for a list of track ids (a JSON array bound as :ids), in its order (page.key): driven by the
# list, so each track is a rowid lookup whatever the planner guesses about json_each.
_PAGE_FROM = """FROM json_each(:ids) page
CROSS JOIN track tr ON tr.id = page.value
LEFT JOIN thread th ON th.id = tr.utid
LEFT JOIN process p ON p.id = coalesce(tr.upid, th.upid)"""

# The CPU or GPU a track belongs to is one of its trace_processor dimension args (the cpu_counter_track and
# gpu_counter_track views' join).
CPU_SQL = "(SELECT a.int_value FROM args a WHERE a.arg_set_id = tr.dimension_arg_set_id AND a.key = 'cpu')"
GPU_SQL = "(SELECT a.int_value FROM args a WHERE a.arg_set_id = tr.dimension_arg_set_id AND a.key = 'gpu')"


class Schema:
    """Which tables this database has, and the columns of the dimension tables (older or newer layouts)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
        self.names = {r[0] for r in rows}
        self.dimension_columns = self._columns(conn, "track_dimension")
        self.registry_columns = self._columns(conn, "dimension")
        self.subtitle_columns = self._columns(conn, "track_subtitle")

    def _columns(self, conn: sqlite3.Connection, table: str) -> set[str]:
        if table not in self.names:
            return set()
        return {r[1] for r in conn.execute(f"PRAGMA table_info([{table}])")}

    @property
    def has_dimensions(self) -> bool:
        # Usable only with the columns a page cannot do without; the rest may be missing (shown empty).
        return {"track_id", "name"} <= self.dimension_columns

    @property
    def has_subtitles(self) -> bool:
        return {"track_id", "subtitle"} <= self.subtitle_columns

    @property
    def has_track_stats(self) -> bool:
        return "report_track_stats" in self.names

    @property
    def has_registry(self) -> bool:
        return {"name", "label_template"} <= self.registry_columns


def rows(conn: sqlite3.Connection, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    cursor = conn.execute(sql, params or {})
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r)) for r in cursor.fetchall()]


def one(conn: sqlite3.Connection, sql: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
    found = rows(conn, sql, params)
    return found[0] if found else None


def ancestors_cte(table: str, max_depth: int) -> str:
    """`WITH RECURSIVE chain(id, depth)`: the ancestors of the `table` row :id through parent_id (depth 1 is
    its parent), at most max_depth up, a bound that only guards against a parent cycle in bad data."""
    return f"""WITH RECURSIVE chain(id, depth) AS (
  SELECT parent_id, 1 FROM {table} WHERE id = :id AND parent_id IS NOT NULL
  UNION ALL
  SELECT up.parent_id, chain.depth + 1 FROM {table} up JOIN chain ON up.id = chain.id
  WHERE up.parent_id IS NOT NULL AND chain.depth < {max_depth}
)"""


def trace_start(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT start_ts FROM trace_bounds").fetchone()
    return row[0] if row and row[0] is not None else 0


# -- tracks --------------------------------------------------------------------------------------


# Runs one query of a page: (purpose, sql, params) -> rows (dicts or sqlite3.Row). The report's records each query
# it runs (ReportRun.query).
Execute = Callable[[str, str, dict[str, Any]], Iterable[Any]]


@dataclass
class TrackQuery:
    """A list of tracks: which (a WHERE over TRACK_FROM's aliases), in which order, how many."""

    where: str = ""
    params: dict[str, Any] | None = None
    order: str = "tr.id"
    limit: int = 100
    offset: int = 0
    count_range: tuple[int, int] | None = None  # count only the events that start in [start, end)
    min_count: int | None = None  # only tracks with at least this many events (counted as above)
    count_outside: bool = False  # count_range's events as the track's total less those outside it


@dataclass(frozen=True)
class TrackCells:
    """report_track_event_cell's grid where it was filled (large traces): cells `width` wide from the trace start
    `t0`. A track's events before a point x are the running total of the cells before x's cell plus its events
    in that cell before x, or the total through x's cell less its events there from x on, whichever part of the
    cell is shorter: two index lookups and at most half a cell of events, however long the range."""

    t0: int
    width: int

    def _cell(self, x: int) -> tuple[int, int]:
        """(the cell holding x, its start); before the trace, the first cell."""
        cell = max(x - self.t0, 0) // self.width
        return cell, self.t0 + cell * self.width

    def params(self, label: str, x: int) -> dict[str, int]:
        """The point x as the SQL below reads it, its parameters prefixed with `label`."""
        cell, start = self._cell(x)
        return {label: x, f"{label}_cell": cell, f"{label}_cell_start": start, f"{label}_cell_end": start + self.width}

    def starting_before(self, label: str, x: int, table: str, alias: str) -> str:
        """The events of track tr (of its event_type's `table`) starting before the point `label` (at x)."""
        a = alias
        in_table = f"(SELECT count(*) FROM {table} {a} WHERE {a}.track_id = tr.id AND {a}.ts >= {{}} AND {a}.ts < {{}})"
        if x - self._cell(x)[1] <= self.width // 2:
            cells, rest = f":{label}_cell", "+ " + in_table.format(f":{label}_cell_start", f":{label}")
        else:
            cells, rest = f":{label}_cell + 1", "- " + in_table.format(f":{label}", f":{label}_cell_end")
        return f"({_running_total('cum_starting', cells)} {rest})"

    @staticmethod
    def finished_before(label: str) -> str:
        """The finished slices of track tr ending before the point `label` (ts + dur < it): those of the cells
        before its cell, and those ending in that cell before it (found from the cell's start less the longest
        of its slices that end in it)."""
        reach = (
            "coalesce((SELECT c.end_reach FROM report_track_event_cell c "
            f"WHERE c.track_id = tr.id AND c.cell = :{label}_cell), 0)"
        )
        return (
            f"({_running_total('cum_ending', f':{label}_cell')} + (SELECT count(*) FROM slice s "
            f"WHERE s.track_id = tr.id AND s.ts >= :{label}_cell_start - {reach} AND s.ts < :{label} "
            f"AND s.dur >= 0 AND s.ts + s.dur >= :{label}_cell_start AND s.ts + s.dur < :{label}))"
        )


def _running_total(column: str, before: str) -> str:
    """report_track_event_cell's running total `column` of track tr over the cells before `before`."""
    return (
        f"coalesce((SELECT c.{column} FROM report_track_event_cell c WHERE c.track_id = tr.id "
        f"AND c.cell < {before} ORDER BY c.cell DESC LIMIT 1), 0)"
    )


def track_cells(has_table: bool, execute: Execute) -> TrackCells | None:
    """report_track_event_cell's grid, when the database has the table (`has_table`, as the caller knows it) and
    it was filled."""
    if not has_table:
        return None
    found = list(
        execute(
            "the per track event cells, where kept",
            "SELECT g.name_cell_dur AS width, b.start_ts AS t0 FROM report_grid g, trace_bounds b "
            "WHERE EXISTS (SELECT 1 FROM report_track_event_cell)",
            {},
        )
    )
    return TrackCells(found[0]["t0"], found[0]["width"]) if found and found[0]["width"] else None


def _event_count_sql(
    schema: Schema,
    count_range: tuple[int, int] | None = None,
    outside: bool = False,
    cells: TrackCells | None = None,
) -> tuple[str, str]:
    """(expression, join) for a track's event count: precomputed when the report's table exists and the whole
    trace is counted, else for a range (:range_start/:range_end bound) from the per track cells where kept
    (`cells`: TrackCells.params bound as range_start and range_end), else counted on the (track_id, ts)
    indexes; with `outside` (a range over most of the trace), the precomputed count less those before and
    after it."""
    stats = "\nLEFT JOIN report_track_stats st ON st.track_id = tr.id"
    if count_range is None and schema.has_track_stats:
        return "coalesce(st.event_count, 0)", stats
    outside = outside and count_range is not None and schema.has_track_stats and cells is None
    if cells is not None and count_range is not None:
        start, end = count_range
        counts = [
            f"{cells.starting_before('range_end', end, table, a)}"
            f" - {cells.starting_before('range_start', start, table, a)}"
            for table, a in _EVENT_TABLES
        ]
    elif outside:
        counts = [
            f"(SELECT count(*) FROM {table} {a} WHERE {a}.track_id = tr.id AND {a}.ts < :range_start)"
            f" + (SELECT count(*) FROM {table} {a} WHERE {a}.track_id = tr.id AND {a}.ts >= :range_end)"
            for table, a in _EVENT_TABLES
        ]
    else:
        in_range = " AND {a}.ts >= :range_start AND {a}.ts < :range_end" if count_range is not None else ""
        counts = [
            f"(SELECT count(*) FROM {table} {a} WHERE {a}.track_id = tr.id{in_range.format(a=a)})"
            for table, a in _EVENT_TABLES
        ]
    whens = "".join(f"\n    WHEN '{table}' THEN {count}" for (table, _), count in zip(_EVENT_TABLES, counts))
    case = f"CASE tr.event_type{whens}\n    ELSE 0 END"
    if outside:
        return f"coalesce(st.event_count, 0) - {case}", stats
    return case, ""


# A track's events by its event_type: the table and its alias.
_EVENT_TABLES = (("slice", "s"), ("counter", "c"), ("state", "x"))


def track_rows(
    conn: sqlite3.Connection, schema: Schema, query: TrackQuery, execute: Execute | None = None
) -> tuple[list[dict[str, Any]], int]:
    """One page of track summaries (id, name, title, subtitle, type, owner, CPU/GPU, event count) and the total
    matched: the one tracks list, of the tracks page, the details pages and the report's tracks table.

    The page's ids are chosen first (sorting reads only the sort keys), then only those tracks get their
    per-track lookups (event counts, CPU/GPU dimension args, subtitles). `execute` runs each query (default:
    on `conn`)."""

    def run(purpose: str, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        found = execute(purpose, sql, params) if execute else rows(conn, sql, params)
        return [dict(r) for r in found]

    params = dict(query.params or {})
    cells = track_cells("report_track_event_cell" in schema.names, run) if query.count_range is not None else None
    count_sql, stats_join = _event_count_sql(schema, query.count_range, query.count_outside, cells)
    range_params: dict[str, int] = {}
    if query.count_range is not None:
        start, end = query.count_range
        range_params = {"range_start": start, "range_end": end}
        if cells is not None:
            range_params.update({**cells.params("range_start", start), **cells.params("range_end", end)})
    params.update(range_params)
    terms = [query.where] if query.where else []
    if query.min_count is not None:
        terms.append(f"{count_sql} >= :min_count")
        params["min_count"] = query.min_count
    counted = query.min_count is not None or "event_count" in query.order
    join = stats_join if counted else ""
    where = "\nWHERE " + " AND ".join(f"({t})" if len(terms) > 1 else t for t in terms) if terms else ""
    total = run("tracks in scope", f"SELECT count(*) AS total {TRACK_FROM}{join}{where}", params)[0]["total"]
    page_ids = [
        r["id"]
        for r in run(
            "one page of them, by the sort key",
            f"""SELECT tr.id, coalesce(tr.name, th.name, p.name) AS title,
       {count_sql if counted else 0} AS event_count
{TRACK_FROM}{join}{where}
ORDER BY {query.order}
LIMIT :page_limit OFFSET :page_offset""",
            {**params, "page_limit": query.limit, "page_offset": query.offset},
        )
    ]
    if not page_ids:
        return [], total
    ids: dict[str, Any] = {"ids": _json_ids(page_ids), **range_params}
    found = run(
        "their titles, owners and event counts",
        f"""SELECT tr.id, tr.name, coalesce(tr.name, th.name, p.name) AS title, tr.type, tr.event_type,
       tr.parent_id, tr.utid, th.tid, th.name AS thread_name, coalesce(tr.upid, th.upid) AS upid, p.pid,
       p.name AS process_name, {CPU_SQL} AS cpu, {GPU_SQL} AS gpu,
       {count_sql} AS event_count
{_PAGE_FROM}{stats_join}
ORDER BY page.key""",
        ids,
    )
    # Subtitles in one lookup for the page rather than a join: one pass even if track_subtitle has no index.
    subtitles: dict[int, str] = {}
    if schema.has_subtitles:
        subtitles = {
            r["track_id"]: r["subtitle"]
            for r in run(
                "their subtitles",
                "SELECT track_id, subtitle FROM track_subtitle WHERE track_id IN (SELECT value FROM json_each(:ids))",
                {"ids": ids["ids"]},
            )
        }
    for r in found:
        r["subtitle"] = subtitles.get(r["id"])
    return found, total


def owner_word(kind: str, name: str | None) -> str:
    """The word that says what an owner is ("thread ", "process "), or "" when its name already starts with it
    (a JSON trace's thread named "thread 32628 (python)" is not "thread thread 32628 (python)")."""
    if name and name.lower().startswith(kind + " "):
        return ""
    return kind + " "


def owner_name(kind: str, name: str | None) -> str:
    """'thread CrBrowserMain', 'thread 32628 (python)' (not doubled), 'process ?' (no name)."""
    return owner_word(kind, name) + (name or "?")


def track_title(name: str | None, thread: str | None, process: str | None, track_type: str | None) -> str:
    """A track's title as every page shows it: its name, else its thread's or process's name (the `title`
    column of the queries here), else "(unnamed {type})"."""
    return name or thread or process or f"(unnamed {track_type or 'track'})"


def track_titles(conn: sqlite3.Connection, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """{track id: {id, title, type}} for tracks named elsewhere on a page (parents, declaring tracks)."""
    wanted = sorted({i for i in ids if i is not None})
    if not wanted:
        return {}
    found = rows(
        conn,
        f"""SELECT tr.id, coalesce(tr.name, th.name, p.name) AS title, tr.type
{_PAGE_FROM}""",
        {"ids": _json_ids(wanted)},
    )
    return {r["id"]: r for r in found}


def track_event_count(conn: sqlite3.Connection, schema: Schema, track_id: int) -> int:
    count_sql, stats_join = _event_count_sql(schema)
    return conn.execute(f"SELECT {count_sql} FROM track tr{stats_join} WHERE tr.id = :id", {"id": track_id}).fetchone()[
        0
    ]


def subtitle(conn: sqlite3.Connection, schema: Schema, track_id: int) -> str | None:
    if not schema.has_subtitles:
        return None
    row = conn.execute("SELECT subtitle FROM track_subtitle WHERE track_id = :id", {"id": track_id}).fetchone()
    return row[0] if row else None


def trace_file_name(conn: sqlite3.Connection, schema: Schema, trace_id: int | None) -> str | None:
    if trace_id is None or "trace_file" not in schema.names:
        return None
    row = conn.execute("SELECT name FROM trace_file WHERE id = :id", {"id": trace_id}).fetchone()
    return row[0] if row else None


def machine_name(conn: sqlite3.Connection, schema: Schema, machine_id: int | None) -> str | None:
    if machine_id is None or "machine" not in schema.names:
        return None
    row = conn.execute("SELECT name FROM machine WHERE id = :id", {"id": machine_id}).fetchone()
    return row[0] if row else None


def args(conn: sqlite3.Connection, arg_set_id: int | None) -> list[dict[str, Any]]:
    if arg_set_id is None:
        return []
    return rows(
        conn,
        "SELECT key, value_type, display_value AS value FROM args WHERE arg_set_id = :arg_set_id ORDER BY id",
        {"arg_set_id": arg_set_id},
    )


def thread_and_process(conn: sqlite3.Connection, utid: int | None, upid: int | None) -> dict[str, Any]:
    """The owner of a track or slice: {utid, tid, thread_name, upid, pid, process_name} (None where unknown)."""
    out: dict[str, Any] = {
        "utid": utid,
        "tid": None,
        "thread_name": None,
        "upid": upid,
        "pid": None,
        "process_name": None,
    }
    if utid is not None:
        row = one(conn, "SELECT tid, name, upid FROM thread WHERE id = :utid", {"utid": utid})
        if row:
            out.update(tid=row["tid"], thread_name=row["name"])
            if out["upid"] is None:
                out["upid"] = row["upid"]
    if out["upid"] is not None:
        row = one(conn, "SELECT pid, name FROM process WHERE id = :upid", {"upid": out["upid"]})
        if row:
            out.update(pid=row["pid"], process_name=row["name"])
    return out


# -- dimensions ----------------------------------------------------------------------------------


def _dimension_select(schema: Schema, columns: tuple[str, ...]) -> str:
    """The columns asked for, NULL where this database's track_dimension lacks one, plus the label template."""
    cols = [f"d.{c}" if c in schema.dimension_columns else f"NULL AS {c}" for c in columns]
    cols.append("reg.label_template" if schema.has_registry else "NULL AS label_template")
    return ", ".join(cols)


def _registry_join(schema: Schema) -> str:
    return "\nLEFT JOIN dimension reg ON reg.name = d.name" if schema.has_registry else ""


def track_dimensions(conn: sqlite3.Connection, schema: Schema, track_id: int) -> list[dict[str, Any]] | None:
    """The effective dimensions of one track, in subtitle order; None when the database has none recorded."""
    if not schema.has_dimensions:
        return None
    found = rows(
        conn,
        f"""SELECT {_dimension_select(schema, DIMENSION_COLUMNS)}
FROM track_dimension d{_registry_join(schema)}
WHERE d.track_id = :track_id
ORDER BY {DIMENSION_ORDER}""",
        {"track_id": track_id},
    )
    return _with_declaring_tracks(conn, found)


# A value seen on several tracks: grouped by everything but the track and where it was declared.
_GROUP_COLUMNS = ("name", "value_type", "int_value", "string_value", "display_name", "is_well_known", "label")


def grouped_dimensions(
    conn: sqlite3.Connection, schema: Schema, track_ids_sql: str, params: dict[str, Any], limit: int = 500
) -> list[dict[str, Any]] | None:
    """The effective dimensions over a set of tracks (a thread's or a process's): one row per distinct value,
    with how many of the tracks carry it, on how many it is inherited, and where it was declared: one
    declaring track (declaring_track_id), or several (declaring_count; self_declared says how many of the
    tracks declared it themselves, as synthesized well-known dimensions are).

    `track_ids_sql` is a subquery of track ids written by the caller (never user text); values are in params."""
    if not schema.has_dimensions:
        return None
    cols = schema.dimension_columns
    group = ", ".join(f"d.{c}" for c in _GROUP_COLUMNS if c in cols)
    inherited = "sum(coalesce(d.is_inherited, 0))" if "is_inherited" in cols else "NULL"
    if "declaring_track_id" in cols:
        declaring = (
            "CASE WHEN count(DISTINCT d.declaring_track_id) = 1 THEN min(d.declaring_track_id) END "
            "AS declaring_track_id, count(DISTINCT d.declaring_track_id) AS declaring_count, "
            "sum(d.declaring_track_id = d.track_id) AS self_declared"
        )
    else:
        declaring = "NULL AS declaring_track_id, 0 AS declaring_count, 0 AS self_declared"
    found = rows(
        conn,
        f"""SELECT {_dimension_select(schema, _GROUP_COLUMNS)}, {declaring},
       count(*) AS track_count, {inherited} AS inherited_count
FROM track_dimension d{_registry_join(schema)}
WHERE d.track_id IN ({track_ids_sql})
GROUP BY {group}
ORDER BY {DIMENSION_ORDER}, value_type, int_value, string_value
LIMIT :dimension_limit""",
        {**params, "dimension_limit": limit},
    )
    return _with_declaring_tracks(conn, found)


def _with_declaring_tracks(conn: sqlite3.Connection, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    titles = track_titles(conn, (r["declaring_track_id"] for r in found))
    for r in found:
        r["value"] = r["int_value"] if r["value_type"] == "int" else r["string_value"]
        if r["value"] is None:  # an untyped row: whichever value is set
            r["value"] = r["string_value"] if r["int_value"] is None else r["int_value"]
        declaring = titles.get(r["declaring_track_id"])
        r["declaring_track_title"] = declaring["title"] if declaring else None
        r["declaring_track_type"] = declaring["type"] if declaring else None
    return found


def _json_ids(ids: list[int]) -> str:
    return json.dumps(ids)
