"""Power data sources (importers/proto/power.py): power rails, battery counters, energy
breakdowns, entity state residency, system properties, kernel wakelocks and the power ftrace
events, checked against what trace_processor's AndroidProbesParser / FtraceParser produce."""

from __future__ import annotations

import pytest
from conftest import FunctionsDB, TraceDB, ingest_built

from datasette_perfetto.importers.proto.clock_tracker import remote_clock_offsets
from datasette_perfetto.importers.proto.power import callback_phase, friendly_rail_name
from datasette_perfetto.trace_builder import TraceBuilder


def counters(db: TraceDB, where: str = "1") -> list[tuple]:
    """(track name, ts, value) of matching counters, in track then time order."""
    return db.rows(f"""SELECT t.name, c.ts, c.value FROM counter c JOIN track t ON c.track_id = t.id
                       WHERE {where} ORDER BY t.id, c.ts, c.id""")


def slices(db: TraceDB, track_where: str) -> list[tuple]:
    """(ts, dur, name, depth, track's compressor index) of slices on matching tracks."""
    return db.rows(f"""SELECT s.ts, s.dur, s.name, s.depth, extract_arg(t.dimension_arg_set_id, 'track_compressor_idx')
                       FROM slice s JOIN track t ON s.track_id = t.id WHERE {track_where} ORDER BY s.ts, s.id""")


def ftrace_event(ts: int, pid: int = 1, **event) -> dict:
    return {"timestamp": ts, "pid": pid, **event}


# -- power rails ---------------------------------------------------------------------------------


def rails(*descriptors, session=None, energy=()) -> dict:
    fields: dict = {"rail_descriptor": [dict(index=i, rail_name=n, **extra) for i, n, extra in descriptors]}
    if session is not None:
        fields["session_uuid"] = session
    fields["energy_data"] = [dict(e) for e in energy]
    return fields


@pytest.fixture
def rails_db(tmp_path):
    b = TraceBuilder()
    b.packet(power_rails=rails((4, "S3M_VDD_CPUCL1", {"subsys_name": "cpu"}), (7, "L14S_ALIVE", {})))
    b.packet(power_rails=rails((999, "HUGE_INDEX", {})))  # implausible index: skipped
    b.packet(
        timestamp=3_000_005,
        power_rails=rails(
            energy=[
                {"index": 4, "timestamp_ms": 5, "energy": 666},
                {"index": 7, "energy": 999},  # no timestamp_ms: the packet's
                {"index": 4, "timestamp_ms": 3, "energy": 111},  # earlier than the packet: sorted
                {"index": 5, "timestamp_ms": 4, "energy": 1},  # no descriptor
                {"index": 999, "timestamp_ms": 4, "energy": 1},
            ]
        ),
    )
    return ingest_built(tmp_path, b, FunctionsDB)


def test_power_rail_tracks_are_named_dimensioned_and_described(rails_db):
    rows = rails_db.rows("""SELECT name, type, extract_arg(dimension_arg_set_id, 'name'),
                                   extract_arg(dimension_arg_set_id, 'session_uuid'),
                                   extract_arg(source_arg_set_id, 'raw_name'),
                                   extract_arg(source_arg_set_id, 'subsystem_name'), event_type
                            FROM track WHERE type = 'power_rails' ORDER BY id""")
    assert rows == [
        ("power.rails.cpu.mid", "power_rails", "S3M_VDD_CPUCL1", 0, "S3M_VDD_CPUCL1", "cpu", "counter"),
        ("power.L14S_ALIVE_uws", "power_rails", "L14S_ALIVE", 0, "L14S_ALIVE", None, "counter"),
    ]


def test_power_rail_samples_are_sorted_on_their_own_timestamps(rails_db):
    rows = rails_db.rows("""SELECT t.name, c.ts, c.value, extract_arg(c.arg_set_id, 'packet_ts')
                            FROM counter c JOIN track t ON c.track_id = t.id ORDER BY c.ts, c.id""")
    assert rows == [
        ("power.rails.cpu.mid", 3_000_000, 111.0, 3_000_005),
        ("power.L14S_ALIVE_uws", 3_000_005, 999.0, 3_000_005),
        ("power.rails.cpu.mid", 5_000_000, 666.0, 3_000_005),
    ]
    # Unknown indices (never described, or described with an implausible index) are counted.
    assert rails_db.stat("power_rail_unknown_index") == 2
    # Descriptor-only packets count as packets without energy data.
    assert rails_db.stat("power_rail_empty_packet") == 2


def test_power_rails_of_two_sessions_keep_their_own_indices(tmp_path):
    b = TraceBuilder()
    b.packet(power_rails=rails((0, "RAIL", {}), session=100))
    b.packet(power_rails=rails((0, "RAIL", {}), (1, "OTHER", {}), session=200))
    b.packet(timestamp=1_000_000, power_rails=rails(session=100, energy=[{"index": 0, "energy": 1}]))
    b.packet(timestamp=2_000_000, power_rails=rails(session=200, energy=[{"index": 0, "energy": 2}]))
    b.packet(timestamp=3_000_000, power_rails=rails(session=100, energy=[{"index": 1, "energy": 3}]))
    db = ingest_built(tmp_path, b, FunctionsDB)
    rows = db.rows("""SELECT t.name, extract_arg(t.dimension_arg_set_id, 'session_uuid'), c.ts, c.value
                      FROM counter c JOIN track t ON c.track_id = t.id ORDER BY c.ts""")
    assert rows == [("power.RAIL_uws", 100, 1_000_000, 1.0), ("power.RAIL_uws", 200, 2_000_000, 2.0)]
    assert db.stat("power_rail_unknown_index") == 1  # index 1 exists in session 200 only


def test_friendly_rail_names_match_in_order():
    assert friendly_rail_name("S4M_VDD_CPUCL0") == "cpu.little"
    assert friendly_rail_name("S4M_VDD_CPUCL0_M") == "cpu.little.mem"
    assert friendly_rail_name("VSYS_PWR_DISPLAY") == "display"
    assert friendly_rail_name("S2S_VDD_G3D_L2") == "gpu.l2"
    assert friendly_rail_name("S10S_VDD2L_MEM") == "ddr.b"
    assert friendly_rail_name("PPVAR_VPH_PWR_OLED") is None


def test_power_rails_of_another_machine_follow_its_clock_sync(tmp_path):
    b = TraceBuilder()
    b.packet(power_rails=rails((0, "RAIL", {})))
    b.packet(timestamp=1_000_000, power_rails=rails(energy=[{"index": 0, "energy": 1}]))
    sync_round = {
        "client_clocks": {"clocks": [{"clock_id": 6, "timestamp": 10_000}]},
        "host_clocks": {"clocks": [{"clock_id": 6, "timestamp": 1_000_000}]},
    }
    b.packet(machine_id=7, remote_clock_sync={"synced_clocks": [sync_round, sync_round]})
    b.packet(machine_id=7, power_rails=rails((0, "RAIL", {})))
    b.packet(machine_id=7, timestamp=2_000_000, power_rails=rails(energy=[{"index": 0, "energy": 2}]))
    b.packet(
        machine_id=7, timestamp=2_000_000, power_rails=rails(energy=[{"index": 0, "timestamp_ms": 4, "energy": 4}])
    )
    db = ingest_built(tmp_path, b)
    rows = db.rows("""SELECT t.machine_id, c.ts, c.value FROM counter c JOIN track t ON c.track_id = t.id
                      ORDER BY t.machine_id, c.ts""")
    # The machine's clocks read 990 us less than the host's.
    assert rows == [(0, 1_000_000, 1.0), (1, 2_990_000, 2.0), (1, 4_990_000, 4.0)]


def test_remote_clock_offsets_average_both_round_trips():
    # client = host + offset; rounds: (host, client) per clock.
    rounds = [{6: (1000, 510), 3: (400, 0)}, {6: (1100, 620)}, {6: (2000, 1400)}]
    offsets = remote_clock_offsets(rounds)
    # Rounds 1-2: (510+620)/2 - 1000 = -435 and 620 - (1000+1100)/2 = -430; rounds 2-3: -90 and
    # -150. Their mean, truncated: -276.
    assert offsets == {6: (2000, -276)}  # clock 3 was not seen in both snapshots of a round
    # Two snapshots 30 s or more apart belong to different rounds.
    far = [{6: (1, 1)}, {6: (2, 30_000_000_001)}]
    assert remote_clock_offsets(far) == {}


# -- battery counters ------------------------------------------------------------------------------


def test_battery_counters_of_each_battery(tmp_path):
    b = TraceBuilder()
    b.packet(
        timestamp=10,
        battery=dict(
            charge_counter_uah=3000, capacity_percent=55.5, current_ua=-510000, current_avg_ua=-2, voltage_uv=12000000
        ),
    )
    b.packet(
        timestamp=20, battery=dict(name="BAT1", capacity_percent=90, energy_counter_uwh=56680000, voltage_uv=17356000)
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert counters(db) == [
        ("batt.charge_uah", 10, 3000.0),
        ("batt.capacity_pct", 10, 55.5),
        ("batt.current_ua", 10, -510000.0),
        ("batt.current.avg_ua", 10, -2.0),
        ("batt.voltage_uv", 10, 12000000.0),
        ("batt.power_mw", 10, 6120.0),  # |current * voltage| in mW, never negative
        ("batt.BAT1.charge_uah", 20, 3265729.0),  # energy / voltage, truncated
        ("batt.BAT1.capacity_pct", 20, 90.0),
        ("batt.BAT1.voltage_uv", 20, 17356000.0),
    ]
    dims = db.rows("""SELECT extract_arg(dimension_arg_set_id, 'battery_name'),
                             extract_arg(dimension_arg_set_id, 'counter_name'), type
                      FROM track WHERE name = 'batt.BAT1.charge_uah'""")
    assert dims == [("BAT1", "charge_uah", "battery_counter")]


def test_battery_charge_needs_a_positive_voltage(tmp_path):
    b = TraceBuilder()
    b.packet(timestamp=10, battery=dict(energy_counter_uwh=100, voltage_uv=0))
    b.packet(timestamp=20, battery=dict(energy_counter_uwh=100))  # no voltage: no charge track at all
    db = ingest_built(tmp_path, b)
    # The charge track is made before the voltage is checked; it stays empty.
    assert db.rows("SELECT name FROM track ORDER BY id") == [("batt.charge_uah",), ("batt.voltage_uv",)]
    assert counters(db) == [("batt.voltage_uv", 10, 0.0)]


def test_battery_power_truncates_toward_zero(tmp_path):
    b = TraceBuilder()
    b.packet(timestamp=10, battery=dict(current_ua=710000, voltage_uv=11900000))
    b.packet(timestamp=20, battery=dict(current_ua=-1999, voltage_uv=1000000))  # -1.999 mW -> 1
    db = ingest_built(tmp_path, b)
    assert counters(db, "t.name = 'batt.power_mw'") == [("batt.power_mw", 10, 8449.0), ("batt.power_mw", 20, 1.0)]


# -- energy estimation breakdown -----------------------------------------------------------------


@pytest.fixture
def energy_db(tmp_path):
    b = TraceBuilder()
    consumers = [
        dict(energy_consumer_id=0, ordinal=0, type="CPU_CLUSTER", name="CPUCL0"),
        dict(energy_consumer_id=3, ordinal=1, type="GPU", name="GPU"),
        dict(ordinal=2, type="X", name="no id"),  # invalid
    ]
    b.packet(
        android_energy_estimation_breakdown=dict(
            energy_consumer_descriptor=dict(energy_consumers=consumers),
            energy_consumer_id=0,  # a descriptor packet is only that: not read
            energy_uws=123,
        )
    )
    # A repeated descriptor does not replace the first.
    repeated = dict(energy_consumers=[dict(energy_consumer_id=0, type="OTHER", name="renamed")])
    b.packet(android_energy_estimation_breakdown=dict(energy_consumer_descriptor=repeated))
    b.packet(timestamp=100, android_energy_estimation_breakdown=dict(energy_consumer_id=0, energy_uws=98567522))
    b.packet(
        timestamp=200,
        android_energy_estimation_breakdown=dict(
            energy_consumer_id=3,
            energy_uws=500,
            per_uid_breakdown=[dict(uid=10234, energy_uws=300), dict(uid=10190, energy_uws=200), dict(uid=1)],
        ),
    )
    b.packet(timestamp=300, android_energy_estimation_breakdown=dict(energy_consumer_id=9, energy_uws=1))  # unknown
    b.packet(timestamp=400, android_energy_estimation_breakdown=dict(energy_consumer_id=0))  # no energy
    return ingest_built(tmp_path, b, FunctionsDB)


def test_energy_breakdown_tracks(energy_db):
    rows = energy_db.rows("""SELECT type, name, extract_arg(dimension_arg_set_id, 'energy_consumer_id'),
                                    extract_arg(dimension_arg_set_id, 'uid'),
                                    extract_arg(source_arg_set_id, 'consumer_type'),
                                    extract_arg(source_arg_set_id, 'ordinal')
                             FROM track ORDER BY id""")
    assert rows == [
        ("android_energy_estimation_breakdown", "CPUCL0", 0, None, "CPU_CLUSTER", 0),
        ("android_energy_estimation_breakdown", "GPU", 3, None, "GPU", 1),
        ("android_energy_estimation_breakdown_per_uid", "GPU", 3, 10234, None, None),
        ("android_energy_estimation_breakdown_per_uid", "GPU", 3, 10190, None, None),
    ]


def test_energy_breakdown_values_and_stats(energy_db):
    assert energy_db.rows("SELECT ts, value FROM counter ORDER BY ts, id") == [
        (100, 98567522.0),
        (200, 500.0),
        (200, 300.0),
        (200, 200.0),
    ]
    assert energy_db.stat("energy_descriptor_invalid") == 1
    assert energy_db.stat("energy_breakdown_missing_values") == 2  # unknown consumer, no energy
    assert energy_db.stat("energy_uid_breakdown_missing_values") == 1


# -- entity state residency ------------------------------------------------------------------------


def test_entity_state_residency(tmp_path):
    b = TraceBuilder()
    states = [
        dict(entity_index=0, state_index=0, entity_name="Bluetooth", state_name="Idle"),
        dict(entity_index=0, state_index=1, entity_name="Bluetooth", state_name="Active"),
        dict(entity_index=0, state_index=1, entity_name="Ignored", state_name="Repeat"),  # first one wins
        dict(entity_index=1, entity_name="No state index"),  # invalid
    ]
    b.packet(entity_state_residency=dict(power_entity_state=states))
    residency = [
        dict(entity_index=0, state_index=1, total_time_in_state_ms=2000),
        dict(entity_index=0, state_index=0, total_time_in_state_ms=1000),
    ]
    b.packet(timestamp=1, entity_state_residency=dict(residency=residency))
    # An unknown entity state drops the rest of its packet.
    unknown = [
        dict(entity_index=0, state_index=0, total_time_in_state_ms=3000),
        dict(entity_index=5, state_index=5),
        dict(entity_index=0, state_index=1, total_time_in_state_ms=4000),
    ]
    b.packet(timestamp=2, entity_state_residency=dict(residency=unknown))
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert counters(db) == [
        ("Entity residency: Bluetooth is Active", 1, 2000.0),
        ("Entity residency: Bluetooth is Idle", 1, 1000.0),
        ("Entity residency: Bluetooth is Idle", 2, 3000.0),
    ]
    assert db.rows("""SELECT DISTINCT type, extract_arg(dimension_arg_set_id, 'entity_name'),
                             extract_arg(dimension_arg_set_id, 'state_name') FROM track ORDER BY id""") == [
        ("entity_state", "Bluetooth", "Active"),
        ("entity_state", "Bluetooth", "Idle"),
    ]
    assert db.stat("energy_descriptor_invalid") == 1
    assert db.stat("entity_state_residency_lookup_failed") == 1
    assert db.stat("entity_state_residency_invalid") == 1  # the descriptor-only packet has no residency


# -- system properties and display state -----------------------------------------------------------


def test_system_properties(tmp_path):
    b = TraceBuilder()

    def props(ts, **values):
        b.packet(
            timestamp=ts,
            android_system_property=dict(values=[dict(name=f"debug.tracing.{k}", value=v) for k, v in values.items()]),
        )

    props(10, screen_state="2", mcc="310", plug_type="1", battery_status="3", device_state="FOLDED")
    b.packet(
        timestamp=20,
        android_system_property=dict(
            values=[
                dict(name="debug.tracing.battery_stats.audio", value="1"),
                dict(name="debug.tracing.profile_boot_classpath", value="1"),
                dict(name="debug.tracing.screen_state", value="on"),  # not a number
                dict(name="debug.tracing.unknown", value="5"),
            ]
        ),
    )
    b.packet(timestamp=30, initial_display_state=dict(display_state=1))
    b.ftrace(0, ftrace_event(40, 1000, print={"buf": "C|1000|battery_stats.audio|0"}))
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("""SELECT t.type, t.name, extract_arg(t.dimension_arg_set_id, 'sysprop_name'), c.ts, c.value
                      FROM counter c JOIN track t ON c.track_id = t.id ORDER BY t.id, c.ts""") == [
        ("screen_state", "ScreenState", None, 10, 2.0),
        ("screen_state", "ScreenState", None, 30, 1.0),
        ("sysprop_counter", "mcc", "debug.tracing.mcc", 10, 310.0),
        ("sysprop_counter", "PlugType", "debug.tracing.plug_type", 10, 1.0),
        ("sysprop_counter", "BatteryStatus", "debug.tracing.battery_status", 10, 3.0),
        ("battery_stats", "battery_stats.audio", None, 20, 1.0),
        ("battery_stats", "battery_stats.audio", None, 40, 0.0),  # atrace's counter: the same track
    ]
    assert slices(db, "t.type = 'android_device_state'") == [(10, 0, "FOLDED", 0, None)]
    assert db.rows("SELECT name FROM track WHERE type = 'android_device_state'") == [("DeviceStateChanged",)]
    assert db.rows("SELECT int_value FROM metadata WHERE name = 'android_profile_boot_classpath'") == [(1,)]


# -- ftrace: wakeup sources --------------------------------------------------------------------------


def test_wakeup_sources_nest_into_one_slice(tmp_path):
    b = TraceBuilder()
    long_name = "a_very_long_wakeup_source_name"

    def act(ts, name):
        return ftrace_event(ts, wakeup_source_activate={"name": name})

    def deact(ts, name):
        return ftrace_event(ts, wakeup_source_deactivate={"name": name})

    b.ftrace(
        0,
        act(10, "keys"),
        act(12, "keys"),
        act(15, long_name),
        deact(20, "keys"),
        deact(25, "keys"),
        deact(26, "keys"),
        act(30, "keys"),
        deact(40, long_name),
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("""SELECT s.ts, s.dur, s.name, t.name, extract_arg(t.dimension_arg_set_id, 'wakelock_event')
                      FROM slice s JOIN track t ON s.track_id = t.id ORDER BY s.ts""") == [
        (10, 15, "Wakelock(keys)", "Wakelock(keys)", "keys"),
        # Names longer than trace_processor's 32-byte buffer are cut.
        (15, 25, "Wakelock(a_very_long_wakeup_sou", "Wakelock(a_very_long_wakeup_sou", long_name),
        (30, -1, "Wakelock(keys)", "Wakelock(keys)", "keys"),  # an extra deactivate does not go negative
    ]


# -- ftrace: suspend / resume ------------------------------------------------------------------------


def suspend(ts, action, val, start, cpu_pid=7):
    return ftrace_event(ts, cpu_pid, suspend_resume={"action": action, "val": val, "start": start})


def test_suspend_resume_slices(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        1,
        suspend(100, "suspend_enter", 3, 1),
        suspend(120, "freeze_processes", 0, 1),
        suspend(125, "thaw_processes", 0, 1),
        # thaw_processes ending inside freeze_processes: suspend_prepare() failed, and the kernel
        # never ends suspend_enter; it ends here.
        suspend(129, "thaw_processes", 0, 0),
        suspend(130, "freeze_processes", 0, 0),
        suspend(150, "suspend_enter", 3, 1),
        suspend(200, "suspend_enter", 3, 0),
        suspend(500, "timekeeping_freeze", 4, 1),  # the value (a cpu) differs between the ends
        suspend(600, "timekeeping_freeze", 1, 0),
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert slices(db, "t.name = 'Suspend/Resume Latency'") == [
        (100, 29, "suspend_enter(3)", 0, 0),
        (120, 10, "freeze_processes(0)", 0, 1),
        (125, 4, "thaw_processes(0)", 0, 2),
        (150, 50, "suspend_enter(3)", 0, 0),
        (500, 100, "timekeeping_freeze(0)", 0, 0),
    ]
    args = db.rows("""SELECT extract_arg(arg_set_id, 'utid') IS NOT NULL, extract_arg(arg_set_id, 'event_type'),
                             extract_arg(arg_set_id, 'cpu'), extract_arg(arg_set_id, 'device_name')
                      FROM slice WHERE ts = 100""")
    assert args == [(1, "Main Kernel Suspend Event", 1, None)]
    assert db.rows(
        "SELECT DISTINCT type, track_group_id IS NOT NULL FROM track WHERE name = 'Suspend/Resume Latency'"
    ) == [("suspend_resume", 1)]


def test_device_pm_callbacks_share_the_suspend_resume_tracks(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        suspend(100, "dpm_suspend", 2, 1),
        ftrace_event(110, device_pm_callback_start={"device": "dev", "driver": "drv", "pm_ops": "late", "event": 2}),
        ftrace_event(120, device_pm_callback_end={"device": "dev", "driver": "drv"}),
        ftrace_event(130, device_pm_callback_start={"device": "usb", "driver": "hub", "event": 0x10}),
        ftrace_event(140, device_pm_callback_end={"device": "usb", "driver": "hub"}),
        suspend(150, "dpm_suspend", 2, 0),
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert slices(db, "t.type = 'suspend_resume'") == [
        (100, 50, "dpm_suspend(2)", 0, 0),
        (110, 10, "dev drv", 0, 1),
        (130, 10, "usb hub", 0, 1),
    ]
    assert db.rows("""SELECT extract_arg(arg_set_id, 'event_type'), extract_arg(arg_set_id, 'device_name'),
                             extract_arg(arg_set_id, 'driver_name'), extract_arg(arg_set_id, 'callback_phase')
                      FROM slice WHERE ts IN (110, 130) ORDER BY ts""") == [
        ("Device PM Suspend Event", "dev", "drv", "suspend:late"),
        ("Device PM Suspend Event", "usb", "hub", "resume:complete"),
    ]


def test_callback_phase_names():
    assert callback_phase("", "suspend") == "suspend:prepare"
    assert callback_phase("", "freeze") == "freeze"
    assert callback_phase("noirq power domain", "resume") == "resume:noirq"
    assert callback_phase("bus", "thaw") == "thaw"


def test_suspend_resume_minimal_and_runtime_pm(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        ftrace_event(10, suspend_resume_minimal={"start": 1}),
        ftrace_event(20, suspend_resume_minimal={"start": 0}),
        ftrace_event(30, rpm_status={"name": "ufs", "status": 1}),  # resuming
        ftrace_event(35, rpm_status={"name": "ufs", "status": 0}),  # active
        ftrace_event(50, rpm_status={"name": "ufs", "status": 2}),  # suspended: no slice
        ftrace_event(60, rpm_status={"name": "ufs", "status": 7}),  # unknown
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("""SELECT t.type, t.name, s.ts, s.dur, s.name FROM slice s JOIN track t ON s.track_id = t.id
                      ORDER BY s.ts""") == [
        ("suspend_resume_minimal", "Suspend/Resume Minimal", 10, 10, "Suspended"),
        ("linux_rpm", None, 30, 5, "Resuming"),
        ("linux_rpm", None, 35, 15, "Active"),
        ("linux_rpm", None, 60, -1, "Invalid State"),
    ]


# -- kernel wakelocks --------------------------------------------------------------------------------


def test_kernel_wakelocks_running_totals(tmp_path):
    b = TraceBuilder()

    def data(ts, ids, held, flags=0, wakelocks=(), seq_flags=2):
        b.packet(
            timestamp=ts,
            trusted_packet_sequence_id=2,
            sequence_flags=seq_flags,
            kernel_wakelock_data=dict(
                wakelock=[dict(wakelock_id=i, wakelock_name=n, wakelock_type=t) for i, n, t in wakelocks],
                wakelock_id=ids,
                time_held_millis=held,
                error_flags=flags,
            ),
        )

    data(100, [1, 2], [10, 20], wakelocks=[(1, "k1", 1), (2, "n2", 2), (2, "dup", 1)], seq_flags=3)
    data(200, [1, 2], [5, 0])
    data(300, [1, 2, 9], [0, 0, 1], flags=1 | 4)
    data(400, [1, 2], [1, 0])
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("""SELECT t.name, t.counter_unit, extract_arg(t.dimension_arg_set_id, 'wakelock_type'), c.ts, c.value
                      FROM counter c JOIN track t ON c.track_id = t.id ORDER BY t.id, c.ts""") == [
        ("k1", "ms", "kernel", 100, 10e6),
        ("k1", "ms", "kernel", 200, 15e6),
        ("k1", "ms", "kernel", 300, 15e6),  # the last repeat is kept when the value changes again
        ("k1", "ms", "kernel", 400, 16e6),
        ("n2", "ms", "native", 100, 20e6),  # then unchanged: repeats are left out
    ]
    assert db.stat("kernel_wakelock_reused_id") == 1
    assert db.stat("kernel_wakelock_unknown_id") == 1
    assert db.stat("kernel_wakelock_zero_value_reported") == 1
    assert db.stat("kernel_wakelock_implausibly_large_value_reported") == 1
    assert db.stat("kernel_wakelock_non_monotonic_value_reported") == 0
