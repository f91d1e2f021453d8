"""Power data sources → counter tracks and slices, as trace_processor's AndroidProbesParser
(and the power part of its FtraceParser) makes them.

- `power_rails`: rail descriptors (per `session_uuid`, read while tokenizing, in file
  order) → one `power_rails` counter track per rail, named `power.rails.<friendly>` for
  the well-known rails, else `power.<raw name>_uws`; each energy sample is sorted on its
  own timestamp (`timestamp_ms`, BOOTTIME) and carries its packet's `packet_ts` arg.
- `battery` (BatteryCounters, from the Android or linux sysfs probes) → `batt[.name].*`.
- `android_energy_estimation_breakdown`: consumer descriptors (tokenize time), then
  per-consumer and per-uid energy counters.
- `entity_state_residency`: descriptors (tokenize time), then per entity-state counters.
- `android_system_property` / `initial_display_state`: battery stats, screen state,
  device state slices and the few other properties trace_processor keeps.
- ftrace: wakeup sources (`Wakelock(...)` slices), suspend/resume and device PM callbacks
  (the "Suspend/Resume Latency" track set), minimal suspend slices, runtime PM status.
- `kernel_wakelock_data`: time held per kernel/native wakelock → `android_kernel_wakelock`
  counters (running totals, repeated values left out).
"""

from __future__ import annotations

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ...model import TraceContext
from ...trackers.async_track_set import AsyncTrackSet, CompressedTrackSets
from ..common.event_kinds import EV_PACKET
from ..common.values import c_div, signed, text
from .atrace import c_int32
from .clock_tracker import BOOTTIME
from .packet_handlers import HandlerContext, ftrace_handler, packet_handler, tokenize_handler

INT64_MASK = (1 << 64) - 1


def _int64(v: int) -> int:
    """v wrapped to int64, as C++ arithmetic on int64_t leaves it."""
    return signed(v & INT64_MASK)


def _stack_string(s: str, size: int) -> str:
    """trace_processor's StackString<size>: snprintf keeps at most size - 1 bytes."""
    raw = s.encode("utf-8", "surrogateescape")
    if len(raw) < size:
        return s
    return raw[: size - 1].decode("utf-8", "ignore")


def _opt_text(msg, field: str) -> str | None:
    """A string field, None when absent (trace_processor's null string)."""
    return text(getattr(msg, field)) if msg.HasField(field) else None


class PowerState:
    """What the tokenize-time descriptors leave for the parse phase (trace_processor's
    AndroidProbesTracker), plus the parse-time state of the ftrace power events."""

    def __init__(self) -> None:
        self.rail_tracks: dict[int, dict[int, int]] = {}  # session_uuid -> rail index -> track
        self.consumers: dict[int, tuple[str | None, str | None, int]] = {}  # id -> (name, type, ordinal)
        # (entity index, state index) -> (entity name, state name, track name)
        self.entity_states: dict[tuple[int, int], tuple[str, str, str]] = {}
        self.wakelocks: dict[str, int] = {}  # wakeup source name -> activations not yet deactivated
        self.suspend_tracks: AsyncTrackSet | None = None
        self.suspend_state = SUSPEND_INITIAL
        self.suspend_enter_cookie: str | None = None
        self.rpm_active: set[int] = set()  # linux_rpm tracks with an open slice
        self.sparse: SparseCounters | None = None  # kernel wakelock totals


def _state(parser: HandlerContext) -> PowerState:
    return parser.state("power", PowerState)


# -- power rails -------------------------------------------------------------------------

# Raw rail name suffix -> friendly name, tried in this order (the first match wins).
FRIENDLY_RAIL_NAMES = (
    ("M_VDD_CPUCL0", "cpu.little"),
    ("M_VDD_CPUCL0_M", "cpu.little.mem"),
    ("M_VDD_CPUCL1", "cpu.mid"),
    ("M_VDD_CPUCL1_M", "cpu.mid.mem"),
    ("M_VDD_CPUCL2", "cpu.big"),
    ("M_VDD_INT", "system.fabric"),
    ("M_VDD_TPU", "tpu"),
    ("VSYS_PWR_DISP", "display"),
    ("VSYS_PWR_DISPLAY", "display"),
    ("M_DISP", "ldo.main.a.display"),
    ("VSYS_PWR_MODEM", "modem"),
    ("M_VDD_MIF", "memory.interface"),
    ("VSYS_PWR_WLAN_BT", "wifi.bt"),
    ("VSYS_PWR_MMWAVE", "mmwave"),
    ("S_VDD_AOC_RET", "aoc.memory"),
    ("S_VDD_AOC", "aoc.logic"),
    ("S_VDDQ_MEM", "ddr.a"),
    ("S_VDD2L", "ddr.b"),
    ("S_VDD2L_MEM", "ddr.b"),
    ("S_VDD2H_MEM", "ddr.c"),
    ("S_VDD_G3D", "gpu"),
    ("S_VDD_G3D_L2", "gpu.l2"),
    ("S_GNSS_CORE", "gps"),
    ("VSYS_PWR_RFFE", "radio.frontend"),
    ("VSYS_PWR_CAMERA", "camera"),
    ("S_VDD_CAM", "multimedia"),
    ("S_UDFPS", "udfps"),
    ("S_PLL_MIPI_UFS", "ufs"),
    ("M_LLDO1", "ldo.main.a"),
    ("M_LLDO2", "ldo.main.b"),
    ("S_LLDO1", "ldo.sub"),
)
MAX_RAIL_INDEX = 256


def friendly_rail_name(raw: str) -> str | None:
    for suffix, friendly in FRIENDLY_RAIL_NAMES:
        if raw.endswith(suffix):
            return friendly
    return None


def _rail_descriptors(parser: HandlerContext, rails) -> None:
    trace = parser.trace
    session = rails.session_uuid
    tracks = _state(parser).rail_tracks
    for desc in rails.rail_descriptor:
        if desc.index > MAX_RAIL_INDEX:
            continue  # an implausible index: skipped
        raw = text(desc.rail_name)
        friendly = friendly_rail_name(raw)
        name = f"power.rails.{friendly}" if friendly else _stack_string(f"power.{raw}_uws", 255)
        key = (("name", raw), ("session_uuid", session))
        track = trace.tracks.intern("power_rails", key, "counter", name)
        row = trace.tracks.row(track)
        if not row.source_args:  # args are set when the track is made
            row.source_args = [
                ("raw_name", "raw_name", "string", _opt_text(desc, "rail_name")),
                ("subsystem_name", "subsystem_name", "string", _opt_text(desc, "subsys_name")),
            ]
        tracks.setdefault(session, {})[desc.index] = track


@tokenize_handler("power_rails")
def _tokenize_power_rails(importer, packet, seq, ts: int) -> None:
    """Descriptors now; each energy sample sorted on its own timestamp, as a packet of its own."""
    parser: HandlerContext = importer.ftrace
    rails = packet.power_rails
    _rail_descriptors(parser, rails)
    if not rails.energy_data:
        parser.stats.inc("power_rail_empty_packet")
        return
    clocks = parser.clocks
    for data in rails.energy_data:
        if data.HasField("timestamp_ms"):
            # timestamp_ms is BOOTTIME by definition.
            at = clocks.to_trace_time(BOOTTIME, _int64(data.timestamp_ms * 1_000_000)) if clocks else None
            if at is None:
                continue  # the clock tracker counted why
        else:
            at = ts
        one = pb.PowerRails(session_uuid=rails.session_uuid)
        one.energy_data.add(index=data.index, energy=data.energy, timestamp_ms=max(at, 0) // 1_000_000)
        importer.push(at, (EV_PACKET, "power_rails", one.SerializeToString(), ts))


@packet_handler("power_rails")
def _power_rails(parser: HandlerContext, ts: int, rails, packet_ts: int = 0) -> None:
    """One energy sample (the tokenizer's packet); packet_ts: its original packet's timestamp."""
    tracks = _state(parser).rail_tracks
    for data in rails.energy_data:
        track = tracks.get(rails.session_uuid, {}).get(data.index)
        if track is None:
            parser.stats.inc("power_rail_unknown_index")
            continue
        parser.trace.insert_counter(
            ts, track, float(data.energy), [("packet_ts", "packet_ts", "uint", packet_ts & INT64_MASK)]
        )


# -- battery counters --------------------------------------------------------------------


def battery_track(trace: TraceContext, battery: str, counter: str) -> int:
    name = f"batt.{battery}.{counter}" if battery else f"batt.{counter}"
    return trace.tracks.intern(
        "battery_counter", (("battery_name", battery), ("counter_name", counter)), "counter", _stack_string(name, 1024)
    )


@packet_handler("battery")
def _battery(parser: HandlerContext, ts: int, evt) -> None:
    trace = parser.trace
    battery = text(evt.name)
    has = evt.HasField
    if has("charge_counter_uah"):
        trace.insert_counter(ts, battery_track(trace, battery, "charge_uah"), float(evt.charge_counter_uah))
    elif has("energy_counter_uwh") and has("voltage_uv"):
        # Charge from energy and voltage (integer arithmetic, as trace_processor does it).
        track = battery_track(trace, battery, "charge_uah")
        if evt.voltage_uv > 0:
            charge = c_div(_int64(evt.energy_counter_uwh * 1_000_000), evt.voltage_uv)
            trace.insert_counter(ts, track, float(charge))
    if has("capacity_percent"):
        trace.insert_counter(ts, battery_track(trace, battery, "capacity_pct"), float(evt.capacity_percent))
    if has("current_ua"):
        trace.insert_counter(ts, battery_track(trace, battery, "current_ua"), float(evt.current_ua))
    if has("current_avg_ua"):
        trace.insert_counter(ts, battery_track(trace, battery, "current.avg_ua"), float(evt.current_avg_ua))
    if has("voltage_uv"):
        trace.insert_counter(ts, battery_track(trace, battery, "voltage_uv"), float(evt.voltage_uv))
    if has("current_ua") and has("voltage_uv"):
        # Power from current and voltage; current is negative when discharging, power never.
        milliwatts = c_div(_int64(evt.current_ua * evt.voltage_uv), 1_000_000_000)
        trace.insert_counter(ts, battery_track(trace, battery, "power_mw"), float(abs(milliwatts)))


# -- energy estimation breakdown ---------------------------------------------------------


@tokenize_handler("android_energy_estimation_breakdown")
def _tokenize_energy_breakdown(importer, packet, seq, ts: int) -> None:
    """A packet with consumer descriptors is only that (its energy values are not read)."""
    parser: HandlerContext = importer.ftrace
    event = packet.android_energy_estimation_breakdown
    if not event.HasField("energy_consumer_descriptor"):
        importer.push(ts, (EV_PACKET, "android_energy_estimation_breakdown", event.SerializeToString()))
        return
    consumers = _state(parser).consumers
    for consumer in event.energy_consumer_descriptor.energy_consumers:
        if not consumer.HasField("energy_consumer_id"):
            parser.stats.inc("energy_descriptor_invalid")
            continue
        # The first descriptor of a consumer wins.
        consumers.setdefault(
            consumer.energy_consumer_id,
            (_opt_text(consumer, "name"), _opt_text(consumer, "type"), consumer.ordinal),
        )


@packet_handler("android_energy_estimation_breakdown")
def _energy_breakdown(parser: HandlerContext, ts: int, event) -> None:
    if not event.HasField("energy_consumer_id") or not event.HasField("energy_uws"):
        parser.stats.inc("energy_breakdown_missing_values")
        return
    consumer_id = event.energy_consumer_id
    descriptor = _state(parser).consumers.get(consumer_id)
    if descriptor is None:
        parser.stats.inc("energy_breakdown_missing_values")
        return
    name, consumer_type, ordinal = descriptor
    trace = parser.trace
    consumer_dim = ("energy_consumer_id", consumer_id & 0xFFFFFFFF)
    track = trace.tracks.intern("android_energy_estimation_breakdown", (consumer_dim,), "counter", name)
    row = trace.tracks.row(track)
    if not row.source_args:
        row.source_args = [
            ("consumer_type", "consumer_type", "string", consumer_type),
            ("ordinal", "ordinal", "int", ordinal),
        ]
    trace.insert_counter(ts, track, float(event.energy_uws))
    for breakdown in event.per_uid_breakdown:
        if not breakdown.HasField("uid") or not breakdown.HasField("energy_uws"):
            parser.stats.inc("energy_uid_breakdown_missing_values")
            continue
        uid_track = trace.tracks.intern(
            "android_energy_estimation_breakdown_per_uid",
            (consumer_dim, ("uid", breakdown.uid & 0xFFFFFFFF)),
            "counter",
            name,
        )
        trace.insert_counter(ts, uid_track, float(breakdown.energy_uws))


# -- entity state residency --------------------------------------------------------------


@tokenize_handler("entity_state_residency")
def _tokenize_entity_states(importer, packet, seq, ts: int) -> None:
    """Descriptors now; the packet is still parsed in timestamp order for its residencies."""
    parser: HandlerContext = importer.ftrace
    event = packet.entity_state_residency
    descriptors = _state(parser).entity_states
    for es in event.power_entity_state:
        if not es.HasField("entity_index") or not es.HasField("state_index"):
            parser.stats.inc("energy_descriptor_invalid")
            continue
        key = (es.entity_index, es.state_index)
        if key not in descriptors:  # repeated descriptors are ignored
            entity, state = text(es.entity_name), text(es.state_name)
            descriptors[key] = (entity, state, f"Entity residency: {entity} is {state}")
    importer.push(ts, (EV_PACKET, "entity_state_residency", event.SerializeToString()))


@packet_handler("entity_state_residency")
def _entity_state_residency(parser: HandlerContext, ts: int, event) -> None:
    if not event.residency:
        parser.stats.inc("entity_state_residency_invalid")  # descriptor-only packets too
        return
    trace = parser.trace
    descriptors = _state(parser).entity_states
    for residency in event.residency:
        descriptor = descriptors.get((residency.entity_index, residency.state_index))
        if descriptor is None:
            parser.stats.inc("entity_state_residency_lookup_failed")
            return  # the rest of the packet is dropped too
        entity, state, name = descriptor
        track = trace.tracks.intern("entity_state", (("entity_name", entity), ("state_name", state)), "counter", name)
        trace.insert_counter(ts, track, float(residency.total_time_in_state_ms))


# -- system properties and display state -------------------------------------------------

SYSPROP_PREFIX = "debug.tracing."
SYSPROP_COUNTERS = {"debug.tracing.mcc", "debug.tracing.mnc", "debug.tracing.desktop_mode_visible_tasks"}
SYSPROP_NAMED = {"debug.tracing.battery_status": "BatteryStatus", "debug.tracing.plug_type": "PlugType"}
SYSPROP_METADATA = {
    "debug.tracing.profile_boot_classpath": "android_profile_boot_classpath",
    "debug.tracing.profile_system_server": "android_profile_system_server",
}


def screen_state_track(trace: TraceContext) -> int:
    return trace.tracks.intern("screen_state", (), "counter", "ScreenState")


def battery_stats_track(trace: TraceContext, key: str) -> int:
    """battery_stats.* counters, from system properties and atrace alike."""
    return trace.tracks.intern("battery_stats", (("counter_key", key),), "counter", _stack_string(key, 1024))


@packet_handler("android_system_property")
def _system_property(parser: HandlerContext, ts: int, props) -> None:
    trace = parser.trace
    for kv in props.values:
        name, value = text(kv.name), text(kv.value)
        if name == "debug.tracing.device_state":
            track = trace.tracks.intern("android_device_state", (), "slice", "DeviceStateChanged")
            trace.slices.scoped(ts, 0, track, None, value, [])
            continue
        if name in ("debug.tracing.wallpaper.package_name", "debug.tracing.wallpaper.class_name"):
            trace.set_metadata(name, value)
            continue
        number = c_int32(value)
        if number is None:
            continue
        if name in SYSPROP_METADATA:
            trace.set_metadata(SYSPROP_METADATA[name], number)
        elif name == "debug.tracing.screen_state":
            trace.insert_counter(ts, screen_state_track(trace), float(number))
        elif name.startswith("debug.tracing.battery_stats."):
            trace.insert_counter(ts, battery_stats_track(trace, name[len(SYSPROP_PREFIX) :]), float(number))
        elif name in SYSPROP_COUNTERS or name in SYSPROP_NAMED:
            track_name = SYSPROP_NAMED.get(name) or name[len(SYSPROP_PREFIX) :]
            track = trace.tracks.intern("sysprop_counter", (("sysprop_name", name),), "counter", track_name)
            trace.insert_counter(ts, track, float(number))


@packet_handler("initial_display_state")
def _initial_display_state(parser: HandlerContext, ts: int, state) -> None:
    parser.trace.insert_counter(ts, screen_state_track(parser.trace), float(state.display_state))


# -- ftrace: wakeup sources --------------------------------------------------------------


def _wakelock_track(trace: TraceContext, name: str) -> int:
    return trace.tracks.intern(
        "wakesource_wakelock", (("wakelock_event", name),), "slice", _stack_string(f"Wakelock({name})", 32)
    )


@ftrace_handler("wakeup_source_activate")
def _wakeup_source_activate(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    name = text(ev.name)
    counts = _state(parser).wakelocks
    count = counts.get(name, 0)
    counts[name] = count + 1
    if count > 0:
        return  # already held: one slice for the whole time
    trace = parser.trace
    trace.slices.begin(ts, _wakelock_track(trace, name), None, _stack_string(f"Wakelock({name})", 32), [])


@ftrace_handler("wakeup_source_deactivate")
def _wakeup_source_deactivate(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    name = text(ev.name)
    counts = _state(parser).wakelocks
    count = counts.get(name, 0)
    counts[name] = count - 1 if count > 0 else 0
    if count != 1:
        return
    trace = parser.trace
    trace.slices.end(ts, _wakelock_track(trace, name), None, None, [])


# -- ftrace: suspend / resume ------------------------------------------------------------

SUSPEND_INITIAL, SUSPEND_ENTER, SUSPEND_FREEZE = 0, 1, 2
SUSPEND_RESUME_TRACK = "Suspend/Resume Latency"


def _suspend_tracks(parser: HandlerContext) -> AsyncTrackSet:
    """The "Suspend/Resume Latency" track set: one track per overlapping slice (cookie: its name)."""
    state = _state(parser)
    if state.suspend_tracks is None:
        trace = parser.trace
        sets = CompressedTrackSets(trace.tracks, trace.new_track_group)
        state.suspend_tracks = sets.get("suspend_resume", (), SUSPEND_RESUME_TRACK)
    return state.suspend_tracks


def _suspend_args(parser: HandlerContext, cpu: int, pid: int, event_type: str, device=None, driver=None, phase=None):
    utid = parser.trace.processes.get_or_create_thread(pid)
    return [
        ("utid", "utid", "uint", utid),
        ("event_type", "event_type", "string", event_type),
        ("cpu", "cpu", "uint", cpu),
        ("device_name", "device_name", "string", device),
        ("driver_name", "driver_name", "string", driver),
        ("callback_phase", "callback_phase", "string", phase),
    ]


@ftrace_handler("suspend_resume")
def _suspend_resume(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    action = text(ev.action)
    # timekeeping_freeze's value is the CPU that froze, which may differ between the two ends.
    val = 0 if action == "timekeeping_freeze" else ev.val
    name = _stack_string(f"{action}({val})", 64)
    tracks = _suspend_tracks(parser)
    state = _state(parser)
    slices = parser.trace.slices
    if not ev.start:
        slices.end(ts, tracks.track_for(name, "end"), None, None, [])
        if action == "suspend_enter":
            state.suspend_state = SUSPEND_INITIAL
        elif action == "thaw_processes" and state.suspend_state == SUSPEND_FREEZE:
            # suspend_prepare() failed: thaw_processes ends inside freeze_processes, and the
            # kernel never ends suspend_enter; end it here.
            slices.end(ts, tracks.track_for(state.suspend_enter_cookie, "end"), None, None, [])
            state.suspend_state = SUSPEND_INITIAL
        return
    if action == "suspend_enter":
        state.suspend_state = SUSPEND_ENTER
        state.suspend_enter_cookie = name
    elif action == "freeze_processes" and state.suspend_state == SUSPEND_ENTER:
        state.suspend_state = SUSPEND_FREEZE
    track = tracks.track_for(name, "begin")
    slices.begin(ts, track, None, name, _suspend_args(parser, cpu, pid, "Main Kernel Suspend Event"))


# device_pm_callback_start's event code -> the PM event (the kernel's PM_EVENT_* bits).
DPM_EVENTS = {
    0x2: "suspend",
    0x10: "resume",
    0x1: "freeze",
    0x8: "quiesce",
    0x4: "hibernate",
    0x20: "thaw",
    0x40: "restore",
    0x80: "recover",
}


def callback_phase(pm_ops: str, event_type: str) -> str:
    """ "<event type>[:<phase>]", e.g. suspend, suspend:late, resume:noirq."""
    if pm_ops == "":
        # The kernel leaves pm_ops empty for the prepare and complete phases.
        if event_type == "suspend":
            return "suspend:prepare"
        if event_type == "resume":
            return "resume:complete"
    for phase in ("early", "late", "noirq"):
        if pm_ops.startswith(phase):
            return f"{event_type}:{phase}"
    return event_type


@ftrace_handler("device_pm_callback_start")
def _device_pm_callback_start(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    device, driver = text(ev.device), text(ev.driver)
    name = f"{device} {driver}"
    phase = callback_phase(text(ev.pm_ops), DPM_EVENTS.get(ev.event, "(unknown PM event)"))
    track = _suspend_tracks(parser).track_for(name, "begin")
    args = _suspend_args(parser, cpu, pid, "Device PM Suspend Event", device, driver, phase)
    parser.trace.slices.begin(ts, track, None, name, args)


@ftrace_handler("device_pm_callback_end")
def _device_pm_callback_end(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    name = f"{text(ev.device)} {text(ev.driver)}"
    parser.trace.slices.end(ts, _suspend_tracks(parser).track_for(name, "end"), None, None, [])


@ftrace_handler("suspend_resume_minimal")
def _suspend_resume_minimal(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    trace = parser.trace
    track = trace.tracks.intern("suspend_resume_minimal", (), "slice", "Suspend/Resume Minimal")
    if ev.start:
        trace.slices.begin(ts, track, None, "Suspended", [])
    else:
        trace.slices.end(ts, track, None, None, [])


# -- ftrace: runtime power management ----------------------------------------------------

RPM_SUSPENDED = 2
RPM_STATUS_NAMES = {-1: "Invalid State", 0: "Active", 1: "Resuming", 3: "Suspending"}


@ftrace_handler("rpm_status")
def _rpm_status(parser: HandlerContext, ts: int, cpu: int, pid: int, ev) -> None:
    """A device's runtime PM status as slices; the (usual) suspended state shows as no slice."""
    trace = parser.trace
    # trace_processor keeps these slices on a counter-typed track of its own.
    track = trace.tracks.intern("linux_rpm", (("linux_device", text(ev.name)),), "counter")
    active = _state(parser).rpm_active
    if track in active:
        trace.slices.end(ts, track, None, None, [])
    if ev.status == RPM_SUSPENDED:
        active.discard(track)
        return
    trace.slices.begin(ts, track, None, RPM_STATUS_NAMES.get(ev.status, "Invalid State"), [])
    active.add(track)


# -- kernel wakelocks (SuspendControlService totals) -------------------------------------

KERNEL_WAKELOCK_TYPES = {0: "unknown", 1: "kernel", 2: "native"}
# KernelWakelockData.error_flags bit -> stat
KERNEL_WAKELOCK_ERRORS = (
    (1, "kernel_wakelock_zero_value_reported"),
    (2, "kernel_wakelock_non_monotonic_value_reported"),
    (4, "kernel_wakelock_implausibly_large_value_reported"),
)


class SparseCounters:
    """trace_processor's SparseCounterTracker: a value equal to the track's previous one is not
    written, unless the value changes later (then the last repeat is, so the step shows where it
    happened). Values are queued at tokenize time and written in timestamp order."""

    def __init__(self, push, kind: str) -> None:
        self.push = push  # the importer's push(ts, event)
        self.kind = kind  # the packet_handler that writes the queued values
        self.last: dict[int, list] = {}  # track -> [value, ts, written]

    def counter(self, ts: int, track: int, value: float) -> None:
        state = self.last.get(track)
        if state is None:
            self.last[track] = [value, ts, True]
            self.push(ts, (EV_PACKET, self.kind, b"", track, value))
            return
        if value != state[0]:
            if not state[2]:
                self.push(state[1], (EV_PACKET, self.kind, b"", track, state[0]))
            self.push(ts, (EV_PACKET, self.kind, b"", track, value))
            state[2] = True
        else:
            state[2] = False
        state[0], state[1] = value, ts


@tokenize_handler("kernel_wakelock_data")
def _tokenize_kernel_wakelocks(importer, packet, seq, ts: int) -> None:
    """Wakelock descriptors are per sequence (reset with its incremental state); each packet adds
    time held per wakelock id to a running total per name, and every total is sampled again."""
    parser: HandlerContext = importer.ftrace
    data = packet.kernel_wakelock_data
    known, totals = seq.derived.setdefault("kernel_wakelocks", ({}, {}))
    for wakelock in data.wakelock:
        if wakelock.wakelock_id in known:
            parser.stats.inc("kernel_wakelock_reused_id")
            continue
        known[wakelock.wakelock_id] = (text(wakelock.wakelock_name), wakelock.wakelock_type)
    for wakelock_id, held_ms in zip(data.wakelock_id, data.time_held_millis):
        found = known.get(wakelock_id)
        if found is None:
            parser.stats.inc("kernel_wakelock_unknown_id")
            continue
        name, wakelock_type = found
        total = totals.setdefault(name, [0, wakelock_type])
        total[0] = (total[0] + held_ms) & INT64_MASK
        total[1] = wakelock_type
    for bit, stat in KERNEL_WAKELOCK_ERRORS:
        if data.error_flags & bit:
            parser.stats.inc(stat)
    state = _state(parser)
    if state.sparse is None:
        state.sparse = SparseCounters(importer.push, "kernel_wakelock_data")
    tracks = parser.trace.tracks
    for name, (total_ms, wakelock_type) in totals.items():
        type_name = KERNEL_WAKELOCK_TYPES.get(wakelock_type, "unknown")
        dims = (("wakelock_name", name), ("wakelock_type", type_name))
        track = tracks.intern("android_kernel_wakelock", dims, "counter", name, "ms")
        state.sparse.counter(ts, track, 1e6 * total_ms)


@packet_handler("kernel_wakelock_data")
def _kernel_wakelock_value(parser: HandlerContext, ts: int, _empty, track: int = -1, value: float = 0.0) -> None:
    """A value the tokenizer queued (SparseCounters)."""
    if track >= 0:
        parser.trace.insert_counter(ts, track, value)
