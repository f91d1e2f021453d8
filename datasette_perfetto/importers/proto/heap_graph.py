"""Java heap dumps (ART's HeapGraph packets, TracePacket field 56) → heap_graph,
heap_graph_object, heap_graph_class, heap_graph_reference, and the dominator tree
with retained sizes (heap_graph_dominator).

A dump spans several packets on one sequence (`continued`, with consecutive
`index`); objects, types, field and location names are interned per dump. As in
trace_processor's HeapGraphTracker, object and class ids are given on first
mention; the dump's rows stay in memory until its last packet, when types,
field names, reachability, superclasses and native sizes are resolved and
everything is written.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError

from ..common.values import text
from .deobfuscation import Mapping, package_from_location
from .dominators import dominator_tree
from .private_messages import message_classes

HEAP_GRAPH_FIELD = 56  # TracePacket.heap_graph (an extension the perfetto package does not carry)

ROOT_TYPES = (
    "ROOT_UNKNOWN",
    "ROOT_JNI_GLOBAL",
    "ROOT_JNI_LOCAL",
    "ROOT_JAVA_FRAME",
    "ROOT_NATIVE_STACK",
    "ROOT_STICKY_CLASS",
    "ROOT_THREAD_BLOCK",
    "ROOT_MONITOR_USED",
    "ROOT_THREAD_OBJECT",
    "ROOT_INTERNED_STRING",
    "ROOT_FINALIZING",
    "ROOT_DEBUGGER",
    "ROOT_REFERENCE_CLEANUP",
    "ROOT_VM_INTERNAL",
    "ROOT_JNI_MONITOR",
)
ROOT_VM_INTERNAL = 13
# A root of several kinds is reported as the first of these it has, else as the kind first seen.
ROOT_PRECEDENCE = ("ROOT_STICKY_CLASS", "ROOT_JNI_GLOBAL", "ROOT_JNI_LOCAL")
TYPE_KINDS = (
    "KIND_UNKNOWN",
    "KIND_NORMAL",
    "KIND_NOREFERENCES",
    "KIND_STRING",
    "KIND_ARRAY",
    "KIND_CLASS",
    "KIND_CLASSLOADER",
    "KIND_DEXCACHE",
    "KIND_SOFT_REFERENCE",
    "KIND_WEAK_REFERENCE",
    "KIND_FINALIZER_REFERENCE",
    "KIND_PHANTOM_REFERENCE",
)
KIND_NOREFERENCES, KIND_STRING, KIND_ARRAY = 2, 3, 4
# References whose referent the GC does not keep alive.
WEAK_KINDS = frozenset(("KIND_WEAK_REFERENCE", "KIND_FINALIZER_REFERENCE", "KIND_PHANTOM_REFERENCE"))
HEAP_TYPES = ("HEAP_TYPE_UNKNOWN", "HEAP_TYPE_APP", "HEAP_TYPE_ZYGOTE", "HEAP_TYPE_BOOT_IMAGE")
HEAP_TYPE_ZYGOTE, HEAP_TYPE_BOOT_IMAGE = 2, 3

REFERENT = "java.lang.ref.Reference.referent"
SUPERCLASS_FIELD = "java.lang.Class.superClass"
CLEANER_CLASS = "sun.misc.Cleaner"
CLEANER_THUNK = "sun.misc.Cleaner.thunk"
CLEANER_NEXT = "sun.misc.Cleaner.next"
THUNK_THIS0 = "libcore.util.NativeAllocationRegistry$CleanerThunk.this$0"
# Bitmap fields ART copies into the object: (proto field, Java field, primitive type).
BITMAP_FIELDS = (
    ("bitmap_id_field", "android.graphics.Bitmap.mId", "long"),
    ("bitmap_source_id_field", "android.graphics.Bitmap.mSourceId", "long"),
    ("bitmap_width_field", "android.graphics.Bitmap.mWidth", "int"),
    ("bitmap_height_field", "android.graphics.Bitmap.mHeight", "int"),
)


# HeapGraph and its parts (protos/third_party/android/art/heap_graph.proto).
HeapGraph = message_classes(
    "datasette_perfetto.heap_graph",
    [
        ("InternedString", [("iid", 1, "uint64"), ("str", 2, "bytes")], None),
        ("HeapGraphRoot", [("object_ids", 1, "uint64", "repeated"), ("root_type", 2, "int32")], None),
        (
            "HeapGraphType",
            [
                ("id", 1, "uint64"),
                ("location_id", 2, "uint64"),
                ("class_name", 3, "bytes"),
                ("object_size", 4, "uint64"),
                ("superclass_id", 5, "uint64"),
                ("reference_field_id", 6, "uint64", "repeated"),
                ("kind", 7, "int32"),
                ("classloader_id", 8, "uint64"),
            ],
            None,
        ),
        (
            "HeapGraphObject",
            [
                ("id", 1, "uint64"),
                ("id_delta", 7, "uint64"),
                ("type_id", 2, "uint64"),
                ("self_size", 3, "uint64"),
                ("reference_field_id_base", 6, "uint64"),
                ("reference_field_id", 4, "uint64", "repeated"),
                ("reference_object_id", 5, "uint64", "repeated"),
                ("heap_type_delta", 9, "int32"),
                ("runtime_internal_object_id", 10, "uint64", "repeated"),
                ("native_allocation_registry_size_field", 8, "int64"),
                ("bitmap_id_field", 11, "int64"),
                ("bitmap_source_id_field", 12, "int64"),
                ("bitmap_width_field", 13, "uint32"),
                ("bitmap_height_field", 14, "uint32"),
            ],
            None,
        ),
        (
            "HeapGraph",
            [
                ("pid", 1, "int32"),
                ("heap_bytes_allocated", 10, "int64"),
                ("objects", 2, "HeapGraphObject", "repeated"),
                ("roots", 7, "HeapGraphRoot", "repeated"),
                ("types", 9, "HeapGraphType", "repeated"),
                ("field_names", 4, "InternedString", "repeated"),
                ("location_names", 8, "InternedString", "repeated"),
                ("continued", 5, "bool"),
                ("index", 6, "uint64"),
            ],
            None,
        ),
    ],
)["HeapGraph"]


def normalize_type(name: str) -> tuple[str, bool, int]:
    """(base name, is the static class object `java.lang.Class<...>`, number of trailing `[]`)."""
    is_static = name.startswith("java.lang.Class<") and name.endswith(">")
    if is_static:
        name = name[len("java.lang.Class<") : -1]
    arrays = 0
    while name.endswith("[]" * (arrays + 1)):
        arrays += 1
    return (name[: len(name) - 2 * arrays] if arrays else name), is_static, arrays


class _Dump:
    """One heap dump being assembled (trace_processor's per-sequence state)."""

    def __init__(self) -> None:
        self.upid: int | None = None
        self.ts: int | None = None
        self.prev_index: int | None = None
        self.truncated = False
        self.heap_size: int | None = None
        self.last_object_id = 0
        self.last_heap_type = 0
        self.object_rows: dict[int, int] = {}  # producer object id -> row id
        self.type_rows: dict[int, int] = {}  # producer type id -> class row id
        # Per object row id: [self_size, type row id, reference_set_id, heap_type, native_allocation_size]
        self.objects: dict[int, list] = {}
        # Reference rows: [id, reference_set_id, owner row, owned row or None, field name id or a name, deferred]
        self.references: list[list] = []
        self.refs_by_owner: dict[int, tuple[int, int]] = {}  # owner row -> (first index, count) in references
        self.types: dict[
            int, tuple
        ] = {}  # producer type id -> (name, location_id, size, field ids, super, loader, kind)
        self.field_names: dict[int, tuple[str, str | None]] = {}
        self.location_names: dict[int, str] = {}
        self.roots: list[tuple[int, list]] = []
        self.vm_internal_roots: list[int] = []


class HeapGraphTracker:
    def __init__(self, trace) -> None:
        self.trace = trace
        self.storage = trace.storage
        self.stats = trace.stats
        self.dumps: dict[int, _Dump] = {}  # sequence id -> dump in progress
        self.graphs: dict[tuple, list] = {}  # (upid, ts) -> heap_graph row [id, ts, upid, reason, size, truncated]
        self.extra_graphs: list[list] = []
        # (package or None, normalized class name) -> [(class row id, class name)], for deobfuscation
        self.class_rows: dict[tuple[str | None, str], list[tuple[int, str]]] = {}

    def _graph(self, upid: int, ts: int) -> list:
        row = self.graphs.get((upid, ts))
        if row is None:
            row = self.graphs[(upid, ts)] = [self.storage.reserve_id("heap_graph"), ts, upid, None, None, 0]
        return row

    def new_graph(self, upid: int, ts: int, dump_reason: str | None) -> int:
        """A heap_graph row announced before (or without) the dump's objects; the dump fills it in."""
        row = [self.storage.reserve_id("heap_graph"), ts, upid, dump_reason, None, 0]
        if (upid, ts) in self.graphs:
            self.extra_graphs.append(row)  # a second announcement at the same time gets its own row
        else:
            self.graphs[(upid, ts)] = row
        return row[0]

    def parse(self, ts: int, seq_id: int, raw: bytes) -> None:
        try:
            hg = HeapGraph.FromString(raw)
        except DecodeError:
            self.stats.inc("heap_graph_malformed_packet", idx=0)
            return
        upid = self.trace.processes.get_or_create_process(hg.pid)
        dump = self.dumps.get(seq_id)
        if dump is None:
            dump = self.dumps[seq_id] = _Dump()
        index = hg.index
        if (dump.prev_index is None and index != 0) or (dump.prev_index is not None and dump.prev_index + 1 != index):
            dump.truncated = True
            self.stats.inc("heap_graph_missing_packet", idx=dump.upid or 0)
        dump.prev_index = index
        if hg.HasField("heap_bytes_allocated"):
            dump.heap_size = hg.heap_bytes_allocated
        if (dump.upid is not None and dump.upid != upid) or (dump.ts is not None and dump.ts != ts):
            # A new dump on a sequence whose previous one never finished.
            self.stats.inc("heap_graph_non_finalized_graph")
        else:
            dump.upid, dump.ts = upid, ts
            for obj in hg.objects:
                if len(obj.reference_field_id) and len(obj.reference_field_id) != len(obj.reference_object_id):
                    self.stats.inc("heap_graph_malformed_packet", idx=upid)
                    continue
                self._add_object(dump, obj)
            for root in hg.roots:
                kind = root.root_type if 0 <= root.root_type < len(ROOT_TYPES) else 0
                dump.roots.append((kind, list(root.object_ids)))
        for t in hg.types:
            dump.types[t.id] = (
                text(t.class_name),
                t.location_id if t.HasField("location_id") else None,
                t.object_size,
                tuple(t.reference_field_id),
                t.superclass_id,
                t.classloader_id,
                t.kind if 0 <= t.kind < len(TYPE_KINDS) else 0,
            )
        for e in hg.field_names:
            name = text(e.str)
            type_name, _, field = name.partition(" ")
            dump.field_names[e.iid] = (field, type_name or None) if field else (name, None)
        for e in hg.location_names:
            dump.location_names[e.iid] = text(e.str)
        if not hg.continued:
            self.finalize(seq_id)

    def _object_row(self, dump: _Dump, object_id: int) -> int:
        row = dump.object_rows.get(object_id)
        if row is None:
            row = dump.object_rows[object_id] = self.storage.reserve_id("heap_graph_object")
            dump.objects[row] = [-1, None, None, None, None, None]
        return row

    def _type_row(self, dump: _Dump, type_id: int) -> int:
        row = dump.type_rows.get(type_id)
        if row is None:
            row = dump.type_rows[type_id] = self.storage.reserve_id("heap_graph_class")
        return row

    def _add_object(self, dump: _Dump, obj) -> None:
        object_id = dump.last_object_id + obj.id_delta if obj.id_delta else obj.id
        heap_type = obj.heap_type_delta if obj.HasField("heap_type_delta") else dump.last_heap_type
        dump.last_object_id, dump.last_heap_type = object_id, heap_type
        row = self._object_row(dump, object_id)
        fields = dump.objects[row]
        fields[0] = obj.self_size
        fields[1] = self._type_row(dump, obj.type_id)
        if heap_type:
            fields[3] = HEAP_TYPES[heap_type] if heap_type < len(HEAP_TYPES) else None
            if heap_type in (HEAP_TYPE_ZYGOTE, HEAP_TYPE_BOOT_IMAGE):
                dump.vm_internal_roots.append(object_id)
        if obj.HasField("native_allocation_registry_size_field"):
            fields[4] = obj.native_allocation_registry_size_field
        if (
            obj.HasField("bitmap_id_field")
            or obj.HasField("bitmap_source_id_field")
            or obj.HasField("bitmap_width_field")
            or obj.HasField("bitmap_height_field")
        ):
            fields[5] = self._bitmap_fields(obj)
        base = obj.reference_field_id_base
        field_ids = obj.reference_field_id
        referred = obj.reference_object_id
        internal = obj.runtime_internal_object_id
        if not referred and not internal:
            return
        set_id = self.storage.next_id["heap_graph_reference"]
        first = len(dump.references)
        for i, owned in enumerate(referred):
            owned_row = self._object_row(dump, owned + base) if owned else None
            field = field_ids[i] if field_ids else None
            dump.references.append(
                [self.storage.reserve_id("heap_graph_reference"), set_id, row, owned_row, field, not field_ids]
            )
        for owned in internal:
            dump.references.append(
                [
                    self.storage.reserve_id("heap_graph_reference"),
                    set_id,
                    row,
                    self._object_row(dump, owned),
                    "runtimeInternalObjects",
                    False,
                ]
            )
        fields[2] = set_id
        dump.refs_by_owner[row] = (first, len(dump.references) - first)

    def _bitmap_fields(self, obj) -> int:
        """A Bitmap's fields as primitive rows of one field set, and the object data row linking them."""
        storage = self.storage
        field_set_id = storage.next_id["heap_graph_primitive"]
        for proto_field, name, type in BITMAP_FIELDS:
            if obj.HasField(proto_field):
                value = getattr(obj, proto_field)
                long_value, int_value = (value, None) if type == "long" else (None, value)
                storage.write(
                    "heap_graph_primitive",
                    (
                        storage.reserve_id("heap_graph_primitive"),
                        field_set_id,
                        name,
                        type,
                        None,
                        None,
                        None,
                        None,
                        int_value,
                        long_value,
                        None,
                        None,
                    ),
                )
        data_id = storage.reserve_id("heap_graph_object_data")
        storage.write("heap_graph_object_data", (data_id, field_set_id, None, None, None, None, None))
        return data_id

    def finalize(self, seq_id: int) -> None:
        dump = self.dumps.pop(seq_id)
        upid, ts = dump.upid, dump.ts
        if upid is None or ts is None:  # set together
            return
        classes, class_sizes = self._classes(dump)
        malformed = _fill_object_sizes(dump, class_sizes)
        malformed = self._name_reference_fields(dump) or malformed
        if malformed:
            self.stats.inc("heap_graph_malformed_packet", idx=dump.upid)
        object_rows = sorted(dump.objects)
        root_type, dominators = _dominators(dump, classes, object_rows)
        self._superclasses(dump, classes, dump.references)
        native = self._native_sizes(dump, classes, dump.references)
        self._write(dump, classes, object_rows, root_type, dominators, native)
        graph = self._graph(upid, ts)
        if dump.heap_size is not None:
            graph[4] = dump.heap_size
        if dump.truncated:
            graph[5] = 1

    def _classes(self, dump: _Dump) -> tuple[dict[int, list], dict[int, int]]:
        """Class row -> [name, location, superclass, classloader, kind], and class row -> instance size."""
        classes: dict[int, list] = {}
        sizes: dict[int, int] = {}
        for type_id, (name, location_id, size, _field_ids, _super_id, loader_id, kind) in dump.types.items():
            class_row = self._type_row(dump, type_id)
            location = None
            if location_id is not None:
                location = dump.location_names.get(location_id)
                if location is None:
                    self.stats.inc("heap_graph_invalid_string_id", idx=dump.upid)
            loader = self._object_row(dump, loader_id) if loader_id else None
            classes[class_row] = [name, location, None, loader, TYPE_KINDS[kind]]
            sizes[class_row] = size
            # Deobfuscation mappings name a package: the class' comes from where it was loaded.
            package = package_from_location(location, self.stats) if location is not None else None
            self.class_rows.setdefault((package, normalize_type(name)[0]), []).append((class_row, name))
        return classes, sizes

    def _name_reference_fields(self, dump: _Dump) -> bool:
        """References without field ids take their type's field names in order, walking up
        the superclasses; ids become (name, type) pairs. True if the dump is malformed."""
        malformed = False
        refs = dump.references
        type_by_row = {row: type_id for type_id, row in dump.type_rows.items()}
        for owner, (first, count) in dump.refs_by_owner.items():
            if not refs[first][5]:
                continue
            type_id = type_by_row.get(dump.objects[owner][1])
            t = dump.types.get(type_id) if type_id is not None else None
            if t is None:
                malformed = True
                continue
            if t[6] not in (KIND_NOREFERENCES, KIND_ARRAY, KIND_STRING):
                self._name_by_position(dump, t, refs[first : first + count])
        for ref in refs:
            field = ref[4]
            if isinstance(field, int):
                ref[4] = dump.field_names.get(field)  # an unknown id leaves the name NULL
            elif isinstance(field, str):
                ref[4] = (field, None)
        return malformed

    def _name_by_position(self, dump: _Dump, t: tuple | None, owner_refs: list) -> None:
        offset = 0
        for ref in owner_refs:
            if ref[4] == "runtimeInternalObjects":
                continue
            while t is not None and offset >= len(t[3]):
                offset -= len(t[3])
                t = dump.types.get(t[4]) if t[4] else None
                if t is None:
                    self.stats.inc("heap_graph_malformed_packet", idx=dump.upid)
            if t is None:
                break
            ref[4] = t[3][offset]
            offset += 1

    def _write(
        self,
        dump: _Dump,
        classes: dict[int, list],
        object_rows: list[int],
        root_type: dict[int, str],
        dominators: list[tuple[int, int | None, int, int]],
        native: dict[int, int],
    ) -> None:
        storage = self.storage
        reachable = bytearray(len(object_rows))
        for node, _idom, _size, _count in dominators:
            reachable[node] = 1
        for class_row in sorted(set(dump.type_rows.values())):
            name, location, superclass, loader, kind = classes.get(class_row, ["", None, None, None, "KIND_UNKNOWN"])
            storage.write("heap_graph_class", (class_row, name, None, location, superclass, loader, kind))
        for i, row in enumerate(object_rows):
            self_size, type_row, set_id, heap_type, _nar, data_id = dump.objects[row]
            storage.write(
                "heap_graph_object",
                (
                    row,
                    dump.upid,
                    dump.ts,
                    self_size,
                    native.get(row, 0),
                    set_id,
                    reachable[i],
                    heap_type,
                    type_row,
                    root_type.get(row),
                    -1,
                    data_id,
                ),
            )
        for ref_id, set_id, owner, owned, field, _deferred in dump.references:
            storage.write(
                "heap_graph_reference",
                (ref_id, set_id, owner, owned, field[0] if field else None, field[1] if field else None, None),
            )
        for node, idom, retained_size, retained_count in dominators:
            storage.write(
                "heap_graph_dominator",
                (object_rows[node], None if idom is None else object_rows[idom], retained_size, retained_count),
            )

    @staticmethod
    def _field_target(refs: list, refs_by_owner: dict, owner: int, field_name: str) -> int | None:
        span = refs_by_owner.get(owner)
        if span is None:
            return None
        first, count = span
        for ref in refs[first : first + count]:
            if ref[4] is not None and ref[4][0] == field_name:
                return ref[3]
        return None

    def _superclasses(self, dump: _Dump, classes: dict, refs: list) -> None:
        """A class' superclass comes from its class object's `superClass` field."""
        superclass_of: dict[tuple, tuple] = {}
        for row, fields in dump.objects.items():
            cls = classes.get(fields[1])
            if cls is None:
                continue
            name, is_static, arrays = normalize_type(cls[0])
            if not is_static or arrays:
                continue
            target = self._field_target(refs, dump.refs_by_owner, row, SUPERCLASS_FIELD)
            if target is None:
                continue
            super_cls = classes.get(dump.objects[target][1])
            if super_cls is None:
                continue
            superclass_of[(name, cls[1])] = (normalize_type(super_cls[0])[0], super_cls[1])
        by_descriptor: dict[tuple, int] = {}
        for class_row in sorted(classes):
            by_descriptor.setdefault((classes[class_row][0], classes[class_row][1]), class_row)
        for cls in classes.values():
            name, is_static, arrays = normalize_type(cls[0])
            if is_static or arrays:
                continue
            parent = superclass_of.get((name, cls[1]))
            if parent is not None and parent in by_descriptor:
                cls[2] = by_descriptor[parent]

    def _native_sizes(self, dump: _Dump, classes: dict, refs: list) -> dict[int, int]:
        """Native bytes a Cleaner's referent owns, from its NativeAllocationRegistry's size."""
        native: dict[int, int] = {}
        for row, fields in dump.objects.items():
            cls = classes.get(fields[1])
            if cls is None or cls[0] != CLEANER_CLASS:
                continue
            referent = self._field_target(refs, dump.refs_by_owner, row, REFERENT)
            thunk = self._field_target(refs, dump.refs_by_owner, row, CLEANER_THUNK)
            if referent is None or thunk is None:
                continue
            if self._field_target(refs, dump.refs_by_owner, row, CLEANER_NEXT) == row:
                continue  # a Cleaner removed from its queue: already run
            registry = self._field_target(refs, dump.refs_by_owner, thunk, THUNK_THIS0)
            if registry is None:
                continue
            size = dump.objects[registry][4]
            if size is None:
                continue
            native[referent] = native.get(referent, 0) + (size & ~1)  # the low bit flags malloc'ed memory
        return native

    def finish(self) -> None:
        if self.dumps:
            self.stats.inc("heap_graph_non_finalized_graph")
            for seq_id in list(self.dumps):
                self.finalize(seq_id)
        for row in sorted([*self.graphs.values(), *self.extra_graphs]):
            self.storage.write("heap_graph", tuple(row))
        self.graphs.clear()
        self.extra_graphs.clear()

    def deobfuscate(self, mappings: list[Mapping]) -> None:
        """Deobfuscated class and field names from the trace's DeobfuscationMapping packets
        (later mappings win), once every dump is written. A class is renamed by a mapping of
        its package, or by any mapping when its package is unknown (no class location)."""
        class_names: dict[int, str] = {}
        field_names: dict[str, str] = {}
        for mapping in mappings:
            package = mapping.package
            for cls in mapping.classes:
                obfuscated = cls.obfuscated
                for key in ((None, obfuscated), (package, obfuscated)) if package else ((None, obfuscated),):
                    for class_row, name in self.class_rows.get(key, ()):
                        _, is_static, arrays = normalize_type(name)
                        full = cls.deobfuscated + "[]" * arrays
                        class_names[class_row] = f"java.lang.Class<{full}>" if is_static else full
                for member, qualified in cls.members:
                    field_names[f"{obfuscated}.{member}"] = qualified
        storage = self.storage
        if class_names:
            storage.executemany(
                "UPDATE heap_graph_class SET deobfuscated_name = ? WHERE id = ?",
                [(name, row) for row, name in sorted(class_names.items())],
            )
        if field_names:
            storage.execute("CREATE TEMP TABLE _deobfuscated_fields (obfuscated TEXT PRIMARY KEY, deobfuscated TEXT)")
            storage.executemany("INSERT INTO _deobfuscated_fields VALUES (?, ?)", list(field_names.items()))
            storage.execute(
                """UPDATE heap_graph_reference SET deobfuscated_field_name =
                       (SELECT deobfuscated FROM _deobfuscated_fields WHERE obfuscated = field_name)
                   WHERE field_name IN (SELECT obfuscated FROM _deobfuscated_fields)"""
            )
            storage.execute("DROP TABLE _deobfuscated_fields")


def _rank(root_type: str) -> int:
    return ROOT_PRECEDENCE.index(root_type) if root_type in ROOT_PRECEDENCE else len(ROOT_PRECEDENCE)


def _fill_object_sizes(dump: _Dump, class_sizes: dict[int, int]) -> bool:
    """Objects without a size take their type's; True if a type is missing."""
    malformed = False
    for fields in dump.objects.values():
        if fields[0] == 0 and fields[1] is not None:
            if fields[1] in class_sizes:
                fields[0] = class_sizes[fields[1]]
            else:
                malformed = True
    return malformed


def _dominators(
    dump: _Dump, classes: dict[int, list], object_rows: list[int]
) -> tuple[dict[int, str], list[tuple[int, int | None, int, int]]]:
    """Each root object's root type, and the dominator tree of what the roots reach,
    ignoring what weak/finalizer/phantom references refer to (nodes: positions in object_rows)."""
    refs = dump.references
    position = {row: i for i, row in enumerate(object_rows)}
    children: list[list[int]] = [[] for _ in object_rows]
    for owner, (first, count) in dump.refs_by_owner.items():
        kind = classes.get(dump.objects[owner][1], (None,) * 5)[4]
        weak = kind in WEAK_KINDS
        out = set()
        for ref in refs[first : first + count]:
            if ref[3] is None or (weak and ref[4] is not None and ref[4][0] == REFERENT):
                continue
            out.add(position[ref[3]])
        children[position[owner]] = sorted(out)
    root_type: dict[int, str] = {}
    ordered_roots: list[int] = []
    for kind, ids in dump.roots + [(ROOT_VM_INTERNAL, dump.vm_internal_roots)]:
        name = ROOT_TYPES[kind]
        for object_id in ids:
            row = dump.object_rows.get(object_id)
            if row is None:
                continue
            current = root_type.get(row)
            if current is None:
                root_type[row] = name
                ordered_roots.append(position[row])
            elif _rank(name) < _rank(current):
                root_type[row] = name
    sizes = [max(dump.objects[row][0], 0) for row in object_rows]
    return root_type, dominator_tree(len(object_rows), ordered_roots, children, sizes)
