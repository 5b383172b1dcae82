"""A failed attempt leaves links in its scratch folder; the retry's settings never go through them.

A retry runs in the same scratch folder (HOME, the CLI's settings). The harness, outside the
sandbox, wrote each CLI's settings there again before the next attempt, following whatever the
failed attempt had left: `home/.qwen -> /etc` or `opencode/opencode.json -> ~/.bashrc`, and a root
harness overwrote a host file no sandbox shows. It must replace such a link, never follow it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rubricgate.agents import get_agent
from rubricgate.agents.base import AgentRequest
from rubricgate.models.config import AgentConfig
from rubricgate.pipeline import RunOptions, run_suite
from tests.fake_cli import repo_with_fake_cli

HOST_TEXT = "a host file no sandbox shows\n"


class _Launched(Exception):
    """Stands for the CLI's run: what the harness wrote before it is what is checked."""


def _request(tmp_path: Path) -> AgentRequest:
    ws, scratch = tmp_path / "ws", tmp_path / "scratch"
    for folder in (ws, scratch / "home"):
        folder.mkdir(parents=True)
    prompt = ws / "prompt.md"
    prompt.write_text("review\n")
    return AgentRequest(case_id="c", trial=1, workspace=ws, prompt_file=prompt, rubric_file=prompt,
                        changed_files_file=prompt, scratch=scratch, allowed_tools=["read"], max_steps=5)


def _attempt(agent, request: AgentRequest) -> None:
    with pytest.raises(_Launched):
        agent.execute(request, agent.argv(request, "review"))


def _plant(scratch: Path, host: Path) -> None:
    """What a hostile first attempt leaves: each file the harness wrote becomes a link to a host
    file, and each folder of its own a link to the host's folder."""
    written = sorted(p for p in scratch.rglob("*") if p.is_file() or p.is_fifo())
    for n, path in enumerate(written):
        path.unlink()
        path.symlink_to(host / f"file-{n}")
        (host / f"file-{n}").write_text(HOST_TEXT)
    for folder in sorted({p.parent for p in written} - {scratch, scratch / "home"}, reverse=True):
        folder.rename(folder.with_name(folder.name + ".was"))
        folder.symlink_to(host)


@pytest.mark.parametrize("name", ["codex", "gemini", "opencode", "qwen"])
def test_settings_written_again_for_a_retry_never_go_through_a_link(tmp_path: Path, monkeypatch, name: str) -> None:
    agent = get_agent(name, AgentConfig(name=name))
    monkeypatch.setattr(type(agent), "launch", lambda *a, **k: (_ for _ in ()).throw(_Launched()))
    request, host = _request(tmp_path), tmp_path / "host"
    host.mkdir()
    _attempt(agent, request)
    _plant(request.scratch, host)
    _attempt(agent, request)
    assert {p.name: p.read_text() for p in host.iterdir()} == {p.name: HOST_TEXT for p in host.iterdir()}
    assert not any(p.is_symlink() for p in request.scratch.rglob("*") if not p.parent.name.endswith(".was"))


FAKE_OPENCODE = """#!/bin/sh
case "$1" in --version) echo 1.18.33; exit 0;; esac
folder=$(dirname "$OPENCODE_CONFIG")
if [ ! -e "$folder.was" ]; then
  mv "$folder" "$folder.was" && mkdir "$folder" && ln -s VICTIM "$OPENCODE_CONFIG"
  kill -SEGV $$
fi
exit 0
"""


def test_a_sandboxed_attempt_cannot_have_the_retry_overwrite_a_host_file(tmp_path: Path, monkeypatch,
                                                                        bwrap_ready) -> None:
    victim = tmp_path / "host" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text(HOST_TEXT)
    repo = repo_with_fake_cli(tmp_path, monkeypatch, "opencode", FAKE_OPENCODE.replace("VICTIM", str(victim)))
    out = run_suite(RunOptions(repo=repo))
    assert victim.read_text() == HOST_TEXT
    transcript = (out.run_dir / "transcripts" / "fixture-weekly-revenue-summary-1.json").read_text()
    assert '"failure": "signal"' in transcript  # the first attempt crashed, and was retried
