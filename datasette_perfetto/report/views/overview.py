"""The overview: every noun with data, a few rows each; absent nouns say so."""

from __future__ import annotations

from collections.abc import Iterator

from .. import format as fmt
from .. import report_pb2 as pb
from ..base import Cell, ReportRun, Table, View, duration_cell
from ..links import glob_escape
from ..scope import Scope
from . import NOUNS
from .dimensions import shown_dimensions, spread_text, totals_table, waits_table

# Slice names each "By NAME" section of the overview lists.
BY_DIMENSION_NAMES = 3

# (noun, view, Overview field) in the order the overview shows them.
SECTIONS = (
    ("slices", "table", "slices"),
    ("stack-samples", "functions", "stack_samples"),
    ("heap-profile", "functions", "heap_profile"),
    ("heap-dump", "types", "heap_dump"),
    ("scheduling", "summary", "scheduling"),
    ("counters", "list", "counters"),
    ("processes", "table", "processes"),
)


class OverviewView(View):
    noun = ""
    name = ""
    title = "Overview"
    description = "Highlights of every noun with data in the trace."
    result_field = "overview"
    flags = frozenset({"pid", "process", "tid", "thread", "track", "cpu", "time", "min_duration", "min_count", "dim"})

    def _sections(self) -> Iterator[tuple[str, View, str]]:
        for noun, view, field in SECTIONS:
            yield noun, NOUNS[noun][view], field

    def compute(self, run: ReportRun, out: pb.Overview) -> None:
        for noun, view, field in self._sections():
            if not view.has_data(run):
                out.absent.add(noun=noun, reason="not present in this trace")
                continue
            view.compute(run.section(noun, view.name, view.flags | {"top"}), getattr(out, field))
            run.next_step(f"{noun}: {view.title}", run.link(noun, view.name))
        self._by_dimension(run, out)

    @staticmethod
    def _by_dimension(run: ReportRun, out: pb.Overview) -> None:
        """ "By NAME" for each dimension with more than one value: per-value totals and the slice names whose
        per-value totals disagree most (dimensions compare, its top names)."""
        compare = NOUNS["dimensions"]["compare"]
        for name in shown_dimensions(run):
            given = [(k, v) for k, v in run.scope.given if k in compare.flags and k != "top"]
            scope = Scope.parse([*given, ("by", name), ("top", str(BY_DIMENSION_NAMES))])
            section = ReportRun(run.conn, scope, run.linker, "dimensions", "compare", parent=run)
            notes = len(run.footnotes)
            compare.compute(section, out.by_dimension.add())
            del run.footnotes[notes:]  # "more names below top 3": the next step leads to them all
            run.next_step(f"Which {name} is slow, and at what", run.link("dimensions", "compare", by=name))

    def tables(self, msg: pb.Overview, run: ReportRun) -> list[Table]:
        out: list[Table] = []
        for _noun, view, field in self._sections():
            if msg.HasField(field):
                out += view.tables(getattr(msg, field), run)
        for by in msg.by_dimension:
            out += by_dimension_tables(by, run)
        for absent in msg.absent:
            out.append(Table(f"{absent.noun.replace('-', ' ').title()}: ({absent.reason})", (), []))
        return out


def by_dimension_tables(msg: pb.DimensionsCompare, run: ReportRun) -> list[Table]:
    """The overview's "By NAME": per-value totals, then the names with the widest spread and their straggler."""
    totals = totals_table(msg, run)
    totals.title = f"By {msg.by}: the slices of each value ({fmt.plural(len(msg.totals), 'value')})"
    rows = [
        [
            Cell(n.name, run.link("dimensions", "compare", by=msg.by, name=glob_escape(n.name))),
            Cell(spread_text(n.spread)),
            Cell(n.straggler_label or "-"),
            duration_cell(max((v.stats.total for v in n.values), default=0)),
            duration_cell(n.median_total),
        ]
        for n in msg.names
    ]
    spread = Table(
        f"By {msg.by}: the slice names whose per-{msg.by} totals disagree most",
        ("Name", "Spread", "Straggler", "Max total", "Median total"),
        rows,
        empty=f"(no slices on tracks with a {msg.by})",
    )
    out = [totals, spread]
    if msg.waits:
        out.append(waits_table(msg))
    return out


OVERVIEW = OverviewView()
