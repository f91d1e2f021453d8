"""Per-sequence state of the proto tokenizer: incremental state, interned data, packet
defaults and delta-timestamp baselines of one trusted packet sequence."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..common.values import text
from .gpu import INTERNED_GPU_FIELDS
from .profiles import INTERNED_PROFILE_FIELDS


@dataclass(slots=True, eq=False)
class SequenceState:
    """Incremental state of one trusted packet sequence."""

    seq_id: int
    # The start of a sequence may have been lost: its incremental state is
    # only trusted after the first incremental_state_cleared.
    valid: bool = False
    interned: dict[int, dict[int, object]] = field(default_factory=dict)
    timestamp_clock_id: int | None = None
    default_track_uuid: int | None = None
    default_extra_counter_uuids: tuple = ()
    default_extra_double_counter_uuids: tuple = ()
    thread: tuple[int, int] | None = None  # (pid, tid) from a ThreadDescriptor
    ref_ts: int | None = None  # legacy delta-timestamp baselines (ns)
    ref_thread_ts: int | None = None
    ref_thread_ic: int | None = None
    counter_values: dict[int, float] = field(default_factory=dict)  # incremental counters: uuid -> running value
    derived: dict = field(default_factory=dict)  # values computed from interned data (e.g. args of a source location)
    decoded: dict[bytes, tuple] = field(default_factory=dict)  # TrackEvent bytes -> their decoded static part
    # Packet-loss accounting, reported per buffer when trace_stats names the sequence's buffer.
    dropped: int = 0  # packets flagged previous_packet_dropped (not counting the first packet)
    loss_causes: dict[int, int] = field(default_factory=dict)  # data-loss cause bit -> packets flagged with it
    needs_state: int = 0  # packets that needed incremental state
    needs_state_skipped: int = 0  # ... and were dropped for want of it
    misses: int = 0  # interned lookups that found nothing
    split_owner: int | None = None  # the process tokenizing its track events (split_tokenize.py)
    # (clock key, converter, incremental state) of the default clock, cached
    # by _convert and dropped whenever clocks or defaults change.
    clock: tuple | None = None

    def clear(self) -> None:
        self.valid = True
        self.clock = None
        self.interned = {}
        self.timestamp_clock_id = None
        self.default_track_uuid = None
        self.default_extra_counter_uuids = ()
        self.default_extra_double_counter_uuids = ()
        self.ref_ts = self.ref_thread_ts = self.ref_thread_ic = None
        self.counter_values = {}
        self.derived = {}
        self.decoded = {}

    def lookup(self, field: int, iid: int) -> object:
        """The interned value, or None (counted, as trace_processor does) if unknown."""
        table = self.interned.get(field)
        found = None if table is None else table.get(iid)
        if found is None:
            self.misses += 1
        return found


# InternedData fields kept in sequence state: field number -> how to store an entry.
def _name(e):
    return text(e.name)


def _str(e):
    return text(e.str)


def _source_location(e):
    return (
        text(e.file_name) or None,
        text(e.function_name) or None,
        e.line_number if e.HasField("line_number") else None,
    )


INTERNED_FIELDS = {
    "event_categories": (1, _name),
    "event_names": (2, _name),
    "debug_annotation_names": (3, _name),
    "source_locations": (4, _source_location),
    "debug_annotation_string_values": (29, _str),
    "histogram_names": (25, _name),
    "log_message_body": (20, lambda e: text(e.body)),
    "debug_annotation_value_type_names": (27, _name),
    "correlation_id_str": (43, _str),
    "kernel_symbols": (26, _str),
    **INTERNED_PROFILE_FIELDS,  # callstacks and StackSample contexts (profiles.py)
    **INTERNED_GPU_FIELDS,  # render stage specs, graphics contexts, counter descriptors (gpu.py)
}
