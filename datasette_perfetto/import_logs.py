"""Import logs: a stat counted together with a row saying where and why (trace_processor's
ImportLogsTracker), written to __intrinsic_trace_import_logs and read through _trace_import_logs."""

from __future__ import annotations

from collections.abc import Sequence

from .stats import Stats
from .storage import Arg, TraceStorage

TABLE = "__intrinsic_trace_import_logs"


class ImportLogs:
    """Records the import logs of one input file (trace_file row `trace_id`)."""

    def __init__(self, storage: TraceStorage, trace_id: int) -> None:
        self.storage = storage
        self.trace_id = trace_id

    def record(
        self,
        stats: Stats,
        name: str,
        ts: int | None = None,
        byte_offset: int | None = None,
        args: Sequence[Arg] = (),
    ) -> int:
        """Counts stat `name` in `stats` and adds a log row for it (with the event's timestamp or the
        file offset when known, and args saying what was at fault); returns the row's id."""
        stats.inc(name)
        arg_set_id = self.storage.arg_set(args) if args else None
        return self.storage.insert(TABLE, (self.trace_id, ts, byte_offset, name, arg_set_id))


def string_arg(key: str, value: str | None) -> Arg:
    return (key, key, "string", value)


def int_arg(key: str, value: int) -> Arg:
    return (key, key, "int", value)
