"""The mutation score and --min-score (mutate/score.py, cli/mutate_cmd.py): undecided mutants
first, which the score leaves out."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.models.mutation import MutantResult, MutationReport
from rubricgate.mutate.score import below_min_score, score_range


def report(*statuses: str) -> MutationReport:
    mutants = [MutantResult(id=f"m{i}", kind="delete-rule", rule="r", description="d", status=s)
               for i, s in enumerate(statuses)]
    ran = [s for s in statuses if s in ("killed", "rejected", "flagged", "survived")]
    caught = sum(s in ("killed", "rejected") for s in ran)
    return MutationReport(agent="builtin", jobs=1, mutants=mutants, killed=caught, undecided=statuses.count("undecided"),
                          score=caught / len(ran) if ran else None, mechanical_score=None)


def mutate_exit(monkeypatch, got: MutationReport, tmp_path: Path, *args: str):
    monkeypatch.setattr("rubricgate.mutate.flow.mutate", lambda request: (got, tmp_path))
    return CliRunner().invoke(main, ["mutate", "--repo", str(tmp_path), *args])


def test_one_caught_and_nine_undecided_do_not_pass_a_min_score(monkeypatch, tmp_path) -> None:
    """It scored 100% (undecided mutants are in no score) and exited 0 under --min-score 0.9."""
    got = report("killed", *["undecided"] * 9)
    assert got.score == 1.0
    result = mutate_exit(monkeypatch, got, tmp_path, "--min-score", "0.9")
    assert result.exit_code == 2, result.output
    assert "9 undecided mutant(s) leave the score between 10% and 100%, around the 90% asked" in result.output


def test_a_score_below_the_minimum_whatever_the_undecided_are_is_exit_1(monkeypatch, tmp_path) -> None:
    got = report("killed", "survived", "survived", "survived", "undecided")
    assert mutate_exit(monkeypatch, got, tmp_path, "--min-score", "0.9").exit_code == 1


@pytest.mark.parametrize(("statuses", "low", "high"), [
    (("killed", "undecided"), 0.5, 1.0),
    (("killed", "survived", "error", "not_run"), 0.5, 0.5),  # what did not run bounds nothing
    (("rejected", "flagged"), 0.5, 0.5),
])
def test_the_range_counts_undecided_mutants_both_ways(statuses, low, high) -> None:
    assert score_range(list(statuses)) == (low, high)


def test_a_score_the_undecided_cannot_move_below_the_minimum_passes(monkeypatch, tmp_path) -> None:
    got = report(*["killed"] * 19, "undecided")
    assert below_min_score([m.status for m in got.mutants], got.score, 0.9) is None
    assert mutate_exit(monkeypatch, got, tmp_path, "--min-score", "0.9").exit_code == 0
    assert score_range([]) is None and below_min_score([], None, 0.5) == "below"


def test_the_score_as_reported_passes_a_min_score_of_that_very_figure(monkeypatch, tmp_path) -> None:
    """2 of 3 caught is reported 0.6667; --min-score 0.6667 exited 1 against the unrounded 2/3."""
    got = report("killed", "killed", "survived")
    assert got.score == pytest.approx(2 / 3) and score_range(["killed", "killed", "survived"]) == (0.6667, 0.6667)
    got = got.model_copy(update={"score": round(2 / 3, 4)})
    assert mutate_exit(monkeypatch, got, tmp_path, "--min-score", "0.6667").exit_code == 0


def test_a_survivor_whose_rule_cases_expect_is_not_told_to_add_such_a_case() -> None:
    """A statement line deleted from a verdict.rules reviewer's prompt survived although a case
    expects its rule (the reviewer finds it unprompted): the explanation said 'no case expects a
    finding of sql-injection: add one', which that case already is."""
    from rubricgate.mutate.execute import Outcome
    from rubricgate.mutate.mutants import Mutant
    from rubricgate.mutate.score import explain
    from rubricgate.suite.rubric import RubricSpec

    mutant = Mutant(id="delete-rule:sql-injection", kind="delete-rule", rule="sql-injection",
                    description="delete the statement of sql-injection", file="reviewer/rules.j2", text="")
    survived, rubric = Outcome(mutant=mutant, status="survived"), RubricSpec(path="reviewer/rules.j2", rules={})
    assert explain(survived, rubric, "command").startswith("no case expects a finding of sql-injection")
    said = explain(survived, rubric, "command", expecting=["fixture-orders-lookup"])
    assert "no case expects" not in said and "fixture-orders-lookup" in said
