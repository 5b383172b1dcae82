"""Rule coverage: which cases exercise each rule, from expectations and baseline citations."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from rubricgate.cli.app import main
from rubricgate.models.baseline import Baseline
from rubricgate.models.case import CaseSpec
from rubricgate.models.task import Expect, Rubric
from rubricgate.suite.coverage import coverage_lines, rule_coverage
from rubricgate.suite.load import load_all
from rubricgate.suite.rubric import load_rubric

ROOT = Path(__file__).resolve().parents[2]
JUDGEMENT = {"desc-what-and-when", "examples-present", "no-contradictions", "scope-single-purpose", "steps-actionable"}


def case(cid: str, tier: str | None = None, rules=(), absent=()) -> CaseSpec:
    return CaseSpec(id=cid, source="task", origin=f"{cid}.yaml", review=["x/SKILL.md"], rubric=Rubric(),
                    expect=Expect(tier=tier, rules=list(rules), absent_rules=list(absent)))


def rubric():
    return load_rubric(ROOT / "reviewer/evaluator/references/rubric.md")


def test_rules_no_expectation_cites_are_uncovered():
    cov = rule_coverage(rubric(), [case("a", "BLOCK", rules=["secret-in-file"])])
    assert cov.row("secret-in-file").expected == ("a",)
    assert "fm-name-required" in cov.uncovered and "secret-in-file" not in cov.uncovered
    assert not cov.cited_known


def test_absent_rules_count_as_exercising():
    cov = rule_coverage(rubric(), [case("a", "PASS", absent=["body-length"])])
    assert cov.row("body-length").cases == ["a"]


def test_baseline_citations_cover_a_rule_and_place_the_tier_rules():
    base = Baseline(rates={}, cases={}, format_version=3,
                    cited={"a": ["body-present", "refs-link-broken", "fm-name-matches-folder"]})
    cov = rule_coverage(rubric(), [case("a", "BLOCK")], base)
    assert cov.cited_known and cov.row("body-present").cited == ("a",) and cov.row("body-present").expected == ()
    threshold = cov.row("tier:warning-threshold")
    assert threshold.cited == ("a",) and threshold.expected == ()  # three warnings, no critical, BLOCK


def test_tier_rules_from_expected_tiers():
    cases = [case("p", "PASS"), case("w", "WARN", rules=["body-present", "refs-link-broken"]),
             case("b", "BLOCK", rules=["secret-in-file"])]
    cov = rule_coverage(rubric(), cases)
    assert cov.row("tier:otherwise-pass").cases == ["p"]
    assert cov.row("tier:warnings-warn").cases == ["w"]
    assert cov.row("tier:warning-threshold").cases == ["w"]  # two warnings: a threshold of 2 flips it
    assert cov.row("tier:critical-blocks").cases == ["b"]


def test_this_repository_leaves_exactly_the_judgement_rules_uncovered():
    loaded = load_all(ROOT)
    cov = rule_coverage(loaded.rubric, loaded.cases, loaded.baseline)
    assert set(cov.uncovered) == JUDGEMENT
    text = "\n".join(coverage_lines(cov))
    assert "UNCOVERED" in text and "scope-single-purpose" in text.splitlines()[-1]


def test_validate_and_coverage_print_the_table(repo):
    out = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert out.exit_code == 0 and "rule coverage:" in out.output and "uncovered:" in out.output
    out = CliRunner().invoke(main, ["coverage", "--repo", str(repo), "--json"])
    assert out.exit_code == 0, out.output
    assert '"uncovered"' in out.output and '"scope-single-purpose"' in out.output


def test_every_rule_the_builtin_judges_has_a_fixture_where_it_is_the_only_finding():
    """Each mechanical rule is exercised by a fixture whose only finding (in the baseline run) it is:
    a mutant of that rule's severity then flips a case no other rule's edit can mask."""
    loaded = load_all(ROOT)
    fixtures = {c.id for c in loaded.cases if c.source == "fixture"}
    alone = {rules[0] for case, rules in loaded.baseline.cited.items() if case in fixtures and len(set(rules)) == 1}
    mechanical = {r.id for r in loaded.rubric.rules.values() if r.kind == "mechanical"}
    assert mechanical - alone == set()


def test_tier_rules_read_the_rubrics_own_severity_words():
    from dataclasses import replace

    from rubricgate.suite.rubric import Vocabulary

    base = rubric()
    words = Vocabulary({"major": "critical", "minor": "warning", "nit": "suggestion"})
    renamed = {k: replace(r, severity={"critical": "major", "warning": "minor", "suggestion": "nit"}[r.severity])
               for k, r in base.rules.items()}
    spec = replace(base, rules=renamed, vocabulary=words)
    cov = rule_coverage(spec, [case("b", "BLOCK", rules=["secret-in-file"]), case("w", "WARN", rules=["body-present", "refs-link-broken"])])
    assert cov.row("tier:critical-blocks").cases == ["b"] and cov.row("tier:warning-threshold").cases == ["w"]


def test_coverage_names_no_change_where_a_run_sees_none_and_names_a_config_change(repo):
    assert CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo)]).exit_code == 0
    out = CliRunner().invoke(main, ["coverage", "--repo", str(repo)])
    assert out.exit_code == 0 and "changed:" not in out.output, out.output
    config = repo / "rubricgate.yaml"
    config.write_text(config.read_text().replace("  method: strict\n", "  method: strict\n  inconclusive: pass\n"))
    out = CliRunner().invoke(main, ["coverage", "--repo", str(repo)])
    assert "rubricgate.yaml#gate changed" in out.output and "rubricgate.yaml#agent" not in out.output, out.output
