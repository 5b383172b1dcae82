"""`rubricgate mutate` on a small real repository: a score, survivors explained, the tree untouched."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rubricgate.cli.app import main
from rubricgate.errors import GateInputError
from rubricgate.mutate.execute import classify
from rubricgate.mutate.flow import parse_shard
from rubricgate.mutate.mutants import Mutant
from tests.conftest import git

M = Mutant("severity-down:x", "severity-down", "x", "x: warning -> suggestion", "r.md", "")


def test_classify_tells_killed_rejected_flagged_undecided_survived_and_error_apart():
    assert classify(M, 1, "", {"cases": [], "decision": {"status": "regression"}}).status == "killed"
    assert classify(M, 2, "error: t.yaml: expect.rules: unknown rule id 'x' (fix: ...)", None).status == "rejected"
    blind = "rule x changed severity warning -> suggestion; no case exercises it; add one with `rubricgate record`"
    assert classify(M, 2, "", {"decision": {"status": "inconclusive", "reasons": [blind]}}).status == "flagged"
    noisy = "verdict 30/33 vs baseline 31/33 on 11 shared case(s), drop +3.0 points: INCONCLUSIVE"
    assert classify(M, 2, "", {"decision": {"status": "inconclusive", "reasons": [noisy]}}).status == "undecided"
    assert classify(M, 0, "", {}).status == "survived"
    assert classify(M, 2, "error: bwrap failed", None).status == "error"


def test_a_bad_shard_is_an_input_error():
    with pytest.raises(GateInputError):
        parse_shard("3/2")
    assert parse_shard("2/4") == (2, 4)


def test_mutate_scores_explains_survivors_and_never_touches_the_tree(repo, tmp_path):
    assert CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo)]).exit_code == 0  # format 3
    before = git(repo, "status", "--porcelain")
    rubric_before = (repo / "reviewer/evaluator/references/rubric.md").read_text()
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["mutate", "--repo", str(repo), "--jobs", "2", "--out", str(out),
                                       "--only-rules", "fm-description-required,fm-name-required,body-present"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "mutation.json").read_text())
    status = {m["id"]: m["status"] for m in report["mutants"]}
    assert status["delete-rule:fm-description-required"] == "rejected"  # the block fixture names it
    assert status["severity-down:fm-description-required"] == "killed"
    killed = next(m for m in report["mutants"] if m["id"] == "severity-down:fm-description-required")
    assert killed["cases"] == ["fixture-data-loader"]
    assert status["severity-down:fm-name-required"] == "flagged"  # no case of this repo exercises it
    # A pass fixture names it in absent_rules only: no tier moves, and no case shows the rule
    # (gating/changes.py), so the change is flagged as unexercised.
    assert status["severity-up:body-present"] == "flagged"
    assert {s["id"] for s in report["skipped"]} == {"severity-up:fm-description-required", "severity-up:fm-name-required"}
    survivor = next(m for m in report["mutants"] if m["id"] == "severity-up:body-present")
    assert "no case's tier depends on the severity of body-present" in survivor["explanation"]
    assert (out / "skeletons/warn/body-present-example/SKILL.md").is_file()
    assert (out / "skeletons/block/fm-name-required-example/expect.yaml").is_file()
    assert "mutation score" in result.output and "severity-up:body-present" in result.output
    assert git(repo, "status", "--porcelain") == before
    assert (repo / "reviewer/evaluator/references/rubric.md").read_text() == rubric_before


def test_unknown_rule_is_refused_before_anything_runs(repo):
    result = CliRunner().invoke(main, ["mutate", "--repo", str(repo), "--only-rules", "no-such-rule"])
    assert result.exit_code == 2 and "unknown rule 'no-such-rule'" in result.output


def test_a_spent_budget_runs_nothing_and_exits_2(repo, tmp_path):
    result = CliRunner().invoke(main, ["mutate", "--repo", str(repo), "--max-cost", "0", "--out", str(tmp_path / "o"),
                                       "--only-rules", "body-present"])
    assert result.exit_code == 2 and "does not pass" in result.output
    assert not (tmp_path / "o").exists()


@pytest.mark.long
def test_a_run_where_every_mutant_is_caught_still_writes_its_report(repo, tmp_path):
    """No survivor means no skeleton folder: the report's folder is made all the same."""
    assert CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo)]).exit_code == 0
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["mutate", "--repo", str(repo), "--out", str(out),
                                       "--only-rules", "fm-description-required"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "mutation.json").read_text())
    assert report["score"] == 1.0 and not (out / "skeletons").exists()


def test_an_out_folder_inside_the_suite_is_refused_before_any_mutant_runs(repo, monkeypatch):
    ran = []
    monkeypatch.setattr("rubricgate.mutate.flow.run_one", lambda *a, **k: ran.append(a))
    result = CliRunner().invoke(main, ["mutate", "--repo", str(repo), "--only-rules", "fm-description-required",
                                       "--out", str(repo / "fixtures" / "mutants")])
    assert result.exit_code == 2 and not ran
    assert "error: --out:" in result.output and len(result.output.strip().splitlines()) == 1


def test_a_shard_left_with_no_mutant_names_the_shard(repo):
    result = CliRunner().invoke(main, ["mutate", "--repo", str(repo), "--only-rules", "fm-description-required",
                                       "--shard", "9/9"])
    assert result.exit_code == 2 and result.output.startswith("error: --shard: shard 9/9 has no mutant")


def test_an_inconclusive_run_that_is_no_noise_is_an_error_not_undecided():
    hidden = "verdict 3/6 vs baseline 3/6 on 7 shared case(s), drop +0.0 points: INCONCLUSIVE: 1 errored trial(s) could hide a drop"
    errored = {"decision": {"status": "inconclusive", "reasons": [hidden]},
               "cases": [{"id": "a", "trials": [{"errored": True, "grades": {}}]}]}
    assert classify(M, 2, "", errored).status == "error"  # an outage is no verdict on the mutant
    gate = "the gate settings in rubricgate.yaml differ from those baseline.json was measured with"
    assert classify(M, 2, "", {"decision": {"status": "inconclusive", "reasons": [gate]}}).status == "error"
    noisy = "verdict 30/33 vs baseline 31/33 on 11 shared case(s), drop +3.0 points: INCONCLUSIVE: could not judge at this size"
    assert classify(M, 2, "", {"decision": {"status": "inconclusive", "reasons": [noisy]}}).status == "undecided"


def test_exit_1_without_a_regression_decision_is_an_error_not_a_kill():
    traceback = "Traceback (most recent call last):\n  ...\nKeyError: 'x'"  # RUBRICGATE_DEBUG=1 lets it through
    assert classify(M, 1, traceback, None).status == "error"
    assert classify(M, 1, "", {"cases": [], "decision": {"status": "pass"}}).status == "error"
