"""TrackEvent tokenizing, in file order: `tokenize_track_event` reduces a TrackEvent to a
plain tuple (track_event_fields.py): interned names resolved, timestamps and counter values
made absolute, args flattened (track_event_args.py)."""

from __future__ import annotations

from google.protobuf.message import DecodeError
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ..common.event_kinds import EV_TRACK_EVENT
from ..common.values import INT64_MAX, saturate, text
from .active_chrome_processes import ACTIVE_PROCESS_PIDS, ActiveProcessesArgs
from .gpu import correlated_args
from .reader import WIRE_I32, WIRE_I64, WIRE_LEN, WIRE_VARINT, CorruptData, decode_varint
from .split_tokenize import not_shareable
from .track_event_args import TYPED_FIELDS, LogMessageArgs, annotation_name, debug_annotation_args, typed_field_args
from .track_event_extensions import DeferredExtensionArgs, TrackEventExtensions
from .track_event_fields import I_CATEGORIES, I_NAMES, TE, TYPE_COUNTER, TYPE_STATE
from .unknown import unknown_fields

# Per sequence, how many decoded TrackEvents to remember (see tokenize_track_event).
DECODE_CACHE_ENTRIES = 4096
ACTIVE_PROCESSES = TE.chrome_active_processes


def tokenize_track_event(importer, raw: bytes, seq, packet_ts: int | None) -> tuple[int, tuple] | None:
    """Reduces a TrackEvent (its encoded bytes) to a plain tuple for the sorter
    (None if dropped, counted).

    Most events repeat byte for byte within a sequence (an end event with the
    same thread-time delta, the same task posted from the same place), so the
    part that depends only on the bytes and the interned data is decoded once
    per distinct encoding (or once per encoding but for the values every event has
    its own: _decode_new) and kept until the sequence's state is cleared. What
    depends on earlier events (delta timestamps, incremental counters) is
    computed every time.
    """
    stats = importer.stats
    static = seq.decoded.get(raw)
    if static is None:
        static = _decode_new(stats, importer.extensions, raw, seq)
        if static is None:
            return None
    (
        ts_delta,
        ts_abs,
        thread_times,
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
        callstack,
    ) = static

    needs_conversion = True
    if ts_delta is not None:
        not_shareable(seq)
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
    if thread_times is not None:
        thread_times = _thread_times(stats, seq, *thread_times)
        if thread_times is None:
            return None
        thread_ts, thread_ic = thread_times

    uuid = explicit_uuid if has_uuid else (seq.default_track_uuid or 0)
    counter_value = None
    if etype == TYPE_COUNTER:
        counter_value = _counter_value(importer, seq, uuid, counter_raw)
        if counter_value is None:
            return None
    elif etype == TYPE_STATE and not has_uuid and seq.default_track_uuid is None:
        # An explicit uuid 0 goes on to the parser (the legacy pid/tid fallback refuses it there).
        stats.inc("track_event_state_missing_track_uuid")
        return None

    extra: tuple | list | None = None
    if (
        extra_values
        and not extra_dvalues
        and len(extra_values) == 1
        and (extra_uuids or seq.default_extra_counter_uuids)
    ):
        # One extra counter (Chromium's thread time on every event): inline.
        cuuid = (extra_uuids or seq.default_extra_counter_uuids)[0]
        spec = importer.counter_specs.get(cuuid) or _new_counter_spec(importer, cuuid)
        if spec is None:
            return None
        multiplier, incremental = spec
        value = extra_values[0]
        value = value * multiplier if multiplier else float(value)
        if incremental:
            not_shareable(seq)
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
        callstack if callstack is None or callstack[0] == "inline" else _interned_callstack(importer, seq, callstack),
    )


def _interned_callstack(importer, seq, callstack: tuple) -> tuple:
    """An interned callstack's frames, resolved against the sequence's interned data now
    (None, counted by the profile tokenizer, if they are not usable)."""
    return ("interned", importer.profiles.callstack_frames(seq, callstack[1]), callstack[2])


# Field -> position in _decode's working list; the fields in neither this nor
# TYPED_FIELDS carry nothing the importer uses.
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
    D_CALLSTACK,
    D_CALLSTACK_IID,
    D_CALLSTACK_WEIGHT,
) = range(27)
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
            "callstack",
            "callstack_iid",
            "callstack_weight",
        )
    )
}


def _decode_new(stats, extensions: TrackEventExtensions, raw: bytes, seq) -> tuple | None:
    """_decode() for bytes not in the sequence's cache (remembered there); None (counted) if undecodable.

    Bytes that differ from an earlier event's only in its per-event values (flow ids, the extra
    counters' thread time: most of the events not repeated byte for byte) reuse that event's
    decoding, cached under the bytes without them (a "template"), with their own values put in."""
    volatile = split_volatile_fields(raw)
    if volatile is None:
        return _decode_remembered(stats, extensions, raw, seq)[0]
    template_raw, extra, flows, term = volatile
    template = seq.decoded.get(template_raw)
    remember = True
    if template is None:
        template, remember = _decode_remembered(stats, extensions, template_raw, seq)
        if template is None:
            return None
    static = (
        *template[:8],
        tuple(extra) if extra else (),
        *template[9:15],
        flows or template[15],
        term or template[16],
        *template[17:],
    )
    if remember:
        _remember(seq, raw, static)
    return static


def _decode_remembered(stats, extensions: TrackEventExtensions, raw: bytes, seq) -> tuple[tuple | None, bool]:
    """(_decode() of raw or None (counted) if undecodable, whether it was remembered in the cache)."""
    misses = seq.misses
    try:
        static = _decode(pb.TrackEvent.FromString(raw), extensions, raw, seq)
    except DecodeError:
        stats.inc("track_event_parser_errors")
        return None, False
    if seq.misses != misses:  # an unresolved iid may be interned later: don't remember it
        return static, False
    _remember(seq, raw, static)
    return static, True


def _remember(seq, raw: bytes, static: tuple) -> None:
    if len(seq.decoded) >= DECODE_CACHE_ENTRIES:
        seq.decoded.clear()
    seq.decoded[raw] = static


# TrackEvent tags (field number << 3 | wire type) of the per-event values split_volatile_fields takes out.
_EXTRA_VALUE_TAG = TE.extra_counter_values.number << 3  # varint
_FLOW_TAG = TE.flow_ids.number << 3 | 1  # fixed64
_TERM_FLOW_TAG = TE.terminating_flow_ids.number << 3 | 1
# The same fields packed: rare, and their values would have to be merged in order with the
# unpacked ones: such an event is decoded whole.
_PACKED_VOLATILE_TAGS = frozenset(
    (
        TE.extra_counter_values.number << 3 | 2,
        TE.flow_ids.number << 3 | 2,
        TE.terminating_flow_ids.number << 3 | 2,
    )
)


def split_volatile_fields(raw: bytes) -> tuple[bytes, list | None, list | None, list | None] | None:
    """(raw without its extra_counter_values, flow_ids and terminating_flow_ids fields, their
    values in order), read from the top-level fields of TrackEvent bytes; None if raw has none of
    them, or any it cannot take out exactly (packed, or not well formed: decoded whole instead)."""
    n = len(raw)
    pos = kept_from = 0
    pieces: list | None = None
    extra = flows = term = None
    try:
        while pos < n:
            start = pos
            tag = raw[pos]
            if tag < 0x80:
                pos += 1
            else:
                tag, pos = decode_varint(raw, pos)
            if tag == _EXTRA_VALUE_TAG:
                value, pos = decode_varint(raw, pos)
                if extra is None:
                    extra = []
                extra.append(value - (1 << 64) if value >= 1 << 63 else value)  # int64
            elif tag == _FLOW_TAG or tag == _TERM_FLOW_TAG:
                end = pos + 8
                if end > n:
                    return None
                value = int.from_bytes(raw[pos:end], "little")
                pos = end
                if tag == _FLOW_TAG:
                    if flows is None:
                        flows = []
                    flows.append(value)
                else:
                    if term is None:
                        term = []
                    term.append(value)
            else:
                wire = tag & 7
                if wire == WIRE_VARINT:
                    _, pos = decode_varint(raw, pos)
                elif wire == WIRE_LEN:
                    if tag in _PACKED_VOLATILE_TAGS:
                        return None
                    length, pos = decode_varint(raw, pos)
                    pos += length
                elif wire == WIRE_I64:
                    pos += 8
                elif wire == WIRE_I32:
                    pos += 4
                else:
                    return None
                continue
            if pieces is None:
                pieces = []
            if start > kept_from:
                pieces.append(raw[kept_from:start])
            kept_from = pos
    except (IndexError, CorruptData):
        return None
    if pieces is None or pos != n:
        return None
    if kept_from < n:
        pieces.append(raw[kept_from:])
    return b"".join(pieces), extra, flows, term


def _decode(ev, extensions: TrackEventExtensions, raw: bytes, seq) -> tuple:
    """The part of a TrackEvent that depends only on its bytes and the interned data."""
    # One ListFields() pass (cheaper than a HasField() per field) sorted into slots.
    d: list = [None] * 27
    typed = None
    slots = _DECODE_SLOTS
    for fd, value in ev.ListFields():
        i = slots.get(fd)
        if i is not None:
            d[i] = value
        elif fd in TYPED_FIELDS:
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
    # trace_processor's order: typed fields, extension fields, debug annotations.
    args: list = []
    logs = bool(typed) and typed_field_args(args, typed, seq)
    lists_active_processes = typed is not None and ACTIVE_PROCESSES in typed
    unknown = unknown_fields(ev)
    deferred = len(unknown) and extensions.add_args(args, unknown, raw, seq)
    if d[D_ANNOTATIONS]:
        for ann in d[D_ANNOTATIONS]:
            ann_name = annotation_name(ann, seq)
            debug_annotation_args(args, ann, f"debug.{ann_name}", f"debug.{ann_name}", seq)
    if not deferred and len(unknown) and not lists_active_processes:  # ChromeTrackEvent's active_processes
        lists_active_processes = any(a[0] in ACTIVE_PROCESS_PIDS for a in args)
    cat_iids, cats = d[D_CAT_IIDS], d[D_CATS]
    if cat_iids is not None and len(cat_iids) == 1 and not cats:
        category = seq.lookup(I_CATEGORIES, cat_iids[0])
        if category is None:
            category = f"unknown({cat_iids[0]})"
    else:
        category = _category(cat_iids, cats, seq)
    flows = d[D_FLOWS] or d[D_FLOWS_OLD]
    term = d[D_TERM] or d[D_TERM_OLD]
    thread_times = (d[D_TT_DELTA], d[D_TT_ABS], d[D_TIC_DELTA], d[D_TIC_ABS])
    callstack = None
    if d[D_CALLSTACK_IID] is not None:
        callstack = ("iid", d[D_CALLSTACK_IID], d[D_CALLSTACK_WEIGHT])  # resolved per event: interned frames
    elif d[D_CALLSTACK] is not None:
        frames = tuple(
            (
                text(f.function_name),
                text(f.source_file) if f.HasField("source_file") else None,
                f.line_number if f.HasField("line_number") else None,
            )
            for f in d[D_CALLSTACK].frames
        )
        callstack = ("inline", frames, d[D_CALLSTACK_WEIGHT]) if frames else None
    return (
        d[D_TS_DELTA],
        d[D_TS_ABS],
        None if thread_times == (None, None, None, None) else thread_times,
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
        _args_tuple(args, lists_active_processes, logs, raw if deferred else None, bool(len(unknown))),
        list(flows) if flows else None,
        list(term) if term else None,
        legacy,
        callstack,
    )


def _args_tuple(
    args: list, lists_active_processes: bool, logs: bool, deferred_raw: bytes | None, has_extensions: bool
) -> tuple | None:
    """An event's args (None: none) as the tuple type that tells the parser what more to do with them;
    `deferred_raw`: the event's bytes, when its extension args are made at parse time; `has_extensions`:
    some came from extension fields (a GPU correlation among them, perhaps)."""
    if deferred_raw is not None:
        return DeferredExtensionArgs((*args, deferred_raw))
    if not args:
        return None
    if logs:
        return LogMessageArgs(args)  # the parser also reads its listed pids, if any
    if lists_active_processes:
        return ActiveProcessesArgs(args)
    return correlated_args(tuple(args)) if has_extensions else tuple(args)


def _thread_times(
    stats, seq, tt_delta: int | None, tt_abs: int | None, tic_delta: int | None, tic_abs: int | None
) -> tuple[int | None, int | None] | None:
    """(thread time in ns, thread instruction count), deltas applied to the sequence's
    baselines; None (counted) for a delta without a baseline."""
    thread_ts = thread_ic = None
    if tt_delta is not None:
        not_shareable(seq)
        if seq.ref_thread_ts is None:
            stats.inc("track_event_skipped_thread_time_delta_without_valid_state")
            return None
        seq.ref_thread_ts += tt_delta * 1000
        thread_ts = seq.ref_thread_ts
    elif tt_abs is not None:
        thread_ts = tt_abs * 1000
    if tic_delta is not None:
        not_shareable(seq)
        if seq.ref_thread_ic is None:
            stats.inc("track_event_skipped_thread_instruction_delta_without_valid_state")
            return None
        seq.ref_thread_ic += tic_delta
        thread_ic = seq.ref_thread_ic
    elif tic_abs is not None:
        thread_ic = tic_abs
    return thread_ts, thread_ic


def _counter_value(importer, seq, uuid: int, counter_raw: float | None) -> float | None:
    """A counter event's value, made absolute; None (counted) if it has none or no counter track."""
    if not uuid:
        importer.stats.inc("track_event_counter_missing_track_uuid")
        return None
    if counter_raw is None:
        importer.stats.inc("track_event_counter_missing_value")
        return None
    value = _absolute_counter_value(importer.reservations, seq, uuid, counter_raw)
    if value is None:
        importer.stats.inc("track_event_counter_invalid_track_uuid")
    return value


def _new_counter_spec(importer, cuuid: int) -> tuple | None:
    """The (multiplier, incremental) of a counter track not looked up before, now cached;
    None (counted) if the uuid is no counter track."""
    spec = _counter_spec(importer.reservations, cuuid)
    if spec is None:
        importer.stats.inc("track_event_extra_counter_invalid_track")
        return None
    importer.counter_specs[cuuid] = spec
    return spec


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
                not_shareable(seq)
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


def _absolute_counter_value(reservations, seq, uuid: int, value: float) -> float | None:
    spec = _counter_spec(reservations, uuid)
    if spec is None:
        return None
    multiplier, incremental = spec
    if multiplier:
        value *= multiplier
    if incremental:
        not_shareable(seq)
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
