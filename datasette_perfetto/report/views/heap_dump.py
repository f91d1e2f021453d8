"""The `heap-dump` noun: what a heap dump holds, by type (trace_processor's heap_graph_object and
heap_graph_class, with retained sizes from the heap_graph_dominator tree computed at import)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from .. import format as fmt
from .. import report_pb2 as pb
from ..base import NOT_PRESENT, Cell, ReportRun, Table, View
from ..diff_spec import DiffSpec, Measure, diff_link
from ..filters import (
    CANNED_TOP,
    PROCESS_FLAGS,
    canned_dim,
    canned_sort,
    dim_terms,
    in_canned_range,
    optional_terms,
    owner_terms,
)
from ..format import byte_size
from ..links import glob_escape
from .calltree import percent

SORT_KEYS = {
    "retained": lambda r: (-r[1][0], -r[1][2], r[0]),
    "count": lambda r: (-r[1][1], -r[1][0], r[0]),
    "self": lambda r: (-r[1][2], -r[1][0], r[0]),
    "name": lambda r: (r[0],),
}


class TypesView(View):
    noun = "heap-dump"
    name = "types"
    title = "Heap dump by type"
    description = (
        "The latest heap dump of each process in scope, by type: retained size (memory freed if every "
        "object of the type went away) and live (reachable) objects."
    )
    result_field = "heap_dump_types"
    uses_top = True
    flags = frozenset({"pid", "process", "time", "name", "min_count", "sort", "dim"})
    sorts = ("retained", "count", "self", "name")
    canned_sql = f"""WITH dump AS (
  -- The latest dump of each process in scope.
  SELECT o.upid, max(o.graph_sample_ts) AS ts
  FROM heap_graph_object o
  LEFT JOIN process p ON p.id = o.upid
  WHERE {optional_terms((*PROCESS_FLAGS, "time"), time=in_canned_range("o.graph_sample_ts"))}
    AND {canned_dim("process", "o.upid")}
  GROUP BY o.upid
)
-- Retained size here sums each object's retained size: objects of a type dominated by another of the same type
-- count twice (the report counts them once).
SELECT coalesce(c.deobfuscated_name, c.name, '(unknown type)') AS type,
       sum(d.retained_size) AS retained_size, count(*) AS live_objects, sum(o.self_size) AS self_size
FROM heap_graph_object o
JOIN dump ON dump.upid = o.upid AND dump.ts = o.graph_sample_ts
LEFT JOIN heap_graph_class c ON c.id = o.type_id
LEFT JOIN heap_graph_dominator d ON d.object_id = o.id
WHERE o.reachable AND (:name = '' OR coalesce(c.deobfuscated_name, c.name, '(unknown type)') GLOB :name)
GROUP BY 1
HAVING count(*) >= CAST(coalesce(nullif(:min_count, ''), 0) AS INTEGER)
ORDER BY CASE {canned_sort(sorts[0])} WHEN 'retained' THEN -sum(d.retained_size)
         WHEN 'count' THEN -count(*) WHEN 'self' THEN -sum(o.self_size) END, 1
LIMIT {CANNED_TOP}"""

    def has_data(self, run: ReportRun) -> bool:
        return run.has_tables("heap_graph_object", "heap_graph_class") and bool(
            run.value("any heap graph object", "SELECT EXISTS(SELECT 1 FROM heap_graph_object)")
        )

    def compute(self, run: ReportRun, out: pb.HeapDumpTypes) -> None:
        if not self.has_data(run):
            out.not_present = True
            return
        s = run.scope
        w = owner_terms(run, threads=False)
        w.extend(dim_terms(run, "process", "o.upid"))
        if s.time is not None:
            start, end = run.time_range()
            w.add(
                "o.graph_sample_ts >= :range_start AND o.graph_sample_ts < :range_end", range_start=start, range_end=end
            )
        join = "\nLEFT JOIN process p ON p.id = o.upid" if s.pid is not None or s.process is not None else ""
        dumps = run.query(
            "the latest heap dump of each process in scope",
            f"""SELECT o.upid, max(o.graph_sample_ts) AS ts,
       count(DISTINCT o.graph_sample_ts) AS dumps
FROM heap_graph_object o{join}
{w.sql()}
GROUP BY o.upid""",
            w.params,
        )
        out.dump_count = len(dumps)
        out.skipped_dumps = sum(d["dumps"] - 1 for d in dumps)
        out.has_dominators = run.has_tables("heap_graph_dominator")
        if not dumps:
            return
        chosen = [[d["upid"], d["ts"]] for d in dumps]
        retained = (
            "d.retained_size, d.idom_object_id" if out.has_dominators else "0 AS retained_size, NULL AS idom_object_id"
        )
        dominator = "\nLEFT JOIN heap_graph_dominator d ON d.object_id = o.id" if out.has_dominators else ""
        objects = run.query(
            "reachable objects of those dumps, with their type and dominator",
            f"""SELECT o.id, coalesce(c.deobfuscated_name, c.name, '(unknown type)') AS type, o.self_size,
       coalesce(o.native_size, 0) AS native_size, {retained}
FROM heap_graph_object o
JOIN (SELECT json_extract(value, '$[0]') AS upid, json_extract(value, '$[1]') AS ts FROM json_each(:dumps)) dump
  ON dump.upid = o.upid AND dump.ts = o.graph_sample_ts
LEFT JOIN heap_graph_class c ON c.id = o.type_id{dominator}
WHERE o.reachable""",
            {"dumps": json.dumps(chosen)},
        )
        by_type = _by_type(objects)
        out.total_objects = len(objects)
        out.total_size = sum(r["self_size"] or 0 for r in objects)
        keep = None
        if s.name is not None:
            keep = {
                r["type"]
                for r in run.query(
                    "types matching name",
                    """SELECT value AS type FROM json_each(:types)
WHERE value GLOB :name""",
                    {"types": json.dumps(sorted(by_type)), "name": s.name},
                )
            }
        rows = [
            (name, v)
            for name, v in by_type.items()
            if (keep is None or name in keep) and (s.min_count is None or v[1] >= s.min_count)
        ]
        sort = self.sort_key(s)
        if sort == "retained" and not out.has_dominators:
            sort = "self"
        rows.sort(key=SORT_KEYS[sort])
        out.total_rows = len(rows)
        for name, (ret, live, self_size, native) in rows[: s.top]:
            out.rows.add(
                name=name,
                retained_size=ret,
                live_objects=live,
                self_size=self_size,
                native_size=native,
                retained_percent=percent(ret, out.total_size),
                avg_size=self_size // live if live else 0,
            )
        run.truncation(min(len(rows), s.top), len(rows), "types")
        if out.skipped_dumps:
            run.footnote(
                f"{out.skipped_dumps} earlier dumps of the same processes not shown; pick one with time",
                run.link(self.noun, self.name),
            )
        if not out.has_dominators:
            run.footnote(
                "retained sizes need heap_graph_dominator, which this database lacks; sizes are shallow",
                run.link(self.noun, self.name, sort="self"),
            )
        if out.rows:
            top = out.rows[0].name
            run.next_step(f"Only {top}", run.link(self.noun, self.name, name=glob_escape(top)))

    def tables(self, msg: pb.HeapDumpTypes, run: ReportRun) -> list[Table]:
        rows = [
            [
                Cell(r.name, run.link(self.noun, self.name, name=glob_escape(r.name))),
                Cell(
                    byte_size(r.retained_size) if msg.has_dominators else "-",
                    title=f"{r.retained_size} bytes ({r.retained_percent:.1f}% of the reachable heap)",
                ),
                Cell(fmt.number(r.live_objects)),
                Cell(byte_size(r.self_size), title=f"{r.self_size} bytes shallow, {r.native_size} native"),
            ]
            for r in msg.rows
        ]
        title = (
            f"Heap Dump ({fmt.plural(msg.total_objects, 'live object', fmt.number(msg.total_objects))}, "
            f"{byte_size(msg.total_size)}, {fmt.plural(msg.dump_count, 'dump')}, {fmt.plural(msg.total_rows, 'type')})"
        )
        return [
            Table(
                title,
                ("Type", "Retained size", "Live objects", "Self size"),
                rows,
                empty=NOT_PRESENT if msg.not_present else "(no heap dump in scope)",
            )
        ]


def _by_type(objects: list[sqlite3.Row]) -> dict[str, list[int]]:
    """type -> [retained, live objects, self size, native size]. An object's retained size counts for its type
    only when no object above it in the dominator tree has the same type (it is already in that one's)."""
    out: dict[str, list[int]] = {}
    type_of: dict[int, str] = {}
    children: dict[int, list[int]] = {}
    retained_of: dict[int, int] = {}
    for r in objects:
        row = out.setdefault(r["type"], [0, 0, 0, 0])
        row[1] += 1
        row[2] += r["self_size"] or 0
        row[3] += r["native_size"] or 0
        type_of[r["id"]] = r["type"]
        retained_of[r["id"]] = r["retained_size"] or 0
        children.setdefault(r["idom_object_id"], []).append(r["id"])
    # Roots of the dominator forest: objects whose dominator is the super-root (NULL) or outside these dumps.
    roots = [oid for parent, kids in children.items() if parent is None or parent not in type_of for oid in kids]
    active: dict[str, int] = {}
    stack: list[tuple[int, bool]] = [(oid, False) for oid in roots]
    while stack:
        oid, leaving = stack.pop()
        kind = type_of[oid]
        if leaving:
            active[kind] -= 1
            continue
        if not active.get(kind):
            out[kind][0] += retained_of[oid]
        active[kind] = active.get(kind, 0) + 1
        stack.append((oid, True))
        stack.extend((kid, False) for kid in children.get(oid, ()))
    return out


class TypesDiff(DiffSpec):
    """Joined on the type (class) name; each side is its latest dump per process, as the view reads it.
    avg_size is the per-object average shallow size (self size / live objects)."""

    noun, view, field = "heap-dump", "types", "heap_dump_types_diff"
    title, what = "Heap Dump", "types"
    key_fields, key_headers = ("name",), ("Type",)
    measures = (
        Measure("retained_size", "retained", "bytes"),
        Measure("live_objects", "objects", "count"),
        Measure("self_size", "self size", "bytes"),
        Measure("native_size", "native", "bytes"),
        Measure("avg_size", "avg", "bytes", "derived"),
        Measure("retained_percent", "retained%", "percent"),
    )
    sorts = {"retained": "retained_size", "count": "live_objects", "self": "self_size", "name": ""}
    display = ("retained_size", "live_objects", "avg_size")
    shown_count = 3
    row_filters = {"min_count": "live_objects"}
    counts_rows = False

    def derive(self, row: Any) -> None:
        row.avg_size = row.self_size // row.live_objects if row.live_objects else 0

    def default_sort(self, base_msg: Any, target_msg: Any) -> str:
        # Without retained sizes on a side (no heap_graph_dominator), the shallow size, as the view does.
        if any(msg is not None and not msg.not_present and not msg.has_dominators for msg in (base_msg, target_msg)):
            return "self"
        return "retained"

    def fill_extra(self, out: Any, base_msg: Any, target_msg: Any) -> None:
        for side, msg in (("baseline", base_msg), ("target", target_msg)):
            setattr(out, f"{side}_total_objects", msg.total_objects if msg is not None else 0)
            setattr(out, f"{side}_total_size", msg.total_size if msg is not None else 0)
        out.has_dominators = all(msg is None or msg.has_dominators for msg in (base_msg, target_msg))

    def key_cells(self, row: Any, run: ReportRun, out: Any) -> list[Cell]:
        return [Cell(row.name, diff_link(run, row, self.noun, self.view, name=glob_escape(row.name)))]


VIEWS = [TypesView()]
DIFFS: list[DiffSpec] = [TypesDiff()]
