"""Every report view's SQL as a Datasette canned query (`/{db}/slices_table?name=doFrame*&top=10`).

Parameters mirror the report flags and take the same values (`2.7s,3.1s`,
`150ms`, globs); an empty parameter means "not set", so a shared link only
needs the flags it uses.
"""

from __future__ import annotations

from collections.abc import Sequence

from .scope import FLAGS, ReportError, Scope, resolve_range
from .views import NOUNS


def canned_queries() -> dict[str, dict]:
    out: dict[str, dict] = {}
    for noun, views in NOUNS.items():
        for view in views.values():
            if not view.canned_sql:
                continue
            used = [f for f in FLAGS if f":{f}" in view.canned_sql]
            out[view.canned_name] = {
                "sql": view.canned_sql,
                "title": f"Report: {noun} {view.name}",
                "description": f"{view.description} The SQL of the `{noun} {view.name}` report; parameters are "
                "its flags (empty means not set): " + "; ".join(f"{f}: {FLAGS[f]}" for f in used),
                "params": used,
            }
    return out


def flag_error(query: str, params: Sequence[tuple[str, str]], trace_start: int) -> ReportError | None:
    """What the report would say of a canned query's flags (those of the request's `params` it takes) that it
    refuses; None when it takes them all, or `query` is none of the report's."""
    used = CANNED_FLAGS.get(query)
    if used is None:
        return None
    try:
        scope = Scope.parse([(key, text) for key, text in params if key in used])
        if scope.time is not None:
            resolve_range(scope.time, trace_start)
    except ReportError as e:
        return e
    return None


CANNED_FLAGS = {name: frozenset(query["params"]) for name, query in canned_queries().items()}
