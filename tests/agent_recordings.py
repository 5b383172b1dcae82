"""Shared by the adapter tests: replaying REAL recorded streams and building agent requests."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.ending import finish
from rubricgate.agents.normalize import Draft
from rubricgate.isolation.process import ProcessResult
from rubricgate.models.transcript import Transcript

DATA = Path(__file__).parent / "data" / "transcripts"


def replay_recording(cli: str, name: str, parse: Callable[[bytes, dict], Draft],
                     stream: bytes | None = None, **proc: object) -> Transcript:
    """Parse a recording and fold in the process outcome it was recorded with (overridable)."""
    meta = json.loads((DATA / cli / f"{name}.meta.json").read_text())
    data = (DATA / cli / f"{name}.ndjson").read_bytes() if stream is None else stream
    result = ProcessResult(exit_code=meta["exit_code"], timed_out=meta["timed_out"], stdout_truncated=False,
                           stderr_tail="", duration_s=1.0,
                           stopped=meta.get("stopped", "").removeprefix("stopped by rubricgate: "))
    for key, value in proc.items():
        setattr(result, key, value)
    return finish(parse(data, meta), result, version=meta["cli_version"])


def agent_request(tmp_path: Path, **kw: object) -> AgentRequest:
    """A request over a one-file workspace; keyword arguments override any field."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    prompt = ws / "prompt.md"
    prompt.write_text("Review the changed skills.\n")
    base = dict(case_id="c", trial=1, workspace=ws, prompt_file=prompt, rubric_file=prompt,
                changed_files_file=prompt, scratch=tmp_path / "scratch")
    return AgentRequest(**{**base, **kw})  # type: ignore[arg-type]
