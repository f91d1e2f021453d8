"""The `scheduling` noun: who used the CPUs, how loaded they were, and why a thread was not running.

CPU time comes from `sched` (one row per time a thread ran on a CPU; utid 0 is the idle task),
runnable and sleeping time from `thread_state`. Every duration is clipped to the report's range,
and a row still open at the end of the trace (dur -1) lasts to the end of the range.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from .. import format as fmt
from .. import report_pb2 as pb
from ..base import Bar, Cell, Chart, Link, ReportRun, Table, View, duration_cell
from ..diff_spec import DiffSpec, Measure, diff_link
from ..filters import (
    CANNED_NICE,
    CANNED_RANGE,
    CANNED_TOP,
    OWNER_FLAGS,
    PROCESS_FLAGS,
    THREAD_FLAGS,
    Where,
    canned_dim,
    canned_sort,
    dim_terms,
    flag_terms,
    optional_terms,
    owner_terms,
    subquery,
    unset,
)
from ..grouping import dim_params, grouping, thread_value
from ..links import glob_escape, view_link
from ..scope import ReportError, shown
from ..subtitles import dominant_names, owner_dims, process_subtitles, thread_subtitles, with_dims, with_subtitle
from .slices import bucket_range, cells_per_bucket

RUNNABLE_STATES = ("R", "R+")
# Dead tasks (X, Z, x) are neither runnable nor sleeping; every other non-running state sleeps.
SLEEPING = "x.state NOT IN ('Running', 'R', 'R+') AND x.state NOT GLOB '*[XZx]*'"
RUNNABLE = "x.state IN ('R', 'R+')"
STATE_NAMES = {
    "Running": "Running",
    "R": "Runnable",
    "R+": "Runnable (preempted)",
    "S": "Sleeping",
    "D": "Uninterruptible sleep",
    "I": "Idle",
    "T": "Stopped",
    "t": "Traced",
    "X": "Dead",
    "Z": "Zombie",
    "x": "Dead",
    "P": "Parked",
    "W": "Waking",
    "K": "Wakekill",
}
DOMINANT = 3
NAME_LIST_LIMIT = 50

SORT_COLUMNS = {
    "cpu": "cpu_time DESC",
    "runnable": "runnable DESC",
    "sleeping": "sleeping DESC",
    "name": "name IS NULL, name",
}


def waker_link(run: ReportRun, msg: pb.SchedulingInspect) -> Link:
    """The waking thread at the moment it woke the inspected one."""
    return view_link(
        run,
        "scheduling",
        "inspect",
        tid=str(msg.waker_tid),
        thread=None,
        pid=None,
        process=None,
        ts=run.offset(msg.wakeup_ts),
    )


def state_name(state: str) -> str:
    return STATE_NAMES.get(state, state or "?")


def row_end(alias: str) -> str:
    """End of a sched / thread_state row; a still-open one (dur -1) runs to the end of the range."""
    return f"CASE WHEN {alias}.dur < 0 THEN :range_end ELSE {alias}.ts + {alias}.dur END"


def clipped(alias: str) -> str:
    """The part of a row inside [range_start, range_end)."""
    return f"max(min({row_end(alias)}, :range_end) - max({alias}.ts, :range_start), 0)"


def in_range(run: ReportRun, alias: str) -> str:
    """Rows overlapping the range. Over the whole trace the ts index only costs lookups (+ skips it)."""
    plus = "+" if run.scope.time is None else ""
    return f"{plus}{alias}.ts < :range_end AND {row_end(alias)} > :range_start"


def thread_filter(run: ReportRun) -> Where | None:
    """The threads the pid/process/tid/thread and dim flags select, as a subquery of utids (None: every thread)."""
    w = owner_terms(run)
    w.extend(dim_terms(run, "thread"))
    return subquery(w, "SELECT th.id FROM thread th\nLEFT JOIN process p ON p.id = th.upid")


def cpu_filter(run: ReportRun, alias: str) -> Where | None:
    if run.scope.cpu is None:
        return None
    w = Where()
    w.add(f"{alias}.ucpu IN (SELECT id FROM cpu WHERE cpu = :cpu)", cpu=run.scope.cpu)
    return w


def range_params(run: ReportRun) -> dict:
    start, end = run.time_range()
    return {"range_start": start, "range_end": end}


def thread_label(name: str | None, tid: int | None) -> str:
    return f"{name or '?'} [{tid if tid is not None else '?'}]"


def cpu_count(run: ReportRun) -> int:
    """CPUs the load is shared over: the trace's CPUs (those that scheduled anything, if it lists none)."""
    if run.scope.cpu is not None:
        return 1
    if run.trace.cpu_count:
        return run.trace.cpu_count
    return run.value("CPUs that scheduled anything", "SELECT count(DISTINCT ucpu) FROM sched") or 1


def has_sched(run: ReportRun) -> bool:
    return bool(run.value("any scheduling data", "SELECT EXISTS(SELECT 1 FROM sched)"))


# -- canned queries ---------------------------------------------------------------------------

# A row's end (a still-open one lasts to the end of the range) and its part inside the range (alias, with range).
CANNED_END = "CASE WHEN {a}.dur < 0 THEN range_end ELSE {a}.ts + {a}.dur END"
CANNED_CLIPPED = f"max(min({CANNED_END}, range_end) - max({{a}}.ts, range_start), 0)"
CANNED_ON_CPU = "(:cpu = '' OR {a}.ucpu IN (SELECT id FROM cpu WHERE cpu = CAST(:cpu AS INTEGER)))"
CANNED_THREADS = f"""({unset((*OWNER_FLAGS, "dim"))}
       OR {{a}}.utid IN (SELECT th.id FROM thread th LEFT JOIN process p ON p.id = th.upid
                       WHERE {optional_terms(OWNER_FLAGS, " " * 25)}
                         AND {canned_dim("thread").replace("{", "{{").replace("}", "}}")}))"""


# -- summary ----------------------------------------------------------------------------------


class SchedulingSummaryView(View):
    noun = "scheduling"
    name = "summary"
    title = "Scheduling by thread"
    description = (
        "Per thread (or process, with group_by=process): CPU time (from sched), time runnable but "
        "waiting for a CPU (R, R+), time sleeping (S, D and the other blocked states) and CPU time as "
        "a share of the range (can exceed 100% for a process on several CPUs). With cpu, CPU time on "
        "that CPU and the threads that ran there; min_duration hides rows with less CPU time."
    )
    result_field = "scheduling_summary"
    uses_top = True
    flags = frozenset({"pid", "process", "tid", "thread", "cpu", "time", "sort", "group_by", "min_duration", "dim"})
    sorts = ("cpu", "runnable", "sleeping", "name")
    canned_sql = f"""WITH {CANNED_RANGE},
cpu_time AS (
  -- The whole trace on every CPU: precomputed at import; else sched clipped to the range.
  SELECT rs.utid, rs.cpu_time FROM report_thread_sched rs WHERE :time = '' AND :cpu = ''
  UNION ALL
  SELECT sc.utid, sum({CANNED_CLIPPED.format(a="sc")})
  FROM sched sc, range
  WHERE (:time != '' OR :cpu != '') AND sc.utid != 0 AND {CANNED_ON_CPU.format(a="sc")}
    AND sc.ts < range_end AND {CANNED_END.format(a="sc")} > range_start
  GROUP BY sc.utid
),
state_time AS (
  -- Runnable (R, R+) and sleeping (any other state but dead) time, of every CPU.
  SELECT rs.utid, rs.runnable, rs.sleeping FROM report_thread_sched rs WHERE :time = ''
  UNION ALL
  SELECT x.utid, sum(CASE WHEN {RUNNABLE} THEN {CANNED_CLIPPED.format(a="x")} ELSE 0 END),
         sum(CASE WHEN {SLEEPING} THEN {CANNED_CLIPPED.format(a="x")} ELSE 0 END)
  FROM thread_state x, range
  WHERE :time != '' AND x.state != 'Running' AND x.ts < range_end AND {CANNED_END.format(a="x")} > range_start
  GROUP BY x.utid
),
per_thread AS (
  -- With cpu: the threads that ran on it.
  SELECT u.utid, coalesce(c.cpu_time, 0) AS cpu_time, coalesce(st.runnable, 0) AS runnable,
         coalesce(st.sleeping, 0) AS sleeping, th.name, th.tid, th.upid, p.pid, p.name AS process
  FROM (SELECT utid FROM cpu_time UNION SELECT utid FROM state_time WHERE :cpu = '') u
  LEFT JOIN cpu_time c USING (utid)
  LEFT JOIN state_time st USING (utid)
  LEFT JOIN thread th ON th.id = u.utid
  LEFT JOIN process p ON p.id = th.upid
  WHERE {CANNED_THREADS.format(a="u")}
),
grouped AS (
  SELECT utid AS key, name, tid, pid, process, cpu_time, runnable, sleeping FROM per_thread
  WHERE coalesce(nullif(:group_by, ''), 'thread') = 'thread'
  UNION ALL
  SELECT upid, coalesce(max(process), CASE WHEN upid IS NULL THEN '(no process)' END), NULL, max(pid), NULL,
         sum(cpu_time), sum(runnable), sum(sleeping)
  FROM per_thread
  WHERE :group_by = 'process'
  GROUP BY upid
)
SELECT name, tid, pid, process, cpu_time, runnable, sleeping,
       round(100.0 * cpu_time / max(range_end - range_start, 1), 1) AS percent_of_trace
FROM grouped, range
WHERE :min_duration = '' OR cpu_time >= report_duration(:min_duration)
ORDER BY CASE {canned_sort(sorts[0])} WHEN 'cpu' THEN -cpu_time WHEN 'runnable' THEN -runnable
                                               WHEN 'sleeping' THEN -sleeping END,
         CASE WHEN :sort = 'name' THEN name IS NULL END, CASE WHEN :sort = 'name' THEN name END, key
LIMIT {CANNED_TOP}"""

    def has_data(self, run: ReportRun) -> bool:
        return has_sched(run)

    def compute(self, run: ReportRun, out: pb.SchedulingSummary) -> None:
        s = run.scope
        group = grouping(run, self, ("thread", "process"))  # thread, process or a dimension
        group_by = s.group_by or "thread"
        out.group_by = group_by
        if not has_sched(run):
            return  # cpu_count 0: the trace has no scheduling data
        out.cpu_count = cpu_count(run)
        params = range_params(run)
        threads = thread_filter(run)
        if threads is None and s.cpu is None and s.time is None:
            # The whole trace: the per-thread totals precomputed at import.
            per_utid = "per_utid AS (\n  SELECT utid, cpu_time, runnable, sleeping FROM report_thread_sched\n)"
            params = {}
        else:
            per_utid = self._per_utid_sql(run, threads, params)
        having = Where()
        if s.min_duration is not None:
            having.add("cpu_time >= :min_duration", min_duration=s.min_duration)
        if group_by == "thread":
            rows_sql = """SELECT t.utid, th.name, th.tid, p.pid, p.name AS process, t.cpu_time, t.runnable, t.sleeping
  FROM per_utid t
  LEFT JOIN thread th ON th.id = t.utid
  LEFT JOIN process p ON p.id = th.upid"""
        elif group is not None:
            rows_sql = f"""SELECT {thread_value("t.utid", "th.upid")} AS group_value, NULL AS name, NULL AS tid,
         NULL AS pid, NULL AS process, sum(t.cpu_time) AS cpu_time, sum(t.runnable) AS runnable,
         sum(t.sleeping) AS sleeping
  FROM per_utid t
  JOIN thread th ON th.id = t.utid
  GROUP BY group_value"""
            params = {**params, **group.params}
        else:
            rows_sql = """SELECT th.upid, coalesce(p.name, CASE WHEN th.upid IS NULL THEN '(no process)' END) AS name,
         NULL AS tid, p.pid, NULL AS process, sum(t.cpu_time) AS cpu_time, sum(t.runnable) AS runnable,
         sum(t.sleeping) AS sleeping
  FROM per_utid t
  JOIN thread th ON th.id = t.utid
  LEFT JOIN process p ON p.id = th.upid
  GROUP BY th.upid"""
        key = {"thread": "utid", "process": "upid"}.get(group_by, "group_value")
        rows = run.query(
            f"CPU, runnable and sleeping time per {group_by}, top by the sort key",
            f"""WITH {per_utid},
grouped AS (
  {rows_sql}
)
SELECT *, count(*) OVER () AS total_rows FROM grouped {having.sql()}
ORDER BY {SORT_COLUMNS[self.sort_key(s)]}, {key}
LIMIT :top""",
            {**params, **having.params, "top": s.top},
        )
        out.total_rows = rows[0]["total_rows"] if rows else 0
        range_dur = run.range_dur()
        for r in rows:
            row = out.rows.add(
                name=r["name"] or "",
                tid=r["tid"] or 0,
                pid=r["pid"] or 0,
                process=r["process"] or "",
                cpu_time=r["cpu_time"],
                runnable=r["runnable"],
                sleeping=r["sleeping"],
            )
            row.percent_of_trace = 100.0 * row.cpu_time / range_dur
            if group is not None:
                row.name = row.group_label = group.label(r["group_value"])
                row.group_value = r["group_value"] or ""
        if group is None:
            subtitles = (
                thread_subtitles(run, [r["utid"] for r in rows])
                if group_by == "thread"
                else process_subtitles(run, [r["upid"] for r in rows])
            )
            dims = owner_dims(run, group_by, [r[key] for r in rows])
            for r, row in zip(rows, out.rows):
                row.subtitle = subtitles.get(r[key], "")
                row.dims.extend(dims.get(r[key], []))
        run.truncation(len(rows), out.total_rows, f"{group_by}s" if group is None else f"{group_by} values")
        if rows and group is not None:
            top = out.rows[0]
            if top.group_value:
                run.next_step(
                    f"Threads of {top.name}",
                    view_link(
                        run, "scheduling", "summary", dim=dim_params(run, group.name, top.group_value), group_by=None
                    ),
                )
        elif rows and group_by == "thread":
            self._longest_waits(run, [r["utid"] for r in rows], out)
        elif rows:
            top = out.rows[0]
            if top.pid:
                run.next_step(
                    f"Threads of {top.name} [{top.pid}]",
                    view_link(
                        run, "scheduling", "summary", pid=str(top.pid), group_by=None, **with_dims(run, top.dims)
                    ),
                )
        run.next_step("CPU load over time", view_link(run, "scheduling", "timeline"))

    @staticmethod
    def _per_utid_sql(run: ReportRun, threads: Where | None, params: dict) -> str:
        """CTEs ending in per_utid(utid, cpu_time, runnable, sleeping) for the scope, clipped to the range."""
        sched_where, state_where = Where(), Where()
        sched_where.add("sc.utid != 0")
        sched_where.add(in_range(run, "sc"))
        state_where.add("x.state != 'Running'")
        state_where.add(in_range(run, "x"))
        if threads is not None:
            sched_where.add(f"sc.utid IN {threads.terms[0]}", **threads.params)
            state_where.add(f"x.utid IN {threads.terms[0]}", **threads.params)
        cpus = cpu_filter(run, "sc")
        if cpus is not None:
            sched_where.add(cpus.terms[0], **cpus.params)
            # On one CPU: the threads that ran there (their runnable/sleeping time is not per CPU).
            state_where.add(f"{'' if threads is not None else '+'}x.utid IN (SELECT utid FROM cpu_time)")
        # +utid: without a thread filter, a table scan and a sort beat visiting rows in utid index order.
        plus = "" if threads is not None else "+"
        if run.scope.time is None:
            # The whole trace: the threads' runnable and sleeping time precomputed at import.
            state_where = Where()
            if threads is not None:
                state_where.add(f"rs.utid IN {threads.terms[0]}", **threads.params)
            if cpus is not None:
                state_where.add("rs.utid IN (SELECT utid FROM cpu_time)")
            state_time = f"""SELECT rs.utid, rs.runnable, rs.sleeping
  FROM report_thread_sched rs
  {state_where.sql().replace(chr(10), chr(10) + "  ")}"""
        else:
            state_time = f"""SELECT x.utid, sum(CASE WHEN {RUNNABLE} THEN {clipped("x")} ELSE 0 END) AS runnable,
         sum(CASE WHEN {SLEEPING} THEN {clipped("x")} ELSE 0 END) AS sleeping
  FROM thread_state x
  {state_where.sql().replace(chr(10), chr(10) + "  ")}
  GROUP BY {plus}x.utid"""
        params.update({**sched_where.params, **state_where.params})
        return f"""cpu_time AS (
  SELECT sc.utid, sum({clipped("sc")}) AS cpu_time
  FROM sched sc
  {sched_where.sql().replace(chr(10), chr(10) + "  ")}
  GROUP BY {plus}sc.utid
),
state_time AS (
  {state_time}
),
per_utid AS (
  SELECT utid, coalesce(c.cpu_time, 0) AS cpu_time, coalesce(st.runnable, 0) AS runnable,
         coalesce(st.sleeping, 0) AS sleeping
  FROM (SELECT utid FROM cpu_time UNION SELECT utid FROM state_time)
  LEFT JOIN cpu_time c USING (utid)
  LEFT JOIN state_time st USING (utid)
)"""

    def _longest_waits(self, run: ReportRun, utids: list[int], out: pb.SchedulingSummary) -> None:
        """Next step: the top thread at its longest wait for a CPU ("why was it not running then?")."""
        top = out.rows[0]
        params = {**range_params(run), "utid": utids[0]}
        wait = run.query(
            "the top thread's longest wait for a CPU",
            f"""SELECT x.ts, {clipped("x")} AS waited
FROM thread_state x
WHERE x.utid = :utid AND {RUNNABLE} AND {in_range(run, "x")}
ORDER BY waited DESC, x.ts
LIMIT 1""",
            params,
        )
        label = thread_label(top.name, top.tid)
        if wait:
            start = max(wait[0]["ts"], params["range_start"])
            run.next_step(
                f"{label} at its longest wait for a CPU ({fmt.duration(wait[0]['waited'])})",
                view_link(
                    run,
                    "scheduling",
                    "inspect",
                    tid=str(top.tid),
                    ts=run.offset(start),
                    thread=None,
                    pid=None,
                    process=None,
                    **with_dims(run, top.dims),
                ),
            )
        run.next_step(
            f"{label} over time",
            view_link(run, "scheduling", "timeline", tid=str(top.tid), thread=None, **with_dims(run, top.dims)),
        )

    def tables(self, msg: pb.SchedulingSummary, run: ReportRun) -> list[Table]:
        by_thread = msg.group_by == "thread"
        by_value = msg.group_by not in ("thread", "process")
        rows = []
        for r in msg.rows:
            if by_value:
                link = (
                    view_link(
                        run, "scheduling", "summary", dim=dim_params(run, msg.group_by, r.group_value), group_by=None
                    )
                    if r.group_value
                    else None
                )
                name = Cell(r.name, link)
            elif by_thread:
                name = Cell(
                    thread_label(r.name, r.tid),
                    view_link(run, "scheduling", "timeline", tid=str(r.tid), thread=None, **with_dims(run, r.dims)),
                    title=f"{r.process or '?'} [{r.pid}]" if r.pid else "no known process",
                    subtitle=r.subtitle,
                )
            else:
                name = Cell(
                    f"{r.name} [{r.pid}]" if r.pid else r.name,
                    view_link(run, "scheduling", "summary", pid=str(r.pid), group_by=None, **with_dims(run, r.dims))
                    if r.pid
                    else None,
                    subtitle=r.subtitle,
                )
            rows.append(
                [
                    name,
                    duration_cell(r.cpu_time),
                    duration_cell(r.runnable),
                    duration_cell(r.sleeping),
                    Cell(fmt.percent(r.percent_of_trace)),
                ]
            )
        if not msg.cpu_count:
            return [Table("Scheduling: (no scheduling data in this trace)", (), [])]
        noun = "threads" if by_thread else f"{msg.group_by} values" if by_value else "processes"
        title = f"Scheduling ({msg.total_rows} {noun}, {fmt.plural(msg.cpu_count, 'CPU')})"
        return [
            Table(
                title,
                (
                    "Thread" if by_thread else msg.group_by.capitalize() if by_value else "Process",
                    "CPU time",
                    "Runnable",
                    "Sleeping",
                    "% of trace",
                ),
                rows,
                empty="(no scheduling data in scope)",
            )
        ]


# -- timeline ---------------------------------------------------------------------------------


class SchedulingTimelineView(View):
    noun = "scheduling"
    name = "timeline"
    title = "CPU load over time"
    description = (
        "CPU load per bucket of the trace (or time range): time the CPUs ran threads other than the idle "
        "task, as a share of the bucket's duration times the CPU count, with the threads that ran most. "
        "Thread flags count only those threads' time; cpu looks at one CPU."
    )
    result_field = "scheduling_timeline"
    flags = frozenset({"pid", "process", "tid", "thread", "cpu", "time", "buckets", "dim"})
    canned_sql = f"""-- CPU time per bucket and the share of the CPUs' capacity it used; the report also names the
-- threads that ran most.
WITH RECURSIVE {CANNED_RANGE},
{CANNED_NICE},
layout AS (
  SELECT range_start, range_end, bucket_dur, (max(range_end - range_start, 1) + bucket_dur - 1) / bucket_dur AS n,
         CASE WHEN :cpu != '' THEN 1
              ELSE coalesce(nullif((SELECT count(*) FROM cpu), 0), nullif((SELECT count(DISTINCT ucpu) FROM sched), 0), 1)
              END AS cpus
  FROM (SELECT range_start, range_end,
               (SELECT min(v) FROM nice WHERE v >= max(range_end - range_start, 1) * 1.0
                                                  / coalesce(CAST(nullif(:buckets, '') AS INTEGER), 20)) AS bucket_dur
        FROM range)
),
run AS MATERIALIZED (
  SELECT max(sc.ts, range_start) AS piece_start, min({CANNED_END.format(a="sc")}, range_end) AS run_end,
         min(n - 1, (max(sc.ts, range_start) - range_start) / bucket_dur) AS bucket
  FROM sched sc, layout
  WHERE sc.utid != 0 AND sc.ts < range_end AND {CANNED_END.format(a="sc")} > range_start
    AND {CANNED_ON_CPU.format(a="sc")}
    AND {CANNED_THREADS.format(a="sc").replace(chr(10), chr(10) + "  ")}
),
piece(bucket, piece_start, run_end) AS (
  SELECT bucket, piece_start, run_end FROM run, layout WHERE run_end > range_start + (bucket + 1) * bucket_dur
  UNION ALL
  SELECT bucket + 1, range_start + (bucket + 1) * bucket_dur, run_end FROM piece, layout
  WHERE bucket < n - 1 AND range_start + (bucket + 1) * bucket_dur < run_end
),
per_bucket AS (
  SELECT bucket, sum(max(covered, 0)) AS busy
  FROM (
    SELECT bucket, run_end - piece_start AS covered FROM run, layout
    WHERE run_end <= range_start + (bucket + 1) * bucket_dur
    UNION ALL
    SELECT bucket, min(run_end, range_start + (bucket + 1) * bucket_dur) - piece_start FROM piece, layout
  )
  GROUP BY bucket
),
series(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM series, layout WHERE i + 1 < n)
SELECT i AS bucket, range_start + i * bucket_dur AS start_ts, min(range_start + (i + 1) * bucket_dur, range_end) AS end_ts,
       coalesce(b.busy, 0) AS busy,
       coalesce(b.busy, 0) * 1.0 / max((min(range_start + (i + 1) * bucket_dur, range_end) - range_start - i * bucket_dur)
                                       * cpus, 1) AS load
FROM series, layout
LEFT JOIN per_bucket b ON b.bucket = series.i
ORDER BY i"""

    def has_data(self, run: ReportRun) -> bool:
        return has_sched(run)

    def compute(self, run: ReportRun, out: pb.SchedulingTimeline) -> None:
        start, end, buckets, bucket_dur = bucket_range(run)
        out.bucket_dur = bucket_dur
        if not has_sched(run):
            return  # no buckets, cpu_count 0: the trace has no scheduling data
        out.cpu_count = cpu_count(run)
        threads = thread_filter(run)
        per_bucket_cells = cells_per_bucket(run, bucket_dur, "sched_cell_dur") if run.scope.cpu is None else 0
        if per_bucket_cells:
            # The whole trace in buckets of whole cells: the per thread and cell CPU time precomputed at import.
            w = Where()
            if threads is not None:
                w.add(f"c.utid IN {threads.terms[0]}", **threads.params)
            per_thread = f"""per_thread AS (
  SELECT min(:last_bucket, c.cell / :cells_per_bucket) AS bucket, c.utid, sum(c.busy) AS busy
  FROM report_sched_cell c
  {w.sql().replace(chr(10), chr(10) + "  ")}
  GROUP BY bucket, c.utid
)"""
            params = {**w.params, "cells_per_bucket": per_bucket_cells}
        else:
            per_thread, params = self._per_thread_from_sched(run, threads, bucket_dur)
        recursive = "" if per_bucket_cells else "RECURSIVE "
        rows = run.query(
            "busy time per bucket, with the threads that ran most",
            f"""WITH {recursive}{per_thread},
ranked AS (
  SELECT bucket, utid, busy, sum(busy) OVER (PARTITION BY bucket) AS bucket_busy,
         row_number() OVER (PARTITION BY bucket ORDER BY busy DESC, utid) AS rank
  FROM per_thread
  WHERE busy > 0
)
SELECT r.bucket, r.bucket_busy, r.busy, r.utid, th.name, th.tid
FROM ranked r LEFT JOIN thread th ON th.id = r.utid
WHERE r.rank <= :dominant
ORDER BY r.bucket, r.rank""",
            {**params, "last_bucket": buckets - 1, "dominant": DOMINANT},
        )
        by_bucket: dict[int, list] = {}
        for r in rows:
            by_bucket.setdefault(r["bucket"], []).append(r)
        subtitles = thread_subtitles(run, [r["utid"] for r in rows])
        for i in range(buckets):
            b_start, b_end = start + i * bucket_dur, min(start + (i + 1) * bucket_dur, end)
            bucket = out.buckets.add(start_ts=b_start, end_ts=b_end)
            top = by_bucket.get(i, [])
            bucket.total_dur = top[0]["bucket_busy"] if top else 0
            bucket.value = bucket.total_dur / max((b_end - b_start) * out.cpu_count, 1)
            for r in top:
                bucket.dominant.add(
                    name=thread_label(r["name"], r["tid"]), value=r["busy"], subtitle=subtitles.get(r["utid"], "")
                )
        busiest = max(out.buckets, key=lambda b: b.value, default=None)
        if busiest is not None and busiest.total_dur:
            run.next_step(
                "Threads in the busiest bucket",
                view_link(
                    run, "scheduling", "summary", time=f"{run.offset(busiest.start_ts)},{run.offset(busiest.end_ts)}"
                ),
            )

    @staticmethod
    def _per_thread_from_sched(run: ReportRun, threads: Where | None, bucket_dur: int) -> tuple[str, dict]:
        """The per_thread(bucket, utid, busy) CTEs from sched: each run is clipped to the range; the few that
        cross a bucket edge are split at the edges."""
        w = Where()
        w.add("sc.utid != 0")
        w.add(in_range(run, "sc"))
        if threads is not None:
            w.add(f"sc.utid IN {threads.terms[0]}", **threads.params)
        cpus = cpu_filter(run, "sc")
        if cpus is not None:
            w.add(cpus.terms[0], **cpus.params)
        return (
            f"""run AS MATERIALIZED (
  SELECT sc.utid, max(sc.ts, :range_start) AS piece_start, min({row_end("sc")}, :range_end) AS run_end,
         min(:last_bucket, (max(sc.ts, :range_start) - :range_start) / :bucket_dur) AS bucket
  FROM sched sc
  {w.sql().replace(chr(10), chr(10) + "  ")}
),
piece(bucket, utid, piece_start, run_end) AS (
  SELECT bucket, utid, piece_start, run_end FROM run
  WHERE run_end > :range_start + (bucket + 1) * :bucket_dur
  UNION ALL
  SELECT bucket + 1, utid, :range_start + (bucket + 1) * :bucket_dur, run_end
  FROM piece
  WHERE bucket < :last_bucket AND :range_start + (bucket + 1) * :bucket_dur < run_end
),
per_thread AS (
  SELECT bucket, utid, sum(max(covered, 0)) AS busy
  FROM (
    SELECT bucket, utid, run_end - piece_start AS covered FROM run
    WHERE run_end <= :range_start + (bucket + 1) * :bucket_dur
    UNION ALL
    SELECT bucket, utid, min(run_end, :range_start + (bucket + 1) * :bucket_dur) - piece_start FROM piece
  )
  GROUP BY bucket, utid
)""",
            {**w.params, **range_params(run), "bucket_dur": bucket_dur},
        )

    def charts(self, msg: pb.SchedulingTimeline, run: ReportRun) -> list[Chart]:
        named = dominant_names(msg.buckets)
        bars = []
        for b in msg.buckets:
            note = f"{100 * b.value:.1f}%" if b.total_dur else ""
            if b.dominant:
                note += ": " + ", ".join(f"{named(d)} {fmt.duration(d.value)}" for d in b.dominant)
            bars.append(Bar(run.offset(b.start_ts), 100 * b.value, note))
        if not msg.cpu_count:
            return [Chart("CPU load: no scheduling data in this trace", "linear", "% of CPU capacity busy", [])]
        cpus = fmt.plural(msg.cpu_count, "CPU")
        return [
            Chart(
                f"CPU load per {fmt.duration(msg.bucket_dur)} ({cpus})",
                "linear",
                "bars: % of CPU capacity busy; top threads by CPU time",
                bars,
            )
        ]


# -- inspect ----------------------------------------------------------------------------------


# A thread's states with their CPU and waker (the inspect view reads those around ts).
_STATE_ROWS = """  SELECT x.id, x.ts, x.dur, x.state, x.ucpu, c.cpu, x.blocked_function, x.io_wait, x.waker_utid,
         w.name AS waker, w.tid AS waker_tid
  FROM thread_state x
  LEFT JOIN cpu c ON c.id = x.ucpu
  LEFT JOIN thread w ON w.id = x.waker_utid"""


class SchedulingInspectView(View):
    noun = "scheduling"
    name = "inspect"
    title = "Thread state at a point in time"
    description = (
        "Why a thread was (not) running at ts: its state then, since when and for how long, the CPU it "
        "ran on and how that run ended, who woke it and how long it then waited for a CPU, and the "
        "kernel function it was blocked in. Needs thread (or tid) matching one thread, and ts."
    )
    result_field = "scheduling_inspect"
    flags = frozenset({"pid", "process", "tid", "thread", "ts", "dim"})
    required = ("ts",)
    canned_sql = f"""-- The thread's states around ts, the one at ts marked: state, CPU, how a run ended, the kernel
-- function it blocked in and who woke it. The report reads from them why the thread was (not) running
-- then; among several matching threads it takes the one alive at ts (and fails if that is not one).
WITH at AS (SELECT (SELECT report_time(:ts)) AS ts),
picked AS (
  SELECT th.id AS utid
  FROM thread th LEFT JOIN process p ON p.id = th.upid, at
  WHERE th.id != 0 AND (:tid != '' OR :thread != '')
    AND {optional_terms(THREAD_FLAGS + PROCESS_FLAGS)}
    AND {canned_dim("thread")}
  ORDER BY (th.start_ts IS NULL OR th.start_ts <= at.ts) AND (th.end_ts IS NULL OR th.end_ts > at.ts)
             AND coalesce((SELECT x.dur < 0 OR x.ts + x.dur > at.ts FROM thread_state x
                           WHERE x.utid = th.id AND x.ts <= at.ts ORDER BY x.ts DESC LIMIT 1), 0) DESC,
           th.tid, th.id
  LIMIT 1
),
here AS (
  SELECT x.id, x.ts FROM thread_state x, picked, at
  WHERE x.utid = picked.utid AND x.ts <= at.ts
  ORDER BY x.ts DESC, x.id DESC
  LIMIT 1
),
around(id) AS (
  SELECT * FROM (SELECT x.id FROM thread_state x, picked WHERE x.utid = picked.utid
                   AND (x.ts, x.id) < (SELECT ts, id FROM here) ORDER BY x.ts DESC, x.id DESC LIMIT 2)
  UNION ALL
  SELECT * FROM (SELECT x.id FROM thread_state x, picked WHERE x.utid = picked.utid
                   AND (x.ts, x.id) >= (SELECT ts, id FROM here) ORDER BY x.ts, x.id LIMIT 3)
)
SELECT th.tid, th.name AS thread, x.ts, x.dur, x.state,
       x.ts <= at.ts AND (x.dur < 0 OR at.ts < x.ts + x.dur) AS at_ts, c.cpu,
       CASE WHEN x.state = 'Running' THEN (SELECT sc.end_state FROM sched sc WHERE sc.utid = x.utid AND sc.ts = x.ts
                                           LIMIT 1) END AS end_state,
       x.blocked_function, x.io_wait, w.tid AS waker_tid, w.name AS waker
FROM around
JOIN thread_state x ON x.id = around.id
JOIN thread th ON th.id = x.utid
LEFT JOIN cpu c ON c.id = x.ucpu
LEFT JOIN thread w ON w.id = x.waker_utid, at
ORDER BY x.ts, x.id"""

    def has_data(self, run: ReportRun) -> bool:
        return has_sched(run)

    def compute(self, run: ReportRun, out: pb.SchedulingInspect) -> None:
        s = run.scope
        if s.thread is None and s.tid is None:
            raise ReportError(f"{self.label()} needs thread or tid: the thread to look at", "thread")
        at = run.ts()
        out.ts = at
        out.cpu = -1
        out.wakeup_latency = -1
        thread = self._thread(run, at)
        out.thread = thread["name"] or ""
        out.tid = thread["tid"] or 0
        out.process = thread["process"] or ""
        out.pid = thread["pid"] or 0
        out.subtitle = thread_subtitles(run, [thread["utid"]]).get(thread["utid"], "")
        states = run.query(
            "the thread's states around ts",
            f"""WITH here AS (
  SELECT id, ts FROM thread_state WHERE utid = :utid AND ts <= :ts ORDER BY ts DESC, id DESC LIMIT 1
)
SELECT * FROM (
{_STATE_ROWS}
  WHERE x.utid = :utid AND (x.ts, x.id) < (SELECT ts, id FROM here) ORDER BY x.ts DESC, x.id DESC LIMIT 2
)
UNION ALL
SELECT * FROM (
{_STATE_ROWS}
  WHERE x.utid = :utid AND (x.ts, x.id) >= (SELECT ts, id FROM here) ORDER BY x.ts, x.id LIMIT 3
)
ORDER BY ts, id""",
            {"utid": thread["utid"], "ts": at},
        )
        here = next(
            (i for i, x in enumerate(states) if x["ts"] <= at and (x["dur"] < 0 or at < x["ts"] + x["dur"])), None
        )
        if here is None:
            return
        x = states[here]
        out.found = True
        out.state = x["state"] or ""
        out.state_ts = x["ts"]
        out.state_dur = x["dur"]
        if x["state"] == "Running":
            out.cpu = x["cpu"] if x["cpu"] is not None else -1
            end_state = run.value(
                "how the run ended (sched end_state)",
                """SELECT end_state FROM sched
WHERE utid = :utid AND ts = :ts
LIMIT 1""",
                {"utid": thread["utid"], "ts": x["ts"]},
            )
            out.end_state = end_state or ""
        # The runnable period around ts: the one ts is in, the one that led to this run, or the one
        # that ended this sleep; and the sleep it ended.
        before = states[here - 1] if here > 0 else None
        after = states[here + 1] if here + 1 < len(states) else None
        wake = sleep = None
        if x["state"] in RUNNABLE_STATES:
            wake = x
            if before is not None and before["state"] not in ("Running", *RUNNABLE_STATES):
                sleep = before
        elif x["state"] == "Running":
            if before is not None and before["state"] in RUNNABLE_STATES:
                wake = before
        else:
            sleep = x
            if after is not None and after["state"] in RUNNABLE_STATES:
                wake = after
        if sleep is not None and sleep["blocked_function"]:
            out.blocked_function = sleep["blocked_function"]
        if wake is not None:
            out.wakeup_ts = wake["ts"]
            if wake["waker_utid"] is not None:
                out.waker_thread = wake["waker"] or ""
                out.waker_tid = wake["waker_tid"] or 0
            if wake["dur"] >= 0:
                out.wakeup_latency = wake["dur"]  # runnable until the next Running
        self._next_steps(run, out)

    def _thread(self, run: ReportRun, at: int) -> sqlite3.Row:
        """The one thread the flags select; among several (a reused tid, a shared name), the one alive
        at ts; else a ReportError listing them."""
        s = run.scope
        w = flag_terms(run, THREAD_FLAGS + PROCESS_FLAGS)  # threads first: the thread is what is looked for
        w.extend(dim_terms(run, "thread"))
        w.add("th.id != 0")
        found = run.query(
            "threads matching the flags",
            f"""SELECT th.id AS utid, th.tid, th.name, p.pid,
       p.name AS process,
       (th.start_ts IS NULL OR th.start_ts <= :ts) AND (th.end_ts IS NULL OR th.end_ts > :ts)
         AND coalesce((SELECT x.dur < 0 OR x.ts + x.dur > :ts FROM thread_state x WHERE x.utid = th.id
                       AND x.ts <= :ts ORDER BY x.ts DESC LIMIT 1), 0) AS alive_at_ts
FROM thread th
LEFT JOIN process p ON p.id = th.upid
{w.sql()}
ORDER BY th.tid, th.id
LIMIT :limit""",
            {**w.params, "ts": at, "limit": NAME_LIST_LIMIT + 1},
        )
        if len(found) > 1:
            alive = [t for t in found if t["alive_at_ts"]]
            found = alive if len(alive) == 1 else found
        if not found:
            raise ReportError(
                "no thread matches "
                + " ".join(
                    f"{k}={shown(v, quote=False)}"
                    for k, v in run.scope.given
                    if k in ("tid", "thread", "pid", "process")
                ),
                "thread" if s.thread is not None else "tid",
            )
        if len(found) > 1:
            options = [
                f"{thread_label(t['name'], t['tid'])}"
                + (f" in {t['process'] or '?'} [{t['pid']}]" if t["pid"] is not None else "")
                for t in found[:NAME_LIST_LIMIT]
            ]
            raise ReportError(
                f"{self.label()} needs one thread; {len(options)}"
                f"{'+' if len(found) > NAME_LIST_LIMIT else ''} match: {', '.join(options)}; "
                "narrow with tid (or pid)",
                "tid",
                options,
            )
        return found[0]

    def _next_steps(self, run: ReportRun, out: pb.SchedulingInspect) -> None:
        if out.waker_tid and out.wakeup_ts:
            run.next_step(
                f"The waker {thread_label(out.waker_thread, out.waker_tid)} when it woke this thread",
                waker_link(run, out),
            )
        if out.state_dur >= 0 and out.state_ts + out.state_dur < run.trace.end:
            run.next_step(
                f"Next state (at {run.offset(out.state_ts + out.state_dur)})",
                view_link(run, "scheduling", "inspect", ts=run.offset(out.state_ts + out.state_dur)),
            )
        run.next_step(
            f"Scheduling of {thread_label(out.thread, out.tid)}",
            view_link(run, "scheduling", "summary", tid=str(out.tid), thread=None),
        )

    def tables(self, msg: pb.SchedulingInspect, run: ReportRun) -> list[Table]:
        title = with_subtitle(thread_label(msg.thread, msg.tid), msg.subtitle)
        if msg.pid or msg.process:
            title += f" of {msg.process or '?'} [{msg.pid}]"
        title += f" at {run.offset(msg.ts)}"
        if not msg.found:
            return [Table(title, ("Field", "Value"), [], empty="(no thread state known at ts)")]
        end = "(still open at the end of the trace)" if msg.state_dur < 0 else run.offset(msg.state_ts + msg.state_dur)
        fields = [
            ("State", f"{state_name(msg.state)} ({msg.state})" if msg.state != "Running" else "Running"),
            ("Since", f"{run.offset(msg.state_ts)} (ts {msg.state_ts})"),
            ("Until", end),
            ("Duration", fmt.duration(msg.state_dur) if msg.state_dur >= 0 else "-"),
        ]
        if msg.state == "Running":
            fields.append(("CPU", str(msg.cpu) if msg.cpu >= 0 else "-"))
            fields.append(
                (
                    "Run ended as",
                    f"{state_name(msg.end_state)} ({msg.end_state})" if msg.end_state else "(still running)",
                )
            )
        if msg.blocked_function:
            fields.append(("Blocked in", msg.blocked_function))
        if msg.wakeup_ts:
            fields.append(("Runnable from", run.offset(msg.wakeup_ts)))
            fields.append(
                (
                    "Woken by",
                    thread_label(msg.waker_thread, msg.waker_tid)
                    if msg.waker_tid or msg.waker_thread
                    else "(no wakeup: preempted, or the waker was not traced)",
                )
            )
            fields.append(
                (
                    "Waited for a CPU",
                    fmt.duration(msg.wakeup_latency)
                    if msg.wakeup_latency >= 0
                    else "(still runnable at the end of the trace)",
                )
            )
        rows = []
        for key, value in fields:
            link = None
            if key == "Woken by" and msg.waker_tid:
                link = waker_link(run, msg)
            rows.append([Cell(key), Cell(value, link)])
        return [Table(title, ("Field", "Value"), rows, align="ll")]


class SchedulingDiff(DiffSpec):
    noun, view, field = "scheduling", "summary", "scheduling_summary_diff"
    title, what = "Scheduling", "threads"
    key_fields, key_headers = ("name", "process", "subtitle"), ("Thread", "Process")
    measures = (
        Measure("cpu_time", "CPU", "duration"),
        Measure("runnable", "runnable", "duration"),
        Measure("sleeping", "sleeping", "duration"),
        Measure("percent_of_trace", "% of trace", "percent"),
    )
    sorts = {"cpu": "cpu_time", "runnable": "runnable", "sleeping": "sleeping", "name": ""}
    display = ("cpu_time", "runnable")
    row_filters = {"min_duration": "cpu_time"}
    summed_ids = ("tid", "pid")

    def fill_extra(self, out: Any, base_msg: Any, target_msg: Any) -> None:
        msg = target_msg if target_msg is not None else base_msg
        out.group_by = msg.group_by if msg is not None else "thread"
        out.baseline_cpu_count = base_msg.cpu_count if base_msg is not None else 0
        out.target_cpu_count = target_msg.cpu_count if target_msg is not None else 0

    def what_of(self, out: Any) -> str:
        return "processes" if out.group_by == "process" else "threads"

    def table(self, out: Any, run: ReportRun, moved_only: bool = False) -> Table:
        table = super().table(out, run, moved_only)
        if out.group_by == "process":  # the key is the process: no thread column
            table.headers = ("Process",) + tuple(table.headers[2:])
            table.rows = [row[1:] for row in table.rows]
            table.align = table.align[1:]
        return table

    def key_cells(self, row: Any, run: ReportRun, out: Any) -> list[Cell]:
        if out.group_by == "process":
            link = (
                diff_link(run, row, "scheduling", "summary", process=glob_escape(row.name), group_by=None)
                if row.name != "(no process)"
                else None
            )
            return [Cell(""), Cell(row.name, link, subtitle=row.subtitle)]
        link = diff_link(
            run,
            row,
            "scheduling",
            "timeline",
            thread=glob_escape(row.name),
            **({"process": glob_escape(row.process)} if row.process else {}),
        )
        return [Cell(row.name or "?", link if row.name else None, subtitle=row.subtitle), Cell(row.process or "-")]


VIEWS = [SchedulingSummaryView(), SchedulingTimelineView(), SchedulingInspectView()]
DIFFS = [SchedulingDiff()]
