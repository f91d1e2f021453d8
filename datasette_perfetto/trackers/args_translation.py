"""Names for the hashes some Chrome args carry, from the trace's TranslationTable packets (trace_processor's
ArgsTranslationTable): a slice's `..._hash` arg (uint) keeps its value and gains the name it stands for, when
the trace gives one. Rules are gathered while tokenizing, so every slice sees the whole trace's rules, as
trace_processor's translation at the end of the trace does."""

from __future__ import annotations

from collections.abc import Iterable

from ..storage import Arg

# The hash args translated, and the key of the name each gains.
NAME_KEYS = {
    "chrome_histogram_sample.name_hash": "chrome_histogram_sample.name",
    "chrome_user_event.action_hash": "chrome_user_event.action",
    "chrome_hashed_performance_mark.site_hash": "chrome_hashed_performance_mark.site",
    "chrome_hashed_performance_mark.mark_hash": "chrome_hashed_performance_mark.mark",
    "chrome_trigger.name_hash": "chrome_trigger.name",
}


class ArgsTranslation:
    """Per translated hash key, hash -> name."""

    def __init__(self) -> None:
        self.names: dict[str, dict[int, str]] = {}

    def add(self, hash_key: str, rules: Iterable[tuple[int, str]]) -> None:
        self.names.setdefault(hash_key, {}).update(rules)

    def translate(self, args: list[Arg]) -> list[Arg]:
        """`args` with each translatable hash followed by its name; `args` itself when nothing in it
        translates. Args are added in order, a key already added keeping its place and taking the later
        value (trace_processor's add-or-update)."""
        names = self.names
        if not any(a[1] in names and a[2] == "uint" for a in args):
            return args
        out: list[Arg] = []
        at: dict[str, int] = {}

        def add(arg: Arg) -> None:
            place = at.get(arg[1])
            if place is None:
                at[arg[1]] = len(out)
                out.append(arg)
            else:
                out[place] = arg

        for arg in args:
            key = arg[1]
            table = names.get(key) if arg[2] == "uint" else None
            if table is None:
                add(arg)
                continue
            add((key, key, "uint", arg[3]))
            name = table.get(arg[3])
            if name is not None:
                name_key = NAME_KEYS[key]
                add((name_key, name_key, "string", name))
        return out
