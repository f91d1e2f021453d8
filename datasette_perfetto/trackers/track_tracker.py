"""Owns track identity: (type, dimensions) → one track, as trace_processor interns them.

Track rows stay in memory until the import ends (there are few, and names,
parents and source args can arrive after a track is created).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..storage import Arg, TraceStorage


@dataclass(slots=True, eq=False)
class TrackRow:
    id: int
    type: str
    dims: tuple  # ((name, value), ...) in blueprint order
    event_type: str
    machine_id: int
    trace_id: int
    name: str | None = None
    parent_id: int | None = None
    source_args: list[Arg] = field(default_factory=list)
    counter_unit: str | None = None
    utid: int | None = None
    upid: int | None = None
    track_group_id: int | None = None


def dimension_args(dims: tuple) -> list[Arg]:
    out: list[Arg] = []
    for key, value in dims:
        if value is None:
            out.append((key, key, "null", None))
        elif isinstance(value, str):
            out.append((key, key, "string", value))
        else:
            out.append((key, key, "int", value))
    return out


class TrackTracker:
    def __init__(self, storage: TraceStorage, tracks: dict[int, TrackRow], trace_id: int, machine_id: int = 0) -> None:
        self.storage = storage
        self.tracks = tracks  # shared across traces in the database
        self.trace_id = trace_id
        self.machine_id = machine_id
        self._interned: dict[tuple, int] = {}

    def intern(
        self, type: str, dims: tuple, event_type: str = "slice", name: str | None = None, unit: str | None = None
    ) -> int:
        """The track for (type, dims), created on first use."""
        key = (type, dims)
        track_id = self._interned.get(key)
        if track_id is not None:
            return track_id
        track_id = self.create(type, dims, event_type, name, unit)
        self._interned[key] = track_id
        return track_id

    def create(
        self, type: str, dims: tuple, event_type: str = "slice", name: str | None = None, unit: str | None = None
    ) -> int:
        row = TrackRow(self.storage.reserve_id("track"), type, dims, event_type, self.machine_id, self.trace_id)
        row.name = name
        row.counter_unit = unit
        for key, value in dims:
            if key == "utid":
                row.utid = value
            elif key == "upid":
                row.upid = value
        self.tracks[row.id] = row
        return row.id

    def row(self, track_id: int) -> TrackRow:
        return self.tracks[track_id]


def write_tracks(storage: TraceStorage, tracks: dict[int, TrackRow]) -> None:
    for row in sorted(tracks.values(), key=lambda r: r.id):
        dim_set = storage.arg_set(dimension_args(row.dims)) if row.dims else None
        source_set = storage.arg_set(row.source_args) if row.source_args else None
        storage.write(
            "track",
            (
                row.id,
                row.name,
                row.type,
                dim_set,
                row.parent_id,
                source_set,
                row.machine_id,
                row.track_group_id,
                row.event_type,
                row.counter_unit,
                row.utid,
                row.upid,
                row.trace_id,
            ),
        )
