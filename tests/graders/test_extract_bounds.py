"""A reviewer's own answer read as YAML or JSON (graders/extract.py) is bounded like every other
reviewer data (issue 37): too deep, or aliases expanding to a billion values, is a malformed
verdict of that trial, never RecursionError or a hang."""

from __future__ import annotations

import pytest

from rubricgate.graders.extract import _structured

BOMB = "a0: &a0 [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 10))


@pytest.mark.parametrize("fmt, text, says", [
    ("yaml", "findings: " + "[" * 100_000 + "]" * 100_000, "nested deeper than"),
    ("yaml", "findings:\n" + "".join("  " * i + "- \n" for i in range(2_000)), "nested deeper than"),
    ("json", '{"findings": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper than"),
    ("yaml", BOMB, "expand to more than"),
], ids=["yaml-flow", "yaml-block", "json", "yaml-aliases"])
def test_an_answer_too_deep_or_too_large_is_malformed(fmt: str, text: str, says: str) -> None:
    parsed = _structured(text, fmt)
    assert parsed.status == "malformed" and says in parsed.error
