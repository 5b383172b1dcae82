"""Harness overhead per trial, against a baseline measured in the same run.

Baselines: (a) the builtin reviewer reviewing one case in a prepared workspace (the work an
agent must do anyway) and (b) that plus the irreducible cost of a fresh copy: `cp -r` of the
same files and `rm -r` afterwards. Measured: the full `run_suite` pipeline per trial (workspace
copy, agent, tree check, grading, transcript/event/report writes). Prints seconds per trial, the ratio, and the
peak traced memory of a full run.

    python bench/run_overhead.py [--trials 5]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rubricgate.agents.base import AgentRequest  # noqa: E402
from rubricgate.agents.builtin import BuiltinAgent  # noqa: E402
from rubricgate.pipeline import RunOptions, run_suite  # noqa: E402
from rubricgate.runner.workspace import list_tree, make_workspace  # noqa: E402

CHANGED = "reviewer/.changed-skills.txt"


def clean_copy(dest: Path) -> Path:
    """A clone of the committed tree, so a concurrent edit here cannot trip the tree check."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
    return dest


def bare_review_seconds(repo: Path, reps: int) -> float:
    ws = make_workspace(repo, list_tree(repo), {}, (CHANGED, ["fixtures/block/data-loader/SKILL.md"]))
    request = AgentRequest(case_id="b", trial=1, workspace=ws.root, prompt_file=ws.root / "reviewer/prompts/evaluate.md",
                           rubric_file=ws.root / "reviewer/evaluator/references/rubric.md",
                           changed_files_file=ws.root / CHANGED, scratch=ws.scratch)
    agent = BuiltinAgent()
    start = time.perf_counter()
    for _ in range(reps):
        agent.run(request)
    ws.remove()
    return (time.perf_counter() - start) / reps


def plain_copy_seconds(repo: Path, reps: int) -> float:
    """cp -r + rm -r of the tracked tree: what any isolating harness must pay per trial."""
    staged = make_workspace(repo, list_tree(repo), {}, (CHANGED, []))  # the same files, no .git
    start = time.perf_counter()
    for _ in range(reps):
        dest = Path(tempfile.mkdtemp(prefix="rubricgate-bench-cp-"))
        subprocess.run(["cp", "-r", str(staged.root), str(dest / "copy")], check=True)
        subprocess.run(["rm", "-r", str(dest)], check=True)
    elapsed = (time.perf_counter() - start) / reps
    staged.remove()
    return elapsed


def pipeline_seconds(repo: Path, trials: int) -> tuple[float, int, int]:
    """Seconds per trial of a full run, then peak traced memory of a second, traced run."""
    start = time.perf_counter()
    outcome = run_suite(RunOptions(repo=repo, trials=trials, reports_dir=repo.parent / "reports"))
    elapsed = time.perf_counter() - start
    tracemalloc.start()  # tracing slows Python several-fold, so it gets a run of its own
    run_suite(RunOptions(repo=repo, trials=trials, reports_dir=repo.parent / "reports"))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    n = sum(len(c.trials) for c in outcome.summary.cases)
    return elapsed / n, n, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="rubricgate-bench-"))
    try:
        repo = clean_copy(tmp / "repo")
        bare = bare_review_seconds(repo, 50)
        floor = bare + plain_copy_seconds(repo, 20)
        per_trial, n, peak = pipeline_seconds(repo, args.trials)
        files = len(list_tree(repo, {"reports"}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"repository files copied per trial : {files}")
    print(f"baseline: bare builtin review     : {bare * 1000:8.2f} ms")
    print(f"pipeline: per trial ({n} trials)  : {per_trial * 1000:8.2f} ms")
    print(f"baseline: cp -r + rm -r + review  : {floor * 1000:8.2f} ms")
    print(f"ratio pipeline / (copy + review)  : {per_trial / floor:8.2f}x")
    print(f"harness overhead beyond the copy  : {(per_trial - floor) * 1000:8.2f} ms per trial")
    print(f"peak traced memory, whole run     : {peak / 1e6:8.1f} MB")


if __name__ == "__main__":
    main()
