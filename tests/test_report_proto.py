"""The generated protobuf modules must match their protos: protos/report.proto (the report's JSON schema) and
protos/dimensions.proto (TrackDescriptor.dimensions)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "proto, package",
    [("report", "datasette_perfetto/report"), ("dimensions", "datasette_perfetto/importers/proto")],
)
def test_generated_module_matches_the_proto(tmp_path, proto, package):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{ROOT / 'protos'}",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            str(ROOT / "protos" / f"{proto}.proto"),
        ],
        check=True,
    )
    for generated in (f"{proto}_pb2.py", f"{proto}_pb2.pyi"):  # the module and its type stub
        committed = (ROOT / package / generated).read_text()
        assert (tmp_path / generated).read_text() == committed, (
            f"{generated} is stale; regenerate: python -m grpc_tools.protoc -Iprotos "
            f"--python_out={package} --pyi_out={package} protos/{proto}.proto"
        )


def test_every_view_fills_a_report_field():
    from datasette_perfetto.report import report_pb2
    from datasette_perfetto.report.views import NOUNS
    from datasette_perfetto.report.views.overview import OVERVIEW

    fields = {f.name for f in report_pb2.Report.DESCRIPTOR.oneofs_by_name["result"].fields}
    for views in NOUNS.values():
        for view in views.values():
            assert view.result_field in fields, view.label()
    assert OVERVIEW.result_field in fields
