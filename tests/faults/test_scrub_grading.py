"""Issue 37: scrubbing never touches grading.

A copy-only run treated every parent-environment value of 6+ characters, and every 8-character
piece of one, as a secret, and scrubbed the reviewer's final message before grading: with
`GITHUB_HEAD_REF=rubric/soften-description` the piece "description" became [REDACTED] in rule
ids (`fm[REDACTED]-required`) and case ids, and correct findings failed. Now graders read the
answer as the reviewer gave it, a copy-only run scrubs only secret-looking values (a CI ref is
none), and a scrub that changes what a written result shows is a warning of the run. A real
secret is still never written anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, git, make_repo
from tests.faults.reviewers import use_reviewer, write_reviewer

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]
TASKS = ["block-missing-description"]
TOKEN = "ghp_" + "Zq9fK2mP7vL4nR8tWx3c5B6n"
# What a pull request's CI job has in its environment: refs, ids, paths, a commit SHA.
CI = {"GITHUB_REF": "refs/pull/41/merge", "GITHUB_RUN_ID": "7312345678", "GITHUB_SHA": "3f5a9c0d1e2b4a6c8d0e" * 2,
      "GITHUB_WORKSPACE": "/home/runner/work/skills/skills", "GITHUB_REPOSITORY": "acme/description-rules"}
# The reviewer says what the harness's environment holds (as a reviewer without a sandbox can).
READ_TOKEN = r'''
import os
environ = open(f"/proc/{os.getppid()}/environ", "rb").read().split(b"\0")
note = "saw " + next(v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"GITHUB_TOKEN="))
'''


def _run(tmp_path: Path, branch: str, extra_env: dict[str, str] | None = None, **agent: object) -> tuple[dict, Path]:
    """`rubricgate run` copy-only, in a CI-like environment on `branch`: (summary.json, run folder)."""
    repo = make_repo(tmp_path / f"repo-{branch.replace('/', '-')}", fixtures=FIXTURES, tasks=TASKS)
    use_reviewer(repo, write_reviewer(tmp_path / "agents", READ_TOKEN), sandbox="none", **agent)
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "reviewer")
    env = {**os.environ, **CI, "GITHUB_HEAD_REF": branch, "GITHUB_TOKEN": TOKEN, "PYTHONPATH": str(ROOT),
           **(extra_env or {})}
    done = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo)], env=env,
                          capture_output=True, text=True, timeout=600)
    [run_dir] = list((repo / "reports").iterdir())
    assert TOKEN[:12] not in done.stdout + done.stderr
    return json.loads((run_dir / "summary.json").read_text()) | {"_exit": done.returncode}, run_dir


def _graded(summary: dict) -> list:
    """Every case id, trial outcome, grade and finding's rule id, as the run wrote them."""
    return [(c["id"], t["outcome"], sorted((d, g["passed"], g["category"]) for d, g in t["grades"].items()),
             [f["rule"] for f in t["findings"]]) for c in summary["cases"] for t in c["trials"]]


def test_a_ci_branch_name_changes_no_grade_and_no_id_and_a_real_secret_is_never_written(tmp_path: Path) -> None:
    soften, run_dir = _run(tmp_path, "rubric/soften-description")
    other, _ = _run(tmp_path, "rubric/pr-41")
    assert soften["_exit"] == 0, soften["decision"]
    assert _graded(soften) == _graded(other)
    assert "block-missing-description" in {c["id"] for c in soften["cases"]}
    rules = {r for _, _, _, found in _graded(soften) for r in found}
    assert "fm-description-required" in rules and not any("REDACTED" in r for r in rules)
    assert (run_dir / "report.html").is_file()
    # The token the reviewer printed is in no file of the run (its transcripts say [REDACTED]).
    written = [p for p in run_dir.rglob("*") if p.is_file() and TOKEN[4:16] in p.read_text(errors="replace")]
    assert written == []
    finals = [json.loads(p.read_text())["final_text"] for p in (run_dir / "transcripts").glob("*.json")]
    assert finals and all("saw [REDACTED]" in f for f in finals)
    assert not any("scrubbing secrets" in w for w in soften["decision"]["warnings"])


def test_a_scrub_that_changes_a_written_rule_id_is_a_warning_and_the_grade_stands(tmp_path: Path) -> None:
    # A configured secret whose value is a rule id (a silly secret, but a configured one): what
    # is written says [REDACTED] where the rule was, the grade is the one the answer earned.
    summary, _ = _run(tmp_path, "main", {"RG_ODD_SECRET": "fm-description-required"},
                      secret_env=["RG_ODD_SECRET"])
    trials = [t for c in summary["cases"] if "missing-description" in c["id"] for t in c["trials"]]
    assert trials and all(t["grades"]["verdict"]["passed"] for t in trials)
    warnings = [w for w in summary["decision"]["warnings"] if "scrubbing secrets" in w]
    assert warnings and "changes the rule id of a finding" in warnings[0]
    assert "would change its verdict grade" in warnings[0] and "unscrubbed" in warnings[0]


# A case id's part, a tag, a case the run does not run (still named in its summary), a trial's
# file name (across the id and the trial number).
@pytest.mark.parametrize(("secret", "only"), [("data-loader", []), ("frontmatter", []),
                                              ("data-loader", ["--only", "block-missing"]), ("loader-1.json", [])])
def test_a_name_the_run_writes_that_holds_a_secret_is_refused_before_any_trial_naming_the_variable_not_the_value(
        tmp_path: Path, secret: str, only: list[str]) -> None:
    # Written as fixture-[REDACTED], a case id that holds a secret ended the run in "internal
    # error: KeyError"; two such cases became one name (one transcript written over the other),
    # and regrade, merge and --continue no longer found the case (regrade turned a REGRESSION
    # into PASS by dropping it). A trial's replay file was named by a secret across the id and
    # the trial number.
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES, tasks=TASKS)
    use_reviewer(repo, write_reviewer(tmp_path / "agents", READ_TOKEN), sandbox="none", secret_env=["RG_ODD_SECRET"])
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "reviewer")
    env = {**os.environ, **CI, "GITHUB_TOKEN": TOKEN, "RG_ODD_SECRET": secret, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo), *only], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if "RG_ODD_SECRET" in line]
    assert lines and "Traceback" not in done.stderr, done.stderr
    assert "a secret the run scrubs" in lines[0] and "(fix: rename it" in lines[0]
    assert secret not in done.stdout + done.stderr
    assert not (repo / "reports").exists() or not any((repo / "reports").iterdir())


@pytest.mark.parametrize("value", ["rubric/soften-description", "refs/heads/fix-description-length",
                                   "3f5a9c0d1e2b4a6c8d0e3f5a9c0d1e2b4a6c8d0e", "/home/runner/work/x/x", "7312345678"])
def test_ci_values_are_not_secrets(value: str) -> None:
    from rubricgate.secret_env import parent_env_secrets

    assert parent_env_secrets({"GITHUB_HEAD_REF": value}) == []
    assert parent_env_secrets({"GITHUB_TOKEN": value}) == [value]  # named like a credential: always
