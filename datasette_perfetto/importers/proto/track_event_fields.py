"""TrackEvent field constants and the layout of a tokenized track event, shared by the
tokenizer, the args flattening and the parser."""

from __future__ import annotations

from types import SimpleNamespace

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

# TrackEvent field descriptors by name: TE.type, TE.track_uuid, ...
TE = SimpleNamespace(**pb.TrackEvent.DESCRIPTOR.fields_by_name)


TYPE_SLICE_BEGIN, TYPE_SLICE_END, TYPE_INSTANT, TYPE_COUNTER, TYPE_STATE = 1, 2, 3, 4, 5
SLICE_TYPES = frozenset((TYPE_SLICE_BEGIN, TYPE_SLICE_END, TYPE_INSTANT))

# Interned data field numbers (InternedData).
I_CATEGORIES, I_NAMES, I_DEBUG_NAMES, I_SOURCE_LOCATIONS = 1, 2, 3, 4
I_LOG_BODY, I_HISTOGRAM_NAMES, I_DEBUG_STRINGS, I_CORRELATION_STR = 20, 25, 29, 43

# Positions in the tokenized event tuple.
(
    F_KIND,
    F_TYPE,
    F_UUID,
    F_SEQ,
    F_THREAD,
    F_CATEGORY,
    F_NAME,
    F_ARGS,
    F_FLOWS,
    F_TERM_FLOWS,
    F_THREAD_TS,
    F_THREAD_IC,
    F_EXTRA,
    F_COUNTER,
    F_LEGACY,
    F_HAS_TYPE,
    F_HAS_UUID,
    F_CALLSTACK,  # None, or (kind "inline" | "interned", frames or None if unresolvable, weight or None)
) = range(18)
