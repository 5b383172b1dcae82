"""Fault: a poisoned cache cannot make a wrong reviewer pass.

Issue 8: a hostile reviewer rewrote another case's cached transcript, and a later `--cache` run of
a wrong reviewer passed from it. Here the reviewer is wrong on data-loader (PASS for a BLOCK
fixture); its cache entry is then replaced by a right answer in four ways: hand-edited in
place, unsigned, a genuine entry of another case copied into its slot, and that copy re-labelled
with data-loader's key parts. Each is rejected, reported, and the trial re-run, so the cached run
fails exactly as an uncached one does. The other entries stay byte-identical.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rubricgate.pipeline import RunOptions, run_suite
from rubricgate.records.events import read_events
from rubricgate.reports.terminal import render_terminal
from rubricgate.runner.cache import KEY_FILE, default_cache_dir
from tests.faults.helpers import ISOLATION, PASS, RIGHT_BLOCK, fake_repo, leaks, sandbox_modes, tree_bytes

WRONG = {"data-loader": PASS, "forecast-notebook-runner": RIGHT_BLOCK, "*": PASS}


def _entry_of(cache_dir: Path, fixture: str) -> Path:
    """The cache entry whose answer reviews `fixture` (the fake reviewer names it in its summary)."""
    return next(p for p in cache_dir.rglob("*.json")
                if fixture in json.loads(p.read_text())["transcript"]["final_text"])


def _hand_edit(victim: Path, donor: Path) -> None:
    entry = json.loads(victim.read_text())
    entry["transcript"] = json.loads(donor.read_text())["transcript"]
    victim.write_text(json.dumps(entry))


def _unsigned(victim: Path, donor: Path) -> None:
    _hand_edit(victim, donor)
    entry = json.loads(victim.read_text())
    del entry["hmac"]
    victim.write_text(json.dumps(entry))


def _moved(victim: Path, donor: Path) -> None:
    victim.write_bytes(donor.read_bytes())


def _moved_and_relabelled(victim: Path, donor: Path) -> None:
    entry = json.loads(donor.read_text())
    entry["parts"] = json.loads(victim.read_text())["parts"]
    victim.write_text(json.dumps(entry))


POISONS = {"hand-edited": _hand_edit, "unsigned": _unsigned, "moved from another case": _moved,
           "moved and relabelled": _moved_and_relabelled}


@pytest.mark.parametrize("sandbox", sandbox_modes()[1:])  # copy-only uses no cache (test_copy_only.py)
@pytest.mark.parametrize("poison", sorted(POISONS))
def test_poisoned_entry_is_rejected_reported_and_rerun(tmp_path: Path, poison: str, sandbox: str) -> None:
    repo = fake_repo(tmp_path, WRONG, sandbox)
    first = run_suite(RunOptions(repo=repo, cache=True))
    assert first.exit_code == 1  # the reviewer is wrong on data-loader
    cache_dir = default_cache_dir()
    victim, donor = _entry_of(cache_dir, "data-loader"), _entry_of(cache_dir, "forecast-notebook-runner")
    POISONS[poison](victim, donor)
    assert '\\"tier\\": \\"BLOCK\\"' in victim.read_text()  # the slot now holds a right answer
    before_repo, before_cache = tree_bytes(repo, skip=("reports",)), tree_bytes(cache_dir)

    cached = run_suite(RunOptions(repo=repo, cache=True))
    uncached = run_suite(RunOptions(repo=repo))

    why = "\n".join(render_terminal(o.summary, str(o.run_dir)) for o in (cached, uncached))
    assert cached.exit_code == uncached.exit_code == 1, why
    assert cached.summary.isolation == ISOLATION[sandbox]
    assert _failing(cached) == _failing(uncached) == {"data-loader"}, why
    assert len(cached.summary.cache_rejected) == 1, why
    [rejected] = cached.summary.cache_rejected
    assert "data-loader" in rejected.case_id and rejected.reason
    events = [e for e in read_events(cached.run_dir / "events.jsonl") if e["event"] == "cache_rejected"]
    assert [e["case_id"] for e in events] == [rejected.case_id]
    assert "1 cache entry was rejected" in render_terminal(cached.summary, str(cached.run_dir))
    assert {c.id: c.trials[0].cached for c in cached.summary.cases} == {
        c.id: "data-loader" not in c.id for c in cached.summary.cases}
    # Only the rejected slot changed (re-run and stored anew, genuinely signed); nothing in the tree did.
    after_cache = tree_bytes(cache_dir)
    assert {k for k in before_cache if before_cache[k] != after_cache.get(k)} == {victim.relative_to(cache_dir).as_posix()}
    assert tree_bytes(repo, skip=("reports",)) == before_repo
    assert not run_suite(RunOptions(repo=repo, cache=True)).summary.cache_rejected


@pytest.mark.parametrize("sandbox", sandbox_modes()[1:])  # copy-only throws the cache away (test_copy_only.py)
def test_signing_key_is_private_and_never_written_into_a_report(tmp_path: Path, sandbox: str) -> None:
    repo = fake_repo(tmp_path, WRONG, sandbox)
    done = run_suite(RunOptions(repo=repo, cache=True))
    key_file = default_cache_dir() / KEY_FILE
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert not any(p.name == KEY_FILE for p in repo.rglob("*"))
    assert leaks([done.run_dir, repo], key_file.read_text().strip()) == []


def _failing(outcome) -> set[str]:
    names = {"data-loader", "forecast-notebook-runner", "weekly-revenue-summary"}
    return {n for c in outcome.summary.cases for t in c.trials for n in names
            if n in c.id and not all(g.passed for g in t.grades.values())}
