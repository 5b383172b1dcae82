"""Record REAL OpenCode streams under permission configs the adapter never writes itself,
for the parser's edge cases (a `command` agent may run OpenCode with its user's own config):

- ask_ends_run: bash set to "ask" - a non-interactive run ends after the step that called it;
- invalid_tool: every tool allowed but bash denied - OpenCode reports the call as tool "invalid"
  with the real name in state.input.tool.

    python tests/e2e/record_opencode_permissions.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from rubricgate.agents import get_agent, opencode
from rubricgate.agents.base import AgentRequest
from rubricgate.models.config import AgentConfig

sys.path.insert(0, str(Path(__file__).parent))
from openai_server import Scenario, ScriptedServer, answer, bash, verdict_text  # noqa: E402
from record_openai_clis import DATA, make_workspace, skill  # noqa: E402

PERMISSIONS = {
    "ask_ends_run": {"*": "deny", "read": "allow", "grep": "allow", "glob": "allow", "bash": "ask"},
    "invalid_tool": {"*": "allow", "bash": "deny", "edit": "deny", "external_directory": "deny"},
}


def turns(name: str) -> list:
    return [bash(f"ls fixtures/pass/{name}"), answer(verdict_text("PASS", [skill(name)]))]


def record() -> None:
    agent = get_agent("opencode", AgentConfig(name="opencode", model="scripted"))
    out = DATA / "opencode"
    scenarios = [Scenario(f"fixtures/pass/{name}/", turns(name)) for name in PERMISSIONS]
    with ScriptedServer(scenarios) as server, tempfile.TemporaryDirectory() as tmp:
        for name, perms in PERMISSIONS.items():
            ws, scratch = Path(tmp) / name / "ws", Path(tmp) / name / "scratch"
            make_workspace(ws, name)
            opencode.permissions = lambda allowed, perms=perms: dict(perms)  # this recording's config
            request = AgentRequest(
                case_id=name, trial=1, workspace=ws, prompt_file=ws / "reviewer/prompts/evaluate.md",
                rubric_file=ws / "reviewer/evaluator/references/rubric.md",
                changed_files_file=ws / "reviewer/.changed-skills.txt", scratch=scratch,
                allowed_tools=["read", "grep", "glob"], max_steps=6, timeout_s=120,
                env={"PATH": "/usr/local/bin:/usr/bin:/bin", "OPENAI_BASE_URL": server.base_url}, model="scripted")
            transcript = agent.run(request)
            shutil.copy(request.raw_stream_file, out / f"{name}.ndjson")
            meta = {"exit_code": transcript.exit_code, "timed_out": transcript.termination == "timeout",
                    "stopped": "", "cli_version": transcript.agent_version, "allowed_tools": ["read", "grep", "glob"],
                    "max_steps": 6, "permission": perms, "recorded_with": "tests/e2e/record_opencode_permissions.py"}
            (out / f"{name}.meta.json").write_text(json.dumps(meta, indent=2) + "\n")
            print(name, transcript.termination, transcript.steps, transcript.error[:80])


if __name__ == "__main__":
    record()
