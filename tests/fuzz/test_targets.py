"""The fuzz's own promises (issues 37 and 38): every CLI's recordings and every file format are
fuzzed, bench/fuzz_inputs.py runs at least 1,000 inputs of each, an outcome outside a format's
classes or a hang is a failure, and every class is documented in docs/architecture.md beside
the table of the last full run."""

from __future__ import annotations

import re
import sys
import time
import typing
from pathlib import Path

import pytest

from bench import fuzz_inputs
from rubricgate.agents.registry import cli_specs
from rubricgate.models.transcript import Termination
from tests.fuzz import harness
from tests.fuzz.targets import (
    COMPANIONS,
    FILES,
    RECORDINGS,
    ROOT,
    SIDE_LOG_CLASSES,
    TERMINATIONS,
    TRANSCRIPT_CLASSES,
    VERDICT_STATUSES,
    recordings,
    side_logs,
)

DOC = ROOT / "docs" / "architecture.md"


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text.split("## Data from outside", 1)[1].split("\n## ", 1)[0]


def _table(header: str) -> list[list[str]]:
    """The body rows (cells) of the Markdown table whose header line starts with `header`."""
    lines = _section().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def _ticked(cell: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", cell))


def _classes() -> dict[str, set[str]]:
    out = {fmt: set(TRANSCRIPT_CLASSES) for fmt in recordings()}
    out |= {fmt: set(SIDE_LOG_CLASSES) for fmt in side_logs()}
    return out | {f.name: set(f.classes) for f in FILES}


# -- failure paths of the harness first: what makes an input a failure ---------------------------

def test_an_outcome_outside_the_classes_is_a_failure() -> None:
    tally = harness.Tally("x")
    harness._one(tally, lambda: "loaded", lambda err: harness.Failure("x", "x", 0, [], err), ("loaded",))
    harness._one(tally, lambda: "half loaded", lambda err: harness.Failure("x", "x", 1, [], err), ("loaded",))
    assert tally.inputs == 2 and [f.index for f in tally.failures] == [1]
    assert "'half loaded' is none of the documented classes" in tally.failures[0].error


def test_an_exception_and_a_hang_are_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harness, "HANG_S", 0.2)
    tally = harness.Tally("x")

    def boom() -> str:
        raise KeyError("k")

    harness._one(tally, boom, lambda err: harness.Failure("x", "x", 0, [], err), ("loaded",))
    harness._one(tally, lambda: (time.sleep(30), "loaded")[1], lambda err: harness.Failure("x", "x", 1, [], err),
                 ("loaded",))
    assert [f.error.split(":")[0] for f in tally.failures] == ["KeyError", "Hang"]
    assert tally.outcomes["FAILED"] == 2


# -- coverage: every CLI, every file a CLI writes, every file format, 1,000 of each in bench/ -----

def test_every_cli_rubricgate_drives_has_recordings_in_the_fuzz() -> None:
    fuzzed = {r.cli for recs in recordings().values() for r in recs}
    assert fuzzed == set(cli_specs())
    assert {"claude", "cortex", "opencode", "codex", "gemini", "qwen", "copilot"} <= fuzzed


def test_every_file_a_cli_writes_beside_its_stream_is_fuzzed() -> None:
    """A recorded file that is neither a stream, its meta, a known companion nor a side log fails
    here, so a new one (a CLI's usage or session file) is given to its parser and mutated (a side
    log of a CLI without a watch fails in `side_logs`)."""
    known = (".ndjson", ".meta.json", ".log", ".py", *(c.suffix for c in COMPANIONS.values()))  # cortex/derive.py
    strays = [p for p in RECORDINGS.glob("*/*") if p.is_file() and not p.name.endswith(known)]
    assert strays == []
    given = {k for recs in recordings().values() for r in recs for k in r.companions}
    assert given == set(COMPANIONS)  # codex's rollout, Copilot's usage file
    copilot = [r for r in recordings()["copilot"] if "usage" in r.companions]
    assert copilot and all(r.folder != "copilot-1.0.40" for r in copilot)  # usage files from 1.0.80 on


def test_the_bench_runs_at_least_1000_inputs_of_every_format() -> None:
    assert fuzz_inputs.DEFAULT_COUNT >= 1000
    assert [fmt for _, fmt in fuzz_inputs.formats()] == [*recordings(), *side_logs(), *(f.name for f in FILES)]
    assert "qwen debug log" in side_logs()


def test_transcript_classes_are_the_models_terminations_and_the_graders_statuses() -> None:
    assert TERMINATIONS == typing.get_args(Termination)
    graders = ROOT / "rubricgate" / "graders"
    statuses = {m for path in graders.glob("*.py") for m in re.findall(r'status="([a-z_]+)"', path.read_text())}
    assert statuses == {*VERDICT_STATUSES, "extractor_error"}  # the hook's error needs a configured hook


# -- the documentation --------------------------------------------------------------------------

def test_every_outcome_class_of_every_format_is_documented() -> None:
    rows = _table("| input | outcome classes |")
    missing = []
    for fmt, classes in _classes().items():
        found = [cells for cells in rows if f"`{fmt}`" in cells[0]]
        if len(found) != 1:
            missing.append(f"{fmt}: {len(found)} rows")
            continue
        words = _ticked(found[0][1])
        missing += [f"{fmt}: {part}" for cls in classes for part in cls.split("/") if part not in words]
    assert missing == []


def test_the_last_full_run_in_the_docs_has_1000_clean_inputs_of_every_format() -> None:
    rows = {cells[0]: cells for cells in _table("| format | inputs")}
    short = []
    for fmt in _classes():
        cells = rows.get(fmt)
        inputs = int(cells[1].split()[0].replace(",", "")) if cells else 0
        if inputs < fuzz_inputs.DEFAULT_COUNT or (cells and cells[2] != "0"):
            short.append(fmt)
    assert short == []
    assert "python bench/fuzz_inputs.py" in _section()


def test_the_table_reader_sees_a_missing_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The two checks above read the real table: one without a format's row must fail them."""
    text = DOC.read_text(encoding="utf-8")
    doc = tmp_path / "architecture.md"
    doc.write_text(re.sub(r"\n\| shard\.json \| \d+ \|[^\n]*", "", text, count=1), encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "DOC", doc)
    with pytest.raises(AssertionError):
        test_the_last_full_run_in_the_docs_has_1000_clean_inputs_of_every_format()
