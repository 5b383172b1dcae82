"""`rubricgate agents` lists every adapter with PATH presence and version."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from rubricgate.cli import main


def test_agents_lists_found_missing_and_broken_version(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "claude").write_text("#!/bin/sh\necho '9.9.9 (Claude Code)'\n")
    (tmp_path / "codex").write_text("#!/bin/sh\nexit 4\n")
    for f in tmp_path.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin/no-such-dir")
    result = CliRunner().invoke(main, ["agents"])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()}
    assert set(lines) >= {"builtin", "claude", "cortex", "opencode", "codex", "command", "replay"}
    assert "9.9.9 (Claude Code)" in lines["claude"] and str(tmp_path / "claude") in lines["claude"]
    assert "not on PATH" in lines["cortex"] and "not on PATH" in lines["opencode"]
    assert "--version failed" in lines["codex"]
