"""Ingest progress on stderr for the CLI: a tqdm bar per input on a terminal, a plain
line every few seconds otherwise, and the named steps after parsing as lines.

Nothing shows until an ingest has run for SHOW_AFTER seconds, so a short one prints
only its summary. The ingest library itself knows none of this (ingest.Progress).
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

from tqdm import tqdm

from .ingest import Progress

SHOW_AFTER = 1.0  # seconds an ingest runs before anything about it is shown
LINE_EVERY = 3.0  # seconds between two plain progress lines of one input


def progress_for(quiet: bool, stream: TextIO | None = None) -> Progress:
    """The display for one ingest() call: nothing with `quiet`, bars on a terminal, lines otherwise."""
    stream = stream or sys.stderr
    if quiet:
        return Progress()
    if stream.isatty():
        return BarProgress(stream)
    return LineProgress(stream)


class _Bar(tqdm):
    # No monitor thread: the import forks helper processes while a bar is shown.
    monitor_interval = 0


def counting_bar(total: int, desc: str, unit: str, stream: TextIO | None = None) -> tqdm:
    """A bar counting items (tables exported, traces queried) on a terminal, after SHOW_AFTER
    seconds; disabled (it draws nothing) when the stream is not a terminal."""
    stream = stream or sys.stderr
    sized = _columns(stream) > 0  # a terminal that reports no size (a fresh pty): assume 80x24, as BarProgress
    return _Bar(
        total=total,
        desc=desc,
        unit=unit,
        file=stream,
        disable=not stream.isatty(),
        leave=False,
        delay=SHOW_AFTER,
        dynamic_ncols=sized,
        ncols=None if sized else 80,
        nrows=None if sized else 24,
    )


def size_text(n: float) -> str:
    return tqdm.format_sizeof(n, "B", 1000)


class _Shown(Progress):
    """What both displays share: the clock, the current input and phase."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self.name = ""
        self.size = 0
        self.done = 0
        self.input_began = self.started

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def input_started(self, path: str, size: int) -> None:
        self._end_step()
        self.name, self.size, self.done = os.path.basename(path), size, 0
        self.input_began = time.monotonic()

    def advanced(self, amount: int) -> None:
        self.done += amount

    def phase(self, name: str) -> None:
        self._end_step()
        if self.elapsed() >= SHOW_AFTER:
            self._show_phase(name)

    def finished(self) -> None:
        self._end_step()

    def _end_step(self) -> None:
        """The current input or phase is over."""

    def _show_phase(self, name: str) -> None:
        self.stream.write(f"{name}...\n")
        self.stream.flush()


class BarProgress(_Shown):
    """A terminal: tqdm's bar per input (bytes, rate, time left); each step a line that
    gets its duration when it ends."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self.bar: _Bar | None = None
        self.step_began: float | None = None

    def input_started(self, path: str, size: int) -> None:
        super().input_started(path, size)
        # A terminal that reports no size (a fresh pty) would get no bar at all: assume 80x24.
        sized = _columns(self.stream) > 0
        self.bar = _Bar(
            total=size,
            desc=self.name,
            unit="B",
            unit_scale=True,
            unit_divisor=1000,
            file=self.stream,
            leave=True,
            dynamic_ncols=sized,
            ncols=None if sized else 80,
            nrows=None if sized else 24,
            mininterval=0.25,
            delay=max(SHOW_AFTER - self.elapsed(), 0.0),
        )

    def advanced(self, amount: int) -> None:
        super().advanced(amount)
        if self.bar is not None:
            self.bar.update(amount)

    def _end_step(self) -> None:
        if self.bar is not None:
            self.bar.close()  # draws nothing if the bar never showed (a short input)
            self.bar = None
        if self.step_began is not None:
            self.stream.write(f" {time.monotonic() - self.step_began:.1f} s\n")
            self.stream.flush()
            self.step_began = None

    def _show_phase(self, name: str) -> None:
        self.stream.write(f"{name}...")
        self.stream.flush()
        self.step_began = time.monotonic()


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 0


class LineProgress(_Shown):
    """Not a terminal (a log, a pipe): `trace.pftrace: 45% (4.07MB of 9.04MB), 3.2 s` every
    LINE_EVERY seconds and at 100%; each step a line."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self.last_line: float | None = None

    def input_started(self, path: str, size: int) -> None:
        super().input_started(path, size)
        self.last_line = None

    def advanced(self, amount: int) -> None:
        super().advanced(amount)
        now = time.monotonic()
        if now - self.started < SHOW_AFTER:
            return
        # ingest() reports an input's last bytes once: that 100% line is its last.
        if self.last_line is None or now - self.last_line >= LINE_EVERY or self.done >= self.size:
            share = self.done / self.size if self.size else 1.0
            self.stream.write(
                f"{self.name}: {share:.0%} ({size_text(self.done)} of {size_text(self.size)}), "
                f"{now - self.input_began:.1f} s\n"
            )
            self.stream.flush()
            self.last_line = now


__all__ = ["progress_for", "counting_bar", "BarProgress", "LineProgress", "SHOW_AFTER", "LINE_EVERY"]
