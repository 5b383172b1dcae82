"""runner/scheduler.py: an interrupt at any instant of the trial phase ends it only once every
trial it started has ended (its workspace removed, no thread left running past the run)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from rubricgate.agents.builtin import BuiltinAgent
from rubricgate.pipeline import RunOptions, run_suite
from tests.conftest import make_repo

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader", "block/forecast-notebook-runner"]


class SlowAgent(BuiltinAgent):
    def run(self, request):  # type: ignore[no-untyped-def]
        time.sleep(0.5)
        return super().run(request)


def test_an_interrupt_right_after_the_first_trial_is_submitted_waits_for_it(tmp_path, monkeypatch) -> None:
    # Ctrl-C lands between submitting the first trial and the wait that handles it: the trial
    # ran on past the run's end, and its workspace's removal raced the run's (once: a hang).
    real_submit = ThreadPoolExecutor.submit
    submitted = []

    def submit_then_interrupt(self, fn, *args, **kwargs):
        future = real_submit(self, fn, *args, **kwargs)
        if getattr(fn, "__name__", "") == "run_trial":
            submitted.append(future)
            if len(submitted) == 1:
                raise KeyboardInterrupt
        return future

    monkeypatch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: SlowAgent(cfg))
    monkeypatch.setattr(ThreadPoolExecutor, "submit", submit_then_interrupt)
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setattr("tempfile.tempdir", None)
    outcome = run_suite(RunOptions(repo=repo, jobs=2))
    assert outcome.exit_code == 2 and not outcome.summary.complete
    assert [t.name for t in threading.enumerate() if t.name.startswith(("trial", "trial-remover"))] == []
    assert submitted[0].done()
    assert [p.name for p in tmpdir.iterdir()] == []  # the trial's workspace went with the snapshot


def test_a_trial_ending_after_the_remover_closed_removes_its_own_folder(tmp_path) -> None:
    from rubricgate.runner.workspace import Remover

    remover = Remover()
    early, late = tmp_path / "early", tmp_path / "late"
    for folder in (early, late):
        (folder / "sub").mkdir(parents=True)
    remover.copy(early)
    remover.close()
    remover.copy(late)  # no second worker that could take an end marker: removed here and now
    assert not early.exists() and not late.exists()
    assert not [t for t in threading.enumerate() if t.name == "trial-remover"]
