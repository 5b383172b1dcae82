"""Throwaway workspaces: one snapshot of the tree per run, one cheap copy of it per trial.

The reviewer must see a real review, not the answer key. So the snapshot holds the repository's
files minus the suite (task files, fixtures with their expect.yaml), baseline.json, the config,
the reports folder, the cache and `suite.workspace_exclude`; each trial then gets the case's
reviewed files at their neutral paths (`<review_root>/<name>/...`) and the changed-files list
naming those paths. Folder names are random: nothing the agent can see names a case or a tier.

Cost: the snapshot is copied once per run (and read at the start, so a write to the repository
during the run cannot change what later trials review). A sandboxed trial then gets no copy at
all: its case files go into a small folder and the agent's mount namespace shows the two as one
overlay (isolation/overlay.py), O(1) in the size of the tree; so does a trial of an agent that
runs in this process (the builtin reviewer), which reads the same two layers without a mount
(agents/workspace_view.py). A process run outside the sandbox (copy-only isolation) and a
workspace kept for reading (--keep-workspaces) get one `cp -a --reflink=auto` of the snapshot —
a copy-on-write clone on btrfs/xfs, a plain copy in C elsewhere — so its cost follows the
reviewer's tree, never the size of the suite.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path

from rubricgate.isolation.identity import give_to_sandbox_user, root_harness
from rubricgate.isolation.leftovers import disown, owned_folder, remove_owned
from rubricgate.isolation.overlay import Overlay, layer_folders, remove_tree
from rubricgate.isolation.scratch import Scratch
from rubricgate.runner.git_listing import GitListing
from rubricgate.runner.linked_folders import linked_folder_files
from rubricgate.runner.remover import Remover
from rubricgate.runner.temp_room import no_room
from rubricgate.runner.topdir import spread_children

# Never copied into a workspace: version control, run outputs and caches.
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".pytest_cache", ".rubricgate-cache", ".venv"}


def list_tree(repo: Path, exclude: AbstractSet[str] = frozenset(), listing: GitListing | None = None) -> list[str]:
    """Repo-relative files a workspace holds: git's tracked + untracked-not-ignored (`listing`,
    when already started), else a walk; minus SKIP_DIRS and every path equal to or under an
    `exclude` entry."""
    return list_tree_sized(repo, exclude, listing)[0]


def list_tree_sized(repo: Path, exclude: AbstractSet[str] = frozenset(),
                    listing: GitListing | None = None) -> tuple[list[str], int]:
    """list_tree, and the bytes those files hold (what their snapshot needs: isolation/scratch.py),
    from the same lstat that checks each one (symlinks followed)."""
    git_names = (listing or GitListing(repo)).names()
    names = _walk(repo) if git_names is None else git_names
    inside = _Inside(repo, exclude)
    files = [n for n in names if not excluded(n, exclude) and inside(n)]
    # A link to a folder of the repository is one name, no file: its files, at its path.
    # Only git's own names of the linked files: a walk of the folder would bring back what git ignores.
    linked = [f for link in inside.folders for f in linked_folder_files(inside.repo, link, SKIP_DIRS, git_names)]
    files += [f for f in linked if not excluded(f, exclude) and inside(f)]
    return (sorted(files) if linked else files), inside.size


def _walk(repo: Path) -> list[str]:
    found = []
    for root, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        # os.walk lists a link to a folder among the folders and never enters it: named, as git names it.
        names = [*files, *(d for d in dirs if os.path.islink(os.path.join(root, d)))]
        found += [Path(root, f).relative_to(repo).as_posix() for f in names]
    return sorted(found)


def excluded(rel: str, exclude: AbstractSet[str]) -> bool:
    """True when rel is under a skipped folder or equals / lies under an excluded path."""
    parts = rel.split("/")
    if any(p in SKIP_DIRS for p in parts[:-1]):
        return True
    return any(rel == e or rel.startswith(e + "/") for e in exclude)


class _Inside:
    """Is the listed file a file, inside the repository once symlinks are followed, and not, by
    a link, one of the excluded (the answer key: a link `notes/key.json -> ../baseline.json` put
    the baseline into every workspace)? Deleted but tracked files and such links are not copied.
    One lstat a file, and each folder's real path resolved once (a full resolve per file walks
    every path component from `/` in Python: listing a 5,000-file tree took 334 ms that way, 45
    ms this way, git included)."""

    def __init__(self, repo: Path, exclude: AbstractSet[str] = frozenset()) -> None:
        self.repo = os.fspath(repo)
        self.root = os.path.realpath(self.repo)
        self.exclude = exclude
        self.size = 0  # bytes of the files found inside so far
        self.folders: list[str] = []  # the links to a folder of the repository met so far
        self._real_dirs: dict[str, str] = {}

    def __call__(self, rel: str) -> bool:
        path = os.path.join(self.repo, rel)
        try:
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                real = os.path.realpath(path)
                st = os.stat(real)
                inside = stat.S_ISREG(st.st_mode) and self._within(real)
                if stat.S_ISDIR(st.st_mode) and self._within(real):  # never the repository itself
                    self.folders.append(rel)
            else:
                inside = stat.S_ISREG(st.st_mode) and self._within(self._real(rel))
        except OSError:
            return False
        self.size += st.st_size if inside else 0
        return inside

    def _real(self, rel: str) -> str:
        folder, name = os.path.split(rel)
        if folder not in self._real_dirs:
            self._real_dirs[folder] = os.path.realpath(os.path.join(self.repo, folder))
        return os.path.join(self._real_dirs[folder], name)

    def _within(self, real: str) -> bool:
        top = self.root.rstrip(os.sep) + os.sep
        return real.startswith(top) and not excluded(real[len(top):], self.exclude)


@dataclass
class Workspace:
    """One trial's folders: `root` (the agent's cwd), `scratch` (its HOME and output files, also
    writable) and `private` (the harness's raw stream: never visible to the agent); `folders`
    hold them all (one shown to the agent, one private: isolation/scratch.py)."""

    folders: tuple[Path, ...]
    root: Path
    scratch: Path
    private: Path
    keep: bool = False
    overlay: Overlay | None = None  # set: `root` exists only inside the agent's mount namespace
    layers: tuple[Path, ...] = ()  # set: `root` exists nowhere; an in-process agent reads these
    scratch_view: Path | None = None  # set: where the agent's sandbox shows `scratch`
    discard: Callable[[Path], None] = remove_tree  # how `remove` deletes the folder

    @property
    def writable(self) -> list[Path]:
        return [self.root, self.scratch]

    def source(self, rel: str) -> Path:
        """Where the harness reads the workspace file `rel`: the file itself, or with an overlay
        the topmost layer that holds it (the mount is visible to the agent only)."""
        lower = self.overlay.lower if self.overlay is not None else self.layers
        if not lower:
            return self.root / rel
        return next((layer / rel for layer in lower if (layer / rel).exists()), lower[-1] / rel)

    def remove(self) -> None:
        """Delete the trial's folders unless asked to keep them (--keep-workspaces)."""
        if not self.keep:
            for folder in self.folders:
                self.discard(folder)


class RunTree:
    """The per-run snapshot of the tree and the case sources; makes each trial's workspace."""

    def __init__(self, repo: Path, files: list[str], sources: list[str], name: str | None = None,
                 scratch: Scratch | None = None) -> None:
        self.scratch = scratch or Scratch(Path(tempfile.gettempdir()), Path(tempfile.gettempdir()), "default")
        shown, private = (scratch.shown, scratch.private) if scratch else (None, None)
        # Each holds its owner's lock: a later run removes them if this process is killed (leftovers.py).
        self.root = owned_folder("rg-", shown)
        spread_children(self.root)  # each trial's folder away from the ones just removed (runner/topdir.py)
        self.store = owned_folder("rg-", private) if private != shown else self.root
        self.name = name or repo.resolve().name or "repo"
        self.base = self.store / "base" / self.name
        self.sources = self.store / "sources"
        # Run-wide files the harness makes for the sandboxes (the staged /etc): never kept.
        self.staging = self.store / "staging"
        self.remover = Remover()
        try:
            _copy_files(repo, self.base, files)
            _copy_files(repo, self.sources, sources)
            if root_harness():  # the sandbox user writes its workspace (cp -a keeps the owner)
                give_to_sandbox_user(self.base)
        except BaseException as exc:  # a file gone since it was listed, a full disk: no half snapshot left
            self.remove()
            if (full := no_room(self.store.parent, exc)) is not None:
                raise full from exc
            raise

    def workspace(self, files: dict[str, str], copies: dict[str, str], changed: tuple[str, list[str]],
                  keep: bool = False, layered: bool = False, read_in_process: bool = False,
                  removed: list[str] | None = None) -> Workspace:
        """The snapshot plus the case: `copies` {neutral: source}, overlay `files` {neutral: text},
        and the changed-files list (path, neutral reviewed paths), without `removed` (files the
        case's change deleted). `layered`: the case files go in their own folder and the agent's
        sandbox mounts them over the snapshot (no copy); `read_in_process`: likewise, read by an
        agent of this process through `layers` (no mount, no copy: agents/workspace_view.py)."""
        token = secrets.token_hex(4)
        folder, store = self.root / token, self.store / token
        # A layer can add files, never take one away (an overlay's whiteout needs a device node
        # the harness may not make): a case removing files gets a full copy, and they go from it.
        if not removed and (layered or (read_in_process and not keep)):  # nothing in the shown folder
            ws = Workspace(folders=(store,), root=folder / self.name, scratch=store / "out",
                           private=store / "private", keep=keep, discard=self.remover,
                           scratch_view=folder / "out" if layered else None)
            top = store / "case"
            if layered:  # the sandbox mounts the private folders at `root`
                case, upper, work, target = layer_folders(store, store / self.name)
                ws.overlay, top = Overlay((case, self.base), upper, work, target), case
            else:
                top.mkdir(parents=True)
                ws.layers = (top, self.base)
        else:  # a full copy: a process outside the sandbox, or kept for reading (--keep-workspaces)
            ws = Workspace(folders=tuple(dict.fromkeys((folder, store))), root=folder / self.name,
                           scratch=folder / "out", private=store / "private", keep=keep, discard=self.remover.copy)
            clone_tree(self.base, ws.root)
            remove_inside(ws.root, removed or [])
            top = ws.root
        self._place_case(top, files, copies, changed)
        if ws.overlay is not None and root_harness():  # the overlay's top: case files and the writable layer
            give_to_sandbox_user(top)
            give_to_sandbox_user(ws.overlay.upper)
        (ws.scratch / "home").mkdir(parents=True)
        ws.private.mkdir(parents=True)
        return ws

    def _place_case(self, top: Path, files: dict[str, str], copies: dict[str, str],
                    changed: tuple[str, list[str]]) -> None:
        for neutral, source in copies.items():
            _place(top / neutral, lambda t, s=source: shutil.copyfile(self.sources / s, t))
        listing = "".join(f"{p}\n" for p in changed[1])
        for rel, content in {**files, changed[0]: listing}.items():
            _place(top / rel, lambda t, c=content: t.write_text(c, encoding="utf-8"))

    def remove(self, keep_trials: bool = False) -> None:
        """Delete the run's temp folder (once the trial folders queued for removal are gone);
        with keep_trials only the snapshot goes."""
        self.remover.close()
        if keep_trials:
            if self.store != self.root:
                # The private side held the snapshot and each trial's raw stream (parsed into the
                # run's transcripts already); only the copies the run names are kept.
                remove_owned(self.store)
            else:
                remove_tree(self.store / "base")
                remove_tree(self.sources)
                remove_tree(self.staging)
            disown(self.root)
            return
        remove_owned(self.root)
        if self.store != self.root:
            remove_owned(self.store)


def remove_inside(root: Path, paths: list[str]) -> None:
    """Delete each file `paths` names under `root`, never outside it: a path that is absolute,
    climbs with '..' or lies below a link is left alone (the suite loader refuses all three)."""
    top = os.path.realpath(root)
    for rel in paths:
        target = os.path.join(top, rel)
        if rel.startswith("/") or ".." in rel.split("/") or os.path.realpath(os.path.dirname(target)) != \
                os.path.dirname(os.path.normpath(target)):
            continue
        if os.path.islink(target) or os.path.isfile(target):
            os.unlink(target)


def _place(target: Path, write) -> None:
    if target.is_symlink() or target.is_dir():  # an overlay replaces whatever the snapshot had there
        shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    write(target)


# GNU cp copies a list of files to the same relative paths, keeping modes and mtimes, following
# symlinks (as shutil.copy2 does); xargs splits a long list over several cp runs.
CP_PARENTS = ["xargs", "-0", "cp", "--parents", "-L", "--preserve=mode,timestamps", "-t"]


def _copy_files(repo: Path, dest: Path, files: list[str]) -> None:
    """Copy repo-relative `files` to the same paths under `dest`: with GNU cp, in C and in a
    process of its own (a 5,000-file, 100 MB tree: 0.30 s against 0.53 s in Python, and the
    interpreter stays free for the start digest being taken meanwhile); in Python where that
    fails (not GNU cp, a file gone since it was listed: then the error is Python's)."""
    dest.mkdir(parents=True, exist_ok=True)
    if files and _copied_by_cp(repo, dest, files):
        return
    _copy_in_python(repo, dest, files)


def _copied_by_cp(repo: Path, dest: Path, files: list[str]) -> bool:
    try:
        done = subprocess.run([*CP_PARENTS, str(dest), "--"], input="\0".join(files).encode("utf-8", "surrogateescape"),
                              cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return False
    return done.returncode == 0


def _copy_in_python(repo: Path, dest: Path, files: list[str]) -> None:
    made: set[Path] = set()
    for rel in files:
        target = dest / rel
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        shutil.copy2(repo / rel, target)


def clone_tree(src: Path, dest: Path) -> None:
    """Copy a folder with one `cp -a --reflink=auto` (copy-on-write where the file system can);
    shutil when cp is not GNU's."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(["cp", "-a", "--reflink=auto", str(src), str(dest)], check=True,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except (OSError, subprocess.CalledProcessError):
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest, symlinks=True)
