"""The registry of nouns: each noun's module holds its views (VIEWS, the default view first) and the
diffs of its table views (DIFFS). Adding a noun is its module and a line in NOUN_MODULES."""

from __future__ import annotations

from ..base import View
from ..diff_spec import DiffSpec
from ..links import LINKABLE_VIEWS
from ..scope import ReportError, shown
from . import counters, dimensions, heap_dump, heap_profile, processes, scheduling, slices, stack_samples, tracks

# In the RFC's order, the order the report's navigation lists them in.
NOUN_MODULES = (processes, tracks, slices, stack_samples, heap_profile, heap_dump, scheduling, counters, dimensions)

# noun -> view name -> view
NOUNS: dict[str, dict[str, View]] = {module.VIEWS[0].noun: {v.name: v for v in module.VIEWS} for module in NOUN_MODULES}
LINKABLE_VIEWS.update(NOUNS)
# (noun, view) -> how that table view is compared with a baseline
DIFF_SPECS: dict[tuple[str, str], DiffSpec] = {
    (spec.noun, spec.view): spec for module in NOUN_MODULES for spec in module.DIFFS
}


def find_view(noun: str | None, view: str | None) -> View:
    from .overview import OVERVIEW  # the overview reads the registry

    if not noun:
        if view:
            raise ReportError(f"a view needs a noun; nouns: {', '.join(NOUNS)}", "noun", list(NOUNS))
        return OVERVIEW
    views = NOUNS.get(noun)
    if views is None:
        raise ReportError(f"unknown noun {shown(noun)}; nouns: {', '.join(NOUNS)}", "noun", list(NOUNS))
    if not view:
        return next(iter(views.values()))
    found = views.get(view)
    if found is None:
        raise ReportError(f"{noun} has no view {shown(view)}; its views: {', '.join(views)}", "view", list(views))
    return found
