"""Where the shared reference data lives: real traces and trace_processor's diff tests.

It is not part of this repository. It is looked up as $PERFETTO_SHARED_DIR, else a
`shared` folder beside this checkout or beside any folder above it, else the project's
workplace (/work/shared), so a clone anywhere on the project's machine finds it.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKPLACE = Path("/work/shared")


def find_shared() -> Path:
    env = os.environ.get("PERFETTO_SHARED_DIR")
    if env:
        return Path(env)
    for folder in ROOT.parents:
        candidate = folder / "shared"
        if (candidate / "traces").is_dir():
            return candidate
    return WORKPLACE


SHARED = find_shared()
TRACES = SHARED / "traces"
CASES = SHARED / "conformance" / "cases"
