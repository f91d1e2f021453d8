"""trace_processor's proto content analysis (--analyze-trace-proto-content; ingest --analyze-proto-content):
where a trace's bytes go, by proto field path, as experimental_proto_path and experimental_proto_content.

Every packet trace_processor analyzes is walked field by field against its descriptor pool, as its
SizeProfileComputer (util/proto_profiler.cc) does. Each field is a sample of its path, e.g.
TracePacket.#track_event.TrackEvent.#name_iid.uint64, sized without its tag and length: a varint's value
re-encoded (the bytes of its minimal encoding), 4 or 8 for fixed ones, the payload of a string, bytes or
packed field. A message is a sample of its own path too, once per occurrence: its overhead, the tag and
length bytes of its fields (the bytes not counted by any field's sample). Fields the pool does not name add
up, per message occurrence, to one sample of the message's #unknown path. Field ids beyond 2^24 - 1 are
skipped by protozero: they stay in the overhead; a field that cannot be parsed ends its message (the rest is
overhead); a message field whose type the pool lacks ends the whole packet (nothing more of it counted, as
trace_processor stops there).

Samples are aggregated per annotation of the packet (ProtoContentAnalyzer::ProcessPacket): a track event's
(event.category, event.name), the `skipped_packet = invalid_incremental_state` of a packet dropped for want of
incremental state, or none. Each annotation has its own tree of paths (the annotation is an arg set on its
root), one content row per path with samples.

Which packets, as trace_processor's ProtoTraceReader: every packet but clock snapshots, remote clock syncs,
service events and extension descriptors (and the compressed_packets wrappers, whose packets count one by
one); track events when parsed (in timestamp order, after the tokenizer and the range of interest kept them),
the rest when read. Packets of machines other than the host (or the one adopted as host) are left out:
trace_processor gives each machine's reader an analyzer of its own that is never written out.

Descriptor pool: the `perfetto` package's trace protos, Chromium's TrackEvent extensions
(protos/track_event_extensions.binpb), the Android and GPU extensions trace_processor compiles in
(protos/proto_content_extensions.binpb, tools/build_content_descriptor.py) and the trace's own
extension_descriptor packets from where they appear. (StatsdAtom.atom is the trace protos' empty Atom in
trace_processor too: its atoms.descriptor declares android.os.statsd.Atom, which the walk does not reach.)

Ids: trace_processor numbers the rows in its hash maps' order (annotations keyed by interned string ids), which
nothing outside it can reproduce. Here they are deterministic: annotations in the order none, track events by
(category, name), skipped packets; within one, the tree depth first, children by field number then type name;
a parent always before its children.

Cost: nothing when the option is off (the importer keeps its usual reader, tokenize() and sorter: this module
is only installed when it is on). On: each packet is read once more, by this module, as the reader's packets
come (nothing held but the sorter's runs); track-event packets carry their bytes through the sorter to the
parse phase, where their top-level fields are walked and each distinct TrackEvent encoding once (a bounded
cache): its shape (the set of samples it gives, few even over many encodings) counted per annotation and
added to the paths' totals later.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Iterator
from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ..common.event_kinds import EV_TRACK_EVENT
from .reader import scan_simple_track_event
from .track_event_extensions import declared_files
from .track_event_fields import F_CALLSTACK, F_CATEGORY, F_NAME

# Where a track event's tuple carries its packet's bytes (appended by the sorter's push when analyzing).
F_PACKET = F_CALLSTACK + 1
ROOT_TYPE = "perfetto.protos.TracePacket"
TRACK_EVENT_TYPE = "perfetto.protos.TrackEvent"
SKIPPED_STAT = "packet_skipped_seq_needs_incremental_state_invalid"
SEQ_NEEDS_INCREMENTAL_STATE = 2

_TP = pb.TracePacket.DESCRIPTOR.fields_by_name
# Packets trace_processor's reader consumes before its analyzer sees them.
EXCLUDED_FIELDS = frozenset(
    _TP[name].number
    for name in ("clock_snapshot", "remote_clock_sync", "service_event", "extension_descriptor", "compressed_packets")
)
F_EXTENSION_DESCRIPTOR = _TP["extension_descriptor"].number
F_MACHINE_ID = _TP["machine_id"].number
F_SEQ_ID = _TP["trusted_packet_sequence_id"].number
F_SEQ_FLAGS = _TP["sequence_flags"].number
F_TRACK_EVENT = _TP["track_event"].number

MAX_FIELD_ID = (1 << 24) - 1  # protozero's Field::kMaxId: larger ids are skipped
MAX_MESSAGE_LENGTH = (1 << 28) - 1  # protozero's kMaxMessageLength: longer payloads are skipped
MASK64 = (1 << 64) - 1
UNKNOWN_FIELD = 0xFFFFFFFF  # the field index of a message's #unknown path (uint32(-1))
CACHE_ENTRIES = 1 << 16  # distinct TrackEvent encodings whose shape is kept (a few MB)
SHAPES = 1 << 16  # distinct TrackEvent sample sets kept until their counts are added up

TYPE_MESSAGE = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
# FieldDescriptorProto.Type -> the leaf type name (TYPE_UINT64 -> "uint64").
LEAF_TYPE_NAMES = {
    number: name[len("TYPE_") :].lower() for name, number in descriptor_pb2.FieldDescriptorProto.Type.items()
}


# -- the descriptor pool -----------------------------------------------------------
# A pool is {message full name (no leading dot): {field number: (name, type, resolved message type or None)}}.


class _PoolBuilder:
    """trace_processor's DescriptorPool.AddFromFileDescriptorSet, for what the analyzer reads: messages merged
    field by field (a number already there keeps its first declaration), then extensions added to the
    messages they extend, then message-typed fields resolved."""

    def __init__(self, pool: dict[str, dict[int, tuple]]) -> None:
        self.pool = pool

    def add_files(self, files) -> None:
        extensions: list[tuple[str, Any]] = []  # (package, FieldDescriptorProto)
        added: list[tuple[str, int, Any]] = []  # (message, field number, FieldDescriptorProto)
        for file in files:
            package = file.package
            for message in file.message_type:
                self._add_message(package, package, message, extensions, added)
            for ext in file.extension:
                extensions.append((package, ext))
        for package, ext in extensions:
            extendee = ext.extendee
            if extendee.startswith("."):
                extendee = extendee[1:]
            elif package:
                extendee = f"{package}.{extendee}"
            fields = self.pool.get(extendee)
            if fields is None or ext.number in fields:
                continue
            fields[ext.number] = (ext.name, _field_type(ext), None)
            added.append((extendee, ext.number, ext))
        for message, number, f in added:
            name, ftype, _ = self.pool[message][number]
            if ftype == TYPE_MESSAGE and f.type_name:
                self.pool[message][number] = (name, ftype, self._resolve(message, f.type_name))

    def _add_message(self, package: str, parent: str, message, extensions: list, added: list) -> None:
        full = f"{parent}.{message.name}" if parent else message.name
        fields = self.pool.get(full)
        if fields is None:
            fields = self.pool[full] = {}
        for f in message.field:
            if f.number not in fields:
                fields[f.number] = (f.name, _field_type(f), None)
                added.append((full, f.number, f))
        for nested in message.nested_type:
            self._add_message(package, full, nested, extensions, added)
        for ext in message.extension:
            extensions.append((package, ext))

    def _resolve(self, scope: str, type_name: str) -> str | None:
        """A field's message type, as DescriptorPool::ResolveShortType finds it (None: not in the pool)."""
        if type_name.startswith("."):
            name = type_name[1:]
            return name if name in self.pool else None
        while True:
            candidate = f"{scope}.{type_name}" if scope else type_name
            if candidate in self.pool:
                return candidate
            if not scope:
                return None
            scope = scope.rpartition(".")[0]


def _field_type(f) -> int:
    return f.type if f.HasField("type") else TYPE_MESSAGE  # as trace_processor reads a field without one


def _file_protos(data: bytes) -> list:
    return list(descriptor_pb2.FileDescriptorSet.FromString(data).file)


@functools.cache
def _base_pool() -> dict[str, dict[int, tuple]]:
    """trace_processor's compiled-in descriptors as far as this package has them (see the module doc)."""
    trace = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(trace)
    protos = resources.files("datasette_perfetto") / "protos"
    pool: dict[str, dict[int, tuple]] = {}
    builder = _PoolBuilder(pool)
    builder.add_files([trace])
    builder.add_files(_file_protos((protos / "track_event_extensions.binpb").read_bytes()))
    builder.add_files(_file_protos((protos / "proto_content_extensions.binpb").read_bytes()))
    return pool


def _short_name(full_name: str) -> str:
    return full_name.rpartition(".")[2]


# -- paths ---------------------------------------------------------------------------


class PathNode:
    """One field path (shared by every annotation: the samples are kept per annotation, keyed by node)."""

    __slots__ = ("parent", "key", "field_name", "type_name", "message", "fields", "children", "unknown", "cache")

    def __init__(
        self,
        parent: PathNode | None,
        key: tuple[int, str],
        field_name: str | None,
        type_name: str,
        message: str | None = None,
        fields: dict | None = None,
        make: Callable[[PathNode, int], PathNode | None] | None = None,
    ) -> None:
        self.parent = parent
        self.key = key  # trace_processor's identity of a path element: (field number, type name)
        self.field_name = field_name  # "#name"; None for the root
        self.type_name = type_name
        self.message = message  # a message field's resolved type (None: a leaf; "": not in the pool)
        self.fields = fields  # that message's fields in the pool
        # Field number -> child (None: unknown to the pool), made by `make` at its first occurrence; -number: a
        # message field that was not length-delimited.
        self.children: dict[int, PathNode | None] = Children(self, make) if make is not None else {}
        self.unknown: PathNode | None = None
        # TrackEvent nodes: encoding -> (its shape: an index in the analyzer's shapes, whether the packet goes
        # on), each encoding walked once.
        self.cache: dict[bytes, tuple[int, bool]] | None = {} if message == TRACK_EVENT_TYPE else None

    def path(self) -> str:
        parts: list[str] = []
        node: PathNode | None = self
        while node is not None:
            parts.append(node.type_name)
            if node.field_name is not None:
                parts.append(node.field_name)
            node = node.parent
        return ".".join(reversed(parts))


class Children(dict):
    """A message path's children by field number, each made on first use."""

    __slots__ = ("node", "make")

    def __init__(self, node: PathNode, make: Callable[[PathNode, int], PathNode | None]) -> None:
        super().__init__()
        self.node = node
        self.make = make

    def __missing__(self, number: int) -> PathNode | None:
        return self.make(self.node, number)


def _new_sample() -> list[int]:
    return [0, 0]  # size, count


def _value(data: bytes, pos: int, end: int, wire: int) -> tuple[int, int, int]:
    """(size, payload start, next position) of the value of a field whose tag ends at pos, as protozero reads it:
    size -1 if it is skipped (a payload beyond 256 MB) or cannot be read (next position `end`: the message ends)."""
    if wire == 0:
        value, npos = _varint(data, pos, end)
        if npos < 0:
            return -1, pos, end
        return (value.bit_length() + 6) // 7 or 1, pos, npos
    if wire == 2:
        size, start = _varint(data, pos, end)
        if start < 0 or size > end - start:
            return -1, pos, end
        return (size if size <= MAX_MESSAGE_LENGTH else -1), start, start + size
    if wire == 1 or wire == 5:
        size = 8 if wire == 1 else 4
        if pos + size > end:
            return -1, pos, end
        return size, pos, pos + size
    return -1, pos, end  # groups and invalid wire types


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """(value, next position) of the varint at pos, as protozero reads it (at most 10 bytes, the value's low
    64 bits); next position -1 if it does not end before `end`."""
    result = shift = 0
    for _ in range(10):
        if pos >= end:
            return 0, -1
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & MASK64, pos
        shift += 7
    return 0, -1


class Group:
    """The samples of one annotation: per path [size, count], and per shape (a TrackEvent encoding's samples) how
    many packets had it, added to the paths' later (ProtoContentAnalyzer.flush)."""

    __slots__ = ("samples", "shapes")

    def __init__(self) -> None:
        self.samples: dict[PathNode, list[int]] = defaultdict(_new_sample)
        self.shapes: dict[int, int] = defaultdict(int)


class ProtoContentAnalyzer:
    """One input's analysis (the host importer's; see the module doc)."""

    def __init__(self, importer) -> None:
        self.importer = importer
        self.stats = importer.stats
        self.pool = _base_pool()
        self.own_pool = False  # copied before the trace's declarations change it
        root_fields = self.pool[ROOT_TYPE]
        self.root = PathNode(None, (0, "TracePacket"), None, "TracePacket", ROOT_TYPE, root_fields, self._child)
        self.plain = Group()
        self.skipped = Group()
        self.events: dict[tuple, Group] = {}
        self.shapes: list[tuple] = []  # shape -> ((node, size, count), ...)
        self.shape_ids: dict[tuple, int] = {}  # the other way round: encodings with the same samples share one
        self.caches: list[dict[bytes, tuple[int, bool]]] = []  # the cached nodes' caches
        self.helper = False  # the split helper process: its track events' bytes only, no analysis of its own
        self.frames: list[tuple[bytes, int, bool]] = []  # packets being tokenized: (bytes, skips before, simple)
        self.current = b""  # the packet being tokenized (what the sorter's push attaches to a track event)

    # -- the tokenize side ---------------------------------------------------------
    def install(self) -> None:
        """Hooks into the importer: its packets come through packets(), the ones inside compressed_packets
        through tokenize(), and the track events it queues carry their packet."""
        importer = self.importer
        importer.tokenize = self.tokenize
        self.attach(importer.sorter)

    def attach(self, sorter) -> None:
        """Makes `sorter` append the current packet's bytes to each track event pushed to it."""
        push = type(sorter).push.__get__(sorter)

        def push_with_packet(ts: int, event, stream: int = 0) -> None:
            if stream and event[0] == EV_TRACK_EVENT:
                event += (self.current,)
            push(ts, event, stream)

        sorter.push = push_with_packet

    def become_helper(self, sorter) -> None:
        self.helper = True
        self.attach(sorter)

    def packets(self, reader) -> Iterator:
        """As ProtoReader.scanned(), each packet analyzed once the importer has tokenized it."""
        counts = self.stats.single  # SKIPPED_STAT's count (a single stat), read twice a packet
        for data in reader.packets():
            simple = scan_simple_track_event(data)
            if simple is None:
                self._begin(data, False)
                yield data
                self._end()
                continue
            # A track event alone (the common packet): analyzed when parsed, unless dropped for want of state.
            skips = counts.get(SKIPPED_STAT, 0)
            self.current = data
            yield simple
            if counts.get(SKIPPED_STAT, 0) != skips and not self.helper:
                self._analyze(data, self.skipped)

    def tokenize(self, data: bytes) -> None:
        """The importer's tokenize() for a packet inside another (compressed_packets)."""
        self._begin(data, scan_simple_track_event(data) is not None)
        type(self.importer).tokenize(self.importer, data)
        self._end()

    def _begin(self, data: bytes, simple: bool) -> None:
        self.frames.append((data, self.stats.get(SKIPPED_STAT), simple))
        self.current = data

    def _end(self) -> None:
        data, skips, simple = self.frames.pop()
        self.current = self.frames[-1][0] if self.frames else b""
        if self.helper:
            return
        skipped = self.stats.get(SKIPPED_STAT) > skips
        if simple:  # a track event alone, inside compressed_packets
            if skipped:
                self._analyze(data, self.skipped)
            return
        top = self._top_level(data)
        if top is None:
            return  # undecodable: trace_processor stops the import there
        fields, machine_id, seq_id, flags, descriptor = top
        if descriptor is not None:
            self._declare(descriptor)
        if machine_id and machine_id != self.importer.adopted:
            return  # another machine's reader
        if not fields.isdisjoint(EXCLUDED_FIELDS):
            return
        if flags & SEQ_NEEDS_INCREMENTAL_STATE:
            if not seq_id:
                return  # an error in trace_processor
            if skipped:
                self._analyze(data, self.skipped)
                return
        if F_TRACK_EVENT not in fields:
            self._analyze(data, self.plain)

    @staticmethod
    def _top_level(data: bytes) -> tuple | None:
        """(field numbers present, machine_id, trusted_packet_sequence_id, sequence_flags, extension_descriptor
        payload or None) of a packet; None if its fields do not parse."""
        fields: set[int] = set()
        machine_id = seq_id = flags = 0
        descriptor = None
        pos, end = 0, len(data)
        while pos < end:
            tag, pos = _varint(data, pos, end)
            if pos < 0 or pos >= end:
                return None
            number, wire = (tag >> 3) & 0xFFFFFFFF, tag & 7
            if number == 0:
                return None
            if wire == 0:
                value, pos = _varint(data, pos, end)
                if pos < 0:
                    return None
                if number == F_MACHINE_ID:
                    machine_id = value & 0xFFFFFFFF
                elif number == F_SEQ_ID:
                    seq_id = value & 0xFFFFFFFF
                elif number == F_SEQ_FLAGS:
                    flags = value & 0xFFFFFFFF
            elif wire == 2:
                length, pos = _varint(data, pos, end)
                if pos < 0 or length > end - pos:
                    return None
                if number == F_EXTENSION_DESCRIPTOR:
                    descriptor = data[pos : pos + length]
                pos += length
            elif wire == 1 or wire == 5:
                pos += 8 if wire == 1 else 4
                if pos > end:
                    return None
            else:
                return None
            fields.add(number)
        return fields, machine_id, seq_id, flags, descriptor

    def _declare(self, payload: bytes) -> None:
        """An extension_descriptor packet: its FileDescriptorSet joins the pool from here on."""
        try:
            files = declared_files(pb.ExtensionDescriptor.FromString(payload))
        except DecodeError:
            return
        if not files:
            return
        if not self.own_pool:
            self.pool = {name: dict(fields) for name, fields in self.pool.items()}
            self.own_pool = True
        _PoolBuilder(self.pool).add_files(files)
        self.flush()  # encodings are walked again
        self._refresh(self.root)

    def _refresh(self, node: PathNode) -> None:
        """After the pool changed: nodes read their message's fields from it again, fields it did not know are
        looked up again, and TrackEvent encodings walked again."""
        if node.message:
            node.fields = self.pool.get(node.message)
        for number, child in list(node.children.items()):
            if child is None:
                del node.children[number]
            else:
                self._refresh(child)

    # -- the parse side ----------------------------------------------------------------
    def track_event(self, ev: tuple) -> None:
        """A track event reached TrackEventParser's import: its packet counts under (category, name)."""
        if len(ev) <= F_PACKET:
            return  # pushed without its packet (another machine's)
        key = (ev[F_CATEGORY], ev[F_NAME])
        group = self.events.get(key)
        if group is None:
            group = self.events[key] = Group()
        data = ev[F_PACKET]
        self._walk(self.root, data, 0, len(data), group.samples, group.shapes)

    # -- the walk ----------------------------------------------------------------------
    def _analyze(self, data: bytes, group: Group) -> None:
        self._walk(self.root, data, 0, len(data), group.samples, group.shapes)

    def flush(self) -> None:
        """Adds every group's shapes to its paths, and forgets the shapes and the encodings cached."""
        shapes = self.shapes
        for group in (self.plain, self.skipped, *self.events.values()):
            samples = group.samples
            for shape, times in group.shapes.items():
                for node, size, count in shapes[shape]:
                    sample = samples[node]
                    sample[0] += size * times
                    sample[1] += count * times
            group.shapes.clear()
        shapes.clear()
        self.shape_ids.clear()
        for cache in self.caches:
            cache.clear()

    def _shape(self, node: PathNode, cache: dict[bytes, tuple[int, bool]], payload: bytes) -> tuple[int, bool]:
        """Walks an encoding of a message whose encodings are cached (`cache`, node's): its shape and whether the
        packet goes on after it."""
        if len(self.shapes) >= SHAPES:
            self.flush()
        if not cache and all(c is not cache for c in self.caches):
            self.caches.append(cache)
        elif len(cache) >= CACHE_ENTRIES:
            cache.clear()
        samples: dict[PathNode, list[int]] = defaultdict(_new_sample)
        goes_on = self._walk(node, payload, 0, len(payload), samples, defaultdict(int))
        shape = tuple((n, s[0], s[1]) for n, s in samples.items())
        index = self.shape_ids.get(shape)
        if index is None:
            index = self.shape_ids[shape] = len(self.shapes)
            self.shapes.append(shape)
        found = cache[payload] = (index, goes_on)
        return found

    def _child(self, node: PathNode, number: int) -> PathNode | None:
        """The path of field `number` of node's message (None, remembered, if the pool does not name it)."""
        desc = node.fields.get(number) if node.fields is not None else None
        if desc is None:
            node.children[number] = None
            return None
        name, ftype, message = desc
        if ftype == TYPE_MESSAGE:
            fields = self.pool.get(message) if message else None
            type_name = _short_name(message) if message else ""
            child = PathNode(node, (number, type_name), "#" + name, type_name, message or "", fields, self._child)
        else:
            type_name = LEAF_TYPE_NAMES.get(ftype, "")
            child = PathNode(node, (number, type_name), "#" + name, type_name)
        node.children[number] = child
        return child

    def _message_leaf(self, node: PathNode, number: int, name: str | None) -> PathNode:
        """A message field not length-delimited on the wire: a leaf of type "message" (its own path)."""
        child = node.children.get(-number)
        if child is None:
            child = node.children[-number] = PathNode(node, (number, "message"), name, "message")
        return child

    def _unknown(self, node: PathNode) -> PathNode:
        if node.unknown is None:
            node.unknown = PathNode(node, (UNKNOWN_FIELD, ""), "#unknown", "")
        return node.unknown

    def _walk(self, node: PathNode, data: bytes, pos: int, end: int, group: dict, shapes: dict) -> bool:
        """Adds the samples of the message data[pos:end] at `node` to `group` (a Group's samples; the shapes of its
        cached messages to `shapes`); False if the packet ends here (a message type the pool lacks)."""
        stack: list[tuple] = []
        children = node.children
        overhead = end - pos
        unknown = 0
        while True:
            if pos >= end:  # the message's end: its unknown fields' sample, and its own (its overhead)
                if unknown:
                    sample = group[self._unknown(node)]
                    sample[0] += unknown
                    sample[1] += 1
                sample = group[node]
                sample[0] += overhead
                sample[1] += 1
                if not stack:
                    return True
                node, pos, end, overhead, unknown = stack.pop()
                children = node.children
                continue
            # One field, as protozero's ParseOneField.
            tag = data[pos]
            if tag >= 0x80:
                tag, pos = _varint(data, pos, end)
            else:
                pos += 1
            number = (tag >> 3) & 0xFFFFFFFF
            if number == 0 or not 0 <= pos < end:
                pos = end  # a field protozero cannot read ends the message: the rest is overhead
                continue
            wire = tag & 7
            if wire == 0 and data[pos] < 0x80:
                size = 1
                pos += 1
            elif wire == 2 and data[pos] < end - pos and data[pos] < 0x80:
                size = data[pos]
                start = pos + 1
                pos = start + size
            elif wire == 0:
                value, pos = _varint(data, pos, end)
                size = ((value.bit_length() + 6) // 7 or 1) if pos > 0 else -1
                if pos < 0:
                    pos = end
            else:
                size, start, pos = _value(data, pos, end, wire)
            if number > MAX_FIELD_ID or size < 0:
                continue  # skipped by protozero (or unreadable): left in the overhead
            overhead -= size
            child = children[number]
            if child is None:
                unknown += size
                continue
            if child.message is not None:
                if wire == 2:
                    if child.fields is None:
                        return False  # "Cannot find descriptor": trace_processor stops the packet
                    if child.cache is not None:
                        if not self._cached(child, child.cache, data[start:pos], shapes):
                            return False
                        continue
                    stack.append((node, pos, end, overhead, unknown))
                    node, pos, end, overhead, unknown = child, start, pos, size, 0
                    children = node.children
                    continue
                child = self._message_leaf(node, number, child.field_name)
            sample = group[child]
            sample[0] += size
            sample[1] += 1

    def _cached(self, node: PathNode, cache: dict[bytes, tuple[int, bool]], payload: bytes, shapes: dict) -> bool:
        """A message whose encodings are cached (TrackEvent): its shape counted once more; False if the packet
        ends in it."""
        found = cache.get(payload)
        if found is None:
            found = self._shape(node, cache, payload)
        shapes[found[0]] += 1
        return found[1]

    # -- the tables ----------------------------------------------------------------------
    def finish(self) -> None:
        """Writes the two tables (and each annotation's arg set), as trace_processor's OnEventsFullyExtracted."""
        storage = self.importer.trace.storage
        self.flush()
        groups: list[tuple[list, Group]] = [([], self.plain)]
        for (category, name), group in sorted(
            self.events.items(), key=lambda item: tuple((v is not None, v or "") for v in item[0])
        ):
            groups.append(
                (
                    [
                        ("event.category", "event.category", "string", category),
                        ("event.name", "event.name", "string", name),
                    ],
                    group,
                )
            )
        groups.append(([("skipped_packet", "skipped_packet", "string", "invalid_incremental_state")], self.skipped))
        for args, group in groups:
            if group.samples:
                self._write_group(storage, args, group.samples)
        self.plain, self.skipped, self.events = Group(), Group(), {}

    def _write_group(self, storage, args: list, group: dict) -> None:
        used = set()  # nodes with samples and their ancestors: the paths trace_processor creates
        for node in group:
            while node is not None and node not in used:
                used.add(node)
                node = node.parent
        insert = storage.insert
        arg_set_id = storage.arg_set(args)
        pending: list[tuple[PathNode, int | None]] = [(self.root, None)]
        while pending:
            node, parent_id = pending.pop()
            path_id = insert(
                "experimental_proto_path",
                (parent_id, node.type_name, node.field_name, arg_set_id if parent_id is None else None),
            )
            sample = group.get(node)
            if sample is not None:
                insert("experimental_proto_content", (node.path(), path_id, sample[0], sample[0], sample[1]))
            kids = [c for c in node.children.values() if c is not None and c in used]
            if node.unknown is not None and node.unknown in used:
                kids.append(node.unknown)
            kids.sort(key=lambda c: c.key, reverse=True)  # popped in (field number, type name) order
            pending.extend((c, path_id) for c in kids)
