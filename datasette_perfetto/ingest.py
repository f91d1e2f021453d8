"""`ingest(paths, db_path)`: trace files in, a complete SQLite database out.

The database is written to a temporary file beside the target and renamed
over it only when every input imported, so a failed run leaves no
half-written database and never damages an existing one.
"""

from __future__ import annotations

import gc
import gzip
import os
import tempfile
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO, Callable, Optional, Sequence

from .importers.proto_reader import looks_like_proto_trace
from .model import TraceModel
from .stats import Stats


class IngestError(Exception):
    """A problem that makes an input unusable; str() is the one-line message."""


@dataclass
class TraceSummary:
    path: str
    trace_type: str
    size: int
    stats: Stats
    problems: list[tuple[str, int]] = field(default_factory=list)


Progress = Callable[[int], None]  # called with bytes consumed so far


def open_trace(path: str) -> tuple[str, BinaryIO]:
    """Opens a trace, transparently inflating gzip; returns (format, stream).

    The format comes from the content, never the file name.
    """
    try:
        raw = open(path, "rb")
    except OSError as e:
        raise IngestError(f"{path}: cannot open: {e.strerror or e}") from None
    head = raw.read(4096)
    raw.seek(0)
    stream: BinaryIO = raw
    if head[:2] == b"\x1f\x8b":
        stream = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
        try:
            head = stream.read(4096)
        except (OSError, EOFError, zlib.error) as e:
            raw.close()
            raise IngestError(f"{path}: corrupt gzip data: {e}") from None
        stream = gzip.GzipFile(fileobj=_rewound(raw), mode="rb")  # type: ignore[assignment]
    fmt = detect_format(head)
    if fmt is None:
        raw.close()
        raise IngestError(f"{path}: not a recognised trace format (expected a Perfetto protobuf trace)")
    return fmt, stream


def _rewound(f: BinaryIO) -> BinaryIO:
    f.seek(0)
    return f


def detect_format(head: bytes) -> Optional[str]:
    if not head:
        return None
    if looks_like_proto_trace(head):
        return "proto"
    text = head.lstrip()[:1]
    if text in (b"{", b"["):
        return "json"
    return None


def _importer_for(fmt: str):
    if fmt == "proto":
        from .importers.proto_importer import ProtoImporter

        return ProtoImporter
    return None


def ingest(
    paths: Sequence[str],
    db_path: str,
    progress: Optional[Progress] = None,
) -> list[TraceSummary]:
    """Imports every trace in `paths` into a new database at `db_path`."""
    if not paths:
        raise IngestError("no trace files given")
    directory = os.path.dirname(os.path.abspath(db_path))
    if not os.path.isdir(directory):
        raise IngestError(f"{db_path}: directory {directory} does not exist")
    fd, tmp_path = tempfile.mkstemp(prefix=".ingest-", suffix=".db", dir=directory)
    os.close(fd)
    os.unlink(tmp_path)
    model = TraceModel.create(tmp_path)
    summaries: list[TraceSummary] = []
    # The importers build no reference cycles, and the cyclic collector would
    # otherwise rescan every buffered event again and again (~20% of the time).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        consumed_before = 0
        for path in paths:
            fmt, stream = open_trace(path)
            importer_cls = _importer_for(fmt)
            if importer_cls is None:
                stream.close()
                raise IngestError(f"{path}: {fmt} traces are not supported yet")
            size = os.path.getsize(path)
            trace = model.begin_trace(path, fmt, size)
            base = consumed_before

            def report(n: int, base: int = base) -> None:
                if progress:
                    progress(base + n)

            try:
                with stream:
                    importer_cls(trace).run(stream, report)
            except (OSError, EOFError, zlib.error) as e:
                raise IngestError(f"{path}: read error: {e}") from None
            if trace.packets_read == 0:
                raise IngestError(f"{path}: no readable data (empty, truncated or corrupt trace)")
            model.end_trace(trace)
            consumed_before += size
            summaries.append(TraceSummary(path, fmt, size, trace.stats, trace.stats.problems()))
        model.finish()
    except BaseException:
        if gc_was_enabled:
            gc.enable()
        model.abort()
        for suffix in ("", "-journal", "-wal", "-shm"):
            try:
                os.unlink(tmp_path + suffix)
            except FileNotFoundError:
                pass
        raise
    if gc_was_enabled:
        gc.enable()
    os.replace(tmp_path, db_path)
    return summaries


def ingest_bytes(data: bytes, db_path: str) -> list[TraceSummary]:
    """Convenience for tests: ingest an in-memory trace."""
    fd, path = tempfile.mkstemp(suffix=".pftrace")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    try:
        return ingest([path], db_path)
    finally:
        os.unlink(path)


__all__ = ["ingest", "ingest_bytes", "IngestError", "open_trace", "detect_format"]
