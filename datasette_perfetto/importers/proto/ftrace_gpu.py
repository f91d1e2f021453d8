"""GPU kernel events from ftrace other than DRM and frequency/memory counters, as trace_processor's
MaliGpuEventTracker, GpuWorkPeriodTracker and FtraceParser import them.

- Mali CSF interrupts (mali_mali_CSF_INTERRUPT_START / _END): "mali_CSF_INTERRUPT" slices with
  their info_val on a per-CPU "Mali Irq Cpu <n>" track (interrupt context: no thread).
- Mali MCU power states (the mali_mali_PM_MCU_* events): one slice per state on the global
  mali_mcu_state track, each ended by the next.
- mali_gpu_power_state: the to_state counter on the global "mali_gpu_power_state" track.
- gpu_work_period (Android GPU work periods per GPU and uid): one slice per period named by its
  active share ("%12.34"), with the active time as its thread_dur; a period ending before its
  start is counted (gpu_work_period_negative_duration) and dropped.
- Adreno command batches (kgsl_adreno_cmdbatch_queued / _retired): one "GPU" slice per retired batch at
  its GPU start time (ftrace_tokenizer relates GPU ticks to trace time with the batch's sync event), on
  compressed `adreno_gpu_cmdbatch` tracks per context and priority named after the queueing process.
"""

from __future__ import annotations

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ...model import TraceContext
from ...trackers.async_track_set import CompressedTrackSets
from ..common.values import UINT64_MASK, signed
from .ftrace_tokenizer import adreno_ns
from .packet_handlers import HandlerContext, ftrace_handler

CSF_INTERRUPT = "mali_CSF_INTERRUPT"


def _mali_irq_track(parser: HandlerContext, cpu: int) -> int:
    return parser.trace.tracks.intern("cpu_mali_irq", (("cpu", cpu),), "slice", f"Mali Irq Cpu {cpu}")


@ftrace_handler("mali_mali_CSF_INTERRUPT_START")
def _csf_interrupt_start(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    args = [("info_val", "info_val", "uint", ev.info_val)]
    parser.trace.slices.begin(ts, _mali_irq_track(parser, cpu), None, CSF_INTERRUPT, args)


@ftrace_handler("mali_mali_CSF_INTERRUPT_END")
def _csf_interrupt_end(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    args = [("info_val", "info_val", "uint", ev.info_val)]
    parser.trace.slices.end(ts, _mali_irq_track(parser, cpu), None, CSF_INTERRUPT, args)


class McuState:
    __slots__ = ("current",)

    def __init__(self) -> None:
        self.current: str | None = None  # the state slice open on the track


_MCU_PREFIX = "mali_mali_PM_MCU_"
# Every FtraceEvent field of an MCU state: mali_mali_PM_MCU_<STATE> -> <STATE>.
MCU_STATES = {
    f.name: f.name[len(_MCU_PREFIX) :] for f in pb.FtraceEvent.DESCRIPTOR.fields if f.name.startswith(_MCU_PREFIX)
}


def _mcu_state_handler(state_name: str):
    def handler(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
        state = parser.state("ftrace_mali_mcu", McuState)
        trace = parser.trace
        track = trace.tracks.intern("mali_mcu_state", (), "slice")
        if state.current is not None:
            trace.slices.end(ts, track, None, state.current, [])
        trace.slices.begin(ts, track, None, state_name, [])
        state.current = state_name

    return handler


for _event, _state in MCU_STATES.items():
    ftrace_handler(_event)(_mcu_state_handler(_state))


@ftrace_handler("mali_gpu_power_state")
def _mali_gpu_power_state(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    trace = parser.trace
    track = trace.tracks.intern("mali_gpu_power_state", (), "counter", "mali_gpu_power_state")
    trace.insert_counter(ts, track, ev.to_state)


@ftrace_handler("gpu_work_period")
def _gpu_work_period(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    trace = parser.trace
    ugpu = trace.gpu(ev.gpu_id)
    dims = (("ugpu", ugpu), ("gpu", ev.gpu_id), ("uid", ev.uid))
    track = trace.tracks.intern("android_gpu_work_period", dims, "slice")
    dur = signed((ev.end_time_ns - ev.start_time_ns) & UINT64_MASK)
    if dur < 0:
        trace.stats.inc("gpu_work_period_negative_duration")
        return
    active = signed(ev.total_active_duration_ns)
    if dur:
        percent = 100.0 * (active / dur)
    else:
        percent = float("nan") if active == 0 else (float("inf") if active > 0 else float("-inf"))
    trace.slices.scoped(ts, dur, track, None, f"%{percent:.2f}", [], thread_ts=ts, thread_dur=active)


# -- Adreno command batches (trace_processor's FtraceParser::ParseKgslAdrenoCmdbatchRetired) ---------------------


class AdrenoState:
    """The queueing thread of each command batch context, and the compressed per (context, prio) tracks."""

    def __init__(self, trace: TraceContext) -> None:
        self.context_tids: dict[int, int] = {}
        self.track_sets = CompressedTrackSets(trace.tracks, trace.new_track_group)


def _adreno(parser: HandlerContext) -> AdrenoState:
    return parser.state("adreno_cmdbatch", lambda: AdrenoState(parser.trace))


@ftrace_handler("kgsl_adreno_cmdbatch_queued")
def _adreno_cmdbatch_queued(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    _adreno(parser).context_tids[ev.id] = pid


@ftrace_handler("kgsl_adreno_cmdbatch_retired")
def _adreno_cmdbatch_retired(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    """A "GPU" slice from the batch's start (ts: GPU time, ftrace_tokenizer) to its retirement, on a track of its
    context and priority named by the process that queued it (once known)."""
    if ev.retire < ev.start:
        return
    trace = parser.trace
    state = _adreno(parser)
    dur = adreno_ns(ev.retire - ev.start)
    context_id, prio = ev.id & 0xFFFFFFFF, ev.prio & 0xFFFFFFFF
    process_name = None
    tid = state.context_tids.get(context_id)
    if tid is not None:
        upid = trace.processes.thread(trace.processes.get_or_create_thread(tid)).upid
        if upid is not None:
            process_name = trace.processes.process(upid).name
    name = (
        f"GPU {process_name} (Ctx={context_id}, Prio={prio})"
        if process_name is not None
        else f"GPU (Ctx={context_id}, Prio={prio})"
    )
    dims = (("context_id", context_id), ("prio", prio))
    track = state.track_sets.get("adreno_gpu_cmdbatch", dims, name).for_interval(ts, dur, name)
    if process_name is not None:  # a track first named before its process was known
        trace.tracks.row(track).name = name
    trace.slices.scoped(ts, dur, track, None, "GPU", [])
