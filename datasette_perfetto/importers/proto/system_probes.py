"""traced_probes' polled data: process trees, process and system stats, CPU and GPU info.

- `process_tree`: processes and threads as /proc shows them → process/thread
  rows (names from the command line, parents, uids, start times, kernel
  threads), as trace_processor's SystemProbesParser builds them.
- `process_stats`: per-process memory, OOM score, smaps and runtime counters.
- `sys_stats`: meminfo, vmstat, per-CPU times, interrupts, forks, buddyinfo,
  disk stats, PSI, thermal zones, cpuidle, CPU and GPU frequencies, slabs.
- `cpu_info` / `gpu_info`: the cpu and gpu tables (cluster ids computed from
  capacities or maximum frequencies).
"""

from __future__ import annotations

from ...trackers.process_tracker import THREAD_NAME_PRIORITY_PROCESS_TREE, set_arg
from ..common.values import text
from .clock_tracker import BOOTTIME
from .ftrace_counters import cpu_counter_track, cpu_frequency_track, global_counter_track, gpu_frequency_track
from .packet_handlers import HandlerContext, packet_handler
from .unknown import unknown_fields

KTHREADD_PID = 2


def _enum(msg, name: str, number: int) -> int:
    """An enum field's raw value, including values this proto version does not know
    (protobuf keeps those aside as unknown fields and reads the field as 0)."""
    if msg.HasField(name):
        return getattr(msg, name)
    for field in unknown_fields(msg):
        # Only a varint is a value: the field written with another wire type (a damaged
        # trace) leaves bytes there, read as absent.
        if field.field_number == number and type(field.data) is int:
            return field.data
    return 0


# -- process_tree ------------------------------------------------------------------------


def truncate_kworker(comm: str) -> str:
    """kworker/45:2-mm_percpu_wq → kworker/45:2: procfs appends the workqueue the
    worker last ran, which changes all the time and misleads more than it tells."""
    if comm.startswith("kworker/"):
        cuts = [i for i in (comm.find("+", 8), comm.find("-", 8)) if i != -1]
        if cuts:
            return comm[: min(cuts)]
    return comm


@packet_handler("process_tree")
def _process_tree(parser: HandlerContext, ts: int, tree) -> None:
    procs = parser.trace.processes
    clocks = parser.clocks
    kthreads = set()
    for proc in tree.processes:
        if not proc.cmdline:
            continue  # trace_processor ignores a process it has no command line for
        pid, ppid = proc.pid & 0xFFFFFFFF, proc.ppid & 0xFFFFFFFF
        cmdline = [text(part) for part in proc.cmdline]
        argv0 = cmdline[0]
        joined = None
        if ppid == KTHREADD_PID:
            kthreads.add(pid)
            truncated = truncate_kworker(argv0)
            if truncated != argv0:
                argv0 = joined = truncated
        if len(cmdline) == 1:
            # Some processes rewrite their cmdline with spaces instead of NULs.
            argv0 = argv0.split(" ", 1)[0]
        if joined is None:
            joined = " ".join(cmdline)
        parent_upid = procs.get_or_create_process(ppid)
        upid = procs.get_or_create_process(pid)
        procs.set_process_parent(upid, parent_upid)
        procs.set_process_metadata(upid, argv0, joined)
        if proc.cmdline_is_comm:
            # The "cmdline" is the main thread's name (kernel threads, zombies).
            procs.set_thread_name(procs.get_or_create_thread(pid), joined, THREAD_NAME_PRIORITY_PROCESS_TREE)
        if proc.HasField("uid"):
            procs.set_process_uid(upid, proc.uid & 0xFFFFFFFF)
        if proc.HasField("process_start_from_boot") and clocks is not None:
            # Early kernel threads can start at 0 (tick resolution).
            start = clocks.to_trace_time(BOOTTIME, proc.process_start_from_boot)
            if start is not None:
                procs.set_start_ts_if_unset(upid, start)
        if proc.HasField("is_kthread"):
            set_arg(procs.process(upid), "is_kthread", "bool", int(proc.is_kthread))
    for thread in tree.threads:
        tid, tgid = thread.tid & 0xFFFFFFFF, thread.tgid & 0xFFFFFFFF
        procs.update_thread(tid, tgid)
        if thread.HasField("name"):
            name = text(thread.name)
            if tid == tgid and tid in kthreads:
                name = truncate_kworker(name)
            procs.set_thread_name(procs.get_or_create_thread(tid), name, THREAD_NAME_PRIORITY_PROCESS_TREE)


# -- process_stats -----------------------------------------------------------------------

# ProcessStats.Process field number -> process_memory key (values in kB).
PROCESS_MEMORY_FIELDS = {
    2: "virt",
    3: "rss",
    4: "rss.anon",
    5: "rss.file",
    6: "rss.shmem",
    7: "swap",
    8: "locked",
    9: "rss.watermark",
    24: "dmabuf_rss",
}
SMAPS_FIELDS = {16: "rss", 17: "pss", 18: "pss.anon", 19: "pss.file", 20: "pss.smem", 23: "swap.pss"}
RUNTIME_FIELDS = {21: "user_ns", 22: "kernel_ns"}
CHROME_FIELDS = {13: "private_footprint_kb", 14: "peak_resident_set_kb"}
PID, OOM_SCORE_ADJ, THREADS, IS_PEAK_RSS_RESETTABLE, FDS = 1, 10, 11, 12, 15
# trace_processor's system-probes parser lets this Chrome field through to its
# "unknown counter" stat as well as recording it (it skips field 13 twice instead).
UNKNOWN_TOO = {14}
# Field number -> (track type, its key dimension, key, track name, scale) of each process
# counter but oom_score_adj (values in kB are written in bytes).
PROCESS_COUNTERS = {
    number: (track_type, dimension, key, prefix + key, scale)
    for track_type, dimension, prefix, scale, keys in (
        ("process_memory", "process_memory_key", "mem.", 1024, PROCESS_MEMORY_FIELDS),
        ("smaps", "smaps_key", "mem.smaps.", 1024, SMAPS_FIELDS),
        ("proc_stat_runtime", "proc_stat_runtime_key", "runtime.", 1, RUNTIME_FIELDS),
        ("chrome_process_stats", "key", "chrome.", 1024, CHROME_FIELDS),
    )
    for number, key in keys.items()
}


@packet_handler("process_stats")
def _process_stats(parser: HandlerContext, ts: int, stats) -> None:
    trace = parser.trace
    procs = trace.processes
    tracks = trace.tracks
    for proc in stats.processes:
        pid = proc.pid & 0xFFFFFFFF
        upid: int | None = None
        # Fields in field-number order (the wire order is not kept by protobuf).
        for fd, value in proc.ListFields():
            number = fd.number
            if number == PID or number == FDS:
                continue  # open file descriptors: no table for them yet
            if number == THREADS:
                for thread in value:
                    procs.update_thread(thread.tid & 0xFFFFFFFF, pid)
                continue
            if upid is None:
                upid = procs.get_or_create_process(pid)
            if number == IS_PEAK_RSS_RESETTABLE:
                set_arg(procs.process(upid), "is_peak_rss_resettable", "bool", int(value))
                continue
            counter = PROCESS_COUNTERS.get(number)
            if counter is not None:
                track_type, dimension, key, name, scale = counter
                track = tracks.intern(track_type, (("upid", upid), (dimension, key)), "counter", name)
                trace.insert_counter(ts, track, value * scale)
                if number in UNKNOWN_TOO:
                    parser.stats.inc("proc_stat_unknown_counters")
            elif number == OOM_SCORE_ADJ:
                track = tracks.intern("oom_score_adj", (("upid", upid),), "counter", "oom_score_adj")
                trace.insert_counter(ts, track, value)
            else:
                parser.stats.inc("proc_stat_unknown_counters")


# -- sys_stats ---------------------------------------------------------------------------

# /proc/meminfo names by MeminfoCounters value (traced_probes' kMeminfoKeys).
MEMINFO_NAMES = (
    "MemUnspecified",
    "MemTotal",
    "MemFree",
    "MemAvailable",
    "Buffers",
    "Cached",
    "SwapCached",
    "Active",
    "Inactive",
    "Active(anon)",
    "Inactive(anon)",
    "Active(file)",
    "Inactive(file)",
    "Unevictable",
    "Mlocked",
    "SwapTotal",
    "SwapFree",
    "Dirty",
    "Writeback",
    "AnonPages",
    "Mapped",
    "Shmem",
    "Slab",
    "SReclaimable",
    "SUnreclaim",
    "KernelStack",
    "PageTables",
    "CommitLimit",
    "Committed_AS",
    "VmallocTotal",
    "VmallocUsed",
    "VmallocChunk",
    "CmaTotal",
    "CmaFree",
    "Gpu",
    "Zram",
    "Misc",
    "ION_heap",
    "ION_heap_pool",
)


def _vmstat_names() -> tuple[str, ...]:
    """/proc/vmstat names by VmstatCounters value: the enum name without its prefix."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    values = pb.DESCRIPTOR.enum_types_by_name["VmstatCounters"].values
    names = {v.number: v.name[len("VMSTAT_") :].lower() for v in values}
    names[0] = "VmstatUnspecified"
    return tuple(names[i] for i in range(len(names)))


VMSTAT_NAMES = _vmstat_names()
CPU_TIMES = ("user_ns", "user_nice_ns", "system_mode_ns", "idle_ns", "io_wait_ns", "irq_ns", "softirq_ns", "steal_ns")
PSI_RESOURCES = ("resource.unspecified", "cpu.some", "cpu.full", "io.some", "io.full", "mem.some", "mem.full")
SECTORS_PER_MB = 2048.0  # /proc/diskstats counts 512-byte sectors


class SysStatsState:
    def __init__(self) -> None:
        self.disks: dict[str, tuple] = {}  # device -> previous DiskStat counters


@packet_handler("sys_stats")
def _sys_stats(parser: HandlerContext, ts: int, sys) -> None:
    # In trace_processor's order: it decides the order of the tracks and counter rows.
    for part in (_meminfo, _devfreq, _vmstat, _cpu_times, _interrupts, _buddy_info):
        part(parser, ts, sys)
    for ds in sys.disk_stat:
        _disk_stat(parser, ts, ds)
    if not _psi(parser, ts, sys):
        return  # trace_processor stops reading the packet here
    for part in (_thermal_zones, _cpuidle, _slab_info):
        part(parser, ts, sys)


def _keyed_counters(
    parser: HandlerContext, ts: int, entries, names: tuple[str, ...], kind: str, unit: str | None, scale: int
) -> None:
    """Counters named by an enum key: one global track of type `kind` per known key (its
    `{kind}_key` dimension); an unknown key is counted in the stat `{kind}_unknown_keys`."""
    trace = parser.trace
    for entry in entries:
        key = _enum(entry, "key", 1)
        if key >= len(names):
            parser.stats.inc(f"{kind}_unknown_keys")
            continue
        name = names[key]
        track = global_counter_track(trace, kind, ((f"{kind}_key", name),), name, unit)
        trace.insert_counter(ts, track, entry.value * scale)


def _meminfo(parser: HandlerContext, ts: int, sys) -> None:
    _keyed_counters(parser, ts, sys.meminfo, MEMINFO_NAMES, "meminfo", "bytes", 1024)


def _devfreq(parser: HandlerContext, ts: int, sys) -> None:
    """Device and CPU frequencies."""
    trace = parser.trace
    for df in sys.devfreq:
        device = text(df.key)
        track = global_counter_track(trace, "clock_frequency", (("linux_device", device),), f"{device} Frequency")
        trace.insert_counter(ts, track, df.value)
    for cpu, khz in enumerate(sys.cpufreq_khz):
        trace.insert_counter(ts, cpu_frequency_track(trace, cpu), khz)


def _vmstat(parser: HandlerContext, ts: int, sys) -> None:
    _keyed_counters(parser, ts, sys.vmstat, VMSTAT_NAMES, "vmstat", None, 1)


def _cpu_times(parser: HandlerContext, ts: int, sys) -> None:
    trace = parser.trace
    for ct in sys.cpu_stat:
        if not ct.HasField("cpu_id"):
            parser.stats.inc("invalid_cpu_times")
            continue
        for key in CPU_TIMES:
            track = cpu_counter_track(
                trace, "cpustat", ct.cpu_id, f"cpu.times.{key}", extra_dims=(("cpustat_key", key),)
            )
            trace.insert_counter(ts, track, getattr(ct, key))


def _interrupts(parser: HandlerContext, ts: int, sys) -> None:
    """Interrupt counts per irq, then the totals (and forks)."""
    trace = parser.trace
    for kind, counts in (("num_irq", sys.num_irq), ("num_softirq", sys.num_softirq)):
        for ic in counts:
            irq = ic.irq & 0xFFFFFFFF
            track = global_counter_track(trace, kind, (("irq", irq),), f"{kind} (id: {irq})")
            trace.insert_counter(ts, track, ic.count)
    for field in ("num_forks", "num_irq_total", "num_softirq_total"):
        if sys.HasField(field):
            trace.insert_counter(ts, global_counter_track(trace, field, (), field), getattr(sys, field))


def _buddy_info(parser: HandlerContext, ts: int, sys) -> None:
    trace = parser.trace
    for bi in sys.buddy_info:
        node, zone = text(bi.node), text(bi.zone)
        for order, pages in enumerate(bi.order_pages):
            chunk_kb = ((1 << order) * trace.page_size) // 1024
            track = global_counter_track(
                trace,
                "buddyinfo",
                (("buddyinfo_node", node), ("buddyinfo_zone", zone), ("buddyinfo_chunk_size_kb", chunk_kb)),
                f"mem.buddyinfo[{node}][{zone}][{chunk_kb} kB]",
            )
            trace.insert_counter(ts, track, pages)


def _psi(parser: HandlerContext, ts: int, sys) -> bool:
    """Pressure stall information; False at an unknown resource."""
    trace = parser.trace
    for psi in sys.psi:
        resource = _enum(psi, "resource", 1)
        if resource >= len(PSI_RESOURCES):
            parser.stats.inc("psi_unknown_resource")
            return False
        key = PSI_RESOURCES[resource]
        trace.insert_counter(
            ts, global_counter_track(trace, "psi", (("psi_resource", key),), f"psi.{key}"), psi.total_ns
        )
    return True


def _thermal_zones(parser: HandlerContext, ts: int, sys) -> None:
    trace = parser.trace
    for tz in sys.thermal_zone:
        zone = text(tz.type)
        track = global_counter_track(trace, "thermal_temperature_sys", (("thermal_zone", zone),), zone, "C")
        trace.insert_counter(ts, track, tz.temp)


def _cpuidle(parser: HandlerContext, ts: int, sys) -> None:
    """CPU idle state residencies, then GPU frequencies."""
    trace = parser.trace
    for idle in sys.cpuidle_state:
        cpu = idle.cpu_id
        for entry in idle.cpuidle_state_entry:
            state = text(entry.state)
            track = cpu_counter_track(
                trace, "cpu_idle_state", cpu, f"cpuidle{cpu}.{state}", "us", extra_dims=(("state", state),)
            )
            trace.insert_counter(ts, track, entry.duration_us)
    for mhz in sys.gpufreq_mhz:
        # trace_processor puts the value (MHz) on the kHz-unit gpufreq track of GPU 0.
        trace.insert_counter(ts, gpu_frequency_track(trace, 0), mhz)


def _slab_info(parser: HandlerContext, ts: int, sys) -> None:
    trace = parser.trace
    for slab in sys.slab_info:
        name = text(slab.name)
        track = global_counter_track(trace, "slabinfo", (("slab_name", name),), f"mem.slab.{name}", "bytes")
        trace.insert_counter(
            ts,
            track,
            float(slab.pages_per_slab) * slab.num_slabs * trace.page_size,
            [
                ("pages_per_slab", "pages_per_slab", "uint", slab.pages_per_slab),
                ("num_slabs", "num_slabs", "uint", slab.num_slabs),
            ],
        )


def _disk_stat(parser: HandlerContext, ts: int, ds) -> None:
    """Amounts and throughputs since the device's previous sample."""
    trace = parser.trace
    device = text(ds.device_name)
    current = (
        ds.read_sectors,
        ds.write_sectors,
        ds.discard_sectors,
        ds.flush_count,
        ds.read_time_ms,
        ds.write_time_ms,
        ds.discard_time_ms,
        ds.flush_time_ms,
    )
    disks = parser.state("sys_stats", SysStatsState).disks
    previous = disks.get(device)
    disks[device] = current
    if previous is None:
        return
    d = [now - before for now, before in zip(current, previous)]
    read_mb, write_mb, discard_mb = d[0] / SECTORS_PER_MB, d[1] / SECTORS_PER_MB, d[2] / SECTORS_PER_MB

    def throughput(amount: float, ms: int) -> float:
        return 0.0 if ms == 0 else amount * 1000.0 / ms

    for counter, unit, value in (
        ("read_amount", "MB", read_mb),
        ("read_throughput", "MB/s", throughput(read_mb, d[4])),
        ("write_amount", "MB", write_mb),
        ("write_throughput", "MB/s", throughput(write_mb, d[5])),
        ("discard_amount", "MB", discard_mb),
        ("discard_throughput", "MB/s", throughput(discard_mb, d[6])),
        ("flush_amount", "count", float(d[3])),
        ("flush_time", "ms", float(d[7])),
    ):
        track = global_counter_track(
            trace,
            "diskstat",
            (("device_name", device), ("counter_name", counter)),
            f"diskstat.[{device}].{counter}",
            unit,
        )
        trace.insert_counter(ts, track, value)


# -- cpu_info / gpu_info -----------------------------------------------------------------

CPU_FEATURES = ("mte", "mte3")  # CpuInfo.Cpu.features bit -> name (append-only list shared with traced_probes)


def _cluster_ids(cpus) -> list[int]:
    """Cluster of each CPU: CPUs with equal capacity (ARM's measure of a core's
    class) share a cluster, numbered by increasing capacity; without capacities
    on every CPU, the same by maximum frequency; else all 0."""
    if all(c.HasField("capacity") for c in cpus):
        keys = [c.capacity for c in cpus]
    elif all(c.frequencies for c in cpus):
        keys = [max(c.frequencies) for c in cpus]
    else:
        return [0] * len(cpus)
    rank = {key: i for i, key in enumerate(sorted(set(keys)))}
    return [rank[key] for key in keys]


@packet_handler("cpu_info")
def _cpu_info(parser: HandlerContext, ts: int, info) -> None:
    trace = parser.trace
    cpus = list(info.cpus)
    if not cpus:
        parser.stats.inc("cpu_info_empty")
        return
    for cpu, (c, cluster) in enumerate(zip(cpus, _cluster_ids(cpus))):
        row = trace.cpu_row(cpu)
        if c.processor:
            row.processor = text(c.processor)
        row.cluster_id = cluster
        if c.HasField("capacity"):
            row.capacity = c.capacity
        for freq in c.frequencies:
            trace.storage.insert("cpu_available_frequencies", (freq, row.ucpu))
        args = []
        if c.HasField("arm_identifier"):
            arm = c.arm_identifier
            for field in ("implementer", "architecture", "variant", "part", "revision"):
                key = f"arm_cpu_{field}"
                args.append((key, key, "uint", getattr(arm, field)))
        features = c.features
        for bit, name in enumerate(CPU_FEATURES):
            if features & (1 << bit):
                key = f"cpu_features.{name}"
                args.append((key, key, "bool", 1))
        if features:
            args.append(("cpu_features.raw_bitmap", "cpu_features.raw_bitmap", "uint", features))
        if features >> len(CPU_FEATURES):
            # Bits from a newer recorder: still in the raw bitmap.
            parser.stats.inc("cpu_info_unknown_cpu_features")
        row.args = args


@packet_handler("gpu_info")
def _gpu_info(parser: HandlerContext, ts: int, info) -> None:
    for index, g in enumerate(info.gpus):
        row = parser.trace.gpu_row(index)
        for field in ("name", "vendor", "model", "architecture", "pci_bdf"):
            value = text(getattr(g, field))
            if value:
                setattr(row, field, value)
        if g.uuid:
            row.uuid = g.uuid.hex()
        row.args = [
            (text(kv.key), text(kv.key), "string", text(kv.value))
            for kv in g.extra_info
            if kv.HasField("key") and kv.HasField("value")
        ]
