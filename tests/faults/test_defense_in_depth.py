"""Issue 37 item 6: below the namespaces, a sandboxed reviewer also runs under a seccomp filter
(no io_uring, ptrace, keyrings, bpf, perf events, userfaultfd, vsock), inherits no descriptor
beyond its standard three (a root harness's user namespace descriptor leaked before), and sees a
PATH naming only what the sandbox shows (the host's PATH value named the real HOME before).

A probe reviewer (a `command` agent) reports what it finds; the test runs it as root and, under
.ci/faults-unprivileged.sh, as an ordinary user.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import pytest

from rubricgate.pipeline import RunOptions, run_suite
from tests.conftest import git, make_repo
from tests.faults.reviewers import use_reviewer, write_reviewer

pytestmark = pytest.mark.usefixtures("bwrap_ready")

PROBE = r'''
import ctypes, errno, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": {"io_uring_setup": 425, "keyctl": 250, "add_key": 248, "ptrace": 101, "bpf": 321,
                 "perf_event_open": 298, "userfaultfd": 323, "process_vm_readv": 310},
      "aarch64": {"io_uring_setup": 425, "keyctl": 219, "add_key": 217, "ptrace": 117, "bpf": 280,
                  "perf_event_open": 241, "userfaultfd": 282, "process_vm_readv": 270}}[os.uname().machine]
def call(nr, *args):
    got = libc.syscall(nr, *args)
    return "ok" if got >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
seen = {name: call(nr, 0, 0, 0, 0, 0) for name, nr in NR.items()}
try:
    socket.socket(40, socket.SOCK_STREAM).close(); seen["vsock"] = "ok"
except OSError as exc:
    seen["vsock"] = errno.errorcode.get(exc.errno, "?")
seen["seccomp"] = [line.split()[1] for line in open("/proc/self/status") if line.startswith("Seccomp:")][0]
seen["fds"] = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
seen["fd_targets"] = {}
for fd in seen["fds"]:
    try:
        seen["fd_targets"][fd] = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
seen["path"] = os.environ.get("PATH", "")
seen["path_missing"] = [e for e in seen["path"].split(os.pathsep) if not os.path.isdir(e)]
note = "SEEN:" + json.dumps(seen) + ":SEEN"
'''


@pytest.fixture(scope="module")
def seen(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("depth")
    repo = make_repo(root / "repo", fixtures=["block/data-loader"])
    home_bin = root / "home" / "alice" / "bin"  # a PATH entry the sandbox never shows
    home_bin.mkdir(parents=True)
    use_reviewer(repo, write_reviewer(root / "agents", PROBE))
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "probe")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", f"{home_bin}{os.pathsep}{os.environ['PATH']}")
        out = run_suite(RunOptions(repo=repo))
    assert out.summary.isolation == "bwrap"
    text = json.loads(next((out.run_dir / "transcripts").glob("*.json")).read_text())["final_text"]
    found = json.loads(text.split("SEEN:")[1].split(":SEEN")[0])
    found["home_bin"] = str(home_bin)
    return found


needs_filter = pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"),
                                  reason="the seccomp filter is written for x86_64 and aarch64")


@needs_filter
def test_the_reviewer_runs_under_the_seccomp_filter(seen) -> None:
    assert seen["seccomp"] == "2"  # filter mode


@needs_filter
@pytest.mark.parametrize("call, expected", [
    ("io_uring_setup", "ENOSYS"), ("keyctl", "EPERM"), ("add_key", "EPERM"), ("ptrace", "EPERM"), ("bpf", "EPERM"),
    ("perf_event_open", "EPERM"), ("userfaultfd", "EPERM"), ("process_vm_readv", "EPERM"), ("vsock", "EPERM"),
])
def test_the_kernels_riskier_calls_are_denied(seen, call: str, expected: str) -> None:
    assert seen[call] == expected, seen


def test_the_reviewer_inherits_no_descriptor_beyond_its_standard_three(seen) -> None:
    # The one above 2 is the probe's own listing of /proc/self/fd.
    extra = {fd: target for fd, target in seen["fd_targets"].items() if int(fd) > 2}
    assert len(extra) <= 1 and all(target.startswith("/proc/") for target in extra.values()), seen["fd_targets"]
    assert not any("user:[" in target or "net:[" in target for target in seen["fd_targets"].values())


def test_the_path_names_only_what_the_sandbox_shows(seen) -> None:
    entries = seen["path"].split(os.pathsep)
    assert seen["home_bin"] not in entries and "/usr/bin" in entries, seen["path"]
    assert seen["path_missing"] == [], seen["path"]  # every entry is a folder the sandbox has
