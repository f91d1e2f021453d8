"""What ingest() tells every importer beyond its input: one dataclass, so an option is added in one place."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO


@dataclass(frozen=True)
class ImportOptions:
    # Tokenize a proto or JSON trace in two processes (common/split_helper.py): True always,
    # False never, None for large inputs.
    split_tokenize: bool | None = None
    # Opens the input again from its start (inflated like the stream the importer reads):
    # the split helper process reads the file too. None: the input cannot be reopened.
    reopen: Callable[[], BinaryIO] | None = None
    # trace_processor's --analyze-trace-proto-content (on in its diff tests): each distinct
    # TrackEvent (category, name) pair, and skipped packets, leave an annotation arg set.
    analyze_proto_content: bool = False
