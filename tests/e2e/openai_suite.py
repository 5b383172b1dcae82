"""A small suite for `rubricgate run` with a real OpenAI-protocol CLI (OpenCode, Codex) whose
model is scripted by tests/e2e/openai_server.py. Shared by the opencode and codex e2e tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from rubricgate.models.dimensions import DIMENSIONS
from tests.e2e.openai_server import Scenario, answer, bash, glob, grep, http_error, read, verdict_text
from tests.e2e.support import lay_out_suite, processes_in, write_baseline  # noqa: F401  (re-exported for the tests)

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-openai-e2e-secret-0123456789"
MAX_STEPS = 6


def skill(rel: str) -> str:
    return f"skills/{rel.split('/')[-1]}/SKILL.md"  # where the run shows fixtures/<tier>/<name>/


def missing_description(path: str) -> dict:
    return {"severity": "critical", "rule": "fm-description-required", "file": path, "line": 2,
            "quote": "name: no-description", "issue": "No description, so the skill never triggers.",
            "fix": "Add `description: Loads data; use when asked to load data.` under name."}


def scenarios() -> list[Scenario]:
    """(a) correct review, (b) forbidden tool, (c) too many steps, (d) malformed verdict, (e) API error."""
    ok = skill("block/no-description")
    return [
        Scenario("skills/no-description/", [
            read(ok), grep("sk-|AKIA|password:", "skills/no-description"),
            glob("skills/no-description/*"),
            answer(verdict_text("BLOCK", [ok], [missing_description(ok)]))]),
        Scenario("skills/tool-happy/", [
            bash("echo reviewing"), answer(verdict_text("PASS", [skill("pass/tool-happy")]))]),
        Scenario("skills/long-winded/", [read(skill("pass/long-winded"))], repeat_last=True),
        Scenario("skills/bad-json/", [
            read(skill("pass/bad-json")), answer('Done.\n```json\n{"tier": "MAYBE", "findings": 3}\n```\n')]),
        Scenario("skills/api-down/", [http_error(500)]),
    ]


FOLDERS = ["block/no-description", "pass/tool-happy", "pass/long-winded", "pass/bad-json", "pass/api-down"]


def make_suite(repo: Path, expected: dict[str, tuple]) -> None:
    """Reviewer copy, five fixtures, config for the scripted provider, baseline of the `expected`
    categories per fixture folder."""
    config = lay_out_suite(repo, FOLDERS)
    # sandbox: bwrap — the e2e suite runs the CLIs inside the kernel sandbox, or fails (exit 2).
    config["agent"] = {"name": "builtin", "model": "scripted", "timeout_s": 120, "sandbox": "bwrap",
                       "env_allowlist": ["PATH", "LANG", "OPENAI_BASE_URL"], "secret_env": ["OPENAI_API_KEY"],
                       "retries": 1, "retry_backoff_s": 0}
    config["gate"]["max_errored"] = 1  # the scripted outage (pass/api-down)
    # The outage's case was never judged, so the baseline lacks it: a new case, reported apart (under
    # new_cases: strict, the strict gate's default, its errored trial holds the run, exit 2).
    config["gate"]["new_cases"] = "report"
    config["rubric"]["trajectory"]["max_steps"] = MAX_STEPS
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    write_baseline(repo, expected)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t",
                    "commit", "-qm", "suite"], check=True)


def run_gate(repo: Path, agent: str, base_url: str, path: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    """`rubricgate run --agent NAME` in a subprocess with `path` as PATH (the agent's too, through
    env_allowlist); returns it and the summary it wrote."""
    env = {**os.environ, "PATH": path, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": SECRET}
    proc = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo), "--agent", agent],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    summaries = sorted((repo / "reports").glob("*/summary.json"))
    assert summaries, f"no summary written\nstdout:{proc.stdout}\nstderr:{proc.stderr}"
    return proc, json.loads(summaries[-1].read_text())


def categories(summary: dict, folder: str) -> tuple:
    """(verdict, tool_use, trajectory) failure categories of the case for one fixture folder."""
    name = folder.split("/")[1]
    case = next(c for c in summary["cases"] if name in c["id"])
    grades = case["trials"][0]["grades"]
    return tuple(grades[d]["category"] for d in DIMENSIONS)


def leaked_files(repo: Path) -> list[Path]:
    return [p for p in (repo / "reports").rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
