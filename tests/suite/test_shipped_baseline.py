"""The baseline shipped in this repository was measured with the reviewer and config shipped
beside it: a fresh clone's first run (the README's first command) must not report its own
reviewer as changed since the baseline (a section of rubricgate.yaml the baseline does not record
heads that report with "rubricgate.yaml#agent, ... changed"), nor any of its cases as edited."""

from __future__ import annotations

from pathlib import Path

from rubricgate.gating.case_edits import with_case_digests
from rubricgate.reports.explain import fingerprint
from rubricgate.runner.digests import recorded_digests
from rubricgate.suite.config import load_config
from rubricgate.suite.load import load_all

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_baseline_records_every_reviewer_file_and_config_section_as_shipped():
    config = load_config(ROOT)
    now = recorded_digests(ROOT, config)
    baseline = load_all(ROOT).baseline
    assert baseline is not None
    assert baseline.reviewer_digests == now, "re-measure it: rubricgate baseline update --trials 3 --reason ..."
    assert baseline.measured_with.reviewer_digest == fingerprint(now)


def test_the_shipped_baseline_knows_every_case_of_the_shipped_suite_as_it_is():
    loaded = with_case_digests(load_all(ROOT), ROOT)
    assert loaded.baseline is not None and loaded.edited == []
    assert set(loaded.baseline.cases) == {c.id for c in loaded.cases}
    assert loaded.baseline.case_digests == loaded.case_digests
