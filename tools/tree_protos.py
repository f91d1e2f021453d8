"""Compiling a perfetto source tree's protos into a FileDescriptorSet with grpcio-tools' protoc (a
development-time dependency: `pip install grpcio-tools`), for the tools that need the tree's protos."""

from __future__ import annotations

import os
import subprocess
import sys


def compile_descriptor_set(tree: str, sources: tuple[str, ...], out: str) -> None:
    """Writes to `out` the FileDescriptorSet of the tree's `sources` (paths under it) with everything they
    import; exits naming the tree when protoc cannot. ImportError without grpcio-tools."""
    from grpc_tools import protoc  # noqa: PLC0415  (imported only when a tool compiles)

    well_known = os.path.join(os.path.dirname(protoc.__file__), "_proto")  # google/protobuf/*.proto
    args = ["protoc", f"-I{tree}", f"-I{well_known}", "--include_imports", f"--descriptor_set_out={out}"]
    if protoc.main(args + [os.path.join(tree, name) for name in sources]) != 0:
        sys.exit(f"{tree}: protoc could not compile {', '.join(sources)}")


def main(build, out: str, doc: str) -> None:
    """A descriptor-building tool's command line: `python tools/TOOL.py PERFETTO_TREE`."""
    if len(sys.argv) != 2:
        sys.exit(doc)
    build(sys.argv[1])
    head = subprocess.run(["git", "-C", sys.argv[1], "rev-parse", "HEAD"], capture_output=True, text=True)
    print(f"wrote {os.path.normpath(out)}" + (f" from perfetto {head.stdout.strip()}" if head.returncode == 0 else ""))
