"""protos/report.proto is the JSON schema; the generated module must match it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_generated_module_matches_the_proto(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{ROOT / 'protos'}",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            str(ROOT / "protos" / "report.proto"),
        ],
        check=True,
    )
    for generated in ("report_pb2.py", "report_pb2.pyi"):  # the module and its type stub
        committed = (ROOT / "datasette_perfetto" / "report" / generated).read_text()
        assert (tmp_path / generated).read_text() == committed, (
            f"{generated} is stale; regenerate: python -m grpc_tools.protoc -Iprotos "
            "--python_out=datasette_perfetto/report --pyi_out=datasette_perfetto/report protos/report.proto"
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
