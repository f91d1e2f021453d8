"""trace_processor's "trace doctor" (TraceDiagnosticsTracker): rules over the trace config, the
stats and the data that flag what is likely to hurt the trace's quality, one row of
`__intrinsic_trace_diagnostics` per problem found (key, title, description, remediation and a
confidence in [0, 1]).

The rules run once per (trace, machine) context, at the end of the trace, once every context has
finished parsing (trace_processor's NotifyEndOfFile, after OnEventsFullyExtracted): they read the
context's last TraceConfig (trace_metadata.py keeps it), its stats, metadata and clocks. Without a
TraceConfig nothing runs. The rules, in trace_processor's order:

- preserve_ftrace_buffer_late_start: preserve_ftrace_buffer with tracing started > 5 min after boot;
- tiny_ftrace_buffer: ftrace buffer_size_kb under 1 MB;
- low_ftrace_drain_bandwidth: buffer_size_kb / drain_period_ms under 5 MB/s;
- extreme_ftrace_drain_period: drain_period_ms outside [100, 60000];
- syscalls_without_filter: raw_syscalls enabled without syscall_events;
- function_graph_requires_symbolize_ksyms, events_require_symbolize_ksyms: kernel addresses
  recorded without symbolize_ksyms;
- discard_buffer_for_streaming: ftrace or track_event in a DISCARD buffer of a streamed trace;
- heapprofd_sampling_interval_too_low: sampling_interval_bytes under 100 KB;
- display_video_not_enabled: android.display.video on a user build with no frames and no error.

The ftrace rules look at every ftrace data source, so one trace can have a rule's row more than once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ...stats import REGISTRY
from ..common.values import text
from .clock_tracker import BOOTTIME, ClockTracker
from .packet_handlers import HandlerContext
from .trace_metadata import trace_config

TABLE = "__intrinsic_trace_diagnostics"

FILL_POLICY_DISCARD = 2  # TraceConfig.BufferConfig.FillPolicy
# A file write period of 7 days: Traceur's "write_into_file, but really a ring buffer".
TRACEUR_LONG_PERIOD_MS = 604800000
KSYMS_EVENTS = ("workqueue/workqueue_execute_start", "sched/sched_blocked_reason")
FTRACE_DATA_LOSS_STATS = frozenset(
    {"ftrace_cpu_has_data_loss", "ftrace_cpu_overrun_delta", "ftrace_cpu_commit_overrun_delta"}
)


class DiagnosticsState:
    """What the rules read that no table or stat holds: whether android.display.video frames were
    imported (trace_processor's storage flag; an importer of those frames calls note_video_frames)."""

    def __init__(self) -> None:
        self.video_frames = False


def _diagnostics_state(parser: HandlerContext) -> DiagnosticsState:
    return parser.state("trace_diagnostics", DiagnosticsState)


def note_video_frames(parser: HandlerContext) -> None:
    """An android.display.video frame was imported: display_video_not_enabled does not apply."""
    _diagnostics_state(parser).video_frames = True


class Helper:
    """One context's view for the rules (trace_processor's TraceDiagnosticsHelper): its data
    sources, stats, metadata and clocks, and the rows it adds."""

    def __init__(self, importer: Any) -> None:
        self.trace = importer.trace
        self.clocks: ClockTracker = importer.clocks
        self.state = _diagnostics_state(importer.ftrace)

    def add(self, key: str, title: str, description: str, remediation: str, confidence: float) -> None:
        self.trace.storage.insert(TABLE, (key, title, description, remediation, confidence, self.trace.trace_id))

    # -- the config ---------------------------------------------------------------------------

    @staticmethod
    def data_source_configs(config: Any) -> Iterator[Any]:
        """The DataSourceConfig of every data source that has one."""
        for ds in config.data_sources:
            if ds.HasField("config"):
                yield ds.config

    def ftrace_configs(self, config: Any) -> Iterator[Any]:
        """The FtraceConfig of every ftrace data source (a trace may have several)."""
        for ds_config in self.data_source_configs(config):
            if ds_config.HasField("ftrace_config"):
                yield ds_config.ftrace_config

    # -- what the trace shows -----------------------------------------------------------------

    def _any_positive_stat(self, wanted: Callable[[str], bool]) -> bool:
        """A stat of this (trace, machine) (global stats are neither's) above 0 whose name is wanted."""
        stats = self.trace.stats
        values = [*stats.single.items(), *((name, v) for (name, _), v in stats.indexed.items())]
        return any(v > 0 and REGISTRY[name].scope != "global" and wanted(name) for name, v in values)

    def has_ftrace_cpu_data_loss(self) -> bool:
        """Recorded ftrace per-CPU data loss: overruns, commit overruns, lost_events."""
        return self._any_positive_stat(FTRACE_DATA_LOSS_STATS.__contains__)

    def has_traced_data_loss(self) -> bool:
        """A data_loss traced_* stat: the tracing service's buffers lost data (no rule uses it yet)."""
        return self._any_positive_stat(lambda n: REGISTRY[n].severity == "data_loss" and n.startswith("traced_"))

    def has_heapprofd_error_stats(self) -> bool:
        return self._any_positive_stat(lambda n: REGISTRY[n].severity == "error" and n.startswith("heapprofd"))

    def has_video_error_stats(self) -> bool:
        """A failure the android.display.video producer reported (an error or data_loss stat)."""
        return self._any_positive_stat(
            lambda n: REGISTRY[n].severity in ("error", "data_loss") and n.startswith("android_video_")
        )

    def has_video_frames(self) -> bool:
        return self.state.video_frames

    def is_android_user_build(self) -> bool:
        """The build type of android_build_fingerprint (brand/product/device:release/id/incr:type/tags)
        is `user`: the token after the last ':', up to the next '/'."""
        fingerprint = self.trace.metadata.get("android_build_fingerprint")
        if not isinstance(fingerprint, str):
            return False
        colon = fingerprint.rfind(":")
        if colon < 0:
            return False
        return fingerprint[colon + 1 :].split("/", 1)[0] == "user"

    def tracing_started_since_boot_ns(self) -> int | None:
        """tracing_started_ns (trace time) as BOOTTIME, i.e. ns since boot; None without it. When the
        clocks cannot convert it (a conversion error counted), the trace time is taken as BOOTTIME."""
        started = self.trace.metadata.get("tracing_started_ns")
        if not isinstance(started, int):
            return None
        boot = self._trace_time_to_boottime(started)
        return started if boot is None else boot

    def _trace_time_to_boottime(self, ts: int) -> int | None:
        """Trace time (this machine's clock of the trace clock's id) as BOOTTIME."""
        src: Any = self.clocks.trace_clock
        if isinstance(src, tuple):  # another machine synced to the host's clock: its own clock of that id
            src = src[1]
        return self.clocks.convert(src, ts, BOOTTIME)


# -- the rules: (config, helper) -> None, each adding its rows ----------------------------------


def preserve_ftrace_buffer_late_start(config: Any, helper: Helper) -> None:
    for ftrace in helper.ftrace_configs(config):
        if not ftrace.preserve_ftrace_buffer:
            continue
        boot_ns = helper.tracing_started_since_boot_ns()
        if boot_ns is None or boot_ns <= 5 * 60 * 1_000_000_000:
            continue
        helper.add(
            "preserve_ftrace_buffer_late_start",
            "Unnecessary preserve_ftrace_buffer",
            "preserve_ftrace_buffer is set but tracing started more than a few minutes after boot; the preserved "
            "ftrace buffer may contain very old, misleading events.",
            "Unset preserve_ftrace_buffer, or only use it when starting tracing shortly after boot.",
            0.7,
        )


def tiny_ftrace_buffer(config: Any, helper: Helper) -> None:
    """Confidence 0.9 at or below 64 KB, down to 0.2 towards 1 MB; 0.9 when ftrace lost data."""
    ok_kb, severe_kb = 1024, 64
    for ftrace in helper.ftrace_configs(config):
        if not ftrace.HasField("buffer_size_kb"):
            continue
        kb = ftrace.buffer_size_kb
        if kb == 0 or kb >= ok_kb:  # 0: the default
            continue
        if kb <= severe_kb:
            confidence = 0.9
        else:
            t = (kb - severe_kb) / (ok_kb - severe_kb)
            confidence = 0.9 + t * (0.2 - 0.9)
        if helper.has_ftrace_cpu_data_loss():
            confidence = 0.9
        helper.add(
            "tiny_ftrace_buffer",
            "Ftrace buffer too small",
            f"ftrace buffer_size_kb is only {kb} KB (< 1 MB); the kernel ftrace buffer may overrun and drop "
            "events under load.",
            "Avoid setting buffer_size_kb explicitly; leave it unset to use the default, which is tuned for "
            "typical workloads.",
            confidence,
        )


def low_ftrace_drain_bandwidth(config: Any, helper: Helper) -> None:
    """Confidence from ~0 just under 5 MB/s up to 0.9 at or below 1 MB/s; 0.9 when ftrace lost data."""
    ok_mb_per_s, severe_mb_per_s = 5.0, 1.0
    for ftrace in helper.ftrace_configs(config):
        if not ftrace.HasField("buffer_size_kb") or not ftrace.HasField("drain_period_ms"):
            continue
        kb, period_ms = ftrace.buffer_size_kb, ftrace.drain_period_ms
        if kb == 0 or period_ms == 0:
            continue
        mb_per_s = (kb / 1024.0) / (period_ms / 1000.0)
        if mb_per_s >= ok_mb_per_s:
            continue
        if mb_per_s <= severe_mb_per_s:
            confidence = 0.9
        else:
            confidence = 0.9 * ((ok_mb_per_s - mb_per_s) / (ok_mb_per_s - severe_mb_per_s))
        if helper.has_ftrace_cpu_data_loss():
            confidence = 0.9
        helper.add(
            "low_ftrace_drain_bandwidth",
            "Low ftrace drain bandwidth",
            f"ftrace drain bandwidth is low (buffer_size_kb={kb}, drain_period_ms={period_ms} gives under 5 MB/s); "
            "a burst of events can overflow the buffer before it is drained.",
            "Leave buffer_size_kb and drain_period_ms unset to use the defaults, or raise buffer_size_kb / lower "
            "drain_period_ms to increase the drain bandwidth above 5 MB/s.",
            confidence,
        )


def extreme_ftrace_drain_period(config: Any, helper: Helper) -> None:
    for ftrace in helper.ftrace_configs(config):
        if not ftrace.HasField("drain_period_ms"):
            continue
        ms = ftrace.drain_period_ms
        if 100 <= ms <= 60000:
            continue
        helper.add(
            "extreme_ftrace_drain_period",
            "Extreme ftrace drain period",
            f"ftrace drain_period_ms is {ms} ms, outside the sane range [100, 60000]; this can cause excessive CPU "
            "wakeups or buffer overruns.",
            "Set drain_period_ms within the advised range or, better, leave it unset to the default values.",
            0.6,
        )


def syscalls_without_filter(config: Any, helper: Helper) -> None:
    """Confidence 0.3; 0.9 when ftrace lost data (the unfiltered syscalls likely overwhelmed it)."""
    for ftrace in helper.ftrace_configs(config):
        events = [text(e) for e in ftrace.ftrace_events]
        if "raw_syscalls/sys_enter" not in events and "raw_syscalls/sys_exit" not in events:
            continue
        if len(ftrace.syscall_events):
            continue
        helper.add(
            "syscalls_without_filter",
            "Unfiltered syscall tracing",
            "raw_syscalls (sys_enter/sys_exit) are enabled without any syscall_events filter; every syscall is "
            "recorded, which can produce huge, expensive traces.",
            'Restrict syscall_events to the specific syscalls you need (e.g. "sys_read", "sys_write") to cut trace '
            "size and overhead.",
            0.9 if helper.has_ftrace_cpu_data_loss() else 0.3,
        )


def events_require_symbolize_ksyms(config: Any, helper: Helper) -> None:
    """Kernel symbol addresses recorded without symbolize_ksyms cannot be resolved afterwards: function
    graph tracing (a hard misconfiguration, 1.0), and the first event whose fields are such addresses."""
    for ftrace in helper.ftrace_configs(config):
        if ftrace.symbolize_ksyms:
            continue
        if ftrace.enable_function_graph:
            helper.add(
                "function_graph_requires_symbolize_ksyms",
                "Function graph needs symbolize_ksyms",
                "enable_function_graph is set but symbolize_ksyms is not; function graph tracing records kernel "
                "symbol addresses that are unusable without symbolization and cannot be resolved after the fact.",
                "Set symbolize_ksyms: true in the ftrace config.",
                1.0,
            )
        offending = next((e for e in map(text, ftrace.ftrace_events) if e in KSYMS_EVENTS), None)
        if offending is None:
            continue
        helper.add(
            "events_require_symbolize_ksyms",
            "Events need symbolize_ksyms",
            f"ftrace event {offending} is enabled but symbolize_ksyms is not set; its kernel symbol fields will be "
            "raw addresses that cannot be resolved after the fact.",
            "Set symbolize_ksyms: true in the ftrace config.",
            0.6,
        )


def discard_buffer_for_streaming(config: Any, helper: Helper) -> None:
    """ftrace or track_event in a DISCARD buffer while the trace is periodically written into a file:
    recording stops when the buffer first fills. One-shot data sources are fine with DISCARD."""
    if not config.write_into_file or config.file_write_period_ms >= TRACEUR_LONG_PERIOD_MS:
        return  # (an unset period is 5 s: periodic)
    discard = [buffer.fill_policy == FILL_POLICY_DISCARD for buffer in config.buffers]
    for ds_config in helper.data_source_configs(config):
        name = text(ds_config.name)
        if name not in ("linux.ftrace", "track_event"):
            continue
        target = ds_config.target_buffer
        if target >= len(discard) or not discard[target]:
            continue
        helper.add(
            "discard_buffer_for_streaming",
            "DISCARD buffer for streaming",
            f'data source "{name}" targets a DISCARD buffer while the trace streams into a file; DISCARD stops '
            "recording once the buffer first fills, silently truncating long traces.",
            "Use the default RING_BUFFER fill_policy for buffers backing ftrace or track_event in long/streaming "
            "traces.",
            0.8,
        )


def heapprofd_sampling_interval_too_low(config: Any, helper: Helper) -> None:
    """Confidence 0.3; 0.9 when heapprofd reported an error."""
    for ds_config in helper.data_source_configs(config):
        if not ds_config.HasField("heapprofd_config"):
            continue
        heapprofd = ds_config.heapprofd_config
        if not heapprofd.HasField("sampling_interval_bytes"):
            continue
        interval = heapprofd.sampling_interval_bytes
        if interval == 0 or interval >= 100 * 1024:
            continue
        helper.add(
            "heapprofd_sampling_interval_too_low",
            "Heapprofd sampling interval too low",
            f"heapprofd sampling_interval_bytes is {interval} (< 100 KB); such a small sampling interval rarely "
            "improves accuracy and increases profiling overhead.",
            "Increase sampling_interval_bytes to at least 100 KB; smaller intervals add overhead without "
            "meaningfully improving accuracy.",
            0.9 if helper.has_heapprofd_error_stats() else 0.3,
        )


def display_video_not_enabled(config: Any, helper: Helper) -> None:
    """android.display.video requested on a user build, no frame and no producer error: most likely the
    debug.tracing_video_allowed property was not set (userdebug and eng builds capture without it)."""
    if not any(text(c.name) == "android.display.video" for c in helper.data_source_configs(config)):
        return
    if not helper.is_android_user_build() or helper.has_video_frames() or helper.has_video_error_stats():
        return
    helper.add(
        "display_video_not_enabled",
        "Display video not captured",
        "The trace config requested android.display.video, but no frames were captured and the producer reported "
        "no errors. On user (production) builds display video is disabled until the debug.tracing_video_allowed "
        "system property is set; it resets on reboot.",
        "Enable it over ADB before recording, then record again (re-run after each reboot): adb shell setprop "
        "debug.tracing_video_allowed true",
        0.7,
    )


RULES: tuple[Callable[[Any, Helper], None], ...] = (
    preserve_ftrace_buffer_late_start,
    tiny_ftrace_buffer,
    low_ftrace_drain_bandwidth,
    extreme_ftrace_drain_period,
    syscalls_without_filter,
    events_require_symbolize_ksyms,
    discard_buffer_for_streaming,
    heapprofd_sampling_interval_too_low,
    display_video_not_enabled,
)


def run_rules(importer: Any) -> None:
    """Every rule over one context's (a ProtoImporter's) last TraceConfig; nothing without one."""
    config = trace_config(importer)
    if config is None:
        return
    helper = Helper(importer)
    for rule in RULES:
        rule(config, helper)
