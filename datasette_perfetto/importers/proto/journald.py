"""systemd journald entries (`TracePacket.journald_event`) → `__intrinsic_logs` rows of source
systemd_journald, read through the `logs` and `linux_systemd_journald_logs` views, as trace_processor's
LinuxProbesParser::ParseSystemdJournaldEvent: the entry's thread when it names a pid, priority 0 (EMERG)
and an empty message when it has none, uid, comm, systemd_unit, hostname and transport as args. A packet
with the flush statistics (num_total / num_failed) sets their stats and makes no row."""

from __future__ import annotations

from ...storage import Arg
from ..common.values import signed, text
from .packet_handlers import HandlerContext, packet_handler

JOURNALD = "systemd_journald"


@packet_handler("journald_event")
def _journald_event(parser: HandlerContext, ts: int, event) -> None:
    trace = parser.trace
    is_stats = event.HasField("num_failed") or event.HasField("num_total")
    if event.HasField("num_failed"):
        trace.stats.set("systemd_journal_num_failed", signed(event.num_failed))
    if event.HasField("num_total"):
        trace.stats.set("systemd_journal_num_total", signed(event.num_total))
    if is_stats:
        return
    pid = event.pid if event.HasField("pid") else 0
    tid = event.tid if event.HasField("tid") else pid
    utid = trace.processes.update_thread(tid, pid) if pid else None
    args: list[Arg] = []
    if event.HasField("uid"):
        args.append(("uid", "uid", "int", event.uid))
    for field in ("comm", "systemd_unit", "hostname", "transport"):
        if event.HasField(field):
            args.append((field, field, "string", text(getattr(event, field))))
    tag = text(event.tag) if event.HasField("tag") else None
    trace.insert_log(ts, utid, event.prio, tag, text(event.message), JOURNALD, args)
