"""An endpoint that cuts every stream short, for a whole `rubricgate run` with each REAL CLI: every
trial is errored (an infrastructure class, the same in summary.json and the comment's headline),
the run exits 2 (could not judge), never 1, and the key is in no file the run wrote.

OpenCode counted each cut stream as a step of the reviewer's and ran into max_steps, and Qwen Code
0.21 delivered the half answer as a successful result: both were graded as the reviewer's failure,
a REGRESSION (exit 1). Gemini CLI takes a stream cut short for the model's whole answer and says
nothing of it (docs/agents.md), so it is not run here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rubricgate.agents.registry import cli_specs
from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.models.failures import INFRA_FAILURES
from tests.e2e import claude_scenarios as sc
from tests.e2e import openai_server as oa
from tests.e2e.anthropic_server import Reply, ScriptedAnthropicServer
from tests.e2e.support import Install, installs, lay_out_suite, require_install, write_baseline

pytestmark = pytest.mark.e2e
KEY = "sk-e2e-outage-0123456789abcdef"
FOLDERS = {"pass/alpha": (None,) * len(DIMENSIONS), "pass/beta": (None,) * len(DIMENSIONS)}
CLIS = ("claude", "codex", "opencode", "qwen", "copilot")


def _install_params() -> list:
    """The newest version of each CLI, and Qwen Code's oldest (its own way of ending a cut stream)."""
    found = [installs(cli)[-1] for cli in CLIS] + [installs("qwen")[0]]
    return [pytest.param(i, id=i.id) for i in dict.fromkeys(found)]


def _server(cli: str):
    if cli == "claude":
        return ScriptedAnthropicServer(sc.script_for({}, default=lambda conv, path, turn: Reply(broken="truncated")))
    return oa.ScriptedServer([oa.Scenario(f"skills/{n}/", [oa.truncated()], repeat_last=True)
                              for n in ("alpha", "beta")])


def _run(install: Install, repo: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    endpoint = cli_specs()[install.cli].endpoint
    config = lay_out_suite(repo, FOLDERS)
    config["agent"] = {"name": install.cli, "timeout_s": 150, "sandbox": "bwrap", "retries": 1, "retry_backoff_s": 0,
                       "jobs": 1, "env_allowlist": ["PATH", "LANG", endpoint.base_url], "secret_env": [endpoint.key]}
    if install.cli != "claude":
        config["agent"]["model"] = "scripted"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    write_baseline(repo, FOLDERS)
    with _server(install.cli) as server:
        env = {**os.environ, "PATH": install.path(), endpoint.base_url: server.base_url, endpoint.key: KEY}
        proc = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo)], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=900)
    summaries = sorted((repo / "reports").glob("*/summary.json"))
    assert summaries, proc.stdout + proc.stderr
    return proc, summaries[-1].parent


@pytest.mark.parametrize("install", _install_params())
def test_streams_cut_short_on_every_trial_exit_2_with_every_trial_errored(install: Install, tmp_path: Path) -> None:
    require_install(install)
    proc, run_dir = _run(install, tmp_path / "repo")
    summary = json.loads((run_dir / "summary.json").read_text())
    trials = [t for c in summary["cases"] for t in c["trials"]]
    assert proc.returncode == 2, (proc.stdout + proc.stderr)[-2000:]
    assert all(t["errored"] and t["failure"] in INFRA_FAILURES for t in trials), [t["failure"] for t in trials]
    headline = next(ln for ln in (run_dir / "comment.md").read_text().splitlines() if ln.startswith("### "))
    assert all(t["failure"].replace("_", "\\_") in headline for t in trials), headline
    leaked = [p for p in (tmp_path / "repo").rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert not leaked, leaked
