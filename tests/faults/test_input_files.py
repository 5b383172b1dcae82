"""Issue 37, LOW list: input files and flags that were accepted, or ended in an internal error.

Each is now the one-line error (file, field, fix) with exit 2: a baseline naming a case the suite
does not have; a rubric, prompt or task that is not UTF-8; a config nested 100,000 levels deep
(libyaml's composer recursed until the interpreter crashed) or whose aliases expand to a billion
values; `plan --target nan` and `run --max-cost nan`; `coverage --suggest` through a link or into
the reviewer's folders; `view --build` into the folder of runs it shows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import make_repo

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", fixtures=FIXTURES, commit=False)


def _one_error(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    lines = [line for line in result.output.strip().splitlines() if line.startswith(("error:", "Error:"))]
    assert len(lines) == 1, result.output
    return lines[0]


def _validate(repo: Path) -> str:
    return _one_error("validate", "--repo", str(repo))


def test_a_baseline_naming_a_case_the_suite_does_not_have_is_refused(repo: Path) -> None:
    baseline = json.loads((repo / "baseline.json").read_text())
    baseline["cases"]["fixture-data-loadr"] = baseline["cases"]["fixture-data-loader"]
    (repo / "baseline.json").write_text(json.dumps(baseline))
    line = _validate(repo)
    assert "baseline.json: cases.fixture-data-loadr:" in line and "did you mean 'fixture-data-loader'" in line
    assert "rubricgate baseline update" in line
    assert "cases.fixture-data-loadr" in _one_error("run", "--repo", str(repo))


def test_a_key_twice_inside_a_baseline_case_is_refused(repo: Path) -> None:
    text = (repo / "baseline.json").read_text()
    case = '"fixture-data-loader": {"verdict": {"passes": 0, "trials": 1}, "tool_use": {"passes": 1, "trials": 1}, ' \
           '"trajectory": {"passes": 1, "trials": 1}}, '
    (repo / "baseline.json").write_text(text.replace('"cases": {', '"cases": {' + case, 1))
    assert "'fixture-data-loader' is given twice" in _validate(repo)


@pytest.mark.parametrize("rel", ["reviewer/evaluator/references/rubric.md", "reviewer/prompts/evaluate.md",
                                 "fixtures/block/data-loader/expect.yaml", "rubricgate.yaml"])
def test_a_file_that_is_not_utf8_is_an_input_error_naming_it(repo: Path, rel: str) -> None:
    path = repo / rel
    path.write_bytes((path.read_bytes() if path.is_file() else b"tier: BLOCK\n") + b"\n# \xff\xfe\n")
    line = _validate(repo)
    assert rel in line and "not UTF-8 text" in line and "save the file as UTF-8" in line


def test_a_config_nested_100000_levels_deep_is_an_input_error_not_a_crash(repo: Path) -> None:
    config = (repo / "rubricgate.yaml").read_text()
    (repo / "rubricgate.yaml").write_text(config + "\nextra: " + "[" * 100_000 + "]" * 100_000 + "\n")
    # In a child process: on the old code this killed the interpreter (SIGSEGV), not the test.
    done = subprocess.run([sys.executable, "-m", "rubricgate", "validate", "--repo", str(repo)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert "rubricgate.yaml: (top level): nested deeper than 64 levels" in done.stderr


def test_a_task_whose_aliases_expand_to_a_billion_values_is_refused(repo: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    (repo / "evals" / "tasks").mkdir(parents=True, exist_ok=True)
    (repo / "evals" / "tasks" / "bomb.yaml").write_text("\n".join(lines) + "\n")
    line = _validate(repo)
    assert "bomb.yaml" in line and "expand to more than" in line


def test_a_reviewed_skill_nested_deep_is_a_finding_of_the_builtin_reviewer(repo: Path) -> None:
    skill = repo / "fixtures" / "block" / "data-loader" / "SKILL.md"
    skill.write_text("---\nname: " + "[" * 5000 + "]" * 5000 + "\n---\nbody\n")
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert "internal error" not in result.output and "adapter raised" not in result.output, result.output
    summary = json.loads(next((repo / "reports").glob("*/summary.json")).read_text())
    trial = next(c for c in summary["cases"] if c["id"] == "fixture-data-loader")["trials"][0]
    assert trial["termination"] == "completed" and trial["effective_tier"] == "BLOCK"


@pytest.mark.parametrize("args", [["plan", "--target", "nan"], ["run", "--max-cost", "nan"],
                                  ["run", "--max-cost", "inf"], ["mutate", "--min-score", "nan"]])
def test_a_flag_that_is_not_a_finite_number_is_refused(repo: Path, args: list[str]) -> None:
    assert "is not a finite number" in _one_error(*args, "--repo", str(repo))


def test_coverage_suggest_never_writes_through_a_link(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / "suggested").symlink_to(elsewhere)
    for out in ("suggested", "suggested/more"):
        assert "is a link" in _one_error("coverage", "--repo", str(repo), "--suggest", str(repo / out))
    assert list(elsewhere.iterdir()) == []
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "block").symlink_to(elsewhere)
    assert "is a link" in _one_error("coverage", "--repo", str(repo), "--suggest", str(tmp_path / "plain"))
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("out", ["reviewer/suggested", "reviewer/prompts/x", "reviewer"])
def test_coverage_suggest_never_writes_into_the_reviewer(repo: Path, out: str) -> None:
    line = _one_error("coverage", "--repo", str(repo), "--suggest", str(repo / out))
    assert "inside the suite or the reviewer" in line
    assert not (repo / out / "block").exists()


def test_view_build_never_writes_into_the_folder_of_runs_it_shows(repo: Path, tmp_path: Path) -> None:
    assert CliRunner().invoke(main, ["run", "--repo", str(repo)]).exit_code == 0
    [run] = list((repo / "reports").iterdir())
    for args in (["--repo", str(repo), "--build", str(repo / "reports" / "site")],
                 [str(run), "--build", str(repo / "reports" / "site")],
                 [str(repo / "reports"), "--build", str(run / "site")]):
        assert "overlaps the folder of runs it shows" in _one_error("view", *args)
    assert sorted(p.name for p in (repo / "reports").iterdir()) == [run.name] and not (run / "site").exists()
    good = CliRunner().invoke(main, ["view", "--repo", str(repo), "--build", str(tmp_path / "site")])
    assert good.exit_code == 0, good.output


def test_a_config_key_alias_of_a_mapping_is_an_input_error(repo: Path) -> None:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config) + "? [a, b]\n: 1\n")
    assert "rubricgate.yaml" in _validate(repo)


@pytest.mark.parametrize("where", ["review_root", "task review"])
def test_a_path_longer_than_a_file_system_allows_is_an_input_error(repo: Path, where: str) -> None:
    long = "x" * 20_000
    if where == "review_root":
        config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
        config.setdefault("suite", {})["review_root"] = long
        (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    else:
        (repo / "evals" / "tasks" / "long.yaml").write_text(yaml.safe_dump(
            {"id": "long", "review": [long], "expect": {"tier": "PASS"}, "rubric": {"trajectory": {"max_steps": 3}}}))
    assert "longer than a file system allows" in _validate(repo)


def test_a_key_holding_control_characters_is_shown_escaped_on_one_line(repo: Path) -> None:
    text = (repo / "baseline.json").read_text()
    (repo / "baseline.json").write_text(text.replace('"format_version"', '"fo\\rmat\\u001b[31m_version"', 1))
    line = _validate(repo)
    assert "fo\\x0dmat\\x1b[31m_version" in line and "\x1b" not in line and "\r" not in line


def test_a_path_holding_a_nul_character_is_an_input_error(repo: Path) -> None:
    (repo / "evals" / "tasks" / "nul.yaml").write_text(yaml.safe_dump(
        {"id": "nul", "review": ["skills/a\x00b/SKILL.md"], "expect": {"tier": "PASS"},
         "rubric": {"trajectory": {"max_steps": 3}}}))
    assert "holds a NUL character" in _validate(repo)


def test_a_toml_file_the_prompt_names_nested_100000_levels_deep_is_read_as_text(repo: Path) -> None:
    """The reviewer's closure reads the files its prompt names for more names (suite/closure.py);
    tomllib recursed on a deep array and the run's cache key ended in an internal error."""
    prompt = repo / "reviewer" / "prompts" / "evaluate.md"
    prompt.write_text(prompt.read_text() + "\nLimits are in `reviewer/limits.toml`.\n")
    (repo / "reviewer" / "limits.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output


@pytest.mark.parametrize("line", [b"[" * ((1 << 20) - 100), b"[a" * ((1 << 19) - 100), b"[[a] " * 200_000],
                         ids=["brackets", "bracket-letter", "pairs-inside"])
def test_a_line_of_brackets_in_a_file_the_prompt_names_is_scanned_once(line: bytes) -> None:
    """The link pattern scanned from every `[` to the end of a run of them: 200 KB took 87 s, the
    1 MB a closure file may have, hours (found by bench/fuzz_inputs.py as a hang of prompt.md).
    Under the fuzz's hang guard, far above the fraction of a second it takes now."""
    from rubricgate.suite.closure import references
    from tests.fuzz.harness import HANG_S, hang_guard

    with hang_guard(HANG_S):
        assert references("reviewer/prompts/policy.md", line + b"\n[policy](rules.md)\n") == [("rules.md", "linked from")]


@pytest.mark.parametrize("command", ["report", "regrade"])
def test_a_summary_whose_transcript_leaves_the_run_folder_is_refused_before_anything_is_read(repo: Path,
                                                                                           command: str) -> None:
    from rubricgate.pipeline import RunOptions, run_suite

    run_dir = run_suite(RunOptions(repo=repo)).run_dir
    outside = repo.parent / "outside.json"
    outside.write_text('{"not": "a transcript of this run"}')
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["cases"][0]["trials"][0]["transcript"] = "../../../outside.json"
    (run_dir / "summary.json").write_text(json.dumps(summary))
    line = _one_error(command, str(run_dir), "--repo", str(repo))
    assert "transcript" in line and "inside the run folder" in line, line


@pytest.mark.parametrize("name", ["rubricgate.yaml", "fixtures/block/data-loader/expect.yaml"])
def test_a_suite_file_over_the_size_bound_is_refused_in_one_line_before_it_is_parsed(repo: Path, name: str) -> None:
    from rubricgate.suite.yaml_json import MAX_SUITE_FILE_BYTES

    with (repo / name).open("a") as fh:  # a comment: the file stays valid YAML, only its size is wrong
        fh.write("\n#" + "x" * MAX_SUITE_FILE_BYTES + "\n")
    line = _validate(repo)
    assert name.rpartition("/")[2] in line and f"larger than {MAX_SUITE_FILE_BYTES:,} bytes" in line, line


@pytest.mark.parametrize("command", ["report", "regrade"])
def test_a_transcript_that_is_a_link_out_of_the_run_folder_is_refused(repo: Path, command: str) -> None:
    from rubricgate.pipeline import RunOptions, run_suite

    run_dir = run_suite(RunOptions(repo=repo)).run_dir
    outside = repo.parent / "outside.json"
    summary = json.loads((run_dir / "summary.json").read_text())
    trial = summary["cases"][0]["trials"][0]
    outside.write_text((run_dir / trial["transcript"]).read_text())
    (run_dir / "transcripts" / "link.json").symlink_to(outside)
    trial["transcript"] = "transcripts/link.json"
    (run_dir / "summary.json").write_text(json.dumps(summary))
    line = _one_error(command, str(run_dir), "--repo", str(repo))
    assert "link.json" in line and "a link" in line, line
    trial["transcript"] = "transcripts/link.json/"  # another spelling, no file of its own
    (run_dir / "summary.json").write_text(json.dumps(summary))
    assert "inside the run folder" in _one_error(command, str(run_dir), "--repo", str(repo))


@pytest.mark.parametrize("key, value, field", [
    ("trials", True, "trials"), ("trials", "3", "trials"), ("trials", 2.0, "trials"),
    ("agent", {"name": "builtin", "timeout_s": True}, "agent.timeout_s"),
    ("gate", {"method": "strict", "max_errored": False}, "gate.max_errored"),
])
def test_a_yes_no_or_a_quoted_number_where_a_number_belongs_is_refused(repo: Path, key, value, field) -> None:
    # YAML reads `trials: yes` as true; pydantic would have taken it for 1 (and "3" for 3).
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config[key] = value if not isinstance(value, dict) else {**(config.get(key) or {}), **value}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    line = _validate(repo)
    assert f"rubricgate.yaml: {field}:" in line and "valid" in line, line


def test_a_transcript_that_is_a_fifo_is_refused_by_regrade_not_waited_on(repo: Path) -> None:
    import os

    from rubricgate.pipeline import RunOptions, run_suite

    run_dir = run_suite(RunOptions(repo=repo)).run_dir
    summary = json.loads((run_dir / "summary.json").read_text())
    transcript = run_dir / summary["cases"][0]["trials"][0]["transcript"]
    transcript.unlink()
    os.mkfifo(transcript)  # opening it to read waits for a writer that never comes
    line = _one_error("regrade", str(run_dir), "--repo", str(repo))
    assert transcript.name in line and "not a regular file" in line, line


def _measured(repo: Path) -> dict:
    got = CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo)])
    assert got.exit_code == 0, got.output
    return json.loads((repo / "baseline.json").read_text())


@pytest.mark.parametrize("edit", ["rates and counts", "counts alone"])
def test_a_baseline_lowered_by_hand_is_refused_naming_the_fix(repo: Path, edit: str) -> None:
    """Every rate and count set to 0 in a pull request, with no change recorded, was read as the new
    baseline by run, compare and validate: the gate then passes anything."""
    data = _measured(repo)
    for dims in data["cases"].values():
        for count in dims.values():
            count["passes"] = 0
    if edit == "rates and counts":
        data["rates"] = dict.fromkeys(data["rates"], 0.0)
    (repo / "baseline.json").write_text(json.dumps(data))
    line = _one_error("run", "--repo", str(repo))
    assert "baseline.json" in line and "below the 100.0% its history's last change recorded" in line, line
    assert "rubricgate baseline update --reason" in line
    assert "below the 100.0%" in _validate(repo)


def test_a_baseline_raised_by_hand_is_read(repo: Path) -> None:
    data = _measured(repo)
    case = next(iter(data["cases"]))
    for count in data["cases"][case].values():
        count["trials"] += 1
        count["passes"] += 1  # stricter: more passing trials to fall from
    (repo / "baseline.json").write_text(json.dumps(data))
    assert CliRunner().invoke(main, ["validate", "--repo", str(repo)]).exit_code == 0


@pytest.mark.parametrize("make, says", [
    (lambda p: (p.unlink(), p.symlink_to(p.name)), "is a symlink that loops"),
    (lambda p: (p.unlink(), p.symlink_to("gone.md")), "is a symlink to nothing"),
    (lambda p: (p.unlink(), p.mkdir()), "is a folder, not a file"),
    (lambda p: (p.unlink(), os.mkfifo(p)), "is a FIFO, not a file"),
    (lambda p: p.unlink(), "does not exist"),
])
def test_a_prompt_that_is_no_file_says_what_it_is(repo: Path, make, says: str) -> None:
    """A link that loops, a folder or a FIFO were all 'does not exist', sending the user looking
    for a file that was there."""
    make(repo / "reviewer" / "prompts" / "evaluate.md")
    line = _validate(repo)
    assert "reviewer.prompt" in line and says in line, line


def test_a_prompt_linked_into_git_is_refused_at_load_not_retried_as_a_crash(repo: Path) -> None:
    """A prompt committed as a link to .git/config passed validate, and every trial of a CLI
    reviewer failed to start (no workspace holds .git), was retried and errored."""
    (repo / ".git").mkdir(exist_ok=True)
    if not (repo / ".git" / "config").exists():
        (repo / ".git" / "config").write_text("[core]\n")
    prompt = repo / "reviewer" / "prompts" / "evaluate.md"
    prompt.unlink()
    prompt.symlink_to("../../.git/config")
    line = _validate(repo)
    assert "reviewer.prompt" in line and "links into .git (.git/config), which no workspace holds" in line, line


def test_a_missing_file_of_a_config_given_by_path_names_that_config_in_its_fix(repo: Path) -> None:
    (repo / "ci").mkdir()
    (repo / "ci" / "rg.yaml").write_text((repo / "rubricgate.yaml").read_text())
    (repo / "reviewer" / "prompts" / "evaluate.md").unlink()
    got = CliRunner().invoke(main, ["validate", "--repo", str(repo), "--config", str(repo / "ci" / "rg.yaml")])
    assert got.exit_code == 2 and "correct reviewer.prompt in ci/rg.yaml" in got.output, got.output


def test_a_baseline_whose_history_was_emptied_is_refused(repo: Path) -> None:
    """Setting the counts to 0 and the history to [] went round the check above."""
    data = _measured(repo)
    for dims in data["cases"].values():
        for count in dims.values():
            count["passes"] = 0
    data["history"] = []
    (repo / "baseline.json").write_text(json.dumps(data))
    line = _one_error("run", "--repo", str(repo))
    assert "history" in line and "counts with no change recorded" in line, line
