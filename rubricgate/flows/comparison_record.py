"""A comparison as a record of its own (models/comparison.py): `compare --base` keeps
`comparison.json` in its folder beside the base and head runs it made, and `--json FILE`
writes the same record, so the viewer lists the comparison that decided a pull request and opens
it with its runs (rubricgate/view/catalog.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from rubricgate.gating.compare import Comparison
from rubricgate.models.comparison import ComparisonRecord, FlipRecord, TestRecord
from rubricgate.records.files import write_json_atomic
from rubricgate.reports.explain import ci_ref, local_branch, run_url

RECORD_FILE = "comparison.json"


def comparison_record(comparison: Comparison, *, started_at: str = "", finished_at: str = "", record_id: str = "",
                      runs: tuple[list[Path], list[Path]] = ([], []), env: Mapping[str, str] | None = None,
                      repo: Path | None = None) -> ComparisonRecord:
    """The record of `comparison`: its flips, tests and decision, when and where it ran (branch
    and pull request as a run records them), and the run folders of each side (absolute here;
    `write_record` makes them relative to the file)."""
    env = os.environ if env is None else env
    where = ci_ref(env)
    branch = where.get("branch") or (local_branch(repo) if repo is not None else None)
    pr = where.get("pr")
    return ComparisonRecord(
        id=record_id, base=comparison.base_label, head=comparison.head_label, started_at=started_at,
        finished_at=finished_at, branch=str(branch) if branch else None,
        pr=pr if isinstance(pr, int) else None, run_url=run_url(env),
        base_runs=[str(p) for p in runs[0]], head_runs=[str(p) for p in runs[1]], order=comparison.order,
        counts=comparison.counts(), flips=[FlipRecord.model_validate(asdict(f)) for f in comparison.flips],
        tests=[TestRecord.model_validate(asdict(t)) for t in comparison.tests], decision=comparison.decision)


def write_record(path: Path, record: ComparisonRecord) -> Path:
    """Write the record to `path`, its run folders relative to the file's folder (a path that is
    not below it is kept absolute: the viewer finds those only when it is given them)."""
    folder = path.resolve().parent

    def rel(found: str) -> str:
        try:
            return Path(found).resolve().relative_to(folder).as_posix()
        except ValueError:
            return found
    kept = record.model_copy(update={"base_runs": [rel(p) for p in record.base_runs],
                                     "head_runs": [rel(p) for p in record.head_runs]})
    write_json_atomic(path, kept.model_dump(mode="json"))
    return path


def side_runs(side_dir: Path) -> list[Path]:
    """The run folders one side of a `compare --base` wrote (one per round), oldest first."""
    if not side_dir.is_dir():
        return []
    return sorted(p for p in side_dir.iterdir() if p.is_dir() and (p / "summary.json").is_file())
