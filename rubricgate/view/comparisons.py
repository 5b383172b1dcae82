"""The comparisons `rubricgate compare` decided, as runs of their own: a pull request's gate is
decided by `compare --base`, which keeps `comparison.json` in its folder (`compare-<id>/`, beside
its base and head runs) and writes the same record to `--json FILE` (the workflow's
`reports/compare.json`). The viewer lists each once, opens it, and links the runs it compared.

A file is told from a summary by its first bytes (a record's second key is `kind` or, in format
2, `base`), so a folder of history summaries is not read twice to find none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from rubricgate import boundary
from rubricgate.errors import GateInputError, unreadable
from rubricgate.models.comparison import ComparisonRecord
from rubricgate.models.view_index import RateCell, RunHead
from rubricgate.suite.yaml_json import validation_error
from rubricgate.view import safe

RECORD_FILE = "comparison.json"
SIDES = ("base", "head")
_SNIFF = re.compile(rb'^\s*\{\s*"format_version":\s*\d+,\s*"(kind|base)":')


@dataclass(frozen=True)
class ComparisonRef:
    """Where one comparison record is: `file` below `root`."""

    root: Path
    file: str

    def stem(self) -> str:
        """A record without its own id is named by its file (compare.json) or folder (compare-<id>)."""
        return self.root.name if self.file == RECORD_FILE else Path(self.file).stem


def is_record(path: Path) -> bool:
    """A comparison record rather than a summary, by its first bytes."""
    try:
        fd = safe.open_below(path.parent, path.name)
    except safe.Refused:
        return False
    with open(fd, "rb") as fh:
        return bool(_SNIFF.match(fh.read(256)))


def in_folder(folder: Path, notes: list[str] | None = None) -> tuple[list[ComparisonRef], list[Path]]:
    """The comparison records among `folder`'s files and `compare-*` folders, and the run folders
    those folders hold (each side's rounds: the comparison's runs, listed like any other); a side
    folder that cannot be read is left out, named in `notes`."""
    refs: list[ComparisonRef] = []
    runs: list[Path] = []
    for child in sorted(folder.iterdir()):
        if child.suffix == ".json" and safe.is_plain_file(child) and is_record(child):
            refs.append(ComparisonRef(folder, child.name))
        elif safe.is_plain_dir(child) and safe.is_plain_file(child / RECORD_FILE):
            refs.append(ComparisonRef(child, RECORD_FILE))
            runs += [run for side in SIDES if safe.is_plain_dir(child / side)
                     for run in _listed(child / side, notes) if safe.is_plain_dir(run)]
    return refs, runs


def _listed(folder: Path, notes: list[str] | None) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except PermissionError:
        if notes is not None:
            notes.append(unreadable(folder).one_line())
        return []


def side_of(run_folder: Path) -> str | None:
    """'compare-base' or 'compare-head' for a run a `compare --base` made, else None."""
    parent = run_folder.parent
    if parent.name in SIDES and safe.is_plain_file(parent.parent / RECORD_FILE):
        return f"compare-{parent.name}"
    return None


def read(ref: ComparisonRef) -> ComparisonRecord:
    """The record; GateInputError naming the file when it is not one."""
    display = str(ref.root / ref.file)
    try:
        return boundary.validate_json(ComparisonRecord, safe.read_bytes(ref.root, ref.file))
    except safe.Refused as exc:
        raise GateInputError(display, "", f"cannot read: {exc}", "check the reports folder") from exc
    except ValueError as exc:  # pydantic's ValidationError among them
        # A newer rubricgate's record is one: say so, and to upgrade.
        if isinstance(exc, ValidationError) and (first := validation_error(display, exc)).field == "format_version":
            raise first from exc
        raise GateInputError(display, "", f"not a comparison record: {str(exc).splitlines()[0]}",
                             "point the viewer at files `rubricgate compare` wrote") from exc


def key_of(ref: ComparisonRef, record: ComparisonRecord) -> str:
    return record.id or ref.stem()


def head_of(ref: ComparisonRef, record: ComparisonRecord) -> RunHead:
    """The record as a row of the runs page: its decision, each dimension's head rate with the
    base's as its baseline, its trials (both sides' counted trials of a dimension), when it ran (a
    format-2 file: when it was written)."""
    stamp = safe.file_stamp(ref.root, ref.file) or "0:0"
    started = record.started_at or datetime.fromtimestamp(int(stamp.split(":")[1]) / 1e9, UTC).isoformat(
        timespec="seconds")
    rates = {t.dimension: RateCell(rate=t.head_passes / t.head_trials if t.head_trials else None,
                                   passes=t.head_passes, trials=t.head_trials,
                                   baseline=t.base_passes / t.base_trials if t.base_trials else None)
             for t in record.tests}
    moved = record.counts
    return RunHead(stamp=stamp, run_id=key_of(ref, record), kind="compare", branch=record.branch, pr=record.pr,
                   started_at=started, finished_at=record.finished_at, status=record.decision.status,
                   exit_code=record.decision.exit_code, method=record.decision.method, agent="",
                   rates=rates, cases=sum(moved.values()), failing_cases=moved.get("regressed", 0),
                   trials=max((t.base_trials + t.head_trials for t in record.tests), default=0),
                   run_url=record.run_url,
                   changes=[f"{record.base} → {record.head}", f"{moved.get('regressed', 0)} regressed, "
                            f"{moved.get('fixed', 0)} fixed"])


def side_folders(ref: ComparisonRef, record: ComparisonRecord) -> dict[str, list[Path]]:
    """Each side's run folders as the record names them (relative to its own folder)."""
    def resolved(paths: list[str]) -> list[Path]:
        return [(ref.root / p) if not Path(p).is_absolute() else Path(p) for p in paths]
    return {"base": resolved(record.base_runs), "head": resolved(record.head_runs)}
