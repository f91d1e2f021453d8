"""Ingest progress on stderr: tqdm bars on a terminal, periodic lines in a pipe, named steps, --quiet."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time

from shared_data import TRACES

PFTRACE = TRACES / "chrome_startup.pftrace"
JSON = TRACES / "chrome_startup.json.gz"
PHASES = [
    "Resolving track dimensions...",
    "Writing processes, threads and tracks...",
    "Building indexes and report tables...",
    "Collecting planner statistics (ANALYZE)...",
]


def ingest_command(trace, db, *options: str) -> list[str]:
    return [sys.executable, "-m", "datasette", "perfetto", "ingest", str(trace), "-o", str(db), *options]


def run_in_terminal(command: list[str], timeout: float = 180) -> tuple[int, str]:
    """Runs `command` with a pseudo-terminal (100x24) as stdin, stdout and stderr; returns (exit code, output)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    process = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    output = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], deadline - time.monotonic())
            if not ready:
                break
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            output += data
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
    return process.wait(10), output.decode()


def test_terminal_shows_a_bar_per_input_then_the_steps(tmp_path):
    code, output = run_in_terminal(ingest_command(PFTRACE, tmp_path / "t.db"))
    assert code == 0, output
    pieces = [p.strip() for p in re.split(r"[\r\n]+", output) if p.strip()]
    bars = [p for p in pieces if p.startswith("chrome_startup.pftrace:")]
    # tqdm's bar: the file name, a percentage, a bar, bytes of the total, elapsed<left, rate.
    bar = re.compile(r"chrome_startup\.pftrace:\s+(\d+)%\|.*\| [\d.]+[kM]?/9\.04M \[[\d:]+<[\d:?]+, +[\d.]+[kM]?B/s\]")
    assert bars and all(bar.fullmatch(b) for b in bars), bars
    assert int(bar.fullmatch(bars[-1]).group(1)) == 100
    # Each step once, in order, with its duration; then the summary. Nothing else: the
    # tokenizer helper and the writer child (this is a two-process import) print nothing.
    rest = pieces[len(bars) :]
    assert [re.sub(r" \d+\.\d s$", "", p) for p in rest[:4]] == PHASES
    # The trace's config and final flush, as trace_processor counts them (a write_into_file trace with
    # DISCARD buffers, its last flush not confirmed).
    stats = (
        "config_write_into_file_discard[0]=1, config_write_into_file_discard[1]=1, "
        "config_write_into_file_no_flush=1, traced_final_flush_failed=1"
    )
    assert rest[4:] == [
        f"{PFTRACE}: proto, {PFTRACE.stat().st_size:,} bytes; stats: {stats}",
        f"Wrote {tmp_path / 't.db'}",
    ]
    assert pieces[: len(bars)] == bars


def test_a_pipe_gets_plain_lines(tmp_path):
    result = subprocess.run(ingest_command(JSON, tmp_path / "t.db"), capture_output=True, timeout=180)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.decode().splitlines()
    assert "\r" not in result.stderr.decode()
    progress = [line for line in lines if line.startswith("chrome_startup.json.gz:")]
    shape = re.compile(r"chrome_startup\.json\.gz: (\d+)% \([\d.]+[kM]?B of 2\.70MB\), \d+\.\d s")
    assert progress and all(shape.fullmatch(line) for line in progress), progress
    assert shape.fullmatch(progress[-1]).group(1) == "100"
    assert lines[len(progress) :] == PHASES + [
        f"{JSON}: json, {JSON.stat().st_size:,} bytes; stats: misplaced_end_event=1",
        f"Wrote {tmp_path / 't.db'}",
    ]


def test_quiet_prints_nothing(tmp_path):
    result = subprocess.run(ingest_command(JSON, tmp_path / "t.db", "--quiet"), capture_output=True, timeout=180)
    assert result.returncode == 0
    assert result.stderr == result.stdout == b""
    assert (tmp_path / "t.db").stat().st_size > 0


def test_a_short_ingest_shows_only_its_summary_even_on_a_terminal(tmp_path, demo_trace):
    code, output = run_in_terminal(ingest_command(demo_trace, tmp_path / "t.db"))
    assert code == 0, output
    assert output.splitlines() == [
        f"{demo_trace}: proto, {demo_trace.stat().st_size:,} bytes",
        f"Wrote {tmp_path / 't.db'}",
    ]
