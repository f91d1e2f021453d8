"""What importers share about their input stream."""

from __future__ import annotations

from collections.abc import Callable
from typing import BinaryIO


def file_position(stream: BinaryIO) -> Callable[[], int]:
    """How far into the file on disk the reader is (the compressed file for gzip), for progress."""
    raw = getattr(stream, "raw", stream)
    return raw.tell
