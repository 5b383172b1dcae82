"""O(1) workspaces for sandboxed trials: an overlay mount instead of a copy.

A trial's workspace is the run's snapshot plus a few case files. Copying the snapshot per
trial costs what the tree costs (seconds on a 5,000-file, 100 MB tree). Inside the sandbox the
copy is unnecessary: the agent's mount namespace can show the snapshot as the read-only lower
layer of an overlayfs, the case files as a small layer above it, and take its writes into an
empty upper folder. Mounting costs the same on a 50-file tree as on a 5,000-file one.

Two ways to mount it, the first that works here (probed once per run, `sandbox.probe_layers`):

- bubblewrap >= 0.11 (Debian 13, Ubuntu 25.04, Fedora 41) mounts it itself: `--overlay-src` per
  layer, `--overlay UPPER WORK DEST` on the agent's workspace. One process fewer than the other
  way, and three fewer programs started: 5.0 against 8.8 ms a launch (bench/overlay_mounts.py).
- bubblewrap 0.8 (Debian 12) has no `--overlay`, so the mount is made one step earlier: the
  agent's command becomes `unshare --user --map-root-user --mount sh -c 'mount -t overlay ... &&
  exec bwrap ...'`. `unshare` and `sh` exec in place, so the process the harness started and
  later kills is bwrap, as before, and the mount disappears with its namespace when the trial
  ends.

The kernel allows an overlay mount in a user namespace since Linux 5.11. Either way bwrap runs
the agent as an unprivileged uid in a user namespace with every capability dropped: the agent
cannot unmount or remount anything. Where neither works (an older kernel, user namespaces
blocked), `probe_overlay` says why and trials fall back to a copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from rubricgate.isolation.reaping import end_helper, reap_sandbox_inits, start_helper

PROBE_TIMEOUT_S = 10.0
# The overlay option string separates layers with ':' and options with ','; a path holding
# either (or a backslash, its escape) cannot be named safely, so such a temp folder copies.
_UNSAFE = (":", ",", "\\")
_MOUNT = 'mount -t overlay overlay -o "$1" "$2" && shift 2 && exec "$@"'
OverlayMount = Literal["bwrap", "unshare"]  # who mounts a trial's overlay (see above)


@dataclass(frozen=True)
class Overlay:
    """One trial's layers: `lower` top first (case files, then the snapshot), the writable
    `upper` and overlayfs' `work` folder (same file system), mounted on `target`."""

    lower: tuple[Path, ...]
    upper: Path
    work: Path
    target: Path

    def options(self) -> str:
        lower = ":".join(str(p) for p in self.lower)
        return f"lowerdir={lower},upperdir={self.upper},workdir={self.work}"

    def prefix(self, userns: str | None = None) -> list[str]:
        """The argv that mounts the overlay in a new mount namespace, then execs the rest: in a
        new user namespace too, or (a root harness) in the one it lent the trial, at path
        `userns`, entered by `nsenter`."""
        mount = ["sh", "-c", _MOUNT, "sh", self.options(), str(self.target)]
        if userns is None:
            return [_unshare(), "--user", "--map-root-user", "--mount", *mount]
        return [_nsenter(), f"--user={userns}", "--", _unshare(), "--mount", *mount]

    def bwrap_args(self, dest: Path) -> list[str]:
        """bwrap's own overlay on `dest` (inside the sandbox): `--overlay-src` bottom layer first.
        bwrap names each folder to the kernel by file descriptor, so no path needs escaping."""
        sources = [arg for layer in reversed(self.lower) for arg in ("--overlay-src", str(layer))]
        return [*sources, "--overlay", str(self.upper), str(self.work), str(dest)]


@lru_cache(maxsize=1)
def _nsenter() -> str:
    return shutil.which("nsenter") or "nsenter"


@lru_cache(maxsize=1)
def _unshare() -> str:
    return shutil.which("unshare") or "unshare"  # looked up once, not on every trial


def layer_folders(layers: Path, target: Path) -> tuple[Path, Path, Path, Path]:
    """(case layer, upper, work, mount target): the first three inside `layers`; created empty."""
    paths = (layers / "case", layers / "upper", layers / "work", target)
    for path in paths:
        path.mkdir(parents=True)
    return paths


def probe_overlay(scratch_parent: Path | None = None,
                  mount_with: Callable[[Overlay], list[str]] | None = None) -> str:
    """'' when an overlay can be mounted in a user namespace here; else why it cannot.
    `mount_with(overlay)`: the argv that mounts it on its target and runs what follows (default:
    `unshare` + `mount`)."""
    if mount_with is None and not shutil.which("unshare"):
        return "unshare (util-linux) is not installed"
    parent = Path(scratch_parent or tempfile.gettempdir())
    if any(c in str(parent) for c in _UNSAFE):
        return f"the temp folder {parent} holds ':' ',' or '\\', which an overlay mount cannot name"
    # Locked as a run's own folders are (leftovers.py; imported here: it takes remove_tree from
    # this module): killed during the probe, the next run sweeps it, which an unlocked one never was.
    from rubricgate.isolation.leftovers import owned_folder, remove_owned

    root = owned_folder("rg-probe-", parent)
    try:
        base = root / "base"
        base.mkdir()
        (base / "f").write_text("x")
        overlay = Overlay((base,), *layer_folders(root, root / "m")[1:])
        argv = [*(mount_with(overlay) if mount_with else overlay.prefix()), "test", "-f", str(overlay.target / "f")]
        problem = probe_command(argv)
        return f"cannot mount an overlay in a user namespace: {problem}" if problem else ""
    finally:
        remove_owned(root)


def probe_command(argv: list[str]) -> str:
    """'' when argv runs and exits 0 within PROBE_TIMEOUT_S; else its last stderr line (or why
    it could not start). Shared by the sandbox's and the overlay's start-up probes."""
    try:
        res = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot start: {exc}"
    finally:
        reap_sandbox_inits()  # a sandbox probed: its init, where this process adopts orphans
    if res.returncode != 0:
        detail = res.stderr.decode(errors="replace").strip().splitlines()[-1:]
        return detail[0] if detail else f"exit {res.returncode}"
    return ""


def remove_tree(path: Path) -> None:
    """Delete a folder, never raising. The usual trial folder goes by a lean walk (scandir,
    unlink, rmdir: a third fewer system calls than shutil's descriptor-based walk, which guards
    against a tree that changes underneath, and nothing runs in a finished trial's folder);
    overlayfs' `work/work` folder, mode 000, is made ours first. Anything else that resists
    goes to the careful path: shutil with unreadable subfolders made deletable (as a non-root
    user rmtree would otherwise leave the whole trial folder in /tmp); what still resists stays.
    A symlink is removed itself, never followed (at the top or anywhere below)."""
    if path.is_symlink():
        _unlink(os.fspath(path))
        return
    try:
        _remove(os.fspath(path))
    except OSError:
        _remove_carefully(path)


def _remove(path: str) -> None:
    """The lean walk, by a stack of its own, not recursion: a reviewer that nests folders in its
    workspace deeper than Python's recursion limit (1,300 `mkdir d && cd d`) made it raise
    RecursionError, which ended the trials' remover thread and hung the run."""
    stack = [(path, False)]
    while stack:
        folder, emptied = stack.pop()
        if emptied:
            os.rmdir(folder)
            continue
        stack.append((folder, True))  # removed once everything pushed above it is gone
        for entry in _entries(folder):
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, False))
            else:
                os.unlink(entry.path)


def _entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(folder))
    except PermissionError:
        os.chmod(folder, 0o700)
        return list(os.scandir(folder))


def _remove_carefully(path: Path) -> None:
    def make_writable(func, failed: str, _exc) -> None:
        # chmod follows a link: the entry itself is made ours only when it is no link (a link a
        # reviewer left to a file of this user's outside the trial folder had its mode changed)
        link = os.path.islink(failed)
        for folder in (os.path.dirname(failed),) if link else (failed, os.path.dirname(failed)):
            try:
                os.chmod(folder, 0o700)
            except OSError:
                return
        if not link and os.path.isdir(failed):
            _remove_carefully(Path(failed))
        else:
            _unlink(failed)

    try:
        shutil.rmtree(path, onerror=make_writable)
    except RecursionError:  # rmtree recurses (to Python 3.12): a tree past PATH_MAX and 1,000 deep
        rm_rf([path])


def rm_rf(folders: list[Path]) -> bool:
    """Remove the folders with one GNU `rm -rf`, which walks any depth by descriptor, never
    following a link or crossing into another file system; False when there is no `rm` to run
    (what is left stays: remove_tree never raises). Started as a helper: the run's sweep of its
    orphans, which may overlap it, spares it."""
    try:
        proc = start_helper(["rm", "-rf", "--one-file-system", "--", *map(os.fspath, folders)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return False
    end_helper(proc)
    return True


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        return
