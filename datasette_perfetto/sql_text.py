"""SQL text as users and trace_processor's diff tests write it: several statements with comments,
`-- :name = "value"` lines binding values (the way `report --format sql` prints them), and trace_processor's
`INCLUDE PERFETTO MODULE name;` for the standard library modules stdlib.py provides."""

from __future__ import annotations

import json
import re
import sqlite3

from . import stdlib


def split_statements(text: str) -> list[str]:
    """The SQL statements of `text`, in order, each with the comments before it; comment-only text is dropped."""
    statements = []
    start = 0
    for i, ch in enumerate(text):
        if ch == ";" and sqlite3.complete_statement(text[start : i + 1]):
            statements.append(text[start : i + 1])
            start = i + 1
    statements.append(text[start:])
    return [s for s in statements if _has_code(s)]


def _has_code(statement: str) -> bool:
    """Whether a statement is more than comments, whitespace and semicolons."""
    return _strip_comments(statement).strip(" \t\r\n;") != ""


_COMMENTS = re.compile(r"--[^\n]*|/\*.*?(\*/|$)|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", re.S)


def _strip_comments(statement: str) -> str:
    return _COMMENTS.sub(lambda m: m.group(0) if m.group(0)[0] in "'\"" else " ", statement)


_LEADING_COMMENTS = re.compile(r"(?:\s+|--[^\n]*|/\*.*?\*/)*", re.S)
_PARAM_COMMENT = re.compile(r"^--\s+:(\w+) = (\"(?:[^\"\\]|\\.)*\")\s*$", re.M)


def comment_params(statement: str) -> dict[str, str]:
    """`-- :name = "value"` lines (a JSON string) in the comments before the statement's code: its bound values."""
    head = _LEADING_COMMENTS.match(statement)
    return {m.group(1): json.loads(m.group(2)) for m in _PARAM_COMMENT.finditer(head.group(0) if head else "")}


_INCLUDE = re.compile(r"\s*INCLUDE\s+PERFETTO\s+MODULE\s+([\w.*]+)\s*;?\s*$", re.I)


def split_includes(statements: list[str]) -> tuple[list[str], list[str]]:
    """(the statements that are not `INCLUDE PERFETTO MODULE`, the modules included, in order); UnknownModule,
    naming it, for a module not provided (stdlib.py runs them: stdlib.include)."""
    out, modules = [], []
    for statement in statements:
        include = _INCLUDE.match(_strip_comments(statement))
        if include is None:
            out.append(statement)
        else:
            stdlib.check(include.group(1))
            modules.append(include.group(1))
    return out, modules


# PerfettoSQL's CREATE PERFETTO TABLE/VIEW name(column schema) AS ..., and plain CREATE TABLE/VIEW: made
# TEMP, so they work on a read-only trace database and vanish with the connection, as in trace_processor.
_CREATE_PERFETTO = re.compile(
    r"^(\s*CREATE\s+)(?:OR\s+REPLACE\s+)?PERFETTO\s+(TABLE|VIEW)(\s+(?:IF\s+NOT\s+EXISTS\s+)?[\w.]+)\s*"
    r"(\((?:[^()]|\([^()]*\))*\))?\s*(AS\b)",
    re.I,
)
_CREATE_PLAIN = re.compile(r"^(\s*CREATE\s+)(TABLE|VIEW)\b", re.I)


def as_sqlite(statement: str) -> str:
    """A statement SQLite runs: PerfettoSQL's CREATE PERFETTO TABLE/VIEW ... AS made a TEMP one without its
    column schema (types like ID(counter.id) are not SQLite's), a plain CREATE TABLE/VIEW made TEMP as it
    is; others unchanged."""
    code = _strip_comments(statement)
    match = _CREATE_PERFETTO.match(code)
    if match is not None:
        return f"{match.group(1)}TEMP {match.group(2)}{match.group(3)} {match.group(5)}" + code[match.end() :]
    match = _CREATE_PLAIN.match(code)
    if match is not None:
        return f"{match.group(1)}TEMP " + code[len(match.group(1)) :]
    return statement
