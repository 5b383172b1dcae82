"""Who the agent is on the host: never the harness's own user when that user is root.

bubblewrap's `--unshare-user` maps the sandbox user onto the user that started bwrap. Run by an
ordinary user that is fine (the allowlisted root shows nothing of its files); run as root, the
sandbox user *is* host root, and every root-only file shown reads as its own. So a root harness
builds each trial's user namespace itself, with two entries: namespace root is host root (bwrap
needs it to open what it mounts, /root/... included, and to mount the overlay) and the sandbox
user 1000 is host uid SANDBOX_HOST_ID, which owns no file on the host. bwrap joins that
namespace (`--userns FD`, or `nsenter` in front of the overlay's `unshare` + `mount`), sets
everything up as namespace root, and the agent's first step inside is `setpriv` down to uid 1000
with every capability gone. Root-only host files are then unreadable to it, whatever is shown.

One namespace per trial, so the per-user process limit (counted per namespace and uid) is per
trial. The folders the agent must write (its scratch: HOME, the last-message file) are given to
SANDBOX_HOST_ID first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from functools import lru_cache
from pathlib import Path

from rubricgate.isolation.rootfs import SANDBOX_UID

SANDBOX_HOST_ID = 2_000_000_000  # far above any distribution's user and subordinate-id ranges
NS_TIMEOUT_S = 5.0
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
    setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
    return (setpriv, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--")


def user_namespace() -> int:
    """A descriptor of a new user namespace: namespace root = host root, the sandbox user =
    SANDBOX_HOST_ID. The process that made it is gone when this returns; the descriptor keeps
    the namespace alive (close it after bwrap started). Raises OSError when it cannot be made."""
    proc = subprocess.Popen([_unshare(), "--user", "cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        _wait_for_namespace(proc)
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{proc.pid}/{name}", "w", encoding="ascii") as fh:
                fh.write(f"0 0 1\n{SANDBOX_UID} {SANDBOX_HOST_ID} 1\n")
        return os.open(f"/proc/{proc.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait()
        proc.stderr.close()  # type: ignore[union-attr]


def _wait_for_namespace(proc: subprocess.Popen[bytes]) -> None:
    """Until `unshare` has made its namespace (its maps can be written from then on)."""
    mine = os.readlink("/proc/self/ns/user")
    deadline = time.monotonic() + NS_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise OSError(f"unshare --user failed: {proc.stderr.read().decode(errors='replace').strip()}")  # type: ignore[union-attr]
        try:
            if os.readlink(f"/proc/{proc.pid}/ns/user") != mine:
                return
        except OSError:
            pass
        time.sleep(0.0002)
    raise OSError("unshare --user did not start in time")


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
