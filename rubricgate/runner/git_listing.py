"""`git ls-files` of a repository: the files a workspace is made of, as git sees them.

git keeps out what `.gitignore` names (`.env`, local credentials, build output). A folder that is
no git repository is walked instead (runner/workspace.py). A repository git cannot list (git not
installed, a broken git, "dubious ownership" for a checkout another user owns) must never be
walked: the walk would show the reviewer, and its model provider, every ignored file.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.suite.trees import in_git_repository

LIST_ARGS = ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]


class GitListing:
    """`git ls-files` of a repository, started now and read later: `run` starts it before the
    suite loads, and git lists the tree on the other core meanwhile (a run's start is its fixed
    cost). A thread waits for git, so a run that ends early (bad input) leaves no process
    behind. `names()`: the sorted names, or None outside a git repository."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._names: list[str] | None = None
        self._problem = ""  # why git could not list, in its own words
        self._thread = threading.Thread(target=self._list, args=(repo,), name="git-ls-files", daemon=True)
        self._thread.start()

    def _list(self, repo: Path) -> None:
        try:
            done = subprocess.run(["git", "-C", str(repo), *LIST_ARGS], capture_output=True, stdin=subprocess.DEVNULL)
        except OSError as exc:
            self._problem = f"git cannot be started ({exc.strerror})"
            return
        if done.returncode != 0:
            self._problem = _first_line(done.stderr) or f"git ls-files exited {done.returncode}"
            return
        self._names = sorted({n for n in done.stdout.decode("utf-8", "surrogateescape").split("\0") if n})

    def names(self) -> list[str] | None:
        """The listed names; None outside a git repository. Raises GateInputError for a
        repository git could not list (never walked: its ignored files would be shown)."""
        self._thread.join()
        if self._names is None and self._problem and in_git_repository(self.repo):
            raise unlistable(self.repo, self._problem)
        return self._names


def unlistable(repo: Path, problem: str) -> GateInputError:
    """The one line for a repository git cannot list, with the fixes for its usual causes."""
    return GateInputError(str(repo), "", f"git cannot list the repository's files: {problem}; without git, "
                          "files .gitignore keeps out (.env, credentials) would reach the reviewer",
                          f"make `git -C {repo} ls-files` work for this user: install git, or for a checkout "
                          f"another user owns, git config --global --add safe.directory {repo}")


def _first_line(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[0].strip() if lines else ""
