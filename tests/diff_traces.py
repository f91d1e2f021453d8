"""Two demo traces that differ in known ways, for the baseline (diff) tests.

Both are the bundled demo trace plus a `DecodeThread` in the browser process
(pid 100), appended as one more sequence. On that thread:

  baseline: LegacyDecode x3 (20 ms each), Raster x2 (10 ms each)
  target:   BitmapDecode x4 (30 ms each), Raster x2 (40 ms each), and a
            `DecodeQueueDepth` counter (3 samples); the last BitmapDecode
            starts 400 ms after the demo ends, so the target is ~0.5 s longer.

So against the baseline the target has: BitmapDecode added (+120 ms, 4),
LegacyDecode removed (-60 ms, -3), Raster slower (+60 ms, same count), every
other slice name unchanged, one counter added, and a longer trace.
"""

from __future__ import annotations

from datasette_perfetto.trace_builder import DEMO_END, DEMO_START, TraceBuilder, build_demo_trace, process_uuid

DECODE_TID = 103
QUEUE_COUNTER_UUID = 0x514445
MS = 1_000_000

# (name, start offset from DEMO_START, duration), all in ns
BASELINE_SLICES = [
    ("LegacyDecode", 100 * MS, 20 * MS),
    ("Raster", 300 * MS, 10 * MS),
    ("LegacyDecode", 500 * MS, 20 * MS),
    ("Raster", 700 * MS, 10 * MS),
    ("LegacyDecode", 900 * MS, 20 * MS),
]
TARGET_SLICES = [
    ("BitmapDecode", 100 * MS, 30 * MS),
    ("Raster", 300 * MS, 40 * MS),
    ("BitmapDecode", 500 * MS, 30 * MS),
    ("Raster", 700 * MS, 40 * MS),
    ("BitmapDecode", 900 * MS, 30 * MS),
    ("BitmapDecode", DEMO_END - DEMO_START + 400 * MS, 30 * MS),
]
TARGET_COUNTER = [(150 * MS, 2), (550 * MS, 5), (950 * MS, 3)]


def build_diff_trace(flavour: str) -> bytes:
    """The demo plus the decode thread: flavour "baseline" or "target"."""
    slices = {"baseline": BASELINE_SLICES, "target": TARGET_SLICES}[flavour]
    b = TraceBuilder()
    seq = b.sequence(100)
    track = seq.thread(100, DECODE_TID, "DecodeThread", ts=DEMO_START)
    events = [(DEMO_START + start, "slice", (name, dur)) for name, start, dur in slices]
    if flavour == "target":
        seq.counter_track(QUEUE_COUNTER_UUID, "DecodeQueueDepth", process_uuid(100), unit="count", ts=DEMO_START)
        events += [(DEMO_START + ts, "counter", (value,)) for ts, value in TARGET_COUNTER]
    for ts, kind, args in sorted(events):
        if kind == "slice":
            name, dur = args
            seq.slice_begin(ts, track, name, "decode")
            seq.slice_end(ts + dur, track)
        else:
            seq.counter(ts, QUEUE_COUNTER_UUID, args[0])
    return build_demo_trace() + b.to_bytes()
