"""Archives as inputs (archives.py): a zip or tar (plain or gzipped) of traces is imported as trace_processor
imports it: one trace_file row per archive and member, numbered in archive order, members imported protobuf
first; hidden members ignored; a member in no known format listed, not imported; a systrace member's
MONOTONIC timestamps put on the trace time a protobuf member's clock snapshots set. And the same database
with --jobs, where each member is a job of its own."""

from __future__ import annotations

import gzip
import io
import sqlite3
import tarfile
import zipfile
from pathlib import Path

import pytest
from database_rows import assert_same_database
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from shared_data import TRACES

from datasette_perfetto.ingest import IngestError, ingest
from datasette_perfetto.parallel import ingest as parallel_ingest
from datasette_perfetto.trace_builder import TraceBuilder

SYSTRACE = b"""# tracer: nop
#
  app-100 (  100) [001] ...1  1.000000: tracing_mark_write: B|100|sys_slice
  app-100 (  100) [001] ...1  1.500000: tracing_mark_write: E|100
"""
MONOTONIC, BOOTTIME = 3, 6


def proto_with_slice(name: str, ts: int = 2_000_000_000, clocks: dict[int, int] | None = None) -> bytes:
    """A protobuf trace with one slice `name` on a thread track (and a clock snapshot, if given)."""
    t = TraceBuilder()
    if clocks:
        t.packet(
            clock_snapshot=pb.ClockSnapshot(
                clocks=[pb.ClockSnapshot.Clock(clock_id=c, timestamp=v) for c, v in clocks.items()]
            )
        )
    seq = t.sequence(1)
    track = seq.thread(10, 11, "main")
    seq.slice_begin(ts, track, name)
    seq.slice_end(ts + 1000, track)
    return t.to_bytes()


def write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def write_tar(path: Path, members: dict[str, bytes], mode: str = "w") -> Path:
    with tarfile.open(path, mode) as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return path


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def test_zip_members_are_traces_numbered_and_ordered_as_trace_processor(tmp_path):
    archive = write_zip(
        tmp_path / "bundle.zip",
        {
            "a.systrace": SYSTRACE,  # archive order: ids 1..
            "README.txt": b"not a trace at all, just words\n",
            "__MACOSX/._b.pb": b"\x00\x05\x16\x07 AppleDouble fork",
            "b.pb": proto_with_slice("proto_slice"),
            "nested/c.json": b'[{"name": "json_slice", "ph": "X", "ts": 5, "dur": 2, "pid": 1, "tid": 2}]',
        },
    )
    db = tmp_path / "out.db"
    summaries = ingest([str(archive)], str(db))
    assert [s.path for s in summaries] == [f"{archive}:b.pb", f"{archive}:a.systrace", f"{archive}:nested/c.json"]
    assert rows(
        db, "SELECT id, parent_id, name, trace_type, processing_order, is_container FROM trace_file ORDER BY id"
    ) == [
        (0, None, "bundle.zip", "zip", 0, 1),
        (1, 0, "a.systrace", "systrace", 2, 0),
        (2, 0, "README.txt", "unknown", None, 0),
        (3, 0, "b.pb", "proto", 1, 0),
        (4, 0, "nested/c.json", "json", 3, 0),
    ]
    # A member's size is its own (inflated), as trace_processor records it; the archive's, the file's.
    assert rows(db, "SELECT size FROM trace_file WHERE id IN (0, 1) ORDER BY id") == [
        (archive.stat().st_size,),
        (len(SYSTRACE),),
    ]
    assert rows(db, "SELECT name FROM slice ORDER BY name") == [("json_slice",), ("proto_slice",), ("sys_slice",)]
    # Each member is a trace of its own: metadata per trace_file id, none for the archive.
    assert rows(db, "SELECT trace_id, str_value FROM metadata WHERE name = 'trace_type' ORDER BY trace_id") == [
        (1, "systrace"),
        (3, "proto"),
        (4, "json"),
    ]
    assert rows(db, "SELECT count(*) FROM __intrinsic_trace_file") == [(5,)]


def test_systrace_member_is_put_on_the_trace_time_of_a_protobuf_members_snapshots(tmp_path):
    spine = proto_with_slice("spine", 1_200_000_000, clocks={BOOTTIME: 1_000_000_000, MONOTONIC: 500_000_000})
    archive = write_zip(tmp_path / "t.zip", {"sys.systrace": SYSTRACE, "spine.pb": spine})
    db = tmp_path / "out.db"
    ingest([str(archive)], str(db))
    # 1.0 s MONOTONIC is 1.5 s BOOTTIME by the snapshot; the slice keeps its duration.
    assert rows(db, "SELECT ts, dur FROM slice WHERE name = 'sys_slice'") == [(1_500_000_000, 500_000_000)]
    assert rows(db, "SELECT trace_id, int_value FROM metadata WHERE name = 'trace_time_clock_id'") == [(2, BOOTTIME)]
    # --jobs: the systrace part, parsed without the spine, is imported again by the parent (NotMergeable).
    merged = tmp_path / "jobs.db"
    parallel_ingest([str(archive)], str(merged), jobs=2)
    assert_same_database(db, merged)


def test_systrace_alone_or_first_stays_on_its_own_clock(tmp_path):
    trace = tmp_path / "a.systrace"
    trace.write_bytes(SYSTRACE)
    db = tmp_path / "out.db"
    ingest([str(trace)], str(db))
    assert rows(db, "SELECT ts FROM slice WHERE name = 'sys_slice'") == [(1_000_000_000,)]
    assert rows(db, "SELECT int_value FROM metadata WHERE name = 'trace_time_clock_id'") == [(MONOTONIC,)]


def test_tar_gz_with_gzipped_member_and_nested_zip(tmp_path):
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("deep.pb", proto_with_slice("deep_slice"))
    archive = write_tar(
        tmp_path / "traces.tar.gz",
        {"one.pftrace.gz": gzip.compress(proto_with_slice("gz_member")), "inner.zip": inner.getvalue()},
        mode="w:gz",
    )
    db = tmp_path / "out.db"
    ingest([str(archive)], str(db))
    assert rows(db, "SELECT name FROM slice ORDER BY name") == [("deep_slice",), ("gz_member",)]
    assert rows(db, "SELECT id, parent_id, name, trace_type, processing_order FROM trace_file ORDER BY id") == [
        (0, None, "traces.tar.gz", "tar", 0),
        (1, 0, "one.pftrace.gz", "proto", 1),
        (2, 0, "inner.zip", "zip", 2),
        (3, 2, "deep.pb", "proto", 3),
    ]


def test_real_trace_in_a_zip_imports_as_the_file_does(tmp_path):
    """chrome_startup.pftrace (9 MB) as a zip member: large enough for the tokenizer helper, which reads
    the member from the archive too. Every table's rows but trace_file's and the ids naming it are the file's."""
    source = TRACES / "chrome_startup.pftrace"
    archive = tmp_path / "chrome.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(source, "chrome_startup.pftrace")
    plain, zipped = tmp_path / "plain.db", tmp_path / "zipped.db"
    ingest([str(source)], str(plain), split_tokenize=True)
    ingest([str(archive)], str(zipped), split_tokenize=True)
    for sql in (
        "SELECT count(*), sum(dur), sum(depth), count(DISTINCT track_id) FROM slice",
        "SELECT count(*) FROM flow",
        "SELECT count(*), sum(value) FROM counter",
        "SELECT name, int_value, str_value FROM metadata WHERE name NOT IN ('trace_size_bytes') ORDER BY id",
        "SELECT name, idx, value FROM stats WHERE value != 0 ORDER BY name, idx",
    ):
        assert rows(zipped, sql) == rows(plain, sql), sql
    assert rows(zipped, "SELECT DISTINCT trace_id FROM track") == [(1,)]


@pytest.mark.parametrize(
    "name,data,message",
    [
        ("empty.zip", None, "the zip archive holds no trace in a known format"),
        ("words.zip", {"notes.txt": b"hello\n"}, "the zip archive holds no trace in a known format"),
        ("cut.zip", "cut", "unreadable zip archive"),
        ("locked.zip", "encrypted", "is encrypted, password required"),
        # Found by the fuzzer: a member named with a newline, unreadable: its name and zipfile's reason escaped.
        ("newline.zip", "encrypted newline", "a\\n.pb: unreadable zip archive member: File 'a\\n.pb' is encrypted"),
        # Found by the fuzzer: zipfile raises NotImplementedError for it.
        ("future.zip", "version", "unreadable zip archive: zip file version 12.7"),
        ("bad.tar", "tar", "unreadable tar archive"),
    ],
)
def test_unusable_archive_fails_in_one_line_and_writes_nothing(tmp_path, name, data, message):
    path = tmp_path / name
    if data == "cut":
        whole = write_zip(tmp_path / "whole.zip", {"a.pb": proto_with_slice("x") * 50}).read_bytes()
        path.write_bytes(whole[: len(whole) // 2])
    elif data in ("encrypted", "encrypted newline"):  # the member's encryption flag (local header, central directory)
        member = "a\n.pb" if data == "encrypted newline" else "a.pb"
        whole = bytearray(write_zip(tmp_path / "whole.zip", {member: proto_with_slice("x")}).read_bytes())
        whole[6] |= 1
        whole[whole.rfind(b"PK\x01\x02") + 8] |= 1
        path.write_bytes(whole)
    elif data == "version":  # a member needing zip version 12.7 to extract (central directory)
        whole = bytearray(write_zip(tmp_path / "whole.zip", {"a.pb": proto_with_slice("x")}).read_bytes())
        whole[whole.rfind(b"PK\x01\x02") + 6] = 127
        path.write_bytes(whole)
    elif data == "tar":  # a tar header whose checksum no longer matches (tarfile's multi-line error)
        whole = bytearray(write_tar(tmp_path / "whole.tar", {"a.pb": proto_with_slice("x")}).read_bytes())
        whole[0] ^= 0xFF
        path.write_bytes(whole)
    else:
        write_zip(path, data or {})
    out = tmp_path / "out.db"
    with pytest.raises(IngestError) as e:
        ingest([str(path)], str(out))
    assert str(e.value).startswith(str(path)) and message in str(e.value) and "\n" not in str(e.value)
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db" or p.name.startswith(".ingest")) == []


def test_cli_ingest_and_serve_check_name_the_bad_member(tmp_path):
    """The CLI's one-line error and exit status for an archive whose member cannot be read; serve checks
    every trace in an archive before importing anything."""
    from click.testing import CliRunner
    from datasette.cli import cli

    from datasette_perfetto.serve import check_trace

    good = proto_with_slice("x")
    whole = bytearray(write_zip(tmp_path / "whole.zip", {"a.pb": good, "b.pb": good}).read_bytes())
    central = whole.rfind(b"PK\x01\x02")  # b.pb's central directory entry: its encryption flag set
    whole[central + 8] |= 1
    whole[whole.find(b"PK\x03\x04", 4) + 6] |= 1  # and its local header's
    bad = tmp_path / "bad.zip"
    bad.write_bytes(whole)
    result = CliRunner().invoke(cli, ["perfetto", "ingest", str(bad), "-o", str(tmp_path / "out.db")])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: {bad}:b.pb: unreadable zip archive member: File 'b.pb' is encrypted, password required for extraction"
    ]
    assert not (tmp_path / "out.db").exists()
    with pytest.raises(IngestError, match="b.pb: unreadable zip archive member"):
        check_trace(str(bad))
    check_trace(str(tmp_path / "whole.zip"))  # a good archive passes


def test_gzipped_tar_members_in_any_order_and_with_jobs(tmp_path):
    """A gzipped tar's members are read through one forward-moving reader per process: members imported
    out of archive order (protobuf before JSON) make it start again, forked jobs get their own, and the
    database is the same either way."""
    members = {
        "b.json": b'[{"name": "json_slice", "ph": "X", "ts": 5, "dur": 2, "pid": 1, "tid": 2}]',
        "c.pb": proto_with_slice("c_slice"),
        "a.pb": proto_with_slice("a_slice"),
        "d.systrace": SYSTRACE,
    }
    archive = write_tar(tmp_path / "job.tar.gz", members, mode="w:gz")
    serial, jobs = tmp_path / "serial.db", tmp_path / "jobs.db"
    ingest([str(archive)], str(serial))
    parallel_ingest([str(archive)], str(jobs), jobs=2)
    assert rows(serial, "SELECT name FROM slice ORDER BY name") == [
        ("a_slice",),
        ("c_slice",),
        ("json_slice",),
        ("sys_slice",),
    ]
    assert rows(serial, "SELECT name, processing_order FROM trace_file WHERE parent_id = 0 ORDER BY id") == [
        ("b.json", 3),
        ("c.pb", 2),
        ("a.pb", 1),
        ("d.systrace", 4),
    ]
    assert_same_database(serial, jobs)
