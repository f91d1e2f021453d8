"""A message's unknown fields (protobuf's UnknownFieldSet), read safely while a signal may arrive."""

from __future__ import annotations

from google.protobuf.unknown_fields import UnknownFieldSet

from ...scratch import call_with_signals_held


def unknown_fields(message) -> UnknownFieldSet:
    """UnknownFieldSet(message), with SIGTERM and Ctrl+C held until it is built: upb builds its entries by
    calling Python (a namedtuple), and an exception a signal handler raises there crashes the interpreter."""
    return call_with_signals_held(UnknownFieldSet, message)
