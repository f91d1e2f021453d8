"""DeobfuscationMapping packets (R8/ProGuard maps, TracePacket field 64) applied when the
trace ends, as trace_processor's DeobfuscationTracker: Java frames of profiles get their
deobfuscated name (or an inline chain of symbols when the map has line ranges), heap graph
classes and fields theirs (heap_graph.py applies those).

A mapping belongs to an Android package; a frame's package comes from its mapping's
path (an APK under /data/app, a few system apps, in-memory dex files; "memfd" for
/memfd: mappings). A frame whose package the path does not tell takes the package of a process
whose profile uses it (its android_appid's first package_list row): the first of heapprofd allocations,
then stack samples, then OOME thread stacks, in table order, walking each callsite to its root.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from ...trackers.stack_profile_tracker import StackProfileTracker
from ..common.values import text

# Apps outside /data/app whose package their path cannot tell: path prefix -> package, in
# trace_processor's order of checks (prefixes, then substrings).
_PACKAGE_CHECKS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("prefix", ("/system_ext/priv-app/SystemUIGoogle/SystemUIGoogle.apk",), "com.android.systemui"),
    ("prefix", ("/product/priv-app/Phonesky/Phonesky.apk",), "com.android.vending"),
    ("prefix", ("/product/app/Maps/Maps.apk",), "com.google.android.apps.maps"),
    (
        "prefix",
        ("/system_ext/priv-app/NexusLauncherRelease/NexusLauncherRelease.apk",),
        "com.google.android.apps.nexuslauncher",
    ),
    ("prefix", ("/product/app/Photos/Photos.apk",), "com.google.android.apps.photos"),
    ("prefix", ("/product/priv-app/WellbeingPrebuilt/WellbeingPrebuilt.apk",), "com.google.android.apps.wellbeing"),
    ("substring", ("DevicePersonalizationPrebuilt", "MatchMaker"), "com.google.android.as"),
    ("substring", ("DeviceIntelligenceNetworkPrebuilt",), "com.google.android.as.oss"),
    ("substring", ("SettingsIntelligenceGooglePrebuilt",), "com.google.android.settings.intelligence"),
    ("prefix", ("/product/app/PrebuiltGmail/PrebuiltGmail.apk",), "com.google.android.gm"),
    ("substring", ("PrebuiltGmsCore", "com.google.android.gms"), "com.google.android.gms"),
    ("prefix", ("/product/priv-app/Velvet/Velvet.apk",), "com.google.android.googlequicksearchbox"),
    (
        "prefix",
        ("/product/app/LatinIMEGooglePrebuilt/LatinIMEGooglePrebuilt.apk",),
        "com.google.android.inputmethod.latin",
    ),
    ("prefix", ("/product/app/PrebuiltBugle/PrebuiltBugle.apk",), "com.google.android.apps.messaging"),
)
DATA_APP = "/data/app/"
IN_MEMORY_DEX = "dex extracted in memory from /data/app/"


def _package_from_app(path: str) -> str | None:
    """The package of /data/app/<package>-<random>/... or /data/app/~~<random>/<package>-<random>/..."""
    rest = path[len(DATA_APP) :]
    start = 0
    if rest.startswith("~"):
        slash = rest.find("/")
        if slash < 0:
            return None
        start = slash + 1
    end = rest.find("/", start + 1)
    if end < 0:
        return None
    part = rest[start : start + end]  # (trace_processor takes `end` characters from `start`)
    minus = part.find("-")
    return part[:minus] if minus >= 0 else None


def package_from_location(location: str, stats) -> str | None:
    """The Android package a class or mapping location belongs to, if it tells
    (trace_processor's PackageFromLocation); an unparsable /data/app path is counted."""
    for how, patterns, package in _PACKAGE_CHECKS:
        if how == "prefix":
            if location.startswith(patterns[0]):
                return package
        elif any(p in location for p in patterns):
            return package
    path = None
    if location.startswith(DATA_APP):
        path = location
    else:
        at = location.find(IN_MEMORY_DEX)
        if at >= 0:
            path = location[at + len(IN_MEMORY_DEX) - len(DATA_APP) :]
    if path is None:
        return None
    found = _package_from_app(path)
    if found is None:
        stats.inc("deobfuscate_location_parse_error")
    return found


@dataclass
class ObfuscatedClass:
    obfuscated: str
    deobfuscated: str
    members: list[tuple[str, str]] = field(default_factory=list)  # fields: (obfuscated, qualified deobfuscated)
    # methods: (obfuscated, qualified deobfuscated, obfuscated line start, end, source line start)
    methods: list[tuple[str, str, int | None, int | None, int | None]] = field(default_factory=list)


@dataclass
class Mapping:
    package: str | None
    classes: list[ObfuscatedClass]


def _qualified(cls_name: str, member_name: str) -> str:
    return member_name if "." in member_name else f"{cls_name}.{member_name}"


def parse_mappings(raws: list[bytes], stats) -> list[Mapping]:
    """The trace's DeobfuscationMapping packets, in order (undecodable ones counted and skipped)."""
    out = []
    for raw in raws:
        try:
            m = pb.DeobfuscationMapping.FromString(raw)
        except DecodeError:
            stats.inc("proto_packet_parse_errors")
            continue
        classes = []
        for c in m.obfuscated_classes:
            deob = text(c.deobfuscated_name)
            classes.append(
                ObfuscatedClass(
                    text(c.obfuscated_name),
                    deob,
                    [
                        (text(f.obfuscated_name), _qualified(deob, text(f.deobfuscated_name)))
                        for f in c.obfuscated_members
                    ],
                    [
                        (
                            text(f.obfuscated_name),
                            _qualified(deob, text(f.deobfuscated_name)),
                            f.obfuscated_line_start if f.HasField("obfuscated_line_start") else None,
                            f.obfuscated_line_end if f.HasField("obfuscated_line_end") else None,
                            f.source_line_start if f.HasField("source_line_start") else None,
                        )
                        for f in c.obfuscated_methods
                    ],
                )
            )
        out.append(Mapping(text(m.package_name) or None, classes))
    return out


def deobfuscate_frames(
    stacks: StackProfileTracker, mappings: list[Mapping], stats, process_package: Callable[[int], str | None]
) -> None:
    """Java frames (names with a '.') of a mapping's package, or of memfd mappings, named
    "class.method" as the map has it: the method's deobfuscated name; with the frame's line
    in the map's line ranges, an inline chain of symbols (outermost last) instead; several
    candidates and no line: "A | B"."""
    java_frames: dict[tuple[str, str], list[int]] = {}
    unknown: dict[int, str] = {}  # frame id -> name, of frames whose package the mapping does not tell
    for frame_id, name, mapping_name in stacks.frames_with_mapping_names():
        if "." not in name:
            continue
        package = package_from_location(mapping_name, stats)
        if package is None and mapping_name.startswith("/memfd:"):
            package = "memfd"
        if package is not None:
            java_frames.setdefault((name, package), []).append(frame_id)
        else:
            unknown[frame_id] = name
    if unknown:
        for frame_id, package in _guessed_packages(stacks.storage, unknown, process_package):
            java_frames.setdefault((unknown[frame_id], package), []).append(frame_id)
    if not java_frames:
        return
    names: dict[int, str] = {}
    for mapping in mappings:
        if not mapping.package:
            continue
        methods: dict[str, list[tuple]] = {}
        for cls in mapping.classes:
            for obf, deob, line_start, line_end, source_line in cls.methods:
                methods.setdefault(f"{cls.obfuscated}.{obf}", []).append((deob, line_start, line_end, source_line))
        symbol_updates: list[tuple[int, int]] = []
        for obfuscated, candidates in methods.items():
            frames = java_frames.get((obfuscated, mapping.package), []) + java_frames.get((obfuscated, "memfd"), [])
            for frame_id in frames:
                line = stacks.frame_line(frame_id)
                chain = []
                if line is not None:
                    chain = [c for c in candidates if (c[1] is None or line >= c[1]) and (c[2] is None or line <= c[2])]
                if chain:
                    rows = [(c[0], None, c[3], int(i < len(chain) - 1)) for i, c in enumerate(chain)]
                    symbol_updates.append((stacks.symbol_set(rows), frame_id))
                    names[frame_id] = chain[-1][0]
                else:
                    distinct = sorted({c[0] for c in candidates})
                    names[frame_id] = distinct[0] if len(distinct) == 1 else " | ".join(distinct)
        if symbol_updates:
            stacks.set_frame_symbols(symbol_updates)
    if names:
        stacks.storage.executemany(
            "UPDATE stack_profile_frame SET deobfuscated_name = ? WHERE id = ?",
            [(name, frame_id) for frame_id, name in sorted(names.items())],
        )


# The callsites processes' profiles use, in the order trace_processor looks for a frame's package.
_PROFILE_CALLSITES = """
SELECT upid, callsite_id FROM (
  SELECT 0 AS source, id, upid, callsite_id FROM heap_profile_allocation
  UNION ALL
  SELECT 1, s.id, c.upid, s.callsite_id FROM profiler_sample AS s
  JOIN profiler_task_context AS c ON c.id = s.task_context_id WHERE c.upid IS NOT NULL AND s.callsite_id IS NOT NULL
  UNION ALL
  SELECT 2, t.id, g.upid, t.callsite_id FROM heap_graph_thread_callsite AS t JOIN heap_graph AS g ON g.id = t.heap_graph_id
  WHERE t.callsite_id IS NOT NULL
)
ORDER BY source, id
"""


def _guessed_packages(storage, unknown: dict[int, str], process_package: Callable[[int], str | None]) -> list:
    """(frame id, package) of the `unknown` frames a process with a known package uses (the first such
    process decides)."""
    callsites = {
        cid: (parent, frame)
        for cid, parent, frame in storage.query("SELECT id, parent_id, frame_id FROM stack_profile_callsite")
    }
    guessed: dict[int, str] = {}
    seen: set[tuple[int, int]] = set()
    for upid, callsite_id in storage.query(_PROFILE_CALLSITES):
        if (upid, callsite_id) in seen:
            continue
        seen.add((upid, callsite_id))
        package = process_package(upid)
        if package is None:
            continue
        while callsite_id is not None and callsite_id in callsites:
            parent, frame_id = callsites[callsite_id]
            if frame_id in unknown and frame_id not in guessed:
                guessed[frame_id] = package
            callsite_id = parent
        if len(guessed) == len(unknown):
            break
    return sorted(guessed.items())
