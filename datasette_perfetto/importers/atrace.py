"""atrace markers (ftrace `print` events): B|pid|name, E|pid, C|pid|name|value, I|pid|name.

Only the parts the track-event importer shares a thread track with; the full
ftrace importer (scheduling, async S/F, counters per process) builds on this.
"""

from __future__ import annotations

from typing import Optional

from ..model import TraceContext
from .ftrace import ftrace_handler
from .track_event import text

EV_ATRACE = 3


def parse_print(buf: str) -> Optional[tuple]:
    """('B', tgid, name) | ('E', tgid) | ('C', tgid, name, value) | ('I', tgid, name), or None."""
    line = buf.rstrip("\n")
    if len(line) < 1 or (len(line) > 1 and line[1] != "|"):
        return None
    kind = line[0]
    parts = line.split("|")
    try:
        tgid = int(parts[1]) if len(parts) > 1 and parts[1] else 0
    except ValueError:
        return None
    if kind == "B" and len(parts) >= 3:
        return ("B", tgid, "|".join(parts[2:]))
    if kind == "E":
        return ("E", tgid)
    if kind == "I" and len(parts) >= 3:
        return ("I", tgid, parts[2])
    if kind == "C" and len(parts) >= 4:
        try:
            return ("C", tgid, parts[2], float(parts[3]))
        except ValueError:
            return None
    return None


class AtraceParser:
    def __init__(self, trace: TraceContext, thread_track) -> None:
        self.trace = trace
        self.thread_track = thread_track  # utid -> track id (shared with track events)

    def parse(self, ts: int, ev: tuple) -> None:
        _, tid, buf = ev
        marker = parse_print(buf)
        if marker is None:
            return  # not an atrace marker: an ordinary kernel print
        procs = self.trace.processes
        kind, tgid = marker[0], marker[1]
        utid = procs.update_thread(tid, tgid) if tgid else procs.get_or_create_thread(tid)
        if kind == "B":
            self.trace.slices.begin(ts, self.thread_track(utid), None, marker[2], [])
        elif kind == "E":
            self.trace.slices.end(ts, self.thread_track(utid), None, None, [])
        elif kind == "I":
            self.trace.slices.scoped(ts, 0, self.thread_track(utid), None, marker[2], [])
        elif kind == "C":
            upid = procs.thread(utid).upid
            if upid is None:
                return
            track = self.trace.tracks.intern("atrace_counter", (("upid", upid), ("name", marker[2])), "counter",
                                             marker[2])
            self.trace.insert_counter(ts, track, marker[3])


def _atrace(parser) -> AtraceParser:
    return parser.state("atrace", lambda: AtraceParser(parser.trace, parser.thread_track))


@ftrace_handler("print")
def _print(parser, ts: int, cpu: int, pid: int, event) -> None:
    _atrace(parser).parse(ts, (EV_ATRACE, pid, text(event.buf)))
