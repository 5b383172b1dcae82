"""A finding's rule id and severity as the rubric spells them.

A reviewer writes `SQL-Injection` for the rubric's `sql-injection`, or `CRITICAL` for `critical`.
Matched exactly, such a finding was an unknown rule of no severity: a finding the case must not
have (`absent_rules`) went unseen, and a critical one raised no tier, so a PASS case passed while
its reviewer flagged something critical. Case and surrounding spaces are all that is forgiven,
and only where one name of the rubric matches."""

from __future__ import annotations

from collections.abc import Iterable

from rubricgate.models.verdict import Finding, Verdict
from rubricgate.suite.rubric import RubricSpec


def spelled_as(said: str, names: Iterable[str]) -> str:
    """The one name of `names` that `said` is, but for case and surrounding spaces; else `said`."""
    names = list(names)
    if said in names:
        return said
    folded = said.strip().casefold()
    hits = [n for n in names if n.casefold() == folded]
    return hits[0] if len(hits) == 1 else said


def canonical_severity(said: str, rubric: RubricSpec) -> str:
    """A severity word in the rubric's own spelling (its vocabulary's words)."""
    return spelled_as(said, rubric.vocabulary.meanings)


def spelled(rule: str, severity: str, rubric: RubricSpec, notes: list[str]) -> tuple[str, str]:
    """A finding's rule id and severity as the rubric spells them; one read another way than it was
    written adds a verdict warning to `notes`, in every format (a finding respelled before the
    contract's cross-check would have none)."""
    as_rule, as_severity = spelled_as(rule, rubric.rules), canonical_severity(severity, rubric)
    if (as_rule, as_severity) != (rule, severity):
        notes.append(f"finding {rule!r} ({severity!r}) read as the rubric's {as_rule!r} ({as_severity!r})")
    return as_rule, as_severity


def canonical_findings(verdict: Verdict, rubric: RubricSpec) -> tuple[Verdict, list[str]]:
    """The verdict with each finding's rule id and severity in the rubric's spelling, and a note
    for each one read another way than it was written."""
    findings: list[Finding] = []
    notes: list[str] = []
    for f in verdict.findings:
        rule, severity = spelled(f.rule, f.severity, rubric, notes)
        findings.append(f if (rule, severity) == (f.rule, f.severity)
                        else Finding.model_validate({**f.model_dump(), "rule": rule, "severity": severity}))
    return (verdict if not notes else verdict.model_copy(update={"findings": findings})), notes
