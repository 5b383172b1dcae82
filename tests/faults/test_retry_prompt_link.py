"""A failed attempt makes its copy's prompt file a link to a host file; the retry's prompt is not it.

A retry runs in the same workspace. The harness read the prompt from it again for each attempt,
outside the sandbox: where the workspace is a copy (--keep-workspaces, or no overlay), the first
attempt could replace `reviewer/prompts/evaluate.md` with a link to a file only the host's root
can read, crash, and be handed that file as its prompt on the retry (and send it to its model).
The prompt is read once, before any attempt ran.
"""

from __future__ import annotations

from pathlib import Path


from rubricgate.agents.base import AgentRequest
from rubricgate.pipeline import RunOptions, run_suite
from tests.fake_cli import repo_with_fake_cli

SECRET = "HOST-ONLY-7f3a9c"

FAKE_CLAUDE = """#!/usr/bin/python3
import json, os, signal, sys
if "--version" in sys.argv:
    print("2.1.332 (Claude Code)")
    sys.exit(0)
prompt = sys.argv[sys.argv.index("-p") + 1]
if not os.path.islink("reviewer/prompts/evaluate.md"):
    os.unlink("reviewer/prompts/evaluate.md")
    os.symlink("SECRET_FILE", "reviewer/prompts/evaluate.md")
    os.kill(os.getpid(), signal.SIGSEGV)
body = {"tier": "PASS", "summary": prompt[:300], "files_reviewed": [], "findings": []}
text = "```json\\n" + json.dumps(body) + "\\n```"
print(json.dumps({"type": "assistant", "message": {"id": "m1", "role": "assistant", "model": "x",
                  "content": [{"type": "text", "text": text}], "usage": {"input_tokens": 1, "output_tokens": 1}}}))
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1, "result": text}))
"""


def test_a_retry_is_not_given_a_host_file_linked_in_place_of_its_prompt(tmp_path: Path, monkeypatch,
                                                                        bwrap_ready) -> None:
    secret = tmp_path / "host" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    repo = repo_with_fake_cli(tmp_path, monkeypatch, "claude", FAKE_CLAUDE.replace("SECRET_FILE", str(secret)))
    out = run_suite(RunOptions(repo=repo, keep_workspaces=True))
    transcript = (out.run_dir / "transcripts" / "fixture-weekly-revenue-summary-1.json").read_text()
    assert '"failure": "signal"' in transcript and "Review the changed skills" in transcript  # retried, own prompt
    assert [p for p in out.run_dir.rglob("*") if p.is_file() and SECRET in p.read_text(errors="replace")] == []


def test_the_prompt_is_read_once_for_every_attempt(tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("the reviewer's prompt")
    request = AgentRequest(case_id="c", trial=1, workspace=tmp_path, prompt_file=prompt, rubric_file=prompt,
                           changed_files_file=prompt, scratch=tmp_path / "scratch")
    assert request.prompt_text() == "the reviewer's prompt"
    prompt.unlink()
    prompt.symlink_to(tmp_path / "elsewhere")
    assert request.prompt_text() == "the reviewer's prompt"
