"""runner/startup.py: the run's staged /etc (isolation/etc_folder.py) only where agents run in a sandbox."""

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
