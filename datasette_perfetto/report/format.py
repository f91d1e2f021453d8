"""Human formatting shared by the text and HTML renderings."""

from __future__ import annotations


def duration(ns: float | None) -> str:
    """12.3s, 128ms, 42us, 800ns; '-' when unknown."""
    if ns is None:
        return "-"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            value = ns / scale
            text = f"{value:.1f}" if value < 100 else f"{value:.0f}"
            return f"{sign}{text.rstrip('0').rstrip('.') if '.' in text else text}{unit}"
    return f"{sign}{int(ns)}ns"


def offset(ts: int | None, trace_start: int) -> str:
    """A timestamp as an offset from the trace start, precise enough to type back: 2.734s."""
    if ts is None:
        return "-"
    delta = ts - trace_start
    sign = "-" if delta < 0 else ""
    delta = abs(delta)
    if delta >= 1_000_000_000:
        return f"{sign}{delta / 1e9:.6f}".rstrip("0").rstrip(".") + "s"
    if delta >= 1_000_000:
        return f"{sign}{delta / 1e6:.3f}".rstrip("0").rstrip(".") + "ms"
    if delta >= 1_000:
        return f"{sign}{delta / 1e3:.3f}".rstrip("0").rstrip(".") + "us"
    return f"{sign}{delta}ns"


def count(n: float | None) -> str:
    """83.2k, 12.3M, 950."""
    if n is None:
        return "-"
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f}{suffix}"
    return str(int(n)) if float(n).is_integer() else f"{n:.3g}"


def percent(p: float | None) -> str:
    return "-" if p is None else f"{p:.1f}%"


def number(v: float | None) -> str:
    if v is None:
        return "-"
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:,.3f}".rstrip("0").rstrip(".")


def byte_size(n: int) -> str:
    """1.5 MiB, 320 KiB, 48 B."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            value = n / scale
            text = f"{value:.1f}" if value < 100 else f"{value:.0f}"
            return f"{sign}{text.removesuffix('.0')} {unit}"
    return f"{sign}{n} B"
