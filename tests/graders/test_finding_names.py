"""A finding's rule id and severity read as the rubric spells them (graders/finding_names.py):
what was graded wrong first, then what must stay apart."""

from __future__ import annotations

import json

from rubricgate.graders import grade_trial
from rubricgate.graders.contract import parse_verdict
from rubricgate.graders.extract import read_verdict
from rubricgate.graders.finding_names import spelled_as
from rubricgate.models.results import CaseSpec
from rubricgate.models.task import Expect, Rubric
from rubricgate.models.transcript import Transcript
from rubricgate.models.verdict_config import VerdictConfig
from rubricgate.suite.rubric import DEFAULT_VOCABULARY, RubricSpec, Rule

RUBRIC = RubricSpec("reviewer/rules.md", {
    "sql-injection": Rule("sql-injection", "critical", "judgement", "", 0),
    "naming": Rule("naming", "suggestion", "judgement", "", 0),
}, 3, DEFAULT_VOCABULARY)


def contract(findings: list[dict], tier: str = "PASS") -> str:
    return "```json\n" + json.dumps({"tier": tier, "findings": findings}) + "\n```\n"


def finding(rule: str, severity: str) -> dict:
    return {"rule": rule, "severity": severity, "file": "app/db.py", "line": 3}


def graded(text: str, expect: Expect):
    case = CaseSpec(id="c", source="task", origin="t", review=["app"], expect=expect, rubric=Rubric())
    transcript = Transcript(agent="command", steps=1, final_text=text)
    return grade_trial(case, transcript, parse_verdict(text, RUBRIC), ["verdict"])["verdict"]


def test_a_rule_the_case_must_not_have_is_seen_in_another_case() -> None:
    """`SQL-Injection` was an unknown rule: absent_rules never saw it and the case passed."""
    text = contract([finding("SQL-Injection", "critical")], tier="BLOCK")
    grade = graded(text, Expect(tier="BLOCK", absent_rules=["sql-injection"]))
    assert not grade.passed and grade.category == "unexpected_rule", grade


def test_a_critical_finding_in_capitals_raises_the_tier_of_a_pass_answer() -> None:
    """An unknown rule's `CRITICAL` raised no tier: the answer stayed PASS and a PASS case passed."""
    parsed = parse_verdict(contract([finding("made-up", "CRITICAL")]), RUBRIC)
    assert parsed.effective_tier == "BLOCK" and parsed.escalated, parsed
    assert not graded(contract([finding("made-up", " Critical ")]), Expect(tier="PASS")).passed


def test_a_native_answer_in_capitals_derives_its_tier_from_the_rubrics_word() -> None:
    config = VerdictConfig.model_validate({"format": "yaml", "findings": {"path": "issues", "title": "title",
                                                                       "severity": "severity"}})
    got = read_verdict("```yaml\nissues:\n  - title: Unsafe eval\n    severity: CRITICAL\n```\n", RUBRIC, config)
    assert got.status == "ok" and got.effective_tier == "BLOCK", got
    assert not any("none of the rubric's" in w for w in got.warnings), got.warnings


def test_a_name_read_another_way_is_said_and_the_finding_keeps_the_rubrics_spelling() -> None:
    parsed = parse_verdict(contract([finding("Naming", "Suggestion")]), RUBRIC)
    assert [(f.rule, f.severity) for f in parsed.verdict.findings] == [("naming", "suggestion")]
    assert any("'Naming' ('Suggestion') read as the rubric's 'naming' ('suggestion')" in w for w in parsed.warnings)


def test_only_case_and_spaces_are_forgiven_and_only_where_one_name_matches() -> None:
    assert spelled_as(" SQL-injection ", ["sql-injection", "naming"]) == "sql-injection"
    assert spelled_as("sql_injection", ["sql-injection"]) == "sql_injection"  # another name: unknown, as before
    assert spelled_as("ab", ["AB", "ab"]) == "ab" and spelled_as("Ab", ["AB", "ab"]) == "Ab"  # two match: neither
    parsed = parse_verdict(contract([finding("sql-injection", "critical")], tier="BLOCK"), RUBRIC)
    assert parsed.warnings == []  # spelled as the rubric spells it: nothing to say


def test_a_native_answer_read_another_way_is_said_as_in_the_contract() -> None:
    """yaml and json respelled the rule id and severity before the cross-check, which then saw
    nothing to say: the docs' verdict warning was given for the contract alone."""
    config = VerdictConfig.model_validate({"format": "yaml", "findings": {"path": "issues", "title": "title",
                                                                       "rule": "rule", "severity": "severity"}})
    got = read_verdict("```yaml\nissues:\n  - title: x\n    rule: SQL-Injection\n    severity: CRITICAL\n```\n",
                       RUBRIC, config)
    assert got.status == "ok" and [(f.rule, f.severity) for f in got.verdict.findings] == [("sql-injection", "critical")]
    assert any("'SQL-Injection' ('CRITICAL') read as the rubric's 'sql-injection' ('critical')" in w
               for w in got.warnings), got.warnings
    same = read_verdict("```yaml\nissues:\n  - title: x\n    rule: sql-injection\n    severity: critical\n```\n",
                        RUBRIC, config)
    assert not any("read as the rubric's" in w for w in same.warnings), same.warnings
