"""The backstop: did anything change the original repository during the run?

The sandbox makes the repository invisible to the agent; this check is what catches a hole in
that (or everything, in copy-only mode). It cannot be fooled by putting back a size and an
mtime: it compares content digests of every file, `.git` included (hooks, config, refs,
objects), file modes, symlink targets and the set of folders. Only regular files are read: a
FIFO, socket or device is compared by its kind and mode, never opened (opening a FIFO waits for
a writer that may never come). At the end of the run a file is read again unless its lstat,
ctime included (which no user-space call can set back), is what it was at the start and it was
not touched within two seconds of the start.

Skipped, and only these: the reports and cache folders (the run writes there), `.git/index`
and `*.lock` files under `.git` (git rewrites the index's stat cache whenever anyone runs
`git status`, and takes lock files for every operation).

git's object storage is compared by lstat, not read: git never edits it in place (a loose object
is named by its content's hash, a pack is replaced, never rewritten), and on a real repository
it is most of the bytes (a history of 500 MB would be read at every run's start). A stored file
whose lstat moved is a change (ctime cannot be set back), except a loose object whose content
still hashes to its name (git freshens an object it would write again) and a pack file that
provably holds what its name says (runner/packfiles.py: another clone that hardlinks the packs
moves their ctime). One touched within RACY_NS of the start is read like any file.

Between trials in copy-only mode a cheaper fingerprint is compared: it includes each file's
ctime, which no user-space call can set back, so a rewrite with the mtime restored still shows.

A run whose agents all write nothing (the builtin reviewer, replay) is not watched: no digests
(`TreeGuard.unwatched`), no check after each trial. It has no reviewer to catch; a change another
program makes to the repository meanwhile is not reported (the trials read the snapshot taken at
the start).
"""

from __future__ import annotations

import compileall
import hashlib
import os
import re
import stat
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path

from rubricgate.runner.packfiles import hash_for, pack_file_is_whole

GIT_REWRITES = (".git/index",)
TreeDigest = dict[str, tuple]


def _skipped(rel: str, exclude: AbstractSet[str]) -> bool:
    """Is the entry `rel` left out? Only `rel` itself is compared with `exclude`: _entries never
    descends into an excluded folder, so what lies under one is never reached (an `exclude`
    entry is a path, and every path under it passes through it; one set lookup an entry instead
    of a prefix test per excluded path: the copy-only check walks the tree after every trial)."""
    if rel in exclude or rel in GIT_REWRITES:
        return True
    return rel.startswith(".git/") and rel.endswith(".lock")


def _entries(repo: Path, exclude: AbstractSet[str]) -> Iterator[tuple[str, os.DirEntry]]:
    """(repo-relative path, entry) for every folder, file and symlink under repo but the skipped
    (an excluded path and everything under it); a symlink to a folder is an entry, never
    followed. One scandir per folder and strings, not Path objects: the start digest is on the
    way to a run's first agents. Each folder is listed through its descriptor, so an entry's
    lstat goes by it too (`entry.stat`), never by a path the kernel walks again from `/` (the
    copy-only check walks the tree after every trial); `entry.path` is then its name alone."""
    exclude = frozenset(exclude)
    folders = [("", os.fspath(repo))]
    while folders:
        prefix, folder = folders.pop()
        try:
            fd = os.open(folder, _FOLDER_FLAGS)
        except OSError:  # unreadable, or gone since its parent was listed: the folder's own entry
            continue  # stands for it, as with os.walk (the same at the start and at the end)
        try:
            with os.scandir(fd) as listing:
                for entry in listing:
                    rel = prefix + entry.name
                    if _skipped(rel, exclude):
                        continue
                    yield rel, entry
                    if entry.is_dir(follow_symlinks=False):
                        folders.append((rel + "/", os.path.join(folder, entry.name)))
        finally:
            os.close(fd)


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


# git's object storage (module docstring): loose objects (SHA-1 or SHA-256 names) and packs.
_LOOSE_OBJECT = re.compile(r"\.git/objects/([0-9a-f]{2})/([0-9a-f]{38}|[0-9a-f]{62})")
_PACK_FILE = re.compile(r"\.git/objects/pack/pack-[0-9a-f]{40,64}\.(pack|idx|rev|bitmap)")


def is_git_storage(rel: str) -> bool:
    """A file git writes once and never edits: a loose object or a pack's data and indexes."""
    return bool(_LOOSE_OBJECT.fullmatch(rel) or _PACK_FILE.fullmatch(rel))


def digest_tree(repo: Path, exclude: AbstractSet[str] = frozenset(), stats: TreeDigest | None = None,
                known: Callable[[str, tuple], tuple | None] | None = None,
                stored_before_ns: int | None = None) -> TreeDigest:
    """{rel: (kind, mode, sha256 | link target)} for every file, folder, symlink and special file
    (a FIFO, socket or device: its kind and mode, never opened). `stats` collects each entry's
    lstat signature; `known(rel, signature)` may answer an entry's digest without reading it
    (TreeGuard: unchanged since the start). With `stored_before_ns`, git's object storage whose
    ctime is older is digested by its lstat signature instead of read."""
    state: TreeDigest = {}
    root = os.fspath(repo)
    for rel, entry in _entries(repo, exclude):
        st = entry.stat(follow_symlinks=False)
        path = os.path.join(root, rel)
        signature = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        if stats is not None:
            stats[rel] = signature
        if known is not None and (same := known(rel, signature)) is not None:
            state[rel] = same
        elif stored_before_ns is not None and st.st_ctime_ns < stored_before_ns and is_git_storage(rel):
            state[rel] = ("stored", st.st_mode, signature)
        elif stat.S_ISLNK(st.st_mode):
            state[rel] = ("link", st.st_mode, os.readlink(path))
        elif stat.S_ISDIR(st.st_mode):
            state[rel] = ("dir", st.st_mode, "")
        elif stat.S_ISREG(st.st_mode):
            state[rel] = ("file", st.st_mode, _sha256(path))
        else:
            state[rel] = (_special_kind(st.st_mode), st.st_mode, "")
    return state


def _special_kind(mode: int) -> str:
    """What a non-regular, non-folder, non-link entry is; its content is never read."""
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "char device"
    return "block device" if stat.S_ISBLK(mode) else "special"


def names_its_content(repo: Path, rel: str) -> bool:
    """Does the stored file at `rel` still hold what its name says? A loose object: the hash of
    its inflated bytes (SHA-1 or SHA-256 by the name's length). A pack file: runner/packfiles.py."""
    if (loose := _LOOSE_OBJECT.fullmatch(rel)) is not None:
        name = loose.group(1) + loose.group(2)
        try:
            data = zlib.decompress((repo / rel).read_bytes())
        except (OSError, zlib.error):
            return False
        return hash_for(name)(data).hexdigest() == name
    return _PACK_FILE.fullmatch(rel) is not None and pack_file_is_whole(repo / rel)


def _sha256(path: str) -> str:
    """The digest of the regular file at `path`. Opened without following a link and without
    blocking: a FIFO or device put there since its lstat is never read (and never waited on)."""
    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as f:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):  # replaced since its lstat: a change in itself
                return f"not a file: {_special_kind(mode)}"
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:  # unreadable now: a change in itself
        return f"unreadable: {exc.strerror}"
    return h.hexdigest()


# Between trials git's object store is left to the run-end digest: objects are content-addressed
# (a new one changes nothing until a ref names it) and there are thousands of them.
FINGERPRINT_SKIPS = {".git/objects"}


def fingerprint_tree(repo: Path, exclude: AbstractSet[str] = frozenset()) -> TreeDigest:
    """{rel: (mode, size, mtime_ns, ctime_ns, inode)}: cheap, and ctime cannot be put back."""
    state: TreeDigest = {}
    for rel, entry in _entries(repo, set(exclude) | FINGERPRINT_SKIPS):
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:  # gone since listed: absent, as a later listing shows it
            continue
        state[rel] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    return state


def tree_changes(before: TreeDigest, after: TreeDigest) -> list[str]:
    """Paths added, removed or changed between two states, sorted."""
    if before == after:  # one comparison in C: after nearly every copy-only trial
        return []
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


# A file whose ctime is this close to the start digest may have been written again within the
# same timestamp tick after it was read: its content is always compared (git's "racy" rule).
RACY_NS = 2_000_000_000


class TreeGuard:
    """Content digests of the repository at the start of a run, compared once at its end.

    At the end only what may have changed is read again: a file whose lstat (mode, size, mtime,
    ctime, inode) is what it was at the start keeps its digest. ctime cannot be set back from
    user space, so a rewrite shows however its size and mtime were restored; files touched
    within RACY_NS of the start are read again regardless."""

    def __init__(self, repo: Path, exclude: set[str], before: TreeDigest | None, children: set[int],
                 stats: TreeDigest | None = None, started_ns: int = 0) -> None:
        self.repo, self.exclude, self.before, self.children = repo, exclude, before, children
        self.stats, self.started_ns = stats or {}, started_ns
        self.found: list[str] | None = None  # what changes() found, once it compared

    @classmethod
    def unwatched(cls, repo: Path, known: set[int] | None = None) -> TreeGuard:
        """No digest: a run whose agents all write nothing (agents/base.py `writes_nothing`: the
        builtin reviewer, replay) has no reviewer the backstop could catch; on this repository
        the two digests were 8% of a 1-case builtin run's CPU (runner/startup.py `unwatched`)."""
        from rubricgate.isolation.reaping import child_pids

        return cls(repo, set(), None, child_pids() if known is None else known)

    @classmethod
    def start(cls, repo: Path, exclude: set[str], adopt: bool = True, known: set[int] | None = None) -> TreeGuard:
        """Digest the tree; `adopt` (copy-only runs) makes orphaned descendants come back to
        this process, to be swept at the end (in the sandbox none can outlive its namespace).
        `known`: this process's children from before the run (default: now), never swept."""
        from rubricgate.isolation.reaping import adopt_orphans, child_pids

        if adopt:
            adopt_orphans()
        started_ns = time.time_ns()
        stats: TreeDigest = {}
        before = digest_tree(repo, exclude, stats=stats, stored_before_ns=started_ns - RACY_NS)
        return cls(repo, exclude, before, child_pids() if known is None else known, stats, started_ns)

    def changes(self) -> list[str]:
        """What differs from the start, by content, mode, link target or presence (unwatched:
        nothing). Compared once: the start's digests are dropped then (an entry ~0.5 KB, ~2 MB
        for a 2,000-case suite's repository, held to the run's end before: bench/run_memory.py),
        and a later call answers what that comparison found."""
        if self.found is None:
            self.found = [] if self.before is None else \
                tree_changes(self.before, digest_tree(self.repo, self.exclude, known=self._unchanged))
            self.before, self.stats = None, {}
        return list(self.found)

    def _unchanged(self, rel: str, signature: tuple) -> tuple | None:
        before = (self.before or {}).get(rel)
        if self.stats.get(rel) == signature and signature[3] < self.started_ns - RACY_NS:
            return before
        if (before is not None and before[0] == "stored" and before[1] == signature[0]
                and names_its_content(self.repo, rel)):
            return before  # a loose object freshened or a hardlinked pack's ctime moved; same content and mode
        return None


def settle_own_bytecode(repo: Path) -> None:
    """When rubricgate's own source lies inside the watched repository (its own checkout, an
    editable install: the README's first command), write its bytecode before the tree is
    watched. A module first imported mid-run (the report writers load lazily) would otherwise
    write `__pycache__` into the repository and read as a change to it: a false alarm on a
    fresh clone. Fresh bytecode costs a stat per module; with bytecode writing off, nothing."""
    if sys.dont_write_bytecode:
        return
    package = Path(__file__).resolve().parents[1]
    if not package.is_relative_to(repo.resolve()):
        return
    compileall.compile_dir(package, quiet=2)
