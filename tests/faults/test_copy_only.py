"""Issue 28, finding 14: copy-only is a choice, never a fallback, and it trusts nothing.

`agent.sandbox: auto` without a usable bubblewrap silently ran copy-only outside CI. Copy-only,
the reviewer could read the cache's signing key (and forge entries) and the harness's whole
environment (GITHUB_TOKEN), which reached the reports. Now `auto` fails with the fix; a
copy-only run uses no cache and scrubs the whole parent environment from what it writes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rubricgate.isolation.sandbox import SandboxUnavailable, resolve_isolation
from tests.conftest import git, make_repo
from tests.faults.reviewers import use_reviewer, write_reviewer

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]
TOKEN = "ghp_parentEnvToken0123456789abcdef"

READ_PARENT_ENV = r'''
import os
environ = open(f"/proc/{os.getppid()}/environ", "rb").read().split(b"\0")
token = next(v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"GITHUB_TOKEN="))
note = f"found {token} in the harness's environment"
'''


@pytest.mark.parametrize("ci", ["", "true"])
def test_auto_without_bubblewrap_fails_with_the_fix(ci: str) -> None:
    with pytest.raises(SandboxUnavailable) as err:
        resolve_isolation("auto", env={"CI": ci}, probe=lambda: "bubblewrap (bwrap) is not installed")
    assert "agent.sandbox: none" in str(err.value) and "install bubblewrap" in str(err.value)
    assert resolve_isolation("none", probe=lambda: "missing") == ("copy-only", "agent.sandbox is none")


def test_copy_only_scrubs_the_parent_environment_and_uses_no_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    script = write_reviewer(tmp_path / "agents", READ_PARENT_ENV)
    use_reviewer(repo, script, sandbox="none")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "reviewer")
    # A harness started with the token, as a CI job is (its /proc entry shows its start environment).
    env = {**os.environ, "GITHUB_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo), "--cache",
                           "--cache-dir", str(cache)], env=env, capture_output=True, text=True, timeout=300)
    assert TOKEN[:12] not in done.stdout + done.stderr
    [run_dir] = list((repo / "reports").iterdir())
    finals = [json.loads(p.read_text())["final_text"] for p in (run_dir / "transcripts").glob("*.json")]
    assert finals and all("found [REDACTED]" in f for f in finals), finals  # the reviewer did read it
    written = [p for p in run_dir.rglob("*") if p.is_file() and TOKEN[:12] in p.read_text(errors="replace")]
    assert written == []
    assert not any(p.is_file() and p.name != "hmac-key" for p in cache.rglob("*"))  # no entry to forge or reuse
    summary = json.loads((run_dir / "summary.json").read_text())
    assert "the cache was not used" in summary["decision"]["warnings"][0]
