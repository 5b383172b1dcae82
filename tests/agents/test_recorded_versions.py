"""Every recorded Claude Code version parses to the same normalized transcripts.

tests/data/transcripts/claude/ holds the 2.1.112 recordings (the oldest tested, pure JS) and
claude-<version>/ the newest tested (recorded with `python -m tests.e2e.record_claude --bin
/opt/rubricgate-agents/claude-<version>/bin --out claude-<version>`). The old ones stay as
regression fixtures: the adapter must keep parsing the streams of every version in range.
"""

from __future__ import annotations

import json

import pytest

from rubricgate.agents.claude import parse_claude_stream
from rubricgate.agents.support import version_ranges
from tests.agent_recordings import DATA, replay_recording

FOLDERS = sorted(p.name for p in DATA.glob("claude*") if p.is_dir())
R, D = "ok", "denied"
# recording -> (termination, steps, [(normalized tool, status), ...])
EXPECTED = {
    "review_ok": ("completed", 4, [("read", R), ("read", R), ("grep", R), ("glob", R)]),
    "forbidden_tool": ("completed", 4, [("read", R), ("bash", D), ("read", R)]),
    "max_turns": ("max_turns", 3, [("read", R), ("glob", R), ("glob", R)]),
    "max_turns_after_verdict": ("max_turns", 2, [("read", R), ("read", R)]),
    "malformed_verdict": ("completed", 3, [("read", R), ("read", R)]),
    "api_error": ("api_error", 1, [("read", R)]),
    "api_error_retries": ("api_error", 1, [("read", R)]),
    "permission_denied": ("completed", 4, [("read", R), ("read", D), ("write", D)]),
    "leak_key": ("completed", 2, [("read", R)]),
    "timeout": ("timeout", 1, [("read", R)]),
}


def replay(folder: str, name: str):
    return replay_recording(folder, name, lambda d, m: parse_claude_stream(d, allowed=m["allowed_tools"]))


def test_the_oldest_and_newest_tested_versions_are_both_recorded() -> None:
    claude = version_ranges()["claude"]
    versions = {json.loads((DATA / f / "review_ok.meta.json").read_text())["cli_version"].split()[0] for f in FOLDERS}
    assert {claude.oldest, claude.newest} <= versions, (
        f"record the newest: python -m tests.e2e.record_claude --bin .../claude-{claude.newest}/bin "
        f"--out claude-{claude.newest}")


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_version_normalizes_alike(folder: str, name: str) -> None:
    termination, steps, calls = EXPECTED[name]
    t = replay(folder, name)
    assert (t.termination, t.steps) == (termination, steps), t.error
    assert [(c.name, c.status) for c in t.tool_calls] == calls


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_version_keeps_the_verdict_and_reads_the_limit_and_error(folder: str) -> None:
    assert '"tier": "PASS"' in replay(folder, "max_turns_after_verdict").final_text
    assert "maximum number of turns (3)" in replay(folder, "max_turns").error
    assert replay(folder, "api_error").error.startswith("API 400")
    assert "```json" in replay(folder, "review_ok").final_text
