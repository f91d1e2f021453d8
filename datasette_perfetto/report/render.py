"""Text, JSON and SQL renderings of a report (HTML is the templates' job)."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Protocol

from google.protobuf.descriptor import FieldDescriptor, OneofDescriptor
from google.protobuf.message import Message

from . import format as fmt
from .base import Chart, ReportResult, Table
from .scope import FLAGS
from .subtitles import SEPARATOR, with_subtitle

BAR_WIDTH = 40


def context_line(result: ReportResult) -> str:
    c = result.report.context
    if result.report.HasField("baseline"):  # a diff: both traces and their durations
        b = result.report.baseline
        parts = [
            f"target {c.database} {fmt.duration(c.trace_dur)}",
            f"baseline {b.database} {fmt.duration(b.trace_dur)}",
            c.range,
        ]
        if c.range != "full trace":
            parts.append(fmt.duration(c.range_end_ts - c.range_start_ts))
    else:
        parts = [c.trace, c.range, fmt.duration(c.range_end_ts - c.range_start_ts)]
    if c.os:
        parts.append(c.os)
    if c.machine:
        parts.append(c.machine)
    processes = fmt.plural(c.process_count, "process", many="processes")
    if result.report.HasField("baseline") and result.report.baseline.process_count != c.process_count:
        processes += f" (baseline {result.report.baseline.process_count})"
    parts.append(processes)
    order = list(FLAGS)
    scope = [f"{k}={c.scope[k]}" for k in sorted(c.scope, key=order.index) if k not in ("time", "baseline")]
    if scope:
        parts.append(" ".join(scope))
    return "[" + " | ".join(parts) + "]"


def text_table(table: Table, width: int = 0) -> list[str]:
    """The table as aligned text lines; with `width` > 0, the widest text column is cut (ending in "…") until
    every line fits, as far as text columns allow: numbers, and numeric-looking cells, are never cut."""
    lines = [f"{table.title}:" if table.headers or table.rows else table.title]
    if not table.headers:
        return lines
    if not table.rows:
        return lines + [f"  {table.empty}"]
    cells = [list(table.headers)] + [[with_subtitle(c.text, c.subtitle) for c in row] for row in table.rows]
    # A subtitle is what tells apart rows of different ranks or machines: cutting keeps it whole.
    subtitles = [[""] * len(table.headers)] + [[c.subtitle for c in row] for row in table.rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(table.headers))]
    align = table.alignment()
    if width > 0:
        widths = _fit(cells, widths, align, width, subtitles)
    for row, row_subtitles in zip(cells, subtitles):
        out = []
        for i, text in enumerate(row):
            last = i == len(row) - 1
            text = _cut(text, widths[i], row_subtitles[i])
            if align[i] == "r":
                out.append(text.rjust(widths[i]))
            else:
                out.append(text if last else text.ljust(widths[i]))
        lines.append("  " + "   ".join(out).rstrip())
    return lines


# A cell that reads as a number (42, 1.2ms, 12.3K, 33.2%, -5): never cut, whatever its column.
_NUMERIC = re.compile(r"[-+]?\.?\d[\d.,]*\s*[A-Za-zµ%]{0,3}")
MIN_TEXT_WIDTH = 12  # a cut text column keeps at least this many characters
MIN_NAME_WIDTH = 4  # and a name with a subtitle at least this many, besides the subtitle


def _fit(
    cells: list[list[str]], widths: list[int], align: str, width: int, subtitles: list[list[str]] | None = None
) -> list[int]:
    """Column widths for a table line to fit `width`: text (left-aligned) columns shrink, widest first (never
    below a subtitle and a few characters of its name)."""
    widths = list(widths)
    floors = []
    for i, a in enumerate(align):
        if a == "r":
            floors.append(widths[i])  # a numeric column is never cut
            continue
        numbers = [len(r[i]) for r in cells[1:] if _NUMERIC.fullmatch(r[i])]
        kept = [len(SEPARATOR + r[i]) + MIN_NAME_WIDTH for r in (subtitles or [])[1:] if r[i]]
        floors.append(min(widths[i], max([MIN_TEXT_WIDTH, *numbers, *kept])))  # a header is cut as its column
    excess = 2 + sum(widths) + 3 * (len(widths) - 1) - width
    while excess > 0:
        shrinkable = [i for i in range(len(widths)) if widths[i] > floors[i]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: (widths[i], -i))
        others = [widths[i] for i in shrinkable if i != widest]
        # Down to the next widest text column (or its floor), at most by what is still too much.
        target = max(floors[widest], max(others, default=0), widths[widest] - excess)
        step = max(1, widths[widest] - target)
        widths[widest] -= step
        excess -= step
    return widths


def _cut(text: str, width: int, subtitle: str = "") -> str:
    """`text` in `width` characters, ending in "…" when cut; a subtitle at its end stays whole."""
    if len(text) <= width:
        return text
    if subtitle:
        tail = SEPARATOR + subtitle
        if width - len(tail) >= 2:
            return text[: width - len(tail) - 1] + "…" + tail
    return text[: max(width - 1, 0)] + "…"


def bar_length(value: float, top: float, scale: str, bar_width: int = BAR_WIDTH) -> int:
    if top <= 0 or value <= 0:
        return 0
    if scale == "log":
        return max(1, round(bar_width * math.log1p(value) / math.log1p(top)))
    return max(1, round(bar_width * value / top))


MIN_BAR_WIDTH = 10


def text_chart(chart: Chart, width: int = 0) -> list[str]:
    """The chart as text bars; with `width` > 0 the bars get shorter (not under 10) so the lines fit, then a note
    listing items loses its last ones (ending in ", …"); labels and the figures shown stay whole."""
    lines = [f"{chart.title} ({chart.scale} scale; {chart.value_label}):"]
    if not chart.bars:
        return lines + ["  (no data)"]
    top = max(b.value for b in chart.bars)
    label_width = max(len(b.label) for b in chart.bars)
    bar_width = BAR_WIDTH
    if width > 0:
        note_width = max(len(b.note) for b in chart.bars)
        bar_width = max(MIN_BAR_WIDTH, min(BAR_WIDTH, width - label_width - note_width - 6))
    for b in chart.bars:
        bar = "#" * bar_length(b.value, top, chart.scale, bar_width)
        note = _cut_note(b.note, width - label_width - bar_width - 6) if width > 0 else b.note
        lines.append(f"  {b.label.rjust(label_width)} |{bar.ljust(bar_width)}| {note}".rstrip())
    return lines


def _cut_note(note: str, room: int) -> str:
    """A note too long for `room`, cut between its ", "-separated items (never inside one): "a, b, …"."""
    items = note.split(", ")
    if len(note) <= room or len(items) == 1:
        return note
    keep = 1
    while keep < len(items) - 1 and len(", ".join(items[: keep + 1]) + ", …") <= room:
        keep += 1
    return ", ".join(items[:keep]) + ", …"


def to_text(result: ReportResult, width: int = 0) -> str:
    """The RFC's text output; `width` > 0 fits the tables and charts to that many columns (0: no limit)."""
    msg = result.result_message()
    lines = [context_line(result), ""]
    for chart in result.view.charts(msg, result.run):
        lines += text_chart(chart, width) + [""]
    for table in result.view.tables(msg, result.run):
        lines += text_table(table, width) + [""]
    for note in result.report.footnotes:
        lines.append(f"  * {note.text}: {note.command}")
    if result.report.footnotes:
        lines.append("")
    if result.report.next_steps:
        lines.append("Next: " + "\n      ".join(step.command for step in result.report.next_steps))
    return "\n".join(lines).rstrip() + "\n"


def to_json(result: ReportResult) -> dict[str, Any]:
    """The report as JSON: every field by its proto name, present even when zero (null when an optional field
    or message is unset), integers as numbers. Protobuf's own JSON mapping writes int64 as strings and drops
    zeros, so a client would need the schema to read it; only the chosen result of `oneof result` appears."""
    return message_json(result.report)


def message_json(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        oneof = field.containing_oneof
        if oneof is not None and not _is_synthetic(oneof) and message.WhichOneof(oneof.name) != field.name:
            continue
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            out[field.name] = {k: _value_json(value_field, v) for k, v in value.items()}
        elif field.is_repeated:
            out[field.name] = [_value_json(field, v) for v in value]
        elif field.has_presence and not message.HasField(field.name):
            out[field.name] = None
        else:
            out[field.name] = _value_json(field, value)
    return out


def _value_json(field: FieldDescriptor, value: Any) -> Any:
    if field.message_type is not None:
        return message_json(value)
    if isinstance(value, float) and not math.isfinite(value):
        return _NON_FINITE[str(value)]  # JSON has no NaN or infinity: protobuf's spelling
    return value


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _is_synthetic(oneof: OneofDescriptor) -> bool:
    """The oneof protoc makes for a proto3 `optional` field (it tracks presence; it is no choice)."""
    return len(oneof.fields) == 1 and oneof.name == "_" + oneof.fields[0].name


def to_sql(result: ReportResult) -> str:
    """The queries the view ran, with their bound values, ready to paste."""
    out = [f"-- {result.view.label()}: {fmt.plural(len(result.report.queries), 'query', many='queries')}", ""]
    for q in result.report.queries:
        out.append(f"-- {q.purpose}")
        for key, value in q.params.items():
            out.append(f"--   :{key} = {json.dumps(value)}")
        out.append(q.sql.rstrip(";") + ";")
        out.append("")
    return "\n".join(out)


class RequestError(Protocol):
    """What an error JSON object is made from: ReportError, and the web pages' PageError."""

    message: str
    param: str | None
    options: list[str]


def error_json(error: RequestError) -> dict[str, Any]:
    return {"ok": False, "error": error.message, "parameter": error.param, "options": error.options}
