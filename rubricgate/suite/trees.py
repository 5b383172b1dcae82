"""A repository's files as the reviewer's closure reads them: the working tree, or a commit.

Both answer the same questions with repository-relative POSIX paths: what a path names once
every symlink on the way is followed (`real`: None when it leaves the repository, goes through
`.git` or names nothing), a file's bytes, the files under a folder, and the files a glob
matches. A path that resolves outside the repository is never read, in either.

The commit is read through git itself (`ls-tree` once, `cat-file --batch` for contents), so
`rubricgate changed` can follow the reviewer's references at the merge base without checking
it out.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import subprocess
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rubricgate.errors import GateInputError

MAX_LINKS = 40  # symlinks followed in one path, as the kernel's ELOOP limit


class Tree(Protocol):
    """What the closure needs of a repository's files."""

    def real(self, rel: str) -> tuple[str, str] | None:
        """(real repo-relative path, 'file' | 'dir'), or None (missing, outside, inside .git)."""

    def read(self, rel: str, limit: int) -> bytes | None:
        """The first `limit` bytes of the regular file `rel` names (a real path), or None."""

    def files_under(self, rel: str) -> list[str]:
        """Every regular file under the real folder `rel`, sorted (not through symlinked folders)."""

    def links_under(self, rel: str) -> list[str]:
        """Every symlink under the real folder `rel` (to a file or a folder), sorted."""

    def links_on_way(self, rel: str) -> list[str]:
        """The symlinks `rel` goes through to what it names, each at its own real place."""

    def glob(self, pattern: str) -> list[str]:
        """The regular files whose repo-relative path matches `pattern` (`**` spans folders)."""


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A repo-relative glob as a regular expression: `**/` any folders (or none), `**` anything,
    `*` and `?` within one name, `[...]` a class."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 1)) != -1:
            out.append(pattern[i:end + 1])
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def resolve_links(rel: str, link_target: Callable[[str], str | None]) -> tuple[str | None, list[str]]:
    """(`rel` with every symlink on it followed, or None where it leaves the repository; the links
    on the way, each at its own real place). `link_target(path)`: None when `path` is no symlink,
    else its target, relative to its folder or led by `/` from the repository's root, '' when it
    leaves the repository."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    done: list[str] = []
    links: list[str] = []
    while parts:
        part = parts.pop(0)
        if part == "..":
            if not done:
                return None, links
            done.pop()
            continue
        done.append(part)
        target = link_target("/".join(done))
        if target is None:
            continue
        links.append("/".join(done))
        if not target or len(links) > MAX_LINKS:
            return None, links
        done = [] if target.startswith("/") else done[:-1]
        parts = [p for p in target.split("/") if p not in ("", ".")] + parts
    return "/".join(done), links


def _in_git(rel: str) -> bool:
    """Git's own files: the repository's `.git`, and a submodule's (`sub/.git`, a file there)."""
    return ".git" in rel.split("/")


class WorkTree:
    """The files of a folder on disk (the working tree, or a worktree of a ref)."""

    def __init__(self, root: Path) -> None:
        self.root = os.path.realpath(root)
        self._every: list[str] | None = None  # every file, listed once for the globs
        self._links: list[str] | None = None  # every symlink, listed once
        self._real: dict[str, tuple[str, str] | None] = {}  # a closure asks for the same names again

    def real(self, rel: str) -> tuple[str, str] | None:
        if rel not in self._real:
            self._real[rel] = self._resolve(rel)
        return self._real[rel]

    def _resolve(self, rel: str) -> tuple[str, str] | None:
        joined = os.path.join(self.root, rel)
        # Most names a closure tries name nothing: one lstat, which follows every symlink but the
        # last as realpath would, says so without realpath's lstat of every component.
        if not os.path.lexists(joined):
            return None
        path = os.path.realpath(joined)
        if not path.startswith(self.root.rstrip(os.sep) + os.sep):
            return None
        inside = os.path.relpath(path, self.root).replace(os.sep, "/")
        if _in_git(inside):
            return None
        if os.path.isfile(path):
            return inside, "file"
        return (inside, "dir") if os.path.isdir(path) else None

    def read(self, rel: str, limit: int) -> bytes | None:
        try:
            fd = os.open(os.path.join(self.root, rel), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device put there meanwhile
                return None
            return handle.read(limit)

    def files_under(self, rel: str) -> list[str]:
        return self._scan(rel)[0]

    def links_on_way(self, rel: str) -> list[str]:
        return resolve_links(rel, self._link_target)[1]

    def _link_target(self, path: str) -> str | None:
        full = os.path.join(self.root, path)
        if not os.path.islink(full):
            return None
        target = os.readlink(full)
        if not os.path.isabs(target):
            return target
        inside = os.path.relpath(target, self.root)  # one into the repository names its place from the root
        return "" if inside.startswith("..") else "/" + inside

    def links_under(self, rel: str) -> list[str]:
        return self._scan(rel)[1]

    def _scan(self, rel: str) -> tuple[list[str], list[str]]:
        """(the regular files, the symlinks) under the real folder `rel`, sorted, in one walk that
        enters neither `.git` nor a linked folder; the whole tree's is kept (globs, instructions)."""
        if not rel and self._every is not None and self._links is not None:
            return self._every, self._links
        files: list[str] = []
        links: list[str] = []
        stack = [os.path.join(self.root, rel)]
        while stack:
            try:
                entries = list(os.scandir(stack.pop()))
            except OSError:  # removed or unreadable meanwhile: what it held is not there to read
                continue
            for entry in entries:
                if entry.name == ".git":
                    continue
                if entry.is_symlink():
                    links.append(entry.path)
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    files.append(entry.path)
        cut = len(self.root.rstrip(os.sep)) + 1  # every path found starts with the root and a separator
        found = (sorted(p[cut:].replace(os.sep, "/") for p in files),
                 sorted(p[cut:].replace(os.sep, "/") for p in links))
        if not rel:
            self._every, self._links = found
        return found

    def glob(self, pattern: str) -> list[str]:
        regex = glob_regex(pattern)
        return [rel for rel in self.files_under("") if regex.fullmatch(rel)]


class CommitTree:
    """The files of one commit of a repository, read through git (no checkout): those of `repo`'s
    folder, named from it, when rubricgate.yaml is below the top of the work tree (a monorepo)."""

    def __init__(self, repo: Path, commit: str) -> None:
        self.repo, self.commit = repo, commit
        listing = _folder_listing(repo, commit).decode("utf-8", "surrogateescape")
        self.entries: dict[str, tuple[str, str]] = {}  # path -> (mode, object)
        for line in filter(None, listing.split("\0")):
            meta, _, path = line.partition("\t")
            mode, _, obj = meta.split(" ")
            self.entries[path] = (mode, obj)
        self.dirs = {posixpath.dirname(p) for p in self.entries}
        self.dirs |= {d for p in list(self.dirs) for d in _parents(p)}
        self._batch: subprocess.Popen[bytes] | None = None

    def real(self, rel: str) -> tuple[str, str] | None:
        path, _ = resolve_links(rel, self._link_target)
        if not path or _in_git(path):
            return None
        if self.entries.get(path, ("", ""))[0].startswith("100"):
            return path, "file"
        return (path, "dir") if path in self.dirs else None

    def links_on_way(self, rel: str) -> list[str]:
        return resolve_links(rel, self._link_target)[1]

    def _link_target(self, path: str) -> str | None:
        if self.entries.get(path, ("", ""))[0] != "120000":
            return None
        target = (self._blob(path, 4096) or b"").decode("utf-8", "surrogateescape")
        return "" if target.startswith("/") else target  # an absolute target names a host's file

    def read(self, rel: str, limit: int) -> bytes | None:
        if not self.entries.get(rel, ("", ""))[0].startswith("100"):
            return None
        return self._blob(rel, limit)

    def files_under(self, rel: str) -> list[str]:
        prefix = rel.rstrip("/") + "/" if rel else ""
        return sorted(p for p, (mode, _) in self.entries.items()
                      if p.startswith(prefix) and mode.startswith("100") and not _in_git(p))

    def links_under(self, rel: str) -> list[str]:
        prefix = rel.rstrip("/") + "/" if rel else ""
        return sorted(p for p, (mode, _) in self.entries.items()
                      if p.startswith(prefix) and mode == "120000" and not _in_git(p))

    def glob(self, pattern: str) -> list[str]:
        regex = glob_regex(pattern)
        return [rel for rel in self.files_under("") if regex.fullmatch(rel)]

    def _blob(self, rel: str, limit: int) -> bytes | None:
        """An object's bytes through one long-lived `git cat-file --batch`."""
        if self._batch is None:
            self._batch = subprocess.Popen(["git", "-C", str(self.repo), "cat-file", "--batch"], stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        proc = self._batch
        proc.stdin.write(self.entries[rel][1].encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        header = proc.stdout.readline().split()  # type: ignore[union-attr]
        if len(header) != 3:
            return None
        data = proc.stdout.read(int(header[2]) + 1)[:-1]  # type: ignore[union-attr]
        return data[:limit]

    def __enter__(self) -> CommitTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the `git cat-file --batch` process, if one was started."""
        if self._batch is not None:
            self._batch.stdin.close()  # type: ignore[union-attr]
            self._batch.wait()
            self._batch.stdout.close()  # type: ignore[union-attr]
            self._batch = None


def in_git_repository(folder: Path) -> bool:
    """Does the folder or one above it hold `.git` (a folder, or the file of a worktree)?"""
    start = folder.absolute()
    return any((p / ".git").exists() for p in (start, *start.parents))


def git_prefix(repo: Path) -> str:
    """`repo`'s folder inside its git work tree, with a trailing `/` ('team/' for a rubricgate.yaml
    in a monorepo's folder), '' at the top. git names a commit's and a diff's files from the top,
    the config names them from its own folder."""
    return _git(repo, ["rev-parse", "--show-prefix"]).decode("utf-8", "surrogateescape").rstrip("\n")


def in_folder(names: list[str], prefix: str) -> list[str]:
    """Names from the top of the work tree as `prefix`'s folder names them: its own files, and a
    `.gitattributes` above it as `../.gitattributes` (it decides the bytes of the folder's files
    too). Other files outside the folder are no part of this suite."""
    if not prefix:
        return names
    out = []
    for name in names:
        folder = posixpath.dirname(name)
        above = PurePosixPath(name).name == ".gitattributes" and (not folder or prefix.startswith(folder + "/"))
        if name.startswith(prefix) or above:
            out.append(posixpath.relpath(name, prefix))
    return out


def _folder_listing(repo: Path, commit: str) -> bytes:
    """`ls-tree` of the commit's copy of `repo`'s folder (its files named from that folder, as the
    working tree's are); nothing when the commit has no such folder (it came later)."""
    prefix = git_prefix(repo)
    if prefix and subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{commit}:{prefix}"],
                                 capture_output=True, stdin=subprocess.DEVNULL).returncode != 0:
        return b""
    return _git(repo, ["ls-tree", "-r", "-z", "--full-tree", f"{commit}:{prefix}" if prefix else commit])


@lru_cache(maxsize=4096)
def _parents(path: str) -> tuple[str, ...]:
    out = []
    while path:
        path = posixpath.dirname(path)
        out.append(path)
    return tuple(out)


# The fix for a base commit, or the commit where HEAD forked from it, that a clone does not hold:
# `changed`, `compare --base` and `record --base` name it alike.
FULL_HISTORY = ("check out full history (actions/checkout with fetch-depth: 0), or `git fetch` the base and "
                "`git fetch --deepen=100 origin` until `git merge-base` finds where HEAD forked")


def merge_base(repo: Path, base: str, base_sha: str, head: str = "HEAD") -> str:
    """The commit where `head` forked from `base` (at `base_sha`), or a one-line error on --base:
    in a shallow clone (CI's default checkout) git finds none and says nothing."""
    from rubricgate.errors import GateInputError

    try:
        found = _git(repo, ["merge-base", base_sha, head]).decode().strip()
    except (OSError, subprocess.CalledProcessError):
        found = ""
    if found:
        return found
    if shallow_clone(repo):
        raise GateInputError("--base", "REF", f"{base} and HEAD meet in no commit this shallow clone has", FULL_HISTORY)
    raise GateInputError("--base", "REF", f"{base} shares no history with HEAD", "give --base a ref HEAD forked from")


def shallow_clone(repo: Path) -> bool:
    """Is `repo` a shallow clone (CI's default checkout), where the base may never have been fetched?"""
    try:
        return _git(repo, ["rev-parse", "--is-shallow-repository"]).strip() == b"true"
    except (OSError, subprocess.CalledProcessError):
        return False


# Git for Windows' default: text files checked out with CRLF line ends, committed with LF. Every
# digest (the reviewer's, a case's, a shard's inputs) is of the bytes, kept so: the hint only
# names why a file unchanged in git reads as changed.
AUTOCRLF_NOTE = ("core.autocrlf=true in this checkout: git wrote its text files with CRLF line ends, and digests "
                 "are of the bytes, so a file unchanged in git reads as changed (check it out again with "
                 "core.autocrlf=false)")


def autocrlf_note(repo: Path) -> str:
    """AUTOCRLF_NOTE when git's config for `repo` sets core.autocrlf to true, else ''."""
    try:
        got = _git(repo, ["config", "--type=bool", "--get", "core.autocrlf"])
    except (OSError, subprocess.CalledProcessError):  # unset (exit 1), no git, no repository
        return ""
    return AUTOCRLF_NOTE if got.strip() == b"true" else ""


def with_autocrlf_note(exc: GateInputError, repo: Path) -> GateInputError:
    """`exc` (a reviewer or input that reads changed) with autocrlf_note after its problem, or as it is."""
    from rubricgate.errors import GateInputError

    note = autocrlf_note(repo)
    return GateInputError(exc.file, exc.field, f"{exc.problem}; {note}", exc.fix) if note else exc


def _git(repo: Path, args: list[str]) -> bytes:
    env = {**os.environ, "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True, env=env,
                          stdin=subprocess.DEVNULL).stdout
