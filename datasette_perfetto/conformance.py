"""Runs trace_processor's diff tests (trace + query + expected CSV) against our ingest.

A case folder holds case.json, query.sql, expected.csv and one trace file.
Expected values: quoted = string, [NULL] = NULL, anything else a number
(compared numerically, so 100 and 100.000000 match). Rows are compared in
order when the query has an ORDER BY, else in any order.
"""

from __future__ import annotations

import math
import os
import re
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

from .connection import prepare
from .importers.common.options import Content
from .ingest import IngestError, ingest
from .sql_text import split_includes, split_statements
from .stdlib import UnknownModule, include
from .table_functions import runnable

TRACE_NAMES = ("trace.pb", "trace.json", "trace.systrace", "trace.zip", "trace.tar")


@dataclass
class CaseResult:
    case_id: str
    passed: bool
    reason: str = ""


def parse_expected(text: str) -> tuple[list[str], list[list]]:
    """Parses expected.csv keeping the distinction between quoted and bare fields; a quoted field may hold
    line breaks (a multi-line string value), and blank lines between records are skipped."""
    records = _records(text)
    if not records:
        return [], []
    header = [value for value, _ in records[0]]
    return header, [[_expected_value(field) for field in record] for record in records[1:]]


def _records(text: str) -> list[list[tuple[str, bool]]]:
    """The CSV records of `text`: per field, (text, whether it was quoted)."""
    records: list[list[tuple[str, bool]]] = []
    fields: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            j, buf = i + 1, []
            while j < n:
                if text[j] == '"':
                    if j + 1 < n and text[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    break
                buf.append(text[j])
                j += 1
            fields.append(("".join(buf), True))
            i = j + 1  # past the closing quote: a comma or the end of the record follows
        else:
            j = i
            while j < n and text[j] not in ",\r\n":
                j += 1
            fields.append((text[i:j], False))
            i = j
        if i < n and text[i] == ",":
            i += 1
            if i < n:
                continue  # the next field (empty if the record ends here)
            fields.append(("", False))
        while i < n and text[i] in "\r\n":
            i += 1
        if not _blank(fields):
            records.append(fields)
        fields = []
    return records


def _blank(fields: list[tuple[str, bool]]) -> bool:
    """A blank line: one bare field of spaces at most."""
    return len(fields) == 1 and not fields[0][1] and not fields[0][0].strip()


def _expected_value(field: tuple[str, bool]):
    text, quoted = field
    if quoted:
        return "[NULL]" if text == "[NULL]" else text
    if text == "[NULL]":
        return None
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def values_equal(actual, expected) -> bool:
    if expected is None:
        return actual is None
    if expected == "[NULL]":
        # trace_processor prints NULL as [NULL]: a query's own '[NULL]' string reads the same.
        return actual is None or actual == "[NULL]"
    if isinstance(expected, str):
        if isinstance(actual, bytes):
            actual = actual.decode("utf-8", "replace")
        return isinstance(actual, str) and actual == expected
    if isinstance(actual, (int, float)) and not isinstance(actual, bool):
        if isinstance(expected, int) and isinstance(actual, int):
            return actual == expected
        return math.isclose(float(actual), float(expected), rel_tol=1e-6, abs_tol=1e-6)
    return False


def trace_path(case_dir: str) -> str | None:
    for name in TRACE_NAMES:
        p = os.path.join(case_dir, name)
        if os.path.exists(p):
            return p
    return None


# PerfettoSQL macros the diff tests use, as SQLite expressions (name -> template for the argument text).
MACROS = {"cast_int": "CAST({} AS INT)"}


def expand_macros(query: str) -> str:
    """Expands `name!(arg)` PerfettoSQL macro calls (balanced parentheses) that MACROS knows."""
    for name, template in MACROS.items():
        token = f"{name}!("
        while token in query:
            start = query.index(token)
            depth, i = 1, start + len(token)
            while i < len(query) and depth:
                depth += {"(": 1, ")": -1}.get(query[i], 0)
                i += 1
            if depth:
                break  # unbalanced: leave it for SQLite to report
            arg = query[start + len(token) : i - 1]
            query = query[:start] + template.format(arg) + query[i:]
    return query


def run_case(case_dir: str, workdir: str, **ingest_options) -> CaseResult:
    """Ingests a case's trace (ingest_options go to ingest()) and checks its query's result."""
    case_id = os.path.basename(case_dir.rstrip("/"))
    trace = trace_path(case_dir)
    if trace is None:
        return CaseResult(case_id, False, "no trace file")
    db_path = os.path.join(workdir, case_id + ".db")
    # trace_processor's diff-test runner passes --analyze-trace-proto-content, and keeps its raw table (its
    # default).
    ingest_options.setdefault("content", Content(analyze_proto_content=True, ftrace_raw=True))
    try:
        ingest([trace], db_path, **ingest_options)
    except IngestError as e:
        return CaseResult(case_id, False, f"ingest failed: {e}")
    except Exception as e:  # noqa: BLE001 - a crash is a failing case, reported, not fatal to the run
        return CaseResult(case_id, False, f"ingest crashed: {type(e).__name__}: {e}")
    with open(os.path.join(case_dir, "query.sql"), encoding="utf-8") as f:
        query = expand_macros(f.read())
    with open(os.path.join(case_dir, "expected.csv"), encoding="utf-8") as f:
        expected_text = f.read()
    header, expected = parse_expected(expected_text)
    conn = sqlite3.connect(db_path)
    try:
        prepare(conn)
        # Several statements run in order (on this case's own copy); the last one's rows are the result.
        statements, modules = split_includes(split_statements(query))
        included: set[str] = set()
        metrics_run: set[str] = set()
        for module in modules:
            include(conn, module, included)
        for statement in statements or [query]:
            sql = runnable(conn, statement, metrics_run)
            if sql is None:
                continue
            cur = conn.execute(sql)
            columns = [d[0] for d in cur.description] if cur.description else []
            rows = cur.fetchall()
    except (sqlite3.Error, UnknownModule) as e:
        return CaseResult(case_id, False, f"query failed: {e}")
    finally:
        conn.close()
        os.unlink(db_path)
    if _printed(columns, rows) == _lines(expected_text):
        # trace_processor's diff tests compare printed text; a string value holding quotes is printed
        # unescaped, which no CSV reading gives back.
        return CaseResult(case_id, True)
    if columns != header:
        return CaseResult(case_id, False, f"columns {columns} != expected {header}")
    if len(rows) != len(expected):
        return CaseResult(case_id, False, f"{len(rows)} rows != expected {len(expected)}" + _first_diff(rows, expected))
    for i, (got, want) in enumerate(zip(rows, expected)):
        if not _row_equal(got, want) and (ORDER_BY.search(query) or not _same_rows_any_order(rows, expected)):
            return CaseResult(case_id, False, f"row {i}: got {list(got)} expected {want}")
    return CaseResult(case_id, True)


# A query without ORDER BY leaves its row order to the engine (SQL's rule): trace_processor's follows its
# own join and scan order, SQLite's its planner's, so only the rows themselves are compared.
ORDER_BY = re.compile(r"\bORDER\s+BY\b", re.IGNORECASE)


def _row_equal(got, want) -> bool:
    return len(got) == len(want) and all(values_equal(a, e) for a, e in zip(got, want))


def _same_rows_any_order(rows, expected) -> bool:
    """Whether each row has its own equal among the expected ones."""
    unmatched = list(expected)
    for got in rows:
        at = next((i for i, want in enumerate(unmatched) if _row_equal(got, want)), None)
        if at is None:
            return False
        del unmatched[at]
    return True


def _printed(columns: list[str], rows: list) -> list[str]:
    """The lines trace_processor's diff-test runner prints for a result: quoted names and strings (quotes
    inside not escaped), [NULL] for NULL, numbers bare."""

    def cell(value) -> str:
        if value is None:
            return '"[NULL]"'
        if isinstance(value, str):
            return f'"{value}"'
        return str(value)

    return [",".join(f'"{c}"' for c in columns), *(",".join(cell(v) for v in row) for row in rows)]


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().splitlines() if line.strip()]


def _first_diff(rows, expected) -> str:
    for i, (got, want) in enumerate(zip(rows, expected)):
        if not _row_equal(got, want):
            return f"; first difference at row {i}: got {list(got)} expected {want}"
    return ""


def case_dirs(cases_dir: str, prefix: str = "") -> list[str]:
    return sorted(
        os.path.join(cases_dir, d)
        for d in os.listdir(cases_dir)
        if d.startswith(prefix) and os.path.isdir(os.path.join(cases_dir, d))
    )


def run_cases(cases_dir: str, prefix: str = "") -> Iterator[CaseResult]:
    with tempfile.TemporaryDirectory() as workdir:
        for d in case_dirs(cases_dir, prefix):
            yield run_case(d, workdir)


def load_passing_list(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


__all__ = ["run_case", "run_cases", "parse_expected", "values_equal", "CaseResult"]
