"""The overview: every noun with data, a few rows each; absent nouns say so."""

from __future__ import annotations

from collections.abc import Iterator

from .. import report_pb2 as pb
from ..base import ReportRun, Table, View
from . import NOUNS

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
    flags = frozenset({"pid", "process", "tid", "thread", "track", "cpu", "time", "min_duration", "min_count"})

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

    def tables(self, msg: pb.Overview, run: ReportRun) -> list[Table]:
        out: list[Table] = []
        for _noun, view, field in self._sections():
            if msg.HasField(field):
                out += view.tables(getattr(msg, field), run)
        for absent in msg.absent:
            out.append(Table(f"{absent.noun.replace('-', ' ').title()}: ({absent.reason})", (), []))
        return out


OVERVIEW = OverviewView()
