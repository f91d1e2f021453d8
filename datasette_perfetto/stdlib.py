"""trace_processor standard library modules that `INCLUDE PERFETTO MODULE name;` loads in the `query`
command and the conformance runner.

A module is its dependencies and SQL that creates TEMP tables and views on the connection, written here
in SQLite to give the rows and columns trace_processor's module gives. A module whose tables every trace
database already holds (schema.py's views) has no SQL. Each is run at most once per connection.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from .flamegraph import min_depth_tree
from .functions import fnv1a_hash


@dataclass(frozen=True)
class Module:
    dependencies: tuple[str, ...] = ()
    sql: str = ""
    # What SQL cannot do alone (trace_processor's C++ intrinsics), run on the connection before `sql`.
    build: Callable[[sqlite3.Connection], None] | None = None


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


def create_temp_table(conn: sqlite3.Connection, name: str, columns: list[str], rows: list[tuple]) -> None:
    """TEMP table `name` holding `rows` (the one way this package's SQL layer materializes computed rows)."""
    quoted = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
    conn.execute(f"CREATE TEMP TABLE {name} ({quoted})")
    conn.executemany(f"INSERT INTO temp.{name} VALUES ({', '.join('?' * len(columns))})", rows)


INTERVAL_COLUMNS = ["id", "ts", "dur", "track_id", "value", "next_value", "delta_value"]


def counter_leading_intervals(conn: sqlite3.Connection, counters_sql: str) -> list[tuple]:
    """Rows (INTERVAL_COLUMNS): each counter value of
    `counters_sql`'s rows (id, ts, track_id, value) lasting until the next one on its track (the last until
    the trace's end), as trace_processor's counter_leading_intervals! macro. A value equal to the two
    before it adds nothing and is dropped, but the last of such a run is kept when the value changes, so
    a counter of deltas returns to zero where it does."""
    kept: dict[int, list[list]] = {}  # track -> [id, ts, value] rows
    pending: dict[int, list] = {}  # track -> the last dropped row of a run of equal values
    for row_id, ts, track_id, value in conn.execute(f"SELECT * FROM ({counters_sql}) ORDER BY ts, id"):
        value = float(value)  # a counter's value is a double
        rows = kept.setdefault(track_id, [])
        if len(rows) > 1 and rows[-1][2] == value and rows[-2][2] == value:
            pending[track_id] = [row_id, ts, value]
            continue
        last_of_run = pending.pop(track_id, None)
        if last_of_run is not None:
            rows.append(last_of_run)
        rows.append([row_id, ts, value])
    (trace_end,) = conn.execute("SELECT end_ts FROM trace_bounds").fetchone()
    out = []
    for track_id, rows in kept.items():
        for i, (row_id, ts, value) in enumerate(rows):
            following = rows[i + 1] if i + 1 < len(rows) else None
            out.append(
                (
                    row_id,
                    ts,
                    (following[1] if following else trace_end) - ts,
                    track_id,
                    value,
                    following[2] if following else None,
                    value - rows[i - 1][2] if i else None,
                )
            )
    return out


def _intervals_table(name: str, counters_sql: str) -> Callable[[sqlite3.Connection], None]:
    """A module's build step: TEMP table `name` of counter_leading_intervals over `counters_sql`."""
    return lambda conn: create_temp_table(conn, name, INTERVAL_COLUMNS, counter_leading_intervals(conn, counters_sql))


# android.power_rails: energy counters of power rails as intervals with their average power, and each rail's
# names (the friendly name is what follows "power.rails.").
_POWER_RAILS = """
CREATE TEMP TABLE android_power_rails_counters AS
SELECT c.id, c.ts, c.dur, t.name AS power_rail_name,
  extract_arg(t.source_arg_set_id, 'raw_name') AS raw_power_rail_name,
  c.value AS energy_since_boot, c.next_value AS energy_since_boot_at_end,
  1e6 * ((c.next_value - c.value) / c.dur) AS average_power, c.delta_value AS energy_delta, c.track_id,
  c.value
FROM _power_rail_intervals AS c JOIN counter_track AS t ON t.id = c.track_id;

CREATE TEMP TABLE android_power_rails_metadata AS
SELECT name AS power_rail_name, extract_arg(source_arg_set_id, 'raw_name') AS raw_power_rail_name,
  CASE WHEN name GLOB 'power.rails.*' THEN substr(name, 13) END AS friendly_name, id AS track_id,
  extract_arg(source_arg_set_id, 'subsystem_name') AS subsystem_name, machine_id
FROM counter_track WHERE type = 'power_rails';
"""

# android.entity_state_residency: time in each power entity state (counters of seconds since boot, named
# "Entity residency: <entity> is <state>"), per interval to the next sample.
_ENTITY_STATE_RESIDENCY = """
CREATE TEMP TABLE android_entity_state_residency AS
WITH named AS (
  SELECT id, name AS raw_name,
    CASE WHEN name GLOB 'Entity residency: * is *'
      THEN replace(substr(name, 0, instr(name, ' is ')), 'Entity residency: ', '') END AS entity_name,
    CASE WHEN name GLOB 'Entity residency: * is *' THEN substr(name, instr(name, ' is ') + 4) END AS state_name
  FROM counter_track WHERE type = 'entity_state'
),
timed AS (
  SELECT c.id, c.ts, lead(c.ts) OVER track_order - c.ts AS dur, n.entity_name, n.state_name, n.raw_name,
    CAST(c.value * 1e6 AS INTEGER) AS state_time_since_boot,
    CAST(lead(c.value) OVER track_order * 1e6 AS INTEGER) AS state_time_since_boot_at_end, c.track_id
  FROM counter AS c JOIN named AS n ON n.id = c.track_id
  WINDOW track_order AS (PARTITION BY c.track_id ORDER BY c.ts)
)
SELECT id, ts, dur, entity_name, state_name, raw_name, state_time_since_boot, state_time_since_boot_at_end,
  (state_time_since_boot_at_end - state_time_since_boot) * 1.0 / dur AS state_time_ratio, track_id
FROM timed;
"""

# android.cpu.cpu_per_uid: the per-UID CPU time tracks (with a package of the UID's app id, any of them, none
# below 10000) and each of their counter values as an interval to the next, with the CPU time used in it and
# that time per unit of wall time (1.0: one core busy). The intervals are counter_leading_intervals'.
_CPU_PER_UID = """
CREATE TEMP TABLE android_cpu_per_uid_track AS
SELECT track.track_id AS id, track.uid, track.cluster, track.total_cpu_millis,
  (SELECT p.package_name FROM package_list AS p WHERE p.uid = track.uid % 100000 AND p.uid >= 10000 LIMIT 1)
    AS package_name
FROM __intrinsic_android_cpu_per_uid_track AS track;

CREATE TEMP VIEW android_cpu_per_uid_counter AS
SELECT id, ts, dur, track_id, next_value - value AS diff_ms, (next_value - value) * 1e6 / dur AS cpu_ratio
FROM _android_cpu_per_uid_intervals
WHERE next_value IS NOT NULL;
"""

# android.process_metadata: each process with its Android uid, user and package. trace_processor's
# _app_id_to_base_package (sdk sandbox and pcc app ids to their app's) is the CASE of `base`; its table
# function _android_package_for_process, the subquery of `matched`: among the packages of the process'
# uid (any when the uid has a single package, else those whose name starts the process name) and, for an
# isolated uid (90000-99999), those whose name starts the process name's part before ':', the package
# whose name is longest (SQLite's min() with a bare column: the first of equals; a NULL distance: the
# last such row); android_is_kernel_task(upid), the EXISTS.
_PROCESS_METADATA = """
CREATE TEMP TABLE _uid_package_count AS
SELECT uid, count(1) AS cnt FROM package_list GROUP BY 1;

CREATE TEMP TABLE _android_kernel_tasks AS
SELECT a.upid
FROM process AS a LEFT JOIN process AS b ON a.parent_upid = b.upid
WHERE b.name = 'kthreadd' OR a.pid = 0 OR b.pid = 0
ORDER BY 1;

CREATE TEMP TABLE android_process_metadata AS
WITH base AS (
  SELECT upid, pid, name, cmdline, android_appid, android_user_id,
    CASE
      WHEN android_appid < 20000 THEN android_appid
      WHEN android_appid < 30000 THEN android_appid - 10000
      WHEN android_appid < 40000 THEN android_appid - 20000
      ELSE android_appid
    END AS base_uid
  FROM process
),
counted AS (
  SELECT base.*, c.cnt FROM base LEFT JOIN _uid_package_count AS c ON base.base_uid = c.uid
),
matched AS (
  SELECT counted.*, (
    SELECT chosen.id FROM (
      SELECT p.id, min(length(counted.name) - length(p.package_name))
      FROM package_list AS p
      WHERE (counted.base_uid = p.uid AND (counted.cnt = 1 OR counted.name GLOB p.package_name || '*'))
        OR (counted.base_uid >= 90000 AND counted.base_uid < 100000
          AND str_split(counted.name, ':', 0) GLOB p.package_name || '*')
    ) AS chosen
  ) AS package_id
  FROM counted
)
SELECT
  m.upid,
  m.pid,
  CASE
    WHEN length(m.name) = 15
      AND (m.cmdline IN ('zygote', 'zygote64', '<pre-initialized>') OR m.cmdline GLOB '*' || m.name)
      THEN m.cmdline
    ELSE m.name
  END AS process_name,
  m.android_appid AS uid,
  m.android_user_id AS user_id,
  u.type AS user_type,
  CASE WHEN m.cnt > 1 THEN 1 ELSE NULL END AS shared_uid,
  plist.package_name,
  plist.version_code,
  plist.debuggable,
  EXISTS (SELECT 1 FROM _android_kernel_tasks AS k WHERE k.upid = m.upid) AS is_kernel_task
FROM matched AS m
LEFT JOIN package_list AS plist ON plist.id = m.package_id
LEFT JOIN android_user_list AS u ON m.android_user_id = u.android_user_id
ORDER BY m.upid;
"""

# android.memory.heap_graph.excluded_refs: the references a weak, phantom or finalizer reference holds to its
# referent, which do not keep it alive.
_EXCLUDED_REFS = """
CREATE TEMP TABLE _ref_type_ids AS
SELECT id AS type_id FROM heap_graph_class
WHERE kind IN ('KIND_FINALIZER_REFERENCE', 'KIND_PHANTOM_REFERENCE', 'KIND_WEAK_REFERENCE')
ORDER BY type_id;

CREATE TEMP TABLE _excluded_refs AS
SELECT ref.id FROM heap_graph_object AS robj
CROSS JOIN heap_graph_reference AS ref USING (reference_set_id)
CROSS JOIN _ref_type_ids USING (type_id)
WHERE ref.field_name = 'java.lang.ref.Reference.referent'
ORDER BY ref.id;
"""

_CLASS_NAME_HASH = """
CREATE TEMP TABLE _heap_graph_class_name_hash AS
SELECT id, hash(coalesce(deobfuscated_name, name, '')) AS name_hash FROM heap_graph_class;
"""


def _heap_graph_min_depth_tree(conn: sqlite3.Connection) -> None:
    """_heap_graph_object_min_depth_tree (flamegraph.min_depth_tree, the search the 'graph' flamegraph makes)
    and _heap_graph_path_hashes (android.memory.heap_graph.class_tree): each object's path hash, a root's from
    its process, dump, class, root and heap types; a child's from its parent's, unless it is of its parent's
    class (a chain of one class is one path)."""
    tree = min_depth_tree(conn)
    create_temp_table(conn, "_heap_graph_object_min_depth_tree", ["id", "parent_id"], sorted(tree))
    objects = {
        row[0]: row[1:]
        for row in conn.execute(
            "SELECT o.id, o.upid, o.graph_sample_ts, k.name_hash, ifnull(o.root_type, ''), ifnull(o.heap_type, '') "
            "FROM _heap_graph_object_min_depth_tree AS t JOIN heap_graph_object AS o USING (id) "
            "JOIN _heap_graph_class_name_hash AS k ON o.type_id = k.id"
        )
    }
    hashes: dict[int, tuple[int, int]] = {}  # id -> (path hash, parent path hash)
    for node, up in tree:  # parents first
        if node not in objects:
            continue
        upid, ts, name_hash, root_type, heap_type = objects[node]
        if up is None:
            hashes[node] = (fnv1a_hash(upid, ts, name_hash, root_type, heap_type), 0)
        elif up in hashes:
            up_hash, up_parent_hash = hashes[up]
            if objects[up][2] == name_hash:
                hashes[node] = (up_hash, up_parent_hash)
            else:
                hashes[node] = (fnv1a_hash(up_hash, name_hash, heap_type), up_hash)
    create_temp_table(
        conn,
        "_heap_graph_path_hashes",
        ["id", "path_hash", "parent_path_hash"],
        [(node, *hashes[node]) for node in sorted(hashes)],
    )


# android.memory.heap_graph.class_tree: the tree's objects aggregated by path (its native sizes as children
# of their own), then the class tree: one row per path, its parent the row of its parent path.
_CLASS_TREE = """
CREATE TEMP TABLE _heap_graph_path_hashes_aggregated AS
WITH x AS (
  SELECT o.graph_sample_ts, o.upid, path_hash, parent_path_hash,
    coalesce(c.deobfuscated_name, c.name, '') AS name, o.root_type, o.heap_type, count() AS self_count,
    sum(iif(o.self_size != -1, o.self_size, 0)) AS self_size, sum(o.native_size > 0) AS self_native_count,
    sum(o.native_size) AS self_native_size
  FROM _heap_graph_path_hashes JOIN heap_graph_object AS o USING (id)
  JOIN heap_graph_class AS c ON o.type_id = c.id
  GROUP BY path_hash
)
SELECT graph_sample_ts, upid, hash(path_hash, 'native', '') AS path_hash, path_hash AS parent_path_hash,
  '[native] ' || x.name AS name, root_type, 'HEAP_TYPE_NATIVE' AS heap_type,
  sum(x.self_native_count) AS self_count, sum(x.self_native_size) AS self_size
FROM x WHERE x.self_native_size > 0 GROUP BY path_hash
UNION ALL
SELECT graph_sample_ts, upid, path_hash, parent_path_hash, name, root_type, heap_type, self_count, self_size FROM x
ORDER BY path_hash;

CREATE TEMP TABLE _heap_graph_class_tree AS
SELECT c.graph_sample_ts, c.upid, c.rowid - 1 AS id,
  (SELECT p.rowid - 1 FROM _heap_graph_path_hashes_aggregated AS p WHERE c.parent_path_hash = p.path_hash)
    AS parent_id,
  c.name, c.root_type, c.heap_type, c.self_count, c.self_size, c.path_hash AS path_hash_stable
FROM _heap_graph_path_hashes_aggregated AS c
ORDER BY id;
"""

MODULES: dict[str, Module] = {
    "slices.with_context": Module(),  # thread_slice, process_slice, thread_or_process_slice: schema.py
    "std.gpu.context": Module(),  # gpu_context: a table of every database
    "viz.track_event_callstacks": Module(
        sql="CREATE TEMP TABLE _track_event_tracks_with_callstacks AS "
        "SELECT DISTINCT track_id FROM __intrinsic_track_event_callstacks;"
    ),
    "viz.summary.track_event": Module(("viz.track_event_callstacks",), _TRACK_EVENT_ORDER),
    "stacks.cpu_profiling": Module(sql=_CPU_PROFILING),
    "counters.intervals": Module(),  # its counter_leading_intervals! macro: table_functions.py
    "android.memory.heap_profile.intervals": Module(sql=_HEAP_PROFILE_INTERVALS),
    "android.memory.heap_graph.oome": Module(),  # android_heap_graph_java_oome_details: schema.py
    "android.memory.heap_graph.excluded_refs": Module(sql=_EXCLUDED_REFS),
    "android.memory.heap_graph.helpers": Module(sql=_CLASS_NAME_HASH),
    "android.memory.heap_graph.class_tree": Module(
        ("android.memory.heap_graph.excluded_refs", "android.memory.heap_graph.helpers"),
        _CLASS_TREE,
        build=_heap_graph_min_depth_tree,
    ),
    "android.power_rails": Module(
        sql=_POWER_RAILS,
        build=_intervals_table(
            "_power_rail_intervals",
            "SELECT c.id, c.ts, c.track_id, c.value FROM counter AS c JOIN counter_track AS t ON t.id = c.track_id "
            "WHERE t.type = 'power_rails'",
        ),
    ),
    "android.entity_state_residency": Module(sql=_ENTITY_STATE_RESIDENCY),
    "android.user_list": Module(),  # android_user_list: schema.py
    "linux.systemd_journald": Module(),  # linux_systemd_journald_logs: schema.py
    "android.cpu.cpu_per_uid": Module(
        ("counters.intervals",),
        _CPU_PER_UID,
        build=_intervals_table(
            "_android_cpu_per_uid_intervals",
            "SELECT c.id, c.ts, c.track_id, c.value FROM counter AS c "
            "JOIN __intrinsic_android_cpu_per_uid_track AS t ON t.track_id = c.track_id",
        ),
    ),
    "android.process_metadata": Module(("android.user_list",), _PROCESS_METADATA),
}


# Legacy metric SQL files RUN_METRIC runs (trace_processor's metrics/sql), as SQLite of our own.
_CHROME_PROCESSES = """
-- Chrome's processes (those with a chrome.process_type arg) and their threads; a sandboxed or privileged
-- utility process is typed by its main thread's name (CrUtilityMain -> Utility).
CREATE TEMP VIEW all_chrome_processes AS
SELECT upid, ifnull(type.string_value, '') AS process_type
FROM process JOIN args AS type ON type.arg_set_id = process.arg_set_id AND type.key = 'chrome.process_type';

CREATE TEMP VIEW all_chrome_threads AS
SELECT utid, thread.upid, thread.name FROM thread JOIN all_chrome_processes USING (upid);

CREATE TEMP VIEW chrome_subprocess_types AS
SELECT DISTINCT p.upid, substr(t.name, 3, length(t.name) - 6) AS sandbox_type
FROM all_chrome_processes AS p JOIN all_chrome_threads AS t USING (upid)
WHERE p.process_type IN ('Sandboxed', 'Privileged') AND t.name GLOB 'Cr*Main'
ORDER BY p.upid;

CREATE TEMP VIEW chrome_process AS
SELECT process.*, ifnull(s.sandbox_type, a.process_type) AS process_type
FROM process
JOIN all_chrome_processes AS a USING (upid)
LEFT JOIN chrome_subprocess_types AS s USING (upid)
ORDER BY upid;

CREATE TEMP VIEW chrome_thread AS
SELECT thread.*,
  CASE WHEN thread.name GLOB 'Cr*Main' THEN 'CrProcessMain' WHEN thread.name IS NULL THEN 'Unknown'
    ELSE thread.name END AS canonical_name
FROM thread JOIN chrome_process USING (upid)
ORDER BY utid;
"""

_BROWSER_MAIN_THREAD_DURATION = """
-- The longest span, in whole ms, of the slices on a browser main thread's root track.
CREATE TEMP VIEW chrome_browser_main_thread_duration AS
SELECT max(len) AS duration_ms FROM (
  SELECT (max(s.ts) - min(s.ts)) / 1000 / 1000 AS len
  FROM slice AS s
  JOIN thread_track AS tt ON tt.id = s.track_id
  JOIN chrome_thread AS t ON t.utid = tt.utid
  JOIN chrome_process AS p ON p.upid = t.upid
  JOIN track AS tr ON tr.id = tt.id
  JOIN args AS a ON a.arg_set_id = tr.source_arg_set_id
  WHERE t.canonical_name IN ('CrProcessMain', 'CrBrowserMain') AND p.process_type = 'Browser'
    AND a.key = 'is_root_in_scope' AND a.int_value = 1
  GROUP BY s.track_id
);
"""

# From when a Chrome trace's data is complete: after the first slice of every busy thread whose sequence
# did not start with the trace, after the processes whose data was lost (or that lack a main thread), or
# from the range of interest Chrome set.
_RELIABLE_RANGE = """
CREATE TEMP VIEW chrome_event_stats_per_thread AS
SELECT count(*) AS cnt,
  ifnull(CAST(count(*) AS DOUBLE) / (SELECT duration_ms FROM chrome_browser_main_thread_duration), 0) AS rate,
  utid
FROM thread_track JOIN slice ON slice.track_id = thread_track.id
WHERE extract_arg(source_arg_set_id, 'source') = 'descriptor'
GROUP BY utid;

-- The median count and the 95th percentile rate of those threads.
CREATE TEMP VIEW chrome_event_cnt_cutoff AS
SELECT cnt FROM chrome_event_stats_per_thread ORDER BY cnt
LIMIT 1 OFFSET ((SELECT count(*) FROM chrome_event_stats_per_thread) * 50 / 100);

CREATE TEMP VIEW chrome_event_rate_cutoff AS
SELECT rate FROM chrome_event_stats_per_thread ORDER BY rate
LIMIT 1 OFFSET ((SELECT count(*) FROM chrome_event_stats_per_thread) * 95 / 100);

CREATE TEMP VIEW chrome_reliable_range_per_thread AS
SELECT utid, min(ts) AS start,
  max(ifnull(extract_arg(source_arg_set_id, 'has_first_packet_on_sequence'), 0)) AS has_first_packet_on_sequence
FROM thread_track JOIN slice ON slice.track_id = thread_track.id
WHERE utid IN (
  SELECT stats.utid FROM chrome_event_stats_per_thread AS stats
  LEFT JOIN chrome_event_cnt_cutoff AS by_count ON 1
  LEFT JOIN chrome_event_rate_cutoff AS by_rate ON 1
  WHERE stats.cnt >= by_count.cnt AND stats.rate >= by_rate.rate
)
GROUP BY utid;

CREATE TEMP VIEW chrome_processes_with_missing_main AS
SELECT upid FROM (
  SELECT process.upid, main.utid
  FROM process LEFT JOIN (SELECT utid, upid FROM thread WHERE name GLOB '*[Mm]ain*') AS main USING (upid)
  WHERE extract_arg(process.arg_set_id, 'chrome.process_type') IN ('Browser', 'Renderer', 'Gpu')
)
WHERE utid IS NULL;

CREATE TEMP VIEW chrome_processes_data_loss_free_period AS
SELECT upid AS limiting_upid, ifnull(reliable_from, (SELECT max(ts + dur) FROM slice)) AS start
FROM (
  SELECT upid, reliable_from FROM experimental_missing_chrome_processes
  UNION ALL
  SELECT upid, NULL FROM chrome_processes_with_missing_main
  UNION ALL
  SELECT NULL, NULL WHERE (SELECT duration_ms FROM chrome_browser_main_thread_duration) IS NULL
)
ORDER BY start DESC, upid IS NOT NULL DESC, upid
LIMIT 1;

CREATE TEMP VIEW chrome_reliable_range AS
SELECT
  ifnull(roi.start_us * 1000, max(thread_start, data_loss_free_start)) AS start,
  CASE
    WHEN roi.start_us IS NOT NULL THEN 'Range of interest packet'
    WHEN limiting_upid IN (SELECT upid FROM chrome_processes_with_missing_main)
      THEN 'Missing main thread for upid=' || limiting_upid
    WHEN thread_start >= data_loss_free_start THEN 'First slice for utid=' || limiting_utid
    ELSE 'Missing process data for upid=' || limiting_upid
  END AS reason,
  limiting_upid AS debug_limiting_upid,
  limiting_utid AS debug_limiting_utid
FROM (
  SELECT ifnull(max(start), 0) AS thread_start, utid AS limiting_utid,
    ifnull((SELECT start FROM chrome_processes_data_loss_free_period), 0) AS data_loss_free_start,
    (SELECT limiting_upid FROM chrome_processes_data_loss_free_period) AS limiting_upid
  FROM chrome_reliable_range_per_thread
  WHERE has_first_packet_on_sequence = 0
)
LEFT JOIN (
  SELECT (SELECT int_value FROM metadata WHERE name = 'range_of_interest_start_us' LIMIT 1) AS start_us
) AS roi ON 1;
"""

METRICS: dict[str, Module] = {
    "chrome/chrome_processes.sql": Module(sql=_CHROME_PROCESSES),
    "chrome/chrome_browser_main_thread_duration.sql": Module(
        ("chrome/chrome_processes.sql",), _BROWSER_MAIN_THREAD_DURATION
    ),
    "chrome/chrome_reliable_range.sql": Module(("chrome/chrome_browser_main_thread_duration.sql",), _RELIABLE_RANGE),
}
_RUN_METRIC = re.compile(r"\s*SELECT\s+RUN_METRIC\s*\(\s*'([^']*)'\s*\)\s*;?\s*$", re.I)


def run_metric(conn: sqlite3.Connection, statement: str, done: set[str]) -> bool:
    """Runs `SELECT RUN_METRIC('file.sql');` for a metric file METRICS knows (once per connection: `done`);
    False for any other statement. An unknown file is an SQL error naming the ones there are."""
    match = _RUN_METRIC.match(re.sub(r"--[^\n]*", " ", statement))
    if match is None:
        return False
    name = match.group(1)
    if name not in METRICS:
        raise sqlite3.OperationalError(
            f"RUN_METRIC('{name}'): that trace_processor metric is not here; these are: {', '.join(sorted(METRICS))}"
        )
    _run_metric_file(conn, name, done)
    return True


def _run_metric_file(conn: sqlite3.Connection, name: str, done: set[str]) -> None:
    if name in done:
        return
    metric = METRICS[name]
    for dependency in metric.dependencies:
        _run_metric_file(conn, dependency, done)
    conn.executescript(metric.sql)
    done.add(name)


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
    if module.build is not None:
        module.build(conn)
    if module.sql:
        conn.executescript(module.sql)
    done.add(name)
