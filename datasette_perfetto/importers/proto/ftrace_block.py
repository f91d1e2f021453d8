"""Block device I/O (block_io_start / block_io_done) → slices on one track per device, as
trace_processor's FtraceParser::ParseBlockIoStart and ParseBlockIoDone make them: the track is
its `block_io` counter blueprint's (dimension block_device), the slice is named `block_io`, and
both ends add the request's sector as an arg."""

from __future__ import annotations

from ...model import TraceContext
from .packet_handlers import HandlerContext, ftrace_handler

BLOCK_IO = "block_io"


def _device_track(trace: TraceContext, dev: int) -> int:
    # A counter blueprint that carries slices: so trace_processor declares it.
    return trace.tracks.intern(BLOCK_IO, (("block_device", dev),), "counter")


def _sector(ev) -> list:
    return [("sector", "sector", "uint", ev.sector)]


@ftrace_handler("block_io_start")
def _block_io_start(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    parser.trace.slices.begin(ts, _device_track(parser.trace, ev.dev), None, BLOCK_IO, _sector(ev))


@ftrace_handler("block_io_done")
def _block_io_done(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    parser.trace.slices.end(ts, _device_track(parser.trace, ev.dev), None, BLOCK_IO, _sector(ev))
