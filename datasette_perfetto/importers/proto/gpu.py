"""GPU data sources (trace_processor's GraphicsEventModule and GpuEventParser).

- `gpu_counter_event`: counter descriptors (inline, whose counter ids are global to the
  trace, or interned per sequence) become `gpu_counter` tracks and `gpu_counter_group`
  rows at tokenize time, in file order, even in a packet without a timestamp; samples are
  parsed in timestamp order. A backwards-looking sample (the default) is the value of the
  interval that ends at its timestamp: it is written on the previous row of its track and
  a 0 placeholder is written at its own timestamp.
- `gpu_render_stage_event`: hardware queue and stage specifications (inline or interned),
  slices on compressed `gpu_render_stage` tracks (one per queue, split when stages
  overlap), Vulkan debug names of render targets, passes and command buffers, flows
  between stages that wait on each other, and the `gpu_context` table.
- `gpu_log` and `vulkan_api_event` (vkQueueSubmit slices, VkDebugUtilsObjectName names).
- `vulkan_memory_event`: the `vulkan_memory_allocations` table (annotations as args) and
  running per-process driver / device-memory counters.

Shared GPU-track helpers other GPU sources can use: `gpu_counter_track` (a counter track
of one GPU); render stages go on trace_processor's compressed track sets (trackers/async_track_set.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf.message import DecodeError
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ...model import TraceContext
from ...storage import Arg, to_int64
from ...trackers.async_track_set import AsyncTrackSet, CompressedTrackSets
from ..common.event_kinds import EV_PACKET
from ..common.values import text
from .packet_handlers import HandlerContext, packet_handler, tokenize_handler
from .unknown import unknown_fields

# InternedData field numbers of the GPU entries kept in sequence state.
INTERNED_EVENT_NAMES = 2
INTERNED_FUNCTION_NAMES = 5
INTERNED_VULKAN_MEMORY_KEYS = 22
INTERNED_GRAPHICS_CONTEXTS = 23
INTERNED_GPU_SPECIFICATIONS = 24
INTERNED_GPU_COUNTER_DESCRIPTORS = 47


def _optional_text(message, name: str) -> str | None:
    return text(getattr(message, name)) if message.HasField(name) else None


# InternedData fields kept in sequence state (merged into sequence_state.INTERNED_FIELDS).
INTERNED_GPU_FIELDS: dict[str, tuple[int, Callable]] = {
    "vulkan_memory_keys": (INTERNED_VULKAN_MEMORY_KEYS, lambda e: text(e.str)),
    "graphics_contexts": (
        INTERNED_GRAPHICS_CONTEXTS,
        lambda e: (e.pid if e.HasField("pid") else None, e.api if e.HasField("api") else None),
    ),
    "gpu_specifications": (
        INTERNED_GPU_SPECIFICATIONS,
        lambda e: (text(e.name), _optional_text(e, "description"), e.category),
    ),
    "gpu_counter_descriptors": (
        INTERNED_GPU_COUNTER_DESCRIPTORS,
        lambda e: (e.gpu_id, e.counter_descriptor if e.HasField("counter_descriptor") else None),
    ),
}

# GpuInternedData's extensions of InternedData (unknown to the perfetto package):
# field number -> (message class, how to store an entry).
INTERNED_COMPUTE_KERNELS = 1000
INTERNED_COMPUTE_ARG_NAMES = 1001
_GPU_EXTENSIONS: dict[int, tuple[Any, Callable]] = {  # generated classes are untyped
    INTERNED_COMPUTE_KERNELS: (pb.InternedComputeKernel, lambda e: e),
    INTERNED_COMPUTE_ARG_NAMES: (pb.InternedComputeArgName, lambda e: text(e.name)),
}
INTERNED_GPU_EXTENSIONS = frozenset(_GPU_EXTENSIONS)
INTERNED_DEBUG_ANNOTATION_STRING_VALUES = 29


def intern_gpu_extensions(unknown, tables: dict, stats) -> None:
    """Adds the compute kernels and compute arg names of an InternedData (its unknown
    fields) to a sequence's interned tables."""
    for f in unknown:
        ext = _GPU_EXTENSIONS.get(f.field_number)
        if ext is None or f.wire_type != 2:
            continue
        cls, convert = ext
        try:
            entry = cls.FromString(f.data)
        except DecodeError:
            stats.inc("interned_data_tokenizer_errors")
            continue
        if not entry.iid:
            stats.inc("interned_data_tokenizer_errors")
            continue
        tables.setdefault(f.field_number, {})[entry.iid] = convert(entry)


GpuCounterDescriptor = pb.GpuCounterDescriptor
FORWARDS_LOOKING = GpuCounterDescriptor.GpuCounterSpec.VALUE_DIRECTION_FORWARDS_LOOKING

MEASURE_UNITS = {
    0: "",
    1: "bit",
    2: "Kb",
    3: "Mb",
    4: "Gb",
    5: "Tb",
    6: "Pb",
    7: "B",
    8: "KB",
    9: "MB",
    10: "GB",
    11: "TB",
    12: "PB",
    13: "Hz",
    14: "KHz",
    15: "MHz",
    16: "GHz",
    17: "THz",
    18: "PHz",
    19: "ns",
    20: "us",
    21: "ms",
    22: "s",
    23: "min",
    24: "h",
    25: "Vertex",
    26: "Pixel",
    27: "Triangle",
    38: "Primitive",
    39: "Fragment",
    28: "mW",
    29: "W",
    30: "kW",
    31: "J",
    32: "V",
    33: "A",
    34: "C",
    35: "F",
    36: "K",
    37: "%",
    40: "Instruction",
}

GRAPHICS_APIS = {1: "OPEN_GL", 2: "VULKAN", 3: "OPEN_CL", 4: "CUDA", 5: "HIP"}
LOG_SEVERITIES = ("UNSPECIFIED", "VERBOSE", "DEBUG", "INFO", "WARNING", "ERROR", "UNKNOWN_SEVERITY")

# VkObjectType values whose debug names render stages show.
VK_OBJECT_TYPE_COMMAND_BUFFER = 6
VK_OBJECT_TYPE_RENDER_PASS = 18
VK_OBJECT_TYPE_FRAMEBUFFER = 24

VULKAN_SOURCES = ("UNSPECIFIED", "DRIVER", "DEVICE", "GPU_DEVICE_MEMORY", "GPU_BUFFER", "GPU_IMAGE")
VULKAN_OPERATIONS = ("UNSPECIFIED", "CREATE", "DESTROY", "BIND", "DESTROY_BOUND", "ANNOTATIONS")
VULKAN_SCOPES = ("UNSPECIFIED", "COMMAND", "OBJECT", "CACHE", "DEVICE", "INSTANCE")
VkMem = pb.VulkanMemoryEvent


# -- shared GPU track helpers ---------------------------------------------------------------


def gpu_counter_track(
    trace: TraceContext, gpu: int, name: str, description: str | None, unit: str | None, type: str = "gpu_counter"
) -> int:
    """A counter track of GPU `gpu` named `name` (dimensions ugpu, gpu, name), its
    description in the source args; the GPU's row is created on first use."""
    ugpu = trace.gpu(gpu)
    dims = (("ugpu", ugpu), ("gpu", gpu), ("name", name))
    track_id = trace.tracks.intern(type, dims, "counter", name, unit)
    row = trace.tracks.row(track_id)
    if not row.source_args:  # a new track: the first spec's description
        row.source_args = [("description", "description", "string", description)]
    return track_id


# -- per-trace state --------------------------------------------------------------------------


class GpuState:
    """What GpuEventParser and GraphicsEventModule keep for one trace (one machine)."""

    def __init__(self, trace: TraceContext) -> None:
        self.trace = trace
        # Inline descriptors: counter id (global) -> (track, forwards looking).
        self.legacy_counters: dict[int, tuple[int, bool]] = {}
        # Per track, the last counter row, held until the next sample may rewrite its value:
        # [id, ts, track, value].
        self.last_counter: dict[int, list] = {}
        # Render stages: hw queue id -> (name, description) from inline specifications.
        self.hw_queues: dict[int, tuple[str, str | None]] = {}
        self.queues_to_rename: dict[int, bool] = {}
        self.stages: list[tuple[str, str | None]] = []
        self.stage_sets = CompressedTrackSets(trace.tracks, trace.new_track_group)
        self.contexts_inserted: set[int] = set()
        # VkObjectType -> handle -> name (VkDebugUtilsObjectName).
        self.debug_names: dict[int, dict[int, str]] = {}
        # Flows between render stages: event id -> its slices, event id -> slices waiting on it.
        self.event_slices: dict[int, list[int]] = {}
        self.waiting_slices: dict[int, list[int]] = {}
        # Track event slices correlated with render stages (GpuTrackEvent.gpu_correlation): event id ->
        # the last slice that submitted it, and the last that waited for it to complete.
        self.submitting_slice: dict[int, int] = {}
        self.completion_waiting_slice: dict[int, int] = {}
        # Vulkan memory: running totals per allocation scope / memory type.
        self.driver_memory: dict[int, int] = {}
        self.device_memory_allocated: dict[int, int] = {}
        self.device_memory_bound: dict[int, int] = {}

    def render_stage_set(self, dims: tuple, name: str | None, source_args: list[Arg]) -> AsyncTrackSet:
        return self.stage_sets.get("gpu_render_stage", dims, name, source_args)

    # -- counters --------------------------------------------------------------------------
    def push_counter(self, ts: int, value: float, track: int, forwards_looking: bool) -> None:
        storage = self.trace.storage
        last = self.last_counter.get(track)
        if not forwards_looking and last is not None:
            # The value is the previous interval's: it goes on the previous row.
            last[3] = value
        if last is not None:
            storage.write("counter", (last[0], last[1], last[2], last[3], None))
        placeholder = value if forwards_looking else 0.0
        self.last_counter[track] = [storage.reserve_id("counter"), ts, track, placeholder]

    def finish(self) -> None:
        storage = self.trace.storage
        for last in self.last_counter.values():
            storage.write("counter", (last[0], last[1], last[2], last[3], None))
        self.last_counter.clear()


def gpu_state(parser: HandlerContext) -> GpuState:
    return parser.state("gpu_events", lambda: GpuState(parser.trace))


# -- GPU counters -------------------------------------------------------------------------------


def counter_unit(spec) -> str | None:
    """The unit trace_processor writes for a counter spec: numerators joined by ':', then
    '/' and the denominators (NONE skipped) joined by ':'; NULL if the spec has neither."""
    if not spec.numerator_units and not spec.denominator_units:
        return None
    unit = ":".join(MEASURE_UNITS.get(u, "Unknown") for u in spec.numerator_units)
    sep = "/"
    for u in spec.denominator_units:
        name = MEASURE_UNITS.get(u, "Unknown")
        if name:
            unit += sep + name
            sep = ":"
    return unit


def _counter_track_for_spec(trace: TraceContext, gpu: int, spec) -> int:
    description = text(spec.description) if spec.HasField("description") else None
    return gpu_counter_track(trace, gpu, text(spec.name), description, counter_unit(spec))


def _group_metadata(descriptor) -> dict[int, tuple[str | None, str | None]]:
    return {
        g.group_id: (_optional_text(g, "name"), _optional_text(g, "description"))
        for g in descriptor.counter_groups
        if g.HasField("group_id")
    }


def _insert_counter_groups(trace: TraceContext, track: int, spec, groups: dict) -> None:
    storage = trace.storage
    if spec.groups:
        for group in spec.groups:
            name, description = groups.get(group, (None, None))
            storage.insert("gpu_counter_group", (group, track, name, description))
    else:
        storage.insert("gpu_counter_group", (GpuCounterDescriptor.UNCLASSIFIED, track, None, None))


def _insert_custom_counter_groups(trace: TraceContext, descriptor, tracks_by_counter: dict[int, int]) -> None:
    storage = trace.storage
    for g in descriptor.counter_groups:
        if not g.HasField("group_id"):
            continue
        name, description = _optional_text(g, "name"), _optional_text(g, "description")
        for counter_id in g.counter_ids:
            track = tracks_by_counter.get(counter_id)
            if track is not None:
                storage.insert("gpu_counter_group", (g.group_id, track, name, description))


def _interned_counter_map(parser: HandlerContext, seq, iid: int) -> tuple | None:
    """The counter id -> (track, forwards looking) map of interned descriptor `iid` on this
    sequence's current incremental state, built (tracks, groups) the first time."""
    key = ("gpu_counter_descriptor", iid)
    found = seq.derived.get(key)
    if found is not None:
        return found
    interned = seq.lookup(INTERNED_GPU_COUNTER_DESCRIPTORS, iid)
    if interned is None or interned[1] is None:
        parser.stats.inc("gpu_counters_invalid_spec")
        return None
    gpu, descriptor = interned
    trace = parser.trace
    groups = _group_metadata(descriptor)
    counters: dict[int, tuple[int, bool]] = {}
    tracks_by_counter: dict[int, int] = {}
    for spec in descriptor.specs:
        if not spec.HasField("counter_id") or not spec.HasField("name"):
            continue
        track = _counter_track_for_spec(trace, gpu, spec)
        if spec.counter_id not in tracks_by_counter:
            tracks_by_counter[spec.counter_id] = track
            _insert_counter_groups(trace, track, spec, groups)
        counters[spec.counter_id] = (track, spec.value_direction == FORWARDS_LOOKING)
    _insert_custom_counter_groups(trace, descriptor, tracks_by_counter)
    # Plain values: the map travels with the samples through the sorter.
    found = seq.derived[key] = tuple((cid, track, fwd) for cid, (track, fwd) in counters.items())
    return found


def _legacy_descriptor(parser: HandlerContext, gpu: int, descriptor) -> None:
    """An inline descriptor: counter ids are global, so a second spec of an id is rejected."""
    state = gpu_state(parser)
    trace = parser.trace
    groups = _group_metadata(descriptor)
    tracks_by_counter: dict[int, int] = {}
    for spec in descriptor.specs:
        if not spec.HasField("counter_id") or not spec.HasField("name"):
            parser.stats.inc("gpu_counters_invalid_spec")
            continue
        if spec.counter_id in state.legacy_counters:
            parser.stats.inc("gpu_counters_invalid_spec")
            continue
        track = _counter_track_for_spec(trace, gpu, spec)
        _insert_counter_groups(trace, track, spec, groups)
        state.legacy_counters[spec.counter_id] = (track, spec.value_direction == FORWARDS_LOOKING)
        tracks_by_counter[spec.counter_id] = track
    _insert_custom_counter_groups(trace, descriptor, tracks_by_counter)


@tokenize_handler("gpu_counter_event")
def _tokenize_gpu_counter_event(importer, packet, seq, ts: int) -> None:
    """The descriptor now, in file order (even without a timestamp); the samples are queued."""
    parser = importer.ftrace
    event = packet.gpu_counter_event
    interned: tuple | None = None
    by_iid = event.HasField("counter_descriptor_iid")
    if by_iid:
        interned = _interned_counter_map(parser, seq, event.counter_descriptor_iid)
    elif event.HasField("counter_descriptor"):
        _legacy_descriptor(parser, event.gpu_id, event.counter_descriptor)
    if not event.counters:
        return
    if not packet.HasField("timestamp"):
        parser.stats.inc("gpu_counters_missing_timestamp")
        return
    if by_iid and interned is None:
        return  # no such descriptor (counted above): its samples have nowhere to go
    importer.push(ts, (EV_PACKET, "gpu_counter_event", event.SerializeToString(), interned))


@packet_handler("gpu_counter_event")
def _gpu_counter_event(parser: HandlerContext, ts: int, event, interned: tuple | None = None) -> None:
    state = gpu_state(parser)
    if interned is not None:
        counters = {cid: (track, fwd) for cid, track, fwd in interned}
    else:
        counters = state.legacy_counters
    for counter in event.counters:
        if not counter.HasField("counter_id") or not (
            counter.HasField("int_value") or counter.HasField("double_value")
        ):
            continue
        info = counters.get(counter.counter_id)
        if info is None:
            if interned is not None:
                parser.stats.inc("gpu_counters_invalid_spec")
            continue
        value = float(counter.int_value) if counter.HasField("int_value") else counter.double_value
        state.push_counter(ts, value, info[0], info[1])


# -- render stages ------------------------------------------------------------------------------


@tokenize_handler("gpu_render_stage_event")
def _tokenize_render_stage(importer, packet, seq, ts: int) -> None:
    """Queued with what it needs from the sequence's interned data, looked up now."""
    event = packet.gpu_render_stage_event
    hw_queue = stage = context = name = None
    compute_args: list[Arg] = []
    if event.HasField("context"):
        context = seq.lookup(INTERNED_GRAPHICS_CONTEXTS, event.context)
    if event.HasField("event_id"):
        if event.HasField("hw_queue_iid"):
            hw_queue = seq.lookup(INTERNED_GPU_SPECIFICATIONS, event.hw_queue_iid)
            if hw_queue is None:
                hw_queue = False  # the slice is dropped
        if hw_queue is not False:
            if event.HasField("name_iid"):
                name = seq.lookup(INTERNED_EVENT_NAMES, event.name_iid)
            if event.HasField("stage_iid"):
                stage = seq.lookup(INTERNED_GPU_SPECIFICATIONS, event.stage_iid)
                if stage is None and not event.HasField("name_iid") and not event.HasField("name"):
                    seq.misses += 1  # trace_processor looks it up twice, once for the name
            if event.HasField("kernel_iid"):
                _kernel_args(seq, event.kernel_iid, compute_args)
            if event.HasField("launch"):
                _launch_args(seq, event.launch, compute_args)
    importer.push(
        ts,
        (EV_PACKET, "gpu_render_stage_event", event.SerializeToString(), hw_queue, stage, context, name, compute_args),
    )


def _compute_arg(seq, arg, out: list[Arg]) -> None:
    """An ExtraComputeArg of a kernel or launch, its name and string value resolved."""
    if arg.HasField("name_iid"):
        name = seq.lookup(INTERNED_COMPUTE_ARG_NAMES, arg.name_iid)
    elif arg.HasField("name"):
        name = text(arg.name)
    else:
        name = None
    if not name:
        return
    if arg.HasField("int_value"):
        out.append((name, name, "int", arg.int_value))
    elif arg.HasField("uint_value"):
        out.append((name, name, "uint", arg.uint_value))
    elif arg.HasField("double_value"):
        out.append((name, name, "real", arg.double_value))
    elif arg.HasField("string_value_iid"):
        value = seq.lookup(INTERNED_DEBUG_ANNOTATION_STRING_VALUES, arg.string_value_iid)
        if value is not None:
            out.append((name, name, "string", value))
    elif arg.HasField("string_value"):
        out.append((name, name, "string", text(arg.string_value)))


def _kernel_args(seq, kernel_iid: int, out: list[Arg]) -> None:
    kernel = seq.lookup(INTERNED_COMPUTE_KERNELS, kernel_iid)
    if kernel is None:
        return
    for field, key in (("name", "kernel_name"), ("demangled_name", "kernel_demangled_name"), ("arch", "arch")):
        if kernel.HasField(field):
            out.append((key, key, "string", text(getattr(kernel, field))))
    for arg in kernel.args:
        _compute_arg(seq, arg, out)


def _launch_args(seq, launch, out: list[Arg]) -> None:
    for field, prefix in (("grid_size", "launch.grid_size"), ("workgroup_size", "launch.workgroup_size")):
        if launch.HasField(field):
            dim = getattr(launch, field)
            for axis in ("x", "y", "z"):
                if dim.HasField(axis):
                    key = f"{prefix}.{axis}"
                    out.append((key, key, "uint", getattr(dim, axis)))
    for arg in launch.args:
        _compute_arg(seq, arg, out)


def _rename_placeholder_queue(state: GpuState, gpu: int, queue_id: int, name: str, description: str | None) -> None:
    """A queue's specification arriving after slices on its placeholder track names that track."""
    if not state.queues_to_rename.get(queue_id):
        return
    state.queues_to_rename[queue_id] = False
    trace = state.trace
    ugpu = trace.gpu(gpu)
    dims = (
        ("ugpu", ugpu),
        ("gpu", gpu),
        ("render_stage_source", "id"),
        ("hwqueue_id", queue_id),
        ("hwqueue_name", None),
    )
    source_args: list[Arg] = [("description", "description", "string", description)]
    track_id = state.render_stage_set(dims, name, source_args).default()
    row = trace.tracks.row(track_id)
    row.name = name
    row.source_args = source_args


def _render_subpasses(masks) -> str | None:
    """The set bits of render_subpass_index_mask (64 bits per word), as '3,68,69'."""
    if not masks:
        return None
    out = []
    bit = 0
    for word in masks:
        while True:
            if word & 1:
                out.append(str(bit))
            word >>= 1
            bit += 1
            if not word:
                break
        bit = ((bit - 1) // 64 + 1) * 64
    return ",".join(out)


@packet_handler("gpu_render_stage_event")
def _gpu_render_stage_event(
    parser: HandlerContext,
    ts: int,
    event,
    hw_queue: tuple | bool | None = None,
    stage: tuple | None = None,
    context: tuple | None = None,
    interned_name: str | None = None,
    compute_args: list[Arg] | None = None,
) -> None:
    state = gpu_state(parser)
    trace = parser.trace
    gpu = event.gpu_id & 0xFFFFFFFF if event.HasField("gpu_id") else 0
    pid = _specifications(state, event, gpu) if event.HasField("specifications") else 0
    if event.HasField("context") and context is not None:
        context_pid, api = context
        pid = context_pid or 0
        _insert_gpu_context(state, event.context, context_pid, api)
    if not event.HasField("event_id") or hw_queue is False:
        return
    track, queue_id = _render_stage_track(state, ts, event, gpu, hw_queue)
    args = _stage_args(state, event, stage)
    if compute_args:
        args += compute_args  # the kernel's, then the launch's
    if event.render_pass_instance_id:
        args.append(("correlation_id", "correlation_id", "string", f"rp:#{event.render_pass_instance_id}"))
    for datum in event.extra_data:
        key = text(datum.name)
        args.append((key, key, "string", text(datum.value) if datum.HasField("value") else None))
    names = state.debug_names
    args += [
        ("context_id", "context_id", "uint", event.context),
        ("render_target", "render_target", "uint", event.render_target_handle),
        (
            "render_target_name",
            "render_target_name",
            "string",
            names.get(VK_OBJECT_TYPE_FRAMEBUFFER, {}).get(event.render_target_handle),
        ),
        ("render_pass", "render_pass", "uint", event.render_pass_handle),
        (
            "render_pass_name",
            "render_pass_name",
            "string",
            names.get(VK_OBJECT_TYPE_RENDER_PASS, {}).get(event.render_pass_handle),
        ),
        ("render_subpasses", "render_subpasses", "string", _render_subpasses(event.render_subpass_index_mask)),
        ("command_buffer", "command_buffer", "uint", event.command_buffer_handle),
        (
            "command_buffer_name",
            "command_buffer_name",
            "string",
            names.get(VK_OBJECT_TYPE_COMMAND_BUFFER, {}).get(event.command_buffer_handle),
        ),
        ("submission_id", "submission_id", "int", event.submission_id),
        ("hw_queue_id", "hw_queue_id", "uint", queue_id),
        ("upid", "upid", "int", trace.processes.get_or_create_process(pid & 0xFFFFFFFF)),
    ]
    name = _stage_name(state, event, stage, interned_name)
    slice_id = trace.slices.scoped(ts, event.duration, track, None, name, args)
    if slice_id is not None:
        _stage_flows(state, event, slice_id)


def _specifications(state: GpuState, event, gpu: int) -> int:
    """Inline hardware queue and stage specifications; the context's pid (0 if none)."""
    spec = event.specifications
    for queue_id, queue in enumerate(spec.hw_queue):
        if not queue.HasField("name"):
            continue
        name, description = text(queue.name), _optional_text(queue, "description")
        state.hw_queues[queue_id] = (name, description)
        _rename_placeholder_queue(state, gpu, queue_id, name, description)
    for s in spec.stage:
        if s.HasField("name"):
            state.stages.append((text(s.name), _optional_text(s, "description")))
    if spec.HasField("context_spec") and spec.context_spec.HasField("pid"):
        return spec.context_spec.pid
    return 0


def _render_stage_track(state: GpuState, ts: int, event, gpu: int, hw_queue: tuple | bool | None) -> tuple[int, int]:
    """The stage's track (its queue's, split where stages overlap) and the queue's id."""
    description: str | None = None
    if event.HasField("hw_queue_iid"):
        assert isinstance(hw_queue, tuple)
        source = "iid"
        queue_id = event.hw_queue_iid
        track_name = dimension_name = hw_queue[0]
        description = hw_queue[1] or None
    else:
        source = "id"
        queue_id = event.hw_queue_id & 0xFFFFFFFF
        known = state.hw_queues.get(queue_id)
        if known is not None:
            track_name = dimension_name = known[0]
            description = known[1]
        else:
            # No specification (yet): a placeholder, named if the specification comes later.
            track_name, dimension_name = f"Unknown GPU Queue {queue_id}", None
            state.queues_to_rename[queue_id] = True
    dims = (
        ("ugpu", state.trace.gpu(gpu)),
        ("gpu", gpu),
        ("render_stage_source", source),
        ("hwqueue_id", queue_id & 0xFFFFFFFF),
        ("hwqueue_name", dimension_name),
    )
    source_args: list[Arg] = [] if description is None else [("description", "description", "string", description)]
    return state.render_stage_set(dims, track_name, source_args).for_interval(ts, event.duration), queue_id


def _stage_name(state: GpuState, event, stage: tuple | None, interned_name: str | None) -> str | None:
    if event.HasField("name_iid"):
        return interned_name
    if event.HasField("name"):
        return text(event.name)
    if event.HasField("stage_iid"):
        return stage[0] if stage is not None else None
    stage_id = event.stage_id & 0xFFFFFFFFFFFFFFFF
    return state.stages[stage_id][0] if stage_id < len(state.stages) else f"render stage({stage_id})"


def _stage_args(state: GpuState, event, stage: tuple | None) -> list[Arg]:
    """The stage's category and description (interned spec) or description (inline spec)."""
    if event.HasField("stage_iid"):
        if stage is None:
            return []
        return [
            ("render_stage_category", "render_stage_category", "int", stage[2]),
            ("description", "description", "string", stage[1]),
        ]
    if event.HasField("stage_id"):
        stage_id = event.stage_id & 0xFFFFFFFFFFFFFFFF
        if stage_id < len(state.stages) and state.stages[stage_id][1] is not None:
            return [("description", "description", "string", state.stages[stage_id][1])]
    return []


def _stage_flows(state: GpuState, event, slice_id: int) -> None:
    """Flows from the track event slice that submitted this stage's event and to the one waiting for it,
    to the stages waiting on it, and from the stages of the events this one waits on (trace_processor's
    GpuTracker: AddGpuRenderStageSlice, then AddEventWait per waited event)."""
    flows = state.trace.flows
    state.event_slices.setdefault(event.event_id, []).append(slice_id)
    submitting = state.submitting_slice.get(event.event_id)
    if submitting is not None:
        flows.insert(submitting, slice_id)
    completion_waiting = state.completion_waiting_slice.get(event.event_id)
    if completion_waiting is not None:
        flows.insert(slice_id, completion_waiting)
    for waiting in state.waiting_slices.get(event.event_id, ()):
        flows.insert(slice_id, waiting)
    for waited in event.event_wait_ids:
        for source_slice in state.event_slices.get(waited, ()):
            flows.insert(source_slice, slice_id)
        state.waiting_slices.setdefault(waited, []).append(slice_id)


# The args GpuTrackEvent.gpu_correlation becomes on a track event (its extension field, reflected).
GPU_SUBMISSION_IDS = "gpu_correlation.render_stage_submission_event_ids"
GPU_WAIT_IDS = "gpu_correlation.render_stage_wait_event_ids"
GPU_CORRELATION_KEYS = frozenset((GPU_SUBMISSION_IDS, GPU_WAIT_IDS))


class GpuCorrelatedArgs(tuple):
    """A track event's args that hold its gpu_correlation: the parser also links its slice to render
    stages (correlate_track_event)."""

    __slots__ = ()


def correlated_args(args: tuple) -> tuple:
    """args as GpuCorrelatedArgs if they hold a gpu_correlation, else as they are."""
    return GpuCorrelatedArgs(args) if any(a[0] in GPU_CORRELATION_KEYS for a in args) else args


def correlate_track_event(state: GpuState, slice_id: int, args) -> None:
    """A track event slice's gpu_correlation (read back from its args): flows to the render stages of the
    events it submitted and from those of the events it waits for, past and future ones
    (trace_processor's GpuTracker: AddRenderStageSubmission, then AddRenderStageWait)."""
    flows = state.trace.flows
    for flat_key, _, _, event_id in args:
        if flat_key == GPU_SUBMISSION_IDS:
            state.submitting_slice[event_id] = slice_id
            for stage_slice in state.event_slices.get(event_id, ()):
                flows.insert(slice_id, stage_slice)
    for flat_key, _, _, event_id in args:
        if flat_key == GPU_WAIT_IDS:
            state.completion_waiting_slice[event_id] = slice_id
            for stage_slice in state.event_slices.get(event_id, ()):
                flows.insert(stage_slice, slice_id)


def _insert_gpu_context(state: GpuState, context_id: int, pid: int | None, api: int | None) -> None:
    if context_id in state.contexts_inserted:
        return
    state.contexts_inserted.add(context_id)
    api_name = None if api is None else GRAPHICS_APIS.get(api, "UNDEFINED")
    state.trace.storage.insert("gpu_context", (context_id & 0xFFFFFFFF, pid, api_name))


# -- GPU log and Vulkan API events -----------------------------------------------------------


@packet_handler("gpu_log")
def _gpu_log(parser: HandlerContext, ts: int, event) -> None:
    trace = parser.trace
    track = trace.tracks.intern("gpu_log", (), "slice", "GPU Log")
    severity = event.severity
    if not event.HasField("severity"):
        # A value the enum does not declare is kept by protobuf as an unknown field.
        severity = next((f.data for f in unknown_fields(event) if f.field_number == 1 and f.wire_type == 0), 0)
    name = LOG_SEVERITIES[severity] if 0 <= severity < len(LOG_SEVERITIES) else LOG_SEVERITIES[-1]
    args: list[Arg] = []
    if event.HasField("tag"):
        args.append(("tag", "tag", "string", text(event.tag)))
    if event.HasField("log_message"):
        args.append(("message", "message", "string", text(event.log_message)))
    trace.slices.scoped(ts, 0, track, None, name, args)


@packet_handler("vulkan_api_event")
def _vulkan_api_event(parser: HandlerContext, ts: int, event) -> None:
    if event.HasField("vk_debug_utils_object_name"):
        named = event.vk_debug_utils_object_name
        gpu_state(parser).debug_names.setdefault(named.object_type, {})[named.object] = text(named.object_name)
    if not event.HasField("vk_queue_submit"):
        return
    submit = event.vk_queue_submit
    trace = parser.trace
    track = trace.tracks.intern("vulkan_events", (), "slice", "Vulkan Events")
    args: list[Arg] = [("pid", "pid", "int", submit.pid), ("tid", "tid", "int", submit.tid)]
    for i, buffer in enumerate(submit.vk_command_buffers):
        if i == 0:
            args.append(("command_buffer", "command_buffer", "uint", buffer))
        args.append(("command_buffers", f"command_buffers[{i}]", "uint", buffer))
    args.append(("submission_id", "submission_id", "int", submit.submission_id))
    trace.slices.scoped(ts, submit.duration_ns, track, None, "vkQueueSubmit", args)


# -- Vulkan memory ------------------------------------------------------------------------------


@tokenize_handler("vulkan_memory_event")
def _tokenize_vulkan_memory(importer, packet, seq, ts: int) -> None:
    """Queued with its interned strings (caller function, annotation keys and values)."""
    event = packet.vulkan_memory_event
    function_name = None
    if event.HasField("caller_iid"):
        raw = seq.lookup(INTERNED_FUNCTION_NAMES, event.caller_iid)
        function_name = None if raw is None else text(raw)
    annotations = []
    for a in event.annotations:
        key = seq.lookup(INTERNED_VULKAN_MEMORY_KEYS, a.key_iid)
        if a.HasField("int_value"):
            annotations.append((key, "int", a.int_value))
        elif a.HasField("double_value"):
            annotations.append((key, "real", a.double_value))
        elif a.HasField("string_iid"):
            # trace_processor reads the value from the keys table too.
            annotations.append((key, "string", seq.lookup(INTERNED_VULKAN_MEMORY_KEYS, a.string_iid)))
    importer.push(ts, (EV_PACKET, "vulkan_memory_event", event.SerializeToString(), function_name, annotations))


@packet_handler("vulkan_memory_event")
def _vulkan_memory_event(
    parser: HandlerContext, ts: int, event, function_name: str | None = None, annotations: list | None = None
) -> None:
    trace = parser.trace
    upid = trace.processes.get_or_create_process(event.pid & 0xFFFFFFFF)
    source = event.source if 0 <= event.source < len(VULKAN_SOURCES) else 0
    operation = event.operation if 0 <= event.operation < len(VULKAN_OPERATIONS) else 0
    optional = [
        event.device if event.HasField("device") else None,
        event.device_memory if event.HasField("device_memory") else None,
        event.memory_type if event.HasField("memory_type") else None,
        event.heap if event.HasField("heap") else None,
        function_name,
        event.object_handle if event.HasField("object_handle") else None,
        event.memory_address if event.HasField("memory_address") else None,
        event.memory_size if event.HasField("memory_size") else None,
    ]
    scope = None
    if event.HasField("allocation_scope") and 0 <= event.allocation_scope < len(VULKAN_SCOPES):
        scope = VULKAN_SCOPES[event.allocation_scope]
    _vulkan_memory_counters(gpu_state(parser), upid, event)
    args: list[Arg] = []
    for key, kind, value in annotations or ():
        if key is not None:
            args.append((key, key, kind, value))
    arg_set_id = trace.storage.arg_set(args) if args else None
    row = (arg_set_id, VULKAN_SOURCES[source], VULKAN_OPERATIONS[operation], event.timestamp, upid, *optional, scope)
    trace.storage.insert("vulkan_memory_allocations", tuple(to_int64(v) if isinstance(v, int) else v for v in row))


def _vulkan_memory_counters(state: GpuState, upid: int, event) -> None:
    """Running totals per process: driver memory per allocation scope, device memory
    allocated and bound per memory type."""
    op = event.operation
    if event.source == VkMem.SOURCE_DRIVER:
        scope = event.allocation_scope
        if scope == VkMem.SCOPE_UNSPECIFIED or not 0 < scope < len(VULKAN_SCOPES):
            return
        name = VULKAN_SCOPES[scope]
        totals, key, grow, shrink = state.driver_memory, scope, VkMem.OP_CREATE, VkMem.OP_DESTROY
        track_type, dim, track_name = (
            "vulkan_driver_mem",
            ("vulkan_allocation_scope", name),
            f"vulkan.mem.driver.scope.{name}",
        )
    elif event.source in (VkMem.SOURCE_DEVICE_MEMORY, VkMem.SOURCE_BUFFER, VkMem.SOURCE_IMAGE):
        key = event.memory_type & 0xFFFFFFFF
        dim = ("vulkan_memory_type", key)
        if event.source == VkMem.SOURCE_DEVICE_MEMORY:
            totals, grow, shrink, what = state.device_memory_allocated, VkMem.OP_CREATE, VkMem.OP_DESTROY, "allocation"
        else:
            totals, grow, shrink, what = state.device_memory_bound, VkMem.OP_BIND, VkMem.OP_DESTROY_BOUND, "bind"
        track_type, track_name = f"vulkan_device_mem_{what}", f"vulkan.mem.device.memory.type.{key}.{what}"
    else:
        return
    if op not in (grow, shrink):
        return
    total = totals[key] = totals.get(key, 0) + (event.memory_size if op == grow else -event.memory_size)
    track = state.trace.tracks.intern(track_type, (("upid", upid), dim), "counter", track_name)
    state.trace.insert_counter(event.timestamp, track, total)
