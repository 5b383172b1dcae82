"""Harness overhead per trial, against baselines measured in the same run.

Part 1, the builtin reviewer: (a) reviewing one case in a prepared workspace (the work an agent
must do anyway) and (b) that plus the irreducible cost of a fresh copy: `cp -r` of the same files
and `rm -r` afterwards, against the full `run_suite` pipeline per trial (workspace clone, agent,
tree check, grading, transcript/event/report writes), and the peak traced memory of a full run.

Part 2, the cost of isolation: a stub agent CLI (the `command` agent printing a Claude-format
transcript) run through the whole pipeline with `agent.sandbox: none` (copy-only) and
`agent.sandbox: bwrap`, alternating, median of the rounds; the difference per trial is what the
bubblewrap sandbox adds (target: <= 15 ms per trial).

    python bench/run_overhead.py [--trials 3] [--rounds 3]
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
from rubricgate.isolation.sandbox import probe_bwrap  # noqa: E402
from rubricgate.runner.workspace import RunTree, list_tree  # noqa: E402
from rubricgate.suite.cases import neutral_layout  # noqa: E402
from rubricgate.models.config import Config  # noqa: E402

KEEP_OUT = {"fixtures", "evals", "tests", "bench", "reports", "baseline.json", "rubricgate.yaml"}
STUB = r"""import json, sys
def emit(o): sys.stdout.write(json.dumps(o) + "\n")
text = "ok\n```json\n" + json.dumps({"tier": "PASS", "summary": "s", "files_reviewed": [], "findings": []}) + "\n```\n"
emit({"type": "system", "subtype": "init", "cwd": ".", "session_id": "s", "tools": ["Read"], "model": "m"})
for i in range(17):
    emit({"type": "assistant", "message": {"id": f"m{i}", "model": "m", "role": "assistant",
          "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": "x"}}]}})
    emit({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"}]}})
emit({"type": "assistant", "message": {"id": "end", "model": "m", "role": "assistant", "content": [{"type": "text", "text": text}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "result": text, "num_turns": 18,
      "total_cost_usd": 0.0, "usage": {"input_tokens": 1, "output_tokens": 1}, "permission_denials": []})
"""

CHANGED = "reviewer/.changed-skills.txt"


def clean_copy(dest: Path) -> Path:
    """A clone of the committed tree, so a concurrent edit here cannot trip the tree check."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
    return dest


def _workspace(repo: Path, review: list[str]):
    layout = neutral_layout(repo, Config(), review, {}, "bench")
    tree = RunTree(repo, list_tree(repo, KEEP_OUT), sorted(layout["workspace_paths"].values()))
    return tree, tree.workspace(layout["files"], layout["workspace_paths"], (CHANGED, layout["workspace_review"]))


def bare_review_seconds(repo: Path, reps: int) -> float:
    tree, ws = _workspace(repo, ["fixtures/block/data-loader/SKILL.md"])
    request = AgentRequest(case_id="b", trial=1, workspace=ws.root, prompt_file=ws.root / "reviewer/prompts/evaluate.md",
                           rubric_file=ws.root / "reviewer/evaluator/references/rubric.md",
                           changed_files_file=ws.root / CHANGED, scratch=ws.scratch)
    agent = BuiltinAgent()
    start = time.perf_counter()
    for _ in range(reps):
        agent.run(request)
    tree.remove()
    return (time.perf_counter() - start) / reps


def plain_copy_seconds(repo: Path, reps: int) -> float:
    """cp -r + rm -r of the tracked tree: what any isolating harness must pay per trial."""
    tree, staged = _workspace(repo, [])  # the same files, no .git
    start = time.perf_counter()
    for _ in range(reps):
        dest = Path(tempfile.mkdtemp(prefix="rubricgate-bench-cp-"))
        subprocess.run(["cp", "-r", str(staged.root), str(dest / "copy")], check=True)
        subprocess.run(["rm", "-r", str(dest)], check=True)
    elapsed = (time.perf_counter() - start) / reps
    tree.remove()
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


def isolation_seconds(repo: Path, stub: Path, trials: int, rounds: int) -> dict[str, float]:
    """Median seconds per trial of the stub agent, copy-only and in bubblewrap, alternating."""
    import statistics

    import yaml
    times: dict[str, list[float]] = {"none": [], "bwrap": []}
    config_path = repo / "rubricgate.yaml"
    config = yaml.safe_load(config_path.read_text())
    for _ in range(rounds):
        for mode in times:
            config["agent"] = {"name": "command", "command": [sys.executable, str(stub)], "format": "claude",
                               "sandbox": mode}
            config_path.write_text(yaml.safe_dump(config))
            start = time.perf_counter()
            outcome = run_suite(RunOptions(repo=repo, trials=trials, reports_dir=repo.parent / "reports",
                                           require_baseline=False))
            n = sum(len(c.trials) for c in outcome.summary.cases)
            times[mode].append((time.perf_counter() - start) / n)
    return {mode: statistics.median(v) for mode, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="rubricgate-bench-"))
    try:
        repo = clean_copy(tmp / "repo")
        bare = bare_review_seconds(repo, 50)
        floor = bare + plain_copy_seconds(repo, 20)
        per_trial, n, peak = pipeline_seconds(repo, args.trials)
        files = len(list_tree(repo, {"reports"} | KEEP_OUT))
        stub = tmp / "stub.py"
        stub.write_text(STUB)
        problem = probe_bwrap()
        iso = isolation_seconds(repo, stub, args.trials, args.rounds) if not problem else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"repository files copied per trial : {files}")
    print(f"baseline: bare builtin review     : {bare * 1000:8.2f} ms")
    print(f"pipeline: per trial ({n} trials)  : {per_trial * 1000:8.2f} ms")
    print(f"baseline: cp -r + rm -r + review  : {floor * 1000:8.2f} ms")
    print(f"ratio pipeline / (copy + review)  : {per_trial / floor:8.2f}x")
    print(f"harness overhead beyond the copy  : {(per_trial - floor) * 1000:8.2f} ms per trial")
    print(f"peak traced memory, whole run     : {peak / 1e6:8.1f} MB")
    if iso is None:
        print(f"isolation: not measured ({problem})")
        return
    print(f"stub CLI per trial, copy-only     : {iso['none'] * 1000:8.2f} ms")
    print(f"stub CLI per trial, bubblewrap    : {iso['bwrap'] * 1000:8.2f} ms")
    added = (iso["bwrap"] - iso["none"]) * 1000
    print(f"sandbox adds per trial            : {added:8.2f} ms  (target <= 15 ms: {'met' if added <= 15 else 'MISSED'})")


if __name__ == "__main__":
    main()
