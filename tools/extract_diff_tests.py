"""More conformance cases: trace_processor's own diff tests, taken from a perfetto source tree.

    python tools/extract_diff_tests.py PERFETTO_TREE OUT_DIR FAMILY...
    datasette perfetto conformance OUT_DIR

PERFETTO_TREE is a checkout (or `git archive`) of google/perfetto holding test/trace_processor/diff_tests,
test/synth_common.py, protos/ and python/generators/diff_tests; a
FAMILY is a folder under diff_tests, e.g. parser/json or tables. Every test whose trace is inline or a file in the repository
(textproto, JSON, systrace), whose query is SQL and whose expected output is CSV becomes a case folder in
OUT_DIR, in the format of ../shared/conformance/cases; the shared cases are left out. A trace made by a
Python generator script is made by running it. When `grpc_tools` (pip install grpcio-tools) is importable, the tree's
own protos are compiled, so traces using extensions (Chrome, GPU, ART heap graph) convert too; without it
the `perfetto` package's protos are used and such tests are skipped. Tests whose trace is test data
downloaded separately are skipped and counted. Prints the counts.

The shared cases are a sample of these families: this is the wider check to run before calling a data
source done.
"""

from __future__ import annotations

import importlib.util
import inspect
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from collections import Counter

from google.protobuf import descriptor_pb2, text_format
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from shared_data import CASES  # noqa: E402  (after the path is set)
from tree_protos import compile_descriptor_set  # noqa: E402


def extract(tree: str, out_dir: str, families: list[str]) -> Counter:
    sys.path.insert(0, tree)  # the tests import python.generators.diff_tests.testing
    from python.generators.diff_tests import testing  # noqa: PLC0415  (found through the tree given)

    known = set(os.listdir(CASES)) if CASES.exists() else set()
    counts: Counter = Counter()
    for family in families:
        folder = os.path.join(tree, "test", "trace_processor", "diff_tests", family)
        for file_name in sorted(os.listdir(folder)):
            if file_name.endswith(".py") and _declares_tests(os.path.join(folder, file_name)):
                module = _load(os.path.join(folder, file_name))
                for suite in _suites(module, testing.TestSuite):
                    for method_name, method in vars(suite).items():
                        if method_name.startswith("test_"):
                            case_id = f"{family.replace('/', '.')}.{suite.__name__}.{method_name}"
                            if case_id in known:
                                counts["shared already"] += 1
                                continue
                            blueprint = method(object.__new__(suite))
                            counts[_write_case(testing, blueprint, tree, folder, os.path.join(out_dir, case_id))] += 1
    return counts


def _declares_tests(path: str) -> bool:
    """Whether a file holds diff tests (tests*.py, and others such as deobfuscation_tests.py); not a
    trace generator script."""
    with open(path, encoding="utf-8") as f:
        return "DiffTestBlueprint" in f.read()


def _load(path: str):
    # By path: the tree's top-level `test` package would otherwise be the standard library's.
    spec = importlib.util.spec_from_file_location("diff_tests_" + str(abs(hash(path))), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _suites(module, base) -> list:
    return [c for c in vars(module).values() if inspect.isclass(c) and issubclass(c, base) and c is not base]


def _write_case(testing, blueprint, tree: str, folder: str, case_dir: str) -> str:
    """Writes one case folder; returns what happened (a count's name)."""
    query = _text(testing, blueprint.query, folder)
    if query is None:
        return "skipped: query not SQL"
    out = blueprint.out
    if isinstance(out, testing.Csv):
        expected = out.contents
    else:
        expected = _text(testing, out, folder)
        if expected is None:
            return "skipped: output not CSV"
    trace = _trace(testing, blueprint.trace, tree, folder)
    if isinstance(trace, str):
        return trace
    if blueprint.trace_modifier is not None:  # e.g. TraceInjector: fields set on some packets (a machine id)
        if trace[1] != "trace.pb":
            return "skipped: trace modifier on a trace not protobuf"
        modified = _trace_class(tree).FromString(trace[0])
        blueprint.trace_modifier.inject(modified)
        trace = modified.SerializeToString(), trace[1]
    data, name = trace
    os.makedirs(case_dir, exist_ok=True)
    with open(os.path.join(case_dir, name), "wb") as f:
        f.write(data)
    with open(os.path.join(case_dir, "query.sql"), "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(query).strip() + "\n")
    with open(os.path.join(case_dir, "expected.csv"), "w", encoding="utf-8") as f:
        f.write("\n".join(line.strip() for line in textwrap.dedent(expected).strip().splitlines()) + "\n")
    case = {"id": os.path.basename(case_dir), "source": "extracted from a perfetto tree", "trace": name, "tier": 2}
    with open(os.path.join(case_dir, "case.json"), "w", encoding="utf-8") as f:
        json.dump(case, f)
    return "written"


def _text(testing, value, folder: str) -> str | None:
    """A query or output given inline (str) or as a file beside the tests; None otherwise."""
    if isinstance(value, str):
        return value
    if isinstance(value, testing.Path) and not isinstance(value, testing.DataPath):
        path = os.path.join(folder, value.filename)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    return None


def _trace(testing, trace, tree: str, folder: str) -> tuple[bytes, str] | str:
    """(bytes, case file name) of a test's trace, or why it is skipped."""
    if isinstance(trace, testing.DataPath):
        return "skipped: trace in downloaded test data"
    if isinstance(trace, testing.Json):
        return trace.contents.encode(), "trace.json"
    if isinstance(trace, testing.Systrace):
        return trace.contents.encode(), "trace.systrace"
    if isinstance(trace, testing.TextProto):
        text = trace.contents
    elif isinstance(trace, testing.Path) and trace.filename.endswith(".textproto"):
        with open(os.path.join(folder, trace.filename), encoding="utf-8") as f:
            text = f.read()
    elif isinstance(trace, testing.Path) and trace.filename.endswith((".json", ".systrace")):
        with open(os.path.join(folder, trace.filename), "rb") as f:
            return f.read(), "trace" + os.path.splitext(trace.filename)[1]
    elif isinstance(trace, testing.Path) and trace.filename.endswith(".py"):
        return _synthesized(tree, os.path.join(folder, trace.filename))
    elif isinstance(trace, (testing.Zip, testing.Tar)):
        return _archive(testing, trace, tree, folder)
    else:
        return f"skipped: {type(trace).__name__} trace"
    try:
        return text_format.Parse(text, _trace_class(tree)()).SerializeToString(), "trace.pb"
    except text_format.ParseError:
        return "skipped: textproto this perfetto package cannot parse"


def _archive(testing, trace, tree: str, folder: str) -> tuple[bytes, str] | str:
    """A Zip or Tar blueprint's archive: members written as its test framework writes them."""
    contents: list[tuple[str, bytes]] = []
    for name, member in trace.members.items():
        if isinstance(member, str):
            data = member.encode()
        elif isinstance(member, bytes):
            data = member
        elif isinstance(member, testing.TextProto):
            try:
                data = text_format.Parse(member.contents, _trace_class(tree)()).SerializeToString()
            except text_format.ParseError:
                return "skipped: textproto this perfetto package cannot parse"
        else:
            made = _trace(testing, member, tree, folder)
            if isinstance(made, str):
                return made
            data = made[0]
        contents.append((name, data))
    out = io.BytesIO()
    if isinstance(trace, testing.Zip):
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in contents:
                z.writestr(name, data)
        return out.getvalue(), "trace.zip"
    if getattr(trace, "macos_style", False):
        return "skipped: macOS-style tar (PAX headers, space-terminated fields)"
    with tarfile.open(fileobj=out, mode="w") as t:
        for name, data in contents:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return out.getvalue(), "trace.tar"


def _synthesized(tree: str, script: str) -> tuple[bytes, str] | str:
    """The trace a test's generator script (test/synth_common.py) writes, given the protos as a descriptor set
    built from this `perfetto` package (see synth_descriptor)."""
    descriptor = _tree_descriptor(tree) or os.path.join(tree, "synth_trace_descriptor.bin")
    if not os.path.exists(descriptor):
        with open(descriptor, "wb") as f:
            f.write(synth_descriptor(tree))
    env = {**os.environ, "PYTHONPATH": os.path.join(tree, "test")}
    done = subprocess.run([sys.executable, script, descriptor], capture_output=True, env=env, check=False)
    if done.returncode != 0 or not done.stdout:
        return "skipped: generator script failed (protos this perfetto package lacks)"
    return done.stdout, "trace.pb"


# The tree's protos with the extensions trace_processor's tests use.
_TREE_PROTOS = (
    "protos/perfetto/trace/trace.proto",
    "protos/perfetto/trace/test_extensions.proto",
    "protos/perfetto/trace/gpu/gpu_track_event.proto",
    "protos/perfetto/trace/gpu/gpu_interned_data.proto",
    "protos/third_party/android/art/heap_graph.proto",
    "protos/third_party/android/android_extensions.proto",
    "protos/third_party/chromium/chrome_track_event.proto",
    "protos/third_party/chromium/chrome_enums.proto",
)
_trace_classes: dict = {}


def _tree_descriptor(tree: str) -> str | None:
    """Path of a FileDescriptorSet compiled from the tree's protos, or None without grpc_tools."""
    path = os.path.join(tree, "tree_trace_descriptor.bin")
    if os.path.exists(path):
        return path
    try:
        compile_descriptor_set(tree, _TREE_PROTOS, path)
    except ImportError:  # no grpcio-tools: the perfetto package's protos are used
        return None
    return path


def _trace_class(tree: str):
    """The Trace message class to parse textprotos with: the tree's, extensions registered, or the package's."""
    if tree not in _trace_classes:
        path = _tree_descriptor(tree)
        if path is None:
            _trace_classes[tree] = pb.Trace
        else:
            from google.protobuf import descriptor_pool, message_factory  # noqa: PLC0415

            with open(path, "rb") as f:
                files = descriptor_pb2.FileDescriptorSet.FromString(f.read()).file
            pool = descriptor_pool.DescriptorPool()
            for file in files:
                pool.Add(file)
            classes = message_factory.GetMessageClassesForFiles([file.name for file in files], pool)
            _trace_classes[tree] = classes["perfetto.protos.Trace"]
    return _trace_classes[tree]


def synth_descriptor(tree: str) -> bytes:
    """A FileDescriptorSet for synth_common: this package's perfetto_trace.proto, the tree's Chrome enums
    (read from the .proto text), and empty stand-ins for the Chrome and Android extension types it looks up
    (scripts that use them fail, and are skipped)."""
    trace_file = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(trace_file)
    enums = descriptor_pb2.FileDescriptorProto(name="synth_chrome_enums.proto", package="perfetto.protos.chrome_enums")
    with open(os.path.join(tree, "protos", "third_party", "chromium", "chrome_enums.proto"), encoding="utf-8") as f:
        for match in re.finditer(r"enum (\w+) \{(.*?)\}", f.read(), re.S):
            enum = enums.enum_type.add(name=match.group(1))
            for name, number in re.findall(r"(\w+) = (-?\d+);", match.group(2)):
                enum.value.add(name=name, number=int(number))
    chrome = descriptor_pb2.FileDescriptorProto(name="synth_chrome.proto", package="perfetto.protos")
    chrome.message_type.add(name="ChromeTrackEvent")
    android = descriptor_pb2.FileDescriptorProto(name="synth_android.proto", package="com.android.internal")
    holder = android.message_type.add(name="FrameworksNativeTracePacket")
    holder.extension_range.add(start=1, end=1000)
    holder.extension.add(
        name="frame_timeline_event",
        number=76,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
        extendee=".com.android.internal.FrameworksNativeTracePacket",
    )
    return descriptor_pb2.FileDescriptorSet(file=[trace_file, enums, chrome, android]).SerializeToString()


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    for what, count in sorted(extract(sys.argv[1], sys.argv[2], sys.argv[3:]).items()):
        print(f"{count:5d}  {what}")
