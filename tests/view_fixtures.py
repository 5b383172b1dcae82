"""Run folders for the viewer's tests: real pipeline runs and hand-built hostile ones."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import reports_fixtures as rf  # noqa: E402

from rubricgate.models.results import CaseSummary, Summary  # noqa: E402

HOSTILE_ID = 'evil-<img src=x onerror="document.title=\'PWNED-ID\'">'


def hostile_summary(run_id: str, started: str, **overrides) -> Summary:
    """rf.summary() with a case whose id is markup; its findings quote and transcript are hostile too."""
    cases = rf.cases()
    bad = cases[1]
    trials = [t.model_copy(update={"case_id": HOSTILE_ID, "transcript": f"transcripts/evil-{t.trial}.json"})
              for t in bad.trials]
    evil = CaseSummary(**(bad.model_dump() | {"id": HOSTILE_ID, "trials": []}))
    evil.trials = trials
    return rf.summary(run_id=run_id, started_at=started, cases=[*cases, evil], **overrides)


def write_runs(reports: Path, count: int = 2) -> list[Path]:
    """`count` hostile run folders under reports/, a day apart, the newest a passing one."""
    out = []
    for i in range(count):
        run_id = f"2026010{i + 1}T000000Z-abc12{i}"
        s = hostile_summary(run_id, f"2026-01-0{i + 1}T00:00:00Z")
        if i == count - 1:
            s = s.model_copy(update={"agent_version": "1.1.0", "decision": rf.passing_summary().decision})
        out.append(rf.write_run_dir(reports / run_id, s))
    return out
