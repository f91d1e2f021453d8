"""TrackEvent: tokenizing (sequence-dependent resolution) and parsing (trackers).

`tokenize_track_event` runs in file order and reduces a TrackEvent to a plain
tuple: interned names resolved, timestamps and counter values made absolute,
args flattened. `TrackEventParser` runs in timestamp order and turns those
tuples into tracks, slices, flows, counters and states with trace_processor's
semantics (track_event_event_importer / track_event_tracker).
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from google.protobuf.message import DecodeError
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ..storage import BATCH_ROWS, Arg
from ..trackers.process_tracker import (
    NAME_PRIORITY_CHROME_PROCESS_LABEL,
    NAME_PRIORITY_CHROME_RENDERER_LABEL,
    NAME_PRIORITY_PROCESS_TRACK_DESCRIPTOR,
    NAME_PRIORITY_THREAD_TYPE,
    NAME_PRIORITY_TRACK_DESCRIPTOR,
)

# TrackEvent field descriptors by name: TE.type, TE.track_uuid, ...
TE = SimpleNamespace(**pb.TrackEvent.DESCRIPTOR.fields_by_name)

EV_TRACK_EVENT = 0
EV_DESCRIPTOR = 1
EV_THREAD_DESCRIPTOR = 2

TYPE_SLICE_BEGIN, TYPE_SLICE_END, TYPE_INSTANT, TYPE_COUNTER, TYPE_STATE = 1, 2, 3, 4, 5
_SLICE_TYPES = frozenset((TYPE_SLICE_BEGIN, TYPE_SLICE_END, TYPE_INSTANT))

# Interned data field numbers (InternedData).
I_CATEGORIES, I_NAMES, I_DEBUG_NAMES, I_SOURCE_LOCATIONS = 1, 2, 3, 4
I_LOG_BODY, I_HISTOGRAM_NAMES, I_DEBUG_STRINGS, I_CORRELATION_STR = 20, 25, 29, 43

# Positions in the tokenized event tuple.
(
    F_KIND,
    F_TYPE,
    F_UUID,
    F_SEQ,
    F_THREAD,
    F_CATEGORY,
    F_NAME,
    F_ARGS,
    F_FLOWS,
    F_TERM_FLOWS,
    F_THREAD_TS,
    F_THREAD_IC,
    F_EXTRA,
    F_COUNTER,
    F_LEGACY,
    F_HAS_TYPE,
    F_HAS_UUID,
) = range(17)

# Chrome's process/thread type enums → the names trace_processor shows.
CHROME_PROCESS_NAMES = {
    1: "Browser",
    2: "Renderer",
    3: "Utility",
    4: "SandboxHelper",
    6: "Gpu",
    7: "PpapiPlugin",
    8: "PpapiBroker",
    40: "Extension Renderer",
}
CHROME_RENDERER_TYPES = (2, 40)
CHROME_THREAD_NAMES = {
    1: "CrProcessMain",
    2: "ChromeIOThread",
    3: "ThreadPoolBackgroundWorker&",
    4: "ThreadPoolForegroundWorker&",
    5: "ThreadPoolSingleThreadForegroundBlocking&",
    6: "ThreadPoolSingleThreadBackgroundBlocking&",
    7: "ThreadPoolService",
    8: "Compositor",
    9: "VizCompositorThread",
    10: "CompositorTileWorker&",
    11: "ServiceWorkerThread&",
    12: "NetworkService",
    13: "Chrome_ChildIOThread",
    14: "Chrome_IOThread",
    15: "CrBrowserMain",
    16: "CrRendererMain",
    17: "CrUtilityMain",
    18: "CrGpuMain",
    50: "MemoryInfra",
    51: "StackSamplingProfiler",
    52: "CompositorGpuThread",
}


# Other values are Chrome enum names that the perfetto package's protos do not
# carry (they are plain ints there); those stay unnamed.
def chrome_process_name(process_type: int) -> str | None:
    return CHROME_PROCESS_NAMES.get(process_type)


def chrome_thread_name(thread_type: int) -> str | None:
    return CHROME_THREAD_NAMES.get(thread_type)


class CounterDetails:
    __slots__ = ("category", "is_incremental", "unit_multiplier", "unit", "builtin_type", "y_axis_share_key")

    def __init__(self) -> None:
        self.category: str | None = None
        self.is_incremental = False
        self.unit_multiplier = 0
        self.unit: str | None = None
        self.builtin_type: str | None = None
        self.y_axis_share_key: str | None = None


class Reservation:
    """What a TrackDescriptor said about a uuid (trace_processor's reservation)."""

    __slots__ = (
        "uuid",
        "parent_uuid",
        "name",
        "description",
        "child_ordering",
        "sibling_order_rank",
        "merge",
        "merge_key",
        "pid",
        "tid",
        "use_separate_track",
        "counter",
        "is_state",
        "seq_id",
        "process_ordering",
        "thread_ordering",
    )

    def __init__(self, uuid: int) -> None:
        self.uuid = uuid
        self.parent_uuid = 0
        self.name: str | None = None
        self.description: str | None = None
        self.child_ordering: str | None = None
        self.sibling_order_rank: int | None = None
        self.merge: str | None = "name"  # "name" | "key" | None (never merge)
        self.merge_key: str | None = None
        self.pid: int | None = None
        self.tid: int | None = None
        self.use_separate_track = False
        self.counter: CounterDetails | None = None
        self.is_state = False
        self.seq_id: int | None = None
        self.process_ordering: str | None = None  # "explicit" on the root (uuid 0) descriptor
        self.thread_ordering: str | None = None

    def same_track(self, other: Reservation) -> bool:
        return (
            self.parent_uuid == other.parent_uuid
            and self.pid == other.pid
            and self.tid == other.tid
            and (self.counter is None) == (other.counter is None)
            and self.is_state == other.is_state
        )


# -- tokenizing ----------------------------------------------------------------

# Per sequence, how many decoded TrackEvents to remember (see tokenize_track_event).
DECODE_CACHE_ENTRIES = 4096


def tokenize_track_event(importer, raw: bytes, seq, packet_ts: int | None) -> tuple[int, tuple] | None:
    """Reduces a TrackEvent (its encoded bytes) to a plain tuple for the sorter
    (None if dropped, counted).

    Most events repeat byte for byte within a sequence (an end event with the
    same thread-time delta, the same task posted from the same place), so the
    part that depends only on the bytes and the interned data is decoded once
    per distinct encoding and kept until the sequence's state is cleared. What
    depends on earlier events (delta timestamps, incremental counters) is
    computed every time.
    """
    stats = importer.stats
    static = seq.decoded.get(raw)
    if static is None:
        misses = seq.misses
        try:
            static = _decode(pb.TrackEvent.FromString(raw), seq)
        except DecodeError:
            stats.inc("track_event_parser_errors")
            return None
        if seq.misses == misses:  # an unresolved iid may be interned later: don't remember it
            if len(seq.decoded) >= DECODE_CACHE_ENTRIES:
                seq.decoded.clear()
            seq.decoded[raw] = static
    (
        ts_delta,
        ts_abs,
        tt_delta,
        tt_abs,
        tic_delta,
        tic_abs,
        has_uuid,
        explicit_uuid,
        etype,
        has_type,
        counter_raw,
        extra_values,
        extra_uuids,
        extra_dvalues,
        extra_duuids,
        category,
        name,
        args,
        flows,
        term,
        legacy,
    ) = static

    needs_conversion = True
    if ts_delta is not None:
        if seq.ref_ts is None:
            stats.inc("track_event_skipped_timestamp_delta_without_valid_state")
            return None
        seq.ref_ts = saturate(seq.ref_ts + saturate(ts_delta * 1000))
        ts = seq.ref_ts
    elif ts_abs:
        ts = saturate(ts_abs * 1000)
    elif packet_ts is not None:
        ts, needs_conversion = packet_ts, False
    else:
        stats.inc("track_event_missing_timestamp")
        return None
    if ts < 0 or ts >= INT64_MAX:
        stats.inc("track_event_invalid_timestamp")
        return None
    if needs_conversion:
        # Legacy microsecond timestamps are on CLOCK_MONOTONIC; kept as they are
        # when the trace gives no way to convert them.
        converted = importer.clocks.to_trace_time(3, ts, quiet=True)
        if converted is not None:
            ts = converted

    thread_ts = thread_ic = None
    if tt_delta is not None:
        if seq.ref_thread_ts is None:
            stats.inc("track_event_skipped_thread_time_delta_without_valid_state")
            return None
        seq.ref_thread_ts += tt_delta * 1000
        thread_ts = seq.ref_thread_ts
    elif tt_abs is not None:
        thread_ts = tt_abs * 1000
    if tic_delta is not None:
        if seq.ref_thread_ic is None:
            stats.inc("track_event_skipped_thread_instruction_delta_without_valid_state")
            return None
        seq.ref_thread_ic += tic_delta
        thread_ic = seq.ref_thread_ic
    elif tic_abs is not None:
        thread_ic = tic_abs

    uuid = explicit_uuid if has_uuid else (seq.default_track_uuid or 0)
    counter_value = None
    if etype == TYPE_COUNTER:
        if not uuid:
            stats.inc("track_event_counter_missing_track_uuid")
            return None
        if counter_raw is None:
            stats.inc("track_event_counter_missing_value")
            return None
        counter_value = _absolute_counter_value(importer.reservations, seq, uuid, counter_raw)
        if counter_value is None:
            stats.inc("track_event_counter_invalid_track_uuid")
            return None
    elif etype == TYPE_STATE and not uuid:
        stats.inc("track_event_state_missing_track_uuid")
        return None

    extra = None
    if (
        extra_values
        and not extra_dvalues
        and len(extra_values) == 1
        and (extra_uuids or seq.default_extra_counter_uuids)
    ):
        # One extra counter (Chromium's thread time on every event): inline.
        cuuid = (extra_uuids or seq.default_extra_counter_uuids)[0]
        spec = importer.counter_specs.get(cuuid)
        if spec is None:
            spec = _counter_spec(importer.reservations, cuuid)
            if spec is None:
                stats.inc("track_event_extra_counter_invalid_track")
                return None
            importer.counter_specs[cuuid] = spec
        multiplier, incremental = spec
        value = extra_values[0]
        value = value * multiplier if multiplier else float(value)
        if incremental:
            running = seq.counter_values
            value += running.get(cuuid, 0.0)
            running[cuuid] = value
        extra = ((cuuid, value),)
    elif extra_values or extra_dvalues:
        extra = _extra_counters(
            importer,
            seq,
            extra_values,
            extra_uuids or seq.default_extra_counter_uuids,
            extra_dvalues,
            extra_duuids or seq.default_extra_double_counter_uuids,
        )
        if extra is None:
            return None
    return ts, (
        EV_TRACK_EVENT,
        etype,
        uuid,
        seq.seq_id,
        seq.thread,
        category,
        name,
        args,
        flows,
        term,
        thread_ts,
        thread_ic,
        extra,
        counter_value,
        legacy,
        has_type,
        has_uuid,
    )


# Field -> position in _decode's working list; the fields in neither this nor
# _TYPED_FIELDS carry nothing the importer uses.
(
    D_TS_DELTA,
    D_TS_ABS,
    D_TT_DELTA,
    D_TT_ABS,
    D_TIC_DELTA,
    D_TIC_ABS,
    D_UUID,
    D_TYPE,
    D_COUNTER,
    D_DCOUNTER,
    D_EXTRA,
    D_EXTRA_UUIDS,
    D_DEXTRA,
    D_DEXTRA_UUIDS,
    D_CAT_IIDS,
    D_CATS,
    D_NAME_IID,
    D_NAME,
    D_FLOWS,
    D_FLOWS_OLD,
    D_TERM,
    D_TERM_OLD,
    D_LEGACY,
    D_ANNOTATIONS,
) = range(24)
_DECODE_SLOTS = {
    getattr(TE, name): i
    for i, name in enumerate(
        (
            "timestamp_delta_us",
            "timestamp_absolute_us",
            "thread_time_delta_us",
            "thread_time_absolute_us",
            "thread_instruction_count_delta",
            "thread_instruction_count_absolute",
            "track_uuid",
            "type",
            "counter_value",
            "double_counter_value",
            "extra_counter_values",
            "extra_counter_track_uuids",
            "extra_double_counter_values",
            "extra_double_counter_track_uuids",
            "category_iids",
            "categories",
            "name_iid",
            "name",
            "flow_ids",
            "flow_ids_old",
            "terminating_flow_ids",
            "terminating_flow_ids_old",
            "legacy_event",
            "debug_annotations",
        )
    )
}


def _decode(ev, seq) -> tuple:
    """The part of a TrackEvent that depends only on its bytes and the interned data."""
    # One ListFields() pass (cheaper than a HasField() per field) sorted into slots.
    d: list = [None] * 24
    typed = None
    slots = _DECODE_SLOTS
    for fd, value in ev.ListFields():
        i = slots.get(fd)
        if i is not None:
            d[i] = value
        elif fd in _TYPED_FIELDS:
            if typed is None:
                typed = {}
            typed[fd] = value
    le = d[D_LEGACY]
    name_iid = d[D_NAME_IID] or (le.name_iid if le is not None else 0)
    name = seq.lookup(I_NAMES, name_iid) if name_iid else text(d[D_NAME])
    legacy = None
    if le is not None:
        legacy = {fd.name: v for fd, v in le.ListFields() if fd.name != "name_iid"}
        if "phase" in legacy:
            legacy["phase"] = chr(legacy["phase"])
    counter_raw = d[D_COUNTER]
    counter_raw = float(counter_raw) if counter_raw is not None else d[D_DCOUNTER]
    args: list = []
    if d[D_ANNOTATIONS]:
        for ann in d[D_ANNOTATIONS]:
            ann_name = _annotation_name(ann, seq)
            debug_annotation_args(args, ann, f"debug.{ann_name}", f"debug.{ann_name}", seq)
    if typed:
        _typed_field_args(args, typed, seq)
    cat_iids, cats = d[D_CAT_IIDS], d[D_CATS]
    if cat_iids is not None and len(cat_iids) == 1 and not cats:
        category = seq.lookup(I_CATEGORIES, cat_iids[0])
        if category is None:
            category = f"unknown({cat_iids[0]})"
    else:
        category = _category(cat_iids, cats, seq)
    flows = d[D_FLOWS] or d[D_FLOWS_OLD]
    term = d[D_TERM] or d[D_TERM_OLD]
    return (
        d[D_TS_DELTA],
        d[D_TS_ABS],
        d[D_TT_DELTA],
        d[D_TT_ABS],
        d[D_TIC_DELTA],
        d[D_TIC_ABS],
        d[D_UUID] is not None,
        d[D_UUID] or 0,
        d[D_TYPE] or 0,
        d[D_TYPE] is not None,
        counter_raw,
        tuple(d[D_EXTRA]) if d[D_EXTRA] else (),
        tuple(d[D_EXTRA_UUIDS]) if d[D_EXTRA_UUIDS] else (),
        tuple(d[D_DEXTRA]) if d[D_DEXTRA] else (),
        tuple(d[D_DEXTRA_UUIDS]) if d[D_DEXTRA_UUIDS] else (),
        category,
        name,
        tuple(args) if args else None,
        list(flows) if flows else None,
        list(term) if term else None,
        legacy,
    )


INT64_MAX = (1 << 63) - 1


def text(value):
    """A proto string field as str. upb hands back bytes when a trace's string is
    not valid UTF-8; those keep every byte, escaped as \\xNN."""
    if type(value) is bytes:
        return value.decode("utf-8", "backslashreplace")
    return value


def _extra_counters(importer, seq, int_values, int_uuids, double_values, double_uuids) -> list | None:
    stats = importer.stats
    extra = []
    for values, uuids in ((int_values, int_uuids), (double_values, double_uuids)):
        if not values:
            continue
        if not uuids:
            stats.inc("track_event_extra_counter_missing_track_uuids")
            return None
        if len(values) > len(uuids):
            stats.inc("track_event_extra_counter_track_uuid_mismatch")
            return None
        running = seq.counter_values
        specs = importer.counter_specs
        for value, cuuid in zip(values, uuids):
            spec = specs.get(cuuid)
            if spec is None:
                spec = _counter_spec(importer.reservations, cuuid)
                if spec is None:
                    stats.inc("track_event_extra_counter_invalid_track")
                    return None
                specs[cuuid] = spec
            multiplier, incremental = spec
            v = value * multiplier if multiplier else float(value)
            if incremental:
                v += running.get(cuuid, 0.0)
                running[cuuid] = v
            extra.append((cuuid, v))
    if len(extra) > 8:
        stats.inc("track_event_extra_counter_exceeds_max")
        return None
    return extra


def _counter_spec(reservations, uuid: int) -> tuple | None:
    """(unit multiplier or 0, is_incremental) of a counter track, None if it is not one."""
    r = reservations.get(uuid)
    if r is None or r.counter is None:
        return None
    return (float(r.counter.unit_multiplier) if r.counter.unit_multiplier > 0 else 0, r.counter.is_incremental)


def saturate(v: int) -> int:
    """int64 saturating arithmetic, as trace_processor's SaturatingMultiply/Add."""
    return max(-(1 << 63), min(INT64_MAX, v))


def _absolute_counter_value(reservations, seq, uuid: int, value: float) -> float | None:
    spec = _counter_spec(reservations, uuid)
    if spec is None:
        return None
    multiplier, incremental = spec
    if multiplier:
        value *= multiplier
    if incremental:
        value += seq.counter_values.get(uuid, 0.0)
        seq.counter_values[uuid] = value
    return value


def _category(iids, strings, seq) -> str | None:
    iids = iids or ()
    strings = strings or ()
    if len(iids) == 1 and not strings:
        found = seq.lookup(I_CATEGORIES, iids[0])
        return found if found is not None else f"unknown({iids[0]})"
    if not iids and len(strings) == 1:
        return text(strings[0])
    if len(iids) + len(strings) > 1:
        parts = [seq.lookup(I_CATEGORIES, i) for i in iids]
        joined = ",".join([p for p in parts if p is not None] + [text(c) for c in strings])
        return joined or None
    return None


# -- args ------------------------------------------------------------------------


def _add(out: list, flat_key: str, key: str, value_type: str, value: Any) -> None:
    out.append((flat_key, key, value_type, value))


def add_json_value(out: list, flat_key: str, key: str, value: Any) -> None:
    """Flattens a JSON value into args: objects nest with '.', arrays with [i]."""
    if isinstance(value, dict):
        if not value:
            return
        for k, v in value.items():
            add_json_value(out, f"{flat_key}.{k}", f"{key}.{k}", v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            add_json_value(out, flat_key, f"{key}[{i}]", v)
    elif isinstance(value, bool):
        _add(out, flat_key, key, "bool", int(value))
    elif isinstance(value, int):
        if -(1 << 63) <= value < (1 << 63):
            _add(out, flat_key, key, "int", value)
        elif 0 <= value < (1 << 64):
            _add(out, flat_key, key, "uint", value)
        else:
            _add(out, flat_key, key, "real", float(value))
    elif isinstance(value, float):
        _add(out, flat_key, key, "real", value)
    elif value is None:
        _add(out, flat_key, key, "null", None)
    else:
        _add(out, flat_key, key, "string", str(value))


def debug_annotation_args(out: list, ann, flat_key: str, key: str, seq) -> None:
    field = ann.WhichOneof("value")
    if field is None:
        if ann.dict_entries:
            for entry in ann.dict_entries:
                name = _annotation_name(entry, seq)
                debug_annotation_args(out, entry, f"{flat_key}.{name}", f"{key}.{name}", seq)
        elif ann.array_values:
            for i, item in enumerate(ann.array_values):
                debug_annotation_args(out, item, flat_key, f"{key}[{i}]", seq)
        return
    if field == "bool_value":
        _add(out, flat_key, key, "bool", int(ann.bool_value))
    elif field == "uint_value":
        _add(out, flat_key, key, "uint", ann.uint_value)
    elif field == "int_value":
        _add(out, flat_key, key, "int", ann.int_value)
    elif field == "double_value":
        _add(out, flat_key, key, "real", ann.double_value)
    elif field == "string_value":
        _add(out, flat_key, key, "string", text(ann.string_value))
    elif field == "string_value_iid":
        s = seq.lookup(I_DEBUG_STRINGS, ann.string_value_iid)
        _add(out, flat_key, key, "string", s if s is not None else f"<unknown iid {ann.string_value_iid}>")
    elif field == "pointer_value":
        _add(out, flat_key, key, "pointer", ann.pointer_value)
    elif field == "legacy_json_value":
        try:
            add_json_value(out, flat_key, key, json.loads(ann.legacy_json_value))
        except (ValueError, TypeError, RecursionError):
            _add(out, flat_key, key, "string", text(ann.legacy_json_value))
    elif field == "nested_value":
        _nested_value_args(out, ann.nested_value, flat_key, key)


def _nested_value_args(out: list, nv, flat_key: str, key: str) -> None:
    if nv.dict_keys:
        for k, v in zip(map(text, nv.dict_keys), nv.dict_values):
            _nested_value_args(out, v, f"{flat_key}.{k}", f"{key}.{k}")
    elif nv.array_values:
        for i, v in enumerate(nv.array_values):
            _nested_value_args(out, v, flat_key, f"{key}[{i}]")
    elif nv.HasField("int_value"):
        _add(out, flat_key, key, "int", nv.int_value)
    elif nv.HasField("double_value"):
        _add(out, flat_key, key, "real", nv.double_value)
    elif nv.HasField("bool_value"):
        _add(out, flat_key, key, "bool", int(nv.bool_value))
    elif nv.HasField("string_value"):
        _add(out, flat_key, key, "string", text(nv.string_value))


def _annotation_name(ann, seq) -> str:
    if ann.HasField("name_iid"):
        n = seq.lookup(I_DEBUG_NAMES, ann.name_iid)
        return n if n is not None else f"<unknown iid {ann.name_iid}>"
    return text(ann.name)


def _source_location_args(out: list, prefix: str, loc) -> None:
    if loc is None:
        return
    file_name, function_name, line = loc
    if file_name is not None:
        _add(out, f"{prefix}.file_name", f"{prefix}.file_name", "string", file_name)
    if function_name is not None:
        _add(out, f"{prefix}.function_name", f"{prefix}.function_name", "string", function_name)
    if line is not None:
        _add(out, f"{prefix}.line_number", f"{prefix}.line_number", "uint", line)


def proto_args(out: list, msg, prefix: str) -> None:
    """Flattens a typed proto message into args named by field (reflection)."""
    for fd, value in msg.ListFields():
        key = f"{prefix}.{fd.name}"
        if fd.is_repeated:
            for i, item in enumerate(value):
                _proto_field(out, fd, item, key, f"{key}[{i}]")
        else:
            _proto_field(out, fd, value, key, key)


def _proto_field(out: list, fd, value, flat_key: str, key: str) -> None:
    t = fd.type
    if t == fd.TYPE_MESSAGE:
        proto_args(out, value, key) if flat_key == key else _proto_message_indexed(out, value, flat_key, key)
    elif t == fd.TYPE_BOOL:
        _add(out, flat_key, key, "bool", int(value))
    elif t in (fd.TYPE_DOUBLE, fd.TYPE_FLOAT):
        _add(out, flat_key, key, "real", value)
    elif t in (fd.TYPE_UINT32, fd.TYPE_UINT64, fd.TYPE_FIXED32, fd.TYPE_FIXED64):
        _add(out, flat_key, key, "uint", value)
    elif t == fd.TYPE_ENUM:
        ev = fd.enum_type.values_by_number.get(value)
        _add(out, flat_key, key, "string", ev.name if ev else str(value))
    elif t == fd.TYPE_STRING:
        _add(out, flat_key, key, "string", text(value))
    elif t == fd.TYPE_BYTES:
        _add(out, flat_key, key, "string", value.hex())
    else:
        _add(out, flat_key, key, "int", value)


def _proto_message_indexed(out: list, msg, flat_key: str, key: str) -> None:
    for fd, value in msg.ListFields():
        _proto_field(out, fd, value, f"{flat_key}.{fd.name}", f"{key}.{fd.name}")


# Typed TrackEvent fields whose iids point into interned data.
_TYPED_FIELD_NAMES = frozenset(
    {
        "task_execution",
        "log_message",
        "chrome_histogram_sample",
        "source_location_iid",
        "source_location",
        "correlation_id",
        "correlation_id_str",
        "correlation_id_str_iid",
        "cc_scheduler_state",
        "chrome_user_event",
        "chrome_keyed_service",
        "chrome_legacy_ipc",
        "chrome_latency_info",
        "chrome_frame_reporter",
        "chrome_application_state_info",
        "chrome_renderer_scheduler_state",
        "chrome_window_handle_event_info",
        "chrome_content_settings_event_info",
        "chrome_active_processes",
        "chrome_message_pump",
        "chrome_mojo_event_info",
        "screenshot",
    }
)


_TYPED_FIELDS = frozenset(getattr(TE, name) for name in _TYPED_FIELD_NAMES)


def _typed_field_args(out: list, fields: dict, seq) -> None:
    for fd in _TYPED_FIELDS.intersection(fields):
        name = fd.name
        value = fields[fd]
        if name == "task_execution":
            iid = value.posted_from_iid
            if iid:
                # Every posted task repeats one of a few locations: build their args once.
                key = ("task", iid)
                cached = seq.derived.get(key)
                if cached is None:
                    cached = []
                    _source_location_args(cached, "task.posted_from", seq.lookup(I_SOURCE_LOCATIONS, iid))
                    cached = seq.derived[key] = tuple(cached)
                out.extend(cached)
            else:
                proto_args(out, value, "task")
        elif name == "log_message":
            loc = seq.lookup(I_SOURCE_LOCATIONS, value.source_location_iid) if value.source_location_iid else None
            _source_location_args(out, "track_event.log_message", loc)
            body = seq.lookup(I_LOG_BODY, value.body_iid) if value.body_iid else None
            if body is not None:
                _add(out, "track_event.log_message", "track_event.log_message", "string", body)
            if value.prio:
                _add(out, "track_event.priority", "track_event.priority", "int", value.prio)
        elif name == "chrome_histogram_sample":
            if value.HasField("name_iid") and not value.HasField("name"):
                hname = seq.lookup(I_HISTOGRAM_NAMES, value.name_iid)
                if hname is not None:
                    _add(out, "chrome_histogram_sample.name", "chrome_histogram_sample.name", "string", hname)
            proto_args(out, value, "chrome_histogram_sample")
        elif name == "source_location_iid":
            _source_location_args(out, "source", seq.lookup(I_SOURCE_LOCATIONS, value))
        elif name == "source_location":
            _source_location_args(
                out,
                "source",
                (
                    value.file_name or None,
                    value.function_name or None,
                    value.line_number if value.HasField("line_number") else None,
                ),
            )
        elif name == "correlation_id":
            _add(out, "correlation_id", "correlation_id", "uint", value)
        elif name == "correlation_id_str":
            _add(out, "correlation_id", "correlation_id", "string", value)
        elif name == "correlation_id_str_iid":
            s = seq.lookup(I_CORRELATION_STR, value)
            if s is not None:
                _add(out, "correlation_id", "correlation_id", "string", s)
        else:
            proto_args(out, value, name)


# -- parsing -----------------------------------------------------------------------

_SLICE_PHASES = frozenset("BEXiIRnbeSTpF")


class _TrackSet:
    """Tracks that share (type, dimensions) and differ only by track_compressor_idx
    (trace_processor's TrackCompressor): each index serves one cookie (a uuid or
    an async id) at a time, so overlapping slices get separate tracks."""

    __slots__ = ("tracks", "cookies", "nesting", "make")

    def __init__(self, make) -> None:
        self.tracks: list[int] = []
        self.cookies: list = []
        self.nesting: list[int] = []
        self.make = make  # index -> new track id

    def _index(self, cookie) -> int:
        # The index this cookie holds, else the first idle one, else a new one.
        for i, c in enumerate(self.cookies):
            if c == cookie:
                return i
        for i, n in enumerate(self.nesting):
            if n == 0:
                self.cookies[i] = cookie
                return i
        self.cookies.append(cookie)
        self.nesting.append(0)
        self.tracks.append(self.make(len(self.tracks)))
        return len(self.tracks) - 1

    def track_for(self, cookie, kind: str) -> int:
        """kind: begin (nests), end (unnests), instant (both)."""
        i = self._index(cookie)
        if kind == "begin":
            self.nesting[i] += 1
        elif kind == "end" and self.nesting[i] > 0:
            self.nesting[i] -= 1
        return self.tracks[i]

    def default(self) -> int:
        if not self.tracks:
            self.cookies.append(None)
            self.nesting.append(0)
            self.tracks.append(self.make(0))
        return self.tracks[0]


class TrackEventParser:
    def __init__(self, trace, reservations: dict[int, Reservation], first_packet_sequences: set[int]) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.procs = trace.processes
        self.tracks = trace.tracks
        self.slices = trace.slices
        self.flows = trace.flows
        self.reservations = reservations
        self.first_packet_sequences = first_packet_sequences
        self._resolved: dict[int, tuple | None] = {}  # uuid -> (scope, id, is_root)
        self._track_of_uuid: dict[int, Any] = {}  # uuid -> track id or _TrackSet
        self._uuid_by_utid: dict[int, int] = {}
        self._uuid_by_upid: dict[int, int] = {}
        self._v1_flow_ids: dict[tuple, int] = {}
        self.range_of_interest_ns: int | None = None
        self._track_sets: dict[tuple, _TrackSet] = {}
        self._legacy_async_names: dict[tuple, str] = {}  # async id key -> the first name seen for it
        self._fast: dict[int, tuple] = {}  # uuid -> (utid, slice track) once resolved, for the hot path
        self._counter_tracks: dict[int, tuple[int, int]] = {}  # counter uuid -> (track, builtin kind)
        self._uuid_tracks: dict[int, list] = {}  # uuid -> the track ids / merged sets its events went to
        self._next_id = trace.storage.next_id  # counter rows are appended inline on the hot path
        self._counter_rows = trace.storage.buffer("counter")

    # -- descriptors -------------------------------------------------------------
    def parse(self, ts: int, ev: tuple) -> None:
        kind = ev[0]
        if kind == EV_TRACK_EVENT:
            if self.range_of_interest_ns is not None and ts < self.range_of_interest_ns:
                self.stats.inc("track_event_dropped_packets_outside_of_range_of_interest")
                return
            if ev[F_LEGACY] is None:
                fast = self._fast.get(ev[F_UUID])
                if fast is not None and ev[F_TYPE] in _SLICE_TYPES:
                    self._fast_slice_event(ts, ev, fast[0], fast[1])
                    return
            self._general_event(ts, ev)
        elif kind == EV_DESCRIPTOR:
            self._descriptor(ts, ev)
        else:
            _, _, pid, tid, name, *_ = ev
            utid = self.procs.update_thread(tid, pid)
            self.procs.set_thread_name(utid, name, NAME_PRIORITY_TRACK_DESCRIPTOR)

    def _descriptor(self, ts: int, ev: tuple) -> None:
        _, uuid, pid, tid, thread_name, cmdline, process_name, start_ts, chrome, labels, sort_index = ev
        if uuid is not None and self.resolve(uuid) is None:
            self.stats.inc("track_event_parser_errors")
            return
        if tid is not None:
            utid = self.procs.update_thread(tid, pid)
            if thread_name:
                self.procs.set_thread_name(utid, thread_name, NAME_PRIORITY_TRACK_DESCRIPTOR)
            elif chrome is not None:
                self.procs.set_thread_name(utid, chrome_thread_name(chrome), NAME_PRIORITY_THREAD_TYPE)
            return
        upid = self._uuid_upid(uuid) if uuid is not None else self.procs.get_or_create_process(pid)
        proc = self.procs.process(upid)
        self.procs.set_process_name(upid, process_name, NAME_PRIORITY_PROCESS_TRACK_DESCRIPTOR)
        if cmdline:
            # trace_processor drops the cmdline of track-event processes; it is too useful to lose.
            proc.cmdline = " ".join(cmdline)
        if start_ts and proc.start_ts is None:
            proc.start_ts = start_ts
        if chrome is not None:
            ptype, host_app, crash_id = chrome
            if ptype is not None:
                label = chrome_process_name(ptype)
                self.procs.set_process_name(
                    upid,
                    label,
                    NAME_PRIORITY_CHROME_RENDERER_LABEL
                    if ptype in CHROME_RENDERER_TYPES
                    else NAME_PRIORITY_CHROME_PROCESS_LABEL,
                )
                if label is not None:
                    proc.args["chrome.process_type"] = ("chrome.process_type", "chrome.process_type", "string", label)
            if host_app:
                proc.args["chrome.host_app_package_name"] = (
                    "chrome.host_app_package_name",
                    "chrome.host_app_package_name",
                    "string",
                    host_app,
                )
            if crash_id is not None:
                proc.args["chrome.crash_trace_id"] = ("chrome.crash_trace_id", "chrome.crash_trace_id", "int", crash_id)
        if labels:
            for i, label in enumerate(labels):
                k = f"chrome.process_label[{i}]"
                proc.args[k] = ("chrome.process_label", k, "string", label)

    def _uuid_upid(self, uuid: int) -> int:
        res = self.resolve(uuid)
        return res[1] if res and res[0] == "process" else self.procs.get_or_create_process(self.reservations[uuid].pid)

    def resolve(self, uuid: int) -> tuple | None:
        """(scope, utid|upid|None, is_root) for a descriptor uuid; None if invalid."""
        if uuid in self._resolved:
            return self._resolved[uuid]
        self._resolved[uuid] = None  # guards against parent loops
        r = self.reservations.get(uuid)
        if r is None:
            r = self.reservations[uuid] = Reservation(uuid)
            if uuid == 0:
                r.name = "Default Track"
        depth = 0
        p = r.parent_uuid
        seen = {uuid}
        while p:
            if p in seen:
                self.stats.inc("track_event_track_hierarchy_loop")
                return None
            seen.add(p)
            depth += 1
            if depth > 100:
                self.stats.inc("track_event_track_hierarchy_too_deep")
                return None
            pr = self.reservations.get(p)
            p = pr.parent_uuid if pr else 0
        parent = self.resolve(r.parent_uuid) if r.parent_uuid else None
        if r.tid is not None:
            utid = self.procs.update_thread(r.tid, r.pid)
            if utid in self._uuid_by_utid and self._uuid_by_utid[utid] != uuid:
                # tid reuse: a new descriptor for a known thread starts a new thread.
                utid = self.procs.start_new_thread(None, r.tid)
                self.procs.update_thread(r.tid, r.pid)
            self._uuid_by_utid[utid] = uuid
            if r.sibling_order_rank is not None and self._explicit_ordering("thread_ordering"):
                self.procs.thread(utid).args["thread_sort_index_hint"] = (
                    "thread_sort_index_hint",
                    "thread_sort_index_hint",
                    "int",
                    r.sibling_order_rank,
                )
            result = ("thread", utid, True)
        elif r.pid is not None:
            upid = self.procs.get_or_create_process(r.pid)
            if upid in self._uuid_by_upid and self._uuid_by_upid[upid] != uuid:
                upid = self.procs.start_new_process(r.pid)
            self._uuid_by_upid[upid] = uuid
            if r.sibling_order_rank is not None and self._explicit_ordering("process_ordering"):
                self.procs.process(upid).args["process_sort_index_hint"] = (
                    "process_sort_index_hint",
                    "process_sort_index_hint",
                    "int",
                    r.sibling_order_rank,
                )
            result = ("process", upid, True)
        elif parent is not None and parent[0] != "global":
            result = (parent[0], parent[1], False)
        else:
            result = ("global", None, False)
        self._resolved[uuid] = result
        return result

    def _explicit_ordering(self, which: str) -> bool:
        root = self.reservations.get(0)
        return root is not None and getattr(root, which) == "explicit"

    # -- tracks ------------------------------------------------------------------
    def _source_args(self, r: Reservation, is_root_in_scope: bool) -> list[Arg]:
        out: list[Arg] = [
            ("source", "source", "string", "descriptor"),
            ("trace_id", "trace_id", "int", _signed(r.uuid)),
            ("is_root_in_scope", "is_root_in_scope", "bool", int(is_root_in_scope)),
        ]
        c = r.counter
        if c is not None:
            if c.category:
                out.append(("category", "category", "string", c.category))
            if c.builtin_type:
                out.append(("builtin_counter_type", "builtin_counter_type", "string", c.builtin_type))
            if c.y_axis_share_key:
                out.append(("y_axis_share_key", "y_axis_share_key", "string", c.y_axis_share_key))
        if r.seq_id is not None and r.seq_id in self.first_packet_sequences:
            out.append(("has_first_packet_on_sequence", "has_first_packet_on_sequence", "bool", 1))
        if r.child_ordering:
            out.append(("child_ordering", "child_ordering", "string", r.child_ordering))
        if r.sibling_order_rank is not None:
            out.append(("sibling_order_rank", "sibling_order_rank", "int", r.sibling_order_rank))
        if r.description:
            out.append(("description", "description", "string", r.description))
        return out

    def _new_track(
        self, type: str, dims: tuple, r: Reservation, name, is_root: bool, event_type: str, parent_id: int | None
    ) -> int:
        unit = r.counter.unit if r.counter else None
        track_id = self.tracks.intern(type, dims, event_type, name, unit)
        row = self.tracks.row(track_id)
        if not row.source_args:
            row.source_args = self._source_args(r, is_root)
        if parent_id is not None:
            row.parent_id = parent_id
        return track_id

    def descriptor_track(self, uuid: int, event_name: str | None):
        """Track id (or merged group) for events on descriptor uuid."""
        found = self._track_of_uuid.get(uuid)
        if found is not None:
            return found
        res = self.resolve(uuid)
        if res is None:
            return None
        scope, owner, is_root = res
        r = self.reservations[uuid]
        event_type = "counter" if r.counter else "state" if r.is_state else "slice"
        parent_id = None
        parent_res = None
        if r.parent_uuid:
            parent_id = self._parent_track(r.parent_uuid)
            parent_res = self.resolve(r.parent_uuid)
        suuid = _signed(uuid)
        if is_root:
            if scope == "thread":
                if r.counter:
                    t = self._new_track(
                        "thread_counter_track_event",
                        (("utid", owner), ("track_uuid", suuid)),
                        r,
                        r.name,
                        True,
                        "counter",
                        None,
                    )
                elif r.use_separate_track or r.is_state:
                    t = self._new_track(
                        "thread_state_track_event" if r.is_state else "thread_track_event",
                        (("utid", owner), ("track_uuid", suuid)),
                        r,
                        r.name,
                        True,
                        event_type,
                        None,
                    )
                else:
                    t = self.thread_track(owner)
            else:
                typ = (
                    "process_counter_track_event"
                    if r.counter
                    else "process_state_track_event"
                    if r.is_state
                    else "process_track_event"
                )
                t = self._new_track(
                    typ,
                    (("upid", owner), ("track_uuid", suuid)),
                    r,
                    self._process_track_name(r.name),
                    True,
                    event_type,
                    None,
                )
            self._track_of_uuid[uuid] = t
            self._record_uuid_track(uuid, t)
            return t
        name = r.name if r.name is not None else event_name
        # Named by the first event: the track is only final once it has a name.
        cacheable = r.name is not None or event_name is not None
        if parent_id is not None and parent_res is not None and parent_res[0] in ("thread", "process"):
            pscope, powner, proot = parent_res
            dim = "utid" if pscope == "thread" else "upid"
            set_parent = None if proot else parent_id
            if pscope == "process":
                name = self._process_track_name(name)
            if r.counter:
                t = self._new_track(
                    f"{pscope}_counter_track_event",
                    ((dim, powner), ("track_uuid", suuid)),
                    r,
                    self._process_track_name(r.name) if pscope == "process" else r.name,
                    False,
                    "counter",
                    set_parent,
                )
            elif r.merge is None or r.is_state:
                typ = f"{pscope}_state_track_event" if r.is_state else f"{pscope}_track_event"
                t = self._new_track(typ, ((dim, powner), ("track_uuid", suuid)), r, name, False, event_type, set_parent)
            else:
                key = r.merge_key if r.merge == "key" else name
                mtype = 2 if r.merge == "key" else 0
                t = self._merged_group(
                    f"{pscope}_merged_track_event",
                    (
                        (dim, powner),
                        ("parent_track_uuid", _signed(r.parent_uuid)),
                        ("merge_key_type", mtype),
                        ("merge_key_value", key),
                    ),
                    r,
                    name,
                    set_parent,
                )
        else:
            is_root_in_scope = uuid == 0
            if r.counter:
                t = self._new_track(
                    "global_counter_track_event",
                    (("track_uuid", suuid),),
                    r,
                    r.name,
                    is_root_in_scope,
                    "counter",
                    parent_id,
                )
            elif r.merge is None or r.is_state:
                typ = "global_state_track_event" if r.is_state else "global_track_event"
                t = self._new_track(typ, (("track_uuid", suuid),), r, name, is_root_in_scope, event_type, parent_id)
            else:
                key = r.merge_key if r.merge == "key" else name
                mtype = 2 if r.merge == "key" else 0
                t = self._merged_group(
                    "global_merged_track_event",
                    (
                        ("parent_track_uuid", _signed(r.parent_uuid)),
                        ("merge_key_type", mtype),
                        ("merge_key_value", key),
                    ),
                    r,
                    name,
                    parent_id,
                    is_root_in_scope,
                )
        if cacheable:
            self._track_of_uuid[uuid] = t
        self._record_uuid_track(uuid, t)
        return t

    def _record_uuid_track(self, uuid: int, t) -> None:
        seen = self._uuid_tracks.setdefault(uuid, [])
        if not any(x is t or x == t for x in seen):
            seen.append(t)

    def tracks_of_descriptor(self, uuid: int) -> list[int]:
        """Every track that stands for descriptor `uuid` so far (a merged group: each of its tracks)."""
        out: list[int] = []
        for t in self._uuid_tracks.get(uuid, ()):
            out.extend(t.tracks if isinstance(t, _TrackSet) else (t,))
        return out

    def descriptor_track_id(self, uuid: int) -> int | None:
        """The track of descriptor `uuid`, created if no event made it yet (a declaration's track)."""
        return self._parent_track(uuid)

    def _process_track_name(self, name: str | None) -> str | None:
        """Process-scoped track names go through the trace's process_track_name renames."""
        return self.trace.process_track_name_map.get(name, name) if name is not None else None

    def _merged_group(self, type: str, dims: tuple, r: Reservation, name, parent_id, is_root_in_scope=False):
        def make(idx: int) -> int:
            return self._new_track(
                type, dims + (("track_compressor_idx", idx),), r, name, is_root_in_scope, "slice", parent_id
            )

        return self._track_set(type, dims, make)

    def _track_set(self, type: str, dims: tuple, make) -> _TrackSet:
        key = (type, dims)
        track_set = self._track_sets.get(key)
        if track_set is None:
            group_id = self.trace.new_track_group()  # numbered as first used, across importers

            def make_grouped(idx: int) -> int:
                track_id = make(idx)
                self.tracks.row(track_id).track_group_id = group_id
                return track_id

            track_set = self._track_sets[key] = _TrackSet(make_grouped)
        return track_set

    def _parent_track(self, uuid: int) -> int | None:
        t = self.descriptor_track(uuid, None)
        if isinstance(t, _TrackSet):
            return t.default()
        return t

    def thread_track(self, utid: int) -> int:
        return self.tracks.intern("thread_execution", (("utid", utid),), "slice")

    def _slice_track(self, t, uuid: int, kind: str) -> int | None:
        if isinstance(t, _TrackSet):
            return t.track_for(uuid, kind)
        return t

    # -- events ----------------------------------------------------------------------
    def _fast_slice_event(self, ts: int, ev: tuple, utid: int | None, track: int) -> None:
        """The common case, with every lookup already cached: a typed slice
        event on a descriptor track that is a plain (unmerged) track. Same
        semantics as _general_event, which filled the cache."""
        thread_ts = ev[F_THREAD_TS]
        thread_ic = ev[F_THREAD_IC]
        insert = self.trace.storage.insert
        if utid is not None:
            if thread_ts is not None:
                insert("counter", (ts, self._thread_counter_track(utid, "thread_time"), float(thread_ts), None))
            if thread_ic is not None:
                insert("counter", (ts, self._thread_counter_track(utid, "thread_instructions"), float(thread_ic), None))
        extra = ev[F_EXTRA]
        if extra:
            counter_tracks = self._counter_tracks
            rows = self._counter_rows
            ids = self._next_id
            for cuuid, value in extra:
                entry = counter_tracks.get(cuuid)
                if entry is None:
                    entry = self._counter_track_entry(cuuid)
                    if entry is None:
                        continue
                t, builtin = entry
                counter_id = ids["counter"]
                ids["counter"] = counter_id + 1
                rows.append((counter_id, ts, t, value, None))
                if len(rows) >= BATCH_ROWS:
                    self.trace.storage.flush("counter")
                if builtin == 1:
                    thread_ts = int(value)
                elif builtin == 2:
                    thread_ic = int(value)
        etype = ev[F_TYPE]
        args = ev[F_ARGS]
        if etype == TYPE_SLICE_BEGIN:
            slice_id = self.slices.begin(
                ts,
                track,
                ev[F_CATEGORY],
                ev[F_NAME],
                args,
                thread_ts if utid is not None else None,
                thread_ic if utid is not None else None,
            )
        elif etype == TYPE_SLICE_END:
            slice_id = self.slices.end(ts, track, ev[F_CATEGORY], ev[F_NAME], args, thread_ts, thread_ic)
        else:
            slice_id = self.slices.scoped(
                ts,
                0,
                track,
                ev[F_CATEGORY],
                ev[F_NAME],
                args,
                thread_ts if utid is not None else None,
                0 if (utid is not None and thread_ts is not None) else None,
            )
        if slice_id is not None and (ev[F_FLOWS] or ev[F_TERM_FLOWS]):
            self._flows(slice_id, ev, None)

    def _thread_counter_track(self, utid: int, kind: str) -> int:
        return self.tracks.intern(
            kind, (("utid", utid),), "counter", "thread_time" if kind == "thread_time" else "thread_instruction_count"
        )

    def _counter_track_entry(self, cuuid: int) -> tuple[int, int] | None:
        t = self.descriptor_track(cuuid, None)
        if t is None or isinstance(t, _TrackSet):
            return None
        cname = self.tracks.row(t).name
        entry = (t, 1 if cname == "thread_time" else 2 if cname == "thread_instruction_count" else 0)
        self._counter_tracks[cuuid] = entry
        return entry

    def _general_event(self, ts: int, ev: tuple) -> None:
        etype = ev[F_TYPE]
        legacy = ev[F_LEGACY]
        phase = legacy.get("phase") if legacy else None
        if not etype and not phase:
            self.stats.inc("track_event_parser_errors")
            return
        uuid = ev[F_UUID]
        thread = ev[F_THREAD]
        name = ev[F_NAME]
        utid = upid = None
        passthrough_utid = None
        fallback = False
        if uuid:
            res = self.resolve(uuid)
            if res is None:
                self.stats.inc("track_event_parser_errors")
                return
            scope, owner, _ = res
            if scope == "thread":
                utid = owner
                upid = self.procs.thread(utid).upid
            elif scope == "process":
                upid = owner
                if thread is not None:
                    cand = self.procs.update_thread(thread[1], thread[0])
                    if self.procs.thread(cand).upid == upid:
                        passthrough_utid = cand
            elif thread is not None:
                passthrough_utid = self.procs.update_thread(thread[1], thread[0])
        else:
            valid = thread is not None
            fallback = (not ev[F_HAS_UUID] or not ev[F_HAS_TYPE]) and valid
            if legacy and "pid_override" in legacy:
                fallback = True
            if legacy and "tid_override" in legacy and valid:
                fallback = True
            if fallback:
                pid, tid = thread if thread else (0, 0)
                if legacy and "pid_override" in legacy:
                    pid = legacy["pid_override"]
                    tid = -1  # trace_processor makes a synthetic tid here
                if legacy and "tid_override" in legacy:
                    tid = legacy["tid_override"]
                if not pid or not tid:
                    self.stats.inc("track_event_parser_errors")
                    return
                utid = self.procs.update_thread(tid, pid)
                upid = self.procs.thread(utid).upid
        if phase in ("b", "e", "n", "S", "T", "p", "F"):
            passthrough_utid = utid
        elif phase in ("i", "I"):
            scope_ = legacy.get("instant_event_scope", 0)
            if scope_ in (0, 3):
                if utid is None:
                    self.stats.inc("track_event_parser_errors")
                    return
            elif scope_ == 1:
                passthrough_utid, utid = utid, None
            elif scope_ == 2:
                if upid is None:
                    self.stats.inc("track_event_parser_errors")
                    return
                passthrough_utid, utid = utid, None

        thread_ts = ev[F_THREAD_TS]
        thread_ic = ev[F_THREAD_IC]
        # Thread time carried on the event itself becomes per-thread counters.
        if utid is not None:
            if thread_ts is not None:
                self.trace.insert_counter(ts, self._thread_counter_track(utid, "thread_time"), float(thread_ts))
            if thread_ic is not None:
                self.trace.insert_counter(ts, self._thread_counter_track(utid, "thread_instructions"), float(thread_ic))
        if ev[F_EXTRA]:
            for cuuid, value in ev[F_EXTRA]:
                entry = self._counter_tracks.get(cuuid) or self._counter_track_entry(cuuid)
                if entry is None:
                    continue
                t, builtin = entry
                self.trace.insert_counter(ts, t, value)
                if builtin == 1:
                    thread_ts = int(value)
                elif builtin == 2:
                    thread_ic = int(value)

        if etype == TYPE_COUNTER:
            t = self._association(uuid, fallback, utid, upid, name, legacy, "counter")
            if t is not None:
                self.trace.insert_counter(ts, t, ev[F_COUNTER], ev[F_ARGS])
            return
        if etype == TYPE_STATE:
            if not uuid and fallback:
                self.stats.inc("track_event_parser_errors")
                return
            t = self.descriptor_track(uuid, name)
            if t is not None:
                self._state(ts, t, ev[F_CATEGORY], name, ev[F_ARGS])
            return

        if phase is None:
            phase = {TYPE_SLICE_BEGIN: "B", TYPE_SLICE_END: "E", TYPE_INSTANT: "i"}.get(etype)
            if phase is None:
                self.stats.inc("track_event_parser_errors")
                return
            if utid is None:
                phase = phase.lower() if phase != "i" else "n"
        category = ev[F_CATEGORY]
        args = list(ev[F_ARGS]) if ev[F_ARGS] else []

        if phase in ("B", "E", "X") and utid is None:
            self.stats.inc("track_event_parser_errors")
            return
        if phase in ("s", "t", "f"):
            self._flow_v1(phase, legacy, category, name, uuid, fallback, utid, upid)
            return
        if phase == "M":
            self._metadata_event(utid, upid, name, args)
            return
        if phase not in _SLICE_PHASES:
            # trace_processor keeps other legacy phases (e.g. 'P' V8 samples) only
            # in its raw/profiler tables; they make no slice.
            return

        async_like = phase in ("b", "e", "n", "S", "T", "p", "F")
        kind = "begin" if phase in ("B", "b", "S") else "end" if phase in ("E", "e", "F") else "instant"
        if async_like and legacy is not None:
            t = self._legacy_async_track(legacy, category, name, upid, args)
            if t is None:
                return
            if passthrough_utid is not None and phase not in ("e", "F"):
                # An end's thread does not replace the one recorded by its begin.
                args.append(("legacy_event.passthrough_utid", "legacy_event.passthrough_utid", "int", passthrough_utid))
        elif phase in ("i", "I") and legacy and legacy.get("instant_event_scope", 0) in (1, 2):
            if legacy.get("instant_event_scope") == 1:
                t = self.tracks.intern("legacy_chrome_global_instants", (), "slice")
            else:
                t = self.tracks.intern("chrome_process_instant", (("upid", upid),), "slice")
            row = self.tracks.row(t)
            if not row.source_args:
                row.source_args = [("source", "source", "string", "chrome")]
        else:
            t = self._association(uuid, fallback, utid, upid, name, legacy, kind)
            if t is None:
                return
            if (
                legacy is None
                and uuid
                and not isinstance(self._track_of_uuid.get(uuid), _TrackSet)
                and uuid in self._track_of_uuid
            ):
                self._fast[uuid] = (utid, t)

        if phase in ("S", "T", "p", "R"):
            args.append(("legacy_event.phase", "legacy_event.phase", "string", phase))

        slice_id = None
        if phase in ("B", "b", "S"):
            slice_id = self.slices.begin(
                ts,
                t,
                category,
                name,
                args,
                thread_ts if utid is not None else None,
                thread_ic if utid is not None else None,
            )
        elif phase in ("E", "e", "F"):
            slice_id = self.slices.end(ts, t, category, name, args, thread_ts, thread_ic)
        elif phase == "X":
            dur = legacy.get("duration_us", 0) * 1000
            tdur = legacy.get("thread_duration_us", 0) * 1000 if thread_ts is not None else None
            slice_id = self.slices.scoped(ts, dur, t, category, name, args, thread_ts, tdur)
        elif phase in ("i", "I", "R", "n", "T", "p"):
            slice_id = self.slices.scoped(
                ts,
                0,
                t,
                category,
                name,
                args,
                thread_ts if utid is not None else None,
                0 if (utid is not None and thread_ts is not None) else None,
            )
        else:
            self.stats.inc("track_event_parser_errors")
            return
        if slice_id is not None and phase not in ("T", "p"):
            self._flows(slice_id, ev, legacy)

    def _association(self, uuid, fallback, utid, upid, name, legacy, kind) -> int | None:
        if not uuid and fallback:
            return self.thread_track(utid)
        t = self.descriptor_track(uuid, name)
        if t is None:
            self.stats.inc("track_event_parser_errors")
            return None
        return self._slice_track(t, uuid, kind)

    def _legacy_async_track(self, legacy, category, name, upid, args) -> int | None:
        """The track of a legacy async event (b/e/n, S/T/p/F), as trace_processor's
        InternLegacyAsyncTrack: one track set per (scope, first name of the id)."""
        phase = legacy.get("phase")
        scoped_to_process = False
        if "unscoped_id" in legacy:
            source_id = legacy["unscoped_id"]
        elif "global_id" in legacy:
            source_id = legacy["global_id"]
        elif "local_id" in legacy:
            if upid is None:
                self.stats.inc("track_event_parser_errors")
                return None
            source_id = legacy["local_id"]
            scoped_to_process = True
        else:
            self.stats.inc("track_event_parser_errors")
            return None
        source_id = _signed(source_id)
        args.insert(0, ("legacy_trace_source_id", "legacy_trace_source_id", "int", source_id))
        id_scope = name if phase in ("S", "T", "p", "F") else category
        if "id_scope" in legacy:
            id_scope = f"{category}:{legacy['id_scope']}"
        upid = upid or 0
        if scoped_to_process:
            name = self._process_track_name(name)
            root_key = ("process", upid, source_id)
        else:
            root_key = ("global", source_id)
        root_name = self._legacy_async_names.setdefault(root_key, name)
        if scoped_to_process:
            typ, dims = "legacy_async_process_slice", (("upid", upid), ("scope", id_scope), ("name", root_name))
        else:
            typ, dims = "legacy_async_global_slice", (("scope", id_scope), ("name", root_name))
        source_args = [
            ("source", "source", "string", "chrome"),
            ("trace_id_is_process_scoped", "trace_id_is_process_scoped", "bool", int(scoped_to_process)),
            ("upid", "upid", "uint", upid),
            ("source_scope", "source_scope", "string", id_scope),
        ]

        def make(idx: int) -> int:
            track_id = self.tracks.create(typ, dims + (("track_compressor_idx", idx),), "slice", name)
            self.tracks.row(track_id).source_args = source_args
            return track_id

        # trace_processor's mapping, as coded there: 'F' (async end) counts as
        # an instant and 'T' (step) as an end.
        kind = "begin" if phase in ("b", "S") else "end" if phase in ("e", "T") else "instant"
        return self._track_set(typ, dims, make).track_for(source_id, kind)

    def _flows(self, slice_id: int, ev: tuple, legacy) -> None:
        if legacy and "bind_id" in legacy:
            direction = legacy.get("flow_direction")
            bind_id = legacy["bind_id"]
            if direction == 1:  # FLOW_IN
                self.flows.end_v2(bind_id, slice_id, close=False)
            elif direction == 2:  # FLOW_OUT
                self.flows.begin(bind_id, slice_id)
            elif direction == 3:  # FLOW_INOUT
                self.flows.step(bind_id, slice_id)
            else:
                self.stats.inc("flow_without_direction")
        if ev[F_FLOWS]:
            for fid in ev[F_FLOWS]:
                self.flows.step_v2(fid, slice_id, terminating=False)
        if ev[F_TERM_FLOWS]:
            for fid in ev[F_TERM_FLOWS]:
                self.flows.end_v2(fid, slice_id, close=True)

    def _flow_v1(self, phase, legacy, category, name, uuid, fallback, utid, upid) -> None:
        if not legacy or "unscoped_id" not in legacy:
            self.stats.inc("flow_invalid_id")
            return
        key = (legacy["unscoped_id"], category, name)
        flow_id = self._v1_flow_ids.get(key)
        if flow_id is None:
            flow_id = self._v1_flow_ids[key] = -(len(self._v1_flow_ids) + 1)
        t = self._association(uuid, fallback, utid, upid, name, legacy, "instant")
        if t is None:
            return
        top = self.slices.top_slice(t)
        if phase == "s":
            self.flows.begin(flow_id, top)
        elif phase == "t":
            self.flows.step(flow_id, top)
        else:
            self.flows.end(flow_id, top, bool(legacy.get("bind_to_enclosing")), close=False)

    def _metadata_event(self, utid, upid, name, args) -> None:
        values = {a[1]: a[3] for a in args}
        if name == "thread_name" and utid is not None:
            self.procs.set_thread_name(utid, values.get("debug.name"))
        elif name == "process_name" and upid is not None:
            n = values.get("debug.name")
            if n:
                self.procs.process(upid).name = n
        else:
            self.stats.inc("track_event_parser_errors")

    def _state(self, ts: int, track_id: int, category, value, args) -> None:
        self.trace.states.update(ts, track_id, value, category, args)

    def finish(self) -> None:
        self.trace.states.finish()


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v
