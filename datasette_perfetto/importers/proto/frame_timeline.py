"""Android frame timeline (TracePacket extension field 76, FrameTimelineEvent from SurfaceFlinger),
as trace_processor's FrameTimelineEventParser imports it.

Expected and actual timelines of display frames (SurfaceFlinger's work) and surface frames (an
app's) become slices named by their token on compressed per-process "Expected Timeline" /
"Actual Timeline" tracks (android_expected_frame_timeline / android_actual_frame_timeline, read
by the expected_frame_timeline_slice and actual_frame_timeline_slice views); a FrameEnd with the
start's cookie ends the slice. Actual frames carry the jank analysis as args: present type,
jank types (a bitmask spelled out, display power mode changes included), jank tag, severity,
prediction type, ... A surface frame flows to the display frame that presented it. An expected
surface frame whose token the process already has is not repeated.

Missing required fields, out of range enums, and negative or absurd timestamps count
frame_timeline_event_parser_errors; a FrameEnd of an unknown cookie counts
frame_timeline_unpaired_end_event.
"""

from __future__ import annotations

from ...model import TraceContext
from ...storage import Arg
from ...trackers.async_track_set import CompressedTrackSets
from ..common.values import UINT32_MAX, text
from .packet_handlers import HandlerContext, extension_packet_handler
from .private_messages import message_classes

FRAME_TIMELINE_EVENT_FIELD = 76  # FrameworksNativeTracePacket's extension of TracePacket


# FrameTimelineEvent (frameworks_native_trace_packet.proto). Enums are declared as int32 so out of
# range values stay visible, as they are to trace_processor.
_FRAME_COMMON = [("cookie", 1, "int64"), ("token", 2, "int64")]
_SURFACE_COMMON = _FRAME_COMMON + [
    ("display_frame_token", 3, "int64"),
    ("pid", 4, "int32"),
    ("layer_name", 5, "string"),
]
FrameTimelineEvent = message_classes(
    "datasette_perfetto.frame_timeline",
    [
        ("ExpectedDisplayFrameStart", _FRAME_COMMON + [("pid", 3, "int32")], None),
        (
            "ActualDisplayFrameStart",
            _FRAME_COMMON
            + [
                ("pid", 3, "int32"),
                ("present_type", 4, "int32"),
                ("on_time_finish", 5, "bool"),
                ("gpu_composition", 6, "bool"),
                ("jank_type", 7, "int32"),
                ("prediction_type", 8, "int32"),
                ("jank_severity_type", 9, "int32"),
                ("present_delay_millis", 10, "float"),
                ("jank_severity_score", 11, "float"),
                ("jank_type_experimental", 12, "int32"),
                ("present_type_experimental", 13, "int32"),
                ("jank_debug_metadata", 14, "float"),
                ("latched_unsignaled_count", 15, "int64"),
                ("addressable_unsignaled_latch_count", 16, "int64"),
            ],
            None,
        ),
        ("ExpectedSurfaceFrameStart", _SURFACE_COMMON, None),
        (
            "ActualSurfaceFrameStart",
            _SURFACE_COMMON
            + [
                ("present_type", 6, "int32"),
                ("on_time_finish", 7, "bool"),
                ("gpu_composition", 8, "bool"),
                ("jank_type", 9, "int32"),
                ("prediction_type", 10, "int32"),
                ("is_buffer", 11, "bool"),
                ("jank_severity_type", 12, "int32"),
                ("present_delay_millis", 13, "float"),
                ("vsync_resynced_jitter_millis", 14, "float"),
                ("jank_severity_score", 15, "float"),
                ("jank_type_experimental", 16, "int32"),
                ("present_type_experimental", 17, "int32"),
                ("jank_debug_metadata", 18, "float"),
                ("latched_fence_state", 19, "int32"),
                ("animation_time_millis", 20, "float"),
            ],
            None,
        ),
        ("FrameEnd", [("cookie", 1, "int64")], None),
        (
            "FrameTimelineEvent",
            [
                ("expected_display_frame_start", 1, "ExpectedDisplayFrameStart"),
                ("actual_display_frame_start", 2, "ActualDisplayFrameStart"),
                ("expected_surface_frame_start", 3, "ExpectedSurfaceFrameStart"),
                ("actual_surface_frame_start", 4, "ActualSurfaceFrameStart"),
                ("frame_end", 5, "FrameEnd"),
            ],
            "event",
        ),
    ],
)["FrameTimelineEvent"]

# FrameTimelineEvent.JankType bits, in trace_processor's order of naming.
JANK_UNSPECIFIED, JANK_NONE = 0, 1
JANK_SF_SCHEDULING, JANK_PREDICTION_ERROR, JANK_DISPLAY_HAL = 2, 4, 8
JANK_SF_CPU_DEADLINE_MISSED, JANK_SF_GPU_DEADLINE_MISSED, JANK_APP_DEADLINE_MISSED = 16, 32, 64
JANK_BUFFER_STUFFING, JANK_UNKNOWN, JANK_SF_STUFFING, JANK_DROPPED = 128, 256, 512, 1024
JANK_NON_ANIMATING, JANK_APP_RESYNCED_JITTER, JANK_DISPLAY_NOT_ON = 2048, 4096, 8192
JANK_DISPLAY_MODE_CHANGE_IN_PROGRESS, JANK_DISPLAY_POWER_MODE_CHANGE_IN_PROGRESS = 16384, 32768
JANK_REASONS = (
    (JANK_SF_SCHEDULING, "SurfaceFlinger Scheduling"),
    (JANK_PREDICTION_ERROR, "Prediction Error"),
    (JANK_DISPLAY_HAL, "Display HAL"),
    (JANK_SF_CPU_DEADLINE_MISSED, "SurfaceFlinger CPU Deadline Missed"),
    (JANK_SF_GPU_DEADLINE_MISSED, "SurfaceFlinger GPU Deadline Missed"),
    (JANK_APP_DEADLINE_MISSED, "App Deadline Missed"),
    (JANK_APP_RESYNCED_JITTER, "App Resynced Jitter"),
    (JANK_BUFFER_STUFFING, "Buffer Stuffing"),
    (JANK_UNKNOWN, "Unknown Jank"),
    (JANK_SF_STUFFING, "SurfaceFlinger Stuffing"),
    (JANK_DROPPED, "Dropped Frame"),
    (JANK_NON_ANIMATING, "Non Animating"),
    (JANK_DISPLAY_NOT_ON, "Display not ON"),
    (JANK_DISPLAY_MODE_CHANGE_IN_PROGRESS, "ModeChange in progress"),
    (JANK_DISPLAY_POWER_MODE_CHANGE_IN_PROGRESS, "PowerModeChange in progress"),
)
DISPLAY_JANK_BITS = (
    JANK_SF_SCHEDULING
    | JANK_PREDICTION_ERROR
    | JANK_DISPLAY_HAL
    | JANK_SF_CPU_DEADLINE_MISSED
    | JANK_SF_GPU_DEADLINE_MISSED
)
SURFACE_JANK_BITS = JANK_APP_DEADLINE_MISSED | JANK_APP_RESYNCED_JITTER | JANK_UNKNOWN
NOT_JANK = (JANK_UNSPECIFIED, JANK_NONE, JANK_NON_ANIMATING, JANK_DISPLAY_NOT_ON)
NON_PERCEIVABLE = (JANK_NON_ANIMATING, JANK_DISPLAY_NOT_ON, JANK_DISPLAY_POWER_MODE_CHANGE_IN_PROGRESS)

PRESENT_TYPES = (
    "Unspecified Present",
    "On-time Present",
    "Late Present",
    "Early Present",
    "Dropped Frame",
    "Unknown Present",
)
PRESENT_DROPPED = 4
PREDICTION_TYPES = ("Unspecified Prediction", "Valid Prediction", "Expired Prediction", "Unknown Prediction")
JANK_SEVERITY_TYPES = ("Unknown", "None", "Partial", "Full")
LATCHED_FENCE_STATES = ("Unknown", "Latched Signaled", "Latched Unsignaled", "Delayed Latch Fence Unsignaled")
# Timestamps this close to the int64 limits are a producer's mistake (b/185978397).
BAD_TIMESTAMP = (1 << 63) - 1 - 10 * 1000 * 1000 * 1000
EXPECTED, ACTUAL = "android_expected_frame_timeline", "android_actual_frame_timeline"
TRACK_NAMES = {EXPECTED: "Expected Timeline", ACTUAL: "Actual Timeline"}


def jank_type_name(jank_type: int) -> str:
    if jank_type == JANK_UNSPECIFIED:
        return "Unspecified"
    if jank_type == JANK_NONE:
        return "None"
    return ", ".join(name for bit, name in JANK_REASONS if jank_type & bit)


def display_frame_janky(jank_type: int) -> bool:
    return jank_type not in NOT_JANK and bool(jank_type & DISPLAY_JANK_BITS)


def surface_frame_janky(jank_type: int) -> bool:
    return jank_type not in NOT_JANK and bool(jank_type & SURFACE_JANK_BITS)


def display_jank_tag(jank_type: int) -> str:
    if jank_type == JANK_UNSPECIFIED:
        return "Unspecified"
    if display_frame_janky(jank_type):
        return "Self Jank"
    if jank_type == JANK_SF_STUFFING:
        return "SurfaceFlinger Stuffing"
    if jank_type == JANK_DROPPED:
        return "Dropped Frame"
    if jank_type in NON_PERCEIVABLE:
        return "Non-perceivable Jank"
    return "No Jank"


def surface_jank_tag(jank_type: int, present_type: int | None) -> str:
    if jank_type == JANK_UNSPECIFIED:
        return "Unspecified"
    if surface_frame_janky(jank_type):
        return "Self Jank"
    if display_frame_janky(jank_type):
        return "Other Jank"
    if jank_type == JANK_BUFFER_STUFFING:
        return "Buffer Stuffing"
    if jank_type == JANK_SF_STUFFING:
        return "SurfaceFlinger Stuffing"
    if present_type == PRESENT_DROPPED:
        return "Dropped Frame"
    if jank_type in NON_PERCEIVABLE:
        return "Non-perceivable Jank"
    return "No Jank"


def _int(key: str, value: int) -> Arg:
    return (key, key, "int", value)


def _str(key: str, value: str | None) -> Arg:
    return (key, key, "string", value)


def _real(key: str, value: float) -> Arg:
    return (key, key, "real", value)


class FrameTimelineParser:
    def __init__(self, trace: TraceContext) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.track_sets = CompressedTrackSets(trace.tracks, trace.new_track_group)
        self.cookies: dict[int, tuple[int, str]] = {}  # cookie -> (upid, timeline type)
        self.expected_tokens: dict[int, set[int]] = {}  # upid -> surface frame tokens with an expected slice
        self.surface_slices: dict[int, list[int]] = {}  # display frame token -> its surface frames' slices

    def _track(self, kind: str, upid: int, cookie: int, slice_kind: str) -> int:
        track_set = self.track_sets.get(kind, (("upid", upid),), TRACK_NAMES[kind])
        return track_set.track_for(cookie, slice_kind)

    def _error(self) -> None:
        self.stats.inc("frame_timeline_event_parser_errors")

    def _enum(self, ev, field: str, names: tuple) -> tuple[str, int | None]:
        """(name, value if valid) of a present/prediction type, counting an out of range value."""
        if not ev.HasField(field):
            return names[0], None
        value = getattr(ev, field)
        if 1 <= value < len(names):
            return names[value], value
        self._error()
        return names[0], None

    def parse(self, ts: int, event) -> None:
        if ts < 0 or abs(ts) >= BAD_TIMESTAMP:
            self._error()
            return
        kind = event.WhichOneof("event")
        if kind == "expected_display_frame_start":
            self._expected_display(ts, event.expected_display_frame_start)
        elif kind == "actual_display_frame_start":
            self._actual_display(ts, event.actual_display_frame_start)
        elif kind == "expected_surface_frame_start":
            self._expected_surface(ts, event.expected_surface_frame_start)
        elif kind == "actual_surface_frame_start":
            self._actual_surface(ts, event.actual_surface_frame_start)
        elif kind == "frame_end":
            self._frame_end(ts, event.frame_end)
        else:
            self._error()

    def _start(self, ev, kind: str, surface: bool) -> tuple[int, int] | None:
        """(upid, cookie) of a frame start with its required fields, recording its cookie."""
        if not (
            ev.HasField("cookie")
            and ev.HasField("token")
            and ev.HasField("pid")
            and (not surface or ev.HasField("display_frame_token"))
        ):
            self._error()
            return None
        upid = self.trace.processes.get_or_create_process(ev.pid & UINT32_MAX)  # an int32 read as uint32
        self.cookies[ev.cookie] = (upid, kind)
        return upid, ev.cookie

    def _expected_display(self, ts: int, ev) -> None:
        started = self._start(ev, EXPECTED, False)
        if started is None:
            return
        track = self._track(EXPECTED, *started, "begin")
        self.trace.slices.begin(ts, track, None, str(ev.token), [_int("Display frame token", ev.token)])

    def _jank_severity(self, ev) -> str:
        if ev.HasField("jank_severity_type"):
            value = ev.jank_severity_type
            return JANK_SEVERITY_TYPES[value] if 0 <= value < len(JANK_SEVERITY_TYPES) else JANK_SEVERITY_TYPES[0]
        # Older traces have no severity: "None" without jank, else "Unknown".
        return JANK_SEVERITY_TYPES[1] if ev.jank_type == JANK_NONE else JANK_SEVERITY_TYPES[0]

    def _jank_args(self, ev) -> tuple[list[Arg], int | None, int | None]:
        """The present, jank and prediction args display and surface frames share (in trace_processor's
        order), and the present type values their jank tags depend on."""
        present_type, present_value = self._enum(ev, "present_type", PRESENT_TYPES)
        present_type_exp, present_exp_value = self._enum(ev, "present_type_experimental", PRESENT_TYPES)
        severity = self._jank_severity(ev)
        prediction_type, _ = self._enum(ev, "prediction_type", PREDICTION_TYPES)
        args = [
            _str("Present type", present_type),
            _str("Present type (experimental)", present_type_exp),
            _int("On time finish", int(ev.on_time_finish)),
            _int("GPU composition", int(ev.gpu_composition)),
            _str("Jank type", jank_type_name(ev.jank_type)),
            _str("Jank type (experimental)", jank_type_name(ev.jank_type_experimental)),
            _str("Jank severity type", severity),
            _real("Jank Severity Score", ev.jank_severity_score),
            _str("Prediction type", prediction_type),
        ]
        return args, present_value, present_exp_value

    def _actual_display(self, ts: int, ev) -> None:
        started = self._start(ev, ACTUAL, False)
        if started is None:
            return
        token = ev.token
        track = self._track(ACTUAL, *started, "begin")
        args: list[Arg] = [
            _int("Display frame token", token),
            _real("Present Delay (ms)", ev.present_delay_millis),
            *self._jank_args(ev)[0],
            _str("Jank tag", display_jank_tag(ev.jank_type)),
            _str("Jank tag (experimental)", display_jank_tag(ev.jank_type_experimental)),
            _real("Jank Metadata (debugging only)", ev.jank_debug_metadata),
        ]
        if ev.HasField("latched_unsignaled_count"):
            args.append(_int("Latched unsignaled count", ev.latched_unsignaled_count))
        if ev.HasField("addressable_unsignaled_latch_count"):
            args.append(_int("Addressable unsignaled latch count", ev.addressable_unsignaled_latch_count))
        slice_id = self.trace.slices.begin(ts, track, None, str(token), args)
        # Surface frames come before the display frame that presents them: link them all now.
        surfaces = self.surface_slices.pop(token, [])
        if slice_id is not None:
            for surface in surfaces:
                self.trace.flows.insert(surface, slice_id)

    def _expected_surface(self, ts: int, ev) -> None:
        started = self._start(ev, EXPECTED, True)
        if started is None:
            return
        upid = started[0]
        token = ev.token
        tokens = self.expected_tokens.setdefault(upid, set())
        if token in tokens:
            return  # every frame of a token has the same expectations: one slice is enough
        tokens.add(token)
        track = self._track(EXPECTED, *started, "begin")
        args: list[Arg] = [
            _int("Surface frame token", token),
            _int("Display frame token", ev.display_frame_token),
            _str("Layer name", text(ev.layer_name) if ev.HasField("layer_name") else None),
        ]
        self.trace.slices.begin(ts, track, None, str(token), args)

    def _actual_surface(self, ts: int, ev) -> None:
        started = self._start(ev, ACTUAL, True)
        if started is None:
            return
        token = ev.token
        track = self._track(ACTUAL, *started, "begin")
        jank_args, present_value, present_exp_value = self._jank_args(ev)
        is_buffer = ("Yes" if ev.is_buffer else "No") if ev.HasField("is_buffer") else "Unspecified"
        args: list[Arg] = [
            _int("Surface frame token", token),
            _int("Display frame token", ev.display_frame_token),
        ]
        if ev.HasField("animation_time_millis"):
            args.append(_real("Animation Time (ms)", ev.animation_time_millis))
        args += [
            _real("Present Delay (ms)", ev.present_delay_millis),
            _real("Vsync Resynced Jitter (ms)", ev.vsync_resynced_jitter_millis),
            _str("Layer name", text(ev.layer_name) if ev.HasField("layer_name") else None),
            *jank_args,
            _str("Jank tag", surface_jank_tag(ev.jank_type, present_value)),
            _str("Jank tag (experimental)", surface_jank_tag(ev.jank_type_experimental, present_exp_value)),
            _str("Is Buffer?", is_buffer),
            _real("Jank Metadata (debugging only)", ev.jank_debug_metadata),
        ]
        if ev.HasField("latched_fence_state") and 0 <= ev.latched_fence_state < len(LATCHED_FENCE_STATES):
            args.append(_str("Latched fence state", LATCHED_FENCE_STATES[ev.latched_fence_state]))
        slice_id = self.trace.slices.begin(ts, track, None, str(token), args)
        if slice_id is not None:
            self.surface_slices.setdefault(ev.display_frame_token, []).append(slice_id)

    def _frame_end(self, ts: int, ev) -> None:
        if not ev.HasField("cookie"):
            self._error()
            return
        started = self.cookies.pop(ev.cookie, None)
        if started is None:
            self.stats.inc("frame_timeline_unpaired_end_event")
            return
        upid, kind = started
        track = self._track(kind, upid, ev.cookie, "end")
        self.trace.slices.end(ts, track, None, None, [])


@extension_packet_handler("frame_timeline_event", FRAME_TIMELINE_EVENT_FIELD, FrameTimelineEvent)
def _frame_timeline_event(parser: HandlerContext, ts: int, event) -> None:
    parser.state("frame_timeline", lambda: FrameTimelineParser(parser.trace)).parse(ts, event)
