"""The trace model being built: database-wide state and one context per input.

`TraceModel` owns the storage and what every input shares (machines, the
process/thread/track rows, dense ids). `TraceContext` is one input file's
view: its stats, trackers and bounds; importers only talk to a context.
"""

from __future__ import annotations

from collections.abc import Callable

from .archives import TraceInput
from .functions import fnv1a_hash_bytes
from .import_logs import ImportLogs
from .importers.proto.clock_tracker import ClockTracker, clock_key
from .stats import REGISTRY as STATS
from .stats import Stats
from .storage import Arg, TraceStorage, to_int64
from .trackers.args_translation import ArgsTranslation
from .trackers.dimension_tracker import DimensionDeclarations, resolve_trace, write_dimensions
from .trackers.flow_tracker import FlowTracker
from .trackers.machine_tracker import CpuRow, GpuRow, MachineRow
from .trackers.process_tracker import ProcessRow, ProcessTracker, ThreadRow
from .trackers.slice_tracker import SliceTracker
from .trackers.state_tracker import StateTracker
from .trackers.track_tracker import TrackRow, TrackTracker, write_tracks

HOST_MACHINE_ID = 0
# Metadata scopes (trace_processor's metadata.h): facts about a machine, and facts
# about one trace's data from one machine; every other key is about the trace file.
MACHINE_METADATA = frozenset(
    {
        "system_name",
        "system_version",
        "system_release",
        "system_machine",
        "system_ram_bytes",
        "system_ram_gb",
        "timezone_off_mins",
        "android_build_fingerprint",
        "android_sdk_version",
        "android_device_manufacturer",
        "android_guest_soc_model",
        "android_hardware_revision",
        "android_incremental_build",
        "android_ram_model",
        "android_serial_console",
        "android_soc_model",
        "android_storage_model",
        "tracing_service_version",
    }
)
MACHINE_AND_TRACE_METADATA = frozenset(
    {
        "all_data_source_flushed_ns",
        "all_data_source_started_ns",
        "ftrace_latest_data_start_ns",
        "slow_start_data_source",
        "tracing_disabled_ns",
        "tracing_started_ns",
    }
)


def format_uuid(msb: int, lsb: int) -> str:
    h = f"{msb & 0xFFFFFFFFFFFFFFFF:016x}{lsb & 0xFFFFFFFFFFFFFFFF:016x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class TraceContext:
    """One input file's data from one machine. The file's context is the host's;
    packets from other machines (TracePacket.machine_id) go to a context of
    their own (`for_machine`), with its own processes, tracks, stats and metadata."""

    def __init__(
        self,
        model: TraceModel,
        trace_id: int,
        path: str,
        trace_type: str,
        size: int,
        machine_id: int = HOST_MACHINE_ID,
        parent: TraceContext | None = None,
    ) -> None:
        self.model = model
        self.storage = model.storage
        self.trace_id = trace_id
        self.path = path
        self.trace_type = trace_type
        self.size = size
        self.stats = Stats()
        self.machine_id = machine_id
        self.parent = parent
        self.machine_contexts: dict[int, TraceContext] = {}  # machine id -> context (on the file's context)
        pid_zero_is_idle = trace_type in ("proto", "systrace")
        self.processes = ProcessTracker(
            self.storage,
            model.processes,
            model.threads,
            pid_zero_is_idle=pid_zero_is_idle and machine_id == HOST_MACHINE_ID,
            machine_id=machine_id,
            stats=self.stats,
        )
        if pid_zero_is_idle and machine_id != HOST_MACHINE_ID:
            self.processes.add_idle_process()  # upid/utid 0 are the host's
        self.tracks = TrackTracker(self.storage, model.tracks, trace_id, machine_id)
        self.dimensions = DimensionDeclarations(self.stats)
        # Renames a trace can carry (TranslationTable packets): raw name -> name.
        self.slice_name_map: dict[str, str] = {}
        self.process_track_name_map: dict[str, str] = {}
        self.args_translation = ArgsTranslation()
        self.import_logs = ImportLogs(self.storage, trace_id)
        self.slices = SliceTracker(
            self.storage, self.stats, self.slice_name_map, self.args_translation, self.import_logs
        )
        self.flows = FlowTracker(self.storage, self.stats)
        self.states = StateTracker(self.storage)
        self.metadata: dict[str, object] = {}
        self.page_size = 0  # SystemInfo.page_size (4096 when it says nothing); 0 without SystemInfo
        self.packets_read = 0
        self.track_groups = 0  # compressed track sets created so far (see new_track_group)
        self.content_hash: int | None = None  # FNV-1a of the file's first 4 KiB
        # The file or archive member it is read from.
        self.source: TraceInput = parent.source if parent is not None else TraceInput(path)

    def insert_log(
        self,
        ts: int,
        utid: int | None,
        prio: int,
        tag: str | None,
        msg: str,
        source: str = "android_logcat",
        args: list[Arg] | None = None,
    ) -> int:
        """A __intrinsic_logs row (the android_logs and logs views read them)."""
        arg_set_id = self.storage.arg_set(args) if args else None
        return self.storage.insert("__intrinsic_logs", (ts, utid, prio, source, tag, msg, arg_set_id))

    def insert_counter(self, ts: int, track_id: int, value: float, args: list[Arg] | None = None) -> int:
        arg_set_id = self.storage.arg_set(args) if args else None
        # A double, as trace_processor holds counter values (and the REAL column stores them): a scaled
        # uint64 (kB as bytes) can be beyond SQLite's integers.
        return self.storage.insert("counter", (ts, track_id, None if value is None else float(value), arg_set_id))

    def new_track_group(self) -> int:
        """track_group_id for a new set of compressed tracks: numbered per trace as first used."""
        if self.parent is not None:
            return self.parent.new_track_group()
        self.track_groups += 1
        return self.track_groups - 1

    def for_machine(self, raw_machine_id: int) -> TraceContext:
        """The context of this file's data from machine `raw_machine_id` (as the trace writes it)."""
        machine_id = self.model.machine_for(raw_machine_id)
        if machine_id == self.machine_id:
            return self
        ctx = self.machine_contexts.get(machine_id)
        if ctx is None:
            ctx = self.machine_contexts[machine_id] = TraceContext(
                self.model, self.trace_id, self.path, self.trace_type, self.size, machine_id, self
            )
            ctx.slice_name_map = self.slice_name_map
            ctx.slices.name_map = self.slice_name_map
            ctx.args_translation = ctx.slices.translation = self.args_translation
            ctx.process_track_name_map = self.process_track_name_map
        return ctx

    def contexts(self) -> list[TraceContext]:
        """This file's contexts: the host's, then other machines' in the order they appeared."""
        return [self, *self.machine_contexts.values()]

    @property
    def machine(self) -> MachineRow:
        return self.model.machines[self.machine_id]

    def set_metadata(self, name: str, value: object) -> None:
        self.metadata[name] = value

    def cpu(self, cpu: int) -> int:
        """The ucpu of core `cpu` on this trace's machine, its cpu row created on first use."""
        ucpu = self.machine_id * MAX_CPUS_PER_MACHINE + cpu
        if ucpu not in self.model.cpus:
            self.model.cpus[ucpu] = CpuRow(ucpu, cpu, self.machine_id)
        return ucpu

    def cpu_row(self, cpu: int) -> CpuRow:
        return self.model.cpus[self.cpu(cpu)]

    def gpu(self, gpu: int) -> int:
        """The ugpu of GPU `gpu` on this trace's machine, its gpu row created on first use."""
        key = (self.machine_id, gpu)
        row = self.model.gpus.get(key)
        if row is None:
            row = self.model.gpus[key] = GpuRow(self.storage.reserve_id("gpu"), gpu, self.machine_id)
        return row.ugpu

    def gpu_row(self, gpu: int) -> GpuRow:
        self.gpu(gpu)
        return self.model.gpus[(self.machine_id, gpu)]

    def add_metadata(self, name: str, value: object) -> None:
        """A value of a multi-valued key (each one its own row, key_type 'multi')."""
        values = self.metadata.setdefault(name, MultiValue())
        if isinstance(values, list):
            values.append(value)


MAX_CPUS_PER_MACHINE = 4096


class MultiValue(list):
    pass


class TraceModel:
    def __init__(self, storage: TraceStorage) -> None:
        self.storage = storage
        self.processes: dict[int, ProcessRow] = {}
        self.threads: dict[int, ThreadRow] = {}
        self.tracks: dict[int, TrackRow] = {}
        self.cpus: dict[int, CpuRow] = {}  # ucpu -> row
        self.gpus: dict[tuple[int, int], GpuRow] = {}  # (machine id, gpu index) -> row
        self.machines: list[MachineRow] = []  # by id
        self.machine_ids: dict[int, int] = {}  # raw id (TracePacket.machine_id) -> id
        self.track_dimensions: dict[int, list] = {}  # track id -> its effective dimensions (resolve_trace)
        # Trace time across inputs, as trace_processor's global clock: the clock the first input to
        # set one put trace time on, and that input's clock snapshots (host, not sequence-scoped:
        # (clock id, ns) lists), which convert the clock of a later input on another clock.
        self.trace_clock: int | None = None
        self.clock_snapshots: list[list[tuple[int, int]]] = []
        self.clock_users = 0  # inputs that asked for trace_time_converter (merge.py: parts that depend on it)
        self._add_host()

    @classmethod
    def create(
        cls, path: str, input_bytes: int = 0, separate_process: bool | None = None, split_finish: bool | None = None
    ) -> TraceModel:
        """A model writing a new database at `path` (by a child process for large inputs; `split_finish`:
        SqliteWriter's)."""
        return cls(TraceStorage.create(path, input_bytes, separate_process, split_finish))

    def _add_host(self) -> None:
        self.machine_for(0)  # the host, written by finish() once SystemInfo is known
        # upid 0 / utid 0 are reserved for the idle process and swapper thread.
        proc = ProcessRow(self.storage.reserve_id("process"), 0, HOST_MACHINE_ID)
        self.processes[proc.upid] = proc
        swapper = ThreadRow(self.storage.reserve_id("thread"), 0, HOST_MACHINE_ID)
        swapper.upid = 0
        swapper.is_main_thread = 1
        swapper.is_idle = 1
        self.threads[swapper.utid] = swapper

    def machine_for(self, raw_id: int) -> int:
        """The machine id of raw machine id `raw_id`, its row created on first use."""
        machine_id = self.machine_ids.get(raw_id)
        if machine_id is None:
            machine_id = self.machine_ids[raw_id] = self.storage.reserve_id("machine")
            self.machines.append(MachineRow(machine_id, raw_id))
        return machine_id

    def adopt_machine(self, raw_id: int) -> bool:
        """Makes the host's row stand for machine `raw_id` (a trace whose packets all
        come from one remote machine: trace_processor keeps it as machine 0). False
        if the host row is already claimed or the machine already has a row."""
        host = self.machines[HOST_MACHINE_ID]
        if host.raw_id != 0 or raw_id in self.machine_ids:
            return False
        del self.machine_ids[0]
        host.raw_id = raw_id
        self.machine_ids[raw_id] = HOST_MACHINE_ID
        return True

    def begin_trace(self, source: TraceInput, trace_type: str, stored_head: bytes) -> TraceContext:
        """The context of the trace `source` (its trace_file id planned by archives.plan_inputs);
        `stored_head`: its first 4 KiB as stored (gzip not inflated), which name it without a uuid."""
        self.storage.forget_arg_sets()
        trace = TraceContext(self, source.trace_id, source.path, trace_type, source.size)
        trace.source = source
        trace.content_hash = fnv1a_hash_bytes(stored_head)
        if trace_type in ("proto", "systrace"):
            swapper = self.threads[0]
            if swapper.name is None:
                # A name trace_processor hard-codes, above every source's priority:
                # "<idle>" or "swapper/3" from kernel events never replace it.
                swapper.name, swapper.name_priority = "swapper", 1 << 30
        return trace

    def set_trace_clock(self, clock_id: int, snapshots: list[list[tuple[int, int]]]) -> None:
        """A proto input's trace clock and snapshots become trace time, unless an earlier input set it."""
        if self.trace_clock is None:
            self.trace_clock = clock_id
            self.clock_snapshots = snapshots

    def trace_time_converter(self, clock_id: int) -> Callable[[int], int] | None:
        """For an input whose timestamps are on `clock_id` (systrace: MONOTONIC): None when that is trace
        time (the clock is claimed if no input set one), else ts -> trace time through the snapshots of
        the input that set it (unchanged where they cannot convert it: trace_processor bridges the clocks
        one to one)."""
        self.clock_users += 1
        if self.trace_clock is None:
            self.trace_clock = clock_id
        if self.trace_clock == clock_id:
            return None
        tracker = ClockTracker(Stats())
        tracker.set_trace_clock(self.trace_clock)
        for snapshot in self.clock_snapshots:
            tracker.add_snapshot([(c, ns, False, 1) for c, ns in snapshot], 0)
        to_trace_time = tracker.converter(clock_key(clock_id, 0))

        def convert(ts: int) -> int:
            converted = to_trace_time(ts)
            return ts if converted is None else converted

        return convert

    def add_containers(self, rows: list[tuple]) -> None:
        """The trace_file rows of archives and of their members that are not imported (archives.Plan)."""
        for row in rows:
            self.storage.write("trace_file", row)

    def end_trace(self, trace: TraceContext) -> None:
        contexts = trace.contexts()
        for ctx in contexts:
            ctx.slices.flush()
            ctx.states.finish()
        # Counts its problems in the stats written below.
        resolve_trace(self, trace.trace_id, [ctx.dimensions for ctx in trace.contexts()])
        source = trace.source
        self.storage.write(
            "trace_file",
            (trace.trace_id, source.parent_id, source.name, trace.size, trace.trace_type, source.processing_order, 0),
        )
        if "trace_uuid" not in trace.metadata and trace.content_hash is not None:
            # No uuid in the trace: trace_processor names it by a hash of its first 4 KiB.
            trace.metadata["trace_uuid"] = format_uuid(0, trace.content_hash)
        for ctx in contexts:
            for name, value in sorted(ctx.metadata.items()):
                self._metadata(name, value, trace.trace_id, machine_id=ctx.machine_id)
        self._metadata("trace_type", trace.trace_type, trace.trace_id)
        self._metadata("trace_size_bytes", trace.size, trace.trace_id)
        for ctx in contexts[1:]:
            # Global stats have one row: other machines' counts go to the file's context.
            for name, value in ctx.stats.single.items():
                if STATS[name].scope == "global":
                    trace.stats.inc(name, value)
        for ctx in contexts:
            for row in ctx.stats.rows(ctx.machine_id, trace.trace_id):
                if ctx is trace or STATS[row[0]].scope != "global":
                    self.storage.insert("stats", row)

    def _metadata(
        self,
        name: str,
        value: object,
        trace_id: int | None,
        key_type: str = "single",
        machine_id: int | None = HOST_MACHINE_ID,
    ) -> None:
        if isinstance(value, MultiValue):
            for item in value:
                self._metadata(name, item, trace_id, "multi", machine_id)
            return
        # Facts about the machine are scoped to it, facts about the machine's part of
        # the trace to both, everything else to the trace file.
        if name in MACHINE_METADATA:
            trace_id = None
        elif name not in MACHINE_AND_TRACE_METADATA:
            machine_id = None
        row: tuple
        if isinstance(value, str):
            row = (name, key_type, None, value, machine_id, trace_id)
        elif isinstance(value, (int, float)):
            row = (name, key_type, to_int64(int(value)), None, machine_id, trace_id)
        else:
            raise TypeError(f"metadata {name}: {value!r} is neither text nor a number")
        self.storage.insert("metadata", row)

    def finish(self, phase: Callable[[str], None] = lambda name: None) -> None:
        """Writes what is kept until the end and completes the database; `phase(name)`
        is called as each named step begins (for progress displays)."""
        phase("Writing processes, threads and tracks")
        s = self.storage
        s.forget_arg_sets()
        # label_index: the host is 0 (whatever its id), the other machines 1..n in id order.
        others = [m for m in self.machines if m.raw_id != 0]
        for m in self.machines:
            m.label_index = 0 if m.raw_id == 0 else others.index(m) + 1
        for m in self.machines:
            s.write("machine", m.row())
        for c in sorted(self.cpus.values(), key=lambda r: r.ucpu):
            s.write(
                "cpu",
                (
                    c.ucpu,
                    c.cpu,
                    c.cluster_id,
                    c.processor,
                    c.machine_id,
                    c.capacity,
                    s.arg_set(c.args) if c.args else None,
                ),
            )
        for g in sorted(self.gpus.values(), key=lambda r: r.ugpu):
            s.write(
                "gpu",
                (
                    g.ugpu,
                    g.gpu,
                    g.name,
                    g.vendor,
                    g.model,
                    g.architecture,
                    g.uuid,
                    g.pci_bdf,
                    g.machine_id,
                    s.arg_set(g.args) if g.args else None,
                ),
            )
        for p in sorted(self.processes.values(), key=lambda r: r.upid):
            s.write(
                "process",
                (
                    p.upid,
                    p.pid,
                    p.name,
                    p.start_ts,
                    p.end_ts,
                    p.parent_upid,
                    p.uid,
                    p.android_appid,
                    p.android_user_id,
                    p.cmdline,
                    s.arg_set(list(p.args.values())),
                    p.machine_id,
                ),
            )
        for t in sorted(self.threads.values(), key=lambda r: r.utid):
            s.write(
                "thread",
                (
                    t.utid,
                    t.tid,
                    t.name,
                    t.start_ts,
                    t.end_ts,
                    t.upid,
                    t.is_main_thread,
                    t.is_idle,
                    t.machine_id,
                    s.arg_set(list(t.args.values())),
                ),
            )
        write_tracks(s, self.tracks)
        write_dimensions(self)
        s.flush()
        # A flow id's flow points from the earlier slice to the later one, whichever the trace named
        # first, as trace_processor's FlowTracker::Step and End have it. Flows without an id (GPU render
        # stages, correlated track events, binder, ...) keep the direction their source gives.
        s.execute("""UPDATE flow SET slice_out = slice_in, slice_in = slice_out
                          WHERE trace_id IS NOT NULL
                            AND (SELECT ts FROM slice WHERE id = flow.slice_out)
                              > (SELECT ts FROM slice WHERE id = flow.slice_in)""")
        s.write("trace_bounds", s.trace_bounds())
        s.finish(phase)

    def abort(self) -> None:
        self.storage.abort()
