"""Android packages and users (importers/proto/android_packages.py): TracePacket.packages_list →
package_list, TracePacket.user_list → __intrinsic_android_user_list (android_user_list), and the stdlib
module android.process_metadata over them, checked against what trace_processor's AndroidProbesModule,
UserTracker and android/process_metadata.sql give."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import TraceDB, ingest_built
from database_rows import assert_same_database

from datasette_perfetto.cli import perfetto
from datasette_perfetto.ingest import ingest
from datasette_perfetto.parallel import ingest as parallel_ingest
from datasette_perfetto.trace_builder import TraceBuilder

PACKAGE_COLUMNS = "id, package_name, uid, debuggable, profileable_from_shell, version_code"


def packages(db: TraceDB) -> list[tuple]:
    return db.rows(f"SELECT {PACKAGE_COLUMNS} FROM package_list ORDER BY id")


def stats(db: TraceDB) -> dict[str, int]:
    return dict(db.rows("SELECT name, value FROM stats WHERE name GLOB 'packages_list_*' OR name = 'user_list_errors'"))


def test_every_field_of_every_package(tmp_path):
    b = TraceBuilder()
    b.packet(
        packages_list=dict(
            packages=[
                dict(name="com.test.app", uid=1000, debuggable=False, profileable_from_shell=True, version_code=42),
                dict(name="com.test.app2", uid=1001, debuggable=True, version_code=-3),
                dict(name="com.big.uid", uid=(1 << 64) - 1),  # uint64, read as int64
                dict(uid=10),  # no name: NULL
            ],
            parse_error=True,
        )
    )
    db = ingest_built(tmp_path, b)
    assert packages(db) == [
        (0, "com.test.app", 1000, 0, 1, 42),
        (1, "com.test.app2", 1001, 1, 0, -3),
        (2, "com.big.uid", -1, 0, 0, 0),
        (3, None, 10, 0, 0, 0),
    ]
    assert stats(db) == {
        "packages_list_has_parse_errors": 1,
        "packages_list_has_read_errors": 0,
        "user_list_errors": 0,
    }
    # trace_processor's names: the package_list view over __intrinsic_package_list.
    assert db.rows(f"SELECT {PACKAGE_COLUMNS} FROM __intrinsic_package_list ORDER BY id") == packages(db)


def test_a_name_is_listed_once(tmp_path):
    """A package whose name was listed before (in this packet or an earlier one) is skipped, whatever its
    uid or version; a missing name counts as the empty one."""
    b = TraceBuilder()
    b.packet(
        packages_list=dict(
            packages=[
                dict(name="com.a", uid=10100, version_code=1),
                dict(name="com.a", uid=10100, version_code=1),
                dict(name="com.a", uid=10200, version_code=2),
                dict(uid=1),
                dict(name="", uid=2),
            ]
        )
    )
    b.packet(
        packages_list=dict(
            packages=[dict(name="com.a", uid=10300, version_code=3), dict(name="com.b", uid=10400)],
            read_error=True,
        )
    )
    db = ingest_built(tmp_path, b)
    assert packages(db) == [
        (0, "com.a", 10100, 0, 0, 1),
        (1, None, 1, 0, 0, 0),
        (2, "com.b", 10400, 0, 0, 0),
    ]
    # Each packet sets both stats: the last one's errors win.
    assert stats(db)["packages_list_has_read_errors"] == 1
    assert stats(db)["packages_list_has_parse_errors"] == 0


def test_packets_are_read_whatever_their_timestamp(tmp_path):
    """Tokenize-time rows: file order, even when a later packet has an earlier timestamp."""
    b = TraceBuilder()
    b.packet(timestamp=500, trusted_packet_sequence_id=1, packages_list=dict(packages=[dict(name="late", uid=1)]))
    b.packet(timestamp=100, trusted_packet_sequence_id=1, packages_list=dict(packages=[dict(name="early", uid=2)]))
    db = ingest_built(tmp_path, b)
    assert db.rows("SELECT package_name FROM package_list ORDER BY id") == [("late",), ("early",)]


def test_art_process_metadata_adds_its_package_once(tmp_path):
    """ART's heap dump metadata names a package: added (debuggable, profileable, version 0) unless the
    table has that name with that uid."""
    b = TraceBuilder()
    b.packet(packages_list=dict(packages=[dict(name="com.example", uid=10155, version_code=7)]))
    for ts, name, uid in ((10, "com.example", 10155), (20, "com.example", 10156), (30, "com.other", 10157)):
        b.packet(
            timestamp=ts,
            trusted_packet_sequence_id=1,
            art_process_metadata=dict(pid=ts, uid=uid, process_name=name, package_name=name),
        )
    b.packet(
        timestamp=40,
        trusted_packet_sequence_id=1,
        art_process_metadata=dict(pid=40, uid=10157, package_name="com.other"),
    )
    b.packet(timestamp=50, trusted_packet_sequence_id=1, art_process_metadata=dict(pid=50, package_name="no.uid"))
    db = ingest_built(tmp_path, b)
    assert packages(db) == [
        (0, "com.example", 10155, 0, 0, 7),
        (1, "com.example", 10156, 0, 0, 0),
        (2, "com.other", 10157, 0, 0, 0),
    ]


def test_users_one_row_per_user_id_with_the_last_type(tmp_path):
    b = TraceBuilder()
    b.packet(
        trusted_pid=1,
        user_list=dict(
            users=[
                dict(type="android.os.usertype.system.HEADLESS", uid=0),
                dict(type="android.os.usertype.full.SECONDARY", uid=10),
            ]
        ),
    )
    b.packet(
        trusted_pid=2,
        user_list=dict(
            users=[dict(type="android.os.usertype.full.GUEST", uid=10), dict(uid=11)],
            error=-2,
        ),
    )
    b.packet(user_list=dict(users=[dict(type="x", uid=12)], error=3))  # only negative errors count
    db = ingest_built(tmp_path, b)
    assert db.rows("SELECT id, type, android_user_id FROM __intrinsic_android_user_list ORDER BY id") == [
        (0, "android.os.usertype.system.HEADLESS", 0),
        (1, "android.os.usertype.full.GUEST", 10),
        (2, None, 11),
        (3, "x", 12),
    ]
    assert db.rows("SELECT * FROM android_user_list") == [
        (0, "android.os.usertype.system.HEADLESS"),
        (10, "android.os.usertype.full.GUEST"),
        (11, None),
        (12, "x"),
    ]
    assert stats(db)["user_list_errors"] == 1


def test_each_machine_lists_its_own(tmp_path):
    """trace_processor reads another machine's packets with a module (and user tracker) of its own."""
    b = TraceBuilder()
    b.packet(packages_list=dict(packages=[dict(name="com.a", uid=1)]))
    b.packet(user_list=dict(users=[dict(type="t0", uid=0)]))
    b.packet(machine_id=7, packages_list=dict(packages=[dict(name="com.a", uid=2), dict(name="com.a", uid=3)]))
    b.packet(machine_id=7, user_list=dict(users=[dict(type="t7", uid=0)]))
    b.packet(user_list=dict(users=[dict(type="t0 again", uid=0)]))
    db = ingest_built(tmp_path, b)
    assert db.rows("SELECT package_name, uid FROM package_list ORDER BY id") == [("com.a", 1), ("com.a", 2)]
    assert db.rows("SELECT android_user_id, type FROM android_user_list ORDER BY type") == [
        (0, "t0 again"),
        (0, "t7"),
    ]


def _query(db: TraceDB, sql: str) -> dict:
    result = CliRunner().invoke(perfetto, ["query", str(db.path), sql, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _process_tree(b: TraceBuilder, *processes: tuple) -> None:
    b.packet(
        process_tree=dict(
            processes=[dict(pid=pid, ppid=ppid, cmdline=[cmdline], uid=uid) for pid, ppid, cmdline, uid in processes]
        )
    )


def test_user_list_module(tmp_path):
    b = TraceBuilder()
    b.packet(user_list=dict(users=[dict(type="android.os.usertype.full.SECONDARY", uid=10)]))
    b.packet(user_list=dict(users=[dict(type="android.os.usertype.full.SECONDARY", uid=10)]))
    db = ingest_built(tmp_path, b)
    out = _query(db, "INCLUDE PERFETTO MODULE android.user_list;\nSELECT * FROM android_user_list;")
    assert out == {"columns": ["android_user_id", "type"], "rows": [[10, "android.os.usertype.full.SECONDARY"]]}


METADATA_COLUMNS = [
    "upid",
    "pid",
    "process_name",
    "uid",
    "user_id",
    "user_type",
    "shared_uid",
    "package_name",
    "version_code",
    "debuggable",
    "is_kernel_task",
]


def test_process_metadata_module(tmp_path):
    """Every column, in trace_processor's order, for each way a process finds (or not) its package."""
    b = TraceBuilder()
    _process_tree(
        b,
        (1, 0, "init", 0),
        (2, 0, "kthreadd", 0),
        (3, 2, "kworker/0:1", 0),
        (4, 1, "system_server", 1000),
        # uid 10100 has two packages: the name picks, the longest prefix wins.
        (5, 1, "com.google.android.gms.persistent", 10100),
        (6, 1, "com.google.android.gmsx", 1010100),  # user 10
        (7, 1, "com.unrelated", 10100),
        # uid 10200 has one package: whatever the name.
        (8, 1, "whatever", 10200),
        # an SDK sandbox (20000-29999) and a PCC (30000-39999) process: their app's packages
        (9, 1, "com.solo_sdk_sandbox", 20200),
        (10, 1, "com.solo:pcc", 30200),
        # an isolated process (90000-99999): matched on its name before ':'
        (11, 1, "com.google.android.gms:isolated", 90001),
        (12, 1, "com.nothing:isolated", 90002),
    )
    b.packet(
        packages_list=dict(
            packages=[
                dict(name="com.google.android", uid=10100, version_code=1),
                dict(name="com.google.android.gms", uid=10100, version_code=1234, debuggable=True),
                dict(name="com.solo", uid=10200, version_code=5),
            ]
        )
    )
    b.packet(
        user_list=dict(
            users=[
                dict(type="android.os.usertype.system.HEADLESS", uid=0),
                dict(type="android.os.usertype.full.SECONDARY", uid=10),
            ]
        )
    )
    db = ingest_built(tmp_path, b)
    out = _query(
        db,
        "INCLUDE PERFETTO MODULE android.process_metadata;\n"
        "SELECT m.* FROM android_process_metadata AS m JOIN process USING (upid) ORDER BY process.pid;",
    )
    assert out["columns"] == METADATA_COLUMNS
    headless, secondary = "android.os.usertype.system.HEADLESS", "android.os.usertype.full.SECONDARY"
    gms = ["com.google.android.gms", 1234, 1]
    rows = [row[1:] for row in out["rows"] if row[1] != 0]  # without upids, and the swapper
    assert rows == [
        [1, "init", 0, 0, headless, None, None, None, None, 1],  # child of pid 0: a kernel task
        [2, "kthreadd", 0, 0, headless, None, None, None, None, 1],
        [3, "kworker/0:1", 0, 0, headless, None, None, None, None, 1],  # child of kthreadd
        [4, "system_server", 1000, 0, headless, None, None, None, None, 0],
        [5, "com.google.android.gms.persistent", 10100, 0, headless, 1, *gms, 0],
        [6, "com.google.android.gmsx", 10100, 10, secondary, 1, *gms, 0],
        [7, "com.unrelated", 10100, 0, headless, 1, None, None, None, 0],
        [8, "whatever", 10200, 0, headless, None, "com.solo", 5, 0, 0],
        [9, "com.solo_sdk_sandbox", 20200, 0, headless, None, "com.solo", 5, 0, 0],
        [10, "com.solo:pcc", 30200, 0, headless, None, "com.solo", 5, 0, 0],
        [11, "com.google.android.gms:isolated", 90001, 0, headless, None, *gms, 0],
        [12, "com.nothing:isolated", 90002, 0, headless, None, None, None, None, 0],
    ]


def test_process_metadata_names(tmp_path):
    """A 15-character name (the kernel's truncated comm) is replaced by a cmdline that ends with it or is
    zygote's; a process without a name still gets the single package of its uid."""
    b = TraceBuilder()
    b.packet(
        process_tree=dict(
            processes=[
                dict(pid=20, ppid=1, cmdline=["abcdefghijklmno", "--x", "abcdefghijklmno"], uid=10300),
                dict(pid=21, ppid=1, cmdline=["abcdefghijklmno", "--y"], uid=10300),
                dict(pid=22, ppid=1, cmdline=["zygote64"], uid=10400),
            ]
        )
    )
    # The kernel's comm renames zygote's child (15 characters).
    b.ftrace(0, dict(timestamp=100, pid=22, task_rename=dict(pid=22, oldcomm="zygote64", newcomm="com.example.abc")))
    b.packet(timestamp=200, trusted_packet_sequence_id=1, art_process_metadata=dict(pid=23, uid=10500))
    b.packet(
        packages_list=dict(
            packages=[
                dict(name="com.x1", uid=10300, version_code=1),
                dict(name="abcdefghijklmn", uid=10300, version_code=2),
                dict(name="com.solo", uid=10500, version_code=3),
            ]
        )
    )
    db = ingest_built(tmp_path, b)
    out = _query(
        db,
        "INCLUDE PERFETTO MODULE android.process_metadata;\n"
        "SELECT m.pid, process.name, m.process_name, m.shared_uid, m.package_name, m.version_code "
        "FROM android_process_metadata AS m JOIN process USING (upid) WHERE m.pid >= 20 ORDER BY m.pid;",
    )
    assert out["rows"] == [
        [20, "abcdefghijklmno", "abcdefghijklmno --x abcdefghijklmno", 1, "abcdefghijklmn", 2],
        [21, "abcdefghijklmno", "abcdefghijklmno", 1, "abcdefghijklmn", 2],
        [22, "com.example.abc", "zygote64", None, None, None],
        [23, None, None, None, "com.solo", 3],
    ]


def test_process_metadata_without_packages_or_users(tmp_path):
    b = TraceBuilder()
    _process_tree(b, (1, 0, "init", 0), (5, 1, "app", 10100))
    db = ingest_built(tmp_path, b)
    out = _query(
        db,
        "INCLUDE PERFETTO MODULE android.process_metadata;\n"
        "SELECT pid, uid, user_id, user_type, shared_uid, package_name, is_kernel_task "
        "FROM android_process_metadata WHERE upid != 0;",
    )
    assert out["rows"] == [[1, 0, 0, None, None, None, 1], [5, 10100, 0, None, None, None, 0]]


def android_trace(i: int) -> bytes:
    b = TraceBuilder()
    _process_tree(b, (1, 0, "init", 0), (100 + i, 1, f"com.app{i}", 10100 + i))
    b.packet(packages_list=dict(packages=[dict(name=f"com.app{i}", uid=10100 + i, version_code=i), dict(name="x")]))
    b.packet(user_list=dict(users=[dict(type=f"type{i}", uid=0), dict(type="s", uid=10 + i)]))
    b.packet(
        timestamp=10,
        trusted_packet_sequence_id=1,
        art_process_metadata=dict(pid=100 + i, uid=20000 + i, package_name=f"com.art{i}"),
    )
    return b.to_bytes()


@pytest.mark.parametrize("jobs", [2])
def test_jobs_ingest_is_the_serial_database(tmp_path, jobs):
    """`ingest --jobs`: package and user ids offset as a serial ingest numbers them; each input lists
    its own packages."""
    paths = []
    for i in range(3):
        path = tmp_path / f"android{i}.pftrace"
        path.write_bytes(android_trace(i))
        paths.append(str(path))
    serial, merged = tmp_path / "serial.db", tmp_path / "parallel.db"
    ingest(paths, str(serial))
    parallel_ingest(paths, str(merged), jobs=jobs)
    assert_same_database(serial, merged)
    db = TraceDB(merged)
    assert db.rows("SELECT id, package_name, uid FROM package_list ORDER BY id") == [
        (0, "com.app0", 10100),
        (1, "x", 0),
        (2, "com.art0", 20000),
        (3, "com.app1", 10101),
        (4, "x", 0),
        (5, "com.art1", 20001),
        (6, "com.app2", 10102),
        (7, "x", 0),
        (8, "com.art2", 20002),
    ]
    assert db.rows("SELECT id, android_user_id, type FROM __intrinsic_android_user_list ORDER BY id") == [
        (0, 0, "type0"),
        (1, 10, "s"),
        (2, 0, "type1"),
        (3, 11, "s"),
        (4, 0, "type2"),
        (5, 12, "s"),
    ]
