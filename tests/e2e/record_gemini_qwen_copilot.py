"""Record REAL Gemini CLI, Qwen Code and Copilot CLI streams against the scripted servers.

    python -m tests.e2e.record_gemini_qwen_copilot gemini|qwen|copilot [--bin DIR] [--out NAME] [scenario ...]

Each scenario runs the installed CLI through its rubricgate adapter (so with the adapter's real
argv, settings and environment) against tests/e2e/gemini_server.py (Gemini CLI) or
tests/e2e/openai_server.py (chat/completions: Qwen Code, Copilot CLI's custom provider), and
copies the raw stream into tests/data/transcripts/<out>/<scenario>.ndjson with a .meta.json
saying how the process ended (and, for Copilot, its usage file as <scenario>.usage.json).
--bin puts an installed version's bin folder first on PATH (.ci/install-agents.sh installs them
under /opt/rubricgate-agents/<cli>-<version>); --out defaults to `<cli>-<version>`.
Paths of the temporary workspace are replaced by /workspace.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import tempfile
from pathlib import Path

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.cli import CliAgent
from rubricgate.agents.copilot import CopilotAgent
from rubricgate.agents.gemini import GeminiAgent
from rubricgate.agents.qwen import QwenAgent
from rubricgate.agents.support import parse_version
from rubricgate.models.config import AgentConfig
from tests.e2e.gemini_server import ScriptedGeminiServer
from tests.e2e.openai_server import Scenario, ScriptedServer, crash, glob, grep, read
from tests.e2e.record_openai_clis import SCENARIOS as OPENAI_SCENARIOS
from tests.e2e.record_openai_clis import done, make_workspace, skill

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "transcripts"
SECRET = "sk-scripted-recording-0123456789abcdef"
ALLOWED = ["read", "grep", "glob"]
MAX_STEPS = 5
ADAPTERS: dict[str, type[CliAgent]] = {"gemini": GeminiAgent, "qwen": QwenAgent, "copilot": CopilotAgent}


def endpoint_env(cli: str, base_url: str) -> dict[str, str]:
    """The variables pointing each CLI at the scripted server, as a user sets them."""
    return {"gemini": {"GOOGLE_GEMINI_BASE_URL": base_url, "GEMINI_API_KEY": SECRET},
            "qwen": {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": SECRET},
            "copilot": {"COPILOT_PROVIDER_BASE_URL": base_url, "COPILOT_PROVIDER_API_KEY": SECRET}}[cli]


# The OpenCode and Codex recordings' scenarios, with a turn limit reached by different calls each
# turn (Qwen Code's loop guard would stop a repeated identical call first) and a crash.
SCENARIOS: dict[str, list] = {
    **{name: turns for name, turns in OPENAI_SCENARIOS.items() if name != "missing_file"},
    "max_turns": [read(skill("max_turns")), glob("fixtures/pass/max_turns/*"), grep("x", "fixtures/pass/max_turns"),
                  read("fixtures/pass/max_turns/references/a.md"), glob("fixtures/pass/max_turns/references/*"),
                  done("max_turns")],
    "crash": [crash(signal.SIGSEGV)],
    "unreachable": [],  # no server: the CLI is pointed at a closed port on 127.0.0.1
}


def scenarios() -> list[Scenario]:
    return [Scenario(f"fixtures/pass/{name}/", turns, repeat_last=name == "truncated_stream")
            for name, turns in SCENARIOS.items()]


def server_for(cli: str):
    return ScriptedGeminiServer(scenarios()) if cli == "gemini" else ScriptedServer(scenarios())


def base_url(cli: str, server, name: str) -> str:
    """The scripted server's URL, or for `unreachable` one where nothing listens."""
    if name != "unreachable":
        return server.base_url
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}" + ("" if cli == "gemini" else "/v1")


def record(cli: str, names: list[str], out: Path) -> None:
    agent = ADAPTERS[cli](AgentConfig(name=cli, model="scripted"))
    out.mkdir(parents=True, exist_ok=True)
    with server_for(cli) as server, tempfile.TemporaryDirectory() as tmp:
        for name in names:
            ws, scratch = Path(tmp) / name / "ws", Path(tmp) / name / "scratch"
            make_workspace(ws, name)
            request = AgentRequest(
                case_id=name, trial=1, workspace=ws, prompt_file=ws / "reviewer/prompts/evaluate.md",
                rubric_file=ws / "reviewer/evaluator/references/rubric.md",
                changed_files_file=ws / "reviewer/.changed-skills.txt", scratch=scratch,
                allowed_tools=ALLOWED, max_steps=MAX_STEPS, timeout_s=150,
                env={"PATH": os.environ["PATH"], **endpoint_env(cli, base_url(cli, server, name))}, model="scripted")
            transcript = agent.run(request)
            stream = request.raw_stream_file.read_text(errors="replace").replace(str(ws), "/workspace")
            (out / f"{name}.ndjson").write_text(stream)
            usage = scratch / "copilot-usage.json"
            if usage.is_file():
                shutil.copy(usage, out / f"{name}.usage.json")
            meta = {"exit_code": transcript.exit_code, "timed_out": transcript.termination == "timeout",
                    "stopped": transcript.error if transcript.error.startswith("stopped by") else "",
                    "cli_version": transcript.agent_version, "allowed_tools": ALLOWED, "max_steps": MAX_STEPS,
                    "recorded_with": "python -m tests.e2e.record_gemini_qwen_copilot (real CLI, scripted server)"}
            (out / f"{name}.meta.json").write_text(json.dumps(meta, indent=2) + "\n")
            print(f"{name}: {transcript.termination} steps={transcript.steps} exit={transcript.exit_code} "
                  f"{transcript.error[:100]}")


def main() -> None:
    parser = argparse.ArgumentParser(description="record real Gemini CLI / Qwen Code / Copilot CLI streams")
    parser.add_argument("cli", choices=sorted(ADAPTERS))
    parser.add_argument("--bin", help="an installed version's bin folder, put first on PATH")
    parser.add_argument("--out", help="folder under tests/data/transcripts (default <cli>-<version>)")
    parser.add_argument("names", nargs="*", help=f"recordings (default all): {', '.join(SCENARIOS)}")
    args = parser.parse_intermixed_args()
    unknown = set(args.names) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown recording(s): {', '.join(sorted(unknown))}")
    if args.bin:
        os.environ["PATH"] = f"{args.bin}:{os.environ['PATH']}"
    version = parse_version(ADAPTERS[args.cli](AgentConfig(name=args.cli)).version())
    out = args.out or f"{args.cli}-{'.'.join(map(str, version or ('unknown',)))}"
    record(args.cli, args.names or list(SCENARIOS), DATA / out)


if __name__ == "__main__":
    main()
