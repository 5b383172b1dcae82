"""What every real-CLI end-to-end test needs: the CLI (or a stated skip) and a leftover-process probe."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


def require_cli(name: str) -> str:
    """The CLI's path; skip (or fail under RUBRICGATE_REQUIRE_CLIS=1) when it is missing."""
    path = shutil.which(name)
    if path is None:
        reason = f"{name} CLI not on PATH (install: bash .ci/install-agents.sh)"
        if os.environ.get("RUBRICGATE_REQUIRE_CLIS") == "1":
            pytest.fail(f"RUBRICGATE_REQUIRE_CLIS=1 but {reason}")
        pytest.skip(reason)
    return path


def processes_in(directory: Path) -> list[int]:
    """PIDs whose working directory is inside `directory` (our agent and anything it spawned)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if proc.name.isdigit() and cwd.startswith(str(directory)):
            pids.append(int(proc.name))
    return pids
