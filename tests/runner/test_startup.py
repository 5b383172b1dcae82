"""runner/startup.py: the run's staged /etc (isolation/etc_folder.py) only where agents run in a
sandbox; the continuation marks a copy-only run's retired cache folder gained meanwhile, kept."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from rubricgate.agents.builtin import BuiltinAgent
from rubricgate.isolation.sandbox import SandboxPolicy
from rubricgate.runner.startup import with_staged_etc


class ProcessAgent:
    def execute(self) -> None:  # what makes an agent one that runs a program of its own
        raise AssertionError("not started here")


def test_a_copy_only_run_stages_nothing(tmp_path: Path) -> None:
    policy = SandboxPolicy("copy-only")
    assert with_staged_etc(policy, SimpleNamespace(staging=tmp_path / "staging"), {"cli": ProcessAgent()}) is policy
    assert not (tmp_path / "staging").exists()


def test_an_in_process_reviewer_stages_nothing(tmp_path: Path) -> None:
    policy = SandboxPolicy("bwrap")
    assert with_staged_etc(policy, SimpleNamespace(staging=tmp_path / "staging"), {"builtin": BuiltinAgent()}) is policy
    assert not (tmp_path / "staging").exists()


def test_a_sandboxed_cli_gets_etc_staged_in_the_runs_private_folder(tmp_path: Path) -> None:
    staged = with_staged_etc(SandboxPolicy("bwrap"), SimpleNamespace(staging=tmp_path / "staging"), {"cli": ProcessAgent()})
    assert staged.etc[:3] == ("--ro-bind", str(tmp_path / "staging" / "etc"), "/etc")
    assert (tmp_path / "staging" / "etc" / "passwd").is_file()


def test_a_copy_only_run_keeps_the_continuation_marks_written_while_it_ran(repo: Path) -> None:
    """A copy-only run moves its cache folder out of use and writes back the notes and marks of
    before its first agent: the mark another continuation of this user's wrote meanwhile went with
    the folder, and a copy of the run it continues, under another reports folder, was continued
    again (the error spent twice)."""
    from rubricgate.gating.continuation_marks import running_mark, user_mark
    from rubricgate.pipeline import RunOptions, run_suite
    from rubricgate.runner.cache import default_cache_dir
    from tests.fake_reviewer import install

    install(repo, ["answer"])  # copy-only
    mark = user_mark(default_cache_dir(), "20260101T000000Z-abcdef")
    assert mark is not None

    def another_continuation_starts(event: dict) -> None:
        if event.get("event") == "case_started" and not mark.exists():
            mark.parent.mkdir(parents=True, exist_ok=True)
            mark.write_text(running_mark() + "\n")  # this process: alive

    outcome = run_suite(RunOptions(repo=repo, listeners=[another_continuation_starts]))
    assert outcome.summary.isolation == "copy-only", outcome.summary.isolation
    assert any("the cache folder was cleared" in w for w in outcome.summary.decision.warnings)
    assert mark.read_text() == running_mark() + "\n"
