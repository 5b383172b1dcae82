"""Cortex Code adapter. Its fixtures are DERIVED from the real Claude Code recordings plus the
seed's documented banners, lowercase tool names and thinking blocks (see cortex/derive.py):
there is no cortex binary to record here."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.cortex import CortexAgent, parse_cortex_stream
from rubricgate.agents.ending import finish
from rubricgate.isolation.process import ProcessResult
from rubricgate.models.config import AgentConfig
from rubricgate.models.transcript import Transcript
from tests.agent_recordings import agent_request

DATA = Path(__file__).parents[1] / "data" / "transcripts" / "cortex"


def replay(name: str, exit_code: int | None = None) -> Transcript:
    meta_file = DATA / f"{name}.meta.json"
    meta = json.loads(meta_file.read_text()) if meta_file.exists() else {"allowed_tools": None, "exit_code": 1}
    draft = parse_cortex_stream((DATA / f"{name}.ndjson").read_bytes(), allowed=meta["allowed_tools"])
    proc = ProcessResult(exit_code=meta["exit_code"] if exit_code is None else exit_code, timed_out=False,
                         stdout_truncated=False, stderr_tail="", duration_s=1.0)
    return finish(draft, proc, version="1.1.53+181504.3a965a854064")


def test_stale_version_banner_only_is_crashed_with_the_cli_message() -> None:
    t = replay("stale_version")
    assert t.termination == "crashed" and "no longer supported" in t.error and t.skipped_lines == 1


def test_seed_pong_max_turns_after_answer_keeps_answer() -> None:
    t = replay("seed_pong")
    assert t.termination == "max_turns" and t.final_text == "PONG" and t.steps == 1


def test_api_error_is_error_not_answer() -> None:
    t = replay("api_error")
    assert t.termination == "api_error" and "```json" not in t.final_text


def test_max_turns_status_line_and_banners_skipped() -> None:
    t = replay("max_turns")
    assert t.termination == "max_turns" and t.skipped_lines == 3 and t.steps == 3


def test_forbidden_and_denied_tools_lowercase() -> None:
    bash = [c for c in replay("forbidden_tool").tool_calls if c.raw_name == "bash"]
    assert bash and bash[0].name == "bash" and bash[0].status == "denied"
    denied = [c.name for c in replay("permission_denied").tool_calls if c.status == "denied"]
    assert denied == ["read", "write"]


def test_review_ok_thinking_blocks_do_not_add_turns_or_text() -> None:
    t = replay("review_ok")
    assert t.termination == "completed" and t.steps == 4 and t.skipped_lines == 2
    assert [c.raw_name for c in t.tool_calls] == ["read", "read", "grep", "glob"]
    assert "Planning" not in t.final_text and '"tier": "BLOCK"' in t.final_text


def _request(tmp_path: Path, **kw: object) -> AgentRequest:
    return agent_request(tmp_path, **{**kw})


def test_argv_follows_the_seed_recipe(tmp_path: Path) -> None:
    req = _request(tmp_path, allowed_tools=["read", "grep", "glob"], max_steps=40,
                   extra_args=["--connection", "ci"])
    argv = CortexAgent(AgentConfig(name="cortex")).argv(req, "ignored")
    assert argv[1:4] == ["exec", "--file", str(req.prompt_file)]
    assert argv[argv.index("--allowed") + 1] == "read,grep,glob"
    assert argv[argv.index("--max-turns") + 1] == "40"
    assert argv[argv.index("--output-last-message") + 1] == str(req.last_message_file)
    assert {"--no-mcp", "--no-history", "--bypass"} <= set(argv) and argv[-2:] == ["--connection", "ci"]


def test_last_message_file_wins_and_banners_on_stdout(tmp_path: Path) -> None:
    """A stand-in `cortex` that prints banners + a derived stream and writes the last message."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    stream = DATA / "max_turns_after_verdict.ndjson"
    fake = bindir / "cortex"
    fake.write_text("#!/bin/sh\n"
                    "while [ $# -gt 0 ]; do [ \"$1\" = --output-last-message ] && out=$2; shift; done\n"
                    f"cat '{stream}'\nprintf 'FROM FILE' > \"$out\"\nexit 1\n")
    fake.chmod(0o755)
    req = _request(tmp_path, env={"PATH": f"{bindir}:{os.environ['PATH']}"})
    t = CortexAgent(AgentConfig(name="cortex")).run(req)
    assert t.final_text == "FROM FILE" and t.termination == "max_turns" and t.exit_code == 1
    assert t.skipped_lines == 3
