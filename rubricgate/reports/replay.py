"""Replay artifacts: for every failed trial, everything needed to understand it offline.

reports/<run>/replay/<case>-<trial>.json holds the case input and expectation (CaseSpec), the
trial with every grade (category and reason), and the normalized transcript, so one failure
can be studied or re-graded without rerunning the agent.
"""

from __future__ import annotations

from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.isolation.untrusted import regular_file
from rubricgate.models.results import CaseSpec, ReplayArtifact, Summary, TrialResult
from rubricgate.records.files import read_transcript, write_json_atomic
from rubricgate.runner.cost import is_not_run
from rubricgate.suite.yaml_json import load_model

REPLAY_DIR = "replay"


def replay_name(case_id: str, trial: int) -> str:
    """Run-dir-relative path of one trial's replay artifact."""
    return f"{REPLAY_DIR}/{case_id}-{trial}.json"


def trial_failed(trial: TrialResult) -> bool:
    """A trial failed when any grade failed or no verdict came out."""
    return trial.outcome == "ERROR" or any(not g.passed for g in trial.grades.values())


MAX_FILE_CHARS = 200_000  # a replay file stays readable even if a reviewed file is huge


def reviewed_contents(case: CaseSpec, repo: Path | None) -> dict[str, str]:
    """Each reviewed file as the reviewer saw it: the task's overlay wins over the repository."""
    out = {}
    for rel in case.review:
        path = repo / rel if repo is not None else None
        if rel in case.files:
            out[rel] = case.files[rel]
        elif path is not None and path.is_file():
            out[rel] = path.read_text(encoding="utf-8", errors="replace")[:MAX_FILE_CHARS]
    return out


def build_artifact(run_dir: Path, case: CaseSpec, trial: TrialResult, repo: Path | None = None) -> ReplayArtifact:
    """Bundle the case, the reviewed files, the trial and its stored transcript (which must exist)."""
    if not trial.transcript:
        raise GateInputError(str(run_dir / "summary.json"), f"cases[{case.id}].trials[{trial.trial}].transcript",
                             "no transcript path recorded", "re-run the case; replay needs its transcript")
    transcript = read_transcript(run_dir, trial.transcript)
    return ReplayArtifact(case=case, trial=trial, transcript=transcript.model_dump(mode="json"),
                          reviewed_files=reviewed_contents(case, repo))


def write_replay_artifacts(run_dir: Path, cases: list[CaseSpec], summary: Summary,
                           secrets: list[str] | None = None, repo: Path | None = None) -> list[Path]:
    """Write one artifact per failed trial; returns the files written.

    A failed trial whose case is not among `cases` is an error: silently skipping it would
    leave a failure with nothing to replay.
    """
    by_id = {c.id: c for c in cases}
    written = []
    for case_summary in summary.cases:
        for trial in (t for t in case_summary.trials if trial_failed(t) and not is_not_run(t)):
            if case_summary.id not in by_id:
                raise GateInputError(str(run_dir / "summary.json"), f"cases[{case_summary.id}]",
                                     "failed case is not in the suite", "pass the suite the run used")
            artifact = build_artifact(run_dir, by_id[case_summary.id], trial, repo)
            path = run_dir / replay_name(case_summary.id, trial.trial)
            path.parent.mkdir(exist_ok=True)
            write_json_atomic(path, artifact.model_dump(mode="json"), secrets)
            written.append(path)
    return written


def read_replay(path: Path) -> ReplayArtifact:
    """Load one replay artifact; a bad file is an input error naming the field."""
    return load_model(ReplayArtifact, path, str(path))


def read_replays(run_dir: Path) -> list[ReplayArtifact]:
    """Every replay artifact of a run, sorted by file name."""
    folder = run_dir / REPLAY_DIR
    # Regular files only: a link in a handed-over run folder must not read a host file.
    return [read_replay(p) for p in sorted(folder.glob("*.json")) if regular_file(p)] if folder.is_dir() else []
