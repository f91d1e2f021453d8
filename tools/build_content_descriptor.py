"""Rebuilds datasette_perfetto/protos/proto_content_extensions.binpb from a perfetto source tree.

    pip install grpcio-tools
    python tools/build_content_descriptor.py PERFETTO_TREE

trace_processor's proto content analysis (experimental_proto_path / experimental_proto_content, ingest
--analyze-proto-content) names every field of every packet from its descriptor pool: the trace protos,
Chromium's TrackEvent extensions, and the Android and GPU extensions it compiles in (Android's extend
TracePacket too: heap_graph, frame_timeline_event, network_packet, winscope, ...). The `perfetto` package
has the first, protos/track_event_extensions.binpb the second (tools/build_extension_descriptor.py); this
file holds the rest, stripped to what the analyzer reads (message and field names, numbers, types,
extensions): no enums, options or files the package already has.
"""

from __future__ import annotations

import os
import tempfile

from tree_protos import compile_descriptor_set, main

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "datasette_perfetto", "protos", "proto_content_extensions.binpb")
SOURCES = (
    "protos/third_party/android/android_extensions.proto",  # trace_processor's android_extension.descriptor
    "protos/perfetto/trace/gpu/gpu_track_event.proto",  # its gpu_track_event.descriptor
)
# Files the perfetto package's perfetto_trace.proto already holds (or descriptor.proto's options); the
# sources themselves are kept (gpu_track_event.proto is not in perfetto_trace.proto).
SKIPPED_PREFIXES = ("protos/perfetto/", "google/protobuf/")


def _strip_message(message) -> None:
    del message.enum_type[:]
    message.ClearField("options")
    del message.oneof_decl[:]
    del message.reserved_range[:]
    del message.reserved_name[:]
    for f in (*message.field, *message.extension):
        _strip_field(f)
    for nested in message.nested_type:
        _strip_message(nested)


def _strip_field(f) -> None:
    for name in ("options", "json_name", "default_value", "oneof_index", "proto3_optional"):
        f.ClearField(name)
    if f.type != f.TYPE_MESSAGE and f.type != f.TYPE_GROUP:
        f.ClearField("type_name")  # enums: the analyzer only needs to know a field is one


def _keep_extension(f) -> bool:
    return not f.extendee.startswith(".google.protobuf.")


def build(tree: str, out: str = OUT) -> None:
    from google.protobuf import descriptor_pb2  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp:
        full = os.path.join(tmp, "full.binpb")
        compile_descriptor_set(tree, SOURCES, full)
        with open(full, "rb") as f:
            fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    kept = descriptor_pb2.FileDescriptorSet()
    for file in fds.file:
        if file.name.startswith(SKIPPED_PREFIXES) and file.name not in SOURCES:
            continue
        file.ClearField("options")
        file.ClearField("source_code_info")
        del file.enum_type[:]
        del file.service[:]
        del file.dependency[:]
        del file.public_dependency[:]
        for message in file.message_type:
            _strip_message(message)
            keep = [e for e in message.extension if _keep_extension(e)]
            del message.extension[:]
            message.extension.extend(keep)
        for e in file.extension:
            _strip_field(e)
        keep = [e for e in file.extension if _keep_extension(e)]
        del file.extension[:]
        file.extension.extend(keep)
        if file.message_type or file.extension:
            kept.file.append(file)
    with open(out, "wb") as f:
        f.write(kept.SerializeToString(deterministic=True))


if __name__ == "__main__":
    main(build, OUT, __doc__)
