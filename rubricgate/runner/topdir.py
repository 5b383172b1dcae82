"""Trial folders spread over the disk: the run's temp root is marked a top of a hierarchy.

A trial outside the sandbox (copy-only, --keep-workspaces) gets a full copy
of the tree in the system temp folder, and a finished trial's copy is removed while later ones
are made. On ext2/3/4 a new folder is placed beside its parent folder, so all of a run's copies
land in one block group, the one its removals keep freeing. On an ext4 without a journal (this
project's shared machine's disk) each new inode is then searched for past every inode freed in
that group within the last seconds (the kernel's `recently_deleted`): by `perf` of a 200-case
copy-only run, 44% of the run's CPU samples, in `cp` and in the harness's own mkdirs; `cp -a` of
the 50-file tree, removed in batches beside it, took 33 ms of CPU (10.7-39.4, load 3-6).

`chattr +T` (FS_TOPDIR_FL) on the run's temp root makes the Orlov allocator place each folder
made directly in it, one per trial, in a block group of its own choosing, spread by name: each
copy lands away from the ones just removed (the same `cp` 6.6 ms, 6.0-7.1). The flag is a
placement hint only: it changes no permission and no content, is not inherited by the folders
made in it, and goes with the folder. Where the file system has no such flag (tmpfs, btrfs,
xfs) the call is refused and nothing changes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

FS_TOPDIR_FL = 0x00020000
# _IOR('f', 1, long) / _IOW('f', 2, long) in the generic Linux encoding (x86, arm, riscv, s390);
# the architectures with another encoding are left alone.
_LONG = struct.calcsize("l")
FS_IOC_GETFLAGS = (2 << 30) | (_LONG << 16) | (ord("f") << 8) | 1
FS_IOC_SETFLAGS = (1 << 30) | (_LONG << 16) | (ord("f") << 8) | 2
_OTHER_ENCODING = ("alpha", "mips", "ppc", "powerpc", "sparc", "parisc")


def inode_flags(folder: Path) -> int | None:
    """The folder's inode flags (`lsattr -d`), or None where the file system keeps none."""
    with _opened(folder) as fd:
        try:
            return None if fd is None else _get(fd)
        except OSError:  # ENOTTY / EOPNOTSUPP: a file system without inode flags
            return None


def spread_children(folder: Path) -> bool:
    """Mark `folder` a top of a hierarchy (FS_TOPDIR_FL), so the folders made in it are spread
    over the disk's block groups; False where the file system has no such flag."""
    with _opened(folder) as fd:
        if fd is None:
            return False
        try:
            flags = _get(fd)
            if not flags & FS_TOPDIR_FL:
                fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", flags | FS_TOPDIR_FL))
        except OSError:  # tmpfs takes some flags but not this one, others none
            return False
    return True


@contextlib.contextmanager
def _opened(folder: Path) -> Iterator[int | None]:
    """The folder opened for its flags' ioctls; None where they cannot be asked."""
    fd = None
    if _generic_ioctls():
        with contextlib.suppress(OSError):
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def _get(fd: int) -> int:
    # The kernel reads and writes an int whatever the size the ioctl's number names.
    return struct.unpack("i", fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(4)))[0]


def _generic_ioctls() -> bool:
    return sys.platform == "linux" and not os.uname().machine.lower().startswith(_OTHER_ENCODING)
