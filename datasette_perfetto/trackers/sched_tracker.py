"""Owns the `sched` and `thread_state` tables: per-CPU scheduling slices and
per-thread states, with trace_processor's rules for closing, data loss and wakeups.

Rows are kept in memory only while a later event can still change them (the
open slice of each CPU, the latest and latest-blocked state of each thread);
every other row is written as soon as it is final, so memory is bounded by
the number of CPUs and threads, not the trace length.
"""

from __future__ import annotations

import re

from ..storage import TraceStorage

RUNNING = "Running"
RUNNABLE = "R"

# sched row: [id, ts, dur, utid, end_state, priority, ucpu]
S_ID, S_TS, S_DUR, S_UTID, S_END_STATE, S_PRIO, S_UCPU = range(7)
# thread_state row: [id, ts, dur, utid, state, io_wait, blocked_function, waker_utid, waker_id, irq_context, ucpu]
T_ID, T_TS, T_DUR, T_UTID, T_STATE, T_IO_WAIT, T_BLOCKED_FN, T_WAKER_UTID, T_WAKER_ID, T_IRQ, T_UCPU = range(11)

# Kernel task state bits, parsed (trace_processor's TaskState flags).
_INTERRUPTIBLE, _UNINTERRUPTIBLE, _STOPPED, _TRACED, _EXIT_DEAD, _EXIT_ZOMBIE = 0x1, 0x2, 0x4, 0x8, 0x10, 0x20
_PARKED, _TASK_DEAD, _WAKEKILL, _WAKING, _NOLOAD, _IDLE, _PREEMPTED = 0x40, 0x80, 0x100, 0x200, 0x400, 0x4000, 0x8000
_LETTERS = (
    (_INTERRUPTIBLE, "S"),
    (_UNINTERRUPTIBLE, "D"),
    (_STOPPED, "T"),
    (_TRACED, "t"),
    (_EXIT_DEAD, "X"),
    (_EXIT_ZOMBIE, "Z"),
    (_PARKED, "P"),
    (_TASK_DEAD, "x"),
    (_WAKEKILL, "K"),
    (_WAKING, "W"),
    (_NOLOAD, "N"),
    (_IDLE, "I"),
)


def _c_uint(s: str) -> int | None:
    """base::StringToUInt32: strtoul over the whole string."""
    m = re.fullmatch(r"\s*([+-]?)(\d+)", s)
    if not m:
        return None
    value = int(m.group(2))
    return (-value if m.group(1) == "-" else value) & 0xFFFFFFFF


def kernel_version(system_name: object, release: object) -> tuple[int, int] | None:
    """(major, minor) of a Linux release as trace_processor reads utsname; None when unknown."""
    if not system_name or not release or system_name != "Linux":
        return None
    release = str(release)
    first = release.find(".")
    start = first + 1  # std::string::npos + 1 == 0
    second = release.find(".", start)
    major = _c_uint(release if first < 0 else release[:first])
    minor = _c_uint(release[start:] if second < 0 else release[start:second])
    if major is None or minor is None:
        return None
    return (major, minor)


def task_state_string(raw: int, kernel_version: tuple[int, int] | None = None) -> str | None:
    """sched_switch prev_state → 'R', 'R+', 'S', 'DK', ...; None when invalid.

    The bits above 0x20 moved between kernel versions; traces that do not say
    which kernel they came from are read as 4.4, as trace_processor does."""
    raw &= 0xFFFF
    version = kernel_version or (4, 4)
    parsed = raw & 0x3F
    if version >= (4, 14):
        if raw & 0x40:
            parsed |= _PARKED
        if raw & 0x80:
            parsed |= _IDLE
        if raw & 0x100:
            parsed |= _PREEMPTED
        if raw & 0xFE00:
            return None
    else:
        for bit, flag in ((0x40, _TASK_DEAD), (0x80, _WAKEKILL), (0x100, _WAKING), (0x200, _PARKED), (0x400, _NOLOAD)):
            if raw & bit:
                parsed |= flag
        if parsed == _UNINTERRUPTIBLE | _NOLOAD:
            parsed = _IDLE
        if raw & (0x1000 if version >= (4, 8) else 0x800):
            parsed |= _PREEMPTED
    if not parsed & ~_PREEMPTED:
        return "R+" if parsed & _PREEMPTED else "R"
    return "".join(letter for flag, letter in _LETTERS if parsed & flag)


def irq_context(common_flags: int) -> int:
    """1 if the event was emitted from hard or soft interrupt context."""
    return 1 if common_flags & (0x08 | 0x10) else 0


class PendingSched:
    """The last sched_switch seen on a CPU: its open slice and who is running."""

    __slots__ = ("row", "last_pid", "last_utid", "last_prio")

    def __init__(self) -> None:
        self.row: list | None = None
        self.last_pid: int | None = None
        self.last_utid: int | None = None
        self.last_prio: int | None = None


class SchedTracker:
    def __init__(self, storage: TraceStorage, swapper_utid: int = 0) -> None:
        self.storage = storage
        self.swapper_utid = swapper_utid
        self.pending: dict[int, PendingSched] = {}
        self.unwritten: dict[int, list] = {}  # sched id -> row still changeable
        # thread_state: the latest row of each thread and its latest blocked row.
        self.last_state: dict[int, list] = {}
        self.last_blocked: dict[int, list] = {}

    # -- sched -----------------------------------------------------------------
    def pending_for(self, cpu: int) -> PendingSched:
        p = self.pending.get(cpu)
        if p is None:
            p = self.pending[cpu] = PendingSched()
        return p

    def start_slice(self, ucpu: int, ts: int, utid: int, prio: int) -> list:
        row: list = [self.storage.reserve_id("sched"), ts, -1, utid, None, prio, ucpu]
        self.unwritten[row[S_ID]] = row
        return row

    def close_slice(self, row: list, ts: int, end_state: str | None, keep: bool = False) -> None:
        """Ends a slice; `keep` holds it back because its end state may still arrive."""
        row[S_DUR] = ts - row[S_TS]
        row[S_END_STATE] = end_state
        if not keep:
            self.release_slice(row)

    def release_slice(self, row: list) -> None:
        if self.unwritten.pop(row[S_ID], None) is not None:
            self.storage.write("sched", tuple(row))

    # -- thread_state -------------------------------------------------------------
    def _write_if_final(self, row: list | None) -> None:
        if row is None:
            return
        utid = row[T_UTID]
        if self.last_state.get(utid) is not row and self.last_blocked.get(utid) is not row:
            self.storage.write("thread_state", tuple(row))

    def last_state_of(self, utid: int) -> str | None:
        row = self.last_state.get(utid)
        return row[T_STATE] if row is not None else None

    def has_state(self, utid: int) -> bool:
        return utid in self.last_state

    def close_state(self, ts: int, utid: int, data_loss: bool = False) -> None:
        row = self.last_state.get(utid)
        if row is not None and not data_loss:
            row[T_DUR] = ts - row[T_TS]

    def open_state(
        self,
        ts: int,
        utid: int,
        state: str | None,
        ucpu: int | None = None,
        waker_utid: int | None = None,
        common_flags: int | None = None,
    ) -> None:
        if utid == self.swapper_utid:
            return  # the idle task has no states worth showing
        waker_id = None
        if waker_utid is not None:
            waker_row = self.last_state.get(waker_utid)
            # A waker is normally running; not at the very start of a CPU's data or after data loss.
            if waker_row is not None and waker_row[T_STATE] == RUNNING:
                waker_id = waker_row[T_ID]
        row = [
            self.storage.reserve_id("thread_state"),
            ts,
            -1,
            utid,
            state,
            None,
            None,
            waker_utid,
            waker_id,
            None if common_flags is None else irq_context(common_flags),
            ucpu,
        ]
        old_last, old_blocked = self.last_state.get(utid), self.last_blocked.get(utid)
        self.last_state[utid] = row
        if state == RUNNING:
            self.last_blocked.pop(utid, None)
        elif state != RUNNABLE:
            self.last_blocked[utid] = row
        self._write_if_final(old_last)
        if old_blocked is not old_last:
            self._write_if_final(old_blocked)

    def push_sched_switch(self, ts: int, ucpu: int, prev_utid: int, prev_state: str | None, next_utid: int) -> None:
        last = self.last_state.get(prev_utid)
        # If the previous thread was not running we lost data: leave its state open-ended.
        self.close_state(ts, prev_utid, data_loss=last is not None and last[T_STATE] != RUNNING)
        self.open_state(ts, prev_utid, prev_state)
        # Forced migration can run a thread on two CPUs at once: truncate, then start anew.
        self.close_state(ts, next_utid)
        self.open_state(ts, next_utid, RUNNING, ucpu)

    def push_waking(self, ts: int, utid: int, waker_utid: int | None, common_flags: int | None = None) -> None:
        last = self.last_state.get(utid)
        if last is None:
            self.open_state(ts, utid, RUNNABLE, None, waker_utid, common_flags)
            return
        if last[T_STATE] in (RUNNING, RUNNABLE):
            # Only blocked threads can be woken; the others are recorded apart.
            self.storage.insert(
                "spurious_sched_wakeup",
                (ts, last[T_ID], None if common_flags is None else irq_context(common_flags), utid, waker_utid),
            )
            return
        self.close_state(ts, utid)
        self.open_state(ts, utid, RUNNABLE, None, waker_utid, common_flags)

    def push_new_task(self, ts: int, utid: int, waker_utid: int) -> None:
        self.open_state(ts, utid, RUNNABLE, None, waker_utid, 0)

    def push_blocked_reason(self, utid: int, io_wait: bool | None, blocked_function: str | None) -> None:
        row = self.last_blocked.get(utid)
        if row is None or utid not in self.last_state:
            return
        if io_wait is not None:
            row[T_IO_WAIT] = int(io_wait)
        if blocked_function is not None:
            row[T_BLOCKED_FN] = blocked_function

    def push_thread_state(self, ts: int, utid: int, state: str | None, ucpu: int | None = None, stats=None) -> None:
        """A state change reported directly (generic kernel task state events)."""
        self.close_state(ts, utid)
        last = self.last_state.get(utid)
        if last is not None and last[T_TS] == ts and stats is not None:
            stats.inc("generic_task_state_invalid_order")  # two changes at one instant
        self.open_state(ts, utid, state, ucpu)

    def update_pending_state(self, utid: int, state: str | None) -> None:
        row = self.last_state.get(utid)
        if row is not None:
            row[T_STATE] = state

    def finish(self) -> None:
        for row in list(self.unwritten.values()):
            self.release_slice(row)
        final = {id(r): r for r in (*self.last_state.values(), *self.last_blocked.values())}
        self.last_state.clear()
        self.last_blocked.clear()
        for row in final.values():
            self.storage.write("thread_state", tuple(row))
