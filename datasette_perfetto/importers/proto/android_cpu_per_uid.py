"""CPU time per Android UID (`TracePacket.cpu_per_uid_data`, the android.cpu_per_uid data source) →
counter tracks and `__intrinsic_android_cpu_per_uid_track`, as trace_processor's AndroidCpuPerUidModule
reads them: at tokenize time, in file order, each value on its packet's timestamp.

- A packet lists UIDs and, for each in turn, one `total_time_ms` per CPU cluster (`cluster_count`, kept
  by the sequence until its incremental state is cleared). Extra times, or UIDs without times, are
  left out.
- Per sequence (reset with its incremental state): the first time of a (uid, cluster) is the CPU time
  since boot, later ones add to it. Per trace file and machine: the increase since the value any
  sequence last gave for that key (a decrease counts as 0).
- Tracks `android_cpu_per_uid` ("CPU for UID <uid> CL<cluster>", dimensions uid and cluster, unit ms):
  a UID's value as its sequence knows it, after every packet. Isolated and SDK sandbox UIDs (app ids
  50000-59999 and 90000-99999) share one track per range of ten thousand (uid rounded down, e.g.
  1090000), whose value is the sum of their increases.
- Tracks `android_cpu_per_uid_totals` ("CPU for System CL<n>" / "CPU for Apps CL<n>", dimensions type
  and cluster): the sum of the increases of UIDs whose app id is below 10000 / the others.
- Counter values are sparse (trace_processor's SparseCounterTracker): a value equal to the track's last
  one is written only when a different one follows, and then only the last repeat.
- Once the file is read, one `__intrinsic_android_cpu_per_uid_track` row per per-UID track (grouped UIDs
  once), in track id order, with the UID's total increase on the cluster.
"""

from __future__ import annotations

from ..common.values import UINT64_MASK
from .packet_handlers import HandlerContext, packet_handler, tokenize_handler
from .power import SparseCounters

TRACK_TABLE = "__intrinsic_android_cpu_per_uid_track"
PER_UID_TYPE = "android_cpu_per_uid"
TOTALS_TYPE = "android_cpu_per_uid_totals"


def app_id(uid: int) -> int:
    """The UID without its Android user (uid % 100000)."""
    return uid % 100000


def is_grouped(uid: int) -> bool:
    """Whether the UID is in an anonymous range (SDK sandbox or isolated app ids)."""
    app = app_id(uid)
    return 50000 <= app < 60000 or 90000 <= app < 100000


def grouped_uid(uid: int) -> int:
    """The UID whose track a grouped UID's time goes to (rounded down to ten thousand); else uid."""
    return uid - uid % 10000 if is_grouped(uid) else uid


class SequenceUidTimes:
    """One sequence's incremental state: the cluster count and each (uid, cluster)'s time so far."""

    def __init__(self) -> None:
        self.cluster_count = 0  # none given yet: one time per UID
        self.values: dict[tuple[int, int], int] = {}


class CpuPerUid:
    """The state of one trace file and machine (trace_processor's module instance)."""

    def __init__(self, trace, push) -> None:
        self.trace = trace
        self.last: dict[tuple[int, int], int] = {}  # (uid, cluster) -> the last time any sequence gave
        self.cumulative: dict[tuple[int, int], int] = {}  # (grouped uid, cluster) -> total increase
        self.system: dict[int, int] = {}  # cluster -> total increase of system UIDs
        self.apps: dict[int, int] = {}  # cluster -> total increase of app UIDs
        self.sparse = SparseCounters(push, "cpu_per_uid_data")

    def uid_track(self, uid: int, cluster: int) -> int:
        return self.trace.tracks.intern(
            PER_UID_TYPE, (("uid", uid), ("cluster", cluster)), "counter", f"CPU for UID {uid} CL{cluster}", "ms"
        )

    def totals_track(self, kind: str, cluster: int) -> int:
        return self.trace.tracks.intern(
            TOTALS_TYPE, (("type", kind), ("cluster", cluster)), "counter", f"CPU for {kind} CL{cluster}", "ms"
        )

    def add(self, seq_times: SequenceUidTimes, uid: int, cluster: int, raw_ms: int) -> None:
        """One time of a packet: the sequence's value, then the increase it makes."""
        key = (uid, cluster)
        previous = seq_times.values.get(key)
        value = raw_ms if previous is None else (previous + raw_ms) & UINT64_MASK
        seq_times.values[key] = value
        before = self.last.get(key, value)
        increase = value - before if value > before else 0
        self.last[key] = value
        group = grouped_uid(uid)
        gkey = (group, cluster)
        self.cumulative[gkey] = (self.cumulative.get(gkey, 0) + increase) & UINT64_MASK
        totals = self.system if app_id(group) < 10000 else self.apps
        totals[cluster] = (totals.get(cluster, 0) + increase) & UINT64_MASK

    def sample(self, ts: int, seq_times: SequenceUidTimes) -> None:
        """Every total and every UID value again, after a packet."""
        for cluster, value in self.system.items():
            self.sparse.counter(ts, self.totals_track("System", cluster), float(value))
        for cluster, value in self.apps.items():
            self.sparse.counter(ts, self.totals_track("Apps", cluster), float(value))
        for (uid, cluster), value in self.cumulative.items():
            if is_grouped(uid):
                self.sparse.counter(ts, self.uid_track(uid, cluster), float(value))
        for (uid, cluster), value in seq_times.values.items():
            if not is_grouped(uid):
                self.sparse.counter(ts, self.uid_track(uid, cluster), float(value))

    def finish(self) -> None:
        rows = sorted(
            (self.uid_track(uid, cluster), uid, cluster, total) for (uid, cluster), total in self.cumulative.items()
        )
        storage = self.trace.storage
        for track, uid, cluster, total in rows:
            # total_cpu_millis is an int64 column: the uint64 sum as C++ stores it.
            storage.insert(TRACK_TABLE, (track, uid, cluster, total - (1 << 64) if total >> 63 else total))
        self.cumulative.clear()


@tokenize_handler("cpu_per_uid_data")
def _cpu_per_uid_data(importer, packet, seq, ts: int) -> None:
    parser: HandlerContext = importer.ftrace
    data = packet.cpu_per_uid_data
    state = parser.state("cpu_per_uid", lambda: CpuPerUid(parser.trace, importer.push))
    seq_times = seq.derived.get("cpu_per_uid")
    if seq_times is None:
        seq_times = seq.derived["cpu_per_uid"] = SequenceUidTimes()
    if data.HasField("cluster_count"):
        seq_times.cluster_count = data.cluster_count
    uids = data.uid
    cluster = 0
    index = 0
    for raw_ms in data.total_time_ms:
        if index >= len(uids):
            break
        state.add(seq_times, uids[index], cluster, raw_ms)
        cluster += 1
        if cluster >= seq_times.cluster_count:
            cluster = 0
            index += 1
    state.sample(ts, seq_times)


@packet_handler("cpu_per_uid_data")
def _cpu_per_uid_value(parser: HandlerContext, ts: int, _empty, track: int = -1, value: float = 0.0) -> None:
    """A value the tokenizer queued (SparseCounters)."""
    if track >= 0:
        parser.trace.insert_counter(ts, track, value)
