"""Runs one report: find the view, validate the scope, compute the `Report` message."""

from __future__ import annotations

import sqlite3

from . import report_pb2 as pb
from .base import Link, Linker, ReportResult, ReportRun
from .scope import Params, ReportError, Scope
from .views import find_view


def run_report(
    conn: sqlite3.Connection, noun: str | None, view_name: str | None, params: Params, linker: Linker
) -> ReportResult:
    """Raises ReportError for anything the request got wrong."""
    view = find_view(noun, view_name)
    scope = Scope.parse(params)
    if scope.baseline is not None:
        from .diff import prepare

        prepare(noun, view_name, params)  # the reason this view takes no baseline, if it takes none
        raise ReportError("baseline: a diff reads two databases; run it with diff.run_diff", "baseline")
    view.check(scope)
    run = ReportRun(conn, scope, linker, view.noun, view.name)
    report = pb.Report(noun=view.noun, view=view.name)
    out = getattr(report, view.result_field)
    view.compute(run, out)
    out.SetInParent()  # an empty result is still this view's result
    # The last step of every drill-down: the SQL behind this very report.
    run.next_step("The SQL behind this report", Link.to(view.noun, view.name, scope.to_params(), format="sql"))
    report.context.CopyFrom(run.context())
    report.footnotes.extend(run.footnotes)
    report.next_steps.extend(run.next_steps)
    report.queries.extend(run.queries)
    return ReportResult(report, view, run)


__all__ = ["run_report", "ReportResult", "ReportError"]
