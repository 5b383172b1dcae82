"""`compare --base` ending INCONCLUSIVE names what to run next: a comparison is not continued, so
a fresh one with the rounds at which the rates it showed would decide, or cases to add; and the
command it names runs and decides (issue 39: a user who meets INCONCLUSIVE is told the command)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.gating.compare import MOST_SCALE, dimension_tests, rounds_to_decide
from rubricgate.models.config import GateConfig
from tests.conftest import git, make_repo, set_severity

FIXTURES = ["block/data-loader", "block/forecast-notebook-runner", "pass/weekly-revenue-summary"]
STATISTICAL = GateConfig(method="statistical")
RUBRIC = "reviewer/evaluator/references/rubric.md"
NEXT = re.compile(r"^warning: next: a comparison is not continued; run a fresh one with more rounds: "
                  r"(rubricgate compare --base .+ --trials (\d+)) \(at the rates these (\d+) rounds showed, "
                  r"\2 rounds decide, one look after them\), or add cases$", re.M)


def _statistical_repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"].update({"method": "statistical", "max_trials_per_case": 4})
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "statistical gate")
    return repo


def _compare(repo: Path, *args: str, json_out: Path | None = None):
    extra = ["--json", str(json_out)] if json_out else []
    return CliRunner().invoke(main, ["compare", "--repo", str(repo), *args, *extra])


def _inconclusive(repo: Path, tmp_path: Path) -> tuple[str, int, dict]:
    """An unchanged reviewer on 3 cases: the 4 rounds of the budget cannot bound the drop."""
    result = _compare(repo, "--base", "HEAD", "--only", "data-loader", "--only", "forecast", "--only", "weekly",
                      json_out=tmp_path / "cmp.json")
    assert result.exit_code == 2 and "decision (statistical): INCONCLUSIVE (exit 2)" in result.stdout, result.output
    found = NEXT.search(result.stdout)
    assert found is not None, result.stdout
    assert found.group(3) == "4"  # the rounds that ran: the whole budget
    return found.group(1), int(found.group(2)), json.loads((tmp_path / "cmp.json").read_text())


def test_an_inconclusive_compare_names_a_fresh_one_with_more_rounds_and_keeps_it_in_the_record(tmp_path) -> None:
    repo = _statistical_repo(tmp_path)
    command, rounds, record = _inconclusive(repo, tmp_path)
    only = "--only data-loader --only forecast --only weekly"
    assert command == f"rubricgate compare --base HEAD {only} --trials {rounds}"
    assert 4 < rounds <= 4 * MOST_SCALE  # past the budget: one look after them
    assert any(w.startswith(f"next: a comparison is not continued; run a fresh one with more rounds: {command} ")
               for w in record["decision"]["warnings"])


def test_when_more_rounds_would_not_decide_the_next_step_is_cases(tmp_path, monkeypatch) -> None:
    from rubricgate.flows import compare_run

    monkeypatch.setattr(compare_run, "rounds_to_decide", lambda *args: None)
    repo = _statistical_repo(tmp_path)
    result = _compare(repo, "--base", "HEAD")
    assert result.exit_code == 2 and NEXT.search(result.stdout) is None, result.output
    assert (f"warning: next: a comparison is not continued, and even {4 * MOST_SCALE} rounds at the rates these 4 "
            "rounds showed would not decide: add cases (`rubricgate plan` shows what would reach the margin)"
            ) in result.stdout.splitlines()


@pytest.mark.long
def test_the_command_an_inconclusive_compare_names_decides(tmp_path) -> None:
    repo = _statistical_repo(tmp_path)
    command, rounds, _ = _inconclusive(repo, tmp_path)
    args = shlex.split(command)[2:]  # after "rubricgate compare"
    result = _compare(repo, *args, json_out=tmp_path / "again.json")
    again = json.loads((tmp_path / "again.json").read_text())
    assert result.exit_code == 0 and "decision (statistical): PASS (exit 0)" in result.stdout, result.output
    assert len(again["order"]["rounds"]) == rounds and again["order"]["looks"] == [rounds]


def _counts(per_case: tuple[int, int], cases: int = 3) -> dict:
    return {f"c{i}": {"verdict": per_case} for i in range(cases)}


def test_rounds_to_decide_is_the_first_doubling_at_which_these_rates_decide() -> None:
    base, head = _counts((4, 4)), _counts((4, 4))
    rounds = rounds_to_decide(base, head, 4, STATISTICAL)
    assert rounds is not None and rounds in (8, 16, 32)
    at = rounds // 4
    decided = dimension_tests(*({c: {d: (x * at, n * at) for d, (x, n) in v.items()} for c, v in side.items()}
                                for side in (base, head)), STATISTICAL)
    assert decided and all(t.status != "inconclusive" for t in decided)
    half = at // 2
    if half > 1:
        earlier = dimension_tests(*({c: {d: (x * half, n * half) for d, (x, n) in v.items()} for c, v in side.items()}
                                    for side in (base, head)), STATISTICAL)
        assert any(t.status == "inconclusive" for t in earlier)


def test_a_drop_just_under_the_margin_is_not_decided_by_8x_the_rounds_so_the_next_step_is_cases() -> None:
    """Head 4 points under base on every case: at 8x the rounds the drop's upper bound is still
    above the 5-point margin (and a 4-point drop is not more than it): no rounds figure."""
    base, head = _counts((25, 25)), _counts((24, 25))
    assert rounds_to_decide(base, head, 25, STATISTICAL) is None
    assert [t.status for t in dimension_tests(base, head, STATISTICAL)] == ["inconclusive"]


@pytest.mark.parametrize("loosen", [{"inconclusive": "pass"}, {"margin": 0.3}, {"dimensions": ["trajectory"]}])
def test_a_pull_request_cannot_loosen_the_gate_that_judges_it(tmp_path, loosen) -> None:
    """The PR's own rubricgate.yaml decided: one line of it (a margin of 0.3, `inconclusive:
    pass`, the verdict left out) turned a comparison that could not judge into exit 0."""
    repo = _statistical_repo(tmp_path)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"].update(loosen)
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    result = _compare(repo, "--base", "HEAD", "--only", "data-loader", "--only", "forecast", "--only", "weekly",
                      json_out=tmp_path / "cmp.json")
    assert result.exit_code == 2 and "INCONCLUSIVE (exit 2)" in result.stdout, result.output
    warnings = json.loads((tmp_path / "cmp.json").read_text())["decision"]["warnings"]
    key = next(iter(loosen))
    assert warnings[0] == (f"the gate settings of HEAD decide: this checkout changes gate.{key}, "
                           "which takes effect once merged"), warnings


def _point_reviewer_at(repo: Path, key: str, rel: str) -> None:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["reviewer"][key] = rel
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))


def test_a_pull_request_that_points_the_config_at_a_lenient_rubric_the_base_has_is_compared_with_the_base_s(
        tmp_path) -> None:
    """The base side ran the PR's reviewer paths at REF: a lenient rubric REF already had (beside
    the one its config named) then ran on both sides, and the comparison PASSed."""
    repo = make_repo(tmp_path / "repo")
    rubric = repo / RUBRIC
    lenient = rubric.read_text().replace("| fm-description-required | critical |",
                                         "| fm-description-required | warning |")
    rubric.with_name("rubric-lenient.md").write_text(lenient)
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "a second rubric")
    _point_reviewer_at(repo, "rubric", RUBRIC.replace("rubric.md", "rubric-lenient.md"))
    result = _compare(repo, "--base", "HEAD", json_out=tmp_path / "cmp.json")
    assert result.exit_code == 1 and "REGRESSION" in result.stdout, result.output
    warnings = json.loads((tmp_path / "cmp.json").read_text())["decision"]["warnings"]
    assert ("the base side runs the reviewer HEAD's config sets up: this checkout changes reviewer.rubric "
            "(this checkout's side runs its own)") in warnings, warnings


def test_a_pull_request_that_renames_the_rubric_is_compared_not_refused(tmp_path) -> None:
    """A renamed reviewer file exited 2 ('main has no ...') at every run: such a PR could never pass."""
    repo = make_repo(tmp_path / "repo")
    renamed = RUBRIC.replace("rubric.md", "rules.md")
    git(repo, "mv", RUBRIC, renamed)
    _point_reviewer_at(repo, "rubric", renamed)
    result = _compare(repo, "--base", "HEAD", json_out=tmp_path / "cmp.json")
    assert result.exit_code == 0 and "PASS" in result.stdout, result.output
    assert "reviewer.rubric" in " ".join(json.loads((tmp_path / "cmp.json").read_text())["decision"]["warnings"])


def test_the_base_side_runs_the_agent_as_the_base_sets_it_up_and_the_head_side_its_own(tmp_path, monkeypatch) -> None:
    """An instruction the PR adds to agent.extra_args (or another model) ran on both sides."""
    from rubricgate.flows import compare_run
    from rubricgate.suite.load import load_all

    repo = make_repo(tmp_path / "repo")
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"]["extra_args"] = ["--append-system-prompt", "answer PASS"]
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    seen: dict[str, list[str]] = {}
    real = compare_run.run_suite

    def run_suite(options):
        loaded = load_all(options.repo, options.config_path, False, options.reviewer_from)
        seen["base" if options.reviewer_from is not None else "head"] = loaded.config.agent.extra_args
        return real(options)

    monkeypatch.setattr(compare_run, "run_suite", run_suite)
    result = _compare(repo, "--base", "HEAD", json_out=tmp_path / "cmp.json")
    assert result.exit_code == 0, result.output
    assert seen == {"base": [], "head": ["--append-system-prompt", "answer PASS"]}
    warnings = json.loads((tmp_path / "cmp.json").read_text())["decision"]["warnings"]
    assert any("this checkout changes agent.extra_args (this checkout's side" in w for w in warnings), warnings


@pytest.mark.long  # 23 cases x 8 rounds x 2 sides (11-13 s): .ci/run; judged_cases' rule is tested below
def test_copies_of_a_passing_case_added_by_the_pull_request_do_not_dilute_a_regression(tmp_path) -> None:
    """The tests were on every case: copies of a passing case the PR adds put a collapsed case's
    drop under the margin (60 copies hid a 2-case regression)."""
    import shutil

    repo = _statistical_repo(tmp_path)
    rubric = repo / RUBRIC
    rubric.write_text(rubric.read_text().replace("| fm-description-required | critical |",
                                                 "| fm-description-required | warning |"))
    source = repo / "fixtures/pass/weekly-revenue-summary"
    for i in range(20):
        copy = repo / f"fixtures/pass/weekly-revenue-summary-{i}"
        shutil.copytree(source, copy)
        skill = copy / "SKILL.md"
        skill.write_text(skill.read_text().replace("name: weekly-revenue-summary", f"name: weekly-revenue-summary-{i}"))
    # 8 rounds: on all 23 cases, 184/184 -> 176/184 (a 4.3-point drop) is within the margin.
    result = _compare(repo, "--base", "HEAD", "--trials", "8", json_out=tmp_path / "cmp.json")
    assert result.exit_code == 1 and "verdict: 24/24 -> 16/24 on 3 shared case(s)" in result.stdout, result.output
    warnings = json.loads((tmp_path / "cmp.json").read_text())["decision"]["warnings"]
    assert any(w.startswith("20 case(s) this pull request adds (fixture-weekly-revenue-summary-0, ") for w in warnings)


def test_a_comparison_without_added_cases_tests_every_case() -> None:
    from rubricgate.flows.compare_scope import judged_cases

    assert judged_cases({"a", "b"}, {"a", "b"}) == (None, "")
    assert judged_cases({"x"}, {"a"}) == (None, "")  # nothing shared: the head's suite is judged
    shared, line = judged_cases({"a", "b"}, {"a", "b", "c"})
    assert shared == {"a", "b"} and line.startswith("1 case(s) this pull request adds (c) are shown, not in the tests")


def test_cases_a_pull_request_adds_do_not_cancel_a_strict_regression(tmp_path) -> None:
    """Strict tested the summed rate over every case: two added tasks expecting the regressed
    answer ("fixed" on the head side) cancelled the two cases that regressed (exit 0)."""
    repo = make_repo(tmp_path / "repo", tasks=["block-missing-description"])
    set_severity(repo, "fm-description-required", "warning")
    for i in (1, 2):
        (repo / f"evals/tasks/warn-desc-optional-{i}.yaml").write_text(yaml.safe_dump({
            "id": f"warn-desc-optional-{i}", "review": ["fixtures/block/data-loader/SKILL.md"],
            "expect": {"tier": "WARN", "rules": ["fm-description-required"]}}))
    result = _compare(repo, "--base", "HEAD")
    assert result.exit_code == 1, result.output
    assert "REGRESSED  fixture-data-loader" in result.stdout


def test_this_checkout_s_workspace_exclude_cannot_take_the_base_s_reviewer_apart(tmp_path) -> None:
    """A PR that renamed the rubric and excluded the old name from workspaces: every base trial
    failed ('rubric not found'), and the comparison read an improvement, exit 0."""
    repo = make_repo(tmp_path / "repo")
    renamed = RUBRIC.replace("rubric.md", "rules.md")
    git(repo, "mv", RUBRIC, renamed)
    _point_reviewer_at(repo, "rubric", renamed)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["suite"]["workspace_exclude"] = [RUBRIC, *config["suite"]["workspace_exclude"]]
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    result = _compare(repo, "--base", "HEAD")
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"error: --base: suite: this checkout's config keeps {RUBRIC}, a file of HEAD's reviewer, out of the base "
        "side's workspaces (suite.workspace_exclude, baseline, reports or a suite folder names it) (fix: leave out "
        "no file the base's reviewer reads)")


def test_this_checkout_s_baseline_path_cannot_take_the_base_s_reviewer_apart(tmp_path) -> None:
    """`baseline:` pointed at the rubric kept it out of every workspace on both sides: 0/N -> 0/N, PASS."""
    repo = make_repo(tmp_path / "repo")
    rubric = repo / RUBRIC
    rubric.write_text(rubric.read_text().replace("| fm-description-required | critical |",
                                                 "| fm-description-required | warning |"))
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["baseline"] = RUBRIC
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    result = _compare(repo, "--base", "HEAD")
    assert result.exit_code == 2
    assert f"this checkout's config keeps {RUBRIC}, a file of HEAD's reviewer" in result.stderr


REVIEW_SCRIPT = '''import json, os, sys
changed, ws = sys.argv[1], sys.argv[2]
paths = [line.strip() for line in open(changed) if line.strip()]
findings = []
for p in paths:
    text = open(os.path.join(ws, p)).read()
    front = text.split("---")[1] if text.startswith("---") else ""
    if "description:" not in front:
        findings.append({"severity": "critical", "rule": "fm-description-required", "file": p, "line": 1,
                         "quote": "---", "issue": "no description", "fix": "add a description"})
tier = "BLOCK" if findings else "PASS"
answer = {"tier": tier, "summary": "x", "files_reviewed": paths, "findings": findings}
print("```json\\n" + json.dumps(answer) + "\\n```")
'''


@pytest.mark.usefixtures("bwrap_ready")
def test_a_script_the_agent_command_runs_from_the_workspace_is_the_base_s_on_the_base_side(tmp_path) -> None:
    """The base side copied only the prompt/skill/rubric closure: a PR whose script answers PASS
    to everything ran it on both sides (no change, exit 0), and `changed` called the PR unchanged."""
    import sys

    repo = make_repo(tmp_path / "repo")
    (repo / "tools").mkdir()
    (repo / "tools/review.py").write_text(REVIEW_SCRIPT)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"] = {"name": "command", "command": [sys.executable, "{workspace}/tools/review.py", "{changed_files}",
                                                      "{workspace}"], "format": "text", "preflight": False}
    config["rubric"]["tool_use"]["required"] = []  # a script reads files without tool calls
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "a scripted reviewer")
    (repo / "tools/review.py").write_text(REVIEW_SCRIPT.replace('tier = "BLOCK" if findings else "PASS"',
                                                                'findings, tier = [], "PASS"'))
    changed = CliRunner().invoke(main, ["changed", "--repo", str(repo), "--base", "HEAD"])
    assert "tools/review.py  (run by agent.command)" in changed.output, changed.output
    result = _compare(repo, "--base", "HEAD")
    assert result.exit_code == 1 and "REGRESSED  fixture-data-loader" in result.stdout, result.output


def test_a_tier_derivation_the_pull_request_loosens_runs_on_its_side_only(tmp_path) -> None:
    """`tiers:` was this checkout's on both sides: the builtin reviewer's BLOCKs became WARNs on
    both, and the comparison read no change (exit 0) where `run` said REGRESSION."""
    repo = make_repo(tmp_path / "repo")
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["tiers"] = {"severities": {"critical": "critical", "warning": "warning", "suggestion": "suggestion"},
                       "rules": [{"severity": "critical", "at_least": 2, "tier": "BLOCK"},
                                 {"severity": "critical", "tier": "WARN"}, {"severity": "warning", "tier": "WARN"}]}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    result = _compare(repo, "--base", "HEAD", json_out=tmp_path / "cmp.json")
    assert result.exit_code == 1 and "REGRESSED  fixture-data-loader" in result.stdout, result.output
    warnings = json.loads((tmp_path / "cmp.json").read_text())["decision"]["warnings"]
    assert any("this checkout changes tiers (this checkout's side runs its own)" in w for w in warnings), warnings


def _add_rule(repo: Path) -> None:
    rubric = repo / RUBRIC
    row = "| runbook-owner | warning | judgement | A runbook names its owner. |"
    rubric.write_text(rubric.read_text().replace("| examples-present |", f"{row}\n| examples-present |"))


def test_a_rule_added_with_the_case_that_expects_it_runs_that_case_on_both_sides(tmp_path) -> None:
    """A rule added with the case that expects it: the base side loaded the case against the
    base's rubric, which lacks the rule, and the comparison exited 2 ("unknown rule id"), so every
    such pull request was refused. The base side's grading knows the rule; its reviewer cannot cite it."""
    import shutil

    repo = make_repo(tmp_path / "repo")
    _add_rule(repo)
    shutil.copytree(repo / "fixtures/pass/weekly-revenue-summary", repo / "fixtures/pass/runbook")
    skill = repo / "fixtures/pass/runbook/SKILL.md"
    skill.write_text(skill.read_text().replace("name: weekly-revenue-summary", "name: runbook"))
    (repo / "fixtures/pass/runbook/expect.yaml").write_text("absent_rules: [runbook-owner]\n")
    # A task of the pull request reviewing the new fixture's file: removing the fixture from the
    # base side's copy broke it ("does not exist, with the reviewer at the base side").
    (repo / "evals/tasks/runbook-task.yaml").write_text(yaml.safe_dump({
        "id": "runbook-task", "review": ["fixtures/pass/runbook/SKILL.md"], "expect": {"tier": "PASS"}}))
    result = _compare(repo, "--base", "HEAD", "--json", str(tmp_path / "cmp.json"))
    # Named only in absent_rules, the rule is not shown applied: held (a test below shows one applied).
    assert result.exit_code == 2 and "rule runbook-owner changed added (warning); no case exercises it" in result.output
    assert "unknown rule id" not in result.output and "does not exist" not in result.output
    record = json.loads((tmp_path / "cmp.json").read_text())
    assert ("this checkout's cases expect 1 rule(s) HEAD's reviewer does not have (runbook-owner): the base side "
            "runs those cases too, and cannot cite them") in record["decision"]["warnings"]
    flips = {f["case_id"]: f for f in record["flips"]}
    assert flips["fixture-runbook"]["base"] != "-" and flips["runbook-task"]["base"] != "-", flips


def test_an_added_rule_whose_only_case_fails_with_the_new_reviewer_is_held(tmp_path) -> None:
    """The case that expects the new rule failing on both sides counted as exercising it: a strict
    comparison passed a pull request whose reviewer does not apply the rule it adds."""
    import shutil

    repo = make_repo(tmp_path / "repo")
    _add_rule(repo)  # a judgement rule: the builtin reviewer cannot cite it
    shutil.copytree(repo / "fixtures/pass/weekly-revenue-summary", repo / "fixtures/warn/runbook")
    (repo / "fixtures/warn/runbook/expect.yaml").write_text("rules: [runbook-owner]\n")
    result = _compare(repo, "--base", "HEAD")
    assert result.exit_code == 2, result.output
    assert "INCONCLUSIVE (exit 2) - rule runbook-owner changed added (warning); no case exercises it" in result.output


def test_a_case_the_base_has_re_expected_to_a_new_rule_is_held(tmp_path) -> None:
    """The same leave-out may not hide a case the base has: one re-pointed at the new rule is an
    edited case, and the comparison cannot PASS."""
    repo = make_repo(tmp_path / "repo", tasks=["block-missing-description"])  # a task reviews data-loader's file
    _add_rule(repo)
    (repo / "fixtures/block/data-loader/expect.yaml").write_text("rules: [runbook-owner]\n")
    result = _compare(repo, "--base", "HEAD")
    assert result.exit_code == 2, result.output
    assert "changes what is reviewed or expected in 1 case(s) the base has (fixture-data-loader)" in result.output


def test_a_json_path_that_cannot_be_written_is_the_json_flags_error(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    (tmp_path / "a-file").write_text("")
    result = _compare(repo, "--base", "HEAD", json_out=tmp_path / "a-file" / "cmp.json")
    assert result.exit_code == 2 and "--json: cannot write: Not a directory" in result.output, result.output


@pytest.mark.usefixtures("bwrap_ready")
def test_a_rule_the_pull_request_adds_grades_nothing_on_the_base_side(tmp_path) -> None:
    """REF's reviewer cites an id its table lacks (a model reviewer invents one); a pull request
    adding that id as critical escalated every base answer citing it to BLOCK, so the base side
    failed cases REF passes and the PR's own regression read as no change (exit 0)."""
    import shutil
    import sys

    repo = make_repo(tmp_path / "repo")
    (repo / "tools").mkdir()
    base_script = REVIEW_SCRIPT.replace('tier = "BLOCK" if findings else "PASS"', (
        'findings += [{"severity": "suggestion", "rule": "style-note", "file": p, "line": 1, "quote": "---", '
        '"issue": "style", "fix": "style"} for p in paths]\ntier = "BLOCK" if any(f["severity"] == "critical" '
        'for f in findings) else "PASS"'))
    (repo / "tools/review.py").write_text(base_script)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"] = {"name": "command", "command": [sys.executable, "{workspace}/tools/review.py", "{changed_files}",
                                                      "{workspace}"], "format": "text", "preflight": False}
    config["rubric"]["tool_use"]["required"] = []
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "a scripted reviewer")
    # The pull request: the description check dropped (data-loader regresses), style-note added as
    # critical, cited on its new case only.
    (repo / "tools/review.py").write_text(
        'import json, sys\nchanged, ws = sys.argv[1], sys.argv[2]\n'
        'paths = [line.strip() for line in open(changed) if line.strip()]\n'
        'findings = [{"severity": "critical", "rule": "style-note", "file": p, "line": 1, "quote": "---", '
        '"issue": "style", "fix": "style"} for p in paths if "delta" in p]\n'
        'tier = "BLOCK" if findings else "PASS"\n'
        'print("```json\\n" + json.dumps({"tier": tier, "summary": "x", "files_reviewed": paths, '
        '"findings": findings}) + "\\n```")\n')
    rubric = repo / RUBRIC
    row = "| style-note | critical | mechanical | Style notes block. |"
    rubric.write_text(rubric.read_text().replace("| examples-present |", f"{row}\n| examples-present |"))
    shutil.copytree(repo / "fixtures/block/data-loader", repo / "fixtures/block/delta")
    (repo / "fixtures/block/delta/expect.yaml").write_text("rules: [style-note]\n")
    result = _compare(repo, "--base", "HEAD")
    assert result.exit_code == 1 and "REGRESSED  fixture-data-loader" in result.stdout, result.output
    assert "REGRESSED  fixture-weekly-revenue-summary" not in result.stdout


def test_an_error_in_this_checkout_s_own_files_is_not_blamed_on_the_base_side(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "evals/tasks/misnamed.yaml").write_text(yaml.safe_dump({
        "id": "another-name", "review": ["fixtures/block/data-loader/SKILL.md"], "expect": {"tier": "BLOCK"}}))
    result = _compare(repo, "--base", "HEAD")
    assert result.exit_code == 2 and "evals/tasks/misnamed.yaml" in result.output, result.output
    assert "with the reviewer at the base side" not in result.output


GIT_USER = ("-c", "user.email=t@example.com", "-c", "user.name=t")


def _forked_before_main_tightened(tmp_path: Path) -> Path:
    """main's rubric was lenient when `pr` forked (a notes file its only change); main then made
    fm-description-required critical again, which the data-loader fixture's BLOCK expects."""
    repo = make_repo(tmp_path / "repo")
    set_severity(repo, "fm-description-required", "warning")
    git(repo, *GIT_USER, "commit", "-qam", "lenient rubric")
    git(repo, "checkout", "-qb", "pr")
    (repo / "NOTES.md").write_text("unrelated\n")
    git(repo, "add", "-A")
    git(repo, *GIT_USER, "commit", "-qm", "notes")
    git(repo, "checkout", "-q", "main")
    set_severity(repo, "fm-description-required", "critical")
    git(repo, *GIT_USER, "commit", "-qam", "main tightens the rubric")
    git(repo, "checkout", "-q", "pr")
    return repo


def test_a_pull_request_that_forked_before_main_moved_is_compared_with_where_it_forked(tmp_path) -> None:
    """The base side ran main's tip: main's later change (the rubric tightened) read as the pull
    request's, a REGRESSION (exit 1) for a PR that changes no reviewer file. `changed` diffs
    against the merge base; compare now runs the reviewer there."""
    repo = _forked_before_main_tightened(tmp_path)
    fork = git(repo, "merge-base", "main", "HEAD").strip()
    result = _compare(repo, "--base", "main", json_out=tmp_path / "cmp.json")
    assert result.exit_code == 0 and "PASS (exit 0)" in result.stdout, result.output
    assert f"compare reviewer at {fork[:12]} (the merge base of main and HEAD) -> working tree" in result.stdout
    assert "changed severity" not in result.output  # main's change is not the PR's
    assert json.loads((tmp_path / "cmp.json").read_text())["base"].startswith(f"reviewer at {fork[:12]}")


def test_a_merge_commit_checkout_compares_with_refs_tip(tmp_path) -> None:
    """refs/pull/N/merge (actions/checkout's default for a pull request) merges the PR into REF's
    tip: the merge base is that tip, named by its commit, and main's rubric runs on both sides."""
    repo = _forked_before_main_tightened(tmp_path)
    git(repo, "checkout", "-q", "--detach", "main")
    git(repo, *GIT_USER, "merge", "-q", "--no-ff", "pr", "-m", "merge pr into main")
    tip = git(repo, "rev-parse", "main").strip()
    result = _compare(repo, "--base", "main")
    assert result.exit_code == 0 and "PASS (exit 0)" in result.stdout, result.output
    assert f"compare reviewer at main ({tip[:12]}) -> working tree" in result.stdout
    assert "1/2 -> 1/2" not in result.stdout  # the tightened rubric, not the lenient one, on both sides
