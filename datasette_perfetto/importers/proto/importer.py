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

from collections.abc import Callable
from functools import partial
from typing import BinaryIO

from google.protobuf.message import DecodeError
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ...model import HOST_MACHINE_ID, TraceContext
from ...scratch import signals_held
from ...stats import Stats
from ...storage import to_int64
from ..common.event_kinds import (
    EV_ATRACE,
    EV_COMPACT_SCHED,
    EV_DESCRIPTOR,
    EV_FTRACE,
    EV_MACHINE,
    EV_PACKET,
    EV_PROFILE,
    EV_THREAD_DESCRIPTOR,
)
from ..common.options import ImportOptions
from ..common.sorter import Sorter
from ..common.streams import READ_SHARE, file_position, parse_progress, read_progress
from ..common.values import string_map_items, text
from .atrace import AtraceParser
from .clock_tracker import BOOTTIME, ClockTracker, clock_key, remote_clock_offsets
from .content_analyzer import ProtoContentAnalyzer
from .descriptor_dimensions import (
    INTERNED_DIMENSION_FIELDS,
    TRACK_DESCRIPTOR_DIMENSIONS,
    DescriptorDimensions,
    intern_dimension_strings,
)
from .ftrace import FtraceParser, order_ties_by_queue
from .ftrace_tokenizer import FtraceTokenizer
from .gpu import INTERNED_GPU_EXTENSIONS, gpu_state, intern_gpu_extensions
from .packet_handlers import PACKET_HANDLERS, TOKENIZE_HANDLERS
from .profiles import UNSYMBOLIZED_SOURCE_LOCATIONS, ProfileParser, ProfileTokenizer, number_generations_as_helper
from .reader import ProtoReader, inflate_packets, scan_simple_track_event
from .sequence_state import INTERNED_FIELDS, SequenceState
from .split_tokenize import (
    HELPER,
    MAIN,
    SHARE_TURN_SHIFT,
    SHARED,
    OwnedContext,
    SequenceClaims,
    SequenceSplit,
    SplitFailed,
    split_wanted,
    start_helper,
)
from .trace_diagnostics import run_rules as run_trace_diagnostics
from .trace_metadata import DATA_LOSS_CAUSES
from .track_descriptor import Reservation, chrome_thread_name, reservation_from
from .track_event_extensions import TrackEventExtensions
from .track_event_parser import TrackEventParser
from .track_event_tokenizer import tokenize_track_event
from .unknown import unknown_fields

# Sorter streams: at equal timestamps, descriptors (0) are parsed before track events (1).
TRACK_EVENT_STREAM = 1

# TranslationTable fields with hash -> name maps: (map field, the arg key its hashes are in).
TRANSLATED_HASHES = {
    "chrome_histogram": (("hash_to_name", "chrome_histogram_sample.name_hash"),),
    "chrome_user_event": (("action_hash_to_name", "chrome_user_event.action_hash"),),
    "chrome_performance_mark": (
        ("site_hash_to_name", "chrome_hashed_performance_mark.site_hash"),
        ("mark_hash_to_name", "chrome_hashed_performance_mark.mark_hash"),
    ),
    "chrome_study": (("hash_to_name", "chrome_trigger.name_hash"),),
}
SEQ_INCREMENTAL_STATE_CLEARED = 1
SEQ_NEEDS_INCREMENTAL_STATE = 2

TracePacket = pb.TracePacket


class _MachineSorter:
    """A remote machine's view of the file's sorter: its events are wrapped with the
    machine's index so the parse phase hands them to that machine's parsers."""

    __slots__ = ("sorter", "index")

    def __init__(self, sorter: Sorter, index: int) -> None:
        self.sorter = sorter
        self.index = index

    def push(self, ts: int, event: tuple, stream: int = 0) -> None:
        self.sorter.push(ts, (EV_MACHINE, self.index, event), stream)


class _Discarded:
    """Where the split helper's events other than its own track events go: they are the importer's."""

    __slots__ = ()

    def push(self, ts: int, event: tuple, stream: int = 0) -> None:
        pass


class ProtoImporter:
    def __init__(
        self, trace: TraceContext, options: ImportOptions | None = None, sorter: Sorter | _MachineSorter | None = None
    ) -> None:
        self.trace = trace
        self.options = options if options is not None else ImportOptions()
        self.stats = trace.stats
        self.clocks = ClockTracker(self.stats)
        self.sequences: dict[int, SequenceState] = {}
        # Track events go here; other machines' importers push into the host's sorter through a _MachineSorter.
        self.sorter: Sorter | _MachineSorter = sorter if sorter is not None else Sorter()
        # Events other than track events (descriptors, ftrace, packets parsed in order, ...).
        self.queue: Sorter | _MachineSorter | _Discarded = self.sorter
        self.reservations: dict[int, Reservation] = {}
        # Counter uuid -> (unit multiplier, incremental); reservations are final
        # once seen (a conflicting re-declaration is rejected), so this can cache.
        self.counter_specs: dict[int, tuple] = {}
        self.first_packet_sequences: set[int] = set()
        self.parser = TrackEventParser(trace, self.reservations, self.first_packet_sequences)
        # TrackEvent extension fields (bundled, and declared by the trace): one set for every machine.
        self.extensions = self.parser.extensions = TrackEventExtensions()
        self.atrace = AtraceParser(trace, self.parser.thread_track)
        self.ftrace = FtraceParser(trace, self.parser.thread_track)
        self.ftrace.ftrace_raw = self.options.content.ftrace_raw
        self.ftrace.clocks = self.clocks  # packets carrying raw clock values convert them at parse time
        self.parser.gpu_state = lambda: gpu_state(self.ftrace)
        self.ftrace_tokenizer = FtraceTokenizer(trace, self.clocks, self.push)
        self.last_ts = 0
        self.profiles = ProfileTokenizer(self)
        self.profile_parser = ProfileParser(trace, self.profiles)
        self._handlers = self._handler_table()
        self.descriptor_dimensions = DescriptorDimensions(self.stats)
        # Multi-machine traces (TracePacket.machine_id): one importer per other machine,
        # sharing this one's sorter. `adopted` is the raw id of a machine the host context
        # took over (0: none), decided at the first packet from another machine.
        self.machine_importers: dict[int, ProtoImporter] = {}
        self.machine_by_index: list[ProtoImporter] = []
        self.adopted: int | None = None
        self.host_used = False
        self.host_clocks: ClockTracker | None = None  # another machine's importer: the host's clocks
        # Tokenizing split with a forked helper process (split_tokenize.py); None: this process does it all.
        self.split: SequenceSplit | None = None
        # What tokenize_track_event reads (stats, clocks, reservations).
        self.te_context: ProtoImporter | OwnedContext = self
        self.skips_others = False  # the split helper: skips the plain track-event packets of the importer's sequences
        self.packet_index = 0  # packets seen so far, inner ones of compressed_packets included (split only)
        # trace_processor's proto content analysis (ingest --analyze-proto-content): the file's importer only, as
        # trace_processor leaves other machines' packets out. None: nothing of it runs.
        self.analyzer: ProtoContentAnalyzer | None = None
        if self.options.content.analyze_proto_content and sorter is None:
            self.analyzer = self.parser.content = ProtoContentAnalyzer(self)
            self.analyzer.install()

    def run(self, stream: BinaryIO, progress: Callable[[float], None]) -> None:
        """Imports the trace; progress(f) reports the share done, f from 0 to 1
        (reading the file is the first half, parsing the sorted events the second)."""
        helper = None
        reopen = self.options.reopen
        try:
            if reopen is not None and split_wanted(self.options.split_tokenize, self.trace.size):
                # Forked and bound as one step: a signal held over the fork is raised once `helper` holds it.
                with signals_held():
                    helper, claims = start_helper(self, reopen)  # the child starts from this same, still empty, state
                self.split = SequenceSplit(MAIN, claims, self.reservations)
            self.tokenize_all(stream, progress)
            if helper is not None:
                stats, misses, runs, count = helper.result()
                self.stats.add(stats)
                self.sequence_misses += misses
                self._file_sorter().take_over(runs, count)
                helper.discard_runs()
        except BaseException:
            if helper is not None:
                helper.stop()
            raise
        self.parse_all(progress)

    # -- the split helper's side (split_tokenize.SplitTokenizer) ----------------
    def become_helper(self, claims: SequenceClaims, sorter: Sorter) -> None:
        """In the forked helper: tokenize only the track events of the sequences it
        owns, into `sorter`; keep the rest of the tokenizer state as the importer
        does, silently."""
        split = self.split = SequenceSplit(HELPER, claims, self.reservations)
        number_generations_as_helper()
        self.sorter = sorter
        if self.analyzer is not None:
            self.analyzer.become_helper(sorter)  # its track events carry their packets; the importer analyzes
        self.queue = _Discarded()  # every other event is the importer's
        self.skips_others = True
        self.trace.model.storage.writer = None  # the parent's: never to be written from here
        self.te_context = OwnedContext(self)  # stats of the owned events, reported to the importer
        self._handlers = {
            "track_descriptor": self._track_descriptor,
            "thread_descriptor": self._thread_descriptor,
            "ftrace_events": lambda p, seq, ts: self.ftrace_tokenizer.bundle_clock(p.ftrace_events, seq),
            "streaming_profile_packet": lambda p, seq, ts: split.pin_to_main(seq),
        }

    def helper_share(self) -> tuple[Stats, int]:
        """In the helper, after tokenize_all: the stats its own track events counted, and
        the interned lookups it missed (made only while tokenizing track events: all its own)."""
        return self.te_context.stats, self.sequence_misses

    def tokenize_all(self, stream: BinaryIO, progress: Callable[[float], None] = lambda f: None) -> None:
        """The first phase: every packet of the file, in file order."""
        reader = ProtoReader(stream, self.stats)
        size = max(self.trace.size, 1)
        position = file_position(stream)
        n = 0
        split, sorter = self.split, self._file_sorter()
        try:
            for item in reader.scanned() if self.analyzer is None else self.analyzer.packets(reader):
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
                    progress(read_progress(position(), size))
                    if split is not None and split.claims.failed:
                        raise SplitFailed("the other tokenizer process found the split impossible")
        except SplitFailed:
            if split is not None:
                split.claims.fail()  # the other process stops too
            raise
        self.trace.packets_read += n
        progress(READ_SHARE)
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
        if isinstance(self.clocks.trace_clock, int) and self.trace.machine_id == HOST_MACHINE_ID:
            self.trace.model.set_trace_clock(self.clocks.trace_clock, self.clocks.global_snapshots())
        parse_track_event, parse_atrace = self.parser.parse, self.atrace.parse
        parse_ftrace, parse_packet = self.ftrace.parse_ftrace, self.ftrace.parse_packet
        machines = self.machine_by_index
        sorter = self._file_sorter()
        total = max(sorter.count, 1)
        events = sorter.drain()
        if any(importer.ftrace_tokenizer.has_kernel_events for importer in (self, *machines)):
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
                progress(parse_progress(i, total))
        progress(1.0)
        for importer in (self, *machines):
            importer.finish_parsing()
        for importer in (self, *machines):
            run_trace_diagnostics(importer)  # trace_processor's trace doctor: once every context is complete

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
            self._file_sorter().arrival_base = self.packet_index << 32
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
            importer = ProtoImporter(
                context,
                ImportOptions(content=self.options.content),
                sorter=_MachineSorter(self._file_sorter(), len(self.machine_by_index)),
            )
            importer.host_clocks = self.clocks
            importer.extensions = importer.parser.extensions = self.extensions
            self.machine_importers[raw_machine_id] = importer
            self.machine_by_index.append(importer)
        return importer

    def tokenize_packet(self, packet, kind: str | None, splittable: bool = True) -> None:
        """tokenize() for a decoded packet of this importer's machine (`splittable`: its track
        event may be the helper's; not for packets the helper skips)."""
        seq = self._packet_sequence(packet)
        if packet.sequence_flags & SEQ_NEEDS_INCREMENTAL_STATE and self._lacks_state(seq):
            return
        if packet.HasField("trace_packet_defaults"):
            self._set_defaults(seq, packet.trace_packet_defaults)
        if packet.HasField("interned_data"):
            if seq.valid:
                self._intern(seq, packet.interned_data)
            else:
                self.stats.inc("interned_data_skipped_incremental_state_invalid")
        if kind == "clock_snapshot":
            self._clock_snapshot(packet.clock_snapshot, seq.seq_id)
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
            self._track_event_packet(packet, seq, ts if has_ts else None, splittable)
            return
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(packet, seq, ts)
        elif kind in PACKET_HANDLERS:
            # Parsed in timestamp order with everything else (process trees, stats, ...).
            self.push(ts, (EV_PACKET, kind, getattr(packet, kind).SerializeToString()))

    def _packet_sequence(self, packet) -> SequenceState:
        """The packet's sequence state, after the packet's effect on it (loss, clearing)."""
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
        if packet.incremental_state_cleared or packet.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED:
            seq.clear()
        elif packet.previous_packet_dropped:
            seq.valid = False
        if packet.first_packet_on_sequence:
            self.first_packet_sequences.add(seq_id)
        return seq

    def _track_event_packet(self, packet, seq: SequenceState, ts: int | None, splittable: bool) -> None:
        if not packet.HasField("trusted_packet_sequence_id"):
            self.stats.inc("track_event_missing_sequence_id")
            return
        if splittable and self.split is not None:
            self._tokenize_split(self.split, packet.track_event.SerializeToString(), seq, ts)
            return
        tokenized = tokenize_track_event(self, packet.track_event.SerializeToString(), seq, ts)
        if tokenized is not None:
            self.sorter.push(tokenized[0], tokenized[1], TRACK_EVENT_STREAM)

    def _tokenize_simple(
        self, ts_raw: int | None, seq_id: int | None, flags: int, event: bytes, clock_id: int | None
    ) -> None:
        """tokenize() for the common packet: a TrackEvent with nothing but a timestamp (perhaps
        on a clock of its own), sequence id and flags beside it, read straight from the bytes
        (no TracePacket)."""
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
        elif clock_id is not None:
            ts = self._trace_time(ts_raw, clock_id, seq)
            if ts is None:
                return
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
                owner = split.owner(seq, event)
            if owner != split.role and (owner != SHARED or (self.packet_index >> SHARE_TURN_SHIFT) & 1 != split.role):
                return
        tokenized = tokenize_track_event(self.te_context, event, seq, ts)
        if tokenized is not None:
            self.sorter.push(tokenized[0], tokenized[1], TRACK_EVENT_STREAM)

    def _tokenize_split(self, split: SequenceSplit, event: bytes, seq: SequenceState, ts: int | None) -> None:
        """A track event when the helper shares the work: tokenized by whichever process owns
        its sequence, or has its turn of a shared one (_tokenize_simple inlines this)."""
        owner = seq.split_owner
        if owner is None:
            owner = split.owner(seq, event)
        if owner == SHARED:
            owner = (self.packet_index >> SHARE_TURN_SHIFT) & 1
        if owner == split.role:
            tokenized = tokenize_track_event(self.te_context, event, seq, ts)
            if tokenized is not None:
                self.sorter.push(tokenized[0], tokenized[1], TRACK_EVENT_STREAM)

    def _file_sorter(self) -> Sorter:
        """The file's sorter, for what only the importer ingest() runs does (other machines'
        importers share its sorter through a _MachineSorter)."""
        assert isinstance(self.sorter, Sorter)
        return self.sorter

    def push(self, ts: int, event: tuple) -> None:
        """Queues a parse-phase event other than a track event."""
        self.queue.push(ts, event)

    def _streaming_profile_packet(self, packet, seq: SequenceState, ts: int) -> None:
        if self.split is not None:
            # Its samples continue the delta timestamps of the sequence's track events,
            # and only the importer sees these packets: the importer owns the sequence.
            self.split.pin_to_main(seq)
        self.profiles.streaming_profile(packet, seq, ts)

    def _handler_table(self) -> dict:
        """TracePacket `data` oneof name -> handler(packet, seq, ts) for everything but track events."""
        return {
            "track_descriptor": self._track_descriptor,
            "thread_descriptor": self._thread_descriptor,
            "process_descriptor": self._process_descriptor,
            "ftrace_events": lambda p, seq, ts: self.ftrace_tokenizer.bundle(p.ftrace_events, seq),
            "track_event_range_of_interest": lambda p, seq, ts: self._range_of_interest(p),
            "translation_table": lambda p, seq, ts: self._translation_table(p.translation_table),
            "extension_descriptor": lambda p, seq, ts: self.extensions.declare(p.extension_descriptor),
            "remote_clock_sync": lambda p, seq, ts: self._remote_clock_sync(p.remote_clock_sync),
            **self.profiles.handlers(),  # perf, StackSample, heapprofd, heap graphs
            "streaming_profile_packet": self._streaming_profile_packet,  # Chrome's sampler
            # Data sources' own tokenize-time handlers (packet_handlers.tokenize_handler).
            **{name: partial(fn, self) for name, fn in TOKENIZE_HANDLERS.items()},
        }

    def _process_descriptor(self, packet, seq: SequenceState, ts: int) -> None:
        pd = packet.process_descriptor
        self.push(
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
                (pd.chrome_process_type, None, None, "legacy") if pd.HasField("chrome_process_type") else None,
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

    def _translation_table(self, table) -> None:
        # Each packet holds one table (a oneof).
        translation = self.trace.args_translation
        for field, maps in TRANSLATED_HASHES.items():
            if table.HasField(field):
                for map_field, hash_key in maps:
                    translation.add(hash_key, string_map_items(getattr(table, field), map_field))
        if table.HasField("slice_name"):
            self.trace.slice_name_map.update(string_map_items(table.slice_name, "raw_to_deobfuscated_name"))
        if table.HasField("process_track_name"):
            self.trace.process_track_name_map.update(
                string_map_items(table.process_track_name, "raw_to_deobfuscated_name")
            )

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
            if number == UNSYMBOLIZED_SOURCE_LOCATIONS:
                self.trace.args_translation.expect_mojo_methods()  # slices' mojo args need translating
            table = seq.interned.setdefault(number, {})
            for e in entries:
                if not e.iid:
                    self.stats.inc("interned_data_tokenizer_errors")
                    continue
                table[e.iid] = convert(e)
        # Track-dimension strings (fields the perfetto package does not know) come
        # through as unknown fields: only then is the message read again.
        unknown = unknown_fields(interned)
        if len(unknown):
            if any(f.field_number in INTERNED_DIMENSION_FIELDS for f in unknown):
                intern_dimension_strings(interned.SerializeToString(), seq.interned, self.stats)
            if any(f.field_number in INTERNED_GPU_EXTENSIONS for f in unknown):
                intern_gpu_extensions(unknown, seq.interned, self.stats)  # compute kernels (gpu.py)

    def _clock_snapshot(self, snap, seq_id: int) -> None:
        if snap.HasField("primary_trace_clock") and snap.primary_trace_clock:
            self.clocks.set_trace_clock(snap.primary_trace_clock)
        elif not self.clocks.trace_clock_fixed:
            self.clocks.set_trace_clock(BOOTTIME)
        self.clocks.add_snapshot(
            [(c.clock_id, c.timestamp, c.is_incremental, c.unit_multiplier_ns) for c in snap.clocks], seq_id
        )

    def _remote_clock_sync(self, sync) -> None:
        """Another machine's clocks against the host's: its client snapshots join its clock graph,
        and the offsets estimated from the rounds tie its clocks to the host's trace clock."""
        host_clocks = self.host_clocks
        if host_clocks is None or not isinstance(host_clocks.trace_clock, int):
            return  # the host's own (or the adopted machine's): nothing to tie
        rounds: list[dict[int, tuple[int, int]]] = []
        for synced in sync.synced_clocks:
            pairs: dict[int, list[int]] = {}
            for c in synced.host_clocks.clocks:
                pairs.setdefault(c.clock_id, [0, 0])[0] = c.timestamp
            for c in synced.client_clocks.clocks:
                pairs.setdefault(c.clock_id, [0, 0])[1] = c.timestamp
            rounds.append({clock_id: (h, c) for clock_id, (h, c) in pairs.items()})
            if synced.client_clocks.clocks:
                self.clocks.add_snapshot([(c.clock_id, c.timestamp, False, 1) for c in synced.client_clocks.clocks], 0)
        self.clocks.sync_to_host(remote_clock_offsets(rounds), host_clocks.trace_clock)

    def _thread_descriptor(self, packet, seq: SequenceState, ts: int) -> None:
        if not packet.HasField("trusted_packet_sequence_id"):
            self.stats.inc("thread_descriptor_missing_sequence_id")
            return
        if not seq.valid:
            self.stats.inc("thread_descriptor_skipped_incremental_state_invalid")
            return
        td = packet.thread_descriptor
        self._set_sequence_thread(seq, td)
        self.push(
            ts,
            (
                EV_THREAD_DESCRIPTOR,
                None,
                td.pid,
                td.tid,
                text(td.thread_name)
                or (chrome_thread_name(td.chrome_thread_type) if td.HasField("chrome_thread_type") else None),
                None,
                None,
                None,
                None,
                None,
                None,
            ),
        )

    @staticmethod
    def _set_sequence_thread(seq: SequenceState, td, tid: int | None = None) -> None:
        seq.thread = (td.pid, td.tid if tid is None else tid)  # tid: a sandboxed thread's synthetic one
        seq.ref_ts = td.reference_timestamp_us * 1000
        seq.ref_thread_ts = td.reference_thread_time_us * 1000
        seq.ref_thread_ic = td.reference_thread_instruction_count

    def _track_descriptor(self, packet, seq: SequenceState, ts: int) -> None:
        td = packet.track_descriptor
        r = reservation_from(td, seq.seq_id, self.stats)
        if r is None:
            return
        if td.HasField("thread") and seq.valid:
            self._set_sequence_thread(seq, td.thread, r.tid)
        if not self._reserve(r):
            return
        unknown = unknown_fields(td)
        if len(unknown) and any(f.field_number == TRACK_DESCRIPTOR_DIMENSIONS for f in unknown):
            # TrackDescriptor.dimensions: iids resolved now, against this sequence's interned data.
            self.descriptor_dimensions.read(td.uuid, td.SerializeToString(), seq.interned)
        if td.HasField("thread"):
            self._push_thread_descriptor(ts, td, r.tid)
        elif td.HasField("process"):
            self._push_process_descriptor(ts, td)

    def _reserve(self, r: Reservation) -> bool:
        """Records the reservation; False (counted) if it conflicts with an earlier one."""
        existing = self.reservations.get(r.uuid)
        if existing is None:
            self.reservations[r.uuid] = r
        elif existing.same_track(r):
            if r.name is not None and (existing.name is None or r.merge is None):
                existing.name = r.name
        else:
            self.stats.inc("track_descriptor_conflicting_reservation")
            return False
        return True

    def _push_thread_descriptor(self, ts: int, td, tid: int | None) -> None:
        thread = td.thread
        chrome = td.chrome_thread if td.HasField("chrome_thread") else None
        self.push(
            ts,
            (
                EV_DESCRIPTOR,
                td.uuid,
                thread.pid,
                tid,
                text(thread.thread_name)
                or (chrome_thread_name(thread.chrome_thread_type) if thread.HasField("chrome_thread_type") else None),
                None,
                None,
                None,
                chrome.thread_type if chrome else None,
                None,
                None,
            ),
        )

    def _push_process_descriptor(self, ts: int, td) -> None:
        process = td.process
        chrome = td.chrome_process if td.HasField("chrome_process") else None
        labels = [text(x) for x in process.process_labels]
        if process.HasField("legacy_sort_index"):
            sort_index = process.legacy_sort_index
        elif chrome and chrome.HasField("legacy_sort_index"):
            sort_index = chrome.legacy_sort_index
        else:
            sort_index = None
        self.push(
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
                # The legacy ProcessDescriptor.chrome_process_type only names the process (no args).
                else (process.chrome_process_type, None, None, "legacy")
                if process.HasField("chrome_process_type")
                else None,
                labels or None,
                sort_index,
            ),
        )

    def _write_clock_snapshots(self) -> None:
        by_snapshot: dict[int, dict[int, int]] = {}
        for snapshot_id, clock_id, _name, value in self.clocks.snapshot_rows:
            by_snapshot.setdefault(snapshot_id, {})[clock_id] = value
        for snapshot_id, clock_id, name, value in self.clocks.snapshot_rows:
            trace_clock = self.clocks.trace_clock
            if isinstance(trace_clock, tuple):  # another machine synced to the host: convert its reading
                own = by_snapshot[snapshot_id].get(trace_clock[1])
                ts = None if own is None else self.clocks.to_trace_time(trace_clock[1], own, quiet=True)
            else:
                ts = by_snapshot[snapshot_id].get(trace_clock)
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
