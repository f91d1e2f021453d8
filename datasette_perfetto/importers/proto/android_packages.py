"""Android packages and users (`TracePacket.packages_list`, the android.packages_list data source, and
`TracePacket.user_list`, android.user_list) → `package_list` and `__intrinsic_android_user_list`, as
trace_processor's AndroidProbesModule reads them: at tokenize time, in file order, whatever the
packet's timestamp (the packets have none that matters).

- packages_list: one `package_list` row per package, `name` NULL when the package has none ('' when
  it is empty), `uid` the uint64 read as int64, `debuggable` / `profileable_from_shell` 0 or 1,
  `version_code` 0 when absent. A package whose name (absent read as '') an earlier packages_list
  packet of the same trace file and machine already listed is skipped, whatever its other fields.
  Each packet sets `packages_list_has_read_errors` and `packages_list_has_parse_errors` to its
  `read_error` / `parse_error` (the last packet wins, false included).
- ART's process metadata (profiles.py) adds the package it names, with uid, debuggable 0,
  profileable_from_shell 0 and version_code 0, unless the table already has that (name, uid).
- user_list: one row per Android user id (of a machine), its `type` the last one seen (NULL when
  absent), the row where the user was first seen. `user_list_errors` counts the packets with a
  negative `error`.
"""

from __future__ import annotations

from ..common.values import UINT64_MASK, signed, text
from .packet_handlers import HandlerContext, tokenize_handler

PACKAGE_TABLE = "package_list"
USER_TABLE = "__intrinsic_android_user_list"


class PackageRows:
    """The package_list rows of one trace file: every (name, uid) in the table (ART's packages are
    added once per pair)."""

    def __init__(self) -> None:
        self.pairs: set[tuple[str | None, int]] = set()

    def insert(self, storage, name: str | None, uid: int, debuggable: int, profileable: int, version: int) -> None:
        storage.insert(PACKAGE_TABLE, (name, uid, debuggable, profileable, version))
        self.pairs.add((name, uid))


def package_rows(trace) -> PackageRows:
    """The PackageRows of `trace`'s file (shared by its machines' contexts, as the table is)."""
    root = trace.parent if getattr(trace, "parent", None) is not None else trace
    found = root.__dict__.get("_package_rows")
    if found is None:
        found = root.__dict__["_package_rows"] = PackageRows()
    return found


def add_art_package(trace, name: str, uid: int) -> None:
    """The package an ArtProcessMetadata packet names (with its uid), unless already in the table."""
    rows = package_rows(trace)
    if (name, uid) not in rows.pairs:
        rows.insert(trace.storage, name, uid, 0, 0, 0)


class UserRows:
    """The users of one machine's user_list packets: android user id -> [row id, type]; written once
    parsing is done, each at the id it got when first seen."""

    def __init__(self, storage) -> None:
        self.storage = storage
        self.users: dict[int, list] = {}

    def add(self, user_id: int, user_type: str | None) -> None:
        row = self.users.get(user_id)
        if row is None:
            self.users[user_id] = [self.storage.reserve_id(USER_TABLE), user_type]
        else:
            row[1] = user_type

    def finish(self) -> None:
        for user_id, (row_id, user_type) in self.users.items():
            self.storage.write(USER_TABLE, (row_id, user_type, user_id))
        self.users.clear()


@tokenize_handler("packages_list")
def _packages_list(importer, packet, seq, ts: int) -> None:
    parser: HandlerContext = importer.ftrace
    trace = parser.trace
    packages = packet.packages_list
    parser.stats.set("packages_list_has_read_errors", int(packages.read_error))
    parser.stats.set("packages_list_has_parse_errors", int(packages.parse_error))
    # Names listed before, by this machine's packets (trace_processor's module is one per machine).
    listed = parser.state("packages_listed", set)
    rows = package_rows(trace)
    for package in packages.packages:
        name = text(package.name) if package.HasField("name") else None
        key = name or ""
        if key in listed:
            continue
        rows.insert(
            trace.storage,
            name,
            signed(package.uid & UINT64_MASK),
            int(package.debuggable),
            int(package.profileable_from_shell),
            package.version_code,
        )
        listed.add(key)


@tokenize_handler("user_list")
def _user_list(importer, packet, seq, ts: int) -> None:
    parser: HandlerContext = importer.ftrace
    users = packet.user_list
    if users.error < 0:
        parser.stats.inc("user_list_errors")
    rows = parser.state("android_users", lambda: UserRows(parser.trace.storage))
    for user in users.users:
        rows.add(user.uid, text(user.type) if user.HasField("type") else None)
