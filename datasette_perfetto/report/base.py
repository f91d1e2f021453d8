"""The report machinery every view shares.

A view is a small object: which flags it takes, its SQL (built from the
scope, every value a bound parameter) and an emitter that fills its
`report.proto` message. `ReportRun` executes and records the SQL, so the
queries a page shows are exactly the ones it ran; text, HTML, JSON and SQL
are four renderings of the one `Report` message plus the view's tables.
"""

from __future__ import annotations

import functools
import json
import shlex
import sqlite3
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote_plus

from ..report_tables import nearest_rank
from . import format as fmt
from . import report_pb2 as pb
from .scope import FLAGS, ReportError, Scope, resolve_range, shown

# Nearest-rank index into n sorted values: the rule the import's precomputed percentiles follow.
percentile_index = nearest_rank

ALWAYS_ALLOWED = frozenset({"top"})
# Between the values of a repeatable flag in the context's scope map: dim=rank=1 & machine=2.
DIM_SEPARATOR = " & "

# A process that is not a placeholder: pid 0 without a name is a machine's idle (swapper)
# process, which every machine of a multi-machine trace has, or, in a JSON trace, where
# trace_processor puts events without a pid (one per input). `{p}` is the process table's alias.
REAL_PROCESS = "NOT ({p}.pid = 0 AND {p}.name IS NULL)"


@dataclass(frozen=True)
class Link:
    """Another report (or this one with other flags): a URL on the web, a command in a terminal."""

    noun: str
    view: str = ""
    params: tuple[tuple[str, str], ...] = ()
    format: str = ""  # "" (HTML / text) or "sql"
    database: str = ""  # "" this report's database; "baseline" the baseline's (diff reports)

    @classmethod
    def to(cls, noun: str, view: str = "", params: dict | None = None, format: str = "", database: str = "") -> Link:
        """`params`: flag -> value, or a list of values for a repeatable flag (dim), each its own parameter."""
        pairs = [
            (k, str(one))
            for k, v in (params or {}).items()
            if v is not None
            for one in (v if isinstance(v, (list, tuple)) else [v])
        ]
        return cls(noun, view, tuple(pairs), format, database)


@functools.lru_cache(maxsize=4096)
def _quoted(text: str) -> str:
    """A query string's key or value as urlencode quotes it: a page's thousands of links repeat the same few
    (its flags' values), and quoting is most of a link's cost."""
    return quote_plus(text)


class Linker:
    """Turns links into URLs (under a report base path) and CLI commands (for a database file)."""

    def __init__(self, url_base: str | None, db_arg: str, sql_url: Callable[[str, dict], str] | None = None):
        self.url_base = url_base  # e.g. "/trace/-/report"; None when there is no server
        self.db_arg = db_arg
        self.sql_url = sql_url  # (sql, params) -> editor URL, None when SQL is not allowed
        self.baseline: Linker | None = None  # diff reports: the baseline database's linker

    def url(self, link: Link) -> str:
        if link.database == "baseline" and self.baseline is not None:
            return self.baseline.url(replace(link, database=""))
        if self.url_base is None:
            return ""
        path = self.url_base + "".join(f"/{p}" for p in (link.noun, link.view) if p)
        if link.format:
            path += f".{link.format}"
        return path + (f"?{'&'.join(f'{_quoted(k)}={_quoted(v)}' for k, v in link.params)}" if link.params else "")

    def details(self, kind: str, ident: int | None) -> str | None:
        """The details page of a track, slice, thread or process of this database (pages/); None offline."""
        if self.url_base is None or ident is None:
            return None
        return f"{self.url_base.rsplit('/-/', 1)[0]}/-/{kind}/{ident}"

    def command(self, link: Link) -> str:
        if link.database == "baseline" and self.baseline is not None:
            return self.baseline.command(replace(link, database=""))
        parts = ["datasette", "perfetto", "report", self.db_arg]
        parts += [p for p in (link.noun, link.view) if p]
        for key, value in link.params:
            if key == "baseline" and self.baseline is not None:
                value = self.baseline.db_arg  # a database name on the web, its file in a command
            parts += [f"--{key.replace('_', '-')}", value]
        if link.format:
            parts += ["--format", link.format]
        command = " ".join(shlex.quote(p) for p in parts)
        if link.format == "sql" and not any(key == "baseline" for key, _ in link.params):
            # The RFC's `query` step for raw data: the report's own SQL, run as printed (a diff's SQL reads two
            # databases, so it stays SQL to read).
            command += " | " + " ".join(shlex.quote(p) for p in ["datasette", "perfetto", "query", self.db_arg, "-"])
        return command


@dataclass
class Cell:
    text: str
    link: Link | None = None
    title: str | None = None  # hover text in HTML
    css: str = ""  # an extra HTML class (diff deltas: colour on top of the +/- and added/removed text)
    href: str | None = None  # a details page (/{db}/-/slice/{id}, ...): Linker.details; HTML only
    subtitle: str = ""  # of a track, thread or process named: under the name in HTML, after it in text


def count_cell(n: int) -> Cell:
    """A count in short form (12.3K), the exact number on hover."""
    return Cell(fmt.count(n), title=str(n))


def duration_cell(ns: float) -> Cell:
    """A duration in short form (1.2ms), the exact nanoseconds on hover."""
    return Cell(fmt.duration(ns), title=f"{ns} ns")


# A figure the report did not compute (a ranking budget): a footnote says why.
LEFT_OUT = Cell("-", title="left out: see the footnote")

# The empty text of a table whose noun's data the trace does not have at all.
NOT_PRESENT = "(not present in this trace)"


@dataclass
class Table:
    title: str
    headers: Sequence[str]
    rows: list[list[Cell]]
    align: str = ""  # one of l/r per column; default: first left, others right
    empty: str = "(no rows)"

    def alignment(self) -> str:
        return self.align or "l" + "r" * (len(self.headers) - 1)


@dataclass
class Bar:
    label: str
    value: float
    note: str = ""


@dataclass
class Chart:
    title: str
    scale: str  # "linear" or "log": stated wherever the chart is drawn
    value_label: str
    bars: list[Bar]


@dataclass
class FlameBox:
    """One frame of a flame graph: where it sits as a fraction of the width, and its depth (row)."""

    x: float
    width: float
    depth: int
    label: str
    title: str  # hover text
    link: Link | None = None
    pruned: bool = False  # the summary of children hidden by max_lines

    @property
    def fill(self) -> str:
        """A warm colour that stays the same for a function everywhere (grey for pruned summaries)."""
        if self.pruned:
            return "#cccccc"
        h = zlib.crc32(self.label.encode("utf-8", "surrogatepass"))
        return f"hsl({h % 50}, {70 + h // 50 % 25}%, {58 + h // 1250 % 14}%)"


@dataclass
class Flame:
    """A flame graph (icicle: roots on top) of a call tree, drawn as SVG on the page."""

    title: str
    boxes: list[FlameBox]

    @property
    def depth_count(self) -> int:
        return max((b.depth for b in self.boxes), default=-1) + 1


@dataclass
class TraceInfo:
    name: str
    start: int
    end: int
    process_count: int
    os: str
    machine: str
    cpu_count: int

    @property
    def dur(self) -> int:
        return max(self.end - self.start, 0)


class ReportRun:
    """One report being computed: its connection, scope, trace facts and the queries it ran."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        scope: Scope,
        linker: Linker,
        noun: str,
        view: str,
        parent: ReportRun | None = None,
    ) -> None:
        self.conn = conn
        self.scope = scope
        self.linker = linker
        self.noun = noun
        self.view = view
        # A section of the overview shares its parent's query log and footnotes.
        self.queries: list[pb.Query] = parent.queries if parent else []
        self.footnotes: list[pb.Footnote] = parent.footnotes if parent else []
        self.next_steps: list[pb.NextStep] = []
        self.trace: TraceInfo = parent.trace if parent else self._trace_info()
        # Set for a side of a diff: rows are only joined, so per-row extras (percentiles) are skipped.
        self.lean: bool = parent.lean if parent else False
        # has_tables' answers: asked once per report, not once per row.
        self._tables: dict[tuple[str, ...], bool] = parent._tables if parent else {}
        if parent is None:
            self._outside_trace_footnotes()
            if scope.dim:
                self.check_dims(scope.dim)

    def dimension_values(self, name: str) -> list[sqlite3.Row]:
        """A dimension's distinct values in the database: value (as text), label and display name, by value."""
        return self.query(
            f"the values of dimension {name}",
            """SELECT coalesce(CAST(int_value AS TEXT), string_value) AS value, min(label) AS label,
       min(display_name) AS display_name
FROM track_dimension
WHERE name = :name
GROUP BY value_type, int_value, string_value
ORDER BY value_type, int_value, string_value""",
            {"name": name},
        )

    def dimension_names(self) -> list[str]:
        """The dimensions present in the database (none in a database ingested before they were)."""
        if not self.has_tables("dimension", "track_dimension"):
            return []
        return [
            r["name"]
            for r in self.query(
                "the dimensions present",
                "SELECT name FROM dimension WHERE name IN (SELECT name FROM track_dimension)\n"
                "ORDER BY is_well_known DESC, name",
            )
        ]

    def check_dims(self, dims: Sequence[tuple[str, str]], param: str = "dim") -> None:
        """Each (name, value) names a dimension present and one of its values (typed value, label or display
        name); a ReportError listing the dimensions, or that dimension's values, otherwise."""
        names = self.dimension_names()
        for name, value in dims:
            if name not in names:
                raise ReportError(
                    f"{param}: no dimension {shown(name)} in this trace; dimensions: {', '.join(names) or '(none)'}",
                    param,
                    names,
                )
            values = self.dimension_values(name)
            if not any(value in (v["value"], v["label"], v["display_name"]) for v in values):
                options = [dimension_value_text(v) for v in values]
                more = ", ..." if len(options) > VALUE_LIST_LIMIT else ""
                raise ReportError(
                    f"{param}: dimension {name} has no value {shown(value)}; its values: "
                    f"{', '.join(options[:VALUE_LIST_LIMIT])}{more}",
                    param,
                    [v["value"] for v in values],
                )

    def _outside_trace_footnotes(self) -> None:
        """A time range or ts outside the trace is answered, not refused (the same command runs on any trace,
        and on both sides of a diff): a footnote says the answer is empty, or the range partly so."""
        trace = f"the trace ({self.offset(self.trace.start)}-{self.offset(self.trace.end)})"
        if self.scope.time is not None:
            start, end = self.time_range()
            shown_range = f"time {self.offset(start)}-{self.offset(end)}"
            if end <= self.trace.start or start >= self.trace.end:
                self.footnote(
                    f"{shown_range} lies outside {trace}: the window is empty, nothing in it is counted",
                    self.link(self.noun, self.view, time=None),
                )
            elif start < self.trace.start or end > self.trace.end:
                self.footnote(
                    f"{shown_range} extends past {trace}: shares are of the whole range, the part outside is empty",
                    self.link(self.noun, self.view, time=None),
                )
        if self.scope.ts is not None:
            at = self.ts()
            if not self.trace.start <= at <= self.trace.end:
                self.footnote(
                    f"ts {self.offset(at)} lies outside {trace}: nothing is there",
                    self.link(self.noun, self.view, ts=None),
                )

    def section(self, noun: str, view: str, flags: frozenset[str]) -> ReportRun:
        """A run of another view inside this one, with only the flags that view takes."""
        scope = Scope.parse([(k, v) for k, v in self.scope.given if k in flags])
        return ReportRun(self.conn, scope, self.linker, noun, view, parent=self)

    def query(self, purpose: str, sql: str, params: dict[str, Any] | None = None) -> list[sqlite3.Row]:
        cursor = self._execute(purpose, sql, params)
        cursor.row_factory = sqlite3.Row
        return cursor.fetchall()

    def rows(self, purpose: str, sql: str, params: dict[str, Any] | None = None) -> Iterator[tuple]:
        """query() as plain tuples, read as they come: for many rows that Python goes through once."""
        cursor = self._execute(purpose, sql, params)
        # Whatever the connection's own factory (Datasette's is sqlite3.Row): a Row costs an object more per row
        # and unpacks through the iterator protocol (40 of a compare by thread's 500 ms on 100,000 rows).
        cursor.row_factory = None
        return cursor

    def _execute(self, purpose: str, sql: str, params: dict[str, Any] | None) -> sqlite3.Cursor:
        """Runs a query of this report and records it (the SQL shown is the SQL run)."""
        params = params or {}
        q = pb.Query(purpose=purpose, sql=sql.strip())
        for key, value in params.items():
            q.params[key] = "" if value is None else str(value)
        if self.linker.sql_url is not None:
            q.url = self.linker.sql_url(q.sql, params)
        self.queries.append(q)
        return self.conn.execute(sql, params)

    def value(self, purpose: str, sql: str, params: dict[str, Any] | None = None) -> Any:
        rows = self.query(purpose, sql, params)
        return rows[0][0] if rows else None

    def has_tables(self, *names: str) -> bool:
        """Whether the database has these tables or views (a profile table may not exist before its importer)."""
        if names in self._tables:
            return self._tables[names]
        found = self.value(
            "are the tables there",
            "SELECT count(*) FROM sqlite_master WHERE name IN (SELECT value FROM json_each(:names))",
            {"names": json.dumps(list(names))},
        )
        self._tables[names] = found == len(names)
        return self._tables[names]

    def has_columns(self, table: str, *columns: str) -> bool:
        """Whether `table` has these columns (a database from an older import may lack the newer ones)."""
        found = self.value(
            "are the columns there",
            "SELECT count(*) FROM pragma_table_info(:table) WHERE name IN (SELECT value FROM json_each(:columns))",
            {"table": table, "columns": json.dumps(list(columns))},
        )
        return found == len(columns)

    def _trace_info(self) -> TraceInfo:
        row = self.query(
            "trace context",
            f"""
            SELECT (SELECT group_concat(name, ', ') FROM trace_file WHERE parent_id IS NULL) AS name,
                   (SELECT start_ts FROM trace_bounds) AS start_ts,
                   (SELECT end_ts FROM trace_bounds) AS end_ts,
                   (SELECT count(*) FROM process p WHERE {REAL_PROCESS.format(p="p")}) AS processes,
                   (SELECT sysname || ' ' || coalesce(release, '') FROM machine WHERE id = 0) AS os,
                   (SELECT arch FROM machine WHERE id = 0) AS machine,
                   (SELECT count(*) FROM cpu) AS cpus""",
        )[0]
        return TraceInfo(
            row["name"] or "trace",
            row["start_ts"] or 0,
            row["end_ts"] or 0,
            row["processes"] or 0,
            (row["os"] or "").strip(),
            row["machine"] or "",
            row["cpus"] or 0,
        )

    # -- scope helpers -------------------------------------------------------------
    def time_range(self) -> tuple[int, int]:
        """The [start, end) the report covers: --time, else the whole trace."""
        if self.scope.time is None:
            return self.trace.start, self.trace.end
        return resolve_range(self.scope.time, self.trace.start)

    def outside_range_ns(self, reach: int = 0) -> int:
        """How much of the trace lies before the time range and after its end less `reach` (what lies outside it,
        for instances up to `reach` long)."""
        start, end = self.time_range()
        return max(start - self.trace.start, 0) + max(self.trace.end - max(start, end - reach), 0)

    def outside_is_shorter(self) -> bool:
        """Whether the trace outside the time range is shorter than the range: counting what lies outside it and
        subtracting from the whole trace's figures then reads less."""
        if self.scope.time is None:
            return False
        start, end = self.time_range()
        return self.outside_range_ns() < min(end, self.trace.end) - max(start, self.trace.start)

    def range_dur(self) -> int:
        start, end = self.time_range()
        return max(end - start, 1)

    def ts(self) -> int:
        if self.scope.ts is None:
            raise ReportError(f"{self.noun} {self.view} needs ts (a point in time, e.g. ts=2.734s)", "ts")
        return self.scope.ts.resolve(self.trace.start)

    def offset(self, ts: int | None) -> str:
        return fmt.offset(ts, self.trace.start)

    # -- output contract --------------------------------------------------------------
    def link(self, noun: str, view: str = "", **changes: str | None) -> Link:
        """A link to (noun, view) keeping this report's scope, with some flags changed."""
        return Link.to(noun, view, self.scope.with_params(**changes))

    def footnote(self, text: str, link: Link) -> None:
        self.footnotes.append(pb.Footnote(text=text, url=self.linker.url(link), command=self.linker.command(link)))

    def next_step(self, label: str, link: Link) -> None:
        self.next_steps.append(pb.NextStep(label=label, url=self.linker.url(link), command=self.linker.command(link)))

    def truncation(self, shown: int, total: int, what: str) -> None:
        """The footnote for rows hidden by top, linking to the same report with a bigger top."""
        if total > shown:
            bigger = min(max(self.scope.top * 5, 50), 10_000)
            self.footnote(
                f"{total - shown} more {what} below top {self.scope.top}; rerun with top={bigger}",
                self.link(self.noun, self.view, top=str(bigger)),
            )

    def context(self) -> pb.Context:
        start, end = self.time_range() if self.scope.time else (self.trace.start, self.trace.end)
        c = pb.Context(
            trace=self.trace.name,
            trace_start_ts=self.trace.start,
            trace_end_ts=self.trace.end,
            trace_dur=self.trace.dur,
            process_count=self.trace.process_count,
            os=self.trace.os,
            machine=self.trace.machine,
            range_start_ts=start,
            range_end_ts=end,
            range="full trace" if self.scope.time is None else f"{self.offset(start)}-{self.offset(end)}",
        )
        for key, value in self.scope.to_params().items():
            # A repeatable flag's values (dim) in one entry, as the header shows them.
            c.scope[key] = value if isinstance(value, str) else DIM_SEPARATOR.join(value)
        return c


# An unknown dimension value's error lists at most this many values.
VALUE_LIST_LIMIT = 50


def dimension_value_text(v: sqlite3.Row) -> str:
    """A dimension value as an error lists it: 3 (rank 3), or the label alone when it is the value."""
    return v["value"] if v["label"] in (None, v["value"]) else f"{v['value']} ({v['label']})"


class View:
    noun: str = ""
    name: str = ""
    title: str = ""
    description: str = ""
    result_field: str = ""  # the Report oneof field this view fills
    flags: frozenset[str] = frozenset()  # flags it accepts besides top
    required: tuple[str, ...] = ()
    sorts: tuple[str, ...] = ()  # valid sort keys, default first
    uses_top = False  # whether top sizes its output: links from other views carry top only then
    # The view's main query with every flag an optional :named parameter (empty = not set),
    # registered as the canned query `{noun}_{view}` so it can be shared and edited in Datasette.
    canned_sql: str = ""

    @property
    def canned_name(self) -> str:
        return f"{self.noun}_{self.name}".replace("-", "_")

    def check(self, scope: Scope) -> None:
        allowed = self.flags | ALWAYS_ALLOWED
        for key, _ in scope.given:
            if key not in allowed:
                raise ReportError(
                    f"{self.label()} does not take {key}; it takes: {', '.join(sorted(allowed))}", key, sorted(allowed)
                )
        for key in self.required:
            if getattr(scope, key) is None:
                raise ReportError(f"{self.label()} needs {key}: {FLAGS[key]}", key)
        if scope.sort is not None and scope.sort not in self.sorts:
            raise ReportError(
                f"sort: {shown(scope.sort)} is not a sort key of {self.label()}; use one of "
                f"{', '.join(self.sorts) or '(none)'}",
                "sort",
                self.sorts,
            )

    def label(self) -> str:
        return f"{self.noun} {self.name}".strip() or "overview"

    def sort_key(self, scope: Scope) -> str:
        return scope.sort or (self.sorts[0] if self.sorts else "")

    def has_data(self, run: ReportRun) -> bool:
        """Whether the trace has this noun's data at all (the overview skips it otherwise)."""
        return True

    def compute(self, run: ReportRun, out: Any) -> None:
        """Fills `out` (this view's message in the Report) from the database."""
        raise NotImplementedError

    def tables(self, msg: Any, run: ReportRun) -> list[Table]:
        return []

    def charts(self, msg: Any, run: ReportRun) -> list[Chart]:
        return []

    def flames(self, msg: Any, run: ReportRun) -> list[Flame]:
        """Flame graphs, HTML only (text and JSON carry the same tree as a table / nodes)."""
        return []


@dataclass
class ReportResult:
    """One report, computed: its message, the view that made it and the run that recorded its queries."""

    report: pb.Report
    view: View
    run: ReportRun

    def result_message(self) -> Any:
        return getattr(self.report, self.view.result_field)
