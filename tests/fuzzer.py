"""A seeded, bounded fuzzer for ingest: mutated copies of real inputs must import or fail cleanly.

Seeds are the traces of the shared conformance cases (Perfetto protobuf, Chrome JSON, systrace)
and the demo trace. Each input is a seed with a few mutations (bit flips, truncation, splices
with another seed, corrupted varints, JSON shape changes, systrace line damage); one in ten is then
put in a zip or tar archive with another seed, and the archive maybe damaged in turn. An input
passes when ingest() either returns (a database that opens, with its `stats` table) or raises
IngestError with one line; in both cases an existing output database is untouched unless
replaced by a complete one, and no temporary file is left. A Chrome JSON input is also imported
with its tokenizing split between two processes, which must give the same database (or the
same error), and so is a Perfetto protobuf input, with its sequences' track events split between
the two. Anything else (a traceback, a hang, a difference) is a finding, saved for replay.

    python tests/fuzzer.py --minutes 30 [--seed N] [--findings DIR]   (what `./dev fuzz` runs)
    python tests/fuzzer.py --replay FILE
tests/test_fuzz.py runs a few hundred inputs of it on every test run.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import signal
import sqlite3
import sys
import tarfile
import tempfile
import time
import traceback
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for shared_data when run as a script

from database_rows import differing_tables  # noqa: E402
from shared_data import CASES  # noqa: E402

from datasette_perfetto.connection import prepare  # noqa: E402
from datasette_perfetto.importers.common.options import Content  # noqa: E402
from datasette_perfetto.ingest import IngestError, detect_format, ingest, open_trace  # noqa: E402
from datasette_perfetto.trace_builder import build_demo_trace  # noqa: E402

# Per input: an import that takes longer than this is a finding (inputs are small).
TIMEOUT_SECONDS = 30


@dataclass
class Seed:
    name: str
    data: bytes
    fmt: str  # proto, json, systrace


def load_seeds(limit_bytes: int = 400_000) -> list[Seed]:
    """Every conformance case's trace up to `limit_bytes` (larger ones make slow inputs), and the demo."""
    seeds = [Seed("demo", build_demo_trace(), "proto")]
    for case in sorted(CASES.iterdir()) if CASES.is_dir() else []:
        for name in ("trace.pb", "trace.json", "trace.systrace"):
            path = case / name
            if path.is_file() and 0 < path.stat().st_size <= limit_bytes:
                data = path.read_bytes()
                fmt = detect_format(data[:4096])
                if fmt in ("proto", "json", "systrace"):
                    seeds.append(Seed(case.name, data, fmt))
    return seeds


# -- mutations ------------------------------------------------------------------------------


def flip_bits(rng: random.Random, data: bytearray, seeds: list[Seed]) -> None:
    for _ in range(rng.randint(1, 8)):
        if data:
            pos = rng.randrange(len(data))
            data[pos] ^= 1 << rng.randrange(8)


def set_bytes(rng: random.Random, data: bytearray, seeds: list[Seed]) -> None:
    interesting = [0x00, 0x01, 0x7F, 0x80, 0xFF, 0x0A, 0x08, 0x12]
    for _ in range(rng.randint(1, 8)):
        if data:
            data[rng.randrange(len(data))] = rng.choice(interesting) if rng.random() < 0.5 else rng.randrange(256)


def truncate(rng: random.Random, data: bytearray, seeds: list[Seed]) -> None:
    if data:
        del data[rng.randrange(len(data)) :]


def drop_run(rng: random.Random, data: bytearray, seeds: list[Seed]) -> None:
    if data:
        pos = rng.randrange(len(data))
        del data[pos : pos + rng.randint(1, 256)]


def insert_garbage(rng: random.Random, data: bytearray, seeds: list[Seed]) -> None:
    pos = rng.randrange(len(data) + 1)
    data[pos:pos] = rng.randbytes(rng.randint(1, 64))


def splice(rng: random.Random, data: bytearray, seeds: list[Seed]) -> None:
    """A piece of another seed of any format in the middle of this one."""
    other = rng.choice(seeds).data
    if other:
        start = rng.randrange(len(other))
        piece = other[start : start + rng.randint(1, 4096)]
        pos = rng.randrange(len(data) + 1)
        data[pos : pos + rng.randint(0, len(piece))] = piece


def duplicate_run(rng: random.Random, data: bytearray, seeds: list[Seed]) -> None:
    if data:
        start = rng.randrange(len(data))
        piece = data[start : start + rng.randint(1, 2048)]
        pos = rng.randrange(len(data) + 1)
        data[pos:pos] = piece


def corrupt_varint(rng: random.Random, data: bytearray, seeds: list[Seed]) -> None:
    """A byte that continues a varint (its high bit set) replaced by an over-long or huge varint."""
    positions = [i for i in range(min(len(data), 200_000)) if data[i] & 0x80]
    if not positions:
        return
    pos = rng.choice(positions)
    replacement = rng.choice(
        [b"\xff" * 10 + b"\x01", b"\xff" * 11, b"\x80" * 9 + b"\x7f", b"\xff\xff\xff\xff\x0f", b"\x80"]
    )
    data[pos : pos + 1] = replacement


_JSON_VALUES: list[Callable[[random.Random], object]] = [
    lambda rng: 10**30,
    lambda rng: -(10**25),
    lambda rng: float("nan"),
    lambda rng: float("inf"),
    lambda rng: 1e308 * 10,
    lambda rng: 2**63,
    lambda rng: -(2**64),
    lambda rng: 1.5,
    lambda rng: "",
    lambda rng: "\ud800",
    lambda rng: None,
    lambda rng: True,
    lambda rng: [],
    lambda rng: {},
    lambda rng: {"a": [1, {"b": None}]},
    lambda rng: "x" * rng.randint(1, 5000),
]


_NEST_MARKER = "__nested_{}__"


def _nested_text(depth: int) -> str:
    """JSON nested `depth` levels (written as text: json.dumps itself recurses)."""
    return '{"n":[' * (depth // 2) + "1" + "]}" * (depth // 2)


def mutate_json_shape(rng: random.Random, data: bytearray, seeds: list[Seed]) -> None:
    """Parses the JSON and changes its shape: values of other types, huge and odd numbers, removed
    keys, deep nesting, then writes it back (with literal NaN/Infinity and 5000-digit numbers)."""
    try:
        doc = json.loads(bytes(data))
    except (ValueError, RecursionError):  # not JSON (any more), or nested deeper than json can read
        return
    containers: list[object] = []

    def walk(node: object, depth: int) -> None:
        if len(containers) > 5000 or depth > 50:
            return
        if isinstance(node, dict):
            containers.append(node)
            for value in node.values():
                walk(value, depth + 1)
        elif isinstance(node, list):
            containers.append(node)
            for value in node:
                walk(value, depth + 1)

    walk(doc, 0)
    for _ in range(rng.randint(1, 6)):
        if not containers:
            break
        node = rng.choice(containers)
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))  # type: ignore[arg-type]
        choice = rng.random()
        if not keys:
            continue
        key = rng.choice(keys)
        if choice < 0.15 and isinstance(node, dict):
            del node[key]
        elif choice < 0.25:
            node[key] = _NEST_MARKER.format(rng.choice([100, 950, 3000]))  # type: ignore[index]
        else:
            node[key] = rng.choice(_JSON_VALUES)(rng)  # type: ignore[index]
    text = json.dumps(doc)
    for depth in (100, 950, 3000):
        text = text.replace(json.dumps(_NEST_MARKER.format(depth)), _nested_text(depth))
    if rng.random() < 0.3:
        text = text.replace("1", "1" + "7" * 5000, 1)  # a number longer than Python's int parsing limit
    data[:] = text.encode("utf-8", "surrogatepass")


def damage_lines(rng: random.Random, data: bytearray, seeds: list[Seed]) -> None:
    """Systrace (and any text): lines cut, swapped, duplicated or with a field blanked."""
    lines = bytes(data).split(b"\n")
    for _ in range(rng.randint(1, 6)):
        i = rng.randrange(len(lines))
        choice = rng.random()
        if choice < 0.3:
            lines[i] = lines[i][: rng.randint(0, len(lines[i]))]
        elif choice < 0.5:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif choice < 0.7:
            lines.insert(i, lines[i])
        else:
            fields = lines[i].split(b" ")
            fields[rng.randrange(len(fields))] = rng.choice([b"", b"-1", b"99999999999999999999", b"x", b":"])
            lines[i] = b" ".join(fields)
    data[:] = b"\n".join(lines)


BYTE_MUTATIONS = [flip_bits, set_bytes, truncate, drop_run, insert_garbage, splice, duplicate_run, corrupt_varint]
FORMAT_MUTATIONS = {"json": [mutate_json_shape], "systrace": [damage_lines], "proto": [corrupt_varint]}


def mutate(rng: random.Random, seed: Seed, seeds: list[Seed]) -> bytes:
    data = bytearray(seed.data)
    structured = FORMAT_MUTATIONS[seed.fmt]
    for _ in range(rng.randint(1, 3)):
        mutation = rng.choice(structured) if rng.random() < 0.5 else rng.choice(BYTE_MUTATIONS)
        mutation(rng, data, seeds)
    if rng.random() < 0.1:  # an archive of it and another seed, maybe damaged itself
        data = bytearray(archive_of(rng, [bytes(data), rng.choice(seeds).data]))
        if rng.random() < 0.5:
            rng.choice(BYTE_MUTATIONS)(rng, data, seeds)
    return bytes(data)


def archive_of(rng: random.Random, members: list[bytes]) -> bytes:
    """A zip or tar holding `members` (archives.py's inputs)."""
    out = io.BytesIO()
    if rng.random() < 0.5:
        with zipfile.ZipFile(out, "w", rng.choice((zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED))) as z:
            for i, data in enumerate(members):
                z.writestr(f"member{i}", data)
    else:
        with tarfile.open(fileobj=out, mode=rng.choice(("w", "w:gz"))) as t:
            for i, data in enumerate(members):
                info = tarfile.TarInfo(f"member{i}")
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    return out.getvalue()


# -- checking one input ---------------------------------------------------------------------

EXISTING = b"an existing output: must survive a failed ingest byte for byte"
# Imports keep every kernel event as ftrace_event rows: the most code a kernel event goes through.
FUZZ_CONTENT = Content(ftrace_raw=True)


class Finding(Exception):
    """An input that broke a rule; str() says which."""


class _Timeout(BaseException):
    pass


def check_input(data: bytes, folder: Path) -> str:
    """Ingests `data` over an existing output in `folder`; returns "imported" or "rejected", or
    raises Finding. The folder is left empty."""
    trace = folder / "input.trace"
    out = folder / "out.db"
    trace.write_bytes(data)
    out.write_bytes(EXISTING)
    outcome = "imported"
    try:
        ingest([str(trace)], str(out), content=FUZZ_CONTENT)
    except IngestError as e:
        message = str(e)
        if "\n" in message or not message:
            raise Finding(f"error is not one line: {message!r}") from None
        if out.read_bytes() != EXISTING:
            raise Finding("a failed ingest changed the existing output") from None
        outcome = "rejected"
    except _Timeout:
        raise
    except Exception as e:
        raise Finding("traceback:\n" + "".join(traceback.format_exception(e))) from None
    else:
        try:
            conn = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
            prepare(conn)
            try:
                conn.execute("SELECT count(*) FROM stats").fetchone()
                conn.execute("SELECT count(*) FROM slice").fetchone()
                # Every kernel event prints as a systrace line (the importers write no row it refuses).
                conn.execute("SELECT count(to_ftrace(id)) FROM ftrace_event").fetchone()
            finally:
                conn.close()
        except sqlite3.Error as e:
            raise Finding(f"the imported database does not open: {e}") from None
    if _splits(trace):
        _check_split(trace, out if outcome == "imported" else None, folder)
    leftovers = sorted(p.name for p in folder.iterdir() if p.name not in ("input.trace", "out.db"))
    if leftovers:
        raise Finding(f"files left behind: {leftovers}")
    trace.unlink()
    out.unlink()
    return outcome


def _splits(trace: Path) -> bool:
    """Whether the input's format has a tokenizer helper (JSON: the second half of the events;
    protobuf: some sequences, or turns of one)."""
    try:
        fmt, stream = open_trace(str(trace))
    except IngestError:
        return False
    stream.close()
    return fmt in ("json", "proto")


def _check_split(trace: Path, imported: Path | None, folder: Path) -> None:
    """The input imported with a helper process tokenizing part of its events must give the database
    one process gave (`imported`; None: it was rejected, and must be again)."""
    split = folder / "split.db"
    try:
        ingest([str(trace)], str(split), split_tokenize=True, content=FUZZ_CONTENT)
    except IngestError:
        if imported is not None:
            raise Finding("rejected when split, imported by one process") from None
        return
    except _Timeout:
        raise
    except Exception as e:
        raise Finding("traceback when split:\n" + "".join(traceback.format_exception(e))) from None
    try:
        if imported is None:
            raise Finding("imported when split, rejected by one process")
        differing = differing_tables(imported, split)
        if differing:
            raise Finding(f"split tokenizing changed tables {differing}")
    finally:
        split.unlink()


@dataclass
class Report:
    inputs: int = 0
    imported: int = 0
    rejected: int = 0
    findings: int = 0


def run(
    seeds: list[Seed],
    rng: random.Random,
    *,
    count: int | None = None,
    seconds: float | None = None,
    findings_dir: Path | None = None,
    on_finding: Callable[[str, bytes, str], None] | None = None,
) -> Report:
    """Checks `count` inputs or as many as fit in `seconds`; findings are saved to `findings_dir`
    (the input, and what went wrong beside it) and passed to `on_finding(seed name, input, why)`."""
    report = Report()
    deadline = time.monotonic() + seconds if seconds is not None else None
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        folder = Path(tmp)
        while (count is None or report.inputs < count) and (deadline is None or time.monotonic() < deadline):
            seed = rng.choice(seeds)
            data = mutate(rng, seed, seeds)
            report.inputs += 1
            try:
                with _time_limit(TIMEOUT_SECONDS):
                    outcome = check_input(data, folder)
            except (Finding, _Timeout) as e:
                why = str(e) or f"no answer within {TIMEOUT_SECONDS} s"
                report.findings += 1
                if findings_dir is not None:
                    findings_dir.mkdir(parents=True, exist_ok=True)
                    stem = findings_dir / f"finding-{report.findings:04d}-{seed.name}"
                    stem.with_suffix(".input").write_bytes(data)
                    stem.with_suffix(".txt").write_text(why)
                if on_finding is not None:
                    on_finding(seed.name, data, why)
                for leftover in folder.iterdir():
                    leftover.unlink()
                continue
            if outcome == "imported":
                report.imported += 1
            else:
                report.rejected += 1
    return report


class _time_limit:
    """SIGALRM after `seconds` raises _Timeout (main thread only; elsewhere no limit)."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self.armed = False

    def __enter__(self) -> None:
        try:
            signal.signal(signal.SIGALRM, self._expire)
        except ValueError:
            return
        self.armed = True
        signal.alarm(self.seconds)

    def __exit__(self, *exc: object) -> None:
        if self.armed:
            signal.alarm(0)

    @staticmethod
    def _expire(signum: int, frame: object) -> None:
        raise _Timeout()


def main() -> int:
    parser = argparse.ArgumentParser(description="Fuzz ingest with mutated copies of the shared inputs.")
    parser.add_argument("--minutes", type=float, default=30.0, help="how long to run (default 30)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock)")
    parser.add_argument("--findings", default="fuzz-findings", help="folder for inputs that break a rule")
    parser.add_argument("--replay", help="check one saved input and print the outcome")
    args = parser.parse_args()
    if args.replay:
        with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
            try:
                print(check_input(Path(args.replay).read_bytes(), Path(tmp)))
            except Finding as e:
                print(e)
                return 1
        return 0
    seed = args.seed if args.seed is not None else int(time.time())
    seeds = load_seeds()
    print(f"fuzzing ingest for {args.minutes} min with seed {seed} over {len(seeds)} seed inputs", flush=True)

    def show(name: str, data: bytes, why: str) -> None:
        print(f"FINDING from {name} ({len(data)} bytes): {why.splitlines()[-1] if why else why}", flush=True)

    report = run(
        seeds, random.Random(seed), seconds=args.minutes * 60, findings_dir=Path(args.findings), on_finding=show
    )
    print(
        f"{report.inputs} inputs: {report.imported} imported, {report.rejected} rejected with one line, "
        f"{report.findings} findings" + (f" (saved in {args.findings}/)" if report.findings else ""),
        flush=True,
    )
    return 1 if report.findings else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
