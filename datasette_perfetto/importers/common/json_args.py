"""JSON values flattened into args, for Chrome JSON events and TrackEvent debug annotations.

Arg keys and short string values are shared (one string, one tuple) within bounded
caches: the storage's arg-set cache keeps thousands of sets alive, and every decoded
event would otherwise have its own copies.
"""

from __future__ import annotations

from typing import Any

from ...storage import Arg
from .values import INT64_MAX, INT64_MIN, signed

SHARED_STRINGS_LIMIT = 20_000
SHARED_ARGS_LIMIT = 10_000

_shared_strings: dict[str, str] = {}


def shared_string(s: str) -> str:
    """One str object per distinct string (within a bounded cache) instead of one per event."""
    found = _shared_strings.get(s)
    if found is not None:
        return found
    if len(_shared_strings) >= SHARED_STRINGS_LIMIT:
        _shared_strings.clear()
    _shared_strings[s] = s
    return s


_shared_args: dict[tuple, Arg] = {}
_child_keys: dict[tuple[str, str], tuple[str, str]] = {}  # (key, field) -> (flat key, key) of the field


def _shared_arg(flat_key: str, key: str, value_type: str, value) -> Arg:
    """One tuple for each recurring (key, value): source locations, flags, ..."""
    lookup = (key, value_type, value)
    found = _shared_args.get(lookup)
    if found is not None and found[0] is flat_key:
        return found
    if len(_shared_args) >= SHARED_ARGS_LIMIT:
        _shared_args.clear()
    arg = _shared_args[lookup] = (flat_key, key, value_type, value)
    return arg


# A decoded JSON value is Any: the dispatch reads type(value) once (a hot path), which mypy cannot narrow by.
def add_json_args(out: list[Arg], flat_key: str, key: str, value: Any, track_event: bool = False) -> None:
    """Flattens a JSON value into args as trace_processor does: objects nest with '.', arrays
    with [i]; nulls (and empty objects and arrays) add nothing; integers beyond int64 are reals.
    `track_event`: a TrackEvent debug annotation's legacy_json_value, where trace_processor
    keeps nulls (in arrays too) as null args and integers up to 2^64 as uint."""
    t = type(value)
    if t is dict:
        for k, v in value.items():
            keys = _child_keys.get((key, k))
            if keys is None:
                if len(_child_keys) >= SHARED_STRINGS_LIMIT:
                    _child_keys.clear()
                keys = _child_keys[(key, k)] = (shared_string(f"{flat_key}.{k}"), shared_string(f"{key}.{k}"))
            add_json_args(out, keys[0], keys[1], v, track_event)
    elif t is list:
        i = 0
        for v in value:
            if v is not None or track_event:
                add_json_args(out, flat_key, shared_string(f"{key}[{i}]"), v, track_event)
                i += 1
    elif t is str:
        out.append(
            _shared_arg(flat_key, key, "string", value) if len(value) <= 64 else (flat_key, key, "string", value)
        )
    elif t is bool:
        out.append(_shared_arg(flat_key, key, "bool", int(value)))
    elif t is int:
        if INT64_MIN <= value <= INT64_MAX:
            out.append(_shared_arg(flat_key, key, "int", value))
        elif track_event and 0 <= value < 1 << 64:
            out.append((flat_key, key, "uint", value))
        else:
            out.append((flat_key, key, "real", big_int_as_double(value)))
    elif t is float:
        out.append((flat_key, key, "real", value))
    elif value is None and track_event:
        out.append((flat_key, key, "null", None))


def big_int_as_double(value: int) -> float:
    """An integer beyond int64 as trace_processor's JSON parser reads it: a double from
    digits accumulated in a wrapping int64 (so the low 64 bits of its magnitude), negated
    for a minus sign. Never fails, however many digits."""
    magnitude = signed(abs(value) & 0xFFFFFFFFFFFFFFFF)
    return -float(magnitude) if value < 0 else float(magnitude)


def add_json_args_deep(out: list[Arg], flat_key: str, key: str, value: Any, track_event: bool = False) -> None:
    """add_json_args without recursion, for values nested deeper than Python's stack allows
    (trace_processor walks any depth). Same args, same order."""
    stack: list[tuple[str, str, Any]] = [(flat_key, key, value)]
    while stack:
        flat_key, key, value = stack.pop()
        t = type(value)
        if t is dict:
            stack.extend(reversed([(f"{flat_key}.{k}", f"{key}.{k}", v) for k, v in value.items()]))
        elif t is list:
            items = [v for v in value if v is not None or track_event]
            stack.extend(reversed([(flat_key, f"{key}[{i}]", v) for i, v in enumerate(items)]))
        else:
            add_json_args(out, flat_key, key, value, track_event)


def add_json_args_safe(out: list[Arg], flat_key: str, key: str, value: Any, track_event: bool = False) -> None:
    """add_json_args, falling back to the iterative walk for very deep values."""
    size = len(out)
    try:
        add_json_args(out, flat_key, key, value, track_event)
    except RecursionError:
        del out[size:]
        add_json_args_deep(out, flat_key, key, value, track_event)
