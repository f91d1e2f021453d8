"""Figures kept while rows are written, so the end of an import need not scan
the tables for them: trace bounds, and the per-name slice aggregates the
report pages read (schema.Derived tables marked `streamed`).

Each gives exactly what its SQL in schema.py would; tests check the two agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from . import schema

# Tables with timestamps, as trace_bounds covers them (trace_processor's storage tables plugin): name ->
# (ts position, dur position or None) in the stored row.
_TIMESTAMP_COLUMNS = {
    "slice": "ts",
    "counter": "ts",
    "state": "ts",
    "profiler_sample": "ts",
    "sched": "ts",
    "thread_state": "ts",
    "__intrinsic_ftrace_event": "ts",
    "heap_profile_allocation": "ts",
    "profiler_smaps": "ts",
    "heap_graph_object": "graph_sample_ts",
    "heap_graph": "ts",
    "__intrinsic_logs": "ts",
}
TIMED_TABLES: dict[str, tuple[int, int | None]] = {}
for _name, _ts in _TIMESTAMP_COLUMNS.items():
    _cols = schema.table(_name).stored_columns
    TIMED_TABLES[_name] = (_cols.index(_ts), _cols.index("dur") if "dur" in _cols else None)

INT64_MAX = (1 << 63) - 1

_SLICE = schema.table("slice").stored_columns
_ID, _TS, _DUR, _TRACK, _NAME, _PARENT = (_SLICE.index(c) for c in ("id", "ts", "dur", "track_id", "name", "parent_id"))


class TimeBounds:
    """Per timed table: min(ts) and max(ts + max(dur, 0)) of its rows, NULLs ignored."""

    def __init__(self) -> None:
        self.bounds: dict[str, list] = {}

    def add(self, table: str, rows: list[tuple]) -> None:
        ts_at, dur_at = TIMED_TABLES[table]
        starts = [r[ts_at] for r in rows if r[ts_at] is not None]
        if not starts:
            return
        if dur_at is None:
            ends = starts
        else:
            ends = [
                r[ts_at] + (r[dur_at] if r[dur_at] > 0 else 0)
                for r in rows
                if r[ts_at] is not None and r[dur_at] is not None
            ]
        bounds = self.bounds.setdefault(table, [None, None])
        bounds[0] = min(starts) if bounds[0] is None else min(bounds[0], min(starts))
        if ends:
            bounds[1] = max(ends) if bounds[1] is None else max(bounds[1], max(ends))

    def absorb(self, other: TimeBounds) -> None:
        """Adds another storage's bounds (a parallel ingest's input, merge.py)."""
        for table, (start, end) in other.bounds.items():
            bounds = self.bounds.setdefault(table, [None, None])
            if start is not None:
                bounds[0] = start if bounds[0] is None else min(bounds[0], start)
            if end is not None:
                bounds[1] = end if bounds[1] is None else max(bounds[1], end)

    def trace_bounds(self) -> tuple[int, int]:
        """trace_processor's trace_bounds over every timed table: (0, 0) when empty,
        and one nanosecond wide when everything is at one instant."""
        known = [b for b in self.bounds.values() if b[1] is not None]
        if not known:
            return (0, 0)
        start, end = min(b[0] for b in known), max(b[1] for b in known)
        return (start, end + 1 if end == start else end)


class SliceNameAggregates:
    """report_slice_track_name and report_slice_name: count, total and longest
    duration per (track, name) and per name, and how many are unfinished. An
    unfinished slice (dur -1) lasts to the end of the trace, known only when the
    last row is written: each key keeps its unfinished slices' count, sum of
    starts and earliest start (the longest of them) until then. The longest
    instance is the one with the lowest id among equals, as SQLite's max() with
    a bare column picks it. A total beyond int64 (only absurd durations get
    there) is kept at INT64_MAX, where SQLite's sum() would fail the import.

    Self time (a slice's duration minus its direct children's) is kept the same
    way: the slice tracker writes children before their parent, so a parent's
    row finds its children's durations summed (finished ones, and the unfinished
    ones' count and sum of starts, resolved at the end like the parent's own)."""

    def __init__(self) -> None:
        # (track_id, name) -> [count, finished total, finished max, its id, unfinished count, their ts sum,
        # earliest unfinished ts, its id, self time known, self time's multiple of the trace's end]
        self.by_track_name: dict[tuple, list] = {}
        # parent slice id -> [its children's finished durations, unfinished children, their ts sum]
        self._children: dict[int, list] = {}

    def add(self, rows: list[tuple]) -> None:
        aggregates, children = self.by_track_name, self._children
        for row in rows:
            dur, slice_id, parent_id = row[_DUR], row[_ID], row[_PARENT]
            key = (row[_TRACK], row[_NAME])
            agg = aggregates.get(key)
            if agg is None:
                agg = aggregates[key] = [0, 0, None, None, 0, 0, None, None, 0, 0]
            agg[0] += 1
            kids = children.pop(slice_id, None)
            if kids is not None:  # self time: less the children's (an unfinished one's: end - ts)
                agg[8] -= kids[0] - kids[2]
                agg[9] -= kids[1]
            if dur < 0:
                ts = row[_TS]
                if parent_id is not None:
                    siblings = children.get(parent_id)
                    if siblings is None:
                        siblings = children[parent_id] = [0, 0, 0]
                    siblings[1] += 1
                    siblings[2] += ts
                agg[8] -= ts
                agg[9] += 1
                agg[4] += 1
                agg[5] += ts
                if agg[6] is None or ts < agg[6] or (ts == agg[6] and slice_id < agg[7]):
                    agg[6], agg[7] = ts, slice_id
                continue
            if parent_id is not None:
                siblings = children.get(parent_id)
                if siblings is None:
                    siblings = children[parent_id] = [0, 0, 0]
                siblings[0] += dur
            agg[8] += dur
            agg[1] += dur
            if agg[2] is None or dur > agg[2] or (dur == agg[2] and slice_id < agg[3]):
                agg[2], agg[3] = dur, slice_id

    def absorb(self, other: SliceNameAggregates, track_id: Callable[[int], int], slice_delta: int) -> None:
        """Adds another storage's aggregates, of slices on other tracks (a parallel ingest's input,
        merge.py): `track_id` maps its track ids, `slice_delta` is added to its slice ids."""
        for (track, name), agg in other.by_track_name.items():
            agg = list(agg)
            for at in (3, 7):  # the longest finished and the earliest unfinished slice's ids
                if agg[at] is not None:
                    agg[at] += slice_delta
            self.by_track_name[(track_id(track), name)] = agg
        for parent_id, kids in other._children.items():
            self._children[parent_id + slice_delta] = list(kids)

    @staticmethod
    def _resolve(agg: list, end: int) -> tuple[int, int, int, int, int, int]:
        """(count, total, longest, its id, unfinished, self) with the unfinished slices lasting to `end`."""
        count, total, longest, slice_id, unfinished, ts_sum, earliest, earliest_id, self_known, self_ends = agg
        if unfinished:
            total += unfinished * end - ts_sum
            open_dur = max(end - earliest, 0)
            if longest is None or open_dur > longest or (open_dur == longest and earliest_id < slice_id):
                longest, slice_id = open_dur, earliest_id
        return count, total, longest, slice_id, unfinished, self_known + self_ends * end

    def track_name_rows(self, end: int) -> Iterator[tuple]:
        """report_slice_track_name rows, in GROUP BY track_id, name order; `end`: the trace's end."""
        for (track_id, name), agg in sorted(
            self.by_track_name.items(), key=lambda kv: (kv[0][0], text_order_key(kv[0][1]))
        ):
            count, total, longest, slice_id, unfinished, self_dur = self._resolve(agg, end)
            yield track_id, name, count, min(total, INT64_MAX), longest, slice_id, unfinished, clamp_int64(self_dur)

    def name_rows(self, end: int) -> Iterator[tuple]:
        """report_slice_name rows, in GROUP BY name order."""
        by_name: dict[str | None, list] = {}
        for (_, name), agg in self.by_track_name.items():
            count, total, longest, slice_id, unfinished, self_dur = self._resolve(agg, end)
            named = by_name.get(name)
            if named is None:
                by_name[name] = [count, total, longest, slice_id, unfinished, self_dur]
                continue
            named[0] += count
            named[1] += total
            named[4] += unfinished
            named[5] += self_dur
            if longest > named[2] or (longest == named[2] and slice_id < named[3]):
                named[2], named[3] = longest, slice_id
        for name, (count, total, longest, slice_id, unfinished, self_dur) in sorted(
            by_name.items(), key=lambda kv: text_order_key(kv[0])
        ):
            yield name, count, min(total, INT64_MAX), longest, slice_id, unfinished, clamp_int64(self_dur)


def clamp_int64(value: int) -> int:
    """A sum kept within int64 (only absurd durations leave it)."""
    return max(min(value, INT64_MAX), -INT64_MAX - 1)


def text_order_key(value: str | None) -> tuple:
    """SQLite's order for a TEXT column: NULL first, then by code point (BINARY collation)."""
    return (value is not None, value or "")
