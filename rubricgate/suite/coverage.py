"""Rule coverage: which cases can see each rule of the rubric and each tier-derivation rule.

A rule is exercised by a case when the case's expectations cite it (`rules` or `absent_rules`)
or when the baseline run's reviewer cited it on that case (baseline.json format 3 records the
rule ids per case on `baseline update`). A rule no case exercises is one the gate is blind to:
an edit to it (a deleted row, a severity moved) passes the whole suite.

The tier derivation is covered rule by rule too, over what is known of each case's findings
(its expected rules plus the baseline's citations) and its expected tier:
  tier:critical-blocks    a BLOCK case with a critical finding
  tier:warning-threshold  a BLOCK case with no critical and N or more warnings, or a WARN case
                          with exactly N - 1 warnings (the cases a threshold of N +/- 1 flips)
  tier:warnings-warn      a WARN case
  tier:otherwise-pass     a PASS case
Input side only (suite, rubric, baseline): no run is needed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rubricgate.models.baseline import Baseline
from rubricgate.models.case import CaseSpec
from rubricgate.suite.rubric import RubricSpec

TIER_RULES = {
    "tier:critical-blocks": "one or more critical findings: BLOCK",
    "tier:warning-threshold": "N or more warning findings: BLOCK",
    "tier:warnings-warn": "one or more warnings below the threshold: WARN",
    "tier:otherwise-pass": "only suggestions, or no finding: PASS",
}


@dataclass(frozen=True)
class RuleCoverage:
    """One rule (or tier-derivation rule) and the cases that exercise it."""

    rule: str
    severity: str  # "" for a tier-derivation rule
    kind: str  # mechanical | judgement | tier
    text: str
    expected: tuple[str, ...]  # cases whose expectations cite it
    cited: tuple[str, ...]  # cases where the baseline run's reviewer cited it

    @property
    def cases(self) -> list[str]:
        """Every case that exercises the rule, expectation or citation."""
        return sorted({*self.expected, *self.cited})


@dataclass(frozen=True)
class Coverage:
    rows: tuple[RuleCoverage, ...]
    cited_known: bool  # the baseline records the reviewer's citations (format 3)

    def row(self, rule: str) -> RuleCoverage | None:
        return next((r for r in self.rows if r.rule == rule), None)

    @property
    def uncovered(self) -> list[str]:
        """Rules and tier-derivation rules no case exercises."""
        return [r.rule for r in self.rows if not r.cases]

    def as_dict(self) -> dict:
        """The JSON shape summary.json and `coverage --json` carry."""
        return {"cited_known": self.cited_known, "uncovered": self.uncovered,
                "rules": [{"rule": r.rule, "severity": r.severity, "kind": r.kind, "expected": list(r.expected),
                           "cited": list(r.cited)} for r in self.rows]}


def rule_coverage(rubric: RubricSpec, cases: Iterable[CaseSpec], baseline: Baseline | None = None) -> Coverage:
    """Coverage of every rule and tier-derivation rule by the suite (and the baseline's citations)."""
    cases = list(cases)
    cited = dict(baseline.cited) if baseline is not None else {}
    rows = [_rule_row(rule.id, rule.severity, rule.kind, rule.text, cases, cited) for rule in rubric.rules.values()]
    rows += _tier_rows(rubric, cases, cited)
    return Coverage(tuple(rows), cited_known=bool(baseline is not None and baseline.format_version >= 3))


def _rule_row(rid: str, severity: str, kind: str, text: str, cases: list[CaseSpec],
              cited: Mapping[str, list[str]]) -> RuleCoverage:
    expected = tuple(c.id for c in cases if rid in c.expect.rules or rid in c.expect.absent_rules)
    by_reviewer = tuple(c.id for c in cases if rid in cited.get(c.id, ()))
    return RuleCoverage(rid, severity, kind, text, expected, by_reviewer)


def known_findings(case: CaseSpec, cited: Mapping[str, list[str]]) -> list[str]:
    """One rule id per finding known for the case: the baseline's citations joined with its expected rules."""
    return sorted((Counter(cited.get(case.id, [])) | Counter(case.expect.rules)).elements())


def tier_exercises(rubric: RubricSpec, case: CaseSpec, cited: Mapping[str, list[str]]) -> list[str]:
    """The tier-derivation rules the case's expected tier and known findings exercise."""
    tier, found = case.expect.tier, known_findings(case, cited)
    # The rubric's own severity words mean critical / warning / suggestion (rubricgate.yaml tiers:).
    meanings = getattr(getattr(rubric, "vocabulary", None), "meanings", {})
    severities = [meanings.get(s, s) for s in (rubric.rules[r].severity for r in found if r in rubric.rules)]
    warnings, critical = severities.count("warning"), "critical" in severities
    threshold = rubric.warning_block_threshold
    out = []
    if tier == "BLOCK" and critical:
        out.append("tier:critical-blocks")
    if (tier == "BLOCK" and not critical and warnings >= threshold) or (tier == "WARN" and warnings == threshold - 1):
        out.append("tier:warning-threshold")
    if tier == "WARN":
        out.append("tier:warnings-warn")
    if tier == "PASS":
        out.append("tier:otherwise-pass")
    return out


def _tier_rows(rubric: RubricSpec, cases: list[CaseSpec], cited: Mapping[str, list[str]]) -> list[RuleCoverage]:
    hits = {c.id: tier_exercises(rubric, c, cited) for c in cases}
    text = {**TIER_RULES, "tier:warning-threshold": f"{rubric.warning_block_threshold} or more warning findings: BLOCK"}
    # A tier rule is exercised through expectations when the case's expected rules alone place it.
    alone = {c.id: tier_exercises(rubric, c, {}) for c in cases}
    return [RuleCoverage(rid, "", "tier", text[rid], tuple(c for c in hits if rid in alone[c]),
                         tuple(c for c in hits if rid in hits[c] and rid not in alone[c]))
            for rid in TIER_RULES]


def coverage_lines(coverage: Coverage, width: int = 6) -> list[str]:
    """The coverage table as terminal lines: rule, severity/kind, how many cases, a few ids."""
    lines = [f"rule coverage: {len(coverage.rows) - len(coverage.uncovered)} of {len(coverage.rows)} rules "
             "exercised by a case" + ("" if coverage.cited_known else
                                      " (expectations only: the baseline does not record the reviewer's citations)")]
    for r in coverage.rows:
        what = f"{r.severity} {r.kind}" if r.severity else "tier derivation"
        ids = ", ".join(r.cases[:width]) + (f" +{len(r.cases) - width}" if len(r.cases) > width else "")
        lines.append(f"  {r.rule:<26} {what:<22} {len(r.cases):>3}  {ids or 'UNCOVERED'}")
    if coverage.uncovered:
        lines.append("uncovered: " + ", ".join(coverage.uncovered)
                     + " (an edit to these passes unseen; "
                       "`rubricgate coverage --suggest DIR` writes fixture skeletons)")
    return lines
