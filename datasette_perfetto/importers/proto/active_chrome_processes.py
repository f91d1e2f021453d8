"""Chrome processes whose data may be incomplete (trace_processor's ActiveChromeProcessesTracker).

At each incremental state reset Chrome lists its live processes (TrackEvent.chrome_active_processes); each
process should then re-emit its descriptor. A listed process with no descriptor within 0.2 s of the listing
lost data: experimental_missing_chrome_processes holds it, with the time its data is complete again from
(its next descriptor, or the next listing if it never sent one again; NULL: never).
"""

from __future__ import annotations

import bisect

# How far from a listing a process's descriptor may be (smaller than Chrome's 5 s reset interval).
MAX_DESCRIPTOR_DISTANCE_NS = 200_000_000


class ActiveProcessesArgs(tuple):
    """The args of a track event carrying ChromeActiveProcesses: the type tells the parser to read its pids
    (the args are built while tokenizing, possibly in another process; a type check costs the others
    nothing)."""

    __slots__ = ()


# The arg keys of listed pids: the TrackEvent field, and ChromeTrackEvent's extension that replaced it.
ACTIVE_PROCESS_PIDS = frozenset({"chrome_active_processes.pid", "active_processes.pid"})


def active_pids(args: tuple) -> list[int]:
    return [a[3] for a in args if a[0] in ACTIVE_PROCESS_PIDS]


class ActiveChromeProcesses:
    def __init__(self) -> None:
        self.descriptors: dict[int, set[int]] = {}  # upid -> its descriptors' times
        self.listings: dict[int, set[int]] = {}  # upid -> times it was listed active
        self.all_listings: set[int] = set()

    def add_descriptor(self, ts: int, upid: int) -> None:
        self.descriptors.setdefault(upid, set()).add(ts)

    def add_listing(self, ts: int, upid: int) -> None:
        self.listings.setdefault(upid, set()).add(ts)
        self.all_listings.add(ts)

    def with_data_loss(self) -> list[tuple[int, int | None]]:
        """(upid, reliable from) of each listed process missing a descriptor near a listing, by upid; the
        last such listing decides."""
        everyone = sorted(self.all_listings)
        out = []
        for upid in sorted(self.listings):
            descriptors = sorted(self.descriptors.get(upid, ()))
            lost, reliable_from = False, None
            for ts in sorted(self.listings[upid]):
                at = bisect.bisect_left(descriptors, ts - MAX_DESCRIPTOR_DISTANCE_NS)
                if at < len(descriptors):
                    if descriptors[at] > ts + MAX_DESCRIPTOR_DISTANCE_NS:  # none near; a later one
                        lost, reliable_from = True, descriptors[at]
                else:  # none near and none later: complete from the next listing it is absent from, if any
                    later = bisect.bisect_right(everyone, ts)
                    lost, reliable_from = True, everyone[later] if later < len(everyone) else None
            if lost:
                out.append((upid, reliable_from))
        return out
