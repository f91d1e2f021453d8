"""The `tracks` noun: every timeline track, what is on it and whose it is.

Also the track helpers the `processes` and `counters` views share: the owner
joins (a thread track's process is its thread's), the CPU/GPU dimension of a
track, owner labels and links that carry over only the flags a target view takes.
"""

from __future__ import annotations

import re

from .. import format as fmt
from .. import report_pb2 as pb
from ..base import Cell, Link, ReportRun, Table, View
from ..filters import Where, owner_terms

# track → its thread → the process of the track or of its thread (as slices' SLICE_FROM). Joined on
# id (= utid, upid): the row id, where utid and upid are computed columns no index can serve.
TRACK_FROM = """FROM track tr
LEFT JOIN thread th ON th.id = tr.utid
LEFT JOIN process p ON p.id = coalesce(tr.upid, th.upid)"""

# A track's CPU or GPU is one of its dimensions (cpu_counter_track / gpu_counter_track views).
CPU_SQL = "(SELECT a.int_value FROM args a WHERE a.arg_set_id = tr.dimension_arg_set_id AND a.key = 'cpu')"
GPU_SQL = "(SELECT a.int_value FROM args a WHERE a.arg_set_id = tr.dimension_arg_set_id AND a.key = 'gpu')"

OWNER_COLUMNS = f"""p.name AS process, p.pid, th.name AS thread, th.tid, {CPU_SQL} AS cpu"""

# Flags whose meaning differs between views (a process name here, a slice name there): never carried over.
VIEW_LOCAL_FLAGS = frozenset({"sort", "name", "min_count"})


def owner_where(run: ReportRun) -> Where:
    """Scope flags on a track's owner (aliases tr, th, p as in TRACK_FROM).

    pid/process select the process's own tracks and its threads' tracks; tid/thread select thread
    tracks; cpu selects tracks with that CPU dimension; track is a glob on the track name.
    """
    s = run.scope
    w = owner_terms(run)
    if s.cpu is not None:
        w.add(f"{CPU_SQL} = :cpu", cpu=s.cpu)
    if s.track is not None:
        w.add("tr.name GLOB :track", track=s.track)
    return w


def owner_label(
    thread: str | None,
    tid: int | None,
    process: str | None,
    pid: int | None,
    cpu: int | None = None,
    gpu: int | None = None,
    thread_first: bool = True,
) -> str:
    """'thread CrBrowserMain [100]', 'process browser [100]', 'cpu 2', 'gpu 0' or 'global'."""
    if thread_first and tid is not None:
        return f"thread {thread or '?'} [{tid}]"
    if pid is not None:
        return f"process {process or '?'} [{pid}]"
    if cpu is not None:
        return f"cpu {cpu}"
    if gpu is not None:
        return f"gpu {gpu}"
    return "global"


def owner_params(tid: int | None, pid: int | None, cpu: int | None) -> dict[str, str | None]:
    """The flags that narrow a report to one track's owner."""
    if tid is not None:
        return {"tid": str(tid)}
    if pid is not None:
        return {"pid": str(pid)}
    if cpu is not None:
        return {"cpu": str(cpu)}
    return {}


_GLOB_SPECIAL = re.compile(r"([*?\[])")


def glob_escape(text: str) -> str:
    """A glob matching exactly `text` (names go into name=/track= links, which are globs)."""
    return _GLOB_SPECIAL.sub(r"[\1]", text)


def scoped_link(run: ReportRun, noun: str, view: str = "", **changes: str | None) -> Link:
    """A link to (noun, view) keeping this report's scope flags that the target takes, plus `changes`.

    Flags whose meaning is per view (sort, name, min_count, ...) are not carried over.
    """
    from . import NOUNS

    views = NOUNS.get(noun, {})
    target = views.get(view) if view else next(iter(views.values()), None)
    allowed = (target.flags | {"top"}) if target is not None else frozenset({"top"})
    params = {k: v for k, v in run.scope.to_params().items() if k in allowed and k not in VIEW_LOCAL_FLAGS}
    for key, value in changes.items():
        if value is None:
            params.pop(key, None)
        elif key in allowed:
            params[key] = str(value)
    return Link.to(noun, view, params)


def has_view(noun: str, view: str) -> bool:
    from . import NOUNS

    return view in NOUNS.get(noun, {})


SORT_COLUMNS = {"count": "event_count DESC, id", "name": "name IS NULL, name, id", "type": "type, event_count DESC, id"}


class TracksTableView(View):
    noun = "tracks"
    name = "table"
    title = "Tracks"
    description = (
        "Every track with its type, the number of events on it (slices, counter values or states) and "
        "the process, thread or CPU it belongs to. pid/process include the process's thread tracks; "
        "name and track are globs on the track name; with time, events that start in the range are "
        "counted."
    )
    result_field = "tracks_table"
    flags = frozenset({"pid", "process", "tid", "thread", "track", "cpu", "time", "name", "min_count", "sort"})
    sorts = ("count", "name", "type")
    canned_sql = f"""WITH tracks AS (
  SELECT tr.id, tr.name, tr.type, tr.event_type,
         CASE WHEN :time = '' THEN coalesce(st.event_count, 0)
              WHEN tr.event_type = 'slice' THEN (SELECT count(*) FROM slice s WHERE s.track_id = tr.id
                AND s.ts >= (SELECT report_range_start(:time)) AND s.ts < (SELECT report_range_end(:time)))
              WHEN tr.event_type = 'counter' THEN (SELECT count(*) FROM counter c WHERE c.track_id = tr.id
                AND c.ts >= (SELECT report_range_start(:time)) AND c.ts < (SELECT report_range_end(:time)))
              WHEN tr.event_type = 'state' THEN (SELECT count(*) FROM state x WHERE x.track_id = tr.id
                AND x.ts >= (SELECT report_range_start(:time)) AND x.ts < (SELECT report_range_end(:time)))
              ELSE 0 END AS event_count,
         {OWNER_COLUMNS}
  {TRACK_FROM.replace(chr(10), chr(10) + "  ")}
  LEFT JOIN report_track_stats st ON st.track_id = tr.id
  WHERE (:pid = '' OR p.pid = :pid)
    AND (:process = '' OR p.name GLOB :process)
    AND (:tid = '' OR th.tid = :tid)
    AND (:thread = '' OR th.name GLOB :thread)
    AND (:cpu = '' OR {CPU_SQL} = CAST(:cpu AS INTEGER))
    AND (:track = '' OR tr.name GLOB :track)
    AND (:name = '' OR tr.name GLOB :name)
)
SELECT * FROM tracks
WHERE event_count >= coalesce(CAST(nullif(:min_count, '') AS INTEGER), 0)
ORDER BY CASE coalesce(nullif(:sort, ''), 'count') WHEN 'count' THEN -event_count END,
         CASE coalesce(nullif(:sort, ''), 'count') WHEN 'name' THEN name IS NULL END,
         CASE coalesce(nullif(:sort, ''), 'count') WHEN 'name' THEN name WHEN 'type' THEN type END,
         CASE coalesce(nullif(:sort, ''), 'count') WHEN 'type' THEN -event_count END, id
LIMIT coalesce(nullif(:top, ''), 10)"""

    def compute(self, run: ReportRun, out: pb.TracksTable) -> None:
        s = run.scope
        w = owner_where(run)
        if s.name is not None:
            w.add("tr.name GLOB :name", name=s.name)
        params = dict(w.params)
        if s.time is None:
            count_sql = "coalesce(st.event_count, 0)"
            stats_join = "\nLEFT JOIN report_track_stats st ON st.track_id = tr.id"
        else:
            # Events that start in the range: an index range count on (track_id, ts) per track.
            start, end = run.time_range()
            params.update(range_start=start, range_end=end)
            in_range = "{a}.track_id = tr.id AND {a}.ts >= :range_start AND {a}.ts < :range_end"
            count_sql = f"""CASE tr.event_type
         WHEN 'slice' THEN (SELECT count(*) FROM slice s WHERE {in_range.format(a="s")})
         WHEN 'counter' THEN (SELECT count(*) FROM counter c WHERE {in_range.format(a="c")})
         WHEN 'state' THEN (SELECT count(*) FROM state x WHERE {in_range.format(a="x")})
         ELSE 0 END"""
            stats_join = ""
        having = ""
        if s.min_count is not None:
            having = "WHERE event_count >= :min_count"
            params["min_count"] = s.min_count
        rows = run.query(
            "tracks in scope, top by the sort key",
            f"""WITH tracks AS (
SELECT tr.id, tr.name, tr.type, tr.event_type, {count_sql} AS event_count,
       {OWNER_COLUMNS}
{TRACK_FROM}{stats_join}
{w.sql()}
)
SELECT *, count(*) OVER () AS total_rows FROM tracks {having}
ORDER BY {SORT_COLUMNS[self.sort_key(s)]}
LIMIT :top""",
            {**params, "top": s.top},
        )
        out.total_rows = rows[0]["total_rows"] if rows else 0
        for r in rows:
            row = out.rows.add(
                id=r["id"],
                name=r["name"] or "",
                type=r["type"] or "",
                event_type=r["event_type"] or "",
                event_count=r["event_count"] or 0,
                process=r["process"] or "",
                pid=r["pid"] or 0,
                thread=r["thread"] or "",
                tid=r["tid"] or 0,
            )
            if r["cpu"] is not None:
                row.cpu = r["cpu"]
        run.truncation(len(rows), out.total_rows, "tracks")
        if out.rows:
            top = out.rows[0]
            link = self._drill(run, top)
            if link is not None:
                run.next_step(f"What is on the busiest track ({top.name or top.type})", link)

    def _drill(self, run: ReportRun, row: pb.TracksTable.Row) -> Link | None:
        """Where a track's events are reported: slices table or counters timeline, narrowed to the track."""
        tid = row.tid if row.thread or row.tid else None
        pid = row.pid if row.process or row.pid else None
        cpu = row.cpu if row.HasField("cpu") else None
        if row.event_type == "slice" and has_view("slices", "table"):
            narrow = {"track": glob_escape(row.name)} if row.name else owner_params(tid, pid, None)
            return scoped_link(run, "slices", "table", **narrow) if narrow else None
        if row.event_type == "counter" and row.name and has_view("counters", "timeline"):
            return scoped_link(run, "counters", "timeline", name=glob_escape(row.name), **owner_params(tid, pid, cpu))
        return None

    def tables(self, msg: pb.TracksTable, run: ReportRun) -> list[Table]:
        rows = []
        for r in msg.rows:
            owner = owner_label(
                r.thread,
                r.tid if r.thread or r.tid else None,
                r.process,
                r.pid if r.process or r.pid else None,
                r.cpu if r.HasField("cpu") else None,
            )
            rows.append(
                [
                    Cell(
                        r.name or "-",
                        self._drill(run, r),
                        title=f"track id {r.id}",
                        href=run.linker.details("track", r.id),
                    ),
                    Cell(r.type),
                    Cell(r.event_type),
                    Cell(fmt.count(r.event_count), title=str(r.event_count)),
                    Cell("-" if owner == "global" else owner),
                ]
            )
        title = f"Tracks ({msg.total_rows} in scope)"
        return [
            Table(
                title,
                ("Track", "Type", "Kind", "Events", "Process/Thread"),
                rows,
                align="lllrl",
                empty="(no tracks in scope)",
            )
        ]


VIEWS = [TracksTableView()]
