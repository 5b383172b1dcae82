"""Record REAL OpenCode / Codex streams against the scripted OpenAI server, for parser tests.

    python tests/e2e/record_openai_clis.py opencode|codex [scenario ...]

Each scenario runs the real CLI through its rubricgate adapter (so the argv, config and
environment are the ones the harness uses) and copies the raw stream into
tests/data/transcripts/<agent>/<scenario>.ndjson, with a .meta.json saying how it ended
(and, for Codex, the session rollout as <scenario>.rollout.jsonl).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from rubricgate.agents import get_agent
from rubricgate.agents.base import AgentRequest
from rubricgate.models.config import AgentConfig

sys.path.insert(0, str(Path(__file__).parent))
from openai_server import (  # noqa: E402
    Scenario,
    ScriptedServer,
    answer,
    bash,
    glob,
    grep,
    http_error,
    malformed,
    read,
    truncated,
    verdict_text,
    write,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "transcripts"
ALLOWED = ["read", "grep", "glob"]
MAX_STEPS = 6


def skill(name: str) -> str:
    return f"fixtures/pass/{name}/SKILL.md"


def done(name: str) -> object:
    return answer(verdict_text("PASS", [skill(name)]))


SCENARIOS: dict[str, list] = {
    "review_ok": [read(skill("review_ok")), grep("sk-", "fixtures/pass/review_ok"),
                  glob("fixtures/pass/review_ok/references/*"), done("review_ok")],
    "forbidden_tool": [bash("touch fixtures/pass/forbidden_tool/NOTES.md"), done("forbidden_tool")],
    "write_denied": [write("fixtures/pass/write_denied/NOTES.md", "x"), done("write_denied")],
    "permission_denied": [read("/etc/hostname"), done("permission_denied")],
    "missing_file": [read("fixtures/pass/missing_file/NOPE.md"), done("missing_file")],
    "max_turns": [read(skill("max_turns"))],
    "malformed_verdict": [read(skill("malformed_verdict")),
                          answer('Done.\n```json\n{"tier": "MAYBE", "findings": 3}\n```\n')],
    "api_error": [http_error(500)],
    "api_error_400": [http_error(400, "scripted invalid request")],
    "malformed_stream": [malformed()],
    "truncated_stream": [truncated()],  # every stream stops short (no finish reason, no [DONE])
}


def scenarios() -> list[Scenario]:
    return [Scenario(f"fixtures/pass/{name}/", turns, repeat_last=name in ("max_turns", "truncated_stream"))
            for name, turns in SCENARIOS.items()]


def make_workspace(ws: Path, name: str) -> None:
    """A copy of the reviewer plus one sample skill listed in the changed-files file."""
    shutil.copytree(ROOT / "reviewer", ws / "reviewer")
    folder = ws / "fixtures" / "pass" / name
    (folder / "references").mkdir(parents=True)
    shutil.copy(ROOT / "fixtures" / "pass" / "weekly-revenue-summary" / "SKILL.md", folder / "SKILL.md")
    (folder / "references" / "a.md").write_text("reference\n")
    (ws / "reviewer" / ".changed-skills.txt").write_text(skill(name) + "\n")


def record(agent_name: str, names: list[str]) -> None:
    agent = get_agent(agent_name, AgentConfig(name=agent_name, model="scripted"))
    out = DATA / agent_name
    out.mkdir(parents=True, exist_ok=True)
    with ScriptedServer(scenarios()) as server, tempfile.TemporaryDirectory() as tmp:
        for name in names:
            ws, scratch = Path(tmp) / name / "ws", Path(tmp) / name / "scratch"
            make_workspace(ws, name)
            request = AgentRequest(
                case_id=name, trial=1, workspace=ws, prompt_file=ws / "reviewer/prompts/evaluate.md",
                rubric_file=ws / "reviewer/evaluator/references/rubric.md",
                changed_files_file=ws / "reviewer/.changed-skills.txt", scratch=scratch,
                allowed_tools=ALLOWED, max_steps=MAX_STEPS, timeout_s=120,
                env={"PATH": "/usr/local/bin:/usr/bin:/bin", "OPENAI_BASE_URL": server.base_url},
                model="scripted")
            transcript = agent.run(request)
            shutil.copy(request.raw_stream_file, out / f"{name}.ndjson")
            rollout = scratch / "codex-rollout.jsonl"
            if rollout.is_file():
                shutil.copy(rollout, out / f"{name}.rollout.jsonl")
            meta = {"exit_code": transcript.exit_code, "timed_out": transcript.termination == "timeout",
                    "stopped": transcript.error if transcript.error.startswith("stopped by") else "",
                    "cli_version": transcript.agent_version, "allowed_tools": ALLOWED,
                    "max_steps": MAX_STEPS, "recorded_with": "tests/e2e/record_openai_clis.py"}
            (out / f"{name}.meta.json").write_text(json.dumps(meta, indent=2) + "\n")
            print(name, transcript.termination, transcript.steps, transcript.error[:80])


if __name__ == "__main__":
    record(sys.argv[1], sys.argv[2:] or list(SCENARIOS))
