"""What Copilot CLI's unpacking costs a sandboxed trial, and what sharing one unpacked copy per run
saves: the real CLI (each installed version) against tests/e2e's scripted OpenAI server, inside
bubblewrap, one short review per trial (the opening read, then the verdict).

    python bench/copilot_package.py [--reps 5] [--version 1.0.102 ...]

Per version: the seconds of a trial that unpacks its own package (the throwaway HOME's first
start) and of one shown the run's shared copy read-only (agents/copilot_package.py), run in
pairs back to back so a shared machine's drift hits both alike: median (min-max) of each, of the
paired differences, and the one-time unpack the shared copy costs a run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rubricgate.agents.base import AgentRequest  # noqa: E402
from rubricgate.agents.copilot import CopilotAgent, native_binary  # noqa: E402
from rubricgate.agents.copilot_package import SharedPackages  # noqa: E402
from rubricgate.models.config import AgentConfig  # noqa: E402
from tests.e2e import openai_server as oa  # noqa: E402
from tests.e2e.record_openai_clis import make_workspace, skill  # noqa: E402
from tests.e2e.support import Install, installs, require_install, sandbox_to  # noqa: E402

NAME = "unpack"


def trial(agent: CopilotAgent, install: Install, server: oa.ScriptedServer, tmp: Path) -> float:
    """One sandboxed review; its wall-clock seconds (start of the CLI to its end)."""
    ws = tmp / "ws"
    make_workspace(ws, NAME)
    req = AgentRequest(case_id=NAME, trial=1, workspace=ws, prompt_file=ws / "reviewer/prompts/evaluate.md",
                       rubric_file=ws / "reviewer/evaluator/references/rubric.md",
                       changed_files_file=ws / "reviewer/.changed-skills.txt", scratch=tmp / "scratch",
                       allowed_tools=["read", "grep", "glob"], max_steps=6, timeout_s=300,
                       env={"PATH": install.path("/usr/local/bin:/usr/bin:/bin"),
                            "COPILOT_PROVIDER_BASE_URL": server.base_url, "COPILOT_PROVIDER_API_KEY": "sk-bench-0123"},
                       sandbox=sandbox_to(server.base_url))
    started = time.monotonic()
    transcript = agent.run(req)
    took = time.monotonic() - started
    if transcript.termination != "completed":
        raise SystemExit(f"{install.id}: the trial did not complete: {transcript.error}")
    return took


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):5.2f} ({min(values):.2f}-{max(values):.2f})"


def measure(install: Install, reps: int) -> None:
    verdict = oa.answer(oa.verdict_text("PASS", [skill(NAME)]))
    own, shared, diffs = [], [], []
    unpacking = CopilotAgent(AgentConfig(name="copilot", model="scripted"))
    unpacking.share_package = False
    sharing = CopilotAgent(AgentConfig(name="copilot", model="scripted"))
    sharing._packages = SharedPackages()
    started = time.monotonic()  # the run's one unpack, made before its first trial here
    if sharing._packages.unpacked(native_binary(require_install(install))) is None:
        raise SystemExit(f"{install.id}: no shared copy could be made")
    once = time.monotonic() - started
    with oa.ScriptedServer([oa.Scenario(f"fixtures/pass/{NAME}/", [verdict])]) as server:
        for _ in range(reps):
            with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
                own.append(trial(unpacking, install, server, Path(a)))
                shared.append(trial(sharing, install, server, Path(b)))
            diffs.append(own[-1] - shared[-1])
    print(f"{install.id:<16} {spread(own):<20} {spread(shared):<20} {spread(diffs):<20} {once:5.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--version", nargs="*", default=None)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at the start on {os.cpu_count()} cores; {args.reps} pairs")
    print(f"{'copilot':<16} {'own unpack, s':<20} {'shared copy, s':<20} {'saved a trial, s':<20} unpack once, s")
    for install in installs("copilot"):
        if args.version and install.version not in args.version:
            continue
        require_install(install)
        measure(install, args.reps)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
