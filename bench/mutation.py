"""`rubricgate mutate` on this repository's suite with the builtin reviewer: number of mutants,
mutation score (overall and on mechanical rules + the tier derivation), every survivor by
reason, and wall time at --jobs 1 and --jobs 4; before and after the fixtures that close the
coverage gaps, both measured in the same run.

"Before" is a copy of the repository without the fixtures listed in COVERAGE_FIXTURES (added so
that every mutant of a rule the builtin can judge is caught); "after" is the repository as it is.
Each configuration runs the unmutated control run first, then every mutant, each in a temp copy
in its own process (rubricgate/mutate/execute.py). No API key, no network.

    python bench/mutation.py [--jobs 1 4] [--only-after]

Target: score 100% on mechanical rules after the fixtures; every survivor explained.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rubricgate.mutate.execute import copy_repo  # noqa: E402
from rubricgate.mutate.flow import MutateRequest, mutate  # noqa: E402

# Fixtures added for rule coverage: each makes a rule the builtin judges the only finding of a case.
COVERAGE_FIXTURES = [
    "fixtures/block/invoice--reconciler",  # fm-name-format as the only finding (none isolated it)
    "fixtures/block/vendor-spend-digest",  # fm-name-required: no fixture covered it, one task did
]


def without_fixtures(dest: Path) -> Path:
    """A copy of the repository as it was before the coverage fixtures."""
    copy = copy_repo(ROOT, dest, "reports")
    for rel in COVERAGE_FIXTURES:
        shutil.rmtree(copy / rel, ignore_errors=True)
    return copy


def measure(repo: Path, jobs: int, out: Path) -> dict:
    report, _ = mutate(MutateRequest(repo=repo, jobs=jobs, out=out))
    survivors = [m for m in report.mutants if m.status not in ("killed", "rejected")]
    return {"mutants": len(report.mutants), "skipped": len(report.skipped), "killed": report.killed,
            "score": report.score, "mechanical": report.mechanical_score, "wall": report.wall_seconds,
            "control": report.control_seconds, "survivors": survivors}


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--only-after", action="store_true", help="Skip the measurement without the fixtures.")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-mutation-") as tmp:
        before = None if args.only_after else without_fixtures(Path(tmp) / "before")
        for label, repo in (("before", before), ("after", ROOT)):
            for jobs in args.jobs if repo is not None else []:
                rows.append((label, jobs, measure(repo, jobs, Path(tmp) / f"out-{label}-{jobs}")))
    print(f"{'suite':<7} {'jobs':>4} {'mutants':>7} {'skipped':>7} {'caught':>6} {'score':>7} {'mechanical':>10} "
          f"{'wall s':>7} {'control s':>9}")
    for label, jobs, r in rows:
        print(f"{label:<7} {jobs:>4} {r['mutants']:>7} {r['skipped']:>7} {r['killed']:>6} {_pct(r['score']):>7} "
              f"{_pct(r['mechanical']):>10} {r['wall']:>7.1f} {r['control']:>9.1f}")
    for label, jobs, r in rows:
        if jobs != rows[0][1]:
            continue  # survivors do not depend on --jobs
        reasons = Counter((m.status, m.explanation.split(":")[0]) for m in r["survivors"])
        print(f"\n{label}: {len(r['survivors'])} survivor(s)")
        for (status, why), n in sorted(reasons.items()):
            print(f"  {n:>3} {status}: {why}")
        for m in r["survivors"]:
            if "builtin reviewer" not in m.explanation:
                print(f"      {m.id}: {m.explanation}")


if __name__ == "__main__":
    main()
