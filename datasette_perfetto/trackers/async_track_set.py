"""Tracks that share (type, dimensions) and differ only by `track_compressor_idx`
(trace_processor's TrackCompressor), for async slices of proto, JSON and atrace events."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from .track_tracker import TrackTracker

# The cookie of a track that serves slices of no cookie (AsyncTrackSet.for_interval).
_BY_TIME = object()


class AsyncTrackSet:
    """Each track of the set carries one cookie (a descriptor uuid or an async id) at a
    time, so overlapping async slices get separate tracks; a cookie whose slices are all
    closed frees its track for the next cookie. Slices of no cookie (atrace's track
    instants) get tracks of their own, reused once their last slice is over."""

    __slots__ = ("make", "tracks", "cookies", "nesting", "ends")

    def __init__(self, make: Callable[[int, str | None], int]) -> None:
        self.make = make  # (index in the set, name of the event that needs it) -> new track id
        self.tracks: list[int] = []
        self.cookies: list[Hashable] = []
        self.nesting: list[int] = []  # open slices per track; -1 for tracks of no cookie
        self.ends: dict[int, int] = {}  # index of a track of no cookie -> end of its last slice

    def track_for(self, cookie: Hashable, kind: str, name: str | None = None) -> int:
        """kind: begin (nests), end (unnests), instant (both), or begin_once (opens the
        track's only slice, whatever began on it before: atrace's 'S', which never nests)."""
        try:
            i = self.cookies.index(cookie)
        except ValueError:
            # The first idle track, else a new one.
            i = next((j for j, n in enumerate(self.nesting) if n == 0), -1)
            if i >= 0:
                self.cookies[i] = cookie
            else:
                i = self._new(cookie, 0, name)
        if kind == "begin":
            self.nesting[i] += 1
        elif kind == "end" and self.nesting[i] > 0:
            self.nesting[i] -= 1
        elif kind == "begin_once":
            self.nesting[i] = 1
        return self.tracks[i]

    def for_interval(self, ts: int, dur: int, name: str | None = None) -> int:
        """The track of a slice of no cookie: the first such track free at `ts`, else a new one."""
        for i, end in self.ends.items():
            if end <= ts:
                self.ends[i] = ts + dur
                return self.tracks[i]
        i = self._new(_BY_TIME, -1, name)
        self.ends[i] = ts + dur
        return self.tracks[i]

    def default(self) -> int:
        """The set's first track (made if none is yet), e.g. as a parent of child tracks."""
        if not self.tracks:
            self._new(None, 0, None)
        return self.tracks[0]

    def _new(self, cookie: Hashable, nesting: int, name: str | None) -> int:
        i = len(self.tracks)
        self.tracks.append(self.make(i, name))
        self.cookies.append(cookie)
        self.nesting.append(nesting)
        return i


class CompressedTrackSets:
    """trace_processor's TrackCompressor blueprints: one AsyncTrackSet per (type, dimensions),
    whose tracks add a `track_compressor_idx` dimension and share one track_group_id."""

    __slots__ = ("tracks", "new_group", "sets")

    def __init__(self, tracks: TrackTracker, new_group: Callable[[], int]) -> None:
        self.tracks = tracks
        self.new_group = new_group  # () -> a new track_group_id
        self.sets: dict[tuple, AsyncTrackSet] = {}

    def get(self, type: str, dims: tuple, name: str | None, source_args: list | None = None) -> AsyncTrackSet:
        """The set of (type, dims); its tracks are named `name` and carry `source_args` (both as
        the set's first use gives them)."""
        key = (type, dims)
        track_set = self.sets.get(key)
        if track_set is None:
            group = self.new_group()
            tracks = self.tracks

            def make(idx: int, _event_name: str | None) -> int:
                track_id = tracks.create(type, dims + (("track_compressor_idx", idx),), "slice", name)
                row = tracks.row(track_id)
                row.track_group_id = group
                if source_args:
                    row.source_args = list(source_args)
                return track_id

            track_set = self.sets[key] = AsyncTrackSet(make)
        return track_set
