"""rubric.md parsing: the table is the single source of truth."""

import json
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


TEAM_RUBRIC = """# Review rubric

| id | severity | kind | rule |
| --- | --- | --- | --- |
| fm-description-required | major | mechanical | The frontmatter has a description. |
| style-heading | minor | judgement | The body starts with a heading. |

## Tiers

Any major -> WARN. Three minors -> WARN. Otherwise PASS.
"""


def _team_vocabulary():
    from rubricgate.models.config import TiersConfig
    from rubricgate.suite.rubric import vocabulary_from

    return vocabulary_from(TiersConfig.model_validate({
        "severities": {"major": "warning", "minor": "suggestion"},
        "rules": [{"severity": "major", "tier": "WARN"}, {"severity": "minor", "at_least": 3, "tier": "WARN"}]}))


def test_a_team_vocabulary_and_rules_drive_the_derivation():
    from rubricgate.suite.rubric import parse_rubric

    rubric = parse_rubric(TEAM_RUBRIC, "r.md", _team_vocabulary())
    assert rubric.rules["fm-description-required"].severity == "major"
    assert rubric.severities == ("major", "minor")
    assert rubric.derive_tier(["major"]) == "WARN"  # the default derivation has no "major": PASS
    assert rubric.derive_tier(["major"] * 5) == "WARN"  # never BLOCK: this rubric has no BLOCK rule
    assert rubric.derive_tier(["minor"] * 2) == "PASS" and rubric.derive_tier(["minor"] * 3) == "WARN"


def test_the_team_rubric_without_its_vocabulary_is_an_error_naming_the_line_and_the_setting():
    from rubricgate.suite.rubric import parse_rubric

    with pytest.raises(GateInputError) as exc:
        parse_rubric(TEAM_RUBRIC, "r.md")
    assert exc.value.field == "line 5" and "tiers.severities" in exc.value.one_line()


def test_a_tier_section_the_default_derivation_cannot_read_is_an_error_naming_its_line():
    from rubricgate.suite.rubric import parse_rubric

    text = TEAM_RUBRIC.replace("| major |", "| warning |").replace("| minor |", "| suggestion |")
    with pytest.raises(GateInputError) as exc:
        parse_rubric(text, "r.md")
    assert exc.value.field == "line 8" and "tiers:" in exc.value.one_line()
    stated = text.replace("Any major -> WARN.", "Two or more warning findings, tier is BLOCK.")
    assert parse_rubric(stated, "r.md").warning_block_threshold == 2


def test_tier_rules_naming_a_word_outside_the_vocabulary_are_refused():
    from rubricgate.models.config import TiersConfig
    from rubricgate.suite.rubric import vocabulary_from

    bad = TiersConfig.model_validate({"severities": {"major": "warning"}, "rules": [{"severity": "blocker", "tier": "BLOCK"}]})
    with pytest.raises(GateInputError, match="blocker"):
        vocabulary_from(bad)


def test_the_grader_recomputes_the_tier_in_the_teams_words():
    from rubricgate.graders.contract import parse_verdict
    from rubricgate.suite.rubric import parse_rubric

    rubric = parse_rubric(TEAM_RUBRIC, "r.md", _team_vocabulary())
    finding = {"severity": "major", "rule": "fm-description-required", "file": "s/SKILL.md", "line": 1}
    verdict = '```json\n' + json.dumps({"tier": "PASS", "findings": [finding]}) + '\n```'
    got = parse_verdict(verdict, rubric)
    assert (got.status, got.effective_tier, got.escalated, got.warnings) == ("ok", "WARN", True, [
        "agent reported tier PASS but its findings derive WARN (1 major, 0 minor); escalating to WARN"])
