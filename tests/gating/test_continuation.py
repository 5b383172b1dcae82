"""rubricgate.gating.continuation: an INCONCLUSIVE run is continued, never restarted."""

from __future__ import annotations

import json
import os
import shutil

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.agents.builtin import BuiltinAgent
from rubricgate.cli import main
from rubricgate.gating.adaptive import AdaptiveRun
from rubricgate.models.baseline import Baseline, CaseCount
from rubricgate.models.config import GateConfig
from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.models.results import Grade, TrialResult
from tests.conftest import git
from tests.suite.test_trees import crlf_checkout

GATE = GateConfig(method="statistical")


def _baseline(n: int, cases: int = 4) -> Baseline:
    runs = [(n // 2, n // 2), (n - n // 2, n - n // 2)]
    return Baseline(rates={d: 1.0 for d in DIMENSIONS},
                    cases={f"c{i}": {d: CaseCount(passes=n, trials=n, sessions=runs) for d in DIMENSIONS}
                           for i in range(cases)})


def _drive(run: AdaptiveRun) -> list[TrialResult]:
    """Every trial passes; the TrialResults as the runner would record them."""
    out = []
    while True:
        for case, n, confirm in run.next_batch():
            run.record(case, {d: True for d in DIMENSIONS}, confirm)
            out.append(TrialResult(case_id=case, trial=n, outcome="PASS", confirmation=confirm,
                                   grades={d: Grade(passed=True) for d in DIMENSIONS}))
        look = run.look()
        if look.stop:
            return out


def test_a_run_taken_up_again_continues_its_counts_trial_numbers_and_looks() -> None:
    ids = [f"c{i}" for i in range(4)]
    first = AdaptiveRun(_baseline(2), GATE, ids)
    trials = _drive(first)
    assert first.looks[-1].decision.status == "inconclusive" and len(trials) == 40  # 4 cases x the budget
    again = AdaptiveRun(_baseline(2), GATE, ids)
    again.resume(trials, first.history(), 0)
    assert again.design.frozen() == first.design.frozen() and again.done_rounds == 10
    assert again.extend() and again.continuations() == 1
    batch = again.next_batch()
    assert sorted({n for _, n, _ in batch}) == [11]  # the next round, numbered on from the old ones
    assert len(again.history()) == len(first.history())


def test_continuations_run_out_after_the_planned_five() -> None:
    run = AdaptiveRun(_baseline(2), GATE, ["c0", "c1"])
    assert all(run.extend() for _ in range(5)) and not run.extend()


def test_with_the_first_look_after_two_rounds_each_continuation_is_still_a_whole_budget_of_rounds() -> None:
    """2 trials a case first, 3 at most: the budget's looks are after rounds 2 and 3, but a
    continuation is a budget of rounds (3 more looks), five of them as the spending plans; counted
    in the budget's looks (2), a run got seven continuations and a partial eighth, and the spent
    design could be taken again."""
    gate = GateConfig(method="statistical", max_trials_per_case=3)
    run = AdaptiveRun(_baseline(4), gate, ["c0", "c1"], first=2)
    schedule = run.schedule
    assert schedule.looks[:schedule.budget_looks] == [2, 3] and schedule.planned_continuations() == 5
    assert [run.extend() for _ in range(6)] == [True] * 5 + [False]
    assert run.continuations() == 5 and run.limit == len(schedule.looks) == 2 + 5 * 3
    assert [schedule.looks[schedule.looks_after(c) - 1] for c in range(6)] == [3, 6, 9, 12, 15, 18]


@pytest.mark.parametrize("taken", [5, 7, 8])
def test_a_run_whose_continuations_are_spent_is_never_taken_up_again(taken: int) -> None:
    """However many continuations the run records (7 and 8: what the old count gave), its design
    has no look left to give, so `--continue` refuses it."""
    gate = GateConfig(method="statistical", max_trials_per_case=3)
    run = AdaptiveRun(_baseline(4), gate, ["c0", "c1"], first=2)
    run.resume([], [], taken)
    assert run.limit == len(run.schedule.looks) and not run.extend()


def _statistical(repo) -> None:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"]["method"] = "statistical"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))


def _run(repo, *args):
    return CliRunner().invoke(main, ["run", "--repo", str(repo), *args])


def _newest(repo, besides=()):
    # Two runs started in one second sort by their random suffix: the later one is the folder
    # that is not `besides`, never the name that sorts last.
    return sorted(p for p in (repo / "reports").iterdir() if p.is_dir() and p not in besides)[-1]


def test_the_inconclusive_run_names_the_one_command_that_continues_it_and_that_command_works(repo, monkeypatch) -> None:
    _statistical(repo)
    monkeypatch.chdir(repo)
    first = _run(repo)
    assert first.exit_code == 2, first.output
    old = _newest(repo)
    command = f"rubricgate run --continue reports/{old.name}"
    assert command in first.output
    summary = json.loads((old / "summary.json").read_text())
    assert summary["gate"]["next"].startswith(f"continue this run: {command}")
    # the suite is too small for an unchanged reviewer to PASS within the budget: it says what to add
    assert "; to decide within the budget: about " in summary["gate"]["next"]
    result = _run(repo, "--continue", str(old))
    new = _newest(repo, besides=[old])
    data = json.loads((new / "summary.json").read_text())
    assert data["gate"]["continues"] == [old.name] and data["gate"]["continuations"] == 1
    trials = [t for c in data["cases"] for t in c["trials"]]
    assert len(trials) == 2 * len([t for c in summary["cases"] for t in c["trials"]])  # the old ones too
    assert all((new / t["transcript"]).is_file() for t in trials if t["transcript"])
    assert f"continues {old}" in result.output
    # it ran its whole budget: not a partial run (the comment said "stopped before every trial ran")
    assert data["complete"] is True
    assert f"continues {old}: its {len(trials) // 2} trial(s) count here, this run adds up to" in result.output
    assert "Partial run" not in (new / "comment.md").read_text()


def test_a_continuations_terminal_says_the_trials_it_ran_and_those_its_decision_counts(repo, monkeypatch) -> None:
    """Its header said "N trials" of every trial counted, "run finished" the trials run here, and
    an interrupted one "11/24 trials" beside "interrupted after 60 of 65 trials": one number each."""
    import re

    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    result = _run(repo, "--continue", str(old))
    data = json.loads((_newest(repo, besides=[old]) / "summary.json").read_text())
    every = sum(len(c["trials"]) for c in data["cases"])
    taken = sum(len(c["trials"]) for c in json.loads((old / "summary.json").read_text())["cases"])
    here = every - taken
    assert f"{every} trials ({here} run here, {taken} taken up from the run(s) it continues)" in result.output
    assert re.search(rf"run finished: \d+/\d+ cases, {here}/{here} trials run here \({every} counted with the {taken} "
                     r"it continues\)", result.output), result.output
    with monkeypatch.context() as patch:
        patch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: _InterruptedAgent(cfg))
        stopped = _run(repo, "--continue", str(_newest(repo, besides=[old])))
    assert re.search(rf"run interrupted after 0 trials of its own \({every} of \d+ with the {every} it continues\)",
                     stopped.output), stopped.output


def test_the_command_that_continues_a_run_carries_the_flags_of_its_design(repo, tmp_path, monkeypatch) -> None:
    import shlex

    _statistical(repo)
    (repo / "other.yaml").write_text((repo / "rubricgate.yaml").read_text())
    monkeypatch.chdir(tmp_path)  # elsewhere: the command names the repository and the run folder in full
    first = CliRunner().invoke(main, ["run", "--repo", str(repo), "--config", str(repo / "other.yaml")])
    assert first.exit_code == 2, first.output
    old = _newest(repo)
    line = next(x for x in first.output.splitlines() if x.startswith("warning: next: continue this run: "))
    command = line.removeprefix("warning: next: continue this run: ").split(";")[0]
    assert command == (f"rubricgate run --repo {repo} --config {repo / 'other.yaml'} "
                       f"--continue {repo / 'reports' / old.name}")
    again = CliRunner().invoke(main, shlex.split(command)[1:])
    data = json.loads((_newest(repo, besides=[old]) / "summary.json").read_text())
    assert data["gate"]["continues"] == [old.name], again.output


@pytest.mark.parametrize("where", ["a repository folder with a space", "a reports folder with a space"])
def test_the_command_that_continues_a_run_works_pasted_when_a_path_has_a_space(tmp_path, monkeypatch, where) -> None:
    """The run folder's path followed --continue unquoted: pasted, a space split it in two and
    `rubricgate run` refused the extra arguments."""
    import shlex

    from tests.conftest import make_repo

    repo = make_repo(tmp_path / ("my checkout" if where.startswith("a repository") else "checkout") / "repo")
    _statistical(repo)
    if where.startswith("a reports"):
        config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
        config["reports"] = "run reports"
        (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
        monkeypatch.chdir(repo)
    else:
        monkeypatch.chdir(tmp_path)
    first = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    line = next(x for x in first.output.splitlines() if x.startswith("warning: next: continue this run: "))
    command = shlex.split(line.removeprefix("warning: next: continue this run: ").split(";")[0])
    again = CliRunner().invoke(main, command[1:])
    assert "continues" in again.output and "error:" not in again.output, (command, again.output)


@pytest.mark.parametrize("reviewer", ["builtin", "copy-only"])
def test_a_fresh_rerun_of_the_same_design_is_recognized_and_continues(repo, reviewer) -> None:
    """copy-only: the run moves its cache folder out of use (its reviewer could read the signing
    key), and the note that this user started the run went with it: the rerun started afresh."""
    from tests.fake_reviewer import install

    _statistical(repo)
    if reviewer == "copy-only":
        install(repo, ["answer"])
    first = _run(repo)
    assert first.exit_code == 2, first.output
    assert ("the cache folder was cleared" in first.output) == (reviewer == "copy-only")
    old = _newest(repo)
    result = _run(repo)
    data = json.loads((_newest(repo, besides=[old]) / "summary.json").read_text())
    assert data["gate"]["continues"] == [old.name], result.output
    assert "a rerun of the same design" in result.output


def test_a_plain_rerun_of_a_design_whose_continuations_are_spent_names_the_run_not_a_flag(repo, monkeypatch) -> None:
    """It said 'error: --continue: ...' to a user who gave no --continue."""
    from rubricgate.gating.adaptive import AdaptiveRun

    _statistical(repo)
    assert _run(repo).exit_code == 2
    monkeypatch.setattr(AdaptiveRun, "extend", lambda self: False)  # every continuation taken
    spent = _run(repo)
    assert spent.exit_code == 2, spent.output
    line = next(line for line in spent.output.splitlines() if "no continuation left" in line)
    assert line.startswith("error: the newest INCONCLUSIVE run of this design: ") and "--continue" not in line, line


def test_a_continuation_whose_trials_errored_counts_them_among_every_trial_it_judges(repo) -> None:
    """'14 of 160 trials errored' where the run judged 320: the count was of this run's plan
    alone, not the trials it took up."""
    from tests.fake_reviewer import install

    _statistical(repo)
    install(repo, ["answer"])
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    (repo.parent / "fake-reviewer" / "plan.json").write_text(json.dumps(["api_error"]))
    result = _run(repo, "--continue", str(old))
    data = json.loads((_newest(repo, besides=[old]) / "summary.json").read_text())
    trials = [t for c in data["cases"] for t in c["trials"]]
    errored = sum(t["errored"] for t in trials)
    assert 0 < errored < len(trials), result.output
    assert f"could not judge: {errored} of {len(trials)} trials errored" in result.output, result.output


def test_a_regrade_of_an_inconclusive_run_names_the_run_it_judged_to_continue_and_that_works(repo, monkeypatch):
    """The regrade's next step named the regrade's own folder, which `run --continue` refuses
    (no run of this design continues a regrade): the run its trials came from is what continues."""
    _statistical(repo)
    monkeypatch.chdir(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    regraded = CliRunner().invoke(main, ["regrade", str(old), "--repo", str(repo)])
    assert regraded.exit_code == 2, regraded.output
    again = _newest(repo, besides=[old])
    step = json.loads((again / "summary.json").read_text())["gate"]["next"]
    command = f"rubricgate run --continue reports/{old.name}"
    assert step.startswith(f"continue the run these trials came from: {command}"), step
    assert again.name not in step
    result = _run(repo, "--continue", str(old))
    data = json.loads((_newest(repo, besides=[old, again]) / "summary.json").read_text())
    assert data["gate"]["continues"] == [old.name], result.output


@pytest.mark.parametrize("change", ["reviewer", "agent-settings", "workspace-exclude", "decided"])
def test_what_cannot_be_continued_is_one_line_and_exit_2(repo, change) -> None:
    """agent-settings: rubricgate.yaml's agent section (a `command` reviewer's command line, its
    timeouts) was in no design key: trials of another command were taken up as this one's.
    workspace-exclude: what the reviewer's workspace leaves out (docs quoting the expected
    verdicts) was in none either: trials of a reviewer shown the answers were pooled with the rest."""
    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    if change == "reviewer":
        prompt = repo / "reviewer/prompts/evaluate.md"
        prompt.write_text(prompt.read_text() + "\nBe thorough.\n")
        want = "another design"
    elif change == "agent-settings":
        config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
        config["agent"]["timeout_s"] = 299
        (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
        want = "another design"
    elif change == "workspace-exclude":
        config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
        config["suite"]["workspace_exclude"] = [*config["suite"].get("workspace_exclude", []), "answers.md"]
        (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
        want = "another design"
    else:
        data = json.loads((old / "summary.json").read_text())
        data["decision"]["status"] = "pass"
        (old / "summary.json").write_text(json.dumps(data))
        want = "ended PASS, not INCONCLUSIVE"
    result = _run(repo, "--continue", str(old))
    assert result.exit_code == 2 and want in result.output and "Traceback" not in result.output, result.output


def test_a_crlf_checkout_of_the_runs_reviewer_is_refused_naming_core_autocrlf(repo) -> None:
    # Its digests are of the bytes, which core.autocrlf=true rewrote: "another design: the
    # reviewer ... changed since", where nothing in git changed.
    _statistical(repo)
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "statistical")
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    crlf_checkout(repo)
    result = _run(repo, "--continue", str(old))
    assert result.exit_code == 2 and "another design" in result.output, result.output
    assert "core.autocrlf=true in this checkout" in result.output and len(result.output.splitlines()) == 1


def test_a_run_an_older_rubricgate_wrote_is_refused_saying_so_and_that_a_fresh_run_is_needed(repo) -> None:
    # It recorded no case digests and no rubricgate.yaml sections, and its design key was computed
    # without them: the refusal read "another design: the reviewer, ... changed since".
    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)

    def older(data) -> None:
        data["gate"]["design_key"] = "0123456789abcdef"
        for case in data["cases"]:
            case.pop("digest", None)
        data["reviewer"]["digests"] = {k: v for k, v in data["reviewer"]["digests"].items() if "#" not in k}

    _edited(old, older)
    result = _run(repo, "--continue", str(old))
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert ("an older rubricgate wrote this run: it recorded no case digests and no digests of rubricgate.yaml's "
            "sections" in result.output and "a fresh run is needed" in result.output), result.output
    assert "another design" not in result.output and "fix: run afresh without --continue" in result.output


@pytest.mark.parametrize(("key", "value"), [("jobs", 2), ("retries", 5), ("retry_backoff_s", 10.0),
                                          ("preflight", False), ("preflight_timeout_s", 90.0)])
def test_agent_settings_that_change_no_answer_leave_the_run_continued(repo, key, value) -> None:
    """Fewer trials at once after a rate limit (agent.jobs) read as another design: the run was
    refused, and a plain rerun started afresh, spending the error anew."""
    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"][key] = value
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    result = _run(repo)
    assert "continues " in result.output and "error:" not in result.output, result.output
    data = json.loads((_newest(repo, besides=[old]) / "summary.json").read_text())
    assert data["gate"]["continues"] == [old.name], result.output


# A run folder under reports/ is not trusted for being there: a pull request or an artifact plants one.

def _edited(run_dir, change) -> None:
    path = run_dir / "summary.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _planted(real: Path, name: str) -> Path:
    """A copy of the run folder `real` beside it, named and with its run id `name`."""
    planted = real.parent / name
    shutil.copytree(real, planted)
    _edited(planted, lambda d: d.update(run_id=planted.name))
    return planted


def test_a_run_folder_planted_in_the_checkout_is_never_continued_unasked(repo) -> None:
    _statistical(repo)
    assert _run(repo).exit_code == 2
    real = _newest(repo)
    planted = _planted(real, "99999999T000000Z-ffffff")
    result = _run(repo)
    new = _newest(repo, besides=[real, planted])
    data = json.loads((new / "summary.json").read_text())
    # Never the planted one (not started here): the run this user started behind it.
    assert data["gate"]["continues"] == [real.name], result.output


def _without_last_round(data) -> None:
    for case in data["cases"]:
        case["trials"] = [t for t in case["trials"] if t["trial"] < max(x["trial"] for x in case["trials"])]


def _never_run(data) -> None:
    """A trial's grades turned into never-run ones, the last look's count lowered to match."""
    for grade in data["cases"][0]["trials"][0]["grades"].values():
        grade.update(passed=False, category="not_run", reason="not run")
    data["gate"]["looks"][-1]["trials"] -= 1


@pytest.mark.parametrize("forge, says", [
    (lambda d: [g.update(passed=not g["passed"]) for g in d["cases"][0]["trials"][0]["grades"].values()],
     "has grades its transcript does not earn"),
    (lambda d: d["cases"][0]["trials"].extend([dict(d["cases"][0]["trials"][0])] * 40), "is counted twice"),
    (lambda d: d["cases"][0]["trials"].extend(
        {**d["cases"][0]["trials"][0], "trial": n, "transcript": ""} for n in range(100, 160)),
     "is past the"),
    (lambda d: d["cases"][0]["trials"][0].update(transcript=""), "has grades but no transcript"),
    # Trials taken out of an INCONCLUSIVE run's summary were taken up as if never run: with its
    # failing trials removed, a continuation passed on the rest (exit 0).
    (lambda d: d["cases"][0]["trials"].pop(0), "is missing: a run keeps every trial it ran"),
    (lambda d: d["cases"][0]["trials"].pop(), "every case of the design runs every round"),
    (_without_last_round, "trials, the summary holds"),
    (_never_run, "is marked never run: an INCONCLUSIVE run ran every trial"),
], ids=["flipped", "copies", "past-the-design", "no-transcript", "a-trial-taken-out", "one-case-short",
        "a-round-taken-out", "a-trial-marked-never-run"])
def test_a_continued_runs_trials_are_checked_like_a_shards(repo, forge, says) -> None:
    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    _edited(old, forge)
    result = _run(repo, "--continue", str(old))
    assert result.exit_code == 2 and says in result.output and "Traceback" not in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_continuing_copies_the_trials_transcripts_only_and_no_link(repo) -> None:
    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    (old / "transcripts" / "env.json").symlink_to("/proc/self/environ")
    (old / "transcripts" / "extra.json").write_text("{}")
    _run(repo, "--continue", str(old))
    new = _newest(repo, besides=[old])
    names = {p.name for p in (new / "transcripts").iterdir()}
    assert "env.json" not in names and "extra.json" not in names
    data = json.loads((new / "summary.json").read_text())
    assert all((new / t["transcript"]).is_file() for c in data["cases"] for t in c["trials"] if t["transcript"])


def _reports_elsewhere(repo) -> None:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["reports"] = "reports-elsewhere"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))


@pytest.mark.parametrize("copied, elsewhere", [(False, False), (True, False), (False, True), (True, True)],
                         ids=["the-folder", "a-copy", "under-another-reports-folder",
                              "a-copy-made-before-under-another-reports-folder"])
def test_a_run_is_continued_once(repo, tmp_path, copied, elsewhere) -> None:
    """The mark was a file in the run's folder: a copy of the folder (elsewhere, or under reports/
    by another name) carried none. Then it was under the config's reports folder alone: pointing
    `reports:` at another folder hid it, for the folder or a copy made before it was continued."""
    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    copy = tmp_path / "elsewhere" / old.name
    shutil.copytree(old, copy)
    assert "error:" not in _run(repo, "--continue", str(old)).output
    if elsewhere:
        _reports_elsewhere(repo)
    again = _run(repo, "--continue", str(copy if copied else old))
    assert again.exit_code == 2 and "it was continued already (by " in again.output, again.output


def test_a_continuation_that_fails_after_its_trials_leaves_no_mark_in_either_place(repo, monkeypatch) -> None:
    """The run's folder is marked as its trials hand over: a continuation failing after that
    (its gate or reports) lifts that mark too, or the run would be stranded."""
    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)

    def fails(*args, **kwargs):
        raise RuntimeError("the gate failed")

    with monkeypatch.context() as patch:
        patch.setattr("rubricgate.pipeline.aggregate_and_gate", fails)
        assert _run(repo, "--continue", str(old)).exit_code != 0
    assert not (old / "continued-by").exists()
    again = _run(repo, "--continue", str(old))
    assert "error:" not in again.output, again.output


def test_a_run_being_continued_is_not_continued_a_second_time_at_once(repo, monkeypatch) -> None:
    """The run was marked continued only once its continuation ended: two started together both
    took it up and spent the error twice (each could PASS on its own)."""
    import rubricgate.pipeline as pipeline

    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    real, second = pipeline.run_trials, []

    def another_continuation_meanwhile(*args, **kwargs):
        if not second:  # the nested run calls this too: it starts no third
            second.append(None)
            second[0] = _run(repo, "--continue", str(old))
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "run_trials", another_continuation_meanwhile)
    first = _run(repo, "--continue", str(old))
    assert json.loads((_newest(repo, besides=[old]) / "summary.json").read_text())["gate"]["continues"] == [old.name]
    assert second[0].exit_code == 2 and "it is being continued (by a run in progress" in second[0].output, \
        second[0].output
    assert "error:" not in first.output, first.output


class _InterruptedAgent(BuiltinAgent):
    """Ctrl-C while the continuation's first trial runs."""

    def run(self, request):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt


def test_an_interrupted_continuation_leaves_the_run_it_continues_to_be_continued(repo, monkeypatch) -> None:
    """Marked continued by a run that was interrupted (and cannot be continued itself), the run and
    its trials could never be continued again: the only way on was to run afresh."""
    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    with monkeypatch.context() as patch:
        patch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: _InterruptedAgent(cfg))
        stopped = _run(repo, "--continue", str(old))
    assert stopped.exit_code == 2 and "run interrupted after" in stopped.output, stopped.output
    interrupted = _newest(repo, besides=[old])
    again = _run(repo, "--continue", str(old))
    assert "error:" not in again.output, again.output
    newest = json.loads((_newest(repo, besides=[old, interrupted]) / "summary.json").read_text())
    assert newest["gate"]["continues"] == [old.name] and newest["complete"] is True


def test_the_mark_of_a_continuation_whose_process_is_gone_is_taken_over(repo) -> None:
    """A continuation killed outright (SIGKILL) never lifts its mark: the run is continued anew."""
    import subprocess

    from rubricgate.gating.continuation_marks import RUNNING, mark_path

    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    child = subprocess.Popen(["true"])
    child.wait()  # reaped: its pid names no process
    mark = mark_path(repo / "reports", old.name)
    mark.write_text(f"{RUNNING} (pid {child.pid})\n")
    result = _run(repo, "--continue", str(old))
    assert "error:" not in result.output, result.output
    assert mark.read_text().strip() == _newest(repo, besides=[old]).name


def test_a_continued_run_stopped_before_its_first_transcript_still_takes_the_old_ones(repo, tmp_path) -> None:
    """Interrupted early, the new run folder had no transcripts/ yet: FileNotFoundError, internal error."""
    from rubricgate.gating.continuation import Continued
    from rubricgate.records.files import read_summary

    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    fresh = tmp_path / "20991231T000000Z-abcdef"
    fresh.mkdir()
    Continued(old, read_summary(old), False).copy_transcripts(fresh)
    assert {p.name for p in (fresh / "transcripts").iterdir()} == {p.name for p in (old / "transcripts").iterdir()}


def test_an_edit_to_a_case_makes_a_plain_rerun_start_afresh_not_an_error(repo) -> None:
    """The old run's trials would not grade the same: a plain rerun exited 2 saying they were forged."""
    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    expect = repo / "fixtures/block/data-loader/expect.yaml"
    expect.write_text("rules: [fm-description-required]\n")
    result = _run(repo)
    assert "error:" not in result.output and "continues" not in result.output, result.output
    data = json.loads((_newest(repo, besides=[old]) / "summary.json").read_text())
    assert data["gate"]["continues"] == []


def test_a_regrade_or_an_interrupted_run_after_it_does_not_hide_the_run_a_plain_rerun_continues(repo) -> None:
    """Both sat in a newer folder than the INCONCLUSIVE run, and the next plain run started afresh
    (its trials lost, the error spent again)."""
    from rubricgate.records.files import new_run_id
    from rubricgate.runner.cache import default_cache_dir, remember_run

    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    regraded = CliRunner().invoke(main, ["regrade", str(old), "--repo", str(repo)])
    assert regraded.exit_code in (0, 1, 2) and "Traceback" not in regraded.output, regraded.output
    interrupted = repo / "reports" / new_run_id()  # a later run of this user's, cut short
    shutil.copytree(old, interrupted)
    summary = json.loads((interrupted / "summary.json").read_text())
    (interrupted / "summary.json").write_text(json.dumps({**summary, "run_id": interrupted.name, "complete": False}))
    remember_run(default_cache_dir(), interrupted.name)
    before = {p for p in (repo / "reports").iterdir() if p.is_dir()}
    assert len(before) == 3
    result = _run(repo)
    new = next(p for p in (repo / "reports").iterdir() if p.is_dir() and p not in before)
    data = json.loads((new / "summary.json").read_text())
    assert data["gate"]["continues"] == [old.name], result.output


def test_a_shard_run_after_it_does_not_hide_the_run_a_plain_rerun_continues(repo) -> None:
    """A `run --shard 1/2` sat in a newer folder than the INCONCLUSIVE run (a shard is continued
    by none), and the next plain run started afresh, spending the error again."""
    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    shard = _run(repo, "--shard", "1/2", "--trials", "1")
    assert "Traceback" not in shard.output, shard.output
    before = {p for p in (repo / "reports").iterdir() if p.is_dir()}
    assert any((p / "shard.json").is_file() for p in before), shard.output
    result = _run(repo)
    new = next(p for p in (repo / "reports").iterdir() if p.is_dir() and p not in before)
    data = json.loads((new / "summary.json").read_text())
    assert data["gate"]["continues"] == [old.name], result.output


@pytest.mark.parametrize("between", [["--only", "data-loader"], ["--agent", "builtin", "--trials", "2"]])
def test_a_run_of_another_design_after_it_does_not_hide_the_run_a_plain_rerun_continues(repo, between) -> None:
    """A run of one case (--only) or of other flags sat in a newer folder than the INCONCLUSIVE run of
    the whole suite: the next plain run found that one, another design, and started afresh,
    spending the error again, where the run of its own design was there to continue."""
    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    other = _run(repo, *between)
    assert "Traceback" not in other.output and "continues" not in other.output, other.output
    before = {p for p in (repo / "reports").iterdir() if p.is_dir()}
    result = _run(repo)
    new = next(p for p in (repo / "reports").iterdir() if p.is_dir() and p not in before)
    data = json.loads((new / "summary.json").read_text())
    assert data["gate"]["continues"] == [old.name], result.output


def test_a_continuation_its_design_did_not_judge_leaves_the_run_it_took_up_continuable(repo, monkeypatch) -> None:
    """The repository modified during a continuation: it ends COULD NOT JUDGE with no look of its own,
    and its mark stranded the run it took up ('continued already' by a run that cannot be continued)."""
    from tests.fake_reviewer import install

    _statistical(repo)
    install(repo, ["answer"])  # a reviewer the run watches the repository for (the builtin writes nothing)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    touched = []

    def modify_the_repository(event) -> None:
        if event.get("event") == "trial_result" and not touched:
            touched.append(1)
            (repo / "README.md").write_text("edited while the continuation ran\n")

    monkeypatch.setattr("rubricgate.cli.core._listeners", lambda: [modify_the_repository])
    spoilt = _run(repo, "--continue", str(old))
    assert spoilt.exit_code == 2 and "modified during the run" in spoilt.output, spoilt.output
    spoilt_dir = _newest(repo, besides=[old])
    monkeypatch.undo()
    (repo / "README.md").unlink()
    again = _run(repo, "--continue", str(old))
    assert "continued already" not in again.output, again.output
    data = json.loads((_newest(repo, besides=[old, spoilt_dir]) / "summary.json").read_text())
    assert data["gate"]["continues"] == [old.name]


def test_a_continuation_past_gate_max_errored_leaves_the_run_it_took_up_continuable(repo, monkeypatch) -> None:
    """A reviewer whose trials crashed for a while: its continuation could not judge (more errored
    trials than gate.max_errored), yet its looks kept the mark, so the run it took up was "continued
    already" by a run that cannot be continued, its next step named that run's own folder, and the
    next plain run started afresh, spending the error again."""
    from tests.fake_reviewer import install

    _statistical(repo)
    monkeypatch.chdir(repo)
    install(repo, ["answer"])
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    (repo.parent / "fake-reviewer" / "plan.json").write_text(json.dumps(["crash"]))
    crashed = _run(repo)
    assert "could not judge: " in crashed.output and "trials errored" in crashed.output, crashed.output
    errored = _newest(repo, besides=[old])
    data = json.loads((errored / "summary.json").read_text())
    assert data["gate"]["continues"] == [old.name] and data["gate"]["looks"], crashed.output
    command = f"rubricgate run --continue reports/{old.name}"
    assert command in data["gate"]["next"] and errored.name not in data["gate"]["next"], data["gate"]["next"]
    assert f"next: {data['gate']['next']}" in crashed.output
    assert data["gate"]["next"] in (errored / "comment.md").read_text()
    (repo.parent / "fake-reviewer" / "plan.json").write_text(json.dumps(["answer"]))
    again = _run(repo)  # a plain rerun takes up the run the errored continuation took up
    data = json.loads((_newest(repo, besides=[old, errored]) / "summary.json").read_text())
    assert data["gate"]["continues"] == [old.name], again.output


def test_a_continuation_whose_reviewer_crashes_every_trial_stops_at_its_first_look(repo, monkeypatch) -> None:
    """Past gate.max_errored only a regression could let it judge: it ran every round of the next
    budget (20 trials here, each a timeout for a hung reviewer) and then could not judge."""
    from tests.fake_reviewer import install

    _statistical(repo)
    install(repo, ["answer"])
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    (repo.parent / "fake-reviewer" / "plan.json").write_text(json.dumps(["crash"]))
    crashed = _run(repo, "--continue", str(old))
    assert crashed.exit_code == 2 and "could not judge: 2 of 22 trials errored" in crashed.output, crashed.output
    looks = json.loads((_newest(repo, besides=[old]) / "summary.json").read_text())["gate"]["looks"]
    assert looks[-1]["why"] == "2 trials errored, more than gate.max_errored 0: it cannot judge", looks[-1]


def test_a_command_reviewer_s_script_outside_the_repository_edited_since_is_another_design(repo) -> None:
    """Its script edited from 97% to 50% right was taken up as the same design and pooled."""
    from tests.fake_reviewer import install

    _statistical(repo)
    install(repo, ["answer"])
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    script = repo.parent / "fake-reviewer" / "reviewer.py"
    assert not script.is_relative_to(repo)
    script.write_text(script.read_text() + "\n# answers otherwise now\n")
    refused = _run(repo, "--continue", str(old))
    assert refused.exit_code == 2 and "another design" in refused.output, refused.output
    afresh = _run(repo)
    data = json.loads((_newest(repo, besides=[old]) / "summary.json").read_text())
    assert data["gate"]["continues"] == [], afresh.output


def test_another_value_of_a_variable_passed_to_the_agent_is_another_design(repo, monkeypatch) -> None:
    """An allowlisted endpoint variable pointed at another model: a plain rerun pooled the trials as
    one design. A secret's value is no part of the design (a rotated key continues)."""
    import yaml

    _statistical(repo)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"]["env_allowlist"] = [*config["agent"].get("env_allowlist", []), "REVIEW_BASE_URL"]
    config["agent"]["secret_env"] = [*config["agent"].get("secret_env", []), "REVIEW_API_KEY"]
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("REVIEW_BASE_URL", "http://127.0.0.1:9/model-a")
    monkeypatch.setenv("REVIEW_API_KEY", "sk-first-key-0123456789")
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    monkeypatch.setenv("REVIEW_API_KEY", "sk-rotated-key-9876543210")
    rotated = _run(repo)
    continued = _newest(repo, besides=[old])
    assert json.loads((continued / "summary.json").read_text())["gate"]["continues"] == [old.name], rotated.output
    monkeypatch.setenv("REVIEW_BASE_URL", "http://127.0.0.1:9/model-b")
    refused = _run(repo, "--continue", str(continued))
    assert refused.exit_code == 2 and "another design" in refused.output, refused.output
    assert "its environment" in refused.output
    monkeypatch.setenv("REVIEW_BASE_URL", "http://127.0.0.1:9/model-a")
    monkeypatch.setenv("PATH", f"{repo.parent / 'venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    venv = _run(repo)  # the machine's own variables (PATH with a venv activated) are no design
    again = _newest(repo, besides=[old, continued])
    assert json.loads((again / "summary.json").read_text())["gate"]["continues"][-1] == continued.name, venv.output


def test_a_plain_rerun_that_loses_the_race_for_a_run_names_no_flag_it_was_not_given(repo) -> None:
    """Two plain reruns found the same INCONCLUSIVE run; the one that marked it second said
    'error: --continue: ...' though no --continue was given."""
    import os

    from rubricgate.errors import GateInputError
    from rubricgate.gating.continuation import Continued
    from rubricgate.gating.continuation_marks import mark_path
    from rubricgate.records.files import read_summary

    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    summary = read_summary(old)
    marker = mark_path(repo / "reports", summary.run_id)
    marker.write_text(f"a run in progress (pid {os.getppid()})\n")  # the other rerun, alive
    for recognized, named in ((True, str(old)), (False, "--continue")):
        with pytest.raises(GateInputError) as got:
            Continued(old, summary, recognized, marker).claim()
        assert got.value.file == named and "being continued" in got.value.problem
        assert ("wait for that run to end" in got.value.fix) == recognized


def test_a_copy_only_run_keeps_the_notes_of_the_runs_before_it(repo) -> None:
    """A copy-only run moves its cache folder out of use (its reviewer could read the signing key);
    the notes that this user started earlier runs went with it, and the next plain rerun of an
    INCONCLUSIVE run started afresh."""
    from tests.fake_reviewer import install

    _statistical(repo)
    install(repo, ["answer"])  # copy-only
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    (repo / "other.yaml").write_text(yaml.safe_dump({**config, "reports": "reports-other"}))
    other = _run(repo, "--config", str(repo / "other.yaml"))  # another copy-only run: its cache folder retired
    assert "the cache folder was cleared" in other.output, other.output
    before = {p for p in (repo / "reports").iterdir() if p.is_dir()}
    result = _run(repo)
    new = next(p for p in (repo / "reports").iterdir() if p.is_dir() and p not in before)
    assert json.loads((new / "summary.json").read_text())["gate"]["continues"] == [old.name], result.output


def test_a_mark_naming_a_live_pid_that_started_at_another_time_is_stale(tmp_path) -> None:
    """After a reboot (or pid reuse) the mark's pid belonged to another process, and continuing was
    refused 'being continued by pid N' until that process ended."""
    import os

    from rubricgate.gating.continuation_marks import RUNNING, continued_by, process_start, running_mark

    marker = tmp_path / "mark"
    pid, started = os.getpid(), process_start(os.getpid())
    assert started is not None
    marker.write_text(running_mark() + "\n")
    assert continued_by(marker) is not None  # this very process: alive
    marker.write_text(f"{RUNNING} (pid {pid}, started {started + 1})\n")
    assert continued_by(marker) is None  # the pid, but another process since: stale, taken over
    marker.write_text(f"{RUNNING} (pid {pid})\n")
    assert continued_by(marker) is not None  # a mark of before: the pid alone decides


def test_of_two_runs_in_one_second_the_later_started_is_the_newest(tmp_path) -> None:
    """Run ids are timestamped to the second: two runs of one second were ordered by their random
    suffix, so a plain rerun could take up the older (continued already) and start afresh."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1]))
    import reports_fixtures as rf

    from rubricgate.gating.continuation import _newest_run_here
    from rubricgate.runner.cache import remember_run

    reports, cache = tmp_path / "reports", tmp_path / "cache"
    for suffix, started in (("zzzzzz", "2026-01-01T00:00:00.100Z"), ("aaaaaa", "2026-01-01T00:00:00.900Z")):
        run_id = f"20260101T000000Z-{suffix}"
        rf.write_run_dir(reports / run_id, rf.summary(run_id=run_id, started_at=started))
        remember_run(cache, run_id)
    found = _newest_run_here(reports, cache)
    assert found is not None and found[0].name == "20260101T000000Z-aaaaaa"


def test_an_agent_cli_reinstalled_since_is_another_design(tmp_path, monkeypatch) -> None:
    """An INCONCLUSIVE run of Claude Code 2.1.112 continued after an upgrade of the CLI was one
    design: its trials were pooled with the new CLI's. The CLI the run starts is part of it, as a
    `command` reviewer's program is (and as the trial cache keys it)."""
    from rubricgate.gating.design import command_program
    from rubricgate.models.config import Config

    cli = tmp_path / "bin" / "claude"
    cli.parent.mkdir()
    cli.write_text("#!/bin/sh\necho 2.1.112\n")
    cli.chmod(0o755)
    monkeypatch.setenv("PATH", f"{cli.parent}{os.pathsep}{os.environ['PATH']}")
    config = Config.model_validate({"agent": {"name": "claude"}})
    before = command_program(tmp_path, config, "claude")
    cli.write_text("#!/bin/sh\necho 2.1.332\n")
    after = command_program(tmp_path, config, "claude")
    assert before and after and before != after
    assert command_program(tmp_path, Config.model_validate({"agent": {"name": "builtin"}}), "builtin") == ""


def test_a_plain_rerun_while_the_run_it_would_continue_is_being_continued_is_refused(repo) -> None:
    """A plain rerun started while a continuation of the newest INCONCLUSIVE run was under way
    passed that run over and started afresh: a fresh spend of the error beside the
    continuation's, either of which could PASS."""
    from rubricgate.gating.continuation_marks import mark_path

    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    mark_path(repo / "reports", old.name).write_text(f"a run in progress (pid {os.getppid()})\n")  # alive
    rerun = _run(repo)
    assert rerun.exit_code == 2, rerun.output
    assert f"error: {old}: this run would continue it, but it is being continued" in rerun.output, rerun.output
    assert "wait for that run to end" in rerun.output
    assert _newest(repo) == old  # refused before its run folder was made


def test_a_run_being_continued_is_not_continued_at_once_under_another_reports_folder(repo, monkeypatch) -> None:
    """Only the reports folder's mark said a continuation was under way; the run's own folder and
    this user's cache folder named it once it ended. A second continuation started meanwhile by a
    config pointing `reports:` elsewhere found no mark, took the run up too and spent the error
    twice (each could PASS on its own)."""
    import rubricgate.pipeline as pipeline

    _statistical(repo)
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    config = (repo / "rubricgate.yaml").read_text()
    real, second = pipeline.run_trials, []

    def another_continuation_elsewhere(*args, **kwargs):
        if not second:  # the nested run calls this too: it starts no third
            second.append(None)
            _reports_elsewhere(repo)
            second[0] = _run(repo, "--continue", str(old))
            (repo / "rubricgate.yaml").write_text(config)
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "run_trials", another_continuation_elsewhere)
    first = _run(repo, "--continue", str(old))
    assert "error:" not in first.output, first.output
    assert second[0].exit_code == 2 and "it is being continued (by a run in progress" in second[0].output, \
        second[0].output
    assert not list((repo / "reports-elsewhere").glob("2*"))  # refused before a run folder was made


def test_a_rerun_that_cannot_take_up_a_run_whose_note_was_lost_says_so_and_names_the_command(repo) -> None:
    """A copy-only run that started before this run's note was written clears the cache folder
    when it ends and puts back only the notes it read first: the note is gone, the INCONCLUSIVE
    run is not continued unasked, and the plain rerun started afresh without a word, spending the
    error a second time."""
    from rubricgate.runner.cache import notes_dir, retire_cache
    from rubricgate.runner.run_notes import read_notes, restore_notes

    _statistical(repo)
    cache = notes_dir(repo, None)
    before = read_notes(cache)  # the other run's read, before its first agent
    assert _run(repo).exit_code == 2
    old = _newest(repo)
    restore_notes(cache, before, retire_cache(cache))  # the other run ends: its cache folder retired
    result = _run(repo)
    data = json.loads((_newest(repo, besides=[old]) / "summary.json").read_text())
    assert not data["gate"].get("continues"), result.output
    assert f"started afresh: {old} of this design ended INCONCLUSIVE" in result.output
    assert f"rubricgate run --continue {old}" in " ".join(result.output.split())


@pytest.mark.parametrize("planted", ["a link", "a file past the read bound"])
def test_a_planted_summary_is_not_read_whole_nor_through_a_link_when_looking_for_a_run_passed_over(
        tmp_path, monkeypatch, planted) -> None:
    """Every run folder's summary.json is searched for the design key: a planted one linked to
    /dev/zero was read until the run's memory ran out (9 GB in 20 s), a FIFO blocked the run."""
    from rubricgate.gating import continuation

    run = tmp_path / "reports" / "99999999T000000Z-ffffff"
    run.mkdir(parents=True)
    held = tmp_path / "outside.json"
    held.write_text("x" * 64 + "the-design-key")
    if planted == "a link":
        (run / "summary.json").symlink_to(held)
    else:
        (run / "summary.json").write_text(held.read_text())
        monkeypatch.setattr(continuation, "MAX_FILE_BYTES", 32)
    assert not continuation._names(run, "the-design-key")
    (run / "summary.json").unlink()
    (run / "summary.json").write_text("the-design-key")
    assert continuation._names(run, "the-design-key")  # a regular file within the bound is searched


def test_a_planted_run_passed_over_is_named_on_one_line_whatever_its_folder_name_holds(repo) -> None:
    """A newline in a planted folder's name began a line of its own in the warning: in a CI log,
    a workflow command (`::error title=...::`, `::stop-commands::`)."""
    _statistical(repo)
    assert _run(repo).exit_code == 2
    real = _newest(repo)
    planted = _planted(real, "99999999T000000Z-f\n::error title=x::owned")
    shutil.rmtree(real)  # nothing of this user's to continue: the rerun starts afresh
    result = _run(repo)
    line = next(x for x in result.output.splitlines() if "started afresh" in x)
    assert "99999999T000000Z-f\\x0a::error title=x::owned" in line, result.output
    assert not any(x.startswith("::") for x in result.output.splitlines()), result.output
