"""Video kernel events from ftrace, as trace_processor's V4l2Tracker and VirtioVideoTracker import them.

- V4L2 (v4l2_qbuf / v4l2_dqbuf) and videobuf2 (vb2_v4l2_buf_queue / _buf_done / _qbuf / _dqbuf):
  instants in category "Video 4 Linux 2" on the emitting thread's track, named after the ioctl
  and the buffer ("VIDIOC_QBUF minor=0 seq=0 type=9 index=19"), with the buffer's fields as args
  (buffer type, field, flags and timecode decoded as linux/videodev2.h names them); a flow joins
  each VIDIOC_QBUF to the VIDIOC_DQBUF of the same buffer.
- virtio-video: one "Resource #<id>" slice per queued resource on compressed
  "virtio_video stream #<stream> INPUT|OUTPUT" tracks (the done event adds the resource's args),
  and 100 µs command slices on "virtio_video stream #<stream> Requests|Responses" tracks.
"""

from __future__ import annotations

from ...model import TraceContext
from ...storage import Arg
from ...trackers.async_track_set import CompressedTrackSets
from ..common.values import UINT32_MAX, stack_string
from .ftrace_syscalls import thread_slice_track
from .packet_handlers import HandlerContext, ftrace_handler

V4L2_CATEGORY = "Video 4 Linux 2"

# linux/videodev2.h: enum v4l2_buf_type, enum v4l2_field, V4L2_TC_TYPE_*.
BUF_TYPES = {
    1: "VIDEO_CAPTURE",
    2: "VIDEO_OUTPUT",
    3: "VIDEO_OVERLAY",
    4: "VBI_CAPTURE",
    5: "VBI_OUTPUT",
    6: "SLICED_VBI_CAPTURE",
    7: "SLICED_VBI_OUTPUT",
    8: "VIDEO_OUTPUT_OVERLAY",
    9: "VIDEO_CAPTURE_MPLANE",
    10: "VIDEO_OUTPUT_MPLANE",
    11: "SDR_CAPTURE",
    12: "SDR_OUTPUT",
    13: "META_CAPTURE",
    14: "META_OUTPUT",
    0x80: "PRIVATE",
}
BUF_FIELDS = (
    "ANY",
    "NONE",
    "TOP",
    "BOTTOM",
    "INTERLACED",
    "SEQ_TB",
    "SEQ_BT",
    "ALTERNATE",
    "INTERLACED_TB",
    "INTERLACED_BT",
)
TIMECODE_TYPES = {1: "24FPS", 2: "25FPS", 3: "30FPS", 4: "50FPS", 5: "60FPS"}
# V4L2_BUF_FLAG_* bits in trace_processor's order.
BUF_FLAG_BITS = (
    (0x00000001, "MAPPED"),
    (0x00000002, "QUEUED"),
    (0x00000004, "DONE"),
    (0x00000008, "KEYFRAME"),
    (0x00000010, "PFRAME"),
    (0x00000020, "BFRAME"),
    (0x00000040, "ERROR"),
    (0x00000080, "IN_REQUEST"),
    (0x00000100, "TIMECODE"),
    (0x00000200, "M2M_HOLD_CAPTURE_BUF"),
    (0x00000400, "PREPARED"),
    (0x00000800, "NO_CACHE_INVALIDATE"),
    (0x00001000, "NO_CACHE_CLEAN"),
    (0x0000E000, "TIMESTAMP_MASK"),
    (0, "TIMESTAMP_UNKNOWN"),
    (0x00002000, "TIMESTAMP_MONOTONIC"),
    (0x00004000, "TIMESTAMP_COPY"),
    (0x00070000, "TSTAMP_SRC_MASK"),
    (0, "TSTAMP_SRC_EOF"),
    (0x00010000, "TSTAMP_SRC_SOE"),
    (0x00100000, "LAST"),
    (0x00800000, "REQUEST_FD"),
)


def buf_flags(flags: int) -> str:
    """V4L2 buffer flags as "A|B"; the zero-valued names appear only when no flag is set."""
    return "|".join(name for bit, name in BUF_FLAG_BITS if (flags & bit if bit else flags == 0))


def timecode_flags(flags: int) -> str:
    out = []
    if flags == 0:
        out.append("USERBITS_USERDEFINED")
    if flags & 0x1:
        out.append("FLAG_DROPFRAME")
    if flags & 0x2:
        out.append("FLAG_COLORFRAME")
    userbits = flags & 0xC
    if userbits:
        out.append(f"USERBITS_field({userbits >> 2:02b})")
    if flags & 0x8:
        out.append("USERBITS_8BITCHARS")
    return "|".join(out)


def _int(key: str, value: int) -> Arg:
    return (key, key, "int", value)


def _str(key: str, value: str | None) -> Arg:
    return (key, key, "string", value)


def buffer_args(ev, with_buffer: bool) -> list[Arg]:
    """The buffer's args; index, type and bytesused only for the VIDIOC events (with_buffer)."""
    args = [_int("minor", ev.minor)]
    if with_buffer:
        args += [_int("index", ev.index), _str("type", BUF_TYPES.get(ev.type)), _int("bytesused", ev.bytesused)]
    field = ev.field
    args += [
        _str("flags", buf_flags(ev.flags)),
        _str("field", BUF_FIELDS[field] if field < len(BUF_FIELDS) else None),
        _int("timestamp", ev.timestamp),
        _str("timecode_type", TIMECODE_TYPES.get(ev.timecode_type)),
        _str("timecode_flags", timecode_flags(ev.timecode_flags)),
        _int("timecode_frames", ev.timecode_frames),
        _int("timecode_seconds", ev.timecode_seconds),
        _int("timecode_minutes", ev.timecode_minutes),
        _int("timecode_hours", ev.timecode_hours),
        _int("timecode_userbits0", ev.timecode_userbits0),
        _int("timecode_userbits1", ev.timecode_userbits1),
        _int("timecode_userbits2", ev.timecode_userbits2),
        _int("timecode_userbits3", ev.timecode_userbits3),
        _int("sequence", ev.sequence),
    ]
    return args


def _v4l2_slice(parser: HandlerContext, ts: int, pid: int, name: str, args: list[Arg]) -> int | None:
    trace = parser.trace
    track = thread_slice_track(parser, trace.processes.get_or_create_thread(pid))
    return trace.slices.scoped(ts, 0, track, V4L2_CATEGORY, stack_string(name, 64), args)


def _queued(parser: HandlerContext) -> dict[tuple, int | None]:
    """(minor, sequence, type, index) of a queued buffer -> its VIDIOC_QBUF instant."""
    return parser.state("ftrace_v4l2", dict)


def _buffer_name(ioctl: str, ev) -> str:
    return f"{ioctl} minor={ev.minor} seq={ev.sequence} type={ev.type} index={ev.index}"


@ftrace_handler("v4l2_qbuf")
def _v4l2_qbuf(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    slice_id = _v4l2_slice(parser, ts, pid, _buffer_name("VIDIOC_QBUF", ev), buffer_args(ev, True))
    # A buffer queued again before its dequeue keeps its first queue instant (a map insert).
    _queued(parser).setdefault((ev.minor, ev.sequence, ev.type, ev.index), slice_id)


@ftrace_handler("v4l2_dqbuf")
def _v4l2_dqbuf(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    slice_id = _v4l2_slice(parser, ts, pid, _buffer_name("VIDIOC_DQBUF", ev), buffer_args(ev, True))
    key = (ev.minor, ev.sequence, ev.type, ev.index)
    queued = _queued(parser)
    if key in queued:
        queue_slice = queued.pop(key)
        if queue_slice is not None and slice_id is not None:
            parser.trace.flows.insert(queue_slice, slice_id)


def _vb2(name: str):
    def handler(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
        label = f"{name} minor={ev.minor} seq={ev.sequence} type=0 index=0"
        _v4l2_slice(parser, ts, pid, label, buffer_args(ev, False))

    return handler


ftrace_handler("vb2_v4l2_buf_queue")(_vb2("vb2_v4l2_buf_queue"))
ftrace_handler("vb2_v4l2_buf_done")(_vb2("vb2_v4l2_buf_done"))
ftrace_handler("vb2_v4l2_qbuf")(_vb2("vb2_v4l2_qbuf"))
ftrace_handler("vb2_v4l2_dqbuf")(_vb2("vb2_v4l2_qbuf"))  # sic: trace_processor names dqbuf "vb2_v4l2_qbuf"


# -- virtio-video --------------------------------------------------------------------------

QUEUE_TYPES = {0x100: "INPUT", 0x101: "OUTPUT"}  # VIRTIO_VIDEO_QUEUE_TYPE_*
COMMANDS = {
    0x100: "QUERY_CAPABILITY",
    0x101: "STREAM_CREATE",
    0x102: "STREAM_DESTROY",
    0x103: "STREAM_DRAIN",
    0x104: "RESOURCE_CREATE",
    0x105: "RESOURCE_QUEUE",
    0x106: "RESOURCE_DESTROY_ALL",
    0x107: "QUEUE_CLEAR",
    0x108: "GET_PARAMS",
    0x109: "SET_PARAMS",
    0x10A: "QUERY_CONTROL",
    0x10B: "GET_CONTROL",
    0x10C: "SET_CONTROL",
    0x10D: "GET_PARAMS_EXT",
    0x10E: "SET_PARAMS_EXT",
}
COMMAND_DUR = 100_000  # commands have no end event: each is shown as 100 µs


def _track_sets(parser: HandlerContext) -> CompressedTrackSets:
    trace: TraceContext = parser.trace
    return parser.state("ftrace_virtio_video", lambda: CompressedTrackSets(trace.tracks, trace.new_track_group))


def _resource_track(parser: HandlerContext, ev, kind: str) -> int:
    stream, queue_type = ev.stream_id & UINT32_MAX, ev.queue_type
    name = stack_string(f"virtio_video stream #{stream} {QUEUE_TYPES.get(queue_type, 'Unknown')}", 255)
    dims = (("virtio_stream_id", stream), ("virtio_queue_type", queue_type))
    return _track_sets(parser).get("virtio_video_queue_event", dims, name).track_for(ev.resource_id, kind)


@ftrace_handler("virtio_video_resource_queue")
def _virtio_video_resource_queue(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    track = _resource_track(parser, ev, "begin")
    parser.trace.slices.begin(ts, track, None, f"Resource #{ev.resource_id}", [])


@ftrace_handler("virtio_video_resource_queue_done")
def _virtio_video_resource_queue_done(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    track = _resource_track(parser, ev, "end")
    args = [
        _int("stream_id", ev.stream_id),
        _int("resource_id", ev.resource_id),
        _str("queue_type", QUEUE_TYPES.get(ev.queue_type, "Unknown")),
        _int("data_size0", ev.data_size0),
        _int("data_size1", ev.data_size1),
        _int("data_size2", ev.data_size2),
        _int("data_size3", ev.data_size3),
        ("timestamp", "timestamp", "uint", ev.timestamp),
    ]
    parser.trace.slices.end(ts, track, None, None, args)


def _command(parser: HandlerContext, ts: int, ev, response: bool) -> None:
    stream = ev.stream_id
    name = stack_string(f"virtio_video stream #{stream} {'Responses' if response else 'Requests'}", 64)
    dims = (("virtio_stream_id", stream), ("is_response", int(response)))
    track = _track_sets(parser).get("virtio_video_command", dims, name).for_interval(ts, COMMAND_DUR)
    parser.trace.slices.scoped(ts, COMMAND_DUR, track, None, COMMANDS.get(ev.type, "Unknown"), [])


@ftrace_handler("virtio_video_cmd")
def _virtio_video_cmd(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    _command(parser, ts, ev, False)


@ftrace_handler("virtio_video_cmd_done")
def _virtio_video_cmd_done(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    _command(parser, ts, ev, True)
