"""Plain values as the tables store them: integer limits, proto strings that may not be UTF-8."""

from __future__ import annotations

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
UINT64_MASK = (1 << 64) - 1  # a value's uint64 bits: v & UINT64_MASK
UINT32_MAX = 0xFFFFFFFF


def text(value):
    """A proto string field as str. upb hands back bytes when a trace's string is
    not valid UTF-8; those keep every byte, escaped as \\xNN."""
    if type(value) is bytes:
        return value.decode("utf-8", "backslashreplace")
    return value


def string_map_items(message, field: str) -> list[tuple]:
    """The (key, value) pairs of a map<string, string> (or map<integer, string>) field, strings as text().
    upb raises on iterating a map whose strings are not valid UTF-8 (a plain string field hands back bytes
    instead); then the entries are read from the message's wire format, keeping every byte as text() does."""
    entries = getattr(message, field)
    try:
        return [(text(k), text(v)) for k, v in entries.items()]
    except UnicodeDecodeError:
        pass
    descriptor = message.DESCRIPTOR.fields_by_name[field]
    int_keys = descriptor.message_type.fields_by_name["key"].type != descriptor.TYPE_STRING
    pairs = []
    for entry in _length_delimited(message.SerializeToString(), descriptor.number):
        value = b"".join(_length_delimited(entry, 2)[-1:])
        if int_keys:
            pairs.append(((_varints(entry, 1) or [0])[-1], text(value)))
        else:
            pairs.append((text(b"".join(_length_delimited(entry, 1)[-1:])), text(value)))
    return pairs


def _varints(data: bytes, wanted: int) -> list[int]:
    """The values of varint field `wanted` in a serialized message; stops at damage."""
    return [value for number, wire, value in _wire_fields(data) if number == wanted and wire == 0]


def _length_delimited(data: bytes, wanted: int) -> list[bytes]:
    """The payloads of field `wanted` (length-delimited) in a serialized message; stops at damage."""
    return [value for number, wire, value in _wire_fields(data) if number == wanted and wire == 2]


def _wire_fields(data: bytes):
    """(field number, wire type, value) of each field of a serialized message: an int for a varint, the
    payload for a length-delimited field, None for a fixed-size one; stops at damage."""
    pos, end = 0, len(data)
    while pos < end:
        tag, pos = _varint(data, pos)
        if tag is None:
            return
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            if value is None:
                return
            yield number, wire, value
        elif wire == 1 or wire == 5:
            pos += 8 if wire == 1 else 4
            yield number, wire, None
        elif wire == 2:
            size, pos = _varint(data, pos)
            if size is None or pos + size > end:
                return
            yield number, wire, data[pos : pos + size]
            pos += size
        else:
            return


def _varint(data: bytes, pos: int) -> tuple[int | None, int]:
    value = shift = 0
    while pos < len(data) and shift < 70:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    return None, len(data)


def saturate(v: int) -> int:
    """int64 saturating arithmetic, as trace_processor's SaturatingMultiply/Add."""
    return max(INT64_MIN, min(INT64_MAX, v))


def c_div(a: int, b: int) -> int:
    """C's integer division: the quotient truncated toward zero (b != 0)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def signed(v: int) -> int:
    """A uint64 read as the int64 with the same bits."""
    return v - (1 << 64) if v >= 1 << 63 else v


def stack_string(s: str, size: int) -> str:
    """trace_processor's base::StackString<size>: snprintf keeps at most size - 1 bytes."""
    raw = s.encode("utf-8", "surrogateescape")
    if len(raw) < size:
        return s
    return raw[: size - 1].decode("utf-8", "ignore")
