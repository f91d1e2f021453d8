"""Deobfuscating Java frames whose package the mapping path does not tell: the package of a process whose
profile uses them (its app id's package_list row), as trace_processor's DeobfuscationTracker guesses it;
and a continued heapprofd dump whose samples use callstacks interned on the sequence."""

from __future__ import annotations

from conftest import ingest_built
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.trace_builder import TraceBuilder

SEQ = 4


def _interned_stack(seq_id: int, ts: int, apk: str, names: list[str]) -> pb.TracePacket:
    """A packet interning a mapping (the APK, a path that names no package), frames and one callstack
    (iid 1, frames root first)."""
    interned = pb.InternedData()
    parts = apk.strip("/").split("/")
    for i, part in enumerate(parts, start=10):
        interned.mapping_paths.add(iid=i, str=part.encode())
    interned.build_ids.add(iid=1, str=b"")
    interned.mappings.add(iid=1, build_id=1, path_string_ids=range(10, 10 + len(parts)), start=0x1000, end=0x9000)
    for i, name in enumerate(names, start=1):
        interned.function_names.add(iid=i, str=name.encode())
        interned.frames.add(iid=i, function_name_id=i, mapping_id=1, rel_pc=0x100 * i)
    interned.callstacks.add(iid=1, frame_ids=range(1, len(names) + 1))
    return pb.TracePacket(
        timestamp=ts,
        trusted_packet_sequence_id=seq_id,
        sequence_flags=pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED,
        interned_data=interned,
    )


def _dump(seq_id: int, ts: int, pid: int, index: int, continued: bool) -> pb.TracePacket:
    dump = pb.ProfilePacket.ProcessHeapSamples(pid=pid, timestamp=ts, heap_name="libc.malloc")
    dump.samples.add(callstack_id=1, self_allocated=64, alloc_count=1)
    return pb.TracePacket(
        timestamp=ts,
        trusted_packet_sequence_id=seq_id,
        profile_packet=pb.ProfilePacket(process_dumps=[dump], index=index, continued=continued),
    )


def test_frames_take_the_package_of_the_process_using_them(tmp_path):
    b = TraceBuilder()
    clocks = [pb.ClockSnapshot.Clock(clock_id=6, timestamp=0), pb.ClockSnapshot.Clock(clock_id=4, timestamp=0)]
    b.packet(clock_snapshot=pb.ClockSnapshot(clocks=clocks))
    b.packet(process_tree={"processes": [{"pid": 100, "ppid": 1, "cmdline": ["com.example.app"], "uid": 10037}]})
    b.packet(packages_list={"packages": [{"name": "com.example.app", "uid": 10037}]})
    b.packets.append(_interned_stack(SEQ, 1000, "/system/priv-app/Prebuilt/Prebuilt.apk", ["abc.a", "abd.b"]))
    # A continued dump: its samples count when the last packet of the profile comes, which interns nothing.
    b.packets.append(_dump(SEQ, 1000, 100, 0, continued=True))
    b.packets.append(pb.TracePacket(timestamp=2000, trusted_packet_sequence_id=SEQ, profile_packet={"index": 1}))
    mapping = pb.DeobfuscationMapping(package_name="com.example.app")
    for obfuscated, real in (("abc", "com.example.Main"), ("abd", "com.example.Worker")):
        cls = mapping.obfuscated_classes.add(obfuscated_name=obfuscated, deobfuscated_name=real)
        cls.obfuscated_methods.add(obfuscated_name="a" if obfuscated == "abc" else "b", deobfuscated_name="run")
    b.packet(deobfuscation_mapping=mapping)
    db = ingest_built(tmp_path, b)
    assert db.stat("stackprofile_invalid_callstack_id") == 0
    assert db.rows("SELECT count(*), sum(size) FROM heap_profile_allocation") == [(1, 64)]
    assert db.rows("SELECT name, deobfuscated_name FROM stack_profile_frame ORDER BY name") == [
        ("abc.a", "com.example.Main.run"),
        ("abd.b", "com.example.Worker.run"),
    ]


def test_without_the_package_list_such_frames_stay_obfuscated(tmp_path):
    b = TraceBuilder()
    clocks = [pb.ClockSnapshot.Clock(clock_id=6, timestamp=0), pb.ClockSnapshot.Clock(clock_id=4, timestamp=0)]
    b.packet(clock_snapshot=pb.ClockSnapshot(clocks=clocks))
    b.packet(process_tree={"processes": [{"pid": 100, "ppid": 1, "cmdline": ["com.example.app"], "uid": 10037}]})
    b.packets.append(_interned_stack(SEQ, 1000, "/system/priv-app/Prebuilt/Prebuilt.apk", ["abc.a"]))
    b.packets.append(_dump(SEQ, 1000, 100, 0, continued=False))
    mapping = pb.DeobfuscationMapping(package_name="com.example.app")
    mapping.obfuscated_classes.add(obfuscated_name="abc", deobfuscated_name="com.example.Main")
    b.packet(deobfuscation_mapping=mapping)
    db = ingest_built(tmp_path, b)
    assert db.rows("SELECT name, deobfuscated_name FROM stack_profile_frame") == [("abc.a", None)]
