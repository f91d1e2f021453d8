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

import gzip
import os
import tarfile
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, BinaryIO

HEAD_SIZE = 4096  # bytes read to tell a file's format
SNIFF_SIZE = 1 << 16  # bytes of an archive member read to tell its type (enough to inflate HEAD_SIZE of a gzip)
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


def member_label(path: str, members: Sequence[str]) -> str:
    """How messages name a file or an archive member (`archive.zip:member`): on one line, a member name's
    control characters (an archive may name a member anything) escaped."""
    return ":".join((path, *(_printable(m) for m in members)))


def _printable(name: str) -> str:
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in name)


class ArchiveError(Exception):
    """An archive that cannot be read; str() is the one-line reason (the caller names the file)."""


# Where a tar member's bytes are in its archive's (inflated) stream: (offset, size); None for a zip member,
# which zipfile finds by name.
Location = tuple[int, int] | None


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
    locations: tuple[Location, ...] = ()  # per member, where it is in its archive
    # In a gzipped tar: reading it from its start again means inflating the archive up to it, so it is read
    # once, in one process (no tokenizer helper), through the process's forward-moving reader (_inflated).
    in_gzipped_tar: bool = False

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
        """How messages name it: the file, or `archive.zip:member` (member_label)."""
        return member_label(self.path, self.members)

    def open(self) -> BinaryIO:
        """Its raw bytes as a stream, from the start: a fresh one each time (a forked helper may read too), but
        in a gzipped tar, read through the archive's one inflating reader of this process."""
        return open_member(self.path, self.members, self.locations)


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
        kind = archive_kind(path)
        trace_id = _next_id(plan)
        if kind is None:
            plan.inputs.append(TraceInput.file(path, trace_id, _next_order(plan)))
        else:
            size = os.path.getsize(path)
            traces_before = len(plan.inputs)
            _plan_archive(plan, path, (), (), kind, trace_id, None, size, size, sniff)
            if len(plan.inputs) == traces_before:
                raise ArchiveError(f"{path}: the {kind} archive holds no trace in a known format")
    return plan


def _next_id(plan: Plan) -> int:
    plan.next_id += 1
    return plan.next_id - 1


def _next_order(plan: Plan) -> int:
    plan.next_order += 1
    return plan.next_order - 1


def _plan_archive(  # noqa: PLR0913 (an archive's place in the plan, all of it)
    plan: Plan,
    path: str,
    members: tuple[str, ...],
    locations: tuple[Location, ...],
    kind: str,
    trace_id: int,
    parent_id: int | None,
    size: int,
    disk_size: int,
    sniff,
    inherited: bool = False,  # inside a gzipped tar
) -> None:
    name = members[-1] if members else os.path.basename(path)
    plan.containers.append((trace_id, parent_id, name, size, kind, _next_order(plan), 1))
    label = member_label(path, members)
    try:
        with open_member(path, members, locations) as stream:
            gzipped = kind == "tar" and stream.read(2) == GZIP_MAGIC
            stream.seek(0)
            entries = _entries(stream, kind, sniff)
    except _UnreadableMember as e:
        raise ArchiveError(
            f"{member_label(label, [e.member])}: unreadable {kind} archive member: {_printable(e.reason)}"
        ) from None
    except (*READ_ERRORS, NotImplementedError) as e:  # zipfile: an archive needing a later zip version
        raise ArchiveError(f"{label}: unreadable {kind} archive: {one_line(e)}") from None
    # Shares of the archive's bytes on disk, so progress adds up to its size.
    total = sum(e.packed for e in entries) or 1
    listed = []
    for index, entry in enumerate(entries):
        share = disk_size * entry.packed // total
        priority = ARCHIVE_PRIORITY.get(entry.trace_type, OTHER_PRIORITY)
        listed.append((priority, entry.name, index, _next_id(plan), entry, share))
    for _priority, member, _index, member_id, entry, share in sorted(listed):
        chain, where = (*members, member), (*locations, entry.location)
        if entry.trace_type in ARCHIVE_KINDS:
            _plan_archive(
                plan,
                path,
                chain,
                where,
                entry.trace_type,
                member_id,
                trace_id,
                entry.size,
                share,
                sniff,
                gzipped or inherited,
            )
        elif entry.trace_type == "unknown":
            plan.containers.append((member_id, trace_id, member, entry.size, "unknown", None, 0))
        else:
            plan.inputs.append(
                TraceInput(
                    path, chain, member_id, trace_id, _next_order(plan), entry.size, share, where, gzipped or inherited
                )
            )


class _UnreadableMember(Exception):
    """A zip member that cannot be read while listing (encrypted, damaged): _plan_archive names it."""

    def __init__(self, member: str, reason: str) -> None:
        super().__init__(member, reason)
        self.member, self.reason = member, reason


@dataclass
class _Entry:
    name: str
    size: int
    packed: int  # its bytes in the archive
    location: Location
    trace_type: str  # a format sniff() names, "zip", "tar" or "unknown"


def _entries(stream: BinaryIO, kind: str, sniff) -> list[_Entry]:
    """The files an archive holds, in archive order, hidden ones left out; each read far enough to tell
    its type. A tar is read in one pass (a gzipped one cannot be read at random cheaply)."""
    if kind == "zip":
        entries = []
        with zipfile.ZipFile(stream) as z:
            for info in z.infolist():
                if not info.is_dir() and not is_hidden(info.filename):
                    try:
                        with z.open(info.filename) as member:
                            head = member.read(SNIFF_SIZE)
                    except READ_ERRORS + MEMBER_ERRORS as e:
                        raise _UnreadableMember(info.filename, one_line(e)) from None
                    trace_type = _classify(head, sniff)
                    entries.append(_Entry(info.filename, info.file_size, info.compress_size, None, trace_type))
        return entries
    entries = []
    with tarfile.open(fileobj=stream, mode="r|*") as t:
        for item in t:
            if item.isfile() and not is_hidden(item.name):
                extracted = t.extractfile(item)
                head = extracted.read(SNIFF_SIZE) if extracted is not None else b""
                location = (item.offset_data, item.size)
                entries.append(_Entry(item.name, item.size, item.size, location, _classify(head, sniff)))
    return entries


def _classify(head: bytes, sniff) -> str:
    """A file's type from its first bytes: "zip", "tar" (plain or gzipped), the format `sniff` names
    (gzip inflated), or "unknown"."""
    if head.startswith(ZIP_MAGICS):
        return "zip"
    if head.startswith(GZIP_MAGIC):
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, HEAD_SIZE)
        except zlib.error:
            return "unknown"
    if head[TAR_MAGIC_OFFSET : TAR_MAGIC_OFFSET + 5] == b"ustar":
        return "tar"
    return sniff(head[:HEAD_SIZE]) or "unknown"


def is_hidden(name: str) -> bool:
    """Whether an archive path has a hidden component (".x"; "." and ".." are not), as trace_processor's
    IsHiddenArchivePath."""
    return any(part.startswith(".") and part not in (".", "..") for part in name.split("/"))


def archive_kind(path: str) -> str | None:
    """The kind of archive the file is ("zip", or "tar": plain or gzipped), or None."""
    try:
        with open(path, "rb") as f:
            kind = _classify(f.read(SNIFF_SIZE), lambda head: None)
    except OSError:
        return None  # the trace reader says what is wrong with it
    return kind if kind in ARCHIVE_KINDS else None


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


def open_member(path: str, members: tuple[str, ...] = (), locations: tuple[Location, ...] = ()) -> BinaryIO:
    """The bytes of `path`, or of the member `members[-1]` reached through the archives before it
    (`locations`: where each is, as _entries found it)."""
    stream = open(path, "rb")
    if not members:
        return stream
    owners: list = [stream]
    try:
        current: IO[bytes] = stream
        for member, location in zip(members, locations):
            if location is None:
                archive = zipfile.ZipFile(current)
                owners.append(archive)
                current = archive.open(member)
            else:
                head = current.read(2)
                current.seek(0)
                if head == GZIP_MAGIC and current is stream:  # a gzipped tar file: offsets are inflated ones
                    current = _inflated(path, location[0])
                elif head == GZIP_MAGIC:
                    current = gzip.GzipFile(fileobj=current, mode="rb")  # type: ignore[assignment]
                    owners.append(current)
                current = _Slice(current, *location)  # type: ignore[assignment]
            owners.append(current)
    except BaseException as e:
        for owner in reversed(owners):
            owner.close()
        if isinstance(e, MEMBER_ERRORS):
            raise OSError(one_line(e)) from None
        raise
    return _MemberStream(current, owners)  # type: ignore[return-value]


# Per gzipped tar file: this process's inflating reader, positioned where the last member read from
# it ended, so members read in archive order inflate the archive once (a fork's is its own).
_INFLATED: dict[str, tuple[int, BinaryIO, gzip.GzipFile]] = {}


def _inflated(path: str, offset: int) -> IO[bytes]:
    """The gzipped tar at `path`, inflated, for reading from `offset`: the cached reader if it has not
    passed it, else a new one."""
    cached = _INFLATED.get(path)
    if cached is not None and (cached[0] != os.getpid() or cached[2].tell() > offset):
        if cached[0] == os.getpid():
            cached[2].close()
            cached[1].close()
        cached = None
    if cached is None:
        raw = open(path, "rb")
        cached = _INFLATED[path] = (os.getpid(), raw, gzip.GzipFile(fileobj=raw, mode="rb"))
    return cached[2]  # type: ignore[return-value]


def close_inflated() -> None:
    """Closes this process's cached readers of gzipped tars (ingest() calls it when done)."""
    for pid, raw, inflated in _INFLATED.values():
        if pid == os.getpid():
            inflated.close()
            raw.close()
    _INFLATED.clear()


class _Slice:
    """`size` bytes of a seekable stream from `offset`: a tar member, read in place. Its first bytes are
    kept, so sniffing them and seeking back to the start does not move the stream back (a gzip stream
    would inflate itself again from its start)."""

    KEPT = 1 << 16

    def __init__(self, stream: IO[bytes], offset: int, size: int) -> None:
        self.stream, self.offset, self.size = stream, offset, size
        stream.seek(offset)
        self.kept = stream.read(min(size, self.KEPT))
        self.stream_at = len(self.kept)  # where the stream is, from the member's start
        self.position = 0

    def read(self, n: int | None = -1) -> bytes:
        left = self.size - self.position
        n = left if n is None or n < 0 else min(n, left)
        parts = []
        if self.position < len(self.kept):
            part = self.kept[self.position : self.position + n]
            parts.append(part)
            self.position += len(part)
            n -= len(part)
        if n > 0:
            if self.stream_at != self.position:
                self.stream.seek(self.offset + self.position)
            part = self.stream.read(n)
            parts.append(part)
            self.position += len(part)
            self.stream_at = self.position
        return b"".join(parts)

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.position, 2: self.size}[whence]
        self.position = max(0, min(base + offset, self.size))
        return self.position

    def tell(self) -> int:
        return self.position

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        pass  # the stream it reads is its owner's to close


__all__ = ["one_line", "TraceInput", "Plan", "plan_inputs", "open_member", "archive_kind", "is_hidden", "ArchiveError"]
