"""trace_processor standard library modules that `INCLUDE PERFETTO MODULE name;` loads in the `query`
command and the conformance runner.

A module is its dependencies and SQL that creates TEMP tables and views on the connection, written here
in SQLite to give the rows and columns trace_processor's module gives. A module whose tables every trace
database already holds (schema.py's views) has no SQL. Each is run at most once per connection.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass


@dataclass(frozen=True)
class Module:
    dependencies: tuple[str, ...] = ()
    sql: str = ""


class UnknownModule(ValueError):
    """An INCLUDE PERFETTO MODULE of a module not provided here."""


# Track event tracks (and their parents' child ordering) for the viz.summary.track_event module.
_TRACK_EVENT_ORDER = """
CREATE TEMP TABLE _track_event_tracks_unordered AS
WITH own AS (
  SELECT id, name, parent_id,
    extract_arg(source_arg_set_id, 'child_ordering') AS ordering,
    extract_arg(source_arg_set_id, 'sibling_order_rank') AS rank,
    extract_arg(source_arg_set_id, 'description') AS description
  FROM track WHERE type GLOB '*_track_event'
)
SELECT own.id, own.name, own.parent_id, parent.ordering AS parent_ordering,
  ifnull(own.rank, 0) AS rank, own.description
FROM own LEFT JOIN own AS parent ON parent.id = own.parent_id;

-- The first event of each track event track, whatever its kind.
CREATE TEMP TABLE _min_ts_per_track AS
SELECT e.track_id AS id, min(e.ts) AS min_ts
FROM (
  SELECT track_id, ts FROM counter UNION ALL SELECT track_id, ts FROM slice
  UNION ALL SELECT track_id, ts FROM state
) AS e
WHERE e.track_id IN (SELECT id FROM _track_event_tracks_unordered)
GROUP BY e.track_id;

CREATE TEMP TABLE _track_event_has_children AS
SELECT DISTINCT parent_id AS id FROM track WHERE type GLOB '*_track_event' AND parent_id IS NOT NULL;

-- Siblings are numbered by their parent's child_ordering: by name (lexicographic, and when the parent
-- says nothing), by sibling_order_rank (explicit) or by first event (chronological). Tracks of one
-- track group are one row.
CREATE TEMP TABLE _track_event_tracks_ordered_groups AS
WITH numbered AS (
  SELECT t.id,
    CASE
      WHEN t.parent_ordering = 'explicit' THEN row_number() OVER (PARTITION BY t.parent_id ORDER BY t.rank)
      WHEN t.parent_ordering = 'chronological'
        THEN row_number() OVER (PARTITION BY t.parent_id ORDER BY first.min_ts)
      ELSE row_number() OVER (PARTITION BY t.parent_id ORDER BY t.name)
    END AS order_id
  FROM _track_event_tracks_unordered AS t LEFT JOIN _min_ts_per_track AS first USING (id)
  WHERE t.parent_ordering IS NULL OR t.parent_ordering IN ('lexicographic', 'explicit', 'chronological')
)
SELECT
  extract_arg(track.dimension_arg_set_id, 'upid') AS upid,
  extract_arg(track.dimension_arg_set_id, 'utid') AS utid,
  track.parent_id,
  track.type GLOB '*counter*' AS is_counter,
  track.type GLOB '*state*' AS is_state,
  track.name,
  min(extract_arg(track.source_arg_set_id, 'description')) AS description,
  min(counter_track.unit) AS unit,
  min(extract_arg(track.source_arg_set_id, 'builtin_counter_type')) AS builtin_counter_type,
  min(extract_arg(track.source_arg_set_id, 'y_axis_share_key')) AS y_axis_share_key,
  max(first.id IS NOT NULL) AS has_data,
  max(parents.id IS NOT NULL) AS has_children,
  max(callstacks.track_id IS NOT NULL) AS has_callstacks,
  min(numbered.id) AS min_track_id,
  group_concat(numbered.id) AS track_ids,
  min(numbered.order_id) AS order_id
FROM numbered
JOIN track USING (id)
LEFT JOIN counter_track USING (id)
LEFT JOIN _track_event_has_children AS parents USING (id)
LEFT JOIN _min_ts_per_track AS first USING (id)
LEFT JOIN _track_event_tracks_with_callstacks AS callstacks ON callstacks.track_id = numbered.id
GROUP BY track.track_group_id, ifnull(track.track_group_id, track.id)
ORDER BY track.parent_id, numbered.order_id;
"""

# stacks.cpu_profiling's samples: every stack sample of a session timed in ns, cycles or instructions (or
# of no session), with its thread and CPU. (Its cpu_profiling_summary_tree is not provided.)
_CPU_PROFILING = """
CREATE TEMP TABLE cpu_profiling_samples AS
SELECT sample.id, sample.ts, task.utid, thread.tid, thread.name AS thread_name, execution.ucpu, cpu.cpu,
  sample.callsite_id, sample.source
FROM stack_sample AS sample
LEFT JOIN stack_sample_task_context AS task ON task.id = sample.task_context_id
LEFT JOIN stack_sample_execution_context AS execution ON execution.id = sample.execution_context_id
LEFT JOIN stack_sample_session AS session ON session.id = sample.session_id
LEFT JOIN thread USING (utid)
LEFT JOIN cpu ON cpu.id = execution.ucpu
WHERE session.timebase_unit IS NULL OR session.timebase_unit IN ('ns', 'cycles', 'instructions')
ORDER BY sample.ts;
"""

# android.memory.heap_profile.intervals: one row per heapprofd dump of a process's heap, over the interval
# the dump covers (its profile's start, or else from just after the previous dump of that heap), with the
# memory its callsites still hold (callsites with more allocations than frees), allocated and net.
_HEAP_PROFILE_INTERVALS = """
CREATE TEMP TABLE _android_heap_profile_intervals AS
WITH by_callsite AS (
  SELECT upid, heap_name, ts, min(id) AS first_id, sum(count) AS net_count, sum(size) AS net_size,
    sum(max(size, 0)) AS allocated_size
  FROM heap_profile_allocation
  GROUP BY upid, heap_name, ts, callsite_id
),
by_dump AS (
  SELECT min(c.first_id) AS id, c.upid, c.heap_name, c.ts AS ts_end, profile.ts AS profile_start,
    sum(CASE WHEN c.net_count > 0 THEN c.net_size ELSE 0 END) AS retained,
    sum(c.allocated_size) AS allocated, sum(c.net_size) AS delta
  FROM by_callsite AS c JOIN heap_profile AS profile ON profile.upid = c.upid AND profile.ts_end = c.ts
  GROUP BY c.upid, c.heap_name, c.ts
),
started AS (
  SELECT *,
    CASE WHEN profile_start < ts_end THEN profile_start
      ELSE min(ts_end, 1 + lag(ts_end, 1, trace_start()) OVER (PARTITION BY upid, heap_name ORDER BY ts_end))
    END AS ts
  FROM by_dump
)
SELECT id, upid, heap_name, ts, ts_end - ts AS dur, retained, allocated, delta FROM started;
"""

MODULES: dict[str, Module] = {
    "slices.with_context": Module(),  # thread_slice, process_slice, thread_or_process_slice: schema.py
    "viz.track_event_callstacks": Module(
        sql="CREATE TEMP TABLE _track_event_tracks_with_callstacks AS "
        "SELECT DISTINCT track_id FROM __intrinsic_track_event_callstacks;"
    ),
    "viz.summary.track_event": Module(("viz.track_event_callstacks",), _TRACK_EVENT_ORDER),
    "stacks.cpu_profiling": Module(sql=_CPU_PROFILING),
    "android.memory.heap_profile.intervals": Module(sql=_HEAP_PROFILE_INTERVALS),
}


def check(name: str) -> None:
    """UnknownModule (one line, naming it and what there is) unless module `name` is provided."""
    if name not in MODULES:
        raise UnknownModule(
            f"INCLUDE PERFETTO MODULE {name}: that trace_processor standard library module is not here; "
            f"these are: {', '.join(sorted(MODULES))}"
        )


def include(conn: sqlite3.Connection, name: str, done: set[str]) -> None:
    """Runs module `name` (after its dependencies) on `conn`, unless in `done` (the modules it holds)."""
    check(name)
    module = MODULES[name]
    if name in done:
        return
    for dependency in module.dependencies:
        include(conn, dependency, done)
    if module.sql:
        conn.executescript(module.sql)
    done.add(name)
