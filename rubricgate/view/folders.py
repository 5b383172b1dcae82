"""The folders `rubricgate view` reads when given none: the reports folder, and a checkout of
the history branch the weekly workflow keeps (`rubricgate-history`), when one is checked out."""

from __future__ import annotations

import subprocess
from pathlib import Path

from rubricgate.errors import GateInputError

HISTORY_BRANCH = "refs/heads/rubricgate-history"


def default_folders(repo: Path, reports: str) -> list[Path]:
    """The configured reports folder and every worktree of the history branch."""
    folders = [p for p in [repo / reports, *history_checkouts(repo)] if p.is_dir()]
    if not folders:
        raise GateInputError(str(repo / reports), "", "no reports folder yet",
                             "run `rubricgate run` first, or pass the folders to view")
    return folders


def history_checkouts(repo: Path) -> list[Path]:
    """Worktrees of this repository that have the history branch checked out (`git worktree list`)."""
    try:
        listed = subprocess.run(["git", "-C", str(repo), "worktree", "list", "--porcelain"], capture_output=True,
                                text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return []  # no git here: the reports folder alone
    out, current = [], None
    for line in listed.stdout.splitlines() if listed.returncode == 0 else []:
        if line.startswith("worktree "):
            current = Path(line.removeprefix("worktree "))
        elif line == f"branch {HISTORY_BRANCH}" and current is not None:
            out.append(current)
    return out
