"""Kernel counters and interrupts from ftrace → counter tracks and CPU slice tracks.

CPU frequency/idle/limits, GPU frequency, per-process memory (rss_stat),
clocks, thermal zones, cooling devices, OOM score and mm events become
counters on tracks typed, dimensioned and named as trace_processor's
blueprints make them; hard and soft interrupts become slices on per-CPU
tracks. The OS-neutral generic_kernel_cpu_freq_event / generic_gpu_frequency_event
packets feed the same frequency tracks. The track helpers here are shared with
`system_probes` (polled counters land on the same tracks as their ftrace twins).
"""

from __future__ import annotations

from ...model import TraceContext
from ..common.values import text
from .packet_handlers import HandlerContext, ftrace_handler, packet_handler

# -- shared track helpers --------------------------------------------------------------


def cpu_counter_track(
    trace: TraceContext, type: str, cpu: int, name: str | None, unit: str | None = None, extra_dims: tuple = ()
) -> int:
    """A counter track with a `cpu` dimension; like trace_processor, it makes the CPU present."""
    trace.cpu(cpu)
    return trace.tracks.intern(type, (("cpu", cpu),) + extra_dims, "counter", name, unit)


def cpu_frequency_track(trace: TraceContext, cpu: int) -> int:
    return cpu_counter_track(trace, "cpu_frequency", cpu, "cpufreq")


def gpu_frequency_track(trace: TraceContext, gpu: int) -> int:
    ugpu = trace.gpu(gpu)
    return trace.tracks.intern("gpu_frequency", (("ugpu", ugpu), ("gpu", gpu)), "counter", "gpufreq", "kHz")


def global_counter_track(trace: TraceContext, type: str, dims: tuple, name: str | None, unit: str | None = None) -> int:
    return trace.tracks.intern(type, dims, "counter", name, unit)


class ThreadCounters:
    """Counters emitted by a thread but belonging to its process (rss_stat, oom
    score, mm events). Which process a thread is in may only be learnt later in
    the trace, so, as trace_processor does, each value is written at once on a
    placeholder track and the track is chosen when the trace ends: the process
    track if the thread has a process by then, else a thread fallback track."""

    def __init__(self, trace: TraceContext) -> None:
        self.trace = trace
        # (utid, process type, thread fallback type, dims, name) -> placeholder (negative) track id
        self._placeholders: dict[tuple, int] = {}

    def push(
        self, ts: int, value: float, utid: int, process_type: str, thread_type: str, dims: tuple, name: str
    ) -> None:
        key = (utid, process_type, thread_type, dims, name)
        placeholder = self._placeholders.get(key)
        if placeholder is None:
            placeholder = self._placeholders[key] = -1 - len(self._placeholders)
        self.trace.insert_counter(ts, placeholder, value, [("utid", "utid", "uint", utid)])

    def finish(self) -> None:
        if not self._placeholders:
            return
        procs, tracks = self.trace.processes, self.trace.tracks
        resolved = []
        for (utid, process_type, thread_type, dims, name), placeholder in self._placeholders.items():
            upid = procs.thread(utid).upid
            if upid is not None:
                track = tracks.intern(process_type, (("upid", upid),) + dims, "counter", name)
            else:
                track = tracks.intern(thread_type, (("utid", utid),) + dims, "counter", name)
            resolved.append((placeholder, track))
        storage = self.trace.storage
        storage.execute("CREATE TEMP TABLE _thread_counter_tracks (placeholder INTEGER PRIMARY KEY, track_id INTEGER)")
        storage.executemany("INSERT INTO _thread_counter_tracks VALUES (?, ?)", resolved)
        storage.execute("""UPDATE counter SET track_id = (SELECT track_id FROM _thread_counter_tracks
                                                     WHERE placeholder = counter.track_id)
                        WHERE track_id < 0""")
        storage.execute("DROP TABLE _thread_counter_tracks")
        self._placeholders.clear()


def thread_counters(parser: HandlerContext) -> ThreadCounters:
    return parser.state("thread_counters", lambda: ThreadCounters(parser.trace))


def push_process_memory(parser: HandlerContext, ts: int, value: float, utid: int, key: str) -> None:
    thread_counters(parser).push(
        ts,
        value,
        utid,
        "process_memory",
        "process_memory_thread_fallback",
        (("process_memory_key", key),),
        f"mem.{key}",
    )


# -- CPU ---------------------------------------------------------------------------------


@ftrace_handler("cpu_frequency")
def _cpu_frequency(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    parser.trace.insert_counter(ts, cpu_frequency_track(parser.trace, ev.cpu_id), ev.state)


@ftrace_handler("cpu_idle")
def _cpu_idle(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    track = cpu_counter_track(parser.trace, "cpu_idle", ev.cpu_id, "cpuidle")
    parser.trace.insert_counter(ts, track, ev.state)


@ftrace_handler("dcvsh_freq")
def _dcvsh_freq(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    track = cpu_counter_track(parser.trace, "cpu_frequency_throttle", ev.cpu & 0xFFFFFFFF, "cpufreq_throttle")
    parser.trace.insert_counter(ts, track, ev.freq)


@ftrace_handler("cpu_frequency_limits")
def _cpu_frequency_limits(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    trace = parser.trace
    cpu_id = ev.cpu_id
    trace.insert_counter(
        ts, cpu_counter_track(trace, "cpu_max_frequency_limit", cpu_id, f"Cpu {cpu_id} Max Freq Limit"), ev.max_freq
    )
    trace.insert_counter(
        ts, cpu_counter_track(trace, "cpu_min_frequency_limit", cpu_id, f"Cpu {cpu_id} Min Freq Limit"), ev.min_freq
    )


@packet_handler("generic_kernel_cpu_freq_event")
def _generic_cpu_frequency(parser: HandlerContext, ts: int, ev) -> None:
    # The OS-neutral twin of cpu_frequency, in Hz rather than kHz.
    parser.trace.insert_counter(ts, cpu_frequency_track(parser.trace, ev.cpu & 0xFFFFFFFF), ev.freq_hz / 1000.0)


# -- GPU ---------------------------------------------------------------------------------


@packet_handler("generic_gpu_frequency_event")
def _generic_gpu_frequency(parser: HandlerContext, ts: int, ev) -> None:
    parser.trace.insert_counter(ts, gpu_frequency_track(parser.trace, ev.gpu_id), ev.frequency_khz)


@ftrace_handler("gpu_frequency")
def _gpu_frequency(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    parser.trace.insert_counter(ts, gpu_frequency_track(parser.trace, ev.gpu_id), ev.state)


@ftrace_handler("kgsl_gpu_frequency")
def _kgsl_gpu_frequency(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    # kgsl reports kHz / 1000.
    parser.trace.insert_counter(ts, gpu_frequency_track(parser.trace, ev.gpu_id), ev.gpu_freq * 1000.0)


def _gpu_memory(trace: TraceContext, ts: int, gpu: int, upid: int | None, size: int) -> None:
    """GPU memory in use: the GPU's total (pid 0), else one process's on that GPU."""
    ugpu = trace.gpu(gpu)
    if upid is None:
        track = trace.tracks.intern("gpu_memory", (("ugpu", ugpu), ("gpu", gpu)), "counter", "GPU Memory", "bytes")
    else:
        track = trace.tracks.intern(
            "process_gpu_memory", (("ugpu", ugpu), ("gpu", gpu), ("upid", upid)), "counter", "GPU Memory", "bytes"
        )
    trace.insert_counter(ts, track, size)


@ftrace_handler("gpu_mem_total")
def _gpu_mem_total(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    procs = parser.trace.processes
    parser.trace.gpu(ev.gpu_id)  # the GPU is seen even when the event is dropped below
    upid = None
    if ev.pid:
        # Emitted by kworkers even after the process died: never invent a process for it.
        if procs.get_thread_or_null(ev.pid) is None:
            return
        upid = procs.thread(procs.update_thread(ev.pid, ev.pid)).upid
    _gpu_memory(parser.trace, ts, ev.gpu_id, upid, ev.size)


@packet_handler("gpu_mem_total_event")
def _gpu_mem_total_event(parser: HandlerContext, ts: int, ev) -> None:
    procs = parser.trace.processes
    upid = None
    if ev.pid:
        upid = procs.thread(procs.update_thread(ev.pid, ev.pid)).upid
        if upid is None:
            upid = 0
    _gpu_memory(parser.trace, ts, ev.gpu_id, upid, ev.size)


# -- memory ------------------------------------------------------------------------------

RSS_STAT_KEYS = ("rss.file", "rss.anon", "swap", "rss.shmem", "unreclaimable")


class RssStatState:
    def __init__(self) -> None:
        self.mm_owner: dict[int, int] = {}  # mm_id -> utid of the thread last seen as its owner


@ftrace_handler("rss_stat")
def _rss_stat(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    has_mm = ev.HasField("mm_id") and ev.HasField("curr")
    _push_rss(parser, ts, pid, ev.member, ev.size, ev.curr if has_mm else None, ev.mm_id if has_mm else None)


@ftrace_handler("rss_stat_throttled")
def _rss_stat_throttled(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    _push_rss(parser, ts, pid, ev.member, ev.size, ev.curr, ev.mm_id)


def _push_rss(
    parser: HandlerContext, ts: int, pid: int, member: int, size: int, curr: int | None, mm_id: int | None
) -> None:
    utid: int | None
    key = RSS_STAT_KEYS[member] if 0 <= member < len(RSS_STAT_KEYS) else "unknown"
    if size < 0:
        parser.stats.inc("rss_stat_negative_size")
        return
    procs = parser.trace.processes
    if mm_id is None:
        # Old kernels say nothing of whose mm it is: the emitting task's.
        utid = procs.get_or_create_thread(pid)
    elif curr:
        owners = parser.state("rss_stat", RssStatState).mm_owner
        utid = owners[mm_id] = procs.get_or_create_thread(pid)
    else:
        # Another task's mm (or the current task tearing down its own): the thread last
        # seen owning it, unless that thread has died since (the mm may be reused).
        owners = parser.state("rss_stat", RssStatState).mm_owner
        utid = owners.get(mm_id)
        if utid is not None and not procs.is_thread_alive(utid):
            del owners[mm_id]
            utid = None
        if utid is None:
            parser.stats.inc("rss_stat_unknown_thread_for_mm_id")
            return
    push_process_memory(parser, ts, size, utid, key)


@ftrace_handler("oom_score_adj_update")
def _oom_score_adj_update(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    # Old tracers encoded negative values badly (b/120618641): the kernel's value is an int16.
    adj = ((ev.oom_score_adj + 0x8000) & 0xFFFF) - 0x8000
    utid = parser.trace.processes.get_or_create_thread(ev.pid & 0xFFFFFFFF)
    thread_counters(parser).push(ts, adj, utid, "oom_score_adj", "oom_score_adj_thread_fallback", (), "oom_score_adj")


MM_EVENT_TYPES = ("min_flt", "maj_flt", "read_io", "compaction", "reclaim", "swp_flt", "kern_alloc")


@ftrace_handler("mm_event_record")
def _mm_event_record(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    utid = parser.trace.processes.get_or_create_thread(pid)
    if ev.type >= len(MM_EVENT_TYPES):
        parser.stats.inc("mm_unknown_type")
        return
    kind = MM_EVENT_TYPES[ev.type]
    counters = thread_counters(parser)
    for metric, value in (("count", ev.count), ("max_lat", ev.max_lat), ("avg_lat", ev.avg_lat)):
        counters.push(
            ts,
            value,
            utid,
            "mm_event",
            "mm_event_thread_fallback",
            (("mm_event_type", kind), ("mm_event_metric", metric)),
            f"mem.mm.{kind}.{metric}",
        )


# -- clocks and thermal ------------------------------------------------------------------


def clock_frequency_track(trace: TraceContext, device: str) -> int:
    return global_counter_track(trace, "clock_frequency", (("linux_device", device),), f"{device} Frequency")


@ftrace_handler("clock_set_rate")
def _clock_set_rate(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    parser.trace.insert_counter(ts, clock_frequency_track(parser.trace, text(ev.name)), ev.state)


@ftrace_handler("clock_enable", "clock_disable")
def _clock_state(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    name = text(ev.name)
    track = global_counter_track(parser.trace, "clock_state", (("linux_device", name),), f"{name} State")
    parser.trace.insert_counter(ts, track, ev.state)


@ftrace_handler("thermal_temperature")
def _thermal_temperature(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    zone = text(ev.thermal_zone)
    track = global_counter_track(parser.trace, "thermal_temperature", (("thermal_zone", zone),), f"{zone} Temperature")
    parser.trace.insert_counter(ts, track, ev.temp)


# Exynos ACPM firmware thermal zones by tz_id (trace_processor's ThermalTracker).
ACPM_THERMAL_ZONES = ("BIG", "MID", "LITTLE", "GPU", "ISP", "TPU", "AUR")


@ftrace_handler("thermal_exynos_acpm_bulk", "thermal_exynos_acpm_high_overhead")
def _thermal_exynos_acpm(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    """A zone's temperature and cooling state, each with the zone's id as an arg. The bulk event comes
    at the firmware's time its payload carries (ftrace_tokenizer.RETIMED_EVENTS)."""
    if ev.tz_id >= len(ACPM_THERMAL_ZONES):
        parser.trace.stats.inc("ftrace_thermal_exynos_acpm_unknown_tz_id")
        return
    zone = ACPM_THERMAL_ZONES[ev.tz_id]
    args = [("thermal_zone_id", "thermal_zone_id", "int", ev.tz_id)]
    dims = (("thermal_zone", zone),)
    trace = parser.trace
    trace.insert_counter(
        ts, global_counter_track(trace, "acpm_thermal_temperature", dims, f"{zone} Temperature"), ev.current_temp, args
    )
    trace.insert_counter(
        ts,
        global_counter_track(trace, "acpm_cooling_device_counter", dims, f"Tj-{zone} Cooling Device"),
        ev.cdev_state,
        args,
    )


@ftrace_handler("cros_ec_sensorhub_data")
def _cros_ec_sensorhub_data(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    """A ChromeOS EC sensor sample: the EC's delay (current time less the sample's), with the sensor, the
    FIFO delta and the sample time as args (trace_processor's FtraceParser::ParseCrosEcSensorhubData)."""
    sensor = ev.ec_sensor_num
    trace = parser.trace
    track = global_counter_track(
        trace, "cros_ec_sensorhub_data", (("ec_sensor_num", sensor),), f"cros_ec.cros_ec_sensorhub_data.{sensor}"
    )
    args = [
        ("ec_num", "ec_num", "int", sensor),
        ("ec_delta", "ec_delta", "int", ev.fifo_timestamp - ev.current_timestamp),
        ("sample_ts", "sample_ts", "int", ev.current_timestamp),
    ]
    trace.insert_counter(ts, track, ev.current_time - ev.current_timestamp, args)


@ftrace_handler("cdev_update")
def _cdev_update(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    device = text(ev.type)
    track = global_counter_track(
        parser.trace, "cooling_device_counter", (("linux_device", device),), f"{device} Cooling Device"
    )
    parser.trace.insert_counter(ts, track, ev.target)


# -- interrupts → slices on per-CPU tracks ------------------------------------------------

SOFTIRQ_NAMES = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "BLOCK_IOPOLL", "TASKLET", "SCHED", "HRTIMER", "RCU")


def _irq_track(trace: TraceContext, cpu: int) -> int:
    trace.cpu(cpu)
    return trace.tracks.intern("cpu_irq", (("cpu", cpu),), "slice", f"Irq Cpu {cpu}")


def _softirq_track(trace: TraceContext, cpu: int) -> int:
    trace.cpu(cpu)
    return trace.tracks.intern("cpu_softirq", (("cpu", cpu),), "slice", f"SoftIrq Cpu {cpu}")


@ftrace_handler("irq_handler_entry")
def _irq_handler_entry(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    parser.trace.slices.begin(ts, _irq_track(parser.trace, cpu), "irq", f"IRQ ({text(ev.name)})", [])


@ftrace_handler("irq_handler_exit")
def _irq_handler_exit(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    outcome = "handled" if ev.ret == 1 else "unhandled"
    parser.trace.slices.end(ts, _irq_track(parser.trace, cpu), "irq", None, [("ret", "ret", "string", outcome)])


@ftrace_handler("local_timer_entry")
def _local_timer_entry(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    parser.trace.slices.begin(ts, _irq_track(parser.trace, cpu), "irq", "IRQ (LocalTimer)", [])


@ftrace_handler("local_timer_exit")
def _local_timer_exit(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    parser.trace.slices.end(ts, _irq_track(parser.trace, cpu), "irq", None, [])


@ftrace_handler("softirq_entry")
def _softirq_entry(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    if ev.vec >= len(SOFTIRQ_NAMES):
        return  # not a softirq the kernel defines
    parser.trace.slices.begin(ts, _softirq_track(parser.trace, cpu), "irq", SOFTIRQ_NAMES[ev.vec], [])


@ftrace_handler("softirq_exit")
def _softirq_exit(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    parser.trace.slices.end(ts, _softirq_track(parser.trace, cpu), "irq", None, [("vec", "vec", "int", ev.vec)])
