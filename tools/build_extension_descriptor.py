"""Rebuilds datasette_perfetto/protos/track_event_extensions.binpb from a perfetto source tree.

    pip install grpcio-tools
    python tools/build_extension_descriptor.py PERFETTO_TREE

trace_processor compiles in the descriptors of Chromium's TrackEvent extensions (ChromeTrackEvent) and
turns every extension field of a track event into args by
reflection. The `perfetto` package ships no such protos, so this project keeps the same descriptors as
a generated FileDescriptorSet (with everything they import); the importer reads it into a private
descriptor pool (importers/proto/track_event_extensions.py). PERFETTO_TREE is a checkout, or a
`git archive`, of google/perfetto holding protos/.
"""

from __future__ import annotations

import os

from tree_protos import compile_descriptor_set, main

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "datasette_perfetto", "protos", "track_event_extensions.binpb")
# The extensions trace_processor compiles in: Chromium's, and the GPU one (GpuTrackEvent: gpu_api,
# gpu_correlation). Any other producer declares its extensions in the trace (extension_descriptor).
SOURCES = (
    "protos/third_party/chromium/chrome_track_event.proto",
    "protos/perfetto/trace/gpu/gpu_track_event.proto",
)


def build(tree: str, out: str = OUT) -> None:
    compile_descriptor_set(tree, SOURCES, out)


if __name__ == "__main__":
    main(build, OUT, __doc__)
