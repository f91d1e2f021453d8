"""What ingest() tells every importer beyond its input: one dataclass, so an option is added in one place."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO


@dataclass(frozen=True)
class Content:
    """What an ingest keeps beyond its defaults, as trace_processor's import flags: the same for every input."""

    # trace_processor's --analyze-trace-proto-content (on in its diff tests; ingest --analyze-proto-content):
    # the trace's bytes by proto field path, experimental_proto_path and experimental_proto_content
    # (importers/proto/content_analyzer.py), annotated by track event (category, name) and skipped packets.
    analyze_proto_content: bool = False
    # Every kernel event as a row of ftrace_event, its fields as args (trace_processor's raw table, on by
    # default there): on a scheduling-heavy trace it takes ~70% more time and a million args rows per
    # 400,000 events, so it is asked for (ingest --ftrace-raw; on in the conformance runner).
    ftrace_raw: bool = False


DEFAULT_CONTENT = Content()


@dataclass(frozen=True)
class ImportOptions:
    # Tokenize a proto or JSON trace in two processes (common/split_helper.py): True always,
    # False never, None for large inputs.
    split_tokenize: bool | None = None
    # Opens the input again from its start (inflated like the stream the importer reads):
    # the split helper process reads the file too. None: the input cannot be reopened.
    reopen: Callable[[], BinaryIO] | None = None
    content: Content = DEFAULT_CONTENT
