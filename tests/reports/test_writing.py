"""Report writing: atomic and scrubbed files, failures collected, a failure turns the decision to exit 2."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from rubricgate.records import writing
from rubricgate.reports import html as html_module
from rubricgate.reports.bundle import finish_run_reports, with_write_failures, write_reports
from rubricgate.models.results import Decision
from rubricgate.records.events import EventLog
from rubricgate.records.files import read_summary
from rubricgate.records.writing import WriteFailure, write_text_atomic
from rubricgate.secrets import REDACTED
from tests import reports_fixtures as rf

SECRET = "sk-writing-0123456789"


def _enospc(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    real = writing._create

    def full(path: Path):
        if path.name.startswith(f".{name}."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path)
    monkeypatch.setattr(writing, "_create", full)


# -- failure paths first ----------------------------------------------------------------------

def test_failed_atomic_write_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "junit.xml"
    target.write_text("old")
    _enospc(monkeypatch, "junit.xml")
    with pytest.raises(OSError):
        write_text_atomic(target, "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["junit.xml"]


def test_event_log_records_a_failed_write_and_carries_on(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").mkdir()  # a directory in the way
    heard = []
    log = EventLog(tmp_path / "events.jsonl", [heard.append], [SECRET])
    log.emit("trial_result", reason=f"key {SECRET}")
    log.close()
    assert [f.path for f in log.write_failures] == [str(tmp_path / "events.jsonl")]
    assert heard[0]["reason"] == f"key {REDACTED}"  # listeners print to CI logs: scrubbed too


def test_report_command_still_raises_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "report.html").mkdir()
    with pytest.raises(Exception, match="report.html"):
        write_reports(rf.passing_summary(), tmp_path)


def test_a_run_file_that_does_not_read_is_named_as_read_not_written(tmp_path: Path, monkeypatch) -> None:
    """`report RUN` with a truncated transcript said 'cannot write: invalid JSON', and its fix
    pointed at the reports folder's permissions."""
    from rubricgate.errors import GateInputError

    def damaged(*args, **kwargs):
        raise GateInputError(str(tmp_path / "transcripts" / "a-1.json"), "", "invalid JSON: Unterminated string")

    monkeypatch.setattr("rubricgate.reports.bundle.html_pieces", damaged)
    with pytest.raises(GateInputError) as raised:
        write_reports(rf.passing_summary(), tmp_path)
    assert "a-1.json: cannot read: invalid JSON" in str(raised.value) and "restore" in str(raised.value)
    (tmp_path / "report.html").mkdir()  # a report that cannot be written is still a write
    monkeypatch.undo()
    with pytest.raises(GateInputError, match="cannot write"):
        write_reports(rf.passing_summary(), tmp_path)


def test_finish_turns_a_pass_into_exit_2_and_writes_the_summary_last(tmp_path: Path) -> None:
    (tmp_path / "junit.xml").mkdir()
    final = finish_run_reports(rf.passing_summary(), tmp_path, cases=None)
    assert final.decision.exit_code == 2 and final.decision.status == "error"
    assert final.decision.reasons[0].startswith(f"could not write {tmp_path / 'junit.xml'}")
    assert "the rates alone said pass (exit 0)" in final.decision.reasons[1]
    assert read_summary(tmp_path).decision == final.decision
    assert "could not write" in (tmp_path / "report.html").read_text()  # re-rendered with the final decision


def test_failures_before_the_summary_are_counted(tmp_path: Path) -> None:
    late = [WriteFailure("events.jsonl", "No space left on device")]
    final = finish_run_reports(rf.passing_summary(), tmp_path, cases=None, before_summary=lambda s: late)
    assert final.decision.exit_code == 2 and "events.jsonl" in final.decision.reasons[0]


def test_an_interrupt_before_the_summary_leaves_no_page_stating_a_decision(tmp_path: Path) -> None:
    """SIGTERM after comment.md and report.html were written, before summary.json: the run exited
    2, "nothing was gated", and its folder kept a comment saying PASS (uploaded with the run)."""
    def interrupted(summary):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        finish_run_reports(rf.passing_summary(), tmp_path, cases=None, before_summary=interrupted)
    assert not {p.name for p in tmp_path.iterdir()} & {"summary.json", "report.html", "comment.md", "junit.xml"}


def test_with_write_failures_keeps_an_earlier_cannot_judge_reason() -> None:
    failed = rf.summary(decision=Decision(status="error", exit_code=2, reasons=["run interrupted"]))
    out = with_write_failures(failed, [WriteFailure("x", "boom")])
    assert out.decision.reasons == ["could not write x: boom", "run interrupted"]
    again = with_write_failures(out, [WriteFailure("x", "boom"), WriteFailure("y", "full")])
    assert again.decision.reasons == ["could not write x: boom", "could not write y: full", "run interrupted"]


# -- what is written --------------------------------------------------------------------------

def test_atomic_write_scrubs_and_survives_lone_surrogates(tmp_path: Path) -> None:
    path = write_text_atomic(tmp_path / "r.html", f"<p>{SECRET[:12]}</p>\ud800", [SECRET])
    assert path.read_text(encoding="utf-8") == f"<p>{REDACTED}</p>\\ud800"


def test_a_good_run_writes_every_report_and_keeps_its_decision(tmp_path: Path) -> None:
    final = finish_run_reports(rf.passing_summary(), tmp_path, cases=None)
    assert final.decision.exit_code == 0
    assert {p.name for p in tmp_path.iterdir()} == {"summary.json", "report.html", "comment.md", "junit.xml"}


def test_reports_written_in_pieces_hold_no_secret_at_any_cut(tmp_path: Path, monkeypatch) -> None:
    """report.html and junit.xml are scrubbed piece by piece: with a page cut after nearly every
    element, a secret in every reason and quote is still found whole (and was there to find: a
    value not shaped like a credential, which the page would mask anyway)."""
    secret = "pl41n-wr1ting-value-Qx"
    monkeypatch.setattr(html_module, "PIECE_CHARS", 1)
    s = rf.summary()
    for t in (t for c in s.cases for t in c.trials):
        for dim, grade in t.grades.items():
            t.grades[dim] = grade.model_copy(update={"reason": f"said {secret} twice: {secret}"})
        for finding in t.findings:
            finding.quote = f"key={secret}"
    assert secret in "".join(html_module.html_pieces(s, None))
    finish_run_reports(s, tmp_path, cases=None, secrets=[secret])
    for name in ("report.html", "junit.xml"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert secret[:12] not in text and REDACTED in text, name
