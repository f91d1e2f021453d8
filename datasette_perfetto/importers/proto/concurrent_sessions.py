"""Other tracing sessions seen by the tracing service (ConcurrentSessionEvent) →
one state track per session, as trace_processor's ConcurrentSessionsModule."""

from __future__ import annotations

from ..common.values import text
from .packet_handlers import HandlerContext, packet_handler

STATE_NAMES = {1: "DISABLED", 2: "CONFIGURED", 3: "STARTED", 4: "DISABLING_WAITING_STOP_ACKS", 5: "CLONED_READ_ONLY"}
STATE_DISABLED, STATE_CLONED_READ_ONLY = 1, 5


@packet_handler("concurrent_session_event")
def _session_event(parser: HandlerContext, ts: int, ev) -> None:
    trace = parser.trace
    state = STATE_NAMES.get(ev.state)
    if state is None:
        trace.stats.inc("concurrent_session_event_unknown_state")
        return
    name = text(ev.session_name) or f"Session {ev.session_id}"
    if ev.state == STATE_CLONED_READ_ONLY:
        name += " (clone)"  # a clone shares its parent's name; its first event names the track
    track = trace.tracks.intern("concurrent_tracing_sessions", (("session_id", ev.session_id),), "state", name)
    args = [
        ("consumer_uid", "consumer_uid", "int", ev.consumer_uid),
        ("num_data_sources", "num_data_sources", "int", ev.num_data_sources),
    ]
    trace.states.update(ts, track, state, None, args)
    if ev.state == STATE_DISABLED:
        trace.states.update(ts, track, None)  # terminal: a zero-width marker, not an open state
