"""The process on the other end of a scripted server's connection, to deliver a signal to it.

A scripted model server can make "the CLI crashes after its first model turn" real: on the
request that follows the first turn it finds the client's process by the connection's socket
(the local port in /proc/net/tcp, then the /proc/PID/fd link naming that socket) and kills it
with the signal a crash would bring (SIGSEGV, SIGABRT, SIGILL), without answering.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path


def socket_inode(client_port: int, server_port: int) -> str | None:
    """The inode of the client's end of the 127.0.0.1 connection from `client_port` to `server_port`."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if int(local.rsplit(":", 1)[1], 16) == client_port and int(remote.rsplit(":", 1)[1], 16) == server_port:
                return inode
    return None


def pids_holding(inode: str) -> list[int]:
    """Every process with a descriptor on socket `inode`."""
    link, found = f"socket:[{inode}]", []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) == link for fd in (proc / "fd").iterdir()):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def kill_client(client_port: int, server_port: int, sig: signal.Signals) -> int:
    """Send `sig` to the process that opened the connection; its PID (AssertionError when none)."""
    inode = socket_inode(client_port, server_port)
    pids = pids_holding(inode) if inode else []
    assert pids, f"no process holds the connection from port {client_port} to {server_port}"
    os.kill(min(pids), sig)
    return min(pids)
