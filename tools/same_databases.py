"""Is a refactoring behaviour-preserving? Ingest every real trace and compare the databases.

    python tools/same_databases.py save DIR      # ingest the shared traces into DIR (before the change)
    python tools/same_databases.py check DIR     # ingest them again and compare table by table with DIR

Every table and view is compared row for row (in rowid order for tables, in a sorted
order for views), except `trace_file`'s and `metadata`'s paths and times, which name
the file and the moment of the import. Exits 1 listing the tables that differ.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from shared_data import TRACES  # noqa: E402  (after the path is set)

INPUTS = {
    "chrome_startup_proto": ["chrome_startup.pftrace"],
    "chrome_startup_json": ["chrome_startup.json.gz"],
    "chrome_v8_cpu_profile": ["chrome_v8_cpu_profile.json.gz"],
    "pytorch_ddp": ["pytorch_ddp/rank0.json.gz", "pytorch_ddp/rank1.json.gz"],
    "demo": [],  # the bundled demo trace, written fresh
}
# Columns that record where and when the import ran rather than what the trace holds.
VOLATILE = {"trace_file": {"name"}, "metadata": {"str_value"}}


def build(directory: str) -> None:
    from datasette_perfetto.ingest import ingest
    from datasette_perfetto.trace_builder import write_demo_trace

    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, inputs in INPUTS.items():
            paths = [str(TRACES / p) for p in inputs] or [str(write_demo_trace(os.path.join(tmp, "demo.pftrace")))]
            ingest(paths, os.path.join(directory, f"{name}.db"))
            print(f"ingested {name}", file=sys.stderr)


def relations(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(
        conn.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    )


def rows(conn: sqlite3.Connection, name: str, kind: str) -> tuple[list[str], list[tuple]]:
    cursor = conn.execute(f"SELECT * FROM [{name}]" + (" ORDER BY rowid" if kind == "table" else ""))
    columns = [d[0] for d in cursor.description]
    skip = {i for i, c in enumerate(columns) if c in VOLATILE.get(name, ())}
    if name == "metadata":  # only file paths and import times are volatile there
        keep = [
            tuple(
                None if i in skip and r[columns.index("name")] in ("trace_uuid_path", "import_time") else v
                for i, v in enumerate(r)
            )
            for r in cursor
        ]
    else:
        keep = [tuple(v for i, v in enumerate(r) if i not in skip) for r in cursor]
    return columns, keep if kind == "table" else sorted(keep, key=repr)


def same_rows_in_another_order(columns: list[str], rows_a: list[tuple], rows_b: list[tuple]) -> bool:
    keep = [i for i, c in enumerate(columns) if c != "id"]
    a = sorted((tuple(r[i] for i in keep) for r in rows_a), key=repr)
    b = sorted((tuple(r[i] for i in keep) for r in rows_b), key=repr)
    return a == b


def compare(before: str, after: str) -> list[str]:
    a, b = sqlite3.connect(before), sqlite3.connect(after)
    problems = []
    ra, rb = relations(a), relations(b)
    if ra != rb:
        problems.append(
            f"relations differ: only before {sorted(set(ra) - set(rb))}, only after {sorted(set(rb) - set(ra))}"
        )
    for name, kind in ra.items():
        if rb.get(name) != kind:
            continue
        ca, rows_a = rows(a, name, kind)
        cb, rows_b = rows(b, name, kind)
        if ca != cb:
            problems.append(f"{name}: columns differ")
        elif rows_a != rows_b and same_rows_in_another_order(ca, rows_a, rows_b):
            # The two-process import may write a table's rows in another order from run to run (args, whose
            # ids number the rows in the order written and are referenced by nothing).
            print(f"  {name}: the same rows in another order", file=sys.stderr)
        elif rows_a != rows_b:
            first = next((i for i, (x, y) in enumerate(zip(rows_a, rows_b)) if x != y), min(len(rows_a), len(rows_b)))
            problems.append(f"{name}: {len(rows_a)} rows before, {len(rows_b)} after; first difference at row {first}")
    return problems


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in ("save", "check"):
        sys.exit(__doc__)
    command, directory = sys.argv[1], sys.argv[2]
    if command == "save":
        build(directory)
        return
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        build(tmp)
        for name in INPUTS:
            problems = compare(os.path.join(directory, f"{name}.db"), os.path.join(tmp, f"{name}.db"))
            tables = len(relations(sqlite3.connect(os.path.join(tmp, f"{name}.db"))))
            print(f"{name}: " + ("; ".join(problems) if problems else f"identical ({tables} tables and views)"))
            failed |= bool(problems)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
