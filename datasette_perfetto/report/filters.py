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
TRACK_FLAGS = OWNER_FLAGS + ("track",)


@dataclass
class Where:
    terms: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def add(self, term: str, **params: Any) -> None:
        self.terms.append(term)
        self.params.update(params)

    def extend(self, other: Where) -> None:
        self.terms += other.terms
        self.params.update(other.params)

    def sql(self, prefix: str = "WHERE") -> str:
        return f"{prefix} " + "\n  AND ".join(self.terms) if self.terms else ""


def flag_terms(run: ReportRun, flags: Iterable[str]) -> Where:
    """The terms of those of `flags` the run's scope sets, in the order given (it shows in the SQL)."""
    w = Where()
    for flag in flags:
        value = getattr(run.scope, flag)
        if value is not None:
            w.add(FLAG_TERMS[flag], **{flag: value})
    return w


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
# The range the time flag covers, else the whole trace, as the CTE `range`.
CANNED_RANGE = """range AS (
  SELECT coalesce((SELECT report_range_start(:time)), trace_start()) AS range_start,
         coalesce((SELECT report_range_end(:time)), trace_end()) AS range_end
)"""
# The smallest 1, 2, 2.5 or 5 x 10^k not below a value is the smallest `nice` row not below it (bucket widths).
CANNED_NICE = """power(v) AS (SELECT 1 UNION ALL SELECT v * 10 FROM power WHERE v < 100000000000000000),
nice(v) AS (
  SELECT p.v * m.c / 10 FROM power p, (SELECT 10 AS c UNION ALL SELECT 20 UNION ALL SELECT 25 UNION ALL SELECT 50) m
  WHERE p.v * m.c % 10 = 0
)"""


def optional(flag: str, term: str | None = None) -> str:
    """A flag's term (FLAG_TERMS' unless given) that holds when the parameter is empty."""
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
