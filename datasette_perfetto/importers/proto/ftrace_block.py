"""Storage I/O from ftrace, as trace_processor's FtraceParser makes it:

- block_io_start / block_io_done (ParseBlockIoStart / ParseBlockIoDone): slices on one track per
  device (its `block_io` counter blueprint's, dimension block_device) named `block_io`, both ends
  adding the request's sector as an arg;
- ufshcd_command (ParseUfshcdCommand): the UFS queue's occupancy as the `io.ufs.command.count`
  counter, and per command tag a slice named by the SCSI opcode from its send to its completion;
- ufshcd_clk_gating (ParseUfshcdClkGating): the clock gating state as a counter (OFF 0 to ON 3);
- f2fs_iostat / f2fs_iostat_latency (IostatTracker): each figure as a counter per device
  ("f2fs_iostat.[major:minor].read_app_total").
"""

from __future__ import annotations

from ...model import TraceContext
from .ftrace_counters import global_counter_track
from .packet_handlers import HandlerContext, ftrace_handler

BLOCK_IO = "block_io"


def _device_track(trace: TraceContext, dev: int) -> int:
    # A counter blueprint that carries slices: so trace_processor declares it.
    return global_counter_track(trace, BLOCK_IO, (("block_device", dev),), None)


def _sector(ev) -> list:
    return [("sector", "sector", "uint", ev.sector)]


@ftrace_handler("block_io_start")
def _block_io_start(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    parser.trace.slices.begin(ts, _device_track(parser.trace, ev.dev), None, BLOCK_IO, _sector(ev))


@ftrace_handler("block_io_done")
def _block_io_done(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    parser.trace.slices.end(ts, _device_track(parser.trace, ev.dev), None, BLOCK_IO, _sector(ev))


# -- UFS host controller -----------------------------------------------------------------------

UFS_OPCODES = {
    4: "FORMAT UNIT",
    18: "INQUIRY",
    85: "MODE SELECT (10)",
    90: "MODE SENSE (10)",
    52: "PRE-FETCH (10)",
    144: "PRE-FETCH (16)",
    8: "READ (6)",
    40: "READ (10)",
    136: "READ (16)",
    60: "READ BUFFER",
    37: "READ CAPACITY (10)",
    158: "READ CAPACITY (16)",
    160: "REPORT LUNS",
    3: "REQUEST SENSE",
    162: "SECURITY PROTOCOL IN",
    181: "SECURITY PROTOCOL OUT",
    29: "SEND DIAGNOSTIC",
    27: "START STOP UNIT",
    53: "SYNCHRONIZE CACHE (10)",
    145: "SYNCHRONIZE CACHE (16)",
    0: "TEST UNIT READY",
    66: "UNMAP",
    47: "VERIFY",
    10: "WRITE (6)",
    42: "WRITE (10)",
    138: "WRITE (16)",
    59: "WRITE BUFFER",
}
# ufshcd_clk_gating's state (1 ON, 2 REQ_OFF, 3 REQ_ON, else OFF) → the counter's value, OFF 0 to ON 3.
UFS_CLOCK_STATES = {1: 3, 2: 1, 3: 2}


def ufs_command_name(opcode: int, group_id: int) -> str:
    name = UFS_OPCODES.get(opcode, "UNDEFINED")
    return f"{name} (GID=0x{group_id:x})" if group_id > 0 else name


@ftrace_handler("ufshcd_command")
def _ufshcd_command(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    trace = parser.trace
    # Commands in the queue: the doorbell's bits, else 1 while this one is being sent.
    queued = bin(ev.doorbell).count("1") if ev.doorbell > 0 else (0 if ev.str_t == 1 else 1)
    count_track = global_counter_track(trace, "ufs_command_count", (), "io.ufs.command.count")
    trace.insert_counter(ts, count_track, queued)
    tag_track = trace.tracks.intern(
        "ufs_command_tag", (("ufs_tag", ev.tag),), "slice", f"io.ufs.command.tag[{ev.tag:03d}]"
    )
    if ev.str_t == 0:
        trace.slices.begin(ts, tag_track, None, ufs_command_name(ev.opcode, ev.group_id), [])
    else:
        trace.slices.end(ts, tag_track, None, None, [])


@ftrace_handler("ufshcd_clk_gating")
def _ufshcd_clk_gating(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    trace = parser.trace
    track = global_counter_track(trace, "ufs_clkgating", (), "io.ufs.clkgating (OFF:0/REQ_OFF/REQ_ON/ON:3)")
    trace.insert_counter(ts, track, UFS_CLOCK_STATES.get(ev.state, 0))


# -- f2fs I/O statistics -------------------------------------------------------------------------

# (counter key, F2fsIostatFtraceEvent field), in trace_processor's order.
F2FS_IOSTAT = (
    ("write_app_total", "app_wio"),
    ("write_app_direct", "app_dio"),
    ("write_app_buffered", "app_bio"),
    ("write_app_mapped", "app_mio"),
    ("write_fs_data", "fs_dio"),
    ("write_fs_node", "fs_nio"),
    ("write_fs_meta", "fs_mio"),
    ("write_gc_data", "fs_gc_dio"),
    ("write_gc_node", "fs_gc_nio"),
    ("write_cp_data", "fs_cp_dio"),
    ("write_cp_node", "fs_cp_nio"),
    ("write_cp_meta", "fs_cp_mio"),
    ("read_app_total", "app_rio"),
    ("read_app_direct", "app_drio"),
    ("read_app_buffered", "app_brio"),
    ("read_app_mapped", "app_mrio"),
    ("read_fs_data", "fs_drio"),
    ("read_fs_gdata", "fs_gdrio"),
    ("read_fs_cdata", "fs_cdrio"),
    ("read_fs_node", "fs_nrio"),
    ("read_fs_meta", "fs_mrio"),
    ("other_fs_discard", "fs_discard"),
)
# F2fsIostatLatencyFtraceEvent: per kind of I/O (read data, ..., async write meta) its peak, average and count.
F2FS_IOSTAT_LATENCY = tuple(
    (f"{kind}_{stat}", f"{prefix}_{stat}")
    for kind, prefix in (
        ("read_data", "d_rd"),
        ("read_node", "n_rd"),
        ("read_meta", "m_rd"),
        ("write_sync_data", "d_wr_s"),
        ("write_sync_node", "n_wr_s"),
        ("write_sync_meta", "m_wr_s"),
        ("write_async_data", "d_wr_as"),
        ("write_async_node", "n_wr_as"),
        ("write_async_meta", "m_wr_as"),
    )
    for stat in ("peak", "avg", "cnt")
)


def _f2fs_counters(trace: TraceContext, ts: int, ev, kind: str, fields: tuple) -> None:
    device = f"{(ev.dev & 0xFF00) >> 8}:{ev.dev & 0xFF}"
    for key, field in fields:
        dims = (("linux_device", device), ("counter_key", key))
        track = global_counter_track(trace, kind, dims, f"{kind}.[{device}].{key}")
        trace.insert_counter(ts, track, getattr(ev, field))


@ftrace_handler("f2fs_iostat")
def _f2fs_iostat(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    _f2fs_counters(parser.trace, ts, ev, "f2fs_iostat", F2FS_IOSTAT)


@ftrace_handler("f2fs_iostat_latency")
def _f2fs_iostat_latency(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    _f2fs_counters(parser.trace, ts, ev, "f2fs_iostat_latency", F2FS_IOSTAT_LATENCY)
