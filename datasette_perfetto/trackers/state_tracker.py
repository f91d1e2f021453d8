"""Owns the `state` table: each state track holds one open state at a time, which
the next update on the track ends (trace_processor's StateTracker)."""

from __future__ import annotations

from ..storage import Arg, TraceStorage

STILL_OPEN = -1


class StateTracker:
    def __init__(self, storage: TraceStorage) -> None:
        self.storage = storage
        self._open: dict[int, list] = {}  # track -> [id, ts, category, value, args]

    def update(
        self,
        ts: int,
        track_id: int,
        value: str | None,
        category: str | None = None,
        args: list[Arg] | None = None,
    ) -> None:
        """Ends the track's open state at `ts` and opens `value` (None opens nothing)."""
        current = self._open.pop(track_id, None)
        if current is not None:
            self._write(current, track_id, ts - current[1])
        if value is not None:
            self._open[track_id] = [self.storage.reserve_id("state"), ts, category, value, args]

    def _write(self, state: list, track_id: int, dur: int) -> None:
        sid, ts, category, value, args = state
        self.storage.write(
            "state", (sid, ts, dur, track_id, category, value, self.storage.arg_set(args) if args else None)
        )

    def finish(self) -> None:
        for track_id, state in sorted(self._open.items()):
            self._write(state, track_id, STILL_OPEN)
        self._open.clear()
