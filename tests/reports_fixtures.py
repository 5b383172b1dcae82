"""Builders for report tests: a small, realistic Summary with a hostile transcript in it.

Kept independent of the pipeline so renderers can be tested on exact inputs.
"""

from __future__ import annotations

import json
from pathlib import Path

from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.models.results import (
    CaseSpec, CaseSummary, Decision, Grade, RateRow, ReviewerRecord, RuleRow, Summary, TrialResult,
)
from rubricgate.models.task import Expect, Rubric, ToolUseRubric, TrajectoryRubric
from rubricgate.models.verdict import Finding
from rubricgate.models.transcript import ToolCall, Transcript
from rubricgate.runner.cost import cost_summary
from rubricgate.gating.stats import wilson

HOSTILE = (
    "<script>document.title='PWNED-SCRIPT'</script>"
    "<img src=x onerror=\"document.title='PWNED-IMG'\">"
    " \x00\x07 bell & \"quotes\" ]]>"
)


def ok_grades() -> dict[str, Grade]:
    """All three dimensions passing."""
    return {d: Grade(passed=True) for d in DIMENSIONS}


def trial(case_id: str, n: int, outcome: str = "BLOCK", **grades: Grade) -> TrialResult:
    """A trial whose grades default to passing; override a dimension by keyword."""
    g = ok_grades() | grades
    return TrialResult(
        case_id=case_id, trial=n, outcome=outcome, effective_tier=None if outcome == "ERROR" else outcome,
        reported_tier=None if outcome == "ERROR" else outcome, grades=g, steps=4,
        tool_calls=["read", "grep"], duration_s=1.25 + n, input_tokens=100, output_tokens=50, cost_usd=0.01,
        transcript=f"transcripts/{case_id}-{n}.json",
    )


def failing_trials() -> list[TrialResult]:
    """Trials of the failing case: a wrong tier with a hostile reason, and a forbidden tool."""
    wrong = Grade(passed=False, category="wrong_tier", reason="expected BLOCK, got PASS " + HOSTILE)
    tool = Grade(passed=False, category="forbidden_tool", reason="bash is forbidden")
    first = trial("block-missing-description", 1, "PASS", verdict=wrong)
    first.findings = [Finding(severity="warning", rule="body-present", file="skills/data-loader/SKILL.md", line=7,
                              quote="Load | the data " + HOSTILE, issue="stub body"),
                      Finding(severity="suggestion", rule="examples-present", file="skills/data-loader/references/x.md")]
    return [first, trial("block-missing-description", 2, "BLOCK", tool_use=tool)]


def cases() -> list[CaseSummary]:
    """Two cases: one clean, one with failures."""
    good = CaseSummary(id="pass-weekly-revenue", source="fixture", expected_tier="PASS",
                       rates=dict.fromkeys(DIMENSIONS, 1.0),
                       trials=[trial("pass-weekly-revenue", 1, "PASS"), trial("pass-weekly-revenue", 2, "PASS")])
    bad = CaseSummary(id="block-missing-description", source="task", tags=["frontmatter"],
                      expected_tier="BLOCK", rates={"verdict": 0.5, "tool_use": 0.5, "trajectory": 1.0},
                      flaky=True, trials=failing_trials(), why="protects fm-description-required @team",
                      workspace_paths={"skills/data-loader": "fixtures/block/data-loader"})
    return [good, bad]


def rates() -> dict[str, RateRow]:
    """verdict regressed, tool_use improved, trajectory unchanged; Wilson 95% intervals as the run fills them."""
    three, four = wilson(3, 4), wilson(4, 4)
    return {
        "verdict": RateRow(rate=0.75, passes=3, trials=4, low=three[0], high=three[1], baseline=1.0, delta=-0.25,
                           status="regression"),
        "tool_use": RateRow(rate=0.75, passes=3, trials=4, low=three[0], high=three[1], baseline=0.5, delta=0.25),
        "trajectory": RateRow(rate=1.0, passes=4, trials=4, low=four[0], high=four[1], baseline=1.0, delta=0.0),
    }


def run_cost() -> dict:
    """What cost_summary makes of cases(): 100 in / 50 out tokens per trial, priced at $0.01."""
    return cost_summary(cases())


def reviewer_records() -> tuple[ReviewerRecord, ReviewerRecord]:
    """(this run's, the baseline's): the rubric changed; one rule added, one removed, one loosened."""
    rules = {"fm-description-required": RuleRow(severity="warning", kind="mechanical"),
             "body-present": RuleRow(severity="warning", kind="mechanical"),
             "tone-kind": RuleRow(severity="suggestion", kind="judgement")}
    old_rules = {"fm-description-required": RuleRow(severity="critical", kind="mechanical"),
                 "body-present": RuleRow(severity="warning", kind="mechanical"),
                 "secret-in-file": RuleRow(severity="critical", kind="mechanical")}
    digests = {"reviewer/prompts/evaluate.md": "a" * 64, "reviewer/evaluator/references/rubric.md": "b" * 64}
    return (ReviewerRecord(digests=digests, rules=rules),
            ReviewerRecord(digests=digests | {"reviewer/evaluator/references/rubric.md": "c" * 64}, rules=old_rules))


def summary(**overrides) -> Summary:
    """A regression run; override any top-level Summary field."""
    base = dict(
        run_id="20260101T000000Z-abc123", started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T00:01:00Z", agent="builtin", agent_version="1.0.0", model="m-1",
        trials_default=2,
        decision=Decision(status="regression", exit_code=1, reasons=["verdict 0.75 < baseline 1.00"]),
        rates=rates(), cases=cases(), flaky_cases=["block-missing-description"],
        pass_k={"k": 2, "pass_at_k": 1.0, "pass_hat_k": 0.5}, cost=run_cost(),
        reviewer=reviewer_records()[0], baseline_reviewer=reviewer_records()[1],
        run_url="https://github.com/octo/repo/actions/runs/42",
    )
    return Summary(**(base | overrides))


def thousand_case_summary() -> Summary:
    """A 1,000-case run: 990 passing cases of three trials and ten copies of the failing ones."""
    ok = [CaseSummary(id=f"case-{i:04d}", source="fixture", expected_tier="PASS",
                      rates={"verdict": 1.0, "tool_use": 1.0, "trajectory": 1.0},
                      trials=[trial(f"case-{i:04d}", n, "PASS") for n in (1, 2, 3)]) for i in range(990)]
    bad = [c.model_copy(update={"id": f"bad-{i}"}) for i in range(10) for c in cases()[1:]]
    return summary(cases=bad + ok)


def passing_summary() -> Summary:
    """Everything at or above baseline."""
    ok = {d: RateRow(rate=1.0, passes=4, trials=4, baseline=1.0, delta=0.0) for d in DIMENSIONS}
    clean = [c.model_copy(update={"trials": [trial(c.id, 1, "PASS")]}) for c in cases()]
    return summary(decision=Decision(status="pass", exit_code=0), rates=ok, cases=clean, flaky_cases=[])


def transcript(final: str = "", calls: list[ToolCall] | None = None) -> Transcript:
    """A transcript with a hostile tool input and final text."""
    calls = calls if calls is not None else [
        ToolCall(raw_name="Read", name="read", input={"file_path": "fixtures/block/x/SKILL.md"}, step=1,
                 result="---\nname: " + HOSTILE + "\n---\n", result_cut=12),
        ToolCall(raw_name="Bash", name="bash", input={"command": "echo " + HOSTILE}, status="denied", step=2),
    ]
    final = final or 'Review done.\n```json\n{"tier": "PASS", "summary": "' + HOSTILE.replace('"', "'") + '"}\n```'
    return Transcript(agent="builtin", steps=3, tool_calls=calls, final_text=final, duration_s=2.5)


def case_spec(case_id: str = "block-missing-description") -> CaseSpec:
    """The case behind the failing trials."""
    return CaseSpec(id=case_id, source="task", origin=f"evals/tasks/{case_id}.yaml",
                    why="protects fm-description-required", review=["fixtures/block/data-loader/SKILL.md"],
                    expect=Expect(tier="BLOCK", rules=["fm-description-required"]),
                    rubric=Rubric(tool_use=ToolUseRubric(allowed=["read", "grep", "glob"], forbidden=["write|edit|bash"]),
                                  trajectory=TrajectoryRubric(max_steps=12)),
                    trials=2, tags=["frontmatter"])


def write_run_dir(run_dir: Path, s: Summary | None = None) -> Path:
    """Lay out reports/<run>/ as the pipeline does: summary.json and transcripts/."""
    s = s or summary()
    (run_dir / "transcripts").mkdir(parents=True, exist_ok=True)
    (run_dir / "summary.json").write_text(s.model_dump_json(indent=2), encoding="utf-8")
    for case in s.cases:
        for t in (t for t in case.trials if t.transcript):
            (run_dir / t.transcript).write_text(json.dumps(transcript().model_dump()), encoding="utf-8")
    return run_dir


GOLDEN = Path(__file__).parent / "golden"
_SCRUBS = [
    (r"\d{8}T\d{6}Z-[0-9a-f]+", "<RUN_ID>"),
    (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?", "<TIMESTAMP>"),
    (r'(time="|"duration_s": |"elapsed_s": )\d+(\.\d+)?', r"\1<DURATION>"),
    (r"\b[0-9a-f]{64}\b", "<SHA256>"),  # reviewer file digests change with every edit of the reviewer
    (r'("setup": ")[0-9a-f]{16}"', r'\1<DIGEST>"'),  # the agent's program and environment, this machine's
]


def scrub(text: str, paths: list[Path] = ()) -> str:
    """Replace run ids, timestamps, durations and the given paths with stable placeholders."""
    import re

    for p in paths:
        text = text.replace(str(p), "<PATH>")
    for pattern, repl in _SCRUBS:
        text = re.sub(pattern, repl, text)
    return text


def assert_golden(name: str, actual: str) -> None:
    """Compare with tests/golden/<name>; RUBRICGATE_UPDATE_GOLDEN=1 rewrites it instead."""
    import os

    path = GOLDEN / name
    if os.environ.get("RUBRICGATE_UPDATE_GOLDEN") == "1":
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run with RUBRICGATE_UPDATE_GOLDEN=1 once"
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"
