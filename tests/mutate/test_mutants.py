"""Mutant generation goes through the rubric model: each mutant is one plausible, parseable edit."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rubricgate.mutate.mutants import all_mutants, prompt_mutants, rule_mutants, select, threshold_mutants
from rubricgate.suite.rubric import load_rubric, parse_rules, parse_threshold

ROOT = Path(__file__).resolve().parents[2]
RUBRIC_PATH = "reviewer/evaluator/references/rubric.md"
RUBRIC = load_rubric(ROOT / RUBRIC_PATH)
TEXT = (ROOT / RUBRIC_PATH).read_text()


def test_every_rule_is_deleted_and_moved_a_step_each_way_or_skipped_with_a_reason():
    made, skipped = rule_mutants(RUBRIC, TEXT, RUBRIC_PATH)
    by_id = {m.id: m for m in made}
    assert all(f"delete-rule:{r}" in by_id for r in RUBRIC.rules)
    assert "fm-name-required" not in parse_rules(by_id["delete-rule:fm-name-required"].text, RUBRIC_PATH)
    assert parse_rules(by_id["severity-down:secret-in-file"].text, RUBRIC_PATH)["secret-in-file"].severity == "warning"
    assert parse_rules(by_id["severity-up:body-present"].text, RUBRIC_PATH)["body-present"].severity == "critical"
    reasons = {s.id: s.reason for s in skipped}
    assert "no step up" in reasons["severity-up:secret-in-file"] and "no step down" in reasons["severity-down:examples-present"]
    assert len(made) + len(skipped) == 3 * len(RUBRIC.rules)


def test_a_severity_scale_from_the_rubric_model_is_followed():
    class Scaled:  # a rubric model whose scale orders the severities its own way
        rules = RUBRIC.rules
        severities = ("warning", "critical", "suggestion")

    made, skipped = rule_mutants(Scaled(), TEXT, RUBRIC_PATH)  # type: ignore[arg-type]
    up = next(m for m in made if m.id == "severity-up:secret-in-file")
    assert parse_rules(up.text, RUBRIC_PATH)["secret-in-file"].severity == "warning"
    assert "severity-up:body-present" in {s.id for s in skipped}


def test_threshold_mutants_keep_the_rubrics_wording():
    made, skipped = threshold_mutants(RUBRIC, TEXT, RUBRIC_PATH)
    assert [parse_threshold(m.text) for m in made] == [2, 4] and not skipped
    assert "Two or more warning findings" in made[0].text


def test_a_rubric_without_a_stated_threshold_skips_it_with_a_reason():
    text = TEXT.replace("Three or more warning findings, tier is BLOCK.", "Many warnings block.")
    made, skipped = threshold_mutants(replace(RUBRIC), text, RUBRIC_PATH)
    assert made == [] and "states no warning threshold" in skipped[0].reason


def test_prompt_paragraphs_are_dropped_one_at_a_time_and_headings_kept():
    made = prompt_mutants("# Title\n\nFirst para.\n\n## Head\n\nSecond para.\n", "p.md")
    assert [m.text for m in made] == ["# Title\n\n## Head\n\nSecond para.\n", "# Title\n\nFirst para.\n\n## Head"]


def test_only_rules_and_shards_partition_the_mutants():
    mutants, _ = all_mutants(ROOT, RUBRIC, RUBRIC_PATH, "reviewer/prompts/evaluate.md")
    assert {m.rule for m in select(mutants, ["body-present"], None)} == {"body-present"}
    shards = [select(mutants, [], (k, 3)) for k in (1, 2, 3)]
    assert sorted(m.id for s in shards for m in s) == sorted(m.id for m in mutants)
