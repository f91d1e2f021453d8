"""How one table view is compared with a baseline: a `DiffSpec` names the view's aggregation key and
value columns; the generic join, merge, ranking and rendering of the two sides' rows are here. Each noun's
module holds the specs of its table views (diff.py runs a diff).

Keys hold names, never ids: pids, tids and track ids differ between two recordings of one workload, so
rows of one side sharing a key (two processes called `renderer`) are summed. Value columns become
Baseline / Target / Delta; deltas are raw, with no normalization for trace length and no claim of
significance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..pages.data import owner_name
from . import format as fmt
from .base import Cell, Link, ReportRun, Table
from .links import link_with_scope
from .scope import Scope

# Numbers inside names (addresses, ids, tids): what tells apart two names of one thing in two recordings.
_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")


@dataclass(frozen=True)
class Measure:
    field: str  # the typed row's field (dotted: a nested message's); the diff row has `<field>_delta`
    label: str  # column heading: "dur" -> "Baseline dur"
    kind: str  # duration | count | percent | value | bytes
    # Rows of one side sharing a key: sum | min | max | avg (weighted by `count`) | derived (the spec's
    # `derive` computes it from the merged row, as a per-instance average from a total and a count)
    merge: str = "sum"
    delta: str = ""  # the diff row's delta field, when not `<field>_delta`

    @property
    def delta_field(self) -> str:
        return self.delta or f"{self.field}_delta"

    def value(self, row: Any) -> Any:
        for part in self.field.split("."):
            row = getattr(row, part)
        return row


# -- formatting -----------------------------------------------------------------------------------


def show(kind: str, value: float) -> str:
    if kind == "duration":
        return fmt.duration(value)
    if kind == "bytes":
        return fmt.byte_size(int(value))
    if kind == "percent":
        return fmt.percent(value)
    if kind == "value":
        return fmt.count(value) if abs(value) >= 1_000 else f"{value:.4g}"
    return fmt.count(value)


def signed(kind: str, delta: float) -> str:
    """A delta with its sign spelled out: +290ms, -93ms, +12, -1.5pp; 0 when equal."""
    if delta == 0:
        return "0"
    if kind == "percent":
        return f"{delta:+.1f}pp"
    text = show(kind, abs(delta))
    return ("+" if delta > 0 else "-") + text


def relative(delta: float, base: float) -> str:
    pct = 100.0 * delta / abs(base)
    return f"{pct:+.1f}%" if abs(pct) < 10 else f"{pct:+.0f}%"


def owner_key(process: str, pid: int, thread: str, tid: int, cpu: int | None, gpu: int | None) -> str:
    """Who a track belongs to, by name only (ids differ between recordings)."""
    if thread or tid:
        return owner_name("thread", thread) + (f" ({process})" if process else "")
    if process or pid:
        return owner_name("process", process)
    if cpu is not None:
        return f"cpu {cpu}"
    if gpu is not None:
        return f"gpu {gpu}"
    return "global"


def optional_field(row: Any, name: str) -> int | None:
    return getattr(row, name) if row.HasField(name) else None


# -- what each view's diff joins on and shows -------------------------------------------------------


@dataclass
class JoinedRow:
    key: tuple[str, ...]
    baseline: Any  # the view's Row (summed over the key), None when absent
    target: Any
    baseline_rows: int
    target_rows: int
    deltas: dict[str, float]
    change: str


class DiffSpec:
    """How one table view is diffed: its key, value columns and sort keys."""

    noun = ""
    view = ""
    field = ""  # the Report oneof field of the diff
    title = ""
    what = ""  # what a row is, plural ("slice names")
    key_fields: tuple[str, ...] = ()
    key_headers: tuple[str, ...] = ()
    measures: tuple[Measure, ...] = ()
    sorts: dict[str, str] = {}  # sort key -> measure field ("" = by key)
    display: tuple[str, ...] = ()  # measures the tables show: the sort's first, then these
    row_filters: dict[str, str] = {}  # flag -> measure it hides rows below; either side passing keeps a row
    summed_ids: tuple[str, ...] = ()  # typed-row fields cleared when several rows are summed
    counts_rows = True  # the diff Row has baseline_rows / target_rows
    shown_count = 2  # value columns the table shows (each as Baseline / Target / Delta)
    side_changes: dict[str, Any] = {}  # Scope fields each side runs with besides the flags given

    @property
    def label(self) -> str:
        return f"{self.noun} {self.view}"

    def key(self, row: Any) -> tuple[str, ...]:
        """A typed row's join key: its values of key_fields (override where a key is computed, as an owner)."""
        return tuple(getattr(row, f) for f in self.key_fields)

    def default_sort(self, base_msg: Any, target_msg: Any) -> str:
        return next(iter(self.sorts))

    def measure(self, field_name: str) -> Measure:
        return next(m for m in self.measures if m.field == field_name)

    def fill_extra(self, out: Any, base_msg: Any, target_msg: Any) -> None:
        """Per-view fields of the diff message besides rows and summary."""

    def hidden_note(self, run: ReportRun, shown: int, hidden: int) -> None:
        """The footnote for the joined rows the diff does not show."""
        run.truncation(shown, shown + hidden, self.what)

    def derive(self, row: Any) -> None:
        """Sets the `derived` measures of a (merged) typed row from its other values."""

    def key_cells(self, row: Any, run: ReportRun, out: Any) -> list[Cell]:
        return [Cell(getattr(row, f) or "-") for f in self.key_fields]

    def what_of(self, out: Any) -> str:
        return self.what

    def display_of(self, out: Any) -> tuple[str, ...]:
        return self.display

    # -- the join ------------------------------------------------------------------------------
    def merge(self, rows: list[Any]) -> Any:
        merged = type(rows[0])()
        merged.CopyFrom(rows[0])
        if len(rows) > 1:
            self._merge_into(merged, rows)
        self.derive(merged)
        return merged

    def _merge_into(self, merged: Any, rows: list[Any]) -> None:
        for m in self.measures:
            if m.merge == "derived":
                continue
            values = [getattr(r, m.field) for r in rows]
            if m.merge == "sum":
                value = sum(values)
            elif m.merge in ("min", "max"):
                counted = [v for r, v in zip(rows, values) if getattr(r, "count", 1)] or values
                value = min(counted) if m.merge == "min" else max(counted)
            else:  # avg, weighted by the sample count
                total = sum(r.count for r in rows)
                value = sum(v * r.count for r, v in zip(rows, values)) / total if total else 0.0
            setattr(merged, m.field, value)
        for name in self.summed_ids:
            merged.ClearField(name)

    def join(self, scope: Scope, base_msg: Any, target_msg: Any) -> tuple[list[JoinedRow], str]:
        """Both sides' rows joined on the key, row filters applied, ranked; and the sort key used."""
        groups: dict[tuple[str, ...], tuple[list, list]] = {}
        for side, msg in ((0, base_msg), (1, target_msg)):
            if msg is None:
                continue
            for row in msg.rows:
                groups.setdefault(self.key(row), ([], []))[side].append(row)
        joined = []
        for key, (base_rows, target_rows) in groups.items():
            base = self.merge(base_rows) if base_rows else None
            target = self.merge(target_rows) if target_rows else None
            if not self._passes(scope, base) and not self._passes(scope, target):
                continue
            deltas = {
                m.field: (m.value(target) if target is not None else 0) - (m.value(base) if base is not None else 0)
                for m in self.measures
            }
            if base is None:
                change = "added"
            elif target is None:
                change = "removed"
            else:
                # A share of the trace moves with the trace's length: only raw values make a change.
                change = (
                    "changed" if any(deltas[m.field] for m in self.measures if m.kind != "percent") else "unchanged"
                )
            joined.append(JoinedRow(key, base, target, len(base_rows), len(target_rows), deltas, change))
        sort = scope.sort or self.default_sort(base_msg, target_msg)
        by = self.sorts[sort]
        if by:
            others = [m.field for m in self.measures if m.field != by and m.kind != "percent"]
            joined.sort(key=lambda r: (-abs(r.deltas[by]), *(-abs(r.deltas[f]) for f in others), r.key))
        else:
            joined.sort(key=lambda r: r.key)
        return joined, sort

    def _passes(self, scope: Scope, row: Any) -> bool:
        if row is None:
            return False
        return all(
            getattr(scope, flag) is None or getattr(row, name) >= getattr(scope, flag)
            for flag, name in self.row_filters.items()
        )

    def fill(self, out: Any, scope: Scope, base_msg: Any, target_msg: Any, top: int, moved_only: bool) -> Filled:
        """Fills the view's diff message; returns what the footnotes need."""
        joined, sort = self.join(scope, base_msg, target_msg)
        s = out.summary
        s.sort, s.sort_column, s.total_rows = sort, self.sorts[sort], len(joined)
        for r in joined:
            setattr(s, r.change, getattr(s, r.change) + 1)
        for side, msg in (("baseline", base_msg), ("target", target_msg)):
            if msg is not None:
                setattr(s, f"{side}_total_rows", msg.total_rows)
                setattr(s, f"{side}_joined_rows", len(msg.rows))
        listed = [r for r in joined if r.change != "unchanged"] if moved_only else joined
        for r in listed[:top]:
            row = out.rows.add(change=r.change)
            for name, value in zip(self.key_fields, r.key):
                setattr(row, name, value)
            if r.baseline is not None:
                row.baseline.CopyFrom(r.baseline)
            if r.target is not None:
                row.target.CopyFrom(r.target)
            if self.counts_rows:
                row.baseline_rows, row.target_rows = r.baseline_rows, r.target_rows
            for name, delta in r.deltas.items():
                setattr(row, self.measure(name).delta_field, delta)
        self.fill_extra(out, base_msg, target_msg)
        return Filled(len(listed) - min(top, len(listed)), renamed_pairs(joined))

    # -- rendering ----------------------------------------------------------------------------------
    def shown_measures(self, out: Any) -> list[Measure]:
        """The sort's column (by name: the first displayed one), then the next displayed ones (shown_count in all)."""
        display = self.display_of(out)
        first = out.summary.sort_column or display[0]
        fields = [first] + [f for f in display if f != first]
        return [self.measure(f) for f in fields[: self.shown_count]]

    def counts_text(self, out: Any) -> str:
        s = out.summary
        parts = [f"{s.added} added", f"{s.removed} removed", f"{s.changed} changed", f"{s.unchanged} unchanged"]
        order = f"by {s.sort} delta" if s.sort_column else "by name"
        return f"{s.total_rows} {self.what_of(out)}: {', '.join(parts)}; {order}"

    def table(self, out: Any, run: ReportRun, moved_only: bool = False) -> Table:
        measures = self.shown_measures(out)
        rank = self.measure(out.summary.sort_column) if out.summary.sort_column else measures[0]
        headers = list(self.key_headers)
        for m in measures:
            headers += [f"Baseline {m.label}", f"Target {m.label}", f"Delta {m.label}"]
        headers.append("Change")
        rows = []
        for r in out.rows:
            base = r.baseline if r.HasField("baseline") else None
            target = r.target if r.HasField("target") else None
            cells = self.key_cells(r, run, out)
            for m in measures:
                delta = getattr(r, m.delta_field)
                cells += [
                    Cell(show(m.kind, m.value(base)) if base is not None else "(absent)"),
                    Cell(show(m.kind, m.value(target)) if target is not None else "(absent)"),
                    Cell(signed(m.kind, delta), css=direction(delta)),
                ]
            cells.append(
                change_cell(r.change, getattr(r, rank.delta_field), rank.value(base) if base is not None else 0)
            )
            rows.append(cells)
        title = f"{self.title} vs baseline ({self.counts_text(out)})"
        if moved_only and not out.rows and out.summary.total_rows:
            empty = "(no changes in scope)"
        else:
            empty = f"(no {self.what_of(out)} in scope on either side)"
        align = "l" * len(self.key_headers) + "rrr" * len(measures) + "l"
        return Table(title, tuple(headers), rows, align=align, empty=empty)


@dataclass
class Filled:
    hidden: int  # rows below top
    renamed: int  # added/removed pairs that differ only in numbers


def renamed_pairs(joined: list[JoinedRow]) -> int:
    """Added/removed pairs whose keys differ only in numbers (`object at 0x7f28...`): the join is by
    exact name (the RFC leaves canonicalizing such names open), so a footnote points them out."""
    removed: dict[tuple[str, ...], int] = {}
    for r in joined:
        if r.change == "removed":
            canon = tuple(_NUMBERS.sub("#", k) for k in r.key)
            removed[canon] = removed.get(canon, 0) + 1
    pairs = 0
    for r in joined:
        canon = tuple(_NUMBERS.sub("#", k) for k in r.key)
        if r.change == "added" and removed.get(canon):
            removed[canon] -= 1
            pairs += 1
    return pairs


def direction(delta: float) -> str:
    return "diff-up" if delta > 0 else "diff-down" if delta < 0 else ""


def change_cell(change: str, delta: float, base: float) -> Cell:
    if change in ("added", "removed"):
        return Cell(change, css=f"diff-{change}", title=f"only in the {'target' if change == 'added' else 'baseline'}")
    if change == "unchanged":
        return Cell("same")
    if delta and base:
        return Cell(relative(delta, base), css=direction(delta), title="relative to the baseline")
    return Cell("changed", css=direction(delta))


def diff_link(run: ReportRun, row: Any, noun: str, view: str, **changes: str | None) -> Link:
    """A diff row's single-trace report: the baseline's when the row is only there, else the target's. The
    diff's sort, name, min_count and top rank its joined rows: they stay behind."""
    database = "baseline" if row.change == "removed" else ""
    return link_with_scope(run, noun, view, changes, database, carry_top=False)
