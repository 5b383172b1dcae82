"""rubricgate.models.reviewer_digests: two records' reviewer digests compared like with like."""

from __future__ import annotations

from rubricgate.models.reviewer_digests import reviewer_changed

FILES = {"reviewer/prompt.md": "a" * 64, "reviewer/rubric.md": "b" * 64}
SECTIONS = {"rubricgate.yaml#agent": "c" * 64, "rubricgate.yaml#gate": "d" * 64}


def test_a_record_without_sections_against_one_with_them_compares_the_files_alone():
    # An older rubricgate recorded the files only: every first run after an upgrade read "changed".
    assert not reviewer_changed(("old", FILES), ("new", FILES | SECTIONS))
    assert not reviewer_changed(("new", FILES | SECTIONS), ("old", FILES))
    assert reviewer_changed(("old", FILES), ("new", FILES | SECTIONS | {"reviewer/rubric.md": "e" * 64}))


def test_records_that_both_hold_sections_compare_them_too():
    assert reviewer_changed(("a", FILES | SECTIONS), ("b", FILES | SECTIONS | {"rubricgate.yaml#gate": "f" * 64}))
    assert not reviewer_changed(("a", FILES | SECTIONS), ("a", FILES | SECTIONS))


def test_without_digests_the_fingerprints_decide_and_an_unknown_one_is_no_change():
    assert reviewer_changed(("a", {}), ("b", FILES)) and not reviewer_changed(("a", {}), ("a", {}))
    assert not reviewer_changed(("", FILES), ("b", FILES | {"reviewer/rubric.md": "e" * 64}))
