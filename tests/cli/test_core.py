"""`rubricgate validate` (cli/core.py): every problem `run` would stop at before a trial."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import make_repo, write_task


def _command_reviewer(repo: Path) -> None:
    """A `command` reviewer whose rules live in rubricgate.yaml and a prose file, not a rule table."""
    (repo / "reviewer" / "rules.md").write_text("- SQL injection: flag string-built SQL\n")
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["reviewer"]["rubric"] = "reviewer/rules.md"
    config["agent"] = {"name": "command", "command": ["/bin/cat", "{changed_files}"], "format": "text",
                       "preflight": False}
    config["verdict"] = {"format": "markdown",
                         "rules": [{"id": "sql-injection", "severity": "critical", "match": "(?i)sql injection"}]}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))


def test_a_case_the_builtin_reviews_in_a_repository_without_a_rule_table_fails_validate(tmp_path: Path) -> None:
    """A task's `agent: builtin` in a repository whose rules are not a rule table: validate said
    ok (exit 0) while `run` stopped at it (exit 2) before any trial."""
    repo = make_repo(tmp_path / "repo", fixtures=[], commit=False)
    _command_reviewer(repo)
    task = {"id": "clean", "why": "x", "review": ["skills/x/app.py"], "files": {"skills/x/app.py": "x = 1\n"},
            "expect": {"tier": "PASS"}}
    write_task(repo, task)
    first = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert first.exit_code == 0, first.output
    write_task(repo, {**task, "id": "smoke", "agent": "builtin"})
    got = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert got.exit_code == 2 and "the builtin reviewer cannot read its rule table" in got.output, got.output
