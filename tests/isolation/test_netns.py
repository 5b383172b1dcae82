"""isolation/netns.py: the proxy's listening sockets are made in the sandbox's network namespace,
also once bwrap has moved its sandbox process into a nested user namespace."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from rubricgate.isolation import netns
from rubricgate.isolation.process import _sandbox_pid
from tests.timing import HANG_S


def _sandbox_with_its_pid() -> tuple[subprocess.Popen, int]:
    """bwrap as rubricgate starts it for a network by allowlist (own user and network namespaces,
    a sandbox user of its own, --info-fd), asleep; and its sandbox process's pid. With
    --die-with-parent, the sandbox goes with the bwrap the test kills (without it, the pid
    namespace's init outlived the test for 600 s)."""
    read, write = os.pipe()
    proc = subprocess.Popen(["bwrap", "--die-with-parent", "--unshare-user", "--uid", "1000", "--gid", "1000",
                             "--unshare-net", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                             "--info-fd", str(write), "sleep", "600"], pass_fds=[write])
    os.close(write)
    pid = _sandbox_pid(read)  # as the harness reads it (it closes the pipe)
    assert pid is not None
    return proc, pid


def _nested(pid: int) -> bool:
    """Wait (at most a hang bound) until the sandbox process is in a user namespace other than the
    one owning its network namespace: bwrap's move into a nested one. Compared with the owner, not
    with the namespace the process was in when the test first looked: the move may be done by then
    (a fast machine: the test then waited out the bound)."""
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline:
        if os.readlink(f"/proc/{pid}/ns/user") != _network_owner(pid):
            return True
        time.sleep(0.01)
    return False


def _network_owner(pid: int) -> str:
    """The user namespace owning the process's network namespace, as /proc names it (found as
    the harness finds it)."""
    net = netns._open_ns(pid, "net")
    try:
        owner = netns._owning_user_ns(net, pid)
    finally:
        os.close(net)
    try:
        return os.readlink(f"/proc/self/fd/{owner}")
    finally:
        os.close(owner)


@pytest.mark.usefixtures("bwrap_ready")
def test_an_ordinary_user_listens_in_a_sandbox_that_nested_its_user_namespace(monkeypatch) -> None:
    # Was EPERM from setns: the child joined the sandbox process's nested user namespace, which
    # has no capability over the network namespace its parent owns (a race the harness lost
    # under load; as a sleep after bwrap's start it is lost every time).
    proc, pid = _sandbox_with_its_pid()
    try:
        assert _nested(pid), "bwrap kept the sandbox process in its first user namespace"
        monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)  # the ordinary user's path (a forked child)
        sockets = netns.listen_in(pid, [8080])
        monkeypatch.undo()
        assert [s.getsockname()[1] for s in sockets] == [8080]
        for sock in sockets:
            sock.close()
    finally:
        proc.kill()
        proc.wait()
