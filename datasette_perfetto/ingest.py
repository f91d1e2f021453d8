"""`ingest(paths, db_path)`: trace files in, a complete SQLite database out.

The database is written to a temporary file beside the target and renamed
over it only when every input imported, so a failed run leaves no
half-written database and never damages an existing one.
"""

from __future__ import annotations

import functools
import gc
import os
import tempfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from .archives import GZIP_MAGIC, READ_ERRORS, ArchiveError, Plan, TraceInput, close_inflated, one_line, plan_inputs
from .importers.common.options import DEFAULT_CONTENT, Content, ImportOptions
from .importers.common.split_helper import SplitFailed
from .importers.proto.reader import looks_like_proto_trace, starts_with_module_symbols
from .model import TraceContext, TraceModel
from .scratch import OwnedFile, create_temp_database, remove_database_files, signals_held, sweep_abandoned
from .stats import REGISTRY, Stats
from .writer import WriterError

# Imports every input into the model, in order as a serial ingest would: (model, the traces planned,
# the output's directory, progress) -> their summaries. parallel.py's does it in several processes.
ImportInputs = Callable[["TraceModel", Sequence[TraceInput], str, "Progress"], "list[TraceSummary]"]


class IngestError(Exception):
    """A problem that makes an input unusable; str() is the one-line message."""


@dataclass
class TraceSummary:
    path: str
    trace_type: str
    size: int
    stats: Stats
    problems: list[tuple[str, int]] = field(default_factory=list)


class Progress:
    """What ingest() tells about its work as it goes; every method does nothing here.

    Subclasses display it (the CLI's are in progress.py). It is only called in the
    process that called ingest(): never in the tokenizer helper or the writer child.
    """

    def input_started(self, path: str, size: int) -> None:
        """Input `path` (`size` bytes on disk) is being imported."""

    def advanced(self, amount: int) -> None:
        """`amount` more bytes of the current input are done. An input is read, then its
        sorted events parsed; the two share its size (as the importer reports them), so
        the amounts add up to `size` when it is imported and a rate predicts the rest."""

    def phase(self, name: str) -> None:
        """A named step after parsing ("Building indexes and report tables", ...) begins."""

    def finished(self) -> None:
        """ingest() is returning or raising: nothing more will be reported."""


def open_trace(source: str | TraceInput) -> tuple[str, BinaryIO]:
    """Opens a trace (a path, or a file or archive member planned by archives.plan_inputs),
    transparently inflating gzip; returns (format, stream).

    The format comes from the content, never the file name.
    """
    fmt, stream, _ = open_trace_and_head(source)
    return fmt, stream


def open_trace_and_head(source: str | TraceInput) -> tuple[str, BinaryIO, bytes]:
    """open_trace, and the first 4 KiB of the file as stored (before gzip is inflated)."""
    trace = source if isinstance(source, TraceInput) else TraceInput.file(source)
    path = trace.label
    try:
        raw = trace.open()
    except READ_ERRORS as e:
        raise IngestError(f"{path}: cannot open: {getattr(e, 'strerror', None) or one_line(e)}") from None
    try:
        head = stored_head = raw.read(4096)
        raw.seek(0)
    except READ_ERRORS as e:  # an archive member's CRC is checked at its end
        raw.close()
        raise IngestError(f"{path}: read error: {one_line(e)}") from None
    stream: BinaryIO = raw
    if head[:2] == GZIP_MAGIC:
        probe = GzipReader(raw)
        try:
            head = probe.read(4096)
        except READ_ERRORS as e:
            raw.close()
            raise IngestError(f"{path}: corrupt gzip data: {one_line(e)}") from None
        if not head:
            raw.close()
            raise IngestError(f"{path}: gzip file holds no data (empty or cut short)")
        stream = GzipReader(_rewound(raw))  # type: ignore[assignment]
    if not head:
        raw.close()
        raise IngestError(f"{path}: empty file")
    fmt = detect_format(head)
    if fmt is None:
        raw.close()
        raise IngestError(
            f"{path}: not a recognised trace format "
            "(expected a Perfetto protobuf, Chrome JSON, systrace or collapsed-stack trace)"
        )
    return fmt, stream, stored_head


class GzipReader:
    """Streams a gzip file (all members). Unlike gzip.GzipFile it hands back
    everything before a cut instead of raising, and records the cut in
    `truncated`, so a truncated .gz imports like a truncated trace."""

    CHUNK = 1 << 20

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.inflater = zlib.decompressobj(wbits=31)
        self.pending = b""  # inflated bytes not yet returned
        self.raw_pending = b""  # compressed bytes of the next member, already read
        self.in_member = False  # inside a gzip member that has not ended yet
        self.truncated = False
        self.done = False

    def read(self, n: int) -> bytes:
        out = [self.pending]
        size = len(self.pending)
        while size < n and not self.done:
            data = self.inflater.unconsumed_tail or self.raw_pending or self.raw.read(self.CHUNK)
            self.raw_pending = b""
            if not data:
                self.done = True
                self.truncated = self.in_member
                break
            self.in_member = True
            piece = self.inflater.decompress(data, n - size)
            out.append(piece)
            size += len(piece)
            if self.inflater.eof:
                self.in_member = False
                rest = self.inflater.unused_data
                self.inflater = zlib.decompressobj(wbits=31)
                if rest[:2] == GZIP_MAGIC:
                    self.raw_pending = rest
                elif rest:
                    self.done = True  # trailing bytes that are not another member: ignored
        joined = b"".join(out)
        joined, self.pending = joined[:n], joined[n:]
        return joined

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> GzipReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _rewound(f: BinaryIO) -> BinaryIO:
    f.seek(0)
    return f


def detect_format(head: bytes) -> str | None:
    if not head:
        return None
    # JSON is sniffed first, as trace_processor does: a JSON file starting with a
    # newline would otherwise pass for a proto packet (0x0a is its first tag).
    compact = b"".join(head[:4096].split())
    if compact.startswith((b'{"', b'[{"')):
        return "json"
    if looks_like_proto_trace(head):
        return "symbols" if starts_with_module_symbols(head) else "proto"
    text = head.lstrip()[:1]
    if text in (b"{", b"["):
        return "json"
    # Imported here: the systrace importer loads the protobuf classes (~12 MB), which
    # JSON imports never need.
    from .importers.systrace.importer import looks_like_systrace

    if looks_like_systrace(head):
        return "systrace"
    from .importers.collapsed_stacks.importer import looks_like_collapsed_stacks

    if looks_like_collapsed_stacks(head):
        return "collapsed_stack"
    return None


def _importer_for(fmt: str):
    if fmt in ("proto", "symbols"):  # a symbols file: a proto trace whose first packet is ModuleSymbols
        from .importers.proto.importer import ProtoImporter

        return ProtoImporter
    if fmt == "systrace":
        from .importers.systrace.importer import SystraceImporter

        return SystraceImporter
    if fmt == "json":
        from .importers.json.importer import JsonImporter

        return JsonImporter
    if fmt == "collapsed_stack":
        from .importers.collapsed_stacks.importer import CollapsedStackImporter

        return CollapsedStackImporter
    return None


def ingest(
    paths: Sequence[str],
    db_path: str,
    progress: Progress | None = None,
    separate_writer: bool | None = None,
    split_tokenize: bool | None = None,
    content: Content = DEFAULT_CONTENT,
    import_inputs: ImportInputs | None = None,
    split_finish: bool | None = None,
) -> list[TraceSummary]:
    """Imports every trace in `paths` into a new database at `db_path`.

    Three settings choose how the machine's cores are used (None: for large
    inputs; True: always; False: never): `separate_writer`, SQLite writes in a
    child process; `split_tokenize`, proto and JSON traces tokenized by two processes;
    `split_finish`, the report tables built by two (derived.py).
    `content` asks for what trace_processor's import flags add (options.Content).
    `import_inputs(model, paths, directory, progress)`,
    if given, imports the inputs into the model instead of import_input one after the other (parallel.py:
    several processes or a Dask cluster; the database is the same)."""
    progress = progress or Progress()
    try:
        try:
            return _ingest(
                paths, db_path, progress, separate_writer, split_tokenize, content, import_inputs, split_finish
            )
        except SplitFailed:
            # Rare (a proto sequence both processes would need, or its helper failed): the
            # single-process import is always right. (A JSON import reads on alone instead.)
            return _ingest(paths, db_path, progress, separate_writer, False, content, import_inputs, split_finish)
    finally:
        close_inflated()
        progress.finished()


def _ingest(
    paths,
    db_path,
    progress: Progress,
    separate_writer,
    split_tokenize,
    content: Content = DEFAULT_CONTENT,
    import_inputs: ImportInputs | None = None,
    split_finish: bool | None = None,
) -> list[TraceSummary]:
    if not paths:
        raise IngestError("no trace files given")
    directory = os.path.dirname(os.path.abspath(db_path))
    if not os.path.isdir(directory):
        raise IngestError(f"{db_path}: directory {directory} does not exist")
    for path in paths:
        if _same_file(path, db_path):
            raise IngestError(f"{db_path}: the output is one of the input traces; choose another output file")
    plan = plan_traces(paths)
    sweep_abandoned(directory)
    total = max(sum(os.path.getsize(p) for p in paths if os.path.isfile(p)), 1)
    # Everything from the temporary database's creation to its rename is one try: a SIGTERM (SystemExit) or
    # Ctrl+C at any point between them removes it. It is created and bound with signals held, so none can
    # fall between the file's creation and `temporary` holding it.
    temporary: OwnedFile | None = None
    model: TraceModel | None = None
    renamed = False
    gc_was_enabled = gc.isenabled()
    try:
        with signals_held():
            try:
                temporary = create_temp_database(directory)
            except OSError as e:
                raise IngestError(
                    f"{db_path}: cannot create a temporary file in {directory}: {e.strerror or e}"
                ) from None
        # A parallel ingest's parent only merges: its writes in this process, where its workers
        # are not forked with a writer's pipes and thread. (Bound with signals held, as the file: a writer
        # child forked by create() is stopped by _discard.)
        with signals_held():
            model = TraceModel.create(
                temporary.path, total, False if import_inputs is not None else separate_writer, split_finish
            )
        summaries: list[TraceSummary] = []
        model.add_containers(plan.containers)
        # The importers build no reference cycles, and the cyclic collector would
        # otherwise rescan every buffered event again and again (~20% of the time).
        gc.disable()
        if import_inputs is None:
            for trace in plan.inputs:
                summaries.append(import_input(model, trace, progress, split_tokenize, content))
        else:
            summaries = import_inputs(model, plan.inputs, directory, progress)
        model.finish(progress.phase)
        try:
            os.replace(temporary.path, db_path)
        except OSError as e:
            raise IngestError(f"{db_path}: cannot replace it: {e.strerror or e}") from None
        renamed = True
    except WriterError as e:
        _discard(model, temporary)
        raise IngestError(f"{db_path}: cannot write the database: {e}") from None
    except BaseException:
        if not renamed:  # (a signal after the rename: the database in place is the whole new one)
            _discard(model, temporary)
        raise
    finally:
        if gc_was_enabled:
            gc.enable()
        if temporary is not None:
            temporary.release()
    return summaries


def plan_traces(paths: Sequence[str]) -> Plan:
    """The traces to import from `paths` (archives opened: their members), as archives.plan_inputs."""
    try:
        return plan_inputs(paths, detect_format)
    except ArchiveError as e:
        raise IngestError(str(e)) from None


def import_input(
    model: TraceModel,
    source: TraceInput,
    progress: Progress,
    split_tokenize: bool | None,
    content: Content = DEFAULT_CONTENT,
) -> TraceSummary:
    """Imports one trace into `model` (its rows into the model's storage) and returns its summary:
    one step of a serial ingest, and what each job of a parallel one runs (parallel.py)."""
    path = source.label
    fmt, stream, stored_head = open_trace_and_head(source)
    importer_cls = _importer_for(fmt)
    if importer_cls is None:
        stream.close()
        raise IngestError(f"{path}: {fmt} traces are not supported yet")
    size = source.disk_size
    trace = model.begin_trace(source, fmt, stored_head)
    progress.input_started(path, size)
    reported = [0]

    # Importers report the share of their input done; Progress counts bytes.
    def report(fraction: float, size: int = size, reported: list = reported) -> None:
        done = min(int(fraction * size), size)
        if done > reported[0]:
            progress.advanced(done - reported[0])
            reported[0] = done

    try:
        with stream:
            # A gzipped tar's member is read once: opened again, the archive would be inflated up to it again.
            reopen = None if source.in_gzipped_tar else functools.partial(_reopen, source)
            options = ImportOptions(split_tokenize, reopen=reopen, content=content)
            importer_cls(trace, options).run(stream, report)
    except READ_ERRORS as e:
        raise IngestError(f"{path}: read error: {one_line(e)}") from None
    if trace.packets_read == 0:
        raise IngestError(f"{path}: no readable data (empty, truncated or corrupt trace)")
    progress.phase("Resolving track dimensions")
    model.end_trace(trace)
    stats = every_machine_stats(trace)
    return TraceSummary(path, fmt, source.size, stats, stats.problems())


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def every_machine_stats(trace: TraceContext) -> Stats:
    """One input's stats over every machine it has data from, as the `stats` table holds them: the file's
    context's (end_trace has added the other machines' global stats to it) plus the other machines' own,
    the counts of a stat on several machines summed."""
    stats = Stats()
    stats.add(trace.stats)
    for ctx in trace.contexts()[1:]:
        own = Stats()
        own.single = {n: v for n, v in ctx.stats.single.items() if REGISTRY[n].scope != "global"}
        own.indexed = {k: v for k, v in ctx.stats.indexed.items() if REGISTRY[k[0]].scope != "global"}
        stats.add(own)
    return stats


def _reopen(source: TraceInput) -> BinaryIO:
    """The trace opened again (the split tokenizer's helper reads it too)."""
    return open_trace(source)[1]


def _discard(model: TraceModel | None, temporary: OwnedFile | None) -> None:
    """After a failure: stops the writer and removes the unfinished database (what of them exists yet)."""
    try:
        if model is not None:
            model.abort()
    finally:
        if temporary is not None:
            remove_database_files(temporary.path)


def ingest_bytes(data: bytes, db_path: str, content: Content = DEFAULT_CONTENT) -> list[TraceSummary]:
    """Convenience for tests: ingest an in-memory trace."""
    fd, path = tempfile.mkstemp(suffix=".pftrace")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    try:
        return ingest([path], db_path, content=content)
    finally:
        os.unlink(path)


__all__ = ["ingest", "ingest_bytes", "IngestError", "Progress", "open_trace", "detect_format"]
