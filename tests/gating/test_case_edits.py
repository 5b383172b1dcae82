"""A case edited since the baseline was measured (gating/case_edits.py): judged as a new case in
`run`, its counts replaced (not pooled) by `baseline update`, refused by `merge` from a shard of
the edited suite, and another design for `--continue`."""

from __future__ import annotations

import json
import shutil

import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.gating.case_edits import edited_cases, with_case_digests
from rubricgate.models.baseline import Baseline
from rubricgate.suite.load import load_all
from tests.conftest import ROOT, edit_expect, git, make_repo, reexpect_data_loader_as_warn, set_severity

MOVED = "fixture-weekly-revenue-summary"


def _statistical(repo) -> None:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"] = {"method": "statistical"}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))


def _update(repo, *args):
    return CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo), *args])


def _run(repo, *args):
    return CliRunner().invoke(main, ["run", "--repo", str(repo), *args])


def _summary(repo) -> dict:
    return json.loads(max((repo / "reports").glob("*/summary.json"), key=lambda p: p.stat().st_mtime).read_text())


def _baseline(repo) -> dict:
    return json.loads((repo / "baseline.json").read_text())


def _reexpect_as_block(repo) -> None:
    """The pass fixture moved to block/: the same id, now expecting BLOCK of a skill the builtin
    reviewer passes (every trial fails under the new expectation)."""
    (repo / "fixtures/block").mkdir(exist_ok=True)
    shutil.move(repo / "fixtures/pass/weekly-revenue-summary", repo / "fixtures/block/weekly-revenue-summary")


def _measured(tmp_path):
    repo = make_repo(tmp_path / "repo")
    _statistical(repo)
    done = _update(repo, "--sessions", "2", "--trials", "4")
    assert done.exit_code == 0, done.output
    return repo


def test_a_case_re_expected_since_the_baseline_is_judged_as_new_not_as_a_collapse(tmp_path):
    repo = _measured(tmp_path)
    assert set(_baseline(repo)["case_digests"]) == {MOVED, "fixture-data-loader"}
    _reexpect_as_block(repo)
    result = _run(repo)
    gate = _summary(repo)["gate"]
    assert gate["edited_cases"] == [MOVED] and MOVED in gate["new_cases"], gate
    assert not gate["case_regressions"] and not gate["suspected"], gate
    # Against its old counts: a collapse, exit 1. It fails now, so the run cannot judge (exit 2).
    assert result.exit_code == 2, result.output
    assert f"case(s) edited since baseline.json was measured fail now or were not judged ({MOVED} verdict 0/1)" in result.output
    assert f"re-measure them: rubricgate run --only {MOVED}, then rubricgate baseline update --from <that run> " \
           "--allow-partial" in result.output
    assert f"1 case(s) edited since baseline.json was measured (what they ask or review), judged as new " \
           f"cases, not against their old counts: {MOVED}" in result.output
    comment = (max((repo / "reports").glob("*/summary.json"), key=lambda p: p.stat().st_mtime).parent
               / "comment.md").read_text()
    assert "New or edited cases (not in baseline.json, or edited since it was measured" in comment


def test_without_the_edit_the_same_failures_are_a_collapse(tmp_path):
    """The control: the reviewer failing that case as it was measured is still caught."""
    repo = _measured(tmp_path)
    shutil.copy(ROOT / "fixtures/block/data-loader/SKILL.md", repo / "fixtures/pass/weekly-revenue-summary/SKILL.md")
    baseline = _baseline(repo)
    baseline["case_digests"].pop(MOVED)  # as if the reviewer, not the case, changed
    (repo / "baseline.json").write_text(json.dumps(baseline))
    result = _run(repo)
    assert result.exit_code == 1, result.output
    assert _summary(repo)["gate"]["edited_cases"] == []


def test_an_edited_reviewed_file_or_expectation_counts_and_wording_does_not(tmp_path):
    repo = make_repo(tmp_path / "repo")
    loaded = with_case_digests(load_all(repo), repo)
    base = Baseline.model_validate(_baseline(repo)).model_copy(update={"case_digests": dict(loaded.case_digests)})
    (repo / "fixtures/block/data-loader/expect.yaml").write_text(
        yaml.safe_dump({**yaml.safe_load((repo / "fixtures/block/data-loader/expect.yaml").read_text()),
                        "why": "reworded"}))
    assert edited_cases(base, with_case_digests(load_all(repo), repo).case_digests) == []
    skill = repo / "fixtures/block/data-loader/SKILL.md"
    skill.write_text(skill.read_text() + "\nOne more line.\n")
    now = with_case_digests(load_all(repo), repo).case_digests
    assert edited_cases(base, now) == ["fixture-data-loader"]
    assert edited_cases(base.model_copy(update={"case_digests": {}}), now) == []  # an older baseline: unknown


def test_a_grading_change_in_the_config_is_no_edit_of_every_case(tmp_path):
    """`rubric:` is merged into every case's spec: a raised max_steps set every case aside (under
    strict each one then had to pass every trial; under statistical nothing was compared)."""
    repo = _measured(tmp_path)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["rubric"]["trajectory"]["max_steps"] = 30
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    assert with_case_digests(load_all(repo), repo).edited == []


def test_the_baseline_the_gate_sees_leaves_the_edited_case_out_and_the_file_keeps_it(tmp_path):
    repo = _measured(tmp_path)
    _reexpect_as_block(repo)
    loaded = with_case_digests(load_all(repo), repo)
    assert loaded.edited == [MOVED] and loaded.baseline is not None
    assert MOVED not in loaded.baseline.cases and MOVED not in loaded.baseline.case_digests
    assert MOVED in _baseline(repo)["cases"]


def test_baseline_update_replaces_an_edited_cases_counts_and_a_lower_rate_needs_a_reason(tmp_path):
    repo = _measured(tmp_path)
    before = _baseline(repo)
    _reexpect_as_block(repo)
    refused = _update(repo, "--sessions", "1", "--trials", "2")
    assert refused.exit_code == 2, refused.output  # an edit beside a regression must not lower it unasked
    assert f"lowers {MOVED} verdict 4/4 -> 0/2 (edited since) and needs a reason" in refused.output
    run_dir = max((repo / "reports").glob("*-baseline"), key=lambda p: p.stat().st_mtime)
    done = _update(repo, "--from", str(run_dir), "--reason", "re-expected as BLOCK")
    assert done.exit_code == 0, done.output
    after = _baseline(repo)
    assert before["cases"][MOVED]["verdict"] == {"passes": 4, "trials": 4, "sessions": [[2, 2], [2, 2]]}
    assert after["cases"][MOVED]["verdict"] == {"passes": 0, "trials": 2}
    assert after["cases"]["fixture-data-loader"]["verdict"]["trials"] == 6  # the unedited case: pooled
    assert after["case_digests"][MOVED] != before["case_digests"][MOVED]
    assert f"re-measured after an edit (counts replaced): {MOVED}" in after["history"][-1]["reason"]


def test_sessions_measured_on_two_versions_of_a_case_are_refused(tmp_path):
    repo = make_repo(tmp_path / "repo")
    first = _run(repo)
    assert first.exit_code == 0, first.output
    one = _summary(repo)["run_id"]
    _reexpect_as_block(repo)
    _run(repo)
    two = _summary(repo)["run_id"]
    result = _update(repo, "--from", str(repo / "reports" / one), "--from", str(repo / "reports" / two))
    assert result.exit_code == 2 and f"case {MOVED} was edited between the runs given" in result.output


def test_merge_refuses_a_shard_run_before_a_case_was_edited(tmp_path):
    repo = make_repo(tmp_path / "repo")
    shards = []
    for index in ("1/2", "2/2"):
        result = CliRunner().invoke(main, ["run", "--repo", str(repo), "--shard", index])
        assert result.exit_code in (0, 2), result.output
        shards.append(str(max((repo / "reports").iterdir(), key=lambda p: p.stat().st_mtime)))
    skill = repo / "fixtures/pass/weekly-revenue-summary/SKILL.md"
    skill.write_text(skill.read_text() + "\nEdited after the shards ran.\n")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "edit")
    result = CliRunner().invoke(main, ["merge", "--repo", str(repo), *shards])
    assert result.exit_code == 2 and f"case {MOVED} differs from this repository's" in result.output, result.output


def test_a_reviewed_file_edited_is_another_design_for_continue(tmp_path):
    from rubricgate.gating.design import suite_digest

    repo = make_repo(tmp_path / "repo")
    ids = [c.id for c in load_all(repo).cases]
    before = suite_digest(with_case_digests(load_all(repo), repo), ids)
    skill = repo / "fixtures/pass/weekly-revenue-summary/SKILL.md"
    skill.write_text(skill.read_text() + "\nEdited.\n")
    assert suite_digest(with_case_digests(load_all(repo), repo), ids) != before


def test_a_trivial_edit_beside_a_regression_holds_the_run_as_deleting_the_case_does(tmp_path):
    """A file added beside a case's reviewed file set it aside, and `run` passed a regression that
    deleting the case (an input error) could not hide."""
    repo = make_repo(tmp_path / "repo", tasks=["block-missing-description"])
    _statistical(repo)
    assert _update(repo, "--sessions", "2", "--trials", "10").exit_code == 0
    set_severity(repo, "fm-description-required", "warning")
    assert _run(repo).exit_code == 1  # the control: the regression as it is
    (repo / "fixtures/block/data-loader/.keep").write_text("")
    result = _run(repo)
    assert result.exit_code == 2, result.output
    assert "edited since baseline.json was measured fail now or were not judged (block-missing-description verdict" in result.output


def test_a_reordered_rule_list_is_no_edit(tmp_path):
    repo = make_repo(tmp_path / "repo")
    edit_expect(repo, "block/data-loader", absent_rules=["steps-actionable", "examples-present"])
    before = with_case_digests(load_all(repo), repo).case_digests
    edit_expect(repo, "block/data-loader", absent_rules=["examples-present", "steps-actionable", "examples-present"])
    assert with_case_digests(load_all(repo), repo).case_digests == before


def test_a_task_reviewing_a_file_at_the_top_is_not_edited_by_its_runs(tmp_path):
    """Its folder is the whole tree: .git and reports/ changed with every run, and the case was
    "edited" on every run (a two-session baseline refused as measured on two versions of it)."""
    repo = make_repo(tmp_path / "repo")
    (repo / "NOTES.md").write_text("---\nname: notes\ndescription: Notes. Use when taking notes.\n---\nBody.\n")
    (repo / "evals/tasks/top.yaml").write_text(yaml.safe_dump({"id": "top", "review": ["NOTES.md"],
                                                                "expect": {"tier": "PASS"}}))
    (repo / "baseline.json").unlink()
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "top")
    _statistical(repo)
    done = _update(repo, "--sessions", "2", "--trials", "2")
    assert done.exit_code == 0, done.output
    (repo / "UNRELATED.md").write_text("x\n")
    assert with_case_digests(load_all(repo), repo).edited == []
    (repo / "NOTES.md").write_text((repo / "NOTES.md").read_text() + "More.\n")
    assert with_case_digests(load_all(repo), repo).edited == ["top"]


def test_a_regraded_run_of_an_edited_case_cannot_update_its_counts(tmp_path):
    """A regrade grades an edited case's old answers by its new expectations: pooled with the
    baseline's counts, two versions of the case mixed under one id, and its digest was dropped."""
    repo = _measured(tmp_path)
    assert _run(repo).exit_code in (0, 2)
    run_dir = max((repo / "reports").iterdir(), key=lambda p: p.stat().st_mtime)
    _reexpect_as_block(repo)
    regraded = CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)])
    assert regraded.exit_code in (0, 1, 2), regraded.output
    new_dir = max((repo / "reports").iterdir(), key=lambda p: p.stat().st_mtime)
    result = _update(repo, "--from", str(new_dir), "--reason", "x")
    assert result.exit_code == 2 and f"the run does not record what case {MOVED} asked" in result.output, \
        result.output


def test_an_added_rule_named_only_in_absent_rules_is_not_exercised(tmp_path):
    """A case passing because the reviewer never cites a rule shows nothing of a rule just added."""
    repo = make_repo(tmp_path / "repo")
    assert _update(repo).exit_code == 0  # format 3: the rule table the gate compares with
    rubric = repo / "reviewer/evaluator/references/rubric.md"
    row = "| runbook-owner | critical | mechanical | A runbook names its owner. |"
    rubric.write_text(rubric.read_text().replace("| examples-present |", f"{row}\n| examples-present |"))
    (repo / "evals/tasks/owner-absent.yaml").write_text(yaml.safe_dump({
        "id": "owner-absent", "review": ["fixtures/pass/weekly-revenue-summary/SKILL.md"],
        "expect": {"tier": "PASS", "absent_rules": ["runbook-owner"]}}))
    result = _run(repo)
    assert result.exit_code == 2 and "rule runbook-owner changed added (critical); no case exercises it" in \
        result.output, result.output


def test_cases_re_expected_beside_a_reviewer_change_hold_the_run(tmp_path):
    """The regression, and the cases that show it moved to the tier the regressed reviewer now
    gives: judged as new cases, they passed (exit 0), where deleting them is an input error."""
    repo = make_repo(tmp_path / "repo", tasks=["block-missing-description"])
    assert _update(repo).exit_code == 0
    set_severity(repo, "fm-description-required", "warning")
    reexpect_data_loader_as_warn(repo)
    result = _run(repo)
    assert result.exit_code == 2, result.output
    assert "the reviewer changed since baseline.json was measured (fm-description-required" in result.output
    assert "2 case(s) it holds were edited since (block-missing-description, fixture-data-loader)" in result.output


def test_the_trials_a_case_runs_are_no_edit(tmp_path):
    """`trials: 2` in the config set every case aside, and the run said the baseline was format 1."""
    repo = _measured(tmp_path)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["trials"] = 2
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    assert with_case_digests(load_all(repo), repo).edited == []


def test_every_case_edited_says_so_not_format_1(tmp_path):
    repo = _measured(tmp_path)
    for skill in repo.glob("fixtures/*/*/SKILL.md"):
        skill.write_text(skill.read_text() + "\nEdited.\n")
    result = _run(repo)
    assert result.exit_code == 2 and "every case baseline.json holds was edited since it was measured" in \
        result.output and "format 1" not in result.output, result.output


def test_a_fixture_folder_that_is_a_symbolic_link_is_an_input_error(tmp_path):
    """Its files are not in the tree a workspace copies: the run ended with an internal error."""
    repo = make_repo(tmp_path / "repo")
    (repo / "fixtures/pass/linked").symlink_to("../block/data-loader")
    result = _run(repo)
    assert result.exit_code == 2 and "fixtures/pass/linked: the fixture folder is a symbolic link" in result.output
    assert "internal error" not in result.output
