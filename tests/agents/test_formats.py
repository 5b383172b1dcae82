"""The plain-text transcript format (agent.format: text, what `init --agent command` writes): the
stdout is the answer, with no end-of-run event to show that it is whole."""

from __future__ import annotations

import pytest

from rubricgate.agents.ending import finish
from rubricgate.agents.formats import parse_text
from rubricgate.graders.failures import is_infra_failure
from rubricgate.isolation.process import ProcessResult


def _ended(stdout: bytes, exit_code: int | None):
    proc = ProcessResult(exit_code=exit_code, timed_out=False, stdout_truncated=False,
                         stderr_tail="Segmentation fault", duration_s=0.5)
    return finish(parse_text(stdout), proc, version=None)


@pytest.mark.parametrize("exit_code", [-11, 139, -9])
def test_a_reviewer_killed_by_a_signal_mid_answer_is_a_crash_not_its_answer(exit_code: int) -> None:
    """Its half answer was `completed`, the signal unrecorded, graded: no verdict, a REGRESSION."""
    t = _ended(b"Reviewing the change...\n", exit_code)
    assert t.failure == "signal" and is_infra_failure(t) and t.error.startswith("killed by SIG")


def test_an_error_exit_after_an_answer_keeps_the_answer_and_says_how_it_ended() -> None:
    t = _ended(b'{"tier": "PASS"}\n', 1)
    assert t.final_text == '{"tier": "PASS"}\n' and not is_infra_failure(t) and t.error.startswith("exit 1")


def test_a_clean_exit_with_an_answer_completes_and_one_with_none_did_not_start() -> None:
    assert _ended(b"PASS\n", 0).termination == "completed" and _ended(b"PASS\n", 0).failure is None
    assert _ended(b"", 0).failure == "start"
