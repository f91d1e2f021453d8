"""TrackEvent args: debug annotations, typed fields and proto messages flattened into
(flat_key, key, value_type, value) tuples, as trace_processor's args parser does."""

from __future__ import annotations

import json
from typing import Any

from ...stats import Stats
from ...trackers.args_translation import MOJO_MAPPING_ID, MOJO_REL_PC, NATIVE_MAPPING
from ..common.json_args import add_json_args
from ..common.values import text
from .profiles import UNSYMBOLIZED_SOURCE_LOCATIONS, resolve_mapping
from .track_event_fields import (
    I_CORRELATION_STR,
    I_DEBUG_NAMES,
    I_DEBUG_STRINGS,
    I_HISTOGRAM_NAMES,
    I_LOG_BODY,
    I_SOURCE_LOCATIONS,
    TE,
)


def _add(out: list, flat_key: str, key: str, value_type: str, value: Any) -> None:
    out.append((flat_key, key, value_type, value))


def debug_annotation_args(out: list, ann, flat_key: str, key: str, seq) -> None:
    field = ann.WhichOneof("value")
    if field is None:
        if ann.dict_entries:
            for entry in ann.dict_entries:
                name = annotation_name(entry, seq)
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
            add_json_args(out, flat_key, key, json.loads(ann.legacy_json_value), track_event=True)
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


def annotation_name(ann, seq) -> str:
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


# Mapping lookups from track events count nothing (tokenizing may be in a helper process): counts kept
# here are never read.
_UNCOUNTED = Stats()


def _mojo_event_info_args(out: list, info, seq) -> None:
    """ChromeMojoEventInfo's fields, the interned method's native symbol (mapping, rel_pc) in place of its
    iid: args translation names it (args_translation.py). The iid stays when it cannot be resolved."""
    for fd, value in info.ListFields():
        key = f"chrome_mojo_event_info.{fd.name}"
        if fd.name != "mojo_interface_method_iid" or not _native_symbol_args(out, seq, value):
            _proto_field(out, fd, value, key, key)


def _native_symbol_args(out: list, seq, iid: int) -> bool:
    loc = seq.lookup(UNSYMBOLIZED_SOURCE_LOCATIONS, iid)
    if loc is None:
        return False
    mapping_iid, rel_pc = loc
    # The mapping row (and its id) is made when the slice is written, by the parser that owns mappings.
    mapping = resolve_mapping(seq, mapping_iid, _UNCOUNTED)
    if mapping is None:
        return False
    pid = seq.thread[0] if seq.thread is not None else None  # a process' own mapping, as trace_processor
    _add(out, MOJO_MAPPING_ID, MOJO_MAPPING_ID, NATIVE_MAPPING, (mapping, pid))
    _add(out, MOJO_REL_PC, MOJO_REL_PC, "uint", rel_pc)
    return True


# Typed TrackEvent fields whose iids point into interned data.
TYPED_FIELD_NAMES = frozenset(
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


TYPED_FIELDS = frozenset(getattr(TE, name) for name in TYPED_FIELD_NAMES)


def typed_field_args(out: list, fields: dict, seq) -> None:
    for fd in TYPED_FIELDS.intersection(fields):
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
            # trace_processor: the body first (none, nothing: an invalid message), then its source.
            body = seq.lookup(I_LOG_BODY, value.body_iid)
            if body is None:
                continue
            _add(out, "track_event.log_message.message", "track_event.log_message.message", "string", body)
            loc = seq.lookup(I_SOURCE_LOCATIONS, value.source_location_iid) if value.source_location_iid else None
            _source_location_args(out, "track_event.log_message", loc)
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
        elif name == "chrome_mojo_event_info":
            _mojo_event_info_args(out, value, seq)
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
