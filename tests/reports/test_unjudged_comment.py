"""The comment for a push the gate judged nothing at: marked as the gate's, inert markdown."""

from __future__ import annotations

from rubricgate.reports.comment import MARKER
from rubricgate.reports.unjudged_comment import cannot_judge_body, unchanged_body


def test_a_branch_name_or_reason_is_inert_markdown():
    body = unchanged_body("origin/`x`@team<img src=y>")
    assert body.startswith(MARKER) and "<img" not in body and "@team" not in body and "\\`x\\`" in body
    body = cannot_judge_body("line one\n::error::forged")
    assert body.startswith(MARKER) and "COULD NOT JUDGE" in body and "\n::error::" not in body
