"""The comparison that decided a pull request is a run of its own in the viewer: `compare --base`
keeps comparison.json beside its runs and `--json` writes the same record (the workflow's
reports/compare.json); the runs page lists it once, its page opens with the runs it compared, and
a record written in format 2 (before it carried its runs) still opens."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402

from rubricgate.flows.comparison_record import RECORD_FILE, comparison_record, write_record  # noqa: E402
from rubricgate.gating.compare import compare_summaries  # noqa: E402
from rubricgate.models.comparison import ComparisonRecord  # noqa: E402
from rubricgate.models.config import GateConfig  # noqa: E402
from rubricgate.view import comparisons, urls  # noqa: E402
from rubricgate.view.catalog import Catalog  # noqa: E402
from rubricgate.view.site import site_for  # noqa: E402

BASE, HEAD = "20260101T000000Z-aaa001", "20260101T000001Z-aaa002"


def _comparison():
    base = rf.passing_summary().model_copy(update={"run_id": BASE, "reviewer": rf.reviewer_records()[1]})
    head = rf.summary(run_id=HEAD)
    return compare_summaries(base, head, GateConfig(), "reviewer at origin/main", "working tree"), base, head


def _compare_folder(reports: Path, name: str = "compare-20260101T000000Z-ccc003") -> Path:
    """A `compare --base` folder as the CLI leaves it: base/<run>, head/<run>, comparison.json."""
    comparison, base, head = _comparison()
    folder = reports / name
    rf.write_run_dir(folder / "base" / BASE, base)
    rf.write_run_dir(folder / "head" / HEAD, head)
    record = comparison_record(comparison, started_at="2026-01-01T00:00:02Z", record_id=name,
                               runs=([folder / "base" / BASE], [folder / "head" / HEAD]), env={})
    write_record(folder / RECORD_FILE, record)
    return folder


def test_a_record_keeps_its_runs_relative_to_itself_and_its_decision(tmp_path):
    folder = _compare_folder(tmp_path / "reports")
    data = json.loads((folder / RECORD_FILE).read_text())
    assert data["format_version"] == 3 and data["kind"] == "compare" and data["id"] == folder.name
    assert data["base_runs"] == [f"base/{BASE}"] and data["head_runs"] == [f"head/{HEAD}"]
    assert data["decision"]["status"] == "regression" and data["counts"]["regressed"] == 1


def test_the_runs_page_lists_the_comparison_once_and_hides_its_own_runs(tmp_path):
    reports = tmp_path / "reports"
    folder = _compare_folder(reports)
    (reports / "compare.json").write_bytes((folder / RECORD_FILE).read_bytes())  # what --json wrote: the same record
    html = site_for([reports]).page(urls.runs()).body.decode()
    rows = [line for line in html.split("<tr class=\"run\"")[1:]]
    assert len(rows) == 1 and f'data-run="{folder.name}" data-kind="compare"' in rows[0]
    assert urls.compare_record(folder.name) in rows[0] and "REGRESSION" in rows[0]
    assert BASE not in html and HEAD not in html.split("<table id=\"runs\"")[1]  # the rounds are on its page


def test_its_page_shows_the_flips_and_links_the_runs_it_compared(tmp_path):
    reports = tmp_path / "reports"
    folder = _compare_folder(reports)
    page = site_for([reports]).page(urls.compare_record(folder.name))
    html = page.body.decode()
    assert page.status == 200 and 'data-case="block-missing-description" data-kind="regressed"' in html
    assert f'href="../{urls.run(BASE)}"' in html and f'href="../{urls.run(HEAD)}"' in html
    assert "reviewer at origin/main" in html and "<th scope=\"row\">tone-kind</th>" in html  # the rule table's diff
    side = site_for([reports]).page(urls.run(HEAD)).body.decode()
    assert 'id="side-note"' in side and urls.compare_record(folder.name) in side


@pytest.mark.parametrize("gone", ["base", "head"])
def test_its_page_opens_when_the_runs_of_one_side_are_gone(tmp_path, gone):
    """Found by the fuzz of comparison.json: a side without its runs raised in the template."""
    import shutil

    reports = tmp_path / "reports"
    folder = _compare_folder(reports)
    shutil.rmtree(folder / gone)
    page = site_for([reports]).page(urls.compare_record(folder.name))
    html = page.body.decode()
    assert page.status == 200 and 'data-kind="regressed"' in html, html
    assert 'id="rules"' not in html  # no rule table set against a side that is not there


def test_a_format_2_compare_json_from_the_workflow_still_opens(tmp_path):
    comparison, _, _ = _comparison()
    reports = tmp_path / "reports"
    reports.mkdir()
    from dataclasses import asdict

    old = {"format_version": 2, "base": comparison.base_label, "head": comparison.head_label, "order": {},
           "counts": comparison.counts(), "flips": [asdict(f) for f in comparison.flips],
           "tests": [asdict(t) for t in comparison.tests], "decision": comparison.decision.model_dump(mode="json")}
    (reports / "compare.json").write_text(json.dumps(old, indent=2))
    site = site_for([reports])
    runs = site.page(urls.runs()).body.decode()
    assert 'data-run="compare" data-kind="compare"' in runs and "left out" not in runs
    html = site.page(urls.compare_record("compare")).body.decode()
    assert "REGRESSION" in html and "block-missing-description" in html


def test_a_summary_is_never_taken_for_a_record_and_a_broken_record_is_named(tmp_path):
    reports = tmp_path / "reports"
    rf.write_run_dir(reports / BASE, rf.summary(run_id=BASE))
    (reports / "history.json").write_text(rf.summary(run_id=HEAD).model_dump_json(indent=2))
    (reports / "broken.json").write_text('{"format_version": 3, "kind": "compare", "decision": 7}')
    cat = Catalog.of([reports])
    assert sorted(r.key for r in cat.refs) == sorted([BASE, "history"])
    assert cat.comparisons() == [] and any("broken.json" in p and "not a comparison record" in p for p in cat.problems)


@pytest.mark.parametrize("head", [b'{"format_version": 1, "run_id": "x"}', b'[1, 2]', b'{"base": 1}'])
def test_only_a_records_first_bytes_make_it_one(tmp_path, head):
    path = tmp_path / "x.json"
    path.write_bytes(head)
    assert not comparisons.is_record(path)
    path.write_bytes(b'{\n  "format_version": 2,\n  "base": "a"}')
    assert comparisons.is_record(path)


def test_the_cli_writes_the_record_beside_the_runs_and_to_json(tmp_path):
    """`compare --base` on a real repository: comparison.json in its folder, the same record in --json."""
    import subprocess

    from tests.conftest import make_repo, set_severity

    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary", "block/data-loader"])
    set_severity(repo, "fm-description-required", "warning")
    out = tmp_path / "compare.json"
    got = subprocess.run([sys.executable, "-m", "rubricgate", "compare", "--base", "HEAD", "--repo", str(repo),
                          "--json", str(out)], capture_output=True, text=True)
    assert got.returncode == 1, got.stderr
    folder = next((repo / "reports").glob("compare-*"))
    kept = ComparisonRecord.model_validate_json((folder / RECORD_FILE).read_text())
    written = ComparisonRecord.model_validate_json(out.read_text())
    assert kept.id == written.id == folder.name and kept.decision.status == "regression" and kept.branch == "main"
    assert [(folder / p).is_dir() for p in kept.base_runs + kept.head_runs] == [True, True]
    assert [(out.parent / p).is_dir() for p in written.base_runs + written.head_runs] == [True, True]


def test_the_runs_page_counts_the_trials_the_comparison_ran(tmp_path):
    """Its row's trials cell read 0 beside "1 failing": a comparison that ran every case on both
    sides listed as having run nothing."""
    reports = tmp_path / "reports"
    folder = _compare_folder(reports)
    record = ComparisonRecord.model_validate_json((folder / RECORD_FILE).read_text())
    ran = max(t.base_trials + t.head_trials for t in record.tests)
    assert ran > 0
    html = site_for([reports]).page(urls.runs()).body.decode()
    row = html.split("<tr class=\"run\"")[1]
    assert f'data-label="trials">{ran} <span class="muted">' in row, row
