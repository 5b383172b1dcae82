"""regrade: stored transcripts graded again under today's expectations, never an old grade kept."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parents[1]))
from conftest import DATA_LOADER_TASK, data_loader_run, make_repo, write_task  # noqa: E402

from rubricgate.cli import main  # noqa: E402
from rubricgate.pipeline import RunOptions, run_suite  # noqa: E402

TASK = DATA_LOADER_TASK


def _run(tmp_path: Path) -> tuple[Path, Path]:
    return data_loader_run(tmp_path)


def test_a_graded_trial_whose_transcript_was_not_written_is_not_passed_on_its_old_grade(tmp_path):
    # A transcript that could not be written (a full disk) leaves the trial's grades and no
    # transcript: under an expectation that now fails it, the regrade said PASS from the old grade.
    repo, run_dir = _run(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    trial = next(t for c in summary["cases"] if c["id"] == TASK["id"] for t in c["trials"])
    trial["transcript"] = ""
    (run_dir / "summary.json").write_text(json.dumps(summary))
    write_task(repo, TASK | {"expect": {"tier": "PASS"}})
    got = CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    assert got.output.strip().splitlines() == [
        f"error: {run_dir / 'summary.json'}: trial {TASK['id']}#1: has grades but no transcript to grade again "
        "(fix: regrade a run whose graded trials kept their transcripts, or run the suite again)"]


def test_a_regrade_keeps_how_the_run_was_isolated_its_versions_and_its_branch(tmp_path):
    # The transcripts' facts: a copy-only run regraded read as sandboxed, its warning gone; the
    # CLI version left unknown warned of a changed setup; the branch left, the trend lost it.
    repo = make_repo(tmp_path / "repo", commit=False)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"]["sandbox"] = "none"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    run_dir = run_suite(RunOptions(repo=repo)).run_dir
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["config"]["branch"] = "feature-x"
    (run_dir / "summary.json").write_text(json.dumps(summary))
    baseline = json.loads((repo / "baseline.json").read_text())
    baseline["measured_with"] = {"agent": "builtin", "agent_version": summary["agent_version"],
                                 "model": summary["model"]}
    (repo / "baseline.json").write_text(json.dumps(baseline))
    got = CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)])
    assert got.exit_code == 0, got.output
    again = json.loads((Path(got.output.split(" -> ")[1].split(" · ")[0]) / "summary.json").read_text())
    assert (again["isolation"], again["isolation_reason"]) == ("copy-only", summary["isolation_reason"])
    assert any(w.startswith("copy-only isolation") for w in again["decision"]["warnings"])
    assert not any("different setup" in w for w in again["decision"]["warnings"]), again["decision"]["warnings"]
    assert again["config"]["branch"] == "feature-x" and again["agent_version"] == summary["agent_version"]


def test_a_transcript_that_is_a_link_is_not_copied_into_the_regrade(tmp_path):
    # A trial kept as it was (never run) is copied, not read: a link in a planted run folder was
    # followed and the file it named landed in the new run's reports (a CI artifact).
    repo, run_dir = _run(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    trial = summary["cases"][0]["trials"][0]
    trial["grades"] = {d: {"passed": False, "category": "not_run", "reason": "budget"} for d in trial["grades"]}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    host = tmp_path / "host-only.json"
    host.write_text('{"auth": "HOST-ONLY-VALUE"}')
    (run_dir / trial["transcript"]).unlink()
    (run_dir / trial["transcript"]).symlink_to(host)
    got = CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)])
    assert got.exit_code == 2 and got.output.count("\n") == 1 and trial["transcript"] in got.output, got.output
    assert sorted(p.name for p in (repo / "reports").iterdir()) == [run_dir.name]  # no half-written run either


def _inconclusive_run(tmp_path: Path, monkeypatch, *flags: str) -> tuple[Path, Path]:
    """A statistical run that ended INCONCLUSIVE (the suite is too small to PASS), run from the repository."""
    repo = make_repo(tmp_path / "repo")
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"]["method"] = "statistical"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.chdir(repo)
    first = CliRunner().invoke(main, ["run", "--repo", str(repo), *flags])
    assert first.exit_code == 2, first.output
    return repo, next(p for p in (repo / "reports").iterdir() if (p / "summary.json").is_file())


def _regraded_next(repo: Path, run_dir: Path) -> str:
    got = CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    return json.loads((Path(got.output.split(" -> ")[1].split(" · ")[0]) / "summary.json").read_text())["gate"]["next"]


def test_a_regrade_after_the_baseline_was_updated_names_no_continuation_the_run_refuses(tmp_path, monkeypatch):
    """It said "continue the run these trials came from: rubricgate run --continue reports/RUN",
    which the run refused as another design: the baseline it was planned against was replaced."""
    repo, run_dir = _inconclusive_run(tmp_path, monkeypatch)
    updated = CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo), "--reason", "new model"])
    assert updated.exit_code == 0, updated.output
    step = _regraded_next(repo, run_dir)
    assert step.startswith("run afresh: rubricgate run (the run these trials came from cannot be continued now: "
                           "another design"), step
    assert "--continue" not in step
    refused = CliRunner().invoke(main, ["run", "--repo", str(repo), "--continue", f"reports/{run_dir.name}"])
    assert refused.exit_code == 2 and "another design" in refused.output, refused.output


def test_a_regrade_of_a_run_of_some_cases_names_the_command_that_continues_it_and_that_works(tmp_path, monkeypatch):
    """Its command lacked the run's --only: pasted, it ran every case, another design, refused."""
    import shlex

    repo, run_dir = _inconclusive_run(tmp_path, monkeypatch, "--only", "fixture-data-loader")
    step = _regraded_next(repo, run_dir)
    command = f"rubricgate run --only fixture-data-loader --continue reports/{run_dir.name}"
    assert step.startswith(f"continue the run these trials came from: {command}"), step
    before = set((repo / "reports").iterdir())
    again = CliRunner().invoke(main, shlex.split(command)[1:])
    # two runs in a second sort by chance: the new folder is the one that was not there
    newest = next(p for p in (repo / "reports").iterdir() if p not in before and (p / "summary.json").is_file())
    assert json.loads((newest / "summary.json").read_text())["gate"]["continues"] == [run_dir.name], again.output


def test_a_regrade_of_a_run_of_some_cases_reads_only_its_own_cases_for_lfs_pointers(tmp_path):
    """Every case of the suite was read for pointers: a case the run left out (`--only`), or one
    added since whose id holds the run's, holding a pointer made the regrade exit 2."""
    from tests.suite.test_reviewed_lfs import POINTER

    repo = make_repo(tmp_path / "repo", commit=False)
    write_task(repo, TASK)
    run_dir = run_suite(RunOptions(repo=repo, only=[TASK["id"]])).run_dir
    (repo / "fixtures/pass/weekly-revenue-summary/SKILL.md").write_bytes(POINTER)
    (repo / "skills/big").mkdir(parents=True)
    (repo / "skills/big/SKILL.md").write_bytes(POINTER)
    write_task(repo, TASK | {"id": f"{TASK['id']}-v2", "review": ["skills/big/SKILL.md"]})
    got = CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)])
    assert got.exit_code == 0 and "LFS" not in got.output, got.output
    (repo / "fixtures/block/data-loader/SKILL.md").write_bytes(POINTER)  # its own case's: still refused
    got = CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)])
    assert got.exit_code == 2 and "'fixtures/block/data-loader/SKILL.md' is a git LFS pointer" in got.output, got.output


def test_a_regrade_of_a_record_or_baseline_run_keeps_its_kind_and_stays_out_of_the_trend(tmp_path):
    """Regraded, a record run (one case, often the one the reviewer got wrong) or a baseline run
    was kind run: a point of the suite's trend, a one-case rate read as the suite's."""
    repo, run_dir = _run(tmp_path)
    for kind in ("record", "baseline"):
        summary = json.loads((run_dir / "summary.json").read_text())
        (run_dir / "summary.json").write_text(json.dumps(summary | {"kind": kind}))
        got = CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)])
        assert got.exit_code == 0, got.output
        again = Path(got.output.split(" -> ")[1].split(" · ")[0])
        assert json.loads((again / "summary.json").read_text())["kind"] == kind
        trend = CliRunner().invoke(main, ["trend", str(again)])  # no point of the suite's series
        assert trend.exit_code == 2 and f"left out: 1 {kind})" in trend.output, trend.output


def test_a_regrade_of_the_run_the_baseline_was_measured_from_cannot_judge(tmp_path):
    """`baseline update --from RUN`, then `regrade RUN`: the run's trials were judged against
    themselves ("110/117 vs baseline 110/117, drop +0.0"), where `compare` refuses such a pair."""
    repo, run_dir = _run(tmp_path)
    updated = CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo), "--from", str(run_dir),
                                        "--reason", "measured"])
    assert updated.exit_code == 0, updated.output
    got = CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    assert f"the baseline was measured from run {run_dir.name}, whose trials this regrade grades again" in got.output
    other_repo, other_run = _run(tmp_path / "other")  # a baseline measured apart: judged as before
    assert CliRunner().invoke(main, ["regrade", str(other_run), "--repo", str(other_repo)]).exit_code == 0
