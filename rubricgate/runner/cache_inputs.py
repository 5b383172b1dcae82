"""What the trial cache digests besides the case: the reviewer's files and the agent's program.

Reviewer files are everything a reviewer is pointed at, not only the three configured paths:
  * the prompt, skill and rubric, every file in each one's folder (walked), and every file in
    the folder that holds all three (`reviewer/` in the default layout) unless that is the
    repository root;
  * every repository file those files name: a Markdown link target or a backticked path,
    resolved beside the naming file and from the repository root, followed through the files
    it reaches (a reference's own references), up to MAX_REFERENCED files.

The agent program is the file its command starts (resolved on the agent's PATH, links followed)
and every file the command names (a script it runs): their bytes, so an edited wrapper script
or a reinstalled CLI of the same version is a miss. A file over HASH_WHOLE_BYTES (a 400 MB
native CLI) is fingerprinted by its size, times, inode and its first and last MiB instead,
which a reinstall changes; the run computes this once (runner/scheduler.py keeps it).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from rubricgate.isolation.sandbox import find_program

MAX_REFERENCED = 500  # referenced files followed per run; a reviewer names a handful
MAX_SCANNED_BYTES = 1 << 20  # a reviewer file larger than this is digested but not scanned for names
HASH_WHOLE_BYTES = 32 << 20
EDGE_BYTES = 1 << 20
TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".yaml", ".yml", ".json", ".toml", ""}
# `path/to/file.md` in backticks, or the target of a Markdown link [text](path#anchor "title").
_BACKTICKED = re.compile(r"`([^`\s]+)`")
_LINKED = re.compile(r"\]\(\s*<?([^)\s>#]+)")
_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


def reviewer_files(repo: Path, configured: Sequence[str], skip: Iterable[str] = ()) -> list[str]:
    """Repo-relative paths of every reviewer file (see the module docstring), sorted; a
    configured path that does not exist is kept (its digest says missing)."""
    skipped = set(skip)
    found = {rel for rel in configured if rel not in skipped}
    for folder in _reviewer_folders(configured):
        found.update(rel for rel in _walk(repo, folder) if rel not in skipped)
    found |= _referenced(repo, sorted(found), skipped)
    return sorted(found)


def _reviewer_folders(configured: Sequence[str]) -> set[str]:
    parents = {Path(rel).parent for rel in configured}
    common = Path(os.path.commonpath([p.as_posix() for p in parents])) if parents else Path(".")
    return {p.as_posix() for p in (*parents, common) if p != Path(".")}


def _walk(repo: Path, folder: str) -> list[str]:
    root = repo / folder
    if not root.is_dir() or root.is_symlink():
        return []
    return [p.relative_to(repo).as_posix() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts]


def _referenced(repo: Path, start: list[str], skipped: set[str]) -> set[str]:
    """Files reached from `start` through names in their text (breadth first, capped)."""
    seen, queue, found = set(start), list(start), set[str]()
    while queue and len(found) < MAX_REFERENCED:
        rel = queue.pop(0)
        for name in _names_in(repo / rel):
            target = _repo_file(repo, rel, name)
            if target and target not in seen and target not in skipped:
                seen.add(target)
                found.add(target)
                queue.append(target)
    return found


def _names_in(path: Path) -> list[str]:
    if path.suffix.lower() not in TEXT_SUFFIXES or not path.is_file() or path.stat().st_size > MAX_SCANNED_BYTES:
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    return [*_LINKED.findall(text), *_BACKTICKED.findall(text)]


def _repo_file(repo: Path, naming: str, name: str) -> str | None:
    """`name` as a regular file inside the repository, beside `naming` or from the root."""
    if "://" in name or name.startswith(("/", "~", "-")) or _PLACEHOLDER.search(name) or "*" in name:
        return None
    root = repo.resolve()
    for base in (root / Path(naming).parent, root):
        candidate = (base / name).resolve()
        if candidate.is_file() and candidate.is_relative_to(root) and ".git" not in candidate.relative_to(root).parts:
            return candidate.relative_to(root).as_posix()
    return None


def program_digest(argv: Sequence[str], repo: Path, path: str | None) -> str:
    """Digest of the program `argv` starts and of every file it names (see the module docstring);
    '' without a program (the builtin and replay agents run none)."""
    if not argv:
        return ""
    files = [_program_file(argv[0], repo, path), *(_named_file(arg, repo) for arg in argv[1:])]
    parts = [f"{f}\0{_fingerprint(f)}" for f in files if f is not None]
    return hashlib.sha256("\n".join([argv[0], *parts]).encode("utf-8", "surrogateescape")).hexdigest()


def _program_file(name: str, repo: Path, path: str | None) -> Path | None:
    if "/" in name and not Path(name).is_absolute():
        return _named_file(name, repo)
    found = find_program(name, path)
    return Path(found).resolve() if found else None


def _named_file(arg: str, repo: Path) -> Path | None:
    """An argument that names a file: absolute, `{workspace}/<path>`, or relative to the
    workspace (the repository's copy); None for anything else (a flag, a placeholder)."""
    rel = arg.removeprefix("{workspace}/")
    if _PLACEHOLDER.search(rel) or not rel or rel.startswith("-"):
        return None
    target = Path(rel) if Path(rel).is_absolute() else repo / rel
    try:
        return target.resolve() if target.is_file() else None
    except (OSError, ValueError):  # a name too long for a file (a base64 plan), or with a NUL: an argument
        return None


def _fingerprint(path: Path) -> str:
    info = path.stat()
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        if info.st_size <= HASH_WHOLE_BYTES:
            return hashlib.file_digest(handle, "sha256").hexdigest()
        digest.update(handle.read(EDGE_BYTES))
        handle.seek(-EDGE_BYTES, os.SEEK_END)
        digest.update(handle.read(EDGE_BYTES))
    stamp = f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}"
    return f"{stamp}:{digest.hexdigest()}"
