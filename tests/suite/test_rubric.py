"""rubric.md parsing: the table is the single source of truth."""

from pathlib import Path

import pytest

from rubricgate.errors import GateInputError
from rubricgate.suite.rubric import load_rubric, parse_rules, parse_threshold

ROOT = Path(__file__).resolve().parents[2]


def test_missing_table_is_an_error_naming_the_file():
    with pytest.raises(GateInputError, match="rubric.md: rules table: no markdown table"):
        parse_rules("# Rubric\n\nNo table here.\n", "rubric.md")


def test_bad_severity_names_the_line_and_choices():
    text = "| id | severity | kind | rule |\n|---|---|---|---|\n| a-rule | fatal | mechanical | x |\n"
    with pytest.raises(GateInputError) as exc:
        parse_rules(text, "r.md")
    assert "r.md: line 3: severity 'fatal' of a-rule" in str(exc.value)
    assert "critical, warning, suggestion" in str(exc.value)


def test_duplicate_rule_id_is_an_error():
    text = "| id | severity | kind | rule |\n|---|---|---|---|\n| a | warning | mechanical | x |\n| a | warning | judgement | y |\n"
    with pytest.raises(GateInputError, match="duplicate rule id 'a'"):
        parse_rules(text, "r.md")


def test_unreadable_rubric_is_an_error(tmp_path):
    with pytest.raises(GateInputError, match="cannot read rubric"):
        load_rubric(tmp_path / "missing.md")


def test_repository_rubric_has_mechanical_and_judgement_rules():
    rubric = load_rubric(ROOT / "reviewer/evaluator/references/rubric.md")
    kinds = {r.kind for r in rubric.rules.values()}
    assert len(rubric.rules) >= 10 and kinds == {"mechanical", "judgement"}
    assert rubric.rules["fm-description-required"].severity == "critical"
    assert rubric.warning_block_threshold == 3


def test_threshold_follows_the_prose():
    assert parse_threshold("2. Two or more warning findings, tier is BLOCK.") == 2
    assert parse_threshold("2. 5 or more warning findings, tier is BLOCK.") == 5


@pytest.mark.parametrize("severities,tier", [
    ([], "PASS"), (["suggestion"], "PASS"), (["warning"], "WARN"), (["warning"] * 2, "WARN"),
    (["warning"] * 3, "BLOCK"), (["critical"], "BLOCK")])
def test_tier_derivation(severities, tier):
    rubric = load_rubric(ROOT / "reviewer/evaluator/references/rubric.md")
    assert rubric.derive_tier(severities) == tier
