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


def read_as(rule: str, severity: str, as_rule: str, as_severity: str) -> str:
    """The verdict warning for a finding whose rule id or severity was read another way than written."""
    return f"finding {rule!r} ({severity!r}) read as the rubric's {as_rule!r} ({as_severity!r})"


def canonical_findings(verdict: Verdict, rubric: RubricSpec) -> tuple[Verdict, list[str]]:
    """The verdict with each finding's rule id and severity in the rubric's spelling, and a note
    for each one read another way than it was written."""
    findings, notes = [], []
    for f in verdict.findings:
        rule, severity = spelled_as(f.rule, rubric.rules), canonical_severity(f.severity, rubric)
        if (rule, severity) != (f.rule, f.severity):
            notes.append(read_as(f.rule, f.severity, rule, severity))
        findings.append(f if (rule, severity) == (f.rule, f.severity)
                        else Finding.model_validate({**f.model_dump(), "rule": rule, "severity": severity}))
    return (verdict if not notes else verdict.model_copy(update={"findings": findings})), notes
