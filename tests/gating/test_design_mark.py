"""rubricgate.gating.design_mark: one statistical run of a design at a time."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from click.testing import CliRunner

import rubricgate.pipeline as pipeline
from rubricgate.cli import main
from rubricgate.errors import GateInputError
from rubricgate.gating.continuation_marks import RUNNING
from rubricgate.gating.design_mark import DESIGN_MARK, LOST, hold_design
from tests.gating.test_continuation import _newest, _run, _statistical


def _meanwhile(patch, action):
    """`action()` once, while the next run's trials are about to run (its mark held); its result."""
    real, out = pipeline.run_trials, []

    def hooked(*args, **kwargs):
        if not out:  # a nested run calls this too: it starts no third
            out.append(None)
            out[0] = action()
        return real(*args, **kwargs)

    patch.setattr(pipeline, "run_trials", hooked)
    return out


def _marks(repo):
    return sorted((repo / "reports").glob(f"{DESIGN_MARK}-*"))


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()  # reaped: its pid names no process
    return child.pid


def test_two_fresh_runs_of_one_design_at_once_the_second_is_refused_and_a_rerun_continues_the_first(
        repo, monkeypatch) -> None:
    """Two fresh runs of one design started together could not see each other's result: each was
    a chance to PASS, and the user kept whichever passed."""
    _statistical(repo)
    with monkeypatch.context() as patch:
        second = _meanwhile(patch, lambda: _run(repo))
        first = _run(repo)
    assert first.exit_code == 2 and "error:" not in first.output, first.output  # INCONCLUSIVE
    old = _newest(repo)
    lines = [line for line in second[0].output.splitlines() if line.startswith("error:")]
    assert second[0].exit_code == 2 and len(lines) == 1, second[0].output
    assert lines[0].startswith(f"error: {old}: a run of this same design is under way (pid {os.getpid()})")
    assert "wait for it to end, then run again (it will continue that run if INCONCLUSIVE)" in lines[0]
    assert [p for p in (repo / "reports").iterdir() if p.is_dir()] == [old]  # refused before a run folder
    assert not _marks(repo)  # lifted once the run ended
    again = _run(repo)
    assert json.loads((_newest(repo, besides=[old]) / "summary.json").read_text())["gate"]["continues"] == \
        [old.name], again.output


def test_a_run_of_another_design_runs_beside_it(repo, monkeypatch) -> None:
    _statistical(repo)
    other = _meanwhile(monkeypatch, lambda: _run(repo, "--only", "data-loader"))  # a subset: another design
    assert _run(repo).exit_code == 2
    assert "error:" not in other[0].output, other[0].output
    assert len([p for p in (repo / "reports").iterdir() if p.is_dir()]) == 2


def test_the_mark_of_a_run_whose_process_is_gone_is_taken_over(repo, monkeypatch) -> None:
    """A run killed outright (SIGKILL) never lifts its mark: the next run takes it over."""
    _statistical(repo)
    with monkeypatch.context() as patch:
        seen = _meanwhile(patch, lambda: _marks(repo))
        assert _run(repo).exit_code == 2
    (mark,) = seen[0]
    old = _newest(repo)
    mark.write_text(f"{RUNNING} (pid {_dead_pid()}) in {repo / 'reports' / 'killed'}\n")
    again = _run(repo)
    assert "error:" not in again.output, again.output
    assert json.loads((_newest(repo, besides=[old]) / "summary.json").read_text())["gate"]["continues"] == [old.name]
    assert not mark.exists()


def test_a_run_whose_mark_is_removed_meanwhile_cannot_judge(repo, monkeypatch) -> None:
    """A copy-only reviewer runs unsandboxed and can remove the mark: another run of the design
    could then start beside this one, so this one's PASS would be a second chance."""
    _statistical(repo)
    _meanwhile(monkeypatch, lambda: [p.unlink() for p in _marks(repo)])
    result = _run(repo)
    assert result.exit_code == 2 and "was removed or replaced during the run" in result.output, result.output
    lost = _newest(repo)
    assert json.loads((lost / "summary.json").read_text())["decision"]["status"] == "error"
    # regraded, its trials alone would be judged as if no other run could have been beside it
    regraded = CliRunner().invoke(main, ["regrade", str(lost), "--repo", str(repo)])
    decision = json.loads((_newest(repo, besides=[lost]) / "summary.json").read_text())["decision"]
    assert regraded.exit_code == 2 and decision["status"] == "error", regraded.output
    assert any(r.startswith(LOST) for r in decision["reasons"])


def test_a_mark_that_replaced_this_runs_is_not_lifted_with_it(tmp_path) -> None:
    path = tmp_path / "reports" / f"{DESIGN_MARK}-x"
    mine = hold_design(path)
    path.unlink()
    theirs = hold_design(path)  # another run, once this one's mark was gone
    assert "removed or replaced" in mine.lost() and not theirs.lost()
    mine.release()
    assert path.exists()
    with pytest.raises(GateInputError, match="under way"):
        hold_design(path)
    theirs.release()
    assert not path.exists()


def test_a_mark_naming_no_process_says_where_it_is(tmp_path) -> None:
    path = tmp_path / "reports" / f"{DESIGN_MARK}-x"
    path.parent.mkdir()
    path.write_text("")  # a run killed as it made its mark
    with pytest.raises(GateInputError, match=f"no process named: if none is under way, remove {path}"):
        hold_design(path)


def test_an_empty_mark_a_minute_old_is_taken_over(tmp_path) -> None:
    """Killed between making its mark and writing it, a run left an empty mark that refused every
    later run of the design for good, naming the file to remove; once older than a live run's
    first write could be, it is taken over as a dead run's mark is."""
    from rubricgate.gating.design_mark import EMPTY_MARK_AGE

    path = tmp_path / "reports" / f"{DESIGN_MARK}-x"
    path.parent.mkdir()
    path.write_text("")
    then = path.stat().st_mtime - EMPTY_MARK_AGE - 5
    os.utime(path, (then, then))
    mark = hold_design(path)
    assert mark.fd is not None and not mark.lost() and path.read_text().startswith(RUNNING)
    with pytest.raises(GateInputError, match="under way"):
        hold_design(path)  # this run's own mark, live
    mark.release()
    assert not path.exists()


def test_something_else_in_the_marks_place_is_refused_in_one_line(tmp_path) -> None:
    """A link in its place cannot say whether a run is under way: refused, never run unmarked."""
    path = tmp_path / "reports" / f"{DESIGN_MARK}-x"
    path.parent.mkdir()
    path.symlink_to(tmp_path / "nowhere")
    with pytest.raises(GateInputError, match="is not a mark rubricgate wrote"):
        hold_design(path)


def test_a_reports_folder_that_cannot_be_made_holds_nothing(tmp_path) -> None:
    """No mark can be made where no run folder can be: the run ends there, unable to write it."""
    (tmp_path / "reports").write_text("a file")
    mark = hold_design(tmp_path / "reports" / f"{DESIGN_MARK}-x")
    assert mark.fd is None and not mark.lost()
    mark.release()


def test_a_refusal_naming_a_live_process_says_where_the_mark_is(tmp_path) -> None:
    """A mark whose pid another process has since taken (no start time recorded: no /proc where
    it was written) refused every run, naming the run folder and "wait for it to end": nothing
    said which file to remove once no run was under way."""
    path = tmp_path / "reports" / f"{DESIGN_MARK}-x"
    path.parent.mkdir()
    path.write_text(f"{RUNNING} (pid {os.getpid()}) in {tmp_path / 'reports' / 'old-run'}\n")
    with pytest.raises(GateInputError) as refused:
        hold_design(path)
    line = str(refused.value)
    assert f"pid {os.getpid()}" in line and f"if no run of it is under way, remove {path}" in line, line
