"""A year of weekly runs in the viewer: runs page and case page times, from the per-run index,
against reading every summary and every transcript (measured in the same run).

Generates RUNS run folders of CASES cases x TRIALS trials in the real formats (summary.json,
transcripts/, events.jsonl through the real models and writers; outcomes made up: a few cases
flaky and drifting, the reviewer files changed every 13 runs, the agent CLI once), then times:

  * index build: the first `rubricgate view` over folders without an index (each summary parsed
    once and its index written: view-index.json + view-cases.jsonl);
  * the index a run writes itself at its end (records/run_index.py), from the summary it holds:
    what the run pays so that the viewer's first look parses nothing;
  * runs page and case page from the index, each in a fresh process (a new viewer started on the
    indexed folders: interpreter, imports, template compile and page), and in a warm one (the
    viewer already serving: a new Catalog reading the index files again, templates compiled);
  * the two things the index stands in for: parsing every summary.json (what the runs page would
    cost without it) and reading every transcript of every run.

    python bench/view_history.py [--runs 52] [--cases 2000] [--trials 3] [--keep DIR]

Target: runs page and case page each under 1 s for 52 runs x 2,000 cases x 3 trials.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rubricgate.gating.stats import wilson  # noqa: E402
from rubricgate.models.results import (  # noqa: E402
    CaseSummary,
    Decision,
    Grade,
    RateRow,
    ReviewerRecord,
    RuleRow,
    Summary,
    TrialResult,
)
from rubricgate.models.transcript import ToolCall, Transcript, Usage  # noqa: E402
from rubricgate.records.files import write_summary  # noqa: E402

DIMS = ("verdict", "tool_use", "trajectory")
FINAL = 'Reviewed 1 file.\n```json\n{"tier": "%s", "summary": "synthetic", "files_reviewed": ["skills/s/SKILL.md"], "findings": []}\n```'


def _trial(rng: random.Random, case_id: str, n: int, fail_p: float) -> TrialResult:
    failed = rng.random() < fail_p
    grades = {"verdict": Grade(passed=not failed, category="wrong_tier" if failed else None,
                               reason="expected BLOCK, got PASS" if failed else ""),
              "tool_use": Grade(passed=True), "trajectory": Grade(passed=True)}
    return TrialResult(case_id=case_id, trial=n, outcome="PASS" if failed else "BLOCK", grades=grades, steps=4,
                       effective_tier="PASS" if failed else "BLOCK", reported_tier="PASS" if failed else "BLOCK",
                       tool_calls=["read", "grep"], duration_s=3.2, transcript=f"transcripts/{case_id}-{n}.json")


def _transcript(t: TrialResult) -> Transcript:
    calls = [ToolCall(raw_name="Read", name="read", input={"file_path": "skills/s/SKILL.md"}, step=1),
             ToolCall(raw_name="Grep", name="grep", input={"pattern": "description:", "path": "skills"}, step=2)]
    return Transcript(agent="claude", agent_version="2.1.332", model="m", steps=t.steps, tool_calls=calls,
                      final_text=FINAL % t.outcome, usage=Usage(input_tokens=1200, output_tokens=300), duration_s=3.2)


def make_run(reports: Path, week: int, cases: int, trials: int) -> Path:
    """One weekly run folder: summary, every transcript, events."""
    rng = random.Random(week)
    run_id = f"2026{1 + week // 5:02d}{1 + (week % 5) * 6:02d}T051700Z-{week:06x}"
    run_dir = reports / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "transcripts").mkdir()
    out, counts, texts = [], {d: [0, 0] for d in DIMS}, {}
    for i in range(cases):
        cid = f"case-{i:05d}"
        fail_p = 0.0 if i % 40 else min(0.6, 0.05 + 0.01 * week)  # a few cases get flakier over the year
        ts = [_trial(rng, cid, n, fail_p) for n in range(1, trials + 1)]
        for t in ts:
            # The model's own JSON, made once per outcome (records.files.write_transcript would
            # scrub and rename each of 300,000 files: an hour of setup for the same bytes).
            text = texts.get(t.outcome) or texts.setdefault(t.outcome, _transcript(t).model_dump_json(indent=2))
            (run_dir / t.transcript).write_text(text)
            for d in DIMS:
                counts[d][0] += t.grades[d].passed
                counts[d][1] += 1
        out.append(CaseSummary(id=cid, source="task", expected_tier="BLOCK", trials=ts,
                               flaky=len({t.outcome for t in ts}) > 1,
                               rates={d: sum(t.grades[d].passed for t in ts) / trials for d in DIMS}))
    write_summary(run_dir, _summary(run_id, week, out, counts))
    (run_dir / "events.jsonl").write_text(json.dumps({"event": "run_started", "run_id": run_id}) + "\n")
    return run_dir


def _summary(run_id: str, week: int, cases: list[CaseSummary], counts: dict) -> Summary:
    rates = {d: RateRow(rate=p / n, passes=p, trials=n, low=wilson(p, n)[0], high=wilson(p, n)[1], baseline=0.99)
             for d, (p, n) in counts.items()}
    digests = {"reviewer/prompts/evaluate.md": f"{week // 13:064x}", "reviewer/evaluator/references/rubric.md": "b" * 64}
    return Summary(run_id=run_id, started_at=f"2026-01-01T05:17:00Z+{week:02d}w", finished_at="", agent="claude",
                   agent_version="2.1.112" if week < 30 else "2.1.332", model="m", trials_default=3,
                   decision=Decision(status="pass", exit_code=0), rates=rates, cases=cases,
                   flaky_cases=[c.id for c in cases if c.flaky],
                   reviewer=ReviewerRecord(digests=digests, fingerprint=f"{week // 13:064x}",
                                           rules={"fm-description-required": RuleRow(severity="critical", kind="mechanical")}))


def index_at_run_end(run: Path, reps: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of index_run on one run's summary, already in memory as at a run's end."""
    from rubricgate.records.run_index import index_run

    summary = Summary.model_validate_json((run / "summary.json").read_bytes())
    times = []
    for _ in range(reps):
        start, cpu = time.perf_counter(), time.process_time()
        assert index_run(run, summary)
        times.append((time.perf_counter() - start, time.process_time() - cpu))
    return statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)


def read_every_summary(reports: Path) -> tuple[float, float]:
    """(wall, CPU) seconds to parse every run's summary.json."""
    start, cpu = time.perf_counter(), time.process_time()
    for run in sorted(reports.iterdir()):
        Summary.model_validate_json((run / "summary.json").read_bytes())
    return time.perf_counter() - start, time.process_time() - cpu


def read_every_transcript(reports: Path) -> tuple[float, float, int]:
    """(wall, CPU) seconds to read and parse every transcript of every run, and how many."""
    start, cpu, count = time.perf_counter(), time.process_time(), 0
    for run in sorted(reports.iterdir()):
        for path in (run / "transcripts").iterdir():
            Transcript.model_validate_json(path.read_bytes())
            count += 1
    return time.perf_counter() - start, time.process_time() - cpu, count


FRESH = """
import sys, time
from pathlib import Path
from rubricgate.view.site import site_for
page = site_for([Path(sys.argv[1])]).page(sys.argv[2])
assert page.status == 200, page.body[-300:]
"""


def fresh(reports: Path, path: str) -> tuple[float, float]:
    """(wall, CPU) seconds of a page in a new process on the indexed folders, its whole start
    included (CPU: the child's user + system time, what the machine's load does not inflate)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", FRESH, str(reports), path], capture_output=True, text=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def warm(reports: Path, path: str) -> tuple[float, float]:
    """(wall, CPU) of a page with the templates compiled, reading the index files again (a new Catalog)."""
    from rubricgate.view.site import site_for

    start, cpu = time.perf_counter(), time.process_time()
    page = site_for([reports]).page(path)
    assert page.status == 200
    return time.perf_counter() - start, time.process_time() - cpu


def served(reports: Path, path: str, reps: int) -> tuple[float, float, float]:
    """(first wall, median warm wall, median warm CPU) of a page requested again of one viewer
    (one Site, as `rubricgate view` serves): the run page of a large run is kept rendered by the
    stamps of what it is made of, so a warm request parses no summary (target <= 0.1 s)."""
    from rubricgate.view.site import site_for

    site = site_for([reports])
    start = time.perf_counter()
    assert site.page(path).status == 200
    first = time.perf_counter() - start
    times = []
    for _ in range(reps):
        start, cpu = time.perf_counter(), time.process_time()
        assert site.page(path).status == 200
        times.append((time.perf_counter() - start, time.process_time() - cpu))
    return first, statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=52)
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="generate here (or reuse what is there) and keep it")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="rubricgate-view-bench-"))
    reports = base / "reports"
    try:
        _bench(reports, args)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


def _bench(reports: Path, args) -> None:
    from rubricgate.view import urls
    from rubricgate.view.site import site_for

    if not reports.is_dir():
        start = time.perf_counter()
        for week in range(args.runs):
            make_run(reports, week, args.cases, args.trials)
        print(f"generated {args.runs} runs x {args.cases} cases x {args.trials} trials "
              f"({args.runs * args.cases * args.trials:,} trials) in {time.perf_counter() - start:.0f} s")
    for stale in [*reports.glob("*/view-index.json"), *reports.glob("*/view-cases.jsonl")]:
        stale.unlink()
    start = time.perf_counter()
    assert site_for([reports]).page(urls.runs()).status == 200
    build = time.perf_counter() - start
    case = urls.case("case-00040")  # one of the cases that gets flakier
    rows = []
    for name, path in (("runs page", urls.runs()), ("case page", case)):
        f = [fresh(reports, path) for _ in range(args.reps)]
        w = [warm(reports, path) for _ in range(args.reps)]
        rows.append((name, *(statistics.median(x[i] for x in runs) for runs in (f, w) for i in (0, 1))))
    newest = max(reports.iterdir())
    first, warm_wall, warm_cpu = served(reports, urls.run(newest.name), args.reps)
    at_end, at_end_cpu = index_at_run_end(newest, args.reps)
    summaries, summaries_cpu = read_every_summary(reports)
    transcripts, transcripts_cpu, count = read_every_transcript(reports)
    print(f"\nindex build (first view of the folders, once per run): {build:.2f} s "
          f"({build / args.runs * 1000:.0f} ms a run)")
    print(f"index written by a run at its end, from its summary in memory: {at_end:.3f} ({at_end_cpu:.3f}) s")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; medians of {args.reps}, wall (CPU) seconds")
    print(f"{'page':<10} {'fresh process':>18} {'warm viewer':>18}   target < 1 s")
    for name, fw, fc, ww, wc in rows:
        print(f"{name:<10} {fw:>7.3f} ({fc:.3f}) s {ww:>7.3f} ({wc:.3f}) s   "
              f"wall {'met' if max(fw, ww) < 1 else 'NOT met'}, CPU {'met' if max(fc, wc) < 1 else 'NOT met'}")
    print(f"run page of a {args.cases}-case run, one viewer: first request {first:.3f} s, warm {warm_wall:.4f} "
          f"({warm_cpu:.4f}) s   target warm <= 0.1 s: {'met' if warm_wall <= 0.1 else 'NOT met'}")
    print(f"\nwithout the index: every summary.json parsed {summaries:.1f} ({summaries_cpu:.1f}) s; "
          f"every transcript read ({count:,}) {transcripts:.1f} ({transcripts_cpu:.1f}) s")
    fresh_cpu = rows[0][2]
    print(f"runs page from the index, fresh process, CPU: {summaries_cpu / fresh_cpu:.0f}x less than parsing the "
          f"summaries, {transcripts_cpu / fresh_cpu:.0f}x less than reading the transcripts")


if __name__ == "__main__":
    main()
