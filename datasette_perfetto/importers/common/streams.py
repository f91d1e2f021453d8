"""What importers share about their input stream."""

from __future__ import annotations

from collections.abc import Callable
from typing import BinaryIO


def file_position(stream: BinaryIO) -> Callable[[], int]:
    """How far into the file on disk the reader is (the compressed file for gzip), for progress."""
    raw = getattr(stream, "raw", stream)
    return raw.tell


# The share of an input's progress its reading and tokenizing take (the sorted parse, the rest), and how much of it
# reading reports: the share itself is reported once tokenizing has ended, so its end is known to the display.
READ_SHARE = 0.5
_READ_REPORTED = 0.99


def read_progress(position: int, size: int) -> float:
    """The progress to report while reading: position (of size bytes) within READ_SHARE, short of it."""
    return READ_SHARE * min(position / size, _READ_REPORTED)


def parse_progress(parsed: int, total: int) -> float:
    """The progress to report while parsing: `parsed` of `total` sorted events, after READ_SHARE."""
    return READ_SHARE + (1 - READ_SHARE) * parsed / total
