"""End to end with the REAL Codex CLI: `rubricgate run --agent codex` against a suite whose model
is scripted by tests/e2e/openai_server.py (Responses API SSE). The gate's rates and failure
categories must be exactly what the model was scripted to do.

Without `codex` on PATH these tests skip; RUBRICGATE_REQUIRE_CLIS=1 (set by .ci/run) makes a
missing CLI a failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e import openai_suite as suite
from tests.e2e.openai_server import Scenario, ScriptedServer, hang

pytestmark = pytest.mark.e2e

# Codex has no tool allowlist: (b)'s command runs in the read-only sandbox and is graded as a
# forbidden tool; the model goes on to its verdict. (c) is stopped at the first turn past max_steps.
EXPECTED = {
    "block/no-description": (None, None, None),
    "pass/tool-happy": (None, "forbidden_tool", None),
    "pass/long-winded": ("no_verdict", None, "too_many_steps"),
    "pass/bad-json": ("malformed_verdict", None, None),
    "pass/api-down": ("agent_error", None, None),
}
RATES = {"verdict": 2 / 5, "tool_use": 4 / 5, "trajectory": 4 / 5}


@pytest.fixture(scope="module")
def gate_run(tmp_path_factory: pytest.TempPathFactory):
    suite.require_cli("codex")
    repo = tmp_path_factory.mktemp("e2e-codex") / "repo"
    suite.make_suite(repo, RATES)
    with ScriptedServer(suite.scenarios()) as server:
        proc, summary = suite.run_gate(repo, "codex", server.base_url)
    return proc, summary, repo


def test_rates_match_the_script_and_gate_passes_at_baseline(gate_run) -> None:
    proc, summary, _ = gate_run
    rates = {dim: row["rate"] for dim, row in summary["rates"].items()}
    assert rates == pytest.approx(RATES), proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("folder", list(EXPECTED))
def test_each_case_fails_exactly_as_scripted(gate_run, folder: str) -> None:
    _, summary, _ = gate_run
    assert suite.categories(summary, folder) == EXPECTED[folder]


def test_cli_version_recorded_and_secret_never_written(gate_run) -> None:
    _, summary, repo = gate_run
    assert summary["agent_version"] and summary["agent_version"].startswith("codex-cli")
    assert suite.leaked_files(repo) == []


def test_real_cli_timeout_kills_everything(tmp_path: Path) -> None:
    """A hung model: the hard timeout ends the run and no process is left in the workspace."""
    suite.require_cli("codex")
    from rubricgate.agents.base import AgentRequest
    from rubricgate.agents.codex import CodexAgent
    from rubricgate.models.config import AgentConfig
    from tests.e2e.record_openai_clis import make_workspace

    ws = tmp_path / "ws"
    make_workspace(ws, "slow")
    with ScriptedServer([Scenario("fixtures/pass/slow/", [hang(30)])]) as server:
        req = AgentRequest(case_id="slow", trial=1, workspace=ws, prompt_file=ws / "reviewer/prompts/evaluate.md",
                           rubric_file=ws / "reviewer/evaluator/references/rubric.md",
                           changed_files_file=ws / "reviewer/.changed-skills.txt", scratch=tmp_path / "scratch",
                           allowed_tools=["read", "grep", "glob"], max_steps=6, timeout_s=8.0,
                           env={"PATH": "/usr/local/bin:/usr/bin:/bin", "OPENAI_BASE_URL": server.base_url})
        transcript = CodexAgent(AgentConfig(name="codex", model="scripted")).run(req)
    assert transcript.termination == "timeout" and transcript.exit_code is None
    assert transcript.duration_s < 20
    assert suite.processes_in(ws) == []
