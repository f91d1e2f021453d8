"""experimental_missing_chrome_processes (trace_processor's ActiveChromeProcessesTracker): a process Chrome
lists as active (TrackEvent.chrome_active_processes) without its descriptor within 0.2 s of the listing may
have lost data, until its next descriptor or, if it sends none, the next listing."""

from __future__ import annotations

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.trace_builder import TraceBuilder

S = 1_000_000_000


def _listing(seq, track: int, ts: int, pids: list[int]) -> None:
    seq.packet(
        ts,
        track_event=pb.TrackEvent(
            type=pb.TrackEvent.TYPE_INSTANT,
            track_uuid=track,
            name="ActiveProcesses",
            chrome_active_processes=pb.ChromeActiveProcesses(pid=pids),
        ),
    )


def test_processes_listed_without_a_descriptor_nearby(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    browser = seq.thread(1, 1, "CrBrowserMain", ts=0)
    seq.process(100, "near", ts=1 * S + 150_000_000)  # within 0.2 s of the first listing: complete
    seq.process(200, "late", ts=3 * S)  # none near the first listing; complete from its next descriptor
    _listing(seq, browser, 1 * S, [100, 200, 300])  # 300 never sends one: complete from the next listing
    _listing(seq, browser, 5 * S, [400])  # 400 neither, and no listing follows: never complete
    seq.process(100, "near", ts=5 * S + 100_000_000)
    _, db = ingest_data(b.to_bytes())
    assert db.rows(
        "SELECT p.pid, m.reliable_from FROM experimental_missing_chrome_processes m JOIN process p USING (upid) "
        "ORDER BY m.upid"
    ) == [(200, 3 * S), (300, 5 * S), (400, None)]
    # The listing's pids stay args of its slice.
    assert db.rows("SELECT int_value FROM args WHERE flat_key = 'chrome_active_processes.pid' ORDER BY id") == [
        (100,),
        (200,),
        (300,),
        (400,),
    ]


def test_a_trace_without_listings_has_none(ingest_data):
    b = TraceBuilder()
    seq = b.sequence(1, intern=False)
    track = seq.thread(1, 2, "main")
    seq.slice_begin(10, track, "work")
    seq.slice_end(20, track)
    _, db = ingest_data(b.to_bytes())
    assert db.rows("SELECT * FROM experimental_missing_chrome_processes") == []
