"""Trace-level packets → `metadata` rows and `stats`, as trace_processor's proto reader,
metadata modules and system-info parser record them.

- trace_config: `trace_config_pbtxt` (the config as protozero's text, fields in wire
  order), `trace_uuid` (unless a TraceUuid packet gave one), `unique_session_name`,
  trace attributes, `config_write_into_file_discard[buffer]`; at the end of the trace,
  `long_trace_mode_bytes_overwritten[buffer]` and `config_write_into_file_no_flush`;
- system_info: utsname, Android build (fingerprint, incremental build and SDK version
  derived from it), device, SoC, RAM, tracing service version, machine row fields;
- service_event: tracing started / disabled / data sources started and flushed (one row
  per flush), slow data sources, clone timestamps;
- trace_stats: every TraceStats counter (`traced_*`, per-buffer `traced_buf_*[buffer]`,
  `filter_*`, final flush outcome) and the per-buffer data losses of the sequences that
  wrote there;
- chrome_metadata (`cr-<letter>-*`), legacy chrome_events metadata (`cr-*`),
  chrome_benchmark_metadata (`benchmark_*`), ui_state;
- trigger / clone_snapshot_trigger / chrome_trigger: instants on the "Trace Triggers"
  track and the `trace_trigger` metadata.
"""

from __future__ import annotations

import base64
import math
import struct
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from ...model import format_uuid
from ..common.values import signed, text
from .packet_handlers import HandlerContext, packet_handler, tokenize_handler

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

_TRACED_SINGLE = (
    "producers_connected",
    "producers_seen",
    "data_sources_registered",
    "data_sources_seen",
    "tracing_sessions",
    "total_buffers",
    "chunks_discarded",
    "patches_discarded",
    "flushes_requested",
    "flushes_succeeded",
    "flushes_failed",
)
_TRACED_BUFFER = (
    "buffer_size",
    "bytes_written",
    "bytes_overwritten",
    "bytes_read",
    "padding_bytes_written",
    "padding_bytes_cleared",
    "chunks_written",
    "chunks_rewritten",
    "chunks_overwritten",
    "chunks_discarded",
    "chunks_read",
    "chunks_relocated",
    "chunks_committed_out_of_order",
    "write_wrap_count",
    "patches_succeeded",
    "patches_failed",
    "readaheads_succeeded",
    "readaheads_failed",
    "abi_violations",
    "trace_writer_packet_loss",
)
_FILTER = ("errors", "input_bytes", "input_packets", "output_bytes", "time_taken_ns")
FINAL_FLUSH_SUCCEEDED, FINAL_FLUSH_FAILED = 1, 2
FILL_POLICY_DISCARD = 2
# A file write period of a day or more still means a ring-buffer trace (tracing_service_impl's cutoff).
MIN_RING_BUFFER_INTENT_PERIOD_MS = 24 * 60 * 60 * 1000

_SDK_BY_RELEASE = {
    "12": 31,
    "11": 30,
    "10": 29,
    "9": 28,
    "8.1": 27,
    "8.0": 26,
    "7.1": 25,
    "7.0": 24,
    "6.0": 23,
    "5.1": 22,
    "5.1.1": 22,
    "5.0": 21,
    "5.0.1": 21,
    "5.0.2": 21,
}


def sdk_version_of_release(release: str) -> int | None:
    if release.startswith(("S", "T")):
        return 31
    return _SDK_BY_RELEASE.get(release)


def fingerprint_parts(fingerprint: str) -> tuple[int | None, str] | None:
    """(SDK version, incremental build) of BRAND/PRODUCT/DEVICE:RELEASE/ID/INCREMENTAL:TYPE/TAGS."""
    colon = fingerprint.find(":")
    if colon < 0:
        return None
    release_slash = fingerprint.find("/", colon)
    if release_slash < 0:
        return None
    id_slash = fingerprint.find("/", release_slash + 1)
    if id_slash < 0:
        return None
    incremental_colon = fingerprint.find(":", id_slash)
    if incremental_colon < 0:
        return None
    release = fingerprint[colon + 1 : release_slash]
    return sdk_version_of_release(release), fingerprint[id_slash + 1 : incremental_colon]


def tracing_service_major_version(version: str) -> int | None:
    """54 for "Perfetto v54.0-..."; None when it does not read so."""
    prefix = "Perfetto v"
    if not version.startswith(prefix):
        return None
    rest = version[len(prefix) :]
    ends = [i for i in (rest.find("."), rest.find("-")) if i >= 0]
    if not ends:
        return None
    major = rest[: min(ends)]
    return int(major) if major.isdigit() and int(major) < 1 << 32 else None


# -- protozero's text format ----------------------------------------------------------------

_ESCAPES = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v", 92: "\\\\", 39: "\\'", 34: '\\"'}


def quote_text(raw: bytes) -> str:
    out = []
    for b in raw:
        esc = _ESCAPES.get(b)
        if esc is not None:
            out.append(esc)
        elif 0x20 <= b <= 0x7E:
            out.append(chr(b))
        else:
            out.append(f"\\{b >> 6 & 3}{b >> 3 & 7}{b & 7}")
    return '"' + "".join(out) + '"'


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7


def _float_text(value: float) -> str:
    """C++ std::to_string of a float or double ("%f")."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:f}"


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _varint_text(fd: FieldDescriptor | None, number: int, v: int) -> str:
    if fd is None:
        return f"{number}: {signed(v)}"
    t = fd.type
    if t == FieldDescriptor.TYPE_INT32:
        return f"{fd.name}: {_int32(v)}"
    if t == FieldDescriptor.TYPE_SINT32:
        v &= 0xFFFFFFFF
        return f"{fd.name}: {(v >> 1) ^ -(v & 1)}"
    if t == FieldDescriptor.TYPE_UINT32:
        return f"{fd.name}: {v & 0xFFFFFFFF}"
    if t == FieldDescriptor.TYPE_INT64:
        return f"{fd.name}: {signed(v)}"
    if t == FieldDescriptor.TYPE_SINT64:
        return f"{fd.name}: {(v >> 1) ^ -(v & 1)}"
    if t == FieldDescriptor.TYPE_UINT64:
        return f"{fd.name}: {v}"
    if t == FieldDescriptor.TYPE_BOOL:
        return f"{fd.name}: {'true' if v else 'false'}"
    if t == FieldDescriptor.TYPE_ENUM:
        value = fd.enum_type.values_by_number.get(_int32(v)) if fd.enum_type is not None else None
        return f"{fd.name}: {value.name}" if value is not None else f"{number}: {signed(v)}"
    return f"{number}: {signed(v)}"


_PACKED = {
    FieldDescriptor.TYPE_DOUBLE: ("d", 8),
    FieldDescriptor.TYPE_FLOAT: ("f", 4),
    FieldDescriptor.TYPE_FIXED32: ("I", 4),
    FieldDescriptor.TYPE_SFIXED32: ("i", 4),
    FieldDescriptor.TYPE_FIXED64: ("Q", 8),
    FieldDescriptor.TYPE_SFIXED64: ("q", 8),
}
_PACKED_VARINT = {
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_ENUM,
}


def proto_text(data: bytes, descriptor: Descriptor | None) -> str:
    """A message as trace_processor's ProtozeroToText prints it with new lines: fields in wire
    order, nested messages indented by two spaces, unknown fields by number."""
    out: list[str] = []
    _proto_text(data, descriptor, "", out)
    return "".join(out)


def _proto_text(data: bytes, descriptor: Descriptor | None, indent: str, out: list[str]) -> None:
    fields = descriptor.fields_by_number if descriptor is not None else {}
    pos, n = 0, len(data)
    while pos < n:
        start = pos
        try:
            tag, pos = _varint(data, pos)
            number, wire = tag >> 3, tag & 7
            if number == 0:
                raise ValueError("field 0")
            if wire == 0:
                value, pos = _varint(data, pos)
            elif wire == 1:
                if pos + 8 > n:
                    raise ValueError("truncated")
                raw = data[pos : pos + 8]
                pos += 8
            elif wire == 5:
                if pos + 4 > n:
                    raise ValueError("truncated")
                raw = data[pos : pos + 4]
                pos += 4
            elif wire == 2:
                size, pos = _varint(data, pos)
                if pos + size > n:
                    raise ValueError("truncated")
                raw = data[pos : pos + size]
                pos += size
            else:
                raise ValueError("wire type")
        except ValueError:
            pos = start
            break
        out.append("\n" + indent if out else indent)
        fd = fields.get(number)
        if wire == 0:
            out.append(_varint_text(fd, number, value))
        elif wire == 5 or wire == 1:
            out.append(_fixed_text(fd, number, raw))
        else:
            _length_delimited(fd, number, raw, indent, out)
    if pos < n:
        out.append(("\n" + indent if out else "") + "# Extra bytes: " + quote_text(data[pos:]) + "\n")


_FIXED = {
    FieldDescriptor.TYPE_SFIXED32: "<i",
    FieldDescriptor.TYPE_FIXED32: "<I",
    FieldDescriptor.TYPE_FLOAT: "<f",
    FieldDescriptor.TYPE_SFIXED64: "<q",
    FieldDescriptor.TYPE_FIXED64: "<Q",
    FieldDescriptor.TYPE_DOUBLE: "<d",
}


def _fixed_text(fd: FieldDescriptor | None, number: int, raw: bytes) -> str:
    fmt = _FIXED.get(fd.type) if fd is not None else None
    if fd is None or fmt is None or struct.calcsize(fmt) != len(raw):
        if len(raw) == 4:
            return f"{number}: 0x{struct.unpack('<I', raw)[0]:08x}"
        return f"{number}: 0x{struct.unpack('<Q', raw)[0]:016x}"
    value = struct.unpack(fmt, raw)[0]
    return f"{fd.name}: {_float_text(value) if fmt[1] in 'fd' else value}"


def _length_delimited(fd: FieldDescriptor | None, number: int, raw: bytes, indent: str, out: list[str]) -> None:
    t = fd.type if fd is not None else 0
    if fd is not None and t in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
        out.append(f"{fd.name}: {quote_text(raw)}")
        return
    if fd is not None and t == FieldDescriptor.TYPE_MESSAGE:
        name = f"[{fd.full_name}]" if fd.is_extension else fd.name
        out.append(f"{name} {{")
        _proto_text(raw, fd.message_type, indent + "  ", out)
        out.append(f"\n{indent}}}")
        return
    if fd is not None and (t in _PACKED or t in _PACKED_VARINT):
        values: list[str] = []
        if t in _PACKED:
            fmt, size = _PACKED[t]
            for i in range(0, len(raw) - len(raw) % size, size):
                v = struct.unpack("<" + fmt, raw[i : i + size])[0]
                values.append(f"{fd.name}: {_float_text(v) if fmt in 'fd' else v}")
        else:
            pos = 0
            try:
                while pos < len(raw):
                    v, pos = _varint(raw, pos)
                    if t == FieldDescriptor.TYPE_ENUM:
                        values.append(_varint_text(fd, number, v))
                    elif t == FieldDescriptor.TYPE_INT32:
                        values.append(f"{fd.name}: {_int32(v)}")
                    elif t == FieldDescriptor.TYPE_UINT32:
                        values.append(f"{fd.name}: {v & 0xFFFFFFFF}")
                    elif t == FieldDescriptor.TYPE_INT64:
                        values.append(f"{fd.name}: {signed(v)}")
                    else:
                        values.append(f"{fd.name}: {v}")
            except ValueError:
                values.append(f"# Packed decoding failure for field {fd.name}\n")
        out.append(("\n" + indent).join(values))
        return
    if fd is not None and t in (FieldDescriptor.TYPE_BOOL, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64):
        out.append(f"# Packed type {t} not supported. Printing raw string.\n{indent}")
    out.append(f"{number}: {quote_text(raw)}")


# -- packets -----------------------------------------------------------------------------------


class TraceMetadata:
    """What outlives one packet: the trace config (for the end-of-trace stats), the count of
    chrome metadata packets, the kind of trigger that named the trace."""

    def __init__(self, importer: Any) -> None:
        self.importer = importer
        self.trace = importer.trace
        self.config: Any = None
        self.uuid_from_packet = False
        self.chrome_metadata_packets = 0

    def finish(self) -> None:
        """At the end of the trace (trace_processor's OnEventsFullyExtracted)."""
        config = self.config
        if config is None or not config.write_into_file:
            return
        stats = self.trace.stats
        if config.file_write_period_ms < MIN_RING_BUFFER_INTENT_PERIOD_MS:
            # Overwritten data never reached the file: a data loss.
            for i in range(len(config.buffers)):
                overwritten = stats.get("traced_buf_bytes_overwritten", i)
                if overwritten > 0:
                    stats.set("long_trace_mode_bytes_overwritten", overwritten, idx=i)
        if config.flush_period_ms:
            return
        # Since v54 every file write flushes; older (or unknown) services needed flush_period_ms.
        version = self.trace.metadata.get("tracing_service_version")
        major = tracing_service_major_version(version) if isinstance(version, str) else None
        if major is None or major < 54:
            stats.inc("config_write_into_file_no_flush")


def _state(importer: Any) -> TraceMetadata:
    return importer.ftrace.state("trace_metadata", lambda: TraceMetadata(importer))


def trace_config(importer: Any) -> Any:
    """The importer's TraceConfig (the last one read), None without one (trace_diagnostics.py's rules)."""
    return _state(importer).config


@tokenize_handler("trace_config")
def _trace_config(importer: Any, packet: Any, seq: Any, ts: int) -> None:
    state = _state(importer)
    config = packet.trace_config
    state.config = config
    trace = importer.trace
    if (config.trace_uuid_msb or config.trace_uuid_lsb) and "trace_uuid" not in trace.metadata:
        trace.set_metadata("trace_uuid", format_uuid(config.trace_uuid_msb, config.trace_uuid_lsb))
    if config.HasField("unique_session_name"):
        trace.set_metadata("unique_session_name", text(config.unique_session_name))
    trace.set_metadata("trace_config_pbtxt", proto_text(config.SerializeToString(), config.DESCRIPTOR))
    if config.write_into_file:
        for i, buffer in enumerate(config.buffers):
            if buffer.fill_policy == FILL_POLICY_DISCARD:
                trace.stats.inc("config_write_into_file_discard", idx=i)
    if config.HasField("trace_attributes"):
        trace_attributes(trace, config.trace_attributes)


@tokenize_handler("trace_attributes")
def _trace_attributes(importer: Any, packet: Any, seq: Any, ts: int) -> None:
    trace_attributes(importer.trace, packet.trace_attributes)


def trace_attributes(trace: Any, attributes: Any) -> None:
    """User-declared key/values (TraceConfig or TracePacket) → metadata trace_attribute.<key>."""
    for attribute in attributes.attribute:
        key = f"trace_attribute.{text(attribute.key)}"
        if attribute.HasField("long_value"):
            trace.set_metadata(key, attribute.long_value)
        elif attribute.HasField("string_value"):
            trace.set_metadata(key, text(attribute.string_value))


@tokenize_handler("trace_uuid")
def _trace_uuid(importer: Any, packet: Any, seq: Any, ts: int) -> None:
    u = packet.trace_uuid
    if u.msb or u.lsb:
        importer.trace.set_metadata("trace_uuid", format_uuid(u.msb, u.lsb))


@tokenize_handler("system_info")
def _system_info(importer: Any, packet: Any, seq: Any, ts: int) -> None:
    info = packet.system_info
    trace = importer.trace
    meta = trace.set_metadata
    m = trace.machine
    if info.HasField("machine_name"):
        m.name = text(info.machine_name)
    if info.HasField("utsname"):
        u = info.utsname
        sysname, release, version, machine = (text(u.sysname), text(u.release), text(u.version), text(u.machine))
        m.sysname, m.release, m.version, m.arch = sysname or None, release or None, version or None, machine or None
        meta("system_name", sysname)
        meta("system_version", version)
        meta("system_release", release)
        meta("system_machine", machine)
    if info.HasField("timezone_off_mins"):
        meta("timezone_off_mins", info.timezone_off_mins)
    parts = None
    if info.HasField("android_build_fingerprint"):
        fingerprint = text(info.android_build_fingerprint)
        meta("android_build_fingerprint", fingerprint)
        m.android_build_fingerprint = fingerprint
        parts = fingerprint_parts(fingerprint)
        if parts is not None:
            meta("android_incremental_build", parts[1])
    if info.HasField("android_device_manufacturer"):
        m.android_device_manufacturer = text(info.android_device_manufacturer)
        meta("android_device_manufacturer", m.android_device_manufacturer)
    # The SDK version given, else the one the fingerprint's release implies.
    sdk = info.android_sdk_version if info.HasField("android_sdk_version") else parts[0] if parts else None
    if sdk is not None:
        meta("android_sdk_version", sdk)
        m.android_sdk_version = sdk
    for field in (
        "tracing_service_version",
        "android_soc_model",
        "android_guest_soc_model",
        "android_hardware_revision",
        "android_storage_model",
        "android_ram_model",
        "android_serial_console",
    ):
        if info.HasField(field):
            meta(field, text(getattr(info, field)))
    trace.page_size = info.page_size or 4096
    if info.HasField("num_cpus"):
        m.num_cpus = info.num_cpus
    if info.HasField("system_ram_bytes"):
        ram = signed(info.system_ram_bytes)
        meta("system_ram_bytes", ram)
        meta("system_ram_gb", math.floor(ram / 1e9 + 0.5) if ram >= 0 else -math.floor(-ram / 1e9 + 0.5))
        m.system_ram_bytes = info.system_ram_bytes


@tokenize_handler("service_event")
def _service_event(importer: Any, packet: Any, seq: Any, ts: int) -> None:
    ev = packet.service_event
    trace = importer.trace
    if ev.tracing_started:
        trace.set_metadata("tracing_started_ns", ts)
    if ev.tracing_disabled:
        trace.set_metadata("tracing_disabled_ns", ts)
    if ev.all_data_sources_started:
        trace.set_metadata("all_data_source_started_ns", ts)
    if ev.all_data_sources_flushed:
        trace.add_metadata("all_data_source_flushed_ns", ts)  # one row per flush
    if ev.HasField("slow_starting_data_sources"):
        for ds in ev.slow_starting_data_sources.data_source:
            trace.add_metadata("slow_start_data_source", f"{text(ds.producer_name)} {text(ds.data_source_name)}")
    if ev.HasField("clone_started"):
        trace.stats.set("traced_clone_started_timestamp_ns", ts)
    if ev.HasField("buffer_cloned"):
        trace.stats.set("traced_buf_clone_done_timestamp_ns", ts, idx=ev.buffer_cloned)


@tokenize_handler("trace_stats")
def _trace_stats(importer: Any, packet: Any, seq: Any, ts: int) -> None:
    """The tracing service's own counters, and the data losses of the sequences that wrote to
    each buffer (as seen so far)."""
    ts_ = packet.trace_stats
    stats = importer.trace.stats
    for name in _TRACED_SINGLE:
        stats.set(f"traced_{name}", getattr(ts_, name))
    if ts_.HasField("filter_stats"):
        fs = ts_.filter_stats
        for name in _FILTER:
            stats.set(f"filter_{name}", getattr(fs, name))
        for buffer, discarded in enumerate(fs.bytes_discarded_per_buffer):
            stats.set("traced_buf_bytes_filtered_out", discarded, idx=buffer)
    if ts_.final_flush_outcome == FINAL_FLUSH_SUCCEEDED:
        stats.inc("traced_final_flush_succeeded")
    elif ts_.final_flush_outcome == FINAL_FLUSH_FAILED:
        stats.inc("traced_final_flush_failed")
    for buffer, buffer_stats in enumerate(ts_.buffer_stats):
        for name in _TRACED_BUFFER:
            stats.set(f"traced_buf_{name}", getattr(buffer_stats, name), idx=buffer)
    per_buffer: dict[int, dict[str, int]] = {}
    for writer in ts_.writer_stats:
        seq_state = importer.sequences.get(writer.sequence_id)
        if seq_state is None:
            continue
        counts = per_buffer.setdefault(
            _int32(writer.buffer),
            dict.fromkeys(
                ["sequence_packet_loss", "incremental_sequences_dropped"]
                + [f"data_loss_{c}" for c in DATA_LOSS_CAUSES.values()],
                0,
            ),
        )
        counts["sequence_packet_loss"] += seq_state.dropped
        if seq_state.needs_state_skipped and seq_state.needs_state_skipped == seq_state.needs_state:
            counts["incremental_sequences_dropped"] += 1
        for bit, count in seq_state.loss_causes.items():
            counts[f"data_loss_{DATA_LOSS_CAUSES[bit]}"] += count
    for buffer, counts in per_buffer.items():
        for name, value in counts.items():
            stats.set(f"traced_buf_{name}", value, idx=buffer)


@tokenize_handler("chrome_metadata")
def _chrome_metadata(importer: Any, packet: Any, seq: Any, ts: int) -> None:
    """Chrome's metadata packet → metadata cr-<letter>-* (a letter per packet) and cr-*."""
    m = packet.chrome_metadata
    state = _state(importer)
    prefix = f"cr-{chr(ord('a') + state.chrome_metadata_packets % 26)}-"
    state.chrome_metadata_packets += 1
    meta = importer.trace.set_metadata
    if m.HasField("chrome_version_code"):
        meta(prefix + "playstore_version_code", m.chrome_version_code)
    if m.HasField("app_version"):
        meta(prefix + "product-version", text(m.app_version))
    if m.HasField("os_name"):
        meta(prefix + "os-name", text(m.os_name))
    if m.HasField("app_package_name"):
        meta(prefix + "package-name", text(m.app_package_name))
    if m.HasField("channel"):
        meta(prefix + "channel", m.channel)
    if m.HasField("enabled_categories"):
        meta(prefix + "enabled_categories", text(m.enabled_categories))
    if m.field_trial_hashes:
        parts = []
        for i, h in enumerate(m.field_trial_hashes):
            if i and i % 2 == 0:
                parts.append("\n")  # two hashes a line
            parts.append(f"{{ name: {h.name}, group: {h.group} }} ")
        meta(prefix + "field_trial_hashes", "".join(parts))
    if m.HasField("background_tracing_metadata"):
        btm = m.background_tracing_metadata
        meta("cr-background_tracing_metadata", base64.b64encode(btm.SerializeToString()).decode("ascii"))
        if btm.HasField("scenario_name_hash"):
            meta("cr-scenario_name_hash", btm.scenario_name_hash)


class _ChromeBundles:
    def __init__(self) -> None:
        self.with_metadata = 0


@packet_handler("chrome_events")
def _chrome_events(parser: HandlerContext, ts: int, bundle: Any) -> None:
    """Chrome's legacy untyped metadata (ChromeEventBundle): metadata cr-<name>, or
    cr-<n>-<name> from the second bundle on (another Chrome instance)."""
    if not bundle.metadata:
        return
    state = parser.state("chrome_bundles", _ChromeBundles)
    state.with_metadata += 1
    prefix = "cr-" if state.with_metadata == 1 else f"cr-{state.with_metadata}-"
    for m in bundle.metadata:
        field = m.WhichOneof("value")
        if field is None:
            parser.stats.inc("empty_chrome_metadata")
            continue
        value = getattr(m, field)
        parser.trace.set_metadata(prefix + text(m.name), int(value) if field == "bool_value" else text(value))


@tokenize_handler("chrome_benchmark_metadata")
def _chrome_benchmark_metadata(importer: Any, packet: Any, seq: Any, ts: int) -> None:
    m = packet.chrome_benchmark_metadata
    trace = importer.trace
    for field, key in (
        ("benchmark_name", "benchmark_name"),
        ("benchmark_description", "benchmark_description"),
        ("label", "benchmark_label"),
        ("story_name", "benchmark_story_name"),
    ):
        if m.HasField(field):
            trace.set_metadata(key, text(getattr(m, field)))
    for tag in m.story_tags:
        trace.add_metadata("benchmark_story_tags", text(tag))
    for field, key in (
        ("benchmark_start_time_us", "benchmark_start_time_us"),
        ("story_run_time_us", "benchmark_story_run_time_us"),
        ("story_run_index", "benchmark_story_run_index"),
        ("had_failures", "benchmark_had_failures"),
    ):
        if m.HasField(field):
            trace.set_metadata(key, int(getattr(m, field)))


@tokenize_handler("ui_state")
def _ui_state(importer: Any, packet: Any, seq: Any, ts: int) -> None:
    importer.trace.set_metadata("ui_state", base64.b64encode(packet.ui_state.SerializeToString()).decode("ascii"))


# -- triggers (parsed in timestamp order: they are slices) ------------------------------------


class _Triggers:
    def __init__(self) -> None:
        self.kind: str | None = None  # "trigger" or "clone": what set trace_trigger


def _trigger_track(parser: HandlerContext) -> int:
    return parser.trace.tracks.intern("triggers", (), "slice", "Trace Triggers")


def _trigger(parser: HandlerContext, ts: int, trigger: Any, clone: bool) -> None:
    name = text(trigger.trigger_name)
    args = []
    producer = text(trigger.producer_name)
    if producer:
        args.append(("producer_name", "producer_name", "string", producer))
    if trigger.HasField("trusted_producer_uid"):
        args.append(("trusted_producer_uid", "trusted_producer_uid", "int", trigger.trusted_producer_uid))
    parser.trace.slices.scoped(ts, 0, _trigger_track(parser), None, name, args)
    state = parser.state("triggers", _Triggers)
    if clone and state.kind != "clone":
        state.kind = "clone"
        parser.trace.set_metadata("trace_trigger", name)
        parser.stats.set("traced_clone_trigger_timestamp_ns", ts)
    elif not clone and state.kind is None:
        state.kind = "trigger"
        parser.trace.set_metadata("trace_trigger", name)


@packet_handler("trigger")
def _trace_trigger(parser: HandlerContext, ts: int, trigger: Any) -> None:
    _trigger(parser, ts, trigger, clone=False)


@packet_handler("clone_snapshot_trigger")
def _clone_snapshot_trigger(parser: HandlerContext, ts: int, trigger: Any) -> None:
    _trigger(parser, ts, trigger, clone=True)


@packet_handler("chrome_trigger")
def _chrome_trigger(parser: HandlerContext, ts: int, trigger: Any) -> None:
    name = text(trigger.trigger_name) if trigger.HasField("trigger_name") else "chrome_trigger"
    args = [("chrome_trigger.name_hash", "chrome_trigger.name_hash", "uint", trigger.trigger_name_hash)]
    if trigger.HasField("trigger_name"):
        args.append(("chrome_trigger.name", "chrome_trigger.name", "string", name))
    slice_id = parser.trace.slices.scoped(ts, 0, _trigger_track(parser), None, name, args)
    if slice_id is not None and trigger.HasField("flow_id"):
        parser.trace.flows.end_v2(trigger.flow_id, slice_id, close=True)  # an inactive flow id is ignored
    parser.trace.set_metadata("cr-triggered_rule_name_hash", trigger.trigger_name_hash)
