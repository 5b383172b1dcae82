"""Throwaway copies of the working tree, and the check that the original was not touched."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Never copied into a workspace nor watched for changes: run outputs and caches.
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".pytest_cache", ".rubricgate-cache", ".venv"}


def list_tree(repo: Path, exclude: set[str] = frozenset()) -> list[str]:
    """Repo-relative files a workspace holds: git's tracked + untracked-not-ignored, else a walk."""
    try:
        out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True, stdin=subprocess.DEVNULL).stdout
        names = sorted({n for n in out.decode("utf-8", "surrogateescape").split("\0") if n})
    except (OSError, subprocess.CalledProcessError):
        names = _walk(repo)
    return [n for n in names if not _excluded(n, exclude) and _inside(repo, n)]


def _walk(repo: Path) -> list[str]:
    found = []
    for root, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        found += [Path(root, f).relative_to(repo).as_posix() for f in files]
    return sorted(found)


def _excluded(rel: str, exclude: set[str]) -> bool:
    first = rel.split("/", 1)[0]
    return first in SKIP_DIRS or first in exclude or rel.split("/")[0] in exclude


def _inside(repo: Path, rel: str) -> bool:
    # Deleted-but-tracked files and symlinks pointing outside the repo are not copied.
    path = repo / rel
    root = repo.resolve()
    return path.is_file() and (path.resolve() == root or root in path.resolve().parents)


@dataclass
class Workspace:
    root: Path
    scratch: Path
    keep: bool = False

    def remove(self) -> None:
        """Delete the copy unless asked to keep it (for debugging with --keep-workspaces)."""
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
            shutil.rmtree(self.scratch, ignore_errors=True)


def make_workspace(repo: Path, files: list[str], overlay: dict[str, str], changed: tuple[str, list[str]],
                   keep: bool = False, label: str = "ws") -> Workspace:
    """Copy `files` from repo into a fresh temp dir, write the overlay and the changed-files list."""
    root = Path(tempfile.mkdtemp(prefix=f"rubricgate-{label}-"))
    scratch = Path(tempfile.mkdtemp(prefix=f"rubricgate-{label}-scratch-"))
    for rel in files:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(repo / rel, target)
    for rel, content in {**overlay, changed[0]: "".join(f"{p}\n" for p in changed[1])}.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    (scratch / "home").mkdir()
    return Workspace(root=root, scratch=scratch, keep=keep)


TreeState = dict[str, tuple[int, int]]


def snapshot(repo: Path, exclude: set[str]) -> TreeState:
    """(size, mtime) of every file under repo but excluded dirs: cheap, and catches any write."""
    state: TreeState = {}
    for root, dirs, names in os.walk(repo):
        rel_root = Path(root).relative_to(repo).as_posix()
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not (rel_root == "." and d in exclude)]
        for name in names:
            path = Path(root, name)
            st = path.lstat()
            state[path.relative_to(repo).as_posix()] = (st.st_size, st.st_mtime_ns)
    return state


def tree_changes(before: TreeState, after: TreeState) -> list[str]:
    """Paths added, removed or modified between two snapshots."""
    changed = [p for p in before.keys() | after.keys() if before.get(p) != after.get(p)]
    return sorted(changed)
