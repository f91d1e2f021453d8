"""SQL text as users and trace_processor's diff tests write it: several statements with comments,
`-- :name = "value"` lines binding values (the way `report --format sql` prints them), and trace_processor's
`INCLUDE PERFETTO MODULE name;` for the standard library modules whose tables every database has."""

from __future__ import annotations

import json
import re
import sqlite3


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


# trace_processor standard library modules every trace database holds (schema.py's views).
PROVIDED_MODULES = frozenset({"slices.with_context"})
_INCLUDE = re.compile(r"\s*INCLUDE\s+PERFETTO\s+MODULE\s+([\w.*]+)\s*;?\s*$", re.I)


class UnknownModule(ValueError):
    """An INCLUDE PERFETTO MODULE of a module no trace database here holds."""


def without_includes(statements: list[str]) -> list[str]:
    """The statements without their `INCLUDE PERFETTO MODULE` ones, whose modules the database already
    holds; UnknownModule (naming it) for one it does not."""
    out = []
    for statement in statements:
        include = _INCLUDE.match(_strip_comments(statement))
        if include is None:
            out.append(statement)
        elif include.group(1) not in PROVIDED_MODULES:
            raise UnknownModule(
                f"INCLUDE PERFETTO MODULE {include.group(1)}: trace_processor's standard library is not here; "
                f"only {', '.join(sorted(PROVIDED_MODULES))} (its tables are in every trace database)"
            )
    return out
