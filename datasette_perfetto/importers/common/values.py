"""Plain values as the tables store them: integer limits, proto strings that may not be UTF-8."""

from __future__ import annotations

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
UINT32_MAX = 0xFFFFFFFF


def text(value):
    """A proto string field as str. upb hands back bytes when a trace's string is
    not valid UTF-8; those keep every byte, escaped as \\xNN."""
    if type(value) is bytes:
        return value.decode("utf-8", "backslashreplace")
    return value


def saturate(v: int) -> int:
    """int64 saturating arithmetic, as trace_processor's SaturatingMultiply/Add."""
    return max(INT64_MIN, min(INT64_MAX, v))


def signed(v: int) -> int:
    """A uint64 read as the int64 with the same bits."""
    return v - (1 << 64) if v >= 1 << 63 else v
