"""Listening sockets made inside a sandbox's own network namespace, held by the harness.

A socket belongs to the network namespace it was created in, whoever holds it later. So the
proxy (isolation/proxy.py) gets its listening sockets made in the trial's namespace, at
127.0.0.1:PORT there (bound to the unspecified address: that namespace has its loopback and
nothing else), and accepts the reviewer's connections in the harness: no forwarder runs in the
sandbox, nothing listens before the agent may start, and the reviewer cannot stop it.

The namespace is the one bubblewrap's sandbox process was cloned into (its pid comes from
bwrap's `--info-fd`). Entering it takes CAP_SYS_ADMIN over it and in one's own user namespace:

- a root harness has both: the calling thread enters the namespace (`setns` is per thread),
  makes the sockets and goes back;
- an ordinary user has neither in its own namespace, but owns the sandbox's user namespace
  (bwrap made it): a forked child joins that user namespace (which gives it every capability
  there: a single-threaded process may), then the network namespace, makes the sockets and
  hands them over a socket pair before it exits. The user namespace joined is the one that owns
  the network namespace (`NS_GET_USERNS`), not the sandbox process's own: bwrap moves that
  process into a nested user namespace of its own once its mounts are done (to map the sandbox
  user), and capabilities there are none over the network namespace. The harness read the pid
  and opened the namespaces in a race with that move; losing it, under load, made setns fail
  with EPERM and the trial not start.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import sys
import warnings
from collections.abc import Sequence
from functools import lru_cache

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
NS_GET_USERNS = 0xB701  # _IO(0xb7, 0x1): an fd of the user namespace owning a namespace
BACKLOG = 64


class NamespaceGone(OSError):
    """The sandbox process exited before its namespace could be entered: its exit status says why."""


def listen_in(pid: int, ports: Sequence[int]) -> list[socket.socket]:
    """Listening sockets on `ports` of the network namespace of process `pid` (each accepts
    IPv4 and, where the namespace has it, IPv6). Raises NamespaceGone or OSError."""
    net = _open_ns(pid, "net")
    try:
        if os.geteuid() == 0:
            return _in_this_thread(net, ports)
        user = _owning_user_ns(net, pid)
        try:
            return _in_a_child(user, net, ports)
        finally:
            os.close(user)
    finally:
        os.close(net)


def _open_ns(pid: int, kind: str) -> int:
    try:
        return os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, ProcessLookupError) as exc:
        raise NamespaceGone(errno.ESRCH, f"sandbox process {pid} is gone") from exc


def _owning_user_ns(net: int, pid: int) -> int:
    """The user namespace that owns the network namespace `net` (a kernel without the ioctl,
    before 4.9: the sandbox process's own, as it is before bwrap nests another)."""
    try:
        return fcntl.ioctl(net, NS_GET_USERNS)
    except OSError as exc:
        if exc.errno not in (errno.ENOTTY, errno.EINVAL):
            raise
        return _open_ns(pid, "user")


def _in_this_thread(net: int, ports: Sequence[int]) -> list[socket.socket]:
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        _setns(net, CLONE_NEWNET)
        try:
            return [_listener(port) for port in ports]
        finally:
            _setns(home, CLONE_NEWNET)  # raises if it cannot: this thread must not stay in there
    finally:
        os.close(home)


def _in_a_child(user: int, net: int, ports: Sequence[int]) -> list[socket.socket]:
    _libc()  # loaded before the fork: the child only makes system calls
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        child = _fork()
        if child == 0:  # pragma: no cover - runs in the forked child, which only _exits
            _child(theirs, user, net, ports)
        theirs.close()
        try:
            message, fds, _, _ = socket.recv_fds(ours, 512, len(ports))
        finally:
            os.waitpid(child, 0)
    finally:
        ours.close()
        theirs.close()
    if len(fds) != len(ports):
        for fd in fds:
            os.close(fd)
        raise OSError(errno.EPERM,
                      f"cannot listen in the sandbox's network namespace: {message.decode(errors='replace')}")
    return [socket.socket(fileno=fd) for fd in fds]


def _fork() -> int:
    """os.fork. Python 3.12 warns on a fork in a process with threads (a child that ran Python
    code could deadlock on a lock another thread held); this child runs only system calls
    (`_child`) and `_exit`s, so the warning is not for it."""
    if sys.version_info < (3, 12):
        return os.fork()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*use of fork", category=DeprecationWarning)
        return os.fork()


def _child(channel: socket.socket, user: int, net: int, ports: Sequence[int]) -> None:  # pragma: no cover
    """The forked child: nothing but system calls, then _exit (never back into the harness)."""
    code = 1
    try:
        _setns(user, CLONE_NEWUSER)
        _setns(net, CLONE_NEWNET)
        listeners = [_listener(port) for port in ports]
        socket.send_fds(channel, [b"ok"], [s.fileno() for s in listeners])
        code = 0
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises it
        try:
            channel.send(str(exc).encode(errors="replace")[:500])
        except OSError:
            code = 2
    os._exit(code)


def _listener(port: int) -> socket.socket:
    """A socket listening on `port` for IPv4 and IPv6 alike (IPv4 alone where IPv6 is off)."""
    try:
        return _bound(socket.AF_INET6, ("::", port))
    except OSError:
        return _bound(socket.AF_INET, ("0.0.0.0", port))


def _bound(family: int, address: tuple) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


def _setns(fd: int, kind: int) -> None:
    if _libc().setns(fd, kind) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)
