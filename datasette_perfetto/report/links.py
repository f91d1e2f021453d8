"""Links from one report to another that keep the report's scope, and globs that match one name exactly
(name= and track= take globs)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .base import Link, ReportRun, View
from .scope import with_changes

# Flags whose meaning is per view (a process name here, a slice name there).
VIEW_LOCAL_FLAGS = frozenset({"sort", "name", "min_count"})

_GLOB_SPECIAL = re.compile(r"([*?\[])")


def glob_escape(text: str) -> str:
    """A glob matching exactly `text` (GLOB's special characters in brackets)."""
    return _GLOB_SPECIAL.sub(r"[\1]", text)


# noun -> view name -> View, filled by the noun registry (views/__init__.py) as it is built: every view
# module links through here, so this module cannot import the registry without an import cycle.
LINKABLE_VIEWS: dict[str, dict[str, View]] = {}


def link_with_scope(
    run: ReportRun,
    noun: str,
    view: str,
    changes: Mapping[str, str | list[str] | None],
    database: str = "",
    view_flags: bool = False,
    carry_top: bool = True,
) -> Link:
    """A link to (noun, view) keeping the scope flags of this report that the view takes, with `changes`
    applied (None drops a flag). With `view_flags` also sort, name and min_count; top goes along, unless
    not `carry_top`, only to views it sizes. `database`: "" this report's, "baseline" the baseline's."""
    target = LINKABLE_VIEWS[noun][view]
    carried = set(target.flags)
    if target.uses_top and carry_top:
        carried.add("top")
    if not view_flags:
        carried -= VIEW_LOCAL_FLAGS
    params = with_changes({k: v for k, v in run.scope.to_params().items() if k in carried}, changes)
    return Link.to(noun, view, params, database=database)


def scoped_link(run: ReportRun, noun: str, view: str, **changes: str | list[str] | None) -> Link:
    """A link to a view of another noun (or to a single-series view, which `changes` names): the scope
    flags it takes, never the per-view sort, name and min_count."""
    return link_with_scope(run, noun, view, changes)


def view_link(run: ReportRun, noun: str, view: str, **changes: str | list[str] | None) -> Link:
    """A link to another view of this report's noun: every flag the view takes, sort, name and min_count too."""
    return link_with_scope(run, noun, view, changes, view_flags=True)


def owner_params(tid: int | None, pid: int | None, cpu: int | None) -> dict[str, str | None]:
    """The flags that narrow a report to one track's owner."""
    if tid is not None:
        return {"tid": str(tid)}
    if pid is not None:
        return {"pid": str(pid)}
    if cpu is not None:
        return {"cpu": str(cpu)}
    return {}
