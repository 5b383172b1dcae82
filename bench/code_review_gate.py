"""Issue 40's target for a code-diff reviewer: how often the PR workflow's deciding command
(`compare --base`) exits 1 on a prompt edit that deletes two rules, and 0 on a benign rewording.

The reviewer and the model are tests/e2e/code_review.py's: a TOML prompt with a Jinja include,
one tool-less chat/completions call, YAML answers with free-text issue headers, read by
`verdict:` in rubricgate.yaml; twelve fixture cases; a stochastic scripted model on 127.0.0.1
(per triggered rule a miss with probability --miss, per answer a spurious issue with probability
--spurious). Each repetition draws a new model seed and interleaving seed and runs the command
exactly as the workflow `init --agent command` wrote runs it (`--trials 3`). Prints, per edit,
the share of runs exiting 0, 1 and 2 with a 95% Wilson interval, and the mean and spread of a
run's wall time and trials.

    python bench/code_review_gate.py [--runs 5] [--margin 0.1] [--max-trials 10]

Targets: the deleting edit exits 1 in >= 80% of runs; the rewording exits 0 in >= 80%.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rubricgate.gating.stats import wilson  # noqa: E402
from tests.conftest import git  # noqa: E402
from tests.e2e.code_review import (  # noqa: E402
    RULES_J2_REWORDED,
    RULES_J2_TWO_DELETED,
    ScriptedReviewModel,
    adopt,
    cli,
    commit,
    edit_rules,
    environment,
)

EDITS = {"delete two rules": (RULES_J2_TWO_DELETED, 1), "benign rewording": (RULES_J2_REWORDED, 0)}


def one_run(repo: Path, env: dict, model: ScriptedReviewModel, text: str, seed: int) -> dict:
    """The PR gate once: a fresh model seed and interleaving seed, the edit on a branch."""
    model.seed, model.calls = seed, type(model.calls)()
    git(repo, "checkout", "-qf", "main")
    edit_rules(repo, text, f"edit {seed}")
    before, started = model.requests, time.monotonic()
    got = cli("compare", "--repo", str(repo), "--base", "main", "--trials", "3", "--seed", str(seed),
              "--json", str(repo / "reports/compare.json"), env=env)
    decision = json.loads((repo / "reports/compare.json").read_text())["decision"] if got.exit_code in (0, 1, 2) else {}
    return {"exit": got.exit_code, "seconds": time.monotonic() - started, "trials": model.requests - before,
            "why": "; ".join(decision.get("reasons", []))[:160]}


def summarise(name: str, runs: list[dict], target: int) -> list[str]:
    n = len(runs)
    lines = [f"{name}: {n} runs of `compare --base main --trials 3`"]
    for code in (0, 1, 2):
        k = sum(r["exit"] == code for r in runs)
        low, high = wilson(k, n, 0.95)
        mark = "  <- target >= 80%" if code == target else ""
        lines.append(f"  exit {code}: {k}/{n} = {k / n:.0%} (95% Wilson {low:.0%}-{high:.0%}){mark}")
    secs, trials = [r["seconds"] for r in runs], [r["trials"] for r in runs]
    spread = lambda xs: f"mean {statistics.mean(xs):.1f}, sd {statistics.pstdev(xs):.1f}, min {min(xs):.0f}, max {max(xs):.0f}"  # noqa: E731
    lines += [f"  wall seconds: {spread(secs)}", f"  model calls (trials, both sides): {spread(trials)}"]
    lines += [f"  run {i + 1}: exit {r['exit']}: {r['why']}" for i, r in enumerate(runs) if r["exit"] != target][:5]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="repetitions per edit")
    parser.add_argument("--margin", type=float, default=0.1, help="gate.margin of the adopted config")
    parser.add_argument("--max-trials", type=int, default=10, help="gate.max_trials_per_case")
    parser.add_argument("--miss", type=float, default=0.04)
    parser.add_argument("--spurious", type=float, default=0.03)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rubricgate-bench-cr-") as tmp, \
            ScriptedReviewModel(miss=args.miss, spurious=args.spurious, seed=0) as model:
        repo = adopt(Path(tmp) / "repo", model.origin, {"margin": args.margin, "max_trials_per_case": args.max_trials})
        env = environment(model.origin)
        os.environ.update(env)
        assert cli("baseline", "update", "--repo", str(repo), env=env).exit_code == 0
        commit(repo, "baseline")
        print(f"code-diff reviewer, 12 cases, miss {args.miss}, spurious {args.spurious}, gate.margin {args.margin}, "
              f"max_trials_per_case {args.max_trials}")
        for name, (text, target) in EDITS.items():
            runs = [one_run(repo, env, model, text, 1000 + i) for i in range(args.runs)]
            print("\n".join(summarise(name, runs, target)), flush=True)


if __name__ == "__main__":
    main()
