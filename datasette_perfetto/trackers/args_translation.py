"""Translation of some Chrome args at slice write time (trace_processor's ArgsTranslationTable).

- Hashes, from the trace's TranslationTable packets: a slice's `..._hash` arg (uint) keeps its value and
  gains the name it stands for, when the trace gives one.
- Java class names in Android view dumps (`android_view_dump.activity.view.class_name`), from the trace's
  DeobfuscationMapping packets: an obfuscated name known to the first mapping's package is replaced.
- Mojo methods known by native symbol (an interned UnsymbolizedSourceLocation: mapping + rel_pc), from
  ModuleSymbols packets: the mapping_id / rel_pc args become `mojo_method_name` and `mojo_interface_tag`,
  or, with no symbol known, are kept (moved to the end of the set, as trace_processor re-emits them).

Rules are gathered while tokenizing, so every slice sees the whole trace's rules, as trace_processor's
translation at the end of the trace does. Native symbols are keyed by module (mapping name, build id)
rather than by mapping id: mappings get their ids while parsing, after the rules are known."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable

from ..storage import Arg

# The hash args translated, and the key of the name each gains.
NAME_KEYS = {
    "chrome_histogram_sample.name_hash": "chrome_histogram_sample.name",
    "chrome_user_event.action_hash": "chrome_user_event.action",
    "chrome_hashed_performance_mark.site_hash": "chrome_hashed_performance_mark.site",
    "chrome_hashed_performance_mark.mark_hash": "chrome_hashed_performance_mark.mark",
    "chrome_trigger.name_hash": "chrome_trigger.name",
}

CLASS_NAME_FLAT_KEY = "android_view_dump.activity.view.class_name"

MOJO_NATIVE_SYMBOL = "chrome_mojo_event_info.mojo_interface_method.native_symbol"
MOJO_MAPPING_ID = MOJO_NATIVE_SYMBOL + ".mapping_id"
MOJO_REL_PC = MOJO_NATIVE_SYMBOL + ".rel_pc"
MOJO_METHOD_NAME = "chrome_mojo_event_info.mojo_method_name"
MOJO_INTERFACE_TAG = "chrome_mojo_event_info.mojo_interface_tag"
# The value type of a mapping_id arg whose mapping is not interned yet: its value is (resolved mapping, pid
# or None). Track event args are built while tokenizing (maybe in a helper process); the mapping row is only
# made, and given its id, when the slice is written.
NATIVE_MAPPING = "native_mapping"


def mojo_method(symbol: str) -> str:
    """namespace::Interface::Method_Sym::IPCStableHash (with "()" on some platforms) -> namespace::Interface::Method."""
    return symbol.removesuffix("()").removesuffix("_Sym::IPCStableHash")


def mojo_interface_tag(symbol: str) -> str:
    """namespace::Interface::Method_Sym::IPCStableHash -> namespace.Interface (for historical compatibility);
    a symbol of too few parts is kept as is, to ease debugging."""
    parts = [p for p in symbol.split("::") if p]  # as base::SplitString: no empty parts
    return symbol if len(parts) <= 2 else ".".join(parts[:-2])


_KEY = operator.itemgetter(1)
_FLAT_KEY = operator.itemgetter(0)
# Translated arg sets remembered (cleared when full).
TRANSLATED_CACHE_LIMIT = 10_000


class ArgsTranslation:
    """Per translated hash key, hash -> name; per module, rel_pc -> function name."""

    def __init__(self) -> None:
        self.names: dict[str, dict[int, str]] = {}
        self.native_symbols: dict[tuple[str, str], dict[int, str]] = {}  # (mapping name, build id hex or "")
        # The keys translate looks at; NATIVE_MAPPING args and their rel_pc are only there once the trace
        # interns unsymbolized locations (expect_mojo_methods). Empty: translate has nothing to do, which
        # SliceTracker checks before every write (the hot path).
        self.keys: frozenset[str] = frozenset()
        # (resolved mapping, pid or None) -> mapping id, given by the profile parser (it owns the mappings).
        self.mapping_id: Callable[[tuple, int | None], int] | None = None
        self._modules: dict[int, tuple[str, str]] = {}  # mapping id -> its module, for native symbols
        # Obfuscated -> deobfuscated Java class names of the first deobfuscation mapping's package.
        self.class_names: dict[str, str] = {}
        self._class_package: str | None = None
        # Translated arg sets by their args: slices repeat a few (rules are fixed before any is written).
        self._translated: dict[tuple, list[Arg]] = {}

    def add(self, hash_key: str, rules: Iterable[tuple[int, str]]) -> None:
        """Names by hash for `hash_key`; the first rule of a hash stays, as in trace_processor."""
        names = self.names.setdefault(hash_key, {})
        for hash_value, name in rules:
            names.setdefault(hash_value, name)
        self.keys = self.keys.union((hash_key,))

    def add_native_symbols(self, module: tuple[str, str], rules: Iterable[tuple[int, str]]) -> None:
        """Function names by rel_pc in `module`; the first rule of an address stays, as in trace_processor."""
        symbols = self.native_symbols.setdefault(module, {})
        for rel_pc, function_name in rules:
            symbols.setdefault(rel_pc, function_name)

    def add_class_names(self, package: str, rules: Iterable[tuple[str, str]]) -> None:
        """Java class names (obfuscated, deobfuscated) of `package`; as trace_processor, only the first
        package given is used, and the first rule of a name stays."""
        if self._class_package is None:
            self._class_package = package
        if package != self._class_package:
            return
        for obfuscated, deobfuscated in rules:
            self.class_names.setdefault(obfuscated, deobfuscated)
        # Never a key (class name keys are indexed): it only says translate has work to do.
        self.keys = self.keys.union((CLASS_NAME_FLAT_KEY,))

    def expect_mojo_methods(self) -> None:
        """The trace interns unsymbolized source locations: its mojo args may need translating."""
        self.keys = self.keys.union((MOJO_MAPPING_ID, MOJO_REL_PC))

    def translate(self, args: list[Arg]) -> list[Arg]:
        """`args` with each translatable hash followed by its name (replacing, in place, an arg of that key
        already there) and the mojo method's native symbol translated; `args` itself when nothing in it
        translates."""
        if self.keys.isdisjoint(map(_KEY, args)) and (  # the usual case, in C
            not self.class_names or CLASS_NAME_FLAT_KEY not in map(_FLAT_KEY, args)
        ):
            return args
        key = tuple(args)
        done = self._translated.get(key)
        if done is None:
            if len(self._translated) >= TRANSLATED_CACHE_LIMIT:
                self._translated.clear()
            done = self._translated[key] = self._translate(args)
        return done

    def _translate(self, args: list[Arg]) -> list[Arg]:
        names = self.names
        out: list[Arg] = []
        mapping_id = rel_pc = None
        # Every arg is added as trace_processor's inserter adds it: a key already there is updated in place.
        for arg in args:
            key, value_type = arg[1], arg[2]
            if key == MOJO_MAPPING_ID and value_type == NATIVE_MAPPING:
                mapping_id = self._mapping_id(*arg[3])
            elif value_type == "string" and arg[0] == CLASS_NAME_FLAT_KEY:
                _put(out, (arg[0], key, "string", self.class_names.get(arg[3], arg[3])))
            elif value_type != "uint":
                _put(out, arg)
            elif key == MOJO_MAPPING_ID:
                mapping_id = arg[3]
            elif key == MOJO_REL_PC:
                rel_pc = arg[3]
            elif key in names:
                _put(out, (key, key, "uint", arg[3]))
                name = names[key].get(arg[3])
                if name is not None:
                    _put_string(out, NAME_KEYS[key], name)
            else:
                _put(out, arg)
        if mapping_id is not None and rel_pc is not None:
            self._mojo_method(out, mapping_id, rel_pc)
        return out

    def with_mapping_ids(self, args: list[Arg]) -> list[Arg]:
        """`args` with each mapping not interned yet (NATIVE_MAPPING) given its id, nothing else translated: the
        args of events that are no slices."""
        if not any(a[2] == NATIVE_MAPPING for a in args):
            return args
        return [(a[0], a[1], "uint", self._mapping_id(*a[3])) if a[2] == NATIVE_MAPPING else a for a in args]

    def _mapping_id(self, mapping: tuple, pid: int | None) -> int | None:
        if self.mapping_id is None:
            return None
        mapping_id = self.mapping_id(mapping, pid)
        self._modules[mapping_id] = (mapping[7], mapping[1])  # (name, build id)
        return mapping_id

    def _mojo_method(self, out: list[Arg], mapping_id: int, rel_pc: int) -> None:
        module = self._modules.get(mapping_id)
        symbol = self.native_symbols.get(module, {}).get(rel_pc) if module is not None else None
        if symbol is None:
            # No symbol: keep the raw values, so that the data does not silently go missing.
            _put(out, (MOJO_MAPPING_ID, MOJO_MAPPING_ID, "uint", mapping_id))
            _put(out, (MOJO_REL_PC, MOJO_REL_PC, "uint", rel_pc))
            return
        _put_string(out, MOJO_METHOD_NAME, mojo_method(symbol))
        # A tag the trace already has as a raw string (older Chromium, local traces) stays.
        if not any(a[1] == MOJO_INTERFACE_TAG for a in out):
            out.append((MOJO_INTERFACE_TAG, MOJO_INTERFACE_TAG, "string", mojo_interface_tag(symbol)))


def _put(out: list[Arg], arg: Arg) -> None:
    """Adds an arg, or replaces in place the arg of its key already there."""
    key = arg[1]
    at = next((i for i, a in enumerate(out) if a[1] == key), None)
    if at is None:
        out.append(arg)
    else:
        out[at] = arg


def _put_string(out: list[Arg], key: str, value: str) -> None:
    _put(out, (key, key, "string", value))
