"""Pixel display (DPU) kernel events from ftrace, as trace_processor's PixelDisplayTracker and
FtraceParser import them: instants on per-panel / per-display tracks for frame start/done
timeouts and missing frames ("frame_start_timeout[<output>]", ...), DPU underruns and line
underruns, DDIC underruns (gram_collision), and "disp_vblank_irq_enable" slices while a
display's vblank interrupt is enabled.
"""

from __future__ import annotations

from ...storage import Arg
from ..common.values import UINT32_MAX, stack_string
from .packet_handlers import HandlerContext, ftrace_handler


def _int(key: str, value: int) -> Arg:
    return (key, key, "int", value)


def _instant(parser: HandlerContext, ts: int, type: str, dim: str, value: int, label: str, name: str, args) -> None:
    trace = parser.trace
    value &= UINT32_MAX  # unsigned dimensions
    track = trace.tracks.intern(type, ((dim, value),), "slice", stack_string(f"{label}[{value}]", 256))
    trace.slices.scoped(ts, 0, track, None, name, args)


def _frame_args(ev, during_disable: bool = False) -> list[Arg]:
    args = [
        _int("display_id", ev.display_id),
        _int("output_id", ev.output_id),
        _int("frames_pending", ev.frames_pending),
        _int("te_count", ev.te_count),
    ]
    if during_disable:
        args.append(_int("during_disable", ev.during_disable))
    return args


def _frame_event(kind: str, during_disable: bool = False):
    def handler(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
        args = _frame_args(ev, during_disable)
        _instant(parser, ts, f"disp_{kind}", "panel_index", ev.output_id, kind, kind, args)

    return handler


ftrace_handler("dpu_disp_frame_start_timeout")(_frame_event("frame_start_timeout"))
ftrace_handler("dpu_disp_frame_done_timeout")(_frame_event("frame_done_timeout", during_disable=True))
ftrace_handler("dpu_disp_frame_start_missing")(_frame_event("frame_start_missing"))
ftrace_handler("dpu_disp_frame_done_missing")(_frame_event("frame_done_missing"))


@ftrace_handler("dpu_disp_dpu_underrun")
def _dpu_underrun(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    args = [_int("vsync_count", ev.vsync_count), _int("pending_frame", ev.frames_pending)]
    _instant(parser, ts, "disp_dpu_underrun", "display_id", ev.id, "underrun", "disp_dpu_underrun", args)


@ftrace_handler("dpu_disp_dpu_line_underrun")
def _dpu_line_underrun(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    args = [_int("vsync_count", ev.vsync_count), _int("frames_pending", ev.frames_pending)]
    label, name = "line_underrun", "disp_line_dpu_underrun"
    _instant(parser, ts, "disp_dpu_line_underrun", "display_id", ev.id, label, name, args)


@ftrace_handler("gram_collision")
def _gram_collision(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    args = [_int("collision_cnt", ev.collision_cnt)]
    _instant(parser, ts, "ddic_underrun", "panel_index", ev.panel_index, "ddic_underrun", "ddic_underrun", args)


@ftrace_handler("dpu_disp_vblank_irq_enable")
def _vblank_irq_enable(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    trace = parser.trace
    output = ev.output_id & UINT32_MAX
    name = stack_string(f"vblank_irq_en[{output}]", 256)
    track = trace.tracks.intern("disp_vblank_irq_enable", (("display_id", output),), "slice", name)
    if ev.enable:
        args = [_int("display_id", ev.id), _int("output_id", ev.output_id)]
        trace.slices.begin(ts, track, None, "disp_vblank_irq_enable", args)
    else:
        trace.slices.end(ts, track, None, None, [])
