"""More conformance cases: trace_processor's own diff tests, taken from a perfetto source tree.

    python tools/extract_diff_tests.py PERFETTO_TREE OUT_DIR FAMILY...
    datasette perfetto conformance OUT_DIR

PERFETTO_TREE is a checkout (or `git archive`) of google/perfetto holding
test/trace_processor/diff_tests and python/generators/diff_tests; a FAMILY is a folder under
diff_tests, e.g. parser/json or tables. Every test whose trace is inline or a file in the repository
(textproto, JSON, systrace), whose query is SQL and whose expected output is CSV becomes a case folder in
OUT_DIR, in the format of ../shared/conformance/cases; the shared cases are left out. Tests whose trace is
test data downloaded separately, a Python trace generator, or a textproto this `perfetto` package's protos
cannot parse (extensions it lacks) are skipped and counted. Prints the counts.

The shared cases are a sample of these families: this is the wider check to run before calling a data
source done.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys
import textwrap
from collections import Counter

from google.protobuf import text_format
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from shared_data import CASES  # noqa: E402  (after the path is set)


def extract(tree: str, out_dir: str, families: list[str]) -> Counter:
    sys.path.insert(0, tree)  # the tests import python.generators.diff_tests.testing
    from python.generators.diff_tests import testing  # noqa: PLC0415  (found through the tree given)

    known = set(os.listdir(CASES)) if CASES.exists() else set()
    counts: Counter = Counter()
    for family in families:
        folder = os.path.join(tree, "test", "trace_processor", "diff_tests", family)
        for file_name in sorted(os.listdir(folder)):
            if file_name.startswith("tests") and file_name.endswith(".py"):
                module = _load(os.path.join(folder, file_name))
                for suite in _suites(module, testing.TestSuite):
                    for method_name, method in vars(suite).items():
                        if method_name.startswith("test_"):
                            case_id = f"{family.replace('/', '.')}.{suite.__name__}.{method_name}"
                            if case_id in known:
                                counts["shared already"] += 1
                                continue
                            blueprint = method(object.__new__(suite))
                            counts[_write_case(testing, blueprint, folder, os.path.join(out_dir, case_id))] += 1
    return counts


def _load(path: str):
    # By path: the tree's top-level `test` package would otherwise be the standard library's.
    spec = importlib.util.spec_from_file_location("diff_tests_" + str(abs(hash(path))), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _suites(module, base) -> list:
    return [c for c in vars(module).values() if inspect.isclass(c) and issubclass(c, base) and c is not base]


def _write_case(testing, blueprint, folder: str, case_dir: str) -> str:
    """Writes one case folder; returns what happened (a count's name)."""
    if blueprint.trace_modifier is not None:
        return "skipped: trace modifier"
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
    trace = _trace(testing, blueprint.trace, folder)
    if isinstance(trace, str):
        return trace
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


def _trace(testing, trace, folder: str) -> tuple[bytes, str] | str:
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
    else:
        return f"skipped: {type(trace).__name__} trace"
    try:
        return text_format.Parse(text, pb.Trace()).SerializeToString(), "trace.pb"
    except text_format.ParseError:
        return "skipped: textproto this perfetto package cannot parse"


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    for what, count in sorted(extract(sys.argv[1], sys.argv[2], sys.argv[3:]).items()):
        print(f"{count:5d}  {what}")
