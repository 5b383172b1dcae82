"""Rules stated in the reviewer's files (rubricgate.yaml verdict.rules): an edit to a statement is a
named rule change, a statement no longer found a removed rule, each with the cases that see it."""

from __future__ import annotations

from rubricgate.gating.changes import change_line, rule_changes
from rubricgate.models.baseline import Baseline, CaseCount, RuleRecord
from rubricgate.models.results import CaseSpec
from rubricgate.models.task import Expect, Rubric
from rubricgate.suite.rubric import DEFAULT_VOCABULARY, RubricSpec, Rule

PROMPT = "reviewer/review.toml"
SQL = "- Flag SQL injection: queries built from strings."
TESTS = "- Flag new code without tests."


def _rubric(sql: str, tests: str) -> RubricSpec:
    rules = {"sql-injection": Rule("sql-injection", "critical", "judgement", sql, 5 if sql else 0, PROMPT if sql else ""),
             "missing-tests": Rule("missing-tests", "warning", "judgement", tests, 6, PROMPT)}
    return RubricSpec(PROMPT, rules, 3, DEFAULT_VOCABULARY)


def _baseline() -> Baseline:
    one = {"verdict": CaseCount(passes=1, trials=1)}
    return Baseline(rates={"verdict": 1.0}, cases={"fixture-sqli": one, "fixture-clean": one},
                    rubric_rules={"sql-injection": RuleRecord(severity="critical", kind="judgement", statement=SQL),
                                  "missing-tests": RuleRecord(severity="warning", kind="judgement", statement=TESTS)},
                    cited={"fixture-sqli": ["sql-injection"]})


CASES = [CaseSpec(id="fixture-sqli", source="fixture", origin="f", review=["a.diff"], rubric=Rubric(),
                  expect=Expect(tier="BLOCK", rules=["sql-injection"])),
         CaseSpec(id="fixture-clean", source="fixture", origin="f", review=["b.diff"], rubric=Rubric(),
                  expect=Expect(tier="PASS"))]


def test_a_deleted_statement_is_a_removed_rule_with_the_cases_that_exercise_it():
    changes = rule_changes(_rubric("", TESTS), CASES, _baseline())
    assert [(c.rule, c.change, c.cases) for c in changes] == [("sql-injection", "removed", ["fixture-sqli"])]
    assert change_line(changes[0]).startswith("rule sql-injection changed removed from the reviewer's files")


def test_a_reworded_statement_is_named_and_an_unexercised_one_says_so():
    changes = rule_changes(_rubric(SQL, "- Report changes that add code but no test."), CASES, _baseline())
    assert [(c.rule, c.change) for c in changes] == [("missing-tests", "statement")]
    assert "no case exercises it" in change_line(changes[0])


def test_an_unchanged_reviewer_has_no_rule_change():
    assert rule_changes(_rubric(SQL, TESTS), CASES, _baseline()) == []
