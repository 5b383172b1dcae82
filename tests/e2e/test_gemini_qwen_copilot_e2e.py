"""End to end with the REAL Gemini CLI, Qwen Code and Copilot CLI, sandboxed (bubblewrap), each
against its scripted model server: Gemini CLI against tests/e2e/gemini_server.py (the Gemini API),
Qwen Code and Copilot CLI's custom provider against tests/e2e/openai_server.py (chat/completions).

Per installed version (the oldest and newest tested of each, from the install manifest):
`rubricgate run --agent X` over a five-case suite whose rates and failure categories must be
exactly what the model was scripted to do. Per CLI (the newest): a user's path, `init --agent X`
-> `baseline update` -> `run`, in a repository init set up, exits 0 with the CLI's endpoint and
key variables as init allowlisted them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.gemini_server import ScriptedGeminiServer
from tests.e2e.openai_server import Scenario, ScriptedServer, answer, bash, glob, grep, http_error, read, verdict_text
from tests.e2e.support import Install, install_fixture, installs, lay_out_suite, require_install, write_baseline
from tests.e2e.test_adoption_e2e import commit_all, git

pytestmark = pytest.mark.e2e

CLIS = ("gemini", "qwen", "copilot")
SECRET = "sk-e2e-secret-0123456789abcdef"
MAX_STEPS = 6
FOLDERS = ["block/no-description", "pass/tool-happy", "pass/long-winded", "pass/bad-json", "pass/api-down"]
EXPECTED = {
    "block/no-description": (None, None, None),
    "pass/tool-happy": (None, "forbidden_tool", None),  # the CLI refuses bash: graded, the model carries on
    "pass/long-winded": ("no_verdict", None, "too_many_steps"),
    "pass/bad-json": ("malformed_verdict", None, None),
    "pass/api-down": ("errored", "errored", "errored"),  # the endpoint's failure: judged by no grader
}
RATES = {"verdict": 2 / 4, "tool_use": 3 / 4, "trajectory": 3 / 4}


def endpoint_env(cli: str, base_url: str) -> dict[str, str]:
    """The variables a user sets to point each CLI at a model server (docs/agents.md)."""
    return {"gemini": {"GOOGLE_GEMINI_BASE_URL": base_url, "GEMINI_API_KEY": SECRET},
            "qwen": {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": SECRET},
            "copilot": {"COPILOT_PROVIDER_BASE_URL": base_url, "COPILOT_PROVIDER_API_KEY": SECRET}}[cli]


def server(cli: str, scenarios: list[Scenario], **kw):
    return ScriptedGeminiServer(scenarios, **kw) if cli == "gemini" else ScriptedServer(scenarios, **kw)


def skill(rel: str) -> str:
    return f"skills/{rel.split('/')[-1]}/SKILL.md"


def suite_scenarios() -> list[Scenario]:
    """(a) correct review, (b) forbidden tool, (c) too many steps (different calls every turn:
    Qwen Code's loop guard stops a repeated one first), (d) malformed verdict, (e) a key the
    endpoint refuses (401: no CLI retries it, where Qwen Code 0.21 and Copilot CLI 1.0.40 spend
    up to a minute retrying a 429 or 5xx)."""
    ok = skill("block/no-description")
    finding = {"severity": "critical", "rule": "fm-description-required", "file": ok, "line": 2,
               "quote": "name: no-description", "issue": "No description.", "fix": "Add `description: ...`."}
    long = "skills/long-winded"
    return [
        Scenario("skills/no-description/", [read(ok), grep("sk-|AKIA|password:", "skills/no-description"),
                                            glob("skills/no-description/*"), answer(verdict_text("BLOCK", [ok], [finding]))]),
        Scenario("skills/tool-happy/", [bash("echo reviewing"), answer(verdict_text("PASS", [skill("pass/tool-happy")]))]),
        Scenario(f"{long}/", [read(f"{long}/SKILL.md"), glob(f"{long}/*"), grep("a", long), read("reviewer/prompts/evaluate.md"),
                              glob("skills/*"), grep("b", long), read(f"{long}/SKILL.md"), glob(f"{long}/**")]),
        Scenario("skills/bad-json/", [read(skill("pass/bad-json")),
                                      answer('Done.\n```json\n{"tier": "MAYBE", "findings": 3}\n```\n')]),
        Scenario("skills/api-down/", [http_error(401, "scripted refused key")]),
    ]


def make_suite(repo: Path, cli: str) -> None:
    config = lay_out_suite(repo, FOLDERS)
    spec_vars = list(endpoint_env(cli, ""))
    config["agent"] = {"name": "builtin", "model": "scripted", "timeout_s": 150, "sandbox": "bwrap",
                       "env_allowlist": ["PATH", "LANG", spec_vars[0]], "secret_env": [spec_vars[1]],
                       "retries": 1, "retry_backoff_s": 0}
    config["gate"]["max_errored"] = 1  # the scripted outage (pass/api-down)
    # The outage's case was never judged, so the baseline lacks it: a new case, reported apart (under
    # new_cases: strict, the strict gate's default, its errored trial holds the run, exit 2).
    config["gate"]["new_cases"] = "report"
    config["rubric"]["trajectory"]["max_steps"] = MAX_STEPS
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    write_baseline(repo, EXPECTED)
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "suite")


def rubricgate(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rubricgate", *args], cwd=repo, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=900)


install = install_fixture([i for cli in CLIS for i in installs(cli)])


@pytest.fixture(scope="module")
def gate_run(install: Install, tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp(f"e2e-{install.id}") / "repo"
    make_suite(repo, install.cli)
    with server(install.cli, suite_scenarios()) as model:
        env = {"PATH": install.path(), **endpoint_env(install.cli, model.base_url)}
        proc = rubricgate(repo, env, "run", "--repo", str(repo), "--agent", install.cli)
        requests = list(model.requests)
    summaries = sorted((repo / "reports").glob("*/summary.json"))
    assert summaries, f"no summary written\nstdout:{proc.stdout}\nstderr:{proc.stderr}"
    return proc, json.loads(summaries[-1].read_text()), repo, requests


def categories(summary: dict, folder: str) -> tuple:
    case = next(c for c in summary["cases"] if folder.split("/")[1] in c["id"])
    grades = case["trials"][0]["grades"]
    return tuple(grades[d]["category"] for d in ("verdict", "tool_use", "trajectory"))


def test_rates_match_the_script_and_the_gate_passes_at_baseline(gate_run) -> None:
    proc, summary, _, _ = gate_run
    assert {d: r["rate"] for d, r in summary["rates"].items()} == pytest.approx(RATES), proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_case_fails_exactly_as_scripted(gate_run, folder: str) -> None:
    _, summary, _, _ = gate_run
    assert categories(summary, folder) == EXPECTED[folder]


def test_the_cli_ran_sandboxed_at_its_version_and_the_key_never_reached_a_report(gate_run, install: Install) -> None:
    _, summary, repo, requests = gate_run
    assert summary["isolation"] == "bwrap", summary["isolation_reason"]
    assert summary["agent_support"][install.cli]["status"] == "tested"
    assert install.version in summary["agent_version"]
    assert requests and all(SECRET not in p.read_text(errors="replace")
                            for p in (repo / "reports").rglob("*") if p.is_file())


def test_tokens_are_the_clis_counts_or_unknown(gate_run, install: Install) -> None:
    _, summary, _, _ = gate_run
    case = next(c for c in summary["cases"] if c["id"].endswith("no-description"))
    trial = case["trials"][0]
    if install.cli == "copilot" and install.version.startswith("1.0.40"):
        assert (trial["input_tokens"], trial["output_tokens"]) == (None, None)
        assert summary["cost"]["untokened_trials"] >= 1
    else:
        assert trial["input_tokens"] and trial["output_tokens"] == 20 * case["trials"][0]["steps"]
    assert trial["cost_usd"] is None


# --------------------------------------------------------------- a user's first run


def finding(rule: str, severity: str, path: str) -> dict:
    return {"severity": severity, "rule": rule, "file": path, "line": 2, "quote": "name:",
            "issue": f"scripted finding for {rule}", "fix": "scripted fix"}


def adoption_scenarios() -> list[Scenario]:
    """A reviewer that answers init's example cases right (evals/tasks and fixtures)."""
    cases = {"example-no-description": ("BLOCK", [("fm-description-required", "critical")]),
             "example-tidy-skill": ("PASS", []),
             "example-stub-skill": ("WARN", [("body-present", "warning")]),
             "example-leaky-skill": ("BLOCK", [("secret-in-file", "critical")])}
    out = []
    for name, (tier, rules) in cases.items():
        path = f"skills/{name}/SKILL.md"
        out.append(Scenario(f"skills/{name}/", [read(path), answer(verdict_text(
            tier, [path], [finding(rule, severity, path) for rule, severity in rules]))]))
    return out


NEWEST = {cli: installs(cli)[-1] for cli in CLIS}


def _ok(steps: dict[str, subprocess.CompletedProcess[str]]) -> None:
    for name, proc in steps.items():
        assert proc.returncode == 0, f"{name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("cli", CLIS)
def test_init_baseline_update_and_run_work_sandboxed(cli: str, tmp_path: Path) -> None:
    newest = NEWEST[cli]
    require_install(newest)
    repo = tmp_path / "repo"
    (repo / "skills" / "pdf").mkdir(parents=True)
    (repo / "skills" / "pdf" / "SKILL.md").write_text("---\nname: pdf\ndescription: Fill pdf forms; use when asked.\n"
                                                     "---\n# pdf\n\n1. Open it.\n2. Fill it.\n3. Save it.\n")
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "skills")
    with server(cli, adoption_scenarios()) as model:
        env = {"PATH": newest.path(), **endpoint_env(cli, model.base_url)}
        steps = {"init": rubricgate(repo, env, "init", "--agent", cli)}
        config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
        assert endpoint_env(cli, "").keys() <= {*config["agent"]["env_allowlist"], *config["agent"]["secret_env"]}
        # What a team pins after init: its model; one trial on the strict gate keeps this test short.
        config["agent"] |= {"model": "scripted", "sandbox": "bwrap", "timeout_s": 150, "retries": 0}
        config |= {"trials": 1, "gate": {"method": "strict"}}
        (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        commit_all(repo, "rubricgate")
        steps["baseline"] = rubricgate(repo, env, "baseline", "update")
        _ok(steps)
        commit_all(repo, "baseline")
        steps["run"] = rubricgate(repo, env, "run")
    _ok(steps)
    baseline = json.loads((repo / "baseline.json").read_text())
    assert baseline["rates"]["verdict"] == 1.0 and len(baseline["cases"]) == 4, baseline
    summary = json.loads(sorted((repo / "reports").glob("*/summary.json"))[-1].read_text())
    assert summary["isolation"] == "bwrap" and summary["agent"] == cli
