"""report.html at scale, and the trend chart: what a large run's report weighs and how soon it
is usable, against the report of --baseline-ref measured in the same run.

For each suite size (3 trials a case, one case in 20 failing, with findings), a fresh process
imports the report writer and renders report.html once (wall, CPU and peak RSS: what a run's end
pays for it; no trend), then headless chromium opens the file: its size, its DOM elements, and
when it is interactive (DOMContentLoaded: the page's one script runs at the end of the body, so
its filters work from then) and fully loaded. --baseline-ref renders the same summary with that
commit's report writer (a git worktree of it), so the figures of the report before issue 41
(2.83 MB and 103,850 elements for 1,000 cases, the matplotlib charts drawn on every run) sit
beside today's. The trend chart is drawn for 52 weekly runs, first drawn and then from the
viewer's cache. Medians of --reps, with min-max.

    python bench/report_charts.py [--sizes 200,1000] [--reps 3] [--baseline-ref 75c5671]

Targets (issue 41): a 1,000-case report.html <= 1 MB and interactive in <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE_REF = "75c5671"  # main before issue 41: charts drawn on every run, every case open
TARGET_BYTES, TARGET_S = 1_000_000, 1.0


def _summary(cases: int, run: int = 0):
    """A synthetic summary: `cases` cases of 3 trials; one case in 20 fails its verdict with a finding."""
    from rubricgate.models.results import CaseSummary, Decision, Grade, RateRow, Summary, TrialResult
    from rubricgate.models.verdict import Finding

    def trial(case: str, n: int, ok: bool) -> TrialResult:
        grade = Grade(passed=ok) if ok else Grade(passed=False, category="wrong_tier", reason="expected BLOCK, got WARN")
        findings = [] if ok else [Finding(severity="warning", rule="fm-description-required", file="skills/x/SKILL.md",
                                          line=2, quote="name: x", issue="no description")]
        return TrialResult(case_id=case, trial=n, outcome="PASS" if ok else "WARN", duration_s=1.0, findings=findings,
                           grades={"verdict": grade, "tool_use": Grade(passed=True), "trajectory": Grade(passed=True)},
                           transcript=f"transcripts/{case}-{n}.json")
    rows = [CaseSummary(id=f"case-{i:05d}", source="fixture", expected_tier="BLOCK",
                        trials=[trial(f"case-{i:05d}", n, (i + run) % 20 != 0) for n in (1, 2, 3)])
            for i in range(cases)]
    rates = {"verdict": RateRow(rate=0.95, passes=57 * cases // 20, trials=3 * cases, low=0.93, high=0.96, baseline=1.0,
                                delta=-0.05, status="regression"),
             "tool_use": RateRow(rate=1.0, passes=3 * cases, trials=3 * cases, low=0.99, high=1.0, baseline=1.0)}
    return Summary(run_id=f"bench-{run}", started_at=f"2026-12-{run + 1:02d}T10:00:00+00:00", agent="builtin",
                   decision=Decision(status="regression", exit_code=1, reasons=["verdict dropped"]), rates=rates,
                   cases=rows)


def child(cases: int, out: str) -> None:
    """One render in this process (PYTHONPATH picks the code): its cost as JSON on stdout."""
    summary = _summary(cases)
    start, cpu = time.perf_counter(), time.process_time()
    from rubricgate.reports import html

    page = html.render_html(summary, None)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    Path(out).write_text(page, encoding="utf-8")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"wall": wall, "cpu": cpu, "rss_mb": rss, "bytes": len(page.encode("utf-8"))}))


def render(cases: int, tree: Path, out: Path) -> dict:
    got = subprocess.run([sys.executable, __file__, "--child", str(cases), "--out", str(out)], capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree)
    return json.loads(got.stdout.strip().splitlines()[-1])


def in_browser(browser, page: Path) -> dict:
    """Open the report from disk: elements, DOMContentLoaded (interactive) and load, in seconds."""
    url = page.as_uri()
    browser.call("Page.navigate", url=url)
    browser.wait_for("document.readyState === 'complete'", timeout=120)
    timing = browser.js("(function(){var n=performance.getEntriesByType('navigation')[0];"
                        "return [n.domContentLoadedEventEnd, n.loadEventEnd, document.getElementsByTagName('*').length];})()")
    return {"interactive": timing[0] / 1000, "loaded": timing[1] / 1000, "elements": timing[2]}


def _spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def measure(label: str, cases: int, tree: Path, reps: int, browser, folder: Path) -> None:
    rows = []
    for rep in range(reps):
        page = folder / f"{label}-{cases}-{rep}.html"
        rows.append({**render(cases, tree, page), **in_browser(browser, page)})
    size = rows[0]["bytes"]
    inter = [r["interactive"] for r in rows]
    met = "ok" if size <= TARGET_BYTES and statistics.median(inter) <= TARGET_S else "MISS"
    print(f"{cases:>6} {label:16} {size / 1024:8.0f} {rows[0]['elements']:>9} {_spread(inter, '.3f'):>22} "
          f"{_spread([r['loaded'] for r in rows], '.3f'):>22} {_spread([r['wall'] for r in rows], '.2f'):>18} "
          f"{statistics.median(r['rss_mb'] for r in rows):7.0f}  {met if label == 'today' else ''}")


def trend_chart(reps: int) -> None:
    """52 weekly runs: the chart drawn (matplotlib imported before the clock), then from the cache."""
    sys.path.insert(0, str(ROOT))
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="rubricgate-bench-cache-")
    import matplotlib.figure  # noqa: F401  (the import is the viewer's once per process)

    from rubricgate.records.run_index import head_of
    from rubricgate.view import charts

    heads = [head_of(_summary(20, run).model_copy(update={"started_at": f"2026-{1 + run // 5:02d}-{1 + run % 5 * 5:02d}"
                                                                        "T10:00:00+00:00"}), "0:0") for run in range(52)]
    drawn, cached = [], []
    for _ in range(reps):
        charts._drawn.clear()
        for p in Path(os.environ["XDG_CACHE_HOME"]).rglob("*.svg"):
            p.unlink()
        start = time.process_time()
        charts.trend_svgs(heads)
        drawn.append(time.process_time() - start)
        charts._drawn.clear()  # a fresh viewer process: the on-disk cache only
        start = time.process_time()
        charts.trend_svgs(heads)
        cached.append(time.process_time() - start)
    print(f"trend chart, 52 runs (wide and narrow): drawn {_spread(drawn, '.3f')} s CPU, "
          f"from the render cache {_spread(cached, '.4f')} s CPU")


def baseline_tree(ref: str, into: Path) -> Path | None:
    tree = into / "baseline"
    got = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), ref],
                         capture_output=True, text=True)
    return tree if got.returncode == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,1000")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--baseline-ref", default=BASELINE_REF)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.out)
    sys.path.insert(0, str(ROOT / "tests"))
    from cdp_browser import Browser, chromium_path

    with tempfile.TemporaryDirectory(prefix="rubricgate-bench-report-") as tmp:
        folder = Path(tmp)
        base = baseline_tree(args.baseline_ref, folder) if args.baseline_ref else None
        browser = Browser(chromium_path())
        try:
            print(f"report.html, median (min-max) of {args.reps}; target <= {TARGET_BYTES / 1e6:.0f} MB and "
                  f"interactive <= {TARGET_S:.0f} s")
            print(f"{'cases':>6} {'report':16} {'KB':>8} {'elements':>9} {'interactive s':>22} {'loaded s':>22} "
                  f"{'render s':>18} {'RSS MB':>7}")
            for n in (int(x) for x in args.sizes.split(",")):
                if base is not None:
                    measure(f"at {args.baseline_ref}", n, base, args.reps, browser, folder)
                measure("today", n, ROOT, args.reps, browser, folder)
        finally:
            browser.close()
            if base is not None:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], capture_output=True)
    trend_chart(args.reps)


if __name__ == "__main__":
    main()
