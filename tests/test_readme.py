"""The README's examples are what the code accepts: its rubricgate.yaml and task file parse
through the real models (unknown keys are errors, so a renamed key fails here), and its set-up
section holds exactly the two commands a newcomer pastes."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from rubricgate.models.config import Config
from rubricgate.models.task import TaskFile

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
FORMATS = (Path(__file__).resolve().parent.parent / "docs" / "file-formats.md").read_text(encoding="utf-8")


def _block_after(marker: str, lang: str, text: str = FORMATS) -> str:
    start = text.index(marker)
    found = re.search(rf"```{lang}\n(.*?)```", text[start:], re.S)
    assert found, f"no ```{lang} block after {marker!r}"
    return found.group(1)


def test_config_example_parses_with_every_documented_default():
    config = Config.model_validate(yaml.safe_load(_block_after("**`rubricgate.yaml`**", "yaml")))
    defaults = Config()
    # The example states the defaults: a changed default must change the README too.
    assert config.agent.limits == defaults.agent.limits
    assert config.gate == defaults.gate
    assert (config.agent.retries, config.agent.preflight_timeout_s) == (defaults.agent.retries,
                                                                         defaults.agent.preflight_timeout_s)


def test_task_example_parses():
    TaskFile.model_validate(yaml.safe_load(_block_after("**Task**", "yaml")))


def test_set_up_has_exactly_the_two_commands():
    set_up = README[README.index("## Set up"):README.index("## Exit codes")]
    commands = re.findall(r"```bash\n(.*?)\n```", set_up, re.S)
    assert commands == ["python3 -m pip install -e . && rubricgate run",
                        "python3 -m pip install -e '.[test]' && python3 -m pytest -q -n auto"]


def test_every_command_in_the_table_exists_with_its_flags():
    from click.testing import CliRunner

    from rubricgate.cli import main

    table = README[README.index("## Commands"):README.index("## Adopting it")]
    rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) >= 15, rows
    for row in rows:
        for usage in re.findall(r"`([^`]+)`", row):
            words = usage.split()
            name = words[:2] if words[0] == "baseline" else words[:1]
            got = CliRunner().invoke(main, [*name, "--help"])
            assert got.exit_code == 0, f"README names `{usage}`: {got.output}"
            for flag in re.findall(r"--[a-z][a-z-]*", usage):
                assert flag in got.output, f"README gives {flag} to `{' '.join(name)}`"


def _tour_output_block(step: str) -> str:
    """The terminal lines the tour's step quotes, whitespace folded (the README wraps long lines)."""
    start = README.index(step)
    found = re.search(r"```\n(.*?)```", README[start:], re.S)
    assert found, f"no output block after {step!r}"
    return " ".join(found.group(1).split())


def test_the_tours_runs_print_what_the_readme_quotes(tmp_path):
    from click.testing import CliRunner

    from rubricgate.cli.app import main
    from tests.conftest import set_severity, tour_repo

    repo = tour_repo(tmp_path / "repo")
    first = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert first.exit_code == 0 and "decision: PASS (exit 0)" in first.output, first.output
    run_dir = next(p for p in (repo / "reports").iterdir() if p.is_dir())
    assert " changed" not in (run_dir / "comment.md").read_text().splitlines()[1]  # the shipped baseline is current
    rubric = repo / "reviewer/evaluator/references/rubric.md"
    shipped = rubric.read_text()
    for step, rule, code in (("2. **Break the rubric.**", "fm-description-required", 1),
                             ("3. **Edit a rule nothing tests.**", "scope-single-purpose", 2)):
        rubric.write_text(shipped)
        set_severity(repo, rule, "warning")
        result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
        assert result.exit_code == code, result.output
        assert _tour_output_block(step) in " ".join(result.output.split()), result.output
