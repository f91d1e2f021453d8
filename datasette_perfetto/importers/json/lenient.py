"""JSON read as trace_processor's own parser reads it, for what the standard decoder refuses.

The fast path is the standard library's C decoder (reader.py). When it rejects an
event, or recurses too deep, the event is read again here, by trace_processor's
rules (util/json_parser.h, util/json_args.cc):

- trailing commas before `}` and `]` are accepted, control characters in strings too;
- an integer beyond int64 is a double made from its digits in a wrapping int64 (any
  number of digits); NaN, Infinity and numbers that overflow a double are errors;
- an event's own fields are checked; a nested object or array is only scanned for its
  end (strings respected), and its content is read up to its first error, keeping what
  came before (as trace_processor inserts args one by one);
- any depth: nothing here recurses.
"""

from __future__ import annotations

import math
import re
from typing import Any, Protocol, cast

from ..common.json_args import big_int_as_double
from ..common.values import INT64_MAX, INT64_MIN


class AlwaysMatches(Protocol):
    """A compiled pattern that matches the empty string, so that match() never fails."""

    def match(self, string: str, pos: int = ...) -> re.Match[str]: ...


_WS = cast(AlwaysMatches, re.compile(r"[ \t\n\r]*"))
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)?(\.[0-9]*)?([eE][+-]?[0-9]*)?")
_STRING_BODY = cast(AlwaysMatches, re.compile(r'[^"\\]*(?:\\[\s\S][^"\\]*)*'))
_ESCAPE = re.compile(r"\\(u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)", re.S)
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class JsonError(ValueError):
    pass


def _unescape(m: re.Match[str]) -> str:
    e = m.group(1)
    if e[0] != "u" or len(e) == 1:
        return _SIMPLE_ESCAPES.get(e, "")  # other escaped characters are dropped, as trace_processor does
    if len(e) > 5:  # a surrogate pair
        return chr(0x10000 + ((int(e[1:5], 16) - 0xD800) << 10) + (int(e[7:11], 16) - 0xDC00))
    return _unescape_one(int(e[1:5], 16))


def _unescape_one(cp: int) -> str:
    if 0xD800 <= cp < 0xE000:
        return f"\\u{cp:04x}"  # a lone surrogate cannot be stored: kept as text
    return chr(cp)


def unescape(body: str) -> str:
    """A JSON string's content (between its quotes) unescaped as trace_processor does; never fails."""
    return _ESCAPE.sub(_unescape, body) if "\\" in body else body


def parse_string(text: str, pos: int) -> tuple[str, int]:
    """The string whose opening quote is at pos: (value, position after it)."""
    end = _STRING_BODY.match(text, pos + 1).end()
    if end >= len(text) or text[end] != '"':
        raise JsonError("unterminated string")
    return unescape(text[pos + 1 : end]), end + 1


def number_value(token: str) -> int | float:
    """A JSON number's text as trace_processor's parser reads it (int64 or double)."""
    m = _NUMBER.fullmatch(token)
    if m is None or not token or token == "-":
        raise JsonError(f"invalid number {token!r}")
    digits = token[1:] if token[0] == "-" else token
    if not digits or not digits[0].isdigit() or (m.group(1) is not None and len(m.group(1)) == 1):
        raise JsonError(f"invalid number {token!r}")
    if m.group(2) is not None and not m.group(2).lstrip("eE+-"):
        raise JsonError(f"invalid number {token!r}")
    fraction, exponent = m.group(1), m.group(2)
    integer_digits = digits[: len(digits) - len(fraction or "") - len(exponent or "")]
    if fraction is None and exponent is None:
        value = _int_of_digits(integer_digits)
        if token[0] == "-":
            value = -value
        if INT64_MIN <= value <= INT64_MAX:
            return value
        return big_int_as_double(value)
    if len(integer_digits) <= 18:
        try:
            result = float(token)
        except (ValueError, OverflowError):
            result = math.inf
    else:
        # More digits than int64 holds: trace_processor's accumulation wraps.
        whole = big_int_as_double(_int_of_digits(integer_digits))
        frac = float(f"0{fraction}") if fraction and len(fraction) > 1 else 0.0
        try:
            result = (whole + frac) * 10.0 ** int((exponent or "e0")[1:])
        except OverflowError:
            result = math.inf
        if token[0] == "-":
            result = -result
    if not math.isfinite(result):
        raise JsonError(f"number out of range {token[:32]!r}")
    return result


def _int_of_digits(digits: str) -> int:
    """int(digits), for any number of digits (only the low 64 bits matter beyond int64)."""
    if len(digits) <= 4000:
        return int(digits)
    value = 0
    for i in range(0, len(digits), 1000):
        chunk = digits[i : i + 1000]
        value = (value * 10 ** len(chunk) + int(chunk)) & 0xFFFFFFFFFFFFFFFF
    return value | 1 << 64  # beyond int64 whatever its low bits


_SCALAR_END = cast(AlwaysMatches, re.compile(r"[^\s,}\]]*"))


def _scalar(text: str, pos: int) -> tuple[Any, int]:
    c = text[pos]
    if c == '"':
        return parse_string(text, pos)
    for word, value in (("true", True), ("false", False), ("null", None)):
        if c == word[0]:
            if text.startswith(word, pos):
                return value, pos + len(word)
            raise JsonError(f"expected {word}")
    end = _SCALAR_END.match(text, pos).end()
    return number_value(text[pos:end]), end


def block_end(text: str, pos: int) -> int:
    """The position after the object or array opening at pos (trace_processor's scan: its
    own kind of bracket counted, strings skipped, the content not checked)."""
    open_c = text[pos]
    close_c = "}" if open_c == "{" else "]"
    depth = 0
    n = len(text)
    while pos < n:
        c = text[pos]
        if c == '"':
            end = _STRING_BODY.match(text, pos + 1).end()
            if end >= n:
                break
            pos = end + 1
            continue
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return pos + 1
        pos += 1
    raise JsonError("unterminated " + ("object" if open_c == "{" else "array"))


def parse_partial(text: str, pos: int, n: int) -> Any:
    """The object or array at pos (ending before n), read up to its first error (what came
    before is kept)."""
    root: Any = {} if text[pos] == "{" else []
    stack: list[Any] = [root]
    pos += 1
    try:
        while stack:
            pos = _WS.match(text, pos).end()
            if pos >= n:
                break
            top = stack[-1]
            c = text[pos]
            if c == ",":
                pos += 1
                continue
            if c == ("}" if type(top) is dict else "]"):
                stack.pop()
                pos += 1
                continue
            key = None
            if type(top) is dict:
                if c != '"':
                    break
                key, pos = parse_string(text, pos)
                pos = _WS.match(text, pos).end()
                if pos >= n or text[pos] != ":":
                    break
                pos = _WS.match(text, pos + 1).end()
                if pos >= n:
                    break
                c = text[pos]
            if c == "{" or c == "[":
                child: Any = {} if c == "{" else []
                if key is None:
                    top.append(child)
                else:
                    top[key] = child
                stack.append(child)
                pos += 1
                continue
            value, pos = _scalar(text, pos)
            if key is None:
                top.append(value)
            else:
                top[key] = value
            pos = _WS.match(text, pos).end()
            if pos < n and text[pos] not in ",}]":
                break
    except (JsonError, IndexError):
        pass
    return root


def object_fields(text: str) -> list[tuple[str, Any, str]]:
    """(key, value, value as written) for the fields of the object in `text`, up to the first
    malformed one; nested objects and arrays are not read (their value is None)."""
    out: list[tuple[str, Any, str]] = []
    pos = _WS.match(text, 0).end()
    if pos >= len(text) or text[pos] != "{":
        return out
    pos += 1
    n = len(text)
    try:
        while True:
            pos = _WS.match(text, pos).end()
            while pos < n and text[pos] == ",":
                pos = _WS.match(text, pos + 1).end()
            if pos >= n or text[pos] == "}":
                return out
            if text[pos] != '"':
                return out
            key, pos = parse_string(text, pos)
            pos = _WS.match(text, pos).end()
            if pos >= n or text[pos] != ":":
                return out
            start = pos = _WS.match(text, pos + 1).end()
            if pos >= n:
                return out
            if text[pos] in "{[":
                pos = block_end(text, pos)
                value: Any = None
            else:
                value, pos = _scalar(text, pos)
            out.append((key, value, text[start:pos]))
            pos = _WS.match(text, pos).end()
            if pos < n and text[pos] not in ",}":
                return out
    except (JsonError, IndexError):
        return out


def parse_event(text: str) -> dict | None:
    """A trace event object by trace_processor's rules; None when its own fields are malformed
    (nested values are read as far as they are well formed)."""
    pos = _WS.match(text, 0).end()
    if pos >= len(text) or text[pos] != "{":
        return None
    event: dict = {}
    pos += 1
    n = len(text)
    try:
        while True:
            pos = _WS.match(text, pos).end()
            if pos < n and text[pos] == ",":
                pos = _WS.match(text, pos + 1).end()
            if pos >= n:
                return None
            if text[pos] == "}":
                return event
            if text[pos] != '"':
                return None
            key, pos = parse_string(text, pos)
            pos = _WS.match(text, pos).end()
            if pos >= n or text[pos] != ":":
                return None
            pos = _WS.match(text, pos + 1).end()
            if pos >= n:
                return None
            if text[pos] in "{[":
                end = block_end(text, pos)
                event[key] = parse_partial(text, pos, end)
                pos = end
            else:
                event[key], pos = _scalar(text, pos)
            pos = _WS.match(text, pos).end()
            if pos >= n or text[pos] not in ",}":
                return None
    except (JsonError, IndexError):
        return None
