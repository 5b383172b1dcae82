"""isolation/seccomp.py: the filter's shape; what it denies is tested in a real sandbox by
tests/faults/test_defense_in_depth.py."""

from __future__ import annotations

import errno
import struct

import pytest

from rubricgate.isolation import seccomp
from rubricgate.isolation.seccomp import AUDIT_ARCH, RET_ALLOW, RET_ERRNO, SYSCALLS, filter_program


def _insns(program: bytes) -> list[tuple[int, int, int, int]]:
    return [struct.unpack("<HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]


def run_filter(program: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """A tiny classic-BPF interpreter for what the filter uses (ld abs, jeq, jge, ret)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *(list(args) + [0] * (6 - len(args))))
    insns, pc, acc = _insns(program), 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == seccomp.LD_W_ABS:
            acc = struct.unpack_from("<I", data, k)[0]
        elif code in (seccomp.JEQ_K, seccomp.JGE_K):
            hit = acc == k if code == seccomp.JEQ_K else acc >= k
            pc += jt if hit else jf
        elif code == seccomp.RET_K:
            return k
        pc += 1


@pytest.mark.parametrize("arch, column", [("x86_64", 0), ("aarch64", 1)])
def test_every_listed_call_is_denied_and_the_rest_allowed(arch: str, column: int) -> None:
    program = filter_program(arch)
    assert program is not None
    for name, numbers in SYSCALLS.items():
        if numbers[column] is not None:
            want = errno.ENOSYS if name.startswith("io_uring") else errno.EPERM
            assert run_filter(program, numbers[column], AUDIT_ARCH[arch]) == RET_ERRNO | want, name
    read, openat = (0, 257) if arch == "x86_64" else (63, 56)
    for nr in (read, openat):
        assert run_filter(program, nr, AUDIT_ARCH[arch]) == RET_ALLOW


@pytest.mark.parametrize("arch, socket_nr, ioctl_nr", [("x86_64", 41, 16), ("aarch64", 198, 29)])
def test_vsock_and_terminal_injection_are_denied_by_argument(arch: str, socket_nr: int, ioctl_nr: int) -> None:
    program = filter_program(arch)
    assert program is not None
    denied = RET_ERRNO | errno.EPERM
    assert run_filter(program, socket_nr, AUDIT_ARCH[arch], (40,)) == denied  # AF_VSOCK
    assert run_filter(program, socket_nr, AUDIT_ARCH[arch], (2,)) == RET_ALLOW  # AF_INET
    assert run_filter(program, socket_nr, AUDIT_ARCH[arch], (1,)) == RET_ALLOW  # AF_UNIX
    for request in (0x5412, 0x541C):  # TIOCSTI, TIOCLINUX
        assert run_filter(program, ioctl_nr, AUDIT_ARCH[arch], (0, request)) == denied
    assert run_filter(program, ioctl_nr, AUDIT_ARCH[arch], (0, 0x541B)) == RET_ALLOW  # FIONREAD


def test_another_architecture_and_x32_calls_are_refused() -> None:
    program = filter_program("x86_64")
    assert program is not None
    assert run_filter(program, 0, 0x40000003) == RET_ERRNO | errno.ENOSYS  # i386 through int 0x80
    assert run_filter(program, 0x40000000 | 1, AUDIT_ARCH["x86_64"]) == RET_ERRNO | errno.ENOSYS  # x32
    assert _insns(program)[0] == (seccomp.LD_W_ABS, 0, 0, seccomp.ARCH)  # the architecture is checked first


def test_an_architecture_without_a_table_gets_no_filter() -> None:
    assert filter_program("riscv64") is None
