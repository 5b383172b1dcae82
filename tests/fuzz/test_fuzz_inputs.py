"""Mutated inputs of every format, at a small seeded count (bench/fuzz_inputs.py runs 1,000 each).

No input may end in an exception, a hang or an outcome outside its documented classes
(tests/fuzz/targets.py); each failure names the seed and index that reproduce it:
`python bench/fuzz_inputs.py --seed S --only FORMAT --count INDEX+1`.
"""

from __future__ import annotations

import os

import pytest

from tests.fuzz.harness import Tally, fuzz_files, fuzz_side_logs, fuzz_transcripts
from tests.fuzz.targets import FILES, RECORDINGS, World, recordings, side_logs

COUNT = int(os.environ.get("RUBRICGATE_FUZZ_COUNT", "6"))
SEED = int(os.environ.get("RUBRICGATE_FUZZ_SEED", "2026"))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    made = World.make(tmp_path_factory.mktemp("fuzz-world"))
    yield made
    made.close()


def _clean(tallies: list[Tally]) -> None:
    [tally] = tallies
    assert tally.inputs == COUNT
    failures = [f"{f.label} index {f.index} ({'+'.join(f.mutations)}): {f.error}" for f in tally.failures]
    assert not failures, f"seed {SEED}:\n" + "\n".join(failures)


@pytest.mark.parametrize("fmt", sorted(recordings()))
def test_mutated_transcripts_end_in_a_documented_class(world: World, fmt: str) -> None:
    _clean(fuzz_transcripts(world, COUNT, SEED, {fmt}))


@pytest.mark.parametrize("fmt", sorted(side_logs()))
def test_mutated_side_logs_are_read_or_stop_the_run_in_a_documented_class(world: World, fmt: str) -> None:
    _clean(fuzz_side_logs(world, COUNT, SEED, {fmt}))


@pytest.mark.parametrize("fmt", [f.name for f in FILES])
def test_mutated_files_are_read_or_refused_in_one_line(world: World, fmt: str) -> None:
    _clean(fuzz_files(world, COUNT, SEED, {fmt}))


def test_every_recorded_cli_is_fuzzed() -> None:
    """A CLI's recordings are picked up without a list to update (a folder per CLI and version;
    a folder of a CLI without a CliSpec fails in `recordings`)."""
    folders = {p.name.split("-")[0] for p in RECORDINGS.iterdir() if p.is_dir()}
    fuzzed = {r.cli for recs in recordings().values() for r in recs}
    assert fuzzed == folders and {"claude", "codex", "cortex", "opencode"} <= fuzzed
