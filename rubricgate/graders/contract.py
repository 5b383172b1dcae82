"""Final text -> verdict: the last fenced json block, validated, tier recomputed.

The findings are evidence and the tier is a claim about it, so the harness recomputes the
tier and escalates an under-reported one. It never lowers a tier the agent over-called.
"""

from __future__ import annotations

import json
import re

from pydantic import ValidationError

from rubricgate import boundary
from rubricgate.graders.finding_names import canonical_findings
from rubricgate.models.base import TIER_ORDER
from rubricgate.models.verdict import ParsedVerdict, Verdict
from rubricgate.suite.rubric import RubricSpec

# A fence opens with ```json (any case) and closes with ``` on its own line.
_FENCE = re.compile(r"```[ \t]*json[ \t]*\r?\n(.*?)\r?\n[ \t]*```", re.S | re.I)


def last_json_block(text: str) -> str | None:
    """Body of the last ```json fenced block, or None when there is none."""
    blocks = _FENCE.findall(text or "")
    return blocks[-1] if blocks else None


def _short(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "verdict"
    return f"{where}: {err['msg']}"


def parse_verdict(final_text: str, rubric: RubricSpec, escalate: bool = True) -> ParsedVerdict:
    """Parse, validate and cross-check the verdict in an agent's final message."""
    block = last_json_block(final_text)
    if block is None:
        return ParsedVerdict(status="missing", error="no fenced ```json block in the final message")
    try:
        # json.loads keeps the last of repeated keys; a verdict saying "tier" twice is malformed.
        data = boundary.loads(block, unique_keys=True)
    except json.JSONDecodeError as exc:
        return ParsedVerdict(status="malformed", error=f"verdict is not valid JSON: {exc.msg} at line {exc.lineno}")
    except boundary.DuplicateKey as exc:
        return ParsedVerdict(status="malformed",
                             error=f"verdict has duplicate key {exc.key!r}: which one counts is ambiguous")
    except ValueError as exc:  # nested deeper than any verdict
        return ParsedVerdict(status="malformed", error=f"verdict is not valid JSON: {exc}")
    try:
        verdict = Verdict.model_validate(data)
    except ValidationError as exc:
        return ParsedVerdict(status="invalid", error=f"verdict does not match the contract: {_short(exc)}")
    return cross_check(verdict, rubric, escalate)


def cross_check(verdict: Verdict, rubric: RubricSpec, escalate: bool = True) -> ParsedVerdict:
    """Recompute the tier from findings (rubric severities win) and escalate upward only;
    `escalate=False` (verdict.escalate) grades the stated tier and says what the findings derive."""
    verdict, renamed = canonical_findings(verdict, rubric)
    warnings = renamed + rule_warnings(verdict, rubric)
    severities = [_severity_of(f.rule, f.severity, rubric) for f in verdict.findings]
    derived = rubric.derive_tier(severities)
    effective, escalated = verdict.tier, False
    if TIER_ORDER[derived] > TIER_ORDER[verdict.tier]:
        under = f"agent reported tier {verdict.tier} but its findings derive {derived} ({_counts(severities, rubric)})"
        if escalate:
            effective, escalated = derived, True
        warnings.append(f"{under}; escalating to {derived}" if escalate
                        else f"{under}; {verdict.tier} is graded (verdict.escalate: false)")
    return ParsedVerdict(status="ok", reported_tier=verdict.tier, effective_tier=effective,
                         escalated=escalated, warnings=warnings, verdict=verdict)


def _counts(severities: list[str], rubric: RubricSpec) -> str:
    """'1 critical, 0 warning' in the rubric's own words (its two most severe)."""
    return ", ".join(f"{severities.count(word)} {word}" for word in rubric.severities[:2])


def _severity_of(rule_id: str, reported: str, rubric: RubricSpec) -> str:
    # Severity is a property of the rule: the rubric's severity counts, not the agent's.
    rule = rubric.rules.get(rule_id)
    return rule.severity if rule else reported


def rule_warnings(verdict: Verdict, rubric: RubricSpec) -> list[str]:
    """Findings whose rule is unknown to the rubric, or whose severity differs from it."""
    out = []
    for f in verdict.findings:
        rule = rubric.rules.get(f.rule)
        if rule is None:
            out.append(f"finding cites unknown rule {f.rule!r} ({f.file}:{f.line})")
        elif rule.severity != f.severity:
            out.append(f"finding {f.rule} reported as {f.severity}, rubric says {rule.severity}")
    return out
