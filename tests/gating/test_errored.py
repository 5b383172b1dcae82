"""An outage is not a regression: infrastructure failures are retried, then `errored`, exit 2."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from tests.fake_reviewer import install, invocations


def _run(repo, *args):
    return CliRunner().invoke(main, ["run", "--repo", str(repo), *args])


def _summary(repo) -> dict:
    [run_dir] = [p for p in (repo / "reports").iterdir() if p.is_dir()]
    return json.loads((run_dir / "summary.json").read_text())


def _run_dir(repo):
    return next(p for p in (repo / "reports").iterdir() if p.is_dir())


def test_api_outage_is_could_not_judge_never_regression(repo) -> None:
    counter = install(repo, ["api_error"])
    result = _run(repo)
    assert result.exit_code == 2, result.output
    assert "could not judge: 2 of 2 trials errored" in result.output
    assert "REGRESSION" not in result.output and "missing_tool" not in result.output
    decision = next(line for line in result.output.splitlines() if line.startswith("decision:"))
    assert decision == ("decision: COULD NOT JUDGE (exit 2) - could not judge: 2 of 2 trials errored "
                        "(infrastructure; gate.max_errored is 0)"), decision  # no test of cases with no judged trial
    assert invocations(counter) == 6  # 2 trials x (1 + agent.retries=2)
    summary = _summary(repo)
    trials = [t for c in summary["cases"] for t in c["trials"]]
    assert all(t["errored"] and len(t["attempts"]) == 3 for t in trials)
    assert all(g["category"] == "errored" for t in trials for g in t["grades"].values())
    assert all(row["trials"] == 0 for row in summary["rates"].values())
    assert len(summary["errored"]) == 2 and "API 400" in summary["errored"][0]
    run_dir = _run_dir(repo)
    for report in ("comment.md", "junit.xml", "report.html"):
        assert "errored" in (run_dir / report).read_text(), report
    assert "<error" in (run_dir / "junit.xml").read_text()


def test_a_transient_outage_is_retried_and_then_judged(repo) -> None:
    counter = install(repo, ["api_error", "answer"])
    result = _run(repo)
    assert result.exit_code == 0, result.output
    assert invocations(counter) == 3
    attempts = [len(t["attempts"]) for c in _summary(repo)["cases"] for t in c["trials"]]
    assert sorted(attempts) == [0, 2]  # a single clean attempt is not repeated in the summary


def test_a_crash_before_the_first_turn_is_infra(repo) -> None:
    install(repo, ["crash"], retries=0)
    result = _run(repo)
    assert result.exit_code == 2 and "2 of 2 trials errored" in result.output, result.output


def test_a_silent_agent_is_stopped_at_the_idle_timeout_as_infra_never_a_reviewer_timeout(repo) -> None:
    install(repo, ["silent"], retries=0, timeout_s=600, idle_timeout_s=0.5)
    result = _run(repo)
    assert result.exit_code == 2 and "2 of 2 trials errored" in result.output, result.output
    assert "REGRESSION" not in result.output
    trials = [t for c in _summary(repo)["cases"] for t in c["trials"]]
    assert all(t["errored"] for t in trials)
    assert all(g["category"] == "errored" for t in trials for g in t["grades"].values())
    [attempt] = trials[0]["attempts"]
    assert attempt["infra"] and attempt["termination"] != "timeout"
    assert "idle_timeout" in attempt["error"] and "agent.idle_timeout_s" in attempt["error"], attempt


def test_errored_within_max_errored_is_left_out_of_the_rates_but_can_never_make_a_pass(repo) -> None:
    """Within gate.max_errored the errored trial is left out of every rate, and the decision must
    hold with it counted as a failure: here it could hide a drop, so the run cannot pass."""
    install(repo, ["api_error", "answer"], retries=0)
    cfg = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    cfg["gate"]["max_errored"] = 1
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(cfg))
    result = _run(repo)
    assert result.exit_code == 2, result.output
    summary = _summary(repo)
    assert summary["rates"]["verdict"]["trials"] == 1 and summary["rates"]["verdict"]["rate"] == 1.0
    assert "1 of 2 trials errored" in " ".join(summary["decision"]["warnings"])
    assert "errored trial(s) could hide a drop" in " ".join(summary["decision"]["reasons"])
    assert "errored (infrastructure" in result.output


def test_a_run_error_after_a_verdict_is_graded_and_visible_in_every_report(repo, tmp_path) -> None:
    from tests.fake_reviewer import CLAUDE

    stream = tmp_path / "max_turns_after_verdict.ndjson"  # a real recording: verdict, then the turn limit
    stream.write_bytes((CLAUDE / "max_turns_after_verdict.ndjson").read_bytes())
    cfg = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    cfg["agent"] = {"name": "command", "format": "claude", "sandbox": "none",
                    "command": ["sh", "-c", f"cat {stream}; exit 1"]}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(cfg))
    result = _run(repo)
    trials = [t for c in _summary(repo)["cases"] for t in c["trials"]]
    assert all(t["run_error"] and not t["errored"] for t in trials), result.output
    assert all(t["grades"]["verdict"]["category"] != "errored" for t in trials)
    assert "run errors after a graded verdict" in result.output
    run_dir = _run_dir(repo)
    for report in ("comment.md", "junit.xml", "report.html"):
        assert "run error after" in (run_dir / report).read_text().lower().replace("errors after", "error after"), report


def test_an_answer_cut_by_the_output_cap_says_so_beside_its_grade_in_every_report(repo) -> None:
    cfg = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    cfg["agent"] = {"name": "command", "format": "text", "sandbox": "none", "output_cap_bytes": 4096,
                    "command": ["sh", "-c", "printf 'verdict: PASS\\nfindings: []\\n'; head -c 200000 /dev/zero | tr '\\0' x"]}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(cfg))
    result = _run(repo)
    trials = [t for c in _summary(repo)["cases"] for t in c["trials"]]
    assert all("output exceeded the cap" in t["run_error"] and not t["errored"] for t in trials), result.output
    assert "run errors after a graded verdict" in result.output and "raise agent.output_cap_bytes" in result.output
    run_dir = _run_dir(repo)
    for report in ("comment.md", "junit.xml", "report.html"):
        assert "output exceeded the cap" in (run_dir / report).read_text(), report
