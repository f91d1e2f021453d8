"""Owns process and thread identity: pid/tid → upid/utid.

pids and tids are reused by the OS, so identity is "the latest process with
that pid (that has not ended)". Rows stay in memory (one per process and
thread, bounded by the machine, not the trace length) because names and
parents arrive after creation; they are written when the import ends.
"""

from __future__ import annotations

from typing import Optional

from ..storage import TraceStorage

# Name priorities: a name from a stronger source is not replaced by a weaker
# one (trace_processor's ThreadNamePriority / ProcessNamePriority).
NAME_PRIORITY_OTHER = 0
NAME_PRIORITY_CHROME_PROCESS_LABEL = 1
NAME_PRIORITY_PROCESS_TRACK_DESCRIPTOR = 2
NAME_PRIORITY_CHROME_RENDERER_LABEL = 3
NAME_PRIORITY_THREAD_TYPE = 3
NAME_PRIORITY_TRACK_DESCRIPTOR = 4


def _set_name(row, name: Optional[str], priority: int) -> None:
    if name and priority >= row.name_priority:
        row.name = name
        row.name_priority = priority


class ProcessRow:
    __slots__ = ("upid", "pid", "name", "name_priority", "start_ts", "end_ts", "parent_upid", "uid", "cmdline", "args", "machine_id")

    def __init__(self, upid: int, pid: int, machine_id: int) -> None:
        self.upid = upid
        self.pid = pid
        self.name: Optional[str] = None
        self.name_priority = -1
        self.start_ts: Optional[int] = None
        self.end_ts: Optional[int] = None
        self.parent_upid: Optional[int] = None
        self.uid: Optional[int] = None
        self.cmdline: Optional[str] = None
        self.args: dict[str, tuple] = {}
        self.machine_id = machine_id


class ThreadRow:
    __slots__ = ("utid", "tid", "name", "name_priority", "start_ts", "end_ts", "upid", "is_main_thread", "is_idle", "args", "machine_id")

    def __init__(self, utid: int, tid: int, machine_id: int) -> None:
        self.utid = utid
        self.tid = tid
        self.name: Optional[str] = None
        self.name_priority = -1
        self.start_ts: Optional[int] = None
        self.end_ts: Optional[int] = None
        self.upid: Optional[int] = None
        self.is_main_thread: Optional[int] = None
        self.is_idle = 0
        self.args: dict[str, tuple] = {}
        self.machine_id = machine_id


class ProcessTracker:
    """Per-trace process/thread identity over the database-wide tables."""

    def __init__(self, storage: TraceStorage, processes: dict[int, ProcessRow], threads: dict[int, ThreadRow],
                 pid_zero_is_idle: bool, machine_id: int = 0) -> None:
        self.storage = storage
        self.processes = processes  # upid -> row, shared by every trace in the database
        self.threads = threads  # utid -> row
        self.machine_id = machine_id
        self._by_pid: dict[int, int] = {}
        self._by_tid: dict[int, list[int]] = {}
        if pid_zero_is_idle:
            self._by_pid[0] = 0
            self._by_tid[0] = [0]

    # -- processes ---------------------------------------------------------
    def _new_process(self, pid: int) -> ProcessRow:
        row = ProcessRow(self.storage.reserve_id("process"), pid, self.machine_id)
        self.processes[row.upid] = row
        self._by_pid[pid] = row.upid
        return row

    def get_or_create_process(self, pid: int, with_main_thread: bool = True) -> int:
        """The live process with `pid`; a new one also gets its main thread (tid == pid)."""
        upid = self._by_pid.get(pid)
        if upid is None:
            upid = self._new_process(pid).upid
            if with_main_thread:
                self.update_thread(pid, pid)
        return upid

    def start_new_process(self, pid: int) -> int:
        """pid reuse: a new process replaces the live one, whose threads stop resolving."""
        old = self._by_pid.pop(pid, None)
        if old is not None:
            for utids in self._by_tid.values():
                utids[:] = [u for u in utids if self.threads[u].upid != old]
        return self.get_or_create_process(pid)

    def start_new_thread(self, tid: int, pid: int) -> int:
        """tid reuse: a new thread replaces the live one with that tid."""
        self._by_tid.pop(tid, None)
        return self.update_thread(tid, pid)

    def set_process_name(self, upid: int, name: Optional[str], priority: int = NAME_PRIORITY_OTHER) -> None:
        _set_name(self.processes[upid], name, priority)

    def process(self, upid: int) -> ProcessRow:
        return self.processes[upid]

    # -- threads -----------------------------------------------------------
    def _new_thread(self, tid: int) -> ThreadRow:
        row = ThreadRow(self.storage.reserve_id("thread"), tid, self.machine_id)
        self.threads[row.utid] = row
        self._by_tid.setdefault(tid, []).append(row.utid)
        return row

    def get_or_create_thread(self, tid: int) -> int:
        utids = self._by_tid.get(tid)
        if utids:
            return utids[-1]
        return self._new_thread(tid).utid

    def _find_thread(self, tid: int, pid: int) -> Optional[int]:
        """The latest thread with `tid` that is in process `pid` or in no process yet."""
        for utid in reversed(self._by_tid.get(tid, ())):
            row = self.threads[utid]
            if row.end_ts is not None:
                continue
            if row.upid is None or self.processes[row.upid].pid == pid:
                return utid
        return None

    def update_thread(self, tid: int, pid: int) -> int:
        """Associates tid with pid (creating either as needed); returns utid."""
        upid = self.get_or_create_process(pid)
        utid = self._find_thread(tid, pid)
        row = self.threads[utid] if utid is not None else self._new_thread(tid)
        if row.upid is None:
            row.upid = upid
            row.is_main_thread = int(tid == pid)
        return row.utid

    def thread(self, utid: int) -> ThreadRow:
        return self.threads[utid]

    def set_thread_name(self, utid: int, name: Optional[str], priority: int = NAME_PRIORITY_OTHER) -> None:
        _set_name(self.threads[utid], name, priority)
