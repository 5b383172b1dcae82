"""Issue 28, findings 3, 4, 6, 7 and 12: what a reviewer inside the sandbox can reach.

The sandbox showed the whole host read-only minus a denylist. A reviewer looks for what that
let through: host sockets under /run (also with sandbox_network: none), the real HOME through a
PATH entry's install prefix, root-only files (the harness is root), another checkout of the
repository and the hidden paths named in /proc/self/mountinfo; and it fills /tmp, forks and
allocates without bound. Each must fail, and a limit reached is the trial's reviewer error.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.pipeline import RunOptions, run_suite
from tests.conftest import git, make_repo
from tests.faults.reviewers import use_reviewer, write_reviewer

pytestmark = pytest.mark.usefixtures("bwrap_ready")
FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]

LOOK = r'''
import json, os, socket, stat, sys
seen = {"run": os.path.exists("/run"), "var_run": os.path.exists("/var/run"), "sockets": [], "connected": []}
def walk(top):
    # A socket is neither a folder, a file nor a link: only the rest is lstat-ed (a walk of the
    # whole root that lstat-ed every file took seconds).
    try:
        with os.scandir(top) as found:
            entries = list(found)
    except OSError:
        return
    for entry in entries:
        if entry.path in ("/proc", "/sys", "/dev") or entry.is_symlink() or entry.is_file(follow_symlinks=False):
            continue
        if entry.is_dir(follow_symlinks=False):
            walk(entry.path)
            continue
        try:
            if stat.S_ISSOCK(os.lstat(entry.path).st_mode):
                seen["sockets"].append(entry.path)
                s = socket.socket(socket.AF_UNIX)
                s.settimeout(1)
                s.connect(entry.path)
                seen["connected"].append(entry.path)
        except OSError:
            pass
own = socket.socket(socket.AF_UNIX)  # the walk's control: a socket of its own, in its private /tmp
own.bind("/tmp/rg-own.sock")
walk("/")
def readable(path):
    try:
        with open(path, "rb") as fh:
            return fh.read(64).decode(errors="replace")
    except OSError as exc:
        return ""
seen["home_files"] = {p: readable(p) for p in ("FAKEHOME/.npmrc", "FAKEHOME/.gitconfig", "FAKEHOME/.codex/auth.json")}
seen["shadow"] = readable("/etc/shadow")
seen["root_only"] = readable(sys.argv[-1])
seen["other_checkouts"] = {p: readable(p) for p in ("OTHER/baseline.json", "WORKTREE/baseline.json", "REPO/baseline.json")}
seen["mountinfo"] = open("/proc/self/mountinfo").read()
seen["uid_map"] = open("/proc/self/uid_map").read()
seen["passwd"] = open("/etc/passwd").read()
note = "SEEN:" + json.dumps(seen) + ":SEEN"
'''


def _seen(run_dir: Path) -> list[dict]:
    finals = [json.loads(p.read_text())["final_text"] for p in sorted((run_dir / "transcripts").glob("*.json"))]
    return [json.loads(t.split("SEEN:")[1].split(":SEEN")[0]) for t in finals]


@pytest.fixture(scope="module", params=["allowlist", "shared", "none"])
def looked(request) -> Iterator[tuple[dict, dict]]:
    """One run of a reviewer that looks around, per sandbox_network setting: (what it saw, paths).
    Outside the temp folder (/var/tmp), as a HOME and other checkouts are: /tmp is private anyway."""
    root = Path(tempfile.mkdtemp(prefix=f"rg-allowlist-{request.param}-", dir=_outside_tmp()))
    try:
        yield _look(root, request.param)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _outside_tmp() -> str:
    return "/var/tmp" if os.access("/var/tmp", os.W_OK) else str(Path.home())


def _look(root: Path, network: str) -> tuple[dict, dict]:
    root.chmod(0o755)
    home = root / "home"
    (home / ".codex").mkdir(parents=True)
    (home / "bin").mkdir()
    for rel in (".npmrc", ".codex/auth.json"):
        (home / rel).write_text(f"HOME-SECRET {rel}\n")
    # git reads the harness's own .gitconfig to list the repository: a valid one, its secret in a value
    (home / ".gitconfig").write_text("[credential]\n\thelper = HOME-SECRET .gitconfig\n")
    server = socket.socket(socket.AF_UNIX)  # a host socket, as docker.sock would be
    server.bind(str(root / "host.sock"))
    server.listen(1)
    root_only = root / "root-only.txt"
    root_only.write_text("ROOT-ONLY-CONTENT\n")
    root_only.chmod(0o600)
    repo = make_repo(root / "repo", fixtures=FIXTURES)
    other = root / "other-clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(other)], check=True)
    worktree = root / "worktree"
    git(repo, "worktree", "add", "-q", str(worktree))
    attack = (LOOK.replace("FAKEHOME", str(home)).replace("OTHER", str(other))
              .replace("WORKTREE", str(worktree)).replace("REPO", str(repo)))
    script = write_reviewer(root / "agents", attack)
    use_reviewer(repo, script, sandbox="bwrap", sandbox_network=network,
                 command=[sys.executable, str(script), "{prompt_file}", str(root_only)])
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "reviewer")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        mp.setenv("PATH", f"{home / 'bin'}{os.pathsep}{os.environ['PATH']}")  # ~/bin on PATH
        out = run_suite(RunOptions(repo=repo))
    server.close()
    assert out.summary.isolation == "bwrap"
    return _seen(out.run_dir)[0], {"repo": repo, "home": home, "root": root, "network": network}


def test_no_host_socket_and_no_run_folder_is_reachable(looked) -> None:
    seen, paths = looked
    assert not seen["run"] and not seen["var_run"]
    assert seen["connected"] == [] and seen["sockets"] == ["/tmp/rg-own.sock"]  # its own, not listening: found


def test_the_real_home_is_not_shown_through_a_path_entry(looked) -> None:
    seen, _ = looked
    assert seen["home_files"] == {p: "" for p in seen["home_files"]}


@pytest.mark.skipif(os.geteuid() != 0, reason="the harness runs as an ordinary user: nothing is root-only to it either")
def test_a_root_harness_maps_the_sandbox_user_to_no_host_root(looked) -> None:
    seen, _ = looked
    assert seen["shadow"] == "" and seen["root_only"] == ""  # shown (named in argv), yet unreadable
    [outside] = [line.split()[1] for line in seen["uid_map"].splitlines() if line.split()[0] == "1000"]
    assert outside != "0"


def test_passwd_names_only_the_sandbox_user(looked) -> None:
    seen, _ = looked
    assert [line.split(":")[0] for line in seen["passwd"].splitlines()] == ["sandbox"]


def test_no_other_checkout_and_no_hidden_path_in_mountinfo(looked) -> None:
    seen, paths = looked
    assert seen["other_checkouts"] == {p: "" for p in seen["other_checkouts"]}
    for hidden in (paths["repo"], paths["home"], paths["repo"] / "reports"):
        assert str(hidden) not in seen["mountinfo"]


@pytest.mark.parametrize("where", ["bin", ".cargo/bin"])
def test_an_agent_installed_in_home_is_refused_with_the_fix(tmp_path: Path, monkeypatch, where: str) -> None:
    home = tmp_path / "home"
    (home / where).mkdir(parents=True)
    (home / ".npmrc").write_text("//registry/:_authToken=HOME-SECRET\n")
    script = write_reviewer(home / where, "")  # its install prefix is HOME itself, or ~/.cargo
    launcher = home / where / "my-reviewer"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} {script} \"$@\"\n")
    launcher.chmod(0o755)
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    use_reviewer(repo, script, sandbox="bwrap", command=[str(launcher), "{prompt_file}"])
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "reviewer")
    monkeypatch.setenv("HOME", str(home))
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert len(line.splitlines()) == 1 and "agent.command" in line and "holds the real HOME" in line, line
    assert "--prefix" in line  # the fix


# -- limits: each reached is the trial's reviewer error ---------------------------------------

# A MiB at a time past the 8 MiB /tmp, closed by `with` and flushed: an error at the last write
# or at close is raised (a file left to the garbage collector reports one as "Exception ignored").
FILL_TMP = ("with open('/tmp/fill', 'wb') as fill:\n"
            "    for _ in range(9):\n"
            "        fill.write(b'x' * (1 << 20))\n"
            "    fill.flush()\n")
FORK = "import os\nfor _ in range(200):\n    if os.fork() == 0:\n        import time; time.sleep(5); os._exit(0)\n"
ALLOCATE = "blob = bytearray(512 << 20)\n"


@pytest.mark.parametrize("program, limit", [(FILL_TMP, "disk"), (FORK, "processes"), (ALLOCATE, "memory")],
                         ids=["tmp", "processes", "memory"])
def test_a_limit_reached_is_the_reviewers_error(tmp_path: Path, program: str, limit: str) -> None:
    script = tmp_path / "agents" / "hog.py"
    script.parent.mkdir()
    script.write_text(program)
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES[:1])
    use_reviewer(repo, script, sandbox="bwrap", limits={"processes": 64, "memory_mb": 256, "tmp_mb": 8})
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "reviewer")
    out = run_suite(RunOptions(repo=repo))
    [trial] = [t for c in out.summary.cases for t in c.trials]
    transcript = json.loads((out.run_dir / trial.transcript).read_text())
    assert f"the sandbox's {limit} limit" in transcript["error"], transcript["error"]
    assert not trial.errored and out.exit_code == 1  # the reviewer's failure, not the infrastructure's


def test_limits_have_upper_bounds(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES[:1])
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config.setdefault("agent", {})["limits"] = {"processes": 10**9}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert result.exit_code == 2 and "processes" in result.output


def test_the_runs_sandboxes_see_etc_through_one_staged_folder(looked) -> None:
    # isolation/etc_folder.py: one bind for /etc and one per allowlisted folder, none per file.
    seen, _ = looked
    points = {line.split()[4] for line in seen["mountinfo"].splitlines()}
    assert "/etc" in points
    assert not {"/etc/hosts", "/etc/resolv.conf", "/etc/ld.so.cache"} & points
    assert "/etc/passwd" not in points  # written into the staged folder, not mounted from a pipe
