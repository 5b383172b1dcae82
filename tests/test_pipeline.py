"""The self-test that proves the gate can say no, then the happy path."""

import json
import shutil

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.models.transcript import ToolCall
from rubricgate.pipeline import RunOptions, run_suite
from tests.conftest import set_severity, write_task
from tests.scripted_agent import ScriptedAgent, reads, transcript, verdict_text

PASS_CASE, BLOCK_CASE = "fixture-weekly-revenue-summary", "fixture-data-loader"
CRIT = [{"severity": "critical", "rule": "fm-description-required", "file": "f", "line": 2, "quote": "q", "issue": "i", "fix": "f"}]


def cli(repo, *args):
    return CliRunner().invoke(main, ["run", "--repo", str(repo), *args])


@pytest.fixture
def scripted(monkeypatch):
    """Route every agent name to the scripted double; default script answers correctly."""
    ScriptedAgent.script = {PASS_CASE: lambda r: transcript(verdict_text("PASS")),
                            BLOCK_CASE: lambda r: transcript(verdict_text("BLOCK", CRIT))}
    monkeypatch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: ScriptedAgent(cfg))
    return ScriptedAgent.script


def run(repo):
    return run_suite(RunOptions(repo=repo))


def grade(outcome, case_id, dim):
    case = next(c for c in outcome.summary.cases if c.id == case_id)
    return case.trials[0].grades[dim]


def test_lowering_a_critical_rule_fails_the_gate(repo):
    set_severity(repo, "fm-description-required", "warning")
    result = cli(repo)
    assert result.exit_code == 1, result.output
    assert "REGRESSION" in result.output and "fixture-data-loader" in result.output
    assert "wrong_tier" in result.output


def test_malformed_verdict_fails_verdict_dimension(repo, scripted):
    scripted[BLOCK_CASE] = lambda r: transcript('```json\n{"tier": "BLOCK", findings: []}\n```')
    out = run(repo)
    g = grade(out, BLOCK_CASE, "verdict")
    assert (g.passed, g.category) == (False, "malformed_verdict")
    assert out.exit_code == 1 and out.summary.rates["verdict"].rate == 0.5


def test_missing_verdict_is_error_never_pass(repo, scripted):
    scripted[PASS_CASE] = lambda r: transcript("Looks good to me. PASS.")
    out = run(repo)
    case = next(c for c in out.summary.cases if c.id == PASS_CASE)
    assert case.trials[0].outcome == "ERROR" and case.trials[0].grades["verdict"].category == "no_verdict"
    assert out.exit_code == 1


def test_forbidden_tool_fails_tool_use(repo, scripted):
    calls = reads() + [ToolCall(raw_name="Bash", name="bash", input={"command": "rm -rf /"}, status="denied", step=2)]
    scripted[PASS_CASE] = lambda r: transcript(verdict_text("PASS"), calls=calls)
    out = run(repo)
    assert grade(out, PASS_CASE, "tool_use").category == "forbidden_tool"
    assert grade(out, PASS_CASE, "verdict").passed and out.exit_code == 1


def test_too_many_steps_fails_trajectory(repo, scripted):
    scripted[PASS_CASE] = lambda r: transcript(verdict_text("PASS"), steps=r.max_steps + 1)
    out = run(repo)
    assert grade(out, PASS_CASE, "trajectory").category == "too_many_steps" and out.exit_code == 1


def _no_backoff(repo):
    cfg = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    cfg["agent"]["retry_backoff_s"] = 0
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(cfg))


def test_api_error_without_verdict_is_errored_not_a_reviewer_failure(repo, scripted):
    _no_backoff(repo)
    scripted[BLOCK_CASE] = lambda r: transcript("", exit_code=1, termination="api_error", error="HTTP 529 overloaded")
    out = run(repo)
    case = next(c for c in out.summary.cases if c.id == BLOCK_CASE)
    trial = case.trials[0]
    assert trial.outcome == "ERROR" and trial.errored and len(trial.attempts) == 3
    assert trial.grades["verdict"].category == "errored" and "529" in trial.grades["verdict"].reason
    assert out.exit_code == 2 and out.summary.rates["verdict"].trials == 1


def test_crash_after_model_turns_without_verdict_is_agent_error(repo, scripted):
    scripted[BLOCK_CASE] = lambda r: transcript("", exit_code=1, termination="crashed", error="exit 1: boom", steps=2)
    out = run(repo)
    g = grade(out, BLOCK_CASE, "verdict")
    assert g.category == "agent_error" and "boom" in g.reason and out.exit_code == 1


def test_timeout_without_verdict(repo, scripted):
    scripted[BLOCK_CASE] = lambda r: transcript("", exit_code=None, termination="timeout", error="killed after 5s")
    out = run(repo)
    assert grade(out, BLOCK_CASE, "verdict").category == "timeout"
    assert grade(out, BLOCK_CASE, "trajectory").category == "timeout"


def test_adapter_exception_becomes_errored_trial(repo, scripted):
    _no_backoff(repo)

    def boom(request):
        raise RuntimeError("adapter bug")
    scripted[BLOCK_CASE] = boom
    out = run(repo)
    case = next(c for c in out.summary.cases if c.id == BLOCK_CASE)
    assert case.trials[0].outcome == "ERROR" and "adapter bug" in case.trials[0].grades["verdict"].reason


def test_agent_writing_to_original_repo_cannot_be_judged(repo, scripted):
    def vandal(request):
        (repo / "fixtures/pass/weekly-revenue-summary/SKILL.md").write_text("hacked")
        return transcript(verdict_text("PASS"))
    scripted[PASS_CASE] = vandal
    out = run(repo)
    assert out.exit_code == 2 and "original repository was modified" in out.summary.decision.reasons[0]
    assert grade(out, PASS_CASE, "verdict").category == "agent_error"


def test_a_run_of_the_builtin_alone_neither_watches_the_tree_nor_probes_for_layers(repo, monkeypatch):
    # The builtin only reads its layers: the backstop and the overlay probe are for agent processes.
    def refuse(*args, **kwargs):
        raise AssertionError("not for an in-process reviewer that writes nothing")
    monkeypatch.setattr("rubricgate.runner.treecheck.digest_tree", refuse)
    monkeypatch.setattr("rubricgate.runner.startup.fingerprint_tree", refuse)
    monkeypatch.setattr("rubricgate.runner.scheduler.fingerprint_tree", refuse)
    monkeypatch.setattr("rubricgate.runner.startup.probe_layers", refuse)
    out = run(repo)
    # Without bubblewrap the run is copy-only, said in its one warning; nothing else is warned.
    said = "copy-only isolation: agents ran without a sandbox (no agent process to isolate (in-process reviewer))"
    expected = [] if out.summary.isolation == "bwrap" else [said]
    assert out.exit_code == 0 and [w[:len(said)] for w in out.summary.decision.warnings] == expected


def test_an_in_process_agent_not_known_to_write_nothing_is_watched(repo, scripted):
    from rubricgate.agents.base import writes_nothing

    class Claims:
        writes_nothing = "yes"  # only the literal True counts

    assert not writes_nothing(ScriptedAgent(None)) and not writes_nothing(Claims())
    scripted[PASS_CASE] = lambda request: (repo.joinpath("README.md").write_text("x"),
                                           transcript(verdict_text("PASS")))[1]
    assert "original repository was modified" in run(repo).summary.decision.reasons[0]


def test_interrupted_run_leaves_partial_readable_report(repo, scripted):
    def interrupt(request):
        raise KeyboardInterrupt
    scripted[BLOCK_CASE] = interrupt  # fixtures run pass/ before block/
    out = run(repo)
    assert out.exit_code == 2 and not out.summary.complete
    summary = json.loads((out.run_dir / "summary.json").read_text())
    assert summary["complete"] is False and "interrupted" in summary["decision"]["reasons"][0]
    events = [json.loads(l)["event"] for l in (out.run_dir / "events.jsonl").read_text().splitlines()]
    assert events[0] == "run_started" and "trial_result" in events and events[-1] == "run_completed"


def test_task_without_expect_exits_2_naming_the_file(repo):
    write_task(repo, {"id": "t", "review": ["fixtures/block/data-loader/SKILL.md"]})
    result = cli(repo)
    assert result.exit_code == 2 and "evals/tasks/t.yaml: expect" in result.output


def test_unknown_agent_exits_2(repo):
    result = cli(repo, "--agent", "gpt-reviewer-9000")
    assert result.exit_code == 2 and "unknown agent 'gpt-reviewer-9000'" in result.output


def test_secrets_never_reach_outputs(repo, scripted, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-SECRET-VALUE-123")
    scripted[PASS_CASE] = lambda r: transcript(verdict_text("PASS") + r.env["ANTHROPIC_API_KEY"])
    out = run(repo)
    for path in out.run_dir.rglob("*"):
        if path.is_file():
            assert "SECRET-VALUE" not in path.read_text(), path


def test_agent_gets_a_minimal_environment(repo, scripted, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "nope")
    seen = {}
    def capture(request):
        seen.update(request.env)
        return transcript(verdict_text("PASS"))
    scripted[PASS_CASE] = capture
    run(repo)
    assert "AWS_SECRET_ACCESS_KEY" not in seen and "PATH" in seen


def test_happy_path_writes_summary_events_and_transcripts(repo):
    result = cli(repo)
    assert result.exit_code == 0, result.output
    run_dir = next((repo / "reports").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["format_version"] == 1 and summary["decision"]["status"] == "pass"
    trial = summary["cases"][0]["trials"][0]
    assert {"outcome", "reported_tier", "effective_tier", "escalated", "grades", "steps", "tool_calls"} <= trial.keys()
    assert (run_dir / trial["transcript"]).is_file()
    assert "decision: PASS (exit 0)" in result.output
    assert not (repo / "reviewer/.changed-skills.txt").exists()  # written only inside workspaces


def test_workspaces_are_removed_unless_kept(repo, scripted, tmp_path):
    seen = []
    def remember(request):
        seen.append(request.workspace)
        return transcript(verdict_text("PASS"))
    scripted[PASS_CASE] = remember
    run(repo)
    assert seen and not seen[0].exists()
    kept = run_suite(RunOptions(repo=repo, keep_workspaces=True)).workspaces
    try:
        assert seen[-1].exists() and (seen[-1] / "reviewer/.changed-skills.txt").read_text().strip().endswith("SKILL.md")
    finally:
        shutil.rmtree(kept)  # kept for good by design: the test removes what it asked to keep


def _own_temp(tmp_path, monkeypatch):
    """A temp folder of this test's own, for the run's snapshot and trial folders."""
    import tempfile

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def test_a_run_that_cannot_start_leaves_no_snapshot_behind(repo, scripted, tmp_path, monkeypatch):
    """The snapshot is copied beside the start digest and the sandbox probes (runner/startup.py isolate_and_watch):
    when the run then ends before its first trial, the copy of the tree goes too."""
    from rubricgate.errors import GateInputError

    temp = _own_temp(tmp_path, monkeypatch)
    cfg = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    cfg.setdefault("agent", {})["sandbox"] = "bwrap"  # required, and (below) not installed
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.setattr("rubricgate.isolation.sandbox.shutil.which", lambda *a, **k: None)
    with pytest.raises(GateInputError, match="agent.sandbox"):
        run(repo)
    assert list(temp.iterdir()) == []
    cfg["agent"]["sandbox"] = "none"
    cfg["reports"] = "reports-file"  # a file where the run's folder should go: the run cannot start
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(cfg))
    (repo / "reports-file").write_text("not a folder")
    with pytest.raises(GateInputError, match="cannot create the run folder"):
        run(repo)
    assert list(temp.iterdir()) == []
    cfg["reports"] = "reports"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(cfg))
    assert run(repo).exit_code == 0 and list(temp.iterdir()) == []  # and a run that starts cleans up too


def test_terminal_groups_a_failure_repeated_across_trials(repo):
    set_severity(repo, "fm-description-required", "warning")
    result = CliRunner().invoke(main, ["run", "--repo", str(repo), "--trials", "3"])
    assert result.exit_code == 1
    assert "fixture-data-loader verdict: wrong_tier (3/3 trials): expected BLOCK, got WARN" in result.output
    assert result.stdout.count("wrong_tier") == 1 and "report.html" in result.stdout


def test_every_rate_has_an_interval_and_trials_default_follows_the_flag(repo):
    out = run_suite(RunOptions(repo=repo, trials=2))
    case = out.summary.cases[0]
    low, high = case.intervals["verdict"]
    assert 0 < low < case.rates["verdict"] <= high <= 1
    assert set(out.summary.intervals_by_tag["fixture"]) == set(DIMENSIONS)
    assert out.summary.trials_default == 2


def test_replay_artifact_holds_what_the_reviewer_was_shown(repo):
    set_severity(repo, "fm-description-required", "warning")
    out = run_suite(RunOptions(repo=repo))
    artifact = json.loads((out.run_dir / "replay" / "fixture-data-loader-1.json").read_text())
    shown = artifact["reviewed_files"]["fixtures/block/data-loader/SKILL.md"]
    assert shown == (repo / "fixtures/block/data-loader/SKILL.md").read_text()
    assert artifact["trial"]["grades"]["verdict"]["category"] == "wrong_tier"


def test_temp_folder_inside_the_repository_is_the_runs_own_not_a_change(repo, scripted, monkeypatch):
    # TMPDIR pointed into the repository: the run's workspaces and sandbox probes are made
    # there while the start digest reads the repository; none of it is the agent's doing.
    inside = repo / "tmp"
    inside.mkdir()
    monkeypatch.setenv("TMPDIR", str(inside))
    monkeypatch.setattr("tempfile.tempdir", str(inside))
    out = run(repo)
    assert out.exit_code == 0, out.summary.decision.reasons
    assert not any("modified" in r for r in out.summary.decision.reasons)


_START_PROBE = """import json, pathlib, sys
import rubricgate.pipeline as pipeline
import rubricgate.runner.trials as trials
from rubricgate.models.results import RUN_END_MODELS, TRIAL_MODELS
names, seen = json.loads(sys.argv[2]), {}
real = trials.run_jobs
def built():
    return [m.__name__ for m in TRIAL_MODELS + RUN_END_MODELS if m.__pydantic_complete__]
def first_agents(*args, **kwargs):
    seen["at_start"] = [m for m in names if m in sys.modules]
    seen["built_at_start"] = built()
    return real(*args, **kwargs)
trials.run_jobs = first_agents
out = pipeline.run_suite(pipeline.RunOptions(repo=pathlib.Path(sys.argv[1])))
print(json.dumps({"code": out.exit_code, **seen, "at_end": [m for m in names if m in sys.modules],
                  "built_at_end": len(built())}))
"""
RUN_END_ONLY = ["rubricgate.gating.summarize", "rubricgate.gating.aggregate", "rubricgate.gating.gate", "rubricgate.gating.stats",
                "rubricgate.gating.exact", "rubricgate.reports.bundle", "jinja2"]  # jinja2: the report's templates
SHARDING_ONLY = ["rubricgate.fleet.shard", "rubricgate.models.shard"]
# asyncio: typing_extensions before 4.16 imports it under pydantic-core (pyproject pins >= 4.16);
# pandas: only the analysis frames (export, trend) use it; matplotlib and numpy: a run's own report
# draws no chart (the trend, drawn only given earlier runs, is the one that needs them).
NEVER = ["asyncio", "pandas", "matplotlib", "numpy"]


def test_a_run_starts_its_agents_before_loading_what_only_its_end_needs(repo):
    """Aggregation, gating and the report writers load beside the trials, not before them (a
    run's start is its fixed cost), and sharding, asyncio and pandas not at all; the probe sees the former
    by the end. Likewise the validators of what trials and the run's end write: none is built
    before the first agents start, every one by the end."""
    import subprocess
    import sys

    from rubricgate.models.results import RUN_END_MODELS, TRIAL_MODELS

    names = RUN_END_ONLY + SHARDING_ONLY + NEVER
    proc = subprocess.run([sys.executable, "-c", _START_PROBE, str(repo), json.dumps(names)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "code": 0, "at_start": [], "at_end": RUN_END_ONLY,
        "built_at_start": [], "built_at_end": len(TRIAL_MODELS + RUN_END_MODELS)}


def test_the_runs_report_page_is_what_its_files_render(repo, scripted, monkeypatch):
    """The run renders each trial's part of report.html as the trial ends (once the report
    writers are loaded); the page written at the end must be exactly what rendering from
    summary.json and the transcript files gives."""
    import time

    import rubricgate.reports.html as html_module
    from rubricgate.records.files import read_summary

    def slow(answer):  # long enough for the warm-up to load the report writers meanwhile
        return lambda request: time.sleep(0.3) or answer(request)

    for case_id in list(scripted):
        scripted[case_id] = slow(scripted[case_id])
    held = []
    real = html_module.prerender_body
    monkeypatch.setattr(html_module, "prerender_body", lambda b, r, t: held.append(r.transcript) or real(b, r, t))
    out = run(repo)
    assert out.exit_code == 0 and held  # some bodies were rendered during the run, or this proves nothing
    written = (out.run_dir / "report.html").read_text(encoding="utf-8")
    assert written == html_module.render_html(read_summary(out.run_dir), out.run_dir)
    assert written.count('<table class="timeline cards">') == sum(len(c.trials) for c in out.summary.cases)


def test_a_body_that_fails_to_render_during_the_run_is_rendered_from_its_file(repo, scripted, monkeypatch):
    import time

    import rubricgate.reports.html as html_module

    calls = []

    def broken(bodies, result, transcript):
        calls.append(result.transcript)
        raise RuntimeError("renderer bug")

    for case_id in list(scripted):
        answer = scripted[case_id]
        scripted[case_id] = lambda request, answer=answer: time.sleep(0.3) or answer(request)
    monkeypatch.setattr(html_module, "prerender_body", broken)
    out = run(repo)
    assert calls and out.exit_code == 0  # the hook ran and failed, the run did not
    page = (out.run_dir / "report.html").read_text(encoding="utf-8")
    assert page.count('<table class="timeline cards">') == sum(len(c.trials) for c in out.summary.cases)


def test_default_jobs_is_four_for_a_cli_reviewer_one_for_the_builtin_and_the_config_wins():
    from rubricgate.runner.options import CLI_JOBS, default_jobs

    builtin, claude = "builtin", "claude"
    assert CLI_JOBS >= 4
    assert default_jobs(None, [builtin, builtin]) == 1
    assert default_jobs(None, [builtin, claude]) == CLI_JOBS
    assert default_jobs(6, [claude]) == 6 and default_jobs(2, [builtin]) == 2


def test_a_builtin_run_says_which_rules_its_verdicts_leave_out(repo):
    result = cli(repo)
    note = next(line for line in result.output.splitlines() if line.startswith("note: the builtin reviewer judges"))
    assert "10 of 15 rules" in note and "scope-single-purpose" in note


def test_a_run_leaves_the_callers_process_adopting_no_orphans(repo) -> None:
    # The builtin reviewer runs unsandboxed, so the run adopts orphans; left so, the caller's
    # process became the parent of every later orphan of anything it ran: a zombie each, for ever.
    import subprocess
    import time

    from rubricgate.isolation.reaping import adopting_orphans
    from tests.children import children, new_zombies

    assert run(repo).exit_code == 0
    assert not adopting_orphans()
    before = set(children())
    subprocess.run(["sh", "-c", "sleep 0.1 & exit 0"], check=True)  # a tool that leaves a child running
    time.sleep(0.5)  # the orphaned sleep has ended
    assert new_zombies(before) == []
