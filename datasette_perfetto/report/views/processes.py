"""The `processes` noun: which processes the trace has, and where their time went."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ...pages import data
from .. import format as fmt
from .. import report_pb2 as pb
from ..base import REAL_PROCESS, Cell, Link, ReportRun, Table, View, count_cell
from ..diff_spec import DiffSpec, Measure, diff_link
from ..filters import (
    CANNED_TOP,
    PROCESS_FLAGS,
    Where,
    canned_dim,
    canned_sort,
    dim_terms,
    optional_terms,
    owner_terms,
)
from ..grouping import dim_params, grouping, process_value
from ..links import glob_escape, scoped_link
from ..subtitles import owner_dims, process_subtitles, with_dims, with_subtitle
from .slices import OVERLAPS_START

TOP_THREADS = 3

SORT_COLUMNS = {
    "cpu": "cpu_time DESC, slice_count DESC, pid, upid",
    "slices": "slice_count DESC, cpu_time DESC, pid, upid",
    "threads": "thread_count DESC, cpu_time DESC, slice_count DESC, pid, upid",
    "name": "name IS NULL, name, pid, upid",
    "pid": "pid, upid",
}


def _thread_cpu(run: ReportRun, params: dict, utids: str = "") -> str:
    """A query of (utid, cpu_time) per thread that ran: precomputed for the whole trace (report_thread_sched),
    else summed from sched clipped to the range. `utids` optionally restricts it to a subquery's threads."""
    if run.scope.time is None:
        only = f"\n  WHERE rs.utid IN ({utids})" if utids else ""
        return f"SELECT rs.utid, rs.cpu_time FROM report_thread_sched rs{only}"
    start, end = run.time_range()
    params.update(range_start=start, range_end=end, trace_end=run.trace.end)
    # A still-running sched slice (dur -1) runs until the end of the trace.
    dur = "CASE WHEN sc.dur < 0 THEN max(:trace_end - sc.ts, 0) ELSE sc.dur END"
    only = f" AND sc.utid IN ({utids})" if utids else ""
    return f"""SELECT sc.utid, sum(min(sc.ts + {dur}, :range_end) - max(sc.ts, :range_start)) AS cpu_time
  FROM sched sc
  WHERE sc.utid != 0{only} AND sc.ts < :range_end AND sc.ts + {dur} > :range_start
  GROUP BY sc.utid"""


def _slice_counts(run: ReportRun, params: dict) -> str:
    """Slices per slice track: precomputed for the whole trace, else those in the range (as the slices views
    count them: every slice with a part inside it)."""
    if run.scope.time is None:
        return """SELECT tr.id AS track_id, tr.utid, tr.upid, st.event_count AS slice_count
  FROM track tr JOIN report_track_stats st ON st.track_id = tr.id
  WHERE tr.event_type = 'slice'"""
    start, end = run.time_range()
    params.update(range_start=start, range_end=end)
    # Not for a range starting past the trace's end: unfinished slices have no part in it, and the cells would
    # count them.
    cells = data.track_cells(run.has_tables("report_track_event_cell"), run.query) if start <= run.trace.end else None
    if cells is not None:
        # From the per track cells: the slices starting before the range's end less the finished ones ending
        # before its start (the rest have a part inside it).
        params.update({**cells.params("range_start", start), **cells.params("range_end", end)})
        return f"""SELECT tr.id AS track_id, tr.utid, tr.upid,
         {cells.starting_before("range_end", end, "slice", "s")} - {cells.finished_before("range_start")}
           AS slice_count
  FROM track tr
  WHERE tr.event_type = 'slice'"""
    if run.outside_is_shorter() and run.has_tables("report_track_stats"):
        # Over most of the trace, fewer slices lie outside the range: each track's total less those starting
        # from its end on and those before it that end before it (slices starting inside it all count).
        return f"""SELECT tr.id AS track_id, tr.utid, tr.upid,
         st.event_count
         - (SELECT count(*) FROM slice s WHERE s.track_id = tr.id AND s.ts >= :range_end)
         - (SELECT count(*) FROM slice s WHERE s.track_id = tr.id AND s.ts < :range_start
              AND NOT ({OVERLAPS_START}))
           AS slice_count
  FROM track tr JOIN report_track_stats st ON st.track_id = tr.id
  WHERE tr.event_type = 'slice'"""
    return f"""SELECT tr.id AS track_id, tr.utid, tr.upid,
         (SELECT count(*) FROM slice s WHERE s.track_id = tr.id AND s.ts < :range_end
            AND s.ts >= :range_start - (SELECT max(max_dur) FROM report_slice_name)
            AND ({OVERLAPS_START}))
           AS slice_count
  FROM track tr
  WHERE tr.event_type = 'slice'"""


# Slices per process from track_slices(utid, upid, slice_count): a thread track's process is its thread's.
PROCESS_SLICES = """process_slices AS (
  SELECT coalesce(ts.upid, th.upid) AS upid, sum(ts.slice_count) AS slice_count
  FROM track_slices ts LEFT JOIN thread th ON th.id = ts.utid
  GROUP BY 1
)"""


class ProcessesTableView(View):
    noun = "processes"
    name = "table"
    title = "Processes"
    description = (
        "Every process with its thread count, CPU time (from scheduling data, when the trace has it), "
        "CPU time as a share of the range (can exceed 100% on several CPUs), the number of slices on "
        "its own and its threads' tracks, and its busiest threads (by CPU time, else by slice count). "
        "process and name are globs on the process name; min_count hides processes with fewer slices; "
        "with time, CPU time is clipped to the range and slices with a part inside it are counted."
    )
    result_field = "processes_table"
    uses_top = True
    flags = frozenset({"pid", "process", "name", "time", "min_count", "sort", "dim", "group_by"})
    sorts = ("cpu", "slices", "threads", "name", "pid")
    canned_sql = f"""WITH range AS (
  SELECT coalesce(report_range_start(:time), trace_start()) AS range_start,
         coalesce(report_range_end(:time), trace_end()) AS range_end
),
thread_cpu AS (
  -- The whole trace: precomputed at import; a time range: sched clipped to it.
  SELECT rs.utid, rs.cpu_time FROM report_thread_sched rs WHERE :time = ''
  UNION ALL
  SELECT r.utid, sum(min(r.ts + r.dur, range_end) - max(r.ts, range_start))
  FROM (SELECT sc.utid, sc.ts, CASE WHEN sc.dur < 0 THEN max(trace_end() - sc.ts, 0) ELSE sc.dur END AS dur
        FROM sched sc WHERE sc.utid != 0) r, range
  WHERE :time != '' AND r.ts < range_end AND r.ts + r.dur > range_start
  GROUP BY r.utid
),
process_cpu AS (
  SELECT th.upid, sum(tc.cpu_time) AS cpu_time FROM thread_cpu tc JOIN thread th ON th.id = tc.utid GROUP BY th.upid
),
track_slices AS (
  -- The whole trace: precomputed at import; a time range: slices with a part inside it.
  SELECT tr.id, tr.utid, tr.upid,
         CASE WHEN :time = '' THEN coalesce((SELECT event_count FROM report_track_stats WHERE track_id = tr.id), 0)
              ELSE (SELECT count(*) FROM slice s WHERE s.track_id = tr.id
                    AND s.ts < (SELECT range_end FROM range)
                    AND (s.dur < 0 AND trace_end() >= (SELECT range_start FROM range)
                         OR s.ts + s.dur >= (SELECT range_start FROM range))) END
           AS slice_count
  FROM track tr WHERE tr.event_type = 'slice'
),
{PROCESS_SLICES},
processes AS (
  SELECT p.id AS upid, p.pid, p.name,
         (SELECT count(*) FROM thread t WHERE t.upid = p.id) AS thread_count,
         coalesce(c.cpu_time, 0) AS cpu_time,
         round(100.0 * coalesce(c.cpu_time, 0) / max(range_end - range_start, 1), 1) AS percent_of_trace,
         coalesce(ps.slice_count, 0) AS slice_count
  FROM process p
  LEFT JOIN process_cpu c ON c.upid = p.id
  LEFT JOIN process_slices ps ON ps.upid = p.id, range
  WHERE {REAL_PROCESS.format(p="p")}
    AND {optional_terms((*PROCESS_FLAGS, "name"), name="p.name GLOB :name")}
    AND {canned_dim("process")}
)
SELECT * FROM processes
WHERE slice_count >= coalesce(CAST(nullif(:min_count, '') AS INTEGER), 0)
ORDER BY CASE {canned_sort(sorts[0])} WHEN 'cpu' THEN -cpu_time WHEN 'slices' THEN -slice_count
                                                 WHEN 'threads' THEN -thread_count END,
         CASE {canned_sort(sorts[0])} WHEN 'name' THEN name IS NULL END,
         CASE {canned_sort(sorts[0])} WHEN 'name' THEN name END,
         CASE WHEN {canned_sort(sorts[0])} IN ('cpu', 'slices', 'threads') THEN -cpu_time END,
         CASE WHEN {canned_sort(sorts[0])} IN ('cpu', 'slices', 'threads') THEN -slice_count END,
         pid, upid
LIMIT {CANNED_TOP}"""

    def has_data(self, run: ReportRun) -> bool:
        real = REAL_PROCESS.format(p="p")
        return bool(run.value("any process", f"SELECT EXISTS(SELECT 1 FROM process p WHERE {real})"))

    def compute(self, run: ReportRun, out: pb.ProcessesTable) -> None:
        s = run.scope
        group = grouping(run, self)
        has_sched = bool(run.value("does the trace have scheduling data", "SELECT EXISTS(SELECT 1 FROM sched)"))
        out.top_threads_by = "cpu_time" if has_sched else "slice_count"
        params: dict = {}
        w = Where()
        w.add(REAL_PROCESS.format(p="p"))
        w.extend(owner_terms(run, threads=False))
        w.extend(dim_terms(run, "process"))
        if s.name is not None:
            w.add("p.name GLOB :name", name=s.name)
        params.update(w.params)
        rows_from = "processes"
        if group is not None:
            # One row per value of the dimension, its processes pooled.
            out.group_by = group.name
            params.update(group.params)
            rows_from = f"""(
  SELECT {process_value("processes.upid")} AS group_value, NULL AS upid, NULL AS pid, NULL AS name,
         sum(thread_count) AS thread_count, sum(cpu_time) AS cpu_time, sum(slice_count) AS slice_count
  FROM processes
  GROUP BY group_value
)"""
        having = ""
        if s.min_count is not None:
            having = "WHERE slice_count >= :min_count"
            params["min_count"] = s.min_count
        rows = run.query(
            "processes in scope, top by the sort key",
            f"""WITH thread_cpu AS (
  {_thread_cpu(run, params)}
),
process_cpu AS (
  SELECT th.upid, sum(tc.cpu_time) AS cpu_time
  FROM thread_cpu tc JOIN thread th ON th.id = tc.utid
  GROUP BY th.upid
),
track_slices AS (
  {_slice_counts(run, params)}
),
{PROCESS_SLICES},
processes AS (
  SELECT p.id AS upid, p.pid, p.name,
         (SELECT count(*) FROM thread t WHERE t.upid = p.id) AS thread_count,
         coalesce(c.cpu_time, 0) AS cpu_time,
         coalesce(ps.slice_count, 0) AS slice_count
  FROM process p
  LEFT JOIN process_cpu c ON c.upid = p.id
  LEFT JOIN process_slices ps ON ps.upid = p.id
  {w.sql()}
)
SELECT *, count(*) OVER () AS total_rows,
       -- Threads that ran but belong to no known process: a footnote says so rather than dropping them.
       (SELECT count(*) FROM thread_cpu tc JOIN thread th ON th.id = tc.utid
        WHERE th.upid IS NULL AND tc.cpu_time > 0) AS orphan_threads,
       (SELECT coalesce(sum(tc.cpu_time), 0) FROM thread_cpu tc JOIN thread th ON th.id = tc.utid
        WHERE th.upid IS NULL) AS orphan_cpu_time
FROM {rows_from} {having}
ORDER BY {SORT_COLUMNS[self.sort_key(s)]}{", length(group_value), group_value" if group is not None else ""}
LIMIT :top""",
            {**params, "top": s.top},
        )
        out.total_rows = rows[0]["total_rows"] if rows else 0
        range_dur = run.range_dur()
        for r in rows:
            row = out.rows.add(
                upid=r["upid"],
                pid=r["pid"] or 0,
                name=r["name"] or "",
                thread_count=r["thread_count"],
                cpu_time=r["cpu_time"] or 0,
                slice_count=r["slice_count"] or 0,
            )
            row.percent_of_trace = 100.0 * row.cpu_time / range_dur
            if group is not None:
                row.name = group.label(r["group_value"])
                row.group_value = r["group_value"] or ""
        if group is not None:
            run.truncation(len(rows), out.total_rows, f"{group.name} values")
            if out.rows and out.rows[0].group_value:
                top = out.rows[0]
                link = scoped_link(
                    run, "processes", "table", dim=dim_params(run, group.name, top.group_value), group_by=None
                )
                run.next_step(f"The processes of {top.name}", link)
            return
        subtitles = process_subtitles(run, [r.upid for r in out.rows])
        dims = owner_dims(run, "process", [r.upid for r in out.rows])
        for row in out.rows:
            row.subtitle = subtitles.get(row.upid, "")
            row.dims.extend(dims.get(row.upid, []))
        if out.rows:
            self._top_threads(run, out, has_sched)
        run.truncation(len(rows), out.total_rows, "processes")
        if has_sched and s.pid is None and s.process is None and s.name is None:
            self._orphans(run, rows[0] if rows else None)
        if out.rows:
            self._next_steps(run, out.rows[0], has_sched)

    def _top_threads(self, run: ReportRun, out: pb.ProcessesTable, has_sched: bool) -> None:
        params: dict = {"upids": json.dumps([r.upid for r in out.rows]), "per_process": TOP_THREADS}
        order = "cpu_time DESC, slice_count DESC" if has_sched else "slice_count DESC"
        rows = run.query(
            "the busiest threads of those processes",
            f"""WITH threads AS (
  SELECT id AS utid, upid, tid, name FROM thread WHERE upid IN (SELECT value FROM json_each(:upids))
),
thread_cpu AS (
  {_thread_cpu(run, params, "SELECT utid FROM threads")}
),
track_slices AS (
  {_slice_counts(run, params)} AND tr.utid IN (SELECT utid FROM threads)
),
-- MATERIALIZED: each thread's slices counted once, not once per use of slice_count.
ranked AS MATERIALIZED (
  SELECT t.upid, t.tid, t.name, coalesce(c.cpu_time, 0) AS cpu_time,
         coalesce((SELECT sum(slice_count) FROM track_slices ts WHERE ts.utid = t.utid), 0) AS slice_count
  FROM threads t LEFT JOIN thread_cpu c ON c.utid = t.utid
)
SELECT * FROM (
  SELECT *, row_number() OVER (PARTITION BY upid ORDER BY {order}, tid) AS rank FROM ranked
  WHERE {"cpu_time > 0" if has_sched else "slice_count > 0"}
)
WHERE rank <= :per_process
ORDER BY upid, rank""",
            params,
        )
        by_upid = {r.upid: r for r in out.rows}
        for t in rows:
            value = t["cpu_time"] if has_sched else t["slice_count"]
            by_upid[t["upid"]].top_threads.add(name=f"{t['name'] or '?'} [{t['tid']}]", value=value)

    def _orphans(self, run: ReportRun, first_row: sqlite3.Row | None) -> None:
        """Threads that ran but belong to no known process: a footnote, not silently dropped."""
        if first_row is None:  # no process rows to carry the figures: ask for them alone
            params: dict = {}
            first_row = run.query(
                "CPU time of threads with no known process",
                f"""WITH thread_cpu AS (
  {_thread_cpu(run, params)}
)
SELECT count(*) AS orphan_threads, coalesce(sum(tc.cpu_time), 0) AS orphan_cpu_time
FROM thread_cpu tc JOIN thread th ON th.id = tc.utid
WHERE th.upid IS NULL AND tc.cpu_time > 0""",
                params,
            )[0]
        if first_row["orphan_threads"]:
            n = first_row["orphan_threads"]
            run.footnote(
                f"{fmt.plural(n, 'thread')} with no known process ran for "
                f"{fmt.duration(first_row['orphan_cpu_time'])} (not in this table); see them by thread",
                scoped_link(run, "scheduling", "summary"),
            )

    def _next_steps(self, run: ReportRun, top: pb.ProcessesTable.Row, has_sched: bool) -> None:
        label = with_subtitle(f"{top.name or '?'} [{top.pid}]", top.subtitle)
        # The pid and, where pids repeat across ranks or machines, the process's dimension values.
        only: dict[str, str | list[str] | None] = {"pid": str(top.pid), **with_dims(run, top.dims)}
        if top.slice_count:
            run.next_step(f"Slices of {label}", scoped_link(run, "slices", "table", **only))
        if has_sched:
            run.next_step(f"Scheduling of {label}'s threads", scoped_link(run, "scheduling", "summary", **only))
        run.next_step(f"Tracks of {label}", scoped_link(run, "tracks", "table", **only))
        run.next_step(f"Counters of {label}", scoped_link(run, "counters", "list", **only))

    def _drill(self, run: ReportRun, row: pb.ProcessesTable.Row, has_sched: bool) -> Link:
        only: dict[str, str | list[str] | None] = {"pid": str(row.pid), **with_dims(run, row.dims)}
        if row.slice_count:
            return scoped_link(run, "slices", "table", **only)
        if has_sched and row.cpu_time:
            return scoped_link(run, "scheduling", "summary", **only)
        return scoped_link(run, "tracks", "table", **only)

    def tables(self, msg: pb.ProcessesTable, run: ReportRun) -> list[Table]:
        has_sched = msg.top_threads_by == "cpu_time"
        rows = []
        for r in msg.rows:
            if msg.group_by:
                link = scoped_link(
                    run, "processes", "table", dim=dim_params(run, msg.group_by, r.group_value), group_by=None
                )
                rows.append(
                    [
                        Cell(r.name, link if r.group_value else None),
                        Cell("-"),
                        Cell(str(r.thread_count)),
                        Cell(fmt.duration(r.cpu_time) if has_sched else "-"),
                        Cell(fmt.percent(r.percent_of_trace) if has_sched else "-"),
                        count_cell(r.slice_count),
                        Cell("-"),
                    ]
                )
                continue
            if has_sched:
                threads = ", ".join(f"{t.name} {fmt.duration(t.value)}" for t in r.top_threads)
            else:
                threads = ", ".join(f"{t.name} ({fmt.count(t.value)})" for t in r.top_threads)
            rows.append(
                [
                    Cell(
                        r.name or "(no name)",
                        self._drill(run, r, has_sched),
                        title=f"upid {r.upid}",
                        href=run.linker.details("process", r.upid),
                        subtitle=r.subtitle,
                    ),
                    Cell(str(r.pid), scoped_link(run, "tracks", "table", pid=str(r.pid), **with_dims(run, r.dims))),
                    Cell(str(r.thread_count)),
                    Cell(fmt.duration(r.cpu_time) if has_sched else "-"),
                    Cell(fmt.percent(r.percent_of_trace) if has_sched else "-"),
                    count_cell(r.slice_count),
                    Cell(threads or "-"),
                ]
            )
        by = "CPU time" if has_sched else "slices; no scheduling data"
        title = f"Processes ({msg.total_rows} in scope)"
        if msg.group_by:
            title = f"Processes by {msg.group_by} ({fmt.plural(msg.total_rows, 'value')})"
        return [
            Table(
                title,
                (
                    msg.group_by.capitalize() or "Process",
                    "PID",
                    "Threads",
                    "CPU time",
                    "% of trace",
                    "Slices",
                    f"Top threads (by {by})",
                ),
                rows,
                align="lrrrrrl",
                empty="(no processes in scope)",
            )
        ]


class ProcessesDiff(DiffSpec):
    noun, view, field = "processes", "table", "processes_table_diff"
    title, what = "Processes", "process names"
    key_fields, key_headers = ("name", "subtitle"), ("Process",)
    measures = (
        Measure("cpu_time", "CPU", "duration"),
        Measure("slice_count", "slices", "count"),
        Measure("thread_count", "threads", "count"),
        Measure("percent_of_trace", "% of trace", "percent"),
    )
    sorts = {"cpu": "cpu_time", "slices": "slice_count", "threads": "thread_count", "name": ""}
    display = ("cpu_time", "slice_count")
    row_filters = {"min_count": "slice_count"}
    summed_ids = ("upid", "pid", "top_threads")

    @staticmethod
    def _has_sched(msg: Any) -> bool:
        return msg is not None and msg.top_threads_by == "cpu_time"

    def default_sort(self, base_msg: Any, target_msg: Any) -> str:
        # Without scheduling data on either side every CPU time is 0: slices move instead.
        return "cpu" if self._has_sched(base_msg) or self._has_sched(target_msg) else "slices"

    def display_of(self, out: Any) -> tuple[str, ...]:
        return self.display if out.top_threads_by == "cpu_time" else ("slice_count", "thread_count")

    def fill_extra(self, out: Any, base_msg: Any, target_msg: Any) -> None:
        sched = self._has_sched(base_msg) or self._has_sched(target_msg)
        out.top_threads_by = "cpu_time" if sched else "slice_count"

    def key_cells(self, row: Any, run: ReportRun, out: Any) -> list[Cell]:
        return [
            Cell(
                row.name or "(no name)",
                diff_link(run, row, "processes", "table", process=glob_escape(row.name)) if row.name else None,
                subtitle=row.subtitle,
            )
        ]


VIEWS = [ProcessesTableView()]
DIFFS = [ProcessesDiff()]
