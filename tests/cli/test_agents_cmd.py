"""`rubricgate agents` lists every adapter with PATH presence, version and tested range."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from rubricgate.agents.support import version_ranges
from rubricgate.cli import main


def fake_cli(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)


def run_agents(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin/no-such-dir")
    result = CliRunner().invoke(main, ["agents"])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.stdout.splitlines()}
    return result, lines


def test_agents_lists_found_missing_and_broken_version(tmp_path: Path, monkeypatch) -> None:
    fake_cli(tmp_path, "claude", "echo '9.9.9 (Claude Code)'")
    fake_cli(tmp_path, "codex", "exit 4")
    _, lines = run_agents(tmp_path, monkeypatch)
    assert set(lines) >= {"AGENT", "builtin", "claude", "cortex", "opencode", "codex", "command", "replay"}
    assert "9.9.9 (Claude Code)" in lines["claude"] and str(tmp_path / "claude") in lines["claude"]
    assert "not on PATH" in lines["cortex"] and "not on PATH" in lines["opencode"]
    assert "--version failed" in lines["codex"]


def test_untested_version_is_flagged_in_the_table_and_warned_about(tmp_path: Path, monkeypatch) -> None:
    fake_cli(tmp_path, "claude", "echo '9.9.9 (Claude Code)'")
    result, lines = run_agents(tmp_path, monkeypatch)
    claude = version_ranges()["claude"]
    assert lines["AGENT"].split() == ["AGENT", "BINARY", "VERSION", "TESTED", "PATH", "STATUS"]
    assert f"{claude.oldest} - {claude.newest}" in lines["claude"] and "UNTESTED version" in lines["claude"]
    assert (f"warning: claude 9.9.9 (Claude Code) is outside the tested range {claude.label}"
            in result.stderr)


def test_tested_and_in_range_versions_do_not_warn(tmp_path: Path, monkeypatch) -> None:
    claude = version_ranges()["claude"]
    fake_cli(tmp_path, "claude", f"echo '{claude.newest} (Claude Code)'")
    codex = version_ranges()["codex"]
    fake_cli(tmp_path, "codex", f"echo 'codex-cli {codex.oldest}'")
    result, lines = run_agents(tmp_path, monkeypatch)
    assert "ok, tested version" in lines["claude"] and "ok, tested version" in lines["codex"]
    assert "warning" not in result.stderr
    assert "-" == lines["cortex"].split()[3]  # no tested range for a CLI CI does not install


def test_a_version_line_without_a_version_is_not_ok(tmp_path: Path, monkeypatch) -> None:
    fake_cli(tmp_path, "claude", "echo 'Claude Code (build abc)'")
    result, lines = run_agents(tmp_path, monkeypatch)
    assert "UNRECOGNISED version" in lines["claude"] and " ok" not in lines["claude"], lines["claude"]
    assert "could not be checked against the tested range" in result.stderr


def test_copilots_version_column_is_its_version_not_its_line(tmp_path: Path, monkeypatch) -> None:
    copilot = version_ranges()["copilot"]
    fake_cli(tmp_path, "copilot", f"echo 'GitHub Copilot CLI {copilot.newest}.'; echo \"Run 'copilot update'.\"")
    result, lines = run_agents(tmp_path, monkeypatch)
    assert lines["copilot"].split()[2] == copilot.newest and "GitHub" not in lines["copilot"], lines["copilot"]
    assert "ok, tested version" in lines["copilot"] and "warning" not in result.stderr
