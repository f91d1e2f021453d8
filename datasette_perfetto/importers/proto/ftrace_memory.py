"""Kernel memory events from ftrace: CMA allocations, direct reclaim and slab
shrinking (slices on the thread's track), ION, DMA-BUF and FastRPC heaps (global
and per-thread counters; ION and DMA-BUF also one slice per live buffer on a
compressed track set) and per-process DMA-BUF RSS, as trace_processor's
FtraceParser imports them.

CMA allocations changed shape across kernels, and trace_processor follows the
kernel version from SystemInfo's utsname: from 5.10 to 6.0 cma_alloc_start is
closed by cma_alloc_info (which carries the migration figures); from 6.1 by
cma_alloc_finish, the figures coming from the mm_alloc_contig_migrate_range_info
seen in between on the same thread. Events of the other generation (or of a
trace with no kernel version) are ignored.
"""

from __future__ import annotations

from ...model import TraceContext
from ...trackers.async_track_set import AsyncTrackSet
from ..common.values import text
from .ftrace_counters import global_counter_track, push_process_memory
from .ftrace_sched import kernel_sched
from .ftrace_syscalls import kernel_function_name, thread_slice_track
from .packet_handlers import HandlerContext, ftrace_handler

CMA_ALLOC = "mm_cma_alloc"


class MemoryState:
    """Per-trace state: CMA migration figures per thread, buffer track sets."""

    def __init__(self, trace: TraceContext) -> None:
        self.trace = trace
        self.cma_migration: dict[int, tuple[int, int, int]] = {}  # utid -> (migrated, reclaimed, mapped)
        self.buffer_tracks: dict[str, AsyncTrackSet] = {}

    def buffer_track(self, type: str, name: str, cookie: int, begin: bool) -> int:
        """The track of one buffer's slice in the global compressed set `type`."""
        tracks = self.buffer_tracks.get(type)
        if tracks is None:
            trace = self.trace
            group_id = trace.new_track_group()

            def make(idx: int, _event_name: str | None) -> int:
                track_id = trace.tracks.create(type, (("track_compressor_idx", idx),), "slice", name)
                trace.tracks.row(track_id).track_group_id = group_id
                return track_id

            tracks = self.buffer_tracks[type] = AsyncTrackSet(make)
        return tracks.track_for(cookie, "begin" if begin else "end")


def memory_state(parser: HandlerContext) -> MemoryState:
    return parser.state("ftrace_memory", lambda: MemoryState(parser.trace))


def _thread_track(parser: HandlerContext, pid: int) -> int:
    return thread_slice_track(parser, parser.trace.processes.get_or_create_thread(pid))


# -- CMA ---------------------------------------------------------------------------------


def _kernel_at_least(parser: HandlerContext, major: int, minor: int) -> bool | None:
    """None when the trace has no kernel version."""
    version = kernel_sched(parser).kernel_version()
    if version is None:
        return None
    return version >= (major, minor)


@ftrace_handler("cma_alloc_start")
def _cma_alloc_start(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    if not _kernel_at_least(parser, 5, 10):
        return
    utid = parser.trace.processes.get_or_create_thread(pid)
    if _kernel_at_least(parser, 6, 1):
        # A fresh allocation: figures of an earlier one (migrate info skipped) don't carry over.
        memory_state(parser).cma_migration[utid] = (0, 0, 0)
    parser.trace.slices.begin(ts, thread_slice_track(parser, utid), None, CMA_ALLOC, [])


@ftrace_handler("mm_alloc_contig_migrate_range_info")
def _mm_alloc_contig_migrate_range_info(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    if not _kernel_at_least(parser, 6, 1):
        return
    utid = parser.trace.processes.get_or_create_thread(pid)
    memory_state(parser).cma_migration[utid] = (ev.nr_migrated, ev.nr_reclaimed, ev.nr_mapped)


def _cma_args(ev, migrated: int, reclaimed: int, mapped: int) -> list:
    return [
        ("cma_name", "cma_name", "string", text(ev.name)),
        ("cma_pfn", "cma_pfn", "uint", ev.pfn),
        ("cma_req_pages", "cma_req_pages", "uint", ev.count),
        ("cma_nr_migrated", "cma_nr_migrated", "uint", migrated),
        ("cma_nr_reclaimed", "cma_nr_reclaimed", "uint", reclaimed),
        ("cma_nr_mapped", "cma_nr_mapped", "uint", mapped),
    ]


@ftrace_handler("cma_alloc_finish")
def _cma_alloc_finish(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    if not _kernel_at_least(parser, 6, 1):
        return
    utid = parser.trace.processes.get_or_create_thread(pid)
    figures = memory_state(parser).cma_migration.get(utid, (0, 0, 0))
    parser.trace.slices.end(ts, thread_slice_track(parser, utid), None, None, _cma_args(ev, *figures))


@ftrace_handler("cma_alloc_info")
def _cma_alloc_info(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    at_least = _kernel_at_least(parser, 5, 10)
    if not at_least or _kernel_at_least(parser, 6, 1):
        return
    args = _cma_args(ev, ev.nr_migrated, ev.nr_reclaimed, ev.nr_mapped) + [
        ("cma_nr_isolate_fail", "cma_nr_isolate_fail", "uint", ev.err_iso),
        ("cma_nr_migrate_fail", "cma_nr_migrate_fail", "uint", ev.err_mig),
        ("cma_nr_test_fail", "cma_nr_test_fail", "uint", ev.err_test),
    ]
    parser.trace.slices.end(ts, _thread_track(parser, pid), None, None, args)


# -- reclaim -----------------------------------------------------------------------------


@ftrace_handler("mm_vmscan_direct_reclaim_begin")
def _direct_reclaim_begin(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    args = [
        ("direct_reclaim_order", "direct_reclaim_order", "int", ev.order),
        ("direct_reclaim_may_writepage", "direct_reclaim_may_writepage", "int", ev.may_writepage),
        ("direct_reclaim_gfp_flags", "direct_reclaim_gfp_flags", "uint", ev.gfp_flags),
    ]
    parser.trace.slices.begin(ts, _thread_track(parser, pid), None, "mm_vmscan_direct_reclaim", args)


@ftrace_handler("mm_vmscan_direct_reclaim_end")
def _direct_reclaim_end(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    args = [("direct_reclaim_nr_reclaimed", "direct_reclaim_nr_reclaimed", "uint", ev.nr_reclaimed)]
    parser.trace.slices.end(ts, _thread_track(parser, pid), None, None, args)


@ftrace_handler("mm_shrink_slab_start")
def _shrink_slab_start(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, symbol: str | None = None) -> None:
    args = [
        ("shrink_name", "shrink_name", "string", kernel_function_name(ev.shrink, symbol)),
        ("total_scan", "total_scan", "uint", ev.total_scan),
        ("priority", "priority", "int", ev.priority),
    ]
    parser.trace.slices.begin(ts, _thread_track(parser, pid), None, "mm_vmscan_shrink_slab", args)


@ftrace_handler("mm_shrink_slab_end")
def _shrink_slab_end(parser: HandlerContext, ts: int, cpu: int, pid: int, ev, *_) -> None:
    parser.trace.slices.end(ts, _thread_track(parser, pid), None, None, [("freed", "freed", "int", ev.retval)])


# -- ION and DMA-BUF heaps -----------------------------------------------------------------


def _push_ion(trace: TraceContext, ts: int, pid: int, heap: str, total: int, change: int) -> None:
    """The heap's total (global track) and the change a thread made to it (thread track)."""
    suffix = f".{heap}" if heap else ""
    trace.insert_counter(
        ts, global_counter_track(trace, "ion", (("heap_name", heap),), f"mem.ion{suffix}"), float(total)
    )
    utid = trace.processes.get_or_create_thread(pid)
    change_track = global_counter_track(
        trace, "ion_change", (("heap_name", heap), ("utid", utid)), f"mem.ion_change{suffix}"
    )
    trace.insert_counter(ts, change_track, float(change))


@ftrace_handler("ion_heap_grow")
def _ion_heap_grow(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    # total_allocated is read before the kernel applies the change.
    heap = text(ev.heap_name) if ev.HasField("heap_name") else "unknown"
    _push_ion(parser.trace, ts, pid, heap, ev.total_allocated + ev.len, ev.len)


@ftrace_handler("ion_heap_shrink")
def _ion_heap_shrink(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    heap = text(ev.heap_name) if ev.HasField("heap_name") else "unknown"
    _push_ion(parser.trace, ts, pid, heap, ev.total_allocated - ev.len, -ev.len)


def _buffer_slice(parser: HandlerContext, ts: int, type: str, name: str, cookie: int, length: int) -> None:
    """A buffer's life: allocated (len > 0) begins its slice, freed ends it."""
    track = memory_state(parser).buffer_track(type, name, cookie, length > 0)
    if length > 0:
        parser.trace.slices.begin(ts, track, None, f"{length // 1024} kB", [])
    else:
        parser.trace.slices.end(ts, track, None, None, [])


@ftrace_handler("ion_stat")
def _ion_stat(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    _push_ion(parser.trace, ts, pid, "", ev.total_allocated, ev.len)
    _buffer_slice(parser, ts, "android_ion_allocations", "mem.ion_buffer", ev.buffer_id, ev.len)


@ftrace_handler("dma_heap_stat")
def _dma_heap_stat(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    trace = parser.trace
    trace.insert_counter(
        ts, global_counter_track(trace, "android_dma_heap", (), "mem.dma_heap"), float(ev.total_allocated)
    )
    utid = trace.processes.get_or_create_thread(pid)
    change_track = global_counter_track(trace, "android_dma_heap_change", (("utid", utid),), "mem.dma_heap_change")
    trace.insert_counter(ts, change_track, float(ev.len), [("inode", "inode", "uint", ev.inode)])
    inode = ev.inode if ev.inode < 1 << 63 else ev.inode - (1 << 64)  # trace_processor's int64 cookie
    _buffer_slice(parser, ts, "android_dma_allocations", "mem.dma_buffer", inode, ev.len)


@ftrace_handler("dmabuf_rss_stat")
def _dmabuf_rss_stat(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    utid = parser.trace.processes.get_or_create_thread(pid)
    push_process_memory(parser, ts, float(ev.rss), utid, "dmabuf_rss")


FASTRPC_DSPS = ("ASDP", "MDSP", "SDSP", "CDSP")  # fastrpc channel id -> DSP


@ftrace_handler("fastrpc_dma_stat")
def _fastrpc_dma_stat(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    """Qualcomm FastRPC buffers: a channel's total and a thread's change to it."""
    trace = parser.trace
    cid = ev.cid & 0xFFFFFFFF
    label = FASTRPC_DSPS[cid] if cid < len(FASTRPC_DSPS) else str(cid)
    track = global_counter_track(trace, "fastrpc", (("cid", cid),), f"mem.fastrpc[{label}]")
    trace.insert_counter(ts, track, float(ev.total_allocated))
    utid = trace.processes.get_or_create_thread(pid)
    change = global_counter_track(
        trace, "fastrpc_change", (("cid", cid), ("utid", utid)), f"mem.fastrpc_change[{label}]"
    )
    trace.insert_counter(ts, change, float(ev.len))
