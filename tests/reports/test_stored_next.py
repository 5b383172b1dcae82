"""A stored run's next step shown again: `report` and `publish` check a `run --continue` it names, the viewer dates it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402
from conftest import make_repo  # noqa: E402
from fake_github import FakeGitHub  # noqa: E402

from rubricgate.cli import main  # noqa: E402
from rubricgate.models.results import Decision, GateDetail  # noqa: E402
from rubricgate.reports.stored_next import THEN, checked, continued_run, dated  # noqa: E402

STEP = "continue this run: rubricgate run --continue reports/20260101T000000Z-abc123"


def _undecided(step: str = STEP, **config) -> rf.Summary:
    decision = Decision(status="inconclusive", exit_code=2, reasons=["verdict: INCONCLUSIVE"],
                        warnings=["w", f"next: {step}"])
    return rf.summary(decision=decision, gate=GateDetail(next=step), config=config)


def test_a_next_step_naming_no_continuation_is_shown_as_stored(tmp_path):
    held = _undecided("the rates passed; the change(s) named above hold the run")
    assert continued_run(held) is None and dated(held) == held and checked(held, tmp_path) == held


def test_the_run_a_next_step_continues_is_this_one_or_the_one_a_regrade_judged_again():
    assert continued_run(_undecided()) == "20260101T000000Z-abc123"
    regraded = _undecided("continue the run these trials came from: rubricgate run --continue reports/r0",
                          regraded_from="r0")
    assert continued_run(regraded) == "r0"


def test_a_continuation_is_dated_in_gate_next_and_in_the_warning_that_says_it():
    got = dated(_undecided())
    assert got.gate is not None and got.gate.next.startswith(f"{STEP} ({THEN}, 2026-01-01 00:01;"), got.gate.next
    assert got.decision.warnings == ["w", f"next: {got.gate.next}"]


def test_a_continuation_that_cannot_be_checked_here_is_dated(tmp_path):
    """No suite where `report` runs (an artifact downloaded into an empty folder)."""
    got = checked(_undecided(), tmp_path)
    assert got.gate is not None and f"({THEN}, " in got.gate.next


def _inconclusive_run(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """A statistical run that ended INCONCLUSIVE, its next step `run --continue` of it."""
    repo = make_repo(tmp_path / "repo")
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"]["method"] = "statistical"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.chdir(repo)
    first = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert first.exit_code == 2, first.output
    run_dir = next(p for p in (repo / "reports").iterdir() if (p / "summary.json").is_file())
    stored = json.loads((run_dir / "summary.json").read_text())["gate"]["next"]
    assert stored.startswith(f"continue this run: rubricgate run --continue reports/{run_dir.name}"), stored
    return repo, run_dir


def test_report_after_a_baseline_update_says_run_afresh_where_the_run_said_continue(tmp_path, monkeypatch):
    """`report` re-rendered "continue this run: rubricgate run --continue reports/RUN", which the
    run then refused as another design: the baseline it was planned against was replaced."""
    repo, run_dir = _inconclusive_run(tmp_path, monkeypatch)
    kept = CliRunner().invoke(main, ["report", str(run_dir), "--repo", str(repo)])
    assert kept.exit_code == 0, kept.output
    assert f"rubricgate run --continue reports/{run_dir.name}" in (run_dir / "comment.md").read_text()
    stored = (run_dir / "summary.json").read_text()
    assert CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo), "--reason", "new model"]).exit_code == 0
    again = CliRunner().invoke(main, ["report", str(run_dir), "--repo", str(repo)])
    assert again.exit_code == 0, again.output
    for page in ("comment.md", "report.html"):
        text = (run_dir / page).read_text()
        assert f"run afresh: rubricgate run (run {run_dir.name} cannot be continued now: another design" in text, page
        assert "--continue" not in text, page
    assert (run_dir / "summary.json").read_text() == stored  # the record keeps what the run said
    refused = CliRunner().invoke(main, ["run", "--repo", str(repo), "--continue", f"reports/{run_dir.name}"])
    assert refused.exit_code == 2 and "another design" in refused.output, refused.output


def test_publish_after_a_baseline_update_says_run_afresh(tmp_path, monkeypatch):
    repo, run_dir = _inconclusive_run(tmp_path, monkeypatch)
    assert CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo), "--reason", "new model"]).exit_code == 0
    with FakeGitHub() as gh:
        got = CliRunner().invoke(main, ["publish", str(run_dir), "--pr", "3", "--repo", str(repo)], env=gh.env())
        assert got.exit_code == 0, got.output
        (comment,) = gh.issue_comments(3)
    assert "run afresh: rubricgate run (run " in comment["body"] and "--continue" not in comment["body"]


def _report_page(repo: Path, run_dir: Path) -> str:
    shown = CliRunner().invoke(main, ["report", str(run_dir), "--repo", str(repo)])
    assert shown.exit_code == 0, shown.output
    return (run_dir / "comment.md").read_text()


def test_report_of_a_run_continued_already_names_the_continuation_of_the_run_that_took_it_up(tmp_path, monkeypatch):
    """"run afresh" sent the user back to the start of the design when the run that took it up
    could itself be continued: its trials and its looks would be thrown away."""
    repo, run_dir = _inconclusive_run(tmp_path, monkeypatch)
    went_on = CliRunner().invoke(main, ["run", "--repo", str(repo), "--continue", f"reports/{run_dir.name}"])
    assert went_on.exit_code == 2 and "INCONCLUSIVE" in went_on.output, went_on.output
    later = next(p for p in (repo / "reports").iterdir() if (p / "summary.json").is_file() and p != run_dir)
    text = _report_page(repo, run_dir)
    assert (f"continue the run that took it up: rubricgate run --continue reports/{later.name}" in text
            and f"(run {run_dir.name} was continued already by {later.name})" in text), text
    assert "run afresh" not in text and f"--continue reports/{run_dir.name}" not in text, text
    taken = CliRunner().invoke(main, ["run", "--repo", str(repo), "--continue", f"reports/{later.name}"])
    assert "cannot be continued" not in taken.output and "continued already" not in taken.output, taken.output


def _passed_later(repo: Path, run_dir: Path, name: str) -> Path:
    """A run folder `name` that ended PASS, marked as the run that continued `run_dir`."""
    from rubricgate.gating.continuation_marks import mark_path

    later = repo / "reports" / name
    later.mkdir()
    decided = Decision(status="pass", exit_code=0, reasons=["verdict: PASS"], warnings=[])
    (later / "summary.json").write_text(rf.summary(decision=decided).model_dump_json())
    mark_path(repo / "reports", run_dir.name).write_text(later.name)
    return later


def test_report_of_a_run_whose_continuation_decided_names_that_decision(tmp_path, monkeypatch):
    repo, run_dir = _inconclusive_run(tmp_path, monkeypatch)
    later = _passed_later(repo, run_dir, "20990101T000000Z-later1")
    text = _report_page(repo, run_dir)
    assert (f"read the run that took it up: rubricgate report reports/{later.name} (run {run_dir.name} was "
            f"continued already by {later.name}, which ended PASS)") in text, text


def test_a_mark_naming_no_run_of_the_reports_folder_keeps_run_afresh(tmp_path, monkeypatch):
    repo, run_dir = _inconclusive_run(tmp_path, monkeypatch)
    from rubricgate.gating.continuation_marks import mark_path
    mark_path(repo / "reports", run_dir.name).write_text("../../elsewhere")
    text = _report_page(repo, run_dir)
    assert f"run afresh: rubricgate run (run {run_dir.name} cannot be continued now: it was continued already" \
        in text, text


def test_the_run_that_took_it_up_is_named_by_a_path_quoted_for_a_shell(tmp_path, monkeypatch):
    """The folder a mark names is pasted as a command: a name with a space, a quote or `$(...)`
    (a folder copied or planted here beside its mark) split in two or ran what it held."""
    import shlex

    repo, run_dir = _inconclusive_run(tmp_path, monkeypatch)
    later = _passed_later(repo, run_dir, "$(touch pwned) it's")
    text = _report_page(repo, run_dir)
    quoted = shlex.quote(f"reports/{later.name}")
    assert f"read the run that took it up: rubricgate report {quoted} (run " in text, text
