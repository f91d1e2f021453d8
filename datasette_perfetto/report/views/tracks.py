"""The `tracks` noun: every timeline track, what is on it and whose it is.

Also the track helpers the `counters` views share: the owner joins (a thread track's
process is its thread's), the CPU/GPU dimension of a track and owner labels.
"""

from __future__ import annotations

from typing import Any

from ...pages import data
from ...pages.data import CPU_SQL, GPU_SQL, TRACK_FROM  # noqa: F401 (GPU_SQL: counters.py imports it from here)
from .. import format as fmt
from .. import report_pb2 as pb
from ..base import Cell, Link, ReportRun, Table, View, count_cell
from ..diff_spec import DiffSpec, Measure, diff_link, optional_field, owner_key
from ..filters import CANNED_TOP, OWNER_FLAGS, Where, canned_sort, dim_terms, optional, optional_terms, owner_terms
from ..grouping import Grouping, dim_params, grouping, track_values
from ..links import glob_escape, owner_params, scoped_link
from ..scope import MAX_TOP
from ..subtitles import track_subtitles

# The track joins and CPU/GPU dimensions are the tracks list's (pages/data.py), which this view renders.
OWNER_COLUMNS = f"""p.name AS process, p.pid, th.name AS thread, th.tid, {CPU_SQL} AS cpu"""

# The owner flags and name (a glob on the track name) as a canned query's optional terms on TRACK_FROM.
CANNED_OWNER = optional_terms((*OWNER_FLAGS, "cpu", "track", "dim"), cpu=f"{CPU_SQL} = CAST(:cpu AS INTEGER)")
CANNED_NAME = optional("name", "tr.name GLOB :name")


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
    w.extend(dim_terms(run, "track"))
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
        return f"{data.owner_name('thread', thread)} [{tid}]"
    if pid is not None:
        return f"{data.owner_name('process', process)} [{pid}]"
    if cpu is not None:
        return f"cpu {cpu}"
    if gpu is not None:
        return f"gpu {gpu}"
    return "global"


SORT_COLUMNS = {
    "count": "event_count DESC, tr.id",
    "name": "tr.name IS NULL, tr.name, tr.id",
    "type": "tr.type, event_count DESC, tr.id",
}


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
    uses_top = True
    flags = frozenset(
        {"pid", "process", "tid", "thread", "track", "cpu", "time", "name", "min_count", "sort", "dim", "group_by"}
    )
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
  WHERE {CANNED_OWNER}
    AND {CANNED_NAME}
)
SELECT * FROM tracks
WHERE event_count >= coalesce(CAST(nullif(:min_count, '') AS INTEGER), 0)
ORDER BY CASE {canned_sort(sorts[0])} WHEN 'count' THEN -event_count END,
         CASE {canned_sort(sorts[0])} WHEN 'name' THEN name IS NULL END,
         CASE {canned_sort(sorts[0])} WHEN 'name' THEN name WHEN 'type' THEN type END,
         CASE {canned_sort(sorts[0])} WHEN 'type' THEN -event_count END, id
LIMIT {CANNED_TOP}"""

    def compute(self, run: ReportRun, out: pb.TracksTable) -> None:
        """The tracks list of the tracks page (data.track_rows), in scope, top by the sort key; each of its
        queries recorded. With time, the events that start in the range are counted (index range counts)."""
        s = run.scope
        w = owner_where(run)
        if s.name is not None:
            w.add("tr.name GLOB :name", name=s.name)
        group = grouping(run, self)
        if group is not None:
            self._grouped(run, out, w, group)
            return
        rows, out.total_rows = data.track_rows(
            run.conn,
            data.Schema(run.conn),
            data.TrackQuery(
                where="\n  AND ".join(w.terms),
                params=w.params,
                order=SORT_COLUMNS[self.sort_key(s)],
                limit=s.top,
                count_range=run.time_range() if s.time is not None else None,
                min_count=s.min_count,
                count_outside=run.outside_is_shorter(),
            ),
            run.query,
        )
        for r in rows:
            row = out.rows.add(
                id=r["id"],
                name=r["name"] or "",
                type=r["type"] or "",
                event_type=r["event_type"] or "",
                event_count=r["event_count"] or 0,
                process=r["process_name"] or "",
                pid=r["pid"] or 0,
                thread=r["thread_name"] or "",
                tid=r["tid"] or 0,
            )
            if r["cpu"] is not None:
                row.cpu = r["cpu"]
        subtitles = track_subtitles(run, [r.id for r in out.rows])
        for row in out.rows:
            row.subtitle = subtitles.get(row.id, "")
        run.truncation(len(rows), out.total_rows, "tracks")
        if out.rows:
            top = out.rows[0]
            link = self._drill(run, top)
            if link is not None:
                run.next_step(f"What is on the busiest track ({top.name or top.type})", link)

    def _grouped(self, run: ReportRun, out: pb.TracksTable, w: Where, group: Grouping) -> None:
        """One row per value of the dimension: its tracks in scope and their events."""
        s = run.scope
        out.group_by = group.name
        rows, _ = data.track_rows(
            run.conn,
            data.Schema(run.conn),
            data.TrackQuery(
                where="\n  AND ".join(w.terms),
                params=w.params,
                order=SORT_COLUMNS["count"],
                limit=MAX_TOP,
                count_range=run.time_range() if s.time is not None else None,
                count_outside=run.outside_is_shorter(),
            ),
            run.query,
        )
        values = track_values(run, group, [r["id"] for r in rows])
        pools: dict[str | None, list[int]] = {}
        for r in rows:
            pools.setdefault(values.get(r["id"]), []).append(r["event_count"] or 0)
        pooled = [
            pb.TracksTable.Row(
                name=group.label(value), group_value=value or "", event_count=sum(counts), track_count=len(counts)
            )
            for value, counts in pools.items()
        ]
        pooled = [r for r in pooled if s.min_count is None or r.event_count >= s.min_count]
        if self.sort_key(s) == "count":
            pooled.sort(key=lambda r: (-r.event_count, group.rank(r.group_value or None)))
        else:
            pooled.sort(key=lambda r: group.rank(r.group_value or None))
        out.total_rows = len(pooled)
        out.rows.extend(pooled[: s.top])
        run.truncation(len(out.rows), out.total_rows, f"{group.name} values")

    def _drill(self, run: ReportRun, row: pb.TracksTable.Row) -> Link | None:
        """Where a track's events are reported: slices table or counters timeline, narrowed to the track."""
        tid = row.tid if row.thread or row.tid else None
        pid = row.pid if row.process or row.pid else None
        cpu = row.cpu if row.HasField("cpu") else None
        if row.event_type == "slice":
            narrow = {"track": glob_escape(row.name)} if row.name else owner_params(tid, pid, None)
            return scoped_link(run, "slices", "table", **narrow) if narrow else None
        if row.event_type == "counter" and row.name:
            return scoped_link(run, "counters", "timeline", name=glob_escape(row.name), **owner_params(tid, pid, cpu))
        return None

    def tables(self, msg: pb.TracksTable, run: ReportRun) -> list[Table]:
        if msg.group_by:
            rows = [
                [
                    Cell(
                        r.name,
                        scoped_link(
                            run, "tracks", "table", dim=dim_params(run, msg.group_by, r.group_value), group_by=None
                        )
                        if r.group_value
                        else None,
                    ),
                    count_cell(r.track_count),
                    count_cell(r.event_count),
                ]
                for r in msg.rows
            ]
            title = f"Tracks by {msg.group_by} ({fmt.plural(msg.total_rows, 'value')})"
            return [Table(title, (msg.group_by.capitalize(), "Tracks", "Events"), rows, empty="(no tracks in scope)")]
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
                        data.track_title(r.name, r.thread, r.process, r.type),
                        self._drill(run, r),
                        title=f"track id {r.id}",
                        href=run.linker.details("track", r.id),
                        subtitle=r.subtitle,
                    ),
                    Cell(r.type),
                    Cell(r.event_type),
                    count_cell(r.event_count),
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


class TracksDiff(DiffSpec):
    noun, view, field = "tracks", "table", "tracks_table_diff"
    title, what = "Tracks", "tracks"
    key_fields, key_headers = ("name", "type", "owner", "subtitle"), ("Track", "Type", "Owner")
    measures = (Measure("event_count", "events", "count"),)
    sorts = {"count": "event_count", "name": ""}
    display = ("event_count",)
    row_filters = {"min_count": "event_count"}
    summed_ids = ("id", "pid", "tid")

    def key(self, row: Any) -> tuple[str, ...]:
        return (
            row.name,
            row.type,
            owner_key(row.process, row.pid, row.thread, row.tid, optional_field(row, "cpu"), None),
            row.subtitle,
        )

    def key_cells(self, row: Any, run: ReportRun, out: Any) -> list[Cell]:
        link = diff_link(run, row, "tracks", "table", track=glob_escape(row.name)) if row.name else None
        # Unnamed tracks as elsewhere ("(unnamed thread track)"); whose they are is the Owner column.
        return [
            Cell(data.track_title(row.name, None, None, row.type), link, subtitle=row.subtitle),
            Cell(row.type),
            Cell(row.owner),
        ]


VIEWS = [TracksTableView()]
DIFFS = [TracksDiff()]
