"""What the trial cache digests besides the case: the agent's program.

The reviewer's files are its closure (suite/closure.py: the prompt, skill and rubric, their
folders, every repository file they reference, transitively, and `reviewer.files`), the same
set `changed`, `compare --base` and the change-aware decision read; runner/digests.py digests it.

The agent program is the file its command starts (resolved on the agent's PATH, links followed)
and every file the command names (a script it runs): their bytes, so an edited wrapper script
or a reinstalled CLI of the same version is a miss. A file over HASH_WHOLE_BYTES (a 400 MB
native CLI) is fingerprinted by its size, times, inode and its first and last MiB instead,
which a reinstall changes; the run computes this once (runner/scheduler.py keeps it). An agent
that starts no program (the builtin reviewer, replay) is rubricgate's own code: its files.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

from rubricgate.isolation.sandbox import find_program

HASH_WHOLE_BYTES = 32 << 20
EDGE_BYTES = 1 << 20
_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


def program_digest(argv: Sequence[str], repo: Path, path: str | None) -> str:
    """Digest of the program `argv` starts and of every file it names (see the module docstring);
    '' without a program (the builtin and replay agents run none)."""
    if not argv:
        return ""
    parts = [f"{f}\0{_fingerprint(f)}" for f in _program_files(argv, repo, path)]
    return hashlib.sha256("\n".join([argv[0], *parts]).encode("utf-8", "surrogateescape")).hexdigest()


def portable_program_digest(argv: Sequence[str], repo: Path, path: str | None) -> str:
    """Digest of the program `argv` starts and of every file it names by what they hold, not where
    they lie or when they were written: a file in the repository by its path there, any other by
    its name, a large one by its size and edges. What a baseline's `setup` compares across
    machines: the same CLI installed afresh on a CI runner, or the same commit checked out in
    another folder, is the same program ('' without a program)."""
    if not argv:
        return ""
    root = repo.resolve()
    parts = [f"{f.relative_to(root) if f.is_relative_to(root) else f.name}\0{_fingerprint(f, stamped=False)}"
             for f in _program_files(argv, repo, path)]
    return hashlib.sha256("\n".join([argv[0], *parts]).encode("utf-8", "surrogateescape")).hexdigest()


def _program_files(argv: Sequence[str], repo: Path, path: str | None) -> list[Path]:
    """The file `argv` starts and the files its arguments name, resolved (links followed)."""
    files = [_program_file(argv[0], repo, path), *(_named_file(arg, repo) for arg in argv[1:])]
    return [f for f in files if f is not None]


@functools.cache
def own_code_digest() -> str:
    """Digest of rubricgate's own files (its modules and package data): the program of an agent
    that runs none, the builtin reviewer (and replay). The version alone misses an edit to an
    editable install (a PR loosening the builtin's checks replayed its stale answers)."""
    return folder_digest(Path(__file__).resolve().parents[1])


def folder_digest(folder: Path) -> str:
    """One digest of every file under `folder` (names and bytes), compiled bytecode left out."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                       and p.suffix not in (".pyc", ".pyo")):
        digest.update(f"{path.relative_to(folder).as_posix()}\0".encode("utf-8", "surrogateescape"))
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


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


def _fingerprint(path: Path, stamped: bool = True) -> str:
    """The file's SHA-256, or past HASH_WHOLE_BYTES its size and edges, with (`stamped`) its
    times and inode, which a reinstall changes: the trial cache's key misses on one."""
    info = path.stat()
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        if info.st_size <= HASH_WHOLE_BYTES:
            return hashlib.file_digest(handle, "sha256").hexdigest()
        digest.update(handle.read(EDGE_BYTES))
        handle.seek(-EDGE_BYTES, os.SEEK_END)
        digest.update(handle.read(EDGE_BYTES))
    stamp = f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}" if stamped else f"{info.st_size}"
    return f"{stamp}:{digest.hexdigest()}"
