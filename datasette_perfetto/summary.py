"""The trace summary shown on a trace database's Datasette page."""

from __future__ import annotations

from typing import Any

from .report.base import REAL_PROCESS

# Processes and threads without each machine's idle (swapper) ones.
COUNTED = (
    ("process", "processes", REAL_PROCESS.format(p="process")),
    ("thread", "threads", "NOT is_idle"),
    ("track", "tracks", None),
    ("slice", "slices", None),
    ("counter", "counter values", None),
    ("flow", "flows", None),
)


def trace_summary(conn) -> dict[str, Any]:
    """Everything the summary panel shows, in a few cheap queries (runs on a read connection)."""
    files = [
        dict(zip(("name", "trace_type", "size"), r))
        for r in conn.execute("SELECT name, trace_type, size FROM trace_file ORDER BY id")
    ]
    start, end = conn.execute("SELECT start_ts, end_ts FROM trace_bounds").fetchone() or (0, 0)
    counts = []
    for table, label, where in COUNTED:
        n = conn.execute(f"SELECT count(*) FROM [{table}]" + (f" WHERE {where}" if where else "")).fetchone()[0]
        counts.append({"table": table, "label": label, "count": n})
    problems = [
        dict(zip(("name", "severity", "value", "description"), r))
        for r in conn.execute(
            "SELECT name, severity, sum(value), description FROM stats "
            "WHERE value > 0 AND severity IN ('error', 'data_loss') GROUP BY name, severity ORDER BY name"
        )
    ]
    return {
        "files": files,
        "start_ts": start,
        "end_ts": end,
        "duration": format_duration(end - start),
        "counts": counts,
        "problems": problems,
    }


def format_duration(ns: int) -> str:
    for unit, scale in (("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns} ns"
