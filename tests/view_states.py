"""Run folders in every state a report and a page must tell apart, made by the real pipeline on
a small repository: a BASELINE measurement, a PASS, a REGRESSION (the README tour's severity
edit), an INCONCLUSIVE (an edit to a rule no case exercises), a run whose trials errored (the
fake CLI answering with the recorded API error) and an interrupted one (Ctrl-C in its third
trial), and a `compare --base` of the regression, all in one reports folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).parent))
import fake_reviewer  # noqa: E402
from conftest import git, make_repo, set_severity  # noqa: E402

from rubricgate.agents.builtin import BuiltinAgent  # noqa: E402
from rubricgate.flows.baseline_update import BaselineRequest, update_baseline  # noqa: E402
from rubricgate.pipeline import RunOptions, run_suite  # noqa: E402

FIXTURES = ["pass/weekly-revenue-summary", "pass/ab-test-readout", "block/data-loader", "block/forecast-notebook-runner",
            "warn/oncall-handoff", "warn/churn-cohort-query"]
STATES = ("baseline", "pass", "regression", "inconclusive", "errored", "interrupted")


class _Interrupted(BuiltinAgent):
    """Ctrl-C while the third case's trial runs."""

    calls = 0

    def run(self, request):  # type: ignore[no-untyped-def]
        type(self).calls += 1
        if type(self).calls == 3:
            raise KeyboardInterrupt
        return super().run(request)


def _restore(repo: Path) -> None:
    git(repo, "checkout", "--", "reviewer", "rubricgate.yaml")


def build_states(base: Path) -> dict[str, Path]:
    """{state: its run folder} (and "compare": the folder of a `compare --base HEAD` of the
    regression), every folder under `<repo>/reports`."""
    repo = make_repo(base / "repo", fixtures=FIXTURES)
    out = {"baseline": Path(update_baseline(BaselineRequest(repo=repo)).source)}
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "baseline")
    out["pass"] = run_suite(RunOptions(repo=repo)).run_dir
    set_severity(repo, "fm-description-required", "warning")
    out["regression"] = run_suite(RunOptions(repo=repo)).run_dir
    subprocess.run([sys.executable, "-m", "rubricgate", "compare", "--base", "HEAD", "--repo", str(repo), "--json",
                    str(repo / "reports" / "compare.json")], capture_output=True, check=False)
    out["compare"] = next((repo / "reports").glob("compare-*"))
    _restore(repo)
    set_severity(repo, "scope-single-purpose", "warning")
    out["inconclusive"] = run_suite(RunOptions(repo=repo)).run_dir
    _restore(repo)
    fake_reviewer.install(repo, ["answer", "answer", "api_error"], retries=0, preflight=False)
    out["errored"] = run_suite(RunOptions(repo=repo)).run_dir
    _restore(repo)
    _Interrupted.calls = 0
    with mock.patch("rubricgate.pipeline.get_agent", lambda name, cfg: _Interrupted(cfg)):
        out["interrupted"] = run_suite(RunOptions(repo=repo, jobs=1)).run_dir
    return out
