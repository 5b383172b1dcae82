"""A CLI killed by a signal after its first model turn is the infrastructure's (issue 38, target 1):
`rubricgate run` with each REAL CLI, in bubblewrap, on a two-case suite where the
scripted server kills the CLI with SIGSEGV when it asks for its second turn on one case
(tests/e2e/peer.py), every time. That trial is retried, then errored: judged by no grader on any
dimension, its reason "killed by SIG..." (not the CLI's last stderr line), and the run exits 2.
The other case is graded as usual. Before, the crash was graded as the reviewer's failed verdict
and tool use and never retried.

Claude Code, Codex and OpenCode run at every installed version; Gemini CLI (against the scripted
Gemini API), Qwen Code and Copilot CLI (against the scripted chat/completions) at their newest.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rubricgate.agents.registry import cli_specs
from rubricgate.models.dimensions import DIMENSIONS
from tests.e2e import claude_scenarios as sc
from tests.e2e import openai_server as oa
from tests.e2e.anthropic_server import Reply, ScriptedAnthropicServer
from tests.e2e.gemini_server import ScriptedGeminiServer
from tests.e2e.openai_suite import missing_description, skill
from tests.e2e.support import Install, install_fixture, installs, lay_out_suite, require_install, write_baseline

pytestmark = pytest.mark.e2e
FOLDERS = {"block/no-description": (None,) * len(DIMENSIONS), "pass/crashy": ("errored",) * len(DIMENSIONS)}
KEY = "sk-e2e-crash-0123456789"
EVERY_VERSION = ("claude", "codex", "opencode")
NEWEST_ONLY = ("gemini", "qwen", "copilot")
# Each CLI's endpoint and key variables (its CliSpec): (base URL, key).
ENDPOINT = {cli: (cli_specs()[cli].endpoint.base_url, cli_specs()[cli].endpoint.key)
            for cli in (*EVERY_VERSION, *NEWEST_ONLY)}


def _crash(conv, path, turn) -> Reply:
    return Reply(crash=signal.SIGSEGV)


def _openai_scenarios() -> list[oa.Scenario]:
    ok = skill("block/no-description")
    return [oa.Scenario("skills/no-description/", [
                oa.read(ok), oa.answer(oa.verdict_text("BLOCK", [ok], [missing_description(ok)]))]),
            oa.Scenario("skills/crashy/", [oa.crash(signal.SIGSEGV)])]


def make_suite(repo: Path, cli: str) -> None:
    config = lay_out_suite(repo, FOLDERS)
    base_url, key = ENDPOINT[cli]
    # One trial at a time: in its own network namespace the crashing CLI is found as the process
    # naming the server whose connection is open (tests/e2e/peer.py), which a concurrent trial's
    # CLI would match as well (Gemini CLI's other case was killed in its place).
    config["agent"] = {"name": cli, "timeout_s": 150, "sandbox": "bwrap", "retries": 1, "retry_backoff_s": 0,
                       "jobs": 1, "env_allowlist": ["PATH", "LANG", base_url], "secret_env": [key]}
    if cli != "claude":
        config["agent"]["model"] = "scripted"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    write_baseline(repo, FOLDERS)


install = install_fixture([i for cli in EVERY_VERSION for i in installs(cli)]
                          + [installs(cli)[-1] for cli in NEWEST_ONLY])


def model_server(cli: str):
    """The CLI's scripted model server, crashing the CLI at its second turn on the crashy case."""
    if cli == "claude":
        return ScriptedAnthropicServer(sc.script_for({"crashy": _crash}))
    return (ScriptedGeminiServer if cli == "gemini" else oa.ScriptedServer)(_openai_scenarios())


@pytest.fixture(scope="module")
def crashed_run(install: Install, tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp(f"crash-{install.id}") / "repo"
    make_suite(repo, install.cli)
    base_url, key = ENDPOINT[install.cli]
    with model_server(install.cli) as server:
        env = {**os.environ, "PATH": install.path(), base_url: server.base_url, key: KEY}
        proc = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo)], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=900)
    summaries = sorted((repo / "reports").glob("*/summary.json"))
    assert summaries, proc.stdout + proc.stderr
    return proc, json.loads(summaries[-1].read_text()), server.killed


def _trial(summary: dict, name: str) -> dict:
    return next(t for c in summary["cases"] if c["id"].endswith(name) for t in c["trials"])


def test_a_persistent_crash_is_retried_then_errored_and_the_run_exits_2(crashed_run) -> None:
    proc, summary, killed = crashed_run
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "killed by SIG" in proc.stdout + proc.stderr
    trial = _trial(summary, "crashy")
    assert trial["errored"] and trial["failure"] == "signal", trial
    assert len(trial["attempts"]) == 2 and all(a["failure"] == "signal" for a in trial["attempts"])
    assert all(a["error"].startswith("killed by SIG") for a in trial["attempts"]), trial["attempts"]
    assert "the same class on 2 of 2 attempts" in trial["evidence"]
    assert len(killed) >= 2  # the server killed the CLI on each attempt


def test_the_crashed_case_is_graded_on_no_dimension_and_the_other_is_graded(crashed_run) -> None:
    _, summary, _ = crashed_run
    crashed = _trial(summary, "crashy")
    assert {g["category"] for g in crashed["grades"].values()} == {"errored"}
    fine = _trial(summary, "no-description")
    assert not fine["errored"] and all(g["passed"] for g in fine["grades"].values()), fine["grades"]
    assert any("killed by SIG" in line for line in summary["errored"]), summary["errored"]


def _draft_then_crash(conv, path, turn) -> Reply:
    """Read the skill, draft a PASS and ask to read it again, then die by SIGSEGV."""
    if turn <= 1:
        return Reply(tools=[("Read", {"file_path": f"{conv.cwd}/{path}"})])
    if turn == 2:
        return Reply(text="Preliminary:\n" + sc.verdict_text("PASS", path) + "\nLet me double-check.",
                     tools=[("Read", {"file_path": f"{conv.cwd}/{path}"})])
    return Reply(crash=signal.SIGSEGV)


def _claude_case_run(claude: Install, tmp_path: Path, name: str, behaviour, **agent) -> tuple[int, dict]:
    """`rubricgate run` with real Claude Code on block/no-description (reviewed as usual) and
    pass/NAME (the server's `behaviour`); the exit code and NAME's trial."""
    require_install(claude)
    repo = tmp_path / "repo"
    folders = {"block/no-description": (None,) * len(DIMENSIONS), f"pass/{name}": ("errored",) * len(DIMENSIONS)}
    config = lay_out_suite(repo, folders)
    base_url, key = ENDPOINT["claude"]
    config["agent"] = {"name": "claude", "timeout_s": 150, "sandbox": "bwrap", "retries": 1, "retry_backoff_s": 0,
                       "jobs": 1, "env_allowlist": ["PATH", "LANG", base_url], "secret_env": [key], **agent}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    write_baseline(repo, folders)
    with ScriptedAnthropicServer(sc.script_for({name: behaviour})) as server:
        env = {**os.environ, "PATH": claude.path(), base_url: server.base_url, key: KEY}
        proc = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo)], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=900)
    assert (repo / "reports").is_dir(), proc.stdout + proc.stderr
    summary = json.loads(sorted((repo / "reports").glob("*/summary.json"))[-1].read_text())
    return proc.returncode, _trial(summary, name)


@pytest.mark.parametrize("claude", installs("claude"), ids=lambda i: i.id)
def test_a_verdict_drafted_before_a_crash_is_never_graded(claude: Install, tmp_path: Path) -> None:
    """The draft is the last assistant text the stream holds, but the CLI never delivered it as its
    result: graded, it passed the case and the run exited 0."""
    code, trial = _claude_case_run(claude, tmp_path, "drafty", _draft_then_crash)
    assert code == 2 and trial["errored"] and trial["failure"] == "signal", trial
    assert {g["category"] for g in trial["grades"].values()} == {"errored"}
    assert not trial["run_error"], trial  # an errored trial has no graded verdict to say it ran after


def _hang(conv, path, turn) -> Reply:
    if turn <= 1:
        return Reply(tools=[("Read", {"file_path": f"{conv.cwd}/{path}"})])
    return Reply(hang_s=300)


def test_a_hung_endpoint_outlasting_the_timeout_is_the_endpoint_s_not_a_regression(tmp_path: Path) -> None:
    """agent.timeout_s under agent.idle_timeout_s: the wall clock ends a run whose model request the
    endpoint never answers. Graded as the reviewer's timeout, it made the run a REGRESSION."""
    code, trial = _claude_case_run(installs("claude")[-1], tmp_path, "hangy", _hang, timeout_s=15,
                                   idle_timeout_s=120, retries=0)
    assert code == 2 and trial["errored"] and trial["failure"] == "unreachable", trial
    assert "had no answer" in trial["attempts"][-1]["error"], trial["attempts"]
