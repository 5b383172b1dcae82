"""Issue 8 attacks by a hostile reviewer, each in the sandbox and (where it applies) copy-only.

In the sandbox the attack must fail outright; copy-only, the run must at least never pass.
Every test checks that the original repository, `.git` included, is byte-identical afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from rubricgate.isolation.reaping import adopt_orphans
from rubricgate.pipeline import RunOptions, run_suite
from tests.conftest import make_repo
from tests.faults.reviewers import live_pids_with, snapshot_bytes, use_reviewer, write_reviewer

pytestmark = pytest.mark.usefixtures("bwrap_ready", "overlay_mount")  # each way an overlay is mounted
FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]


def repo_for(tmp_path: Path, attack: str, tier: str = "RIGHT", sandbox: str = "bwrap") -> Path:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    script = write_reviewer(tmp_path / "agents", attack.replace("REPO", str(repo)), tier=tier)
    use_reviewer(repo, script, sandbox=sandbox)
    from tests.conftest import git
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "reviewer")
    return repo


REWRITE_BASELINE = r'''
import os
from pathlib import Path
targets = [Path("REPO/baseline.json")]
# Find the repository through the parent processes, as a real escape would.
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            targets.append(Path(os.readlink(f"/proc/{pid}/cwd")) / "baseline.json")
        except OSError:
            pass
for t in targets:
    # Only this test's own repository: copy-only, /proc shows every process on the machine.
    if str(t.resolve()).startswith("REPO") and t.is_file() and '"verdict": 1.0' in t.read_text():
        st = t.stat()
        t.write_text(t.read_text().replace('"verdict": 1.0', '"verdict": 0.0'))
        os.utime(t, ns=(st.st_atime_ns, st.st_mtime_ns))
        note = f"rewrote {t}"
'''


def test_rewriting_the_baseline_fails_in_the_sandbox(tmp_path: Path) -> None:
    repo = repo_for(tmp_path, REWRITE_BASELINE, tier="BLOCK")  # wrong on the PASS fixture
    before = snapshot_bytes(repo)
    out = run_suite(RunOptions(repo=repo))
    assert out.exit_code == 1 and out.summary.isolation == "bwrap"
    assert snapshot_bytes(repo) == before
    # The next run of the same wrong reviewer is still a regression.
    assert run_suite(RunOptions(repo=repo)).exit_code == 1


def test_rewriting_the_baseline_copy_only_is_caught_and_never_passes(tmp_path: Path) -> None:
    repo = repo_for(tmp_path, REWRITE_BASELINE, tier="BLOCK", sandbox="none")
    out = run_suite(RunOptions(repo=repo))
    assert out.exit_code == 2 and "baseline.json" in " ".join(out.summary.decision.reasons)
    assert out.summary.isolation == "copy-only" and "copy-only" in out.summary.decision.warnings[0]


PLANT_HOOK = r'''
from pathlib import Path
hook = Path("REPO/.git/hooks/pre-commit")
hook.write_text("#!/bin/sh\necho pwned\n")
hook.chmod(0o755)
note = "planted"
'''


def test_planting_a_git_hook_fails_in_the_sandbox(tmp_path: Path) -> None:
    repo = repo_for(tmp_path, PLANT_HOOK)
    before = snapshot_bytes(repo)
    out = run_suite(RunOptions(repo=repo))
    assert out.exit_code == 0
    assert snapshot_bytes(repo) == before and not (repo / ".git/hooks/pre-commit").exists()
    finals = [json.loads(p.read_text())["final_text"] for p in (out.run_dir / "transcripts").glob("*.json")]
    assert all("attack failed" in t for t in finals)


def test_a_planted_git_hook_copy_only_is_caught_by_the_content_digest(tmp_path: Path) -> None:
    repo = repo_for(tmp_path, PLANT_HOOK, sandbox="none")
    out = run_suite(RunOptions(repo=repo))
    assert out.exit_code == 2 and ".git/hooks/pre-commit" in " ".join(out.summary.decision.reasons)


LATE_WRITER = r'''
import subprocess
rubric = "REPO/reviewer/evaluator/references/rubric.md"
cmd = f"sleep 4; echo tampered >> {rubric}; echo MARKER_LATE"
subprocess.Popen(["setsid", "sh", "-c", cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
subprocess.Popen(["env", "-i", "sh", "-c", f"(sh -c '{cmd}' &) ; exit 0"], stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
'''


@pytest.mark.long  # each waits 5 s past the run: the README command runs the sandboxed one
@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_nothing_outlives_the_run(tmp_path: Path, sandbox: str) -> None:
    # A marker of this test's own: the same test's other parameters, run at once by another
    # worker, have their live agents, and a shared marker found those as this run's survivors.
    marker = f"MARKER_LATE_{uuid.uuid4().hex[:8]}"
    repo = repo_for(tmp_path, LATE_WRITER.replace("MARKER_LATE", marker), sandbox=sandbox)
    before = snapshot_bytes(repo)
    out = run_suite(RunOptions(repo=repo))
    assert live_pids_with(marker) == []
    time.sleep(5)  # past the children's delay: a survivor would have written by now
    assert snapshot_bytes(repo) == before
    assert out.exit_code == 0


READ_PARENT_ENV = r'''
import os
seen = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            seen.append(open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace"))
        except OSError:
            pass
note = "FOUND:" + ("yes " + [s for s in seen if "parent-only-value" in s][0] if any("parent-only-value" in s for s in seen) else "no")
'''


def test_parent_only_variables_are_unreadable(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_parent-only-value-123456")
    monkeypatch.setenv("UNLISTED_VAR", "parent-only-value-unlisted")
    repo = repo_for(tmp_path, READ_PARENT_ENV)
    out = run_suite(RunOptions(repo=repo))
    finals = [json.loads(p.read_text())["final_text"] for p in (out.run_dir / "transcripts").glob("*.json")]
    assert finals and all("FOUND:no" in t for t in finals)
    written = b"".join(p.read_bytes() for p in out.run_dir.rglob("*") if p.is_file())
    assert b"parent-only-value" not in written


def test_a_program_inside_the_repository_is_a_plan_time_error(tmp_path: Path) -> None:
    from rubricgate.errors import GateInputError
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    inside = write_reviewer(repo / "tools")
    use_reviewer(repo, inside)
    with pytest.raises(GateInputError) as err:
        run_suite(RunOptions(repo=repo))
    assert "sandbox hides" in err.value.one_line() and "agent.command" in err.value.one_line()


def test_sandbox_bwrap_without_bubblewrap_is_exit_2(tmp_path: Path, monkeypatch) -> None:
    from rubricgate.errors import GateInputError
    repo = repo_for(tmp_path, "")
    monkeypatch.setattr("rubricgate.isolation.sandbox.shutil.which", lambda *a, **k: None)
    with pytest.raises(GateInputError) as err:
        run_suite(RunOptions(repo=repo))
    assert "agent.sandbox" in err.value.one_line() and "not installed" in err.value.one_line()


def test_auto_requires_bubblewrap_in_ci_and_out(tmp_path: Path, monkeypatch) -> None:
    from rubricgate.errors import GateInputError
    repo = repo_for(tmp_path, "", sandbox="auto")
    monkeypatch.setattr("rubricgate.isolation.sandbox.shutil.which", lambda *a, **k: None)
    for ci in ("true", "false"):  # copy-only is a choice, never a fallback
        monkeypatch.setenv("CI", ci)
        with pytest.raises(GateInputError) as err:
            run_suite(RunOptions(repo=repo))
        assert "agent.sandbox: none" in err.value.one_line()


def test_copy_only_on_purpose_is_said_out_loud(tmp_path: Path) -> None:
    repo = repo_for(tmp_path, "", sandbox="none")
    out = run_suite(RunOptions(repo=repo))
    assert out.summary.isolation == "copy-only" and "agent.sandbox is none" in out.summary.isolation_reason
    assert any("copy-only" in w for w in out.summary.decision.warnings)
    for report in ("comment.md", "report.html"):  # said loudly wherever the result is read
        assert "copy-only isolation" in (out.run_dir / report).read_text()
    from rubricgate.reports.terminal import render_terminal
    assert "copy-only isolation" in render_terminal(out.summary, str(out.run_dir))


@pytest.mark.parametrize("network, expected", [("shared", "NET:connected"), ("none", "NET:ConnectionRefusedError")])
def test_the_sandbox_cuts_the_network_when_asked(tmp_path: Path, network: str, expected: str) -> None:
    import socket
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    attack = f"""
import socket
s = socket.socket(); s.settimeout(5)
try:
    s.connect(("127.0.0.1", {server.getsockname()[1]})); note = "NET:connected"
except OSError as exc:
    note = "NET:" + type(exc).__name__
"""
    repo = make_repo(tmp_path / "repo", fixtures=["block/data-loader"])
    use_reviewer(repo, write_reviewer(tmp_path / "agents", attack), sandbox_network=network)
    try:
        out = run_suite(RunOptions(repo=repo))
    finally:
        server.close()
    text = json.loads(next((out.run_dir / "transcripts").glob("*.json")).read_text())["final_text"]
    assert expected in text


def _zombie_children() -> set[int]:
    out = subprocess.run(["ps", "-o", "pid=,stat=", "--ppid", str(os.getpid())], capture_output=True, text=True).stdout
    return {int(pid) for pid, stat in (line.split() for line in out.splitlines()) if stat.startswith("Z")}


def test_a_sandboxed_run_leaves_no_zombie_in_a_process_that_adopts_orphans(tmp_path: Path) -> None:
    # bwrap exits without reaping its namespace's init; in a subreaper (a caller that adopts
    # orphans itself, a run with a copy-only agent too) each trial would leave one zombie behind,
    # 2,000 on a 2,000-trial run.
    adopt_orphans()
    repo = repo_for(tmp_path, "pass")
    before = _zombie_children()
    out = run_suite(RunOptions(repo=repo, trials=3))
    assert out.exit_code == 0 and out.summary.isolation == "bwrap"
    assert _zombie_children() - before == set()


LOOK_FOR_CACHE = r'''
import os
seen = os.listdir("CACHEDIR") if os.path.isdir("CACHEDIR") else []
note = "CACHE-SEEN:" + (",".join(seen) if seen else "nothing")
'''


def test_a_cache_made_after_an_earlier_run_in_the_same_process_is_hidden(tmp_path: Path) -> None:
    # Outside HOME and /tmp (which the sandbox covers wholesale), so only hiding it by name
    # keeps it from the agent. The first run has no cache folder yet; a later run in the same
    # process (compare, a test session) makes it: what the sandbox hides is looked at each time.
    cache = Path(tempfile.mkdtemp(prefix="rg-cache-attack-", dir="/var/tmp"))
    cache.rmdir()
    try:
        repo = repo_for(tmp_path, LOOK_FOR_CACHE.replace("CACHEDIR", str(cache)))
        run_suite(RunOptions(repo=repo, cache_dir=cache))
        assert not cache.exists()  # the first run made no cache folder, or this proves nothing
        out = run_suite(RunOptions(repo=repo, cache=True, cache_dir=cache))
        assert any(cache.iterdir())  # the cache holds something to see (its signing key at least)
        finals = [json.loads(p.read_text())["final_text"] for p in (out.run_dir / "transcripts").glob("*.json")]
        assert finals and all("CACHE-SEEN:nothing" in t for t in finals), finals
    finally:
        shutil.rmtree(cache, ignore_errors=True)
