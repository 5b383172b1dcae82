"""Issue 28, finding 13: a run whose summary could not be written leaves nothing that says PASS.

After such a run (exit 2), `rubricgate report` and `publish` picked the previous PASS run and
exited 0, and the failed run's folder kept a comment.md and junit.xml that said PASS.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from rubricgate.cli import main
from tests.faults.test_report_write_failure import RIGHT, _no_space_for, fake_repo


def test_a_run_without_summary_is_never_replaced_by_the_one_before(tmp_path: Path, monkeypatch) -> None:
    repo = fake_repo(tmp_path, RIGHT)
    assert CliRunner().invoke(main, ["run", "--repo", str(repo)]).exit_code == 0  # an earlier PASS run
    with monkeypatch.context() as mp:
        _no_space_for(mp, "summary.json")
        assert CliRunner().invoke(main, ["run", "--repo", str(repo)]).exit_code == 2
    failed = max((p for p in (repo / "reports").iterdir() if not (p / "summary.json").exists()), key=lambda p: p.name)
    for name in ("comment.md", "report.html"):  # the pages that state the decision in words
        page = failed / name
        assert not page.exists() or "could not write" in page.read_text(), name
    junit = failed / "junit.xml"
    assert not junit.exists() or "<failure" in junit.read_text() or "<error" in junit.read_text()
    for command in (["report", "--repo", str(repo)], ["publish", "--repo", str(repo), "--pr", "1"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, (command, result.output)
        assert "newest run has no summary" in result.output or "summary" in result.output
