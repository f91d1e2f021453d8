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

MODULES: dict[str, Module] = {
    "slices.with_context": Module(),  # thread_slice, process_slice, thread_or_process_slice: schema.py
    "viz.track_event_callstacks": Module(
        sql="CREATE TEMP TABLE _track_event_tracks_with_callstacks AS "
        "SELECT DISTINCT track_id FROM __intrinsic_track_event_callstacks;"
    ),
    "viz.summary.track_event": Module(("viz.track_event_callstacks",), _TRACK_EVENT_ORDER),
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
