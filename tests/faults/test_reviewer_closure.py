"""Issue 37: a PR that changes only a file the prompt links to is a change to the reviewer.

The prompt links `reviewer/prompts/policy.md`, which tells the reviewer how strict to be (and
names `docs/review/strictness.md` with an @ mention). A PR that only turns the policy from
strict to lenient: `rubricgate changed` said unchanged (the PR workflow then skips its gate), and
`compare --base` PASSed, because it swapped only the prompt file and the skill and rubric folders,
so both sides read the PR's lenient policy. Now both read the reviewer's closure: `changed` names
the file and why it is the reviewer's, and `compare --base` runs the base side with the policy
at the base, so the regression is found. Real git, a scripted reviewer whose answers follow the
policy it reads in its workspace, the real bubblewrap sandbox.

The trial cache's key and `coverage` read the same closure: a `--cache` run after the PR reused
the strict answers (the key followed links and code spans only, not the policy's @ mention), and
`coverage` named no changed file since the baseline.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, git, make_repo
from tests.faults.reviewers import STREAM, use_reviewer

pytestmark = pytest.mark.usefixtures("bwrap_ready")
FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]
LINKED = {"reviewer/prompts/policy.md": "How strict to be: @docs/review/strictness.md\n\nstrict\n",
          "docs/review/strictness.md": "Block every critical finding: strict\n"}
# Strict: the right tier. Lenient (the policy or a file of docs/review/ says so): PASS everything.
FOLLOWS_THE_POLICY = STREAM + r'''
said = "".join(p.read_text() for p in (Path("reviewer/prompts/policy.md"), *sorted(Path("docs/review").glob("*.md")))
               if p.exists())
stream("PASS" if "lenient" in said else "RIGHT", "policy read")
'''


def _repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    script = tmp_path / "agents" / "reviewer.py"
    script.parent.mkdir()
    script.write_text(FOLLOWS_THE_POLICY)
    use_reviewer(repo, script)
    prompt = repo / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nFollow [the review policy](policy.md) in every review.\n")
    for rel, text in LINKED.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "a reviewer with a policy")
    git(repo, "checkout", "-q", "-b", "soften")
    return repo


def _rubricgate(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rubricgate", *args, "--repo", str(repo)], capture_output=True,
                          text=True, timeout=900, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("edited, why", [
    ("reviewer/prompts/policy.md", "linked from reviewer/prompts/evaluate.md"),
    ("docs/review/strictness.md", "@-mentioned in reviewer/prompts/policy.md"),
])
def test_a_pr_that_softens_only_a_linked_file_is_changed_and_regresses(tmp_path: Path, edited: str, why: str) -> None:
    repo = _repo(tmp_path)
    (repo / edited).write_text((repo / edited).read_text().replace("strict", "lenient"))
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "soften the policy")

    said = _rubricgate(repo, "changed", "--base", "main")
    assert said.returncode == 0, said.stderr
    assert said.stdout.startswith("changed: 1 gated file"), said.stdout
    assert f"  {edited}  ({why})" in said.stdout

    compared = _rubricgate(repo, "compare", "--base", "main")
    assert compared.returncode == 1, compared.stdout + compared.stderr  # the head regressed
    assert "REGRESSED  fixture-data-loader" in compared.stdout


def test_a_linked_file_added_or_removed_is_at_each_side_as_it_is_there(tmp_path: Path) -> None:
    # The PR drops the @ mention and deletes strictness.md, and adds a lenient note the policy
    # now links: the base side has the old pair and not the new note; the head the reverse.
    repo = _repo(tmp_path)
    (repo / "docs/review/strictness.md").unlink()
    (repo / "reviewer/prompts/policy.md").write_text("How strict to be: [notes](../../docs/review/notes.md)\n")
    (repo / "docs/review/notes.md").write_text("lenient\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "replace the policy")
    said = _rubricgate(repo, "changed", "--base", "main")
    assert "  docs/review/strictness.md  (@-mentioned in reviewer/prompts/policy.md, at the merge base)" in said.stdout
    assert "  docs/review/notes.md  (linked from reviewer/prompts/policy.md)" in said.stdout
    compared = _rubricgate(repo, "compare", "--base", "main")
    assert compared.returncode == 1, compared.stdout + compared.stderr
    assert "REGRESSED  fixture-data-loader" in compared.stdout


def test_a_pr_that_changes_nothing_of_the_reviewer_is_unchanged(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "docs/unrelated.md").write_text("lenient\n")  # in the tree, named by nothing
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "docs")
    said = _rubricgate(repo, "changed", "--base", "main")
    assert said.returncode == 0 and said.stdout.startswith("unchanged:"), said.stdout


def _soften_strictness(repo: Path) -> None:
    strictness = repo / "docs/review/strictness.md"  # reached from the prompt only by an @ mention
    strictness.write_text(strictness.read_text().replace("strict", "lenient"))
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "soften the policy")


def test_a_cached_run_misses_when_an_at_mentioned_file_changes(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    first = _rubricgate(repo, "run", "--cache")
    assert first.returncode == 0, first.stdout + first.stderr
    _soften_strictness(repo)
    again = _rubricgate(repo, "run", "--cache")
    assert again.returncode == 1, again.stdout[-3000:] + again.stderr  # 0: the strict answers were replayed
    summary = json.loads((max((repo / "reports").iterdir()) / "summary.json").read_text())
    assert not any(t["cached"] for c in summary["cases"] for t in c["trials"])


def test_coverage_names_an_edit_of_an_at_mentioned_file_since_the_baseline(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    updated = _rubricgate(repo, "baseline", "update")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "baseline")
    _soften_strictness(repo)
    said = _rubricgate(repo, "coverage")
    assert said.returncode == 0, said.stderr
    assert "changed: file docs/review/strictness.md changed; exercised by 2 case(s)" in said.stdout, said.stdout
