"""Copilot CLI's package, unpacked once per run and shown read-only to each sandboxed trial where
the CLI looks for it (agents/copilot_package.py). A stand-in binary unpacks as the real one does
on `--version` (a folder under $XDG_CACHE_HOME/copilot/pkg marked `.extraction-complete`) and
counts its runs; the real CLI runs from the shared copy in tests/e2e and bench/copilot_package.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rubricgate.agents.copilot_package import SharedPackages
from rubricgate.isolation.sandbox import SandboxPolicy
from tests.agent_recordings import agent_request


def stand_in(tmp_path: Path, unpacks: bool = True) -> tuple[Path, Path]:
    """(the program, the file each of its runs appends a line to)."""
    runs = tmp_path / "runs.txt"
    program = tmp_path / "bin" / "copilot"
    program.parent.mkdir()
    unpack = ('dir="$XDG_CACHE_HOME/copilot/pkg/linux-x64/9.9.9"; mkdir -p "$dir"; echo js > "$dir/index.js"; '
              ': > "$dir/.extraction-complete"; ') if unpacks else ""
    program.write_text(f'#!/bin/sh\necho run >> {runs}\n{unpack}echo "GitHub Copilot CLI 9.9.9."\n')
    program.chmod(0o755)
    return program, runs


def test_a_sandboxed_trial_is_shown_the_one_copy_read_only_where_the_cli_looks(tmp_path: Path) -> None:
    program, runs = stand_in(tmp_path)
    packages = SharedPackages()
    sandboxed = SandboxPolicy("bwrap")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = packages.request_for(agent_request(tmp_path / "a", sandbox=sandboxed), str(program))
    second = packages.request_for(agent_request(tmp_path / "b", sandbox=sandboxed), str(program))
    assert runs.read_text() == "run\n"  # unpacked once for the run, not once a trial
    for trial in (first, second):
        assert trial.sandbox is not None
        (folder, target), = trial.sandbox.shared_read_only
        assert target == trial.home / ".cache" / "copilot" / "pkg" / "linux-x64" / "9.9.9" and target.is_dir()
        assert (folder / ".extraction-complete").is_file() and (folder / "index.js").read_text() == "js\n"
    assert sandboxed.shared_read_only == ()  # the run's policy is untouched: each trial gets a copy


def test_an_unsandboxed_trial_unpacks_its_own(tmp_path: Path) -> None:
    """Copy-only: nothing would keep the reviewer from writing a shared copy."""
    program, runs = stand_in(tmp_path)
    packages = SharedPackages()
    for policy in (None, SandboxPolicy("copy-only")):
        request = agent_request(tmp_path, sandbox=policy)
        assert packages.request_for(request, str(program)) is request
    assert not runs.exists()


def test_a_binary_that_leaves_no_whole_copy_shares_nothing_and_is_asked_once(tmp_path: Path) -> None:
    program, runs = stand_in(tmp_path, unpacks=False)
    packages = SharedPackages()
    request = agent_request(tmp_path, sandbox=SandboxPolicy("bwrap"))
    assert packages.request_for(request, str(program)) is request
    assert packages.request_for(replace(request, trial=2), str(program)).sandbox == request.sandbox
    assert runs.read_text() == "run\n"


def test_the_copy_goes_with_the_adapter(tmp_path: Path) -> None:
    program, _ = stand_in(tmp_path)
    packages = SharedPackages()
    unpacked = packages.unpacked(str(program))
    assert unpacked is not None and unpacked.folder.is_dir()
    del packages
    import gc

    gc.collect()
    assert not unpacked.folder.exists()
