"""The sandbox's /etc as one folder bound once, not one bind per allowlisted file.

bubblewrap 0.8 re-reads /proc/self/mountinfo after every bind it makes (to remount read-only what
lies below it), so a bind costs more the more mounts there are: on a 2,000-case run ~1.5 ms of
bwrap's 7.45 ms of CPU a trial went there, a third of its binds being single /etc files
(docs/performance.md). So the allowlisted single files are copied into a folder of the
harness's own (their modes kept), beside empty mount points for the allowlisted folders it
does not copy (below; bound over them, live, as before) and the passwd and group naming only
the sandbox user (which bwrap would otherwise mount from pipes, two mounts more); that folder
is bound read-only as /etc. The sandbox sees the same names, the same contents and the same
modes through one bind and the folders' few.

The allowlisted folders made of links and a few small files (`COPIED_FOLDERS`: Debian's
alternatives, the linker's conf.d, ca-certificates' hooks) are copied too, links as links: three
binds fewer a sandbox. The certificate folders (`/etc/ssl`, `/etc/pki`) stay binds: /etc/ssl
holds private keys no run should copy, and its certs are hundreds of entries a run.

The folder is made once per run, in the run's private temp folder (runner/startup.py), and goes
with it; a copy holds what the file held as the run started (a resolv.conf the host rewrites
during the run is not seen by its later trials). Under an ordinary user's harness the copies and
the folder are that user's, so the sandbox sees them owned by the sandbox user (not by the
overflow id the host's root files show as): read-only all the same. A file the harness cannot
read is bound as before, over an empty mount point; where no folder can be made (a full temp
folder: the half-made one is removed), and for the sandboxes started outside a run (the probes),
every entry is bound as before, over a tmpfs of its own that sandbox.wrap makes read-only.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from rubricgate.isolation.overlay import remove_tree
from rubricgate.isolation.sandbox_user import IDENTITY

ETC_FILES = ("/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf", "/etc/gai.conf",
             "/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki", "/etc/crypto-policies",
             "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime",
             "/etc/mime.types")


# Folders copied with the single files (links kept as links) where every entry can be: each is
# one bind fewer, and bubblewrap 0.8 reads the whole mount table again after every bind.
COPIED_FOLDERS = ("/etc/alternatives", "/etc/ld.so.conf.d", "/etc/ca-certificates")
MAX_COPIED_ENTRIES = 2000  # a folder larger than this is bound: a run's copy stays a few ms


@lru_cache(maxsize=1)
def entry_binds() -> tuple[str, ...]:
    """One bind per allowlisted entry that exists, on an empty /etc of its own (a tmpfs, so that
    sandbox.wrap can make it read-only once every mount point in it is made; a link, as a
    resolv.conf into /run, is bound as the file it names)."""
    args = ["--perms", "0755", "--tmpfs", "/etc"]
    for path in ETC_FILES:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return tuple(args)


def stage_etc(parent: Path) -> tuple[str, ...]:
    """Make `parent`/etc and return the bwrap arguments showing it as /etc with the binds over
    its mount points; () when it cannot be made (the caller binds each entry instead)."""
    etc = parent / "etc"
    try:
        parent.mkdir(exist_ok=True)
        etc.mkdir(mode=0o755)
    except OSError:
        return ()
    try:
        return ("--ro-bind", str(etc), "/etc", *_stage(etc))
    except OSError:
        remove_tree(etc)  # half made, it would hold room the trials need (a full temp folder)
        return ()


def etc_for(staged: tuple[str, ...], shown: Iterable[Path]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the /etc arguments for a trial showing `shown`, the passwd and group binds it then
    needs). A file the agent's command names under /etc outside the allowlist (an argument
    `/etc/debian_version`) needs a mount point the read-only staged folder lacks: that trial
    binds each entry as before, on a tmpfs, with passwd and group from the staged folder."""
    if not staged:
        return staged, ()
    folder = Path(staged[1])
    if all(_fits(folder, path, staged[3:]) for path in shown):
        return staged, ()
    return (), tuple(arg for dest in IDENTITY for arg in ("--ro-bind", str(folder / os.path.basename(dest)), dest))


def _fits(folder: Path, path: Path, binds: tuple[str, ...]) -> bool:
    """Can `path` be mounted in the staged /etc at `folder`: outside /etc, inside a folder bound
    over it (`binds`: the host's folder holds the mount point), or where the folder has an entry."""
    if not path.is_relative_to("/etc"):
        return True
    rel = path.relative_to("/etc")
    if not rel.parts:  # /etc itself
        return False
    inside_bound = len(rel.parts) > 1 and f"/etc/{rel.parts[0]}" in binds
    return inside_bound or os.path.lexists(folder / rel)


def _stage(etc: Path) -> list[str]:
    """Fill the new folder `etc`: copies of the readable single files, mount points for the
    rest; the binds those mount points need."""
    os.chmod(etc, 0o755)  # whatever the umask
    binds: list[str] = []
    for path in ETC_FILES:
        if not os.path.exists(path):
            continue
        target, folder = etc / os.path.basename(path), os.path.isdir(path)
        if folder and path in COPIED_FOLDERS and _copied_folder(path, target):
            continue
        if folder or not _copied(path, target):
            _mount_point(target, directory=folder)
            binds += ["--ro-bind", path, path]
    for dest, text in IDENTITY.items():
        (etc / os.path.basename(dest)).write_text(text, encoding="utf-8")
        os.chmod(etc / os.path.basename(dest), 0o644)
    return binds


def _copied(source: str, target: Path) -> bool:
    """Copy a regular file with its mode (following a link, as a bind does); False for one this
    process cannot read or that is not a regular file (a FIFO would block the copy)."""
    try:
        if not stat.S_ISREG(os.stat(source).st_mode):
            return False
        shutil.copyfile(source, target)
        shutil.copymode(source, target)
    except PermissionError:
        target.unlink(missing_ok=True)
        return False
    return True


def _copied_folder(source: str, target: Path) -> bool:
    """Copy a folder of links, regular files and folders with their modes (links as links, as a
    bind shows them); False, with nothing left at `target`, for one holding anything else, an
    entry this process cannot read, or more than MAX_COPIED_ENTRIES entries. OSError for a full disk."""
    try:
        copied = _copy_tree(source, target, [MAX_COPIED_ENTRIES])
    except PermissionError:  # an entry this process cannot read: bound instead
        copied = False
    if not copied:
        remove_tree(target)
    return copied


def _copy_tree(source: str, target: Path, budget: list[int]) -> bool:
    target.mkdir()
    for entry in os.scandir(source):
        budget[0] -= 1
        dest = target / entry.name
        if budget[0] < 0:
            return False
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), dest)
        elif entry.is_dir(follow_symlinks=False):
            if not _copy_tree(entry.path, dest, budget):
                return False
        elif not _copied(entry.path, dest):
            return False
    shutil.copymode(source, target)
    return True


def _mount_point(target: Path, directory: bool) -> None:
    if directory:
        target.mkdir(mode=0o755)
    else:
        target.touch(mode=0o644)
