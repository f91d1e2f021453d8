"""Perfetto protobuf traces: tokenizer (packets → sorted events) and parsers.

Two phases, as in trace_processor:
1. Tokenize, in file order: per-sequence state (incremental state, interned
   data, packet defaults, thread descriptors), clock conversion, track
   descriptor reservations and incremental counter values. Each event is
   reduced to a self-contained tuple of plain values and pushed to the sorter.
2. Parse, in timestamp order: trackers build processes, threads, tracks,
   slices, flows, counters and states.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import BinaryIO

from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ..model import TraceContext, format_uuid
from ..stats import REGISTRY as STATS
from ..storage import to_int64
from ..trackers.dimension_tracker import (
    INTERNED_DIMENSION_FIELDS,
    TRACK_DESCRIPTOR_DIMENSIONS,
    DescriptorDimensions,
    intern_dimension_strings,
)
from .atrace import EV_ATRACE, AtraceParser
from .clock_tracker import BOOTTIME, ClockTracker, clock_key
from .ftrace import (
    EV_COMPACT_SCHED,
    EV_FTRACE,
    EV_MACHINE,
    EV_PACKET,
    PACKET_HANDLERS,
    FtraceParser,
    order_ties_by_queue,
)
from .profile_module import EV_PROFILE, INTERNED_PROFILE_FIELDS, ProfileParser, ProfileTokenizer
from .proto_reader import ProtoReader, inflate_packets, scan_simple_track_event
from .sorter import Sorter
from .split_tokenize import HELPER, MAIN, OwnedContext, SequenceClaims, SequenceSplit, split_wanted, start_helper
from .track_event import (
    EV_DESCRIPTOR,
    EV_THREAD_DESCRIPTOR,
    INT64_MAX,
    CounterDetails,
    Reservation,
    TrackEventParser,
    text,
    tokenize_track_event,
)

# Sorter streams: at equal timestamps, descriptors (0) are parsed before track events (1).
TRACK_EVENT_STREAM = 1

# TracePacket.previous_packet_dropped: bit 0 says packets were lost (the old
# boolean); the bits above it say why.
DATA_LOSS_CAUSES = {
    2: "read_gap",
    4: "chunk_corrupted",
    8: "orphan_continuation",
    16: "reassembly_gap",
    32: "reassembly_broken_chain",
    64: "overwrite",
    128: "writer_abort",
    256: "smb_full",
}

SEQ_INCREMENTAL_STATE_CLEARED = 1
SEQ_NEEDS_INCREMENTAL_STATE = 2

TracePacket = pb.TracePacket

MAX_FTRACE_CPUS = 1024
MONOTONIC_RAW = 4
SEQUENCE_SCOPED_CLOCK = 64
FTRACE_CLOCK_UNSPECIFIED, FTRACE_CLOCK_GLOBAL, FTRACE_CLOCK_LOCAL, FTRACE_CLOCK_MONO_RAW = 0, 2, 3, 4

UNIT_NAMES = {1: "ns", 2: "count", 3: "bytes"}
COUNTER_THREAD_TIME_NS = 1
COUNTER_THREAD_INSTRUCTION_COUNT = 2


def _file_position(stream) -> Callable[[], int]:
    """How far into the file on disk the reader is (the compressed file for gzip)."""
    raw = getattr(stream, "raw", stream)
    return raw.tell


class SequenceState:
    """Incremental state of one trusted packet sequence."""

    __slots__ = (
        "seq_id",
        "valid",
        "interned",
        "timestamp_clock_id",
        "default_track_uuid",
        "default_extra_counter_uuids",
        "default_extra_double_counter_uuids",
        "thread",
        "ref_ts",
        "ref_thread_ts",
        "ref_thread_ic",
        "counter_values",
        "derived",
        "misses",
        "clock",
        "decoded",
        "dropped",
        "loss_causes",
        "needs_state",
        "needs_state_skipped",
        "split_owner",
    )

    def __init__(self, seq_id: int) -> None:
        self.seq_id = seq_id
        # The start of a sequence may have been lost: its incremental state is
        # only trusted after the first incremental_state_cleared.
        self.valid = False
        self.interned: dict[int, dict[int, object]] = {}
        self.timestamp_clock_id: int | None = None
        self.default_track_uuid: int | None = None
        self.default_extra_counter_uuids: tuple = ()
        self.default_extra_double_counter_uuids: tuple = ()
        self.thread: tuple[int, int] | None = None  # (pid, tid) from a ThreadDescriptor
        self.ref_ts: int | None = None  # legacy delta-timestamp baselines (ns)
        self.ref_thread_ts: int | None = None
        self.ref_thread_ic: int | None = None
        self.counter_values: dict[int, float] = {}  # incremental counters: uuid -> running value
        self.derived: dict = {}  # values computed from interned data (e.g. args of a source location)
        self.decoded: dict[bytes, tuple] = {}  # TrackEvent bytes -> their decoded static part
        # Packet-loss accounting, reported per buffer when trace_stats names the sequence's buffer.
        self.dropped = 0  # packets flagged previous_packet_dropped (not counting the first packet)
        self.loss_causes: dict[int, int] = {}  # data-loss cause bit -> packets flagged with it
        self.needs_state = 0  # packets that needed incremental state
        self.needs_state_skipped = 0  # ... and were dropped for want of it
        self.misses = 0  # interned lookups that found nothing
        self.split_owner: int | None = None  # the process tokenizing its track events (split_tokenize.py)
        # (clock key, converter, incremental state) of the default clock, cached
        # by _convert and dropped whenever clocks or defaults change.
        self.clock = None

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
    **INTERNED_PROFILE_FIELDS,  # callstacks and StackSample contexts (profile_module)
}


# FtraceEvent kinds whose field holds a kernel function address that may be
# interned (InternedData.kernel_symbols) → that field. Their handlers take the
# resolved name (or None) as an extra argument; add a kind here only with a
# handler that does (trace_processor also resolves workqueue_queue_work/activate_work,
# hrtimer and shrink_slab events).
KERNEL_SYMBOL_FIELDS = {
    "sched_blocked_reason": "caller",
    "funcgraph_entry": "func",
    "funcgraph_exit": "func",
    "workqueue_execute_start": "function",
}


class _MachineSorter:
    """A remote machine's view of the file's sorter: its events are wrapped with the
    machine's index so the parse phase hands them to that machine's parsers."""

    __slots__ = ("sorter", "index")

    def __init__(self, sorter: Sorter, index: int) -> None:
        self.sorter = sorter
        self.index = index

    def push(self, ts: int, event: tuple, stream: int = 0) -> None:
        self.sorter.push(ts, (EV_MACHINE, self.index, event), stream)


class ProtoImporter:
    def __init__(self, trace: TraceContext, sorter=None) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.clocks = ClockTracker(self.stats)
        self.sequences: dict[int, SequenceState] = {}
        self.sorter = sorter if sorter is not None else Sorter()
        self.reservations: dict[int, Reservation] = {}
        # Counter uuid -> (unit multiplier, incremental); reservations are final
        # once seen (a conflicting re-declaration is rejected), so this can cache.
        self.counter_specs: dict[int, tuple] = {}
        self.first_packet_sequences: set[int] = set()
        self.parser = TrackEventParser(trace, self.reservations, self.first_packet_sequences)
        self.atrace = AtraceParser(trace, self.parser.thread_track)
        self.ftrace = FtraceParser(trace, self.parser.thread_track)
        self.ftrace.clocks = self.clocks  # packets carrying raw clock values convert them at parse time
        self.last_ts = 0
        self.has_kernel_events = False  # any per-CPU events, whose ties the sorter orders specially
        self.chrome_metadata_packets = 0
        self.profiles = ProfileTokenizer(self)
        self.profile_parser = ProfileParser(trace, self.profiles)
        self._handlers = self._handler_table()
        self.descriptor_dimensions = DescriptorDimensions(self.stats)
        self.ftrace_cpus_seen: set[int] = set()  # cpus whose first ftrace bundle was seen
        # Multi-machine traces (TracePacket.machine_id): one importer per other machine,
        # sharing this one's sorter. `adopted` is the raw id of a machine the host context
        # took over (0: none), decided at the first packet from another machine.
        self.machine_importers: dict[int, ProtoImporter] = {}
        self.machine_by_index: list[ProtoImporter] = []
        self.adopted: int | None = None
        self.host_used = False
        # Tokenizing split with a forked helper process (split_tokenize.py); None: this process does it all.
        self.split: SequenceSplit | None = None
        self.te_context = self  # what tokenize_track_event reads (stats, clocks, reservations)
        self.skips_others = False  # the split helper: skips the plain track-event packets of the importer's sequences
        self.packet_index = 0  # packets seen so far, inner ones of compressed_packets included (split only)

    def run(self, stream: BinaryIO, progress: Callable[[float], None]) -> None:
        """Imports the trace; progress(f) reports the share done, f from 0 to 1
        (reading the file is the first half, parsing the sorted events the second)."""
        helper = None
        if split_wanted(self.trace.model.split_tokenize, self.trace.size):
            helper, claims = start_helper(self)  # the child starts from this same, still empty, state
            self._start_split(MAIN, claims)
        try:
            self.tokenize_all(stream, progress)
            if helper is not None:
                stats, misses, runs, count = helper.result()
                self.stats.add(stats)
                self.sequence_misses += misses
                self.sorter.take_over(runs, count)
                helper.discard_runs()
        except BaseException:
            if helper is not None:
                helper.stop()
            raise
        self.parse_all(progress)

    def _start_split(self, role: int, claims: SequenceClaims) -> None:
        self.split = SequenceSplit(role, claims)
        streaming = self._handlers.get("streaming_profile_packet")

        def pinned_streaming(packet, seq, ts):
            self.split.pin_to_main(seq)
            streaming(packet, seq, ts)

        self._handlers["streaming_profile_packet"] = pinned_streaming

    def become_helper(self, claims: SequenceClaims, sorter: Sorter) -> None:
        """In the forked helper: tokenize only the track events of the sequences it
        owns, into `sorter`; keep the rest of the tokenizer state as the importer
        does, silently."""
        self._start_split(HELPER, claims)
        self.sorter = sorter
        self.skips_others = True
        self.trace.model.storage.writer = None  # the parent's: never to be written from here
        self.te_context = OwnedContext(self)  # stats of the owned events, reported to the importer
        self._push = lambda ts, event: None  # every other event is the importer's
        self._handlers = {
            "track_descriptor": self._track_descriptor,
            "thread_descriptor": self._thread_descriptor,
            "ftrace_events": lambda p, seq, ts: self._ftrace_bundle_clock(p.ftrace_events, seq),
            "streaming_profile_packet": lambda p, seq, ts: self.split.pin_to_main(seq),
        }

    def tokenize_all(self, stream: BinaryIO, progress: Callable[[float], None] = lambda f: None) -> None:
        """The first phase: every packet of the file, in file order."""
        reader = ProtoReader(stream, self.stats)
        size = max(self.trace.size, 1)
        position = _file_position(stream)
        n = 0
        split, sorter = self.split, self.sorter
        for item in reader.scanned():
            n += 1
            if split is not None:
                # Sort keys carry the packet's place in the file, so the two processes' events
                # merge in the order one process would have queued them.
                self.packet_index += 1
                sorter.arrival_base = self.packet_index << 32
            if type(item) is tuple:  # the common track-event packet, already read
                self.host_used = True  # no machine_id: a host packet
                self._tokenize_simple(*item)
            else:
                self._tokenize_packet_bytes(item)
            if n & 0x3FFF == 0:
                progress(0.5 * min(position() / size, 1.0))
        self.trace.packets_read += n
        progress(0.5)
        self.sequence_misses = sum(seq.misses for seq in self.sequences.values())

    def parse_all(self, progress: Callable[[float], None]) -> None:
        """The second phase: every tokenized event, in timestamp order."""
        for importer in (self, *self.machine_by_index):
            misses = (
                self.sequence_misses if importer is self else sum(seq.misses for seq in importer.sequences.values())
            )
            if misses:
                importer.stats.inc("interned_data_tokenizer_errors", misses)
        self.trace.metadata["trace_time_clock_id"] = self.clocks.trace_clock
        parse_track_event, parse_atrace = self.parser.parse, self.atrace.parse
        parse_ftrace, parse_packet = self.ftrace.parse_ftrace, self.ftrace.parse_packet
        machines = self.machine_by_index
        total = max(self.sorter.count, 1)
        events = self.sorter.drain()
        if self.has_kernel_events or any(m.has_kernel_events for m in machines):
            events = order_ties_by_queue(events)
        for i, (ts, event) in enumerate(events):
            kind = event[0]
            if kind <= EV_THREAD_DESCRIPTOR:  # track events and descriptors: nearly every event
                parse_track_event(ts, event)
            elif kind == EV_FTRACE:
                parse_ftrace(ts, event)
            elif kind == EV_COMPACT_SCHED:
                self.ftrace.parse_compact_sched(ts, event)
            elif kind == EV_PACKET:
                parse_packet(ts, event)
            elif kind == EV_ATRACE:
                parse_atrace(ts, event)
            elif kind == EV_MACHINE:
                machines[event[1]].parse_event(ts, event[2])
            elif kind == EV_PROFILE:
                self.profile_parser.parse(ts, event)
            if i & 0x3FFF == 0:
                progress(0.5 + 0.5 * i / total)
        progress(1.0)
        for importer in (self, *machines):
            importer.finish_parsing()

    def parse_event(self, ts: int, event: tuple) -> None:
        """One sorted event of this importer (the file's parse loop inlines this for its own)."""
        kind = event[0]
        if kind == EV_FTRACE:
            self.ftrace.parse_ftrace(ts, event)
        elif kind == EV_COMPACT_SCHED:
            self.ftrace.parse_compact_sched(ts, event)
        elif kind == EV_PACKET:
            self.ftrace.parse_packet(ts, event)
        elif kind == EV_ATRACE:
            self.atrace.parse(ts, event)
        elif kind == EV_PROFILE:
            self.profile_parser.parse(ts, event)
        else:
            self.parser.parse(ts, event)

    def finish_parsing(self) -> None:
        self.parser.finish()
        self.ftrace.finish()
        self.profile_parser.finish()
        self.descriptor_dimensions.attach(self.parser, self.trace.dimensions)
        self._write_clock_snapshots()

    # -- tokenizer -------------------------------------------------------------
    def tokenize(self, data: bytes) -> None:
        """One packet (tokenize_all reads the file's; this is for packets inside others)."""
        if self.split is not None:
            self.packet_index += 1
            self.sorter.arrival_base = self.packet_index << 32
        simple = scan_simple_track_event(data)
        if simple is not None:
            self.host_used = True  # no machine_id: a host packet
            self._tokenize_simple(*simple)
            return
        self._tokenize_packet_bytes(data)

    def _tokenize_packet_bytes(self, data: bytes) -> None:
        """tokenize() for a packet that is not a plain track event."""
        try:
            packet = TracePacket.FromString(data)
        except DecodeError:
            self.stats.inc("proto_packet_parse_errors")
            return
        # Attribute reads and HasField() are the cheapest upb accessors; this
        # is the hot loop, so the common path touches as few fields as it can.
        kind = packet.WhichOneof("data")
        if kind == "compressed_packets":
            for inner in inflate_packets(packet.compressed_packets, self.stats):
                self.tokenize(inner)
            return
        if packet.machine_id:
            if self.split is not None and self.split.role == HELPER:
                return  # other machines' packets are all the importer's
            importer = self._machine_importer(packet.machine_id)
            if importer is not None:
                importer.tokenize_packet(packet, kind)
                return
            self.tokenize_packet(packet, kind, splittable=False)
            return
        elif not self.host_used and kind != "synchronization_marker":
            self.host_used = True
        self.tokenize_packet(packet, kind)

    def _machine_importer(self, raw_machine_id: int) -> ProtoImporter | None:
        """The importer for packets from machine `raw_machine_id`; None when the host context takes them."""
        if self.adopted is None:
            # A trace whose packets all come from one machine keeps it as the host
            # row (trace_processor's adoption), if nothing was on the host before.
            adopt = not self.host_used and self.trace.model.adopt_machine(raw_machine_id)
            self.adopted = raw_machine_id if adopt else 0
        if raw_machine_id == self.adopted:
            return None
        importer = self.machine_importers.get(raw_machine_id)
        if importer is None:
            context = self.trace.for_machine(raw_machine_id)
            importer = ProtoImporter(context, _MachineSorter(self.sorter, len(self.machine_by_index)))
            self.machine_importers[raw_machine_id] = importer
            self.machine_by_index.append(importer)
        return importer

    def tokenize_packet(self, packet, kind: str | None, splittable: bool = True) -> None:
        """tokenize() for a decoded packet of this importer's machine (`splittable`: its track
        event may be the helper's; not for packets the helper skips)."""
        seq_id = packet.trusted_packet_sequence_id
        seq = self.sequences.get(seq_id)
        if seq is None:
            seq = self.sequences[seq_id] = SequenceState(seq_id)
        elif packet.previous_packet_dropped and packet.HasField("trusted_packet_sequence_id"):
            # The first packet of a sequence may say so without anything being lost to us.
            seq.dropped += 1
            causes = packet.previous_packet_dropped
            for bit in DATA_LOSS_CAUSES:
                if causes & bit:
                    seq.loss_causes[bit] = seq.loss_causes.get(bit, 0) + 1
        flags = packet.sequence_flags
        if packet.incremental_state_cleared or flags & SEQ_INCREMENTAL_STATE_CLEARED:
            seq.clear()
        elif packet.previous_packet_dropped:
            seq.valid = False
        if packet.first_packet_on_sequence:
            self.first_packet_sequences.add(seq_id)
        if flags & SEQ_NEEDS_INCREMENTAL_STATE and self._lacks_state(seq):
            return

        if packet.HasField("trace_packet_defaults"):
            self._set_defaults(seq, packet.trace_packet_defaults)
        if packet.HasField("interned_data"):
            if seq.valid:
                self._intern(seq, packet.interned_data)
            else:
                self.stats.inc("interned_data_skipped_incremental_state_invalid")

        if kind == "clock_snapshot":
            self._clock_snapshot(packet.clock_snapshot, seq_id)
            return

        has_ts = packet.HasField("timestamp")
        if has_ts:
            clock_id = packet.timestamp_clock_id if packet.HasField("timestamp_clock_id") else None
            ts = self._trace_time(packet.timestamp, clock_id, seq)
            if ts is None:
                return
        else:
            ts = self.last_ts
        if kind == "track_event":
            if not packet.HasField("trusted_packet_sequence_id"):
                self.stats.inc("track_event_missing_sequence_id")
                return
            if splittable and self.split is not None:
                self._tokenize_split(packet.track_event.SerializeToString(), seq, ts if has_ts else None)
                return
            tokenized = tokenize_track_event(self, packet.track_event.SerializeToString(), seq, ts if has_ts else None)
            if tokenized is not None:
                self.sorter.push(tokenized[0], tokenized[1], TRACK_EVENT_STREAM)
            return
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(packet, seq, ts)
        elif kind in PACKET_HANDLERS:
            # Parsed in timestamp order with everything else (process trees, stats, ...).
            self._push(ts, (EV_PACKET, kind, getattr(packet, kind).SerializeToString()))

    def _tokenize_simple(self, ts_raw: int | None, seq_id: int | None, flags: int, event: bytes) -> None:
        """tokenize() for the common packet: a TrackEvent with nothing but a timestamp,
        sequence id and flags beside it, read straight from the bytes (no TracePacket)."""
        if seq_id is None:
            self.stats.inc("track_event_missing_sequence_id")
            return
        seq = self.sequences.get(seq_id)
        if seq is None:
            seq = self.sequences[seq_id] = SequenceState(seq_id)
        elif self.skips_others and seq.split_owner == MAIN and not self.clocks.global_incremental:
            # The split helper, on a sequence it does not tokenize: nothing here changes any
            # state its own sequences need (their clocks are their own), and the importer counts.
            return
        if flags & SEQ_INCREMENTAL_STATE_CLEARED:
            seq.clear()
        if flags & SEQ_NEEDS_INCREMENTAL_STATE:
            if seq.valid:
                seq.needs_state += 1  # _lacks_state's bookkeeping, inline for the hot path
            elif self._lacks_state(seq):
                return
        if ts_raw is None:
            ts = None
        else:
            clock = seq.clock
            # The sequence's cached default clock, when not incremental: _trace_time's fast path, inline.
            ts = clock[1](ts_raw) if clock is not None and clock[2] is None else None
            if ts is None or ts < 0:
                ts = self._trace_time(ts_raw, None, seq)
                if ts is None:
                    return
            else:
                self.last_ts = ts
        split = self.split
        if split is not None:
            owner = seq.split_owner
            if owner is None:
                owner = split.owner(seq)
            if owner != split.role:
                return
        tokenized = tokenize_track_event(self.te_context, event, seq, ts)
        if tokenized is not None:
            self.sorter.push(tokenized[0], tokenized[1], TRACK_EVENT_STREAM)

    def _tokenize_split(self, event: bytes, seq: SequenceState, ts: int | None) -> None:
        """A track event when the helper shares the work: tokenized by whichever process owns
        its sequence (_tokenize_simple inlines this)."""
        split = self.split
        owner = seq.split_owner
        if owner is None:
            owner = split.owner(seq)
        if owner == split.role:
            tokenized = tokenize_track_event(self.te_context, event, seq, ts)
            if tokenized is not None:
                self.sorter.push(tokenized[0], tokenized[1], TRACK_EVENT_STREAM)

    def _push(self, ts: int, event: tuple) -> None:
        self.sorter.push(ts, event)

    def _handler_table(self) -> dict:
        """TracePacket `data` oneof name -> handler(packet, seq, ts) for everything but track events."""
        return {
            "track_descriptor": self._track_descriptor,
            "thread_descriptor": self._thread_descriptor,
            "process_descriptor": self._process_descriptor,
            "ftrace_events": lambda p, seq, ts: self._ftrace_events(p.ftrace_events, seq),
            "track_event_range_of_interest": lambda p, seq, ts: self._range_of_interest(p),
            "system_info": lambda p, seq, ts: self._system_info(p.system_info),
            "trace_config": lambda p, seq, ts: self._trace_config(p.trace_config),
            "trace_uuid": lambda p, seq, ts: self._trace_uuid(p.trace_uuid),
            "service_event": lambda p, seq, ts: self._service_event(p.service_event, ts),
            "translation_table": lambda p, seq, ts: self._translation_table(p.translation_table),
            "trace_stats": lambda p, seq, ts: self._trace_stats(p.trace_stats),
            "trace_attributes": lambda p, seq, ts: self._trace_attributes(p.trace_attributes),
            "chrome_metadata": lambda p, seq, ts: self._chrome_metadata(p.chrome_metadata),
            **self.profiles.handlers(),  # perf, Chrome sampler, StackSample, heapprofd, heap graphs
        }

    def _process_descriptor(self, packet, seq: SequenceState, ts: int) -> None:
        pd = packet.process_descriptor
        self._push(
            ts,
            (
                EV_DESCRIPTOR,
                None,
                pd.pid,
                None,
                None,
                [text(c) for c in pd.cmdline],
                text(pd.process_name) or None,
                None,
                None,
                None,
                None,
            ),
        )

    def _range_of_interest(self, packet) -> None:
        roi = packet.track_event_range_of_interest
        if not roi.HasField("start_us"):
            self.stats.inc("track_event_range_of_interest_missing_start_us")
            return
        self.parser.range_of_interest_ns = roi.start_us * 1000
        self.trace.set_metadata("range_of_interest_start_us", roi.start_us)

    def _trace_stats(self, trace_stats) -> None:
        """The tracing service's own counters (traced_*, traced_buf_*[buffer], filter_*),
        and per-buffer packet-loss stats for the sequences that wrote to each buffer."""
        for fd, value in trace_stats.ListFields():
            name = f"traced_{fd.name}"
            if name in STATS and not STATS[name].indexed and isinstance(value, int):
                self.stats.set(name, value)
        for buffer, buffer_stats in enumerate(trace_stats.buffer_stats):
            for fd, value in buffer_stats.ListFields():
                name = f"traced_buf_{fd.name}"
                if name in STATS and STATS[name].indexed:
                    self.stats.set(name, value, idx=buffer)
        if trace_stats.HasField("filter_stats"):
            fs = trace_stats.filter_stats
            for fd, value in fs.ListFields():
                if fd.name == "bytes_discarded_per_buffer":
                    for buffer, discarded in enumerate(value):
                        self.stats.set("traced_buf_bytes_filtered_out", discarded, idx=buffer)
                elif f"filter_{fd.name}" in STATS:
                    self.stats.set(f"filter_{fd.name}", value)
        for writer in trace_stats.writer_stats:
            seq = self.sequences.get(writer.sequence_id)
            if seq is None:
                continue
            buffer = writer.buffer
            self.stats.inc("traced_buf_sequence_packet_loss", seq.dropped, idx=buffer)
            if seq.needs_state_skipped and seq.needs_state_skipped == seq.needs_state:
                self.stats.inc("traced_buf_incremental_sequences_dropped", 1, idx=buffer)
            else:
                self.stats.inc("traced_buf_incremental_sequences_dropped", 0, idx=buffer)
            for bit, count in seq.loss_causes.items():
                self.stats.inc(f"traced_buf_data_loss_{DATA_LOSS_CAUSES[bit]}", count, idx=buffer)

    def _translation_table(self, table) -> None:
        if table.HasField("slice_name"):
            self.trace.slice_name_map.update(
                (text(k), text(v)) for k, v in table.slice_name.raw_to_deobfuscated_name.items()
            )
        if table.HasField("process_track_name"):
            self.trace.process_track_name_map.update(
                (text(k), text(v)) for k, v in table.process_track_name.raw_to_deobfuscated_name.items()
            )

    def _chrome_metadata(self, m) -> None:
        """Chrome's metadata packet → metadata cr-<letter>-* (a letter per packet) and cr-*."""
        prefix = f"cr-{chr(ord('a') + self.chrome_metadata_packets % 26)}-"
        self.chrome_metadata_packets += 1
        meta = self.trace.set_metadata
        if m.HasField("chrome_version_code"):
            meta(prefix + "playstore_version_code", m.chrome_version_code)
        if m.HasField("enabled_categories"):
            meta(prefix + "enabled_categories", text(m.enabled_categories))
        if m.field_trial_hashes:
            meta(
                prefix + "field_trial_hashes",
                "".join(f"{{ name: {h.name}, group: {h.group} }} " for h in m.field_trial_hashes),
            )
        if m.HasField("app_package_name"):
            meta(prefix + "package-name", text(m.app_package_name))
        if m.HasField("app_version"):
            meta(prefix + "product-version", text(m.app_version))
        if m.HasField("channel"):
            meta(prefix + "channel", m.channel)
        if m.HasField("os_name"):
            meta(prefix + "os-name", text(m.os_name))
        if m.HasField("background_tracing_metadata"):
            btm = m.background_tracing_metadata
            meta("cr-background_tracing_metadata", base64.b64encode(btm.SerializeToString()).decode("ascii"))
            if btm.HasField("scenario_name_hash"):
                meta("cr-scenario_name_hash", btm.scenario_name_hash)
            if btm.HasField("triggered_rule") and btm.triggered_rule.HasField("name_hash"):
                meta("cr-triggered_rule_name_hash", btm.triggered_rule.name_hash)

    def _trace_attributes(self, attributes) -> None:
        """User-declared key/values (TraceConfig or TracePacket) → metadata trace_attribute.<key>."""
        for attribute in attributes.attribute:
            value = attribute.long_value if attribute.HasField("long_value") else text(attribute.string_value)
            self.trace.set_metadata(f"trace_attribute.{text(attribute.key)}", value)

    def _trace_config(self, config) -> None:
        self.trace.set_metadata("trace_config_pbtxt", str(config)[:100_000])
        if (config.trace_uuid_msb or config.trace_uuid_lsb) and "trace_uuid" not in self.trace.metadata:
            self.trace.set_metadata("trace_uuid", format_uuid(config.trace_uuid_msb, config.trace_uuid_lsb))
        if config.HasField("trace_attributes"):
            self._trace_attributes(config.trace_attributes)
        if config.unique_session_name:
            self.trace.set_metadata("unique_session_name", text(config.unique_session_name))

    def _trace_uuid(self, u) -> None:
        if u.msb or u.lsb:
            self.trace.set_metadata("trace_uuid", format_uuid(u.msb, u.lsb))

    def _service_event(self, ev, ts: int) -> None:
        if ev.HasField("slow_starting_data_sources"):
            for ds in ev.slow_starting_data_sources.data_source:
                self.trace.add_metadata(
                    "slow_start_data_source", f"{text(ds.producer_name)} {text(ds.data_source_name)}"
                )
        if ev.tracing_started:
            self.trace.set_metadata("tracing_started_ns", ts)
        if ev.all_data_sources_started:
            self.trace.set_metadata("all_data_source_started_ns", ts)
        if ev.tracing_disabled:
            self.trace.set_metadata("tracing_disabled_ns", ts)

    def _lacks_state(self, seq: SequenceState) -> bool:
        """For a packet that needs incremental state: True (dropped, counted) if its sequence has none."""
        seq.needs_state += 1
        if seq.valid:
            return False
        seq.needs_state_skipped += 1
        self.stats.inc("packet_skipped_seq_needs_incremental_state_invalid")
        return True

    def _trace_time(self, raw: int, packet_clock_id: int | None, seq: SequenceState) -> int | None:
        """A packet timestamp on the trace clock (None, counted, if it cannot be converted).
        Packets on the sequence's default clock use its cached converter."""
        clock = seq.clock
        if clock is None or packet_clock_id is not None:
            return self._convert(raw, packet_clock_id, seq)
        _, converter, incremental = clock
        if incremental is not None:
            incremental[0] += raw
            raw = incremental[0] * incremental[1]
        ts = converter(raw)
        if ts is None or ts < 0:
            return self._convert(raw, None, seq, incremental_done=True)
        self.last_ts = ts
        return ts

    def _convert(
        self, raw: int, packet_clock_id: int | None, seq: SequenceState, incremental_done: bool = False
    ) -> int | None:
        """A packet timestamp on its clock (the packet's, else the sequence default,
        else BOOTTIME) → trace time; None (counted) if it cannot be converted."""
        clock_id = packet_clock_id if packet_clock_id is not None else seq.timestamp_clock_id
        if clock_id is None:
            clock_id = BOOTTIME
        key = clock_key(clock_id, seq.seq_id)
        clocks = self.clocks
        if not incremental_done and key in clocks.incremental:
            raw = clocks.resolve_incremental(key, raw)
        converter = clocks.converter(key)
        if packet_clock_id is None:
            # Cache the sequence's default clock until the clocks change.
            seq.clock = (key, converter, clocks.incremental.get(key))
            clocks.users.append(seq)
        ts = converter(raw)
        if ts is None:
            return None
        if ts < 0:
            self.stats.inc("trace_sorter_negative_timestamp_dropped")
            return None
        self.last_ts = ts
        return ts

    def _set_defaults(self, seq: SequenceState, d) -> None:
        seq.clock = None
        if d.HasField("timestamp_clock_id"):
            seq.timestamp_clock_id = d.timestamp_clock_id
        if d.HasField("track_event_defaults"):
            ted = d.track_event_defaults
            seq.default_track_uuid = ted.track_uuid if ted.HasField("track_uuid") else None
            seq.default_extra_counter_uuids = tuple(ted.extra_counter_track_uuids)
            seq.default_extra_double_counter_uuids = tuple(ted.extra_double_counter_track_uuids)

    def _intern(self, seq: SequenceState, interned) -> None:
        for fd, entries in interned.ListFields():
            spec = INTERNED_FIELDS.get(fd.name)
            if spec is None:
                continue
            number, convert = spec
            table = seq.interned.setdefault(number, {})
            for e in entries:
                if not e.iid:
                    self.stats.inc("interned_data_tokenizer_errors")
                    continue
                table[e.iid] = convert(e)
        # Track-dimension strings (fields the perfetto package does not know) come
        # through as unknown fields: only then is the message read again.
        unknown = UnknownFieldSet(interned)
        if len(unknown) and any(f.field_number in INTERNED_DIMENSION_FIELDS for f in unknown):
            intern_dimension_strings(interned.SerializeToString(), seq.interned, self.stats)

    def _clock_snapshot(self, snap, seq_id: int) -> None:
        if snap.HasField("primary_trace_clock") and snap.primary_trace_clock:
            self.clocks.set_trace_clock(snap.primary_trace_clock)
        elif not self.clocks.trace_clock_fixed:
            self.clocks.set_trace_clock(BOOTTIME)
        self.clocks.add_snapshot(
            [(c.clock_id, c.timestamp, c.is_incremental, c.unit_multiplier_ns) for c in snap.clocks], seq_id
        )

    def _thread_descriptor(self, packet, seq: SequenceState, ts: int) -> None:
        if not packet.HasField("trusted_packet_sequence_id"):
            self.stats.inc("thread_descriptor_missing_sequence_id")
            return
        if not seq.valid:
            self.stats.inc("thread_descriptor_skipped_incremental_state_invalid")
            return
        td = packet.thread_descriptor
        self._set_sequence_thread(seq, td)
        self._push(
            ts,
            (
                EV_THREAD_DESCRIPTOR,
                None,
                td.pid,
                td.tid,
                text(td.thread_name) or None,
                None,
                None,
                None,
                None,
                None,
                None,
            ),
        )

    @staticmethod
    def _set_sequence_thread(seq: SequenceState, td) -> None:
        seq.thread = (td.pid, td.tid)
        seq.ref_ts = td.reference_timestamp_us * 1000
        seq.ref_thread_ts = td.reference_thread_time_us * 1000
        seq.ref_thread_ic = td.reference_thread_instruction_count

    def _track_descriptor(self, packet, seq: SequenceState, ts: int) -> None:
        td = packet.track_descriptor
        if not td.HasField("uuid"):
            self.stats.inc("track_descriptor_missing_uuid")
            return
        r = Reservation(td.uuid)
        r.parent_uuid = td.parent_uuid
        if td.HasField("name"):
            r.name = text(td.name)
        elif td.HasField("static_name"):
            r.name = text(td.static_name)
        elif td.HasField("atrace_name"):
            r.name = text(td.atrace_name)
        r.description = text(td.description) or None
        if td.HasField("child_ordering"):
            r.child_ordering = {1: "lexicographic", 2: "chronological", 3: "explicit"}.get(td.child_ordering)
        if td.HasField("sibling_order_rank"):
            r.sibling_order_rank = td.sibling_order_rank
        if td.HasField("sibling_merge_behavior"):
            r.merge = {0: "name", 1: "name", 2: None, 3: "key"}.get(td.sibling_merge_behavior, "name")
            if r.merge == "key":
                r.merge_key = (
                    text(td.sibling_merge_key)
                    if td.HasField("sibling_merge_key")
                    else (f"sibling_merge_key_int:{td.sibling_merge_key_int}")
                )
        r.seq_id = seq.seq_id
        if td.HasField("process_ordering") and td.process_ordering == 1:
            r.process_ordering = "explicit"
        if td.HasField("thread_ordering") and td.thread_ordering == 1:
            r.thread_ordering = "explicit"
        process = thread = None
        if td.HasField("thread"):
            t = td.thread
            if not (t.HasField("pid") and t.HasField("tid")):
                self.stats.inc("track_descriptor_thread_missing_pid_tid")
                return
            r.pid, r.tid = t.pid, t.tid
            r.use_separate_track = td.disallow_merging_with_system_tracks
            if seq.valid:
                self._set_sequence_thread(seq, t)
            thread = t
        elif td.HasField("process"):
            p = td.process
            if not p.HasField("pid"):
                self.stats.inc("track_descriptor_process_missing_pid")
                return
            r.pid = p.pid
            process = p
        elif td.HasField("counter"):
            c = td.counter
            details = CounterDetails()
            if c.categories:
                details.category = ",".join(text(x) for x in c.categories)
            details.is_incremental = c.is_incremental
            details.unit_multiplier = c.unit_multiplier
            details.y_axis_share_key = text(c.y_axis_share_key) or None
            if c.type == COUNTER_THREAD_TIME_NS:
                details.unit, details.builtin_type = "ns", "thread_time"
                if r.name is None:
                    r.name = "thread_time"
            elif c.type == COUNTER_THREAD_INSTRUCTION_COUNT:
                details.unit, details.builtin_type = "count", "thread_instruction_count"
                if r.name is None:
                    r.name = "thread_instruction_count"
            elif c.unit in UNIT_NAMES:
                details.unit = UNIT_NAMES[c.unit]
            else:
                details.unit = text(c.unit_name) or None
            r.counter = details
        elif td.HasField("state"):
            r.is_state = True
        existing = self.reservations.get(td.uuid)
        if existing is None:
            self.reservations[td.uuid] = r
        elif existing.same_track(r):
            if r.name is not None and (existing.name is None or r.merge is None):
                existing.name = r.name
        else:
            self.stats.inc("track_descriptor_conflicting_reservation")
            return
        unknown = UnknownFieldSet(td)
        if len(unknown) and any(f.field_number == TRACK_DESCRIPTOR_DIMENSIONS for f in unknown):
            # TrackDescriptor.dimensions: iids resolved now, against this sequence's interned data.
            self.descriptor_dimensions.read(td.uuid, td.SerializeToString(), seq.interned)
        if thread is not None:
            chrome = td.chrome_thread if td.HasField("chrome_thread") else None
            self._push(
                ts,
                (
                    EV_DESCRIPTOR,
                    td.uuid,
                    thread.pid,
                    thread.tid,
                    text(thread.thread_name) or None,
                    None,
                    None,
                    None,
                    chrome.thread_type if chrome else None,
                    None,
                    None,
                ),
            )
        elif process is not None:
            chrome = td.chrome_process if td.HasField("chrome_process") else None
            labels = [text(x) for x in process.process_labels]
            self._push(
                ts,
                (
                    EV_DESCRIPTOR,
                    td.uuid,
                    process.pid,
                    None,
                    None,
                    [text(c) for c in process.cmdline],
                    text(process.process_name) or None,
                    process.start_timestamp_ns or None,
                    (
                        chrome.process_type if chrome.HasField("process_type") else None,
                        text(chrome.host_app_package_name) or None,
                        chrome.crash_trace_id if chrome.HasField("crash_trace_id") else None,
                    )
                    if chrome
                    else None,
                    labels or None,
                    process.legacy_sort_index
                    if process.HasField("legacy_sort_index")
                    else (chrome.legacy_sort_index if chrome and chrome.HasField("legacy_sort_index") else None),
                ),
            )

    def _ftrace_events(self, bundle, seq: SequenceState) -> None:
        if not bundle.HasField("cpu"):
            self.stats.inc("ftrace_bundle_tokenizer_errors")
            return
        cpu = bundle.cpu
        if cpu >= MAX_FTRACE_CPUS:
            self.stats.inc("ftrace_bundle_tokenizer_errors")  # a corrupt bundle
            return
        if bundle.lost_events:
            self.stats.set("ftrace_cpu_has_data_loss", 1, cpu)
        clock = self._ftrace_clock(bundle, seq)
        if clock is None:
            return
        self.has_kernel_events = True
        if bundle.HasField("compact_sched"):
            self._compact_sched(cpu, clock, bundle.compact_sched)
        to_trace_time = self.clocks.to_trace_time
        for event in bundle.event:
            if not event.HasField("timestamp"):
                self.stats.inc("ftrace_bundle_tokenizer_errors")
                continue
            kind = event.WhichOneof("event")
            if kind is None:
                self.stats.inc("ftrace_missing_event_id")
                continue
            ts = to_trace_time(clock, event.timestamp)
            if ts is None or not 0 <= ts <= INT64_MAX:
                continue
            symbol_field = KERNEL_SYMBOL_FIELDS.get(kind)
            address = getattr(getattr(event, kind), symbol_field) if symbol_field else 0
            if address:
                # The kernel function is interned on this sequence: resolve it while the state is here.
                symbol = seq.interned.get(26, {}).get(address)
                self._push(ts, (EV_FTRACE, cpu, event.SerializeToString(), symbol))
            else:
                self._push(ts, (EV_FTRACE, cpu, event.SerializeToString()))
        if cpu not in self.ftrace_cpus_seen:
            self.ftrace_cpus_seen.add(cpu)
            self._ftrace_data_start(bundle, clock)

    def _ftrace_bundle_clock(self, bundle, seq: SequenceState) -> None:
        """Of an ftrace bundle, only its effect on the clocks (the split helper's share)."""
        if bundle.HasField("cpu") and bundle.cpu < MAX_FTRACE_CPUS:
            self._ftrace_clock(bundle, seq)

    def _ftrace_clock(self, bundle, seq: SequenceState):
        """The clock key of a bundle's timestamps; records the ftrace↔boot snapshot it carries."""
        if not bundle.HasField("ftrace_clock") or bundle.ftrace_clock == FTRACE_CLOCK_UNSPECIFIED:
            return BOOTTIME
        if bundle.ftrace_clock == FTRACE_CLOCK_MONO_RAW:
            clock = MONOTONIC_RAW
        elif bundle.ftrace_clock in (FTRACE_CLOCK_GLOBAL, FTRACE_CLOCK_LOCAL):
            clock = clock_key(SEQUENCE_SCOPED_CLOCK, seq.seq_id)
        else:
            self.stats.inc("ftrace_bundle_tokenizer_errors")  # an unknown clock: the times mean nothing
            return None
        if bundle.HasField("ftrace_timestamp") and bundle.HasField("boot_timestamp"):
            clock_id = clock if isinstance(clock, int) else SEQUENCE_SCOPED_CLOCK
            self.clocks.add_snapshot(
                [(clock_id, bundle.ftrace_timestamp, False, 1), (BOOTTIME, bundle.boot_timestamp, False, 1)], seq.seq_id
            )
        return clock

    def _compact_sched(self, cpu: int, clock, compact) -> None:
        """compact_sched: parallel arrays of sched_switch / sched_waking fields, delta-coded times."""
        strings = [text(s) for s in compact.intern_table]
        to_trace_time = self.clocks.to_trace_time
        switch = (
            compact.switch_timestamp,
            compact.switch_prev_state,
            compact.switch_next_pid,
            compact.switch_next_prio,
            compact.switch_next_comm_index,
        )
        waking = (
            compact.waking_timestamp,
            compact.waking_pid,
            compact.waking_target_cpu,
            compact.waking_prio,
            compact.waking_comm_index,
        )
        error = len({len(a) for a in switch}) > 1 or len({len(a) for a in waking}) > 1
        raw_ts = 0
        for delta, prev_state, next_pid, next_prio, comm_index in zip(*switch):
            raw_ts += delta
            if comm_index >= len(strings):
                error = True
                break
            ts = to_trace_time(clock, raw_ts)
            if ts is None:
                break
            self._push(ts, (EV_COMPACT_SCHED, cpu, "switch", prev_state, next_pid, next_prio, strings[comm_index]))
        raw_ts = 0
        flags = compact.waking_common_flags
        for i, (delta, pid, _target_cpu, _prio, comm_index) in enumerate(zip(*waking)):
            raw_ts += delta
            if comm_index >= len(strings):
                error = True
                break
            ts = to_trace_time(clock, raw_ts)
            if ts is None:
                break
            self._push(
                ts, (EV_COMPACT_SCHED, cpu, "waking", pid, strings[comm_index], flags[i] if i < len(flags) else None)
            )
        if error:
            self.stats.inc("compact_sched_has_parse_errors")

    def _ftrace_data_start(self, bundle, clock) -> None:
        """ftrace_latest_data_start_ns: the latest time from which every cpu's ftrace
        data is complete, from the first bundle of each cpu (perfetto v44+)."""
        if bundle.HasField("previous_bundle_end_timestamp"):
            raw = bundle.previous_bundle_end_timestamp
        elif bundle.HasField("last_read_event_timestamp"):
            raw = bundle.last_read_event_timestamp
        else:
            return
        ts = self.clocks.to_trace_time(clock, raw)
        if ts is None:
            return
        latest = self.trace.metadata.get("ftrace_latest_data_start_ns")
        if latest is None or ts > latest:  # type: ignore[operator]
            self.trace.set_metadata("ftrace_latest_data_start_ns", ts)

    def _system_info(self, info) -> None:
        u = info.utsname
        sysname, release, version, machine = (text(u.sysname), text(u.release), text(u.version), text(u.machine))
        for key, value in (
            ("system_name", sysname),
            ("system_release", release),
            ("system_version", version),
            ("system_machine", machine),
        ):
            if value:
                self.trace.set_metadata(key, value)
        if info.system_ram_bytes:
            self.trace.set_metadata("system_ram_bytes", info.system_ram_bytes)
            self.trace.set_metadata("system_ram_gb", round(info.system_ram_bytes / 1e9))
        if info.android_build_fingerprint:
            self.trace.set_metadata("android_build_fingerprint", text(info.android_build_fingerprint))
        if info.HasField("timezone_off_mins"):
            self.trace.set_metadata("timezone_off_mins", info.timezone_off_mins)
        self.trace.page_size = info.page_size or 4096
        m = self.trace.machine
        if info.HasField("machine_name"):
            m.name = text(info.machine_name)
        if info.HasField("utsname"):
            m.sysname, m.release, m.version, m.arch = sysname or None, release or None, version or None, machine or None
        if info.HasField("android_build_fingerprint"):
            m.android_build_fingerprint = text(info.android_build_fingerprint)
        if info.HasField("android_device_manufacturer"):
            m.android_device_manufacturer = text(info.android_device_manufacturer)
            self.trace.set_metadata("android_device_manufacturer", m.android_device_manufacturer)
        if info.HasField("android_sdk_version"):
            m.android_sdk_version = info.android_sdk_version
            self.trace.set_metadata("android_sdk_version", info.android_sdk_version)
        if info.HasField("num_cpus"):
            m.num_cpus = info.num_cpus
        if info.HasField("system_ram_bytes"):
            m.system_ram_bytes = info.system_ram_bytes

    def _write_clock_snapshots(self) -> None:
        by_snapshot: dict[int, dict[int, int]] = {}
        for snapshot_id, clock_id, _name, value in self.clocks.snapshot_rows:
            by_snapshot.setdefault(snapshot_id, {})[clock_id] = value
        for snapshot_id, clock_id, name, value in self.clocks.snapshot_rows:
            ts = by_snapshot[snapshot_id].get(self.clocks.trace_clock)
            self.trace.storage.insert(
                "clock_snapshot",
                (
                    None if ts is None else to_int64(ts),
                    clock_id,
                    name,
                    to_int64(value),
                    snapshot_id,
                    self.trace.machine_id,
                ),
            )
