"""A test double below the adapter layer: returns a scripted Transcript per case.

It stands in for an agent CLI only in pipeline tests; the real CLIs are driven in tests/e2e.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from rubricgate.agents.base import AgentRequest
from rubricgate.models.transcript import ToolCall, Transcript


def verdict_text(tier: str, findings: list[dict] | None = None) -> str:
    body = json.dumps({"tier": tier, "summary": "s", "files_reviewed": [], "findings": findings or []})
    return f"done\n```json\n{body}\n```\n"


def reads(n: int = 1) -> list[ToolCall]:
    return [ToolCall(raw_name="Read", name="read", input={"file_path": "x"}, step=1) for _ in range(n)]


class ScriptedAgent:
    """`script[case_id](request) -> Transcript`; unknown cases answer a correct BLOCK/PASS."""

    name = "scripted"
    script: dict[str, Callable[[AgentRequest], Transcript]] = {}

    def __init__(self, config=None) -> None:
        self.config = config

    def version(self) -> str:
        return "scripted 1.0"

    def run(self, request: AgentRequest) -> Transcript:
        return self.script[request.case_id](request)


def transcript(final_text: str = "", calls=None, steps: int = 3, **kw) -> Transcript:
    return Transcript(agent="scripted", steps=steps, tool_calls=reads() if calls is None else calls,
                      final_text=final_text, **kw)
