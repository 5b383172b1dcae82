"""Finding runs and indexing each once: cached by the summary's stamp, rebuilt when it changes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import view_fixtures as vf  # noqa: E402

from rubricgate.errors import GateInputError  # noqa: E402
from rubricgate.records import run_index  # noqa: E402
from rubricgate.view import index  # noqa: E402
from rubricgate.view.catalog import Catalog  # noqa: E402


@pytest.fixture
def reports(tmp_path) -> Path:
    vf.write_runs(tmp_path / "reports")
    return tmp_path / "reports"


def test_index_is_written_once_and_read_instead_of_the_summary(reports, monkeypatch):
    heads = Catalog.of([reports]).heads()
    assert [h.run_id for h in heads] == ["20260102T000000Z-abc121", "20260101T000000Z-abc120"]
    run = reports / heads[0].run_id
    assert (run / index.HEAD_FILE).is_file() and (run / index.CASES_FILE).is_file()
    fresh = Catalog.of([reports])
    monkeypatch.setattr(Catalog, "summary", lambda self, ref: pytest.fail("the summary was parsed again"))
    assert fresh.heads()[0] == heads[0]
    assert fresh.case(fresh.ref(heads[0].run_id), vf.HOSTILE_ID).trials[0].fails["verdict"].startswith("wrong_tier")


def test_a_rewritten_summary_is_indexed_again(reports):
    cat = Catalog.of([reports])
    run = reports / "20260102T000000Z-abc121"
    before = cat.head(cat.ref(run.name))
    data = json.loads((run / "summary.json").read_text())
    data["model"] = "m-2"
    (run / "summary.json").write_text(json.dumps(data))
    after = Catalog.of([reports]).head(cat.ref(run.name))
    assert before.model == "m-1" and after.model == "m-2" and after.stamp != before.stamp


def test_a_damaged_index_is_rebuilt_not_trusted(reports):
    Catalog.of([reports]).heads()
    run = reports / "20260102T000000Z-abc121"
    (run / index.HEAD_FILE).write_text('{"stamp": "x", "run_id": "forged"}')
    (run / index.CASES_FILE).write_text("{not json")
    cat = Catalog.of([reports])
    assert cat.head(cat.ref(run.name)).run_id == run.name
    assert cat.case(cat.ref(run.name), "pass-weekly-revenue") is not None


def test_an_unwritable_folder_keeps_its_index_in_memory(reports, monkeypatch):
    def refuse(folder, name, data):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(run_index, "_write_new", refuse)
    run = reports / "20260101T000000Z-abc120"
    cat = Catalog.of([reports])
    assert cat.case(cat.ref(run.name), "pass-weekly-revenue").trials[0].outcome == "PASS"
    assert [c.id for c in cat.cases(cat.ref(run.name))][:2] == ["pass-weekly-revenue", "block-missing-description"]
    assert not list(run.glob("view-*")) and not list(run.glob(".view-*"))


def test_the_index_is_never_written_through_a_link(reports, tmp_path):
    run = reports / "20260101T000000Z-abc120"
    target = tmp_path / "elsewhere.json"
    target.write_text("untouched")
    os.symlink(target, run / index.HEAD_FILE)
    cat = Catalog.of([reports])
    assert cat.head(cat.ref(run.name)).run_id == run.name
    assert target.read_text() == "untouched" and not (run / index.HEAD_FILE).is_symlink()


def test_linked_run_folders_and_summaries_are_skipped(reports, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    vf.write_runs(elsewhere, 1)
    os.symlink(elsewhere / "20260101T000000Z-abc120", reports / "linked-run")
    os.symlink(elsewhere / "20260101T000000Z-abc120" / "summary.json", reports / "linked.json")
    assert sorted(r.key for r in Catalog.of([reports]).refs) == ["20260101T000000Z-abc120", "20260102T000000Z-abc121"]


def test_a_linked_summary_inside_a_run_folder_is_not_read(reports, tmp_path):
    run = reports / "20260101T000000Z-abc120"
    (run / "summary.json").rename(tmp_path / "moved.json")
    os.symlink(tmp_path / "moved.json", run / "summary.json")
    (run / "events.jsonl").write_text("")
    cat = Catalog.of([reports])
    assert [h.run_id for h in cat.heads()] == ["20260102T000000Z-abc121"]


def test_history_summaries_and_run_folders_merge_by_run_id(reports, tmp_path):
    history = tmp_path / "history" / "summaries"
    history.mkdir(parents=True)
    for run in reports.iterdir():
        (history / f"{run.name}.json").write_text((run / "summary.json").read_text())
    (history / "20251201T000000Z-old000.json").write_text(
        (reports / "20260101T000000Z-abc120" / "summary.json").read_text())
    cat = Catalog.of([reports, tmp_path / "history"])
    assert len(cat.refs) == 3 and all(r.folder for r in cat.refs if r.key.startswith("2026"))
    old = cat.ref("20251201T000000Z-old000")
    assert not old.folder and cat.head(old).run_id == "20251201T000000Z-old000"
    assert cat.case(old, "pass-weekly-revenue") is not None and not list(history.glob("view-*"))


def test_shard_and_merged_runs_are_told_apart(reports):
    shard, merged = reports / "20260101T000000Z-abc120", reports / "20260102T000000Z-abc121"
    (shard / "shard.json").write_text("{}")
    (merged / "events.jsonl").write_text(json.dumps({"event": "run_started", "shards": ["a", "b"]}) + "\n")
    kinds = {h.run_id: h.kind for h in Catalog.of([reports]).heads()}
    assert kinds == {shard.name: "shard", merged.name: "merged"}


def test_a_folder_that_is_not_one_is_a_clear_error(tmp_path):
    with pytest.raises(GateInputError, match="not a folder"):
        Catalog.of([tmp_path / "missing"])


def test_a_bad_summary_names_its_file(reports):
    run = reports / "20260101T000000Z-abc120"
    (run / "summary.json").write_text('{"run_id": 3}')
    cat = Catalog.of([reports])
    with pytest.raises(GateInputError, match="summary.json.*not a valid summary"):
        cat.head(cat.ref(run.name))


def test_an_unreadable_run_is_left_out_of_the_listing_and_named(reports):
    run = reports / "20260101T000000Z-abc120"
    (run / "summary.json").write_text("{broken")
    cat = Catalog.of([reports])
    assert [h.run_id for h in cat.heads()] == ["20260102T000000Z-abc121"]
    assert len(cat.problems) == 1 and "abc120/summary.json" in cat.problems[0]


def test_refresh_finds_new_runs_only_in_the_folders_given(reports):
    one = Catalog.of([reports / "20260101T000000Z-abc120"])
    whole = Catalog.of([reports])
    vf.write_runs(reports, 3)  # a third run appears beside them
    one.refresh()
    whole.refresh()
    assert [r.key for r in one.refs] == ["20260101T000000Z-abc120"]
    assert len(whole.refs) == 3


def test_a_run_holding_a_lone_surrogate_is_listed_with_it_shown_escaped(tmp_path):
    """A CLI's undecodable output reaches summary.json and the transcript JSON-escaped (\\udc80):
    the run is listed, its case and transcript readable, the surrogate shown as \\udc80."""
    import reports_fixtures as rf
    from rubricgate.models.results import Grade
    from rubricgate.records.files import write_summary, write_transcript

    run = tmp_path / "reports" / "20260101T000000Z-abc123"
    run.mkdir(parents=True)
    s = rf.summary(run_id=run.name)
    trial = s.cases[0].trials[0]
    trial.grades["verdict"] = Grade(passed=False, category="wrong_tier", reason="bad \udc80 byte")
    write_summary(run, s)
    write_transcript(run, trial.case_id, trial.trial, rf.transcript(final="answer \udc80 here"))
    cat = Catalog.of([tmp_path / "reports"])
    assert [h.run_id for h in cat.heads()] == [run.name] and not cat.problems
    cell = cat.case(cat.ref(run.name), trial.case_id)
    assert cell.trials[0].fails["verdict"] == "wrong_tier: bad \\udc80 byte"
    assert cat.transcript(cat.ref(run.name), trial.transcript).final_text == "answer \\udc80 here"


def test_a_run_folder_named_otherwise_than_its_run_still_opens(reports):
    """A renamed folder (copied, or named for a baseline): its pages are named by the folder, so
    every link finds them, with its run index written by the run itself."""
    from rubricgate.view import urls
    from rubricgate.view.site import site_for

    Catalog.of([reports]).heads()  # the index is written with the summary's own run id
    (reports / "20260101T000000Z-abc120").rename(reports / "renamed-run")
    site = site_for([reports])
    runs = site.page(urls.runs()).body.decode()
    assert urls.run("renamed-run") in runs
    page = site.page(urls.run("renamed-run"))
    assert page.status == 200 and b'id="run-id">renamed-run<' in page.body
    assert site.page(urls.transcript("renamed-run", vf.HOSTILE_ID, 1)).status == 200


def test_a_run_a_later_run_continued_is_no_trend_point_of_its_own(tmp_path):
    """The continued run and its continuation were two points of the trend, the second holding the
    first's trials again."""
    import reports_fixtures as rf

    from rubricgate.models.results import GateDetail
    from rubricgate.view.pages import branch_series

    def run(run_id: str, day: int, continues: list[str]) -> None:
        s = rf.passing_summary().model_copy(update={"run_id": run_id, "started_at": f"2026-01-0{day}T00:00:00Z",
                                                   "gate": GateDetail(continues=continues)})
        rf.write_run_dir(tmp_path / "reports" / run_id, s)
    run("20260101T000000Z-aaa001", 1, [])
    run("20260102T000000Z-aaa002", 2, [])
    run("20260103T000000Z-aaa003", 3, ["20260102T000000Z-aaa002"])
    cat = Catalog.of([tmp_path / "reports"])
    assert len(cat.heads()) == 3  # listed as runs all the same
    assert [h.run_id for hs in branch_series(cat).values() for h in hs] == ["20260101T000000Z-aaa001",
                                                                          "20260103T000000Z-aaa003"]


def test_a_run_a_later_run_regraded_is_no_trend_point_of_its_own(tmp_path):
    """A run and its regrade were two points of the trend, the regrade holding the run's trials."""
    import reports_fixtures as rf

    from rubricgate.view.pages import branch_series

    first, again = "20260101T000000Z-aaa001", "20260102T000000Z-aaa002"
    rf.write_run_dir(tmp_path / "reports" / first, rf.passing_summary().model_copy(update={"run_id": first}))
    rf.write_run_dir(tmp_path / "reports" / again, rf.passing_summary().model_copy(
        update={"run_id": again, "counted_runs": [first], "config": {"regraded_from": first}}))
    cat = Catalog.of([tmp_path / "reports"])
    assert [h.run_id for hs in branch_series(cat).values() for h in hs] == [again]


def test_a_run_killed_before_its_summary_is_listed_as_stopped_never_as_running(reports):
    """A run SIGKILLed mid-trials leaves events.jsonl and no summary: the runs page said
    "running now" of it for ever, its trials reachable only as a run in progress."""
    from rubricgate.records.events import EventLog
    from rubricgate.view import live, pages

    killed, going = reports / "20260103T000000Z-kill00", reports / "20260103T000000Z-live00"
    for run in (killed, going):
        run.mkdir()
    (killed / "events.jsonl").write_text('{"event": "run_started", "total_trials": 3}\n{"event": "tri')
    log = EventLog(going / "events.jsonl")
    try:
        log.emit("run_started", total_trials=3)
        cat = Catalog.of([reports])
        page, still = pages.runs_page(cat), live.progress(cat.ref(going.name))
    finally:
        log.close()
    assert page["live"] == [going.name] and page["stopped"] == [killed.name]
    assert live.progress(cat.ref(killed.name))["stopped"] and not still["stopped"]


def test_a_folder_name_too_long_for_the_file_system_is_no_run_of_the_catalog(tmp_path):
    """A comparison.json naming a side's folder by a 5,000-character name (bench/fuzz_inputs.py,
    seed 41): Path.exists() raised ENAMETOOLONG and the comparison's page was an internal error."""
    from rubricgate.view.catalog import Catalog

    assert Catalog(refs=[]).ref_at(tmp_path / ("x" * 5000)) is None
