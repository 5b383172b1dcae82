"""Recorded transcripts, one per case and trial: self-tests and offline re-grading.

`agent.replay_dir` (relative to the repository root, like every path in rubricgate.yaml) holds, for case C trial N,
the first of:
    transcripts/C-N.json   a previous run directory's normalized transcript
    C-N.json               a normalized transcript
    C-N.ndjson             a native stream in `agent.format` (default claude), with an optional
                           C-N.meta.json {"exit_code": ...} beside it (and, for codex, the
                           session rollout C-N.rollout.jsonl, which has the sandbox-refused calls)
A missing recording is bad input (exit 2), never a silently skipped case.
"""

from __future__ import annotations

from pathlib import Path

from rubricgate import boundary
from rubricgate.agents.base import AgentRequest
from rubricgate.agents.ending import finish
from rubricgate.agents.formats import format_names, parser_for
from rubricgate.errors import GateInputError
from rubricgate.isolation.process import ProcessResult
from rubricgate.models.config import AgentConfig
from rubricgate.models.transcript import Transcript
from rubricgate.suite.yaml_json import load_model

_CONFIG = "rubricgate.yaml"


class ReplayAgent:
    """Serves recorded transcripts instead of running an agent."""

    name = "replay"
    writes_nothing = True  # serves files it reads: nothing for the run to watch

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        if not config.replay_dir:
            raise GateInputError(_CONFIG, "agent.replay_dir", "the replay agent needs a directory of recordings",
                                 "set agent.replay_dir to a run directory or a folder of <case>-<trial> files")
        self.root = Path(config.replay_dir)
        if not self.root.is_dir():
            raise GateInputError(_CONFIG, "agent.replay_dir", f"{self.root} is not a directory",
                                 "point it at an existing run directory or recordings folder")
        self.format = config.format or "claude"
        if self.format not in format_names():
            raise GateInputError(_CONFIG, "agent.format", f"unknown transcript format {self.format!r}",
                                 f"use one of {', '.join(format_names())}")

    def version(self) -> str | None:
        """Recordings carry their own CLI version; the replay agent has none."""
        return None

    def recording(self, case_id: str, trial: int) -> Path | None:
        """The first recording file for (case, trial), or None."""
        stem = f"{case_id}-{trial}"
        for path in (self.root / "transcripts" / f"{stem}.json", self.root / f"{stem}.json",
                     self.root / f"{stem}.ndjson"):
            if path.is_file():
                return path
        return None

    def preflight(self, runs: list[tuple[str, int]]) -> None:
        """Before any trial runs: every planned (case, trial) has a recording, else exit 2."""
        missing = [(c, t) for c, t in runs if self.recording(c, t) is None]
        if missing:
            case_id, trial = missing[0]
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise _no_recording(self.root, case_id, trial, more)

    def run(self, request: AgentRequest) -> Transcript:
        """The recording for (case, trial), normalized."""
        path = self.recording(request.case_id, request.trial)
        if path is None:
            raise _no_recording(self.root, request.case_id, request.trial)
        if path.suffix == ".json":
            return _load_transcript(path)
        return self._from_stream(path, request)

    def _from_stream(self, path: Path, request: AgentRequest) -> Transcript:
        meta_path = path.with_suffix(".meta.json")
        meta = _meta(meta_path)
        draft = parser_for(self.format)(path.read_bytes(), agent=self.name, allowed=request.allowed_tools,
                                        **_companions(path, self.format))
        proc = ProcessResult(exit_code=meta.get("exit_code", 0), timed_out=bool(meta.get("timed_out")),
                             stdout_truncated=False, stderr_tail="", duration_s=0.0)
        return finish(draft, proc, version=meta.get("cli_version"))


def _meta(path: Path) -> dict:
    """A recording's process outcome (exit code, timeout, CLI version); {} when there is none."""
    if not path.is_file():
        return {}
    try:
        data = boundary.loads(path.read_bytes())
    except ValueError as exc:
        raise GateInputError(str(path), "", f"not valid JSON ({str(exc)[:200]})", "fix the file or remove it") from None
    return data if isinstance(data, dict) else {}


def _companions(path: Path, fmt: str) -> dict[str, bytes]:
    """Files a native stream needs beside it: Codex's session rollout (C-N.rollout.jsonl) holds
    the sandbox-refused commands its --json stream leaves out, so a replay must read it too."""
    rollout = path.with_suffix(".rollout.jsonl")
    return {"rollout": rollout.read_bytes()} if fmt == "codex" and rollout.is_file() else {}


def _no_recording(root: Path, case_id: str, trial: int, more: str = "") -> GateInputError:
    return GateInputError(str(root), "agent.replay_dir", f"no recording for case {case_id} trial {trial}{more}",
                          f"add {case_id}-{trial}.json or {case_id}-{trial}.ndjson, or select fewer cases or trials")


def _load_transcript(path: Path) -> Transcript:
    """A stored normalized transcript; a bad one is a one-line error naming file and field."""
    return load_model(Transcript, path, str(path))
