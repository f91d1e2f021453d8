"""A parallel ingest's merge: per-input parts in, the database a serial ingest writes out.

Each job of a parallel ingest (parallel.py) imports one input with a TraceModel of its own into a
database of its own and sends back a `Part`: that database and the model's state (the rows kept in
memory until the end: processes, threads, tracks, machines, CPUs, GPUs, resolved dimensions, the
streamed aggregates, and how many ids of each table it used). `absorb` takes the parts in input
order into the parent's model: ids offset by what the earlier inputs used; the identities inputs
share mapped to the parent's, as a serial ingest would have found them (machines by raw id, their
CPUs and GPUs, the idle process and swapper thread, whose fields the part changed are applied on top
of the earlier inputs'); the part's rows copied by SQL with every id column remapped. The parent then
finishes the database as a serial ingest does (model.finish: processes, threads, tracks,
dimensions, derived tables), so every id, arg set and precomputed table is the serial one.

Which column holds ids of which table is schema.py's declaration (Column.ref): nothing here lists a
table's columns. What is declared here are the model's facts: which
tables are shared identities (`SHARED`), and which values hold ids where the column alone does not
say: track dimensions (`DIMENSION_REFS`, `EFFECTIVE_REFS`), args (`ARG_REFS`), stat indexes
(stats.INDEX_REFS).

A part whose import would have gone differently after the earlier inputs cannot be merged (an input
whose packets all come from one remote machine adopts the host's row only when no earlier input
claimed it): `absorb` raises NotMergeable before changing anything and the caller imports that input
itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from . import schema
from .aggregates import SliceNameAggregates, TimeBounds
from .model import HOST_MACHINE_ID, MAX_CPUS_PER_MACHINE, TraceModel
from .stats import INDEX_REFS
from .storage import TraceStorage
from .trackers.args_translation import MOJO_MAPPING_ID
from .trackers.dimension_tracker import SOURCE_SYNTHESIZED

# Model registries: attribute of TraceModel -> the table its rows are written to.
REGISTRIES = {
    "machines": "machine",
    "cpus": "cpu",
    "gpus": "gpu",
    "processes": "process",
    "threads": "thread",
    "tracks": "track",
}
# What a TraceModel and its TraceStorage hold across inputs, and how absorb takes a part's: the
# registries above row by row; machine_ids through the machines; track_dimensions remapped;
# the trace clock as serial's (the first input's to set one; a part that converted its clock, or would
# have, against another is imported again: NotMergeable); next_id offset; the streamed aggregates
# absorbed; buffers flushed and the arg-set cache emptied at each input (storage.forget_arg_sets);
# storage and writer the model's own.
# A new attribute must be merged too (tests/test_jobs_ingest.py checks this list is complete).
CLOCK_STATE = ("trace_clock", "clock_snapshots", "clock_users")
MODEL_STATE = frozenset({*REGISTRIES, "machine_ids", "track_dimensions", "storage", *CLOCK_STATE})
STORAGE_STATE = frozenset({"next_id", "time_bounds", "slice_names", "_buffers", "_arg_sets", "writer"})
# Tables whose rows every input shares by identity rather than adds to (found by raw machine id,
# by machine and index): their ids are mapped, not offset.
SHARED = frozenset({"machine", "cpu", "gpu"})
# Track dimensions (TrackRow.dims) whose values are ids, and resolved dimensions (track_dimension).
# Keyed by dimension name, or (track type, name) where the name means an id for that type only.
DIMENSION_REFS: dict[Any, str] = {
    "utid": "thread",
    "upid": "process",
    "ugpu": "gpu",
    "perf_session_id": "profiler_session",
    ("stack_sample_cpu_counter", "session_id"): "profiler_session",
    ("stack_sample_session_counter", "session_id"): "profiler_session",
}
EFFECTIVE_REFS = {"machine": "machine", "process": "process", "thread": "thread"}
# Args whose value is an id (trace_processor's own keys for them), in the args table and in the arg
# lists model rows keep until the end.
ARG_REFS = {
    "utid": "thread",
    "end_utid": "thread",
    "legacy_event.passthrough_utid": "thread",
    "upid": "process",
    MOJO_MAPPING_ID: "stack_profile_mapping",  # a mojo method's native symbol (args_translation.py)
}
# Columns whose table depends on another column of the row: (table, column) -> (that column, its
# value -> the table). A stat's index is a upid for heap graph stats, a CPU or buffer number for most.
KEYED_REFS = {("stats", "idx"): ("name", INDEX_REFS), ("args", "int_value"): ("key", ARG_REFS)}
# Where a part's own ids begin when it is not the first input: in a serial ingest a later input's ids
# never start at 0, and an importer may treat an absolute id specially (trace_processor's "end
# whatever is open on track 0"), so a part numbers its rows clear of them too.
PART_ID_BASE = 1 << 40


class NotMergeable(Exception):
    """The part's import depended on what earlier inputs did; str() says how."""


@dataclass
class Part:
    """One input imported by a job: its database (a path on a shared disk, or the file's bytes from
    a remote worker) and its model's state."""

    summary: Any  # ingest.TraceSummary
    database: str | None
    data: bytes | None
    first_id: dict[str, int]  # per table, the first id the part allocated
    next_id: dict[str, int]
    registries: dict[str, Any]  # REGISTRIES attribute -> the part model's value (shared rows as plain rows)
    assigned: dict[tuple[str, Any], set[str]]  # (registry, key) of a shared row -> the fields the part set
    track_dimensions: dict[int, list]
    time_bounds: TimeBounds
    slice_names: SliceNameAggregates
    trace_clock: int | None = None
    clock_snapshots: list = field(default_factory=list)
    clock_users: int = 0

    @classmethod
    def of(
        cls, model: TraceModel, first_id: dict[str, int], summary: Any, database: str | None, data: bytes | None = None
    ) -> Part:
        """The part `model` (made by part_model, which gave `first_id`) holds, once its input is imported."""
        s = model.storage
        registries: dict[str, Any] = {}
        assigned: dict[tuple[str, Any], set[str]] = {}
        for name in REGISTRIES:
            rows = getattr(model, name)
            items = enumerate(rows) if isinstance(rows, list) else rows.items()
            plain = {key: _plain(row, assigned, (name, key)) for key, row in items}
            registries[name] = list(plain.values()) if isinstance(rows, list) else plain
        return cls(
            summary,
            database,
            data,
            first_id,
            dict(s.next_id),
            registries,
            assigned,
            model.track_dimensions,
            s.time_bounds,
            s.slice_names,
            model.trace_clock,
            model.clock_snapshots,
            model.clock_users,
        )


def fresh_model() -> TraceModel:
    """The state every part's model starts from (nothing written)."""
    return TraceModel(TraceStorage(None))


def part_model(model: TraceModel, index: int) -> dict[str, int]:
    """Makes a job's new `model` import input number `index` as a part: its own ids start clear of the
    earlier inputs' (PART_ID_BASE), and its shared rows (machines, CPUs, GPUs, the idle process and
    swapper thread) remember which fields the import sets, so the merge applies those on top of the
    earlier inputs' as the serial import would have. Returns the first id the part will allocate in
    each table."""
    s = model.storage
    if index > 0:
        for t in schema.TABLES:
            if t.name not in SHARED:
                s.next_id[t.name] = max(s.next_id[t.name], PART_ID_BASE)
    first_id = dict(s.next_id)
    machines = _RecordingList()
    for m in model.machines:
        machines.append(m)
    model.machines = machines
    model.cpus = _RecordingDict()
    model.gpus = _RecordingDict()
    model.processes[0] = _recording(model.processes[0])
    model.threads[0] = _recording(model.threads[0])
    return first_id


class _Assigning:
    """A shared row that remembers which of its fields were set (in `assigned`, kept in __dict__)."""

    def __setattr__(self, name: str, value: Any) -> None:
        self.__dict__["assigned"].add(name)
        super().__setattr__(name, value)


_RECORDING: dict[type, type] = {}


def _recording(row: Any) -> Any:
    cls = type(row)
    if isinstance(row, _Assigning):
        return row
    sub = _RECORDING.get(cls)
    if sub is None:
        sub = _RECORDING[cls] = type(f"Recording{cls.__name__}", (_Assigning, cls), {})
    copy: Any = object.__new__(sub)
    copy.__dict__["assigned"] = set()
    for f in dataclasses.fields(row):
        object.__setattr__(copy, f.name, getattr(row, f.name))
    return copy


def _plain(row: Any, assigned: dict, key: tuple) -> Any:
    """A recording row as its plain dataclass (picklable), its assigned fields into `assigned`."""
    if not isinstance(row, _Assigning):
        return row
    row = cast(Any, row)
    assigned[key] = set(row.__dict__["assigned"])
    cls = next(c for c in type(row).__mro__ if dataclasses.is_dataclass(c) and not issubclass(c, _Assigning))
    return cls(**{f.name: getattr(row, f.name) for f in dataclasses.fields(row)})


class _RecordingList(list):
    def append(self, row: Any) -> None:
        super().append(_recording(row))


class _RecordingDict(dict):
    def __setitem__(self, key: Any, row: Any) -> None:
        super().__setitem__(key, _recording(row))


class Remap:
    """How a part's ids of one table become the parent's: a value, and the same as SQL."""

    def __init__(
        self, reserved: int = 0, delta: int = 0, mapping: dict[int, int] | None = None, machines: Remap | None = None
    ) -> None:
        self.reserved = reserved  # ids below it are the shared ones every model starts with
        self.delta = delta
        self.mapping = {k: v for k, v in (mapping or {}).items() if k != v}
        self.machines = machines  # ucpu: machine id * MAX_CPUS_PER_MACHINE + cpu

    def __call__(self, value: Any) -> Any:
        if value is None:
            return None
        if self.machines is not None:
            machine, cpu = divmod(value, MAX_CPUS_PER_MACHINE)
            return self.machines(machine) * MAX_CPUS_PER_MACHINE + cpu
        if self.mapping or self.reserved == self.delta == 0:
            return self.mapping.get(value, value)
        return value if value < self.reserved else value + self.delta

    def sql(self, column: str) -> str:
        if self.machines is not None:
            if not self.machines.mapping:
                return column
            cases = " ".join(
                f"WHEN {a} THEN {(b - a) * MAX_CPUS_PER_MACHINE}" for a, b in sorted(self.machines.mapping.items())
            )
            return f"{column} + (CASE {column} / {MAX_CPUS_PER_MACHINE} {cases} ELSE 0 END)"
        if self.mapping:
            cases = " ".join(f"WHEN {a} THEN {b}" for a, b in sorted(self.mapping.items()))
            return f"(CASE {column} {cases} ELSE {column} END)"
        if not self.delta:
            return column
        if not self.reserved:
            return f"{column} + {self.delta}"
        return f"(CASE WHEN {column} < {self.reserved} THEN {column} ELSE {column} + {self.delta} END)"


def column_ref(column: schema.Column) -> str | None:
    """The table whose ids `column` holds, as schema.py declares it (Column.ref)."""
    return column.ref


def _id_fields(table: schema.Table) -> set[str]:
    """A table's id column and its aliases (process.upid, cpu.ucpu, ...): a row's own id."""
    return {"id"} | {c.name for c in table.columns if c.generated == "id"}


def _field_refs(table_name: str) -> dict[str, str]:
    """Model row field -> the table whose ids it holds, from the table's declaration."""
    table = schema.table(table_name)
    refs = {c.name: ref for c in table.columns if (ref := column_ref(c))}
    refs.update((name, table_name) for name in _id_fields(table))
    return refs


def _remapped(row: Any, table_name: str, remaps: dict[str, Remap]) -> Any:
    """A copy of a model row (a dataclass) with every id field remapped, ids in its args too."""
    changes = {
        name: remaps[ref](getattr(row, name))
        for name, ref in _field_refs(table_name).items()
        if hasattr(row, name) and getattr(row, name) is not None
    }
    for f in dataclasses.fields(row):
        value = getattr(row, f.name)
        if f.name.endswith("args") and value:
            changes[f.name] = _remapped_args(value, remaps)
    return dataclasses.replace(row, **changes) if changes else row


def _dimension_value(track_type: str, name: str, value: Any, remaps: dict[str, Remap]) -> Any:
    ref = DIMENSION_REFS.get((track_type, name)) or DIMENSION_REFS.get(name)
    return remaps[ref](value) if ref is not None and isinstance(value, int) else value


def _remapped_args(args: Any, remaps: dict[str, Remap]) -> Any:
    """A list or dict of storage.Arg tuples (flat_key, key, type, value), ids among the values remapped."""

    def arg(a: tuple) -> tuple:
        ref = ARG_REFS.get(a[1])
        return a if ref is None or not isinstance(a[3], int) else (*a[:3], remaps[ref](a[3]))

    if isinstance(args, dict):
        return {k: arg(a) for k, a in args.items()}
    return [arg(a) for a in args]


def _apply_changes(target: Any, changed: Any, assigned: set[str], skip: set[str]) -> None:
    """Applies to a shared row what a part's import did to it, as it would have done it on top of the
    earlier inputs': the fields it set; a name only from a source at least as strong as the one that
    named it (process_tracker's name priorities: exact, as each import only raises a priority); args
    added key by key (a dict) or to the end (a list) unless it set them whole."""
    for f in dataclasses.fields(target):
        name = f.name
        if name in skip or name == "name_priority":
            continue
        value = getattr(changed, name)
        if name == "name" and hasattr(target, "name_priority"):
            if "name" in assigned and changed.name_priority >= target.name_priority:
                target.name, target.name_priority = value, changed.name_priority
        elif name == "args" and name not in assigned:
            if isinstance(value, dict):
                target.args.update(value)
            else:
                target.args.extend(value)
        elif name in assigned:
            setattr(target, name, value)


def absorb(model: TraceModel, part: Part, attach: Callable[[], str]) -> None:
    """Merges `part` (the next input in order) into `model`. `attach()` gives the path of the part's
    database once the merge can no longer fail for NotMergeable."""
    fresh = fresh_model()
    if part.clock_users and model.trace_clock not in (None, part.trace_clock):
        raise NotMergeable("its timestamps are on another clock than the trace time earlier inputs set")
    machine_map = _machine_map(model, part)  # raises NotMergeable before anything changed
    s = model.storage
    remaps: dict[str, Remap] = {}
    for t in schema.TABLES:
        remaps[t.name] = Remap(fresh.storage.next_id[t.name], s.next_id[t.name] - part.first_id[t.name])
    remaps["trace_file"] = Remap()  # a part's trace_file ids are planned: its input's already
    machines = remaps["machine"] = Remap(mapping=machine_map)
    remaps["cpu"] = Remap(machines=machines)
    assigned = part.assigned
    skip = {"id", "raw_id"}
    for m in part.registries["machines"]:
        _apply_changes(model.machines[machine_map[m.id]], m, assigned.get(("machines", m.id), set()), skip)
    gpu_map: dict[int, int] = {}
    for (machine, index), g in sorted(part.registries["gpus"].items(), key=lambda kv: kv[1].ugpu):
        key = (machines(machine), index)
        mine = model.gpus.get(key)
        if mine is None:
            # A GPU new to the model gets the next id, in the order the part met its GPUs.
            mine = model.gpus[key] = dataclasses.replace(g, ugpu=s.reserve_id("gpu"), machine_id=key[0])
        else:
            _apply_changes(mine, g, assigned.get(("gpus", (machine, index)), set()), {"ugpu", "gpu", "machine_id"})
        gpu_map[g.ugpu] = mine.ugpu
    remaps["gpu"] = Remap(mapping=gpu_map)
    for ucpu, c in part.registries["cpus"].items():
        target = remaps["cpu"](ucpu)
        known = model.cpus.get(target)
        if known is None:
            model.cpus[target] = _remapped(c, "cpu", remaps)
        else:
            _apply_changes(known, c, assigned.get(("cpus", ucpu), set()), {"ucpu", "cpu", "machine_id"})
    # Processes, threads, tracks: the part's own are new rows; the reserved ones (upid/utid 0) are shared.
    for name, table in (("processes", "process"), ("threads", "thread"), ("tracks", "track")):
        own: dict = getattr(model, name)
        initial: dict = getattr(fresh, name)
        id_field = "upid" if table == "process" else "utid" if table == "thread" else "id"
        for key, row in part.registries[name].items():
            row = _remapped(row, table, remaps)
            if key in initial:
                _apply_changes(own[key], row, assigned.get((name, key), set()), {id_field, "pid", "tid"})
                continue
            if table == "track":
                row.dims = tuple((k, _dimension_value(row.type, k, v, remaps)) for k, v in row.dims)
            own[getattr(row, id_field)] = row
    _absorb_dimensions(model, part, remaps)
    s.time_bounds.absorb(part.time_bounds)
    s.slice_names.absorb(part.slice_names, remaps["track"], remaps["slice"].delta)
    _copy_rows(model, attach(), remaps)
    if part.trace_clock is not None:
        model.set_trace_clock(part.trace_clock, part.clock_snapshots)
    model.clock_users += part.clock_users
    for t in schema.TABLES:
        if t.name not in SHARED:
            s.next_id[t.name] += part.next_id[t.name] - part.first_id[t.name]


def _machine_map(model: TraceModel, part: Part) -> dict[int, int]:
    """The part's machine ids -> the model's, creating the rows of machines new to it. The host is the
    host; another machine is found by its raw id, as model.machine_for would have found it."""
    machines = part.registries["machines"]
    adopted = machines[HOST_MACHINE_ID].raw_id
    if adopted != 0:
        host = model.machines[HOST_MACHINE_ID]
        if host.raw_id != 0 or adopted in model.machine_ids:
            raise NotMergeable(f"its packets come from machine {adopted}, whose row an earlier input decided")
    for m in machines[1:]:
        if model.machine_ids.get(m.raw_id) == HOST_MACHINE_ID:
            raise NotMergeable(f"machine {m.raw_id} is the host of an earlier input")
    if adopted != 0:
        model.adopt_machine(adopted)
    mapping = {HOST_MACHINE_ID: HOST_MACHINE_ID}
    for m in machines[1:]:
        mapping[m.id] = model.machine_for(m.raw_id)
    return mapping


def _absorb_dimensions(model: TraceModel, part: Part, remaps: dict[str, Remap]) -> None:
    """The part's resolved track dimensions, with ids remapped; the synthesized names of shared rows
    (machine, GPU, the idle process) as the model has them now, as resolve_trace read them."""
    track = remaps["track"]
    for track_id, dims in part.track_dimensions.items():
        mine = track(track_id)
        machine_id = model.tracks[mine].machine_id
        out = []
        for e in dims:
            e = dataclasses.replace(e, declaring_track_id=track(e.declaring_track_id))
            if e.name in EFFECTIVE_REFS and isinstance(e.value, int):
                e.value = remaps[EFFECTIVE_REFS[e.name]](e.value)
            if e.source == SOURCE_SYNTHESIZED:
                e.display_name = _synthesized_name(model, e.name, e.value, machine_id, e.display_name)
            out.append(e)
        model.track_dimensions[mine] = out


def _synthesized_name(model: TraceModel, name: str, value: Any, machine_id: int, current: str | None) -> str | None:
    if name == "machine":
        return model.machines[value].name if 0 <= value < len(model.machines) else None
    if name == "gpu":
        gpu = model.gpus.get((machine_id, value))
        return gpu.name if gpu is not None else None
    if name == "process" and value in model.processes:
        return model.processes[value].name
    if name == "thread" and value in model.threads:
        return model.threads[value].name
    return current


def _column_sql(table: str, column: str, refs: dict[str, str], remaps: dict[str, Remap]) -> str:
    if column in refs:
        return remaps[refs[column]].sql(f"[{column}]")
    keyed = KEYED_REFS.get((table, column))
    if keyed is None:
        return f"[{column}]"
    by, tables = keyed
    cases = []
    for value, ref in sorted(tables.items()):
        expression = remaps[ref].sql(f"[{column}]")
        if expression != f"[{column}]":
            cases.append(f"WHEN '{value}' THEN {expression}")
    return f"(CASE [{by}] {' '.join(cases)} ELSE [{column}] END)" if cases else f"[{column}]"


def _copy_rows(model: TraceModel, path: str, remaps: dict[str, Remap]) -> None:
    """Every row of the part's database into the model's, each id column remapped (by the model's
    writer, after the rows it holds: a part's rows follow the earlier inputs' as a serial ingest
    writes them). Returns once they are copied, so the part's file can go."""
    s = model.storage
    s.execute("COMMIT")  # SQLite attaches a database only outside a transaction
    s.execute("ATTACH DATABASE ? AS part", (path,))
    s.execute("BEGIN")
    for t in schema.TABLES:
        columns = t.stored_columns
        refs = {c.name: ref for c in t.columns if (ref := column_ref(c))}
        refs.update((name, t.name) for name in _id_fields(t) if name in columns)
        select = ", ".join(_column_sql(t.name, c, refs, remaps) for c in columns)
        s.execute(
            f"INSERT INTO main.[{t.name}] ({', '.join(f'[{c}]' for c in columns)}) "
            f"SELECT {select} FROM part.[{t.name}] ORDER BY rowid"
        )
    s.execute("COMMIT")
    s.execute("DETACH DATABASE part")
    s.execute("BEGIN")
    s.query("SELECT 1")  # waits for the writer (a child process for large inputs)


__all__ = ["Part", "Remap", "absorb", "NotMergeable", "fresh_model", "SHARED", "DIMENSION_REFS", "EFFECTIVE_REFS"]
