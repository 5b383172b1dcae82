"""What every real-CLI end-to-end test needs: the CLI (or a stated skip) and a leftover-process probe."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SKILL_OK = ("---\nname: {name}\ndescription: Summarise things; use when asked for a summary.\n---\n"
            "# {name}\n\n1. Read the input file.\n2. Summarise it in five bullets.\n3. Save nothing.\n")


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


def lay_out_suite(repo: Path, folders) -> dict:
    """The reviewer, one skill per fixture folder ("block/no-description" has no description),
    an empty evals/tasks; returns this repository's rubricgate.yaml as a dict to adapt."""
    shutil.copytree(ROOT / "reviewer", repo / "reviewer", ignore=shutil.ignore_patterns(".changed-skills.txt"))
    for rel in folders:
        path = repo / "fixtures" / rel / "SKILL.md"
        path.parent.mkdir(parents=True)
        name = rel.split("/")[1]
        text = SKILL_OK.format(name=name)
        path.write_text(text.replace("description: Summarise things; use when asked for a summary.\n", "")
                        if name == "no-description" else text)
    (repo / "evals" / "tasks").mkdir(parents=True)
    return yaml.safe_load((ROOT / "rubricgate.yaml").read_text())

