"""isolation/sandbox_user.py: the agent is `sandbox` and no host account is named inside."""

from __future__ import annotations

import pwd
import re
from pathlib import Path

import pytest

from rubricgate.isolation.netaccess import NetworkAccess
from rubricgate.isolation.process import run_process
from rubricgate.isolation.sandbox import SandboxPolicy
from rubricgate.isolation.sandbox_user import IDENTITY

SYSTEMD_NSS = [Path("/lib/x86_64-linux-gnu/libnss_systemd.so.2"), Path("/usr/lib/x86_64-linux-gnu/libnss_systemd.so.2"),
               Path("/lib64/libnss_systemd.so.2"), Path("/usr/lib64/libnss_systemd.so.2")]


def _names_systemd_for_passwd() -> bool:
    try:
        text = Path("/etc/nsswitch.conf").read_text()
    except OSError:
        return False
    return bool(re.search(r"^passwd:.*\bsystemd\b", text, re.M)) and any(p.exists() for p in SYSTEMD_NSS)


def _inside(tmp_path: Path, script: str) -> str:
    ws, out = tmp_path / "ws", tmp_path / "out.txt"
    ws.mkdir(exist_ok=True)
    res = run_process(["/bin/sh", "-c", script], cwd=ws, env={"PATH": "/usr/bin:/bin"}, timeout_s=60,
                      output_cap_bytes=100_000, stdout_path=out,
                      sandbox=SandboxPolicy("bwrap", network=NetworkAccess("none")))
    assert res.exit_code == 0, res.stderr_tail or res.start_error
    return out.read_text()


@pytest.mark.usefixtures("bwrap_ready")
def test_passwd_and_group_name_only_the_sandbox_user(tmp_path: Path) -> None:
    seen = _inside(tmp_path, "cat /etc/passwd; echo ---; cat /etc/group; echo ---; id -un; "
                             "test -e /etc/shadow && echo shadow; getent passwd")
    passwd, group, rest = seen.split("---\n")
    assert passwd == IDENTITY["/etc/passwd"] and group == IDENTITY["/etc/group"]
    assert rest == "sandbox\n" + IDENTITY["/etc/passwd"]  # no /etc/shadow; enumeration lists sandbox alone


@pytest.mark.usefixtures("bwrap_ready")
def test_with_systemd_in_nsswitch_only_its_built_in_root_and_nobody_answer_besides(tmp_path: Path) -> None:
    # docs/isolation.md: where the host's nsswitch.conf names systemd, its fixed root and nobody
    # entries still answer getent; no host account does (the harness's own user, any other).
    if not _names_systemd_for_passwd():
        pytest.skip("this host's nsswitch.conf names no systemd for passwd (or libnss_systemd is absent)")
    hosts = sorted({e.pw_name for e in pwd.getpwall()} - {"root", "nobody", "sandbox"})
    seen = _inside(tmp_path, f"getent passwd root nobody sandbox {' '.join(hosts)}; echo rc=$?")
    names = [line.split(":")[0] for line in seen.splitlines() if ":" in line]
    assert sorted(names) == ["nobody", "root", "sandbox"], seen
    assert seen.rstrip().endswith("rc=2")  # getent: one or more keys not found (the host's accounts)
