"""reports/bundle.py: a run killed at any write of its end leaves no decision page without its summary."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rubricgate.records.files import read_summary
from rubricgate.reports import bundle
from rubricgate.reports.bundle import COMMENT_FILE, HTML_FILE, JUNIT_FILE, SUMMARY_FILE
from tests import reports_fixtures as rf

ROOT = Path(__file__).resolve().parents[2]
PAGES = (HTML_FILE, COMMENT_FILE, JUNIT_FILE)
# The run's end in a child process whose k-th file operation (a temp file made, a rename) is a
# SIGKILL-like os._exit: what the folder holds then is what a killed runner leaves.
CHILD = """
import os, sys
from pathlib import Path
from rubricgate.records import writing
from rubricgate.reports.bundle import finish_run_reports
from tests import reports_fixtures as rf

kill_at, run_dir, seen = int(sys.argv[1]), Path(sys.argv[2]), [0]
def step():
    seen[0] += 1
    if seen[0] == kill_at:
        os._exit(9)
real_create, real_replace = writing._create, os.replace
def create(path):
    step()
    return real_create(path)
def replace(src, dst):
    step()
    return real_replace(src, dst)
writing._create, os.replace = create, replace
finish_run_reports(rf.passing_summary(), run_dir, cases=None)
print(seen[0])
"""


def _end_run(tmp_path: Path, kill_at: int) -> tuple[Path, subprocess.CompletedProcess[str]]:
    run_dir = tmp_path / f"kill-{kill_at}"
    run_dir.mkdir()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(kill_at), str(run_dir)], capture_output=True, text=True,
                          env=os.environ | {"PYTHONPATH": str(ROOT)}, cwd=ROOT, check=False)
    return run_dir, proc


def test_a_kill_at_any_write_leaves_no_decision_page_without_the_summary(tmp_path: Path) -> None:
    # Killed at the 1st, 2nd, ... file operation until one run gets to its end (a render cache may
    # make the count differ from run to run): three pages and the summary, a temp file and a rename
    # each, then the moves.
    for k in range(1, 40):
        run_dir, proc = _end_run(tmp_path, k)
        if proc.returncode == 0:
            break
        assert proc.returncode == 9, proc.stderr
        shown = [p for p in PAGES if (run_dir / p).exists()]
        assert not shown or (run_dir / SUMMARY_FILE).exists(), f"killed at step {k}: {shown} without summary.json"
    assert k >= 9, "the run's end made fewer file operations than its pages and summary need"


def test_a_finished_run_moves_every_page_in_and_leaves_nothing_staged(tmp_path: Path) -> None:
    run_dir, proc = _end_run(tmp_path, 0)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in run_dir.iterdir() if p.is_file()) == sorted([*PAGES, SUMMARY_FILE])


@pytest.mark.parametrize("page", PAGES)
def test_a_page_that_cannot_be_moved_in_makes_the_summary_exit_2(tmp_path: Path, monkeypatch, page: str) -> None:
    real = os.replace

    def refuse(src, dst):
        if Path(dst).name == page:
            raise OSError(13, "Permission denied")
        return real(src, dst)
    monkeypatch.setattr(bundle.os, "replace", refuse)
    final = bundle.finish_run_reports(rf.passing_summary(), tmp_path, cases=None)
    assert final.decision.exit_code == 2 and read_summary(tmp_path).decision.exit_code == 2
    assert not list(tmp_path.glob(".*.staged"))


def test_a_directory_where_a_page_goes_is_found_before_the_decision_is_recorded(tmp_path: Path) -> None:
    # Found only when the staged page was moved in, after summary.json and events.jsonl's
    # run_completed had recorded the decision the failure replaces.

    run_dir = tmp_path / "run"
    (run_dir / "report.html").mkdir(parents=True)
    (run_dir / ".report.html.staged").write_text("<html>PASS</html>")
    [got] = bundle._pages_that_cannot_move_in(run_dir)
    assert "report.html" in got.line() and not (run_dir / ".report.html.staged").exists()
    assert bundle.move_staged_pages(run_dir) == []
