"""build_summary and suite loading against suite size: both must grow linearly.

Builds a synthetic suite of N task files (3 trials each, results made up, nothing is run) and
times `load_all` (YAML through libyaml's safe loader when present, against the pure-Python safe
loader measured in the same run), `build_summary` and writing the reports (summary.json, HTML
with its charts, comment, JUnit) at each size, with the process's peak RSS so far (sizes ascend,
so each figure is the peak up to that size). Linear means the per-case
time stays flat as N grows; the last column is the per-case time relative to the smallest N.

    python bench/summary_scaling.py [--sizes 200,1000,2000]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from rubricgate.suite import yaml_json  # noqa: E402
from rubricgate.suite.load import load_all  # noqa: E402
from rubricgate.models.results import Grade, TrialResult  # noqa: E402
from rubricgate.pipeline import RunOptions, plan  # noqa: E402
from rubricgate.reports.bundle import write_reports  # noqa: E402
from rubricgate.records.files import write_summary  # noqa: E402
from rubricgate.runner.run_state import RunState
from rubricgate.gating.summarize import build_summary  # noqa: E402

TRIALS = 3


def make_repo(dest: Path, cases: int) -> Path:
    shutil.copytree(ROOT / "reviewer", dest / "reviewer", ignore=shutil.ignore_patterns(".changed-skills.txt"))
    shutil.copy(ROOT / "rubricgate.yaml", dest / "rubricgate.yaml")
    tasks = dest / "evals" / "tasks"
    tasks.mkdir(parents=True)
    (dest / "fixtures").mkdir()
    (dest / "skill.md").write_text("# s\n")
    for i in range(cases):
        (tasks / f"t{i:05}.yaml").write_text(
            f"id: t{i:05}\nwhy: synthetic case {i}\nreview: [skill.md]\nexpect:\n  tier: PASS\n"
            f"tags: [group-{i % 20}, synthetic]\ntrials: {TRIALS}\n")
    counts = {"verdict": {"passes": TRIALS - 1, "trials": TRIALS}, "tool_use": {"passes": TRIALS, "trials": TRIALS},
              "trajectory": {"passes": TRIALS, "trials": TRIALS}}
    (dest / "baseline.json").write_text(json.dumps({"format_version": 2, "trials": TRIALS, "history": [],
                                                    "rates": {"verdict": 0.9, "tool_use": 1.0, "trajectory": 1.0},
                                                    "cases": {f"t{i:05}": counts for i in range(cases)}}))
    return dest


def results_for(jobs) -> list[TrialResult]:
    return [TrialResult(case_id=j.case.id, trial=j.trial, outcome="PASS", duration_s=1.0,
                        grades={"verdict": Grade(passed=(i % 7 != 0), category=None if i % 7 else "wrong_tier"),
                                "tool_use": Grade(passed=True), "trajectory": Grade(passed=True)})
            for i, j in enumerate(jobs)]


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,1000,2000")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    print(f"libyaml available: {bool(getattr(yaml, '__with_libyaml__', False))}")
    print(f"{'cases':>6} {'load s':>8} {'pure-Py load s':>15} {'summary s':>10} {'summary ms/case':>16} "
          f"{'x smallest':>11} {'reports s':>10} {'peak RSS MB':>12}")
    first = None
    for n in sizes:
        tmp = Path(tempfile.mkdtemp(prefix="rubricgate-scaling-"))
        try:
            repo = make_repo(tmp / "repo", n)
            load_s, loaded = timed(lambda: load_all(repo))
            fast = yaml_json._SAFE_LOADER
            yaml_json._SAFE_LOADER = yaml.SafeLoader
            pure_s, _ = timed(lambda: load_all(repo))
            yaml_json._SAFE_LOADER = fast
            jobs = plan(loaded, RunOptions(repo=repo))
            results = results_for(jobs)
            state = RunState(run_id="bench", started="2026-01-01T00:00:00+00:00")
            summary_s, summary = timed(lambda: build_summary(loaded, jobs, results, state))
            out = tmp / "run"
            out.mkdir()
            reports_s, _ = timed(lambda: (write_summary(out, summary), write_reports(summary, out, env={})))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        per_case = summary_s / n
        first = first or per_case
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{n:>6} {load_s:8.2f} {pure_s:15.2f} {summary_s:10.2f} {per_case * 1000:16.3f} {per_case / first:10.2f}x "
              f"{reports_s:10.2f} {peak:12.1f}")


if __name__ == "__main__":
    main()
