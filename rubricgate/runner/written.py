"""What a trial writes: its transcript and result with the secrets scrubbed, and a note when
scrubbing would have changed a grade or an id.

Graders read the transcript as the agent gave it; scrubbing applies only to what is written out
(the stored transcript, the cache entry, events, summary.json, every report, the terminal). A
secret that stands inside a verdict is still replaced where it is written, so the written
finding may show a rule id the reviewer did not give (`fm[REDACTED]-required`), and grading the
scrubbed answer could have failed a correct finding. Neither is ever silent: the run's warnings
name the trial and what the scrub changes (the grade stays the one the unscrubbed answer earned).
"""

from __future__ import annotations

from dataclasses import dataclass

from rubricgate.graders import judge
from rubricgate.models.config import Config
from rubricgate.models.results import CaseSpec, TrialResult
from rubricgate.models.transcript import Transcript
from rubricgate.secrets import scrub_model
from rubricgate.suite.rubric import RubricSpec


@dataclass(frozen=True)
class Written:
    """A trial as written: scrubbed result and transcript, and the note ('' when the scrub
    changed no grade and no id)."""

    result: TrialResult
    transcript: Transcript
    note: str = ""


def written(case: CaseSpec, result: TrialResult, transcript: Transcript, secrets: list[str],
            rubric: RubricSpec, config: Config) -> Written:
    """The trial with `secrets` scrubbed from what will be written (see the module docstring)."""
    if not secrets:
        return Written(result, transcript)
    clean_transcript = scrub_model(transcript, secrets)
    clean_result = scrub_model(result, secrets)
    if clean_transcript == transcript and clean_result == result:
        return Written(result, transcript)
    changes = _ids_changed(result, clean_result)
    if clean_transcript != transcript:
        changes += _grades_changed(case, result, clean_transcript, rubric, config)
    note = ""
    if changes:
        note = (f"{result.case_id} trial {result.trial}: scrubbing secrets from what is written "
                f"{'; '.join(changes)}; graded on the reviewer's unscrubbed answer")
    return Written(clean_result, clean_transcript, note)


def _ids_changed(raw: TrialResult, clean: TrialResult) -> list[str]:
    """The identifiers the written result shows differently from the graded one."""
    out = []
    if clean.case_id != raw.case_id:
        out.append("changes the case id it is written under")
    tiers = ("outcome", "reported_tier", "effective_tier")
    if any(getattr(clean, t) != getattr(raw, t) for t in tiers):
        out.append("changes a tier")
    rules = [(f.rule, f.severity) for f in raw.findings]
    if [(f.rule, f.severity) for f in clean.findings] != rules:
        out.append("changes the rule id of a finding")
    if {d: g.category for d, g in clean.grades.items()} != {d: g.category for d, g in raw.grades.items()}:
        out.append("changes a grade's category")
    return out


def _grades_changed(case: CaseSpec, raw: TrialResult, clean: Transcript, rubric: RubricSpec,
                    config: Config) -> list[str]:
    """The dimensions whose grade the scrubbed answer would have had otherwise."""
    _, grades = judge(case, clean, rubric, config)
    moved = [d for d, g in raw.grades.items() if d in grades and (grades[d].passed, grades[d].category)
             != (g.passed, g.category)]
    return [f"would change its {', '.join(moved)} grade{'s' if len(moved) > 1 else ''}"] if moved else []
