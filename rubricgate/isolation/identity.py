"""Who the agent is on the host: never the harness's own user when that user is root.

bubblewrap's `--unshare-user` maps the sandbox user onto the user that started bwrap. Run by an
ordinary user that is fine (the allowlisted root shows nothing of its files); run as root, the
sandbox user *is* host root, and every root-only file shown reads as its own. So a root harness
runs each sandbox in a user namespace of its own making, with two entries: namespace root is
host root (bwrap needs it to open what it mounts, /root/... included, and to mount the overlay)
and the sandbox user 1000 is host uid SANDBOX_HOST_ID, which owns no file on the host. The
sandbox enters it with `nsenter` in front of bwrap (or of the overlay's `unshare` + `mount`),
sets everything up as namespace root, and the agent's first step inside is `setpriv` down to
uid 1000 with every capability gone. Root-only host files are then unreadable to it, whatever is
shown. Entered by path, the namespace leaves no descriptor behind for the agent to inherit.

The per-user process limit is counted per user namespace and uid, so no two live sandboxes
share one: a namespace is lent to one trial at a time (`lend`) from a pool that grows to the
number of sandboxes alive at once, and each is made once and kept for the harness's life by a
holder process (`unshare --user` around a `cat` reading a pipe only the harness holds: it ends
when the harness does). Reusing a namespace across trials leaves nothing behind: the agent's
mounts, processes, IPC and network are in namespaces of the trial's own, and the one thing a
user namespace keeps per uid, the kernel keyrings, the agent cannot reach (isolation/seccomp.py).
The folders the agent must write (its scratch: HOME, the last-message file) are given to
SANDBOX_HOST_ID first.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rubricgate.isolation.reaping import end_helper, start_helper
from rubricgate.isolation.rootfs import system_program
from rubricgate.isolation.sandbox_user import SANDBOX_UID

SANDBOX_HOST_ID = 2_000_000_000  # far above any distribution's user and subordinate-id ranges
# The agent's first step inside a root harness's sandbox: down to the sandbox user, no capability left.
# Held by bwrap's last step only: entering a workspace the sandbox user owns (mode 0700 is
# common), then setpriv's drop; setpriv clears every one of them, the bounding set too.
CAPS_FOR_DROP = ["--cap-drop", "ALL", *(arg for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_DAC_OVERRIDE",
                                                         "CAP_DAC_READ_SEARCH") for arg in ("--cap-add", cap))]


def root_harness() -> bool:
    """The harness runs as host root: the sandbox user needs a namespace of its own making."""
    return os.geteuid() == 0


@lru_cache(maxsize=1)
def drop_to_sandbox_user() -> tuple[str, ...]:
    """setpriv down to the sandbox user with no capability, inherited or bounding."""
    setpriv = system_program("setpriv")
    return (setpriv, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--")


@dataclass(eq=False)
class HeldNamespace:
    """A user namespace kept alive by its holder process; `path` names it for `nsenter`."""

    holder: subprocess.Popen[bytes]

    @property
    def path(self) -> str:
        return f"/proc/{self.holder.pid}/ns/user"


class NamespacePool:
    """User namespaces for a root harness's sandboxes, one live sandbox per namespace."""

    def __init__(self) -> None:
        self._free: list[HeldNamespace] = []
        self._lock = threading.Lock()

    def lend(self) -> HeldNamespace:
        """A namespace no live sandbox uses (made when none is free). Raises OSError."""
        with self._lock:
            while self._free:
                held = self._free.pop()
                if held.holder.poll() is None:
                    return held
                end_helper(held.holder)
        return make_namespace()

    def give_back(self, held: HeldNamespace) -> None:
        """Once the sandbox that used it is gone (every process of it dead)."""
        with self._lock:
            self._free.append(held)

    def holder_pids(self) -> set[int]:
        """The free namespaces' holders (processes of the harness's own: isolation/reaping.py
        start_helper)."""
        with self._lock:
            return {held.holder.pid for held in self._free}

    def close(self) -> None:
        """End every free namespace's holder (its `cat` ends on the closed pipe). At exit, for
        library callers; the console entry leaves by os._exit, and the pipe closes with it."""
        with self._lock:
            free, self._free = self._free, []
        for held in free:
            end_helper(held.holder)


NAMESPACES = NamespacePool()
atexit.register(NAMESPACES.close)


def make_namespace() -> HeldNamespace:
    """A new user namespace (namespace root = host root, the sandbox user = SANDBOX_HOST_ID),
    held by a process that lives as long as the harness. Raises OSError when it cannot be made."""
    holder = start_helper([_unshare(), "--user", "sh", "-c", "echo ready && exec cat"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # The line comes once the namespace exists (no polling); its maps can be written from then on.
        ready = holder.stdout.readline()  # type: ignore[union-attr]
        if ready != b"ready\n":
            raise OSError(f"unshare --user failed: {holder.stderr.read().decode(errors='replace').strip()}")  # type: ignore[union-attr]
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{holder.pid}/{name}", "w", encoding="ascii") as fh:
                fh.write(f"0 0 1\n{SANDBOX_UID} {SANDBOX_HOST_ID} 1\n")
    except BaseException:
        holder.kill()
        end_helper(holder)
        raise
    holder.stdout.close()  # type: ignore[union-attr]
    holder.stderr.close()  # type: ignore[union-attr]
    return HeldNamespace(holder)


@lru_cache(maxsize=1)
def _unshare() -> str:
    return shutil.which("unshare") or "unshare"


def give_to_sandbox_user(folder: Path, recursive: bool = True) -> None:
    """Make `folder` (and, `recursive`, what the harness put in it) the sandbox user's on the host."""
    if recursive:
        for top, dirs, files in os.walk(folder):
            for name in (*dirs, *files):
                os.lchown(os.path.join(top, name), SANDBOX_HOST_ID, SANDBOX_HOST_ID)
    os.lchown(folder, SANDBOX_HOST_ID, SANDBOX_HOST_ID)


def enter_namespace(path: str | None) -> list[str]:
    """`nsenter` into the user namespace at `path`, in front of bwrap; nothing for None."""
    return [] if path is None else [_nsenter(), f"--user={path}", "--"]


@lru_cache(maxsize=1)
def _nsenter() -> str:
    return shutil.which("nsenter") or "nsenter"
