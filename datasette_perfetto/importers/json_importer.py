"""Chrome JSON traces (the Trace Event Format), imported as trace_processor imports them.

Two phases, as for proto traces:
1. Tokenize, in file order (json_reader streams the events): each event is
   checked and reduced to a list of plain values, timestamps converted from
   microseconds to nanoseconds, and pushed (pickled) to the external-merge Sorter.
   V8 CPU profiles (`P` events: Profile / ProfileChunk) are unpacked here,
   because their sample times are deltas in file order.
2. Parse, in timestamp order: processes and threads, slices on thread tracks,
   async slices on compressed tracks, counters, instants, flows (v1 and v2),
   metadata events, thread states and V8 samples.

Bad events are counted under trace_processor's stat names
(json_tokenizer_failure, json_parser_failure, flow_*, legacy_v8_*) and the
rest of the file is imported.
"""

from __future__ import annotations

import math
import pickle
import re
import zlib
from collections.abc import Callable
from typing import BinaryIO

from ..model import TraceContext
from ..storage import Arg
from ..trackers.dimension_tracker import SOURCE_DISTRIBUTED_INFO
from ..trackers.process_tracker import NAME_PRIORITY_OTHER, NAME_PRIORITY_SYSTEM
from .json_reader import DISPLAY_TIME_UNIT, DISTRIBUTED_INFO, EVENT, METADATA, JsonTraceReader, object_fields
from .sorter import Sorter

EV_JSON = 0
EV_V8_SAMPLE = 1

# [EV_JSON, phase, pid, tid, flags, name, cat, dur, tts, tdur, id, cookie, bind_id, scope, args, pid_name, tid_name]
(
    J_PHASE,
    J_PID,
    J_TID,
    J_FLAGS,
    J_NAME,
    J_CAT,
    J_DUR,
    J_TTS,
    J_TDUR,
    J_ID,
    J_COOKIE,
    J_BIND_ID,
    J_SCOPE,
    J_ARGS,
    J_PID_NAME,
    J_TID_NAME,
) = range(1, 17)
PID_EXISTS, TID_EXISTS, FLOW_IN, FLOW_OUT, BIND_ENCLOSING = 1, 2, 4, 8, 16

# Async cookie kinds: `id` and `id2.global` name the same global space; `id2.local` is per process.
COOKIE_GLOBAL, COOKIE_LOCAL = 1, 2

# Events wait in the sorter pickled: a decoded event with its args dict takes
# several times the memory of its pickle.
RUN_EVENTS = 20_000
SPILL_BATCH = 500
_dumps, _loads, _PICKLE_PROTOCOL = pickle.dumps, pickle.loads, pickle.HIGHEST_PROTOCOL

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_TS_MIN, _TS_MAX = INT64_MIN // 1000, INT64_MAX // 1000  # microseconds that fit in int64 nanoseconds
_MISSING = object()
UINT32_MAX = 0xFFFFFFFF
NO_NAME = "[No name]"
# Sort keys at equal timestamps (trace_processor's JSON ordering, used once an
# 'X' event has been seen): ends first, then complete events longest first,
# then everything else in file order.
KEY_END, KEY_OTHER = INT64_MIN, INT64_MAX

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


class BadValue(Exception):
    pass


def _round_half_away(x: float) -> int:
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def to_ns(value) -> int:
    """A JSON timestamp or duration in microseconds as integer nanoseconds (trace_processor's CoerceToTs).

    Numbers in strings are accepted when the whole string is one JSON number."""
    t = type(value)
    if t is int:
        ns = value * 1000
    elif t is float:
        if not math.isfinite(value):
            raise BadValue(value)
        ns = int(value) * 1000 if value == math.trunc(value) else _round_half_away(value * 1000.0)
    elif t is str:
        m = _NUMBER.fullmatch(value)
        if m is None:
            raise BadValue(value)
        number = float(value) if (m.group(1) or m.group(2)) else int(value)
        if type(number) is int and not INT64_MIN <= number <= INT64_MAX:
            number = float(number)  # an integer too large for int64 is read as a double
        return to_ns(number)
    else:
        raise BadValue(value)
    if not INT64_MIN <= ns <= INT64_MAX:
        raise BadValue(value)
    return ns


def _uint32(value) -> int:
    """trace_processor's CoerceToUint32: out-of-range values become 0."""
    if type(value) is float:
        if not math.isfinite(value):
            return 0
        value = int(value)
    return value if 0 <= value <= UINT32_MAX else 0


def _string_id(s: str) -> int:
    """A stable number for a pid/tid given as a string (trace_processor uses the interned string's id)."""
    return zlib.crc32(s.encode("utf-8", "surrogatepass"))


def _event_id(value):
    """An `id`, `bind_id` or `id2` value: a string, or an integer as uint64; None for anything else."""
    t = type(value)
    if t is str:
        return value
    if t is int and INT64_MIN <= value <= INT64_MAX:
        return value & 0xFFFFFFFFFFFFFFFF
    return None


def _flow_id(value) -> int | None:
    """Flow ids given as strings are hexadecimal."""
    if type(value) is str:
        try:
            return int(value, 16) & 0xFFFFFFFFFFFFFFFF
        except ValueError:
            return None
    return value


# Arg keys and short string values, shared: the storage's arg-set cache keeps
# thousands of sets alive, and every decoded event has its own copies.
_shared_strings: dict[str, str] = {}
SHARED_STRINGS_LIMIT = 20_000
SHARED_ARGS_LIMIT = 10_000


def _shared(s: str) -> str:
    found = _shared_strings.get(s)
    if found is not None:
        return found
    if len(_shared_strings) >= SHARED_STRINGS_LIMIT:
        _shared_strings.clear()
    _shared_strings[s] = s
    return s


_shared_args: dict[tuple, Arg] = {}
_child_keys: dict[tuple[str, str], tuple[str, str]] = {}  # (key, field) -> (flat key, key) of the field


def _shared_arg(flat_key: str, key: str, value_type: str, value) -> Arg:
    """One tuple for each recurring (key, value): source locations, flags, ..."""
    lookup = (key, value_type, value)
    found = _shared_args.get(lookup)
    if found is not None and found[0] is flat_key:
        return found
    if len(_shared_args) >= SHARED_ARGS_LIMIT:
        _shared_args.clear()
    arg = _shared_args[lookup] = (flat_key, key, value_type, value)
    return arg


def add_json_args(out: list, flat_key: str, key: str, value) -> None:
    """Flattens a JSON value into args as trace_processor does: objects nest with '.', arrays
    with [i]; nulls (and empty objects and arrays) add nothing; integers beyond int64 are reals."""
    t = type(value)
    if t is dict:
        for k, v in value.items():
            keys = _child_keys.get((key, k))
            if keys is None:
                if len(_child_keys) >= SHARED_STRINGS_LIMIT:
                    _child_keys.clear()
                keys = _child_keys[(key, k)] = (_shared(f"{flat_key}.{k}"), _shared(f"{key}.{k}"))
            add_json_args(out, keys[0], keys[1], v)
    elif t is list:
        i = 0
        for v in value:
            if v is not None:
                add_json_args(out, flat_key, _shared(f"{key}[{i}]"), v)
                i += 1
    elif t is str:
        out.append(
            _shared_arg(flat_key, key, "string", value) if len(value) <= 64 else (flat_key, key, "string", value)
        )
    elif t is bool:
        out.append(_shared_arg(flat_key, key, "bool", int(value)))
    elif t is int:
        if INT64_MIN <= value <= INT64_MAX:
            out.append(_shared_arg(flat_key, key, "int", value))
        else:
            out.append((flat_key, key, "real", float(value)))
    elif t is float:
        out.append((flat_key, key, "real", value))


def _event_args(args) -> list[Arg]:
    out: list[Arg] = []
    if args:
        add_json_args(out, "args", "args", args)
    return out


def metadata_value(value, text: str):
    """A top-level metadata field as trace_processor stores it; None for null (dropped)."""
    t = type(value)
    if t is bool:
        return int(value)
    if t is int:
        if INT64_MIN <= value <= INT64_MAX:
            return value
        value = float(value)
        t = float
    if t is float:
        if math.isfinite(value) and value == math.trunc(value) and abs(value) < 9.2e18:
            return int(value)
        return f"{value:g}"
    if t is str:
        return value
    if t is dict or t is list:
        return text  # as written in the file
    return None


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _file_position(stream) -> Callable[[], int]:
    """How far into the file on disk the reader is (the compressed file for gzip).
    (proto_importer has the same; importing it would load the protobuf classes.)"""
    raw = getattr(stream, "raw", stream)
    return raw.tell


class JsonImporter:
    def __init__(self, trace: TraceContext) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.sorter = Sorter(RUN_EVENTS, SPILL_BATCH)
        self.v8 = LegacyV8Profiles(trace)
        self.parser = JsonEventParser(trace, self.v8)
        self._seen_complete_event = False
        self.rank: int | None = None  # distributedInfo.rank (PyTorch distributed training)
        self._first_upid = trace.storage.next_id["process"]

    def run(self, stream: BinaryIO, progress: Callable[[float], None]) -> None:
        """Imports the trace; progress(f) reports the share done, 0 to 1
        (reading the file is the first half, parsing the sorted events the second)."""
        reader = JsonTraceReader(stream, self.stats)
        size = max(self.trace.size, 1)
        position = _file_position(stream)
        tokenize = self.tokenize
        for kind, value in reader.parts():
            if kind == EVENT:
                tokenize(value)
                if reader.events_read & 0x3FFF == 0:
                    progress(0.5 * min(position() / size, 1.0))
            elif kind == METADATA:
                self._metadata(value)
            elif kind == DISPLAY_TIME_UNIT:
                # Ignored, as by trace_processor and catapult: timestamps are always microseconds.
                self.stats.inc("json_display_time_unit")
            elif kind == DISTRIBUTED_INFO:
                rank = value.get("rank")  # type: ignore[union-attr]
                if isinstance(rank, int) and not isinstance(rank, bool):
                    self.rank = rank
        self.trace.packets_read = reader.events_read
        progress(0.5)
        parse_event, parse_sample = self.parser.parse, self.v8.parse_sample
        total = max(self.sorter.count, 1)
        loads = _loads
        for i, (ts, blob) in enumerate(self.sorter.drain()):
            event = loads(blob)
            if event[0] == EV_JSON:
                parse_event(ts, event)
            else:
                parse_sample(ts, event)
            if i & 0x3FFF == 0:
                progress(0.5 + 0.5 * i / total)
        progress(1.0)
        self.v8.finish()
        if self.rank is not None:
            # The trace is one rank's: every process it holds is that rank's (a custom dimension).
            for upid in range(self._first_upid, self.trace.storage.next_id["process"]):
                self.trace.dimensions.on_process(
                    upid, "rank", self.rank, f"rank {self.rank}", source=SOURCE_DISTRIBUTED_INFO
                )
        # Every flow is written: let go of the parser's flow state (the collector is off during ingest).
        self.trace.flows.args_of = None

    def _metadata(self, text: str) -> None:
        for key, value, raw in object_fields(text):
            stored = metadata_value(value, raw)
            if stored is not None:
                self.trace.set_metadata(f"json_metadata.{key}", stored)

    # -- tokenizer -------------------------------------------------------------
    def tokenize(self, ev: dict) -> None:
        if not ev:
            return  # `{}`: a common filler element (e.g. to avoid a trailing comma), skipped silently
        get = ev.get
        ph = get("ph")
        phase = ph[0] if type(ph) is str and ph else None
        ts = get("ts", _MISSING)
        if type(ts) is int and _TS_MIN <= ts <= _TS_MAX:  # whole microseconds: the common case
            ts *= 1000
        else:
            try:
                ts = to_ns(ts)
            except BadValue:
                ts = None
        try:
            dur = get("dur", _MISSING)
            if type(dur) is int and _TS_MIN <= dur <= _TS_MAX:
                dur *= 1000
            else:
                dur = None if dur is _MISSING else to_ns(dur)
            tts = to_ns(ev["tts"]) if "tts" in ev else None
            tdur = to_ns(ev["tdur"]) if "tdur" in ev else None
        except BadValue:
            self.stats.inc("json_tokenizer_failure")
            return
        if phase is None:
            self.stats.inc("json_tokenizer_failure")
            return
        if ts is None:
            if phase != "M":
                self.stats.inc("json_tokenizer_failure")
                return
            ts = 0  # metadata events need no timestamp

        flags = 0
        pid = tid = 0
        pid_name = tid_name = None
        value = get("pid")
        t = type(value)
        if t is int:
            pid, flags = (value if 0 <= value <= UINT32_MAX else 0), PID_EXISTS
        elif t is str:
            pid, pid_name, flags = _string_id(value), value, PID_EXISTS
        elif t is float:
            pid, flags = _uint32(value), PID_EXISTS
        value = get("tid")
        t = type(value)
        if t is int:
            tid, flags = (value if 0 <= value <= UINT32_MAX else 0), flags | TID_EXISTS
        elif t is str:
            tid, tid_name, flags = _string_id(value), value, flags | TID_EXISTS
        elif t is float:
            tid, flags = _uint32(value), flags | TID_EXISTS
        if tid == 0 and pid != 0 and tid_name is None:
            tid = pid  # no thread: the process's main thread

        name = get("name")
        if type(name) is not str or not name:
            name = None
        cat = get("cat")
        if type(cat) is not str or not cat:
            cat = None
        event_id = _event_id(get("id"))
        cookie = None
        if event_id is not None:
            cookie = (COOKIE_GLOBAL, event_id)
        else:
            id2 = get("id2")
            if type(id2) is dict:
                global_id, local_id = _event_id(id2.get("global")), _event_id(id2.get("local"))
                if global_id is not None:
                    cookie = (COOKIE_GLOBAL, global_id)
                elif local_id is not None:
                    cookie = (COOKIE_LOCAL, local_id)
        args = get("args")
        if type(args) is not dict:
            args = None

        if phase == "P":
            self.v8.tokenize_profile(ev, pid, tid, event_id, args, self._push_sample)
            return
        if ts < 0:
            self.stats.inc("trace_sorter_negative_timestamp_dropped")
            return

        if get("flow_in") is True:
            flags |= FLOW_IN
        if get("flow_out") is True:
            flags |= FLOW_OUT
        if get("bp") == "e":
            flags |= BIND_ENCLOSING
        scope = get("s")
        if scope not in ("g", "p", "t"):
            scope = None

        if phase == "X":
            self._seen_complete_event = True
        if not self._seen_complete_event:
            key = KEY_OTHER
        elif phase == "E":
            key = KEY_END
        elif phase == "X" and dur is not None:
            key = INT64_MAX - dur
        else:
            key = KEY_OTHER
        self.sorter.push(
            ts,
            _dumps(
                [
                    EV_JSON,
                    phase,
                    pid,
                    tid,
                    flags,
                    name,
                    cat,
                    dur,
                    tts,
                    tdur,
                    event_id,
                    cookie,
                    _event_id(get("bind_id")),
                    scope,
                    args,
                    pid_name,
                    tid_name,
                ],
                _PICKLE_PROTOCOL,
            ),
            key,
        )

    def _push_sample(self, ts: int, sample: tuple) -> None:
        if ts < 0:
            self.stats.inc("trace_sorter_negative_timestamp_dropped")
            return
        self.sorter.push(ts, _dumps(sample, _PICKLE_PROTOCOL), KEY_OTHER)


class JsonEventParser:
    """Parses sorted JSON events (trace_processor's JsonTraceParser)."""

    def __init__(self, trace: TraceContext, v8: LegacyV8Profiles) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.procs = trace.processes
        self.tracks = trace.tracks
        self.slices = trace.slices
        self.flows = trace.flows
        self.v8 = v8
        self._threads: dict[tuple[int, int], int] = {}  # (tid, pid) -> utid
        self._thread_tracks: dict[int, int] = {}  # utid -> thread_execution track
        self._v1_flow_ids: dict[int, int] = {}  # hash of (source id, category, name) -> flow id (dense from 0)
        self._v1_flow_args: list[list[Arg]] = []  # flow id -> its name and category as args
        self._flow_names: dict[tuple, list[Arg]] = {}  # (name, category) -> those args, shared
        self.flows.args_of = self._flow_args
        self._pending_flows: dict[int, list[int]] = {}  # track -> v1 flow ids waiting for its next slice
        self._async_root_names: dict[tuple, str | None] = {}  # cookie -> name of the first event seen with it
        self._async_sets: dict[tuple, CookieTrackSet] = {}
        self._overlap_sets: dict[int, OverlapTrackSet] = {}  # utid -> overflow tracks for overlapping X events
        self._chrome_source = [("source", "source", "string", "chrome")]

    def utid(self, tid: int, pid: int) -> int:
        key = (tid, pid)
        utid = self._threads.get(key)
        if utid is None:
            utid = self._threads[key] = self.procs.update_thread(tid, pid)
        return utid

    def thread_track(self, utid: int) -> int:
        track = self._thread_tracks.get(utid)
        if track is None:
            track = self._thread_tracks[utid] = self.tracks.intern("thread_execution", (("utid", utid),), "slice")
        return track

    def parse(self, ts: int, ev: list) -> None:
        phase, pid, tid = ev[J_PHASE], ev[J_PID], ev[J_TID]
        # Names and categories repeat: one string each, not one per event, in buffered rows and caches.
        if ev[J_NAME] is not None:
            ev[J_NAME] = _shared(ev[J_NAME])
        if ev[J_CAT] is not None:
            ev[J_CAT] = _shared(ev[J_CAT])
        if ev[J_PID_NAME] is not None:
            upid = self.procs.get_or_create_process(pid)
            self.procs.set_process_name(upid, ev[J_PID_NAME], NAME_PRIORITY_SYSTEM)
        if ev[J_TID_NAME] is not None:
            self.procs.set_thread_name(self.procs.get_or_create_thread(tid), ev[J_TID_NAME], NAME_PRIORITY_OTHER)
        utid = self.utid(tid, pid)

        if phase == "X":
            self._complete(ts, ev, utid)
        elif phase == "B":
            track = self.thread_track(utid)
            slice_id = self.slices.begin(
                ts, track, ev[J_CAT], ev[J_NAME] or NO_NAME, _event_args(ev[J_ARGS]), ev[J_TTS]
            )
            self._slice_started(ev, track, slice_id)
        elif phase == "E":
            self.slices.end(ts, self.thread_track(utid), ev[J_CAT], ev[J_NAME], _event_args(ev[J_ARGS]), ev[J_TTS])
        elif phase in ("i", "I", "R"):
            self._instant(ts, ev, utid)
        elif phase in ("b", "e", "n"):
            self._async(ts, ev)
        elif phase == "C":
            self._counter(ts, ev, utid)
        elif phase in ("s", "t", "f"):
            self._flow_v1(ev, utid)
        elif phase == "M":
            self._metadata_event(ev, utid)
        elif phase == "T":
            self._thread_state(ts, ev, utid)
        # Any other phase (object snapshots O/N/D, legacy S/T/F, ...) only makes its
        # process and thread known, as in trace_processor.

    # -- slices ------------------------------------------------------------------
    def _slice_started(self, ev: list, track: int, slice_id: int | None, v2_flows: bool = True) -> None:
        """After a slice began on `track`: v1 flows waiting for it, then the event's own v2 flow
        (instants have none, as in trace_processor)."""
        if slice_id is None:
            return
        if self._pending_flows:
            waiting = self._pending_flows.pop(track, None)
            if waiting:
                for flow_id in waiting:
                    self.flows.bind_pending(flow_id, slice_id)
        if v2_flows and ev[J_BIND_ID] is not None:
            self._flow_v2(ev, slice_id)

    def _complete(self, ts: int, ev: list, utid: int) -> None:
        dur = ev[J_DUR]
        if dur is None:
            self.stats.inc("json_parser_failure")
            return
        track = self.thread_track(utid)
        name = ev[J_NAME] or NO_NAME
        overlap: list = []
        slice_id = self.slices.scoped(
            ts, dur, track, ev[J_CAT], name, _event_args(ev[J_ARGS]), ev[J_TTS], ev[J_TDUR], overlap=overlap
        )
        if overlap:
            # It partially overlaps a slice of its thread, so it cannot nest there: it goes
            # to an overflow track of the thread instead of being dropped (trace_processor
            # does the same and counts it).
            self.stats.inc("slice_spill_overlapping_complete_event")
            lanes = self._overlap_sets.get(utid)
            if lanes is None:
                lanes = self._overlap_sets[utid] = OverlapTrackSet(self._overflow_track_factory(utid))
            track = lanes.track_for(ts, dur)
            slice_id = self.slices.scoped(
                ts, dur, track, ev[J_CAT], name, _event_args(ev[J_ARGS]), ev[J_TTS], ev[J_TDUR]
            )
        self._slice_started(ev, track, slice_id)

    def _overflow_track_factory(self, utid: int) -> Callable[[int], int]:
        group = self.trace.new_track_group()

        def make(idx: int) -> int:
            track = self.tracks.create("thread_overlapping_slice", (("utid", utid), ("track_compressor_idx", idx)))
            self.tracks.row(track).track_group_id = group
            return track

        return make

    def _instant(self, ts: int, ev: list, utid: int) -> None:
        scope = ev[J_SCOPE]
        if scope == "g":
            track = self.tracks.intern("legacy_chrome_global_instants", (), "slice")
        elif scope == "p":
            if not ev[J_FLAGS] & PID_EXISTS:
                self.stats.inc("json_parser_failure")
                return
            upid = self.procs.get_or_create_process(ev[J_PID])
            track = self.tracks.intern("chrome_process_instant", (("upid", upid),), "slice")
        else:
            if not ev[J_FLAGS] & TID_EXISTS:
                self.stats.inc("json_parser_failure")
                return
            track = self.thread_track(utid)
            slice_id = self.slices.scoped(
                ts, 0, track, ev[J_CAT], ev[J_NAME] or NO_NAME, _event_args(ev[J_ARGS]), ev[J_TTS]
            )
            self._slice_started(ev, track, slice_id, v2_flows=False)
            return
        row = self.tracks.row(track)
        if not row.source_args:
            row.source_args = self._chrome_source
        # Global and process instants keep a missing name as NULL (only thread ones get "[No name]").
        slice_id = self.slices.scoped(ts, 0, track, ev[J_CAT], ev[J_NAME], _event_args(ev[J_ARGS]))
        self._slice_started(ev, track, slice_id, v2_flows=False)

    def _async(self, ts: int, ev: list) -> None:
        cookie = ev[J_COOKIE]
        if not ev[J_FLAGS] & PID_EXISTS or cookie is None:
            self.stats.inc("json_parser_failure")
            return
        upid = self.procs.get_or_create_process(ev[J_PID])
        phase, name, cat = ev[J_PHASE], ev[J_NAME], ev[J_CAT]
        track = self._async_track(
            upid,
            cookie[0] == COOKIE_LOCAL,
            (cat, cookie[1]),
            name,
            "begin" if phase == "b" else "end" if phase == "e" else "instant",
        )
        if phase == "b":
            slice_id = self.slices.begin(ts, track, cat, name or NO_NAME, _event_args(ev[J_ARGS]))
            self._slice_started(ev, track, slice_id)
        elif phase == "e":
            # No thread time: it is not well defined for async slices.
            self.slices.end(ts, track, cat, name, _event_args(ev[J_ARGS]))
        else:
            slice_id = self.slices.scoped(ts, 0, track, cat, name, _event_args(ev[J_ARGS]))
            self._slice_started(ev, track, slice_id)

    def _async_track(self, upid: int, process_scoped: bool, cookie: tuple, name: str | None, kind: str) -> int:
        """trace_processor's InternLegacyAsyncTrack: one set of tracks per (scope, first name seen
        for the id); each track of the set carries one id at a time, so overlapping ids get
        separate tracks."""
        if process_scoped:
            name = self.trace.process_track_name_map.get(name, name) if name is not None else None
            root_key = (upid, cookie)
            typ = "legacy_async_process_slice"
        else:
            root_key = cookie
            typ = "legacy_async_global_slice"
        root_name = self._async_root_names.setdefault(root_key, name)
        dims = ((("upid", upid),) if process_scoped else ()) + (("scope", None), ("name", root_name))
        track_set = self._async_sets.get((typ, dims))
        if track_set is None:
            group = self.trace.new_track_group()
            source_args = self._chrome_source + [
                ("trace_id_is_process_scoped", "trace_id_is_process_scoped", "bool", int(process_scoped)),
                ("upid", "upid", "uint", upid),
                ("source_scope", "source_scope", "string", None),
            ]

            def make(idx: int, name: str | None) -> int:
                track = self.tracks.create(typ, dims + (("track_compressor_idx", idx),), "slice", name)
                row = self.tracks.row(track)
                row.source_args = source_args
                row.track_group_id = group
                return track

            track_set = self._async_sets[(typ, dims)] = CookieTrackSet(make)
        return track_set.track_for(cookie, kind, name)

    # -- counters --------------------------------------------------------------
    def _counter(self, ts: int, ev: list, utid: int) -> None:
        args = ev[J_ARGS]
        if args is None:
            self.stats.inc("json_parser_failure")
            return
        prefix = ev[J_NAME] or ""
        if type(ev[J_ID]) is str and ev[J_ID]:
            prefix += " id: " + ev[J_ID]
        upid = self.procs.thread(utid).upid
        counter_args = [("utid", "utid", "uint", utid)]
        for key, value in args.items():
            t = type(value)
            if t is int:
                number = float(value)
            elif t is float:
                number = value
            elif t is str:
                try:
                    number = float(value)
                except ValueError:
                    self.stats.inc("json_parser_failure")
                    continue
            else:
                self.stats.inc("json_parser_failure")
                continue
            name = f"{prefix} {key}"
            if upid is not None:
                track = self.tracks.intern("json_counter", (("upid", upid), ("name", name)), "counter", name)
            else:
                track = self.tracks.intern(
                    "json_counter_thread_fallback", (("utid", utid), ("name", name)), "counter", name
                )
            self.trace.insert_counter(ts, track, number, counter_args)

    # -- flows -----------------------------------------------------------------
    def _flow_v1(self, ev: list, utid: int) -> None:
        track = self.thread_track(utid)
        source_id = _flow_id(ev[J_ID]) if ev[J_ID] is not None else None
        if source_id is None:
            self.stats.inc("flow_invalid_id")
            return
        name, cat = ev[J_NAME], ev[J_CAT]
        # Keyed by a 64-bit hash of (id, category, name): one int per flow instead of a tuple.
        key = hash((source_id, cat, name))
        flow_id = self._v1_flow_ids.get(key)
        if flow_id is None:
            # Flow ids numbered as first seen, named by their event (trace_processor's v1 flow ids).
            flow_id = self._v1_flow_ids[key] = len(self._v1_flow_ids)
            args = self._flow_names.get((name, cat))
            if args is None:
                args = self._flow_names[(name, cat)] = [("name", "name", "string", name), ("cat", "cat", "string", cat)]
            self._v1_flow_args.append(args)
        phase = ev[J_PHASE]
        if phase == "s":
            self.flows.begin(flow_id, self.slices.top_slice(track))
        elif phase == "t":
            self.flows.step(flow_id, self.slices.top_slice(track))
        elif ev[J_FLAGS] & BIND_ENCLOSING:
            self.flows.end(flow_id, self.slices.top_slice(track), bind_enclosing=True, close=False)
        else:
            # Binds to the next slice that begins on this track.
            self._pending_flows.setdefault(track, []).append(flow_id)

    def _flow_args(self, flow_id: int) -> list[Arg] | None:
        # v1 flows share their id space with v2 bind ids, as in trace_processor.
        return self._v1_flow_args[flow_id] if 0 <= flow_id < len(self._v1_flow_args) else None

    def _flow_v2(self, ev: list, slice_id: int) -> None:
        flow_id = _flow_id(ev[J_BIND_ID])
        if flow_id is None:
            return
        flags = ev[J_FLAGS]
        if flags & FLOW_IN and flags & FLOW_OUT:
            self.flows.step(flow_id, slice_id)
        elif flags & FLOW_OUT:
            self.flows.begin(flow_id, slice_id)
        elif flags & FLOW_IN:
            self.flows.end(flow_id, slice_id, bind_enclosing=True, close=False)
        else:
            self.stats.inc("flow_without_direction")

    # -- metadata events, thread states ------------------------------------------
    def _metadata_event(self, ev: list, utid: int) -> None:
        args, name = ev[J_ARGS], ev[J_NAME]
        if not args or name not in ("thread_name", "process_name", "process_sort_index", "thread_sort_index"):
            return
        if name.endswith("sort_index"):
            value = args.get("sort_index", None)
            if "sort_index" not in args:
                return
            t = type(value)
            if t is not int and t is not float:
                self.stats.inc("json_parser_failure")
                return
            if t is float and not math.isfinite(value):
                self.stats.inc("json_parser_failure")
                return
            hint = _int32(int(value))
            if name == "process_sort_index":
                row = self.procs.process(self.procs.get_or_create_process(ev[J_PID]))
                row.args["process_sort_index_hint"] = (
                    "process_sort_index_hint",
                    "process_sort_index_hint",
                    "int",
                    hint,
                )
            else:
                row = self.procs.thread(utid)
                row.args["thread_sort_index_hint"] = ("thread_sort_index_hint", "thread_sort_index_hint", "int", hint)
            return
        if "name" not in args:
            return
        value = args["name"]
        if type(value) is not str or not value:
            self.stats.inc("json_parser_failure")
            return
        if name == "thread_name":
            self.procs.set_thread_name(utid, value, NAME_PRIORITY_OTHER)
        else:
            self.procs.set_process_name(self.procs.get_or_create_process(ev[J_PID]), value, NAME_PRIORITY_SYSTEM)

    def _thread_state(self, ts: int, ev: list, utid: int) -> None:
        """'T' events: a thread state (and, for Running with a cpu, a sched slice)."""
        dur = ev[J_DUR]
        if dur is None:
            self.stats.inc("json_parser_failure")
            return
        state = ev[J_NAME] or NO_NAME
        cpu = io_wait = blocked_function = None
        args = ev[J_ARGS]
        if args:
            value = args.get("cpu")
            if type(value) is int:
                cpu = value & UINT32_MAX
            value = args.get("io_wait")
            if type(value) is int:
                io_wait = value & UINT32_MAX
            value = args.get("blocked_function")
            if type(value) is str:
                blocked_function = value
        storage = self.trace.storage
        storage.insert("thread_state", (ts, dur, utid, state, io_wait, blocked_function, None, None, None, None))
        if state == "Running" and cpu is not None:
            storage.insert("sched", (ts, dur, utid, None, 0, self.trace.cpu(cpu)))


class CookieTrackSet:
    """Tracks of one async track set (trace_processor's TrackCompressor by cookie): each
    track carries one async id at a time; an id whose slices are all closed frees its
    track for the next id."""

    __slots__ = ("make", "tracks", "cookies", "nesting")

    def __init__(self, make: Callable[[int, str | None], int]) -> None:
        self.make = make
        self.tracks: list[int] = []
        self.cookies: list = []
        self.nesting: list[int] = []

    def track_for(self, cookie, kind: str, name: str | None) -> int:
        try:
            i = self.cookies.index(cookie)
        except ValueError:
            i = next((j for j, n in enumerate(self.nesting) if n == 0), -1)
            if i >= 0:
                self.cookies[i] = cookie
            else:
                i = len(self.tracks)
                self.tracks.append(self.make(i, name))
                self.cookies.append(cookie)
                self.nesting.append(0)
        if kind == "begin":
            self.nesting[i] += 1
        elif kind == "end" and self.nesting[i] > 0:
            self.nesting[i] -= 1
        return self.tracks[i]


class OverlapTrackSet:
    """Overflow lanes for complete events that overlap their thread's slices (trace_processor's
    LegacyOverlappingScoped): the first lane where the slice nests in the innermost open
    slice or follows all of them; events arrive in timestamp order."""

    __slots__ = ("make", "tracks", "open_ends")

    def __init__(self, make: Callable[[int], int]) -> None:
        self.make = make
        self.tracks: list[int] = []
        self.open_ends: list[list[int]] = []

    def track_for(self, ts: int, dur: int) -> int:
        end = ts + dur
        for i, ends in enumerate(self.open_ends):
            while ends and ends[-1] <= ts:
                ends.pop()
            if not ends or end <= ends[-1]:
                ends.append(end)
                return self.tracks[i]
        self.tracks.append(self.make(len(self.tracks)))
        self.open_ends.append([end])
        return self.tracks[-1]


class _V8Session:
    """State of one V8 profile (per profile id and pid)."""

    __slots__ = ("ts", "callsites", "inferred_parents", "mapping_id", "frames")

    def __init__(self, ts: int, mapping_id: int) -> None:
        self.ts = ts
        self.callsites: dict[int, int] = {}  # node id -> callsite id
        self.inferred_parents: dict[int, int] = {}  # node id -> parent node id, from `children` lists
        self.mapping_id = mapping_id
        self.frames: dict[tuple, int] = {}  # (function name, url) -> frame id


class LegacyV8Profiles:
    """V8 CPU profiles in `P` events (trace_processor's LegacyV8CpuProfileTracker).

    A `Profile` event starts a profile (its startTime); `ProfileChunk` events add
    call tree nodes (stack_profile_callsite/frame rows on a placeholder mapping)
    and samples whose times are deltas from the previous sample."""

    def __init__(self, trace: TraceContext) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.storage = trace.storage
        self.sessions: dict[tuple[int, int], _V8Session] = {}
        # Callsite rows stay in memory until the end: a node listed as a child
        # before it appears fixes its parent and depth afterwards.
        self.callsites: dict[int, list] = {}  # id -> [depth, parent_id, frame_id]
        self._callsite_ids: dict[tuple, int] = {}  # (parent_id, frame_id, depth) -> id
        self._task_contexts: dict[tuple[int, int], int] = {}  # (upid, utid) -> id

    # -- tokenizer side (file order) ---------------------------------------------
    def tokenize_profile(
        self, ev: dict, pid: int, tid: int, event_id, args: dict | None, push: Callable[[int, tuple], None]
    ) -> None:
        if event_id is None:
            return
        if type(event_id) is str:
            try:
                session_id = int(event_id, 16)
            except ValueError:
                self.stats.inc("json_tokenizer_failure")
                return
        else:
            session_id = event_id
        data = args.get("data") if args else None
        if type(data) is not dict:
            return
        start = _profile_int(data.get("startTime"))
        if start is not None:
            self._start(session_id, pid, start * 1000)
            return
        profile = data.get("cpuProfile")
        nodes = samples = ()
        if type(profile) is dict:
            if type(profile.get("nodes")) is list:
                nodes = profile["nodes"]
            if type(profile.get("samples")) is list:
                samples = [v for v in map(_profile_uint32, profile["samples"]) if v is not None]
        deltas = data.get("timeDeltas")
        deltas = [v for v in map(_profile_int, deltas) if v is not None] if type(deltas) is list else []
        session = self.sessions.get((session_id, pid))
        for node in nodes:
            if type(node) is dict and not self._add_callsite(session, node):
                self.stats.inc("legacy_v8_cpu_profile_invalid_callsite")
        if len(samples) != len(deltas) or (samples and session is None):
            self.stats.inc("json_tokenizer_failure")
            return
        for node_id, delta in zip(samples, deltas):
            session.ts += delta * 1000
            push(session.ts, (EV_V8_SAMPLE, session_id, pid, tid, node_id))

    def _start(self, session_id: int, pid: int, ts: int) -> None:
        session = self.sessions.get((session_id, pid))
        if session is not None:
            session.ts = ts
            return
        # A placeholder mapping for the profile's frames, covering every address.
        mapping_id = self.storage.insert("stack_profile_mapping", ("", 0, 0, 0, -1, 0, ""))
        self.sessions[(session_id, pid)] = _V8Session(ts, mapping_id)

    def _frame(self, session: _V8Session, function_name: str, url: str | None) -> int:
        key = (function_name, url)
        frame_id = session.frames.get(key)
        if frame_id is None:
            # The symbol table's row count, as trace_processor numbers sets: unique across inputs.
            symbol_set = self.storage.next_id["stack_profile_symbol"]
            self.storage.insert("stack_profile_symbol", (symbol_set, function_name, url, None, None))
            frame_id = session.frames[key] = self.storage.insert(
                "stack_profile_frame", (function_name, session.mapping_id, 0, symbol_set, None, None)
            )
        return frame_id

    def _callsite(self, parent_id: int | None, frame_id: int, depth: int) -> int:
        key = (parent_id, frame_id, depth)
        callsite_id = self._callsite_ids.get(key)
        if callsite_id is None:
            callsite_id = self._callsite_ids[key] = self.storage.reserve_id("stack_profile_callsite")
            self.callsites[callsite_id] = [depth, parent_id, frame_id]
        return callsite_id

    def _add_callsite(self, session: _V8Session | None, node: dict) -> bool:
        if session is None:
            return False  # no Profile event started this profile
        node_id = _profile_uint32(node.get("id"))
        node_id = 0 if node_id is None else node_id
        if node_id in session.callsites:
            return False
        frame = node.get("callFrame")
        function_name, url = "", None
        if type(frame) is dict:
            if type(frame.get("functionName")) is str:
                function_name = frame["functionName"]
            if type(frame.get("url")) is str and frame["url"]:
                url = frame["url"]
        frame_id = self._frame(session, function_name, url)
        # V8 names each node's parent; DevTools (and Node) list each node's children instead.
        parent = _profile_uint32(node.get("parent")) if "parent" in node else None
        if parent is None:
            parent = session.inferred_parents.get(node_id)
        if parent is not None:
            parent_callsite = session.callsites.get(parent)
            if parent_callsite is None:
                return False
            depth = self.callsites[parent_callsite][0] + 1
            callsite_id = self._callsite(parent_callsite, frame_id, depth)
        else:
            depth = 0
            callsite_id = self._callsite(None, frame_id, 0)
        session.callsites[node_id] = callsite_id
        children = node.get("children")
        if type(children) is list:
            for child in map(_profile_uint32, children):
                if child is None:
                    continue
                if child in session.inferred_parents:
                    return False  # two nodes claim the same child
                session.inferred_parents[child] = node_id
                child_callsite = session.callsites.get(child)
                if child_callsite is not None:
                    row = self.callsites[child_callsite]
                    row[0] = depth + 1
                    row[1] = callsite_id
        return True

    # -- parser side (timestamp order) -------------------------------------------
    def parse_sample(self, ts: int, ev: list) -> None:
        _, session_id, pid, tid, node_id = ev
        session = self.sessions.get((session_id, pid))
        callsite_id = session.callsites.get(node_id) if session is not None else None
        if callsite_id is None:
            self.stats.inc("legacy_v8_cpu_profile_invalid_sample")
            return
        procs = self.trace.processes
        utid = procs.update_thread(tid, pid)
        upid = procs.get_or_create_process(pid)
        context = self._task_contexts.get((upid, utid))
        if context is None:
            context = self._task_contexts[(upid, utid)] = self.storage.insert(
                "profiler_task_context", (upid, utid, None)
            )
        self.storage.insert("profiler_sample", (ts, "legacy_v8", context, None, callsite_id, None, None, None))

    def finish(self) -> None:
        for callsite_id in sorted(self.callsites):
            self.storage.write("stack_profile_callsite", (callsite_id, *self.callsites[callsite_id]))
        self.callsites.clear()


def _profile_int(value) -> int | None:
    """An integer field of a V8 profile (doubles are truncated)."""
    t = type(value)
    if t is int:
        return value if INT64_MIN <= value <= INT64_MAX else None
    if t is float and math.isfinite(value):
        return int(value)
    return None


def _profile_uint32(value) -> int | None:
    """A node id of a V8 profile: non-negative numbers, wrapped to 32 bits."""
    t = type(value)
    if t is int:
        return value & UINT32_MAX if value >= 0 else None
    if t is float and value >= 0 and math.isfinite(value):
        return int(value) & UINT32_MAX
    return None
