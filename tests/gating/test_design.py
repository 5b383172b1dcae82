"""gating/design.py: the digest of the agent's program and environment a baseline records (agent_setup)."""

from __future__ import annotations

import os
from pathlib import Path

from rubricgate.gating.design import agent_setup
from rubricgate.models.config import Config

CLAUDE = Config.model_validate({"agent": {"name": "claude"}})


def _install(prefix: Path, body: bytes) -> Path:
    """A `claude` executable under prefix/bin, as a fresh install of it is."""
    cli = prefix / "bin" / "claude"
    cli.parent.mkdir(parents=True)
    cli.write_bytes(body)
    cli.chmod(0o755)
    return cli


def _setup_with(monkeypatch, repo: Path, config: Config, agent: str, *first_on_path: Path) -> str:
    monkeypatch.setenv("PATH", os.pathsep.join([*map(str, first_on_path), os.environ["PATH"]]))
    return agent_setup(repo, config, agent)


def test_a_different_program_is_another_setup(tmp_path: Path, monkeypatch) -> None:
    first = _install(tmp_path / "a", b"#!/bin/sh\necho 2.1.337\n")
    other = _install(tmp_path / "b", b"#!/bin/sh\necho 2.1.338\n")
    assert (_setup_with(monkeypatch, tmp_path, CLAUDE, "claude", first.parent)
            != _setup_with(monkeypatch, tmp_path, CLAUDE, "claude", other.parent))


def test_the_same_cli_installed_elsewhere_is_the_same_setup(tmp_path: Path, monkeypatch) -> None:
    """A CI runner's fresh install of the same CLI (another prefix) was another setup: a baseline
    measured on a laptop was never pooled with a CI run's trials, only replaced by them."""
    here = _install(tmp_path / "laptop", b"#!/bin/sh\necho 2.1.337\n")
    there = _install(tmp_path / "runner", b"#!/bin/sh\necho 2.1.337\n")
    repo = tmp_path / "repo"
    assert (_setup_with(monkeypatch, repo, CLAUDE, "claude", here.parent)
            == _setup_with(monkeypatch, repo, CLAUDE, "claude", there.parent))


def test_a_large_cli_reinstalled_unchanged_is_the_same_setup(tmp_path: Path, monkeypatch) -> None:
    """Claude Code's native CLI (400 MB) is fingerprinted by its edges: its times and inode made
    every reinstall of the same bytes another setup, so no two CI jobs' runs ever pooled."""
    from rubricgate.runner import cache_inputs

    monkeypatch.setattr(cache_inputs, "HASH_WHOLE_BYTES", 64)
    monkeypatch.setattr(cache_inputs, "EDGE_BYTES", 16)
    cli = _install(tmp_path / "p", b"#!/bin/sh\n" + b"x" * 200)
    before = _setup_with(monkeypatch, tmp_path, CLAUDE, "claude", cli.parent)
    cli.unlink()
    _install(tmp_path / "p2", b"#!/bin/sh\n" + b"x" * 200).rename(cli)  # reinstalled: new inode and times
    os.utime(cli, (1_000_000, 1_000_000))
    assert _setup_with(monkeypatch, tmp_path, CLAUDE, "claude", cli.parent) == before


def test_a_command_reviewer_s_script_in_a_clone_elsewhere_is_the_same_setup(tmp_path: Path, monkeypatch) -> None:
    """A `command` reviewer's script in the repository was digested by its absolute path: the
    same commit checked out in CI's folder was another setup than in a developer's."""
    config = Config.model_validate({"agent": {"name": "command", "command": ["sh", "{workspace}/review.sh"]}})
    setups = []
    for clone in ("dev/repo", "ci/work/repo"):
        (tmp_path / clone).mkdir(parents=True)
        (tmp_path / clone / "review.sh").write_text("echo '{\"verdict\": \"PASS\"}'\n")
        setups.append(_setup_with(monkeypatch, tmp_path / clone, config, "command"))
    assert setups[0] == setups[1]
    (tmp_path / "ci/work/repo/review.sh").write_text("echo '{\"verdict\": \"BLOCK\"}'\n")
    assert _setup_with(monkeypatch, tmp_path / "ci/work/repo", config, "command") != setups[0]


def test_a_password_passed_to_the_agent_is_no_part_of_the_setup(tmp_path: Path, monkeypatch) -> None:
    """A proxy URL's password, and a variable named as a credential, passed through
    agent.env_allowlist were digested into the setup a committed baseline.json keeps: a fast
    offline check of a guessed password, and a rotated one was another setup (never pooled)."""
    config = Config.model_validate({"agent": {"name": "builtin", "env_allowlist": [
        "PATH", "HTTPS_PROXY", "REVIEW_ENDPOINT", "WAREHOUSE_PASSWORD"]}})

    def setup(password: str, proxy: str = "proxy.example:3128", endpoint: str = "https://models.example/strong") -> str:
        monkeypatch.setenv("HTTPS_PROXY", f"http://ci:{password}@{proxy}")
        monkeypatch.setenv("WAREHOUSE_PASSWORD", password)
        monkeypatch.setenv("REVIEW_ENDPOINT", endpoint)
        return agent_setup(tmp_path, config, "builtin")

    first = setup("hunter2")
    assert setup("rotated-9") == first
    assert setup("hunter2", endpoint="https://models.example/cheap") != first  # another model
    assert setup("hunter2", proxy="other.example:3128") != first  # another proxy, as before


def test_an_endpoint_variable_set_empty_is_the_same_setup_as_unset(tmp_path: Path, monkeypatch) -> None:
    """Actions sets `ANTHROPIC_BASE_URL: ${{ vars.ANTHROPIC_BASE_URL }}` (init's workflows) to ''
    when the repository defines no such variable, and the CLI then goes to its default endpoint
    as on a laptop where it is unset: the CI run was another setup, replacing the laptop's
    baseline trials instead of pooling them."""
    config = Config.model_validate({"agent": {"name": "builtin", "env_allowlist": ["PATH", "ANTHROPIC_BASE_URL"]}})
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    laptop = agent_setup(tmp_path, config, "builtin")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "")
    assert agent_setup(tmp_path, config, "builtin") == laptop
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8080")
    assert agent_setup(tmp_path, config, "builtin") != laptop  # another endpoint is still another setup
