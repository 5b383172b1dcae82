"""Verdict contract: failure paths first, then escalation and cross-checks."""

from pathlib import Path

import json

from rubricgate.suite.rubric import load_rubric
from rubricgate.graders.contract import last_json_block, parse_verdict

RUBRIC = load_rubric(Path(__file__).resolve().parents[2] / "reviewer/evaluator/references/rubric.md")


def block(data) -> str:
    body = data if isinstance(data, str) else json.dumps(data)
    return f"Review done.\n\n```json\n{body}\n```\n"


def finding(rule="fm-description-required", severity="critical"):
    return {"severity": severity, "rule": rule, "file": "a/SKILL.md", "line": 2, "quote": "name: a",
            "issue": "x", "fix": "y"}


def test_missing_verdict_is_missing():
    parsed = parse_verdict("I reviewed it and it looks fine. PASS", RUBRIC)
    assert parsed.status == "missing" and parsed.effective_tier is None


def test_malformed_json_is_malformed_not_pass():
    parsed = parse_verdict(block('{"tier": "PASS", "findings": [}'), RUBRIC)
    assert parsed.status == "malformed"
    assert "not valid JSON" in parsed.error


def test_contract_violation_is_invalid():
    parsed = parse_verdict(block({"tier": "MAYBE", "findings": []}), RUBRIC)
    assert parsed.status == "invalid" and "tier" in parsed.error
    assert parse_verdict(block({"summary": "no tier"}), RUBRIC).status == "invalid"
    assert parse_verdict(block([1, 2]), RUBRIC).status == "invalid"


def test_last_block_wins():
    text = block({"tier": "BLOCK", "findings": [finding()]}) + "\nrevised:\n" + block({"tier": "PASS", "findings": []})
    parsed = parse_verdict(text, RUBRIC)
    assert parsed.status == "ok" and parsed.effective_tier == "PASS"
    assert last_json_block("```python\nx\n```") is None


def test_under_reported_tier_is_escalated_with_warning():
    parsed = parse_verdict(block({"tier": "PASS", "findings": [finding()]}), RUBRIC)
    assert parsed.reported_tier == "PASS" and parsed.effective_tier == "BLOCK" and parsed.escalated
    assert any("agent reported tier PASS but its findings derive BLOCK (1 critical, 0 warning)" in w
               for w in parsed.warnings)


def test_three_warnings_escalate_warn_to_block():
    findings = [finding(r, "warning") for r in ("body-length", "refs-link-broken", "fm-name-matches-folder")]
    parsed = parse_verdict(block({"tier": "WARN", "findings": findings}), RUBRIC)
    assert parsed.effective_tier == "BLOCK" and parsed.escalated


def test_over_called_tier_is_never_lowered():
    parsed = parse_verdict(block({"tier": "BLOCK", "findings": []}), RUBRIC)
    assert parsed.effective_tier == "BLOCK" and not parsed.escalated


def test_unknown_rule_and_wrong_severity_are_reported():
    findings = [finding("made-up-rule", "warning"), finding("body-length", "suggestion")]
    parsed = parse_verdict(block({"tier": "WARN", "findings": findings}), RUBRIC)
    assert any("unknown rule 'made-up-rule'" in w for w in parsed.warnings)
    assert any("body-length reported as suggestion, rubric says warning" in w for w in parsed.warnings)


def test_rubric_severity_wins_for_tier():
    # An agent that downgrades a critical rule to suggestion still gets BLOCK.
    parsed = parse_verdict(block({"tier": "PASS", "findings": [finding(severity="suggestion")]}), RUBRIC)
    assert parsed.effective_tier == "BLOCK"


def test_duplicate_keys_are_malformed_not_last_wins() -> None:
    from rubricgate.suite.rubric import load_rubric
    from pathlib import Path

    rubric = load_rubric(Path(__file__).resolve().parents[2] / "reviewer/evaluator/references/rubric.md", "r")
    text = '```json\n{"tier": "BLOCK", "summary": "s", "files_reviewed": [], "findings": [], "tier": "PASS"}\n```'
    parsed = parse_verdict(text, rubric)
    assert parsed.status == "malformed" and "duplicate key 'tier'" in parsed.error
    nested = '```json\n{"tier": "PASS", "summary": "s", "files_reviewed": [], "findings": [{"rule": "a", "rule": "b"}]}\n```'
    assert parse_verdict(nested, rubric).status == "malformed"
