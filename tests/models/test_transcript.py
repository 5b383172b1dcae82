"""The transcript format: tool results kept and capped, format 1 files still read, secrets scrubbed."""

from __future__ import annotations

import json

from rubricgate.models.transcript import MAX_RESULT_CHARS, TRANSCRIPT_FORMAT, ToolCall, Transcript
from rubricgate.records.files import read_transcript, write_transcript

SECRET = "sk-live-0123456789abcdef"


def test_a_format_1_transcript_reads_with_its_calls_and_no_results(tmp_path):
    (tmp_path / "transcripts").mkdir()
    old = {"format_version": 1, "agent": "claude", "final_text": "done",
           "tool_calls": [{"raw_name": "Read", "name": "read", "input": {"file_path": "a.md"}, "status": "ok", "step": 1}]}
    (tmp_path / "transcripts" / "c-1.json").write_text(json.dumps(old))
    t = read_transcript(tmp_path, "transcripts/c-1.json")
    assert t.format_version == 1 and t.tool_calls[0].result is None and t.tool_calls[0].result_cut == 0


def test_new_transcripts_are_format_2_and_keep_results_capped():
    call = ToolCall(raw_name="Bash", name="bash")
    call.keep_result("y" * (MAX_RESULT_CHARS + 7))
    assert Transcript(agent="a", tool_calls=[call]).format_version == TRANSCRIPT_FORMAT == 2
    assert len(call.result or "") == MAX_RESULT_CHARS and call.result_cut == 7


def test_a_secret_a_tool_returned_is_scrubbed_from_the_stored_transcript(tmp_path):
    call = ToolCall(raw_name="Bash", name="bash", input={"command": "env"})
    call.keep_result(f"HOME=/x\nAPI_KEY={SECRET}\n")
    write_transcript(tmp_path, "c", 1, Transcript(agent="a", tool_calls=[call]), [SECRET])
    stored = (tmp_path / "transcripts" / "c-1.json").read_text()
    assert SECRET not in stored and "API_KEY=[REDACTED]" in stored
