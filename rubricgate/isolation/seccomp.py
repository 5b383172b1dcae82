"""A seccomp filter for every sandboxed agent process: defense in depth below the namespaces.

The sandbox user has no capability, so most of what is denied here fails already; the filter
takes the kernel code behind those calls out of the reviewer's reach, as Flatpak and Codex do
(a kernel bug there is an escape). Denied (EPERM, or ENOSYS where a program is expected to fall
back), the rest allowed:

- io_uring (its own way to make sockets and do file I/O that other filters do not see);
- ptrace, process_vm_readv/writev, pidfd_getfd: another process's memory and descriptors;
- keyctl, add_key, request_key: the kernel keyrings, which a user namespace keeps per uid
  (one trial could leave a key for the next one sharing its user namespace);
- bpf, perf_event_open, userfaultfd; kexec, modules, swap, reboot, acct, quotactl, syslog,
  the clock setters, open_by_handle_at, lookup_dcookie, fanotify_init, vhangup, and on x86
  modify_ldt, iopl, ioperm, uselib;
- socket(AF_VSOCK): a virtual machine's bridge to its host;
- ioctl TIOCSTI and TIOCLINUX: typing into a terminal;
- syscalls of another architecture (a 32-bit program on x86_64) and the x32 ABI.

Not denied: mount and its family, unshare, setns, clone with new namespaces. The CLIs build
sandboxes of their own inside ours (Codex runs each tool command in bubblewrap: a user and mount
namespace, mounts, pivot_root); they mount only inside namespaces they made, where they touch
nothing of ours.

bubblewrap loads the program (`--seccomp FD`) as the last step before it starts the agent's
first program, so everything the agent runs has it and nothing can take it off. It is built
here once per process, as classic BPF, for x86_64 and aarch64; another architecture runs
without it (`filter_program` returns None and the run says so).
"""

from __future__ import annotations

import errno
import os
import platform
import struct
from functools import lru_cache

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
NR, ARCH, ARG0, ARG1 = 0, 4, 16, 24
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
# classic BPF opcodes
LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
AF_VSOCK = 40
TIOCSTI, TIOCLINUX = 0x5412, 0x541C

# name: (x86_64, aarch64) numbers; None where the architecture has no such call
SYSCALLS: dict[str, tuple[int | None, int | None]] = {
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "pidfd_getfd": (438, 438),
    "keyctl": (250, 219), "add_key": (248, 217), "request_key": (249, 218),
    "bpf": (321, 280), "perf_event_open": (298, 241), "userfaultfd": (323, 282),
    "kexec_load": (246, 104), "kexec_file_load": (320, 294),
    "init_module": (175, 105), "finit_module": (313, 273), "delete_module": (176, 106),
    "swapon": (167, 224), "swapoff": (168, 225), "reboot": (169, 142), "acct": (163, 89),
    "quotactl": (179, 60), "quotactl_fd": (443, 443), "syslog": (103, 116),
    "settimeofday": (164, 170), "clock_settime": (227, 112), "clock_adjtime": (305, 266),
    "adjtimex": (159, 171), "open_by_handle_at": (304, 265), "lookup_dcookie": (212, 18),
    "fanotify_init": (300, 262), "vhangup": (153, 58), "nfsservctl": (180, 42),
    "modify_ldt": (154, None), "iopl": (172, None), "ioperm": (173, None), "uselib": (134, None),
}
# Programs probe io_uring and fall back when the kernel says it has none.
AS_ABSENT = {"io_uring_setup", "io_uring_enter", "io_uring_register"}
SOCKET = (41, 198)
IOCTL = (16, 29)


def machine() -> str:
    return platform.machine()


@lru_cache(maxsize=4)
def filter_program(arch: str | None = None) -> bytes | None:
    """The filter as bwrap reads it (struct sock_filter array), None on an architecture it is
    not written for."""
    arch = arch or machine()
    if arch not in AUDIT_ARCH:
        return None
    column = 0 if arch == "x86_64" else 1
    prog: list[tuple[int, int, int, int]] = [(LD_W_ABS, 0, 0, ARCH), (JEQ_K, 1, 0, AUDIT_ARCH[arch]),
                                             (RET_K, 0, 0, RET_ERRNO | errno.ENOSYS), (LD_W_ABS, 0, 0, NR)]
    if arch == "x86_64":
        prog += [(JGE_K, 0, 1, X32_SYSCALL_BIT), (RET_K, 0, 0, RET_ERRNO | errno.ENOSYS)]
    for name, numbers in SYSCALLS.items():
        number = numbers[column]
        if number is not None:
            code = errno.ENOSYS if name in AS_ABSENT else errno.EPERM
            prog += [(JEQ_K, 0, 1, number), (RET_K, 0, 0, RET_ERRNO | code)]
    prog += _deny_arg(SOCKET[column], ARG0, (AF_VSOCK,))
    prog += _deny_arg(IOCTL[column], ARG1, (TIOCSTI, TIOCLINUX))
    prog.append((RET_K, 0, 0, RET_ALLOW))
    return b"".join(struct.pack("<HBBI", *insn) for insn in prog)


def _deny_arg(number: int, offset: int, values: tuple[int, ...]) -> list[tuple[int, int, int, int]]:
    """`number` with its argument at `offset` (low 32 bits) equal to one of `values`: EPERM.
    Leaves the syscall number loaded again for what follows."""
    tail = len(values) + 2  # the value checks, the EPERM, the reload
    insns = [(JEQ_K, 0, tail, number), (LD_W_ABS, 0, 0, offset)]
    for i, value in enumerate(values):
        insns.append((JEQ_K, len(values) - i - 1, 0, value))  # to the EPERM just after the checks
    insns[-1] = (JEQ_K, 0, 1, values[-1])
    insns += [(RET_K, 0, 0, RET_ERRNO | errno.EPERM), (LD_W_ABS, 0, 0, NR)]
    return insns


def filter_pipe(program: bytes) -> int:
    """The read end of a pipe holding `program`, for bwrap's `--seccomp FD` (the caller closes it)."""
    read, write = os.pipe()
    try:
        os.write(write, program)  # ~1 KB: far below a pipe's buffer
    finally:
        os.close(write)
    return read
