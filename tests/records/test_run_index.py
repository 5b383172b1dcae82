"""The viewer's index a run writes itself: what the viewer would build, scrubbed, best effort."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402

from rubricgate.models.results import Grade  # noqa: E402
from rubricgate.records.files import write_summary  # noqa: E402
from rubricgate.records.run_index import CASES_FILE, HEAD_FILE, index_run  # noqa: E402
from rubricgate.view.catalog import Catalog  # noqa: E402

SECRET = "sk-live-9f8e7d6c5b4a3210"


def written(tmp_path: Path, summary=None, secrets: list[str] | None = None) -> Path:
    run = tmp_path / "reports" / "20260101T000000Z-abc123"
    run.mkdir(parents=True)
    write_summary(run, summary or rf.summary(run_id=run.name), secrets)
    return run


def test_no_summary_on_disk_writes_no_index(tmp_path):
    assert index_run(tmp_path, rf.summary()) is False
    assert not (tmp_path / HEAD_FILE).exists() and not (tmp_path / CASES_FILE).exists()


def test_a_lone_surrogate_leaves_the_index_to_the_viewer(tmp_path):
    s = rf.summary(run_id="20260101T000000Z-abc123")
    s.cases[0].trials[0].grades["verdict"] = Grade(passed=False, category="wrong_tier", reason="bad \udc80 byte")
    run = written(tmp_path, s)
    assert index_run(run, s) is False and not (run / HEAD_FILE).exists()  # and the run goes on


def test_the_runs_index_is_the_viewers_own_and_spares_it_the_summary(tmp_path, monkeypatch):
    s = rf.summary(run_id="20260101T000000Z-abc123")
    run = written(tmp_path, s)
    assert index_run(run, s, "shard") is True
    ours = {name: (run / name).read_bytes() for name in (HEAD_FILE, CASES_FILE)}
    monkeypatch.setattr(Catalog, "summary", lambda self, ref: pytest.fail("the summary was parsed"))
    cat = Catalog.of([run.parent])
    assert cat.heads()[0].kind == "shard" and cat.cases(cat.ref(run.name))
    monkeypatch.undo()
    for name in ours:
        (run / name).unlink()
    Catalog.of([run.parent]).heads()
    assert (run / CASES_FILE).read_bytes() == ours[CASES_FILE]  # the same bytes the viewer builds


def test_the_index_is_scrubbed_as_the_summary_is(tmp_path):
    s = rf.summary(run_id="20260101T000000Z-abc123")
    s.cases[0].trials[0].grades["verdict"] = Grade(passed=False, category="wrong_tier", reason=f"quoted {SECRET}")
    run = written(tmp_path, s, [SECRET])
    assert index_run(run, s, secrets=[SECRET]) is True
    cases = (run / CASES_FILE).read_text()
    assert SECRET not in cases and "quoted [REDACTED]" in cases


def test_a_case_whose_trials_errored_or_never_ran_is_not_counted_failing(tmp_path):
    # The runs page said "2 failing · 22 errored" of a run no judged trial of which failed: a
    # trial the infrastructure failed (or the budget refused) was never judged, as every report says.
    from rubricgate.records.run_index import head_of
    from rubricgate.runner.cost import not_run_trial

    s = rf.summary(run_id="20260101T000000Z-abc123")
    good, bad = s.cases
    errored = rf.trial(good.id, 3, "ERROR", verdict=Grade(passed=False, category="errored", reason="exit 127"))
    good.trials = [*good.trials, errored.model_copy(update={"errored": True}), not_run_trial(good.id, 4, "budget")]
    assert head_of(s, "1:1").failing_cases == 1  # the case whose judged trials failed, alone
