"""Converts timestamps from any clock in the trace to the trace clock.

ClockSnapshot packets say what several clocks read at one instant. Clocks
that appear together in a snapshot are joined by an edge; a timestamp is
converted along the shortest path of edges, each hop using the most recent
snapshot at or before the timestamp (the first one if none is earlier).
Clock ids 64..127 are scoped to their packet sequence. Another machine's
clocks reach the host's trace clock through the offsets its remote_clock_sync
packets estimate (nodes ("host", clock id) in that machine's graph).
"""

from __future__ import annotations

import bisect
from collections import deque

from ...stats import Stats
from ..common.values import c_div

BOOTTIME = 6
BUILTIN_CLOCK_NAMES = {
    1: "REALTIME",
    2: "REALTIME_COARSE",
    3: "MONOTONIC",
    4: "MONOTONIC_COARSE",
    5: "MONOTONIC_RAW",
    6: "BOOTTIME",
}

# A clock key is the clock id, or (sequence id, clock id) for sequence-scoped clocks.
ClockKey = object


def clock_key(clock_id: int, seq_id: int) -> ClockKey:
    return (seq_id, clock_id) if 64 <= clock_id < 128 else clock_id


class _Hop:
    """Snapshot pairs (src_ns, dst_ns) between two clocks, sorted by src."""

    __slots__ = ("src", "dst")

    def __init__(self) -> None:
        self.src: list[int] = []
        self.dst: list[int] = []

    def add(self, s: int, d: int) -> None:
        i = bisect.bisect_right(self.src, s)
        self.src.insert(i, s)
        self.dst.insert(i, d)

    def convert(self, ts: int) -> int:
        i = bisect.bisect_right(self.src, ts) - 1
        if i < 0:
            i = 0
        return self.dst[i] + (ts - self.src[i])


SYNC_ROUND_NS = 30 * 1_000_000_000  # remote clock syncs run every 30 s; closer snapshots are one round


def remote_clock_offsets(rounds: list[dict[int, tuple[int, int]]]) -> dict[int, tuple[int, int]]:
    """A RemoteClockSync's snapshot pairs (clock id -> (host ts, client ts)) → clock id ->
    (a host reading, client - host offset): per clock, the mean of the offsets each round's two
    round trips (client→host→client, host→client→host) estimate (C integer arithmetic)."""
    raw: dict[int, list[int]] = {}
    for ping, update in zip(rounds, rounds[1:]):
        if not 0 <= update.get(BOOTTIME, (0, 0))[1] - ping.get(BOOTTIME, (0, 0))[1] < SYNC_ROUND_NS:
            continue  # two different rounds
        for clock_id, (t1h, t1c) in ping.items():
            t2h, t2c = update.get(clock_id, (0, 0))
            if not (t1h and t1c and t2h and t2c):
                continue
            raw.setdefault(clock_id, []).extend((c_div(t1c + t2c, 2) - t1h, t2c - c_div(t1h + t2h, 2)))
    offsets = {}
    for clock_id, values in raw.items():
        # The host reading of the last round that saw the clock anchors it.
        anchor = next((r[clock_id][0] for r in reversed(rounds) if r.get(clock_id, (0, 0))[0]), 0)
        offsets[clock_id] = (anchor, c_div(sum(values), len(values)))
    return offsets


def _identity(ts: int) -> int:
    return ts


class ClockTracker:
    def __init__(self, stats: Stats) -> None:
        self.stats = stats
        self.trace_clock: int | tuple[str, int] = BOOTTIME  # ("host", clock id): synced to the host
        self.trace_clock_fixed = False
        self._hops: dict[tuple, _Hop] = {}
        self._neighbours: dict[ClockKey, set] = {}
        self._paths: dict[ClockKey, list[_Hop] | None] = {}
        # Incremental clocks: key -> (last value in units, unit multiplier).
        self.incremental: dict[ClockKey, list[int]] = {}
        # An incremental clock that is not sequence-scoped: every packet on it moves it.
        self.global_incremental = False
        self._converters: dict = {}  # clock key -> fast ts converter, until the next snapshot
        self.users: list = []  # sequence states caching a converter; reset on every snapshot
        self.snapshot_rows: list[tuple] = []  # (snapshot_id, clock_id, clock_name, clock_value_ns)
        self.snapshot_count = 0

    def set_trace_clock(self, clock_id: int) -> None:
        if not self.trace_clock_fixed:
            self.trace_clock = clock_id
            self.trace_clock_fixed = True
            self._paths.clear()
            self._converters.clear()

    def add_snapshot(self, clocks: list[tuple[int, int, bool, int]], seq_id: int) -> None:
        """clocks: (clock_id, timestamp in the clock's units, is_incremental, unit_multiplier_ns)."""
        values: list[tuple[ClockKey, int]] = []
        snapshot_id = self.snapshot_count
        self.snapshot_count += 1
        for clock_id, timestamp, is_incremental, multiplier in clocks:
            key = clock_key(clock_id, seq_id)
            multiplier = multiplier or 1
            if is_incremental:
                self.incremental[key] = [timestamp, multiplier]
                if not isinstance(key, tuple):
                    self.global_incremental = True
            values.append((key, timestamp * multiplier))
            self.snapshot_rows.append(
                (snapshot_id, clock_id, BUILTIN_CLOCK_NAMES.get(clock_id), timestamp * multiplier)
            )
        self._converters.clear()
        for user in self.users:
            user.clock = None
        self.users.clear()
        for a, va in values:
            for b, vb in values:
                if a == b:
                    continue
                hop = self._hops.get((a, b))
                if hop is None:
                    hop = self._hops[(a, b)] = _Hop()
                    self._neighbours.setdefault(a, set()).add(b)
                    self._paths.clear()
                hop.add(va, vb)

    def global_snapshots(self) -> list[list[tuple[int, int]]]:
        """The snapshots' (clock id, ns) readings of clocks not scoped to a sequence nor incremental, per
        snapshot: what converts another input's clock (TraceModel.set_trace_clock)."""
        snapshots: dict[int, list[tuple[int, int]]] = {}
        for snapshot_id, clock_id, _name, value in self.snapshot_rows:
            key = clock_key(clock_id, 0)
            if isinstance(key, int) and key not in self.incremental:
                snapshots.setdefault(snapshot_id, []).append((clock_id, value))
        return list(snapshots.values())

    def sync_to_host(self, offsets: dict[int, tuple[int, int]], host_trace_clock: int) -> None:
        """A remote machine's clocks tied to the host's (remote_clock_sync): offsets maps a clock
        id to (host reading, client - host offset); the host's trace clock becomes this machine's
        conversion target. Without an offset for that clock nothing changes."""
        if host_trace_clock not in offsets:
            return
        for clock_id, (host_ts, offset) in offsets.items():
            client, host = clock_key(clock_id, 0), ("host", clock_id)
            for a, b, va, vb in ((client, host, host_ts + offset, host_ts), (host, client, host_ts, host_ts + offset)):
                hop = self._hops.get((a, b))
                if hop is None:
                    hop = self._hops[(a, b)] = _Hop()
                    self._neighbours.setdefault(a, set()).add(b)
                hop.add(va, vb)
        self.trace_clock = ("host", host_trace_clock)
        self.trace_clock_fixed = True
        self._paths.clear()
        self._converters.clear()
        for user in self.users:
            user.clock = None
        self.users.clear()

    def resolve_incremental(self, key: ClockKey, delta: int) -> int:
        """Applies a delta on an incremental clock (a key of `incremental`); returns ns on that clock."""
        state = self.incremental[key]
        state[0] += delta
        return state[0] * state[1]

    def converter(self, key: ClockKey):
        """A function ts -> trace time (None if impossible) for one clock; cached until the next snapshot."""
        conv = self._converters.get(key)
        if conv is None:
            conv = self._converters[key] = self._make_converter(key)
        return conv

    def _make_converter(self, key: ClockKey):
        if key == self.trace_clock:
            return _identity
        path = self._paths.get(key)
        if path is None:
            path = self._paths[key] = self._find_path(key)
        if path is None or len(path) != 1:
            return lambda ts: self.to_trace_time(key, ts)
        hop = path[0]
        if len(hop.src) == 1:
            offset = hop.dst[0] - hop.src[0]
            return lambda ts: ts + offset
        return hop.convert

    def to_trace_time(self, key: ClockKey, ts: int, quiet: bool = False) -> int | None:
        if key == self.trace_clock:
            return ts
        try:
            path = self._paths[key]
        except KeyError:
            path = self._paths[key] = self._find_path(key)
        if path is None:
            if quiet:
                return None
            if key not in self._neighbours:
                if self.snapshot_count == 0 and key == BOOTTIME:
                    return ts  # no snapshots at all: BOOTTIME is the trace clock
                self.stats.inc("clock_sync_failure_unknown_source_clock")
            else:
                self.stats.inc("clock_sync_failure_no_path")
            return None
        for hop in path:
            ts = hop.convert(ts)
        return ts

    def convert(self, src: ClockKey, ts: int, dst: ClockKey) -> int | None:
        """`ts` on clock `src` as time on clock `dst` (any two clocks the snapshots join); None, counted
        as trace_processor counts it, when they do not."""
        if src == dst:
            return ts
        path = self._find_path(src, dst)
        if path is None:
            if src not in self._neighbours:
                self.stats.inc("clock_sync_failure_unknown_source_clock")
            elif dst not in self._neighbours:
                self.stats.inc("clock_sync_failure_unknown_target_clock")
            else:
                self.stats.inc("clock_sync_failure_no_path")
            return None
        for hop in path:
            ts = hop.convert(ts)
        return ts

    def _find_path(self, src: ClockKey, target: ClockKey | None = None) -> list[_Hop] | None:
        """The hops from `src` to `target` (the trace clock by default), fewest first; None if none."""
        if target is None:
            target = self.trace_clock
        prev: dict = {src: None}
        queue = deque([src])
        while queue:
            node = queue.popleft()
            if node == target:
                path = []
                while prev[node] is not None:
                    path.append(self._hops[(prev[node], node)])
                    node = prev[node]
                return path[::-1]
            for nxt in self._neighbours.get(node, ()):
                if nxt not in prev:
                    prev[nxt] = node
                    queue.append(nxt)
        return None
