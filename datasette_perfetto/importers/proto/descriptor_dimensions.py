"""TrackDescriptor.dimensions (RFC 0039) in proto traces: the interned dimension strings
of a sequence, and each descriptor's declarations, resolved from their iids while the
sequence state is at hand (tokenize time) and handed to the dimension tracker once
every track exists."""

from __future__ import annotations

from ...stats import Stats
from ...trackers.dimension_tracker import LABEL_TEMPLATES, DimensionDeclarations, Value, same_value
from .dimensions_pb2 import InternedDimensionData, TrackDescriptorDimensions

# InternedData fields of the three dimension namespaces (see protos/dimensions.proto).
I_DIMENSION_NAMES, I_DIMENSION_STRING_VALUES, I_DIMENSION_DISPLAY_NAMES = 52, 53, 54
INTERNED_DIMENSION_FIELDS = frozenset((I_DIMENSION_NAMES, I_DIMENSION_STRING_VALUES, I_DIMENSION_DISPLAY_NAMES))
TRACK_DESCRIPTOR_DIMENSIONS = 21


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def intern_dimension_strings(interned_bytes: bytes, tables: dict, stats: Stats) -> None:
    """Adds the dimension strings of an InternedData (its bytes) to a sequence's interned tables."""
    data = InternedDimensionData.FromString(interned_bytes)
    for number, entries in (
        (I_DIMENSION_NAMES, data.dimension_names),
        (I_DIMENSION_STRING_VALUES, data.dimension_string_values),
        (I_DIMENSION_DISPLAY_NAMES, data.dimension_display_names),
    ):
        if not entries:
            continue
        table = tables.setdefault(number, {})
        for e in entries:
            if not e.iid:
                stats.inc("interned_data_tokenizer_errors")
                continue
            table[e.iid] = _text(e.str)


class DescriptorDimensions:
    """Dimensions declared by TrackDescriptors, by descriptor uuid, resolved from
    their interned iids while the sequence state is at hand (tokenize time)."""

    def __init__(self, stats: Stats) -> None:
        self.stats = stats
        # uuid -> name -> (value, display name); (None, None) for a reserved name, ignored.
        self.by_uuid: dict[int, dict[str, tuple[Value | None, str | None]]] = {}

    def read(self, uuid: int, descriptor_bytes: bytes, tables: dict) -> None:
        """Declarations in a TrackDescriptor (its bytes); `tables` is the sequence's interned data."""
        stats = self.stats
        names = tables.get(I_DIMENSION_NAMES, {})
        values = tables.get(I_DIMENSION_STRING_VALUES, {})
        displays = tables.get(I_DIMENSION_DISPLAY_NAMES, {})
        for dim in TrackDescriptorDimensions.FromString(descriptor_bytes).dimensions:
            name = names.get(dim.name_iid) if dim.name_iid else None
            kind = dim.WhichOneof("value")
            if kind == "int_value":
                value: Value | None = dim.int_value
            elif kind == "string_value_iid":
                value = values.get(dim.string_value_iid)
            else:
                value = None
            if not dim.name_iid or kind is None:
                stats.inc("dimension_invalid_declaration")  # no name or no value: nothing to declare
                continue
            if name is None or value is None:
                stats.inc("dimension_unknown_iid")
                continue
            display = None
            if dim.HasField("display_name_iid"):
                display = displays.get(dim.display_name_iid)
                if display is None:
                    stats.inc("dimension_unknown_iid")  # the value still applies, unlabelled
            self._declare(uuid, name, value, display)

    def _declare(self, uuid: int, name: str, value: Value, display: str | None) -> None:
        declared = self.by_uuid.setdefault(uuid, {})
        previous = declared.get(name)
        if previous is None:
            if name in LABEL_TEMPLATES:
                self.stats.inc("dimension_reserved_name")
                declared[name] = (None, None)  # remembered so a re-emitted descriptor is not counted again
                return
            declared[name] = (value, display)
        elif previous[0] is None:
            return
        elif not same_value(previous[0], value):
            # Descriptors are re-emitted (after each incremental-state reset): the first value stands.
            self.stats.inc("dimension_conflicting_value")
        elif previous[1] is None and display is not None:
            declared[name] = (value, display)

    def attach(self, parser, declarations: DimensionDeclarations) -> None:
        """Turns the per-uuid declarations into process, thread and track-set
        declarations once every track exists (the track-event parser's finish)."""
        if not self.by_uuid:
            return
        children: dict[int, list[int]] = {}
        for uuid, r in parser.reservations.items():
            if r.parent_uuid and r.parent_uuid != uuid:
                children.setdefault(r.parent_uuid, []).append(uuid)
        for uuid in sorted(self.by_uuid):
            declared = [(n, v, d) for n, (v, d) in self.by_uuid[uuid].items() if v is not None]
            if not declared:
                continue
            resolved = parser.resolve(uuid)
            if resolved is None:
                continue  # an invalid descriptor (loop, too deep): counted when resolved
            scope, owner, is_root = resolved
            if is_root:
                track_id = parser.descriptor_track_id(uuid)
                for name, value, display in declared:
                    declarations.on_owner(scope, owner, name, value, display, track_id)
                continue
            own = parser.tracks_of_descriptor(uuid)
            if not own:
                continue  # nothing on this track or below it
            subtree = set(own)
            depth = _depth(parser.reservations, uuid)
            stack, seen = list(children.get(uuid, ())), {uuid}
            while stack:
                child = stack.pop()
                if child in seen:
                    continue
                seen.add(child)
                subtree.update(parser.tracks_of_descriptor(child))
                stack.extend(children.get(child, ()))
            for name, value, display in declared:
                declarations.on_tracks(sorted(subtree), depth, name, value, display, min(own))


def _depth(reservations: dict, uuid: int) -> int:
    depth, seen = 0, {uuid}
    r = reservations.get(uuid)
    while r is not None and r.parent_uuid and r.parent_uuid not in seen:
        seen.add(r.parent_uuid)
        depth += 1
        r = reservations.get(r.parent_uuid)
    return depth
