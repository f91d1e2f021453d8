"""Streams a Chrome JSON trace: one decoded event at a time, never the whole file.

The file is either an array of events or an object whose `traceEvents` key
holds that array (other keys: `metadata`, `displayTimeUnit`, PyTorch's
`distributedInfo`, anything else skipped). The reader walks the outer structure itself and hands each element
of the events array to the standard library's C decoder (`raw_decode`), so
memory is bounded by the read buffer plus the largest single event.

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
from collections.abc import Generator, Iterator
from typing import Any, BinaryIO, Protocol, cast

from ...stats import Stats

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


class _AlwaysMatches(Protocol):
    """A compiled pattern that matches the empty string, so that match() never fails."""

    def match(self, string: str, pos: int = ...) -> re.Match[str]: ...


_SEPARATORS = cast(_AlwaysMatches, re.compile(r"[\s,]*"))
_WHITESPACE = cast(_AlwaysMatches, re.compile(r"\s*"))
# The rest of a string after its opening quote: stops at the closing quote, or
# at the end of the buffer (possibly on a lone backslash).
_STRING_REST = cast(_AlwaysMatches, re.compile(r'[^"\\]*(?:\\[\s\S][^"\\]*)*'))
_STRUCTURAL = re.compile(r'["{}\[\]]')
_SCALAR = cast(_AlwaysMatches, re.compile(r"[^\s,}\]]*"))
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")

# Top-level parts the reader yields besides events.
METADATA = "metadata"
DISPLAY_TIME_UNIT = "displayTimeUnit"
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
    """Lone UTF-16 surrogates (from \\udXXX escapes) cannot be stored as UTF-8: escape them as text."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_clean_surrogates(k): _clean_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_surrogates(v) for v in value]
    return value


class JsonTraceReader:
    def __init__(self, stream: BinaryIO, stats: Stats) -> None:
        self.stream = stream
        self.stats = stats
        self._decoder = codecs.getincrementaldecoder("utf-8")("datasette_perfetto_json_xescape")
        self.buf = ""
        self.pos = 0
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
            except ValueError:
                _, _, _, complete = scan_value(self.buf, self.pos)
                if complete:
                    self.skip_value()
                    return "bad", None
                if not self._fill(max(CHUNK_BYTES, len(self.buf) - self.pos)):
                    return "eof", None
                continue
            if self._may_have_surrogates and _SURROGATE_ESCAPE.search(self.buf, self.pos, end):
                value = _clean_surrogates(value)
            self.value_start = self.pos
            self.pos = end
            return "ok", value

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
                status, _ = self._decode()
                if status == "ok":
                    # The text, not the value: trace_processor keeps nested values as written.
                    yield METADATA, self.buf[self.value_start : self.pos]
                elif status == "eof":
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
            status, event = self._decode()
            if status == "ok":
                self.events_read += 1
                yield EVENT, event
            elif status == "bad":
                self.stats.inc("json_tokenizer_failure")
            else:
                self.stats.inc("json_tokenizer_failure")  # the last event is cut off
                return False


def object_fields(text: str) -> Iterator[tuple[str, object, str]]:
    """(key, value, value as written) for each field of the JSON object in `text`."""
    pos = _WHITESPACE.match(text, 0).end() + 1  # past the opening brace
    while True:
        pos = _SEPARATORS.match(text, pos).end()
        if pos >= len(text) or text[pos] == "}":
            return
        try:
            key, pos = raw_decode(text, pos)
            pos = _WHITESPACE.match(text, pos).end()
            if text[pos] != ":" or not isinstance(key, str):
                return
            start = _WHITESPACE.match(text, pos + 1).end()
            value, pos = raw_decode(text, start)
        except (ValueError, IndexError):
            return
        yield key, value, text[start:pos]
