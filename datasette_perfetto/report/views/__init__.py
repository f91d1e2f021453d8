"""The noun table: noun -> its views, default first (the RFC's grammar)."""

from __future__ import annotations

import importlib

from ..base import View
from ..scope import ReportError

# One module per noun, each with a VIEWS list (modules not written yet are skipped).
_MODULES = (
    "processes",
    "tracks",
    "slices",
    "stack_samples",
    "heap_profile",
    "heap_dump",
    "scheduling",
    "counters",
    "absent",
)

# Nouns in the RFC's order; each maps view name -> view, the default view first.
NOUN_ORDER = ("processes", "tracks", "slices", "stack-samples", "heap-profile", "heap-dump", "scheduling", "counters")


def _registry() -> dict[str, dict[str, View]]:
    table: dict[str, dict[str, View]] = {}
    for name in _MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            continue
        for view in module.VIEWS:
            table.setdefault(view.noun, {})[view.name] = view
    return {noun: table[noun] for noun in NOUN_ORDER if noun in table}


NOUNS = _registry()


def find_view(noun: str | None, view: str | None) -> View:
    from .overview import OVERVIEW

    if not noun:
        if view:
            raise ReportError(f"a view needs a noun; nouns: {', '.join(NOUNS)}", "noun", list(NOUNS))
        return OVERVIEW
    views = NOUNS.get(noun)
    if views is None:
        raise ReportError(f"unknown noun {noun!r}; nouns: {', '.join(NOUNS)}", "noun", list(NOUNS))
    if not view:
        return next(iter(views.values()))
    found = views.get(view)
    if found is None:
        raise ReportError(f"{noun} has no view {view!r}; its views: {', '.join(views)}", "view", list(views))
    return found
