"""What `pip install` of the checkout ships: every module and data file the plugin uses.

The wheel itself is built, installed and exercised from outside the checkout by
`./dev smoke` (tests/smoke_installed.py); these checks catch the usual cause early.
"""

from __future__ import annotations

import configparser
from pathlib import Path

import datasette_perfetto

PACKAGE = Path(datasette_perfetto.__file__).parent
ROOT = PACKAGE.parent


def test_every_folder_of_modules_is_a_package():
    # `packages = find:` skips a folder without __init__.py, and with it every module inside.
    folders = {p.parent for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file())
    assert missing == []


def test_package_data_patterns_match_the_files_the_plugin_reads():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    patterns = [p.strip() for p in config["options.package_data"]["datasette_perfetto"].split(",")]
    for pattern in patterns:
        assert list(PACKAGE.glob(pattern)), f"package_data pattern {pattern!r} matches no file"
    shipped = {f for pattern in patterns for f in PACKAGE.glob(pattern)}
    # Every template Datasette may render, and the data files read at run time.
    assert set((PACKAGE / "templates").glob("*.html")) <= shipped
    assert set((PACKAGE / "static").glob("*")) <= shipped  # the stylesheet, served by Datasette from static/
    assert PACKAGE / "stats.tsv" in shipped
    assert PACKAGE / "protos" / "report.proto" in shipped
