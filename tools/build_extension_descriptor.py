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
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "datasette_perfetto", "protos", "track_event_extensions.binpb")
# Only Chromium's: any other producer declares its extensions in the trace (extension_descriptor).
SOURCES = ("protos/third_party/chromium/chrome_track_event.proto",)


def build(tree: str, out: str = OUT) -> None:
    from grpc_tools import protoc  # noqa: PLC0415  (a build-time tool only)

    well_known = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    args = ["protoc", f"-I{tree}", f"-I{well_known}", "--include_imports", f"--descriptor_set_out={out}"]
    if protoc.main(args + [os.path.join(tree, name) for name in SOURCES]) != 0:
        sys.exit(f"{tree}: protoc could not compile {', '.join(SOURCES)}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build(sys.argv[1])
    head = subprocess.run(["git", "-C", sys.argv[1], "rev-parse", "HEAD"], capture_output=True, text=True)
    print(f"wrote {os.path.normpath(OUT)}" + (f" from perfetto {head.stdout.strip()}" if head.returncode == 0 else ""))
