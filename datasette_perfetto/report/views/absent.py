"""Nouns whose data this version does not import yet: every view would say so. All nouns have real views
now (stack-samples, heap-profile and heap-dump say "not present in this trace" themselves when a trace
lacks their data); the registry still reads this module, so a future noun can start here."""

from __future__ import annotations

from .. import report_pb2 as pb
from ..base import ReportRun, View

NOT_YET: dict[str, tuple[str, ...]] = {}


class NotPresentView(View):
    result_field = "not_present"
    flags = frozenset(
        {"pid", "process", "tid", "thread", "time", "name", "min_duration", "min_count", "sort", "max_lines"}
    )

    def __init__(self, noun: str, name: str) -> None:
        self.noun = noun
        self.name = name
        self.title = f"{noun} {name}"
        self.description = f"{noun}: not present in this trace."
        self.sorts = ("total", "self", "count", "size")

    def compute(self, run: ReportRun, out: pb.NotPresent) -> None:
        out.noun = self.noun
        out.reason = "not present in this trace"


VIEWS = [NotPresentView(noun, view) for noun, views in NOT_YET.items() for view in views]
