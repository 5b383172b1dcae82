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
    # One trial at a time, so the two that answer are the suite's first two (its PASS fixtures, which
    # the fake CLI answers right): the rest error, and no judged trial fails.
    fake_reviewer.install(repo, ["answer", "answer", "api_error"], retries=0, preflight=False)
    out["errored"] = run_suite(RunOptions(repo=repo, jobs=1)).run_dir
    _restore(repo)
    _Interrupted.calls = 0
    with mock.patch("rubricgate.pipeline.get_agent", lambda name, cfg: _Interrupted(cfg)):
        out["interrupted"] = run_suite(RunOptions(repo=repo, jobs=1)).run_dir
    return out


MONTH = [("baseline", "2026-11-02"), ("pass", "2026-11-09"), ("regression", "2026-11-20"), ("inconclusive", "2026-11-23"),
         ("errored", "2026-11-30"), ("interrupted", "2026-12-01")]


def as_a_month(states: dict[str, Path]) -> None:
    """Spread the states over a month of weekly runs on main, the regression on a pull request's
    branch (for docs/viewer.md's screenshots: the trend then reads as a history)."""
    import json

    for state, day in MONTH:
        path = states[state] / "summary.json"
        data = json.loads(path.read_text())
        data["started_at"], data["finished_at"] = f"{day}T06:00:00+00:00", f"{day}T06:04:00+00:00"
        if state == "regression":
            data["config"] = {**data["config"], "branch": "rubric/loosen-description", "pr": 42}
        path.write_text(json.dumps(data, indent=2))


def screenshots(out: Path) -> None:
    """docs/viewer.md's screenshots, of the states as a month: `python tests/view_states.py docs/images`."""
    import tempfile

    from cdp_browser import Browser, chromium_path, set_width

    from rubricgate.view import urls
    from rubricgate.view.server import serve_in_thread, url_of
    from rubricgate.view.site import site_for

    states = build_states(Path(tempfile.mkdtemp(prefix="rubricgate-docs-")))
    as_a_month(states)
    srv, _ = serve_in_thread(site_for([states["pass"].parent]), 0)
    browser = Browser(chromium_path(), width=1280, height=860)
    pages = {"viewer.png": ("", 1280), "viewer-run.png": (urls.run(states["regression"].name), 1280),
             "viewer-trend.png": (urls.trend(), 1280), "viewer-comparison.png": (urls.compare_record(states["compare"].name), 1280),
             "viewer-interrupted.png": (urls.run(states["interrupted"].name), 1280),
             "viewer-phone.png": (urls.run(states["regression"].name), 390)}
    try:
        for name, (path, width) in pages.items():
            set_width(browser, width, 860 if width > 700 else 844)
            browser.open(url_of(srv) + path)
            browser.screenshot(out / name, full=False)
        set_width(browser, 1280, 860)
        browser.call("Page.navigate", url=(states["regression"] / "report.html").as_uri())
        browser.wait_for("document.readyState === 'complete'")
        browser.screenshot(out / "report.png", full=False)
    finally:
        browser.close()
        srv.shutdown()


if __name__ == "__main__":
    screenshots(Path(sys.argv[1]))
