"""Two small profile traces that differ in known ways, for the baseline (diff) tests of the callstack nouns.

Process `app` (pid 10, thread 11) in both, with stack samples, one heapprofd dump and one Java heap dump:

  stack samples (outermost first)      baseline   target
    main > work > hot                         8       16
    main > work                               4        4
    main > idle                               5        5
    main > old                                3        -
    main > fresh                              -        2

  heapprofd (bytes allocated / allocations / bytes freed)
    main > alloc_buf                 512 / 8 / 128   2048 / 16 / 0    (64 B then 128 B per allocation)
    main > old_alloc                 200 / 2 / 0          -
    main > new_alloc                      -          400 / 4 / 0

  heap dump (reachable objects; every com.Cache is a root, the first two each hold one byte[])
    com.Cache                        2 x 100 B        4 x 120 B
    byte[]                           2 x 50 B         2 x 50 B
    com.Old                          1 x 30 B             -
    com.New                              -            1 x 40 B
"""

from __future__ import annotations

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from datasette_perfetto.trace_builder import TraceBuilder

PID, TID = 10, 11
APP = "/bin/app"
MS = 1_000_000

SAMPLES = {
    "baseline": {("main", "work", "hot"): 8, ("main", "work"): 4, ("main", "idle"): 5, ("main", "old"): 3},
    "target": {("main", "work", "hot"): 16, ("main", "work"): 4, ("main", "idle"): 5, ("main", "fresh"): 2},
}
# stack -> (bytes allocated, bytes freed, allocations, frees)
ALLOCATIONS = {
    "baseline": {("main", "alloc_buf"): (512, 128, 8, 2), ("main", "old_alloc"): (200, 0, 2, 0)},
    "target": {("main", "alloc_buf"): (2048, 0, 16, 0), ("main", "new_alloc"): (400, 0, 4, 0)},
}
# class -> (objects, self size of each); the first two com.Cache objects each hold one byte[]
OBJECTS = {
    "baseline": {"com.Cache": (2, 100), "byte[]": (2, 50), "com.Old": (1, 30)},
    "target": {"com.Cache": (4, 120), "byte[]": (2, 50), "com.New": (1, 40)},
}


def build_profile_diff_trace(flavour: str) -> bytes:
    b = TraceBuilder()
    b.packet(
        timestamp=0,
        trusted_packet_sequence_id=1,
        clock_snapshot=pb.ClockSnapshot(
            clocks=[pb.ClockSnapshot.Clock(clock_id=6, timestamp=0), pb.ClockSnapshot.Clock(clock_id=4, timestamp=0)]
        ),
    )
    b.packet(
        timestamp=1,
        trusted_packet_sequence_id=1,
        process_tree=pb.ProcessTree(
            processes=[pb.ProcessTree.Process(pid=PID, ppid=1, cmdline=["app"])],
            threads=[pb.ProcessTree.Thread(tid=TID, tgid=PID, name="app-main")],
        ),
    )
    seq = b.sequence(7)
    stacks = [stack for stack, n in SAMPLES[flavour].items() for _ in range(n)]
    # Spread over the same 26 ms on both sides: the traces last as long.
    step = 26 * MS // (len(stacks) - 1) // 1000 * 1000
    times = [10 * MS + i * step for i in range(len(stacks) - 1)] + [36 * MS]
    seq.stack_samples(PID, TID, [(ts, [(f, APP) for f in stack]) for ts, stack in zip(times, stacks)])
    b.heap_profile(
        60 * MS,
        PID,
        [([(f, APP) for f in stack], *values) for stack, values in ALLOCATIONS[flavour].items()],
        seq_id=8,
    )
    types, objects, roots = [], [], []
    object_id = 0
    held: list[int] = []
    for type_id, (name, (count, size)) in enumerate(OBJECTS[flavour].items(), start=1):
        types.append(dict(id=type_id, class_name=name.encode()))
        for _ in range(count):
            object_id += 1
            objects.append(dict(id=object_id, type_id=type_id, self_size=size))
            if name == "byte[]":
                held.append(object_id)
            else:
                roots.append(object_id)
    caches = [o for o in objects if types[o["type_id"] - 1]["class_name"] == b"com.Cache"]
    for cache, array in zip(caches, held):
        cache["reference_object_id"], cache["reference_field_id"] = [array], [1]
    b.heap_graph(
        70 * MS,
        seq_id=9,
        pid=PID,
        index=0,
        continued=True,
        objects=objects,
        roots=[dict(root_type=3, object_ids=roots)],
    )
    b.heap_graph(
        70 * MS,
        seq_id=9,
        pid=PID,
        index=1,
        types=types,
        field_names=[dict(iid=1, str=b"byte[] com.Cache.buffer")],
    )
    return b.to_bytes()
