"""Android graphics frame events (TracePacket.graphics_frame_event), as trace_processor's
GraphicsFrameEventParser imports them, on graphics_frame_event tracks (the frame_slice view):

- every buffer event is an instant (or a slice of its duration_ns) named after its type on the
  "Buffer: <buffer id> <layer>" track, with frame_number, layer_name and the buffer's
  queue→acquire, acquire→latch and latch→present times as args;
- the buffer's phases become slices named by frame number: APP (dequeue → queue) on
  "APP_<buffer> <layer>", GPU wait (queue → acquire fence) on "GPU_<buffer> <layer>",
  SurfaceFlinger (latch → present fence) on "SF_<buffer> <layer>", and display (present → next
  present of the layer) on "Display_<layer>". A dequeue with no queue after it (lost events)
  leaves its APP slice open and renamed "0".

Buffer events without a buffer_id, and types other than dequeue/queue/acquire/latch, count
graphics_frame_event_parser_errors (the latter are still imported).
"""

from __future__ import annotations

from ...model import TraceContext
from ...storage import Arg
from ..common.values import signed, stack_string, text
from .packet_handlers import HandlerContext, packet_handler

TRACK_TYPE = "graphics_frame_event"
UNSPECIFIED, DEQUEUE, QUEUE, ACQUIRE_FENCE, LATCH, PRESENT_FENCE = 0, 1, 2, 4, 5, 8
EVENT_NAMES = (
    "unspecified_event",
    "Dequeue",
    "Queue",
    "Post",
    "AcquireFenceSignaled",
    "Latch",
    "HWCCompositionQueued",
    "FallbackComposition",
    "PresentFenceSignaled",
    "ReleaseFenceSignaled",
    "Modify",
    "Detach",
    "Attach",
    "Cancel",
)
NO_LAYER_NAME = "no_layer_name"


class BufferTimes:
    __slots__ = ("acquire_ts", "queue_ts", "latch_ts", "last_was_dequeue")

    def __init__(self) -> None:
        self.acquire_ts = 0
        self.queue_ts = 0
        self.latch_ts = 0
        self.last_was_dequeue = False


class Phase:
    """The buffer's open phase: ("dequeue", APP slice id, APP track, ts), ("queue", GPU track),
    ("latch", SF track) or None; and when its acquire fence last signaled."""

    __slots__ = ("recent", "last_acquire_ts")

    def __init__(self) -> None:
        self.recent: tuple | None = None
        self.last_acquire_ts: int | None = None


def _frame_number(value: int) -> Arg:
    return ("frame_number", "frame_number", "int", value)


class GraphicsFrameEventParser:
    def __init__(self, trace: TraceContext) -> None:
        self.trace = trace
        self.buffers: dict[str, BufferTimes] = {}  # buffer id + layer name -> times
        self.phases: dict[str, Phase] = {}  # buffer id + layer name -> open phase
        self.display: dict[str, int] = {}  # layer name -> its Display track

    def track(self, name: str) -> int:
        return self.trace.tracks.intern(TRACK_TYPE, (("name", name),), "slice", name)

    def parse(self, ts: int, frame_event) -> None:
        if not frame_event.HasField("buffer_event"):
            return
        event = frame_event.buffer_event
        if not event.HasField("buffer_id"):
            self.trace.stats.inc("graphics_frame_event_parser_errors")
            return
        # Buffer id + layer name: one buffer can serve several layers.
        layer = text(event.layer_name)
        if event.HasField("layer_name"):
            layer_name, key = layer, stack_string(f"{event.buffer_id}{layer}", 1024)
        else:
            layer_name, key = NO_LAYER_NAME, str(event.buffer_id)
        self._buffer_event(ts, event, layer, layer_name, key)
        self._phase_event(ts, event, layer, layer_name, key)

    def _buffer_event(self, ts: int, event, layer: str, layer_name: str, key: str) -> None:
        trace = self.trace
        times = self.buffers.get(key)
        if times is None:
            times = self.buffers[key] = BufferTimes()
        kind = event.type
        if kind == ACQUIRE_FENCE:
            times.acquire_ts = ts
        elif kind == QUEUE:
            times.queue_ts = ts
        elif kind == LATCH:
            times.latch_ts = ts
        elif kind != DEQUEUE:
            trace.stats.inc("graphics_frame_event_parser_errors")
        prev_was_dequeue = times.last_was_dequeue
        times.last_was_dequeue = kind == DEQUEUE
        name = EVENT_NAMES[kind] if event.HasField("type") and kind < len(EVENT_NAMES) else "unknown_event"
        track = self.track(stack_string(f"Buffer: {event.buffer_id} {layer}", 4096))
        frame_number = event.frame_number
        if kind == QUEUE and prev_was_dequeue:
            # The dequeue's slice learns its frame number (if it is still open).
            trace.slices.add_args(track, [_frame_number(frame_number)])
        args: list[Arg] = [
            _frame_number(frame_number),
            ("layer_name", "layer_name", "string", layer_name),
            ("queue_to_acquire_time", "queue_to_acquire_time", "int", max(times.acquire_ts - times.queue_ts, 0)),
            ("acquire_to_latch_time", "acquire_to_latch_time", "int", times.latch_ts - times.acquire_ts),
            ("latch_to_present_time", "latch_to_present_time", "int", ts - times.latch_ts),
        ]
        trace.slices.scoped(ts, signed(event.duration_ns), track, None, name, args)

    def _phase_event(self, ts: int, event, layer: str, layer_name: str, key: str) -> None:
        slices = self.trace.slices
        phase = self.phases.get(key)
        if phase is None:
            phase = self.phases[key] = Phase()
        kind = event.type
        recent = phase.recent
        if kind == DEQUEUE:
            if recent is not None and recent[0] == "dequeue":
                self._lost_queue(recent)
                phase.recent = None
            track = self.track(stack_string(f"APP_{event.buffer_id} {layer}", 1024))
            slice_id = self._phase_slice(ts, event, track, layer_name)
            if slice_id is not None:
                phase.recent = ("dequeue", slice_id, track, ts)
        elif kind == QUEUE:
            if recent is not None and recent[0] == "dequeue":
                _, slice_id, app_track, dequeue_ts = recent
                # The APP slice is named by the frame number, which the dequeue did not know.
                slices.rename_open(app_track, slice_id, str(event.frame_number))
                slices.end(ts, app_track, None, None, [_frame_number(event.frame_number)])
                if phase.last_acquire_ts is not None and phase.last_acquire_ts > dequeue_ts:
                    # The acquire fence signaled before the queue: no GPU wait.
                    phase.recent = None
                    return
            track = self.track(stack_string(f"GPU_{event.buffer_id} {layer}", 1024))
            self._phase_slice(ts, event, track, layer_name)
            phase.recent = ("queue", track)
        elif kind == ACQUIRE_FENCE:
            if recent is not None and recent[0] == "queue":
                slices.end(ts, recent[1], None, None, [])
                phase.recent = None
            phase.last_acquire_ts = ts
        elif kind == LATCH:
            if recent is not None and recent[0] == "dequeue":
                # b/157578286: the queue event went missing; the APP slice stays open, named "0".
                self._lost_queue(recent)
            track = self.track(stack_string(f"SF_{event.buffer_id} {layer}", 1024))
            self._phase_slice(ts, event, track, layer_name)
            phase.recent = ("latch", track)
        elif kind == PRESENT_FENCE:
            if recent is not None and recent[0] == "latch":
                slices.end(ts, recent[1], None, None, [])
                phase.recent = None
            # The layer's previous display slice ends here. For a layer's first present
            # trace_processor ends whatever is open on track 0 (its map's default value).
            slices.end(ts, self.display.get(layer_name, 0), None, None, [])
            track = self.track(stack_string(f"Display_{layer}", 1024))
            self._phase_slice(ts, event, track, layer_name)
            self.display[layer_name] = track

    def _lost_queue(self, recent: tuple) -> None:
        _, slice_id, app_track, _ = recent
        slices = self.trace.slices
        slices.rename_open(app_track, slice_id, "0")
        slices.add_args(app_track, [_frame_number(0)])

    def _phase_slice(self, ts: int, event, track: int, layer_name: str) -> int | None:
        # Named by the frame number, or by the timestamp when it is not known (a dequeue).
        name = str(event.frame_number) if event.frame_number else str(ts)
        args: list[Arg] = [_frame_number(event.frame_number), ("layer_name", "layer_name", "string", layer_name)]
        return self.trace.slices.begin(ts, track, None, name, args)


@packet_handler("graphics_frame_event")
def _graphics_frame_event(parser: HandlerContext, ts: int, frame_event) -> None:
    parser.state("graphics_frame_events", lambda: GraphicsFrameEventParser(parser.trace)).parse(ts, frame_event)
