"""summary.json and stored transcripts."""

from __future__ import annotations

import json
import os
import secrets as _random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json

from rubricgate.errors import GateInputError, unreadable
from rubricgate.isolation.untrusted import UntrustedPath, open_under
from rubricgate.models.results import Summary
from rubricgate.models.transcript import Transcript
from rubricgate.records.writing import write_pieces_atomic, write_text_atomic
from rubricgate.secrets import scrub_data
from rubricgate.suite.yaml_json import load_model


def new_run_id() -> str:
    """A run folder's name: UTC start time (sorts by time) and a random suffix (shards never collide)."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + _random.token_hex(3)


def make_run_folder(reports: Path, run_id: str, inputs: tuple[Path, ...] = ()) -> Path:
    """Create the new run folder `reports/run_id`, or raise a one-line GateInputError: the folder
    exists already (another run's, or one of `inputs`, the folders this run reads), or the
    reports folder cannot be written (read-only, not a folder, full)."""
    run_dir = reports / run_id
    for source in inputs:
        if run_dir.resolve() == source.resolve():
            raise GateInputError(str(source), "", f"is the folder this run would be written to ({run_dir})",
                                 "move the input folders out of the reports folder, or rerun for a fresh run id")
    try:
        run_dir.mkdir(parents=True)
    except FileExistsError:
        raise GateInputError(str(run_dir), "", "a run folder of this name exists already",
                             "rerun for a fresh run id; never write into an existing run folder") from None
    except OSError as exc:
        raise GateInputError(str(reports), "", f"cannot create the run folder {run_id}: {exc.strerror or exc}",
                             "make the reports folder writable (`reports:` in rubricgate.yaml names a folder inside "
                             "the repository: in a read-only checkout, run from a writable copy of it)") from None
    return run_dir


def write_json_atomic(path: Path, data: dict, secrets: list[str] | None = None) -> None:
    """Write scrubbed JSON via a temp file and rename, so a crash never leaves half a file."""
    write_text_atomic(path, indented_json(scrub_data(data, secrets or [])) + "\n", secrets, as_json=True)


def indented_json(data: object) -> str:
    """`json.dumps(data, indent=2, default=str)`'s JSON for JSON data (what `model_dump(mode="json")`
    gives: a datetime or a set would be written otherwise), written by pydantic-core: the standard
    library's encoder is pure Python once it indents, and a failed trial's replay artifact took
    ~1 ms of the trial's Python. The same values; a float may be spelled another way (1e-7 for
    1e-07). A lone surrogate (from a CLI's output), which pydantic-core refuses, goes to
    json.dumps, which escapes it."""
    try:
        return to_json(data, indent=2, fallback=str, ensure_ascii=True).decode("ascii")
    except PydanticSerializationError:
        return json.dumps(data, indent=2, default=str)


def write_summary(run_dir: Path, summary: Summary, secrets: list[str] | None = None) -> Path:
    """summary.json, case by case: a 2,000-case summary is 9 MB of JSON, and writing it whole held
    three copies of it at once (the serialized text, the scrubbed text, its bytes)."""
    path = run_dir / "summary.json"
    try:
        write_pieces_atomic(path, summary_pieces(summary), secrets, as_json=True)
    except PydanticSerializationError:  # a lone surrogate from a CLI's output: json.dumps escapes it
        write_json_atomic(path, summary.model_dump(mode="json"), secrets)
    return path


_CASES = '\n  "cases": []'  # the summary's own key: a nested one is indented deeper


def summary_pieces(summary: Summary) -> Iterator[str]:
    """summary.model_dump_json(indent=2) + "\n" in pieces, one a case: the summary without its
    cases, then each case dumped on its own and indented to its place in the list."""
    head = summary.model_copy(update={"cases": []}).model_dump_json(indent=2)
    at = head.index(_CASES)
    if not summary.cases:
        yield head + "\n"
        return
    yield head[:at] + '\n  "cases": ['
    for i, case in enumerate(summary.cases):
        yield ("," if i else "") + "\n    " + case.model_dump_json(indent=2).replace("\n", "\n    ")
    yield "\n  ]" + head[at + len(_CASES):] + "\n"


def write_model_atomic(path: Path, model: BaseModel, secrets: list[str] | None = None) -> None:
    """A model as indented JSON through pydantic-core's writer (json.dumps(indent=2) is the
    pure-Python encoder: 1.8 s for a 2,000-case summary); write_text_atomic scrubs every
    written form of each secret, JSON-escaped ones included."""
    try:
        text = model.model_dump_json(indent=2) + "\n"
    except PydanticSerializationError:  # a lone surrogate from a CLI's output: json.dumps escapes it
        write_json_atomic(path, model.model_dump(mode="json"), secrets)
        return
    write_text_atomic(path, text, secrets, as_json=True)


def read_summary(path: Path) -> Summary:
    """Load a summary.json (or the one inside a run dir)."""
    try:
        if path.is_dir():
            path = path / "summary.json"
        if not path.is_file():
            raise GateInputError(str(path), "", "no summary.json here", "point at a run directory under reports/")
    except PermissionError:  # pathlib raises it from inside a folder the user may not look into
        raise unreadable(path) from None
    return load_model(Summary, path, str(path))


def comparison_folder(path: Path) -> bool:
    """Whether `path` is a folder `compare --base` wrote (comparison.json beside base/ and head/, a
    run folder a round): the runs of two reviewers, none of its own. Its sides tell it too: an
    older rubricgate kept no comparison.json there, nor does a comparison stopped before deciding,
    and `trend` or `export` of a glob of reports/ exited 2 "no summary.json here" on it. Either
    side alone does: a comparison killed outright while its first side ran has no other yet."""
    try:
        if not path.is_dir() or (path / "summary.json").exists():
            return False
        return (path / "comparison.json").is_file() or (path / "base").is_dir() or (path / "head").is_dir()
    except OSError:  # a folder that may not be looked into: read_summary's one line names it
        return False


MUTATION_TEST = "a mutation test, not a run; its mutants' runs are not kept"


def mutation_folder(path: Path) -> bool:
    """Whether `path` is a folder `mutate` wrote (mutation.json, no run of the suite of its own)."""
    try:
        return path.is_dir() and not (path / "summary.json").exists() and (path / "mutation.json").is_file()
    except OSError:  # as comparison_folder
        return False


def transcript_name(case_id: str, trial: int) -> str:
    """A trial's transcript file, relative to the run folder (a run refuses a name that holds one
    of its secrets: runner/run_secrets.py)."""
    return f"transcripts/{case_id}-{trial}.json"


def write_transcript(run_dir: Path, case_id: str, trial: int, transcript: Transcript,
                     secrets: list[str] | None = None) -> str:
    rel = transcript_name(case_id, trial)
    (run_dir / "transcripts").mkdir(exist_ok=True)
    write_model_atomic(run_dir / rel, transcript, secrets)
    return rel


def read_transcript(run_dir: Path, rel: str) -> Transcript:
    """A trial's stored transcript: a regular file under the run folder reached through no link
    (a run folder from elsewhere, a CI artifact, may hold one that points out of it, or a FIFO)."""
    try:
        opened: int | None = open_under(run_dir, rel)
    except UntrustedPath as exc:
        raise GateInputError(str(run_dir / rel), "", f"{exc}: a run writes its transcripts as regular files, "
                             "never a link", "use the run folder as its run wrote it") from None
    except OSError:
        opened = None  # absent or unreadable: said by the read below, as for any file
    if opened is not None:
        os.close(opened)
    return load_model(Transcript, run_dir / rel, str(run_dir / rel))
