"""Mutants of a reviewer whose rules are named in rubricgate.yaml: each rule's statement deleted
from the file that states it (a prompt edit dropping a rule), never a severity in the config."""

from __future__ import annotations

from rubricgate.mutate.mutants import all_mutants
from rubricgate.suite.rubric import DEFAULT_VOCABULARY, RubricSpec, Rule

PROMPT = '[review]\nsystem = """\nYou review diffs.\n\n- Flag SQL injection.\n- Flag new code without tests.\n"""\n'


def test_each_stated_rule_is_deleted_from_its_file_and_an_unstated_one_is_skipped(tmp_path):
    (tmp_path / "reviewer").mkdir()
    (tmp_path / "reviewer/review.toml").write_text(PROMPT)
    rules = {"sql-injection": Rule("sql-injection", "critical", "judgement", "- Flag SQL injection.", 5, "reviewer/review.toml"),
             "missing-tests": Rule("missing-tests", "warning", "judgement", "- Flag new code without tests.", 6,
                                   "reviewer/review.toml"),
             "naming": Rule("naming", "suggestion", "judgement", "", 0, "")}
    rubric = RubricSpec("reviewer/review.toml", rules, 3, DEFAULT_VOCABULARY)
    mutants, skipped = all_mutants(tmp_path, rubric, "reviewer/review.toml", "reviewer/review.toml")
    deletes = {m.rule: m for m in mutants if m.kind == "delete-rule"}
    assert set(deletes) == {"sql-injection", "missing-tests"}
    assert "SQL injection" not in deletes["sql-injection"].text and "without tests" in deletes["sql-injection"].text
    assert deletes["missing-tests"].file == "reviewer/review.toml"
    assert [s.rule for s in skipped] == ["naming"]
    assert not any(m.kind.startswith(("severity", "threshold")) for m in mutants)
