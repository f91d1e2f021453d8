"""Message classes for protos the perfetto package does not ship (ART's heap graph, SurfaceFlinger's
frame timeline extension), declared as field lists and built in a private descriptor pool, so they
never clash with the package's own definitions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass

_T = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    name: getattr(_T, f"TYPE_{name.upper()}")
    for name in ("int32", "int64", "uint32", "uint64", "bool", "float", "double", "string", "bytes")
}

# A field: (name, number, type) or (name, number, type, "repeated"); the type is a scalar type name or
# the name of another message of the same declaration.
Field = tuple
# A message: (name, fields, oneof): with a oneof name, every field of the message is in that oneof.
Message = tuple[str, Sequence[Field], str | None]


def message_classes(package: str, messages: Sequence[Message]) -> dict[str, Any]:
    """{message name: class} for the declared messages (proto2, every field optional unless repeated)."""
    file = descriptor_pb2.FileDescriptorProto(name=f"{package}.proto", package=package, syntax="proto2")
    for name, fields, oneof in messages:
        message = file.message_type.add(name=name)
        if oneof:
            message.oneof_decl.add(name=oneof)
        for field_name, number, field_type, *flags in fields:
            label = _T.LABEL_REPEATED if "repeated" in flags else _T.LABEL_OPTIONAL
            field = message.field.add(name=field_name, number=number, label=label)
            if field_type in _SCALARS:
                field.type = _SCALARS[field_type]
            else:
                field.type = _T.TYPE_MESSAGE
                field.type_name = f".{package}.{field_type}"
            if oneof:
                field.oneof_index = 0
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {name: GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}")) for name, _, _ in messages}


__all__ = ["message_classes"]
