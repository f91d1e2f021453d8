"""The demo trace (trace_builder.build_demo_trace) ingested: every table holds what the builder wrote,
and the report shows every noun."""

from __future__ import annotations

import pytest
from conftest import served
from test_report_golden import run

from datasette_perfetto.report.render import to_json, to_text
from datasette_perfetto.trace_builder import (
    DEMO_BLOCKED_IN,
    DEMO_CPUS,
    DEMO_DISPLAYS,
    DEMO_END,
    DEMO_HEAP_SAMPLES,
    DEMO_MAIN_FRAMES,
    DEMO_PHONE_HEAP_UUID,
    DEMO_PHONE_MACHINE_ID,
    DEMO_PHONE_PROCESS,
    DEMO_PHONE_SYSTEM_INFO,
    DEMO_PROCESSES,
    DEMO_SAMPLER_SEQS,
    DEMO_SLICE_FUNCTIONS,
    DEMO_START,
    HEAP_DUMP_PID,
    HEAP_PROFILE_PID,
    INCREMENTAL_CLOCK_TID,
    IPC_COUNTER_UUID,
    MEMORY_TRACK_UUID,
)

NOUN_SECTIONS = ("slices", "stack_samples", "heap_profile", "heap_dump", "scheduling", "counters", "processes")
# machine id -> the demo's processes on it: the desktop (the host), then the phone.
MACHINE_PROCESSES = {0: DEMO_PROCESSES, 1: (DEMO_PHONE_PROCESS,)}


def test_processes_and_threads_resolve_names(demo_db):
    procs = demo_db.rows("SELECT machine_id, pid, name FROM process WHERE pid != 0 ORDER BY upid")
    assert procs == [
        (machine, pid, name) for machine, processes in MACHINE_PROCESSES.items() for pid, name, _ in processes
    ]
    threads = {
        (machine, tid): (name, pid)
        for machine, tid, name, pid in demo_db.rows(
            "SELECT t.machine_id, t.tid, t.name, p.pid FROM thread t JOIN process p USING (upid) WHERE t.tid != 0"
        )
    }
    assert threads == {
        (machine, tid): (tname, pid)
        for machine, processes in MACHINE_PROCESSES.items()
        for pid, _, ts in processes
        for tid, tname, _ in ts
    }
    main = demo_db.rows("SELECT machine_id, tid FROM thread WHERE is_main_thread = 1 AND tid != 0 ORDER BY utid")
    assert main == [(machine, pid) for machine, processes in MACHINE_PROCESSES.items() for pid, _, _ in processes]
    # utid/upid 0 are the host's swapper thread and idle process; the phone has its own (made when
    # its first packet is read, so before the host's processes).
    assert demo_db.rows("SELECT utid, machine_id, name, is_idle FROM thread WHERE tid = 0") == [
        (0, 0, "swapper", 1),
        (1, 1, "swapper", 1),
    ]
    assert demo_db.rows("SELECT upid, machine_id, name FROM process WHERE pid = 0") == [(0, 0, None), (1, 1, None)]


def test_slices_nest_inside_their_parents(demo_db):
    assert demo_db.rows("SELECT t.machine_id, count(*) FROM slice s JOIN track t ON t.id = s.track_id GROUP BY 1") == [
        (0, 683),
        (1, 60),
    ]
    assert demo_db.one("SELECT count(*) FROM slice WHERE dur = 0") == 52
    assert demo_db.one("SELECT count(*) FROM slice WHERE dur < 0") == 0
    bad = demo_db.rows("""
        SELECT s.id FROM slice s JOIN slice p ON s.parent_id = p.id
        WHERE s.track_id != p.track_id OR s.depth != p.depth + 1
           OR s.ts < p.ts OR s.ts + s.dur > p.ts + p.dur""")
    assert bad == []
    assert demo_db.one("SELECT count(*) FROM slice WHERE depth = 0 AND parent_id IS NOT NULL") == 0
    # Ids follow timestamp order.
    ids = [r[0] for r in demo_db.rows("SELECT id FROM slice ORDER BY ts, id")]
    assert ids == sorted(ids)


def test_thread_slices_are_on_thread_tracks(demo_db):
    per_thread = {
        (machine, name): n
        for machine, name, n in demo_db.rows("""
        SELECT t.machine_id, t.name, count(*) FROM slice s JOIN thread_track tt ON s.track_id = tt.id
        JOIN thread t USING (utid) GROUP BY t.utid""")
    }
    assert set(per_thread) == {
        (machine, tname)
        for machine, processes in MACHINE_PROCESSES.items()
        for _, _, ts in processes
        for _, tname, _ in ts
    }
    per_machine = {m: sum(n for (machine, _), n in per_thread.items() if machine == m) for m in MACHINE_PROCESSES}
    assert per_machine == {0: 683 - 20, 1: 60}  # the 20 NetworkRequests slices are on an async track
    assert (
        demo_db.one("""SELECT count(*) FROM slice s JOIN track t ON s.track_id = t.id
                          WHERE t.name = 'NetworkRequests'""")
        == 20
    )


def test_incremental_clock_sequence_is_converted_to_trace_time(demo_db):
    lo, hi = demo_db.rows(
        """
        SELECT min(s.ts), max(s.ts + s.dur) FROM slice s JOIN thread_track tt ON s.track_id = tt.id
        JOIN thread t USING (utid) WHERE t.tid = ?""",
        (INCREMENTAL_CLOCK_TID,),
    )[0]
    assert DEMO_START <= lo < hi <= DEMO_END
    start, end = demo_db.rows("SELECT start_ts, end_ts FROM trace_bounds")[0]
    assert DEMO_START <= start < end <= DEMO_END


def test_counters(demo_db):
    rows = dict(
        demo_db.rows("""SELECT ct.name, count(*) FROM counter c
                                JOIN counter_track ct ON c.track_id = ct.id GROUP BY 1""")
    )
    assert rows == {
        "MemoryUsage": 40,
        "IPCMessagesSent": 20,
        "RefreshRate": 2 * 19,  # one per display
        "JSHeapUsedSize": 18,
    }  # the phone's renderer
    units = dict(demo_db.rows("SELECT name, unit FROM counter_track"))
    assert units == {"MemoryUsage": "bytes", "IPCMessagesSent": "count", "RefreshRate": "Hz", "JSHeapUsedSize": "bytes"}
    # The incremental counter's values are running totals: never decreasing.
    values = [
        r[0]
        for r in demo_db.rows("""SELECT value FROM counter c JOIN counter_track ct
        ON c.track_id = ct.id WHERE ct.name = 'IPCMessagesSent' ORDER BY ts""")
    ]
    assert values == sorted(values) and values[-1] > 0
    uuids = dict(
        demo_db.rows("""SELECT name, (SELECT int_value FROM args WHERE arg_set_id = source_arg_set_id
                                                  AND key = 'trace_id') FROM counter_track WHERE name != 'RefreshRate'""")
    )
    assert uuids == {
        "MemoryUsage": MEMORY_TRACK_UUID,
        "IPCMessagesSent": IPC_COUNTER_UUID,
        "JSHeapUsedSize": DEMO_PHONE_HEAP_UUID,
    }


def test_flows_connect_slices_on_different_threads(demo_db):
    rows = demo_db.rows("""
        SELECT so.ts < si.ts, tto.utid != tti.utid FROM flow f
        JOIN slice so ON f.slice_out = so.id JOIN slice si ON f.slice_in = si.id
        JOIN thread_track tto ON so.track_id = tto.id JOIN thread_track tti ON si.track_id = tti.id""")
    assert len(rows) == 17
    assert all(earlier and cross_thread for earlier, cross_thread in rows)


def test_debug_annotations_become_typed_args(demo_db):
    types = dict(demo_db.rows("SELECT value_type, count(*) FROM args GROUP BY 1"))
    assert {"string", "int", "real", "bool"} <= set(types)
    nested = demo_db.rows("SELECT key, flat_key FROM args WHERE key LIKE 'debug.%[%]%' LIMIT 1")
    assert nested and "[" not in nested[0][1]
    # Every slice's args are reachable with extract_arg-style lookups on the same set.
    orphans = demo_db.one("""SELECT count(*) FROM slice s WHERE s.arg_set_id IS NOT NULL
                             AND NOT EXISTS (SELECT 1 FROM args a WHERE a.arg_set_id = s.arg_set_id)""")
    assert orphans == 0


def test_clean_trace_has_no_problem_stats(demo_db):
    assert demo_db.rows("SELECT name, value FROM stats WHERE value > 0 AND severity IN ('error', 'data_loss')") == []
    # Every single stat has a row per machine, as in trace_processor.
    assert demo_db.rows("SELECT machine_id, value FROM stats WHERE name = 'track_event_invalid_timestamp'") == [
        (0, 0),
        (1, 0),
    ]


def test_metadata_and_trace_file(demo_db):
    meta = dict(demo_db.rows("SELECT name, coalesce(str_value, int_value) FROM metadata"))
    assert meta["trace_type"] == "proto"
    assert meta["trace_time_clock_id"] == 6
    assert demo_db.rows("SELECT name, trace_type FROM trace_file") == [("demo.pftrace", "proto")]
    assert demo_db.rows("SELECT id, raw_id FROM machine") == [(0, 0), (1, DEMO_PHONE_MACHINE_ID)]


# -- the second machine: the phone ----------------------------------------------------------------


def test_the_phone_is_a_second_machine_with_its_system_info(demo_db):
    info = DEMO_PHONE_SYSTEM_INFO
    uts = info.utsname
    # The desktop wrote no SystemInfo: its row is bare. label_index numbers the machines' labels.
    assert demo_db.rows("""SELECT id, raw_id, name, sysname, release, version, arch, num_cpus,
        android_build_fingerprint, android_device_manufacturer, android_sdk_version, system_ram_bytes,
        system_ram_gb, label_index FROM machine ORDER BY id""") == [
        (0, 0, None, None, None, None, None, None, None, None, None, None, None, 0),
        (
            1,
            DEMO_PHONE_MACHINE_ID,
            None,
            uts.sysname,
            uts.release,
            uts.version,
            uts.machine,
            info.num_cpus,
            info.android_build_fingerprint,
            info.android_device_manufacturer,
            info.android_sdk_version,
            info.system_ram_bytes,
            8,
            1,
        ),
    ]
    # The phone's system_* metadata is scoped to its machine (no trace id); the desktop has none.
    meta = demo_db.rows(
        "SELECT name, coalesce(str_value, int_value), machine_id, trace_id FROM metadata "
        "WHERE name LIKE 'system_%' OR name LIKE 'android_%' ORDER BY name"
    )
    assert meta == sorted(
        [
            (name, value, 1, None)
            for name, value in (
                ("system_name", uts.sysname),
                ("system_release", uts.release),
                ("system_version", uts.version),
                ("system_machine", uts.machine),
                ("system_ram_bytes", info.system_ram_bytes),
                ("system_ram_gb", 8),
                ("android_build_fingerprint", info.android_build_fingerprint),
                ("android_incremental_build", info.android_build_fingerprint.split("/")[4].split(":")[0]),
                ("android_device_manufacturer", info.android_device_manufacturer),
                ("android_sdk_version", info.android_sdk_version),
            )
        ]
    )
    # Its tracks, slices and counter values lie inside the trace, whose bounds the desktop's events set.
    start, end = demo_db.rows("SELECT start_ts, end_ts FROM trace_bounds")[0]
    lo, hi = demo_db.rows("""SELECT min(ts), max(ts + dur) FROM (SELECT s.ts, s.dur, t.machine_id FROM slice s
        JOIN track t ON t.id = s.track_id UNION ALL SELECT c.ts, 0, t.machine_id FROM counter c
        JOIN track t ON t.id = c.track_id) WHERE machine_id = 1""")[0]
    assert start < lo < hi < end
    assert demo_db.rows("SELECT machine_id, count(*) FROM track GROUP BY 1") == [(0, 18), (1, 5)]


def test_every_track_has_a_machine_dimension(demo_db):
    """RFC 0039: `machine` is synthesized on every track; its label numbers the machine by label_index."""
    per_machine = demo_db.rows("""SELECT t.machine_id, d.int_value, d.label, d.display_name, d.is_well_known,
        d.is_inherited, d.declaring_track_id, d.source, count(*) FROM track t
        JOIN track_dimension d ON d.track_id = t.id AND d.name = 'machine' GROUP BY 1, 2, 3, 4, 5, 6, 7, 8""")
    assert per_machine == [
        (0, 0, "machine 0", None, 1, 0, None, "synthesized", 18),
        (1, 1, "machine 1", None, 1, 0, None, "synthesized", 5),
    ]
    assert demo_db.rows("SELECT label_template, is_well_known FROM dimension WHERE name = 'machine'") == [
        ("machine %d", 1)
    ]
    # Two machines: every track's subtitle shows its machine first; process and thread never show.
    subtitles = demo_db.rows("""SELECT t.machine_id, s.subtitle, count(*) FROM track t
        JOIN track_subtitle s ON s.track_id = t.id GROUP BY 1, 2 ORDER BY 1, 2""")
    assert subtitles == [
        (0, "machine 0", 14),
        (0, "machine 0 · display 0", 2),
        (0, "machine 0 · display 1", 2),
        (1, "machine 1", 5),
    ]
    # The same-named threads of the two renderers are told apart by their subtitles.
    assert demo_db.rows("""SELECT t.machine_id, s.subtitle FROM thread_track tt JOIN thread t USING (utid)
        JOIN track_subtitle s ON s.track_id = tt.id WHERE t.name = 'Compositor' ORDER BY 1""") == [
        (0, "machine 0"),
        (1, "machine 1"),
    ]


# -- the system data: every report noun ---------------------------------------------------------------


def test_report_overview_shows_every_noun_with_data(demo_db):
    result = run(demo_db.path, ("", "", {}))
    overview = to_json(result)["overview"]
    assert overview["absent"] == [] and "not present" not in to_text(result)
    for section in NOUN_SECTIONS:
        assert overview[section]["rows"], section
    assert overview["scheduling"]["cpu_count"] == DEMO_CPUS
    assert overview["processes"]["top_threads_by"] == "cpu_time"
    assert int(overview["stack_samples"]["total_samples"]) == demo_db.count("cpu_profile_stack_sample")
    assert overview["heap_dump"]["has_dominators"]
    # The phone's renderer and its counter are there beside the desktop's.
    assert DEMO_PHONE_PROCESS[1] in {r.get("name") for r in overview["processes"]["rows"]}
    assert "JSHeapUsedSize" in {r["name"] for r in overview["counters"]["rows"]}
    tracks = to_json(run(demo_db.path, ("tracks", "table", {"top": "100"})))["tracks_table"]
    assert len(tracks["rows"]) == int(tracks["total_rows"]) == demo_db.count("track")


def test_stack_samples_make_a_deep_call_tree(demo_db):
    tree = to_json(run(demo_db.path, ("stack-samples", "top-down", {"max_lines": "500"})))["stack_samples_top_down"]
    samples = demo_db.count("cpu_profile_stack_sample")
    root = tree["nodes"][0]
    assert (root["name"], int(root["total_value"]), int(tree["total_value"])) == ("__libc_start_main", samples, samples)
    assert max(int(n.get("depth", 0)) for n in tree["nodes"]) >= 3
    # The three main threads' entry points split the samples below the shared process start.
    entries = {
        n["name"]: int(n["total_value"])
        for n in tree["nodes"]
        if n["name"].startswith("content::") and n["name"] != "content::ContentMain"
    }
    assert set(entries) == {"content::BrowserMain", "content::RendererMain", "content::GpuMain"}
    assert sum(entries.values()) == samples


@pytest.mark.web
@pytest.mark.asyncio
async def test_stack_samples_page_draws_a_flame_graph(demo_db):
    page = (await served(demo_db.path).client.get("/demo/-/report/stack-samples/top-down")).text
    samples = demo_db.count("cpu_profile_stack_sample")
    assert "<svg" in page and "Flame graph" in page
    assert f"<title>__libc_start_main: {samples} samples (100.0%)" in page


def test_stack_samples_are_the_functions_of_the_open_slices(demo_db):
    """Chrome's sampler on each main thread: below the run loop, a sample's stack is the functions of the
    slices open on that thread at that moment, outermost first (then perhaps a callee)."""
    callsites = dict(
        (cid, (parent, name))
        for cid, parent, name in demo_db.rows(
            "SELECT c.id, c.parent_id, f.name FROM stack_profile_callsite c JOIN stack_profile_frame f ON f.id = c.frame_id"
        )
    )
    samples = demo_db.rows("""SELECT s.ts, s.callsite_id, t.tid, tt.id FROM cpu_profile_stack_sample s
        JOIN thread t USING (utid) JOIN thread_track tt USING (utid)""")
    assert {tid for _, _, tid, _ in samples} == set(DEMO_SAMPLER_SEQS)
    for ts, callsite, tid, track in samples:
        stack = []
        while callsite is not None:
            callsite, name = callsites[callsite]
            stack.insert(0, name)
        open_slices = [
            r[0]
            for r in demo_db.rows(
                "SELECT name FROM slice WHERE track_id = ? AND ts <= ? AND ts + dur > ? ORDER BY depth", (track, ts, ts)
            )
        ]
        expected = [name for name, _ in DEMO_MAIN_FRAMES[tid]] + [DEMO_SLICE_FUNCTIONS.get(n, n) for n in open_slices]
        assert open_slices and stack[: len(expected)] == expected and len(stack) - len(expected) <= 1, (ts, tid)


def test_scheduling_follows_the_tasks(demo_db):
    assert demo_db.rows("SELECT count(DISTINCT utid), count(DISTINCT ucpu) FROM sched WHERE utid != 0") == [
        (8, DEMO_CPUS)
    ]
    per_thread = demo_db.rows("""
        WITH top AS (SELECT tt.utid, s.ts, s.dur FROM slice s JOIN thread_track tt ON tt.id = s.track_id
                     WHERE s.depth = 0),
             running AS (SELECT utid, ts, dur FROM thread_state WHERE state = 'Running')
        SELECT t.name, (SELECT sum(dur) FROM top WHERE top.utid = t.utid),
               (SELECT sum(dur) FROM running r WHERE r.utid = t.utid),
               (SELECT sum(min(r.ts + r.dur, top.ts + top.dur) - max(r.ts, top.ts)) FROM running r JOIN top
                ON top.utid = r.utid AND top.ts < r.ts + r.dur AND r.ts < top.ts + top.dur WHERE r.utid = t.utid)
        FROM thread t WHERE t.tid != 0 AND t.machine_id = 0""")  # the phone's threads were not scheduled
    assert len(per_thread) == 8
    for name, task_time, cpu_time, inside in per_thread:
        # A thread runs about as long as its tasks (less its disk waits), and mostly while one is open.
        assert 0.85 * task_time <= cpu_time <= 1.01 * task_time, name
        assert inside >= 0.8 * cpu_time, name
    states = dict(demo_db.rows("SELECT state, count(*) FROM thread_state GROUP BY 1"))
    assert set(states) == {"Running", "R", "S", "D"} and all(states.values())
    blocked = demo_db.rows("""SELECT DISTINCT t.name, ts.blocked_function, ts.io_wait FROM thread_state ts
        JOIN thread t USING (utid) WHERE ts.state = 'D' ORDER BY 1, 2""")
    assert {(name, io_wait) for name, _, io_wait in blocked} == {
        ("ThreadPoolBackgroundWorker", 1),
        ("ThreadPoolForegroundWorker", 1),
    }
    assert {function for _, function, _ in blocked} <= set(DEMO_BLOCKED_IN.values())


def test_heap_profile_is_the_renderers_allocations(demo_db):
    rows = demo_db.rows("""SELECT p.pid, count(DISTINCT a.ts), sum(max(a.size, 0)), -sum(min(a.size, 0)),
        sum(max(a.count, 0)), -sum(min(a.count, 0)) FROM heap_profile_allocation a JOIN process p ON p.upid = a.upid""")
    # Two cumulative dumps: the rows add up to the second one.
    last = [counts for _, _, counts in DEMO_HEAP_SAMPLES]
    assert rows == [(HEAP_PROFILE_PID, 2, *(sum(c[i] for c in last) for i in range(4)))]
    leak = demo_db.one("""WITH RECURSIVE up(leaf, id) AS (
          SELECT callsite_id, callsite_id FROM heap_profile_allocation
          UNION SELECT up.leaf, c.parent_id FROM up JOIN stack_profile_callsite c ON c.id = up.id
          WHERE c.parent_id IS NOT NULL)
        SELECT sum(size) FROM heap_profile_allocation WHERE callsite_id IN (SELECT up.leaf FROM up
          JOIN stack_profile_callsite c ON c.id = up.id JOIN stack_profile_frame f ON f.id = c.frame_id
          WHERE f.name = 'v8::ArrayBuffer::New')""")
    assert leak == 16 * 1024 * 1024  # the ArrayBuffers, never freed


def test_heap_dump_of_the_browser_retains_the_thumbnails(demo_db):
    assert demo_db.rows(
        "SELECT p.pid, count(*), sum(o.reachable) FROM heap_graph_object o JOIN process p ON p.upid = o.upid GROUP BY 1"
    ) == [(HEAP_DUMP_PID, 40, 38)]
    retained = dict(
        demo_db.rows("""SELECT c.name, d.retained_size FROM heap_graph_dominator d
        JOIN heap_graph_object o ON o.id = d.object_id JOIN heap_graph_class c ON c.id = o.type_id
        WHERE c.name LIKE '%Activity' OR c.name LIKE '%TabModelImpl'""")
    )
    # The activity retains the thumbnail cache: 4 Bitmaps with 240x160 RGBA pixels. The tab model is
    # also held by a stack frame, so the activity does not retain it.
    assert retained == {
        "org.chromium.chrome.browser.ChromeTabbedActivity": 320 + 40 + 48 + 4 * (64 + 240 * 160 * 4),
        "org.chromium.chrome.browser.tabmodel.TabModelImpl": 48
        + 24
        + 40
        + 6 * (112 + 96)
        + sum(
            16 + len(s)
            for s in (
                "https://example.com/",
                "Example Domain",
                "https://example.com/news",
                "News",
                "https://example.com/app",
                "App",
                "https://example.org/docs/start",
                "Getting started",
                "https://example.net/video/42",
                "Video",
                "https://example.com/search?q=perfetto",
                "Search",
            )
        ),
    }
    assert ("java.lang.String", "org.chromium.chrome.browser.tab.TabImpl.mUrl") in demo_db.rows(
        "SELECT field_type_name, field_name FROM heap_graph_reference"
    )


def test_displays_are_told_apart_by_a_custom_dimension(demo_db):
    rows = demo_db.rows("""SELECT t.name, d.int_value, d.label, d.is_inherited, s.subtitle FROM track_dimension d
        JOIN track t ON t.id = d.track_id JOIN track_subtitle s ON s.track_id = t.id
        WHERE d.name = 'display' ORDER BY d.int_value, d.is_inherited""")
    # Declared on each display's track, inherited by the RefreshRate counter under it; after the
    # machine (the GPU process is on the desktop, machine 0).
    assert rows == [
        row
        for connector, (value, *_) in DEMO_DISPLAYS.items()
        for row in (
            (f"Display {connector}", value, f"display {value}", 0, f"machine 0 · display {value}"),
            ("RefreshRate", value, f"display {value}", 1, f"machine 0 · display {value}"),
        )
    ]
    # Only the displays' tracks show the display: every other custom dimension has one value.
    assert demo_db.one("SELECT count(*) FROM track_subtitle WHERE subtitle LIKE '%display%'") == 4


@pytest.mark.web
@pytest.mark.asyncio
async def test_track_pages_show_the_display_and_machine_subtitles(demo_db):
    client = served(demo_db.path).client
    tracks = (await client.get("/demo/-/tracks")).text
    for subtitle in ("machine 0 · display 0", "machine 0 · display 1", "machine 0", "machine 1"):
        assert f'<td class="perfetto-subtitle">{subtitle}</td>' in tracks, subtitle
    for track_id, subtitle in demo_db.rows(
        "SELECT s.track_id, s.subtitle FROM track_subtitle s "
        "JOIN track t ON t.id = s.track_id WHERE t.name = 'RefreshRate' "
        "OR t.name = 'JSHeapUsedSize'"
    ):
        page = (await client.get(f"/demo/-/track/{track_id}")).text
        assert subtitle in page, track_id


def test_several_traces_in_one_database(tmp_path, demo_trace):
    from conftest import TraceDB

    from datasette_perfetto.ingest import ingest

    second = tmp_path / "second.pftrace"
    second.write_bytes(demo_trace.read_bytes())
    db_path = tmp_path / "both.db"
    summaries = ingest([str(demo_trace), str(second)], str(db_path))
    db = TraceDB(db_path)
    assert [s.path for s in summaries] == [str(demo_trace), str(second)]
    assert db.rows("SELECT id, name FROM trace_file ORDER BY id") == [(0, "demo.pftrace"), (1, "second.pftrace")]
    assert db.count("slice") == 2 * (683 + 60)
    # Each input keeps its own processes (pids are per trace), and on the phone its own idle process,
    # with dense ids across files.
    assert db.one("SELECT count(*) FROM process WHERE pid != 0") == 2 * 4
    assert db.rows("SELECT upid, machine_id FROM process WHERE pid = 0") == [(0, 0), (1, 1), (6, 1)]
    assert [r[0] for r in db.rows("SELECT upid FROM process ORDER BY upid")] == list(range(11))
    # A machine is one row whatever input its packets came in: both phones are machine 1.
    assert db.rows("SELECT id, raw_id FROM machine") == [(0, 0), (1, DEMO_PHONE_MACHINE_ID)]
    assert db.rows("SELECT trace_id, machine_id, count(*) FROM track GROUP BY 1, 2") == [
        (0, 0, 18),
        (0, 1, 5),
        (1, 0, 18),
        (1, 1, 5),
    ]
    assert db.one("SELECT count(DISTINCT trace_id) FROM stats WHERE trace_id IS NOT NULL") == 2


def test_progress_is_reported_per_input_in_bytes(tmp_path, demo_trace):
    from datasette_perfetto.ingest import Progress, ingest

    seen: list = []  # [path, size, bytes advanced], then "finished"

    class Recorder(Progress):
        def input_started(self, path, size):
            seen.append([path, size, 0])

        def advanced(self, amount):
            assert amount > 0
            seen[-1][2] += amount

        def finished(self):
            seen.append("finished")

    ingest([str(demo_trace), str(demo_trace)], str(tmp_path / "p.db"), Recorder())
    size = demo_trace.stat().st_size
    assert seen == [[str(demo_trace), size, size]] * 2 + ["finished"]  # each input advances by its size
