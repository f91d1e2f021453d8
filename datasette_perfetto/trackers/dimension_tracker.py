"""Track dimensions (RFC 0039): declarations in, one resolved relation out.

Importers record *declarations* — a named, typed value declared on a process,
a thread, or a set of tracks (a descriptor's track and its `parent_uuid`
descendants). Well-known dimensions (machine, gpu, cpu, process, thread) are
synthesized from what the import already knows. After the import,
`write_dimensions` resolves every track's effective dimensions in one generic
pass and writes `track_dimension`, the `dimension` registry and
`track_subtitle`:

1. a process declaration applies to every track of the process and of its threads;
2. a thread declaration applies to the thread's tracks;
3. a track declaration applies to that track and its descendants;
4. so a global track gets only its own or its ancestors' declarations, plus
   the synthesized well-known dimensions;
5. declarations apply ancestors first (process, thread, then the descriptor
   tree from the root down): repeating an inherited name with the same typed
   value is deduplicated (the row keeps the ancestor as declaring track), a
   different value is not applied and is counted (`dimension_conflicting_value`).

Synthesized dimensions have no declaring track (declaring_track_id NULL).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from ..stats import Stats
from ..storage import TraceStorage
from .machine_tracker import CpuRow, GpuRow, MachineRow
from .process_tracker import ProcessRow, ThreadRow
from .track_tracker import TrackRow

Value = int | str

WELL_KNOWN = ("machine", "gpu", "cpu", "process", "thread")
LABEL_TEMPLATES = {
    "machine": "machine %d",
    "gpu": "GPU %d",
    "cpu": "cpu %d",
    "process": "process %d",
    "thread": "thread %d",
}
# Subtitle order: machine, gpu, cpu, then custom names alphabetically; process and
# thread never show (tracks are already grouped by them).
_SUBTITLE_RANK = {"machine": 0, "gpu": 1, "cpu": 2}
_NOT_IN_SUBTITLES = frozenset(("process", "thread"))
SUBTITLE_SEPARATOR = " · "

# Sources of a declaration (track_dimension.source).
SOURCE_SYNTHESIZED = "synthesized"  # well-known, from the import context
SOURCE_DESCRIPTOR = "track_descriptor"  # TrackDescriptor.dimensions
SOURCE_DISTRIBUTED_INFO = "distributed_info"  # PyTorch JSON distributedInfo


def label_template(name: str) -> str:
    return LABEL_TEMPLATES.get(name) or name.replace("%", "%%") + " %d"


@dataclass(slots=True, eq=False)
class Declaration:
    """One declared dimension value; identity (not value) is what a conflict is counted against."""

    name: str
    value: Value
    display_name: str | None
    declaring_track_id: int | None
    source: str
    stats: Stats


class DimensionDeclarations:
    """The custom declarations one trace context made, by what they are declared on."""

    def __init__(self, stats: Stats) -> None:
        self.stats = stats
        self.by_process: dict[int, list[Declaration]] = {}
        self.by_thread: dict[int, list[Declaration]] = {}
        self.by_track: dict[int, list[tuple[int, Declaration]]] = {}  # track id -> (tree depth, declaration)

    def _new(
        self, name: str, value: Value, display_name: str | None, declaring_track_id: int | None, source: str
    ) -> Declaration | None:
        if name in LABEL_TEMPLATES:
            self.stats.inc("dimension_reserved_name")
            return None
        return Declaration(name, value, display_name, declaring_track_id, source, self.stats)

    def on_owner(
        self,
        scope: str,
        owner: int,
        name: str,
        value: Value,
        display_name: str | None = None,
        declaring_track_id: int | None = None,
        source: str = SOURCE_DESCRIPTOR,
    ) -> None:
        """A declaration on a process (`scope` "process", `owner` its upid) or a thread ("thread", a utid)."""
        d = self._new(name, value, display_name, declaring_track_id, source)
        if d is not None:
            (self.by_thread if scope == "thread" else self.by_process).setdefault(owner, []).append(d)

    def on_tracks(
        self,
        track_ids: Iterable[int],
        depth: int,
        name: str,
        value: Value,
        display_name: str | None,
        declaring_track_id: int | None,
        source: str = SOURCE_DESCRIPTOR,
    ) -> None:
        """A declaration on a track that also holds for `track_ids` (its descendants);
        `depth` orders it after the declarations of its ancestors."""
        d = self._new(name, value, display_name, declaring_track_id, source)
        if d is not None:
            for track_id in track_ids:
                self.by_track.setdefault(track_id, []).append((depth, d))


def same_value(a: Value, b: Value) -> bool:
    """Typed equality: the integer 3 and the string "3" are different values."""
    return type(a) is type(b) and a == b


# -- resolution ------------------------------------------------------------------


class DimensionSources(Protocol):
    """What the resolution reads and writes of the database-wide state (model.TraceModel,
    which calls this module: a structural type, so this module does not import it)."""

    storage: TraceStorage
    machines: list[MachineRow]
    cpus: dict[int, CpuRow]
    gpus: dict[tuple[int, int], GpuRow]
    processes: dict[int, ProcessRow]
    threads: dict[int, ThreadRow]
    tracks: dict[int, TrackRow]
    track_dimensions: dict[int, list[_Effective]]


@dataclass(slots=True, eq=False)
class _Effective:
    name: str
    value: Value
    display_name: str | None
    declaring_track_id: int | None
    is_inherited: int
    is_well_known: int
    source: str


def _sort_key(value: Value) -> tuple:
    # Ordered by type (integers first), then value.
    return (1, value) if isinstance(value, str) else (0, value)


def resolve_trace(model: DimensionSources, trace_id: int, declarations: Iterable[DimensionDeclarations]) -> None:
    """The effective dimensions of every track of one input file (once its import is
    complete, before its stats are written), well-known first, then custom ones in
    the order they apply (`declarations`: the file's, per machine); kept in
    model.track_dimensions until the database is written."""
    by_process: dict[int, list[Declaration]] = {}
    by_thread: dict[int, list[Declaration]] = {}
    by_track: dict[int, list[tuple[int, Declaration]]] = {}
    for source in declarations:
        for process, decls in source.by_process.items():
            by_process.setdefault(process, []).extend(decls)
        for thread, decls in source.by_thread.items():
            by_thread.setdefault(thread, []).extend(decls)
        for track_id, track_decls in source.by_track.items():
            by_track.setdefault(track_id, []).extend(track_decls)
    machines = {m.id: m for m in model.machines}
    gpus_by_ugpu = {g.ugpu: g for g in model.gpus.values()}
    gpu_names = {(g.machine_id, g.gpu): g.name for g in model.gpus.values()}
    conflicts_counted: set[int] = set()
    out = model.track_dimensions
    for track in sorted(model.tracks.values(), key=lambda t: t.id):
        if track.trace_id != trace_id or track.id in out:
            continue
        tid = track.id
        machine = machines.get(track.machine_id)
        eff: dict[str, _Effective] = {
            "machine": _Effective(
                "machine", track.machine_id, machine.name if machine else None, None, 0, 1, SOURCE_SYNTHESIZED
            )
        }
        dims = dict(track.dims)
        gpu = dims.get("gpu")
        if gpu is None and dims.get("ugpu") in gpus_by_ugpu:
            gpu = gpus_by_ugpu[dims["ugpu"]].gpu
        if isinstance(gpu, int):
            eff["gpu"] = _Effective("gpu", gpu, gpu_names.get((track.machine_id, gpu)), None, 0, 1, SOURCE_SYNTHESIZED)
        cpu = dims.get("cpu")
        if isinstance(cpu, int):
            eff["cpu"] = _Effective("cpu", cpu, None, None, 0, 1, SOURCE_SYNTHESIZED)
        utid: int | None = track.utid
        upid: int | None = track.upid
        if upid is None and utid is not None and utid in model.threads:
            upid = model.threads[utid].upid
        if upid is not None and upid in model.processes:
            eff["process"] = _Effective("process", upid, model.processes[upid].name, None, 0, 1, SOURCE_SYNTHESIZED)
        if utid is not None and utid in model.threads:
            eff["thread"] = _Effective("thread", utid, model.threads[utid].name, None, 0, 1, SOURCE_SYNTHESIZED)
        declared: list[Declaration] = []
        if upid is not None:
            declared.extend(by_process.get(upid, ()))
        if utid is not None:
            declared.extend(by_thread.get(utid, ()))
        on_track = by_track.get(tid)
        if on_track:
            declared.extend(d for _, d in sorted(on_track, key=lambda item: item[0]))
        for d in declared:
            current = eff.get(d.name)
            if current is None:
                eff[d.name] = _Effective(
                    d.name, d.value, d.display_name, d.declaring_track_id, int(d.declaring_track_id != tid), 0, d.source
                )
            elif not same_value(current.value, d.value) and id(d) not in conflicts_counted:
                # An override of an inherited (or already declared) value: not applied.
                conflicts_counted.add(id(d))
                d.stats.inc("dimension_conflicting_value")
        out[tid] = list(eff.values())


def write_dimensions(model: DimensionSources) -> None:
    """track_dimension, dimension and track_subtitle, from the resolved dimensions."""
    storage = model.storage
    effective = model.track_dimensions
    tracks = model.tracks
    machines = {m.id: m for m in model.machines}
    # Gap-free numbering per (source trace, machine, name), values ordered by type
    # then value. The machine dimension is its machine's label_index: a machine is
    # its own partition, so its number comes from the machine table, as the
    # trace_processor UI numbers machines.
    values: dict[tuple, set] = {}
    distinct: dict[str, set] = {}
    for track_id, dims in effective.items():
        t = tracks[track_id]
        for e in dims:
            values.setdefault((t.trace_id, t.machine_id, e.name), set()).add(_sort_key(e.value))
            distinct.setdefault(e.name, set()).add(_sort_key(e.value))
    # A machine's CPUs and GPUs are values of those dimensions even where no track has
    # them, so "cpu 3" is CPU 3 whenever the trace knows every CPU of the machine.
    known = {("cpu", c.machine_id, c.cpu) for c in model.cpus.values()}
    known.update(("gpu", g.machine_id, g.gpu) for g in model.gpus.values())
    for (_trace_id, machine_id, name), vs in values.items():
        if name in ("cpu", "gpu"):
            vs.update(_sort_key(v) for n, m, v in known if n == name and m == machine_id)
    index: dict[tuple, dict[tuple, int]] = {key: {v: i for i, v in enumerate(sorted(vs))} for key, vs in values.items()}
    shown = {name for name, vs in distinct.items() if len(vs) > 1 and name not in _NOT_IN_SUBTITLES}
    custom_names: set[str] = set()
    for track_id in sorted(effective):
        t = tracks[track_id]
        labels = []
        for e in effective[track_id]:
            if e.name == "machine":
                m = machines.get(e.value) if isinstance(e.value, int) else None
                n = m.label_index if m is not None else 0
            else:
                n = index[(t.trace_id, t.machine_id, e.name)][_sort_key(e.value)]
            label = e.display_name if e.display_name else label_template(e.name) % n
            is_int = isinstance(e.value, int)
            storage.write(
                "track_dimension",
                (
                    track_id,
                    e.name,
                    "int" if is_int else "string",
                    e.value if is_int else None,
                    None if is_int else e.value,
                    e.display_name,
                    e.declaring_track_id,
                    e.is_inherited,
                    e.is_well_known,
                    label,
                    n,
                    e.source,
                ),
            )
            if not e.is_well_known:
                custom_names.add(e.name)
            if e.name in shown:
                labels.append((_SUBTITLE_RANK.get(e.name, 3), e.name, label))
        storage.write("track_subtitle", (track_id, SUBTITLE_SEPARATOR.join(label for *_, label in sorted(labels))))
    for name in WELL_KNOWN:
        storage.write("dimension", (name, 1, LABEL_TEMPLATES[name]))
    for name in sorted(custom_names):
        storage.write("dimension", (name, 0, label_template(name)))
