"""Issue 14 from the reviewer's side: nothing it can read names the expected answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rubricgate.pipeline import RunOptions, run_suite
from tests.conftest import ROOT, make_repo
from tests.faults.reviewers import use_reviewer, write_reviewer

TASKS = ["block-missing-description", "warn-batch-one-bad-file", "overlay-missing-name", "pass-batch-clean"]
FIXTURES = sorted(p.parent.relative_to(ROOT / "fixtures").as_posix() for p in (ROOT / "fixtures").glob("*/*/SKILL.md"))

# Runs inside the sandbox: walk the workspace, HOME, TMPDIR, /tmp and /dev/shm (where the run's
# folders live when it is a tmpfs); read the environment.
SNOOP = r'''
import os, re, json, sys
from pathlib import Path
needles = NEEDLES
hits = []
roots = [Path.cwd(), Path(os.environ["HOME"]), Path(os.environ.get("TMPDIR", "/tmp")), Path("/tmp"),
         Path("/dev/shm")]
for path_text in [str(Path.cwd()), os.environ.get("HOME", ""), os.environ.get("TMPDIR", "")]:
    for word in needles["path_words"]:
        if re.search(rf"(^|[/_.-]){word}([/_.-]|$)", path_text, re.I):
            hits.append(f"path {path_text} names {word}")
# The reviewer's own interpreter install is shown read-only so it can run; when the checkout and
# its venv sit under /tmp it is walked too, and its packages (numpy's "pass" test data,
# rubricgate's own init templates) are not the suite's answer key.
own = tuple(os.path.realpath(p) + "/" for p in {sys.prefix, sys.base_prefix})
for root in roots:
    for dirpath, dirs, files in os.walk(root):
        if (os.path.realpath(dirpath) + "/").startswith(own):
            dirs[:] = []
            continue
        for name in dirs + files:
            rel = os.path.join(dirpath, name)
            for word in needles["path_words"]:
                if re.search(rf"(^|[/_.-]){word}([/_.-]|$)", os.path.relpath(rel, root), re.I):
                    hits.append(f"path {rel} names {word}")
        for name in files:
            full = os.path.join(dirpath, name)
            if os.path.abspath(full) == os.path.abspath(__file__):
                continue  # this script itself, which holds the needles
            if "/reviewer/" in full and os.path.relpath(full, Path.cwd()).startswith("reviewer/"):
                continue  # the reviewer's own prompt, skill and rubric define every tier and rule
            try:
                text = open(full, encoding="utf-8", errors="replace").read()
            except OSError:
                continue
            for needle in needles["content"]:
                if needle in text:
                    hits.append(f"{full} contains {needle!r}")
for key, value in os.environ.items():
    for needle in needles["content"] + needles["case_ids"]:
        if needle in value or needle in key:
            hits.append(f"env {key} contains {needle!r}")
for word in needles["path_words"]:
    for key, value in os.environ.items():
        if re.search(rf"(^|[/_.=-]){word}([/_.-]|$)", value, re.I):
            hits.append(f"env {key} names {word}")
note = "HITS=" + json.dumps(sorted(set(hits)))
'''


def needles(repo: Path) -> dict:
    """What would give the answer away: suite folder names and tier words in paths; answer-key
    text (expect keys, suite paths, baseline keys, case ids, expected rule ids) in contents."""
    from rubricgate.suite.load import load_all
    loaded = load_all(repo)
    rules = sorted({r for c in loaded.cases for r in c.expect.rules})
    ids = [c.id for c in loaded.cases]
    return {"path_words": ["pass", "warn", "block", "expect", "evals", "fixtures", "baseline", "tasks"],
            "content": ["fixtures/pass", "fixtures/warn", "fixtures/block", "expect:", "absent_rules",
                        "evals/tasks", '"rates"', *ids, *rules],
            "case_ids": ids}


@pytest.mark.usefixtures("bwrap_ready")
def test_a_snooping_reviewer_finds_no_answer_key(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES, tasks=TASKS)
    found = needles(repo)
    script = write_reviewer(tmp_path / "agents", SNOOP.replace("NEEDLES", repr(found)))
    use_reviewer(repo, script)
    out = run_suite(RunOptions(repo=repo))
    assert out.summary.isolation == "bwrap"
    texts = [json.loads(p.read_text())["final_text"] for p in (out.run_dir / "transcripts").glob("*.json")]
    assert len(texts) == len(TASKS) + len(FIXTURES)
    reports = [t.split("HITS=", 1)[1].split("\n", 1)[0] for t in texts]
    assert all(json.loads(r) == [] for r in reports), [r for r in reports if r != "[]"]


@pytest.mark.usefixtures("bwrap_ready")
def test_no_answer_key_through_another_spelling_of_the_suite_paths_or_a_link_to_it(tmp_path: Path) -> None:
    # `tasks: ./evals/tasks` put every task file into the workspace (the paths left out were
    # compared as written), and `notes/key.json -> ../baseline.json` the baseline.
    import yaml

    repo = make_repo(tmp_path / "repo", fixtures=["block/data-loader", "pass/weekly-revenue-summary"],
                     tasks=["block-missing-description"])
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["suite"].update(tasks="./evals//tasks/.", fixtures="fixtures/")
    config["baseline"] = "./baseline.json"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    (repo / "notes").mkdir()
    for name, target in (("key.json", "../baseline.json"), ("tier.yaml", "../fixtures/block/data-loader/expect.yaml"),
                         ("task.yaml", "../evals/tasks/block-missing-description.yaml")):
        (repo / "notes" / name).symlink_to(target)
    script = write_reviewer(tmp_path / "agents", SNOOP.replace("NEEDLES", repr(needles(repo))))
    use_reviewer(repo, script)
    out = run_suite(RunOptions(repo=repo))
    texts = [json.loads(p.read_text())["final_text"] for p in (out.run_dir / "transcripts").glob("*.json")]
    reports = [t.split("HITS=", 1)[1].split("\n", 1)[0] for t in texts]
    assert len(texts) == 3 and all(json.loads(r) == [] for r in reports), [r for r in reports if r != "[]"]


@pytest.mark.usefixtures("bwrap_ready")
def test_the_snoop_does_find_a_planted_answer(tmp_path: Path) -> None:
    # The search must be able to fail: an answer key left in the workspace is found.
    repo = make_repo(tmp_path / "repo", fixtures=["block/data-loader"], tasks=[])
    (repo / "notes").mkdir()
    (repo / "notes" / "answers.md").write_text("fixture-data-loader is fixtures/block\n")
    found = needles(repo)
    script = write_reviewer(tmp_path / "agents", SNOOP.replace("NEEDLES", repr(found)))
    use_reviewer(repo, script)
    out = run_suite(RunOptions(repo=repo))
    text = json.loads(next((out.run_dir / "transcripts").glob("*.json")).read_text())["final_text"]
    assert "answers.md contains 'fixtures/block'" in text


def test_the_workspace_maps_fixtures_to_neutral_paths(tmp_path: Path) -> None:
    from rubricgate.suite.load import load_all
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES, tasks=["warn-batch-one-bad-file"])
    cases = {c.id: c for c in load_all(repo).cases}
    block = cases["fixture-data-loader"]
    assert block.workspace_review == ["skills/data-loader/SKILL.md"]
    assert all(not p.startswith("fixtures") and "expect.yaml" not in p for p in block.workspace_paths)
    assert all(v.startswith("fixtures/block/data-loader/") for v in block.workspace_paths.values())
    task = cases["warn-batch-one-bad-file"]
    assert all(p.startswith("skills/") for p in task.workspace_review)
