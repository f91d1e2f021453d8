"""trace_processor's trace doctor (__intrinsic_trace_diagnostics): each rule firing with its key, title,
confidence and message, and the configs it must leave alone."""

from __future__ import annotations

from conftest import TraceDB, ingest_built
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.importers.proto import trace_diagnostics
from datasette_perfetto.parallel import ingest as parallel_ingest
from datasette_perfetto.trace_builder import TraceBuilder

MINUTE = 60 * 1_000_000_000


def ftrace_source(**ftrace_config) -> pb.TraceConfig.DataSource:
    return pb.TraceConfig.DataSource(
        config=pb.DataSourceConfig(name="linux.ftrace", ftrace_config=pb.FtraceConfig(**ftrace_config))
    )


def builder_with(config: pb.TraceConfig) -> TraceBuilder:
    b = TraceBuilder()
    b.packet(trusted_packet_sequence_id=1, trace_config=config)
    return b


def diagnostics(tmp_path, b: TraceBuilder, columns: str = "key, confidence") -> list[tuple]:
    tmp_path.mkdir(exist_ok=True)
    db = ingest_built(tmp_path, b)
    return db.rows(f"SELECT {columns} FROM __intrinsic_trace_diagnostics ORDER BY id")


def test_tiny_ftrace_buffer_row(tmp_path):
    b = builder_with(pb.TraceConfig(data_sources=[ftrace_source(buffer_size_kb=544)]))
    assert diagnostics(tmp_path, b, "id, key, title, description, remediation, confidence, trace_id") == [
        (
            0,
            "tiny_ftrace_buffer",
            "Ftrace buffer too small",
            "ftrace buffer_size_kb is only 544 KB (< 1 MB); the kernel ftrace buffer may overrun and drop events "
            "under load.",
            "Avoid setting buffer_size_kb explicitly; leave it unset to use the default, which is tuned for typical "
            "workloads.",
            0.55,  # halfway between 64 KB (0.9) and 1 MB (0.2)
            0,
        )
    ]


def test_ftrace_data_loss_makes_the_buffer_rules_sure(tmp_path):
    b = builder_with(pb.TraceConfig(data_sources=[ftrace_source(buffer_size_kb=544)]))
    b.ftrace(0, lost_events=True)
    assert diagnostics(tmp_path, b) == [("tiny_ftrace_buffer", 0.9)]


def test_good_ftrace_configs_trip_nothing(tmp_path):
    good = ftrace_source(
        ftrace_events=["raw_syscalls/sys_enter", "workqueue/workqueue_execute_start"],
        syscall_events=["sys_read"],
        buffer_size_kb=8192,
        drain_period_ms=250,
        symbolize_ksyms=True,
        enable_function_graph=True,
    )
    default = ftrace_source(buffer_size_kb=0, ftrace_events=["sched/sched_switch"])  # 0: the default size
    assert diagnostics(tmp_path, builder_with(pb.TraceConfig(data_sources=[good, default]))) == []


def test_a_bad_config_trips_several_rules_in_order(tmp_path):
    bad = ftrace_source(
        ftrace_events=["raw_syscalls/sys_enter", "raw_syscalls/sys_exit"], buffer_size_kb=32, drain_period_ms=100000
    )
    rows = diagnostics(tmp_path, builder_with(pb.TraceConfig(data_sources=[bad])), "key, confidence, description")
    assert [r[:2] for r in rows] == [
        ("tiny_ftrace_buffer", 0.9),
        ("low_ftrace_drain_bandwidth", 0.9),
        ("extreme_ftrace_drain_period", 0.6),
        ("syscalls_without_filter", 0.3),
    ]
    assert rows[1][2] == (
        "ftrace drain bandwidth is low (buffer_size_kb=32, drain_period_ms=100000 gives under 5 MB/s); a burst of "
        "events can overflow the buffer before it is drained."
    )
    assert rows[2][2].startswith("ftrace drain_period_ms is 100000 ms, outside the sane range [100, 60000];")


def test_drain_bandwidth_confidence_ramps_and_every_ftrace_source_counts(tmp_path):
    sources = [
        ftrace_source(buffer_size_kb=3072, drain_period_ms=1000),  # 3 MB/s: halfway to 1 MB/s
        ftrace_source(buffer_size_kb=5120, drain_period_ms=1000),  # 5 MB/s: fine
        ftrace_source(buffer_size_kb=8192, drain_period_ms=50),  # a too short period
        ftrace_source(buffer_size_kb=16),
    ]
    assert diagnostics(tmp_path, builder_with(pb.TraceConfig(data_sources=sources))) == [
        ("tiny_ftrace_buffer", 0.9),
        ("low_ftrace_drain_bandwidth", 0.45),
        ("extreme_ftrace_drain_period", 0.6),
    ]


def test_kernel_symbols_without_symbolize_ksyms(tmp_path):
    source = ftrace_source(
        enable_function_graph=True,
        ftrace_events=["sched/sched_switch", "sched/sched_blocked_reason", "workqueue/workqueue_execute_start"],
        buffer_size_kb=8192,
    )
    rows = diagnostics(tmp_path, builder_with(pb.TraceConfig(data_sources=[source])), "key, confidence, description")
    assert [r[:2] for r in rows] == [
        ("function_graph_requires_symbolize_ksyms", 1.0),
        ("events_require_symbolize_ksyms", 0.6),
    ]
    assert rows[1][2].startswith("ftrace event sched/sched_blocked_reason is enabled")  # the first one named


def test_discard_buffer_for_streaming(tmp_path):
    def config(period_ms: int, *names: str, target: int = 0) -> pb.TraceConfig:
        return pb.TraceConfig(
            write_into_file=True,
            file_write_period_ms=period_ms,
            buffers=[pb.TraceConfig.BufferConfig(size_kb=2048, fill_policy=pb.TraceConfig.BufferConfig.DISCARD)],
            data_sources=[
                pb.TraceConfig.DataSource(config=pb.DataSourceConfig(name=n, target_buffer=target)) for n in names
            ],
        )

    rows = diagnostics(tmp_path, builder_with(config(1000, "android.packages_list", "track_event")), "key, description")
    assert rows == [
        (
            "discard_buffer_for_streaming",
            'data source "track_event" targets a DISCARD buffer while the trace streams into a file; DISCARD stops '
            "recording once the buffer first fills, silently truncating long traces.",
        )
    ]
    # Traceur's week-long period is one final write; a target beyond the buffers is no DISCARD buffer.
    assert diagnostics(tmp_path / "a", builder_with(config(604800000, "linux.ftrace"))) == []
    assert diagnostics(tmp_path / "b", builder_with(config(1000, "linux.ftrace", target=1))) == []


def test_heapprofd_sampling_interval(tmp_path):
    def source(interval: int) -> pb.TraceConfig.DataSource:
        return pb.TraceConfig.DataSource(
            config=pb.DataSourceConfig(
                name="android.heapprofd", heapprofd_config=pb.HeapprofdConfig(sampling_interval_bytes=interval)
            )
        )

    assert diagnostics(tmp_path, builder_with(pb.TraceConfig(data_sources=[source(4096), source(1 << 20)]))) == [
        ("heapprofd_sampling_interval_too_low", 0.3)
    ]
    # A heapprofd error stat makes it likely the small interval hurt.
    b = builder_with(pb.TraceConfig(data_sources=[source(4096)]))
    b.packet(clock_snapshot=pb.ClockSnapshot(clocks=[pb.ClockSnapshot.Clock(clock_id=c, timestamp=0) for c in (6, 4)]))
    b.heap_profile(100, 30, [((("main", "/bin/app"),), 1000, 0, 1, 0)])
    b.packets[-1].profile_packet.process_dumps[0].buffer_corrupted = True
    assert diagnostics(tmp_path / "a", b) == [("heapprofd_sampling_interval_too_low", 0.9)]


def test_display_video_not_enabled_on_user_builds_only(tmp_path):
    def build(fingerprint: str) -> TraceBuilder:
        b = TraceBuilder()
        b.packet(system_info=pb.SystemInfo(android_build_fingerprint=fingerprint))
        video = pb.TraceConfig.DataSource(config=pb.DataSourceConfig(name="android.display.video"))
        b.packet(trace_config=pb.TraceConfig(data_sources=[video]))
        return b

    assert diagnostics(tmp_path, build("google/x/x:14/AB/1:user/release-keys"), "key, title, confidence") == [
        ("display_video_not_enabled", "Display video not captured", 0.7)
    ]
    assert diagnostics(tmp_path / "a", build("google/x/x:14/AB/1:userdebug/dev-keys")) == []
    assert diagnostics(tmp_path / "b", build("no build type")) == []


def test_preserve_ftrace_buffer_late_start(tmp_path):
    def build(started_ns: int | None) -> TraceBuilder:
        b = builder_with(pb.TraceConfig(data_sources=[ftrace_source(preserve_ftrace_buffer=True)]))
        if started_ns is not None:
            b.packet(
                timestamp=started_ns,
                trusted_packet_sequence_id=1,
                service_event=pb.TracingServiceEvent(tracing_started=True),
            )
        return b

    assert diagnostics(tmp_path, build(6 * MINUTE), "key, title, confidence") == [
        ("preserve_ftrace_buffer_late_start", "Unnecessary preserve_ftrace_buffer", 0.7)
    ]
    assert diagnostics(tmp_path / "a", build(MINUTE)) == []  # shortly after boot
    assert diagnostics(tmp_path / "b", build(None)) == []  # no idea when tracing started


def test_tracing_start_is_taken_back_to_boottime(tmp_path):
    """On a MONOTONIC trace clock tracing_started_ns (2 min) is converted to BOOTTIME (11 min) first."""
    b = TraceBuilder()
    b.packet(
        trusted_packet_sequence_id=1,
        clock_snapshot=pb.ClockSnapshot(
            primary_trace_clock=3,
            clocks=[
                pb.ClockSnapshot.Clock(clock_id=6, timestamp=10 * MINUTE),
                pb.ClockSnapshot.Clock(clock_id=3, timestamp=MINUTE),
            ],
        ),
    )
    b.packet(
        trusted_packet_sequence_id=1,
        trace_config=pb.TraceConfig(data_sources=[ftrace_source(preserve_ftrace_buffer=True)]),
    )
    b.packet(
        timestamp=11 * MINUTE, trusted_packet_sequence_id=1, service_event=pb.TracingServiceEvent(tracing_started=True)
    )
    db = ingest_built(tmp_path, b)
    assert db.one("SELECT int_value FROM metadata WHERE name = 'tracing_started_ns'") == 2 * MINUTE
    assert db.rows("SELECT key FROM __intrinsic_trace_diagnostics") == [("preserve_ftrace_buffer_late_start",)]


def test_no_trace_config_no_rules(tmp_path):
    b = TraceBuilder()
    b.ftrace(0, lost_events=True)
    assert diagnostics(tmp_path, b) == []


def test_every_rule_is_registered():
    assert [rule.__name__ for rule in trace_diagnostics.RULES] == [
        "preserve_ftrace_buffer_late_start",
        "tiny_ftrace_buffer",
        "low_ftrace_drain_bandwidth",
        "extreme_ftrace_drain_period",
        "syscalls_without_filter",
        "events_require_symbolize_ksyms",
        "discard_buffer_for_streaming",
        "heapprofd_sampling_interval_too_low",
        "display_video_not_enabled",
    ]


def test_parallel_ingest_keeps_each_inputs_rows(tmp_path):
    paths = []
    for i, kb in enumerate((16, 8192, 544)):
        path = tmp_path / f"t{i}.pftrace"
        path.write_bytes(builder_with(pb.TraceConfig(data_sources=[ftrace_source(buffer_size_kb=kb)])).to_bytes())
        paths.append(str(path))
    out = tmp_path / "merged.db"
    parallel_ingest(paths, str(out), jobs=2)
    assert TraceDB(out).rows("SELECT id, key, confidence, trace_id FROM __intrinsic_trace_diagnostics ORDER BY id") == [
        (0, "tiny_ftrace_buffer", 0.9, 0),
        (1, "tiny_ftrace_buffer", 0.55, 2),
    ]
