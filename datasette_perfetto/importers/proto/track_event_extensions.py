"""TrackEvent extension fields as args, as trace_processor reflects them.

Chromium extends TrackEvent (ChromeTrackEvent: field numbers 1000 and up); other producers declare
their extensions in the trace (extension_descriptor packets, anywhere in the file). trace_processor
compiles in Chromium's descriptors, adds the declared ones, and turns every extension field of an event
into args named by field (`chrome_app_state`, `chrome_latency_info.component_info[0].time_us`). The
`perfetto` package lacks Chromium's, so a generated FileDescriptorSet ships in protos/
(tools/build_extension_descriptor.py). The known extension fields are gathered as the plain fields of
one private message, which the event's bytes are parsed with: the TrackEvent fields it does not name are
skipped as unknown. An event with a field no declaration seen so far names gets its extension args when
it is parsed, after the whole file is read (DeferredExtensionArgs).

Fields whose value is an iid into interned data become what it names, as trace_processor's overrides
do: a source location (file, function, line) under the field's message.
"""

from __future__ import annotations

import functools
import gzip
import zlib
from importlib import resources

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError
from google.protobuf.message_factory import GetMessageClass
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from .track_event_args import fields_args, normal_path
from .track_event_fields import I_SOURCE_LOCATIONS
from .unknown import unknown_fields

TRACK_EVENT = ".perfetto.protos.TrackEvent"
FIRST_EXTENSION = 1000  # TrackEvent's extension range starts here
DERIVED_LIMIT = 4096  # values a sequence state remembers (SequenceState.derived) before starting over
_HOLDER_PACKAGE = "datasette_perfetto.track_event_extensions"

# Flat keys of interned source location iids, and the prefix their location's args take.
SOURCE_LOCATION_IIDS = {
    "chrome_memory_pressure_notification.creation_location_iid": "chrome_memory_pressure_notification",
    "begin_impl_frame_args.current_args.source_location_iid": "begin_impl_frame_args.current_args",
    "begin_impl_frame_args.last_args.source_location_iid": "begin_impl_frame_args.last_args",
    "begin_frame_observer_state.last_begin_frame_args.source_location_iid": (
        "begin_frame_observer_state.last_begin_frame_args"
    ),
}


@functools.cache
def _bundled_files() -> tuple:
    data = (resources.files("datasette_perfetto") / "protos" / "track_event_extensions.binpb").read_bytes()
    return tuple(descriptor_pb2.FileDescriptorSet.FromString(data).file)


@functools.cache
def _bundled() -> tuple:
    return _holder(_bundled_files(), ())


class TrackEventExtensions:
    """The TrackEvent extension fields one import knows: the bundled ones, and those the trace declares
    in extension_descriptor packets (as trace_processor adds them to its descriptor pool). Both split
    tokenizing processes see every such packet."""

    def __init__(self) -> None:
        self.declared: list = []  # FileDescriptorProtos from the trace
        self.holder, self.numbers = _bundled()

    def declare(self, extension_descriptor) -> None:
        """Adds the extensions of TrackEvent an ExtensionDescriptor declares (a set that does not resolve
        is ignored, as trace_processor ignores one it cannot add)."""
        files = declared_files(extension_descriptor)
        if not files:
            return
        declared = [*self.declared, *(_as_file_proto(file) for file in files)]
        try:
            self.holder, self.numbers = _holder(_bundled_files(), declared)
        except (TypeError, KeyError, ValueError):
            return
        self.declared = declared

    def add_args(self, args: list, unknown, raw: bytes, seq) -> bool:
        """Appends the args of the extension fields among an event's unknown fields (UnknownFieldSet).
        True if a field this import knows no extension for yet is one a later packet may declare: the
        caller defers the extension args to parse time (DeferredExtensionArgs), when every declaration
        in the file is known."""
        numbers = self.numbers
        if not all(f.field_number in numbers for f in unknown) and any(
            f.field_number >= FIRST_EXTENSION for f in unknown
        ):
            return True
        # Events differ in their other fields but repeat a few extension values (a task's queue and
        # priority): their args are made once per sequence state (they may use its interned data).
        try:
            key = ("extension args", tuple((f.field_number, f.wire_type, f.data) for f in unknown))
            cached = seq.derived.get(key)
        except TypeError:  # a group's data (an UnknownFieldSet) is not hashable: not cached
            key, cached = None, None
        if cached is None:
            made: list = []
            extension_args(made, self, raw, seq)
            cached = tuple(made)
            if key is not None:
                if len(seq.derived) >= DERIVED_LIMIT:
                    seq.derived.clear()
                seq.derived[key] = cached
        args.extend(cached)
        return False


class DeferredExtensionArgs(tuple):
    """An event's args, the last item its bytes, whose extension args are made at parse time
    (resolve_deferred)."""

    __slots__ = ()


class _NoInternedData:
    """The sequence state of a deferred event: its interned data is gone by parse time, as the
    sequence may have been cleared since."""

    @staticmethod
    def lookup(table: int, iid: int) -> None:
        return None


def resolve_deferred(extensions: TrackEventExtensions, deferred: DeferredExtensionArgs, stats) -> tuple:
    """The args of a DeferredExtensionArgs, with every extension the trace declared; fields still
    unknown are counted (unknown_extension_fields), as trace_processor counts them per event."""
    *args, raw = deferred
    try:
        extension_args(args, extensions, raw, _NoInternedData())
        unknown = unknown_fields(pb.TrackEvent.FromString(raw))
    except DecodeError:  # decoded once already, while tokenizing: cannot happen, but never lose the event
        return tuple(args)
    numbers = extensions.numbers
    missing = sum(1 for f in unknown if f.field_number >= FIRST_EXTENSION and f.field_number not in numbers)
    if missing:
        stats.inc("unknown_extension_fields", missing)
    return tuple(args)


def declared_files(extension_descriptor) -> list:
    """The files of an ExtensionDescriptor packet's FileDescriptorSet, plain or gzipped (none when it cannot be
    read), as protobuf's own FileDescriptorProto (the perfetto package has its own copy of descriptor.proto:
    converted through the bytes)."""
    try:
        if extension_descriptor.HasField("extension_set"):
            data = extension_descriptor.extension_set.SerializeToString()
        elif extension_descriptor.HasField("extension_set_gzip"):
            data = gzip.decompress(extension_descriptor.extension_set_gzip)
        else:
            return []
        return list(descriptor_pb2.FileDescriptorSet.FromString(data).file)
    except (DecodeError, OSError, EOFError, zlib.error):
        return []


def _as_file_proto(file) -> descriptor_pb2.FileDescriptorProto:
    """A copy of a declared file, its unnamed messages (which producers use only to hold extensions, and
    trace_processor accepts) replaced by their extensions at file level."""
    proto = descriptor_pb2.FileDescriptorProto()
    proto.CopyFrom(file)
    unnamed = [m for m in proto.message_type if not m.name]
    for message in unnamed:
        proto.extension.extend(message.extension)
        proto.message_type.remove(message)
    return proto


def _holder(bundled, declared) -> tuple:
    """(message class whose fields are the files' extensions of TrackEvent, their field numbers).

    trace_processor merges what a trace declares into its pool: a message it already knows (Chrome
    sends its own chrome_track_event.proto, which is also bundled; two Chrome channels send theirs
    twice) gains the fields it lacks, and new messages, enums and extensions are added. Declared files
    name no dependencies (trace_processor resolves types by name), so each is given every file before it;
    one that still does not resolve is left out."""
    files = [_copy(file) for file in bundled]
    known = _Known()
    for file in files:
        known.add(file)
    for i, file in enumerate(declared):
        file = _copy(file)
        file.name = f"declared/{i}/{file.name}"  # a file may be declared twice (two Chrome channels)
        prefix = f".{file.package}" if file.package else ""
        for message in list(file.message_type):
            mine = known.messages.get(f"{prefix}.{message.name}")
            if mine is not None:
                # Its new extensions move to the file's own scope, where the types it declares resolve.
                file.extension.extend(_merge_message(mine, message, f"{prefix}.{message.name}", known))
                file.message_type.remove(message)
        for enum in list(file.enum_type):
            if f"{prefix}.{enum.name}" in known.enums:
                file.enum_type.remove(enum)
        for extension in list(file.extension):
            if (extension.extendee, extension.number) in known.extensions:
                file.extension.remove(extension)
        del file.dependency[:]
        file.dependency.extend(f.name for f in files)
        files.append(file)
        known.add(file)
    pool = descriptor_pool.DescriptorPool()
    added = []
    for file in files:
        try:
            pool.Add(file)
            added.append(file)
        except (TypeError, KeyError, ValueError):
            if file in files[: len(bundled)]:
                raise
    holder = descriptor_pb2.FileDescriptorProto(
        name="track_event_extensions_holder.proto", package=_HOLDER_PACKAGE, syntax="proto2"
    )
    holder.dependency.extend(file.name for file in added)
    message = holder.message_type.add(name="Extensions")
    numbers: set[int] = set()
    for extension in _track_event_extensions(added):
        if extension.number not in numbers:
            numbers.add(extension.number)
            field = message.field.add()
            field.CopyFrom(extension)
            field.ClearField("extendee")
    pool.Add(holder)
    return GetMessageClass(pool.FindMessageTypeByName(f"{_HOLDER_PACKAGE}.Extensions")), frozenset(numbers)


def _copy(file) -> descriptor_pb2.FileDescriptorProto:
    copy = descriptor_pb2.FileDescriptorProto()
    copy.CopyFrom(file)
    return copy


class _Known:
    """The messages (full name -> DescriptorProto, to merge into), enums and extensions (extendee,
    number) of the files so far."""

    def __init__(self) -> None:
        self.messages: dict = {}
        self.enums: set[str] = set()
        self.extensions: set[tuple[str, int]] = set()

    def add(self, file) -> None:
        prefix = f".{file.package}" if file.package else ""
        self._add_scope(prefix, file.message_type, file.enum_type, file.extension)

    def _add_scope(self, prefix: str, messages, enums, extensions) -> None:
        self.enums.update(f"{prefix}.{enum.name}" for enum in enums)
        self.extensions.update((e.extendee, e.number) for e in extensions)
        for message in messages:
            name = f"{prefix}.{message.name}"
            self.messages[name] = message
            self._add_scope(name, message.nested_type, message.enum_type, message.extension)


def _merge_message(into, message, name: str, known: _Known) -> list:
    """Adds to a known message the fields (by number and name), nested messages and enums of another
    declaration of it; returns its extensions not known yet, for the declaring file to hold. A new field
    of a type not known yet (one the declaring file brings) is left out."""
    numbers, names = {f.number for f in into.field}, {f.name for f in into.field}
    for field in message.field:
        if field.number not in numbers and field.name not in names and _resolvable(field, known):
            into.field.add().CopyFrom(field)
    new_extensions = [e for e in message.extension if (e.extendee, e.number) not in known.extensions]
    for nested in message.nested_type:
        mine = known.messages.get(f"{name}.{nested.name}")
        if mine is not None:
            new_extensions += _merge_message(mine, nested, f"{name}.{nested.name}", known)
        elif all(_resolvable(field, known) for field in nested.field) and not nested.nested_type:
            into.nested_type.add().CopyFrom(nested)
            known.messages[f"{name}.{nested.name}"] = into.nested_type[-1]
            known.enums.update(f"{name}.{nested.name}.{enum.name}" for enum in nested.enum_type)
            new_extensions += nested.extension
            del into.nested_type[-1].extension[:]
    for enum in message.enum_type:
        if f"{name}.{enum.name}" not in known.enums:
            into.enum_type.add().CopyFrom(enum)
            known.enums.add(f"{name}.{enum.name}")
    return new_extensions


def _resolvable(field, known: _Known) -> bool:
    return not field.type_name or field.type_name in known.messages or field.type_name in known.enums


def _track_event_extensions(files) -> list:
    found: list = []

    def visit(extensions, messages) -> None:
        found.extend(e for e in extensions if e.extendee == TRACK_EVENT)
        for message in messages:
            visit(message.extension, message.nested_type)

    for file in files:
        visit(file.extension, file.message_type)
    return found


def extension_args(out: list, extensions: TrackEventExtensions, raw: bytes, seq) -> None:
    """Appends the args of the extension fields in a TrackEvent's bytes (DecodeError if damaged)."""
    args: list = []
    fields_args(args, extensions.holder.FromString(raw).ListFields(), "", "", seq)
    for arg in args:
        prefix = SOURCE_LOCATION_IIDS.get(arg[0])
        location = seq.lookup(I_SOURCE_LOCATIONS, arg[3]) if prefix is not None else None
        if location is None:  # not an iid, or one not interned: the iid stays, as in trace_processor
            out.append(arg)
            continue
        file_name, function_name, line = location
        out.append((f"{prefix}.file_name", f"{prefix}.file_name", "string", normal_path(file_name or "")))
        out.append((f"{prefix}.function_name", f"{prefix}.function_name", "string", function_name or ""))
        if line is not None:
            out.append((f"{prefix}.line_number", f"{prefix}.line_number", "int", line))
