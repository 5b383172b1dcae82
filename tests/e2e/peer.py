"""The process on the other end of a scripted server's connection, to deliver a signal to it.

A scripted model server can make "the CLI crashes after its first model turn" real: on the
request that follows the first turn it finds the client's process and kills it with the signal a
crash would bring (SIGSEGV, SIGABRT, SIGILL), without answering.

Which process that is depends on the sandbox's network. Sharing the host's, the client is the
process holding the connection's other end (its local port in /proc/net/tcp, then the
/proc/PID/fd link naming that socket). In a network namespace of its own, the server's peer is
the harness's allowlisting proxy, never to be killed: the client is then the process, in another
network namespace, whose environment names the server's address and which holds an established
connection in its namespace (its /proc/PID/net/tcp) - the request it is waiting on.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

ESTABLISHED = "01"


def _tcp_rows(table_dir: Path) -> list[list[str]]:
    rows: list[list[str]] = []
    for name in ("tcp", "tcp6"):
        try:
            rows += [line.split() for line in (table_dir / name).read_text().splitlines()[1:]]
        except OSError:
            continue
    return rows


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1], 16)


def socket_inode(client_port: int, server_port: int) -> str | None:
    """The inode of the client's end of the connection from `client_port` to `server_port`, as the
    host's network namespace (ours) sees it."""
    for fields in _tcp_rows(Path("/proc/net")):
        if _port(fields[1]) == client_port and _port(fields[2]) == server_port:
            return fields[9]
    return None


def _sockets(pid: int) -> set[str]:
    links = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            links.add(os.readlink(fd))
        except OSError:
            continue
    return links


def pids_holding(inode: str) -> list[int]:
    """Every process with a descriptor on socket `inode`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and f"socket:[{inode}]" in _sockets(int(proc.name)):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _own_family() -> set[int]:
    """This process and its ancestors: a harness in this test process is never the client."""
    pids, pid = {os.getpid()}, os.getpid()
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        pids.add(pid)
    return pids


def _harness(pid: int) -> bool:
    """A rubricgate harness (its proxy holds the connection when the sandbox has its own network)."""
    try:
        return b"rubricgate" in Path(f"/proc/{pid}/cmdline").read_bytes() or pid in _own_family()
    except OSError:
        return True


def clients_in_namespaces(address: str) -> list[int]:
    """Processes in a network namespace other than ours whose environment names `address` and
    which hold an established TCP connection there."""
    ours = os.readlink("/proc/self/ns/net")
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.readlink(proc / "ns" / "net") == ours or address.encode() not in (proc / "environ").read_bytes():
                continue
            established = {f[9] for f in _tcp_rows(proc / "net") if f[3] == ESTABLISHED}
            if any(f"socket:[{inode}]" in _sockets(int(proc.name)) for inode in established):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def kill_client(client_port: int, server_port: int, sig: signal.Signals) -> int:
    """Send `sig` to the process that made the request; its PID (AssertionError when none)."""
    inode = socket_inode(client_port, server_port)
    pids = [p for p in (pids_holding(inode) if inode else []) if not _harness(p)]
    if not pids:
        pids = clients_in_namespaces(f"127.0.0.1:{server_port}")
    assert pids, f"no client process found for the connection from port {client_port} to {server_port}"
    os.kill(max(pids), sig)  # a wrapper's child (the native CLI) holds the socket: the newest pid
    return max(pids)
