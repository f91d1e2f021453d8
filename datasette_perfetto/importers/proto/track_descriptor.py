"""What TrackDescriptors declare: a reservation per uuid (trace_processor's), counter
details, and Chrome's process and thread type names."""

from __future__ import annotations

from dataclasses import dataclass

from ...stats import Stats
from ..common.values import text

UNIT_NAMES = {1: "ns", 2: "count", 3: "bytes"}
COUNTER_THREAD_TIME_NS = 1
COUNTER_THREAD_INSTRUCTION_COUNT = 2

# Chrome's process/thread type enums → the names trace_processor shows (its
# ChromeStringLookup: a friendly name, else the enum value's name).
CHROME_PROCESS_NAMES = {
    1: "Browser",
    2: "Renderer",
    3: "Utility",
    4: "SandboxHelper",
    5: "PROCESS_SANDBOX_HELPER",
    6: "Gpu",
    7: "PpapiPlugin",
    8: "PpapiBroker",
    9: "Service: network.mojom.NetworkService",
    10: "Service: tracing.mojom.TracingService",
    11: "Service: storage.mojom.StorageService",
    12: "Service: audio.mojom.AudioService",
    13: "Service: data_decoder.mojom.DataDecoderService",
    14: "Service: chrome.mojom.UtilWin",
    15: "Service: proxy_resolver.mojom.ProxyResolverFactory",
    16: "Service: media.mojom.CdmServiceBroker",
    17: "Service: video_capture.mojom.VideoCaptureService",
    18: "Service: unzip.mojom.Unzipper",
    19: "Service: mirroring.mojom.MirroringService",
    20: "Service: patch.mojom.FilePatcher",
    21: "Service: chromeos.tts.mojom.TtsService",
    22: "Service: printing.mojom.PrintingService",
    23: "Service: quarantine.mojom.Quarantine",
    24: "Service: chromeos.local_search_service.mojom.LocalSearchService",
    25: "Service: chromeos.assistant.mojom.AssistantAudioDecoderFactory",
    26: "Service: chrome.mojom.FileUtilService",
    27: "Service: printing.mojom.PrintCompositor",
    28: "Service: paint_preview.mojom.PaintPreviewCompositorCollection",
    29: "Service: media.mojom.SpeechRecognitionService",
    30: "Service: device.mojom.XRDeviceService",
    31: "Service: chrome.mojom.UtilReadIcon",
    32: "Service: language_detection.mojom.LanguageDetectionService",
    33: "Service: sharing.mojom.Sharing",
    34: "Service: chrome.mojom.MediaParserFactory",
    35: "Service: qrcode_generator.mojom.QRCodeService",
    36: "Service: chrome.mojom.ProfileImport",
    37: "Service: chromeos.ime.mojom.ImeService",
    38: "Service: recording.mojom.RecordingService",
    39: "Service: shape_detection.mojom.ShapeDetectionService",
    40: "Extension Renderer",
    41: "Service: media.mojom.MediaFoundationServiceBroker",
    42: "PROCESS_RENDERER_TOP_WEBUI",
}
CHROME_RENDERER_TYPES = (2, 40)
CHROME_THREAD_NAMES = {
    1: "CrProcessMain",
    2: "ChromeIOThread",
    3: "ThreadPoolBackgroundWorker&",
    4: "ThreadPoolForegroundWorker&",
    5: "ThreadPoolSingleThreadForegroundBlocking&",
    6: "ThreadPoolSingleThreadBackgroundBlocking&",
    7: "ThreadPoolService",
    8: "Compositor",
    9: "VizCompositorThread",
    10: "CompositorTileWorker&",
    11: "ServiceWorkerThread&",
    12: "NetworkService",
    13: "Chrome_ChildIOThread",
    14: "Chrome_IOThread",
    15: "CrBrowserMain",
    16: "CrRendererMain",
    17: "CrUtilityMain",
    18: "CrGpuMain",
    19: "CacheThread_BlockFile",
    20: "Media",
    21: "AudioOutputDevice",
    22: "AudioInputDevice",
    23: "GpuMemoryThread",
    24: "GpuVSyncThread",
    25: "DXVAVideoDecoderThread",
    26: "BrowserWatchdog",
    27: "WebRTC_Network",
    28: "Window owner thread",
    29: "WebRTC_Signaling",
    30: "WebRTC_Worker",
    31: "CrPPAPIMain",
    32: "GpuWatchdog",
    33: "swapper",
    34: "Gamepad polling thread",
    35: "WebCrypto",
    36: "Database thread",
    37: "Proxy Resolver",
    38: "Chrome_DevToolsADBThread",
    39: "NetworkConfigWatcher",
    40: "wasapi_render_thread",
    41: "LoaderLockSampler",
    42: "VSyncThread",
    50: "MemoryInfra",
    51: "StackSamplingProfiler",
    52: "CompositorGpuThread",
}


# Values outside the enums stay unnamed.
def chrome_process_name(process_type: int) -> str | None:
    return CHROME_PROCESS_NAMES.get(process_type)


def chrome_thread_name(thread_type: int) -> str | None:
    return CHROME_THREAD_NAMES.get(thread_type)


@dataclass(slots=True, eq=False)
class CounterDetails:
    category: str | None = None
    is_incremental: bool = False
    unit_multiplier: int = 0
    unit: str | None = None
    builtin_type: str | None = None
    y_axis_share_key: str | None = None


@dataclass(slots=True, eq=False)
class Reservation:
    """What a TrackDescriptor said about a uuid (trace_processor's reservation)."""

    uuid: int
    parent_uuid: int = 0
    name: str | None = None
    description: str | None = None
    child_ordering: str | None = None
    sibling_order_rank: int | None = None
    merge: str | None = "name"  # "name" | "key" | None (never merge)
    merge_key: str | None = None
    pid: int | None = None
    tid: int | None = None
    use_separate_track: bool = False
    counter: CounterDetails | None = None
    is_state: bool = False
    seq_id: int | None = None
    process_ordering: str | None = None  # "explicit" on the root (uuid 0) descriptor
    thread_ordering: str | None = None

    def same_track(self, other: Reservation) -> bool:
        return (
            self.parent_uuid == other.parent_uuid
            and self.pid == other.pid
            and self.tid == other.tid
            and (self.counter is None) == (other.counter is None)
            and self.is_state == other.is_state
        )


def reservation_from(td, seq_id: int, stats: Stats) -> Reservation | None:
    """What a TrackDescriptor declares; None (counted) for an invalid one."""
    if not td.HasField("uuid"):
        stats.inc("track_descriptor_missing_uuid")
        return None
    r = Reservation(td.uuid)
    r.parent_uuid = td.parent_uuid
    _names_and_ordering(r, td)
    r.seq_id = seq_id
    if td.HasField("process_ordering") and td.process_ordering == 1:
        r.process_ordering = "explicit"
    if td.HasField("thread_ordering") and td.thread_ordering == 1:
        r.thread_ordering = "explicit"
    if td.HasField("thread"):
        t = td.thread
        if not (t.HasField("pid") and t.HasField("tid")):
            stats.inc("track_descriptor_thread_missing_pid_tid")
            return None
        r.pid, r.tid = t.pid, t.tid
        if td.HasField("chrome_thread") and td.chrome_thread.is_sandboxed_tid:
            r.tid = synthetic_tid(t.tid, t.pid)  # Chrome's sandbox hides the real tid
        r.use_separate_track = td.disallow_merging_with_system_tracks
    elif td.HasField("process"):
        if not td.process.HasField("pid"):
            stats.inc("track_descriptor_process_missing_pid")
            return None
        r.pid = td.process.pid
    elif td.HasField("counter"):
        r.counter = _counter_details(r, td.counter)
    elif td.HasField("state"):
        r.is_state = True
    return r


def synthetic_tid(tid: int, pid: int) -> int:
    """trace_processor's tid for a thread whose tid is not unique (sandboxed): pid in the high 32 bits."""
    return (pid << 32) | tid


def _names_and_ordering(r: Reservation, td) -> None:
    if td.HasField("name"):
        r.name = text(td.name)
    elif td.HasField("static_name"):
        r.name = text(td.static_name)
    elif td.HasField("atrace_name"):
        r.name = text(td.atrace_name)
    r.description = text(td.description) or None
    if td.HasField("child_ordering"):
        r.child_ordering = {1: "lexicographic", 2: "chronological", 3: "explicit"}.get(td.child_ordering)
    if td.HasField("sibling_order_rank"):
        r.sibling_order_rank = td.sibling_order_rank
    if td.HasField("sibling_merge_behavior"):
        r.merge = {0: "name", 1: "name", 2: None, 3: "key"}.get(td.sibling_merge_behavior, "name")
        if r.merge == "key":
            r.merge_key = (
                text(td.sibling_merge_key)
                if td.HasField("sibling_merge_key")
                else (f"sibling_merge_key_int:{td.sibling_merge_key_int}")
            )


def _counter_details(r: Reservation, c) -> CounterDetails:
    """A CounterDescriptor's details; a built-in counter names an unnamed track."""
    details = CounterDetails()
    if c.categories:
        details.category = ",".join(text(x) for x in c.categories)
    details.is_incremental = c.is_incremental
    details.unit_multiplier = c.unit_multiplier
    details.y_axis_share_key = text(c.y_axis_share_key) or None
    if c.type == COUNTER_THREAD_TIME_NS:
        details.unit, details.builtin_type = "ns", "thread_time"
        if r.name is None:
            r.name = "thread_time"
    elif c.type == COUNTER_THREAD_INSTRUCTION_COUNT:
        details.unit, details.builtin_type = "count", "thread_instruction_count"
        if r.name is None:
            r.name = "thread_instruction_count"
    elif c.unit in UNIT_NAMES:
        details.unit = UNIT_NAMES[c.unit]
    else:
        details.unit = text(c.unit_name) or None
    return details
