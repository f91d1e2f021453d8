"""Scope flags as SQL, in the two forms the report needs: terms with bound parameters for the queries
a report runs (`Where`), and optional terms for the canned queries, where an empty parameter means
"not set". An owner flag's term is written once, in FLAG_TERMS, for both.

Every value is a bound parameter; names are GLOB patterns, as in the RFC.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .base import ReportRun
from .scope import DEFAULT_TOP

# Each owner flag as a term on process p, thread th and track tr: the aliases of every view's owner joins.
FLAG_TERMS = {
    "pid": "p.pid = :pid",
    "process": "p.name GLOB :process",
    "tid": "th.tid = :tid",
    "thread": "th.name GLOB :thread",
    "track": "tr.name GLOB :track",
}
PROCESS_FLAGS = ("pid", "process")
THREAD_FLAGS = ("tid", "thread")
OWNER_FLAGS = PROCESS_FLAGS + THREAD_FLAGS
# The flags that select tracks (the slices views'): their owners, the track name, their dimensions.
TRACK_FLAGS = OWNER_FLAGS + ("track", "dim")


@dataclass
class Where:
    terms: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    driver: str | None = None  # which term's index the scan goes through, where the builder chose one

    def add(self, term: str, **params: Any) -> None:
        self.terms.append(term)
        self.params.update(params)

    def extend(self, other: Where) -> None:
        self.terms += other.terms
        self.params.update(other.params)

    def sql(self, prefix: str = "WHERE") -> str:
        return f"{prefix} " + "\n  AND ".join(self.terms) if self.terms else ""


def flag_terms(run: ReportRun, flags: Iterable[str]) -> Where:
    """The terms of those of `flags` the run's scope sets, in the order given (it shows in the SQL); dim's on
    the track tr."""
    w = Where()
    for flag in flags:
        value = getattr(run.scope, flag)
        if flag == "dim":
            w.extend(dim_terms(run, "track"))
        elif value is not None:
            w.add(FLAG_TERMS[flag], **{flag: value})
    return w


# -- dim scope: tracks, threads and processes by their RFC 0039 dimensions --------------------------------
#
# A track is in scope when each dim NAME=VALUE is one of its effective dimensions (track_dimension), VALUE
# being the typed value, the label or the display name. A thread is in scope when one of its tracks is, or,
# having no track of its own, when its process is; a process when one of its own or its threads' tracks is.
# The slices, samples, counters and allocations in scope are those on these tracks, threads and processes.


def dim_match(name: str, value: str) -> str:
    """A track_dimension row d whose dimension is `name` and whose value is `value` (SQL expressions): the
    typed value as text, the label or the display name."""
    return (
        f"d.name = {name} AND (CAST(d.int_value AS TEXT) = {value} OR d.string_value = {value}"
        f" OR d.label = {value} OR d.display_name = {value})"
    )


def dim_tracks(name: str, value: str) -> str:
    """The ids of the tracks with that dimension value."""
    return f"SELECT d.track_id FROM track_dimension d WHERE {dim_match(name, value)}"


def dim_processes(tracks: str) -> str:
    """The upids of the processes in scope, given the tracks in scope (a query)."""
    return (
        "SELECT coalesce(tr.upid, th.upid) FROM track tr LEFT JOIN thread th ON th.id = tr.utid "
        f"WHERE tr.id IN ({tracks})"
    )


def dim_threads(tracks: str, per_thread: str) -> str:
    """The utids of the threads in scope, given the tracks in scope (a query): a thread with no track of its
    own takes its process's, unless the dimension is one of threads (`per_thread`, an SQL truth value)."""
    return (
        f"SELECT tr.utid FROM track tr WHERE tr.id IN ({tracks}) AND tr.utid IS NOT NULL UNION "
        f"SELECT th.id FROM thread th WHERE NOT {per_thread} AND th.upid IN ({dim_processes(tracks)}) "
        "AND NOT EXISTS (SELECT 1 FROM track own WHERE own.utid = th.id)"
    )


# A dim term by what it selects: a track (tr.id), a thread (th.id), a process (p.id) or an owner (a sample's
# thread, else its process); {id}/{thread}/{process} are the columns, when not those aliases.
DIM_SUBJECTS = {
    "track": "{id} IN ({tracks})",
    "thread": "{id} IN ({threads})",
    "process": "{id} IN ({processes})",
    "owner": "({thread} IN ({threads}) OR {thread} IS NULL AND {process} IN ({processes}))",
}
_DEFAULT_IDS = {"track": "tr.id", "thread": "th.id", "process": "p.id", "owner": ""}


def _dim_term(subject: str, tracks: str, per_thread: str, column: str | None = None) -> str:
    return DIM_SUBJECTS[subject].format(
        id=column or _DEFAULT_IDS[subject],
        thread="th.id",
        process="p.id",
        tracks=tracks,
        threads=dim_threads(tracks, per_thread) if subject in ("thread", "owner") else "",
        processes=dim_processes(tracks) if subject in ("process", "owner") else "",
    )


def dim_terms(run: ReportRun, subject: str, column: str | None = None) -> Where:
    """One term per dim flag on `subject` (track, thread, process or owner; `column` its id column when not
    tr.id, th.id or p.id), each NAME and VALUE bound."""
    w = Where()
    for i, (name, value) in enumerate(run.scope.dim or ()):
        tracks = dim_tracks(f":dim_name_{i}", f":dim_value_{i}")
        per_thread = "1" if name == "thread" else "0"
        w.add(_dim_term(subject, tracks, per_thread, column), **{f"dim_name_{i}": name, f"dim_value_{i}": value})
    return w


# The canned queries' one dim parameter, NAME=VALUE as in the report (quotes around VALUE optional).
CANNED_DIM_NAME = "trim(substr(:dim, 1, instr(:dim, '=') - 1))"
CANNED_DIM_VALUE = "trim(trim(substr(:dim, instr(:dim, '=') + 1)), '\"''')"


# The tracks the canned dim parameter selects (its NAME and VALUE split once).
CANNED_DIM_TRACKS = (
    "SELECT d.track_id FROM track_dimension d, "
    f"(SELECT {CANNED_DIM_NAME} AS name, {CANNED_DIM_VALUE} AS value) q WHERE {dim_match('q.name', 'q.value')}"
)


def canned_dim(subject: str, column: str | None = None) -> str:
    """The optional dim term of a canned query on `subject` (as dim_terms)."""
    per_thread = f"({CANNED_DIM_NAME} = 'thread')"
    return f"(:dim = '' OR {_dim_term(subject, CANNED_DIM_TRACKS, per_thread, column)})"


def subquery(w: Where, select: str) -> Where | None:
    """`w` as one term: the ids `select` (a SELECT with the joins `w` needs) returns under it, as a
    subquery to go after IN; None when `w` has no terms."""
    if not w.terms:
        return None
    indented = f"{select}\n{w.sql()}".replace("\n", "\n  ")
    return Where([f"(\n  {indented})"], w.params)


def owner_terms(run: ReportRun, threads: bool = True) -> Where:
    """The pid/process (and, with `threads`, tid/thread) flags as terms on process alias p and
    thread alias th."""
    return flag_terms(run, OWNER_FLAGS if threads else PROCESS_FLAGS)


# -- canned queries: every flag an optional :named parameter ('' = not set) -----------------------------

CANNED_TOP = f"coalesce(nullif(:top, ''), {DEFAULT_TOP})"
# The range the time flag covers, else the whole trace: its bounds as expressions, and as the CTE `range`.
CANNED_RANGE_START = "coalesce((SELECT report_range_start(:time)), trace_start())"
CANNED_RANGE_END = "coalesce((SELECT report_range_end(:time)), trace_end())"
CANNED_RANGE = f"""range AS (
  SELECT {CANNED_RANGE_START} AS range_start,
         {CANNED_RANGE_END} AS range_end
)"""
# The smallest 1, 2, 2.5 or 5 x 10^k not below a value is the smallest `nice` row not below it (bucket widths).
CANNED_NICE = """power(v) AS (SELECT 1 UNION ALL SELECT v * 10 FROM power WHERE v < 100000000000000000),
nice(v) AS (
  SELECT p.v * m.c / 10 FROM power p, (SELECT 10 AS c UNION ALL SELECT 20 UNION ALL SELECT 25 UNION ALL SELECT 50) m
  WHERE p.v * m.c % 10 = 0
)"""


def optional(flag: str, term: str | None = None) -> str:
    """A flag's term (FLAG_TERMS' unless given; dim's on the track tr) that holds when the parameter is empty."""
    if flag == "dim" and term is None:
        return canned_dim("track")
    return f"(:{flag} = '' OR {term or FLAG_TERMS[flag]})"


def optional_terms(flags: Iterable[str], indent: str = "    ", **terms: str) -> str:
    """The optional terms of `flags` joined by AND, one a line (the next lines at `indent`); `terms` gives a
    flag's term where FLAG_TERMS has none or another column is meant."""
    return f"\n{indent}AND ".join(optional(flag, terms.get(flag)) for flag in flags)


def unset(flags: Iterable[str]) -> str:
    """True when none of `flags` is set (terms joined by AND, to parenthesise where needed)."""
    return " AND ".join(f":{flag} = ''" for flag in flags)


def in_canned_range(column: str) -> str:
    """`column` (a timestamp) inside the time flag's range."""
    return f"({column} >= (SELECT report_range_start(:time)) AND {column} < (SELECT report_range_end(:time)))"


def canned_sort(default: str) -> str:
    """The sort flag, or the view's default sort key."""
    return f"coalesce(nullif(:sort, ''), '{default}')"
