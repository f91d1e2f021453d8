"""Human formatting shared by the text and HTML renderings."""

from __future__ import annotations

import math


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


def plural(n: float, word: str, shown: str | None = None, many: str | None = None) -> str:
    """`n word`, with an s unless n is 1 (or `many`, the word's plural, when it is not word + s); `shown` is n
    as displayed (default: as is)."""
    return f"{n if shown is None else shown} {word if n == 1 else many or word + 's'}"


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


# -- round bucket edges (the histogram views) ------------------------------------------------------------------

LINEAR_STEPS = (1, 2, 2.5, 5)  # linear bucket widths: these x 10^k
LOG_STEPS = (1, 2, 5)  # log-spaced bucket edges: these x 10^k, then every decade, every 2nd decade, ...


def _round_number(mantissa: float, exponent: int) -> float:
    """mantissa x 10^exponent without binary noise (0.2, not 0.20000000000000001); an int when whole."""
    value = float(f"{mantissa}e{exponent}")
    return int(value) if value.is_integer() and abs(value) < 2**63 else value


def nice_ceil(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 x 10^k at least value (2.5 only where it is whole: never 0.25 ns)."""
    exponent = math.floor(math.log10(value)) if value > 0 else 0
    for e in (exponent - 1, exponent, exponent + 1):
        for step in LINEAR_STEPS:
            width = _round_number(step, e)
            if width >= value and (step != 2.5 or e >= 1):
                return width
    return _round_number(1, exponent + 2)


def linear_edges(low: float, high: float, buckets: int) -> list[float]:
    """Edges of at most `buckets` linear buckets covering low..high: the narrowest 1, 2, 2.5 or 5 x 10^k
    wide, starting from a multiple of the width at or below low (so every edge is round); the last bucket
    holds high. Equal low and high: one bucket [low, low]."""
    if high <= low:
        return [low, low]
    width = nice_ceil((high - low) / buckets)
    while True:
        start = math.floor(low / width) * width
        n = math.floor((high - start) / width) + 1
        if n <= buckets:
            break
        width = nice_ceil(width * 1.0001)
    exponent = math.floor(math.log10(width))
    return [_round_number(round((start + width * i) / 10**exponent, 6), exponent) for i in range(n + 1)]


def _log_ladder(level: int, first: int, last: int) -> list[float]:
    """Round values from 10^first to 10^last: 1-2-5 steps at level 0, else every level-th power of ten."""
    if level == 0:
        return [_round_number(m, e) for e in range(first, last + 1) for m in LOG_STEPS]
    return [_round_number(1, e) for e in range(first, last + 1) if e % level == 0]


def log_edges(positive: float, high: float, buckets: int) -> list[float]:
    """Edges of at most `buckets` log-spaced buckets from positive (> 0) to high: round values (1, 2, 5 x 10^k,
    coarser when that makes too many buckets: every decade, every 2nd decade, ...) from the largest at or
    below positive to the smallest at or above high (the last bucket holds high)."""
    first = math.floor(math.log10(positive)) - 1
    last = math.ceil(math.log10(high)) + 1
    level = 0
    while True:
        ladder = _log_ladder(level, first - level, last + level)
        lo = max(v for v in ladder if v <= positive)
        hi = min(v for v in ladder if v >= high)
        edges = [v for v in ladder if lo <= v <= hi]
        if len(edges) - 1 <= buckets or len(edges) <= 2:
            if edges[-1] >= 2**63:  # past SQLite's integers: end at high itself
                edges[-1] = high
            return edges
        level += 1
