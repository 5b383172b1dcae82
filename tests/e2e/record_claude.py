"""Record real Claude Code stream-json transcripts into tests/data/transcripts/claude/.

    python -m tests.e2e.record_claude [--bin DIR] [--out NAME] [recording ...]

--bin puts an installed version's bin folder first on PATH (e.g. the newest:
/opt/rubricgate-agents/claude-2.1.337/bin, from .ci/install-agents.sh) and --out names the folder
under tests/data/transcripts (default `claude`, the 2.1.112 recordings; the newest go to
`claude-<version>`, and tests/agents/test_recorded_versions.py parses every such folder).

Each recording is the exact stdout of the installed `claude` CLI, run through ClaudeAgent
(so with the adapter's real flags) against the scripted Anthropic server. A `.meta.json`
beside each stream keeps the exit code, CLI version and the request's limits, which the
recorded-transcript tests use to replay the adapter's parse + finish step.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.claude import ClaudeAgent
from rubricgate.models.config import AgentConfig
from rubricgate.isolation.sandbox import SandboxPolicy
from tests.e2e import claude_scenarios as sc
from tests.e2e.anthropic_server import ScriptedAnthropicServer

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "transcripts"
SECRET = "sk-ant-scripted-0123456789abcdef"
SKILL = "fixtures/block/no-description/SKILL.md"

# name -> (behaviour, allowed tools, max steps, timeout, extra env)
RECORDINGS = {
    "review_ok": (sc.review_correctly, ["read", "grep", "glob"], 10, 60, {}),
    "forbidden_tool": (sc.forbidden_tool, ["read", "grep", "glob"], 10, 60, {}),
    "max_turns": (sc.exceed_steps, ["read", "grep", "glob"], 3, 60, {}),
    "max_turns_after_verdict": (sc.verdict_then_tool, ["read", "grep", "glob"], 2, 60, {}),
    "malformed_verdict": (sc.malformed_verdict, ["read", "grep", "glob"], 10, 60, {}),
    "api_error": (sc.api_error, ["read", "grep", "glob"], 10, 60, {}),
    "api_error_retries": (sc.api_error_retryable, ["read", "grep", "glob"], 10, 60,
                          {"CLAUDE_CODE_MAX_RETRIES": "1"}),
    "permission_denied": (sc.permission_denied, ["read", "grep", "glob", "write"], 10, 60, {}),
    "leak_key": (sc.leak_key, ["read", "grep", "glob"], 10, 60, {}),
    "timeout": (sc.slow, ["read", "grep", "glob"], 10, 6, {}),
}


def make_workspace(root: Path, skill_rel: str = SKILL) -> Path:
    """A minimal reviewed tree: the real prompt, the changed list and one skill."""
    ws = root / "ws"
    shutil.copytree(ROOT / "reviewer", ws / "reviewer",
                    ignore=shutil.ignore_patterns(".changed-skills.txt"))
    skill = ws / skill_rel
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: no-description\n---\n# Loader\n\nLoad the data.\n")
    (ws / "reviewer" / ".changed-skills.txt").write_text(skill_rel + "\n")
    return ws


def request_for(ws: Path, scratch: Path, base_url: str, allowed: list[str], max_steps: int,
                timeout_s: float, extra_env: dict[str, str], sandbox: SandboxPolicy | None = None) -> AgentRequest:
    """An AgentRequest the way the scheduler builds one, pointed at the scripted server
    (inside bubblewrap when `sandbox` says so; recordings are made without)."""
    env = {"PATH": os.environ["PATH"], "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": SECRET,
           **extra_env}
    return AgentRequest(case_id="rec", trial=1, workspace=ws, prompt_file=ws / "reviewer/prompts/evaluate.md",
                        rubric_file=ws / "reviewer/evaluator/references/rubric.md",
                        changed_files_file=ws / "reviewer/.changed-skills.txt", scratch=scratch,
                        allowed_tools=allowed, max_steps=max_steps, timeout_s=timeout_s, env=env,
                        sandbox=sandbox)


def record(name: str, out: Path) -> None:
    behaviour, allowed, max_steps, timeout_s, extra_env = RECORDINGS[name]
    with tempfile.TemporaryDirectory() as tmp, \
            ScriptedAnthropicServer(sc.script_for({}, default=behaviour)) as server:
        ws = make_workspace(Path(tmp))
        req = request_for(ws, Path(tmp) / "scratch", server.base_url, allowed, max_steps, timeout_s, extra_env)
        agent = ClaudeAgent(AgentConfig(name="claude"))
        transcript = agent.run(req)
        out.mkdir(parents=True, exist_ok=True)
        # Make recordings machine-independent: the temp workspace path becomes a fixed one.
        stream = req.raw_stream_file.read_text().replace(str(ws), "/workspace")
        (out / f"{name}.ndjson").write_text(stream)
        meta = {"exit_code": transcript.exit_code, "cli_version": agent.version(),
                "allowed_tools": allowed, "max_steps": max_steps, "timed_out": transcript.termination == "timeout",
                "recorded_with": "python -m tests.e2e.record_claude (real claude CLI, scripted server)"}
        (out / f"{name}.meta.json").write_text(json.dumps(meta, indent=2) + "\n")
        print(f"{name}: {transcript.termination} steps={transcript.steps} exit={transcript.exit_code}")


def main() -> None:
    parser = argparse.ArgumentParser(description="record real Claude Code streams")
    parser.add_argument("--bin", help="an installed version's bin folder, put first on PATH")
    parser.add_argument("--out", default="claude", help="folder under tests/data/transcripts")
    parser.add_argument("names", nargs="*", help=f"recordings (default all): {', '.join(RECORDINGS)}")
    args = parser.parse_args()
    unknown = set(args.names) - set(RECORDINGS)
    if unknown:
        parser.error(f"unknown recording(s): {', '.join(sorted(unknown))}")
    if args.bin:
        os.environ["PATH"] = f"{args.bin}:{os.environ['PATH']}"
    for rec_name in args.names or list(RECORDINGS):
        record(rec_name, DATA / args.out)


if __name__ == "__main__":
    main()
