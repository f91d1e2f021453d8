"""FtraceEventBundles, in file order: each kernel event (and each compact_sched record)
queued with its time on the trace clock, for FtraceParser (ftrace.py) to parse in
timestamp order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...model import TraceContext
from ..common.event_kinds import EV_COMPACT_SCHED, EV_FTRACE
from ..common.values import INT64_MAX, UINT64_MASK, c_div, signed, text
from .clock_tracker import BOOTTIME, ClockKey, ClockTracker, clock_key
from .sequence_state import SequenceState

MAX_FTRACE_CPUS = 1024
MONOTONIC_RAW = 4
SEQUENCE_SCOPED_CLOCK = 64
FTRACE_CLOCK_UNSPECIFIED, FTRACE_CLOCK_GLOBAL, FTRACE_CLOCK_LOCAL, FTRACE_CLOCK_MONO_RAW = 0, 2, 3, 4


# FtraceEvent kinds whose field holds a kernel function address that may be
# interned (InternedData.kernel_symbols) → that field (trace_processor's
# kKernelFunctionFields). The symbol rides with the event: its ftrace_event row
# names the function, and the handlers of SYMBOL_TAKING_HANDLERS take it as an
# extra argument.
KERNEL_SYMBOL_FIELDS = {
    "sched_blocked_reason": "caller",
    "workqueue_queue_work": "function",
    "workqueue_activate_work": "function",
    "workqueue_execute_start": "function",
    "workqueue_execute_end": "function",
    "funcgraph_entry": "func",
    "funcgraph_exit": "func",
    "mm_shrink_slab_start": "shrink",
    "hrtimer_expire_entry": "function",
}
SYMBOL_TAKING_HANDLERS = frozenset(
    {"sched_blocked_reason", "funcgraph_entry", "funcgraph_exit", "workqueue_execute_start", "mm_shrink_slab_start"}
)


# FtraceEvent kinds whose payload carries the time the event stands for (a firmware's, already on the trace
# clock) → that field. As trace_processor's custom tokenizers do, such an event is queued twice (_split_push):
# its ftrace_event row at the kernel's time, its own handler at the payload's time.
RETIMED_EVENTS = {
    "thermal_exynos_acpm_bulk": "timestamp",
}

# Adreno GPU timers (the XO clock) tick at this rate.
ADRENO_XO_HZ = 19_200_000


def adreno_ns(ticks: int) -> int:
    """A (uint64) tick difference as int64 nanoseconds, as trace_processor's integer arithmetic has it."""
    return c_div(signed(ticks & UINT64_MASK) * 1_000_000_000, ADRENO_XO_HZ)


class FtraceTokenizer:
    def __init__(self, trace: TraceContext, clocks: ClockTracker, push: Callable[[int, tuple], None]) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.clocks = clocks
        self.push = push  # queues a parse-phase event
        self.has_kernel_events = False  # any per-CPU events, whose ties the sorter orders specially
        self.cpus_seen: set[int] = set()  # cpus whose first bundle was seen
        # Adreno command batches, by their timestamp field: the GPU tick count a sync event gives at its
        # (kernel) time, and retired batches whose sync has not come yet.
        self._adreno_sync: dict[int, tuple[int, int]] = {}
        self._adreno_pending: dict[int, tuple[int, int, int, bytes]] = {}
        # Kinds tokenized by a method of their own: it returns whether it queued the event.
        self._special: dict[str, Callable[[int, int, Any], bool]] = {
            **{kind: self._retimed for kind in RETIMED_EVENTS},
            "kgsl_adreno_cmdbatch_retired": self._adreno_retired,
            "kgsl_adreno_cmdbatch_sync": self._adreno_sync_point,
        }

    def bundle(self, bundle, seq: SequenceState) -> None:
        """Every event of an FtraceEventBundle, and compact_sched, to the sorter."""
        if not bundle.HasField("cpu"):
            self.stats.inc("ftrace_bundle_tokenizer_errors")
            return
        cpu = bundle.cpu
        if cpu >= MAX_FTRACE_CPUS:
            self.stats.inc("ftrace_bundle_tokenizer_errors")  # a corrupt bundle
            return
        if bundle.lost_events:
            self.stats.set("ftrace_cpu_has_data_loss", 1, cpu)
        clock = self._clock(bundle, seq)
        if clock is None:
            return
        self.has_kernel_events = True
        if bundle.HasField("compact_sched"):
            self._compact_sched(cpu, clock, bundle.compact_sched)
        to_trace_time = self.clocks.to_trace_time
        for event in bundle.event:
            if not event.HasField("timestamp"):
                self.stats.inc("ftrace_bundle_tokenizer_errors")
                continue
            kind = event.WhichOneof("event")
            if kind is None:
                self.stats.inc("ftrace_missing_event_id")
                continue
            ts = to_trace_time(clock, event.timestamp)
            if ts is None or not 0 <= ts <= INT64_MAX:
                continue
            special = self._special.get(kind)
            if special is not None and special(cpu, ts, event):
                continue
            symbol_field = KERNEL_SYMBOL_FIELDS.get(kind)
            address = getattr(getattr(event, kind), symbol_field) if symbol_field else 0
            if address:
                # The kernel function is interned on this sequence: resolve it while the state is here.
                symbol = seq.interned.get(26, {}).get(address)
                self.push(ts, (EV_FTRACE, cpu, event.SerializeToString(), symbol))
            else:
                self.push(ts, (EV_FTRACE, cpu, event.SerializeToString()))
        if cpu not in self.cpus_seen:
            self.cpus_seen.add(cpu)
            self._data_start(bundle, clock)

    def _split_push(self, cpu: int, data: bytes, raw_ts: int, at: int | None = None) -> None:
        """The halves of an event whose handler runs at another time than the kernel's (FtraceParser.parse_ftrace
        reads them): its ftrace_event row at `raw_ts`, with None in the raw ts slot; and, with `at`, its handler
        at that time, with the kernel's time in that slot (the drop windows judge by it)."""
        self.push(raw_ts, (EV_FTRACE, cpu, data, None, None))
        if at is not None and 0 <= at <= INT64_MAX:
            self.push(at, (EV_FTRACE, cpu, data, None, raw_ts))

    def _retimed(self, cpu: int, ts: int, event) -> bool:
        """A RETIMED_EVENTS event: handled at its payload's time; one without that time is counted and dropped."""
        kind = event.WhichOneof("event")
        payload, time_field = getattr(event, kind), RETIMED_EVENTS[kind]
        if not payload.HasField(time_field):
            self.stats.inc("ftrace_bundle_tokenizer_errors")
        else:
            self._split_push(cpu, event.SerializeToString(), ts, getattr(payload, time_field))
        return True

    def _adreno_retired(self, cpu: int, ts: int, event) -> bool:
        """A retired command batch: its ftrace_event row now, and its slice at the GPU time it started, which
        the sync event of the same timestamp field (before or after it in the file) relates to ticks."""
        retired = event.kgsl_adreno_cmdbatch_retired
        data = event.SerializeToString()
        sync = self._adreno_sync.pop(retired.timestamp, None)
        if sync is None:
            self._split_push(cpu, data, ts)
            self._adreno_pending[retired.timestamp] = (cpu, ts, retired.start, data)
        else:
            sync_ts, sync_ticks = sync
            self._split_push(cpu, data, ts, sync_ts + adreno_ns(retired.start - sync_ticks))
        return True

    def _adreno_sync_point(self, cpu: int, ts: int, event) -> bool:
        """A sync event: the GPU tick count at its time, for the retired batch of its timestamp field. The sync
        event itself is queued as any other (returns False)."""
        sync = event.kgsl_adreno_cmdbatch_sync
        pending = self._adreno_pending.pop(sync.timestamp, None)
        if pending is None:
            self._adreno_sync[sync.timestamp] = (ts, sync.ticks)
            return False
        retired_cpu, raw_ts, start, data = pending
        # trace_processor queues the retired event's raw row a second time here.
        self._split_push(retired_cpu, data, raw_ts, ts + adreno_ns(start - sync.ticks))
        return False

    def bundle_clock(self, bundle, seq: SequenceState) -> None:
        """Of an ftrace bundle, only its effect on the clocks (the split helper's share)."""
        if bundle.HasField("cpu") and bundle.cpu < MAX_FTRACE_CPUS:
            self._clock(bundle, seq)

    def _clock(self, bundle, seq: SequenceState) -> ClockKey | None:
        """The clock key of a bundle's timestamps; records the ftrace↔boot snapshot it carries."""
        if not bundle.HasField("ftrace_clock") or bundle.ftrace_clock == FTRACE_CLOCK_UNSPECIFIED:
            return BOOTTIME
        clock: ClockKey
        if bundle.ftrace_clock == FTRACE_CLOCK_MONO_RAW:
            clock = MONOTONIC_RAW
        elif bundle.ftrace_clock in (FTRACE_CLOCK_GLOBAL, FTRACE_CLOCK_LOCAL):
            clock = clock_key(SEQUENCE_SCOPED_CLOCK, seq.seq_id)
        else:
            self.stats.inc("ftrace_bundle_tokenizer_errors")  # an unknown clock: the times mean nothing
            return None
        if bundle.HasField("ftrace_timestamp") and bundle.HasField("boot_timestamp"):
            clock_id = clock if isinstance(clock, int) else SEQUENCE_SCOPED_CLOCK
            self.clocks.add_snapshot(
                [(clock_id, bundle.ftrace_timestamp, False, 1), (BOOTTIME, bundle.boot_timestamp, False, 1)], seq.seq_id
            )
        return clock

    def _compact_sched(self, cpu: int, clock, compact) -> None:
        """compact_sched: parallel arrays of sched_switch / sched_waking fields, delta-coded times."""
        strings = [text(s) for s in compact.intern_table]
        to_trace_time = self.clocks.to_trace_time
        switch = (
            compact.switch_timestamp,
            compact.switch_prev_state,
            compact.switch_next_pid,
            compact.switch_next_prio,
            compact.switch_next_comm_index,
        )
        waking = (
            compact.waking_timestamp,
            compact.waking_pid,
            compact.waking_target_cpu,
            compact.waking_prio,
            compact.waking_comm_index,
        )
        error = len({len(a) for a in switch}) > 1 or len({len(a) for a in waking}) > 1
        raw_ts = 0
        for delta, prev_state, next_pid, next_prio, comm_index in zip(*switch):
            raw_ts += delta
            if comm_index >= len(strings):
                error = True
                break
            ts = to_trace_time(clock, raw_ts)
            if ts is None:
                break
            self.push(ts, (EV_COMPACT_SCHED, cpu, "switch", prev_state, next_pid, next_prio, strings[comm_index]))
        raw_ts = 0
        flags = compact.waking_common_flags
        for i, (delta, pid, target_cpu, prio, comm_index) in enumerate(zip(*waking)):
            raw_ts += delta
            if comm_index >= len(strings):
                error = True
                break
            ts = to_trace_time(clock, raw_ts)
            if ts is None:
                break
            self.push(
                ts,
                (
                    EV_COMPACT_SCHED,
                    cpu,
                    "waking",
                    pid,
                    strings[comm_index],
                    flags[i] if i < len(flags) else None,
                    target_cpu,
                    prio,
                ),
            )
        if error:
            self.stats.inc("compact_sched_has_parse_errors")

    def _data_start(self, bundle, clock) -> None:
        """ftrace_latest_data_start_ns: the latest time from which every cpu's ftrace
        data is complete, from the first bundle of each cpu (perfetto v44+)."""
        if bundle.HasField("previous_bundle_end_timestamp"):
            raw = bundle.previous_bundle_end_timestamp
        elif bundle.HasField("last_read_event_timestamp"):
            raw = bundle.last_read_event_timestamp
        else:
            return
        ts = self.clocks.to_trace_time(clock, raw)
        if ts is None:
            return
        latest = self.trace.metadata.get("ftrace_latest_data_start_ns")
        if not isinstance(latest, int) or ts > latest:  # None until the first cpu's
            self.trace.set_metadata("ftrace_latest_data_start_ns", ts)
