"""TrackEvent parsing, in timestamp order: `TrackEventParser` turns tokenized events into
tracks, slices, flows, counters and states with trace_processor's semantics
(track_event_event_importer / track_event_tracker)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...storage import BATCH_ROWS, Arg
from ...trackers.async_track_set import AsyncTrackSet
from ...trackers.process_tracker import (
    NAME_PRIORITY_CHROME_PROCESS_LABEL,
    NAME_PRIORITY_CHROME_RENDERER_LABEL,
    NAME_PRIORITY_PROCESS_TRACK_DESCRIPTOR,
    NAME_PRIORITY_THREAD_TYPE,
    NAME_PRIORITY_TRACK_DESCRIPTOR,
    set_arg,
)
from ...trackers.stack_profile_tracker import StackProfileTracker, for_trace
from ..common.event_kinds import EV_DESCRIPTOR, EV_TRACK_EVENT
from ..common.values import signed
from .active_chrome_processes import ActiveChromeProcesses, ActiveProcessesArgs, active_pids
from .gpu import GpuCorrelatedArgs, GpuState, correlate_track_event, correlated_args
from .track_descriptor import CHROME_RENDERER_TYPES, Reservation, chrome_process_name, chrome_thread_name
from .track_event_args import LogMessageArgs, log_row
from .track_event_extensions import DeferredExtensionArgs, TrackEventExtensions, resolve_deferred
from .track_event_fields import (
    F_ARGS,
    F_CALLSTACK,
    F_CATEGORY,
    F_COUNTER,
    F_EXTRA,
    F_FLOWS,
    F_HAS_TYPE,
    F_HAS_UUID,
    F_LEGACY,
    F_NAME,
    F_TERM_FLOWS,
    F_THREAD,
    F_THREAD_IC,
    F_THREAD_TS,
    F_TYPE,
    F_UUID,
    SLICE_TYPES,
    TYPE_COUNTER,
    TYPE_INSTANT,
    TYPE_SLICE_BEGIN,
    TYPE_SLICE_END,
    TYPE_STATE,
)

if TYPE_CHECKING:
    from .content_analyzer import ProtoContentAnalyzer

_SLICE_PHASES = frozenset("BEXiIRnbeSTpF")
_ASYNC_PHASES = frozenset("benSTpF")  # legacy async events (b/e/n, S/T/p/F)


class TrackEventParser:
    def __init__(
        self,
        trace,
        reservations: dict[int, Reservation],
        first_packet_sequences: set[int],
    ) -> None:
        self.trace = trace
        self.stats = trace.stats
        self.procs = trace.processes
        self.tracks = trace.tracks
        self.slices = trace.slices
        self.flows = trace.flows
        self.reservations = reservations
        self.first_packet_sequences = first_packet_sequences
        self._resolved: dict[int, tuple | None] = {}  # uuid -> (scope, id, is_root)
        self._track_of_uuid: dict[int, Any] = {}  # uuid -> track id or AsyncTrackSet
        self._uuid_by_utid: dict[int, int] = {}
        self._uuid_by_upid: dict[int, int] = {}
        self._v1_flow_ids: dict[tuple, int] = {}
        self._stacks: StackProfileTracker | None = None  # for events that carry a callstack
        self._inline_mapping: int | None = None
        self._v1_flow_args: list[list[Arg]] = []  # v1 flow id -> its flow rows' args
        # track -> v1 flow ends without bind_to_enclosing, bound to the next slice that begins there
        self._pending_v1_flows: dict[int, list[int]] = {}
        self.range_of_interest_ns: int | None = None
        self._track_sets: dict[tuple, AsyncTrackSet] = {}
        self._legacy_async_names: dict[tuple, str] = {}  # async id key -> the first name seen for it
        self._fast: dict[int, tuple] = {}  # uuid -> (utid, slice track) once resolved, for the hot path
        self._counter_tracks: dict[int, tuple[int, int]] = {}  # counter uuid -> (track, builtin kind)
        self._uuid_tracks: dict[int, list] = {}  # uuid -> the track ids / merged sets its events went to
        self._next_id = trace.storage.next_id  # counter rows are appended inline on the hot path
        self._counter_rows = trace.storage.buffer("counter")
        # trace_processor's proto content analysis (ImportOptions.analyze_proto_content, on in its diff
        # tests; content_analyzer.py): every event that reaches the import counts under its (category, name).
        self.content: ProtoContentAnalyzer | None = None  # set by the importer
        self.active_chrome_processes = ActiveChromeProcesses()
        self.extensions = TrackEventExtensions()  # the importer's, set by it: all the trace declares
        # The GPU events' state (render stages a gpu_correlation links to), set by the importer.
        self.gpu_state: Callable[[], GpuState] | None = None

    # -- descriptors -------------------------------------------------------------
    def parse(self, ts: int, ev: tuple) -> None:
        kind = ev[0]
        if kind == EV_TRACK_EVENT:
            if self.range_of_interest_ns is not None and ts < self.range_of_interest_ns:
                self.stats.inc("track_event_dropped_packets_outside_of_range_of_interest")
                return
            args_type = type(ev[F_ARGS])
            if args_type is DeferredExtensionArgs:
                resolved = correlated_args(resolve_deferred(self.extensions, ev[F_ARGS], self.stats))
                ev = (*ev[:F_ARGS], resolved, *ev[F_ARGS + 1 :])
            elif args_type is ActiveProcessesArgs or args_type is LogMessageArgs:
                get_process = self.procs.get_or_create_process
                for pid in active_pids(ev[F_ARGS]):
                    self.active_chrome_processes.add_listing(ts, get_process(pid))
                if args_type is LogMessageArgs:  # its android_logs row needs the event's thread
                    self._general_event(ts, ev)
                    return
            if ev[F_LEGACY] is None:
                fast = self._fast.get(ev[F_UUID])
                if fast is not None and ev[F_TYPE] in SLICE_TYPES and ev[F_CALLSTACK] is None:
                    if self.content is not None:
                        self.content.track_event(ev)
                    self._fast_slice_event(ts, ev, fast[0], fast[1])
                    return
            self._general_event(ts, ev)
        elif kind == EV_DESCRIPTOR:
            self._descriptor(ts, ev)
        else:
            _, _, pid, tid, name, *_ = ev
            utid = self.procs.update_thread(tid, pid)
            self.procs.set_thread_name(utid, name, NAME_PRIORITY_TRACK_DESCRIPTOR)

    def _descriptor(self, ts: int, ev: tuple) -> None:
        _, uuid, pid, tid, thread_name, cmdline, process_name, start_ts, chrome, labels, sort_index = ev
        if uuid is not None and self.resolve(uuid) is None:
            self.stats.inc("track_event_parser_errors")
            return
        if tid is not None:
            utid = self.procs.update_thread(tid, pid)
            if thread_name:
                self.procs.set_thread_name(utid, thread_name, NAME_PRIORITY_TRACK_DESCRIPTOR)
            elif chrome is not None:
                self.procs.set_thread_name(utid, chrome_thread_name(chrome), NAME_PRIORITY_THREAD_TYPE)
            return
        upid = self._uuid_upid(uuid) if uuid is not None else self.procs.get_or_create_process(pid)
        self.active_chrome_processes.add_descriptor(ts, upid)
        proc = self.procs.process(upid)
        self.procs.set_process_name(upid, process_name, NAME_PRIORITY_PROCESS_TRACK_DESCRIPTOR)
        if cmdline:
            # trace_processor drops the cmdline of track-event processes; it is too useful to lose.
            proc.cmdline = " ".join(cmdline)
        if start_ts and proc.start_ts is None:
            proc.start_ts = start_ts
        if chrome is not None:
            ptype, host_app, crash_id, *legacy = chrome  # legacy: ProcessDescriptor.chrome_process_type, a name only
            if ptype is not None:
                label = chrome_process_name(ptype)
                self.procs.set_process_name(
                    upid,
                    label,
                    NAME_PRIORITY_CHROME_RENDERER_LABEL
                    if ptype in CHROME_RENDERER_TYPES
                    else NAME_PRIORITY_CHROME_PROCESS_LABEL,
                )
            if not legacy:
                # Always there (NULL for an unspecified or unknown type), as in trace_processor.
                set_arg(
                    proc, "chrome.process_type", "string", chrome_process_name(ptype) if ptype is not None else None
                )
            if host_app:
                set_arg(proc, "chrome.host_app_package_name", "string", host_app)
            if crash_id is not None:
                set_arg(proc, "chrome.crash_trace_id", "uint", crash_id)  # an UnsignedInteger, as trace_processor's
        if labels:
            for i, label in enumerate(labels):
                k = f"chrome.process_label[{i}]"
                proc.args[k] = ("chrome.process_label", k, "string", label)

    def _uuid_upid(self, uuid: int) -> int:
        res = self.resolve(uuid)
        return res[1] if res and res[0] == "process" else self.procs.get_or_create_process(self.reservations[uuid].pid)

    def resolve(self, uuid: int) -> tuple | None:
        """(scope, utid|upid|None, is_root) for a descriptor uuid; None if invalid."""
        if uuid in self._resolved:
            return self._resolved[uuid]
        self._resolved[uuid] = None  # guards against parent loops
        r = self.reservations.get(uuid)
        if r is None:
            r = self.reservations[uuid] = Reservation(uuid)
            if uuid == 0:
                r.name = "Default Track"
        depth = 0
        p = r.parent_uuid
        seen = {uuid}
        while p:
            if p in seen:
                self.stats.inc("track_event_track_hierarchy_loop")
                return None
            seen.add(p)
            depth += 1
            if depth > 100:
                self.stats.inc("track_event_track_hierarchy_too_deep")
                return None
            pr = self.reservations.get(p)
            p = pr.parent_uuid if pr else 0
        parent = self.resolve(r.parent_uuid) if r.parent_uuid else None
        if r.tid is not None:
            utid = self.procs.update_thread(r.tid, r.pid)
            if utid in self._uuid_by_utid and self._uuid_by_utid[utid] != uuid:
                # tid reuse: a new descriptor for a known thread starts a new thread.
                utid = self.procs.start_new_thread(None, r.tid)
                self.procs.update_thread(r.tid, r.pid)
            self._uuid_by_utid[utid] = uuid
            if r.sibling_order_rank is not None and self._explicit_ordering("thread_ordering"):
                set_arg(self.procs.thread(utid), "thread_sort_index_hint", "int", r.sibling_order_rank)
            result = ("thread", utid, True)
        elif r.pid is not None:
            upid = self.procs.get_or_create_process(r.pid)
            if upid in self._uuid_by_upid and self._uuid_by_upid[upid] != uuid:
                upid = self.procs.start_new_process(r.pid)
            self._uuid_by_upid[upid] = uuid
            if r.sibling_order_rank is not None and self._explicit_ordering("process_ordering"):
                set_arg(self.procs.process(upid), "process_sort_index_hint", "int", r.sibling_order_rank)
            result = ("process", upid, True)
        elif parent is not None and parent[0] != "global":
            result = (parent[0], parent[1], False)
        else:
            result = ("global", None, False)
        self._resolved[uuid] = result
        return result

    def _explicit_ordering(self, which: str) -> bool:
        root = self.reservations.get(0)
        return root is not None and getattr(root, which) == "explicit"

    # -- tracks ------------------------------------------------------------------
    def _source_args(self, r: Reservation, is_root_in_scope: bool) -> list[Arg]:
        out: list[Arg] = [
            ("source", "source", "string", "descriptor"),
            ("trace_id", "trace_id", "int", signed(r.uuid)),
            ("is_root_in_scope", "is_root_in_scope", "bool", int(is_root_in_scope)),
        ]
        c = r.counter
        if c is not None:
            if c.category:
                out.append(("category", "category", "string", c.category))
            if c.builtin_type:
                out.append(("builtin_counter_type", "builtin_counter_type", "string", c.builtin_type))
            if c.y_axis_share_key:
                out.append(("y_axis_share_key", "y_axis_share_key", "string", c.y_axis_share_key))
        if r.seq_id is not None and r.seq_id in self.first_packet_sequences:
            out.append(("has_first_packet_on_sequence", "has_first_packet_on_sequence", "bool", 1))
        if r.child_ordering:
            out.append(("child_ordering", "child_ordering", "string", r.child_ordering))
        if r.sibling_order_rank is not None:
            out.append(("sibling_order_rank", "sibling_order_rank", "int", r.sibling_order_rank))
        if r.description:
            out.append(("description", "description", "string", r.description))
        return out

    def _new_track(
        self, type: str, dims: tuple, r: Reservation, name, is_root: bool, event_type: str, parent_id: int | None
    ) -> int:
        unit = r.counter.unit if r.counter else None
        track_id = self.tracks.intern(type, dims, event_type, name, unit)
        row = self.tracks.row(track_id)
        if not row.source_args:
            row.source_args = self._source_args(r, is_root)
        if parent_id is not None:
            row.parent_id = parent_id
        return track_id

    def descriptor_track(self, uuid: int, event_name: str | None):
        """Track id (or merged group) for events on descriptor uuid."""
        found = self._track_of_uuid.get(uuid)
        if found is not None:
            return found
        res = self.resolve(uuid)
        if res is None:
            return None
        scope, owner, is_root = res
        r = self.reservations[uuid]
        event_type = "counter" if r.counter else "state" if r.is_state else "slice"
        parent_id = None
        parent_res = None
        if r.parent_uuid:
            parent_id = self._parent_track(r.parent_uuid)
            parent_res = self.resolve(r.parent_uuid)
        suuid = signed(uuid)
        if is_root:
            if scope == "thread":
                if r.counter:
                    t = self._new_track(
                        "thread_counter_track_event",
                        (("utid", owner), ("track_uuid", suuid)),
                        r,
                        r.name,
                        True,
                        "counter",
                        None,
                    )
                elif r.use_separate_track:
                    t = self._new_track(
                        "thread_state_track_event" if r.is_state else "thread_track_event",
                        (("utid", owner), ("track_uuid", suuid)),
                        r,
                        r.name,
                        True,
                        event_type,
                        None,
                    )
                else:
                    t = self.thread_track(owner)
            else:
                typ = (
                    "process_counter_track_event"
                    if r.counter
                    else "process_state_track_event"
                    if r.is_state
                    else "process_track_event"
                )
                t = self._new_track(
                    typ,
                    (("upid", owner), ("track_uuid", suuid)),
                    r,
                    self._process_track_name(r.name),
                    True,
                    event_type,
                    None,
                )
            self._track_of_uuid[uuid] = t
            self._record_uuid_track(uuid, t)
            return t
        name = r.name if r.name is not None else event_name
        # Named by the first event: the track is only final once it has a name.
        cacheable = r.name is not None or event_name is not None
        if parent_id is not None and parent_res is not None and parent_res[0] in ("thread", "process"):
            pscope, powner, proot = parent_res
            dim = "utid" if pscope == "thread" else "upid"
            set_parent = None if proot else parent_id
            if pscope == "process":
                name = self._process_track_name(name)
            if r.counter:
                t = self._new_track(
                    f"{pscope}_counter_track_event",
                    ((dim, powner), ("track_uuid", suuid)),
                    r,
                    self._process_track_name(r.name) if pscope == "process" else r.name,
                    False,
                    "counter",
                    set_parent,
                )
            elif r.merge is None or r.is_state:
                typ = f"{pscope}_state_track_event" if r.is_state else f"{pscope}_track_event"
                t = self._new_track(typ, ((dim, powner), ("track_uuid", suuid)), r, name, False, event_type, set_parent)
            else:
                key = r.merge_key if r.merge == "key" else name
                mtype = 2 if r.merge == "key" else 0
                t = self._merged_group(
                    f"{pscope}_merged_track_event",
                    (
                        (dim, powner),
                        ("parent_track_uuid", signed(r.parent_uuid)),
                        ("merge_key_type", mtype),
                        ("merge_key_value", key),
                    ),
                    r,
                    name,
                    set_parent,
                )
        else:
            is_root_in_scope = uuid == 0
            if r.counter:
                t = self._new_track(
                    "global_counter_track_event",
                    (("track_uuid", suuid),),
                    r,
                    r.name,
                    is_root_in_scope,
                    "counter",
                    parent_id,
                )
            elif r.merge is None or r.is_state:
                typ = "global_state_track_event" if r.is_state else "global_track_event"
                t = self._new_track(typ, (("track_uuid", suuid),), r, name, is_root_in_scope, event_type, parent_id)
            else:
                key = r.merge_key if r.merge == "key" else name
                mtype = 2 if r.merge == "key" else 0
                t = self._merged_group(
                    "global_merged_track_event",
                    (
                        ("parent_track_uuid", signed(r.parent_uuid)),
                        ("merge_key_type", mtype),
                        ("merge_key_value", key),
                    ),
                    r,
                    name,
                    parent_id,
                    is_root_in_scope,
                )
        if cacheable:
            self._track_of_uuid[uuid] = t
        self._record_uuid_track(uuid, t)
        return t

    def _record_uuid_track(self, uuid: int, t) -> None:
        seen = self._uuid_tracks.setdefault(uuid, [])
        if not any(x is t or x == t for x in seen):
            seen.append(t)

    def tracks_of_descriptor(self, uuid: int) -> list[int]:
        """Every track that stands for descriptor `uuid` so far (a merged group: each of its tracks)."""
        out: list[int] = []
        for t in self._uuid_tracks.get(uuid, ()):
            out.extend(t.tracks if isinstance(t, AsyncTrackSet) else (t,))
        return out

    def descriptor_track_id(self, uuid: int) -> int | None:
        """The track of descriptor `uuid`, created if no event made it yet (a declaration's track)."""
        return self._parent_track(uuid)

    def _process_track_name(self, name: str | None) -> str | None:
        """Process-scoped track names go through the trace's process_track_name renames."""
        return self.trace.process_track_name_map.get(name, name) if name is not None else None

    def _merged_group(self, type: str, dims: tuple, r: Reservation, name, parent_id, is_root_in_scope=False):
        def make(idx: int, _event_name: str | None) -> int:
            return self._new_track(
                type, dims + (("track_compressor_idx", idx),), r, name, is_root_in_scope, "slice", parent_id
            )

        return self._track_set(type, dims, make)

    def _track_set(self, type: str, dims: tuple, make: Callable[[int, str | None], int]) -> AsyncTrackSet:
        key = (type, dims)
        track_set = self._track_sets.get(key)
        if track_set is None:
            group_id = self.trace.new_track_group()  # numbered as first used, across importers

            def make_grouped(idx: int, event_name: str | None) -> int:
                track_id = make(idx, event_name)
                self.tracks.row(track_id).track_group_id = group_id
                return track_id

            track_set = self._track_sets[key] = AsyncTrackSet(make_grouped)
        return track_set

    def _parent_track(self, uuid: int) -> int | None:
        t = self.descriptor_track(uuid, None)
        if isinstance(t, AsyncTrackSet):
            return t.default()
        return t

    def thread_track(self, utid: int) -> int:
        return self.tracks.intern("thread_execution", (("utid", utid),), "slice")

    def _slice_track(self, t, uuid: int, kind: str) -> int | None:
        if isinstance(t, AsyncTrackSet):
            return t.track_for(uuid, kind)
        return t

    # -- events ----------------------------------------------------------------------
    def _fast_slice_event(self, ts: int, ev: tuple, utid: int | None, track: int) -> None:
        """The common case, with every lookup already cached: a typed slice
        event on a descriptor track that is a plain (unmerged) track. Same
        semantics as _general_event, which filled the cache."""
        thread_ts = ev[F_THREAD_TS]
        thread_ic = ev[F_THREAD_IC]
        insert = self.trace.storage.insert
        if utid is not None:
            if thread_ts is not None:
                insert("counter", (ts, self._thread_counter_track(utid, "thread_time"), float(thread_ts), None))
            if thread_ic is not None:
                insert("counter", (ts, self._thread_counter_track(utid, "thread_instructions"), float(thread_ic), None))
        extra = ev[F_EXTRA]
        if extra:
            counter_tracks = self._counter_tracks
            rows = self._counter_rows
            ids = self._next_id
            for cuuid, value in extra:
                entry = counter_tracks.get(cuuid)
                if entry is None:
                    entry = self._counter_track_entry(cuuid)
                    if entry is None:
                        continue
                t, builtin = entry
                counter_id = ids["counter"]
                ids["counter"] = counter_id + 1
                rows.append((counter_id, ts, t, value, None))
                if len(rows) >= BATCH_ROWS:
                    self.trace.storage.flush("counter")
                if builtin == 1:
                    thread_ts = int(value)
                elif builtin == 2:
                    thread_ic = int(value)
        etype = ev[F_TYPE]
        args = ev[F_ARGS]
        if etype == TYPE_SLICE_BEGIN:
            slice_id = self.slices.begin(
                ts,
                track,
                ev[F_CATEGORY],
                ev[F_NAME],
                args,
                thread_ts if utid is not None else None,
                thread_ic if utid is not None else None,
            )
            if self._pending_v1_flows and slice_id is not None:
                self._bind_pending_flows(track, slice_id)
        elif etype == TYPE_SLICE_END:
            slice_id = self.slices.end(ts, track, ev[F_CATEGORY], ev[F_NAME], args, thread_ts, thread_ic)
        else:
            slice_id = self.slices.scoped(
                ts,
                0,
                track,
                ev[F_CATEGORY],
                ev[F_NAME],
                args,
                thread_ts if utid is not None else None,
                0 if (utid is not None and thread_ts is not None) else None,
            )
            if self._pending_v1_flows and slice_id is not None:
                self._bind_pending_flows(track, slice_id)
        if slice_id is not None and (ev[F_FLOWS] or ev[F_TERM_FLOWS] or type(args) is GpuCorrelatedArgs):
            self._flows(slice_id, ev, None)

    def _thread_counter_track(self, utid: int, kind: str) -> int:
        return self.tracks.intern(
            kind, (("utid", utid),), "counter", "thread_time" if kind == "thread_time" else "thread_instruction_count"
        )

    def _counter_track_entry(self, cuuid: int) -> tuple[int, int] | None:
        t = self.descriptor_track(cuuid, None)
        if t is None or isinstance(t, AsyncTrackSet):
            return None
        cname = self.tracks.row(t).name
        entry = (t, 1 if cname == "thread_time" else 2 if cname == "thread_instruction_count" else 0)
        self._counter_tracks[cuuid] = entry
        return entry

    def _general_event(self, ts: int, ev: tuple) -> None:
        etype = ev[F_TYPE]
        legacy = ev[F_LEGACY]
        phase = legacy.get("phase") if legacy else None
        if not etype and not phase:
            self.stats.inc("track_event_parser_errors")
            return
        if self.content is not None:
            self.content.track_event(ev)
        owners = self._event_owners(ev, legacy, phase)
        if owners is None:
            self.stats.inc("track_event_parser_errors")
            return
        utid, upid, passthrough_utid, fallback = owners
        if utid is not None and type(ev[F_ARGS]) is LogMessageArgs:  # as trace_processor, only a thread's
            self.trace.insert_log(ts, utid, *log_row(ev[F_ARGS]))
        thread_ts, thread_ic = self._thread_counters(ts, ev, utid)
        uuid, name = ev[F_UUID], ev[F_NAME]
        if etype == TYPE_COUNTER:
            t = self._association(uuid, fallback, utid, upid, name, legacy, "counter")
            if t is not None:
                self.trace.insert_counter(ts, t, ev[F_COUNTER], self._untranslated(ev[F_ARGS]))
            return
        if etype == TYPE_STATE:
            self._state_event(ts, ev, fallback)
            return
        if phase is None:
            phase = _phase_of_type(etype, utid)
            if phase is None:
                self.stats.inc("track_event_parser_errors")
                return
        category = ev[F_CATEGORY]
        args = list(ev[F_ARGS]) if ev[F_ARGS] else []
        if phase in ("B", "E", "X") and utid is None:
            self.stats.inc("track_event_parser_errors")
            return
        if phase == "X" and legacy.get("duration_us", 0) < 0:
            self.stats.inc("track_event_parser_errors")  # a complete event of negative duration
            return
        if phase in ("s", "t", "f"):
            self._flow_v1(phase, legacy, category, name, uuid, fallback, utid, upid)
            return
        if phase == "M":
            self._metadata_event(utid, upid, name, args)
            return
        if phase not in _SLICE_PHASES:
            # trace_processor keeps other legacy phases (e.g. 'P' V8 samples) only
            # in its raw/profiler tables; they make no slice.
            return
        t = self._slice_event_track(phase, ev, args, (utid, upid, passthrough_utid, fallback))
        if t is None:
            return
        if phase in ("S", "T", "p", "R"):
            args.append(("legacy_event.phase", "legacy_event.phase", "string", phase))
        slice_id = self._slice(ts, phase, t, category, name, args, legacy, utid, thread_ts, thread_ic)
        if ev[F_CALLSTACK] is not None and slice_id is not None:
            self._callstack_row(slice_id, t, ev[F_CALLSTACK], etype == TYPE_SLICE_END, upid)
        if self._pending_v1_flows and slice_id is not None and phase not in ("E", "e", "F"):
            self._bind_pending_flows(t, slice_id)
        if slice_id is not None and phase not in ("T", "p"):
            self._flows(slice_id, ev, legacy)

    def _event_owners(self, ev: tuple, legacy: dict | None, phase: str | None) -> tuple | None:
        """(utid, upid, passthrough utid, fallback) of an event: the thread and process it
        belongs to, the thread recorded in its args, and whether it falls back to its
        sequence's thread (no track uuid); None if invalid."""
        uuid = ev[F_UUID]
        thread = ev[F_THREAD]
        utid = upid = passthrough_utid = None
        fallback = False
        if uuid:
            res = self.resolve(uuid)
            if res is None:
                return None
            utid, upid, passthrough_utid = self._descriptor_owners(res, thread)
        else:
            valid = thread is not None
            fallback = (not ev[F_HAS_UUID] or not ev[F_HAS_TYPE]) and valid
            if legacy and "pid_override" in legacy:
                fallback = True
            if legacy and "tid_override" in legacy and valid:
                fallback = True
            if fallback:
                utid = self._fallback_thread(thread, legacy)
                if utid is None:
                    return None
                upid = self.procs.thread(utid).upid
        if phase in _ASYNC_PHASES:
            passthrough_utid = utid
        elif phase in ("i", "I") and legacy is not None:  # a phase comes from legacy
            scope = legacy.get("instant_event_scope", 0)
            if scope in (0, 3):
                if utid is None:
                    return None
            elif scope == 1:
                passthrough_utid, utid = utid, None
            elif scope == 2:
                if upid is None:
                    return None
                passthrough_utid, utid = utid, None
        return utid, upid, passthrough_utid, fallback

    def _descriptor_owners(self, resolved: tuple, thread: tuple | None) -> tuple[int | None, int | None, int | None]:
        """(utid, upid, passthrough utid) of an event on a descriptor's track."""
        scope, owner, _ = resolved
        utid = upid = passthrough_utid = None
        if scope == "thread":
            utid = owner
            upid = self.procs.thread(utid).upid
        elif scope == "process":
            upid = owner
            if thread is not None:
                candidate = self.procs.update_thread(thread[1], thread[0])
                if self.procs.thread(candidate).upid == upid:
                    passthrough_utid = candidate
        elif thread is not None:
            passthrough_utid = self.procs.update_thread(thread[1], thread[0])
        return utid, upid, passthrough_utid

    def _fallback_thread(self, thread: tuple | None, legacy: dict | None) -> int | None:
        """The utid of an event without a track uuid: its sequence's thread, or the legacy
        event's pid/tid overrides; None if that names no thread."""
        pid, tid = thread if thread else (0, 0)
        if legacy and "pid_override" in legacy:
            pid = legacy["pid_override"]
            tid = -1  # trace_processor makes a synthetic tid here
        if legacy and "tid_override" in legacy:
            tid = legacy["tid_override"]
        if not pid or not tid:
            return None
        return self.procs.update_thread(tid, pid)

    def _thread_counters(self, ts: int, ev: tuple, utid: int | None) -> tuple[int | None, int | None]:
        """Writes the thread time and extra counter values an event carries; returns its
        (thread time, thread instruction count), built-in extra counters included."""
        thread_ts = ev[F_THREAD_TS]
        thread_ic = ev[F_THREAD_IC]
        # Thread time carried on the event itself becomes per-thread counters.
        if utid is not None:
            if thread_ts is not None:
                self.trace.insert_counter(ts, self._thread_counter_track(utid, "thread_time"), float(thread_ts))
            if thread_ic is not None:
                self.trace.insert_counter(ts, self._thread_counter_track(utid, "thread_instructions"), float(thread_ic))
        if ev[F_EXTRA]:
            for cuuid, value in ev[F_EXTRA]:
                entry = self._counter_tracks.get(cuuid) or self._counter_track_entry(cuuid)
                if entry is None:
                    continue
                t, builtin = entry
                self.trace.insert_counter(ts, t, value)
                if builtin == 1:
                    thread_ts = int(value)
                elif builtin == 2:
                    thread_ic = int(value)
        return thread_ts, thread_ic

    def _state_event(self, ts: int, ev: tuple, fallback: bool) -> None:
        uuid = ev[F_UUID]
        if not uuid and fallback:
            self.stats.inc("track_event_parser_errors")  # no state on legacy pid/tid tracks
            return
        t = self.descriptor_track(uuid, ev[F_NAME])
        r = self.reservations.get(uuid)
        if t is None or r is None or not r.is_state or isinstance(t, AsyncTrackSet):
            # Only a descriptor declared as a state track takes state events.
            self.stats.inc("track_event_parser_errors")
            return
        self._state(ts, t, ev[F_CATEGORY], ev[F_NAME], self._untranslated(ev[F_ARGS]))

    def _slice_event_track(self, phase: str, ev: tuple, args: list, owners: tuple) -> int | None:
        """The track of a slice event (adding the passthrough utid to an async event's args)."""
        utid, upid, passthrough_utid, fallback = owners
        uuid, legacy, category, name = ev[F_UUID], ev[F_LEGACY], ev[F_CATEGORY], ev[F_NAME]
        if phase in _ASYNC_PHASES and legacy is not None:
            t = self._legacy_async_track(legacy, category, name, upid, args)
            if t is not None and passthrough_utid is not None and phase not in ("e", "F"):
                # An end's thread does not replace the one recorded by its begin.
                args.append(("legacy_event.passthrough_utid", "legacy_event.passthrough_utid", "int", passthrough_utid))
            return t
        if phase in ("i", "I") and legacy and legacy.get("instant_event_scope", 0) in (1, 2):
            if legacy.get("instant_event_scope") == 1:
                t = self.tracks.intern("legacy_chrome_global_instants", (), "slice")
            else:
                t = self.tracks.intern("chrome_process_instant", (("upid", upid),), "slice")
            row = self.tracks.row(t)
            if not row.source_args:
                row.source_args = [("source", "source", "string", "chrome")]
            return t
        if phase == "B" or phase == "b" or phase == "S":
            kind = "begin"
        elif phase == "E" or phase == "e" or phase == "F":
            kind = "end"
        else:
            kind = "legacy" if phase == "X" else "instant"
        t = self._association(uuid, fallback, utid, upid, name, legacy, kind)
        if (
            t is not None
            and legacy is None
            and uuid
            and not isinstance(self._track_of_uuid.get(uuid), AsyncTrackSet)
            and uuid in self._track_of_uuid
        ):
            self._fast[uuid] = (utid, t)
        return t

    def _slice(self, ts, phase, t, category, name, args, legacy, utid, thread_ts, thread_ic) -> int | None:
        """Begins, ends or adds the slice of a slice event; its id, or None."""
        if phase in ("B", "b", "S"):
            return self.slices.begin(
                ts,
                t,
                category,
                name,
                args,
                thread_ts if utid is not None else None,
                thread_ic if utid is not None else None,
            )
        if phase in ("E", "e", "F"):
            return self.slices.end(ts, t, category, name, args, thread_ts, thread_ic)
        if phase == "X":
            dur = legacy.get("duration_us", 0) * 1000
            tdur = legacy.get("thread_duration_us", 0) * 1000 if thread_ts is not None else None
            return self.slices.scoped(ts, dur, t, category, name, args, thread_ts, tdur)
        if phase in ("i", "I", "R", "n", "T", "p"):
            return self.slices.scoped(
                ts,
                0,
                t,
                category,
                name,
                args,
                thread_ts if utid is not None else None,
                0 if (utid is not None and thread_ts is not None) else None,
            )
        self.stats.inc("track_event_parser_errors")
        return None

    def _association(self, uuid, fallback, utid, upid, name, legacy, kind) -> int | None:
        """The track of an event; kind "legacy" (complete events, v1 flows) takes only a plain
        descriptor track, never a merged set (trace_processor's InternDescriptorTrackLegacy)."""
        if not uuid and fallback:
            return self.thread_track(utid)
        t = self.descriptor_track(uuid, name)
        if t is None or (kind == "legacy" and isinstance(t, AsyncTrackSet)):
            self.stats.inc("track_event_parser_errors")
            return None
        return self._slice_track(t, uuid, kind)

    def _legacy_async_track(self, legacy, category, name, upid, args) -> int | None:
        """The track of a legacy async event (b/e/n, S/T/p/F), as trace_processor's
        InternLegacyAsyncTrack: one track set per (scope, first name of the id)."""
        phase = legacy.get("phase")
        scoped_to_process = False
        if "unscoped_id" in legacy:
            source_id = legacy["unscoped_id"]
        elif "global_id" in legacy:
            source_id = legacy["global_id"]
        elif "local_id" in legacy:
            if upid is None:
                self.stats.inc("track_event_parser_errors")
                return None
            source_id = legacy["local_id"]
            scoped_to_process = True
        else:
            self.stats.inc("track_event_parser_errors")
            return None
        source_id = signed(source_id)
        args.insert(0, ("legacy_trace_source_id", "legacy_trace_source_id", "int", source_id))
        id_scope = name if phase in ("S", "T", "p", "F") else category
        if "id_scope" in legacy:
            id_scope = f"{category}:{legacy['id_scope']}"
        upid = upid or 0
        root_key: tuple
        if scoped_to_process:
            name = self._process_track_name(name)
            root_key = ("process", upid, source_id)
        else:
            root_key = ("global", source_id)
        root_name = self._legacy_async_names.setdefault(root_key, name)
        dims: tuple[tuple[str, object], ...]
        if scoped_to_process:
            typ, dims = "legacy_async_process_slice", (("upid", upid), ("scope", id_scope), ("name", root_name))
        else:
            typ, dims = "legacy_async_global_slice", (("scope", id_scope), ("name", root_name))
        source_args = [
            ("source", "source", "string", "chrome"),
            ("trace_id_is_process_scoped", "trace_id_is_process_scoped", "bool", int(scoped_to_process)),
            ("upid", "upid", "uint", upid),
            ("source_scope", "source_scope", "string", id_scope),
        ]

        def make(idx: int, _event_name: str | None) -> int:  # named after the event that made the set
            track_id = self.tracks.create(typ, dims + (("track_compressor_idx", idx),), "slice", name)
            self.tracks.row(track_id).source_args = source_args
            return track_id

        # trace_processor's mapping, as coded there: 'F' (async end) counts as
        # an instant and 'T' (step) as an end.
        kind = "begin" if phase in ("b", "S") else "end" if phase in ("e", "T") else "instant"
        return self._track_set(typ, dims, make).track_for(source_id, kind)

    def _flows(self, slice_id: int, ev: tuple, legacy) -> None:
        if legacy and "bind_id" in legacy:
            direction = legacy.get("flow_direction")
            bind_id = legacy["bind_id"]
            if direction == 1:  # FLOW_IN
                self.flows.end_v2(bind_id, slice_id, close=False)
            elif direction == 2:  # FLOW_OUT
                self.flows.begin(bind_id, slice_id)
            elif direction == 3:  # FLOW_INOUT
                self.flows.step(bind_id, slice_id)
            else:
                self.stats.inc("flow_without_direction")
        if ev[F_FLOWS]:
            for fid in ev[F_FLOWS]:
                self.flows.step_v2(fid, slice_id, terminating=False)
        if ev[F_TERM_FLOWS]:
            for fid in ev[F_TERM_FLOWS]:
                self.flows.end_v2(fid, slice_id, close=True)
        if type(ev[F_ARGS]) is GpuCorrelatedArgs and self.gpu_state is not None:
            correlate_track_event(self.gpu_state(), slice_id, ev[F_ARGS])

    def _flow_v1(self, phase, legacy, category, name, uuid, fallback, utid, upid) -> None:
        if not legacy or "unscoped_id" not in legacy:
            self.stats.inc("flow_invalid_id")
            return
        key = (legacy["unscoped_id"], category, name)
        flow_id = self._v1_flow_ids.get(key)
        if flow_id is None:
            # Numbered from 0 as first seen, in the id space of v2 flow ids (as trace_processor's
            # FlowTracker); their flow rows carry the event's name and category.
            flow_id = self._v1_flow_ids[key] = len(self._v1_flow_ids)
            self._v1_flow_args.append([("name", "name", "string", name), ("cat", "cat", "string", category)])
            self.flows.args_of = self._flow_args
        t = self._association(uuid, fallback, utid, upid, name, legacy, "legacy")
        if t is None:
            return
        if phase == "f" and not legacy.get("bind_to_enclosing"):
            # Binds to the next slice that begins on the track, whatever made it.
            self._pending_v1_flows.setdefault(t, []).append(flow_id)
            return
        top = self.slices.top_slice(t)
        if phase == "s":
            self.flows.begin(flow_id, top)
        elif phase == "t":
            self.flows.step(flow_id, top)
        else:
            self.flows.end(flow_id, top, True, close=False)

    def _callstack_row(self, slice_id: int, track: int, callstack: tuple, is_end: bool, upid: int | None) -> None:
        """The stack a slice event carries (inline frames, or interned ones resolved for the
        event's process), as the slice's begin or end callsite."""
        kind, frames, weight = callstack
        if self._stacks is None:
            self._stacks = for_trace(self.trace)[0]
        stacks = self._stacks
        if kind == "inline":
            if self._inline_mapping is None:
                self._inline_mapping = stacks.dummy_mapping("track_event_inline")
            mapping = self._inline_mapping
            callsite = stacks.callstack([stacks.dummy_frame(mapping, *frame) for frame in frames])
        elif frames is None:
            self.stats.inc("track_event_parser_errors")  # an interned callstack that cannot be used
            return
        else:
            callsite = stacks.resolved_callstack(frames, upid)
        if callsite is None:
            return
        self.trace.storage.insert(
            "__intrinsic_track_event_callstacks",
            (slice_id, track, None if is_end else callsite, callsite if is_end else None, weight),
        )

    def _flow_args(self, flow_id: int) -> list[Arg] | None:
        return self._v1_flow_args[flow_id] if 0 <= flow_id < len(self._v1_flow_args) else None

    def _bind_pending_flows(self, track: int, slice_id: int) -> None:
        waiting = self._pending_v1_flows.pop(track, None)
        if waiting:
            for flow_id in waiting:
                self.flows.bind_pending(flow_id, slice_id)

    def _metadata_event(self, utid, upid, name, args) -> None:
        """Legacy 'M' events: thread_name / process_name take the string of the event's first
        debug annotation (empty: nothing); other names are kept only in trace_processor's raw
        table, an error only without a thread."""
        if name == "thread_name" or name == "process_name":
            owner = utid if name == "thread_name" else upid
            if owner is None or not args:  # no thread / process, or no debug annotation
                self.stats.inc("track_event_parser_errors")
                return
            flat_key, key, kind, value = args[0][:4]
            if kind != "string" or flat_key != key or key.count(".") != 1 or not value:
                return  # the first annotation is no plain string
            if name == "thread_name":
                self.procs.set_thread_name(owner, value, NAME_PRIORITY_THREAD_TYPE)
            else:
                self.procs.set_process_name(owner, value, NAME_PRIORITY_PROCESS_TRACK_DESCRIPTOR)
        elif name is None or utid is None:
            self.stats.inc("track_event_parser_errors")

    def _untranslated(self, args):
        """The args of an event that is no slice: only slices' args are translated (as in trace_processor), but
        a mojo method's mapping still gets its id."""
        return self.trace.args_translation.with_mapping_ids(args) if args and self.trace.args_translation.keys else args

    def _state(self, ts: int, track_id: int, category, value, args) -> None:
        self.trace.states.update(ts, track_id, value, category, args)

    def finish(self) -> None:
        self.trace.states.finish()
        for upid, reliable_from in self.active_chrome_processes.with_data_loss():
            self.trace.storage.insert("experimental_missing_chrome_processes", (upid, reliable_from))
        if self.content is not None:
            self.content.finish()  # experimental_proto_path / _content, and each annotation's arg set


def _phase_of_type(etype: int, utid: int | None) -> str | None:
    """The legacy phase of a typed slice event (async ones without a thread); None for another type."""
    phase = {TYPE_SLICE_BEGIN: "B", TYPE_SLICE_END: "E", TYPE_INSTANT: "i"}.get(etype)
    if phase is not None and utid is None:
        phase = phase.lower() if phase != "i" else "n"
    return phase
