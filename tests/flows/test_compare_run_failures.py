"""`compare --base` when its trials do not give an answer: an interrupt (Ctrl-C, SIGTERM) starts no
further side, round or trial and says what had run; trials that all errored are counted over every
round, and a case with no judged trial on a side is `unjudged`, never `unchanged`."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import compare_cmd, main
from tests.conftest import git, make_repo
from tests.faults.helpers import fake_repo

FIXTURES = ["block/data-loader", "block/forecast-notebook-runner", "pass/weekly-revenue-summary"]


def _compare(repo: Path, *args: str):
    return CliRunner().invoke(main, ["compare", "--repo", str(repo), "--base", "HEAD", *args])


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, sig: int, results: int) -> list[tuple[str, str]]:
    """Every run's progress gets a listener that records (run label, event) and, at the
    `results`-th trial result of the whole comparison, sends `sig` to this process: the interrupt
    lands in the main thread as a real one does, at a known point of the comparison."""
    seen: list[tuple[str, str]] = []

    def listeners(label: str | None = None) -> list:
        def listen(event: dict) -> None:
            seen.append((label or "", event["event"]))
            if event["event"] == "trial_result" and sum(e == "trial_result" for _, e in seen) == results:
                os.kill(os.getpid(), sig)

        return [listen]

    monkeypatch.setattr(compare_cmd, "_listeners", listeners)
    return seen


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_during_the_first_side_starts_nothing_more_and_says_what_ran(tmp_path, monkeypatch, sig) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    seen = _interrupt_after(monkeypatch, sig, results=1)
    result = _compare(repo, "--json", str(tmp_path / "cmp.json"))
    assert result.exit_code == 2, result.output
    head = git(repo, "rev-parse", "HEAD").strip()[:12]
    assert {label for label, _ in seen} == {f"reviewer at HEAD ({head})"}, seen  # the head side never started
    ran = sum(e == "trial_result" for _, e in seen)
    line = result.stdout.splitlines()[-1]
    assert line.startswith("decision (strict): ") and line.endswith(
        f" (exit 2) - comparison interrupted during the base side: {ran} of 3 base trials and 0 of 3 head trials "
        "ran; nothing is decided"), result.stdout
    headline = result.stdout.splitlines()[0]
    assert headline.endswith(": 0 regressed, 0 fixed, 0 unchanged, 3 unjudged"), headline
    record = json.loads((tmp_path / "cmp.json").read_text())
    assert record["decision"]["status"] == "error" and record["tests"] == []
    assert {f["kind"] for f in record["flips"]} == {"unjudged"}
    never = [f for f in record["flips"] if f["base"] == "0/0"]  # the base trials the interrupt left unrun
    assert len(never) == 3 - ran and all(f["reasons"] == ["base: never ran", "head: never ran"]
                                         for f in never)


def test_an_interrupt_in_a_later_round_starts_no_further_round(tmp_path, monkeypatch) -> None:
    """3 rounds of 3 cases a side: interrupted at the 11th result, in round 2's second side."""
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    seen = _interrupt_after(monkeypatch, signal.SIGINT, results=11)
    result = _compare(repo, "--trials", "3", "--seed", "7")
    assert result.exit_code == 2, result.output
    labels = list(dict.fromkeys(label for label, _ in seen))
    assert len(labels) == 4 and all("round 3/3" not in label for label in labels), labels
    side = "base" if labels[-1].startswith("reviewer at HEAD") else "head"
    assert re.search(rf"- comparison interrupted during the {side} side, round 2 of 3: \d+ of 9 base trials and "
                     rf"\d+ of 9 head trials ran; nothing is decided$", result.stdout), result.stdout


@pytest.mark.parametrize(("side", "base_ran"), [("reviewer at HEAD", 0), ("working tree", 3)])
def test_an_interrupt_between_runs_stops_the_comparison_there(tmp_path, monkeypatch, side, base_ran) -> None:
    """Ctrl-C as a side's run is being set up (outside any run's trials; for the base side before
    any run folder exists): that side does not run, and the comparison is still recorded."""
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)

    def listeners(label: str | None = None) -> list:
        if label and label.startswith(side):  # the base side's label names its commit too
            os.kill(os.getpid(), signal.SIGINT)
        return []

    monkeypatch.setattr(compare_cmd, "_listeners", listeners)
    result = _compare(repo)
    assert result.exit_code == 2, result.output
    which = "base" if side.startswith("reviewer") else "head"
    what = f": {base_ran} of 3 base trials and 0 of 3 head trials ran" if base_ran else ", before any trial ran"
    line = f"comparison interrupted during the {which} side{what}; nothing is decided"
    assert result.stdout.splitlines()[-1].endswith(line), result.stdout
    folder = next((repo / "reports").glob("compare-*"))
    record = json.loads((folder / "comparison.json").read_text())
    assert record["decision"]["status"] == "error" and not (folder / "head").exists()


def test_a_compare_whose_trials_all_errored_counts_every_round_and_judges_no_case(tmp_path) -> None:
    """An agent that exits 1 with no output on every trial (a dead endpoint): 2 cases x 3 rounds
    a side, every one errored. Nothing was judged, so no case is unchanged."""
    repo = fake_repo(tmp_path, {"*": {"tier": "PASS", "rules": [], "hide": "exit_1_silent"}})
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"].update({"retries": 0, "retry_backoff_s": 0})
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "no retries")
    result = _compare(repo, "--trials", "3", "--only", "data-loader", "--only", "weekly")
    assert result.exit_code == 2, result.output
    assert result.stdout.splitlines()[0].endswith(": 0 regressed, 0 fixed, 0 unchanged, 2 unjudged"), result.stdout
    decision = result.stdout.splitlines()[-1]
    assert re.search(r"base run \S+: 6 trial\(s\) errored \(infrastructure\)", decision), decision
    assert re.search(r"head run \S+: 6 trial\(s\) errored \(infrastructure\)", decision), decision
    # both cases unjudged for the same reasons: one line names them
    assert re.search(r"UNJUDGED   2 cases \(fixture-\S+, fixture-\S+\)  0/0 -> 0/0\n"
                     r"      base: no judged trial \(3 errored\)\n      head: no judged trial \(3 errored\)\n",
                     result.stdout), result.stdout


def test_max_cost_is_one_budget_for_the_whole_comparison(tmp_path, monkeypatch) -> None:
    """Every side and round used to get the whole --max-cost: a comparison could spend 2 x rounds
    times it. At $0.01 a trial, $0.045 buys five trials of the comparison, then nothing starts."""
    from rubricgate.agents.builtin import BuiltinAgent
    from rubricgate.models.transcript import Usage

    class PricedAgent(BuiltinAgent):
        def run(self, request):  # type: ignore[no-untyped-def]
            result = super().run(request)
            return result.model_copy(update={"usage": Usage(input_tokens=1, output_tokens=1, cost_usd=0.01)})

    monkeypatch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: PricedAgent(cfg))
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    result = _compare(repo, "--trials", "3", "--jobs", "1", "--max-cost", "0.045")
    assert result.exit_code == 2, result.output
    folder = next((repo / "reports").glob("compare-*"))
    summaries = [json.loads(p.read_text()) for p in folder.glob("*/*/summary.json")]
    ran = [t for s in summaries for c in s["cases"] for t in c["trials"]
           if not any(g["category"] == "not_run" for g in t["grades"].values())]
    assert 5 <= len(ran) <= 6, len(ran)  # of the 18 planned (3 cases x 3 rounds x 2 sides)
