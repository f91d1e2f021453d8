"""Trace-level metadata and stats (trace config, system info, service events, TraceStats,
triggers) and kernel data (OOM kills, CFS utilisation, the tracing-start drop window, damaged
sys_stats), compared with what trace_processor's code records."""

from __future__ import annotations

from conftest import FunctionsDB
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.importers.common.options import DEFAULT_CONTENT, Content
from datasette_perfetto.importers.proto.trace_metadata import (
    fingerprint_parts,
    proto_text,
    quote_text,
    tracing_service_major_version,
)
from datasette_perfetto.ingest import ingest_bytes
from datasette_perfetto.trace_builder import encode_varint

BufferConfig = pb.TraceConfig.BufferConfig


def ingest_packets(tmp_path, packets: list, raw: bytes = b"", content: Content = DEFAULT_CONTENT) -> FunctionsDB:
    db = tmp_path / "t.db"
    ingest_bytes(pb.Trace(packet=packets).SerializeToString() + raw, str(db), content)
    return FunctionsDB(db)


def meta(db: FunctionsDB, name: str):
    return db.one("SELECT coalesce(str_value, int_value) FROM metadata WHERE name = ?", (name,))


def stats(db: FunctionsDB, name: str) -> list[tuple]:
    return db.rows("SELECT idx, value FROM stats WHERE name = ? ORDER BY idx", (name,))


def clock_packet(ts: int = 1) -> pb.TracePacket:
    return pb.TracePacket(timestamp=ts, trusted_packet_sequence_id=1, track_event=pb.TrackEvent(type=3, name="x"))


# -- trace config ----------------------------------------------------------------------------


def test_config_text_is_protozero_text():
    config = pb.TraceConfig(
        buffers=[BufferConfig(size_kb=1024, fill_policy=BufferConfig.DISCARD)],
        duration_ms=100,
        unique_session_name='a"b\n\x01',
    )
    config.data_sources.add().config.name = "linux.ftrace"
    text = proto_text(config.SerializeToString(), config.DESCRIPTOR)
    assert text == (
        "buffers {\n  size_kb: 1024\n  fill_policy: DISCARD\n}\n"
        'data_sources {\n  config {\n    name: "linux.ftrace"\n  }\n}\n'
        "duration_ms: 100\n"
        'unique_session_name: "a\\"b\\n\\001"'
    )  # no trailing newline
    # Unknown fields by number, floats as C's %f, an unknown enum value by number.
    raw = bytes([0xF8, 0x07, 0x05]) + bytes([0x20, 0x07])  # field 127 = 5; fill_policy (4) = 7, unknown
    assert proto_text(raw, BufferConfig.DESCRIPTOR) == "127: 5\n4: 7"
    assert quote_text("é".encode()) == '"\\303\\251"'
    assert proto_text(b"\x0d\x00\x00\xc0\x3f", None) == "1: 0x3fc00000"


def test_trace_config_metadata_and_write_into_file_stats(tmp_path):
    config = pb.TraceConfig(
        buffers=[BufferConfig(size_kb=4, fill_policy=BufferConfig.RING_BUFFER), BufferConfig(size_kb=4, fill_policy=2)],
        write_into_file=True,
        file_write_period_ms=1000,
        trace_uuid_msb=1,
        trace_uuid_lsb=2,
        unique_session_name="session",
    )
    trace_stats = pb.TraceStats(
        buffer_stats=[pb.TraceStats.BufferStats(bytes_overwritten=2048), pb.TraceStats.BufferStats()]
    )
    db = ingest_packets(
        tmp_path,
        [
            pb.TracePacket(trusted_packet_sequence_id=1, trace_config=config),
            pb.TracePacket(trusted_packet_sequence_id=1, trace_stats=trace_stats),
            clock_packet(),
        ],
    )
    assert meta(db, "trace_config_pbtxt").startswith("buffers {\n  size_kb: 4\n  fill_policy: RING_BUFFER\n}")
    assert meta(db, "trace_uuid") == "00000000-0000-0001-0000-000000000002"
    assert meta(db, "unique_session_name") == "session"
    assert stats(db, "config_write_into_file_discard") == [(1, 1)]
    # Overwritten bytes never reached the file: a data loss (period under a day).
    assert stats(db, "long_trace_mode_bytes_overwritten") == [(0, 2048)]
    # No flush_period_ms, and no service version to say it flushes on every write.
    assert stats(db, "config_write_into_file_no_flush") == [(None, 1)]


def test_recent_service_needs_no_flush_period(tmp_path):
    db = ingest_packets(
        tmp_path,
        [
            pb.TracePacket(trusted_packet_sequence_id=1, trace_config=pb.TraceConfig(write_into_file=True)),
            pb.TracePacket(
                trusted_packet_sequence_id=1, system_info=pb.SystemInfo(tracing_service_version="Perfetto v54.0-abc")
            ),
            clock_packet(),
        ],
    )
    assert stats(db, "config_write_into_file_no_flush") == [(None, 0)]
    assert tracing_service_major_version("Perfetto v53.1") == 53
    assert tracing_service_major_version("v54.0") is None


# -- system info --------------------------------------------------------------------------------


def test_android_build_from_the_fingerprint():
    assert fingerprint_parts("google/coral/coral:12/SP1A.210812.015/7679548:userdebug/dev-keys") == (31, "7679548")
    assert fingerprint_parts("google/shamu/shamu:7.0/NBD92F/3753956:userdebug/dev-keys") == (24, "3753956")
    assert fingerprint_parts("x/y/z:Tiramisu/ID/123:user/keys") == (31, "123")
    assert fingerprint_parts("x/y/z:15/ID/456:user/keys") == (None, "456")
    assert fingerprint_parts("no colon at all") is None


def test_system_info_metadata(tmp_path):
    info = pb.SystemInfo(
        android_build_fingerprint="google/coral/coral:12/SP1A.210812.015/7679548:userdebug/dev-keys",
        android_soc_model="soc",
        android_hardware_revision="rev",
        system_ram_bytes=7_500_000_000,
        timezone_off_mins=-60,
    )
    info.utsname.sysname = "Linux"
    db = ingest_packets(tmp_path, [pb.TracePacket(trusted_packet_sequence_id=1, system_info=info), clock_packet()])
    assert {
        name: meta(db, name)
        for name in (
            "android_incremental_build",
            "android_sdk_version",
            "android_soc_model",
            "android_hardware_revision",
            "system_ram_bytes",
            "system_ram_gb",
            "timezone_off_mins",
            "system_name",
            "system_release",
        )
    } == {
        "android_incremental_build": "7679548",
        "android_sdk_version": 31,  # from the fingerprint's release
        "android_soc_model": "soc",
        "android_hardware_revision": "rev",
        "system_ram_bytes": 7_500_000_000,
        "system_ram_gb": 8,  # rounded half away from zero
        "timezone_off_mins": -60,
        "system_name": "Linux",
        "system_release": "",  # every utsname field is recorded once utsname is there
    }
    assert db.one("SELECT android_sdk_version FROM machine WHERE id = 0") == 31


def test_sdk_version_given_wins_over_the_fingerprint(tmp_path):
    info = pb.SystemInfo(android_build_fingerprint="a/b/c:12/ID/99:user/k", android_sdk_version=35)
    db = ingest_packets(tmp_path, [pb.TracePacket(trusted_packet_sequence_id=1, system_info=info), clock_packet()])
    assert meta(db, "android_sdk_version") == 35


# -- service events, trace stats, triggers -------------------------------------------------


def test_service_events(tmp_path):
    ev = pb.TracingServiceEvent
    db = ingest_packets(
        tmp_path,
        [
            pb.TracePacket(timestamp=10, trusted_packet_sequence_id=1, service_event=ev(tracing_started=True)),
            pb.TracePacket(timestamp=20, trusted_packet_sequence_id=1, service_event=ev(all_data_sources_flushed=True)),
            pb.TracePacket(timestamp=30, trusted_packet_sequence_id=1, service_event=ev(all_data_sources_flushed=True)),
            pb.TracePacket(timestamp=40, trusted_packet_sequence_id=1, service_event=ev(clone_started=True)),
            pb.TracePacket(timestamp=50, trusted_packet_sequence_id=1, service_event=ev(buffer_cloned=2)),
            pb.TracePacket(timestamp=60, trusted_packet_sequence_id=1, service_event=ev(tracing_disabled=True)),
        ],
    )
    assert db.rows(
        "SELECT int_value, key_type FROM metadata WHERE name = 'all_data_source_flushed_ns' ORDER BY id"
    ) == [
        (20, "multi"),
        (30, "multi"),
    ]
    assert meta(db, "tracing_started_ns") == 10 and meta(db, "tracing_disabled_ns") == 60
    assert stats(db, "traced_clone_started_timestamp_ns") == [(None, 40)]
    assert stats(db, "traced_buf_clone_done_timestamp_ns") == [(2, 50)]


def test_every_trace_stats_counter(tmp_path):
    ts = pb.TraceStats(
        producers_connected=3,
        chunks_discarded=4,
        flushes_failed=1,
        final_flush_outcome=pb.TraceStats.FINAL_FLUSH_SUCCEEDED,
        buffer_stats=[pb.TraceStats.BufferStats(buffer_size=100, patches_failed=2), pb.TraceStats.BufferStats()],
        writer_stats=[pb.TraceStats.WriterStats(sequence_id=1, buffer=1)],
    )
    ts.filter_stats.input_bytes = 9
    ts.filter_stats.bytes_discarded_per_buffer.extend([5, 6])
    db = ingest_packets(
        tmp_path,
        [clock_packet(), pb.TracePacket(trusted_packet_sequence_id=1, timestamp=2, trace_stats=ts)],
    )
    assert stats(db, "traced_producers_connected") == [(None, 3)]
    assert stats(db, "traced_chunks_discarded") == [(None, 4)]
    assert stats(db, "traced_flushes_failed") == [(None, 1)]
    assert stats(db, "traced_final_flush_succeeded") == [(None, 1)]
    assert stats(db, "filter_input_bytes") == [(None, 9)]
    assert stats(db, "traced_buf_bytes_filtered_out") == [(0, 5), (1, 6)]
    # Every buffer field, zeros included, per buffer.
    assert stats(db, "traced_buf_buffer_size") == [(0, 100), (1, 0)]
    assert stats(db, "traced_buf_patches_failed") == [(0, 2), (1, 0)]
    assert stats(db, "traced_buf_chunks_committed_out_of_order") == [(0, 0), (1, 0)]
    # The sequences that wrote to a buffer: their losses, every cause, zeros included.
    assert stats(db, "traced_buf_sequence_packet_loss") == [(1, 0)]
    assert stats(db, "traced_buf_data_loss_smb_full") == [(1, 0)]


def test_triggers(tmp_path):
    db = ingest_packets(
        tmp_path,
        [
            pb.TracePacket(
                timestamp=10,
                trusted_packet_sequence_id=1,
                trigger=pb.Trigger(trigger_name="first", producer_name="p", trusted_producer_uid=42),
            ),
            pb.TracePacket(timestamp=20, trusted_packet_sequence_id=1, trigger=pb.Trigger(trigger_name="second")),
            pb.TracePacket(
                timestamp=30, trusted_packet_sequence_id=1, clone_snapshot_trigger=pb.Trigger(trigger_name="clone")
            ),
            pb.TracePacket(
                timestamp=40, trusted_packet_sequence_id=1, chrome_trigger=pb.ChromeTrigger(trigger_name_hash=7)
            ),
        ],
    )
    assert db.rows(
        "SELECT s.ts, s.name, t.name, t.type, extract_arg(s.arg_set_id, 'producer_name'), "
        "extract_arg(s.arg_set_id, 'trusted_producer_uid'), extract_arg(s.arg_set_id, 'chrome_trigger.name_hash') "
        "FROM slice s JOIN track t ON s.track_id = t.id ORDER BY s.ts"
    ) == [
        (10, "first", "Trace Triggers", "triggers", "p", 42, None),
        (20, "second", "Trace Triggers", "triggers", None, None, None),
        (30, "clone", "Trace Triggers", "triggers", None, None, None),
        (40, "chrome_trigger", "Trace Triggers", "triggers", None, None, 7),
    ]
    # The first trace trigger names the trace, unless a clone-snapshot trigger came.
    assert meta(db, "trace_trigger") == "clone"
    assert stats(db, "traced_clone_trigger_timestamp_ns") == [(None, 30)]
    assert meta(db, "cr-triggered_rule_name_hash") == 7


# -- kernel ------------------------------------------------------------------------------------


def ftrace(cpu: int, *events: pb.FtraceEvent, **bundle) -> pb.TracePacket:
    return pb.TracePacket(
        trusted_packet_sequence_id=2, ftrace_events=pb.FtraceEventBundle(cpu=cpu, event=list(events), **bundle)
    )


def switch(ts: int, prev: int, nxt: int) -> pb.FtraceEvent:
    return pb.FtraceEvent(
        timestamp=ts,
        pid=prev,
        sched_switch=pb.SchedSwitchFtraceEvent(prev_pid=prev, prev_comm=f"t{prev}", next_pid=nxt, next_comm=f"t{nxt}"),
    )


def test_oom_kill_instant_on_the_victims_thread(tmp_path):
    tree = pb.ProcessTree(
        processes=[pb.ProcessTree.Process(pid=1000, ppid=1, cmdline=["com.app"])],
        threads=[pb.ProcessTree.Thread(tid=1001, tgid=1000)],
    )
    db = ingest_packets(
        tmp_path,
        [
            pb.TracePacket(timestamp=1, trusted_packet_sequence_id=2, process_tree=tree),
            ftrace(4, pb.FtraceEvent(timestamp=1234, pid=9, mark_victim=pb.MarkVictimFtraceEvent(pid=1001))),
        ],
    )
    assert db.rows(
        "SELECT s.ts, s.dur, s.name, t.tid, p.name FROM slice s JOIN thread_track tt ON s.track_id = tt.id "
        "JOIN thread t USING (utid) JOIN process p USING (upid)"
    ) == [(1234, 0, "mem.oom_kill", 1001, "com.app")]


def test_block_io_slices_per_device(tmp_path):
    def io(ts: int, kind: str, dev: int, sector: int) -> pb.FtraceEvent:
        event = getattr(pb, f"BlockIo{kind.capitalize()}FtraceEvent")(dev=dev, sector=sector)
        return pb.FtraceEvent(timestamp=ts, pid=7, **{f"block_io_{kind}": event})

    db = ingest_packets(
        tmp_path,
        [
            ftrace(
                0, io(1000, "start", 8, 40), io(1200, "start", 9, 50), io(2400, "done", 8, 41), io(3000, "done", 9, 51)
            )
        ],
    )
    assert db.rows(
        "SELECT s.name, s.ts, s.dur, t.type, t.event_type, extract_arg(t.dimension_arg_set_id, 'block_device'), "
        "extract_arg(s.arg_set_id, 'sector') FROM slice s JOIN track t ON s.track_id = t.id ORDER BY s.ts"
    ) == [
        # One track per device, a counter blueprint's as in trace_processor; the end's sector replaces the start's.
        ("block_io", 1000, 1400, "block_io", "counter", 8, 41),
        ("block_io", 1200, 1800, "block_io", "counter", 9, 51),
    ]


def test_exynos_acpm_thermal_counters_at_the_firmware_time(tmp_path):
    def bulk(ts: int, tz_id: int, **fields) -> pb.FtraceEvent:
        payload = pb.ThermalExynosAcpmBulkFtraceEvent(tz_id=tz_id, current_temp=35, cdev_state=2, **fields)
        return pb.FtraceEvent(timestamp=ts, pid=42, thermal_exynos_acpm_bulk=payload)

    overhead = pb.ThermalExynosAcpmHighOverheadFtraceEvent(tz_id=3, current_temp=50, cdev_state=1)
    db = ingest_packets(
        tmp_path,
        [
            ftrace(
                0,
                bulk(1000, 0, timestamp=5000),
                bulk(1100, 9, timestamp=5100),  # no such zone: counted
                bulk(1200, 1),  # no firmware time: counted, not even a raw row
                pb.FtraceEvent(timestamp=1300, pid=42, thermal_exynos_acpm_high_overhead=overhead),
            )
        ],
        content=Content(ftrace_raw=True),
    )
    assert db.rows(
        "SELECT c.ts, t.name, t.type, c.value, extract_arg(c.arg_set_id, 'thermal_zone_id') "
        "FROM counter c JOIN track t ON c.track_id = t.id ORDER BY c.ts, t.name"
    ) == [
        (1300, "GPU Temperature", "acpm_thermal_temperature", 50.0, 3),
        (1300, "Tj-GPU Cooling Device", "acpm_cooling_device_counter", 1.0, 3),
        (5000, "BIG Temperature", "acpm_thermal_temperature", 35.0, 0),
        (5000, "Tj-BIG Cooling Device", "acpm_cooling_device_counter", 2.0, 0),
    ]
    # The raw rows keep the kernel's time.
    assert db.rows("SELECT ts, name FROM ftrace_event ORDER BY ts") == [
        (1000, "thermal_exynos_acpm_bulk"),
        (1100, "thermal_exynos_acpm_bulk"),
        (1300, "thermal_exynos_acpm_high_overhead"),
    ]
    assert stats(db, "ftrace_thermal_exynos_acpm_unknown_tz_id") == [(None, 1)]
    assert stats(db, "ftrace_bundle_tokenizer_errors") == [(None, 1)]


def test_adreno_command_batches_at_their_gpu_time(tmp_path):
    """GPU ticks (19.2 MHz) become trace time through the sync event with the batch's timestamp field,
    whichever comes first in the file; the track is named by the process that queued the context."""
    tree = pb.ProcessTree(
        processes=[pb.ProcessTree.Process(pid=300, ppid=1, cmdline=["com.example.app"])],
        threads=[pb.ProcessTree.Thread(tid=301, tgid=300)],
    )

    def kgsl(ts: int, pid: int, kind: str, **fields) -> pb.FtraceEvent:
        payload = getattr(pb, f"KgslAdrenoCmdbatch{kind.capitalize()}FtraceEvent")(**fields)
        return pb.FtraceEvent(timestamp=ts, pid=pid, **{f"kgsl_adreno_cmdbatch_{kind}": payload})

    db = ingest_packets(
        tmp_path,
        [
            pb.TracePacket(timestamp=1, trusted_packet_sequence_id=2, process_tree=tree),
            ftrace(
                0,
                kgsl(1_000_000_000, 301, "queued", id=1),
                # Batch 7: sync first, at 19,200,000 ticks; it started 19,200,000 ticks later and ran 1 s.
                kgsl(2_000_000_000, 0, "sync", id=1, timestamp=7, ticks=19_200_000),
                kgsl(5_000_000_000, 0, "retired", id=1, timestamp=7, start=38_400_000, retire=57_600_000),
            ),
            ftrace(
                1,
                # Batch 8 of an unknown context: retired before its sync; started 2 s after the sync.
                kgsl(6_000_000_000, 0, "retired", id=2, prio=3, timestamp=8, start=40_000_000, retire=40_960_000),
                kgsl(6_500_000_000, 0, "sync", id=2, timestamp=8, ticks=1_600_000),
                kgsl(7_000_000_000, 0, "retired", id=2, timestamp=9, start=5, retire=1),  # ends before it starts
                kgsl(7_100_000_000, 0, "sync", id=2, timestamp=9, ticks=0),
            ),
        ],
    )
    assert db.rows(
        "SELECT s.name, s.ts, s.dur, t.name, t.type FROM slice s JOIN track t ON s.track_id = t.id ORDER BY s.ts"
    ) == [
        ("GPU", 3_000_000_000, 1_000_000_000, "GPU com.example.app (Ctx=1, Prio=0)", "adreno_gpu_cmdbatch"),
        ("GPU", 8_500_000_000, 50_000_000, "GPU (Ctx=2, Prio=3)", "adreno_gpu_cmdbatch"),
    ]


def test_kprobes_make_slices_on_the_thread_they_hit(tmp_path):
    def probe(ts: int, kind: int, name: str = "fuse_file_write_iter") -> pb.FtraceEvent:
        return pb.FtraceEvent(timestamp=ts, pid=42, kprobe_event=pb.KprobeEvent(name=name, type=kind))

    begin, end, instant = (
        pb.KprobeEvent.KPROBE_TYPE_BEGIN,
        pb.KprobeEvent.KPROBE_TYPE_END,
        pb.KprobeEvent.KPROBE_TYPE_INSTANT,
    )
    db = ingest_packets(
        tmp_path,
        [ftrace(1, probe(1500, begin), probe(2000, instant, "inner"), probe(2700, end), probe(3000, 0, "unknown"))],
    )
    assert db.rows(
        "SELECT s.ts, s.dur, s.name, s.depth, t.tid FROM slice s JOIN thread_track tt ON s.track_id = tt.id "
        "JOIN thread t USING (utid) ORDER BY s.ts"
    ) == [(1500, 1200, "fuse_file_write_iter", 0, 42), (2000, 0, "inner", 1, 42)]


def test_journald_entries_are_logs_beside_android_ones(tmp_path):
    entry = pb.SystemdJournaldEvent(
        pid=42, tid=43, uid=1000, prio=3, tag="myapp", message="hello", comm="myapp", systemd_unit="myapp.service"
    )
    bare = pb.SystemdJournaldEvent(message="kernel says")  # no pid, no priority: no thread, EMERG
    logcat = pb.AndroidLogPacket(
        events=[pb.AndroidLogPacket.LogEvent(timestamp=3000, pid=7, tid=7, tag="t", message="m")]
    )
    db = ingest_packets(
        tmp_path,
        [
            pb.TracePacket(timestamp=1000, trusted_packet_sequence_id=2, journald_event=entry),
            pb.TracePacket(timestamp=2000, trusted_packet_sequence_id=2, journald_event=bare),
            pb.TracePacket(
                timestamp=2500, trusted_packet_sequence_id=2, journald_event=pb.SystemdJournaldEvent(num_total=42)
            ),
            # Log events are on CLOCK_REALTIME: a snapshot relates it to the trace clock (BOOTTIME).
            pb.TracePacket(
                trusted_packet_sequence_id=2,
                clock_snapshot=pb.ClockSnapshot(
                    clocks=[
                        pb.ClockSnapshot.Clock(clock_id=6, timestamp=0),
                        pb.ClockSnapshot.Clock(clock_id=1, timestamp=0),
                    ]
                ),
            ),
            pb.TracePacket(timestamp=1, trusted_packet_sequence_id=2, android_log=logcat),
        ],
    )
    assert db.rows(
        "SELECT l.ts, l.prio, l.tag, l.msg, l.uid, l.comm, l.systemd_unit, l.hostname, t.tid "
        "FROM linux_systemd_journald_logs l LEFT JOIN thread t USING (utid) ORDER BY l.ts"
    ) == [
        (1000, 3, "myapp", "hello", 1000, "myapp", "myapp.service", None, 43),
        (2000, 0, None, "kernel says", None, None, None, None, None),
    ]
    assert db.rows("SELECT log_source, count(*) FROM logs GROUP BY 1") == [
        ("android_logcat", 1),
        ("systemd_journald", 2),
    ]
    assert db.rows("SELECT tag, msg FROM android_logs") == [("t", "m")]
    assert stats(db, "systemd_journal_num_total") == [(None, 42)]


def test_ufs_commands_clock_gating_and_cros_ec_sensors(tmp_path):
    def ufs(ts: int, str_t: int, tag: int, doorbell: int = 0, **fields) -> pb.FtraceEvent:
        command = pb.UfshcdCommandFtraceEvent(str_t=str_t, tag=tag, doorbell=doorbell, **fields)
        return pb.FtraceEvent(timestamp=ts, pid=1, ufshcd_command=command)

    sensor = pb.CrosEcSensorhubDataFtraceEvent(
        ec_sensor_num=2, current_time=500, current_timestamp=300, fifo_timestamp=350
    )
    db = ingest_packets(
        tmp_path,
        [
            ftrace(
                0,
                ufs(1000, 0, 3, opcode=40),  # READ (10), nothing else queued
                ufs(1100, 0, 17, doorbell=0b1000_1000, opcode=42, group_id=22),
                ufs(1800, 1, 3, doorbell=0b1000_0000),
                ufs(1900, 1, 17),  # the last one done
                pb.FtraceEvent(timestamp=2000, pid=1, ufshcd_clk_gating=pb.UfshcdClkGatingFtraceEvent(state=2)),
                pb.FtraceEvent(timestamp=2100, pid=1, cros_ec_sensorhub_data=sensor),
            )
        ],
    )
    assert db.rows(
        "SELECT t.name, c.ts, c.value FROM counter c JOIN counter_track t ON c.track_id = t.id ORDER BY c.ts"
    ) == [
        ("io.ufs.command.count", 1000, 1.0),
        ("io.ufs.command.count", 1100, 2.0),
        ("io.ufs.command.count", 1800, 1.0),
        ("io.ufs.command.count", 1900, 0.0),
        ("io.ufs.clkgating (OFF:0/REQ_OFF/REQ_ON/ON:3)", 2000, 1.0),
        ("cros_ec.cros_ec_sensorhub_data.2", 2100, 200.0),
    ]
    assert db.rows(
        "SELECT s.name, s.ts, s.dur, t.name FROM slice s JOIN track t ON s.track_id = t.id ORDER BY s.ts"
    ) == [
        ("READ (10)", 1000, 800, "io.ufs.command.tag[003]"),
        ("WRITE (10) (GID=0x16)", 1100, 800, "io.ufs.command.tag[017]"),
    ]
    assert db.rows(
        "SELECT extract_arg(arg_set_id, 'ec_num'), extract_arg(arg_set_id, 'ec_delta'), "
        "extract_arg(arg_set_id, 'sample_ts') FROM counter WHERE arg_set_id IS NOT NULL"
    ) == [(2, 50, 300)]


def test_f2fs_io_statistics_are_counters_per_device(tmp_path):
    dev = (254 << 8) | 32
    db = ingest_packets(
        tmp_path,
        [
            ftrace(
                0,
                pb.FtraceEvent(
                    timestamp=100, pid=1, f2fs_iostat=pb.F2fsIostatFtraceEvent(dev=dev, app_brio=7, fs_discard=1)
                ),
                pb.FtraceEvent(
                    timestamp=200, pid=1, f2fs_iostat_latency=pb.F2fsIostatLatencyFtraceEvent(dev=dev, d_rd_cnt=143)
                ),
            )
        ],
    )
    names = dict(db.rows("SELECT t.name, c.value FROM counter c JOIN counter_track t ON c.track_id = t.id"))
    assert len(names) == 22 + 27  # every figure, zeros included
    assert names["f2fs_iostat.[254:32].read_app_buffered"] == 7
    assert names["f2fs_iostat.[254:32].other_fs_discard"] == 1
    assert names["f2fs_iostat_latency.[254:32].read_data_cnt"] == 143
    assert names["f2fs_iostat_latency.[254:32].write_async_meta_peak"] == 0


def test_damaged_journald_and_kernel_payloads_are_counted_and_the_rest_imported(tmp_path):
    def field(number: int, payload: bytes) -> bytes:
        return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload

    garbage = b"\x0a\xff\xff"  # a length running past its end
    good = pb.TracePacket(
        timestamp=1000, trusted_packet_sequence_id=2, journald_event=pb.SystemdJournaldEvent(pid=1, message="ok")
    )
    bad_journald = encode_varint(8 << 3) + encode_varint(2000) + field(132, garbage)  # timestamp, journald_event
    retired = pb.FtraceEvent.DESCRIPTOR.fields_by_name["kgsl_adreno_cmdbatch_retired"].number
    event = encode_varint(1 << 3) + encode_varint(3000) + field(retired, garbage)  # timestamp, payload
    bad_ftrace = field(1, encode_varint(1 << 3) + encode_varint(0) + field(2, event))  # ftrace_events: cpu, event
    db = ingest_packets(tmp_path, [good], raw=field(1, bad_journald) + field(1, bad_ftrace))
    assert db.rows("SELECT msg FROM logs") == [("ok",)]
    assert stats(db, "proto_packet_parse_errors") == [(None, 2)]


def test_cfs_utilisation_per_cpu(tmp_path):
    ev = pb.FtraceEvent(
        timestamp=100,
        pid=1,
        sched_cpu_util_cfs=pb.SchedCpuUtilCfsFtraceEvent(cpu=3, cpu_util=40, capacity=900, nr_running=2),
    )
    db = ingest_packets(tmp_path, [ftrace(0, ev)])
    assert db.rows(
        "SELECT t.name, t.type, c.ts, c.value, extract_arg(t.dimension_arg_set_id, 'cpu') FROM counter c "
        "JOIN track t ON c.track_id = t.id ORDER BY t.id"
    ) == [
        ("Cpu 3 Util", "cpu_utilization", 100, 40.0, 3),
        ("Cpu 3 Cap", "cpu_capacity", 100, 900.0, 3),
        ("Cpu 3 Nr Running", "cpu_nr_running", 100, 2.0, 3),
    ]


def test_kernel_events_before_tracing_started_are_dropped(tmp_path):
    db = ingest_packets(
        tmp_path,
        [
            pb.TracePacket(
                timestamp=100, trusted_packet_sequence_id=1, service_event=pb.TracingServiceEvent(tracing_started=True)
            ),
            ftrace(0, switch(50, 1, 2), switch(60, 2, 1), switch(80, 1, 0)),
            ftrace(2, switch(80, 0, 1), switch(90, 1, 2), switch(100, 2, 1), switch(110, 1, 2)),
        ],
    )
    assert db.rows("SELECT s.ts, s.dur, t.tid FROM sched s JOIN thread t USING (utid) ORDER BY s.ts") == [
        (100, 10, 1),
        (110, -1, 2),
    ]
    assert stats(db, "ftrace_packet_before_tracing_start") == [(None, 5)]


def test_soft_drop_until_every_cpu_has_complete_data(tmp_path):
    # cpu 1's data is only complete from 150: earlier events make their task known, no rows.
    db = ingest_packets(
        tmp_path,
        [
            ftrace(0, switch(100, 1, 2), switch(200, 2, 1), previous_bundle_end_timestamp=50),
            ftrace(1, switch(120, 3, 4), switch(210, 4, 3), previous_bundle_end_timestamp=150),
        ],
    )
    assert db.rows("SELECT s.ts, t.tid FROM sched s JOIN thread t USING (utid) ORDER BY s.ts") == [(200, 1), (210, 3)]
    assert stats(db, "ftrace_packet_before_tracing_start") == [(None, 0)]


def test_damaged_sys_stats_key_is_no_crash(tmp_path):
    def varint(v: int) -> bytes:
        out = bytearray()
        while v >= 0x80:
            out.append(v & 0x7F | 0x80)
            v >>= 7
        return bytes(out + bytes([v]))

    def field(number: int, payload: bytes) -> bytes:
        return varint(number << 3 | 2) + varint(len(payload)) + payload

    # A MeminfoValue whose enum key was written as bytes instead of a varint.
    meminfo = field(1, b"\x01") + varint(2 << 3) + varint(100)
    packet = varint(8 << 3) + varint(1000) + field(pb.TracePacket.SYS_STATS_FIELD_NUMBER, field(1, meminfo))
    good = pb.TracePacket(timestamp=2000, sys_stats=pb.SysStats(meminfo=[pb.SysStats.MeminfoValue(key=1, value=5)]))
    db = ingest_packets(tmp_path, [good], raw=field(1, packet))
    assert db.rows(
        "SELECT t.name, c.ts, c.value FROM counter c JOIN counter_track t ON c.track_id = t.id ORDER BY c.ts"
    ) == [
        ("MemUnspecified", 1000, 102400.0),  # the damaged key reads as absent (0)
        ("MemTotal", 2000, 5120.0),
    ]
