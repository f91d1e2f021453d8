"""Streams a Chrome JSON trace: one decoded event at a time, never the whole file.

The file is either an array of events or an object whose `traceEvents` key
holds that array (other keys: `metadata`, `displayTimeUnit`, `systemTraceEvents`
(ftrace text), PyTorch's `distributedInfo`, anything else skipped), in any order.
The reader walks the outer structure itself and hands each element of the events
array to the standard library's C decoder (`raw_decode`), so memory is bounded by
the read buffer plus the largest single event. An event that decoder refuses is
read again by trace_processor's own, laxer rules (lenient.py).

It is as tolerant as trace_processor's tokenizer and then some: trailing
commas, raw control characters inside strings, a missing final `]`, a cut-off
last event (counted), and, unlike trace_processor, a malformed event in the
middle is counted and skipped instead of failing the whole file.
"""

from __future__ import annotations

import codecs
import json
import re
import zlib
from collections.abc import Callable, Generator, Iterator
from typing import Any, BinaryIO, cast

from ...stats import Stats
from .lenient import AlwaysMatches as _AlwaysMatches
from .lenient import object_fields as object_fields
from .lenient import parse_event, unescape

CHUNK_BYTES = 1 << 20


def _escape_bad_bytes(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeDecodeError):
        raise err  # registered for decoding only
    # Bytes that are not UTF-8 become the text \xNN (as for proto traces). A
    # JSON string needs the backslash escaped, so the decoded value reads \xNN.
    bad = err.object[err.start : err.end]
    return "".join(f"\\\\x{b:02x}" for b in bad), err.end


codecs.register_error("datasette_perfetto_json_xescape", _escape_bad_bytes)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")  # NaN / Infinity: not JSON, trace_processor rejects them too


_DECODER = json.JSONDecoder(strict=False, parse_constant=_reject_constant)
raw_decode = _DECODER.raw_decode


_SEPARATORS = cast(_AlwaysMatches, re.compile(r"[\s,]*"))
_WHITESPACE = cast(_AlwaysMatches, re.compile(r"\s*"))
# The rest of a string after its opening quote: stops at the closing quote, or
# at the end of the buffer (possibly on a lone backslash).
_STRING_REST = cast(_AlwaysMatches, re.compile(r'[^"\\]*(?:\\[\s\S][^"\\]*)*'))
_STRUCTURAL = re.compile(r'["{}\[\]]')
_SCALAR = cast(_AlwaysMatches, re.compile(r"[^\s,}\]]*"))
# An escaped newline ends a systemTraceEvents line: `\n` after any number of escape pairs.
_ESCAPED_NEWLINE = re.compile(r"(?<!\\)(?:\\\\)*\\n")
MAX_SYSTEM_LINE = 16 << 20
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
# Where one event of an events array ends and the next begins (the `{` is the next's start).
_EVENT_BOUNDARY = re.compile(r"\}\s*,\s*\{")
# How far before its offset a split helper looks for the boundary, so that an event starting
# right at the offset is found too.
BOUNDARY_LOOKBACK = 256

# Top-level parts the reader yields besides events.
METADATA = "metadata"
DISPLAY_TIME_UNIT = "displayTimeUnit"
SYSTEM_TRACE_EVENTS = "systemTraceEvents"  # one line of that string (ftrace text), parsed as systrace
DISTRIBUTED_INFO = "distributedInfo"  # PyTorch profiler: {"rank": ..., "world_size": ..., "backend": ...}
EVENT = "event"


def scan_value(buf: str, p: int, depth: int = 0, in_string: bool = False) -> tuple[int, int, bool, bool]:
    """Scans one JSON value from p (or continues a scan): (position, depth, in_string, done).

    Only the structure is followed (strings, brackets), nothing is decoded;
    `done` is False when the buffer ended first, and the returned state then
    resumes the scan on more text.
    """
    n = len(buf)
    while p < n:
        if in_string:
            p = _STRING_REST.match(buf, p).end()
            if p >= n or buf[p] != '"':
                return p, depth, True, False  # the string (or its escape) goes on past the buffer
            p += 1
            in_string = False
            if depth == 0:
                return p, 0, False, True
            continue
        c = buf[p]
        if c == '"':
            in_string = True
            p += 1
        elif c == "{" or c == "[":
            depth += 1
            p += 1
        elif c == "}" or c == "]":
            p += 1
            depth -= 1
            if depth <= 0:
                return p, 0, False, True
        elif depth == 0:
            end = _SCALAR.match(buf, p).end()
            if end >= n:
                return end, 0, False, False
            return end, 0, False, True
        else:
            m = _STRUCTURAL.search(buf, p)
            p = m.start() if m else n
    return p, depth, in_string, False


def _clean_surrogates(value):
    """Lone UTF-16 surrogates (from \\udXXX escapes) cannot be stored as UTF-8: escape them as text.
    Containers (fresh from the decoder) are cleaned in place, with a stack rather than recursion:
    JSON can nest deeper than Python's call stack."""
    if isinstance(value, str):
        return _escape_surrogates(value)
    pending = [value] if isinstance(value, (dict, list)) else []
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            items = list(node.items())
            node.clear()
            for key, item in items:
                if isinstance(item, str):
                    item = _escape_surrogates(item)
                elif isinstance(item, (dict, list)):
                    pending.append(item)
                node[_escape_surrogates(key)] = item
        else:
            for i, item in enumerate(node):
                if isinstance(item, str):
                    node[i] = _escape_surrogates(item)
                elif isinstance(item, (dict, list)):
                    pending.append(item)
    return value


def _escape_surrogates(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class JsonTraceReader:
    def __init__(self, stream: BinaryIO, stats: Stats) -> None:
        self.stream = stream
        self.stats = stats
        self._decoder = codecs.getincrementaldecoder("utf-8")("datasette_perfetto_json_xescape")
        self.buf = ""
        self.pos = 0
        self.dropped = 0  # characters of text before buf (read and let go): buf[i] is at offset dropped + i
        # A split import's importer: the first event that starts at or after `handoff_at` (a text offset)
        # is offered to `handoff(offset)`, which returns where the helper's share of the events array
        # ended, whether the array was closed there and how many events it read, or None (this reader
        # goes on by itself).
        self.handoff_at: int | None = None
        self.handoff: Callable[[int], tuple[int, bool, int] | None] | None = None
        self.value_start = 0  # where the last decoded value began in buf
        self.eof = False
        self.bytes_read = 0
        self.events_read = 0
        self._may_have_surrogates = False

    # -- buffer ----------------------------------------------------------------
    def _fill(self, at_least: int = CHUNK_BYTES) -> bool:
        """Drops the consumed text and appends at least `at_least` more bytes' worth; False at end of input."""
        if self.eof:
            return False
        chunks = []
        got = 0
        while got < at_least:
            try:
                data = self.stream.read(max(CHUNK_BYTES, at_least - got))
            except (EOFError, OSError, zlib.error):
                # A gzip file cut short: keep what was read, as for a truncated trace.
                self.stats.inc("compressed_file_truncated")
                data = b""
            if not data:
                self.eof = True
                if getattr(self.stream, "truncated", False):
                    self.stats.inc("compressed_file_truncated")
                break
            got += len(data)
            chunks.append(data)
        self.bytes_read += got
        text = self._decoder.decode(b"".join(chunks), final=self.eof)
        if "\\u" in text or (text[:1] == "u" and self.buf.endswith("\\")):
            self._may_have_surrogates = True
        self.buf = self.buf[self.pos :] + text
        self.dropped += self.pos
        self.pos = 0
        return bool(text)

    def _skip(self, pattern: _AlwaysMatches) -> str | None:
        """Skips what `pattern` matches (reading on as needed); the next character, None at end of input."""
        while True:
            self.pos = pattern.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                return None

    def _decode(self) -> tuple[str, object]:
        """Decodes the value at pos: ("ok", value), ("bad", None) skipped past it, or ("eof", None)."""
        while True:
            try:
                value, end = raw_decode(self.buf, self.pos)
            except (ValueError, RecursionError):
                end, _, _, complete = scan_value(self.buf, self.pos)
                if complete:
                    # Refused by the standard decoder (a trailing comma, a number out of its
                    # range, too deep): read again by trace_processor's rules.
                    value = parse_event(self.buf[self.pos : end]) if self.buf[self.pos] == "{" else None
                    self.value_start = self.pos
                    self.pos = end
                    return ("bad", None) if value is None else ("ok", value)
                if not self._fill(max(CHUNK_BYTES, len(self.buf) - self.pos)):
                    return "eof", None
                continue
            if self._may_have_surrogates and _SURROGATE_ESCAPE.search(self.buf, self.pos, end):
                value = _clean_surrogates(value)
            self.value_start = self.pos
            self.pos = end
            return "ok", value

    def value_text(self) -> str | None:
        """The text of the value at pos, scanned (not decoded), and pos moved past it; None at end of input."""
        depth, in_string, offset = 0, False, 0
        while True:
            p, depth, in_string, done = scan_value(self.buf, self.pos + offset, depth, in_string)
            if done:
                text = self.buf[self.pos : p]
                self.pos = p
                return text
            offset = p - self.pos
            if not self._fill():
                return None

    def skip_value(self) -> bool:
        """Skips the value at pos without holding it (it may be larger than memory); False at end of input."""
        depth, in_string = 0, False
        while True:
            p, depth, in_string, done = scan_value(self.buf, self.pos, depth, in_string)
            self.pos = p
            if done:
                return True
            if not self._fill():
                return False

    def skip_to(self, offset: int) -> bool:
        """Moves on to text offset `offset`, letting go of the text before it; False if the input ends first."""
        while self.dropped + len(self.buf) < offset:
            self.pos = len(self.buf)
            if not self._fill():
                return False
        self.pos = max(offset - self.dropped, self.pos)
        return True

    def skip_rest(self) -> None:
        """Reads to the end of the input, letting go of it (as reading on would have: the stats at its end)."""
        self.pos = len(self.buf)
        while self._fill():
            self.pos = len(self.buf)

    # -- a split import's helper -------------------------------------------------
    def is_bare_array(self) -> bool:
        """Whether the input is an array of events (rather than an object): for a reader that starts
        in the middle of the events array with events_from_here()."""
        return self._skip(_WHITESPACE) == "["

    def next_event_start(self, offset: int) -> int | None:
        """The first text offset at or after `offset` where an element of an events array follows
        another (`}`, a comma, `{`): the guess of a split helper, which starts reading there, at
        where the importer's share ends. None if there is none (the importer then reads on alone;
        a wrong guess is caught by the importer, whose event there does not start at it)."""
        if not self.skip_to(max(offset - BOUNDARY_LOOKBACK, 0)):
            return None
        while True:
            for m in _EVENT_BOUNDARY.finditer(self.buf, self.pos):
                start = m.end() - 1
                if self.dropped + start >= offset:
                    self.pos = start
                    return self.dropped + start
            # A boundary may straddle the buffer's end: keep from its last `}` on.
            last = self.buf.rfind("}", self.pos)
            self.pos = last if last >= 0 else len(self.buf)
            if not self._fill():
                return None

    def events_from_here(self, bare_array: bool) -> Generator[tuple[str, Any], None, bool]:
        """The events from the current position (an event's start) to the end of their array:
        the share of a split helper. Returns as _events does."""
        return self._events(bare_array)

    # -- structure ---------------------------------------------------------------
    def parts(self) -> Iterator[tuple[str, Any]]:
        """Yields (EVENT, dict) per trace event, (METADATA, text of the metadata object),
        (DISPLAY_TIME_UNIT, value) and (DISTRIBUTED_INFO, dict), in file order."""
        first = self._skip(_WHITESPACE)
        if first == "[":
            self.pos += 1
            yield from self._events(bare_array=True)
        elif first == "{":
            self.pos += 1
            yield from self._outer_object()

    def _outer_object(self) -> Iterator[tuple[str, Any]]:
        while True:
            c = self._skip(_SEPARATORS)
            if c is None:
                self.stats.inc("json_tokenizer_failure")  # the file ends before the object closes
                return
            if c == "}":
                return
            status, key = self._decode() if c == '"' else ("bad", None)
            if status != "ok" or not isinstance(key, str) or self._skip(_WHITESPACE) != ":":
                # Not `"key": value`: nothing after it can be trusted.
                self.stats.inc("json_tokenizer_failure")
                return
            self.pos += 1
            c = self._skip(_WHITESPACE)
            if c is None:
                self.stats.inc("json_tokenizer_failure")
                return
            if key == "traceEvents" and c == "[":
                self.pos += 1
                if not (yield from self._events(bare_array=False)):
                    return
            elif key == "metadata" and c == "{":
                # The text, not the value: trace_processor keeps nested values as written.
                text = self.value_text()
                if text is None:
                    self.stats.inc("json_tokenizer_failure")
                    return
                yield METADATA, text
            elif key == "systemTraceEvents" and c == '"':
                self.pos += 1
                if not (yield from self._system_trace_lines()):
                    self.stats.inc("json_tokenizer_failure")
                    return
            elif key == "displayTimeUnit" and c == '"':
                status, value = self._decode()
                if status == "ok":
                    yield DISPLAY_TIME_UNIT, value
            elif key == "distributedInfo" and c == "{":
                status, value = self._decode()  # a small object: rank, world size, process groups
                if status == "ok":
                    yield DISTRIBUTED_INFO, value
                elif status == "eof":
                    self.stats.inc("json_tokenizer_failure")
                    return
            else:
                if key == "traceEvents":
                    self.stats.inc("json_tokenizer_failure")  # traceEvents that is not an array
                if not self.skip_value():
                    self.stats.inc("json_tokenizer_failure")
                    return

    def _system_trace_lines(self) -> Generator[tuple[str, Any], None, bool]:
        """The lines of the `systemTraceEvents` string, streamed (it can be the size of an ftrace
        capture); returns False if the input ended inside it. As in trace_processor, text after
        the last newline is not a line."""
        pending: list[str] = []  # the escaped text of the line being read
        pending_size = 0
        while True:
            end = _STRING_REST.match(self.buf, self.pos).end()
            closed = end < len(self.buf) and self.buf[end] == '"'
            start = self.pos
            for m in _ESCAPED_NEWLINE.finditer(self.buf, start, end):
                pending.append(self.buf[start : m.end() - 2])  # escaped backslashes before it stay
                yield SYSTEM_TRACE_EVENTS, unescape("".join(pending))
                pending, pending_size = [], 0
                start = m.end()
            if pending_size + end - start > MAX_SYSTEM_LINE:
                self.stats.inc("systrace_parse_failure")  # no newline in sight: not text lines
                pending, pending_size = [], 0
            else:
                pending.append(self.buf[start:end])
                pending_size += end - start
            self.pos = end
            if closed:
                self.pos += 1
                return True
            if not self._fill():
                return False

    def _events(self, bare_array: bool) -> Generator[tuple[str, Any], None, bool]:
        """The elements of an events array; returns False if the input ended inside it."""
        while True:
            c = self._skip(_SEPARATORS)  # trailing and doubled commas are tolerated
            if c is None:
                # A bare array without its closing bracket is accepted as is
                # (trace_processor does too); inside an object the file is cut short.
                if not bare_array:
                    self.stats.inc("json_tokenizer_failure")
                return False
            if c == "]":
                self.pos += 1
                return True
            if c != "{":
                self.stats.inc("json_tokenizer_failure")  # an element that is not an event object
                if not self.skip_value():
                    return False
                continue
            if self.handoff_at is not None and self.dropped + self.pos >= self.handoff_at:
                self.handoff_at = None  # offered once
                assert self.handoff is not None
                taken = self.handoff(self.dropped + self.pos)
                if taken is not None:  # the helper read the rest of this array
                    end, closed, events = taken
                    self.events_read += events
                    if closed:
                        self.skip_to(end)
                    else:
                        self.skip_rest()
                    return closed
            status, event = self._decode()
            if status == "ok":
                self.events_read += 1
                yield EVENT, event
            elif status == "bad":
                self.stats.inc("json_tokenizer_failure")
            else:
                self.stats.inc("json_tokenizer_failure")  # the last event is cut off
                return False
