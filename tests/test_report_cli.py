"""`datasette perfetto report`: output formats and bad input on the command line."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
from click.testing import CliRunner
from datasette.cli import cli


def report(*args: str):
    return CliRunner().invoke(cli, ["perfetto", "report", *args])


def test_text_json_and_sql(demo_db):
    db = str(demo_db.path)
    text = report(db, "slices", "--top", "2")
    assert text.exit_code == 0 and "URLRequest" in text.output and "--top 50" in text.output
    data = json.loads(report(db, "slices", "--name", "Raster", "--format", "json").output)
    assert data["slices_table"]["rows"][0]["count"] == 48
    assert "FROM report_slice_name" in report(db, "slices", "--format", "sql").output


@pytest.mark.parametrize(
    "args, message",
    [
        (["bogus"], "unknown noun 'bogus'"),
        (["slices", "pie"], "slices has no view 'pie'"),
        (["slices", "--top", "x"], "top: expected a whole number, got 'x'"),
        (["slices", "--time", "1s"], "time: expected START,END"),
        (["slices", "inspect", "--name", "*"], "matches"),
        (["scheduling", "inspect"], "needs"),
    ],
)
def test_bad_flags_exit_non_zero_with_the_reason(demo_db, args, message):
    before = demo_db.path.read_bytes()
    result = report(str(demo_db.path), *args)
    assert result.exit_code == 1 and message in result.output
    assert "Traceback" not in result.output
    json_result = report(str(demo_db.path), *args, "--format", "json")
    assert json_result.exit_code == 1 and json.loads(json_result.output)["ok"] is False
    assert demo_db.path.read_bytes() == before  # reports only read


@pytest.mark.parametrize(
    "content, message",
    [
        ("garbage", "{path}: not a trace database (file is not a database)"),
        ("plain", "{path} is not a trace database (no slice and trace_bounds tables)"),  # as the web pages say
    ],
)
def test_files_that_are_not_trace_databases(tmp_path, content, message):
    path = tmp_path / "x.db"
    if content == "garbage":
        path.write_bytes(os.urandom(3000))
    else:
        sqlite3.connect(path).execute("CREATE TABLE t (x)")
    before = path.read_bytes()
    result = report(str(path))
    assert result.exit_code == 1
    assert result.output == f"Error: {message.format(path=path)}\n"
    assert path.read_bytes() == before
