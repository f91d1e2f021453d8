"""traced_probes data (process trees, process/system stats, CPU and GPU info) and
kernel counters from ftrace → process/thread/cpu/gpu rows and counter tracks."""

from __future__ import annotations

import pytest
from conftest import FunctionsDB, TraceDB, ingest_built
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.trace_builder import TraceBuilder

CLONE_THREAD = 0x10000


def counters(db: TraceDB, where: str = "1", params: tuple = ()) -> list[tuple]:
    """(ts, track type, track name, value) of matching counter rows, in ts order."""
    return db.rows(
        f"""SELECT c.ts, t.type, t.name, c.value FROM counter c JOIN track t ON c.track_id = t.id
                       WHERE {where} ORDER BY c.ts, c.id""",
        params,
    )


def free(ts, pid, comm="x"):
    return {"timestamp": ts, "pid": pid, "sched_process_free": {"pid": pid, "comm": comm}}


# -- process_tree --------------------------------------------------------------------------


@pytest.fixture
def tree_db(tmp_path):
    b = TraceBuilder()
    b.packet(
        timestamp=10,
        process_tree=dict(
            processes=[
                dict(pid=100, ppid=1, cmdline=["/system/bin/app", "--flag"], uid=1010123, process_start_from_boot=5000),
                dict(pid=101, ppid=1, cmdline=["com.example.app service"]),  # one element with spaces
                dict(pid=28, ppid=2, cmdline=["kworker/1:0-events"], cmdline_is_comm=True, is_kthread=True),
                dict(pid=102, ppid=100),  # no cmdline: ignored
            ],
            threads=[
                dict(tid=100, tgid=100, name="AppMain"),
                dict(tid=103, tgid=100, name="Worker"),
                dict(tid=28, tgid=28, name="kworker/1:0-events"),
            ],
        ),
    )
    # The same pid seen again with another parent: reparented, the first parent stays.
    b.packet(timestamp=20, process_tree=dict(processes=[dict(pid=100, ppid=7, cmdline=["/system/bin/app", "--flag"])]))
    return ingest_built(tmp_path, b, FunctionsDB)


def test_process_tree_names_and_command_lines(tree_db):
    rows = tree_db.rows("""SELECT p.pid, p.name, p.cmdline, parent.pid FROM process p
                           LEFT JOIN process parent ON p.parent_upid = parent.upid
                           WHERE p.pid IN (28, 100, 101) ORDER BY p.pid""")
    assert rows == [
        (28, "kworker/1:0", "kworker/1:0", 2),  # the transient workqueue suffix is dropped
        (100, "/system/bin/app", "/system/bin/app --flag", 1),  # argv0; the first parent is kept
        (101, "com.example.app", "com.example.app service", 1),
    ]
    assert tree_db.rows("SELECT count(*) FROM process WHERE pid = 102") == [(0,)]
    assert tree_db.stat("process_tracker_parent_pid_changed") == 1
    # Parents named in a tree exist as processes of their own.
    assert tree_db.rows("SELECT pid FROM process WHERE pid IN (1, 2) ORDER BY pid") == [(1,), (2,)]


def test_process_tree_uid_start_and_kthread(tree_db):
    assert tree_db.rows("""SELECT uid, android_appid, android_user_id, start_ts FROM process
                           WHERE pid = 100""") == [(1010123, 10123, 10, 5000)]
    assert tree_db.rows("""SELECT pid, extract_arg(arg_set_id, 'is_kthread') FROM process
                           WHERE pid IN (28, 100) ORDER BY pid""") == [(28, 1), (100, None)]


def test_process_tree_threads(tree_db):
    rows = tree_db.rows("""SELECT t.tid, t.name, p.pid, t.is_main_thread FROM thread t JOIN process p USING (upid)
                           WHERE t.tid IN (28, 100, 103) ORDER BY t.tid""")
    assert rows == [(28, "kworker/1:0", 28, 1), (100, "AppMain", 100, 1), (103, "Worker", 100, 0)]


def test_pid_reuse_after_free_makes_a_new_process(tmp_path):
    b = TraceBuilder()
    b.packet(timestamp=1, process_tree=dict(processes=[dict(pid=300, ppid=1, cmdline=["first"])]))
    b.ftrace(0, free(20, 300, "first"))
    b.packet(timestamp=40, process_tree=dict(processes=[dict(pid=300, ppid=1, cmdline=["second"])]))
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("SELECT name, end_ts FROM process WHERE pid = 300 ORDER BY upid") == [
        ("first", 20),
        ("second", None),
    ]
    assert db.rows(
        "SELECT t.end_ts, p.name FROM thread t JOIN process p USING (upid) WHERE tid = 300 ORDER BY utid"
    ) == [(20, "first"), (None, "second")]


def test_thread_joins_its_creators_process_once_known(tmp_path):
    # 21 creates thread 22 before anything says which process 21 is in.
    b = TraceBuilder()
    b.ftrace(0, {"timestamp": 12, "pid": 21, "task_newtask": dict(pid=22, comm="t2", clone_flags=CLONE_THREAD)})
    b.packet(
        timestamp=15,
        process_tree=dict(processes=[dict(pid=20, ppid=1, cmdline=["proc"])], threads=[dict(tid=21, tgid=20)]),
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("""SELECT t.tid, p.pid, t.start_ts, t.is_main_thread FROM thread t JOIN process p USING (upid)
                      WHERE t.tid IN (21, 22) ORDER BY t.tid""") == [(21, 20, None, 0), (22, 20, 12, 0)]


# -- process_stats -------------------------------------------------------------------------


def test_a_counter_beyond_int64_is_kept_as_a_double(tmp_path):
    """A kB field near 2^64 scaled to bytes is beyond SQLite's integers: stored as the double trace_processor
    computes (a fuzzed heap-graph trace failed the import with OverflowError)."""
    b = TraceBuilder()
    b.packet(timestamp=100, process_stats=dict(processes=[dict(pid=50, vm_rss_kb=(1 << 64) - 1)]))
    db = ingest_built(tmp_path, b)
    value = db.one("SELECT c.value FROM counter c JOIN track t ON c.track_id = t.id WHERE t.name = 'mem.rss'")
    assert value == pytest.approx(((1 << 64) - 1) * 1024.0)


def test_process_stats_counters(tmp_path):
    b = TraceBuilder()
    for ts, rss in ((100, 2000), (200, 3000)):
        b.packet(
            timestamp=ts,
            process_stats=dict(
                processes=[
                    dict(
                        pid=50,
                        vm_size_kb=9000,
                        vm_rss_kb=rss,
                        rss_anon_kb=1,
                        vm_hwm_kb=4000,
                        oom_score_adj=-100,
                        smr_pss_kb=7,
                        runtime_user_mode=55,
                        threads=[dict(tid=51)],
                    )
                ]
            ),
        )
    db = ingest_built(tmp_path, b, FunctionsDB)
    rows = db.rows("""SELECT t.type, t.name, c.value, p.pid FROM counter c
                      JOIN process_counter_track t ON c.track_id = t.id JOIN process p USING (upid)
                      WHERE c.ts = 200 ORDER BY t.name""")
    assert rows == [
        ("process_memory", "mem.rss", 3000 * 1024, 50),
        ("process_memory", "mem.rss.anon", 1024, 50),
        ("process_memory", "mem.rss.watermark", 4000 * 1024, 50),
        ("smaps", "mem.smaps.pss", 7 * 1024, 50),
        ("process_memory", "mem.virt", 9000 * 1024, 50),
        ("oom_score_adj", "oom_score_adj", -100, 50),
        ("proc_stat_runtime", "runtime.user_ns", 55, 50),
    ]
    assert db.one("SELECT count(*) FROM counter c JOIN track t ON c.track_id = t.id WHERE t.name = 'mem.rss'") == 2
    assert db.rows("SELECT t.tid, p.pid FROM thread t JOIN process p USING (upid) WHERE tid = 51") == [(51, 50)]
    assert db.rows("""SELECT extract_arg(dimension_arg_set_id, 'upid') IS NOT NULL,
                             extract_arg(dimension_arg_set_id, 'process_memory_key')
                      FROM track WHERE name = 'mem.rss'""") == [(1, "rss")]


# -- sys_stats -----------------------------------------------------------------------------


@pytest.fixture
def sys_db(tmp_path):
    b = TraceBuilder()
    b.packet(system_info=dict(utsname=dict(sysname="Linux"), page_size=4096))
    S = pb.SysStats
    first = S(
        meminfo=[S.MeminfoValue(key=pb.MEMINFO_MEM_FREE, value=100)],
        vmstat=[S.VmstatValue(key=pb.VMSTAT_NR_FREE_PAGES, value=7)],
        cpu_stat=[S.CpuTimes(cpu_id=1, user_ns=11, idle_ns=22), S.CpuTimes(user_ns=1)],  # 2nd: no cpu
        num_irq=[S.InterruptCount(irq=5, count=9)],
        num_forks=3,
        buddy_info=[S.BuddyInfo(node="0", zone="Normal", order_pages=[10, 20])],
        disk_stat=[S.DiskStat(device_name="sda", read_sectors=2048, read_time_ms=1000)],
        thermal_zone=[S.ThermalZone(name="thermal_zone0", type="cpu_therm", temp=41)],
        cpuidle_state=[
            S.CpuIdleState(cpu_id=2, cpuidle_state_entry=[S.CpuIdleStateEntry(state="C1", duration_us=500)])
        ],
        gpufreq_mhz=[300],
        slab_info=[S.SlabInfo(name="dentry", pages_per_slab=2, num_slabs=3)],
    )
    b.packet(timestamp=1000, sys_stats=first)
    second = S(disk_stat=[S.DiskStat(device_name="sda", read_sectors=6144, read_time_ms=3000)])
    b.packet(timestamp=2000, sys_stats=second)
    # A meminfo key from a newer recorder: counted, the rest of the packet imported.
    unknown_key = S.FromString(bytes([0x0A, 0x05, 0x08, 0xC8, 0x01, 0x10, 0x05]))  # meminfo {key: 200 value: 5}
    b.packet(timestamp=3000, sys_stats=unknown_key)
    return ingest_built(tmp_path, b, FunctionsDB)


def test_sys_stats_global_counters(sys_db):
    rows = sys_db.rows("""SELECT t.type, t.name, t.counter_unit, c.value FROM counter c JOIN track t
                          ON c.track_id = t.id WHERE t.type IN ('meminfo', 'vmstat', 'num_irq', 'num_forks',
                          'thermal_temperature_sys', 'slabinfo') ORDER BY t.type""")
    assert rows == [
        ("meminfo", "MemFree", "bytes", 100 * 1024),
        ("num_forks", "num_forks", None, 3),
        ("num_irq", "num_irq (id: 5)", None, 9),
        ("slabinfo", "mem.slab.dentry", "bytes", 2 * 3 * 4096),
        ("thermal_temperature_sys", "cpu_therm", "C", 41),
        ("vmstat", "nr_free_pages", None, 7),
    ]
    assert sys_db.rows("""SELECT extract_arg(c.arg_set_id, 'pages_per_slab'), extract_arg(c.arg_set_id, 'num_slabs')
                          FROM counter c JOIN track t ON c.track_id = t.id WHERE t.type = 'slabinfo'""") == [(2, 3)]
    assert sys_db.rows("SELECT name FROM track WHERE type = 'buddyinfo' ORDER BY id") == [
        ("mem.buddyinfo[0][Normal][4 kB]",),
        ("mem.buddyinfo[0][Normal][8 kB]",),
    ]
    assert sys_db.stat("meminfo_unknown_keys") == 1
    assert sys_db.stat("invalid_cpu_times") == 1


def test_sys_stats_cpu_and_gpu_counters(sys_db):
    rows = sys_db.rows("SELECT name, type, unit, cpu FROM cpu_counter_track ORDER BY cpu, id")
    assert rows[0] == ("cpu.times.user_ns", "cpustat", None, 1)
    assert [r[0] for r in rows[:8]] == [
        f"cpu.times.{k}"
        for k in (
            "user_ns",
            "user_nice_ns",
            "system_mode_ns",
            "idle_ns",
            "io_wait_ns",
            "irq_ns",
            "softirq_ns",
            "steal_ns",
        )
    ]
    assert rows[8:] == [("cpuidle2.C1", "cpu_idle_state", "us", 2)]
    # Tracks with a cpu dimension make their CPUs present.
    assert sys_db.rows("SELECT cpu FROM cpu ORDER BY cpu") == [(1,), (2,)]
    assert sys_db.rows("""SELECT g.name, g.unit, g.ugpu, g.gpu_id, c.value FROM gpu_counter_track g
                          JOIN counter c ON c.track_id = g.id""") == [("gpufreq", "kHz", 0, 0, 300)]
    assert sys_db.rows("SELECT id, gpu FROM gpu") == [(0, 0)]


def test_sys_stats_disk_throughput_from_consecutive_samples(sys_db):
    rows = dict(
        sys_db.rows("""SELECT t.name, c.value FROM counter c JOIN track t ON c.track_id = t.id
                               WHERE t.type = 'diskstat'""")
    )
    # 4096 sectors (2 MB) read in 2000 ms; nothing before the first sample.
    assert rows["diskstat.[sda].read_amount"] == 2.0
    assert rows["diskstat.[sda].read_throughput"] == 1.0
    assert len(rows) == 8
    assert (
        sys_db.one("SELECT min(c.ts) FROM counter c JOIN track t ON c.track_id = t.id WHERE t.type = 'diskstat'")
        == 2000
    )


# -- cpu_info / gpu_info -------------------------------------------------------------------


def cpu(freqs, capacity=None, features=0, arm=None):
    c = pb.CpuInfo.Cpu(processor="Core", frequencies=freqs, features=features)
    if capacity is not None:
        c.capacity = capacity
    if arm:
        c.arm_identifier.CopyFrom(pb.CpuInfo.ArmCpuIdentifier(**arm))
    return c


def test_cpu_info_clusters_by_capacity_then_frequency(tmp_path):
    b = TraceBuilder()
    b.packet(
        cpu_info=pb.CpuInfo(
            cpus=[
                cpu([100, 300], capacity=512),
                cpu([100, 200], capacity=160),
                cpu([100, 900], capacity=512, features=1 | 2 | (1 << 40), arm=dict(implementer=0x41, part=0xD05)),
            ]
        )
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("SELECT cpu, cluster_id, capacity, processor FROM cpu ORDER BY cpu") == [
        (0, 1, 512, "Core"),
        (1, 0, 160, "Core"),
        (2, 1, 512, "Core"),
    ]
    assert db.rows("SELECT cpu, freq FROM cpu_available_frequencies ORDER BY id") == [
        (0, 100),
        (0, 300),
        (1, 100),
        (1, 200),
        (2, 100),
        (2, 900),
    ]
    assert db.rows("""SELECT extract_arg(arg_set_id, 'cpu_features.mte'), extract_arg(arg_set_id, 'cpu_features.mte3'),
                             extract_arg(arg_set_id, 'cpu_features.raw_bitmap'), extract_arg(arg_set_id, 'arm_cpu_part')
                      FROM cpu WHERE cpu = 2""") == [(1, 1, 3 | (1 << 40), 0xD05)]
    assert db.one("SELECT arg_set_id FROM cpu WHERE cpu = 0") is None
    assert db.stat("cpu_info_unknown_cpu_features") == 1


def test_cpu_info_without_capacities_uses_max_frequency(tmp_path):
    b = TraceBuilder()
    b.packet(cpu_info=pb.CpuInfo(cpus=[cpu([100, 300]), cpu([500]), cpu([300], capacity=1)]))
    b.packet(cpu_info=pb.CpuInfo())  # an unreadable /proc/cpuinfo
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("SELECT cpu, cluster_id, capacity FROM cpu ORDER BY cpu") == [(0, 0, None), (1, 1, None), (2, 0, 1)]
    assert db.stat("cpu_info_empty") == 1


def test_gpu_info(tmp_path):
    b = TraceBuilder()
    b.packet(
        gpu_info=pb.GpuInfo(
            gpus=[
                pb.GpuInfo.Gpu(
                    name="G1",
                    vendor="V",
                    uuid=b"\x01\xab",
                    extra_info=[pb.GpuInfo.Gpu.KeyValue(key="driver", value="1.2")],
                )
            ]
        )
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("SELECT gpu, name, vendor, model, uuid, extract_arg(arg_set_id, 'driver') FROM gpu") == [
        (0, "G1", "V", None, "01ab", "1.2")
    ]


# -- kernel counters from ftrace -----------------------------------------------------------


def test_cpu_frequency_and_idle(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        {"timestamp": 10, "pid": 0, "cpu_frequency": dict(cpu_id=3, state=1200)},
        {"timestamp": 20, "pid": 0, "cpu_idle": dict(cpu_id=3, state=1)},
        {"timestamp": 30, "pid": 0, "cpu_idle": dict(cpu_id=3, state=4294967295)},
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("""SELECT c.ts, t.name, t.cpu, c.value FROM counter c JOIN cpu_counter_track t
                      ON c.track_id = t.id ORDER BY c.ts""") == [
        (10, "cpufreq", 3, 1200),
        (20, "cpuidle", 3, 1),
        (30, "cpuidle", 3, 4294967295),
    ]
    assert db.rows("SELECT type FROM track ORDER BY id") == [("cpu_frequency",), ("cpu_idle",)]


def rss(ts, pid, size, member=1, curr=None, mm_id=None):
    fields = dict(member=member, size=size)
    if mm_id is not None:
        fields.update(curr=curr, mm_id=mm_id)
    return {"timestamp": ts, "pid": pid, "rss_stat": fields}


def test_rss_stat_goes_to_the_process_learnt_later(tmp_path):
    b = TraceBuilder()
    b.ftrace(0, rss(5, 61, 100), rss(6, 99, 7, member=0))
    # Only now is thread 61 known to be in process 60; 99 never gets a process.
    b.packet(
        timestamp=8, process_tree=dict(processes=[dict(pid=60, ppid=1, cmdline=["p"])], threads=[dict(tid=61, tgid=60)])
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("""SELECT c.ts, t.name, p.pid, c.value, extract_arg(c.arg_set_id, 'utid') IS NOT NULL
                      FROM counter c JOIN process_counter_track t ON c.track_id = t.id
                      JOIN process p USING (upid)""") == [(5, "mem.rss.anon", 60, 100, 1)]
    assert db.rows("""SELECT t.type, t.name, th.tid FROM counter c JOIN thread_counter_track t
                      ON c.track_id = t.id JOIN thread th USING (utid)""") == [
        ("process_memory_thread_fallback", "mem.rss.file", 99)
    ]
    assert db.one("SELECT count(*) FROM counter WHERE track_id < 0") == 0


def test_rss_stat_for_a_foreign_mm_uses_its_owner_while_alive(tmp_path):
    b = TraceBuilder()
    b.packet(
        timestamp=1,
        process_tree=dict(processes=[dict(pid=10, ppid=1, cmdline=["a"]), dict(pid=11, ppid=1, cmdline=["b"])]),
    )
    b.ftrace(
        0,
        rss(100, 10, 100, curr=1, mm_id=77),
        rss(102, 11, 50, curr=0, mm_id=77),  # 11 changes 10's mm: counted for 10
        free(103, 10),
        rss(104, 11, 10, curr=0, mm_id=77),  # its owner is gone: dropped
        rss(105, 11, 10, curr=0, mm_id=88),  # never seen: dropped
        rss(106, 11, -1),
    )  # negative sizes are dropped
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("""SELECT c.ts, p.pid FROM counter c JOIN process_counter_track t ON c.track_id = t.id
                      JOIN process p USING (upid) ORDER BY c.ts""") == [(100, 10), (102, 10)]
    assert db.stat("rss_stat_unknown_thread_for_mm_id") == 2
    assert db.stat("rss_stat_negative_size") == 1


def test_ion_oom_and_thermal(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        1,
        {"timestamp": 5, "pid": 42, "ion_heap_grow": dict(heap_name="system", len=10, total_allocated=90)},
        {"timestamp": 6, "pid": 42, "ion_heap_shrink": dict(heap_name="system", len=4, total_allocated=100)},
        {"timestamp": 7, "pid": 42, "oom_score_adj_update": dict(pid=42, oom_score_adj=65436)},  # -100 as int16
        {"timestamp": 8, "pid": 0, "thermal_temperature": dict(thermal_zone="skin", temp=35)},
        {"timestamp": 9, "pid": 0, "clock_set_rate": dict(name="gpu_clk", state=500)},
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert counters(db) == [
        (5, "ion", "mem.ion.system", 100),
        (5, "ion_change", "mem.ion_change.system", 10),
        (6, "ion", "mem.ion.system", 96),
        (6, "ion_change", "mem.ion_change.system", -4),
        (7, "oom_score_adj_thread_fallback", "oom_score_adj", -100),
        (8, "thermal_temperature", "skin Temperature", 35),
        (9, "clock_frequency", "gpu_clk Frequency", 500),
    ]
    assert db.rows("""SELECT th.tid FROM track t JOIN thread th ON th.utid = t.utid
                      WHERE t.type = 'ion_change'""") == [(42,)]


def test_irqs_are_slices_on_cpu_tracks(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        1,
        {"timestamp": 10, "pid": 5, "irq_handler_entry": dict(irq=100, name="eth0")},
        {"timestamp": 15, "pid": 5, "irq_handler_exit": dict(irq=100, ret=1)},
        {"timestamp": 20, "pid": 5, "softirq_entry": dict(vec=3)},
        {"timestamp": 26, "pid": 5, "softirq_exit": dict(vec=3)},
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("""SELECT s.ts, s.dur, s.category, s.name, t.name, t.cpu,
                             coalesce(extract_arg(s.arg_set_id, 'ret'), extract_arg(s.arg_set_id, 'vec'))
                      FROM slice s JOIN cpu_track t ON s.track_id = t.id ORDER BY s.ts""") == [
        (10, 5, "irq", "IRQ (eth0)", "Irq Cpu 1", 1, "handled"),
        (20, 6, "irq", "NET_RX", "SoftIrq Cpu 1", 1, 3),
    ]


def test_generic_kernel_and_gpu_frequency_packets(tmp_path):
    b = TraceBuilder()
    b.packet(timestamp=100, generic_kernel_cpu_freq_event=dict(cpu=2, freq_hz=1_500_000_000))
    b.packet(timestamp=200, generic_gpu_frequency_event=dict(gpu_id=1, frequency_khz=800_000))
    b.ftrace(0, {"timestamp": 300, "pid": 0, "cpu_frequency": dict(cpu_id=2, state=1_700_000)})
    db = ingest_built(tmp_path, b, FunctionsDB)
    # The generic and ftrace frequencies of a CPU share its one cpufreq track.
    assert db.rows("""SELECT c.ts, t.name, t.cpu, c.value FROM counter c JOIN cpu_counter_track t
                      ON c.track_id = t.id ORDER BY c.ts""") == [
        (100, "cpufreq", 2, 1_500_000),
        (300, "cpufreq", 2, 1_700_000),
    ]
    assert db.rows("""SELECT c.ts, t.name, t.gpu_id, g.gpu, c.value FROM counter c JOIN gpu_counter_track t
                      ON c.track_id = t.id JOIN gpu g ON g.id = t.ugpu""") == [(200, "gpufreq", 1, 1, 800_000)]
