"""TrackEvent args: debug annotations, typed fields and proto messages flattened into
(flat_key, key, value_type, value) tuples, as trace_processor's args parser does."""

from __future__ import annotations

import base64
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

DEBUG_ANNOTATION = "perfetto.protos.DebugAnnotation"


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


def source_location_args(out: list, prefix: str, loc) -> None:
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
    message_args(out, msg, prefix, prefix)


def message_args(out: list, msg, flat_key: str, key: str, seq=None) -> None:
    """A message's fields as args under (flat_key, key); an empty message is one NULL arg, as in
    trace_processor."""
    fields = msg.ListFields()
    if not fields:
        _add(out, flat_key, key, "null", None)
    fields_args(out, fields, f"{flat_key}.", f"{key}.", seq)


def fields_args(out: list, fields: list, flat_prefix: str, prefix: str, seq) -> None:
    """Args of (field, value) pairs (ListFields) under key prefixes ending in a dot, or empty. A
    DebugAnnotation field is named by the annotation (given `seq`, whose interned names it may use)."""
    for fd, value in fields:
        if seq is not None and fd.message_type is not None and fd.message_type.full_name == DEBUG_ANNOTATION:
            for ann in value if fd.is_repeated else (value,):
                name = annotation_name(ann, seq)
                debug_annotation_args(out, ann, f"{flat_prefix}{name}", f"{prefix}{name}", seq)
            continue
        field_flat_key, field_key = flat_prefix + fd.name, prefix + fd.name
        if fd.is_repeated:
            for i, item in enumerate(value):
                proto_field(out, fd, item, field_flat_key, f"{field_key}[{i}]", seq)
        else:
            proto_field(out, fd, value, field_flat_key, field_key, seq)


def proto_field(out: list, fd, value, flat_key: str, key: str, seq=None) -> None:
    """One value of a field (an item, for a repeated field) as args."""
    t = fd.type
    if t == fd.TYPE_MESSAGE:
        message_args(out, value, flat_key, key, seq)
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


# Mapping lookups from track events count nothing (tokenizing may be in a helper process): counts kept
# here are never read.
_UNCOUNTED = Stats()


def _mojo_event_info_args(out: list, info, seq) -> None:
    """ChromeMojoEventInfo's fields, the interned method's native symbol (mapping, rel_pc) in place of its
    iid: args translation names it (args_translation.py). The iid stays when it cannot be resolved."""
    for fd, value in info.ListFields():
        key = f"chrome_mojo_event_info.{fd.name}"
        if fd.name != "mojo_interface_method_iid" or not _native_symbol_args(out, seq, value):
            proto_field(out, fd, value, key, key)


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


# TrackEvent fields trace_processor turns into args by reflection (its kReflectFields), in field order:
# each becomes args named by its field path, after the fields it reads itself (below).
REFLECTED_FIELD_NAMES = (
    "cc_scheduler_state",
    "chrome_user_event",
    "chrome_keyed_service",
    "chrome_legacy_ipc",
    "chrome_histogram_sample",
    "chrome_latency_info",
    "chrome_frame_reporter",
    "source_location",
    "source_location_iid",
    "chrome_message_pump",
    "chrome_mojo_event_info",
    "chrome_application_state_info",
    "chrome_renderer_scheduler_state",
    "chrome_window_handle_event_info",
    "chrome_content_settings_event_info",
    "chrome_active_processes",
    "screenshot",
)
_REFLECTED = tuple(sorted((getattr(TE, name) for name in REFLECTED_FIELD_NAMES), key=lambda fd: fd.number))
_REFLECTED_FIELDS = frozenset(_REFLECTED)
_MOJO_EVENT_INFO = TE.chrome_mojo_event_info


def _number(fd) -> int:
    return fd.number


# Every TrackEvent field that makes args.
TYPED_FIELDS = frozenset(
    (
        *_REFLECTED,
        TE.task_execution,
        TE.log_message,
        TE.correlation_id,
        TE.correlation_id_str,
        TE.correlation_id_str_iid,
    )
)


def typed_field_args(out: list, fields: dict, seq) -> bool:
    """Args of an event's typed fields (`fields`: descriptor -> value), in trace_processor's order: the
    fields it reads itself, then the reflected ones. True when its log message makes an android_logs row."""
    get = fields.get
    iid = get(TE.source_location_iid)
    if iid:
        _interned_location_args(out, "source", seq.lookup(I_SOURCE_LOCATIONS, iid))
    task = get(TE.task_execution)
    if task is not None and task.posted_from_iid:
        # Every posted task repeats one of a few locations: build their args once.
        key = ("task", task.posted_from_iid)
        cached = seq.derived.get(key)
        if cached is None:
            cached = []
            _interned_location_args(cached, "task.posted_from", seq.lookup(I_SOURCE_LOCATIONS, task.posted_from_iid))
            cached = seq.derived[key] = tuple(cached)
        out.extend(cached)
    message = get(TE.log_message)
    logs = message is not None and _log_message_args(out, message, seq)
    screenshot = get(TE.screenshot)
    if screenshot is not None:
        for name in ("jpg_image", "pam_image", "ppm_image"):
            if screenshot.HasField(name):
                image = base64.b64encode(getattr(screenshot, name)).decode()
                _add(out, f"screenshot.{name}", f"screenshot.{name}", "string", image)
    sample = get(TE.chrome_histogram_sample)
    if sample is not None and sample.HasField("name_iid") and not sample.HasField("name"):
        name = seq.lookup(I_HISTOGRAM_NAMES, sample.name_iid)
        if name is not None:
            _add(out, "chrome_histogram_sample.name", "chrome_histogram_sample.name", "string", name)
    correlation = get(TE.correlation_id)
    if correlation is not None:
        _add(out, "correlation_id", "correlation_id", "string", f"tp:#{correlation}")
    correlation = get(TE.correlation_id_str)
    if correlation is not None:
        _add(out, "correlation_id", "correlation_id", "string", text(correlation))
    correlation = get(TE.correlation_id_str_iid)
    if correlation is not None:
        name = seq.lookup(I_CORRELATION_STR, correlation)
        if name is not None:
            _add(out, "correlation_id", "correlation_id", "string", name)
    reflected = [fd for fd in fields if fd in _REFLECTED_FIELDS]  # usually one or none
    if len(reflected) > 1:
        reflected.sort(key=_number)
    for fd in reflected:
        value = fields[fd]
        if fd is _MOJO_EVENT_INFO:
            _mojo_event_info_args(out, value, seq)
        elif fd.type == fd.TYPE_MESSAGE:
            message_args(out, value, fd.name, fd.name, seq)
        else:
            proto_field(out, fd, value, fd.name, fd.name, seq)
    return logs


def _interned_location_args(out: list, prefix: str, location) -> None:
    """An interned source location's file, function and line (0 when it has none), as trace_processor
    adds them for an event's source_location_iid and its task's posted_from_iid; nothing unresolved."""
    if location is None:
        return
    file_name, function_name, line = location
    _add(out, f"{prefix}.file_name", f"{prefix}.file_name", "string", normal_path(file_name or ""))
    _add(out, f"{prefix}.function_name", f"{prefix}.function_name", "string", function_name or "")
    _add(out, f"{prefix}.line_number", f"{prefix}.line_number", "uint", line or 0)


def normal_path(file_name: str) -> str:
    """A source file's path with forward slashes (trace_processor's NormalizePathSeparators)."""
    return file_name.replace("\\", "/")


# A log message's args (the row it makes in android_logs is read from them: LogMessageArgs).
LOG_BODY, LOG_FILE = "track_event.log_message.message", "track_event.log_message.file_name"
LOG_LINE, LOG_PRIORITY = "track_event.log_message.line_number", "track_event.priority"
PRIO_INFO = 4


class LogMessageArgs(tuple):
    """The args of a track event whose log message is also a row of android_logs (the parser writes it,
    once it knows the event's thread)."""

    __slots__ = ()


def log_row(args: tuple) -> tuple[int, str | None, str]:
    """(priority, tag, message) of the android_logs row of a LogMessageArgs: the tag is "file:line" when
    the message has a source location; a message without a priority is INFO, as trace_processor shows
    track event logs."""
    values = {a[0]: a[3] for a in args if a[0].startswith(("track_event.log_message.", LOG_PRIORITY))}
    tag = f"{values[LOG_FILE]}:{values[LOG_LINE]}" if LOG_FILE in values else None
    return values.get(LOG_PRIORITY, PRIO_INFO), tag, values[LOG_BODY]


def _log_message_args(out: list, message, seq) -> bool:
    """The message's args, as trace_processor adds them: its body (none: no args), its source location's
    file, function and line (0 when it has none), its priority when it has one. True when it also makes an
    android_logs row (its body and any source location resolved)."""
    body = seq.lookup(I_LOG_BODY, message.body_iid)
    if body is None:
        return False
    _add(out, LOG_BODY, LOG_BODY, "string", body)
    if message.HasField("source_location_iid"):
        location = seq.lookup(I_SOURCE_LOCATIONS, message.source_location_iid)
        if location is None:
            return False
        file_name, function_name, line = location
        _add(out, LOG_FILE, LOG_FILE, "string", file_name or "")
        key = "track_event.log_message.function_name"
        _add(out, key, key, "string", function_name or "")
        _add(out, LOG_LINE, LOG_LINE, "int", line or 0)
    if message.HasField("prio"):
        prio = message.prio if 0 <= message.prio <= 7 else 0  # LogMessage's priorities are Android's
        _add(out, LOG_PRIORITY, LOG_PRIORITY, "int", prio)
    return True
