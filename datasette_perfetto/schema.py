"""The database schema, declared once as data.

Every table and view a trace database holds is described here: column names
and order (trace_processor's public names and `SELECT *` order), SQLite types,
documentation and indexes. DDL, the writer's INSERT statements, Datasette
metadata and `metadata.yml` are all derived from these declarations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # INTEGER | REAL | TEXT | BLOB
    doc: str
    # SQL expression for a column computed from the others (an alias such as
    # slice.slice_id); stored nowhere, so the writer never inserts it.
    generated: str | None = None
    unit: str | None = None
    # The table whose ids the column holds (an `id` column holds its own table's): what a merge of
    # databases (merge.py) offsets or remaps. Set ids (args.arg_set_id, ...) are their table's row ids.
    # A doc saying "→ table.id" (or .upid, .utid, .arg_set_id) of a table declares it too.
    ref: str | None = None

    @property
    def stored(self) -> bool:
        return self.generated is None


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: tuple[Column, ...]
    indexes: tuple[tuple[str, ...], ...] = ()

    @property
    def stored_columns(self) -> list[str]:
        return [c.name for c in self.columns if c.stored]

    def create_sql(self) -> str:
        parts = []
        for c in self.columns:
            if c.generated:
                parts.append(f"[{c.name}] {c.type} GENERATED ALWAYS AS ({c.generated}) VIRTUAL")
            elif c.name == "id":
                parts.append("[id] INTEGER PRIMARY KEY")
            else:
                parts.append(f"[{c.name}] {c.type}")
        return f"CREATE TABLE [{self.name}] (\n  " + ",\n  ".join(parts) + "\n)"

    def index_sql(self) -> list[str]:
        return [
            f"CREATE INDEX [{self.name}_{'_'.join(cols)}] ON [{self.name}] ({', '.join(cols)})" for cols in self.indexes
        ]

    def insert_sql(self, rows: int = 1) -> str:
        cols = self.stored_columns
        one = f"({', '.join('?' for _ in cols)})"
        return f"INSERT INTO [{self.name}] ({', '.join(cols)}) VALUES " + ", ".join([one] * rows)


# Rows per INSERT statement (insert_sql(MULTI_ROWS)): SQLite's per-statement cost is paid once per MULTI_ROWS rows,
# inserts ~35-40% faster than one by one (13 columns x 50 stays far below SQLite's variable limit).
MULTI_ROWS = 50


def grouped_rows(rows: list[tuple]) -> tuple[list[tuple], list[tuple]]:
    """`rows` as parameters of insert_sql(MULTI_ROWS), MULTI_ROWS rows flattened into each, and the rows left
    over, for insert_sql()."""
    whole = len(rows) - len(rows) % MULTI_ROWS
    flat = chain.from_iterable
    return [tuple(flat(rows[i : i + MULTI_ROWS])) for i in range(0, whole, MULTI_ROWS)], rows[whole:]


@dataclass(frozen=True)
class Derived:
    """A table computed from the others once the import is complete (report aggregates)."""

    table: Table
    populate: str  # INSERT ... SELECT
    # Rows kept by the importer as slices are written (aggregates.py) instead of
    # running `populate`, which stays as their definition and is tested against them.
    streamed: bool = False

    @property
    def name(self) -> str:
        return self.table.name


@dataclass(frozen=True)
class View:
    name: str
    doc: str
    sql: str
    columns: tuple[Column, ...] = field(default=())

    def create_sql(self) -> str:
        return f"CREATE VIEW [{self.name}] AS {self.sql}"


def C(name, type, doc, generated=None, unit=None, ref=None) -> Column:
    return Column(name, type, doc, generated, unit, ref)


TS = "ns"

MACHINE = Table(
    "machine",
    "Machines the trace was recorded on. The host is raw_id 0 and id 0.",
    (
        C("id", "INTEGER", "Machine id (→ machine_id columns elsewhere)."),
        C("raw_id", "INTEGER", "Machine id as written in the trace (TracePacket.machine_id); 0 for the host."),
        C("name", "TEXT", "Machine name, when the trace names it."),
        C("sysname", "TEXT", "uname sysname."),
        C("release", "TEXT", "uname release."),
        C("version", "TEXT", "uname version."),
        C("arch", "TEXT", "uname machine / architecture."),
        C("num_cpus", "INTEGER", "Number of CPUs."),
        C("android_build_fingerprint", "TEXT", "Android build fingerprint."),
        C("android_device_manufacturer", "TEXT", "Android device manufacturer."),
        C("android_sdk_version", "INTEGER", "Android SDK version."),
        C("system_ram_bytes", "INTEGER", "Installed RAM in bytes.", unit="bytes"),
        C("system_ram_gb", "INTEGER", "Installed RAM in GB, rounded."),
        C("label_index", "INTEGER", "0 for the host, 1..n for other machines in id order."),
    ),
)

CPU = Table(
    "cpu",
    "CPUs seen in the trace (from CpuInfo packets and from kernel events). ucpu = cpu on the host machine.",
    (
        C("id", "INTEGER", "Unique CPU id (ucpu): machine id * 4096 + cpu."),
        C("ucpu", "INTEGER", "Alias of id.", generated="id"),
        C("cpu", "INTEGER", "0-based core number on its machine."),
        C("cluster_id", "INTEGER", "Cluster shared by CPUs of one cluster."),
        C("processor", "TEXT", "Description of the core (CpuInfo); NULL if none was recorded."),
        C("machine_id", "INTEGER", "→ machine.id.", ref="machine"),
        C("capacity", "INTEGER", "Relative CPU capacity (devicetree cpu-capacity)."),
        C("arg_set_id", "INTEGER", "Extra args (e.g. cpu_features.raw_bitmap).", ref="args"),
    ),
)

CPU_AVAILABLE_FREQUENCIES = Table(
    "cpu_available_frequencies",
    "Frequencies each CPU can run at (CpuInfo packets).",
    (
        C("id", "INTEGER", "Row id."),
        C("cpu", "INTEGER", "The ucpu value (the core number on single-machine traces).", generated="ucpu"),
        C("freq", "INTEGER", "An available frequency, in kHz.", unit="kHz"),
        C("ucpu", "INTEGER", "→ cpu.id.", ref="cpu"),
    ),
)

GPU = Table(
    "gpu",
    "GPUs seen in the trace (GpuInfo packets, GPU frequency and memory events).",
    (
        C("id", "INTEGER", "Unique GPU id (ugpu)."),
        C("ugpu", "INTEGER", "Alias of id.", generated="id"),
        C("gpu", "INTEGER", "0-based index of the GPU on its machine."),
        C("name", "TEXT", "GPU name."),
        C("vendor", "TEXT", "GPU vendor."),
        C("model", "TEXT", "GPU model."),
        C("architecture", "TEXT", "GPU architecture."),
        C("uuid", "TEXT", "GPU uuid, as hex."),
        C("pci_bdf", "TEXT", "PCI bus/device/function."),
        C("machine_id", "INTEGER", "→ machine.id.", ref="machine"),
        C("arg_set_id", "INTEGER", "Vendor-specific extra info (→ args.arg_set_id).", ref="args"),
    ),
)

GPU_COUNTER_GROUP = Table(
    "gpu_counter_group",
    "GPU counter tracks by counter group (GpuCounterDescriptor groups): one row per track and group.",
    (
        C("id", "INTEGER", "Row id."),
        C("group_id", "INTEGER", "GpuCounterGroup enum value, or a producer-defined group id."),
        C("track_id", "INTEGER", "→ gpu_counter_track.id.", ref="track"),
        C("name", "TEXT", "Group name; NULL for enum groups."),
        C("description", "TEXT", "Group description; NULL for enum groups."),
    ),
    indexes=(("track_id",),),
)

GPU_CONTEXT = Table(
    "gpu_context",
    "Graphics contexts (GL context, VkDevice, CUDA context) seen on GPU render stages, with their process and API.",
    (
        C("id", "INTEGER", "Row id."),
        C("context_id", "INTEGER", "The context handle (→ gpu_slice.context_id)."),
        C("pid", "INTEGER", "Process id of the context."),
        C("api", "TEXT", "OPEN_GL, VULKAN, OPEN_CL, CUDA, HIP or UNDEFINED."),
    ),
)

VULKAN_MEMORY_ALLOCATIONS = Table(
    "vulkan_memory_allocations",
    "Vulkan memory events (VulkanMemoryEvent): driver and device memory allocations, binds and frees.",
    (
        C("id", "INTEGER", "Row id."),
        C("arg_set_id", "INTEGER", "The event's annotations (→ args.arg_set_id).", ref="args"),
        C("source", "TEXT", "DRIVER, DEVICE, GPU_DEVICE_MEMORY, GPU_BUFFER, GPU_IMAGE or UNSPECIFIED."),
        C("operation", "TEXT", "CREATE, DESTROY, BIND, DESTROY_BOUND, ANNOTATIONS or UNSPECIFIED."),
        C("timestamp", "INTEGER", "The event's own timestamp.", unit="ns"),
        C("upid", "INTEGER", "→ process.upid.", ref="process"),
        C("device", "INTEGER", "VkDevice handle."),
        C("device_memory", "INTEGER", "VkDeviceMemory handle."),
        C("memory_type", "INTEGER", "Memory type index."),
        C("heap", "INTEGER", "Memory heap index."),
        C("function_name", "TEXT", "The calling function."),
        C("object_handle", "INTEGER", "Handle of the buffer or image."),
        C("memory_address", "INTEGER", "Address of the memory."),
        C("memory_size", "INTEGER", "Size in bytes."),
        C("scope", "TEXT", "Allocation scope: COMMAND, OBJECT, CACHE, DEVICE, INSTANCE or UNSPECIFIED."),
    ),
    indexes=(("upid",),),
)

TRACE_FILE = Table(
    "trace_file",
    "One row per input file ingested into this database (trace_processor's __intrinsic_trace_file).",
    (
        C("id", "INTEGER", "Trace file id (→ trace_id columns elsewhere)."),
        C("parent_id", "INTEGER", "Containing file, for archives; NULL for top-level inputs.", ref="trace_file"),
        C("name", "TEXT", "File name as given on the command line; an archive member's path in its archive."),
        C("size", "INTEGER", "File size in bytes (an archive member's, inflated).", unit="bytes"),
        C("trace_type", "TEXT", "Detected format: proto, json, systrace, symbols, zip, tar (archives), unknown, ..."),
        C("processing_order", "INTEGER", "Order in which the file was imported; NULL if it was not (unknown format)."),
        C("is_container", "INTEGER", "1 for an archive (zip, tar) whose members are rows of their own, else 0."),
    ),
)

PROCESS = Table(
    "process",
    "Processes seen in the trace. upid is unique within the database; pid can be reused.",
    (
        C("upid", "INTEGER", "Unique process id within the database (alias of id).", generated="id"),
        C("id", "INTEGER", "Row id; same as upid. upid 0 is reserved (the idle/swapper process)."),
        C("pid", "INTEGER", "OS process id (not unique: pids are reused)."),
        C("name", "TEXT", "Process name."),
        C("start_ts", "INTEGER", "Start time, when a creation event was seen.", unit=TS),
        C("end_ts", "INTEGER", "End time, when a destruction event was seen.", unit=TS),
        C("parent_upid", "INTEGER", "→ process.upid of the parent process.", ref="process"),
        C("uid", "INTEGER", "Unix uid."),
        C("android_appid", "INTEGER", "Android app id."),
        C("android_user_id", "INTEGER", "Android multi-user id."),
        C("cmdline", "TEXT", "Command line."),
        C("arg_set_id", "INTEGER", "Extra args (→ args.arg_set_id).", ref="args"),
        C("machine_id", "INTEGER", "→ machine.id.", ref="machine"),
    ),
    indexes=(("pid",),),
)

THREAD = Table(
    "thread",
    "Threads seen in the trace. utid is unique within the database; tid can be reused.",
    (
        C("utid", "INTEGER", "Unique thread id within the database (alias of id).", generated="id"),
        C("id", "INTEGER", "Row id; same as utid. utid 0 is reserved (the idle/swapper thread)."),
        C("tid", "INTEGER", "OS thread id (not unique: tids are reused)."),
        C("name", "TEXT", "Thread name."),
        C("start_ts", "INTEGER", "Start time, if known.", unit=TS),
        C("end_ts", "INTEGER", "End time, if known.", unit=TS),
        C("upid", "INTEGER", "→ process.upid; NULL if the owning process is unknown.", ref="process"),
        C("is_main_thread", "INTEGER", "1 if tid == pid; NULL if unknown."),
        C("is_idle", "INTEGER", "1 for a kernel idle task (utid 0)."),
        C("machine_id", "INTEGER", "→ machine.id.", ref="machine"),
        C("arg_set_id", "INTEGER", "Extra args (→ args.arg_set_id).", ref="args"),
    ),
    indexes=(("tid",), ("upid",)),
)

TRACK = Table(
    "track",
    "Every timeline track: thread, process, async, counter and state tracks alike. "
    "thread_track, process_track, counter_track and the other *_track views are subsets.",
    (
        C("id", "INTEGER", "Track id (→ slice.track_id, counter.track_id, state.track_id)."),
        C("name", "TEXT", "Display name; NULL for many auto-named tracks (e.g. the main thread track)."),
        C("type", "TEXT", "Kind of data on the track, e.g. thread_execution, process_track_event, cpu_frequency."),
        C(
            "dimension_arg_set_id",
            "INTEGER",
            "Args that tell this track apart from others of the same type; NULL for a global track.",
            ref="args",
        ),
        C("parent_id", "INTEGER", "→ track.id of the parent (TrackDescriptor parent_uuid hierarchies).", ref="track"),
        C(
            "source_arg_set_id",
            "INTEGER",
            "Args about where the track came from (description, trace_id, ...).",
            ref="args",
        ),
        C("machine_id", "INTEGER", "→ machine.id.", ref="machine"),
        C("track_group_id", "INTEGER", "Shared by tracks that form one logical UI track."),
        C("event_type", "TEXT", "slice, counter or state."),
        C("counter_unit", "TEXT", "Unit of a counter track's values."),
        C("utid", "INTEGER", "→ thread.utid for thread-associated tracks (mirrors the utid dimension).", ref="thread"),
        C(
            "upid",
            "INTEGER",
            "→ process.upid for process-associated tracks (mirrors the upid dimension).",
            ref="process",
        ),
        C("trace_id", "INTEGER", "→ trace_file.id the track came from.", ref="trace_file"),
    ),
    indexes=(("utid",), ("upid",), ("name",)),
)

SLICE = Table(
    "slice",
    "Slices: spans of time on a track (begin/end pairs, complete events and instants).",
    (
        C("id", "INTEGER", "Slice id; ids follow ts order."),
        C("ts", "INTEGER", "Start timestamp.", unit=TS),
        C("dur", "INTEGER", "Duration; -1 if the slice never ended, 0 for instants.", unit=TS),
        C("track_id", "INTEGER", "→ track.id.", ref="track"),
        C("category", "TEXT", "Category (TrackEvent/JSON cat)."),
        C("name", "TEXT", "Slice name."),
        C("depth", "INTEGER", "Nesting depth on its track; 0 is a root slice."),
        C("parent_id", "INTEGER", "→ slice.id of the enclosing slice; NULL at depth 0.", ref="slice"),
        C("arg_set_id", "INTEGER", "→ args.arg_set_id.", ref="args"),
        C("thread_ts", "INTEGER", "Thread CPU time at the start.", unit=TS),
        C("thread_dur", "INTEGER", "Thread CPU time used by the slice.", unit=TS),
        C("thread_instruction_count", "INTEGER", "Instruction counter at the start."),
        C("thread_instruction_delta", "INTEGER", "Instructions retired during the slice."),
        C("cat", "TEXT", "Alias of category.", generated="category"),
        C("slice_id", "INTEGER", "Alias of id.", generated="id"),
    ),
    # (name, dur): the slices report's per-name durations and percentiles in index order; it also holds ts
    # and track_id so one name's instances in a time range, per thread or per dimension value, are read
    # without the table. (track_id, ts) also holds dur, name and parent_id so a thread's or process's slices,
    # with their self times in a time range, are read without the table (id keeps ties in row order).
    indexes=(
        ("track_id", "ts", "id", "dur", "name", "parent_id"),
        ("name", "dur", "ts", "track_id"),
        ("ts",),
        ("parent_id",),
    ),
)

FLOW = Table(
    "flow",
    "Flow arrows between slices (TrackEvent flow ids, JSON flow events).",
    (
        C("id", "INTEGER", "Flow id."),
        C("slice_out", "INTEGER", "→ slice.id where the arrow starts.", ref="slice"),
        C("slice_in", "INTEGER", "→ slice.id where the arrow ends.", ref="slice"),
        C("trace_id", "INTEGER", "Raw flow id from the trace."),
        C("arg_set_id", "INTEGER", "→ args.arg_set_id.", ref="args"),
    ),
    indexes=(("slice_out",), ("slice_in",)),
)

FTRACE_EVENT = Table(
    "__intrinsic_ftrace_event",
    "Every kernel (ftrace) event, with its fields as args (views ftrace_event and raw; to_ftrace(id) prints "
    "one as a systrace line), as trace_processor keeps them for debugging: a kernel function a field "
    "names is its symbol when the trace interns it.",
    (
        C("id", "INTEGER", "Row id."),
        C("ts", "INTEGER", "Event time.", unit=TS),
        C("name", "TEXT", "The ftrace event name, e.g. sched_switch, print."),
        C(
            "utid",
            "INTEGER",
            "→ thread.id: the task that emitted it (sched_switch: the task switched out).",
            ref="thread",
        ),
        C("arg_set_id", "INTEGER", "The event's fields, by name (→ args.arg_set_id).", ref="args"),
        C("common_flags", "INTEGER", "Ftrace flags (only compact sched_waking events carry them)."),
        C("ucpu", "INTEGER", "→ cpu.id: the CPU it was emitted on.", ref="cpu"),
    ),
)

TRACK_EVENT_CALLSTACKS = Table(
    "__intrinsic_track_event_callstacks",
    "Callstacks TrackEvents carry (inline or interned), one row per slice event with one "
    "(trace_processor's table of that name).",
    (
        C("id", "INTEGER", "Row id."),
        C("slice_id", "INTEGER", "→ slice.id.", ref="slice"),
        C("track_id", "INTEGER", "→ track.id of the slice.", ref="track"),
        C(
            "callsite_id",
            "INTEGER",
            "→ stack_profile_callsite.id: the stack where the slice began (NULL on end rows).",
            ref="stack_profile_callsite",
        ),
        C(
            "end_callsite_id",
            "INTEGER",
            "→ stack_profile_callsite.id: the stack where the slice ended.",
            ref="stack_profile_callsite",
        ),
        C("weight", "REAL", "The event's callstack_weight, if any."),
    ),
    indexes=(("slice_id",),),
)

COUNTER = Table(
    "counter",
    "Counter values. A value holds until the next row on the same track.",
    (
        C("id", "INTEGER", "Row id; ids follow ts order."),
        C("ts", "INTEGER", "Timestamp.", unit=TS),
        C("track_id", "INTEGER", "→ counter_track.id.", ref="track"),
        C("value", "REAL", "Counter value."),
        C("arg_set_id", "INTEGER", "→ args.arg_set_id.", ref="args"),
    ),
    # value is in the index so per track and time range statistics (the counters report) read the index only;
    # id keeps rows of equal ts in row order (as trace_processor returns them).
    indexes=(("track_id", "ts", "id", "value"),),
)

STATE = Table(
    "state",
    "Symbolic states on state tracks (TrackEvent state tracks).",
    (
        C("id", "INTEGER", "Row id."),
        C("ts", "INTEGER", "Start timestamp.", unit=TS),
        C("dur", "INTEGER", "Duration; -1 if still open.", unit=TS),
        C("track_id", "INTEGER", "→ track.id (a state track).", ref="track"),
        C("category", "TEXT", "Category."),
        C("value", "TEXT", "The state."),
        C("arg_set_id", "INTEGER", "→ args.arg_set_id.", ref="args"),
    ),
    indexes=(("track_id", "ts"),),
)

SCHED = Table(
    "sched",
    "Scheduling slices: one row per time a thread ran on a CPU (from sched_switch). "
    "sched_slice is the same without ts_end.",
    (
        C("id", "INTEGER", "Row id; ids follow ts order per CPU."),
        C("ts", "INTEGER", "Time the thread was switched in.", unit=TS),
        C("dur", "INTEGER", "Running time; -1 for the last, still running slice on a CPU.", unit=TS),
        C("cpu", "INTEGER", "The ucpu value (the core number on single-machine traces).", generated="ucpu"),
        C("utid", "INTEGER", "→ thread.utid (utid 0 = swapper/idle).", ref="thread"),
        C("end_state", "TEXT", "State of the thread when switched out (R, R+, S, D, ...); NULL while open."),
        C("priority", "INTEGER", "Kernel priority."),
        C("ucpu", "INTEGER", "→ cpu.id.", ref="cpu"),
        C("ts_end", "INTEGER", "ts + dur (legacy column).", generated="ts + dur", unit=TS),
    ),
    indexes=(("utid", "ts"), ("ucpu", "ts"), ("ts",)),
)

THREAD_STATE = Table(
    "thread_state",
    "What each thread was doing over time: Running (matching a sched row), runnable (R, R+), "
    "sleeping (S), uninterruptible (D), ...",
    (
        C("id", "INTEGER", "Row id."),
        C("ts", "INTEGER", "Start time.", unit=TS),
        C("dur", "INTEGER", "Duration; -1 if still open.", unit=TS),
        C("cpu", "INTEGER", "The ucpu value while Running (or of the wakeup).", generated="ucpu"),
        C("utid", "INTEGER", "→ thread.utid.", ref="thread"),
        C("state", "TEXT", "Running, or a task state code such as R, R+, S, D."),
        C("io_wait", "INTEGER", "1 if blocked on I/O."),
        C("blocked_function", "TEXT", "Kernel function the thread was blocked in."),
        C("waker_utid", "INTEGER", "→ thread.utid of the thread that woke this one.", ref="thread"),
        C("waker_id", "INTEGER", "→ thread_state.id of the waker's state at the wakeup.", ref="thread_state"),
        C("irq_context", "INTEGER", "1 if the wakeup came from interrupt context."),
        C("ucpu", "INTEGER", "→ cpu.id.", ref="cpu"),
    ),
    indexes=(("utid", "ts"), ("ts",)),
)

SPURIOUS_SCHED_WAKEUP = Table(
    "spurious_sched_wakeup",
    "Wakeups of threads that were not blocked (not recorded in thread_state).",
    (
        C("id", "INTEGER", "Row id."),
        C("ts", "INTEGER", "Time of the wakeup.", unit=TS),
        C("thread_state_id", "INTEGER", "→ thread_state.id the thread was in.", ref="thread_state"),
        C("irq_context", "INTEGER", "1 if the wakeup came from interrupt context."),
        C("utid", "INTEGER", "→ thread.utid woken.", ref="thread"),
        C("waker_utid", "INTEGER", "→ thread.utid of the waker.", ref="thread"),
    ),
)

ARGS = Table(
    "args",
    "Key/value arguments. Rows sharing arg_set_id form one set; other tables point at sets.",
    (
        C("id", "INTEGER", "Row id."),
        C("arg_set_id", "INTEGER", "Set id; equals the id of the set's first row.", ref="args"),
        C("flat_key", "TEXT", "Key without array indexes (debug.foo.bar)."),
        C("key", "TEXT", "Full key (debug.foo[0].bar); EXTRACT_ARG matches this."),
        C("int_value", "INTEGER", "Value for int, uint, pointer and bool."),
        C("string_value", "TEXT", "Value for string and json."),
        C("real_value", "REAL", "Value for real."),
        C("value_type", "TEXT", "int, uint, string, real, pointer, bool, json or null."),
        C(
            "display_value",
            "TEXT",
            "The value as text.",
            generated=(
                "CASE value_type WHEN 'int' THEN CAST(int_value AS TEXT) "
                "WHEN 'uint' THEN printf('%u', int_value) "
                "WHEN 'string' THEN string_value WHEN 'json' THEN string_value "
                "WHEN 'real' THEN CAST(real_value AS TEXT) "
                "WHEN 'pointer' THEN printf('0x%x', int_value) "
                "WHEN 'bool' THEN CASE WHEN int_value THEN 'true' ELSE 'false' END "
                "ELSE NULL END"
            ),
        ),
    ),
    # (arg_set_id) alone: a set's args are read in id (insertion) order, as trace_processor lists them. No
    # index on key: every lookup here starts from a set, a scan for a key takes ~60 ms on 1.2 M args, and
    # keeping one costs a random insert per arg (the largest share of a --jobs merge).
    indexes=(("arg_set_id",),),
)

STATS = Table(
    "stats",
    "Import statistics: errors, data losses and counts, named as trace_processor names them. "
    "Look at rows with value > 0 and severity error or data_loss.",
    (
        C("id", "INTEGER", "Row id."),
        C("name", "TEXT", "Stat name."),
        C("idx", "INTEGER", "Index for indexed stats (cpu, buffer, ...); NULL for single stats."),
        C("severity", "TEXT", "info, notice, data_loss or error."),
        C("source", "TEXT", "trace (counted by the recorder) or analysis (counted at import)."),
        C("value", "INTEGER", "The count or value."),
        C("description", "TEXT", "What the stat means."),
        C("machine_id", "INTEGER", "→ machine.id; NULL for global stats.", ref="machine"),
        C("trace_id", "INTEGER", "→ trace_file.id; NULL for global stats.", ref="trace_file"),
    ),
    indexes=(("name",),),
)

METADATA = Table(
    "metadata",
    "Trace-wide facts: trace_type, trace_size_bytes, trace_time_clock_id, ...",
    (
        C("id", "INTEGER", "Row id."),
        C("name", "TEXT", "Key."),
        C("key_type", "TEXT", "single or multi."),
        C("int_value", "INTEGER", "Value for integer keys."),
        C("str_value", "TEXT", "Value for string keys."),
        C("machine_id", "INTEGER", "→ machine.id for machine-scoped keys.", ref="machine"),
        C("trace_id", "INTEGER", "→ trace_file.id for trace-scoped keys.", ref="trace_file"),
    ),
)

TRACE_DIAGNOSTICS = Table(
    "__intrinsic_trace_diagnostics",
    "Problems of the trace config, and what the trace shows came of them, that can hurt the trace's quality: "
    "one row per problem found (trace_processor's trace doctor, TraceDiagnosticsTracker; a tiny ftrace buffer, "
    "unfiltered syscalls, a DISCARD buffer for a streamed trace, ...).",
    (
        C("id", "INTEGER", "Row id."),
        C("key", "TEXT", "Stable identifier of the problem, e.g. tiny_ftrace_buffer."),
        C("title", "TEXT", "Short title, e.g. 'Ftrace buffer too small'."),
        C("description", "TEXT", "What is wrong, with the config's values."),
        C("remediation", "TEXT", "How to fix it."),
        C("confidence", "REAL", "How sure, or how severe, from 0.0 to 1.0."),
        C("trace_id", "INTEGER", "→ trace_file.id of the trace it applies to.", ref="trace_file"),
    ),
)

TRACE_IMPORT_LOGS = Table(
    "__intrinsic_trace_import_logs",
    "Errors and warnings met while importing, one row per occurrence, each counted in stats too "
    "(trace_processor's ImportLogsTracker; _trace_import_logs is its view, with severity and name).",
    (
        C("id", "INTEGER", "Row id."),
        C("trace_id", "INTEGER", "→ trace_file.id of the trace the entry is about.", ref="trace_file"),
        C("ts", "INTEGER", "Timestamp of the event at fault, when known.", unit=TS),
        C("byte_offset", "INTEGER", "Offset in the trace file of the data at fault, when known.", unit="bytes"),
        C(
            "stat_key",
            "TEXT",
            "Name of the stat counted with it, as stats.name (trace_processor's key is the stat's number).",
        ),
        C("arg_set_id", "INTEGER", "Details, e.g. the event's name (→ args.arg_set_id).", ref="args"),
    ),
)

CLOCK_SNAPSHOT = Table(
    "clock_snapshot",
    "Clock snapshots from the trace, used to convert every timestamp to the trace clock.",
    (
        C("id", "INTEGER", "Row id."),
        C("ts", "INTEGER", "Snapshot time on the trace clock.", unit=TS),
        C("clock_id", "INTEGER", "Clock id as in the trace (6 = BOOTTIME)."),
        C("clock_name", "TEXT", "Name of builtin clocks."),
        C("clock_value", "INTEGER", "Value of that clock at the snapshot."),
        C("snapshot_id", "INTEGER", "Snapshot this row belongs to."),
        C("machine_id", "INTEGER", "→ machine.id.", ref="machine"),
    ),
)

EXPERIMENTAL_MISSING_CHROME_PROCESSES = Table(
    "experimental_missing_chrome_processes",
    "Chrome processes that were listed as active (at an incremental state reset) without emitting their "
    "descriptor within 0.2 s: their data may be incomplete before reliable_from. Experimental, as in "
    "trace_processor.",
    (
        C("id", "INTEGER", "Row id."),
        C("upid", "INTEGER", "→ process.upid.", ref="process"),
        C(
            "reliable_from",
            "INTEGER",
            "From when its data is complete (its next descriptor, or the next listing); NULL: never.",
            unit=TS,
        ),
    ),
)

EXPERIMENTAL_PROTO_PATH = Table(
    "experimental_proto_path",
    "With ingest --analyze-proto-content (trace_processor's --analyze-trace-proto-content; empty without): the "
    "proto field paths the trace's packets use, one tree per annotation (a track event's category and name, "
    "packets skipped for lack of incremental state, or none), rooted at TracePacket. Experimental, as in "
    "trace_processor.",
    (
        C("id", "INTEGER", "Path id (→ experimental_proto_content.path_id)."),
        C(
            "parent_id",
            "INTEGER",
            "→ experimental_proto_path.id of the enclosing message's path; NULL for a root.",
            ref="experimental_proto_path",
        ),
        C(
            "field_type",
            "TEXT",
            "A message's type name (TracePacket, TrackEvent, ...), else the field's type (uint64, string, enum, "
            "...; message for a message field not length-delimited); '' for #unknown.",
        ),
        C(
            "field_name",
            "TEXT",
            "'#' and the field's name (#track_event); #unknown: the fields the descriptors do not name; NULL "
            "for a root.",
        ),
        C(
            "arg_set_id",
            "INTEGER",
            "A root's annotation: event.category and event.name, or skipped_packet (→ args.arg_set_id); NULL "
            "for other paths and packets without one.",
            ref="args",
        ),
    ),
)

EXPERIMENTAL_PROTO_CONTENT = Table(
    "experimental_proto_content",
    "With ingest --analyze-proto-content: the trace's bytes by proto field path (trace_processor's "
    "experimental_proto_content), one row per experimental_proto_path with samples. A field's size leaves out "
    "its tag and length, which count in its message's row: every field's bytes are counted once.",
    (
        C("id", "INTEGER", "Row id."),
        C("path", "TEXT", "The path as text: e.g. TracePacket.#track_event.TrackEvent.#name_iid.uint64."),
        C("path_id", "INTEGER", "→ experimental_proto_path.id.", ref="experimental_proto_path"),
        C(
            "total_size",
            "INTEGER",
            "Bytes over the trace. A field: its value (a varint as re-encoded, 4 or 8 for fixed ones, a string's, "
            "bytes' or packed field's payload). A message: the tag and length bytes of its fields. #unknown: the "
            "unnamed fields' values.",
            unit="bytes",
        ),
        C("size", "INTEGER", "Same as total_size.", unit="bytes"),
        C("count", "INTEGER", "Occurrences: of the field, or of the message."),
    ),
)

TRACE_BOUNDS = Table(
    "trace_bounds",
    "First and last timestamp of the trace (over slices, counters, states, ...).",
    (
        C("start_ts", "INTEGER", "Smallest timestamp.", unit=TS),
        C("end_ts", "INTEGER", "Largest end timestamp.", unit=TS),
    ),
)

STACK_PROFILE_MAPPING = Table(
    "stack_profile_mapping",
    "Mappings (binaries, libraries) that stack frames belong to. Profiles without real mappings, "
    "such as V8 CPU profiles in JSON traces, get a placeholder mapping covering every address.",
    (
        C("id", "INTEGER", "Mapping id (→ stack_profile_frame.mapping)."),
        C("build_id", "TEXT", "Hex-encoded build id of the binary or library."),
        C("exact_offset", "INTEGER", "Offset of the mapping in its file."),
        C("start_offset", "INTEGER", "Offset of the file's start in the mapping."),
        C("start", "INTEGER", "Start of the mapping in the process' address space."),
        C("end", "INTEGER", "End of the mapping in the process' address space (uint64 stored as int64)."),
        C("load_bias", "INTEGER", "Load bias."),
        C("name", "TEXT", "File name of the binary or library."),
    ),
)

STACK_PROFILE_FRAME = Table(
    "stack_profile_frame",
    "Stack frames: a location in a program (a function in a mapping).",
    (
        C("id", "INTEGER", "Frame id (→ stack_profile_callsite.frame_id)."),
        C("name", "TEXT", "Name of the function this location is in."),
        C("mapping", "INTEGER", "→ stack_profile_mapping.id.", ref="stack_profile_mapping"),
        C("rel_pc", "INTEGER", "Program counter relative to the start of the mapping."),
        C(
            "symbol_set_id",
            "INTEGER",
            "→ stack_profile_symbol.symbol_set_id: symbol information, if any.",
            ref="stack_profile_symbol",
        ),
        C("deobfuscated_name", "TEXT", "Deobfuscated function name (Java/R8)."),
        C("type", "TEXT", "Kind of frame (native, kernel, interpreted, jit, ...) when the producer says."),
    ),
    indexes=(("mapping",),),
)

STACK_PROFILE_SYMBOL = Table(
    "stack_profile_symbol",
    "Symbol information of frames: rows sharing symbol_set_id describe one frame, including inlined functions.",
    (
        C("id", "INTEGER", "Row id."),
        C("symbol_set_id", "INTEGER", "Set id (→ stack_profile_frame.symbol_set_id).", ref="stack_profile_symbol"),
        C("name", "TEXT", "Function name."),
        C("source_file", "TEXT", "Source file (for V8 frames: the script URL)."),
        C("line_number", "INTEGER", "Line number."),
        C("inlined", "INTEGER", "1 if the function was inlined."),
    ),
    indexes=(("symbol_set_id",),),
)

STACK_PROFILE_CALLSITE = Table(
    "stack_profile_callsite",
    "Callsites: a frame and the callsite that called it. A sample's callsite_id is its leaf frame; "
    "follow parent_id towards the root.",
    (
        C("id", "INTEGER", "Callsite id."),
        C("depth", "INTEGER", "Distance from the root (outermost) frame; 0 at the root."),
        C(
            "parent_id",
            "INTEGER",
            "→ stack_profile_callsite.id of the caller; NULL at the root.",
            ref="stack_profile_callsite",
        ),
        C("frame_id", "INTEGER", "→ stack_profile_frame.id.", ref="stack_profile_frame"),
    ),
    indexes=(("parent_id",),),
)

PROFILER_TASK_CONTEXT = Table(
    "profiler_task_context",
    "What profiler samples are attributed to: a process and/or thread "
    "(trace_processor's __intrinsic_profiler_task_context).",
    (
        C("id", "INTEGER", "Task context id (→ profiler_sample.task_context_id)."),
        C("upid", "INTEGER", "→ process.upid, if known.", ref="process"),
        C("utid", "INTEGER", "→ thread.utid, if known.", ref="thread"),
        C(
            "async_context_id",
            "INTEGER",
            "Stackful asynchronous context (goroutine, fiber), if any.",
            ref="profiler_async_context",
        ),
    ),
)

PROFILER_SAMPLE = Table(
    "profiler_sample",
    "Samples of every CPU profiler (trace_processor's __intrinsic_profiler_sample); "
    "stack_sample and cpu_profile_stack_sample are views over it.",
    (
        C("id", "INTEGER", "Sample id; ids follow ts order."),
        C("ts", "INTEGER", "Time of the sample.", unit=TS),
        C("source", "TEXT", "The profiler that took it, e.g. legacy_v8 (V8 CPU profiles in JSON traces)."),
        C(
            "task_context_id",
            "INTEGER",
            "→ profiler_task_context.id: the process/thread sampled.",
            ref="profiler_task_context",
        ),
        C(
            "execution_context_id",
            "INTEGER",
            "CPU and privilege mode of the sample, if known.",
            ref="profiler_execution_context",
        ),
        C(
            "callsite_id",
            "INTEGER",
            "→ stack_profile_callsite.id of the leaf frame; NULL without a stack.",
            ref="stack_profile_callsite",
        ),
        C("unwind_error", "TEXT", "Set when unwinding the stack failed."),
        C("session_id", "INTEGER", "Profiler session the sample came from, if known.", ref="profiler_session"),
        C("counter_set_id", "INTEGER", "Counter values recorded with the sample, if any.", ref="profiler_counter_set"),
    ),
    indexes=(("ts",), ("callsite_id",)),
)

PROFILER_EXECUTION_CONTEXT = Table(
    "profiler_execution_context",
    "CPU and privilege mode profiler samples were taken in (trace_processor's __intrinsic_profiler_execution_context).",
    (
        C("id", "INTEGER", "Execution context id (→ profiler_sample.execution_context_id)."),
        C("ucpu", "INTEGER", "→ cpu.id the sample was taken on, if known.", ref="cpu"),
        C("cpu_mode", "TEXT", "user, kernel, hypervisor, guest_user or guest_kernel, if known."),
    ),
)

PROFILER_SESSION = Table(
    "profiler_session",
    "Sampling sessions (a perf data source, a StackSample stream) samples belong to "
    "(trace_processor's __intrinsic_profiler_session).",
    (
        C("id", "INTEGER", "Session id (→ profiler_sample.session_id)."),
        C("source", "TEXT", "The profiler, e.g. linux.perf."),
        C("timebase_unit", "TEXT", "Unit of the session's timebase counter (ns, cycles, instructions, count)."),
        C("cmdline", "TEXT", "Command line that collected the data, if known."),
    ),
)

PROFILER_ASYNC_CONTEXT = Table(
    "profiler_async_context",
    "Stackful asynchronous contexts (goroutines, fibers) samples are attributed to "
    "(trace_processor's __intrinsic_profiler_async_context).",
    (
        C("id", "INTEGER", "Async context id."),
        C("name", "TEXT", "Name of the context."),
        C("kind", "TEXT", "Kind, e.g. goroutine or fiber."),
        C(
            "parent_id",
            "INTEGER",
            "→ profiler_async_context.id of the enclosing context.",
            ref="profiler_async_context",
        ),
    ),
)

PROFILER_COUNTER_SET = Table(
    "profiler_counter_set",
    "Counter values recorded with a sample: rows sharing counter_set_id belong to one sample "
    "(trace_processor's __intrinsic_profiler_counter_set).",
    (
        C("id", "INTEGER", "Row id."),
        C("counter_set_id", "INTEGER", "Set id (→ profiler_sample.counter_set_id).", ref="profiler_counter_set"),
        C("counter_id", "INTEGER", "→ counter.id.", ref="counter"),
    ),
    indexes=(("counter_set_id",),),
)

HEAP_PROFILE = Table(
    "heap_profile",
    "Native heap profile dumps (heapprofd): one row per process, heap and dump.",
    (
        C("id", "INTEGER", "Row id."),
        C("ts", "INTEGER", "Start of the profiling window.", unit=TS),
        C("ts_end", "INTEGER", "Time of the dump (joins heap_profile_allocation.ts with upid).", unit=TS),
        C("dur", "INTEGER", "ts_end - ts.", unit=TS),
        C("upid", "INTEGER", "→ process.upid.", ref="process"),
        C("heap_name", "TEXT", "Heap, e.g. libc.malloc; NULL if the dump does not say."),
    ),
)

HEAP_PROFILE_ALLOCATION = Table(
    "heap_profile_allocation",
    "Native heap allocations and frees per callstack since the previous dump (heapprofd). "
    "Allocations have positive count and size, frees negative ones.",
    (
        C("id", "INTEGER", "Row id."),
        C("ts", "INTEGER", "Time of the dump the row belongs to.", unit=TS),
        C("upid", "INTEGER", "→ process.upid.", ref="process"),
        C("heap_name", "TEXT", "Heap, e.g. libc.malloc ('unknown' if the dump does not say)."),
        C(
            "callsite_id",
            "INTEGER",
            "→ stack_profile_callsite.id of the allocating leaf frame.",
            ref="stack_profile_callsite",
        ),
        C("count", "INTEGER", "> 0: allocations made; < 0: allocations freed."),
        C("size", "INTEGER", "> 0: bytes allocated; < 0: bytes freed.", unit="bytes"),
    ),
    indexes=(("callsite_id",), ("upid", "ts")),
)

HEAP_GRAPH = Table(
    "heap_graph",
    "Java heap dumps: one row per dump.",
    (
        C("id", "INTEGER", "Dump id."),
        C("ts", "INTEGER", "Time of the dump.", unit=TS),
        C("upid", "INTEGER", "→ process.upid whose heap was dumped.", ref="process"),
        C("dump_reason", "TEXT", "Why the heap was dumped (e.g. OOME), if known."),
        C("heap_size", "INTEGER", "Bytes allocated on the heap, as the VM reports it.", unit="bytes"),
        C("truncated", "INTEGER", "1 if packets of the dump are missing."),
    ),
)

HEAP_GRAPH_CLASS = Table(
    "heap_graph_class",
    "Classes (types) of heap dump objects.",
    (
        C("id", "INTEGER", "Class id (→ heap_graph_object.type_id)."),
        C("name", "TEXT", "Class name (possibly obfuscated)."),
        C("deobfuscated_name", "TEXT", "Deobfuscated class name, if a mapping was given."),
        C("location", "TEXT", "APK, dex or jar the class was loaded from."),
        C("superclass_id", "INTEGER", "→ heap_graph_class.id of the superclass.", ref="heap_graph_class"),
        C("classloader_id", "INTEGER", "→ heap_graph_object.id of the class loader.", ref="heap_graph_object"),
        C("kind", "TEXT", "KIND_NORMAL, KIND_ARRAY, KIND_WEAK_REFERENCE, ..."),
    ),
)

HEAP_GRAPH_OBJECT = Table(
    "heap_graph_object",
    "Objects of Java heap dumps. Rows sharing (upid, graph_sample_ts) form one dump.",
    (
        C("id", "INTEGER", "Object id."),
        C("upid", "INTEGER", "→ process.upid.", ref="process"),
        C("graph_sample_ts", "INTEGER", "Time of the dump.", unit=TS),
        C("self_size", "INTEGER", "Bytes the object takes on the Java heap.", unit="bytes"),
        C("native_size", "INTEGER", "Approximate native bytes it owns (NativeAllocationRegistry).", unit="bytes"),
        C(
            "reference_set_id",
            "INTEGER",
            "→ heap_graph_reference.reference_set_id: its outgoing references.",
            ref="heap_graph_reference",
        ),
        C("reachable", "INTEGER", "1 if reachable from a GC root; 0 for garbage not yet collected."),
        C("heap_type", "TEXT", "ART heap (HEAP_TYPE_APP, HEAP_TYPE_ZYGOTE, HEAP_TYPE_BOOT_IMAGE)."),
        C("type_id", "INTEGER", "→ heap_graph_class.id.", ref="heap_graph_class"),
        C("root_type", "TEXT", "The GC root kind if the object is a root (ROOT_JAVA_FRAME, ...)."),
        C("root_distance", "INTEGER", "Distance from a root; -1 (trace_processor computes it on demand)."),
        C(
            "object_data_id",
            "INTEGER",
            "→ heap_graph_object_data (Bitmap fields, HPROF data).",
            ref="heap_graph_object_data",
        ),
    ),
    indexes=(("upid", "graph_sample_ts"), ("type_id",), ("reference_set_id",)),
)

HEAP_GRAPH_REFERENCE = Table(
    "heap_graph_reference",
    "References between heap dump objects: rows sharing reference_set_id are one object's fields.",
    (
        C("id", "INTEGER", "Row id."),
        C("reference_set_id", "INTEGER", "Set id (→ heap_graph_object.reference_set_id).", ref="heap_graph_reference"),
        C("owner_id", "INTEGER", "→ heap_graph_object.id holding the reference.", ref="heap_graph_object"),
        C(
            "owned_id",
            "INTEGER",
            "→ heap_graph_object.id referred to; NULL for a null reference.",
            ref="heap_graph_object",
        ),
        C("field_name", "TEXT", "Field holding the reference, e.g. Foo.name."),
        C("field_type_name", "TEXT", "Declared type of the field."),
        C("deobfuscated_field_name", "TEXT", "Deobfuscated field name, if a mapping was given."),
    ),
    indexes=(("reference_set_id",), ("owned_id",)),
)

HEAP_GRAPH_OBJECT_DATA = Table(
    "heap_graph_object_data",
    "Extra data of heap dump objects (→ heap_graph_object.object_data_id): Bitmap fields, HPROF strings/arrays.",
    (
        C("id", "INTEGER", "Row id."),
        C(
            "field_set_id",
            "INTEGER",
            "→ heap_graph_primitive.field_set_id: the object's primitive fields.",
            ref="heap_graph_primitive",
        ),
        C("value_string", "TEXT", "Value of a java.lang.String (HPROF only)."),
        C("array_element_type", "TEXT", "Element type of a primitive array (HPROF only)."),
        C("array_element_count", "INTEGER", "Element count of a primitive array (HPROF only)."),
        C("array_data_id", "INTEGER", "Id of a primitive array's bytes (HPROF only)."),
        C("array_data_hash", "INTEGER", "Hash of a primitive array's bytes (HPROF only)."),
    ),
)

HEAP_GRAPH_PRIMITIVE = Table(
    "heap_graph_primitive",
    "Primitive field values of heap dump objects: rows sharing field_set_id are one object's.",
    (
        C("id", "INTEGER", "Row id."),
        C("field_set_id", "INTEGER", "Set id (→ heap_graph_object_data.field_set_id).", ref="heap_graph_primitive"),
        C("field_name", "TEXT", "Field, e.g. android.graphics.Bitmap.mWidth."),
        C("field_type", "TEXT", "Primitive type: boolean, byte, char, short, int, long, float, double."),
        C("bool_value", "INTEGER", "Value of a boolean field."),
        C("byte_value", "INTEGER", "Value of a byte field."),
        C("char_value", "INTEGER", "Value of a char field (code point)."),
        C("short_value", "INTEGER", "Value of a short field."),
        C("int_value", "INTEGER", "Value of an int field."),
        C("long_value", "INTEGER", "Value of a long field."),
        C("float_value", "REAL", "Value of a float field."),
        C("double_value", "REAL", "Value of a double field."),
    ),
)

HEAP_GRAPH_DOMINATOR = Table(
    "heap_graph_dominator",
    "Dominator tree of every heap dump's reachable objects, computed at import (not a trace_processor "
    "table). An object's retained size is what the GC would free if it went: itself and every object "
    "only reachable through it. GC roots hang under a virtual root, so their idom_object_id is NULL.",
    (
        C("object_id", "INTEGER", "→ heap_graph_object.id (reachable objects only).", ref="heap_graph_object"),
        C(
            "idom_object_id",
            "INTEGER",
            "→ heap_graph_object.id of the immediate dominator; NULL under the virtual root.",
            ref="heap_graph_object",
        ),
        C("retained_size", "INTEGER", "Sum of self_size over the objects it dominates, itself included.", unit="bytes"),
        C("retained_count", "INTEGER", "Number of objects it dominates, itself included."),
    ),
    indexes=(("object_id",), ("idom_object_id",)),
)

HEAP_GRAPH_JAVA_OOME_DETAILS = Table(
    "__intrinsic_heap_graph_java_oome_details",
    "The OutOfMemoryError that made ART dump a heap (trace_processor's table of that name; "
    "android_heap_graph_java_oome_details is its stdlib view).",
    (
        C("id", "INTEGER", "Row id."),
        C("heap_graph_id", "INTEGER", "→ heap_graph.id of the dump.", ref="heap_graph"),
        C("allocation_size_bytes", "INTEGER", "Size of the allocation that failed.", unit="bytes"),
        C("total_bytes_free", "INTEGER", "Free bytes on the Java heap then.", unit="bytes"),
        C("free_bytes_until_oom", "INTEGER", "Bytes that could still be allocated before the error.", unit="bytes"),
        C("error_msg", "TEXT", "The error's message."),
    ),
)

HEAP_GRAPH_THREAD_CALLSITE = Table(
    "heap_graph_thread_callsite",
    "Stacks of the threads of a heap dump's process (ART OutOfMemoryError dumps).",
    (
        C("id", "INTEGER", "Row id."),
        C("heap_graph_id", "INTEGER", "→ heap_graph.id.", ref="heap_graph"),
        C("utid", "INTEGER", "→ thread.utid.", ref="thread"),
        C(
            "callsite_id",
            "INTEGER",
            "→ stack_profile_callsite.id of the thread's innermost frame.",
            ref="stack_profile_callsite",
        ),
    ),
)

PROFILER_SMAPS = Table(
    "profiler_smaps",
    "Per mapping memory statistics (smaps) captured with heap profiles.",
    (
        C("id", "INTEGER", "Row id."),
        C("upid", "INTEGER", "→ process.upid.", ref="process"),
        C("ts", "INTEGER", "Time of the snapshot.", unit=TS),
        C("path", "TEXT", "Path of the mapping."),
        C("size_kb", "INTEGER", "Size of the mapping.", unit="KiB"),
        C("private_dirty_kb", "INTEGER", "Private dirty memory.", unit="KiB"),
        C("swap_kb", "INTEGER", "Swapped memory.", unit="KiB"),
        C("file_name", "TEXT", "File name of the mapping."),
        C("start_address", "INTEGER", "Start address."),
        C("module_timestamp", "INTEGER", "Module timestamp."),
        C("module_debugid", "TEXT", "Module debug id."),
        C("module_debug_path", "TEXT", "Module debug path."),
        C("protection_flags", "INTEGER", "Protection flags."),
        C("private_clean_resident_kb", "INTEGER", "Private clean resident memory.", unit="KiB"),
        C("shared_dirty_resident_kb", "INTEGER", "Shared dirty resident memory.", unit="KiB"),
        C("shared_clean_resident_kb", "INTEGER", "Shared clean resident memory.", unit="KiB"),
        C("locked_kb", "INTEGER", "Locked memory.", unit="KiB"),
        C("proportional_resident_kb", "INTEGER", "Proportional set size.", unit="KiB"),
    ),
)

AGGREGATE_PROFILE = Table(
    "aggregate_profile",
    "Profiles without timestamps, such as collapsed-stack files: one row per profile "
    "(trace_processor's __intrinsic_aggregate_profile).",
    (
        C("id", "INTEGER", "Profile id."),
        C("scope", "TEXT", "Where the profile came from (collapsed_stack_file)."),
        C("name", "TEXT", "Profile name."),
        C("sample_type_type", "TEXT", "What a value counts (samples)."),
        C("sample_type_unit", "TEXT", "Unit of the values (count)."),
    ),
)

AGGREGATE_SAMPLE = Table(
    "aggregate_sample",
    "Weighted callstacks of aggregate profiles (trace_processor's __intrinsic_aggregate_sample).",
    (
        C("id", "INTEGER", "Row id."),
        C("aggregate_profile_id", "INTEGER", "→ aggregate_profile.id.", ref="aggregate_profile"),
        C("callsite_id", "INTEGER", "→ stack_profile_callsite.id of the leaf frame.", ref="stack_profile_callsite"),
        C("value", "REAL", "Weight, e.g. the sample count of a collapsed-stack line."),
    ),
    indexes=(("callsite_id",),),
)

LOGS = Table(
    "__intrinsic_logs",
    "Log entries of every source, in time order: Android's (logcat, the android.log data source, track event "
    "log messages) and systemd journald's (trace_processor's table; the logs, android_logs and "
    "linux_systemd_journald_logs views read it).",
    (
        C("id", "INTEGER", "Row id."),
        C("ts", "INTEGER", "Time of the entry (Android: its REALTIME timestamp on the trace clock).", unit=TS),
        C(
            "utid",
            "INTEGER",
            "→ thread.utid of the thread that wrote the entry (journald: NULL without a pid).",
            ref="thread",
        ),
        C(
            "prio",
            "INTEGER",
            "Priority. Android: 2 VERBOSE, 3 DEBUG, 4 INFO (also when unspecified), 5 WARN, 6 ERROR, 7 FATAL; "
            "journald (syslog): 0 EMERG (also when unspecified) to 7 DEBUG.",
        ),
        C("log_source", "TEXT", "android_logcat or systemd_journald."),
        C("tag", "TEXT", "Log tag ('' for an Android entry without one) or journald's SYSLOG_IDENTIFIER."),
        C(
            "msg",
            "TEXT",
            "Message text; an Android entry with args (binary / event-log buffers) adds them as name=value after "
            "a space, strings quoted.",
        ),
        C("arg_set_id", "INTEGER", "journald: uid, comm, systemd_unit, hostname and transport.", ref="args"),
    ),
)

PACKAGE_LIST = Table(
    "package_list",
    "Android packages installed on the device (the android.packages_list data source; ART heap dumps add the "
    "package they name), in trace order (trace_processor's package_list view over __intrinsic_package_list). "
    "packages_list packets list a name once per trace file and machine.",
    (
        C("id", "INTEGER", "Row id."),
        C("package_name", "TEXT", "Package name, e.g. com.google.android.gm; NULL when the trace gives none."),
        C("uid", "INTEGER", "UID the package's processes run as (its app id)."),
        C("debuggable", "INTEGER", "1 if the app is debuggable, else 0."),
        C("profileable_from_shell", "INTEGER", "1 if the app is profileable from the shell, else 0."),
        C("version_code", "INTEGER", "versionCode of the APK (0 when not given)."),
    ),
)

ANDROID_USER_LIST = Table(
    "__intrinsic_android_user_list",
    "Android users on the device (the android.user_list data source), one row per user id and machine "
    "(trace_processor's table of that name; android_user_list is its stdlib view).",
    (
        C("id", "INTEGER", "Row id."),
        C("type", "TEXT", "User type, e.g. android.os.usertype.full.SECONDARY (the last one the trace gives)."),
        C("android_user_id", "INTEGER", "Android user id, as process.android_user_id."),
    ),
)

ANDROID_CPU_PER_UID_TRACK = Table(
    "__intrinsic_android_cpu_per_uid_track",
    "The counter tracks of the android.cpu_per_uid data source (cpu_per_uid_data packets), one row per UID and "
    "CPU cluster, in track id order (trace_processor's table of that name; android_cpu_per_uid_track is its "
    "stdlib table, with the package name). Isolated and SDK sandbox UIDs are grouped on one track per range.",
    (
        C("id", "INTEGER", "Row id."),
        C("track_id", "INTEGER", "→ track.id (type android_cpu_per_uid).", ref="track"),
        C("uid", "INTEGER", "UID doing the work (a grouped UID, e.g. 1090000, for isolated UIDs)."),
        C("cluster", "INTEGER", "CPU cluster, from 0 (larger numbers: usually larger cores)."),
        C("total_cpu_millis", "INTEGER", "CPU time the UID used on the cluster during the trace (ms).", unit="ms"),
    ),
)

TRACK_DIMENSION = Table(
    "track_dimension",
    "Track dimensions (RFC 0039): one row per track and effective dimension, whether well-known (machine, gpu, "
    "cpu, process, thread: synthesized from the import) or custom (declared by the producer, e.g. rank). "
    "Not a trace_processor table. Join on track_id: slices, counters and states carry theirs.",
    (
        C("track_id", "INTEGER", "→ track.id.", ref="track"),
        C("name", "TEXT", "Canonical dimension name (→ dimension.name), e.g. machine, cpu, rank."),
        C("value_type", "TEXT", "'int' or 'string': which of int_value / string_value holds the value."),
        C(
            "int_value",
            "INTEGER",
            "The value of an integer dimension (machine id, gpu index, cpu number, upid, "
            "utid, or the declared integer).",
        ),
        C("string_value", "TEXT", "The value of a string dimension."),
        C(
            "display_name",
            "TEXT",
            "Per-value display name (a declared display_name, machine, GPU, process or "
            "thread name); replaces the numbered label, never the value.",
        ),
        C(
            "declaring_track_id",
            "INTEGER",
            "→ track.id whose descriptor declared it; NULL for synthesized "
            "well-known dimensions and for declarations on a process or thread "
            "that has no track of its own.",
            ref="track",
        ),
        C(
            "is_inherited",
            "INTEGER",
            "1 if it comes from an ancestor (the process, the thread or a parent track), "
            "0 if declared on (or synthesized for) this track itself.",
        ),
        C("is_well_known", "INTEGER", "1 for machine, gpu, cpu, process, thread."),
        C("label", "TEXT", "Rendered label: the display name, else the label template filled with label_index."),
        C(
            "label_index",
            "INTEGER",
            "Gap-free index of the value among the dimension's values in the same source "
            "trace and machine, ordered by type then value (machine: machine.label_index).",
        ),
        C(
            "source",
            "TEXT",
            "Where it came from: synthesized, track_descriptor (TrackDescriptor.dimensions) or "
            "distributed_info (PyTorch JSON distributedInfo).",
        ),
    ),
    # (track_id, name, values): a track's value of one dimension (a report's group_by, per row of 100,000 in a
    # large trace's range) read from the index alone.
    indexes=(("track_id", "name", "int_value", "string_value"), ("name", "int_value"), ("name", "string_value")),
)

DIMENSION = Table(
    "dimension",
    "Registry of the track dimensions present in track_dimension (not a trace_processor table).",
    (
        C("name", "TEXT", "Dimension name."),
        C(
            "is_well_known",
            "INTEGER",
            "1 for machine, gpu, cpu, process, thread (reserved: producers cannot declare them).",
        ),
        C(
            "label_template",
            "TEXT",
            "How a value is labelled, %d being its label_index (e.g. 'machine %d', 'rank %d').",
        ),
    ),
)

TRACK_SUBTITLE = Table(
    "track_subtitle",
    "Every track's subtitle (not a trace_processor table): the labels of its dimensions that have more than one "
    "distinct value in the database, machine, gpu, cpu, then custom names alphabetically (never process or "
    "thread), joined with ' · '; '' when none shows.",
    (
        C("track_id", "INTEGER", "→ track.id.", ref="track"),
        C("subtitle", "TEXT", "The labels, e.g. 'machine 1 · rank 3'."),
    ),
    indexes=(("track_id",),),
)

TABLES: tuple[Table, ...] = (
    MACHINE,
    CPU,
    CPU_AVAILABLE_FREQUENCIES,
    GPU,
    GPU_COUNTER_GROUP,
    GPU_CONTEXT,
    VULKAN_MEMORY_ALLOCATIONS,
    TRACE_FILE,
    PROCESS,
    THREAD,
    TRACK,
    SLICE,
    FLOW,
    TRACK_EVENT_CALLSTACKS,
    FTRACE_EVENT,
    COUNTER,
    STATE,
    SCHED,
    THREAD_STATE,
    SPURIOUS_SCHED_WAKEUP,
    ARGS,
    STATS,
    METADATA,
    TRACE_DIAGNOSTICS,
    TRACE_IMPORT_LOGS,
    CLOCK_SNAPSHOT,
    EXPERIMENTAL_MISSING_CHROME_PROCESSES,
    EXPERIMENTAL_PROTO_PATH,
    EXPERIMENTAL_PROTO_CONTENT,
    TRACE_BOUNDS,
    STACK_PROFILE_MAPPING,
    STACK_PROFILE_FRAME,
    STACK_PROFILE_SYMBOL,
    STACK_PROFILE_CALLSITE,
    PROFILER_TASK_CONTEXT,
    PROFILER_SAMPLE,
    PROFILER_EXECUTION_CONTEXT,
    PROFILER_SESSION,
    PROFILER_ASYNC_CONTEXT,
    PROFILER_COUNTER_SET,
    HEAP_PROFILE,
    HEAP_PROFILE_ALLOCATION,
    HEAP_GRAPH,
    HEAP_GRAPH_CLASS,
    HEAP_GRAPH_OBJECT,
    HEAP_GRAPH_REFERENCE,
    HEAP_GRAPH_OBJECT_DATA,
    HEAP_GRAPH_PRIMITIVE,
    HEAP_GRAPH_DOMINATOR,
    HEAP_GRAPH_THREAD_CALLSITE,
    HEAP_GRAPH_JAVA_OOME_DETAILS,
    PROFILER_SMAPS,
    AGGREGATE_PROFILE,
    AGGREGATE_SAMPLE,
    LOGS,
    PACKAGE_LIST,
    ANDROID_USER_LIST,
    ANDROID_CPU_PER_UID_TRACK,
    TRACK_DIMENSION,
    DIMENSION,
    TRACK_SUBTITLE,
)

_TRACK_BASE = "id, name, type, parent_id, source_arg_set_id, machine_id"
_COUNTER_BASE = (
    "id, name, parent_id, type, dimension_arg_set_id, source_arg_set_id, machine_id, "
    "counter_unit AS unit, "
    "(SELECT string_value FROM args WHERE args.arg_set_id = track.source_arg_set_id "
    "AND args.key = 'description') AS description"
)


def _counter_subset(extra: str, join: str = "", where: str = "") -> str:
    """A counter_track subset with trace_processor's column order, plus `extra` columns."""
    return (
        "SELECT track.id, track.name, track.type, track.parent_id, track.source_arg_set_id, track.machine_id, "
        "track.counter_unit AS unit, (SELECT string_value FROM args WHERE args.arg_set_id = "
        f"track.source_arg_set_id AND args.key = 'description') AS description, {extra} "
        f"FROM track{' ' + join if join else ''} WHERE track.event_type = 'counter'{' ' + where if where else ''}"
    )


def _dimension_join(key: str) -> str:
    return f"JOIN args dim ON dim.arg_set_id = track.dimension_arg_set_id AND dim.key = '{key}'"


# gpu_slice: trace_processor's columns, each read from the slice's args (int, string) like its extract_arg.
_GPU_SLICE_ARGS = (
    ("context_id", "int"),
    ("render_target", "int"),
    ("render_target_name", "str"),
    ("render_pass", "int"),
    ("render_pass_name", "str"),
    ("command_buffer", "int"),
    ("command_buffer_name", "str"),
    ("frame_id", "int"),
    ("submission_id", "int"),
    ("hw_queue_id", "int"),
    ("upid", "int"),
    ("render_subpasses", "str"),
    ("render_stage_category", "int"),
)


def _gpu_slice_sql() -> str:
    args = ", ".join(
        f"(SELECT {'int_value' if kind == 'int' else 'string_value'} FROM args "
        f"WHERE args.arg_set_id = slice.arg_set_id AND args.key = '{key}') AS {key}"
        for key, kind in _GPU_SLICE_ARGS
    )
    # GPU tracks: trace_processor's GPU slice track types, and every track with a gpu dimension.
    return (
        "SELECT slice.id, slice.ts, slice.dur, slice.track_id, slice.category, slice.name, slice.depth, "
        f"slice.parent_id, slice.arg_set_id, {args} FROM slice WHERE slice.track_id IN ("
        "SELECT id FROM track WHERE type IN ('gpu_render_stage', 'vulkan_events', 'gpu_log') "
        "UNION SELECT track_id FROM track_dimension WHERE name = 'gpu')"
    )


def _arg(arg_set: str, key: str, kind: str) -> str:
    """One arg's value, as trace_processor's extract_arg reads it (int, str or real)."""
    column = {"int": "int_value", "str": "string_value", "real": "real_value"}[kind]
    return f"(SELECT {column} FROM args WHERE args.arg_set_id = {arg_set} AND args.key = '{key}')"


_SLICE_BASE = (
    "slice.id, slice.ts, slice.dur, slice.track_id, slice.category, slice.name, slice.depth, "
    "slice.parent_id, slice.arg_set_id"
)

# Graphics views: (column, arg key, kind, doc), in trace_processor's column order.
_FRAME_SLICE_ARGS = (
    ("layer_name", "layer_name", "str", "Name of the graphics layer the slice happened on."),
    ("frame_number", "frame_number", "int", "Frame number the slice is associated with."),
    ("queue_to_acquire_time", "queue_to_acquire_time", "int", "Time between queue and acquire of the buffer."),
    ("acquire_to_latch_time", "acquire_to_latch_time", "int", "Time between acquire and latch of the buffer."),
    ("latch_to_present_time", "latch_to_present_time", "int", "Time between latch and present of the buffer."),
)
_EXPECTED_FRAME_ARGS = (
    ("display_frame_token", "Display frame token", "int", "Display frame token (vsync id)."),
    ("surface_frame_token", "Surface frame token", "int", "Surface frame token; NULL for a display frame."),
    ("upid", None, "int", "→ process.upid of the app (or SurfaceFlinger) that made the frame."),
    ("layer_name", "Layer name", "str", "Layer name of a surface frame."),
)
_ACTUAL_FRAME_ARGS = _EXPECTED_FRAME_ARGS + (
    ("present_type", "Present type", "str", "How the frame was presented (on time, early, late, ...)."),
    ("on_time_finish", "On time finish", "int", "1 if the frame finished on time."),
    ("gpu_composition", "GPU composition", "int", "1 if the frame used GPU composition."),
    ("jank_type", "Jank type", "str", "Jank reasons, comma separated; None if no jank."),
    ("jank_severity_type", "Jank severity type", "str", "Severity of the jank (None, Partial, Full, Unknown)."),
    ("prediction_type", "Prediction type", "str", "Frame's prediction type (valid, expired, ...)."),
    ("jank_tag", "Jank tag", "str", "Jank tag derived from the jank type."),
    ("jank_tag_experimental", "Jank tag (experimental)", "str", "Jank tag from the experimental jank type."),
    ("jank_score", "Jank Severity Score", "real", "Jank severity score."),
    ("latched_unsignaled_count", "Latched unsignaled count", "int", "Surface frames latched unsignaled."),
    (
        "addressable_unsignaled_latch_count",
        "Addressable unsignaled latch count",
        "int",
        "Surface frames unsignaled at latch but signaled in time for vsync.",
    ),
    ("latched_fence_state", "Latched fence state", "str", "Fence state at the first latch attempt."),
)
_SLICE_VIEW_COLUMNS = tuple(
    c
    for c in SLICE.columns
    if c.name in ("id", "ts", "dur", "track_id", "category", "name", "depth", "parent_id", "arg_set_id")
)


def _slice_args_view(args: tuple, where: str) -> str:
    cols = ", ".join(
        f"track.upid AS {name}" if key is None else f"{_arg('slice.arg_set_id', key, kind)} AS {name}"
        for name, key, kind, _ in args
    )
    return f"SELECT {_SLICE_BASE}, {cols} FROM slice JOIN track ON slice.track_id = track.id WHERE {where}"


def _arg_columns(args: tuple) -> tuple[Column, ...]:
    types = {"int": "INTEGER", "str": "TEXT", "real": "REAL"}
    return _SLICE_VIEW_COLUMNS + tuple(C(name, types[kind], doc) for name, _, kind, doc in args)


# trace_processor's gpu_track: the track types it counts as "loosely tied to a GPU".
GPU_TRACK_TYPES = (
    "drm_vblank",
    "drm_sched_ring",
    "drm_fence",
    "mali_mcu_state",
    "gpu_render_stage",
    "vulkan_events",
    "gpu_log",
    "graphics_frame_event",
)

# The columns every slices.with_context view starts with, of slice s.
_SLICE_CONTEXT = "s.id, s.ts, s.dur, s.category, s.name, s.track_id"

VIEWS: tuple[View, ...] = (
    View(
        "thread_track",
        "Slice tracks associated with a thread.",
        f"SELECT {_TRACK_BASE}, utid FROM track WHERE event_type = 'slice' AND utid IS NOT NULL",
    ),
    View(
        "process_track",
        "Slice tracks associated with a process.",
        f"SELECT {_TRACK_BASE}, upid FROM track WHERE event_type = 'slice' AND upid IS NOT NULL",
    ),
    View("counter_track", "All counter tracks.", f"SELECT {_COUNTER_BASE} FROM track WHERE event_type = 'counter'"),
    View(
        "thread_counter_track",
        "Counter tracks associated with a thread.",
        _counter_subset("track.utid", where="AND track.utid IS NOT NULL"),
    ),
    View(
        "process_counter_track",
        "Counter tracks associated with a process.",
        _counter_subset("track.upid", where="AND track.upid IS NOT NULL"),
    ),
    View(
        "cpu_counter_track",
        "Counter tracks associated with a CPU (frequency, idle state, cpu times, ...).",
        _counter_subset("dim.int_value AS cpu", join=_dimension_join("cpu")),
    ),
    View(
        "gpu_counter_track",
        "Counter tracks associated with a GPU (frequency, memory, GPU counters).",
        _counter_subset(
            "dim.int_value AS ugpu, (SELECT int_value FROM args WHERE args.arg_set_id = "
            "track.dimension_arg_set_id AND args.key = 'gpu') AS gpu_id",
            join=_dimension_join("ugpu"),
        ),
    ),
    View(
        "cpu_track",
        "Slice tracks associated with a CPU (interrupts, softirqs, ...).",
        "SELECT track.id, track.name, track.type, track.parent_id, track.source_arg_set_id, track.machine_id, "
        f"dim.int_value AS cpu FROM track {_dimension_join('cpu')} WHERE track.event_type = 'slice'",
    ),
    View(
        "state_track",
        "All state tracks.",
        "SELECT id, name, parent_id, type, dimension_arg_set_id, source_arg_set_id, machine_id "
        "FROM track WHERE event_type = 'state'",
    ),
    View(
        "process_state_track",
        "State tracks associated with a process.",
        "SELECT id, name, type, parent_id, source_arg_set_id, machine_id, upid "
        "FROM track WHERE event_type = 'state' AND upid IS NOT NULL",
    ),
    View(
        "thread_state_track",
        "State tracks associated with a thread.",
        "SELECT id, name, type, parent_id, source_arg_set_id, machine_id, utid "
        "FROM track WHERE event_type = 'state' AND utid IS NOT NULL",
    ),
    View(
        "sched_slice",
        "Scheduling slices (the sched table without ts_end).",
        "SELECT id, ts, dur, cpu, utid, end_state, priority, ucpu FROM sched",
    ),
    View("slices", "Same as slice (legacy name).", "SELECT * FROM slice"),
    View(
        "ftrace_event",
        "Every kernel (ftrace) event (__intrinsic_ftrace_event; cpu: the ucpu).",
        "SELECT id, ts, name, ucpu AS cpu, utid, arg_set_id, common_flags, ucpu FROM __intrinsic_ftrace_event",
    ),
    View("raw", "Same as ftrace_event (legacy name).", "SELECT * FROM ftrace_event"),
    View("__intrinsic_trace_file", "Same as trace_file (trace_processor's table name).", "SELECT * FROM trace_file"),
    # trace_processor's standard library module slices.with_context (INCLUDE PERFETTO MODULE
    # slices.with_context; here always there).
    View(
        "thread_slice",
        "Slices on thread tracks, with their thread and process (trace_processor's slices.with_context).",
        f"SELECT {_SLICE_CONTEXT}, t.name AS track_name, th.name AS thread_name, th.utid, th.tid, "
        "th.is_main_thread, p.name AS process_name, p.upid, p.pid, s.depth, s.parent_id, s.arg_set_id, "
        "s.thread_ts, s.thread_dur FROM thread_track t JOIN thread th USING (utid) "
        "LEFT JOIN process p ON p.upid = th.upid JOIN slice s ON s.track_id = t.id",
    ),
    View(
        "process_slice",
        "Slices on process tracks, with their process (trace_processor's slices.with_context).",
        f"SELECT {_SLICE_CONTEXT}, t.name AS track_name, p.name AS process_name, p.upid, p.pid, s.depth, "
        "s.parent_id, s.arg_set_id, s.thread_ts, s.thread_dur FROM slice s "
        "JOIN process_track t ON s.track_id = t.id JOIN process p ON p.upid = t.upid",
    ),
    View(
        "thread_or_process_slice",
        "thread_slice's rows, then process_slice's (trace_processor's slices.with_context).",
        f"SELECT {_SLICE_CONTEXT}, track_name, thread_name, utid, tid, process_name, upid, pid, depth, "
        "parent_id, arg_set_id FROM thread_slice s UNION ALL "
        f"SELECT {_SLICE_CONTEXT}, track_name, NULL, NULL, NULL, process_name, upid, pid, depth, parent_id, "
        "arg_set_id FROM process_slice s",
    ),
    View(
        "gpu_slice",
        "Slices on GPU tracks (render stages, Vulkan events, GPU log, and any track with a gpu "
        "dimension), with trace_processor's gpu_slice columns read from their args.",
        _gpu_slice_sql(),
        tuple(
            c
            for c in SLICE.columns
            if c.name in ("id", "ts", "dur", "track_id", "category", "name", "depth", "parent_id", "arg_set_id")
        )
        + tuple(
            C(key, "INTEGER" if kind == "int" else "TEXT", f"The slice's `{key}` arg, if any.")
            for key, kind in _GPU_SLICE_ARGS
        ),
    ),
    View(
        "gpu_track",
        "Tracks loosely tied to a GPU (DRM vblank/scheduler/fence, Mali MCU state, render stages, Vulkan "
        "events, GPU log, graphics frame events); trace_processor's deprecated gpu_track.",
        "SELECT id, name, type, parent_id, source_arg_set_id, dimension_arg_set_id, machine_id, type AS scope, "
        f"{_arg('source_arg_set_id', 'description', 'str')} AS description, "
        f"{_arg('dimension_arg_set_id', 'context_id', 'int')} AS context_id FROM track WHERE type IN "
        f"({', '.join(repr(t) for t in GPU_TRACK_TYPES)})",
        (
            C("scope", "TEXT", "The track's type (deprecated name)."),
            C("description", "TEXT", "The track's description."),
            C("context_id", "INTEGER", "The GPU context id the track belongs to, if any."),
        ),
    ),
    View(
        "frame_slice",
        "Android graphics frame events (GraphicsFrameEvent): buffer lifecycle and phase slices per layer.",
        _slice_args_view(_FRAME_SLICE_ARGS, "track.type = 'graphics_frame_event'"),
        _arg_columns(_FRAME_SLICE_ARGS),
    ),
    View(
        "expected_frame_timeline_slice",
        "Expected timeline of Android display frames (SurfaceFlinger) and surface frames (apps).",
        _slice_args_view(_EXPECTED_FRAME_ARGS, "track.type = 'android_expected_frame_timeline'") + " ORDER BY slice.id",
        _arg_columns(_EXPECTED_FRAME_ARGS),
    ),
    View(
        "actual_frame_timeline_slice",
        "Actual timeline of Android display and surface frames, with their jank analysis.",
        _slice_args_view(_ACTUAL_FRAME_ARGS, "track.type = 'android_actual_frame_timeline'") + " ORDER BY slice.id",
        _arg_columns(_ACTUAL_FRAME_ARGS),
    ),
    View(
        "instant",
        "Instants: slices with zero duration.",
        "SELECT ts, track_id, name, arg_set_id FROM slice WHERE dur = 0",
    ),
    View(
        "counters",
        "Legacy view: counter rows with their track's name and unit.",
        "SELECT counter.*, counter_track.name AS name, counter_track.unit AS unit "
        "FROM counter JOIN counter_track ON counter.track_id = counter_track.id ORDER BY ts",
    ),
    View(
        "stack_sample",
        "Callstack samples of every profiler: the profiler samples that have a callsite.",
        "SELECT id, ts, source, task_context_id, execution_context_id, callsite_id, session_id "
        "FROM profiler_sample WHERE callsite_id IS NOT NULL",
    ),
    View(
        "stack_sample_task_context",
        "Task contexts (process, thread) that stack samples are attributed to.",
        "SELECT id, upid, utid, async_context_id FROM profiler_task_context WHERE id IN "
        "(SELECT task_context_id FROM profiler_sample WHERE callsite_id IS NOT NULL)",
    ),
    View(
        "stack_sample_execution_context",
        "Execution contexts (CPU, privilege mode) of stack samples.",
        "SELECT id, ucpu, cpu_mode FROM profiler_execution_context WHERE id IN "
        "(SELECT execution_context_id FROM profiler_sample WHERE callsite_id IS NOT NULL)",
    ),
    View(
        "stack_sample_session",
        "Sampling sessions that stack samples came from.",
        "SELECT id, source, timebase_unit, cmdline FROM profiler_session WHERE id IN "
        "(SELECT session_id FROM profiler_sample WHERE callsite_id IS NOT NULL AND session_id IS NOT NULL)",
    ),
    View(
        "stack_sample_async_context",
        "Asynchronous contexts (goroutines, fibers) stack samples are attributed to, with their ancestors.",
        "WITH RECURSIVE referenced(id) AS (SELECT tc.async_context_id FROM profiler_sample ps "
        "JOIN profiler_task_context tc ON tc.id = ps.task_context_id "
        "WHERE ps.callsite_id IS NOT NULL AND tc.async_context_id IS NOT NULL "
        "UNION SELECT ac.parent_id FROM profiler_async_context ac JOIN referenced r ON ac.id = r.id "
        "WHERE ac.parent_id IS NOT NULL) "
        "SELECT id, name, kind, parent_id FROM profiler_async_context WHERE id IN (SELECT id FROM referenced)",
    ),
    View(
        "stack_sample_counter_track",
        "Counter tracks whose values were recorded with stack samples.",
        _counter_subset(
            "coalesce((SELECT int_value FROM args WHERE args.arg_set_id = track.dimension_arg_set_id "
            "AND args.key = 'session_id'), (SELECT int_value FROM args WHERE args.arg_set_id = "
            "track.dimension_arg_set_id AND args.key = 'perf_session_id')) AS session_id, "
            "(SELECT int_value FROM args WHERE args.arg_set_id = track.dimension_arg_set_id "
            "AND args.key = 'cpu') AS cpu, (SELECT int_value FROM args WHERE args.arg_set_id = "
            "track.source_arg_set_id AND args.key = 'is_timebase') AS is_timebase",
            where="AND track.id IN (SELECT c.track_id FROM profiler_sample ps JOIN "
            "profiler_counter_set pcs ON pcs.counter_set_id = ps.counter_set_id JOIN counter c "
            "ON c.id = pcs.counter_id WHERE ps.callsite_id IS NOT NULL)",
        ),
    ),
    View(
        "stack_sample_counter",
        "Counter values recorded with stack samples.",
        "SELECT c.id, ps.id AS stack_sample_id, c.track_id, c.value FROM profiler_sample ps "
        "JOIN profiler_counter_set pcs ON pcs.counter_set_id = ps.counter_set_id "
        "JOIN counter c ON c.id = pcs.counter_id WHERE ps.callsite_id IS NOT NULL",
    ),
    View(
        "perf_sample",
        "Samples of the linux.perf profiler (traced_perf).",
        "SELECT ps.id, ps.ts, tc.utid, c.cpu AS cpu, coalesce(ec.cpu_mode, 'unknown') AS cpu_mode, "
        "ps.callsite_id, ps.unwind_error, ps.session_id AS perf_session_id FROM profiler_sample ps "
        "LEFT JOIN profiler_task_context tc ON tc.id = ps.task_context_id "
        "LEFT JOIN profiler_execution_context ec ON ec.id = ps.execution_context_id "
        "LEFT JOIN cpu c ON c.id = ec.ucpu WHERE ps.source = 'linux.perf'",
    ),
    View(
        "android_heap_graph_java_oome_details",
        "Java OutOfMemoryErrors that triggered heap dumps (stdlib android.memory.heap_graph.oome).",
        "SELECT * FROM __intrinsic_heap_graph_java_oome_details",
    ),
    View(
        "__intrinsic_package_list",
        "Same as package_list (trace_processor's name).",
        "SELECT * FROM package_list",
    ),
    View(
        "_trace_import_logs",
        "Errors and warnings met while importing, with the severity and name of their stat "
        "(trace_processor's view over __intrinsic_trace_import_logs).",
        "SELECT l.id, l.trace_id, l.ts, l.byte_offset, s.severity, l.stat_key AS name, l.arg_set_id "
        "FROM __intrinsic_trace_import_logs AS l "
        "LEFT JOIN (SELECT DISTINCT name, severity FROM stats) AS s ON s.name = l.stat_key",
    ),
    View(
        "logs",
        "Log entries from all sources (Android logcat, systemd journald).",
        "SELECT id, ts, utid, prio, log_source, tag, msg, arg_set_id FROM __intrinsic_logs",
    ),
    View(
        "android_logs",
        "Android log entries (logcat, the android.log data source, track event log messages).",
        "SELECT id, ts, utid, prio, tag, msg FROM __intrinsic_logs WHERE log_source = 'android_logcat'",
    ),
    View(
        "linux_systemd_journald_logs",
        "systemd journald entries with their metadata (stdlib linux.systemd_journald).",
        "SELECT l.id, l.ts, l.utid, l.prio, l.tag, l.msg, "
        "(SELECT int_value FROM args a WHERE a.arg_set_id = l.arg_set_id AND a.key = 'uid') AS uid, "
        + ", ".join(
            f"(SELECT string_value FROM args a WHERE a.arg_set_id = l.arg_set_id AND a.key = '{key}') AS {key}"
            for key in ("comm", "systemd_unit", "hostname", "transport")
        )
        + " FROM __intrinsic_logs AS l WHERE l.log_source = 'systemd_journald'",
    ),
    View(
        "android_user_list",
        "Android users on the device (stdlib android.user_list).",
        "SELECT android_user_id, type FROM __intrinsic_android_user_list",
    ),
    # trace_processor's names of the profiler tables, which diff tests and stdlib code query.
    *(
        View(f"__intrinsic_{name}", f"Same as {name} (trace_processor's name).", f"SELECT * FROM {name}")
        for name in (
            "profiler_sample",
            "profiler_task_context",
            "profiler_execution_context",
            "profiler_session",
            "profiler_async_context",
            "profiler_counter_set",
        )
    ),
    View(
        "perf_session",
        "linux.perf profiling sessions.",
        "SELECT id, id AS perf_session_id, cmdline FROM profiler_session WHERE source = 'linux.perf'",
    ),
    View(
        "perf_counter_track",
        "Counter tracks of linux.perf sessions (timebase and follower counters).",
        _counter_subset(
            "(SELECT int_value FROM args WHERE args.arg_set_id = track.dimension_arg_set_id "
            "AND args.key = 'perf_session_id') AS perf_session_id, (SELECT int_value FROM args "
            "WHERE args.arg_set_id = track.dimension_arg_set_id AND args.key = 'cpu') AS cpu, "
            "(SELECT int_value FROM args WHERE args.arg_set_id = track.source_arg_set_id "
            "AND args.key = 'is_timebase') AS is_timebase",
            where="AND track.type IN ('perf_cpu_counter', 'perf_global_counter')",
        ),
    ),
    # process_priority is Chrome's, recorded by no importer yet: 0 as trace_processor gives other sources.
    View(
        "cpu_profile_stack_sample",
        "CPU profiler stack samples (Chrome, V8, Gecko, simpleperf, perf text).",
        "SELECT profiler_sample.id, profiler_sample.ts, profiler_sample.callsite_id, "
        "profiler_task_context.utid AS utid, 0 AS process_priority FROM profiler_sample "
        "LEFT JOIN profiler_task_context ON profiler_task_context.id = profiler_sample.task_context_id "
        "WHERE profiler_sample.source IN ('chrome', 'legacy_v8', 'gecko', 'simpleperf', 'perf_text')",
        (
            C("id", "INTEGER", "Sample id (→ stack_sample.id)."),
            C("ts", "INTEGER", "Time of the sample.", unit=TS),
            C("callsite_id", "INTEGER", "→ stack_profile_callsite.id of the leaf frame."),
            C("utid", "INTEGER", "→ thread.utid sampled.", ref="thread"),
            C("process_priority", "INTEGER", "Chrome process priority; 0 for other profilers."),
        ),
    ),
)


REPORT_SLICE_NAME = Table(
    "report_slice_name",
    "Per slice name aggregates, precomputed at import for the slices report (not a trace_processor table).",
    (
        C("name", "TEXT", "Slice name."),
        C("count", "INTEGER", "Number of slices with this name."),
        C("total_dur", "INTEGER", "Sum of durations (unfinished slices last to the end of the trace).", unit=TS),
        C("max_dur", "INTEGER", "Longest duration (an unfinished slice's to the end of the trace).", unit=TS),
        C("max_slice_id", "INTEGER", "→ slice.id of a longest instance.", ref="slice"),
        C("unfinished", "INTEGER", "Slices with this name never ended (dur -1)."),
        C("self_dur", "INTEGER", "Sum of self times: each slice's duration less its direct children's.", unit=TS),
    ),
    indexes=(("name",), ("total_dur",)),
)

# The percentiles report_slice_name_percentile holds (the report's DurationStats p50, p95, p99).
REPORT_PERCENTILES = (50, 95, 99)

REPORT_SLICE_NAME_PERCENTILE = Table(
    "report_slice_name_percentile",
    "Per slice name minimum and nearest-rank percentiles of the durations (unfinished slices last to the end "
    "of the trace), "
    "precomputed at import for the slices report of the whole trace (not a trace_processor table).",
    (
        C("name", "TEXT", "Slice name."),
        C("min_dur", "INTEGER", "Shortest duration.", unit=TS),
        *(
            C(f"p{p}_dur", "INTEGER", f"Duration at the {p}th percentile (nearest rank).", unit=TS)
            for p in REPORT_PERCENTILES
        ),
    ),
    indexes=(("name",),),
)


def _nearest_rank(p: int) -> str:
    """report.base.percentile_index(n, p) in SQL: min(n - 1, max(0, round(p / 100 * (n - 1)))), with Python's
    round (halves to even); n - 1 is `last`."""
    x = f"({p} / 100.0 * last)"
    whole = f"CAST({x} AS INTEGER)"
    return (
        f"min(last, CASE WHEN {x} - {whole} > 0.5 THEN {whole} + 1 WHEN {x} - {whole} < 0.5 THEN {whole} "
        f"ELSE {whole} + {whole} % 2 END)"
    )


REPORT_TRACK_STATS = Table(
    "report_track_stats",
    "Per track event counts and counter value ranges, precomputed at import for the tracks, processes and "
    "counters reports (not a trace_processor table). Tracks with no events have no row.",
    (
        C("track_id", "INTEGER", "→ track.id.", ref="track"),
        C("event_count", "INTEGER", "Slices, counter values or states on the track."),
        C("min_value", "REAL", "Smallest counter value; NULL for slice and state tracks."),
        C("max_value", "REAL", "Largest counter value; NULL for slice and state tracks."),
        C("sum_value", "REAL", "Sum of counter values (average = sum_value / event_count); NULL for others."),
        C(
            "drops",
            "INTEGER",
            "Counter values lower than the one before (in time order): 0 for a counter that never goes down; "
            "NULL for slice and state tracks.",
        ),
        *(
            C(f"p{p}_value", "REAL", f"{p}th percentile (nearest rank) of the counter values; NULL for others.")
            for p in REPORT_PERCENTILES
        ),
    ),
    indexes=(("track_id",),),
)

REPORT_COUNTER_INTEGRAL = Table(
    "report_counter_integral",
    "Per counter value, the time integral of its track's values from the track's first sample up to this "
    "sample's ts (each value holds until the track's next sample, in (ts, id) order), precomputed at import so "
    "a time range's time-weighted averages take two lookups per track instead of a pass over its samples (not a "
    "trace_processor table). Over [a, b) from the last sample s at or before each bound: integral(s) + "
    "value(s) * (bound - ts(s)), the one at b less the one at a.",
    (
        C("id", "INTEGER", "→ counter.id.", ref="counter"),
        C("integral", "REAL", "Sum of value x time held over the track's earlier samples (the unit x ns)."),
    ),
)

# Traces with at least this many counter samples get per track and cell figures (report_counter_cell): below
# it, a time range's counters list reads the samples themselves fast enough.
REPORT_COUNTER_CELL_MIN_SAMPLES = 100_000

REPORT_COUNTER_CELL = Table(
    "report_counter_cell",
    f"Per counter track and cell of report_grid (cell_dur wide, from the trace start), in traces with at least "
    f"{REPORT_COUNTER_CELL_MIN_SAMPLES:,} counter samples: the count, min, max and sum of the samples in the cell, "
    "precomputed at import so a time range's counters list adds up its whole cells and reads only the samples "
    "in its parts outside them (not a trace_processor table).",
    (
        C("track_id", "INTEGER", "→ track.id.", ref="track"),
        C("cell", "INTEGER", "Cell number: (ts - trace start) / cell_dur."),
        C("count", "INTEGER", "Samples in the cell."),
        C("min", "REAL", "Smallest value."),
        C("max", "REAL", "Largest value."),
        C("total", "REAL", "Sum of the values."),
    ),
    indexes=(("track_id", "cell"),),
)

REPORT_THREAD_SCHED = Table(
    "report_thread_sched",
    "Per thread CPU, runnable and sleeping time over the whole trace, precomputed at import for the "
    "scheduling report (not a trace_processor table). Rows still open at the end (dur -1) last to the end "
    "of the trace.",
    (
        C("utid", "INTEGER", "→ thread.utid (never 0, the idle task).", ref="thread"),
        C("cpu_time", "INTEGER", "Time running on a CPU (sched).", unit=TS),
        C("runnable", "INTEGER", "Time runnable, waiting for a CPU (thread_state R, R+).", unit=TS),
        C("sleeping", "INTEGER", "Time in any other state but dead (S, D, I, ...).", unit=TS),
    ),
    indexes=(("utid",),),
)

# Names with at least this many slices get per track and cell time aggregates (report_slice_track_cell):
# below it, the slices timeline reads the instances themselves fast enough.
REPORT_CELL_MIN_COUNT = 20_000

# report_slice_name_dur_rank keeps every this many-th duration of a name.
REPORT_RANK_STEP = 1024

REPORT_SLICE_NAME_DUR_RANK = Table(
    "report_slice_name_dur_rank",
    f"Every {REPORT_RANK_STEP}th finished duration of each slice name with at least {REPORT_CELL_MIN_COUNT:,} "
    "finished instances, in duration order, with how many of them last at most that long: how many last less "
    "than any duration is one row plus at most that many (name, dur) index entries, so the slices histogram "
    "of such a name over the whole trace counts its buckets without reading every instance (not a "
    "trace_processor table).",
    (
        C("name", "TEXT", "Slice name."),
        C("dur", "INTEGER", "A duration of the name's finished instances.", unit=TS),
        C("at_most", "INTEGER", "Finished instances of the name lasting at most dur."),
    ),
    indexes=(("name", "dur"),),
)

# Names with at least this many finished instances (in traces with report_slice_name_cell) get their durations
# counted per cell and duration bucket (report_slice_name_dur_cell): below it, a time range's histogram reads the
# instances themselves fast enough.
REPORT_DUR_CELL_MIN_COUNT = 200_000

# A duration bucket of report_slice_name_dur_cell: durations below 2 * DUR_BUCKET_STEPS ns each their own; above,
# DUR_BUCKET_STEPS buckets a power of two, each at most 1/DUR_BUCKET_STEPS of its lowest duration wide.
DUR_BUCKET_STEPS = 32
_DUR_BUCKET_SHIFT = DUR_BUCKET_STEPS.bit_length()  # 6: 2 * DUR_BUCKET_STEPS is 1 << 6


def dur_bucket(dur: int) -> int:
    """A finished duration's bucket (report_slice_name_dur_cell.bucket): dur itself below 2 * DUR_BUCKET_STEPS,
    else DUR_BUCKET_STEPS * e + the duration's top bits (e its bit length less _DUR_BUCKET_SHIFT): increasing
    with the duration, and exact in integers (no floating logarithm to round)."""
    if dur < 2 * DUR_BUCKET_STEPS:
        return dur
    e = dur.bit_length() - _DUR_BUCKET_SHIFT
    return DUR_BUCKET_STEPS * e + (dur >> e)


def dur_bucket_low(bucket: int) -> int:
    """The shortest duration in `bucket` (dur_bucket's inverse at the bucket's low edge)."""
    if bucket < 2 * DUR_BUCKET_STEPS:
        return bucket
    e = bucket // DUR_BUCKET_STEPS - 1
    return (bucket - DUR_BUCKET_STEPS * e) << e


def _dur_bucket_sql(dur: str) -> str:
    """dur_bucket as SQL (SQLite has no bit length: the powers of two at most `dur`, counted)."""
    bits = " + ".join(f"({dur} >= {1 << k})" for k in range(63))
    return (
        f"CASE WHEN {dur} < {2 * DUR_BUCKET_STEPS} THEN {dur} ELSE {DUR_BUCKET_STEPS} * (({bits}) - {_DUR_BUCKET_SHIFT})"
        f" + ({dur} >> (({bits}) - {_DUR_BUCKET_SHIFT})) END"
    )


REPORT_SLICE_NAME_DUR_CELL = Table(
    "report_slice_name_dur_cell",
    f"For slice names with at least {REPORT_DUR_CELL_MIN_COUNT:,} finished instances, in traces with "
    "report_slice_name_cell: per name, cell of time (report_grid.name_cell_dur) and duration bucket, the finished "
    "instances starting in the cell with a duration in the bucket: a time range's histogram of such a name "
    "counts those wholly inside its whole cells from these rows, and reads only the instances of the few buckets "
    "it must split, and those at the range's edges (not a trace_processor table).",
    (
        C("name", "TEXT", "Slice name."),
        C("cell", "INTEGER", "(ts - trace start) / report_grid.name_cell_dur."),
        C(
            "bucket",
            "INTEGER",
            f"Duration bucket: the duration itself below {2 * DUR_BUCKET_STEPS} ns; above, {DUR_BUCKET_STEPS} "
            f"buckets a power of two (for a duration of bit length b, {DUR_BUCKET_STEPS} * (b - "
            f"{_DUR_BUCKET_SHIFT}) + dur >> (b - {_DUR_BUCKET_SHIFT})).",
        ),
        C("count", "INTEGER", "Finished instances of the name starting in the cell, with a duration in the bucket."),
        C("total_dur", "INTEGER", "Their durations summed.", unit=TS),
    ),
    indexes=(("name", "cell"),),
)

# Slices per cell_dur cell (on average) above which report_slice_track_name_cell takes name_cell_dur cells.
TRACK_NAME_FINE_CELL_SLICES = 100_000

REPORT_GRID = Table(
    "report_grid",
    "The time grid of the report's cell aggregates, from the trace start (not a trace_processor table). "
    "cell_dur divides the bucket width of a 20-bucket timeline of the whole trace, so those buckets are "
    "whole cells.",
    (
        C("cell_dur", "INTEGER", "Cell width of report_slice_track_cell and report_counter_cell.", unit=TS),
        C(
            "name_cell_dur",
            "INTEGER",
            "Cell width of report_slice_name_cell: a tenth of cell_dur (1 ns at least), so a time range's parts "
            "outside whole cells are short.",
            unit=TS,
        ),
        C(
            "sched_cell_dur",
            "INTEGER",
            "Cell width of report_sched_cell: name_cell_dur, so timelines of many more buckets than the default are "
            "whole cells too (a row per thread and cell is little beside the scheduling slices).",
            unit=TS,
        ),
        C(
            "track_name_cell_dur",
            "INTEGER",
            f"Cell width of report_slice_track_name_cell: cell_dur, or name_cell_dur where a cell_dur cell holds "
            f"over {TRACK_NAME_FINE_CELL_SLICES:,} slices on average (per dimension value a range's parts outside "
            "whole cells read every track's slices there; finer cells make more rows to look up). A database "
            "without this column has them cell_dur wide.",
            unit=TS,
        ),
    ),
)

REPORT_SLICE_TRACK_NAME = Table(
    "report_slice_track_name",
    "Per track and slice name aggregates, precomputed at import for the slices report scoped to threads, "
    "processes or tracks (not a trace_processor table).",
    (
        C("track_id", "INTEGER", "→ track.id.", ref="track"),
        C("name", "TEXT", "Slice name."),
        C("count", "INTEGER", "Slices of this name on the track."),
        C("total_dur", "INTEGER", "Sum of their durations (unfinished slices last to the end of the trace).", unit=TS),
        C("max_dur", "INTEGER", "Longest duration (an unfinished slice's to the end of the trace).", unit=TS),
        C("max_slice_id", "INTEGER", "→ slice.id of a longest one.", ref="slice"),
        C("unfinished", "INTEGER", "Of them, slices never ended (dur -1)."),
        C("self_dur", "INTEGER", "Sum of their self times: durations less their direct children's.", unit=TS),
    ),
    indexes=(("track_id",),),
)

REPORT_SLICE_TRACK_CELL = Table(
    "report_slice_track_cell",
    "For slice names with many instances: per name, track and cell of time (report_grid.cell_dur), the "
    "instances starting in the cell and the time instances cover inside it, precomputed at import for the "
    "slices timeline (not a trace_processor table).",
    (
        C("name", "TEXT", "Slice name (one with at least 20,000 slices)."),
        C("track_id", "INTEGER", "→ track.id.", ref="track"),
        C("cell", "INTEGER", "(ts - trace start) / cell_dur."),
        C("count", "INTEGER", "Instances starting in the cell."),
        C("covered", "INTEGER", "Time inside the cell covered by instances (summed per instance).", unit=TS),
    ),
    indexes=(("name",),),
)

# Traces with at least this many slices get per name and cell aggregates (report_slice_name_cell): below
# it, a time range's slices table reads the instances themselves fast enough.
REPORT_NAME_CELL_MIN_SLICES = 250_000

REPORT_SLICE_SELF = Table(
    "report_slice_self",
    f"Per finished slice, in traces with fewer than {REPORT_NAME_CELL_MIN_SLICES:,} slices (larger ones have the "
    "cell tables): its self time, its duration less its direct children's (an unfinished child's to the trace "
    "end), precomputed at import so a time range's slices table reads it for each slice wholly inside the range "
    "instead of summing its children (not a trace_processor table).",
    (
        C("id", "INTEGER", "→ slice.id.", ref="slice"),
        C("self_dur", "INTEGER", "Self time.", unit=TS),
    ),
)

# The columns the slice cell tables keep as running totals too: what a range's slices table adds up.
SLICE_CELL_TOTALS = ("starting", "unfinished_starting", "covered", "self_covered")
# A slice cell's figures (report_slice_name_cell, _track_name_cell and _process_name_cell after their keys).
_SLICE_CELL_FIGURES = (
    C("starting", "INTEGER", "Slices starting in the cell."),
    C("open", "INTEGER", "Slices started before the cell and not ended before it starts."),
    C("unfinished_starting", "INTEGER", "Of the starting ones, slices never ended."),
    C("unfinished_open", "INTEGER", "Of the open ones, slices never ended."),
    C("covered", "INTEGER", "Time inside the cell covered by the slices (summed per slice).", unit=TS),
    C(
        "self_covered",
        "INTEGER",
        "covered less the time inside the cell of their direct children (of any name).",
        unit=TS,
    ),
    C("top_covered", "INTEGER", "Of covered, the part of top-level slices (no parent).", unit=TS),
)


def _running_totals(key: str) -> tuple[Column, ...]:
    return tuple(
        C(f"cum_{c}", "INTEGER", f"{c} summed over this cell and the earlier cells of its {key}.")
        for c in SLICE_CELL_TOTALS
    )


REPORT_SLICE_NAME_CELL = Table(
    "report_slice_name_cell",
    "In traces with many slices: per slice name and cell of time (report_grid.name_cell_dur), what the "
    "slices table of a time range adds up over the whole cells inside it (not a trace_processor table). A slice is in every "
    "cell from the one it starts in to the one holding its end (also when it ends exactly where that cell "
    "starts); an unfinished slice (dur -1) lasts to the end of the trace. With running totals over the cells: "
    "whole cells [a, b) are the difference of two rows' totals.",
    (
        C("name", "TEXT", "Slice name."),
        C("cell", "INTEGER", "(ts - trace start) / name_cell_dur."),
        *_SLICE_CELL_FIGURES,
        *_running_totals("name"),
    ),
    indexes=(("name", "cell"), ("cell",)),
)

REPORT_SLICE_TRACK_NAME_CELL = Table(
    "report_slice_track_name_cell",
    "In traces with many slices: per track, slice name and cell of time (report_grid.track_name_cell_dur), what "
    "report_slice_name_cell holds per name, for the slices table of threads, processes or tracks, or per "
    "dimension value (group_by), over a time range (not a trace_processor table). Its cells are ten of "
    "report_slice_name_cell's (an owner's tracks hold a share of the slices, so a range's parts outside whole "
    "cells stay short), or as many where that would put many slices in such a part (track_name_cell_dur). With "
    "running totals over the cells: whole cells [a, b) are the difference of two rows' totals.",
    (
        C("track_id", "INTEGER", "→ track.id.", ref="track"),
        C("name", "TEXT", "Slice name."),
        C("cell", "INTEGER", "(ts - trace start) / track_name_cell_dur."),
        *_SLICE_CELL_FIGURES,
        *_running_totals("track and name"),
    ),
    indexes=(("track_id", "cell"), ("track_id", "name", "cell")),
)

REPORT_SLICE_PROCESS_NAME_CELL = Table(
    "report_slice_process_name_cell",
    "In traces with many slices: per process, slice name and cell of time (report_grid.name_cell_dur), what "
    "report_slice_name_cell holds per name (which is these rows summed over processes), with running totals "
    "over the cells, for the slices table per process (group_by=process) over a time range: whole cells "
    "[a, b) are the difference of two rows' totals, however many cells lie between (not a trace_processor "
    "table).",
    (
        C(
            "process",
            "TEXT",
            "The value of the tracks' process dimension as text (the upid), as report group_by shows it; NULL for "
            "tracks without one.",
        ),
        C("name", "TEXT", "Slice name."),
        C("cell", "INTEGER", "(ts - trace start) / name_cell_dur."),
        *_SLICE_CELL_FIGURES,
        *_running_totals("process and name"),
    ),
    indexes=(("process", "name", "cell"),),
)

REPORT_SLICE_PROCESS_NAME = Table(
    "report_slice_process_name",
    "The (process, slice name) pairs of report_slice_process_name_cell: the rows a range's slices table per "
    "process looks up (not a trace_processor table).",
    (
        C("process", "TEXT", "As in report_slice_process_name_cell."),
        C("name", "TEXT", "Slice name."),
    ),
)

REPORT_SCHED_CELL = Table(
    "report_sched_cell",
    "Per thread and cell of time (report_grid.sched_cell_dur) CPU time, precomputed at import for the scheduling "
    "timeline (not a trace_processor table). Rows still open at the end (dur -1) last to the end of the trace.",
    (
        C("cell", "INTEGER", "(ts - trace start) / sched_cell_dur."),
        C("utid", "INTEGER", "→ thread.utid (never 0, the idle task).", ref="thread"),
        C("busy", "INTEGER", "Time the thread ran inside the cell, on any CPU.", unit=TS),
    ),
    indexes=(("utid",),),
)


# Traces with at least this many slices, counter values and states together get per track and cell event counts
# (report_track_event_cell): below it, a time range's per-track counts read the events fast enough.
REPORT_TRACK_CELL_MIN_EVENTS = 500_000

REPORT_TRACK_EVENT_CELL = Table(
    "report_track_event_cell",
    f"In traces with at least {REPORT_TRACK_CELL_MIN_EVENTS:,} events: per track and cell of time "
    "(report_grid.name_cell_dur) with any, the events of the track's event_type (slices, counter values or "
    "states) starting in it and the finished slices ending in it, with running totals over the cells, so the "
    "tracks and processes tables count a time range's events per track from two rows and the few events in "
    "the range's edge cells (not a trace_processor table).",
    (
        C("track_id", "INTEGER", "→ track.id.", ref="track"),
        C("cell", "INTEGER", "(ts - trace start) / name_cell_dur."),
        C("starting", "INTEGER", "Events starting in the cell."),
        C("cum_starting", "INTEGER", "starting summed over this cell and the track's earlier cells."),
        C("ending", "INTEGER", "Finished slices whose end (ts + dur) lies in the cell."),
        C("cum_ending", "INTEGER", "ending summed over this cell and the track's earlier cells."),
        C(
            "end_reach",
            "INTEGER",
            "The longest of the slices ending in the cell: those ending in a part of it started at most this "
            "long before the cell.",
            unit=TS,
        ),
    ),
    indexes=(("track_id", "cell"),),
)


def row_count_sql(*tables: str) -> str:
    """An expression: the rows of `tables` together (ids are dense from 0, so a table's last id is its count: a
    lookup, where count(*) reads a whole index)."""
    return " + ".join(f"(SELECT coalesce(max(id) + 1, 0) FROM [{t}])" for t in tables)


# Slices, counter values and states in the trace.
TRACK_EVENTS_SQL = row_count_sql("slice", "counter", "state")
# report_track_event_cell's rows; {large}: a query with a row when the trace is large enough. A track's events
# are those of its event_type's table.
TRACK_EVENT_CELLS_SQL = """INSERT INTO report_track_event_cell
  (track_id, cell, starting, cum_starting, ending, cum_ending, end_reach)
WITH grid AS (
  SELECT name_cell_dur AS w, (SELECT start_ts FROM trace_bounds) AS t0 FROM report_grid, ({large})
),
event(track_id, cell, starting, ending, reach) AS (
  SELECT e.track_id, (e.ts - t0) / w, 1, 0, 0 FROM grid, slice e JOIN track t ON t.id = e.track_id
  WHERE t.event_type = 'slice'
  UNION ALL
  SELECT e.track_id, (e.ts + e.dur - t0) / w, 0, 1, e.dur FROM grid, slice e JOIN track t ON t.id = e.track_id
  WHERE t.event_type = 'slice' AND e.dur >= 0
  UNION ALL
  SELECT e.track_id, (e.ts - t0) / w, 1, 0, 0 FROM grid, counter e JOIN track t ON t.id = e.track_id
  WHERE t.event_type = 'counter'
  UNION ALL
  SELECT e.track_id, (e.ts - t0) / w, 1, 0, 0 FROM grid, state e JOIN track t ON t.id = e.track_id
  WHERE t.event_type = 'state'
),
per_cell AS (
  SELECT track_id, cell, sum(starting) AS starting, sum(ending) AS ending, max(reach) AS reach
  FROM event GROUP BY track_id, cell
)
SELECT track_id, cell, starting, sum(starting) OVER running, ending, sum(ending) OVER running, reach
FROM per_cell
WINDOW running AS (PARTITION BY track_id ORDER BY cell ROWS UNBOUNDED PRECEDING)"""


def _cell_split(keys: str, rows: str, width: str = "cell_dur") -> str:
    """Per (keys, cell): how many rows start in the cell and how much of them lies inside it. `rows` is a
    query of (keys..., row_start, row_end, cell); a row crossing cell edges is split at each (few do). Cells are
    report_grid's `width` wide."""
    return f"""WITH RECURSIVE grid AS (
  SELECT {width} AS g, (SELECT start_ts FROM trace_bounds) AS t0, (SELECT end_ts FROM trace_bounds) AS t1
  FROM report_grid
),
source AS ({rows}),
piece({keys}, cell, piece_start, row_end) AS (
  SELECT {keys}, cell + 1, t0 + (cell + 1) * g, row_end FROM source, grid WHERE row_end > t0 + (cell + 1) * g
  UNION ALL
  SELECT {keys}, cell + 1, t0 + (cell + 1) * g, row_end FROM piece, grid WHERE row_end > t0 + (cell + 1) * g
)
SELECT {keys}, cell, sum(first) AS starting, sum(max(inside, 0)) AS inside FROM (
  SELECT {keys}, cell, 1 AS first, min(row_end, t0 + (cell + 1) * g) - row_start AS inside FROM source, grid
  UNION ALL
  SELECT {keys}, cell, 0, min(row_end, t0 + (cell + 1) * g) - piece_start FROM piece, grid
)
GROUP BY cell, {keys}"""


# A slice's duration as the report counts it: an unfinished one (dur -1) lasts to the end of the trace.
SLICE_DUR = "CASE WHEN dur < 0 THEN max((SELECT end_ts FROM trace_bounds) - ts, 0) ELSE dur END"
# Its self time: less its direct children's durations, counted the same way.
_SLICE_SELF = f"{SLICE_DUR} - coalesce((SELECT sum({SLICE_DUR}) FROM slice k WHERE k.parent_id = slice.id), 0)"
# Each slice with its duration (d), self time and the longest duration of its group (`key`), for the per name
# aggregates' definitions: the longest one named is the lowest id among equals, as aggregates.py keeps it.
_SLICE_DURS = (
    f"SELECT slice.track_id, slice.name, slice.id, slice.dur, {SLICE_DUR} AS d, "
    f"max({SLICE_DUR}) OVER (PARTITION BY {{key}}) AS longest, {_SLICE_SELF} AS self FROM slice"
)
_LOWEST_LONGEST_ID = "min(CASE WHEN d = longest THEN id END)"

REPORT_SLICE_DIMENSION = Table(
    "report_slice_dimension",
    "Per dimension with more than one value (RFC 0039; process and thread aside), value and slice name: the "
    "slices' count, total, self time, minimum, maximum and nearest-rank percentiles of their durations, "
    "precomputed at import for the report's dimensions compare (not a trace_processor table).",
    (
        C("dimension", "TEXT", "→ dimension.name, e.g. rank, machine."),
        C("value", "TEXT", "The value as text (track_dimension's int_value or string_value)."),
        C("name", "TEXT", "Slice name."),
        C("count", "INTEGER", "Slices of this name on tracks with this value."),
        C("total_dur", "INTEGER", "Sum of their durations (unfinished slices last to the end of the trace).", unit=TS),
        C("self_dur", "INTEGER", "Sum of their self times: durations less their direct children's.", unit=TS),
        C("min_dur", "INTEGER", "Shortest duration.", unit=TS),
        C("max_dur", "INTEGER", "Longest duration.", unit=TS),
        *(
            C(f"p{p}_dur", "INTEGER", f"Duration at the {p}th percentile (nearest rank).", unit=TS)
            for p in REPORT_PERCENTILES
        ),
    ),
    indexes=(("dimension", "name"),),
)
# The dimensions subtitles show: more than one value, process and thread aside (they always have).
SHOWN_DIMENSIONS_SQL = (
    "SELECT name FROM track_dimension WHERE name NOT IN ('process', 'thread') GROUP BY name "
    "HAVING count(DISTINCT coalesce(CAST(int_value AS TEXT), string_value)) > 1"
)
_SLICE_DIMENSION_POPULATE = (
    "INSERT INTO report_slice_dimension (dimension, value, name, count, total_dur, self_dur, min_dur, max_dur, "
    + ", ".join(f"p{p}_dur" for p in REPORT_PERCENTILES)
    + ") SELECT dimension, value, name, count(*), sum(d), sum(self), min(d), max(d), "
    + ", ".join(f"max(CASE WHEN rank = {_nearest_rank(p)} THEN d END)" for p in REPORT_PERCENTILES)
    + " FROM (SELECT dimension, value, name, d, self, "
    "row_number() OVER (PARTITION BY dimension, value, name ORDER BY d) - 1 AS rank, "
    "count(*) OVER (PARTITION BY dimension, value, name) - 1 AS last FROM ("
    "SELECT g.name AS dimension, coalesce(CAST(g.int_value AS TEXT), g.string_value) AS value, slice.name AS name, "
    f"{SLICE_DUR} AS d, {_SLICE_SELF} AS self FROM slice JOIN track_dimension g ON g.track_id = slice.track_id "
    f"WHERE g.name IN ({SHOWN_DIMENSIONS_SQL}))) GROUP BY dimension, value, name"
)


def _slice_cells_sql(table: Table, grid_column: str, per: str) -> str:
    """The definition of report_slice_name_cell (`per` "name"), report_slice_track_name_cell ("track": per track
    and name) or report_slice_process_name_cell ("process": per process dimension value and name), each with
    running totals per key: a slice's pieces in the cells it reaches, their time; children's time subtracted from their
    parent's (track or process and) name's self time, cell by cell."""
    key = {"name": "", "track": "track_id, ", "process": "process, "}[per]
    own_key = {
        "name": "",
        "track": "s.track_id, ",
        "process": "(SELECT coalesce(CAST(d.int_value AS TEXT), d.string_value) FROM track_dimension d "
        "WHERE d.track_id = s.track_id AND d.name = 'process') AS process, ",
    }[per]
    same_key = {
        "name": "",
        "track": "children.track_id = own.track_id AND ",
        "process": "children.process IS own.process AND ",
    }[per]
    columns = "starting, open, unfinished_starting, unfinished_open, covered, self_covered, top_covered"
    select = (
        f"SELECT {'own.' + key if key else ''}own.name, own.cell, starting, open, unfinished_starting, "
        "unfinished_open, covered, covered - coalesce(children.time, 0) AS self_covered, top_covered FROM own "
        f"LEFT JOIN children ON {same_key}children.name IS own.name AND children.cell = own.cell"
    )
    totals = ", ".join(f"sum({c}) OVER key_cells" for c in SLICE_CELL_TOTALS)
    columns += ", " + ", ".join(f"cum_{c}" for c in SLICE_CELL_TOTALS)
    select = (
        f"SELECT *, {totals} FROM ({select}) "
        f"WINDOW key_cells AS (PARTITION BY {key}name ORDER BY cell ROWS UNBOUNDED PRECEDING)"
    )
    return (
        f"INSERT INTO {table.name} ({key}name, cell, {columns}) "
        f"WITH RECURSIVE grid AS (SELECT {grid_column} AS g, (SELECT start_ts FROM trace_bounds) AS t0, "
        "(SELECT end_ts FROM trace_bounds) AS t1 FROM report_grid), "
        f"span AS (SELECT {own_key}s.name, s.parent_id IS NULL AS top, p.name AS parent_name, "
        "s.dur < 0 AS unfinished, s.ts AS row_start, CASE WHEN s.dur < 0 THEN t1 ELSE s.ts + s.dur END AS row_end, "
        "(s.ts - t0) / g AS first_cell FROM slice s LEFT JOIN slice p ON p.id = s.parent_id, grid "
        f"WHERE (SELECT count(*) FROM slice) >= {REPORT_NAME_CELL_MIN_SLICES}), "
        "piece AS (SELECT *, first_cell AS cell FROM span UNION ALL "
        f"SELECT {key}name, top, parent_name, unfinished, row_start, row_end, first_cell, cell + 1 FROM piece, grid "
        "WHERE t0 + (cell + 1) * g <= row_end), "
        "timed AS (SELECT piece.*, max(min(row_end, t0 + (cell + 1) * g) - max(row_start, t0 + cell * g), 0) "
        "AS time FROM piece, grid), "
        f"own AS (SELECT {key}name, cell, sum(cell = first_cell) AS starting, sum(cell > first_cell) AS open, "
        "sum(unfinished AND cell = first_cell) AS unfinished_starting, "
        "sum(unfinished AND cell > first_cell) AS unfinished_open, sum(time) AS covered, "
        f"sum(CASE WHEN top THEN time ELSE 0 END) AS top_covered FROM timed GROUP BY {key}name, cell), "
        # A slice's parent is on its track (slices nest per track), so in its process.
        f"children AS (SELECT {key}parent_name AS name, cell, sum(time) AS time FROM timed WHERE NOT top "
        f"GROUP BY {key}parent_name, cell) "
        f"SELECT * FROM ({select}) ORDER BY cell, {key}name"
    )


DERIVED: tuple[Derived, ...] = (
    Derived(
        REPORT_SLICE_NAME,
        "INSERT INTO report_slice_name (name, count, total_dur, max_dur, max_slice_id, unfinished, self_dur) "
        f"SELECT name, count(*), sum(d), max(d), {_LOWEST_LONGEST_ID}, sum(dur < 0), sum(self) "
        f"FROM ({_SLICE_DURS.format(key='name')}) GROUP BY name",
        streamed=True,
    ),
    # Each name's durations ranked in the (name, dur) index's order; the ranks the percentiles need kept.
    Derived(
        REPORT_SLICE_NAME_PERCENTILE,
        "INSERT INTO report_slice_name_percentile (name, min_dur, "
        + ", ".join(f"p{p}_dur" for p in REPORT_PERCENTILES)
        + ") SELECT name, max(CASE WHEN rank = 0 THEN d END), "
        + ", ".join(f"max(CASE WHEN rank = {_nearest_rank(p)} THEN d END)" for p in REPORT_PERCENTILES)
        + f" FROM (SELECT name, {SLICE_DUR} AS d, row_number() OVER (PARTITION BY name ORDER BY {SLICE_DUR}) - 1 "
        "AS rank, "
        "count(*) OVER (PARTITION BY name) - 1 AS last FROM slice) GROUP BY name",
    ),
    # The rows at positions 0, STEP, 2 STEP, ... of each name's finished durations in order; count() over the
    # default frame (up to the last instance of equal duration) is how many last at most that long.
    Derived(
        REPORT_SLICE_NAME_DUR_RANK,
        "INSERT INTO report_slice_name_dur_rank (name, dur, at_most) "
        "SELECT DISTINCT name, dur, at_most FROM (SELECT name, dur, "
        "row_number() OVER (PARTITION BY name ORDER BY dur) - 1 AS position, "
        "count(*) OVER (PARTITION BY name ORDER BY dur) AS at_most FROM slice WHERE dur >= 0 AND name IN "
        f"(SELECT name FROM report_slice_name WHERE count - unfinished >= {REPORT_CELL_MIN_COUNT})) "
        f"WHERE position % {REPORT_RANK_STEP} = 0 ORDER BY name, dur",
    ),
    # The frequent names' finished instances per cell and duration bucket, in traces with report_slice_name_cell.
    Derived(
        REPORT_SLICE_NAME_DUR_CELL,
        "INSERT INTO report_slice_name_dur_cell (name, cell, bucket, count, total_dur) "
        f"SELECT s.name, (s.ts - b.start_ts) / g.name_cell_dur AS cell, {_dur_bucket_sql('s.dur')} AS bucket, count(*), "
        "sum(s.dur) FROM slice s, report_grid g, trace_bounds b "
        f"WHERE (SELECT count(*) FROM slice) >= {REPORT_NAME_CELL_MIN_SLICES} AND s.dur >= 0 AND s.name IN "
        f"(SELECT name FROM report_slice_name WHERE count - unfinished >= {REPORT_DUR_CELL_MIN_COUNT}) "
        "GROUP BY s.name, cell, bucket ORDER BY s.name, cell, bucket",
    ),
    Derived(
        REPORT_TRACK_STATS,
        "INSERT INTO report_track_stats (track_id, event_count, min_value, max_value, sum_value, drops, "
        + ", ".join(f"p{p}_value" for p in REPORT_PERCENTILES)
        + ") SELECT track_id, sum(n), min(lo), max(hi), sum(total), sum(down), "
        + ", ".join(f"max(p{p})" for p in REPORT_PERCENTILES)
        + " FROM (SELECT track_id, count(*) AS n, NULL AS lo, NULL AS hi, NULL AS total, NULL AS down, "
        + ", ".join(f"NULL AS p{p}" for p in REPORT_PERCENTILES)
        + " FROM slice GROUP BY track_id "
        "UNION ALL SELECT track_id, count(*), min(value), max(value), sum(value), coalesce(sum(value < previous), 0), "
        + ", ".join(f"max(CASE WHEN rank = {_nearest_rank(p)} THEN value END)" for p in REPORT_PERCENTILES)
        + " FROM (SELECT track_id, ts, value, lag(value) OVER (PARTITION BY track_id ORDER BY ts, id) AS previous, "
        "row_number() OVER (PARTITION BY track_id ORDER BY value) - 1 AS rank, "
        "count(*) OVER (PARTITION BY track_id) - 1 AS last FROM counter) GROUP BY track_id "
        "UNION ALL SELECT track_id, count(*), NULL, NULL, NULL, NULL, "
        + ", ".join("NULL" for _ in REPORT_PERCENTILES)
        + " FROM state GROUP BY track_id) GROUP BY track_id",
    ),
    # Each sample's integral: the sum of value x time held over the samples before it in its track's (ts, id)
    # order (a NULL value holds 0). total(): 0.0 for a track's first sample.
    Derived(
        REPORT_COUNTER_INTEGRAL,
        "INSERT INTO report_counter_integral (id, integral) "
        "SELECT id, total(held) OVER (PARTITION BY track_id ORDER BY ts, id ROWS UNBOUNDED PRECEDING) FROM ("
        "SELECT id, track_id, ts, coalesce(lag(value) OVER w, 0) * (ts - lag(ts) OVER w) AS held FROM counter "
        "WINDOW w AS (PARTITION BY track_id ORDER BY ts, id)) ORDER BY id",
    ),
    Derived(
        REPORT_COUNTER_CELL,
        "INSERT INTO report_counter_cell (track_id, cell, count, min, max, total) "
        "SELECT c.track_id, (c.ts - b.start_ts) / g.cell_dur AS cell, count(*), min(c.value), max(c.value), "
        "sum(c.value) FROM counter c, report_grid g, trace_bounds b "
        f"WHERE (SELECT count(*) FROM counter) >= {REPORT_COUNTER_CELL_MIN_SAMPLES} "
        "GROUP BY c.track_id, cell ORDER BY c.track_id, cell",
    ),
    # The state classes match report/views/scheduling.py (RUNNABLE, SLEEPING).
    Derived(
        REPORT_THREAD_SCHED,
        # total(), not sum(): exact below 2^53 ns (104 days) and no overflow error on absurd durations.
        "INSERT INTO report_thread_sched (utid, cpu_time, runnable, sleeping) "
        "SELECT utid, total(cpu_time), total(runnable), total(sleeping) FROM ("
        "SELECT utid, CASE WHEN dur < 0 THEN max((SELECT end_ts FROM trace_bounds) - ts, 0) ELSE dur END "
        "AS cpu_time, 0 AS runnable, 0 AS sleeping FROM sched WHERE utid != 0 "
        "UNION ALL SELECT utid, 0, CASE WHEN state IN ('R', 'R+') THEN d ELSE 0 END, "
        "CASE WHEN state IN ('R', 'R+') OR state GLOB '*[XZx]*' THEN 0 ELSE d END FROM ("
        "SELECT utid, state, CASE WHEN dur < 0 THEN max((SELECT end_ts FROM trace_bounds) - ts, 0) ELSE dur END "
        "AS d FROM thread_state WHERE state != 'Running' AND utid != 0)) "
        "GROUP BY utid",
    ),
    # cell_dur: the largest power of ten dividing the smallest 1, 2, 2.5 or 5 x 10^k not below a 20th of
    # the trace (a default timeline's bucket width, report/views/slices.py bucket_range). Slice ids are dense
    # from 0: the last one is the count.
    Derived(
        REPORT_GRID,
        "INSERT INTO report_grid (cell_dur, name_cell_dur, sched_cell_dur, track_name_cell_dur) "
        "WITH RECURSIVE power(v) AS (SELECT 1 UNION ALL SELECT v * 10 FROM power WHERE v < 100000000000000000), "
        "span AS (SELECT max(coalesce((SELECT end_ts - start_ts FROM trace_bounds), 1), 1) AS ns), "
        "bucket AS (SELECT min(p.v * m.c / 10) AS ns FROM power p, span, "
        "(SELECT 10 AS c UNION ALL SELECT 20 UNION ALL SELECT 25 UNION ALL SELECT 50) m "
        "WHERE p.v * m.c % 10 = 0 AND p.v * m.c / 10 >= span.ns / 20.0) "
        "SELECT cell, fine, fine, CASE WHEN coalesce((SELECT max(id) + 1 FROM slice), 0) * cell "
        f"> {TRACK_NAME_FINE_CELL_SLICES} * span.ns THEN fine ELSE cell END "
        "FROM (SELECT max(v) AS cell, max(max(v) / 10, 1) AS fine FROM power, bucket WHERE bucket.ns % power.v = 0), span",
    ),
    Derived(
        REPORT_SLICE_TRACK_NAME,
        "INSERT INTO report_slice_track_name (track_id, name, count, total_dur, max_dur, max_slice_id, unfinished, "
        "self_dur) "
        f"SELECT track_id, name, count(*), sum(d), max(d), {_LOWEST_LONGEST_ID}, sum(dur < 0), sum(self) "
        f"FROM ({_SLICE_DURS.format(key='track_id, name')}) GROUP BY track_id, name",
        streamed=True,
    ),
    # Instances are clipped to the trace, as the timeline clips them to its range.
    Derived(
        REPORT_SLICE_TRACK_CELL,
        "INSERT INTO report_slice_track_cell (name, track_id, cell, count, covered) "
        "SELECT name, track_id, cell, starting, inside FROM ("
        + _cell_split(
            "track_id, name",
            (
                "SELECT s.track_id, s.name, max(s.ts, t0) AS row_start, "
                "min(CASE WHEN s.dur < 0 THEN t1 ELSE s.ts + s.dur END, t1) AS row_end, "
                "(max(s.ts, t0) - t0) / g AS cell FROM slice s, grid WHERE +s.name IN (SELECT name FROM "
                f"report_slice_name WHERE count >= {REPORT_CELL_MIN_COUNT})"
            ),
        )
        + ")",
    ),
    # What report_tables.slice_process_cells and slice_track_cells compute, as their definitions.
    Derived(REPORT_SLICE_NAME_CELL, _slice_cells_sql(REPORT_SLICE_NAME_CELL, "name_cell_dur", "name")),
    # Finished slices only: an unfinished one's self time depends on where its range ends. The size test is a
    # one-row table the rest joins (a WHERE term with a subquery is tested on every row: 0.2-0.4 s for no row at
    # 2.4M slices); slice ids are dense from 0, so the last one is the count. NOT INDEXED: in id order.
    Derived(
        REPORT_SLICE_SELF,
        "INSERT INTO report_slice_self (id, self_dur) SELECT s.id, s.dur - coalesce(c.dur, 0) "
        f"FROM (SELECT 1 WHERE coalesce((SELECT max(id) + 1 FROM slice), 0) < {REPORT_NAME_CELL_MIN_SLICES}) small "
        f"CROSS JOIN slice s NOT INDEXED LEFT JOIN (SELECT parent_id, sum({SLICE_DUR}) AS dur FROM slice "
        "WHERE parent_id IS NOT NULL GROUP BY parent_id) c ON c.parent_id = s.id WHERE s.dur >= 0",
    ),
    Derived(
        REPORT_SLICE_TRACK_NAME_CELL, _slice_cells_sql(REPORT_SLICE_TRACK_NAME_CELL, "track_name_cell_dur", "track")
    ),
    Derived(
        REPORT_SLICE_PROCESS_NAME_CELL,
        _slice_cells_sql(REPORT_SLICE_PROCESS_NAME_CELL, "name_cell_dur", "process"),
    ),
    Derived(
        REPORT_SLICE_PROCESS_NAME,
        "INSERT INTO report_slice_process_name (process, name) "
        "SELECT DISTINCT process, name FROM report_slice_process_name_cell",
    ),
    Derived(
        REPORT_SCHED_CELL,
        "INSERT INTO report_sched_cell (cell, utid, busy) "
        "SELECT cell, utid, inside FROM ("
        + _cell_split(
            "utid",
            (
                "SELECT sc.utid, max(sc.ts, t0) AS row_start, "
                "min(CASE WHEN sc.dur < 0 THEN t1 ELSE sc.ts + sc.dur END, t1) AS row_end, "
                "(max(sc.ts, t0) - t0) / g AS cell FROM sched sc, grid WHERE sc.utid != 0"
            ),
            "sched_cell_dur",
        )
        + ") WHERE inside > 0",
    ),
    Derived(REPORT_SLICE_DIMENSION, _SLICE_DIMENSION_POPULATE),
    Derived(
        REPORT_TRACK_EVENT_CELL,
        TRACK_EVENT_CELLS_SQL.format(large=f"SELECT 1 WHERE {TRACK_EVENTS_SQL} >= {REPORT_TRACK_CELL_MIN_EVENTS}"),
    ),
)


def table(name: str) -> Table:
    return next(t for t in TABLES if t.name == name)
