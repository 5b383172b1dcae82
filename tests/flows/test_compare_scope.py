"""`compare --base` judges a pull request's reviewer change on what the base's suite can see
(flows/compare_scope.py): a changed rule no case exercises, or cases the pull request deletes
beside its reviewer change, never read as a PASS."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import git, make_repo

FIXTURES = ["block/data-loader", "pass/weekly-revenue-summary", "pass/ab-test-readout"]
RUBRIC = "reviewer/evaluator/references/rubric.md"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    got = CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo)])  # records the rule table
    assert got.exit_code == 0, got.output
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "measured")
    return repo


@contextlib.contextmanager
def _ref_tree(repo: Path):
    from rubricgate.flows.compare_trees import ref_worktree

    with ref_worktree(repo, "HEAD") as tree:
        yield tree


def _compare(repo: Path):
    return CliRunner().invoke(main, ["compare", "--repo", str(repo), "--base", "HEAD", "--trials", "1"])


def _edit_rule(repo: Path, rule: str, old: str, new: str) -> None:
    path = repo / RUBRIC
    lines = [line.replace(f"| {old} |", f"| {new} |") if line.startswith(f"| {rule} |") else line
             for line in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")


def test_a_rule_change_no_case_exercises_is_not_a_pass(base) -> None:
    _edit_rule(base, "scope-single-purpose", "suggestion", "warning")
    got = _compare(base)
    assert got.exit_code == 2 and "INCONCLUSIVE" in got.output, got.output
    assert "scope-single-purpose" in got.output


def test_cases_removed_beside_a_reviewer_change_are_not_a_pass(base) -> None:
    prompt = base / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nReview carefully.\n")
    shutil.rmtree(base / "fixtures/block/data-loader")
    got = _compare(base)
    assert got.exit_code == 2, got.output
    assert "also removes 1 case(s) the base has (fixture-data-loader)" in got.output


def test_cases_removed_with_the_reviewer_unchanged_are_the_suites_business(base) -> None:
    shutil.rmtree(base / "fixtures/block/data-loader")
    got = _compare(base)
    assert got.exit_code == 0, got.output


def _set(repo: Path, section: str, key: str, value) -> None:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config.setdefault(section, {})[key] = value
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))


def test_grading_loosened_beside_a_reviewer_change_is_not_a_pass(base) -> None:
    """Both sides are graded the working tree's way: a PR that allows a forbidden tool or more steps
    hides its reviewer's use of them on both sides alike."""
    prompt = base / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nYou may run bash.\n")
    _set(base, "rubric", "tool_use", {"allowed": ["read", "grep", "glob", "bash"], "forbidden": [],
                                      "required": ["read"]})
    got = _compare(base)
    assert got.exit_code == 2 and "INCONCLUSIVE" in got.output, got.output
    assert ("this pull request also changes how answers are graded (rubric.tool_use): its reviewer change is "
            "judged by the base's grading; change the grading in a pull request of its own") in got.output


def test_grading_changed_with_the_reviewer_unchanged_is_not_held(base) -> None:
    _set(base, "rubric", "trajectory", {"max_steps": 40})
    got = _compare(base)
    assert got.exit_code == 0, got.output


def test_an_edit_to_the_verdict_hook_s_file_is_a_grading_change(tmp_path) -> None:
    from rubricgate.flows.compare_scope import grading_changes
    from rubricgate.models.config import Config

    at_ref = Config.model_validate({"verdict": {"format": "hook", "hook": "hooks/verdict.py:read"}})
    for side, body in (("ref", "def read(text): ...\n"), ("repo", "def read(text): return 'PASS'\n")):
        (tmp_path / side / "hooks").mkdir(parents=True)
        (tmp_path / side / "hooks" / "verdict.py").write_text(body)
    got = grading_changes(at_ref, at_ref.model_copy(deep=True), tmp_path / "ref", tmp_path / "repo")
    assert got == ["the verdict hook's files (hooks/verdict.py and its folder)"]
    assert grading_changes(at_ref, at_ref, tmp_path / "ref", tmp_path / "ref") == []
    # A data file the hook loads beside it is the hook's too.
    (tmp_path / "repo" / "hooks" / "verdict.py").write_text("def read(text): ...\n")
    (tmp_path / "repo" / "hooks" / "escalate.json").write_text('["fm-description-required"]')
    assert grading_changes(at_ref, at_ref, tmp_path / "ref", tmp_path / "repo") == [
        "the verdict hook's files (hooks/verdict.py and its folder)"]
    assert grading_changes(at_ref, Config(), tmp_path / "ref", tmp_path / "repo") == ["verdict"]


def test_a_reordered_tool_allowlist_is_no_grading_change_and_a_new_tool_is(tmp_path) -> None:
    """Each list of rubric.tool_use is a set: reordering one was held as a grading change."""
    from rubricgate.flows.compare_scope import grading_changes
    from rubricgate.models.config import Config

    def config(allowed: list[str], forbidden: list[str]) -> Config:
        return Config.model_validate({"rubric": {"tool_use": {"allowed": allowed, "forbidden": forbidden}}})

    at_ref = config(["read", "grep", "glob"], ["write", "bash"])
    assert grading_changes(at_ref, config(["glob", "read", "grep", "read"], ["bash", "write"]), tmp_path, tmp_path) == []
    assert grading_changes(at_ref, config(["read", "grep", "glob", "bash"], ["write", "bash"]), tmp_path,
                           tmp_path) == ["rubric.tool_use"]
    assert grading_changes(at_ref, config(["read", "grep", "glob"], ["write"]), tmp_path, tmp_path) == [
        "rubric.tool_use"]


def test_a_rule_change_is_seen_when_the_pull_request_also_updates_the_baseline(base) -> None:
    """The documented way to record a rule change is `baseline update`; the head's baseline then
    holds the new rule table, and the change read against it had vanished: PASS."""
    _edit_rule(base, "scope-single-purpose", "suggestion", "warning")
    assert CliRunner().invoke(main, ["baseline", "update", "--repo", str(base), "--reason", "a warning now"]).exit_code == 0
    got = _compare(base)
    assert got.exit_code == 2 and "scope-single-purpose" in got.output, got.output


def test_a_reworded_rule_no_case_exercises_is_named_not_held(base) -> None:
    """A benign rewording of the rules must pass the PR gate (issue 40's target); the line names it."""
    path = base / RUBRIC
    text = path.read_text()
    assert "The skill does one job" in text
    path.write_text(text.replace("The skill does one job", "Each skill does a single job"))
    got = _compare(base)
    assert got.exit_code == 0, got.output


def test_a_config_made_a_link_to_a_new_file_still_meets_the_base_s_gate_and_reviewer(base) -> None:
    """REF's config was looked up where the link led: 'HEAD has no rubricgate.yaml that loads', and
    the PR's own gate (the verdict left out of gate.dimensions) and reviewer decided: exit 0."""
    (base / "conf").mkdir()
    (base / "rubricgate.yaml").rename(base / "conf" / "rg.yaml")
    (base / "rubricgate.yaml").symlink_to("conf/rg.yaml")
    _set(base, "gate", "dimensions", ["tool_use", "trajectory"])  # written through the link
    _edit_rule(base, "fm-description-required", "critical", "warning")
    got = _compare(base)
    assert got.exit_code == 1 and "REGRESSION" in got.output, got.output
    assert "the gate settings of HEAD decide: this checkout changes gate.dimensions" in got.output


def test_a_base_config_that_does_not_load_is_an_input_error_not_this_checkout_s_settings(base) -> None:
    (base / "rubricgate.yaml").write_text((base / "rubricgate.yaml").read_text() + "unknown_key: 1\n")
    git(base, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "broken config")
    (base / "rubricgate.yaml").write_text((base / "rubricgate.yaml").read_text().replace("unknown_key: 1\n", ""))
    got = _compare(base)
    assert got.exit_code == 2 and "HEAD's rubricgate.yaml does not load" in got.output, got.output
    assert "unknown_key" in got.output  # what is wrong with it, not "does not load" alone


def test_cases_deleted_while_the_suite_folders_move_are_still_seen(base) -> None:
    """REF's case ids were read from the PR's suite folders: moving `fixtures/` hid the deletion."""
    prompt = base / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nReview carefully.\n")
    (base / "fixtures").rename(base / "fx")
    shutil.rmtree(base / "fx/block/data-loader")
    _set(base, "suite", "fixtures", "fx")
    got = _compare(base)
    assert got.exit_code == 2 and "also removes 1 case(s) the base has (fixture-data-loader)" in got.output, got.output


def test_a_pull_request_whose_side_replays_recorded_answers_is_not_a_pass(base) -> None:
    """agent: replay with a good run's transcripts committed: the PR's reviewer was never run on
    its side, and a lowered rule PASSed."""
    ran = CliRunner().invoke(main, ["run", "--repo", str(base)])
    assert ran.exit_code == 0, ran.output
    run_dir = next(p for p in (base / "reports").iterdir() if (p / "transcripts").is_dir())
    shutil.copytree(run_dir / "transcripts", base / "recordings" / "transcripts")
    _edit_rule(base, "fm-description-required", "critical", "warning")
    config = yaml.safe_load((base / "rubricgate.yaml").read_text())
    config["agent"].update({"name": "replay", "replay_dir": "recordings"})
    (base / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    got = _compare(base)
    assert got.exit_code == 2 and "INCONCLUSIVE" in got.output, got.output
    assert "this checkout's side replays recorded answers for 3 case(s) (fixture-ab-test-readout, " in got.output


def test_a_case_re_expected_beside_a_reviewer_change_is_not_a_pass(base) -> None:
    """Moving data-loader from block/ to warn/ (its expectation) beside the rule lowered that
    makes it a WARN read as a fix: exit 0."""
    _edit_rule(base, "fm-description-required", "critical", "warning")
    (base / "fixtures/warn").mkdir(exist_ok=True)
    (base / "fixtures/block/data-loader").rename(base / "fixtures/warn/data-loader")
    got = _compare(base)
    assert got.exit_code == 2 and "INCONCLUSIVE" in got.output, got.output
    assert ("this pull request also changes what is reviewed or expected in 1 case(s) the base has "
            "(fixture-data-loader)") in got.output


def test_a_case_s_wording_may_change_beside_a_reviewer_change(base) -> None:
    prompt = base / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nReview carefully.\n")
    expect = base / "fixtures/block/data-loader/expect.yaml"
    expect.write_text(expect.read_text().replace("why: ", "why: Reworded. "))
    got = _compare(base)
    assert got.exit_code == 0, got.output


def test_a_task_run_by_another_agent_beside_a_reviewer_change_is_not_a_pass(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo", tasks=["block-missing-description"])
    _edit_rule(repo, "fm-description-required", "critical", "warning")
    task = repo / "evals/tasks/block-missing-description.yaml"
    task.write_text(task.read_text() + "agent: replay\n")
    from rubricgate.flows.compare_scope import edited_cases
    from rubricgate.suite.load import load_all

    with _ref_tree(repo) as ref_tree:
        from rubricgate.models.config import Config

        at_ref = Config.model_validate(yaml.safe_load((ref_tree / "rubricgate.yaml").read_text()))
        got = edited_cases(ref_tree, at_ref, "rubricgate.yaml", repo, load_all(repo, require_baseline=False))
    assert got == ["block-missing-description"]


def test_a_base_side_that_passed_nothing_judges_nothing() -> None:
    from rubricgate.flows.compare_scope import blank_dimensions

    assert blank_dimensions({"a": {"verdict": (0, 3), "tool_use": (3, 3)}, "b": {"verdict": (0, 3)}}) == ["verdict"]
    assert blank_dimensions({"a": {"verdict": (0, 3)}, "b": {"verdict": (1, 3)}}) == []


def test_a_reviewer_changed_only_in_the_config_still_holds_what_it_cannot_see(base) -> None:
    """A `tiers:` edit changes the reviewer though no reviewer file changes: the cases it deletes
    beside it were not held (exit 0)."""
    _set(base, "tiers", "severities", {"critical": "critical", "warning": "warning", "suggestion": "suggestion"})
    _set(base, "tiers", "rules", [{"severity": "critical", "at_least": 2, "tier": "BLOCK"},
                                  {"severity": "critical", "tier": "WARN"}, {"severity": "warning", "tier": "WARN"}])
    shutil.rmtree(base / "fixtures/block/data-loader")
    got = _compare(base)
    assert got.exit_code == 2, got.output
    assert "also removes 1 case(s) the base has (fixture-data-loader)" in got.output


def test_a_rule_change_only_cases_left_out_by_only_exercise_is_not_a_pass(base) -> None:
    _edit_rule(base, "fm-description-required", "critical", "warning")
    got = CliRunner().invoke(main, ["compare", "--repo", str(base), "--base", "HEAD", "--trials", "1",
                                    "--only", "weekly-revenue-summary"])
    assert got.exit_code == 2 and "INCONCLUSIVE" in got.output, got.output


def test_a_change_to_how_answers_are_read_is_held_though_no_reviewer_file_changed() -> None:
    """`verdict.rules` with severities is the reviewer's rule table: lowering one there read both
    sides alike (0/1 -> 0/1, PASS) where `run` said REGRESSION."""
    from rubricgate.flows.compare_scope import Unseen, scoped
    from rubricgate.models.config import GateConfig
    from rubricgate.models.results import Decision

    passed = Decision(status="pass", exit_code=0)
    got = scoped(passed, None, None, Unseen(regraded=["verdict.rules"]), GateConfig())
    assert got.exit_code == 2 and got.reasons[0].startswith("this pull request changes how answers are read "
                                                            "(verdict.rules)")
    # Grading alone (unknown sides count as a reviewer change here) is held as grading, not as reading.
    graded = scoped(passed, None, None, Unseen(regraded=["rubric.trajectory"]), GateConfig())
    assert not any("how answers are read" in r for r in graded.reasons), graded.reasons



def test_a_dimension_one_side_grades_alone_holds_the_comparison_whatever_else_changed() -> None:
    """A pull request moving `agent.format` from text to one that shows tool calls: the head failed
    tool_use every trial, the base never graded it, and the verdict's test alone passed it (exit 0)."""
    from rubricgate.flows.compare_scope import Unseen, scoped
    from rubricgate.models.config import GateConfig
    from rubricgate.models.results import Decision

    line = "the head side grades tool_use and the base side does not (...)"
    got = scoped(Decision(status="pass", exit_code=0), None, None, Unseen(one_sided=[line]), GateConfig())
    assert got.exit_code == 2 and got.status == "inconclusive" and line in got.reasons

def test_a_suite_pull_request_whose_new_answer_key_the_reviewer_fails_is_not_a_pass(base) -> None:
    """Two pull requests, each passing, let a weaker reviewer in: the first moved a BLOCK fixture to
    pass/ (the same reviewer on both sides: "unchanged"), the second made the reviewer lenient and
    the case read as "fixed". The first is held until a baseline update records the new answer key."""
    (base / "fixtures/pass").mkdir(exist_ok=True)
    shutil.move(base / "fixtures/block/data-loader", base / "fixtures/pass/data-loader")
    got = _compare(base)
    assert got.exit_code == 2 and "INCONCLUSIVE" in got.output, got.output
    assert "changes what 1 case(s) expect or review (fixture-data-loader) and the reviewer fails" in got.output
    recorded = CliRunner().invoke(main, ["baseline", "update", "--repo", str(base), "--reason", "data-loader is fine"])
    assert recorded.exit_code == 0, recorded.output
    got = _compare(base)
    assert got.exit_code == 0, got.output


def test_a_suite_pull_request_whose_edited_case_the_reviewer_passes_is_a_pass(base) -> None:
    expect = base / "fixtures/block/data-loader/expect.yaml"
    text = expect.read_text()
    expect.write_text(text.replace("absent_rules: [", "absent_rules: [body-present, "))  # still met
    got = _compare(base)
    assert got.exit_code == 0, got.output


def test_a_pull_request_that_breaks_baseline_json_is_not_a_pass(base) -> None:
    """The comparison judges without it, so it passed (exit 0), and the job failed later in
    `report --compare` with 'no run with a summary.json here'."""
    (base / "baseline.json").write_text("{broken")
    got = _compare(base)
    assert got.exit_code == 2 and "baseline.json" in got.output, got.output


def test_a_rule_change_only_the_baselines_citations_exercise_is_seen_as_run_sees_it(tmp_path) -> None:
    """A fixture's expect.yaml is optional: a rule the baseline's reviewer cited on a case is
    exercised by it (suite/coverage.py). compare read no baseline and called such a change one no
    case exercises: INCONCLUSIVE, exit 2, where `run` judged the same change on that case."""
    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary", "block/weekly-revenue-report"])
    expect = repo / "fixtures/block/weekly-revenue-report/expect.yaml"
    expect.write_text(expect.read_text().replace("rules: [fm-name-format, fm-name-matches-folder]", "rules: [fm-name-format]"))
    assert CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo)]).exit_code == 0
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "measured")
    _edit_rule(repo, "fm-name-matches-folder", "warning", "critical")
    ran = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert ran.exit_code == 0 and "exercised by 1 case(s): fixture-weekly-revenue-report" in ran.output, ran.output
    got = _compare(repo)
    assert got.exit_code == 0, got.output
    assert "exercised by 1 case(s): fixture-weekly-revenue-report" in got.output


def test_citations_a_pull_request_writes_into_its_own_baseline_make_no_rule_exercised(base) -> None:
    """compare reads the citations at REF: a PR loosening a rule no case exercises could otherwise
    cite that rule on a case in its own baseline.json, and the change would read as judged (PASS)."""
    import json

    _edit_rule(base, "scope-single-purpose", "suggestion", "warning")
    data = json.loads((base / "baseline.json").read_text())
    case = next(iter(data["cases"]))
    data["cited"] = {**data.get("cited", {}), case: ["scope-single-purpose"]}
    (base / "baseline.json").write_text(json.dumps(data))
    got = _compare(base)
    assert got.exit_code == 2 and "no case exercises it" in got.output, got.output


def test_citations_stay_read_at_refs_tip_when_the_pull_request_forked_before_it(base) -> None:
    """The base side's reviewer is the merge base's; the citations are still REF's own, never the
    branch's: a PR committing a citation into its baseline.json does not make its rule exercised."""
    import json

    user = ("-c", "user.email=t@example.com", "-c", "user.name=t")
    git(base, "checkout", "-qb", "pr")
    _edit_rule(base, "scope-single-purpose", "suggestion", "warning")
    data = json.loads((base / "baseline.json").read_text())
    data["cited"] = {**data.get("cited", {}), next(iter(data["cases"])): ["scope-single-purpose"]}
    (base / "baseline.json").write_text(json.dumps(data))
    git(base, *user, "commit", "-qam", "loosen and cite")
    git(base, "checkout", "-q", "main")
    (base / "NOTES.md").write_text("main moves on\n")
    git(base, "add", "-A")
    git(base, *user, "commit", "-qm", "notes")
    git(base, "checkout", "-q", "pr")
    got = CliRunner().invoke(main, ["compare", "--repo", str(base), "--base", "main", "--trials", "1"])
    assert got.exit_code == 2 and "no case exercises it" in got.output, got.output
    assert "the merge base of main and HEAD" in got.output


def test_a_dimension_compared_with_nothing_is_held_whatever_gate_inconclusive_says() -> None:
    """Under gate.inconclusive: pass a head failing tool_use every trial, which its base never graded
    (or passed no trial of), was a PASS with the hold among its warnings: exit 0."""
    from rubricgate.flows.compare_scope import Unseen, scoped
    from rubricgate.models.config import GateConfig
    from rubricgate.models.results import Decision

    line = "the head side grades tool_use and the base side does not (...)"
    lenient = GateConfig(inconclusive="pass")
    for unseen in (Unseen(one_sided=[line]), Unseen(blank=["tool_use"])):
        got = scoped(Decision(status="pass", exit_code=0), None, None, unseen, lenient)
        assert (got.status, got.exit_code) == ("inconclusive", 2), got
        assert got.reasons[0].startswith("gate.inconclusive: pass cannot let this run exit 0: the "), got.reasons
    replayed = scoped(Decision(status="pass", exit_code=0), None, None, Unseen(replayed=["a"]), lenient)
    assert (replayed.status, replayed.exit_code) == ("inconclusive", 0)  # not a dimension: let through, said so
