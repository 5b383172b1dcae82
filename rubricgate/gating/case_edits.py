"""Cases edited since the baseline was measured: not judged against counts of another case.

baseline.json keeps, per case, the digest of what the case asked and reviewed when its counts were
measured: its spec and expectations, and every file in its reviewed files' folders
(runner/digests.py case_digest). Its wording, tags and grading rubric are left out: a change to how
answers are graded (`rubric:` in rubricgate.yaml or a task's) is not an edit of every case. A
case whose digest differs now asks something else: re-expecting data-loader from BLOCK to WARN, or
rewriting the reviewed SKILL.md, would otherwise read as a collapse of that case (every trial
"failing" against the old answer), or hide one. Such a case is set aside from the baseline for
this run and judged as a new case (`gate.new_cases`); `rubricgate baseline update` then replaces
its counts rather than pooling them with the old ones. A baseline without digests (written
before they were kept) sets nothing aside.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rubricgate.models.baseline import Baseline
from rubricgate.runner.digests import case_digest
from rubricgate.suite.load import Loaded


def with_case_digests(loaded: Loaded, repo: Path) -> Loaded:
    """`loaded` with each case's digest, and its baseline without the cases edited since it was measured."""
    seen: dict[tuple[str, bool], str] = {}  # a folder many cases review is hashed once
    digests = {c.id: case_digest(repo, c, meaning_only=True, grading=False, seen=seen) for c in loaded.cases}
    edited = edited_cases(loaded.baseline, digests)
    baseline = without_cases(loaded.baseline, edited) if loaded.baseline is not None and edited else loaded.baseline
    return replace(loaded, baseline=baseline, case_digests=digests, edited=edited)


def edited_cases(baseline: Baseline | None, digests: dict[str, str]) -> list[str]:
    """The cases of both whose digest the baseline kept and that differ from it now, in suite order."""
    if baseline is None:
        return []
    kept = baseline.case_digests
    return [c for c, now in digests.items() if c in kept and c in baseline.cases and kept[c] != now]


def without_cases(baseline: Baseline, ids: list[str]) -> Baseline:
    """The baseline as the gate sees it with `ids` set aside: no counts, citations or digest for them."""
    gone = set(ids)
    return baseline.model_copy(update={
        "cases": {c: v for c, v in baseline.cases.items() if c not in gone},
        "cited": {c: v for c, v in baseline.cited.items() if c not in gone},
        "case_digests": {c: v for c, v in baseline.case_digests.items() if c not in gone}})
