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


def test_trials_are_fed_a_few_ahead_and_finished_ones_are_not_held(monkeypatch) -> None:
    """200 jobs with room for 4: never more than 4 submitted and unfinished, the futures kept
    stay few, and the one trial that raised (a harness bug) is still there to surface."""
    from rubricgate.runner import scheduler

    lock, live, most = threading.Lock(), [0], [0]

    def fake_trial(ctx, job):  # noqa: ARG001
        with lock:
            most[0] = max(most[0], live[0])
        time.sleep(0.001)
        with lock:
            live[0] -= 1  # before the future is done, so the next submission is counted after it
        if job == 7:
            raise RuntimeError("harness bug")

    real_submit = ThreadPoolExecutor.submit

    def counted_submit(self, fn, *args, **kwargs):
        with lock:
            live[0] += 1
        return real_submit(self, fn, *args, **kwargs)

    monkeypatch.setattr(scheduler, "run_trial", fake_trial)
    monkeypatch.setattr(ThreadPoolExecutor, "submit", counted_submit)
    futures: list = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        scheduler._feed(pool, None, list(range(200)), futures, room=4)
    assert most[0] <= 4
    assert len(futures) <= 2 * 4 + 1
    assert [str(f.exception()) for f in futures if f.exception()] == ["harness bug"]
