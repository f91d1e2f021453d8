"""Import statistics, named and classified exactly as trace_processor does.

The registry is trace_processor's own list (stats.tsv, taken from its
stats.h) plus a few of ours for failures trace_processor reports in other
ways (a truncated file, an undecodable packet).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class StatSpec:
    name: str
    indexed: bool
    severity: str  # info | notice | data_loss | error
    source: str  # trace | analysis
    scope: str  # global | machine_and_trace | ...
    description: str


# Ours: trace_processor fails the whole import (or says nothing) in these cases;
# we import what is valid and count the rest.
EXTRA_STATS = (
    StatSpec(
        "proto_tokenizer_truncated_packet",
        False,
        "data_loss",
        "analysis",
        "machine_and_trace",
        "The file ended in the middle of a TracePacket (truncated trace); the partial packet was dropped.",
    ),
    StatSpec(
        "proto_tokenizer_corrupt_data",
        False,
        "data_loss",
        "analysis",
        "machine_and_trace",
        "A corrupt varint, length or field tag was found; the rest of the file (or the compressed block) was skipped.",
    ),
    StatSpec(
        "proto_packet_parse_errors",
        False,
        "data_loss",
        "analysis",
        "machine_and_trace",
        "A TracePacket could not be decoded; it was dropped.",
    ),
    StatSpec(
        "compressed_file_truncated",
        False,
        "data_loss",
        "analysis",
        "machine_and_trace",
        "The gzip-compressed trace file ended early; everything before the cut was imported.",
    ),
    StatSpec(
        "compressed_packets_errors",
        False,
        "data_loss",
        "analysis",
        "machine_and_trace",
        "A compressed_packets block could not be inflated, or inflated beyond the size limit; it was dropped.",
    ),
)


# Indexed stats whose index is an id of one of our tables rather than a CPU, buffer or pid number
# (trace_processor indexes them by upid or perf session): what a merge of databases remaps (merge.py).
INDEX_REFS = {
    "heap_graph_invalid_string_id": "process",
    "heap_graph_malformed_packet": "process",
    "heap_graph_missing_packet": "process",
    "heapprofd_malformed_packet": "process",
    "perf_chosen_process_shard": "profiler_session",
    "perf_guardrail_stop_ts": "profiler_session",
    "perf_process_shard_count": "profiler_session",
}


def _load_registry() -> dict[str, StatSpec]:
    text = resources.files(__package__).joinpath("stats.tsv").read_text(encoding="utf-8")
    registry: dict[str, StatSpec] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, kind, severity, source, scope, description = (line.split("\t") + [""] * 6)[:6]
        registry[name] = StatSpec(name, kind == "indexed", severity, source, scope, description)
    for spec in EXTRA_STATS:
        registry[spec.name] = spec
    return registry


REGISTRY = _load_registry()


class Stats:
    """Counters for one import; written out as the `stats` table."""

    def __init__(self) -> None:
        self.single: dict[str, int] = {}
        self.indexed: dict[tuple[str, int], int] = {}

    def inc(self, name: str, value: int = 1, idx: int | None = None) -> None:
        spec = REGISTRY[name]  # KeyError on a typo rather than a silently new stat
        if spec.indexed:
            key = (name, idx if idx is not None else 0)
            self.indexed[key] = self.indexed.get(key, 0) + value
        else:
            self.single[name] = self.single.get(name, 0) + value

    def set(self, name: str, value: int, idx: int | None = None) -> None:
        spec = REGISTRY[name]
        if spec.indexed:
            self.indexed[(name, idx if idx is not None else 0)] = value
        else:
            self.single[name] = value

    def add(self, other: Stats) -> None:
        """Adds another import's counts (of a share of the same trace) to these."""
        for name, value in other.single.items():
            self.single[name] = self.single.get(name, 0) + value
        for key, value in other.indexed.items():
            self.indexed[key] = self.indexed.get(key, 0) + value

    def get(self, name: str, idx: int | None = None) -> int:
        if REGISTRY[name].indexed:
            return self.indexed.get((name, idx or 0), 0)
        return self.single.get(name, 0)

    def rows(self, machine_id: int = 0, trace_id: int | None = 0) -> Iterator[tuple]:
        """(name, idx, severity, source, value, description, machine_id, trace_id) rows.

        Like trace_processor, every single stat gets a row (0 when never
        counted) so queries for a stat always find one.
        """
        for spec in REGISTRY.values():
            is_global = spec.scope == "global"
            mid = None if is_global else machine_id
            tid = None if is_global else trace_id
            if spec.indexed:
                for (name, idx), value in sorted(self.indexed.items()):
                    if name == spec.name:
                        yield (name, idx, spec.severity, spec.source, value, spec.description, mid, tid)
            else:
                yield (
                    spec.name,
                    None,
                    spec.severity,
                    spec.source,
                    self.single.get(spec.name, 0),
                    spec.description,
                    mid,
                    tid,
                )

    def problems(self) -> list[tuple[str, int]]:
        """Non-zero error and data_loss stats, for the CLI's summary."""
        out = [(n, v) for n, v in self.single.items() if v and REGISTRY[n].severity in ("error", "data_loss")]
        out += [
            (f"{n}[{i}]", v)
            for (n, i), v in self.indexed.items()
            if v and REGISTRY[n].severity in ("error", "data_loss")
        ]
        return sorted(out)
