"""Change-aware decisions: every changed rule named with its cases; an unseen change is INCONCLUSIVE."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

from rubricgate.cli.app import main
from rubricgate.gating.changes import LET_THROUGH, change_aware, change_line, changed_first, rule_changes
from rubricgate.models.baseline import Baseline, RuleRecord
from rubricgate.models.case import CaseSpec
from rubricgate.models.config import GateConfig, TiersConfig
from rubricgate.models.results import Decision
from rubricgate.models.task import Expect, Rubric
from rubricgate.suite.rubric import load_rubric, vocabulary_from
from tests.conftest import git, make_repo, set_severity
from tests.suite.test_trees import crlf_checkout

ROOT = Path(__file__).resolve().parents[2]
RUBRIC = load_rubric(ROOT / "reviewer/evaluator/references/rubric.md")


def case(cid: str, tier: str, rules=()) -> CaseSpec:
    return CaseSpec(id=cid, source="task", origin=f"{cid}.yaml", review=["x/SKILL.md"], rubric=Rubric(),
                    expect=Expect(tier=tier, rules=list(rules)))


def recorded(**edits) -> Baseline:
    rules = {r.id: RuleRecord(severity=r.severity, kind=r.kind) for r in RUBRIC.rules.values()}
    for rid, sev in edits.items():
        rules[rid] = RuleRecord(severity=sev, kind=rules[rid].kind)
    return Baseline(rates={}, format_version=3, rubric_rules=rules, tier_threshold=3)


def test_no_record_of_the_rule_table_means_no_changes():
    assert rule_changes(RUBRIC, [], Baseline(rates={})) == [] and rule_changes(RUBRIC, [], None) == []


def test_a_severity_change_names_the_cases_that_exercise_the_rule():
    cases = [case("a", "BLOCK", ["secret-in-file"]), case("b", "PASS")]
    (change,) = rule_changes(RUBRIC, cases, recorded(**{"secret-in-file": "warning"}))
    assert (change.rule, change.change, change.cases) == ("secret-in-file", "severity", ["a"])
    assert change.detail == "severity warning -> critical"


def test_an_unseen_change_makes_a_pass_inconclusive_with_exit_2():
    changes = rule_changes(RUBRIC, [case("b", "PASS")], recorded(**{"scope-single-purpose": "warning"}))
    decision = change_aware(Decision(status="pass", exit_code=0), changes, GateConfig())
    assert decision.status == "inconclusive" and decision.exit_code == 2
    assert decision.reasons[0] == ("rule scope-single-purpose changed severity warning -> suggestion; no case "
                                   "exercises it; add one with `rubricgate record` or a fixture")


def test_inconclusive_pass_policy_lets_the_change_through_as_the_rate_tests_inconclusive():
    """It was a PASS with the change among its warnings: the JUnit decision testcase passed with
    no mark where a rate test's INCONCLUSIVE let through was <skipped>, and the headlines differed."""
    changes = rule_changes(RUBRIC, [], recorded(**{"scope-single-purpose": "warning"}))
    decision = change_aware(Decision(status="pass", exit_code=0), changes, GateConfig(inconclusive="pass"))
    assert (decision.status, decision.exit_code) == ("inconclusive", 0)
    assert decision.reasons == [change_line(changes[0])] and decision.warnings[0] == LET_THROUGH
    held = Decision(status="inconclusive", exit_code=2, reasons=["gate.inconclusive: pass cannot let this run exit 0"])
    again = change_aware(held, changes, GateConfig(inconclusive="pass"))
    assert again.exit_code == 2 and again.reasons == [*held.reasons, change_line(changes[0])]  # why held stays first


def test_a_regression_stays_a_regression():
    changes = rule_changes(RUBRIC, [], recorded(**{"scope-single-purpose": "warning"}))
    decision = change_aware(Decision(status="regression", exit_code=1), changes, GateConfig())
    assert decision.exit_code == 1 and "no case exercises it" in decision.warnings[0]


def test_removed_added_and_threshold_changes():
    base = recorded()
    base.rubric_rules["old-rule"] = RuleRecord(severity="warning", kind="judgement")
    base.cited = {"w": ["old-rule"]}
    now = replace(RUBRIC, rules={k: v for k, v in RUBRIC.rules.items() if k != "body-length"},
                  warning_block_threshold=2)
    cases = [case("w", "WARN", ["body-present", "refs-link-broken"])]
    got = {c.rule: c for c in rule_changes(now, cases, base)}
    assert got["old-rule"].change == "removed" and got["old-rule"].cases == ["w"]
    assert got["body-length"].change == "removed" and got["body-length"].cases == []
    assert got["tier:warning-threshold"].detail == "warning threshold 3 -> 2" and got["tier:warning-threshold"].cases == ["w"]


def test_prompt_edits_are_seen_by_every_case():
    base = recorded()
    base.reviewer_digests = {"reviewer/prompts/evaluate.md": "0" * 64}
    (change,) = rule_changes(RUBRIC, [case("a", "PASS")], base, {"reviewer/prompts/evaluate.md": "1" * 64})
    assert change.change == "file" and change.cases == ["a"]


def test_cases_exercising_changed_rules_run_first():
    cases = [case("a", "PASS"), case("b", "BLOCK", ["secret-in-file"]), case("c", "PASS")]
    changes = rule_changes(RUBRIC, cases, recorded(**{"secret-in-file": "warning"}))
    assert [c.id for c in changed_first(cases, changes)] == ["b", "a", "c"]


def test_run_exits_2_naming_an_edited_rule_no_case_exercises(repo):
    assert CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo)]).exit_code == 0
    set_severity(repo, "scope-single-purpose", "warning")
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    assert "rule scope-single-purpose changed severity suggestion -> warning; no case exercises it" in result.output
    run_dir = max(p for p in (repo / "reports").iterdir() if not p.name.endswith("-baseline"))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["decision"]["status"] == "inconclusive" and summary["rule_changes"][0]["cases"] == []
    assert "scope-single-purpose" in summary["coverage"]["uncovered"]
    html = (run_dir / "report.html").read_text()
    assert 'id="coverage"' in html and 'id="rule-changes"' in html


def test_a_run_let_through_by_inconclusive_pass_says_so_in_every_reports_first_line(repo):
    config = repo / "rubricgate.yaml"
    config.write_text(config.read_text().replace("  method: strict\n", "  method: strict\n  inconclusive: pass\n"))
    assert CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo)]).exit_code == 0
    set_severity(repo, "scope-single-purpose", "warning")
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 0, result.output
    assert "decision: INCONCLUSIVE (exit 0, passed by gate.inconclusive: pass)" in result.output, result.output
    run_dir = max(p for p in (repo / "reports").iterdir() if not p.name.endswith("-baseline"))
    first = (run_dir / "comment.md").read_text().splitlines()[1]
    assert "rubricgate **INCONCLUSIVE** (passed by gate.inconclusive: pass):" in first, first
    assert "scope-single-purpose severity suggestion → warning and no case exercises it" in first
    html = (run_dir / "report.html").read_text()
    assert "INCONCLUSIVE (passed by gate.inconclusive: pass):</strong>" in html
    assert "scope-single-purpose severity suggestion → warning and no case exercises it" in html
    # JUnit marks it as a rate test's INCONCLUSIVE let through is: <skipped>, the change its reason
    gate = ET.parse(run_dir / "junit.xml").getroot().find(".//testcase[@name='decision']")
    skipped = gate.find("skipped") if gate is not None else None
    assert skipped is not None and skipped.get("message", "").startswith(
        "INCONCLUSIVE (exit 0, passed by gate.inconclusive: pass): rule scope-single-purpose changed severity"), \
        (run_dir / "junit.xml").read_text()


def test_a_gate_change_holds_a_run_that_gate_inconclusive_pass_let_through():
    # A run left undecided and let through (exit 0) by gate.inconclusive: pass, whose gate settings
    # changed or which leaves a measured dimension ungraded: held whatever that key says.
    from rubricgate.gating.changes import hold

    let_through = Decision(status="inconclusive", exit_code=0, method="statistical", reasons=["verdict undecided"],
                           warnings=["gate.inconclusive: pass lets this undecided run exit 0"])
    held = hold(let_through, ["baseline.json measures verdict, which this run does not grade"],
                GateConfig(inconclusive="fail"))
    assert held.exit_code == 2 and held.status == "inconclusive", held
    assert held.reasons[0].startswith("gate.inconclusive: pass cannot let this run exit 0"), held.reasons
    assert not any("lets this undecided run exit 0" in w for w in held.warnings), held.warnings
    lenient = hold(let_through, ["cases edited beside a reviewer change"], GateConfig(inconclusive="pass"))
    assert lenient.exit_code == 0  # what gate.inconclusive: pass may let through, it still does


def test_a_rubric_s_own_word_kept_without_its_meaning_is_no_change():
    """A baseline written before RuleRecord.means kept a `tiers:` word alone ("blocker"): read as
    meaning itself, every rule was 'changed severity blocker -> blocker (means blocker ->
    critical)' and each run after the upgrade exited 2."""
    own = replace(RUBRIC, rules={r.id: replace(r, severity={"critical": "blocker"}.get(r.severity, r.severity))
                                 for r in RUBRIC.rules.values()},
                  vocabulary=vocabulary_from(TiersConfig(severities={"blocker": "critical", "warning": "warning",
                                                                     "suggestion": "suggestion"})))
    older = Baseline(rates={}, format_version=3, tier_threshold=3,
                     rubric_rules={r.id: RuleRecord(severity=r.severity, kind=r.kind) for r in own.rules.values()})
    assert rule_changes(own, [], older) == []
    older.rubric_rules["secret-in-file"] = RuleRecord(severity="warning", kind="mechanical")
    (moved,) = rule_changes(own, [], older)
    assert moved.detail == "severity warning -> blocker (means warning -> critical)"


def test_a_crlf_checkout_of_an_unchanged_suite_names_core_autocrlf_where_it_reads_changed(tmp_path: Path) -> None:
    # Git for Windows checks text files out with CRLF: every reviewer file and case read changed
    # since the baseline (digests are of the bytes), exit 2, and nothing said why.
    repo = make_repo(tmp_path / "repo")
    (repo / "evals/tasks/.keep").write_text("")
    assert CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo), "--reason", "first"]).exit_code == 0
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "baseline")
    crlf_checkout(repo)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    decision = next(line for line in result.output.splitlines() if line.startswith("decision:"))
    assert "edited since it was measured" in decision and decision.endswith("core.autocrlf=false)"), decision
    assert "core.autocrlf=true in this checkout" in decision


def test_git_is_asked_about_line_ends_only_where_something_reads_changed(tmp_path: Path, monkeypatch) -> None:
    # autocrlf_note is a git process: every run started one before it looked whether anything
    # read changed, 2-4 ms of a 1-case run's CPU for a note it then dropped.
    import rubricgate.pipeline

    asked: list[Path] = []
    monkeypatch.setattr(rubricgate.pipeline, "autocrlf_note", lambda repo: asked.append(repo) or "")
    repo = make_repo(tmp_path / "repo")
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 0, result.output
    assert asked == []  # nothing read changed: no git process (the CRLF test below asks where it does)


def _measure_the_verdict_alone(repo: Path) -> None:
    """baseline.json of `repo` measured, then made a baseline of the verdict alone (as one measured
    when the agent's format showed no tool calls, or by an older rubricgate)."""
    assert CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo), "--reason", "first"]).exit_code == 0
    path = repo / "baseline.json"
    data = json.loads(path.read_text())
    for counts in [*data["cases"].values(), data["rates"], *(h["rates"] for h in data["history"])]:
        for dim in ("tool_use", "trajectory"):
            counts.pop(dim, None)
    path.write_text(json.dumps(data))


def test_a_dimension_the_baseline_does_not_measure_holds_a_reviewer_change(tmp_path: Path) -> None:
    """A baseline of the verdict alone (measured when the agent's format showed no tool calls, or
    by an older rubricgate) and a reviewer change: tool_use and trajectory, graded now, were shown
    "no baseline" and the run exited 0 however they failed."""
    repo = make_repo(tmp_path / "repo")
    (repo / "evals/tasks/.keep").write_text("")
    _measure_the_verdict_alone(repo)
    unchanged = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert unchanged.exit_code == 0, unchanged.output  # the same reviewer: reported "no baseline", not held
    prompt = repo / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nBe thorough.\n")
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    assert ("this run grades tool_use, trajectory, which baseline.json does not measure" in result.output)


def test_a_hold_let_through_by_inconclusive_pass_is_inconclusive_exit_0_naming_it():
    """A PASS held by what the suite cannot see beside a reviewer change (edited cases, a grading
    change) stayed a PASS under gate.inconclusive: pass, the hold among its warnings: no headline
    note, and the JUnit decision testcase passed unmarked."""
    from rubricgate.gating.changes import hold

    line = "the reviewer changed since baseline.json was measured (prompt) and 1 case(s) it holds were edited"
    got = hold(Decision(status="pass", exit_code=0, warnings=["w"]), [line], GateConfig(inconclusive="pass"))
    assert (got.status, got.exit_code, got.reasons) == ("inconclusive", 0, [line]), got
    assert got.warnings == [LET_THROUGH, "w"]
    strict = hold(Decision(status="pass", exit_code=0), [line], GateConfig())
    assert (strict.status, strict.exit_code, strict.reasons) == ("inconclusive", 2, [line])


def test_a_dimension_the_baseline_does_not_measure_holds_a_reviewer_change_whatever_inconclusive_says(
        tmp_path: Path) -> None:
    """Under gate.inconclusive: pass the reviewer change graded on tool_use and trajectory, which
    nothing judged, exited 0 (a PASS, the hold a warning): failing every trial of them, it passed."""
    repo = make_repo(tmp_path / "repo")
    config = repo / "rubricgate.yaml"
    config.write_text(config.read_text().replace("  method: strict\n", "  method: strict\n  inconclusive: pass\n"))
    _measure_the_verdict_alone(repo)
    prompt = repo / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nBe thorough.\n")
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    assert "decision: INCONCLUSIVE (exit 2)" in result.output, result.output
    run_dir = max(p for p in (repo / "reports").iterdir() if not p.name.endswith("-baseline"))
    reasons = json.loads((run_dir / "summary.json").read_text())["decision"]["reasons"]
    assert reasons[0].startswith("gate.inconclusive: pass cannot let this run exit 0: the reviewer changed"), reasons
    assert any("which baseline.json does not measure" in r for r in reasons), reasons
