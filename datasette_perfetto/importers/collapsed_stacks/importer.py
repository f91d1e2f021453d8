"""Collapsed stacks (`main;parse;read 42` lines: Brendan Gregg's stackcollapse output,
py-spy's `--format raw`, async-profiler's collapsed output), as trace_processor's
collapsed_stack reader imports them: one `aggregate_profile` per file and one
`aggregate_sample` per line, weighted by the line's count (the format has no
timestamps, so there are no per-sample rows). Frames hang off a placeholder
mapping named `[collapsed_stack]`; the callstack is interned like every other
profiler's. Unlike trace_processor, which skips bad lines silently, each one is
counted in `collapsed_stack_malformed_line`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import BinaryIO

from ...model import TraceContext
from ...trackers.stack_profile_tracker import for_trace
from ..common.options import ImportOptions
from ..common.streams import file_position

CHUNK = 1 << 20
_DIGITS = re.compile(rb"[0-9]+")


def _is_collapsed_line(line: bytes) -> bool:
    line = line.strip()
    space = line.rfind(b" ")
    return space > 0 and bool(_DIGITS.fullmatch(line[space + 1 :])) and b";" in line[:space]


def looks_like_collapsed_stacks(head: bytes) -> bool:
    """True if the first (up to three) lines that are not blank or comments are collapsed
    stacks with at least two frames; the last line of `head` may be cut off, so it only
    counts if it is the only one."""
    lines = head.split(b"\n")
    if len(lines) > 1 and len(head) >= 4096:
        lines = lines[:-1]
    checked = 0
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith(b"#"):
            continue
        if not _is_collapsed_line(stripped):
            return False
        checked += 1
        if checked == 3:
            break
    return checked > 0


class CollapsedStackImporter:
    def __init__(self, trace: TraceContext, options: ImportOptions | None = None) -> None:  # options: none apply
        self.trace = trace
        self.stats = trace.stats
        self.stacks, _ = for_trace(trace)
        self.profile_id: int | None = None
        self.mapping_id: int | None = None

    def run(self, stream: BinaryIO, progress: Callable[[float], None]) -> None:
        position = file_position(stream)
        size = max(self.trace.size, 1)
        for i, line in enumerate(_lines(stream)):
            self.trace.packets_read += 1
            self._line(line)
            if i & 0x3FFF == 0:
                progress(min(position() / size, 1.0))
        progress(1.0)

    def _line(self, raw_line: bytes) -> None:
        line = raw_line.strip()
        if not line or line.startswith(b"#"):
            return
        if self.profile_id is None:
            self.profile_id = self.trace.storage.insert(
                "aggregate_profile", ("collapsed_stack_file", "collapsed_stack samples", "samples", "count")
            )
            self.mapping_id = self.stacks.dummy_mapping("[collapsed_stack]")
        space = line.rfind(b" ")
        count = line[space + 1 :] if space > 0 else b""
        if not _DIGITS.fullmatch(count) or int(count) <= 0 or int(count) >= 1 << 63:
            self.stats.inc("collapsed_stack_malformed_line")
            return
        names = [name for name in line[:space].decode("utf-8", "backslashreplace").split(";") if name]
        if not names:
            self.stats.inc("collapsed_stack_malformed_line")
            return
        stacks, mapping_id = self.stacks, self.mapping_id
        if mapping_id is None:  # made with the profile, above
            return
        callsite_id = stacks.callstack([stacks.dummy_frame(mapping_id, name, None, None) for name in names])
        self.trace.storage.insert("aggregate_sample", (self.profile_id, callsite_id, float(int(count))))


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    rest = b""
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        yield from lines
    if rest:
        yield rest
