"""Owns process and thread identity: pid/tid → upid/utid.

pids and tids are reused by the OS, so identity is "the latest process with
that pid (that has not ended)". Rows stay in memory (one per process and
thread, bounded by the machine, not the trace length) because names and
parents arrive after creation; they are written when the import ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..stats import Stats
from ..storage import TraceStorage

# Name priorities: a name from a stronger source is not replaced by a weaker
# one (trace_processor's ThreadNamePriority / ProcessNamePriority).
NAME_PRIORITY_OTHER = 0
NAME_PRIORITY_CHROME_PROCESS_LABEL = 1
NAME_PRIORITY_PROCESS_TRACK_DESCRIPTOR = 2
NAME_PRIORITY_CHROME_RENDERER_LABEL = 3
NAME_PRIORITY_THREAD_TYPE = 3
NAME_PRIORITY_TRACK_DESCRIPTOR = 4
NAME_PRIORITY_SYSTEM = 4  # processes named by the kernel (task_newtask, task_rename, process_tree)
# Thread names from kernel events rank above "other" and below process trees.
THREAD_NAME_PRIORITY_FTRACE = 1
THREAD_NAME_PRIORITY_PROCESS_TREE = 2
THREAD_NAME_PRIORITY_CONSTANT = 5  # names trace_processor itself gives ("swapper")


def _set_name(row, name: str | None, priority: int) -> None:
    if name and priority >= row.name_priority:
        row.name = name
        row.name_priority = priority


def set_arg(row: ProcessRow | ThreadRow, key: str, value_type: str, value: object) -> None:
    """Sets one arg of a process or thread row (its flat key and its key are both `key`)."""
    row.args[key] = (key, key, value_type, value)


@dataclass(slots=True, eq=False)
class ProcessRow:
    upid: int
    pid: int
    machine_id: int
    name: str | None = None
    name_priority: int = -1
    start_ts: int | None = None
    end_ts: int | None = None
    parent_upid: int | None = None
    uid: int | None = None
    android_appid: int | None = None
    android_user_id: int | None = None
    cmdline: str | None = None
    args: dict[str, tuple] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class ThreadRow:
    utid: int
    tid: int
    machine_id: int
    name: str | None = None
    name_priority: int = -1
    start_ts: int | None = None
    end_ts: int | None = None
    upid: int | None = None
    is_main_thread: int | None = None
    is_idle: int = 0
    args: dict[str, tuple] = field(default_factory=dict)


class ProcessTracker:
    """Per-trace process/thread identity over the database-wide tables."""

    def __init__(
        self,
        storage: TraceStorage,
        processes: dict[int, ProcessRow],
        threads: dict[int, ThreadRow],
        pid_zero_is_idle: bool,
        machine_id: int = 0,
        stats: Stats | None = None,
    ) -> None:
        self.storage = storage
        self.processes = processes  # upid -> row, shared by every trace in the database
        self.threads = threads  # utid -> row
        self.machine_id = machine_id
        self._by_pid: dict[int, int] = {}
        self._by_tid: dict[int, list[int]] = {}
        # Threads known to share a process that is not known yet, and processes
        # whose parent is the (not yet known) process of a thread.
        self._pending_threads: list[tuple[int, int]] = []
        self._pending_parents: list[tuple[int, int]] = []  # (parent utid, child upid)
        self.stats = stats if stats is not None else Stats()
        if pid_zero_is_idle:
            self._by_pid[0] = 0
            self._by_tid[0] = [0]
            _set_name(threads[0], "swapper", THREAD_NAME_PRIORITY_CONSTANT)

    def add_idle_process(self) -> None:
        """The idle process and its swapper thread (pid/tid 0) of a machine other than
        the host (whose are upid/utid 0), created with the machine, as trace_processor does."""
        proc = self._new_process(0)
        swapper = self._new_thread(0)
        swapper.upid = proc.upid
        swapper.is_main_thread = 1
        swapper.is_idle = 1
        _set_name(swapper, "swapper", THREAD_NAME_PRIORITY_CONSTANT)

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
                # Not a new thread: the main thread may have been seen before its process.
                self.update_thread(pid, pid)
        return upid

    def start_new_process(
        self,
        pid: int,
        ts: int | None = None,
        parent_upid: int | None = None,
        name: str | None = None,
        thread_name_priority: int = NAME_PRIORITY_OTHER,
    ) -> int:
        """A new process with `pid` (fork, or pid reuse), with a new main thread; the
        process that had the pid and every thread with tid == pid stop resolving."""
        self._by_pid.pop(pid, None)
        self._by_tid.pop(pid, None)  # a pid is never used by two live tasks at once
        main = self.start_new_thread(ts, pid)
        self.set_thread_name(main, name, thread_name_priority)
        upid = self.get_or_create_process(pid)
        row = self.processes[upid]
        if ts is not None:
            row.start_ts = ts
        self.set_process_name(upid, name, NAME_PRIORITY_SYSTEM)
        if parent_upid is not None:
            row.parent_upid = parent_upid
        return upid

    def set_process_name(self, upid: int, name: str | None, priority: int = NAME_PRIORITY_OTHER) -> None:
        _set_name(self.processes[upid], name, priority)

    def set_process_parent(self, upid: int, parent_upid: int) -> None:
        """Sets the parent unless one is known: a reparented process keeps its first
        parent, the more informative one."""
        row = self.processes[upid]
        if row.parent_upid is None:
            row.parent_upid = parent_upid
        elif row.parent_upid != parent_upid:
            self.stats.inc("process_tracker_parent_pid_changed")

    def set_process_metadata(self, upid: int, name: str | None, cmdline: str | None) -> None:
        """Name and command line as the system reports them (process trees)."""
        self.set_process_name(upid, name, NAME_PRIORITY_SYSTEM)
        self.processes[upid].cmdline = cmdline

    def set_process_uid(self, upid: int, uid: int) -> None:
        row = self.processes[upid]
        row.uid = uid
        # Android's UserHandle: uid = user id * 100000 + app id.
        row.android_appid = uid % 100000
        row.android_user_id = uid // 100000

    def set_start_ts_if_unset(self, upid: int, ts: int) -> None:
        row = self.processes[upid]
        if row.start_ts is None:
            row.start_ts = ts

    def process(self, upid: int) -> ProcessRow:
        return self.processes[upid]

    # -- threads -----------------------------------------------------------
    def _new_thread(self, tid: int) -> ThreadRow:
        row = ThreadRow(self.storage.reserve_id("thread"), tid, self.machine_id)
        self.threads[row.utid] = row
        self._by_tid.setdefault(tid, []).append(row.utid)
        return row

    def start_new_thread(self, ts: int | None, tid: int) -> int:
        """A new utid for `tid` (the kernel created a task, or the tid was reused), live from now on."""
        row = self._new_thread(tid)
        row.start_ts = ts
        return row.utid

    def is_thread_alive(self, utid: int) -> bool:
        """False once the thread ended, its process ended, or its pid went to a new process."""
        row = self.threads[utid]
        if row.end_ts is not None:
            return False
        if row.upid is None:
            return True
        proc = self.processes[row.upid]
        if proc.end_ts is not None:
            return False
        return self._by_pid.get(proc.pid, row.upid) == row.upid

    _is_alive = is_thread_alive

    def get_thread_or_null(self, tid: int) -> int | None:
        """The latest live thread with `tid`, or None (never creates one)."""
        for utid in reversed(self._by_tid.get(tid, ())):
            if self.is_thread_alive(utid):
                return utid
        return None

    def get_or_create_thread(self, tid: int) -> int:
        """The latest live thread with `tid`; a new one (in no process yet) if there is none."""
        utid = self.get_thread_or_null(tid)
        return utid if utid is not None else self.start_new_thread(None, tid)

    get_or_create_live_thread = get_or_create_thread

    def _find_thread(self, tid: int, pid: int) -> int | None:
        """The latest live thread with `tid` that is in process `pid` or in no process yet."""
        for utid in reversed(self._by_tid.get(tid, ())):
            if not self.is_thread_alive(utid):
                continue
            upid = self.threads[utid].upid
            if upid is None or self.processes[upid].pid == pid:
                return utid
        return None

    def _thread_with_parent(self, tid: int, upid: int, is_main_thread: bool, associate_main_threads: bool) -> int:
        utid = self._find_thread(tid, self.processes[upid].pid)
        if utid is None:
            utid = self.start_new_thread(None, tid)
        else:
            # Reaffirmed: later bare lookups of the tid resolve to this thread.
            utids = self._by_tid[tid]
            if utids[-1] != utid:
                utids.remove(utid)
                utids.append(utid)
        row = self.threads[utid]
        if row.upid is None:
            row.upid = upid
            row.is_main_thread = int(is_main_thread)
        self._resolve_pending(utid, row.upid, associate_main_threads)
        return utid

    def update_thread(self, tid: int, pid: int) -> int:
        """Associates tid with pid (creating either as needed); returns utid."""
        return self._thread_with_parent(tid, self.get_or_create_process(pid), tid == pid, True)

    def thread_in_process(self, tid: int, upid: int) -> int:
        """The live thread `tid` of process `upid` (or not yet in any process), made
        part of it; a new thread when there is none. Never marked as the main thread."""
        return self._thread_with_parent(tid, upid, False, False)

    def thread(self, utid: int) -> ThreadRow:
        return self.threads[utid]

    def set_thread_name(self, utid: int, name: str | None, priority: int = NAME_PRIORITY_OTHER) -> None:
        _set_name(self.threads[utid], name, priority)

    def set_thread_name_and_maybe_process_name(self, utid: int, name: str | None, priority: int) -> None:
        """A thread rename; renaming a main thread renames its process too."""
        self.set_thread_name(utid, name, priority)
        row = self.threads[utid]
        if row.upid is not None and self.processes[row.upid].pid == row.tid:
            self.set_process_name(row.upid, name, NAME_PRIORITY_SYSTEM)

    # -- kernel (ftrace / generic kernel) thread lifecycle --------------------
    def end_thread(self, ts: int, tid: int) -> None:
        """The task ended: later events with this tid make a new thread. Ending a
        process's main thread ends the process (the kernel frees the leader last)."""
        utid = self.get_thread_or_null(tid)
        if utid is None:
            return
        row = self.threads[utid]
        row.end_ts = ts
        self._by_tid[tid].remove(utid)
        if row.upid is None:
            return
        proc = self.processes[row.upid]
        if proc.pid != tid:
            return
        proc.end_ts = ts
        if self._by_pid.get(tid) == row.upid:
            del self._by_pid[tid]

    def associate_threads(self, utid1: int, utid2: int, associate_main_threads: bool = True) -> None:
        """Two threads known to share a process (clone with CLONE_THREAD): whichever
        has a process gives it to the other, now or once one of them gets one."""
        a, b = self.threads[utid1], self.threads[utid2]
        if a.upid is not None and b.upid is None:
            self._join(utid2, a.upid, associate_main_threads)
            self._resolve_pending(utid2, a.upid, associate_main_threads)
        elif b.upid is not None and a.upid is None:
            self._join(utid1, b.upid, associate_main_threads)
            self._resolve_pending(utid1, b.upid, associate_main_threads)
        elif a.upid is not None and a.upid != b.upid:
            self.stats.inc("process_tracker_errors")  # threads of two processes cannot be joined
        elif a.upid is None:
            self._pending_threads.append((utid1, utid2))

    def set_parent_from_thread(self, upid: int, parent_utid: int) -> None:
        """A process forked by `parent_utid`: its parent is that thread's process,
        now or once the thread's process is known."""
        parent_upid = self.threads[parent_utid].upid
        if parent_upid is not None:
            self.processes[upid].parent_upid = parent_upid
        else:
            self._pending_parents.append((parent_utid, upid))

    def _join(self, utid: int, upid: int, associate_main_threads: bool) -> None:
        row = self.threads[utid]
        row.upid = upid
        row.is_main_thread = int(associate_main_threads and row.tid == self.processes[upid].pid)

    def _resolve_pending(self, utid: int, upid: int, associate_main_threads: bool) -> None:
        """`utid` is now known to be in `upid`: so are the threads associated with it
        (transitively), and processes it forked get `upid` as parent."""
        if not self._pending_threads and not self._pending_parents:
            return
        resolved = [utid]
        while resolved:
            current = resolved.pop()
            keep_parents = []
            for parent_utid, child_upid in self._pending_parents:
                if parent_utid == current:
                    self.processes[child_upid].parent_upid = upid
                else:
                    keep_parents.append((parent_utid, child_upid))
            self._pending_parents = keep_parents
            keep_threads = []
            for pair in self._pending_threads:
                if current in pair:
                    other = pair[1] if pair[0] == current else pair[0]
                    self._join(other, upid, associate_main_threads)
                    resolved.append(other)
                else:
                    keep_threads.append(pair)
            self._pending_threads = keep_threads
