"""Owns flow identity: which slice a flow id was last attached to.

Flow events bind to the slice open on their track; each step links the
previous slice of the flow to the new one (trace_processor's FlowTracker).
"""

from __future__ import annotations

from collections.abc import Callable

from ..stats import Stats
from ..storage import Arg, TraceStorage, to_int64


class FlowTracker:
    def __init__(self, storage: TraceStorage, stats: Stats) -> None:
        self.storage = storage
        self.stats = stats
        self._last_slice: dict[int, int] = {}  # flow id -> slice id it was last attached to
        # The args of a flow id's rows, if any (trace_processor gives JSON v1 flows their name and category).
        self.args_of: Callable[[int], list[Arg] | None] | None = None

    def insert(self, slice_out: int, slice_in: int, trace_id: int | None = None) -> None:
        args = self.args_of(trace_id) if self.args_of is not None and trace_id is not None else None
        self.storage.insert(
            "flow",
            (
                slice_out,
                slice_in,
                None if trace_id is None else to_int64(trace_id),
                self.storage.arg_set(args) if args else None,
            ),
        )

    # TrackEvent flow_ids / terminating_flow_ids (flow v2).
    def step_v2(self, flow_id: int, slice_id: int, terminating: bool) -> None:
        prev = self._last_slice.get(flow_id)
        if prev is not None:
            self.insert(prev, slice_id, flow_id)
        if terminating:
            self._last_slice.pop(flow_id, None)
        else:
            self._last_slice[flow_id] = slice_id

    def end_v2(self, flow_id: int, slice_id: int, close: bool) -> None:
        """Links the flow's last slice to this one; an unknown id is ignored, as trace_processor does."""
        prev = self._last_slice.get(flow_id)
        if prev is None:
            return
        self.insert(prev, slice_id, flow_id)
        if close:
            del self._last_slice[flow_id]

    # Legacy v1 flows: s (begin), t (step), f (end).
    def begin(self, flow_id: int, slice_id: int | None) -> None:
        if slice_id is None:
            self.stats.inc("flow_no_enclosing_slice")
            return
        if flow_id in self._last_slice:
            self.stats.inc("flow_duplicate_id")
            return
        self._last_slice[flow_id] = slice_id

    def step(self, flow_id: int, slice_id: int | None) -> None:
        if slice_id is None:
            self.stats.inc("flow_no_enclosing_slice")
            return
        prev = self._last_slice.get(flow_id)
        if prev is None:
            self.stats.inc("flow_step_without_start")
            return
        self.insert(prev, slice_id, flow_id)
        self._last_slice[flow_id] = slice_id

    def bind_pending(self, flow_id: int, slice_id: int) -> None:
        """A v1 flow end without bind_to_enclosing, bound to the next slice that began on its track."""
        prev = self._last_slice.get(flow_id)
        if prev is None:
            self.stats.inc("flow_end_without_start")
            return
        self.insert(prev, slice_id, flow_id)

    def end(self, flow_id: int, slice_id: int | None, bind_enclosing: bool, close: bool) -> None:
        prev = self._last_slice.get(flow_id)
        if prev is None:
            self.stats.inc("flow_end_without_start")
            return
        if bind_enclosing:
            if slice_id is None:
                self.stats.inc("flow_no_enclosing_slice")
                return
            self.insert(prev, slice_id, flow_id)
        # Without bind_to_enclosing the end would bind to the next slice on the
        # track; trace_processor queues it but never binds it, so no row either.
        if close:
            del self._last_slice[flow_id]
