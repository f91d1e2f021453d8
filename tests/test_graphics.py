"""Graphics data sources other than the GPU packets: DRM (vblank, scheduler, dma-fence), virtio-gpu,
V4L2 / videobuf2, virtio-video, Mali, gpu_work_period and Pixel display kernel events, Android
graphics frame events and the SurfaceFlinger frame timeline, as trace_processor imports them."""

from __future__ import annotations

from conftest import TraceDB, ingest_built
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.importers.proto.frame_timeline import (
    FRAME_TIMELINE_EVENT_FIELD,
    FrameTimelineEvent,
    jank_type_name,
)
from datasette_perfetto.importers.proto.ftrace_video import buf_flags, timecode_flags
from datasette_perfetto.trace_builder import TraceBuilder, encode_varint


def ftrace_db(tmp_path, *events: tuple[int, int, int, dict], cpu: int = 0) -> TraceDB:
    """A trace of kernel events (ts, pid, cpu, {event name: fields}), one bundle per event."""
    b = TraceBuilder()
    for ts, pid, ev_cpu, fields in events:
        b.ftrace(ev_cpu, {"timestamp": ts, "pid": pid, **fields})
    return ingest_built(tmp_path, b)


def slices_on(db: TraceDB, track_type: str) -> list[tuple]:
    """(track name, ts, dur, name, depth) of the slices on tracks of a type, in ts order."""
    return db.rows(
        "SELECT t.name, s.ts, s.dur, s.name, s.depth FROM slice s JOIN track t ON s.track_id = t.id "
        "WHERE t.type = ? ORDER BY s.ts, s.id",
        (track_type,),
    )


def args_of(db: TraceDB, slice_id: int) -> list[tuple]:
    return db.rows(
        "SELECT key, COALESCE(int_value, string_value, real_value) FROM args WHERE arg_set_id = "
        "(SELECT arg_set_id FROM slice WHERE id = ?) ORDER BY id",
        (slice_id,),
    )


def thread_slices(db: TraceDB) -> list[tuple]:
    """(tid, ts, dur, category, name, slice id) of slices on thread tracks."""
    return db.rows(
        "SELECT th.tid, s.ts, s.dur, s.category, s.name, s.id FROM slice s JOIN thread_track tt ON s.track_id = tt.id "
        "JOIN thread th USING (utid) ORDER BY s.ts, s.id"
    )


# -- DRM -----------------------------------------------------------------------------------


def test_vblank_instants_on_a_gpu_track_per_crtc(tmp_path):
    db = ftrace_db(
        tmp_path,
        (100, 0, 0, {"drm_vblank_event": {"crtc": 1, "seq": 7, "high_prec": 1}}),
        (150, 144, 2, {"drm_vblank_event_delivered": {"crtc": 1, "seq": 7}}),
        (200, 0, 0, {"drm_vblank_event": {"crtc": 0, "seq": 9}}),
    )
    assert slices_on(db, "drm_vblank") == [
        ("vblank-1", 100, 0, "signal", 0),
        ("vblank-1", 150, 0, "deliver", 0),
        ("vblank-0", 200, 0, "signal", 0),
    ]
    assert db.rows("SELECT name, scope FROM gpu_track ORDER BY id") == [
        ("vblank-1", "drm_vblank"),
        ("vblank-0", "drm_vblank"),
    ]
    assert db.rows(
        "SELECT a.key, a.int_value FROM track t JOIN args a ON a.arg_set_id = t.dimension_arg_set_id "
        "WHERE t.name = 'vblank-1'"
    ) == [("drm_crtc", 1)]
    first = db.one("SELECT id FROM slice WHERE ts = 100")
    assert args_of(db, first) == [("vblank seqno", 7)]


def sched_job(ts, pid, job_id, ring="ring0"):
    return (ts, pid, 0, {"drm_sched_job": {"name": ring, "id": job_id, "fence": 0}})


def run_job(ts, fence, job_id, ring="ring0"):
    return (ts, 0, 1, {"drm_run_job": {"name": ring, "id": job_id, "fence": fence}})


def process_job(ts, fence):
    return (ts, 0, 1, {"drm_sched_process_job": {"fence": fence}})


def test_scheduler_jobs_before_linux_6_17(tmp_path):
    db = ftrace_db(
        tmp_path,
        sched_job(10, 300, 1),
        sched_job(12, 301, 2),
        run_job(20, 0xA1, 1),
        run_job(25, 0xA2, 2),  # queued behind job 1 on the ring
        process_job(40, 0xA1),  # job 1 done: job 2's slice starts
        process_job(45, 0xFF),  # unknown fence: ignored
        process_job(60, 0xA2),
    )
    assert slices_on(db, "drm_sched_ring") == [("sched-ring0", 20, 20, "job", 0), ("sched-ring0", 40, 20, "job", 0)]
    queued = thread_slices(db)
    assert [row[:5] for row in queued] == [
        (300, 10, 0, None, "drm_sched_job_queue"),
        (301, 12, 0, None, "drm_sched_job_queue"),
    ]
    assert args_of(db, queued[0][5]) == [("gpu sched ring", "ring0"), ("gpu sched job", 1)]
    jobs = db.rows("SELECT id FROM slice WHERE name = 'job' ORDER BY ts")
    assert args_of(db, jobs[1][0]) == [("gpu sched job", 2)]
    # Each queue instant flows to its job's slice.
    assert db.rows("SELECT slice_out, slice_in FROM flow ORDER BY slice_in") == [
        (queued[0][5], jobs[0][0]),
        (queued[1][5], jobs[1][0]),
    ]
    assert db.rows("SELECT name, type FROM gpu_track") == [("sched-ring0", "drm_sched_ring")]


def test_scheduler_jobs_since_linux_6_17_use_the_fence(tmp_path):
    fence = {"fence_context": 401, "fence_seqno": 3}
    db = ftrace_db(
        tmp_path,
        (5, 700, 0, {"drm_sched_job_queue": {"name": "gfx_0.0.0", "dev": "0000:04:00.0", **fence}}),
        (8, 0, 1, {"drm_sched_job_run": {"name": "gfx_0.0.0", **fence}}),
        (9, 0, 1, {"drm_sched_job_done": {"fence_context": 401, "fence_seqno": 4}}),  # not running
        (20, 0, 1, {"drm_sched_job_done": fence}),
    )
    assert slices_on(db, "drm_sched_ring") == [("sched-gfx_0.0.0", 8, 12, "job", 0)]
    job = db.one("SELECT id FROM slice WHERE name = 'job'")
    assert args_of(db, job) == [("fence context", 401), ("fence seqno", 3)]
    queue = thread_slices(db)[0][5]
    assert args_of(db, queue) == [("gpu sched ring", "gfx_0.0.0"), ("fence context", 401), ("fence seqno", 3)]
    assert db.rows("SELECT slice_out, slice_in FROM flow") == [(queue, job)]


def fence_event(kind, ts, timeline, context, seqno, pid=0):
    return (ts, pid, 0, {kind: {"timeline": timeline, "context": context, "seqno": seqno, "driver": "drv"}})


def test_dma_fence_timelines(tmp_path):
    db = ftrace_db(
        tmp_path,
        fence_event("dma_fence_init", 10, "gpu", 1, 100),
        fence_event("dma_fence_init", 12, "gpu", 1, 101),  # pending behind 100
        fence_event("dma_fence_signaled", 14, "gpu", 1, 99),  # older than the oldest pending: ignored
        fence_event("dma_fence_signaled", 20, "gpu", 1, 100),
        fence_event("dma_fence_signaled", 30, "gpu", 1, 101),
        fence_event("dma_fence_init", 40, "unbound", 5, 1),  # meta-fences: no track
        # A timeline with dma_fence_emit switches to it: the init-based slice ends.
        fence_event("dma_fence_init", 50, "ring", 2, 7),
        fence_event("dma_fence_emit", 55, "ring", 2, 7),
        fence_event("dma_fence_init", 56, "ring", 2, 8),  # ignored from now on
        fence_event("dma_fence_signaled", 60, "ring", 2, 7),
    )
    assert slices_on(db, "drm_fence") == [
        ("fence-gpu-1", 10, 10, "fence", 0),
        ("fence-gpu-1", 20, 10, "fence", 0),
        ("fence-ring-2", 50, 5, "fence", 0),
        ("fence-ring-2", 55, 5, "fence", 0),
    ]
    second = db.one("SELECT id FROM slice WHERE ts = 20")
    assert args_of(db, second) == [("fence seqno", 101)]
    assert db.rows(
        "SELECT a.key, a.int_value, a.string_value FROM track t JOIN args a ON a.arg_set_id = t.dimension_arg_set_id "
        "WHERE t.name = 'fence-ring-2' ORDER BY a.id"
    ) == [("name", None, "ring"), ("context", 2, None)]


def test_dma_fence_wait_on_the_waiting_thread(tmp_path):
    db = ftrace_db(
        tmp_path,
        (10, 42, 0, {"dma_fence_wait_start": {"context": 9, "seqno": 5065, "timeline": "ring0", "driver": "d"}}),
        (25, 42, 0, {"dma_fence_wait_end": {"context": 9, "seqno": 5065}}),
    )
    rows = thread_slices(db)
    assert [r[:5] for r in rows] == [(42, 10, 15, None, "dma_fence_wait")]
    assert args_of(db, rows[0][5]) == [("fence context", 9), ("fence seqno", 5065)]


def virtio_gpu(kind, ts, seqno, cmd_type, num_free, name="control", fence_id=0):
    fields = {"name": name, "seqno": seqno, "type": cmd_type, "num_free": num_free, "fence_id": fence_id}
    return (ts, 0, 0, {kind: fields})


def test_virtio_gpu_command_queues(tmp_path):
    db = ftrace_db(
        tmp_path,
        virtio_gpu("virtio_gpu_cmd_queue", 10, 1, 0x207, 100),  # SUBMIT_3D
        virtio_gpu("virtio_gpu_cmd_queue", 12, 2, 0x203, 99, fence_id=5),  # CTX_DETACH_RESOURCE, fenced
        virtio_gpu("virtio_gpu_cmd_response", 20, 1, 0x1100, 100),
        virtio_gpu("virtio_gpu_cmd_response", 30, 2, 0x1100, 101),
        virtio_gpu("virtio_gpu_cmd_queue", 40, 3, 0x999, 100, name="cursor"),  # unknown command
        virtio_gpu("virtio_gpu_cmd_queue", 50, 4, 0x100, 100, name="other"),  # not a queue it follows
    )
    assert slices_on(db, "virtgpu_queue_event") == [
        ("Virtgpu Control Queue", 10, 10, "SUBMIT_3D", 0),
        ("Virtgpu Control Queue", 12, 18, "CTX_DETACH_RESOURCE", 0),
        ("Virtgpu Cursor Queue", 40, -1, "", 0),
    ]
    # Overlapping commands go to separate tracks of one group.
    tracks = db.rows("SELECT COUNT(*), COUNT(DISTINCT track_group_id) FROM track WHERE name = 'Virtgpu Control Queue'")
    assert tracks == [(2, 1)]
    assert db.rows(
        "SELECT t.name, c.ts, c.value FROM counter c JOIN track t ON c.track_id = t.id ORDER BY c.ts, t.name"
    ) == [
        ("Virtgpu Control Free", 10, 100.0),
        ("Virtgpu Control Free", 12, 99.0),
        ("Virtgpu Control Free", 20, 100.0),
        ("Virtgpu Control Latency", 20, 10.0),  # the fenced command has no latency
        ("Virtgpu Control Free", 30, 101.0),
        ("Virtgpu Cursor Free", 40, 100.0),
    ]


# -- V4L2 and virtio-video ------------------------------------------------------------------


def v4l2(kind, ts, index, pid=50, **extra):
    fields = {"minor": 0, "sequence": 0, "type": 9, "index": index, "bytesused": 4096, "field": 1, "flags": 0x4003}
    return (ts, pid, 0, {kind: {**fields, **extra}})


def test_v4l2_buffers_queued_and_dequeued(tmp_path):
    db = ftrace_db(
        tmp_path,
        v4l2("v4l2_qbuf", 10, 19),
        v4l2("v4l2_qbuf", 11, 20),
        v4l2("v4l2_dqbuf", 30, 19, pid=51),
        v4l2("v4l2_dqbuf", 31, 21, pid=51),  # never queued: no flow
    )
    rows = thread_slices(db)
    assert [r[:5] for r in rows] == [
        (50, 10, 0, "Video 4 Linux 2", "VIDIOC_QBUF minor=0 seq=0 type=9 index=19"),
        (50, 11, 0, "Video 4 Linux 2", "VIDIOC_QBUF minor=0 seq=0 type=9 index=20"),
        (51, 30, 0, "Video 4 Linux 2", "VIDIOC_DQBUF minor=0 seq=0 type=9 index=19"),
        (51, 31, 0, "Video 4 Linux 2", "VIDIOC_DQBUF minor=0 seq=0 type=9 index=21"),
    ]
    assert db.rows("SELECT slice_out, slice_in FROM flow") == [(rows[0][5], rows[2][5])]
    args = dict(args_of(db, rows[0][5]))
    assert args["type"] == "VIDEO_CAPTURE_MPLANE"
    assert args["field"] == "NONE"
    assert args["flags"] == "MAPPED|QUEUED|TIMESTAMP_MASK|TIMESTAMP_COPY"
    assert args["timecode_flags"] == "USERBITS_USERDEFINED"
    assert args["timecode_type"] is None
    assert (args["index"], args["bytesused"], args["minor"], args["sequence"]) == (19, 4096, 0, 0)
    assert [k for k, _ in args_of(db, rows[0][5])][:4] == ["minor", "index", "type", "bytesused"]


def test_videobuf2_events(tmp_path):
    vb2 = {"minor": 2, "sequence": 7, "field": 0, "flags": 0}
    db = ftrace_db(
        tmp_path,
        (10, 60, 0, {"vb2_v4l2_buf_queue": vb2}),
        (11, 60, 0, {"vb2_v4l2_buf_done": vb2}),
        (12, 60, 0, {"vb2_v4l2_qbuf": vb2}),
        (13, 60, 0, {"vb2_v4l2_dqbuf": vb2}),
    )
    rows = thread_slices(db)
    assert [r[4] for r in rows] == [
        "vb2_v4l2_buf_queue minor=2 seq=7 type=0 index=0",
        "vb2_v4l2_buf_done minor=2 seq=7 type=0 index=0",
        "vb2_v4l2_qbuf minor=2 seq=7 type=0 index=0",
        "vb2_v4l2_qbuf minor=2 seq=7 type=0 index=0",  # sic, as trace_processor names dqbuf
    ]
    args = dict(args_of(db, rows[0][5]))
    assert "index" not in args and "type" not in args and "bytesused" not in args
    assert (args["flags"], args["field"]) == ("TIMESTAMP_UNKNOWN|TSTAMP_SRC_EOF", "ANY")


def test_v4l2_flag_names():
    assert buf_flags(0) == "TIMESTAMP_UNKNOWN|TSTAMP_SRC_EOF"
    assert buf_flags(0x00010000 | 0x00100000) == "TSTAMP_SRC_MASK|TSTAMP_SRC_SOE|LAST"
    assert timecode_flags(0x1 | 0x4) == "FLAG_DROPFRAME|USERBITS_field(01)"
    assert timecode_flags(0xC) == "USERBITS_field(11)|USERBITS_8BITCHARS"


def test_virtio_video_resources_and_commands(tmp_path):
    def resource(kind, ts, resource_id, stream=4, queue_type=0x101):
        fields = {"stream_id": stream, "resource_id": resource_id, "queue_type": queue_type, "data_size0": 64}
        return (ts, 0, 0, {kind: {**fields, "timestamp": 5}})

    db = ftrace_db(
        tmp_path,
        resource("virtio_video_resource_queue", 100, 102),
        (101, 0, 0, {"virtio_video_cmd": {"stream_id": 4, "type": 0x105}}),
        (150, 0, 0, {"virtio_video_cmd": {"stream_id": 4, "type": 0x555}}),  # overlaps: a second track
        resource("virtio_video_resource_queue", 200, 103, queue_type=0x100),
        resource("virtio_video_resource_queue_done", 300, 102),
        (400, 0, 0, {"virtio_video_cmd_done": {"stream_id": 4, "type": 0x105}}),
    )
    assert slices_on(db, "virtio_video_queue_event") == [
        ("virtio_video stream #4 OUTPUT", 100, 200, "Resource #102", 0),
        ("virtio_video stream #4 INPUT", 200, -1, "Resource #103", 0),
    ]
    assert slices_on(db, "virtio_video_command") == [
        ("virtio_video stream #4 Requests", 101, 100000, "RESOURCE_QUEUE", 0),
        ("virtio_video stream #4 Requests", 150, 100000, "Unknown", 0),
        ("virtio_video stream #4 Responses", 400, 100000, "RESOURCE_QUEUE", 0),
    ]
    assert db.one("SELECT COUNT(*) FROM track WHERE name = 'virtio_video stream #4 Requests'") == 2
    done = db.one("SELECT id FROM slice WHERE name = 'Resource #102'")
    assert args_of(db, done) == [
        ("stream_id", 4),
        ("resource_id", 102),
        ("queue_type", "OUTPUT"),
        ("data_size0", 64),
        ("data_size1", 0),
        ("data_size2", 0),
        ("data_size3", 0),
        ("timestamp", 5),
    ]


# -- Mali and GPU work periods ---------------------------------------------------------------


def test_mali_interrupts_mcu_states_and_power_state(tmp_path):
    db = ftrace_db(
        tmp_path,
        (10, 0, 3, {"mali_mali_CSF_INTERRUPT_START": {"kctx_tgid": 1, "kctx_id": 2, "info_val": 7}}),
        (15, 0, 3, {"mali_mali_CSF_INTERRUPT_END": {"kctx_tgid": 1, "kctx_id": 2, "info_val": 8}}),
        (20, 0, 0, {"mali_mali_PM_MCU_ON": {}}),
        (30, 0, 0, {"mali_mali_PM_MCU_IN_SLEEP": {}}),
        (40, 0, 0, {"mali_gpu_power_state": {"from_state": 0, "to_state": 2}}),
    )
    assert slices_on(db, "cpu_mali_irq") == [("Mali Irq Cpu 3", 10, 5, "mali_CSF_INTERRUPT", 0)]
    irq = db.one("SELECT id FROM slice WHERE name = 'mali_CSF_INTERRUPT'")
    assert args_of(db, irq) == [("info_val", 8)]  # the end's value replaces the start's
    assert slices_on(db, "mali_mcu_state") == [(None, 20, 10, "ON", 0), (None, 30, -1, "IN_SLEEP", 0)]
    assert db.rows("SELECT type FROM gpu_track") == [("mali_mcu_state",)]
    assert db.rows(
        "SELECT t.name, c.ts, c.value FROM counter c JOIN track t ON c.track_id = t.id WHERE t.type = 'mali_gpu_power_state'"
    ) == [("mali_gpu_power_state", 40, 2.0)]


def test_gpu_work_periods(tmp_path):
    period = {"gpu_id": 1, "uid": 10123, "start_time_ns": 1000, "end_time_ns": 1400, "total_active_duration_ns": 100}
    db = ftrace_db(
        tmp_path,
        (1000, 0, 0, {"gpu_work_period": period}),
        (2000, 0, 0, {"gpu_work_period": {**period, "start_time_ns": 2000, "end_time_ns": 1999}}),
    )
    assert db.rows(
        "SELECT t.type, t.name, s.ts, s.dur, s.name, s.thread_ts, s.thread_dur FROM slice s JOIN track t "
        "ON s.track_id = t.id"
    ) == [("android_gpu_work_period", None, 1000, 400, "%25.00", 1000, 100)]
    assert db.rows(
        "SELECT a.key, a.int_value FROM track t JOIN args a ON a.arg_set_id = t.dimension_arg_set_id "
        "WHERE t.type = 'android_gpu_work_period' ORDER BY a.id"
    ) == [("ugpu", 0), ("gpu", 1), ("uid", 10123)]
    assert db.stat("gpu_work_period_negative_duration") == 1


# -- Pixel display (DPU) ---------------------------------------------------------------------


def test_pixel_display_events(tmp_path):
    frame = {"display_id": 0, "output_id": 1, "frames_pending": 2, "te_count": 9}
    db = ftrace_db(
        tmp_path,
        (10, 0, 0, {"dpu_disp_frame_start_timeout": frame}),
        (11, 0, 0, {"dpu_disp_frame_done_timeout": {**frame, "during_disable": 1}}),
        (12, 0, 0, {"dpu_disp_dpu_underrun": {"id": 0, "frames_pending": 1, "vsync_count": 5}}),
        (13, 0, 0, {"dpu_disp_dpu_line_underrun": {"id": 0, "frames_pending": 1, "vsync_count": 5}}),
        (14, 0, 0, {"gram_collision": {"panel_index": 1, "collision_cnt": 3}}),
        (20, 0, 0, {"dpu_disp_vblank_irq_enable": {"id": 0, "output_id": 1, "enable": 1}}),
        (30, 0, 0, {"dpu_disp_vblank_irq_enable": {"id": 0, "output_id": 1, "enable": 0}}),
    )
    assert db.rows(
        "SELECT t.type, t.name, s.ts, s.dur, s.name FROM slice s JOIN track t ON s.track_id = t.id ORDER BY s.ts"
    ) == [
        ("disp_frame_start_timeout", "frame_start_timeout[1]", 10, 0, "frame_start_timeout"),
        ("disp_frame_done_timeout", "frame_done_timeout[1]", 11, 0, "frame_done_timeout"),
        ("disp_dpu_underrun", "underrun[0]", 12, 0, "disp_dpu_underrun"),
        ("disp_dpu_line_underrun", "line_underrun[0]", 13, 0, "disp_line_dpu_underrun"),
        ("ddic_underrun", "ddic_underrun[1]", 14, 0, "ddic_underrun"),
        ("disp_vblank_irq_enable", "vblank_irq_en[1]", 20, 10, "disp_vblank_irq_enable"),
    ]
    done = db.one("SELECT id FROM slice WHERE ts = 11")
    assert args_of(db, done) == [
        ("display_id", 0),
        ("output_id", 1),
        ("frames_pending", 2),
        ("te_count", 9),
        ("during_disable", 1),
    ]
    underrun = db.one("SELECT id FROM slice WHERE ts = 12")
    assert args_of(db, underrun) == [("vsync_count", 5), ("pending_frame", 1)]


# -- graphics frame events ------------------------------------------------------------------

DEQUEUE, QUEUE, ACQUIRE, LATCH, PRESENT = 1, 2, 4, 5, 8


def frame_events_db(
    tmp_path, *events: tuple[int, dict | pb.GraphicsFrameEvent.BufferEvent], machine_id: int | None = None
) -> TraceDB:
    b = TraceBuilder()
    extra = {} if machine_id is None else {"machine_id": machine_id}
    for ts, buffer_event in events:
        b.packet(
            timestamp=ts, trusted_packet_sequence_id=1, graphics_frame_event={"buffer_event": buffer_event}, **extra
        )
    return ingest_built(tmp_path, b)


def buf(kind, frame, buffer_id=1, layer="layer1", **extra):
    fields = {"type": kind, "frame_number": frame, "buffer_id": buffer_id, "layer_name": layer}
    return {**fields, **extra}


def unknown_type_event(type_value: int, **fields) -> pb.GraphicsFrameEvent.BufferEvent:
    """A BufferEvent whose type is a value the proto's enum does not declare."""
    type_field = pb.GraphicsFrameEvent.BufferEvent.DESCRIPTOR.fields_by_name["type"].number
    data = pb.GraphicsFrameEvent.BufferEvent(**fields).SerializeToString()
    return pb.GraphicsFrameEvent.BufferEvent.FromString(
        data + encode_varint(type_field << 3) + encode_varint(type_value)
    )


FRAME_QUERY = """SELECT fs.ts, t.name, fs.dur, fs.name, fs.frame_number, fs.layer_name FROM frame_slice fs
                 JOIN gpu_track t ON t.id = fs.track_id ORDER BY fs.ts, fs.id"""


def test_buffer_lifecycle_phases(tmp_path):
    db = frame_events_db(
        tmp_path,
        (1, buf(DEQUEUE, 0)),  # the dequeue does not know its frame yet
        (4, buf(QUEUE, 11)),
        (6, buf(ACQUIRE, 11)),
        (8, buf(LATCH, 11)),
        (14, buf(PRESENT, 11)),
        (24, buf(PRESENT, 12)),
    )
    assert db.rows(FRAME_QUERY) == [
        (1, "Buffer: 1 layer1", 0, "Dequeue", 0, "layer1"),
        (1, "APP_1 layer1", 3, "11", 11, "layer1"),  # renamed by the queue
        (4, "Buffer: 1 layer1", 0, "Queue", 11, "layer1"),
        (4, "GPU_1 layer1", 2, "11", 11, "layer1"),
        (6, "Buffer: 1 layer1", 0, "AcquireFenceSignaled", 11, "layer1"),
        (8, "Buffer: 1 layer1", 0, "Latch", 11, "layer1"),
        (8, "SF_1 layer1", 6, "11", 11, "layer1"),
        (14, "Buffer: 1 layer1", 0, "PresentFenceSignaled", 11, "layer1"),
        (14, "Display_layer1", 10, "11", 11, "layer1"),
        (24, "Buffer: 1 layer1", 0, "PresentFenceSignaled", 12, "layer1"),
        (24, "Display_layer1", -1, "12", 12, "layer1"),
    ]
    # The buffer's phase times, as of each event.
    assert db.rows(
        "SELECT ts, queue_to_acquire_time, acquire_to_latch_time, latch_to_present_time FROM frame_slice "
        "WHERE name = 'PresentFenceSignaled' ORDER BY ts"
    ) == [(14, 2, 2, 6), (24, 2, 2, 16)]
    assert db.rows("SELECT DISTINCT scope FROM gpu_track") == [("graphics_frame_event",)]
    assert db.stat("graphics_frame_event_parser_errors") == 2  # the two presents: not buffer-time events


def test_lost_queue_and_early_acquire(tmp_path):
    db = frame_events_db(
        tmp_path,
        (10, buf(DEQUEUE, 0)),
        (20, buf(DEQUEUE, 0)),  # no queue for the first: its APP slice stays open, named "0"
        (22, buf(ACQUIRE, 5)),  # signaled before the queue: no GPU slice
        (25, buf(QUEUE, 5)),
        (30, buf(DEQUEUE, 0, buffer_id=2, layer="layer2")),
        (35, buf(LATCH, 6, buffer_id=2, layer="layer2")),  # lost queue again
    )
    rows = [r for r in db.rows(FRAME_QUERY) if not r[1].startswith("Buffer")]
    assert rows == [
        (10, "APP_1 layer1", -1, "0", 0, "layer1"),
        (20, "APP_1 layer1", 5, "5", 5, "layer1"),
        (30, "APP_2 layer2", -1, "0", 0, "layer2"),
        (35, "SF_2 layer2", -1, "6", 6, "layer2"),
    ]
    assert db.rows("SELECT depth FROM frame_slice WHERE ts = 20 AND name = '5'") == [(1,)]


def test_frame_event_errors_and_unknown_types(tmp_path):
    db = frame_events_db(
        tmp_path,
        (5, {"type": DEQUEUE, "frame_number": 1}),  # no buffer id: dropped
        (7, unknown_type_event(99, frame_number=15, buffer_id=7, layer_name="layer7")),
        (9, {"type": 3, "buffer_id": 3}),  # POST, no layer name
    )
    assert db.rows("SELECT ts, name, layer_name FROM frame_slice ORDER BY ts") == [
        (7, "unknown_event", "layer7"),
        (9, "Post", "no_layer_name"),
    ]
    assert db.rows("SELECT name FROM gpu_track ORDER BY id") == [("Buffer: 7 layer7",), ("Buffer: 3 ",)]
    assert db.stat("graphics_frame_event_parser_errors") == 3


def test_frame_events_of_another_machine(tmp_path):
    db = frame_events_db(tmp_path, (1, buf(DEQUEUE, 3)), (2, buf(QUEUE, 3)), machine_id=1001)
    assert db.rows("SELECT DISTINCT machine_id IS NOT NULL FROM gpu_track") == [(1,)]
    assert db.one("SELECT COUNT(*) FROM frame_slice") == 4


# -- frame timeline -------------------------------------------------------------------------

SF_PID, APP_PID = 666, 1000


def timeline_db(tmp_path, *events: tuple[int, dict], machine_id: int | None = None) -> TraceDB:
    b = TraceBuilder()
    extra = {} if machine_id is None else {"machine_id": machine_id}
    for ts, event in events:
        payload = FrameTimelineEvent(**event).SerializeToString()
        b.extension_packet(FRAME_TIMELINE_EVENT_FIELD, payload, timestamp=ts, trusted_packet_sequence_id=1, **extra)
    return ingest_built(tmp_path, b)


def end(cookie):
    return {"frame_end": {"cookie": cookie}}


def expected_display(cookie, token):
    return {"expected_display_frame_start": {"cookie": cookie, "token": token, "pid": SF_PID}}


def actual_display(cookie, token, **fields):
    return {"actual_display_frame_start": {"cookie": cookie, "token": token, "pid": SF_PID, **fields}}


def expected_surface(cookie, token, display_token, layer="Layer1"):
    ev = {"cookie": cookie, "token": token, "display_frame_token": display_token, "pid": APP_PID, "layer_name": layer}
    return {"expected_surface_frame_start": ev}


def actual_surface(cookie, token, display_token, layer="Layer1", **fields):
    ev = {"cookie": cookie, "token": token, "display_frame_token": display_token, "pid": APP_PID, "layer_name": layer}
    return {"actual_surface_frame_start": {**ev, **fields}}


ACTUAL_QUERY = """SELECT ts, dur, p.pid, display_frame_token, surface_frame_token, layer_name, present_type,
                         on_time_finish, gpu_composition, jank_type, prediction_type, jank_tag, jank_severity_type
                  FROM actual_frame_timeline_slice a JOIN process p USING (upid) ORDER BY ts, a.id"""


def test_expected_and_actual_timelines(tmp_path):
    on_time = {"present_type": 1, "on_time_finish": True, "jank_type": 1, "prediction_type": 1}
    db = timeline_db(
        tmp_path,
        (10, expected_surface(1, 5, 8)),
        (11, actual_surface(2, 5, 8, **on_time)),
        (12, expected_surface(3, 5, 8, layer="Layer2")),  # the process already expects token 5
        (12, actual_surface(4, 5, 8, layer="Layer2", present_type=2, jank_type=64, jank_severity_type=3)),
        (20, expected_display(5, 8)),
        (21, actual_display(6, 8, present_type=3, jank_type=2, prediction_type=1)),
        (30, end(1)),
        (31, end(2)),
        (32, end(3)),
        (33, end(4)),
        (34, end(5)),
        (35, end(6)),
    )
    assert db.rows(
        "SELECT ts, dur, display_frame_token, surface_frame_token, layer_name FROM expected_frame_timeline_slice "
        "ORDER BY ts"
    ) == [(10, 20, 8, 5, "Layer1"), (20, 14, 8, None, None)]
    assert db.rows(ACTUAL_QUERY) == [
        (11, 20, APP_PID, 8, 5, "Layer1", "On-time Present", 1, 0, "None", "Valid Prediction", "No Jank", "None"),
        (
            12,
            21,
            APP_PID,
            8,
            5,
            "Layer2",
            "Late Present",
            0,
            0,
            "App Deadline Missed",
            "Unspecified Prediction",
            "Self Jank",
            "Full",
        ),
        (
            21,
            14,
            SF_PID,
            8,
            None,
            None,
            "Early Present",
            0,
            0,
            "SurfaceFlinger Scheduling",
            "Valid Prediction",
            "Self Jank",
            "Unknown",
        ),
    ]
    # Both surface frames flow to the display frame that presented them.
    assert db.rows(
        "SELECT s.ts, d.ts FROM flow f JOIN slice s ON s.id = f.slice_out JOIN slice d ON d.id = f.slice_in ORDER BY s.ts"
    ) == [(11, 21), (12, 21)]
    # Overlapping actual surface frames of one process: two tracks, one group.
    assert db.rows(
        "SELECT name, COUNT(*), COUNT(DISTINCT track_group_id) FROM track WHERE upid IS NOT NULL GROUP BY name "
        "ORDER BY name"
    ) == [("Actual Timeline", 3, 2), ("Expected Timeline", 2, 2)]
    assert db.one("SELECT string_value FROM args WHERE key = 'Is Buffer?' LIMIT 1") == "Unspecified"
    assert db.one("SELECT slice.name FROM slice WHERE ts = 21") == "8"


def test_jank_tags_of_power_and_display_states(tmp_path):
    power_mode = 32768
    db = timeline_db(
        tmp_path,
        (100, actual_display(1, 1, present_type=1, jank_type=power_mode, prediction_type=1)),
        (101, actual_surface(2, 2, 1, present_type=1, jank_type=power_mode, prediction_type=1)),
        (102, actual_display(3, 3, present_type=1, jank_type=8192, prediction_type=1)),
        (103, actual_surface(4, 4, 3, present_type=4, jank_type=1024, prediction_type=1)),
        (104, actual_display(5, 5, present_type=2, jank_type=512)),
        (105, actual_surface(6, 6, 5, present_type=1, jank_type=128)),
        (106, actual_surface(7, 7, 5, present_type=1, jank_type=2)),
    )
    assert db.rows("SELECT ts, jank_type, jank_tag FROM actual_frame_timeline_slice ORDER BY ts") == [
        (100, "PowerModeChange in progress", "Non-perceivable Jank"),
        (101, "PowerModeChange in progress", "Non-perceivable Jank"),
        (102, "Display not ON", "Non-perceivable Jank"),
        (103, "Dropped Frame", "Dropped Frame"),
        (104, "SurfaceFlinger Stuffing", "SurfaceFlinger Stuffing"),
        (105, "Buffer Stuffing", "Buffer Stuffing"),
        (106, "SurfaceFlinger Scheduling", "Other Jank"),
    ]


def test_jank_type_names():
    assert jank_type_name(0) == "Unspecified"
    assert jank_type_name(1) == "None"
    assert jank_type_name(2 | 16) == "SurfaceFlinger Scheduling, SurfaceFlinger CPU Deadline Missed"
    assert jank_type_name(64 | 4096 | 16384) == "App Deadline Missed, App Resynced Jitter, ModeChange in progress"


def test_frame_timeline_errors(tmp_path):
    db = timeline_db(
        tmp_path,
        (10, {"expected_display_frame_start": {"cookie": 1, "token": 2}}),  # no pid
        (11, {"actual_surface_frame_start": {"cookie": 2, "token": 2, "pid": APP_PID}}),  # no display token
        (12, end(99)),  # unknown cookie
        (13, {"frame_end": {}}),
        (14, {}),  # no event
        (15, actual_display(3, 4, present_type=9, prediction_type=0)),  # out of range, unspecified: 2 errors
        ((1 << 63) - 5, expected_display(4, 5)),  # an absurd timestamp
    )
    assert db.stat("frame_timeline_event_parser_errors") == 7
    assert db.stat("frame_timeline_unpaired_end_event") == 1
    assert db.rows("SELECT present_type, prediction_type FROM actual_frame_timeline_slice") == [
        ("Unspecified Present", "Unspecified Prediction")
    ]
    assert db.one("SELECT COUNT(*) FROM expected_frame_timeline_slice") == 0


def test_frame_timeline_of_another_machine(tmp_path):
    db = timeline_db(tmp_path, (10, expected_display(1, 2)), (20, end(1)), machine_id=7)
    assert db.rows(
        "SELECT ts, dur, machine_id IS NOT NULL FROM expected_frame_timeline_slice JOIN track t ON t.id = track_id"
    ) == [(10, 10, 1)]
