"""Issue 28, finding 9: the cache returned a pass after a reviewer file outside the digested set,
or the agent program itself, changed.

The key digested the prompt and the skill's and rubric's folders only: a file beside the prompt,
elsewhere in the reviewer folder, or a repository file the prompt names could change and a
`--cache` run still passed from the old answers; so could an edited wrapper script or a
reinstalled CLI. Now each of them is part of the key, and a change is a miss.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rubricgate.models.config import Config
from rubricgate.pipeline import RunOptions, run_suite
from rubricgate.reports.terminal import render_terminal
from rubricgate.runner.cache import run_digests
from tests.conftest import git, make_repo
from tests.faults.reviewers import use_reviewer, write_reviewer

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]
PROMPT = "reviewer/prompts/evaluate.md"
GUIDE = "docs/review-guide.md"
# The reviewer answers from the guide: "BLOCK" there turns every verdict into BLOCK (the PASS
# fixture then fails), as a changed instruction can change any real reviewer's answer.
READS_GUIDE = f'''
if "BLOCK" in Path("{GUIDE}").read_text():
    stream("BLOCK")
    sys.exit(0)
'''
# Reviewer files outside what the key digested, each a file a reviewer reads.
READABLE = {
    "beside the prompt": "reviewer/prompts/partials/tone.md",
    "in the reviewer folder": "reviewer/shared/house-style.md",
    "in the skill folder": "reviewer/evaluator/scripts/check.py",
    "named by the prompt": GUIDE,
    "named by a named file": "docs/examples/verdict.md",
}


def _commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", message)


def _reviewer_repo(root: Path) -> Path:
    """The default reviewer, whose prompt names a guide that names an example, plus a file in
    each reviewer folder."""
    repo = make_repo(root / "repo", fixtures=FIXTURES)
    with (repo / PROMPT).open("a") as prompt:
        prompt.write(f"\nBefore reviewing, read `{GUIDE}`.\n")
    for rel in READABLE.values():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("house rules\n")
    (repo / GUIDE).write_text("Follow [the example](examples/verdict.md).\n")
    _commit(repo, "reviewer guide")
    return repo


@pytest.mark.parametrize("where", sorted(READABLE))
def test_a_change_to_any_reviewer_file_changes_the_key(tmp_path: Path, where: str) -> None:
    repo = _reviewer_repo(tmp_path)
    before = run_digests(repo, Config())
    with (repo / READABLE[where]).open("a") as changed:
        changed.write("one more rule\n")
    after = run_digests(repo, Config())
    assert after.reviewer != before.reviewer, where
    assert READABLE[where] in after.reviewer


def test_the_per_case_changed_list_is_not_a_reviewer_file(tmp_path: Path) -> None:
    repo = _reviewer_repo(tmp_path)
    (repo / "reviewer/.changed-skills.txt").write_text("skills/x/SKILL.md\n")
    assert "reviewer/.changed-skills.txt" not in run_digests(repo, Config()).reviewer


def test_a_changed_agent_entry_file_changes_the_key(tmp_path: Path) -> None:
    """A CLI on PATH is a link into its package; the file it resolves to is what is digested."""
    entry = tmp_path / "cli" / "lib" / "node_modules" / "fake" / "cli.js"
    entry.parent.mkdir(parents=True)
    entry.write_text("console.log('1.0')\n")
    entry.chmod(0o755)
    (tmp_path / "cli" / "bin").mkdir()
    os.symlink(entry, tmp_path / "cli" / "bin" / "fakecli")
    path = str(tmp_path / "cli" / "bin")
    before = run_digests(tmp_path, Config(), {"fakecli": ["fakecli"]}, path).programs
    entry.write_text("console.log('1.0, patched')\n")
    after = run_digests(tmp_path, Config(), {"fakecli": ["fakecli"]}, path).programs
    assert before["fakecli"] and after["fakecli"] != before["fakecli"]


@pytest.mark.usefixtures("bwrap_ready")
def test_a_changed_referenced_file_is_a_cache_miss(tmp_path: Path) -> None:
    repo = _reviewer_repo(tmp_path)
    use_reviewer(repo, write_reviewer(tmp_path / "agents", READS_GUIDE))
    _commit(repo, "fake reviewer")
    first = run_suite(RunOptions(repo=repo, cache=True))
    assert first.exit_code == 0, render_terminal(first.summary, str(first.run_dir))

    (repo / GUIDE).write_text("BLOCK every skill.\n")
    _commit(repo, "stricter guide")
    cached = run_suite(RunOptions(repo=repo, cache=True))
    assert cached.exit_code == 1, render_terminal(cached.summary, str(cached.run_dir))
    assert not any(t.cached for c in cached.summary.cases for t in c.trials)


@pytest.mark.usefixtures("bwrap_ready")
def test_a_changed_agent_program_is_a_cache_miss(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    script = write_reviewer(tmp_path / "agents")
    use_reviewer(repo, script)
    _commit(repo, "fake reviewer")
    first = run_suite(RunOptions(repo=repo, cache=True))
    assert first.exit_code == 0, render_terminal(first.summary, str(first.run_dir))

    write_reviewer(tmp_path / "agents", tier="PASS")  # same path, same (absent) version: a wrong reviewer
    cached = run_suite(RunOptions(repo=repo, cache=True))
    assert cached.exit_code == 1, render_terminal(cached.summary, str(cached.run_dir))
    assert not any(t.cached for c in cached.summary.cases for t in c.trials)
