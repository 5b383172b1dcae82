"""End to end with the REAL Claude Code CLI: `rubricgate run --agent claude` against a suite whose
model is scripted by tests/e2e/anthropic_server.py. The gate's rates and failure categories must
be exactly what the model was scripted to do.

The suite runs once per installed Claude Code version (tests/e2e/support.py: the manifest
.ci/install-agents.sh writes; today 2.1.112, the last pure-JS release, and 2.1.337, the native
binary), each with its prefix first on the agent's PATH. Without a manifest it runs against the
`claude` on PATH; without one either it skips, and RUBRICGATE_REQUIRE_CLIS=1 (set by .ci/run)
makes a missing CLI a failure, so CI cannot pass by skipping.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rubricgate.models.dimensions import DIMENSIONS
from tests.e2e import claude_scenarios as sc
from tests.e2e.anthropic_server import ScriptedAnthropicServer
from tests.e2e.support import (install_fixture, write_baseline, Install, check_overlay, installs, lay_out_suite, processes_in,
                               require_install, with_bwrap_overlay)

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-ant-e2e-secret-0123456789"

# fixture folder -> (scripted behaviour, expected verdict/tool_use/trajectory categories)
CASES = {
    "block/no-description": (sc.review_correctly, (None, None, None)),
    "pass/tool-happy": (sc.forbidden_tool, (None, "forbidden_tool", None)),
    "pass/long-winded": (sc.exceed_steps, ("no_verdict", None, "too_many_steps")),
    "pass/bad-json": (sc.malformed_verdict, ("malformed_verdict", None, None)),
    # An API outage is infrastructure: retried, then errored - judged by no grader, in no rate.
    "pass/api-down": (sc.api_error, ("errored", "errored", "errored")),
    "pass/chatty": (sc.leak_key, (None, None, None)),
}


INSTALLS = with_bwrap_overlay(installs("claude"))
RATES = {"verdict": 3 / 5, "tool_use": 4 / 5, "trajectory": 4 / 5}  # api-down errored: out of every rate


def make_suite(repo: Path) -> None:
    config = lay_out_suite(repo, CASES)
    # sandbox: bwrap — the e2e suite runs the CLI inside the kernel sandbox, or fails (exit 2).
    config["agent"] = {"name": "builtin", "timeout_s": 90, "sandbox": "bwrap",
                       "env_allowlist": ["PATH", "LANG", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_MAX_RETRIES"],
                       "secret_env": ["ANTHROPIC_API_KEY"], "retries": 1, "retry_backoff_s": 0}
    config["gate"]["max_errored"] = 1  # the scripted outage; more would be "could not judge"
    # The outage's case was never judged, so the baseline lacks it: a new case, reported apart (under
    # new_cases: strict, the strict gate's default, its errored trial holds the run, exit 2).
    config["gate"]["new_cases"] = "report"
    config["rubric"]["trajectory"]["max_steps"] = 6
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    write_baseline(repo, {folder: categories for folder, (_, categories) in CASES.items()})
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t",
                    "commit", "-qm", "suite"], check=True)


def run_gate(repo: Path, base_url: str, install: Install) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": install.path(), "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": SECRET,
           "CLAUDE_CODE_MAX_RETRIES": "0"}
    return subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo), "--agent", "claude"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=600)


install = install_fixture(INSTALLS)


@pytest.fixture(scope="module")
def gate_run(install: Install, tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp(f"e2e-{install.id}") / "repo"
    make_suite(repo)
    routes = {rel.split("/")[1]: behaviour for rel, (behaviour, _) in CASES.items()}
    with ScriptedAnthropicServer(sc.script_for(routes)) as server:
        proc = run_gate(repo, server.base_url, install)
    summaries = sorted((repo / "reports").glob("*/summary.json"))
    assert summaries, f"no summary written\nstdout:{proc.stdout}\nstderr:{proc.stderr}"
    return proc, json.loads(summaries[-1].read_text()), repo


def test_rates_match_the_script_and_gate_passes_at_baseline(gate_run) -> None:
    proc, summary, _ = gate_run
    assert summary["agent"] == "claude" or "claude" in json.dumps(summary["config"])
    rates = {dim: row["rate"] for dim, row in summary["rates"].items()}
    assert rates == pytest.approx(RATES), proc.stdout
    errored = next(t for c in summary["cases"] if "api-down" in c["id"] for t in c["trials"])
    assert errored["errored"] and len(errored["attempts"]) == 2 and summary["errored"]
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("rel", list(CASES))
def test_each_case_fails_exactly_as_scripted(gate_run, rel: str) -> None:
    _, summary, _ = gate_run
    case_id = next(c["id"] for c in summary["cases"] if rel.split("/")[1] in c["id"])
    trial = next(c for c in summary["cases"] if c["id"] == case_id)["trials"][0]
    got = tuple(trial["grades"][d]["category"] for d in DIMENSIONS)
    assert got == CASES[rel][1], json.dumps(trial["grades"], indent=1)


def test_cli_version_recorded_and_secret_never_written(gate_run, install: Install) -> None:
    _, summary, repo = gate_run
    assert summary["agent_version"] and "Claude Code" in summary["agent_version"]
    assert summary["isolation"] == "bwrap", summary["isolation_reason"]  # the CLI ran inside the sandbox
    check_overlay(repo / "reports" / summary["run_id"], install)
    if install.bin_dir:  # the prefix's CLI ran, not another one on PATH
        assert summary["agent_version"].startswith(install.version)
        support = summary["agent_support"]["claude"]
        pinned = install.version in (support["tested_oldest"], support["tested_newest"])
        assert (support["status"] == "tested") == pinned, support
    leaked = [p for p in (repo / "reports").rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaked == []
    chatty = next(c for c in summary["cases"] if "chatty" in c["id"])
    transcript = repo / "reports" / summary["run_id"] / chatty["trials"][0]["transcript"]
    assert "[REDACTED]" in transcript.read_text()


def test_the_cli_reached_its_scripted_endpoint_only_through_the_sandbox_proxy(gate_run) -> None:
    """The default network (allowlist): the CLI's own network namespace, its model calls relayed
    by the harness's proxy to the scripted server and logged per trial; nothing else relayed."""
    _, summary, repo = gate_run
    assert summary["sandbox_network"] == "allowlist"
    run_dir = repo / "reports" / summary["run_id"]
    network = {c["id"]: json.loads((run_dir / c["trials"][0]["transcript"]).read_text())["network"]
               for c in summary["cases"]}
    relayed = {(n["host"], n["port"]) for log in network.values() for n in log if n["outcome"] == "relayed"}
    assert len(relayed) == 1 and next(iter(relayed))[0] == "127.0.0.1", relayed  # the scripted server alone
    assert all(log for log in network.values())  # every trial's model calls went through the proxy
    for log in network.values():
        assert all(n["outcome"] in ("relayed", "refused") for n in log), log
        assert all(n["host"] != "127.0.0.1" for n in log if n["outcome"] == "refused"), log
    down = next(log for case_id, log in network.items() if "api-down" in case_id)
    # A plain http request shows the endpoint's answer (2.1.332); a tunnel (2.1.112) only its bytes.
    statuses = {n["status"] for n in down if n["kind"] == "http" and n["outcome"] == "relayed"}
    assert not statuses or 400 in statuses, down


def test_real_cli_timeout_kills_everything(install: Install, tmp_path: Path) -> None:
    """A hung model: the hard timeout ends the run and no process is left in the workspace."""
    from rubricgate.agents.claude import ClaudeAgent
    from rubricgate.models.config import AgentConfig
    from tests.e2e.record_claude import make_workspace, request_for
    from tests.e2e.support import sandbox_to, timed_out_at_the_model

    ws = make_workspace(tmp_path)

    def attempt(timeout_s: float) -> tuple:
        before = dict(sc.SLOW_REPLIES)
        with ScriptedAnthropicServer(sc.script_for({}, default=sc.slow)) as server:
            req = request_for(ws, tmp_path / f"scratch-{timeout_s:g}", server.base_url, ["read", "grep", "glob"], 6,
                              timeout_s, {"PATH": install.path()}, sandbox=sandbox_to(server.base_url))
            transcript = ClaudeAgent(AgentConfig(name="claude")).run(req)
            return (transcript, sc.SLOW_REPLIES["started"] - before["started"],
                    sc.SLOW_REPLIES["answered"] - before["answered"])

    started, answered = timed_out_at_the_model(attempt, 4.0)
    assert started >= 1 and answered == 0, (started, answered)  # ended by the timeout, before the hung reply
    assert processes_in(ws) == []


def _hook(command: str) -> list[dict]:
    return [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]


def test_real_cli_ignores_the_reviewed_trees_own_settings_and_hooks(install: Install, tmp_path: Path) -> None:
    """The reviewed tree is the attacker's: a .claude/settings.json in it with hooks (commands
    Claude Code runs on its events) and permissions must change nothing (`--setting-sources user`)."""
    from rubricgate.agents.claude import ClaudeAgent
    from rubricgate.models.config import AgentConfig
    from tests.e2e.record_claude import make_workspace, request_for

    ws = make_workspace(tmp_path)
    marker = tmp_path / "HOOK_RAN"
    events = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
    settings = {"permissions": {"allow": ["Bash(*)", "Write(*)"]},
                "hooks": {event: _hook(f"touch {marker}") for event in events}}
    (ws / ".claude").mkdir(exist_ok=True)
    (ws / ".claude" / "settings.json").write_text(json.dumps(settings))
    (ws / ".claude" / "settings.local.json").write_text(json.dumps(settings))
    with ScriptedAnthropicServer(sc.script_for({}, default=sc.review_correctly)) as server:
        req = request_for(ws, tmp_path / "scratch", server.base_url, ["read", "grep", "glob"], 6, 60.0,
                          {"PATH": install.path()})
        transcript = ClaudeAgent(AgentConfig(name="claude")).run(req)
    assert transcript.termination == "completed", transcript.error
    assert {c.name for c in transcript.tool_calls} <= {"read", "grep", "glob"}
    assert not marker.exists()  # no hook of the reviewed tree ran
