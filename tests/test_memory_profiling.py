"""Kernel memory events (CMA, reclaim, ION / DMA-BUF heaps) and profiling fidelity
(heap graph deobfuscation and Bitmap fields, offline symbols from ModuleSymbols),
checked against what trace_processor's FtraceParser, HeapGraphTracker,
DeobfuscationTracker and ProfileModule make of the same input."""

from __future__ import annotations

from conftest import FunctionsDB, ingest_built
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.trace_builder import TraceBuilder


def kernel(b: TraceBuilder, release: str) -> None:
    b.packet(system_info=pb.SystemInfo(utsname=pb.Utsname(sysname="Linux", release=release)))


def ev(ts: int, pid: int, **event) -> dict:
    return {"timestamp": ts, "pid": pid, **event}


def cma_slices(db) -> list[tuple]:
    return db.rows(
        """SELECT s.ts, s.dur, s.category, th.tid,
                  extract_arg(s.arg_set_id, 'cma_name'), extract_arg(s.arg_set_id, 'cma_pfn'),
                  extract_arg(s.arg_set_id, 'cma_req_pages'), extract_arg(s.arg_set_id, 'cma_nr_migrated'),
                  extract_arg(s.arg_set_id, 'cma_nr_reclaimed'), extract_arg(s.arg_set_id, 'cma_nr_mapped'),
                  extract_arg(s.arg_set_id, 'cma_nr_isolate_fail')
           FROM slice s JOIN thread_track t ON t.id = s.track_id JOIN thread th USING (utid)
           WHERE s.name = 'mm_cma_alloc' ORDER BY s.ts"""
    )


# -- CMA -------------------------------------------------------------------------------


def test_cma_on_6_1_pairs_start_and_finish_with_the_threads_migration_figures(tmp_path):
    b = TraceBuilder()
    kernel(b, "6.1.25-android14")
    b.ftrace(
        0,
        ev(100, 10, cma_alloc_start=dict(name="farawimage", count=4)),
        ev(110, 11, cma_alloc_start=dict(name="linux,cma", count=1)),
        ev(120, 10, mm_alloc_contig_migrate_range_info=dict(nr_migrated=3, nr_reclaimed=30, nr_mapped=300)),
        ev(130, 10, cma_alloc_info=dict(name="ignored", nr_migrated=99)),  # the 5.10 generation: ignored
        ev(150, 10, cma_alloc_finish=dict(name="farawimage", pfn=777, count=4)),
        # Thread 11 never reported migration figures: zeros, not thread 10's.
        ev(160, 11, cma_alloc_finish=dict(name="linux,cma", pfn=5, count=1)),
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert cma_slices(db) == [
        (100, 50, None, 10, "farawimage", 777, 4, 3, 30, 300, None),
        (110, 50, None, 11, "linux,cma", 5, 1, 0, 0, 0, None),
    ]


def test_cma_start_forgets_figures_of_an_earlier_allocation(tmp_path):
    b = TraceBuilder()
    kernel(b, "6.6.0")
    b.ftrace(
        0,
        ev(100, 10, cma_alloc_start=dict()),
        ev(110, 10, mm_alloc_contig_migrate_range_info=dict(nr_migrated=1, nr_reclaimed=2, nr_mapped=3)),
        ev(120, 10, cma_alloc_finish=dict(name="a")),
        ev(200, 10, cma_alloc_start=dict()),
        ev(220, 10, cma_alloc_finish=dict(name="b")),
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert [row[7:10] for row in cma_slices(db)] == [(1, 2, 3), (0, 0, 0)]


def test_cma_on_5_10_is_closed_by_cma_alloc_info(tmp_path):
    b = TraceBuilder()
    kernel(b, "5.15.110")
    info = dict(name="c", pfn=1, count=2, nr_migrated=3, nr_reclaimed=4, nr_mapped=5, err_iso=6, err_mig=7, err_test=8)
    b.ftrace(
        0,
        ev(100, 20, cma_alloc_start=dict()),
        ev(105, 20, mm_alloc_contig_migrate_range_info=dict(nr_migrated=50)),  # 6.1 only: ignored
        ev(110, 20, cma_alloc_finish=dict(name="ignored")),  # 6.1 only: ignored
        ev(140, 20, cma_alloc_info=info),
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert cma_slices(db) == [(100, 40, None, 20, "c", 1, 2, 3, 4, 5, 6)]
    assert db.rows(
        """SELECT extract_arg(arg_set_id, 'cma_nr_migrate_fail'), extract_arg(arg_set_id, 'cma_nr_test_fail')
           FROM slice WHERE name = 'mm_cma_alloc'"""
    ) == [(7, 8)]


def test_cma_needs_a_kernel_of_5_10_or_later(tmp_path):
    for release in (None, "4.19.0"):
        b = TraceBuilder()
        if release:
            kernel(b, release)
        b.ftrace(0, ev(100, 20, cma_alloc_start=dict()), ev(140, 20, cma_alloc_info=dict(name="c")))
        path = tmp_path / (release or "none")
        path.mkdir()
        db = ingest_built(path, b, FunctionsDB)
        assert cma_slices(db) == []


# -- reclaim -----------------------------------------------------------------------------


def test_direct_reclaim_and_shrink_slab_are_thread_slices_with_args(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        1,
        ev(10, 30, mm_vmscan_direct_reclaim_begin=dict(order=2, may_writepage=1, gfp_flags=0x100CCA)),
        ev(12, 30, mm_shrink_slab_start=dict(shrink=0xFFFF0001, total_scan=64, priority=12)),
        ev(15, 30, mm_shrink_slab_end=dict(retval=7)),
        ev(20, 30, mm_vmscan_direct_reclaim_end=dict(nr_reclaimed=32)),
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    rows = db.rows(
        """SELECT s.ts, s.dur, s.name, s.depth, s.category,
                  extract_arg(s.arg_set_id, 'direct_reclaim_order'),
                  extract_arg(s.arg_set_id, 'direct_reclaim_may_writepage'),
                  extract_arg(s.arg_set_id, 'direct_reclaim_gfp_flags'),
                  extract_arg(s.arg_set_id, 'direct_reclaim_nr_reclaimed'),
                  extract_arg(s.arg_set_id, 'shrink_name'), extract_arg(s.arg_set_id, 'total_scan'),
                  extract_arg(s.arg_set_id, 'priority'), extract_arg(s.arg_set_id, 'freed')
           FROM slice s JOIN thread_track t ON t.id = s.track_id ORDER BY s.ts"""
    )
    assert rows == [
        (10, 10, "mm_vmscan_direct_reclaim", 0, None, 2, 1, 0x100CCA, 32, None, None, None, None),
        (12, 3, "mm_vmscan_shrink_slab", 1, None, None, None, None, None, "0xffff0001", 64, 12, 7),
    ]


# -- heaps -------------------------------------------------------------------------------


def test_dma_heap_stat_counters_and_one_slice_per_live_buffer(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        ev(100, 40, dma_heap_stat=dict(inode=1, len=4096, total_allocated=4096)),
        ev(110, 41, dma_heap_stat=dict(inode=2, len=2048, total_allocated=6144)),
        ev(150, 40, dma_heap_stat=dict(inode=1, len=-4096, total_allocated=2048)),
        ev(160, 41, dma_heap_stat=dict(inode=3, len=1024, total_allocated=3072)),  # reuses inode 1's track
        ev(170, 41, dma_heap_stat=dict(inode=2, len=-2048, total_allocated=1024)),
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows(
        """SELECT c.ts, t.type, t.name, c.value, extract_arg(c.arg_set_id, 'inode') FROM counter c
           JOIN track t ON t.id = c.track_id ORDER BY c.ts, t.type"""
    ) == [
        (100, "android_dma_heap", "mem.dma_heap", 4096, None),
        (100, "android_dma_heap_change", "mem.dma_heap_change", 4096, 1),
        (110, "android_dma_heap", "mem.dma_heap", 6144, None),
        (110, "android_dma_heap_change", "mem.dma_heap_change", 2048, 2),
        (150, "android_dma_heap", "mem.dma_heap", 2048, None),
        (150, "android_dma_heap_change", "mem.dma_heap_change", -4096, 1),
        (160, "android_dma_heap", "mem.dma_heap", 3072, None),
        (160, "android_dma_heap_change", "mem.dma_heap_change", 1024, 3),
        (170, "android_dma_heap", "mem.dma_heap", 1024, None),
        (170, "android_dma_heap_change", "mem.dma_heap_change", -2048, 2),
    ]
    # The change tracks are per thread.
    assert db.rows(
        """SELECT th.tid FROM track t JOIN thread th USING (utid) WHERE t.type = 'android_dma_heap_change'
           ORDER BY th.tid"""
    ) == [(40,), (41,)]
    buffers = db.rows(
        """SELECT s.ts, s.dur, s.name, t.name, extract_arg(t.dimension_arg_set_id, 'track_compressor_idx'),
                  t.track_group_id IS NOT NULL
           FROM slice s JOIN track t ON t.id = s.track_id WHERE t.type = 'android_dma_allocations' ORDER BY s.ts"""
    )
    assert buffers == [
        (100, 50, "4 kB", "mem.dma_buffer", 0, 1),
        (110, 60, "2 kB", "mem.dma_buffer", 1, 1),
        (160, -1, "1 kB", "mem.dma_buffer", 0, 1),
    ]
    assert db.one("SELECT count(DISTINCT track_group_id) FROM track WHERE type = 'android_dma_allocations'") == 1


def test_ion_stat_counters_and_buffer_slices(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        ev(10, 50, ion_stat=dict(buffer_id=7, len=8192, total_allocated=8192)),
        ev(30, 50, ion_stat=dict(buffer_id=7, len=-8192, total_allocated=0)),
        ev(40, 50, ion_heap_grow=dict(heap_name="system", len=10, total_allocated=90)),
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows(
        "SELECT c.ts, t.type, t.name, c.value FROM counter c JOIN track t ON t.id = c.track_id ORDER BY c.ts, t.type"
    ) == [
        (10, "ion", "mem.ion", 8192),
        (10, "ion_change", "mem.ion_change", 8192),
        (30, "ion", "mem.ion", 0),
        (30, "ion_change", "mem.ion_change", -8192),
        (40, "ion", "mem.ion.system", 100),
        (40, "ion_change", "mem.ion_change.system", 10),
    ]
    assert db.rows(
        """SELECT s.ts, s.dur, s.name, t.name FROM slice s JOIN track t ON t.id = s.track_id
           WHERE t.type = 'android_ion_allocations'"""
    ) == [(10, 20, "8 kB", "mem.ion_buffer")]


def test_fastrpc_dma_stat_counters_per_channel(tmp_path):
    b = TraceBuilder()
    b.ftrace(
        0,
        ev(10, 90, fastrpc_dma_stat=dict(cid=3, len=4096, total_allocated=8192)),
        ev(20, 90, fastrpc_dma_stat=dict(cid=7, len=-4096, total_allocated=0)),
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows(
        """SELECT c.ts, t.type, t.name, c.value, t.utid IS NOT NULL FROM counter c JOIN track t ON t.id = c.track_id
           ORDER BY c.ts, t.type"""
    ) == [
        (10, "fastrpc", "mem.fastrpc[CDSP]", 8192, 0),
        (10, "fastrpc_change", "mem.fastrpc_change[CDSP]", 4096, 1),
        (20, "fastrpc", "mem.fastrpc[7]", 0, 0),
        (20, "fastrpc_change", "mem.fastrpc_change[7]", -4096, 1),
    ]


def test_dmabuf_rss_stat_is_process_memory(tmp_path):
    b = TraceBuilder()
    b.packet(process_tree=pb.ProcessTree(processes=[pb.ProcessTree.Process(pid=60, ppid=1, cmdline=["app"])]))
    b.ftrace(0, ev(10, 60, dmabuf_rss_stat=dict(rss=12345, rss_delta=5, i_ino=3)))
    b.ftrace(0, ev(20, 61, dmabuf_rss_stat=dict(rss=99)))  # a thread of no known process
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows(
        """SELECT c.ts, t.type, t.name, c.value FROM counter c JOIN track t ON t.id = c.track_id ORDER BY c.ts"""
    ) == [
        (10, "process_memory", "mem.dmabuf_rss", 12345),
        (20, "process_memory_thread_fallback", "mem.dmabuf_rss", 99),
    ]


# -- heap graphs ---------------------------------------------------------------------------

APK = "/data/app/~~r4nd0m==/com.example.app-XyZ==/base.apk"


def _mapping(package: str, *classes: tuple[str, str, tuple]) -> pb.TracePacket:
    return pb.TracePacket(
        deobfuscation_mapping=pb.DeobfuscationMapping(
            package_name=package,
            obfuscated_classes=[
                pb.ObfuscatedClass(
                    obfuscated_name=obf,
                    deobfuscated_name=deobf,
                    obfuscated_members=[
                        pb.ObfuscatedMember(obfuscated_name=o, deobfuscated_name=d) for o, d in members
                    ],
                )
                for obf, deobf, members in classes
            ],
        )
    )


def test_heap_graph_deobfuscation_of_classes_and_fields(tmp_path):
    b = TraceBuilder()
    b.heap_graph(
        10,
        pid=70,
        index=0,
        continued=True,
        roots=[dict(root_type=3, object_ids=[1])],
        objects=[
            dict(id=1, type_id=1, self_size=16, reference_field_id=[1, 2], reference_object_id=[2, 3]),
            dict(id=2, type_id=2, self_size=8),
            dict(id=3, type_id=3, self_size=8),
            dict(id=4, type_id=4, self_size=8),
            dict(id=5, type_id=5, self_size=8),
        ],
    )
    # Types and names come after the objects, in the dump's last packet.
    b.heap_graph(
        10,
        pid=70,
        index=1,
        location_names=[dict(iid=1, str=APK.encode()), dict(iid=2, str=b"/data/app/com.other.app-1/base.apk")],
        types=[
            dict(id=1, class_name=b"a", location_id=1),
            dict(id=2, class_name=b"a[][]", location_id=1),
            dict(id=3, class_name=b"java.lang.Class<a>", location_id=1),
            dict(id=4, class_name=b"a", location_id=2),  # another package's `a`
            dict(id=5, class_name=b"b"),  # no location: any mapping renames it
        ],
        field_names=[dict(iid=1, str=b"a.x"), dict(iid=2, str=b"java.lang.Object a.y")],
    )
    b.packets.append(_mapping("com.other"))
    b.packets.append(
        _mapping(
            "com.example.app",
            ("a", "com.example.Alpha", (("x", "first"), ("y", "com.example.Base.second"))),
            ("b", "com.example.Beta", ()),
        )
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows("SELECT name, deobfuscated_name, location FROM heap_graph_class ORDER BY id") == [
        ("a", "com.example.Alpha", APK),
        ("a[][]", "com.example.Alpha[][]", APK),
        ("java.lang.Class<a>", "java.lang.Class<com.example.Alpha>", APK),
        ("a", None, "/data/app/com.other.app-1/base.apk"),
        ("b", "com.example.Beta", None),
    ]
    assert db.rows(
        "SELECT field_name, field_type_name, deobfuscated_field_name FROM heap_graph_reference ORDER BY id"
    ) == [("a.x", None, "com.example.Alpha.first"), ("a.y", "java.lang.Object", "com.example.Base.second")]
    assert db.stat("deobfuscate_location_parse_error") == 0


def test_heap_graph_unparsable_app_location_is_counted(tmp_path):
    b = TraceBuilder()
    b.heap_graph(
        10,
        pid=71,
        objects=[dict(id=1, type_id=1, self_size=4)],
        location_names=[dict(iid=1, str=b"/data/app/nodash/base.apk")],
        types=[dict(id=1, class_name=b"a", location_id=1)],
    )
    b.packets.append(_mapping("nodash", ("a", "Alpha", ())))
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.stat("deobfuscate_location_parse_error") == 1
    # No package known for the class: renamed by any mapping (trace_processor's legacy rule).
    assert db.rows("SELECT deobfuscated_name FROM heap_graph_class") == [("Alpha",)]


def test_heap_graph_bitmap_fields_become_primitive_rows(tmp_path):
    b = TraceBuilder()
    b.heap_graph(
        10,
        pid=72,
        objects=[
            dict(id=1, type_id=1, self_size=4),
            dict(id=2, type_id=1, self_size=4, bitmap_id_field=77, bitmap_width_field=640, bitmap_height_field=480),
            dict(id=3, type_id=1, self_size=4, bitmap_source_id_field=-5),
        ],
        types=[dict(id=1, class_name=b"android.graphics.Bitmap")],
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    objects = db.rows(
        """SELECT o.id, d.field_set_id FROM heap_graph_object o
           LEFT JOIN heap_graph_object_data d ON d.id = o.object_data_id ORDER BY o.id"""
    )
    assert objects == [(0, None), (1, 0), (2, 3)]
    assert db.rows(
        "SELECT field_set_id, field_name, field_type, int_value, long_value FROM heap_graph_primitive ORDER BY id"
    ) == [
        (0, "android.graphics.Bitmap.mId", "long", None, 77),
        (0, "android.graphics.Bitmap.mWidth", "int", 640, None),
        (0, "android.graphics.Bitmap.mHeight", "int", 480, None),
        (3, "android.graphics.Bitmap.mSourceId", "long", None, -5),
    ]
    assert db.rows("SELECT value_string, array_element_type FROM heap_graph_object_data") == [(None, None)] * 2


# -- offline symbols -------------------------------------------------------------------------


def _sampled(b: TraceBuilder) -> None:
    seq = b.sequence(5)
    # Frame iids 1 and 2 (rel_pc 0x1040 and 0x1080), in mappings without a build id.
    seq.stack_samples(80, 81, [(1_000_000, [("main", "/system/bin/app"), ("work", "/system/lib64/libw.so")])])


def _symbols(path: str, build_id: bytes, *addresses: tuple[int, list[tuple[str, str, int | None]]]):
    return pb.TracePacket(
        module_symbols=pb.ModuleSymbols(
            path=path,
            build_id=build_id.decode("latin-1") if build_id else "",
            address_symbols=[
                pb.AddressSymbols(
                    address=address,
                    lines=[
                        pb.Line(function_name=f, source_file_name=s, **({} if n is None else {"line_number": n}))
                        for f, s, n in lines
                    ],
                )
                for address, lines in addresses
            ],
        )
    )


def test_module_symbols_without_build_id_symbolize_frames_of_mappings_without_one(tmp_path):
    b = TraceBuilder()
    _sampled(b)
    b.packets.append(
        _symbols(
            "/system/lib64/libw.so",
            b"",
            (0x1080, [("inlined_helper", "helper.h", 12), ("work(int)", "work.cc", 40)]),
            (0x2000, [("nowhere", "x.cc", 1)]),  # no frame at that address
            (0x3000, []),  # no lines: nothing
        )
    )
    b.packets.append(_symbols("/system/lib64/libw.so", bytes(range(20)), (0x1080, [("other", "o.cc", 1)])))
    b.packets.append(_symbols("/no/such/module.so", b"", (0x1040, [("x", "y", 1)])))
    b.packets.append(_symbols("/system/bin/app", b"", (0x1040, [("main", "", 9)])))  # no file: no line
    db = ingest_built(tmp_path, b, FunctionsDB)
    frames = db.rows(
        """SELECT f.name, s.name, s.source_file, s.line_number FROM stack_profile_frame f
           LEFT JOIN stack_profile_symbol s USING (symbol_set_id) ORDER BY f.id, s.id"""
    )
    assert frames == [
        ("main", "main", None, None),
        ("work", "inlined_helper", "helper.h", 12),
        ("work", "work(int)", "work.cc", 40),
    ]
    # A module with a build id names no mapping without one; nor does an unknown path.
    assert db.stat("stackprofile_invalid_mapping_id") == 2
    assert db.stat("stackprofile_invalid_frame_id") == 1


# -- deobfuscated profiles ---------------------------------------------------------------------

APP_APK = "/data/app/com.example.app-Qx1/base.apk"


def _method_mapping(package: str, *classes: tuple[str, str, tuple]) -> pb.TracePacket:
    """classes: (obfuscated, deobfuscated, methods (obfuscated, deobfuscated[, line start, line end, source line]))."""

    def method(m: tuple) -> pb.ObfuscatedMember:
        obf, deobf, *lines = m
        fields = dict(zip(("obfuscated_line_start", "obfuscated_line_end", "source_line_start"), lines))
        return pb.ObfuscatedMember(obfuscated_name=obf, deobfuscated_name=deobf, **fields)

    return pb.TracePacket(
        deobfuscation_mapping=pb.DeobfuscationMapping(
            package_name=package,
            obfuscated_classes=[
                pb.ObfuscatedClass(
                    obfuscated_name=obf, deobfuscated_name=deobf, obfuscated_methods=[method(m) for m in methods]
                )
                for obf, deobf, methods in classes
            ],
        )
    )


def test_java_frames_are_deobfuscated_by_their_packages_mapping(tmp_path):
    b = TraceBuilder()
    b.sequence(5).stack_samples(
        80,
        81,
        [
            (1_000_000, [("a.f", APP_APK), ("b.g", APP_APK), ("d.e", APP_APK)]),
            (2_000_000, [("a.f", "/memfd:jit-cache"), ("c.h", "/system/framework/other.jar"), ("nodots", APP_APK)]),
            (3_000_000, [("main", "/data/local/tmp/bench")]),
        ],
    )
    # Frame d.e (iid 3, rel_pc 0x10c0) gets a line from offline symbols: the map's line ranges then apply.
    b.packets.append(_symbols(APP_APK, b"", (0x10C0, [("d.e", "D.java", 7)])))
    b.packets.append(_method_mapping("com.other", ("b", "Wrong", (("g", "wrong"),))))
    b.packets.append(
        _method_mapping(
            "com.example.app",
            ("a", "com.ex.A", (("f", "one"), ("f", "uno"))),
            ("b", "com.ex.B", (("g", "com.ex.Base.go"),)),
            ("c", "com.ex.C", (("h", "hidden"),)),
            ("d", "com.ex.D", (("e", "early", 1, 5, 100), ("e", "inlined", 6, 9, 200), ("e", "outer", 6, 9, 300))),
        )
    )
    db = ingest_built(tmp_path, b, FunctionsDB)
    frames = db.rows(
        """SELECT f.name, m.name, f.deobfuscated_name FROM stack_profile_frame f
           JOIN stack_profile_mapping m ON m.id = f.mapping ORDER BY f.id"""
    )
    assert frames == [
        ("a.f", APP_APK, "com.ex.A.one | com.ex.A.uno"),  # two candidates and no line
        ("b.g", APP_APK, "com.ex.Base.go"),  # a fully qualified method name is kept as it is
        ("d.e", APP_APK, "com.ex.D.outer"),
        ("a.f", "/memfd:jit-cache", "com.ex.A.one | com.ex.A.uno"),  # memfd: any package's mapping
        ("c.h", "/system/framework/other.jar", None),  # package unknown
        ("nodots", APP_APK, None),
        ("main", "/data/local/tmp/bench", None),
    ]
    # The line picked the chain of methods inlined at it: its symbols, outermost last.
    assert db.rows(
        """SELECT s.name, s.source_file, s.line_number, s.inlined FROM stack_profile_frame f
           JOIN stack_profile_symbol s USING (symbol_set_id) WHERE f.name = 'd.e' ORDER BY s.id"""
    ) == [("com.ex.D.inlined", None, 200, 1), ("com.ex.D.outer", None, 300, 0)]
    # A mapping in /data/local/tmp without a build id cannot be symbolized.
    assert db.stat("symbolization_tmp_build_id_not_found") == 1
    # trace_processor's names of the profiler tables answer too.
    assert db.one("SELECT count(*) FROM __intrinsic_profiler_sample") == db.count("profiler_sample") == 3


def test_art_oome_details_are_kept_with_their_heap_dump(tmp_path):
    b = TraceBuilder()
    oome = pb.ArtProcessMetadata(
        pid=300,
        process_name="com.example.app",
        oom_allocation_size=1 << 20,
        oom_total_bytes_free=5000,
        oom_free_bytes_until_oom=100,
        oom_error_msg="Failed to allocate",
    )
    b.packet(timestamp=50, trusted_packet_sequence_id=1, art_process_metadata=oome)
    b.packet(timestamp=60, trusted_packet_sequence_id=1, art_process_metadata=pb.ArtProcessMetadata(pid=301))
    db = ingest_built(tmp_path, b, FunctionsDB)
    assert db.rows(
        """SELECT g.ts, g.dump_reason, o.allocation_size_bytes, o.total_bytes_free, o.free_bytes_until_oom, o.error_msg
           FROM heap_graph g JOIN android_heap_graph_java_oome_details o ON o.heap_graph_id = g.id"""
    ) == [(50, "OOME", 1 << 20, 5000, 100, "Failed to allocate")]
    assert db.one("SELECT count(*) FROM heap_graph") == 2
