"""GPU data sources (trace_processor's GraphicsEventModule / GpuEventParser): GPU counters and
their groups, render stages, the GPU log, Vulkan API and memory events → tracks, slices,
counters, gpu_counter_group, gpu_context and vulkan_memory_allocations."""

from __future__ import annotations

from conftest import FunctionsDB, ingest_built
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.importers.proto.gpu import counter_unit
from datasette_perfetto.trace_builder import TraceBuilder, encode_varint

Desc = pb.GpuCounterDescriptor
Spec = Desc.GpuCounterSpec
Stage = pb.GpuRenderStageEvent
FORWARDS = Spec.VALUE_DIRECTION_FORWARDS_LOOKING


def counter_rows(db, where: str = "1") -> list[tuple]:
    """(ts, value, name, gpu_id) of GPU counter samples, in (track, ts, id) order."""
    return db.rows(f"""SELECT c.ts, c.value, g.name, g.gpu_id FROM counter c
                       JOIN gpu_counter_track g ON c.track_id = g.id WHERE {where} ORDER BY g.id, c.ts, c.id""")


def descriptor(*specs: Spec, groups=()) -> Desc:
    return Desc(specs=list(specs), counter_groups=list(groups))


def samples(b: TraceBuilder, ts: int, *values: tuple[int, float], seq: int = 1, **event) -> None:
    counter = pb.GpuCounterEvent.GpuCounter
    counters = [
        counter(counter_id=cid, double_value=v) if isinstance(v, float) else counter(counter_id=cid, int_value=int(v))
        for cid, v in values
    ]
    b.packet(
        timestamp=ts, trusted_packet_sequence_id=seq, gpu_counter_event=pb.GpuCounterEvent(counters=counters, **event)
    )


# -- GPU counters --------------------------------------------------------------------------


def test_counter_units_join_numerators_and_denominators():
    assert counter_unit(Spec(numerator_units=[Desc.FRAGMENT], denominator_units=[Desc.VERTEX])) == "Fragment/Vertex"
    assert counter_unit(Spec(denominator_units=[Desc.SECOND])) == "/s"
    assert counter_unit(Spec(numerator_units=[Desc.TRIANGLE], denominator_units=[Desc.MILLISECOND] * 2)) == (
        "Triangle/ms:ms"
    )
    assert counter_unit(Spec(numerator_units=[Desc.BYTE, Desc.PIXEL], denominator_units=[Desc.NONE])) == "B:Pixel"
    assert counter_unit(Spec(name="x")) is None


def test_inline_descriptor_makes_gpu_counter_tracks(tmp_path):
    b = TraceBuilder()
    spec = Spec(counter_id=7, name="Busy", description="busy %", numerator_units=[Desc.PERCENT])
    b.packet(
        timestamp=1,
        trusted_packet_sequence_id=1,
        gpu_counter_event=pb.GpuCounterEvent(gpu_id=2, counter_descriptor=descriptor(spec)),
    )
    samples(b, 10, (7, 5))
    db = ingest_built(tmp_path, b, FunctionsDB)
    (track,) = db.rows("""SELECT g.type, g.name, g.unit, g.description, g.ugpu, g.gpu_id,
                                 extract_arg(t.dimension_arg_set_id, 'name')
                          FROM gpu_counter_track g JOIN track t USING (id)""")
    assert track == ("gpu_counter", "Busy", "%", "busy %", 0, 2, "Busy")
    assert db.rows("SELECT id, gpu, machine_id FROM gpu") == [(0, 2, 0)]
    # No group in the spec: the track is UNCLASSIFIED.
    assert db.rows("SELECT group_id, name, description FROM gpu_counter_group") == [(0, None, None)]


def test_backwards_looking_values_belong_to_the_interval_before_them(tmp_path):
    b = TraceBuilder()
    b.packet(
        timestamp=1, gpu_counter_event=pb.GpuCounterEvent(counter_descriptor=descriptor(Spec(counter_id=1, name="c")))
    )
    for ts, value in ((10, 3), (20, 4), (30, 5.5)):
        samples(b, ts, (1, value))
    db = ingest_built(tmp_path, b)
    # Each value is written on the previous sample's row; the last row is a 0 placeholder.
    assert counter_rows(db) == [(10, 4.0, "c", 0), (20, 5.5, "c", 0), (30, 0.0, "c", 0)]
    assert db.rows("SELECT id FROM counter ORDER BY ts") == [(0,), (1,), (2,)]


def test_forwards_looking_values_stay_on_their_timestamp(tmp_path):
    b = TraceBuilder()
    spec = Spec(counter_id=1, name="f", value_direction=FORWARDS)
    b.packet(timestamp=1, gpu_counter_event=pb.GpuCounterEvent(counter_descriptor=descriptor(spec)))
    samples(b, 10, (1, 100), (2, 1))  # counter 2 has no spec: ignored, not counted (inline descriptors)
    samples(b, 20, (1, 0.5))
    b.packet(timestamp=30, gpu_counter_event=pb.GpuCounterEvent(counters=[pb.GpuCounterEvent.GpuCounter(counter_id=1)]))
    db = ingest_built(tmp_path, b)
    assert counter_rows(db) == [(10, 100.0, "f", 0), (20, 0.5, "f", 0)]  # a sample without a value is skipped
    assert db.stat("gpu_counters_invalid_spec") == 0


def test_inline_counter_ids_are_global_and_bad_specs_are_counted(tmp_path):
    b = TraceBuilder()
    b.packet(
        timestamp=0,
        trusted_packet_sequence_id=1,
        gpu_counter_event=pb.GpuCounterEvent(gpu_id=0, counter_descriptor=descriptor(Spec(counter_id=1, name="A"))),
    )
    # The same id again (another GPU, another sequence), a spec without a name, one without an id.
    b.packet(
        timestamp=0,
        trusted_packet_sequence_id=2,
        gpu_counter_event=pb.GpuCounterEvent(
            gpu_id=1, counter_descriptor=descriptor(Spec(counter_id=1, name="B"), Spec(counter_id=2), Spec(name="C"))
        ),
    )
    samples(b, 10, (1, 100), seq=1)
    samples(b, 10, (1, 200), seq=2)
    db = ingest_built(tmp_path, b)
    assert db.stat("gpu_counters_invalid_spec") == 3
    # Both sequences' samples are counter 1 of the first descriptor.
    assert counter_rows(db) == [(10, 200.0, "A", 0), (10, 0.0, "A", 0)]
    assert db.rows("SELECT name FROM gpu_counter_track") == [("A",)]


def test_interned_descriptors_belong_to_their_sequence(tmp_path):
    b = TraceBuilder()
    for seq, gpu, name in ((1, 0, "A"), (2, 1, "B")):
        b.packet(
            trusted_packet_sequence_id=seq,
            sequence_flags=1,
            interned_data=pb.InternedData(
                gpu_counter_descriptors=[
                    pb.InternedGpuCounterDescriptor(
                        iid=1,
                        gpu_id=gpu,
                        counter_descriptor=descriptor(Spec(counter_id=1, name=name, value_direction=FORWARDS)),
                    )
                ]
            ),
        )
    for seq in (1, 2):
        samples(b, 10, (1, seq * 10), (9, 1), seq=seq, counter_descriptor_iid=1)  # counter 9: not in the descriptor
    samples(b, 20, (1, 1), seq=1, counter_descriptor_iid=2)  # no such descriptor
    db = ingest_built(tmp_path, b)
    assert counter_rows(db) == [(10, 10.0, "A", 0), (10, 20.0, "B", 1)]
    assert db.stat("gpu_counters_invalid_spec") == 3


def test_descriptor_without_timestamp_is_read_and_samples_without_one_dropped(tmp_path):
    b = TraceBuilder()
    spec = Spec(counter_id=1, name="A", value_direction=FORWARDS)
    b.packet(trusted_packet_sequence_id=1, gpu_counter_event=pb.GpuCounterEvent(counter_descriptor=descriptor(spec)))
    samples(b, 10, (1, 5))
    b.packet(
        trusted_packet_sequence_id=1,
        gpu_counter_event=pb.GpuCounterEvent(counters=[pb.GpuCounterEvent.GpuCounter(counter_id=1, int_value=6)]),
    )
    db = ingest_built(tmp_path, b)
    assert counter_rows(db) == [(10, 5.0, "A", 0)]
    assert db.stat("gpu_counters_missing_timestamp") == 1


def test_counter_groups_enum_and_custom(tmp_path):
    b = TraceBuilder()
    specs = (
        Spec(counter_id=1, name="Frag", groups=[Desc.FRAGMENTS, Desc.VERTICES]),
        Spec(counter_id=2, name="Mem"),
        Spec(counter_id=3, name="L2", groups=[Desc.MEMORY]),
    )
    groups = (
        Desc.GpuCounterGroupSpec(
            group_id=Desc.MEMORY, name="Memory", description="memory counters", counter_ids=[2, 3]
        ),
        Desc.GpuCounterGroupSpec(group_id=100, name="L2 cache", counter_ids=[3, 42]),
        Desc.GpuCounterGroupSpec(name="no id", counter_ids=[1]),
    )
    b.packet(timestamp=1, gpu_counter_event=pb.GpuCounterEvent(counter_descriptor=descriptor(*specs, groups=groups)))
    db = ingest_built(tmp_path, b)
    assert db.rows("""SELECT g.group_id, g.name, g.description, t.name FROM gpu_counter_group g
                      JOIN gpu_counter_track t ON g.track_id = t.id ORDER BY g.id""") == [
        (3, None, None, "Frag"),
        (2, None, None, "Frag"),
        (0, None, None, "Mem"),
        (5, "Memory", "memory counters", "L2"),  # a spec's enum group takes the declared group's name
        (5, "Memory", "memory counters", "Mem"),
        (5, "Memory", "memory counters", "L2"),
        (100, "L2 cache", None, "L2"),
    ]


# -- render stages -------------------------------------------------------------------------


def stage_event(b: TraceBuilder, ts: int, seq: int = 1, **fields) -> None:
    b.packet(timestamp=ts, trusted_packet_sequence_id=seq, gpu_render_stage_event=Stage(**fields))


def spec_event(b: TraceBuilder, ts: int, queues=(), stages=(), pid: int | None = None) -> None:
    Description = Stage.Specifications.Description
    spec = Stage.Specifications(
        hw_queue=[Description(**q) for q in queues],
        stage=[Description(**s) for s in stages],
    )
    if pid is not None:
        spec.context_spec.pid = pid
    stage_event(b, ts, specifications=spec)


def stage_rows(db) -> list[tuple]:
    return db.rows("""SELECT s.ts, s.dur, t.name, t.description, s.name, s.hw_queue_id, s.context_id, s.upid
                      FROM gpu_slice s JOIN gpu_track t ON s.track_id = t.id ORDER BY s.ts, s.id""")


def test_render_stages_with_inline_specifications(tmp_path):
    b = TraceBuilder()
    stage_event(b, 0, event_id=1, duration=5, hw_queue_id=1, stage_id=1)  # before any specification
    spec_event(
        b,
        1,
        queues=(
            {"name": "q0", "description": "queue 0"},
            {"name": "q1", "description": "queue 1"},
            {"description": "x"},
        ),
        stages=({"name": "s0"}, {"name": "s1", "description": "stage 1"}),
        pid=7,
    )
    stage_event(b, 10, event_id=2, duration=5, hw_queue_id=0, stage_id=1, context=3)
    stage_event(b, 20, event_id=3, duration=5, hw_queue_id=2, stage_id=9)  # queue 2's spec has no name
    stage_event(b, 30, event_id=4, duration=5, hw_queue_id=-1, stage_id=-1)
    stage_event(b, 40, duration=5, hw_queue_id=0, stage_id=0)  # no event id: no slice
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert stage_rows(db) == [
        # The placeholder track is named once the queue's specification arrives.
        (0, 5, "q1", "queue 1", "render stage(1)", 1, 0, 0),
        (10, 5, "q0", "queue 0", "s1", 0, 3, 0),
        (20, 5, "Unknown GPU Queue 2", None, "render stage(9)", 2, 0, 0),
        (30, 5, "Unknown GPU Queue 4294967295", None, "render stage(18446744073709551615)", 4294967295, 0, 0),
    ]
    assert db.rows("SELECT extract_arg(arg_set_id, 'description') FROM gpu_slice ORDER BY ts") == [
        (None,),
        ("stage 1",),
        (None,),
        (None,),
    ]
    tracks = db.rows("""SELECT type, extract_arg(dimension_arg_set_id, 'render_stage_source'),
                               extract_arg(dimension_arg_set_id, 'hwqueue_id'),
                               extract_arg(dimension_arg_set_id, 'hwqueue_name'),
                               extract_arg(dimension_arg_set_id, 'track_compressor_idx'), track_group_id
                        FROM track ORDER BY id""")
    assert tracks == [
        ("gpu_render_stage", "id", 1, None, 0, 0),
        ("gpu_render_stage", "id", 0, "q0", 0, 1),
        ("gpu_render_stage", "id", 2, None, 0, 2),
        ("gpu_render_stage", "id", 4294967295, None, 0, 3),
    ]


def test_overlapping_render_stages_split_their_queue_track(tmp_path):
    b = TraceBuilder()
    spec_event(b, 0, queues=({"name": "q"},), stages=({"name": "s"},))
    for ts in (100, 105, 112):
        stage_event(b, ts, event_id=ts, duration=10, hw_queue_id=0, stage_id=0)
    db = ingest_built(tmp_path, b, FunctionsDB)
    rows = db.rows("""SELECT s.ts, s.depth, t.name, extract_arg(t.dimension_arg_set_id, 'track_compressor_idx'),
                             t.track_group_id FROM gpu_slice s JOIN track t ON s.track_id = t.id ORDER BY s.ts""")
    # 112 starts after the first stage ended (110): back on the first track.
    assert rows == [(100, 0, "q", 0, 0), (105, 0, "q", 1, 0), (112, 0, "q", 0, 0)]


def test_render_stage_args_debug_names_and_subpasses(tmp_path):
    b = TraceBuilder()
    spec_event(b, 0, queues=({"name": "q"},), stages=({"name": "s"},))
    common = {"event_id": 1, "duration": 1, "hw_queue_id": 0, "stage_id": 0}
    handles = {"render_target_handle": 16, "render_pass_handle": 32, "command_buffer_handle": 48}
    stage_event(
        b,
        10,
        **common,
        **handles,
        submission_id=5,
        extra_data=[Stage.ExtraData(name="k", value="v"), Stage.ExtraData(name="nv")],
    )
    for ts, obj_type, obj, name in ((11, 24, 16, "fb"), (12, 18, 32, "rp"), (13, 6, 48, "cb"), (14, 24, 16, "fb2")):
        b.packet(
            timestamp=ts,
            vulkan_api_event=pb.VulkanApiEvent(
                vk_debug_utils_object_name=pb.VulkanApiEvent.VkDebugUtilsObjectName(
                    object_type=obj_type, object=obj, object_name=name
                )
            ),
        )
    stage_event(b, 20, **common, **handles, render_pass_instance_id=42, render_subpass_index_mask=[1 << 3, 0b11110])
    db = ingest_built(tmp_path, b, FunctionsDB)
    rows = db.rows("""SELECT render_target, render_target_name, render_pass, render_pass_name, command_buffer,
                             command_buffer_name, submission_id, render_subpasses,
                             extract_arg(arg_set_id, 'k'), extract_arg(arg_set_id, 'correlation_id')
                      FROM gpu_slice ORDER BY ts""")
    assert rows == [
        (16, None, 32, None, 48, None, 5, None, "v", None),
        (16, "fb2", 32, "rp", 48, "cb", 0, "3,65,66,67,68", None, "rp:#42"),
    ]
    # An extra datum without a value is an arg with no value.
    assert db.rows("SELECT count(*) FROM args WHERE key = 'nv'") == [(1,)]


def test_interned_specifications_contexts_and_names(tmp_path):
    b = TraceBuilder()
    interned = pb.InternedData(
        graphics_contexts=[pb.InternedGraphicsContext(iid=5, pid=42, api=pb.InternedGraphicsContext.VULKAN)],
        gpu_specifications=[
            pb.InternedGpuRenderStageSpecification(iid=1, name="vertex", description="vertex queue"),
            pb.InternedGpuRenderStageSpecification(
                iid=2,
                name="binning",
                description="binning work",
                category=pb.InternedGpuRenderStageSpecification.COMPUTE,
            ),
        ],
        event_names=[pb.EventName(iid=3, name="named")],
    )
    b.packet(timestamp=0, trusted_packet_sequence_id=1, sequence_flags=1, interned_data=interned)
    stage_event(b, 10, event_id=1, duration=2, hw_queue_iid=1, stage_iid=2, context=5)
    stage_event(b, 20, event_id=2, duration=2, hw_queue_iid=1, stage_iid=2, name_iid=3, context=5)
    stage_event(b, 30, event_id=3, duration=2, hw_queue_iid=9, stage_iid=2)  # unknown queue: dropped
    stage_event(b, 40, seq=2, event_id=4, duration=2, hw_queue_iid=1, stage_iid=2)  # another sequence's iids
    db = ingest_built(tmp_path, b, FunctionsDB)
    rows = db.rows("""SELECT s.ts, t.name, t.description, s.name, s.render_stage_category, s.upid,
                             extract_arg(s.arg_set_id, 'description'), extract_arg(t.dimension_arg_set_id, 'hwqueue_name')
                      FROM gpu_slice s JOIN gpu_track t ON s.track_id = t.id ORDER BY s.ts""")
    pid_upid = db.one("SELECT upid FROM process WHERE pid = 42")
    assert rows == [
        (10, "vertex", "vertex queue", "binning", 2, pid_upid, "binning work", "vertex"),
        (20, "vertex", "vertex queue", "named", 2, pid_upid, "binning work", "vertex"),
    ]
    assert db.rows("SELECT context_id, pid, api FROM gpu_context") == [(5, 42, "VULKAN")]
    assert db.stat("interned_data_tokenizer_errors") >= 2


def _extension(field: int, message) -> bytes:
    """InternedData bytes of one GpuInternedData extension entry (unknown to the perfetto package)."""
    data = message.SerializeToString()
    return encode_varint(field << 3 | 2) + encode_varint(len(data)) + data


def test_compute_kernels_and_launches(tmp_path):
    b = TraceBuilder()
    packet = b.packet(
        timestamp=0,
        trusted_packet_sequence_id=1,
        sequence_flags=1,
        interned_data=pb.InternedData(
            gpu_specifications=[pb.InternedGpuRenderStageSpecification(iid=1, name="compute")]
        ),
    )
    arg = Stage.ExtraComputeArg
    kernel = pb.InternedComputeKernel(
        iid=4, name="_Z3addv", demangled_name="add()", arch="sm_80", args=[arg(name_iid=1, uint_value=32)]
    )
    packet.interned_data.MergeFromString(
        _extension(1001, pb.InternedComputeArgName(iid=1, name="registers_per_thread")) + _extension(1000, kernel)
    )
    launch = Stage.ComputeKernelLaunch(
        grid_size=Stage.Dim3(x=256, y=1, z=1),
        workgroup_size=Stage.Dim3(x=128),
        args=[arg(name="shared_mem", int_value=4096), arg(name_iid=2, int_value=1)],  # unknown name: dropped
    )
    stage_event(b, 10, event_id=1, duration=5, hw_queue_iid=1, kernel_iid=4, name="add", launch=launch)
    db = ingest_built(tmp_path, b, FunctionsDB)
    args = db.rows(
        "SELECT key, display_value FROM args WHERE arg_set_id = (SELECT arg_set_id FROM gpu_slice) ORDER BY id"
    )
    assert args[:9] == [
        ("kernel_name", "_Z3addv"),
        ("kernel_demangled_name", "add()"),
        ("arch", "sm_80"),
        ("registers_per_thread", "32"),
        ("launch.grid_size.x", "256"),
        ("launch.grid_size.y", "1"),
        ("launch.grid_size.z", "1"),
        ("launch.workgroup_size.x", "128"),
        ("shared_mem", "4096"),
    ]
    assert args[9][0] == "context_id"


def test_stages_waiting_on_events_get_flows(tmp_path):
    b = TraceBuilder()
    spec_event(b, 0, queues=({"name": "a"}, {"name": "b"}), stages=({"name": "s"},))
    stage_event(b, 10, event_id=1, duration=5, hw_queue_id=0, stage_id=0, event_wait_ids=[2])  # waits on a later one
    stage_event(b, 20, event_id=2, duration=5, hw_queue_id=1, stage_id=0)
    stage_event(b, 30, event_id=3, duration=5, hw_queue_id=1, stage_id=0, event_wait_ids=[1])
    db = ingest_built(tmp_path, b)
    flows = db.rows("""SELECT o.ts, i.ts FROM flow JOIN slice o ON flow.slice_out = o.id
                       JOIN slice i ON flow.slice_in = i.id ORDER BY o.ts, i.ts""")
    # From the waited-for stage to the waiting one, even backwards in time: trace_processor corrects the
    # direction of flow ids' flows only.
    assert flows == [(10, 30), (20, 10)]


def _gpu_track_event(correlation: dict[int, list[int]] | None = None, api: int | None = None) -> bytes:
    """TrackEvent bytes of GpuTrackEvent's extension fields (unknown to the perfetto package): gpu_correlation
    (3000; its field 1 the submitted event ids, 2 the waited ones) and gpu_api (3001)."""
    out = b""
    if correlation:
        body = b"".join(encode_varint(field << 3) + encode_varint(i) for field, ids in correlation.items() for i in ids)
        out += encode_varint(3000 << 3 | 2) + encode_varint(len(body)) + body
    if api is not None:
        out += encode_varint(3001 << 3) + encode_varint(api)
    return out


def test_track_events_correlated_with_render_stages_get_flows_and_args(tmp_path):
    b = TraceBuilder()
    spec_event(b, 0, queues=({"name": "q"},), stages=({"name": "kernel"},))
    stage_event(b, 3, event_id=2, duration=1, hw_queue_id=0, stage_id=0, name="early")  # before its submission
    seq = b.sequence(7)
    thread = seq.thread(10, 11, "host")
    submit = seq.slice_begin(5, thread, "Submit")
    submit.track_event.MergeFromString(_gpu_track_event({1: [1, 2]}, api=2))  # GPU_API_VULKAN
    seq.slice_end(6, thread)
    stage_event(b, 10, event_id=1, duration=5, hw_queue_id=0, stage_id=0, name="first")
    wait = seq.instant(30, thread, "Wait")
    wait.track_event.MergeFromString(_gpu_track_event({2: [1]}))
    stage_event(b, 40, event_id=1, duration=5, hw_queue_id=0, stage_id=0, name="again")  # both ends known
    db = ingest_built(tmp_path, b, FunctionsDB)
    flows = db.rows("""SELECT o.name, i.name FROM flow JOIN slice o ON flow.slice_out = o.id
                       JOIN slice i ON flow.slice_in = i.id ORDER BY flow.id""")
    assert flows == [
        ("Submit", "early"),  # a stage already seen, when the submission comes
        ("Submit", "first"),
        ("first", "Wait"),
        ("Submit", "again"),  # later stages of a submitted event: from the submitting slice, to the waiting one
        ("again", "Wait"),
    ]
    args = db.rows("SELECT key, display_value FROM slice s JOIN args a USING (arg_set_id) WHERE s.name = 'Submit'")
    assert args == [
        ("gpu_correlation.render_stage_submission_event_ids[0]", "1"),
        ("gpu_correlation.render_stage_submission_event_ids[1]", "2"),
        ("gpu_api", "GPU_API_VULKAN"),
    ]


# -- GPU log and Vulkan events -------------------------------------------------------------


def test_gpu_log_severities_and_args(tmp_path):
    b = TraceBuilder()
    for ts, severity in ((1, pb.GpuLog.LOG_SEVERITY_WARNING), (2, 0), (3, 42)):
        # 42 is no LogSeverity: written as raw bytes (the generated class refuses it).
        log = pb.GpuLog.FromString(bytes([8, severity]) + pb.GpuLog(tag="t", log_message=f"m{ts}").SerializeToString())
        b.packet(timestamp=ts, gpu_log=log)
    b.packet(timestamp=4, gpu_log=pb.GpuLog(severity=pb.GpuLog.LOG_SEVERITY_ERROR))
    db = ingest_built(tmp_path, b, FunctionsDB)
    rows = db.rows("""SELECT s.ts, s.dur, s.name, extract_arg(s.arg_set_id, 'tag'), extract_arg(s.arg_set_id, 'message'),
                             t.name, t.scope FROM gpu_slice s JOIN gpu_track t ON s.track_id = t.id ORDER BY s.ts""")
    assert rows == [
        (1, 0, "WARNING", "t", "m1", "GPU Log", "gpu_log"),
        (2, 0, "UNSPECIFIED", "t", "m2", "GPU Log", "gpu_log"),
        (3, 0, "UNKNOWN_SEVERITY", "t", "m3", "GPU Log", "gpu_log"),
        (4, 0, "ERROR", None, None, "GPU Log", "gpu_log"),
    ]
    assert db.rows("SELECT dimension_arg_set_id FROM track") == [(None,)]


def test_vulkan_queue_submits(tmp_path):
    b = TraceBuilder()
    submit = pb.VulkanApiEvent.VkQueueSubmit
    b.packet(
        timestamp=10,
        vulkan_api_event=pb.VulkanApiEvent(
            vk_queue_submit=submit(duration_ns=2, pid=1, tid=2, vk_command_buffers=[7, 8], submission_id=3)
        ),
    )
    b.packet(timestamp=20, vulkan_api_event=pb.VulkanApiEvent(vk_queue_submit=submit(duration_ns=4, pid=1, tid=2)))
    db = ingest_built(tmp_path, b, FunctionsDB)
    rows = db.rows("""SELECT s.ts, s.dur, s.name, s.command_buffer, extract_arg(s.arg_set_id, 'command_buffers[1]'),
                             s.submission_id, extract_arg(s.arg_set_id, 'pid'), extract_arg(s.arg_set_id, 'tid'), t.name, t.type
                      FROM gpu_slice s JOIN gpu_track t ON s.track_id = t.id ORDER BY s.ts""")
    assert rows == [
        (10, 2, "vkQueueSubmit", 7, 8, 3, 1, 2, "Vulkan Events", "vulkan_events"),
        (20, 4, "vkQueueSubmit", None, None, 0, 1, 2, "Vulkan Events", "vulkan_events"),
    ]
    assert db.rows("SELECT flat_key FROM args WHERE key = 'command_buffers[1]'") == [("command_buffers",)]


def test_vulkan_memory_events(tmp_path):
    b = TraceBuilder()
    Mem = pb.VulkanMemoryEvent
    b.packet(
        timestamp=1,
        trusted_packet_sequence_id=1,
        sequence_flags=1,
        interned_data=pb.InternedData(
            function_names=[pb.InternedString(iid=1, str=b"vkAllocateMemory")],
            vulkan_memory_keys=[pb.InternedString(iid=1, str=b"usage"), pb.InternedString(iid=2, str=b"color")],
        ),
    )
    events = (
        Mem(
            source=Mem.SOURCE_DRIVER,
            operation=Mem.OP_CREATE,
            timestamp=5,
            pid=9,
            memory_size=100,
            allocation_scope=Mem.SCOPE_DEVICE,
        ),
        Mem(
            source=Mem.SOURCE_DRIVER,
            operation=Mem.OP_DESTROY,
            timestamp=6,
            pid=9,
            memory_size=40,
            allocation_scope=Mem.SCOPE_DEVICE,
        ),
        Mem(
            source=Mem.SOURCE_DEVICE_MEMORY,
            operation=Mem.OP_CREATE,
            timestamp=7,
            pid=9,
            memory_size=64,
            memory_type=2,
            heap=1,
            device=0xFFFFFFFFFFFFFFFF,
            caller_iid=1,
            annotations=[
                pb.VulkanMemoryEventAnnotation(key_iid=1, int_value=3),
                pb.VulkanMemoryEventAnnotation(key_iid=1, string_iid=2),  # its value is read from the keys
            ],
        ),
        Mem(source=Mem.SOURCE_IMAGE, operation=Mem.OP_BIND, timestamp=8, pid=9, memory_size=32, memory_type=2),
        Mem(source=Mem.SOURCE_BUFFER, operation=Mem.OP_CREATE, timestamp=9, pid=9, memory_size=32, memory_type=2),
    )
    for i, event in enumerate(events):
        b.packet(timestamp=10 + i, trusted_packet_sequence_id=1, sequence_flags=2, vulkan_memory_event=event)
    db = ingest_built(tmp_path, b, FunctionsDB)
    upid = db.one("SELECT upid FROM process WHERE pid = 9")
    rows = db.rows("""SELECT source, operation, timestamp, upid, device, memory_type, heap, function_name, memory_size, scope
                      FROM vulkan_memory_allocations ORDER BY id""")
    assert rows == [
        ("DRIVER", "CREATE", 5, upid, None, None, None, None, 100, "DEVICE"),
        ("DRIVER", "DESTROY", 6, upid, None, None, None, None, 40, "DEVICE"),
        ("GPU_DEVICE_MEMORY", "CREATE", 7, upid, -1, 2, 1, "vkAllocateMemory", 64, None),
        ("GPU_IMAGE", "BIND", 8, upid, None, 2, None, None, 32, None),
        ("GPU_BUFFER", "CREATE", 9, upid, None, 2, None, None, 32, None),
    ]
    annotations = db.rows("""SELECT key, display_value FROM args WHERE arg_set_id =
                             (SELECT arg_set_id FROM vulkan_memory_allocations WHERE timestamp = 7) ORDER BY id""")
    assert annotations == [("usage", "3"), ("usage", "color")]
    counters = db.rows("""SELECT t.name, t.type, c.ts, c.value FROM counter c JOIN process_counter_track t
                          ON c.track_id = t.id ORDER BY c.ts""")
    assert counters == [
        ("vulkan.mem.driver.scope.DEVICE", "vulkan_driver_mem", 5, 100.0),
        ("vulkan.mem.driver.scope.DEVICE", "vulkan_driver_mem", 6, 60.0),
        ("vulkan.mem.device.memory.type.2.allocation", "vulkan_device_mem_allocation", 7, 64.0),
        ("vulkan.mem.device.memory.type.2.bind", "vulkan_device_mem_bind", 8, 32.0),
    ]


# -- machines ------------------------------------------------------------------------------


def test_gpu_rows_belong_to_the_machine_of_their_packets(tmp_path):
    b = TraceBuilder()
    b.packet(timestamp=1, gpu_log=pb.GpuLog(severity=1))  # the host has data too
    for gpu in (0, 1):
        b.packet(
            timestamp=2,
            machine_id=7,
            gpu_counter_event=pb.GpuCounterEvent(
                gpu_id=gpu, counter_descriptor=descriptor(Spec(counter_id=gpu, name="c"))
            ),
        )
    db = ingest_built(tmp_path, b)
    machine = db.one("SELECT id FROM machine WHERE raw_id = 7")
    assert db.rows("SELECT gpu, machine_id FROM gpu ORDER BY id") == [(0, machine), (1, machine)]
    assert db.rows("SELECT DISTINCT machine_id FROM gpu_counter_track") == [(machine,)]


# -- GPU memory ------------------------------------------------------------------------------


def test_gpu_memory_of_a_process_after_it_was_freed_is_dropped(tmp_path):
    b = TraceBuilder()
    b.packet(timestamp=0, gpu_mem_total_event=pb.GpuMemTotalEvent(gpu_id=0, pid=1, size=100))
    b.packet(timestamp=0, gpu_mem_total_event=pb.GpuMemTotalEvent(gpu_id=1, size=400))  # pid 0: the GPU's total

    def mem(ts, size, ftrace_pid=1):
        return {"timestamp": ts, "pid": ftrace_pid, "gpu_mem_total": {"gpu_id": 0, "pid": 1, "size": size}}

    free = {"timestamp": 12, "pid": 1, "sched_process_free": {"pid": 1, "comm": "app"}}
    b.ftrace(1, mem(5, 233), mem(10, 50), free, mem(15, 0, ftrace_pid=0))  # a kworker reports it after death
    db = ingest_built(tmp_path, b, FunctionsDB)
    rows = db.rows("""SELECT t.type, t.name, t.unit, extract_arg(t.dimension_arg_set_id, 'gpu'), c.ts, p.pid, c.value
                      FROM counter_track t LEFT JOIN process_counter_track pct USING (id)
                      LEFT JOIN process p USING (upid) JOIN counter c ON c.track_id = t.id
                      ORDER BY t.id, c.ts""")
    assert rows == [
        ("process_gpu_memory", "GPU Memory", "bytes", 0, 0, 1, 100.0),
        ("process_gpu_memory", "GPU Memory", "bytes", 0, 5, 1, 233.0),
        ("process_gpu_memory", "GPU Memory", "bytes", 0, 10, 1, 50.0),
        ("gpu_memory", "GPU Memory", "bytes", 1, 0, None, 400.0),
    ]
