"""DRM kernel events from ftrace, as trace_processor's DrmTracker and VirtioGpuTracker import them.

- drm_vblank_event / drm_vblank_event_delivered: instants "signal" / "deliver" on the CRTC's
  "vblank-<crtc>" track (type drm_vblank), with the vblank seqno.
- GPU scheduler jobs: a "drm_sched_job_queue" instant on the queuing thread's track, then one
  "job" slice per running job on the ring's "sched-<ring>" track (drm_sched_ring), a flow from
  the queue instant to the job. Before linux 6.17 (drm_sched_job, drm_run_job,
  drm_sched_process_job) a job is known by a per-ring id and a fence address; since 6.17
  (drm_sched_job_queue / _run / _done) by its dma-fence context and seqno, which become its args.
- dma-fences: one "fence" slice per pending fence on the "fence-<timeline>-<context>" track
  (drm_fence), from dma_fence_init (or dma_fence_emit, once a timeline has one) to
  dma_fence_signaled; "unbound" (meta-fence) timelines are ignored. dma_fence_wait_start/_end
  make a "dma_fence_wait" slice on the waiting thread's track.
- virtio-gpu command queues (virtio_gpu_cmd_queue / _response) of the control and cursor
  queues: one slice per command on compressed "Virtgpu <queue> Queue" tracks, "Virtgpu <queue>
  Free" counters of free descriptors and "Virtgpu <queue> Latency" counters of the time to a
  response (commands with a fence excepted).
"""

from __future__ import annotations

from collections import deque

from ...model import TraceContext
from ...storage import Arg
from ...trackers.async_track_set import CompressedTrackSets
from ..common.values import UINT32_MAX, stack_string, text
from .ftrace_syscalls import thread_slice_track
from .packet_handlers import HandlerContext, ftrace_handler

UNBOUND_FENCE_TIMELINE = "unbound"


# -- vblank ------------------------------------------------------------------------------


def _vblank(parser: HandlerContext, ts: int, crtc: int, seq: int, name: str) -> None:
    trace = parser.trace
    crtc &= UINT32_MAX  # an unsigned dimension
    track = trace.tracks.intern("drm_vblank", (("drm_crtc", crtc),), "slice", f"vblank-{crtc}")
    trace.slices.scoped(ts, 0, track, None, name, [("vblank seqno", "vblank seqno", "uint", seq)])


@ftrace_handler("drm_vblank_event")
def _drm_vblank_event(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    _vblank(parser, ts, ev.crtc, ev.seq, "signal")


@ftrace_handler("drm_vblank_event_delivered")
def _drm_vblank_event_delivered(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    _vblank(parser, ts, ev.crtc, ev.seq, "deliver")


# -- GPU scheduler -------------------------------------------------------------------------


class SchedJob:
    """A scheduler job: since 6.17 its fence (context, seqno); before, a ring-local id and/or a
    global id (the fence address), whichever the event carries."""

    __slots__ = ("fence", "global_id", "local_id")

    def __init__(
        self, fence: tuple[int, int] | None = None, global_id: int | None = None, local_id: int | None = None
    ) -> None:
        self.fence = fence
        self.global_id = global_id
        self.local_id = local_id

    def global_key(self) -> tuple:
        """Identity among running jobs (fence, else global id)."""
        return ("fence", *self.fence) if self.fence is not None else ("global", self.global_id or 0)

    def local_key(self) -> tuple:
        """Identity among a ring's queued jobs (fence, else local id)."""
        return ("fence", *self.fence) if self.fence is not None else ("local", self.local_id or 0)

    def args(self) -> list[Arg]:
        if self.fence is not None:
            return [
                ("fence context", "fence context", "uint", self.fence[0]),
                ("fence seqno", "fence seqno", "uint", self.fence[1]),
            ]
        return [("gpu sched job", "gpu sched job", "uint", self.local_id or 0)]


class SchedRing:
    __slots__ = ("track", "running", "queued")

    def __init__(self, track: int) -> None:
        self.track = track
        self.running: deque[SchedJob] = deque()  # running jobs, not yet done
        self.queued: dict[tuple, int] = {}  # job's local key -> its queue instant (a flow's start)


class FenceTimeline:
    __slots__ = ("track", "has_emit", "pending")

    def __init__(self, track: int) -> None:
        self.track = track
        self.has_emit = False
        self.pending: deque[int] = deque()  # seqnos initialized (or emitted), not yet signaled


class DrmTracker:
    """Per-trace state of the DRM events: scheduler rings, running jobs, fence timelines."""

    def __init__(self, parser: HandlerContext) -> None:
        self.parser = parser
        self.trace: TraceContext = parser.trace
        self.rings: dict[str, SchedRing] = {}
        self.busy: dict[tuple, SchedRing] = {}  # running job's global key -> its ring
        self.timelines: dict[int, FenceTimeline] = {}  # fence context -> timeline

    def ring(self, name: str) -> SchedRing:
        ring = self.rings.get(name)
        if ring is None:
            track = self.trace.tracks.intern(
                "drm_sched_ring", (("name", name),), "slice", stack_string(f"sched-{name}", 256)
            )
            ring = self.rings[name] = SchedRing(track)
        return ring

    def job_queue(self, ts: int, pid: int, name: str, job: SchedJob) -> None:
        trace = self.trace
        track = thread_slice_track(self.parser, trace.processes.get_or_create_thread(pid))
        args: list[Arg] = [("gpu sched ring", "gpu sched ring", "string", name), *job.args()]
        slice_id = trace.slices.scoped(ts, 0, track, None, "drm_sched_job_queue", args)
        if slice_id is not None:
            self.ring(name).queued[job.local_key()] = slice_id

    def job_run(self, ts: int, name: str, job: SchedJob) -> None:
        ring = self.ring(name)
        ring.running.append(job)
        self.busy.setdefault(job.global_key(), ring)  # the first ring stays (a map insert)
        if len(ring.running) == 1:
            self._begin_job(ts, ring)

    def job_done(self, ts: int, job: SchedJob) -> None:
        ring = self.busy.pop(job.global_key(), None)
        if ring is None:
            return
        if ring.running:
            ring.running.popleft()  # the oldest running job, as trace_processor does
        self.trace.slices.end(ts, ring.track, None, None, [])
        if ring.running:
            self._begin_job(ts, ring)

    def _begin_job(self, ts: int, ring: SchedRing) -> None:
        job = ring.running[0]
        trace = self.trace
        slice_id = trace.slices.begin(ts, ring.track, None, "job", job.args())
        if slice_id is not None:
            queued = ring.queued.pop(job.local_key(), None)
            if queued is not None:
                trace.flows.insert(queued, slice_id)

    # -- dma-fence -------------------------------------------------------------------------
    def timeline(self, context: int, name: str) -> FenceTimeline:
        timeline = self.timelines.get(context)
        if timeline is None:
            track = self.trace.tracks.intern(
                "drm_fence",
                (("name", name), ("context", context)),
                "slice",
                stack_string(f"fence-{name}-{context}", 256),
            )
            timeline = self.timelines[context] = FenceTimeline(track)
        return timeline

    def _begin_fence(self, ts: int, timeline: FenceTimeline) -> None:
        seqno = timeline.pending[0]
        self.trace.slices.begin(ts, timeline.track, None, "fence", [("fence seqno", "fence seqno", "uint", seqno)])

    def fence_init(self, ts: int, name: str, context: int, seqno: int) -> None:
        if name == UNBOUND_FENCE_TIMELINE:
            return
        timeline = self.timeline(context, name)
        if timeline.has_emit:
            return  # the timeline's fences are followed from dma_fence_emit
        timeline.pending.append(seqno)
        if len(timeline.pending) == 1:
            self._begin_fence(ts, timeline)

    def fence_emit(self, ts: int, name: str, context: int, seqno: int) -> None:
        if name == UNBOUND_FENCE_TIMELINE:
            return
        timeline = self.timeline(context, name)
        if not timeline.has_emit:
            # The first emit: switch from the less accurate dma_fence_init.
            timeline.has_emit = True
            if timeline.pending:
                self.trace.slices.end(ts, timeline.track, None, None, [])
                timeline.pending.clear()
        timeline.pending.append(seqno)
        if len(timeline.pending) == 1:
            self._begin_fence(ts, timeline)

    def fence_signaled(self, ts: int, name: str, context: int, seqno: int) -> None:
        if name == UNBOUND_FENCE_TIMELINE:
            return
        timeline = self.timeline(context, name)
        if not timeline.pending or seqno < timeline.pending[0]:
            return
        timeline.pending.popleft()
        self.trace.slices.end(ts, timeline.track, None, None, [])
        if timeline.pending:
            self._begin_fence(ts, timeline)

    def fence_wait_start(self, ts: int, pid: int, context: int, seqno: int) -> None:
        trace = self.trace
        track = thread_slice_track(self.parser, trace.processes.get_or_create_thread(pid))
        args: list[Arg] = [
            ("fence context", "fence context", "uint", context),
            ("fence seqno", "fence seqno", "uint", seqno),
        ]
        trace.slices.begin(ts, track, None, "dma_fence_wait", args)

    def fence_wait_end(self, ts: int, pid: int) -> None:
        trace = self.trace
        track = thread_slice_track(self.parser, trace.processes.get_or_create_thread(pid))
        trace.slices.end(ts, track, None, None, [])


def drm(parser: HandlerContext) -> DrmTracker:
    return parser.state("ftrace_drm", lambda: DrmTracker(parser))


@ftrace_handler("drm_sched_job")
def _drm_sched_job(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    drm(parser).job_queue(ts, pid, text(ev.name), SchedJob(local_id=ev.id))


@ftrace_handler("drm_run_job")
def _drm_run_job(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    drm(parser).job_run(ts, text(ev.name), SchedJob(global_id=ev.fence, local_id=ev.id))


@ftrace_handler("drm_sched_process_job")
def _drm_sched_process_job(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    drm(parser).job_done(ts, SchedJob(global_id=ev.fence))


@ftrace_handler("drm_sched_job_queue")
def _drm_sched_job_queue(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    drm(parser).job_queue(ts, pid, text(ev.name), SchedJob(fence=(ev.fence_context, ev.fence_seqno)))


@ftrace_handler("drm_sched_job_run")
def _drm_sched_job_run(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    drm(parser).job_run(ts, text(ev.name), SchedJob(fence=(ev.fence_context, ev.fence_seqno)))


@ftrace_handler("drm_sched_job_done")
def _drm_sched_job_done(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    drm(parser).job_done(ts, SchedJob(fence=(ev.fence_context, ev.fence_seqno)))


@ftrace_handler("dma_fence_init")
def _dma_fence_init(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    drm(parser).fence_init(ts, text(ev.timeline), ev.context, ev.seqno)


@ftrace_handler("dma_fence_emit")
def _dma_fence_emit(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    drm(parser).fence_emit(ts, text(ev.timeline), ev.context, ev.seqno)


@ftrace_handler("dma_fence_signaled")
def _dma_fence_signaled(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    drm(parser).fence_signaled(ts, text(ev.timeline), ev.context, ev.seqno)


@ftrace_handler("dma_fence_wait_start")
def _dma_fence_wait_start(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    drm(parser).fence_wait_start(ts, pid, ev.context, ev.seqno)


@ftrace_handler("dma_fence_wait_end")
def _dma_fence_wait_end(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    drm(parser).fence_wait_end(ts, pid)


# -- virtio-gpu ----------------------------------------------------------------------------

_VIRTIO_GPU_2D = (
    "GET_DISPLAY_INFO",
    "RESOURCE_CREATE_2D",
    "RESOURCE_UNREF",
    "SET_SCANOUT",
    "RESOURCE_FLUSH",
    "TRANSFER_TO_HOST_2D",
    "RESOURCE_ATTACH_BACKING",
    "RESOURCE_DETACH_BACKING",
    "GET_CAPSET_INFO",
    "GET_CAPSET",
    "GET_EDID",
    "RESOURCE_ASSIGN_UUID",
    "RESOURCE_CREATE_BLOB",
    "SET_SCANOUT_BLOB",
)
_VIRTIO_GPU_3D = (
    "CTX_CREATE",
    "CTX_DESTROY",
    "CTX_ATTACH_RESOURCE",
    "CTX_DETACH_RESOURCE",
    "RESOURCE_CREATE_3D",
    "TRANSFER_TO_HOST_3D",
    "TRANSFER_FROM_HOST_3D",
    "SUBMIT_3D",
    "RESOURCE_MAP_BLOB",
    "RESOURCE_UNMAP_BLOB",
)
_VIRTIO_GPU_CURSOR = ("UPDATE_CURSOR", "MOVE_CURSOR")
# virtio_gpu_ctrl_type -> command name (linux/virtio_gpu.h); other types are named "".
VIRTIO_GPU_COMMANDS = {
    base + i: name
    for base, names in ((0x100, _VIRTIO_GPU_2D), (0x200, _VIRTIO_GPU_3D), (0x300, _VIRTIO_GPU_CURSOR))
    for i, name in enumerate(names)
}
# The event's queue name -> the queue's name on its tracks.
VIRTIO_GPU_QUEUES = {"control": "Control", "cursor": "Cursor"}


class VirtioGpuTracker:
    def __init__(self, trace: TraceContext) -> None:
        self.trace = trace
        self.track_sets = CompressedTrackSets(trace.tracks, trace.new_track_group)
        self.starts: dict[str, dict[int, int]] = {}  # queue -> seqno -> queued at (commands without a fence)

    def _counter(self, ts: int, queue: str, type: str, kind: str, value: float) -> None:
        trace = self.trace
        name = stack_string(f"Virtgpu {queue} {kind}", 255)
        track = trace.tracks.intern(type, (("virtgpu_name", queue),), "counter", name)
        trace.insert_counter(ts, track, value)

    def _queue_track(self, queue: str, seqno: int, kind: str) -> int:
        track_set = self.track_sets.get(
            "virtgpu_queue_event", (("virtgpu_name", queue),), stack_string(f"Virtgpu {queue} Queue", 255)
        )
        return track_set.track_for(seqno, kind)

    def cmd_queue(self, ts: int, ev) -> None:
        queue = VIRTIO_GPU_QUEUES.get(text(ev.name))
        if queue is None:
            return
        self._counter(ts, queue, "virtgpu_num_free", "Free", ev.num_free)
        track = self._queue_track(queue, ev.seqno, "begin")
        self.trace.slices.begin(ts, track, None, VIRTIO_GPU_COMMANDS.get(ev.type, ""), [])
        # Commands with a fence need not get an immediate response: no latency for them.
        if not ev.fence_id:
            self.starts.setdefault(queue, {})[ev.seqno] = ts

    def cmd_response(self, ts: int, ev) -> None:
        queue = VIRTIO_GPU_QUEUES.get(text(ev.name))
        if queue is None:
            return
        self._counter(ts, queue, "virtgpu_num_free", "Free", ev.num_free)
        track = self._queue_track(queue, ev.seqno, "end")
        self.trace.slices.end(ts, track, None, None, [])
        start = self.starts.get(queue, {}).pop(ev.seqno, None)
        if start is not None:
            self._counter(ts, queue, "virtgpu_latency", "Latency", ts - start)


def _virtio_gpu(parser: HandlerContext) -> VirtioGpuTracker:
    return parser.state("ftrace_virtio_gpu", lambda: VirtioGpuTracker(parser.trace))


@ftrace_handler("virtio_gpu_cmd_queue")
def _virtio_gpu_cmd_queue(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    _virtio_gpu(parser).cmd_queue(ts, ev)


@ftrace_handler("virtio_gpu_cmd_response")
def _virtio_gpu_cmd_response(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    _virtio_gpu(parser).cmd_response(ts, ev)
