"""A fake agent CLI on PATH and a one-fixture repository that reviews with it in the sandbox: what
the retry attacks of tests/faults use (a first attempt that plants something, then crashes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.conftest import git, make_repo


def repo_with_fake_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, script: str) -> Path:
    """Install `script` as the CLI `name` first on PATH; a repository whose agent is that CLI under
    bubblewrap, without preflight, committed."""
    prefix = tmp_path / f"{name}-prefix" / "bin"
    prefix.mkdir(parents=True)
    (prefix / name).write_text(script)
    (prefix / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{prefix}{os.pathsep}{os.environ['PATH']}")
    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary"])
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"] = {"name": name, "timeout_s": 60, "sandbox": "bwrap", "preflight": False}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", name)
    return repo
