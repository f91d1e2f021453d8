"""Inputs as trace_processor sees them: a file is a trace, or an archive (zip, tar, tar.gz) of traces.

`plan_inputs(paths)` turns the command line into what to import: one `TraceInput` per trace (a file,
or an archive member, read from the archive when opened: nothing is extracted to disk) and one
`trace_file` row per archive, numbered as trace_processor's TraceFileTracker numbers them. An
archive's row comes first, then its members' rows in archive order; the members are imported in
trace_processor's order (its ArchiveEntry): Perfetto protobuf first, then archives, then the other
formats, symbol files last; by name within each. Hidden members (a path component starting with
".", e.g. macOS's `__MACOSX/._x` forks) and directories are left out, as trace_processor does.
Members in no known format get a row of type "unknown" and are not imported. A gzip file stays one
trace (inflated as it is read), not a container of its own.
"""

from __future__ import annotations

import os
import tarfile
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, BinaryIO

HEAD_SIZE = 4096  # bytes read to tell a file's format
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive's end record
TAR_MAGIC_OFFSET = 257  # "ustar" in a POSIX or GNU tar header
ARCHIVE_KINDS = ("zip", "tar")
# trace_processor's archive_priority per trace type: lower is imported first; 2 for any other.
ARCHIVE_PRIORITY = {"proto": 0, "zip": 1, "tar": 1, "symbols": 3}
OTHER_PRIORITY = 2
# What reading a damaged file or archive can raise (zipfile: a bad CRC at a member's end, a missing member).
READ_ERRORS = (OSError, EOFError, zlib.error, zipfile.BadZipFile, tarfile.TarError, KeyError, ValueError)
# What zipfile raises for a member it cannot read (encrypted: RuntimeError; a compression method it lacks:
# NotImplementedError); a member's stream raises them as OSError.
MEMBER_ERRORS = (RuntimeError, NotImplementedError, zipfile.BadZipFile, tarfile.TarError)


def one_line(error: BaseException) -> str:
    """An exception's message on one line (tarfile's ReadError lists every method it tried, one per line)."""
    return " ".join(str(error).split())


class ArchiveError(Exception):
    """An archive that cannot be read; str() is the one-line reason (the caller names the file)."""


@dataclass(frozen=True)
class TraceInput:
    """One trace to import: the file at `path`, or the member `members[-1]` of the archive `members[:-1]`
    inside it (outermost first)."""

    path: str
    members: tuple[str, ...] = ()
    trace_id: int = 0  # its trace_file id
    parent_id: int | None = None  # the archive's trace_file id
    processing_order: int = 0
    size: int = 0  # its bytes (a member: inflated from the archive)
    disk_size: int = 0  # its share of the input's bytes on disk (progress)

    @classmethod
    def file(cls, path: str, trace_id: int = 0, processing_order: int = 0) -> TraceInput:
        size = os.path.getsize(path) if os.path.isfile(path) else 0
        return cls(path, (), trace_id, None, processing_order, size, size)

    @property
    def name(self) -> str:
        """trace_file.name: a file's base name, a member's path in its archive."""
        return self.members[-1] if self.members else os.path.basename(self.path)

    @property
    def label(self) -> str:
        """How messages name it: the file, or `archive.zip:member`."""
        return ":".join((self.path, *self.members))

    def open(self) -> BinaryIO:
        """Its raw bytes as a stream, from the start (a fresh one each time: a forked helper may read too)."""
        return open_member(self.path, self.members)


@dataclass
class Plan:
    """What `paths` hold: the traces in import order, and the archives' trace_file rows."""

    inputs: list[TraceInput] = field(default_factory=list)
    # (id, parent_id, name, size, trace_type, processing_order, is_container)
    containers: list[tuple] = field(default_factory=list)
    next_id: int = 0
    next_order: int = 0


def plan_inputs(paths: Sequence[str], sniff) -> Plan:
    """The traces and archives in `paths`; `sniff(head) -> format or None` tells a trace's format from
    its first bytes (gzip inflated). Raises ArchiveError naming the path for an unreadable archive."""
    plan = Plan()
    for path in paths:
        kind = archive_kind(path, ())
        trace_id = _next_id(plan)
        if kind is None:
            plan.inputs.append(TraceInput.file(path, trace_id, _next_order(plan)))
        else:
            size = os.path.getsize(path)
            traces_before = len(plan.inputs)
            _plan_archive(plan, path, (), kind, trace_id, None, size, size, sniff)
            if len(plan.inputs) == traces_before:
                raise ArchiveError(f"{path}: the {kind} archive holds no trace in a known format")
    return plan


def _next_id(plan: Plan) -> int:
    plan.next_id += 1
    return plan.next_id - 1


def _next_order(plan: Plan) -> int:
    plan.next_order += 1
    return plan.next_order - 1


def _plan_archive(
    plan: Plan,
    path: str,
    members: tuple[str, ...],
    kind: str,
    trace_id: int,
    parent_id: int | None,
    size: int,
    disk_size: int,
    sniff,
) -> None:
    name = members[-1] if members else os.path.basename(path)
    plan.containers.append((trace_id, parent_id, name, size, kind, _next_order(plan), 1))
    label = ":".join((path, *members))
    try:
        with open_member(path, members) as stream:
            entries = _entries(stream, kind)
    except READ_ERRORS as e:
        raise ArchiveError(f"{label}: unreadable {kind} archive: {one_line(e)}") from None
    # Shares of the archive's bytes on disk, so progress adds up to its size.
    total = sum(e[2] for e in entries) or 1
    listed = []
    for index, (member, member_size, packed) in enumerate(entries):
        chain = (*members, member)
        member_kind = archive_kind(path, chain)
        try:
            trace_type = member_kind or _sniff_member(path, chain, sniff) or "unknown"
        except READ_ERRORS as e:
            raise ArchiveError(f"{label}:{member}: unreadable {kind} archive member: {one_line(e)}") from None
        share = disk_size * packed // total
        listed.append(
            (
                ARCHIVE_PRIORITY.get(trace_type, OTHER_PRIORITY),
                member,
                index,
                _next_id(plan),
                chain,
                trace_type,
                member_size,
                share,
            )
        )
    for _priority, member, _index, member_id, chain, trace_type, member_size, share in sorted(listed):
        if trace_type in ARCHIVE_KINDS:
            _plan_archive(plan, path, chain, trace_type, member_id, trace_id, member_size, share, sniff)
        elif trace_type == "unknown":
            plan.containers.append((member_id, trace_id, member, member_size, "unknown", None, 0))
        else:
            plan.inputs.append(TraceInput(path, chain, member_id, trace_id, _next_order(plan), member_size, share))


def _entries(stream: BinaryIO, kind: str) -> list[tuple[str, int, int]]:
    """(name, size, bytes in the archive) of each file an archive holds, in archive order; hidden ones left out."""
    if kind == "zip":
        with zipfile.ZipFile(stream) as z:
            return [
                (i.filename, i.file_size, i.compress_size)
                for i in z.infolist()
                if not i.is_dir() and not is_hidden(i.filename)
            ]
    with tarfile.open(fileobj=stream, mode="r:*") as t:
        return [(m.name, m.size, m.size) for m in t.getmembers() if m.isfile() and not is_hidden(m.name)]


def is_hidden(name: str) -> bool:
    """Whether an archive path has a hidden component (".x"; "." and ".." are not), as trace_processor's
    IsHiddenArchivePath."""
    return any(part.startswith(".") and part not in (".", "..") for part in name.split("/"))


def archive_kind(path: str, members: tuple[str, ...]) -> str | None:
    """The kind of archive the file or member is ("zip", or "tar": plain or gzipped), or None."""
    try:
        with open_member(path, members) as stream:
            head = stream.read(HEAD_SIZE)
            if head.startswith(ZIP_MAGICS):
                return "zip"
            if head.startswith(GZIP_MAGIC):
                stream.seek(0)
                head = zlib.decompressobj(wbits=31).decompress(stream.read(HEAD_SIZE), TAR_MAGIC_OFFSET + 8)
            return "tar" if head[TAR_MAGIC_OFFSET : TAR_MAGIC_OFFSET + 5] == b"ustar" else None
    except READ_ERRORS:
        return None  # not an archive we can open: the trace reader says what is wrong with it


def _sniff_member(path: str, members: tuple[str, ...], sniff) -> str | None:
    with open_member(path, members) as stream:
        head = stream.read(HEAD_SIZE)
        if head.startswith(GZIP_MAGIC):
            try:
                head = zlib.decompressobj(wbits=31).decompress(head + stream.read(1 << 16), HEAD_SIZE)
            except zlib.error:
                return None
        return sniff(head)


class _MemberStream:
    """A member's bytes, closing the archives (and file) it is read through when closed."""

    def __init__(self, stream, owners: list) -> None:
        self.stream = stream
        self.owners = owners

    def read(self, n: int = -1) -> bytes:
        try:
            return self.stream.read(n)
        except MEMBER_ERRORS as e:
            raise OSError(one_line(e)) from None

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.stream.seek(offset, whence)

    def tell(self) -> int:
        return self.stream.tell()

    def seekable(self) -> bool:
        return True

    def close(self) -> None:
        for owner in reversed(self.owners):
            owner.close()

    def __enter__(self) -> _MemberStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_member(path: str, members: tuple[str, ...]) -> BinaryIO:
    """The bytes of `path`, or of the member `members[-1]` reached through the archives before it."""
    stream = open(path, "rb")
    if not members:
        return stream
    owners: list = [stream]
    try:
        current: IO[bytes] = stream
        for member in members:
            head = current.read(4)
            current.seek(0)
            if head.startswith(ZIP_MAGICS):
                archive = zipfile.ZipFile(current)
                owners.append(archive)
                current = archive.open(member)
            else:
                tar = tarfile.open(fileobj=current, mode="r:*")
                owners.append(tar)
                extracted = tar.extractfile(member)
                if extracted is None:
                    raise KeyError(member)
                current = extracted
            owners.append(current)
    except BaseException as e:
        for owner in reversed(owners):
            owner.close()
        if isinstance(e, MEMBER_ERRORS):
            raise OSError(one_line(e)) from None
        raise
    return _MemberStream(current, owners)  # type: ignore[return-value]


__all__ = ["one_line", "TraceInput", "Plan", "plan_inputs", "open_member", "archive_kind", "is_hidden", "ArchiveError"]
