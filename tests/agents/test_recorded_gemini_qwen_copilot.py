"""Gemini CLI, Qwen Code and Copilot CLI: every REAL recorded stream of the oldest and newest
tested versions (tests/e2e/record_gemini_qwen_copilot.py, folders `<cli>-<version>` under
tests/data/transcripts) normalizes to what the scripted model did: the same turns, tool calls and
statuses for all three, tokens where the CLI reports them and unknown (never 0) where it does not.
"""

from __future__ import annotations

import json

import pytest

from rubricgate.agents.copilot import parse_copilot_stream
from rubricgate.agents.gemini import parse_gemini_stream
from rubricgate.agents.qwen import parse_qwen_stream
from rubricgate.agents.support import version_ranges
from tests.agent_recordings import DATA, replay_recording

CLIS = ("gemini", "qwen", "copilot")
FOLDERS = sorted(p.name for cli in CLIS for p in DATA.glob(f"{cli}-*") if p.is_dir())
R, D = "ok", "denied"
# recording -> (termination, steps, [(normalized tool, status), ...]); one script for every CLI.
EXPECTED = {
    "review_ok": ("completed", 5, [("read", R), ("read", R), ("grep", R), ("glob", R)]),
    "forbidden_tool": ("completed", 3, [("read", R), ("bash", D)]),
    "write_denied": ("completed", 3, [("read", R), ("write", D)]),
    "permission_denied": ("completed", 3, [("read", R), ("read", D)]),
    "max_turns": ("max_turns", 5, [("read", R), ("read", R), ("glob", R), ("grep", R), ("read", R)]),
    "malformed_verdict": ("completed", 3, [("read", R), ("read", R)]),
    "api_error": ("api_error", 1, [("read", R)]),
    "api_error_400": ("api_error", 1, [("read", R)]),
    "malformed_stream": ("api_error", 1, [("read", R)]),
    "crash": ("crashed", 1, [("read", R)]),
}


def parse_for(folder: str, name: str):
    """The CLI's parser, fed what the adapter feeds it (the turn limit, Copilot's usage file)."""
    cli = folder.split("-")[0]
    if cli == "gemini":
        return lambda d, m: parse_gemini_stream(d, allowed=m["allowed_tools"])
    if cli == "qwen":
        return lambda d, m: parse_qwen_stream(d, allowed=m["allowed_tools"], max_steps=m["max_steps"])
    usage = DATA / folder / f"{name}.usage.json"
    text = usage.read_text() if usage.is_file() else ""
    return lambda d, m: parse_copilot_stream(d, allowed=m["allowed_tools"], usage=text)


def replay(folder: str, name: str):
    return replay_recording(folder, name, parse_for(folder, name))


@pytest.mark.parametrize("cli", CLIS)
def test_the_oldest_and_newest_tested_versions_are_recorded(cli: str) -> None:
    tested = version_ranges()[cli]
    versions = {json.loads((DATA / f / "review_ok.meta.json").read_text())["cli_version"] for f in FOLDERS
                if f.startswith(f"{cli}-")}
    for wanted in (tested.oldest, tested.newest):
        assert any(wanted in v for v in versions), (
            f"record it: python -m tests.e2e.record_gemini_qwen_copilot {cli} --bin /opt/rubricgate-agents/"
            f"{cli}-{wanted}/bin")


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_recording_normalizes_as_scripted(folder: str, name: str) -> None:
    termination, steps, calls = EXPECTED[name]
    t = replay(folder, name)
    assert (t.termination, t.steps) == (termination, steps), t.error
    assert [(c.name, c.status) for c in t.tool_calls] == calls


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_answer_is_the_final_turns_text_and_errors_are_never_answers(folder: str) -> None:
    ok = replay(folder, "review_ok")
    assert ok.final_text.startswith("Review done.") and '"tier": "PASS"' in ok.final_text
    assert '"tier": "MAYBE"' in replay(folder, "malformed_verdict").final_text
    for name in ("api_error", "api_error_400", "malformed_stream", "crash"):
        assert replay(folder, name).final_text == "", name


@pytest.mark.parametrize("folder", FOLDERS)
def test_tokens_are_the_clis_own_counts_or_unknown_and_cost_is_unknown(folder: str) -> None:
    ok = replay(folder, "review_ok")
    assert ok.usage.cost_usd is None  # none of the three reports a cost in dollars
    if folder == "copilot-1.0.40":  # no --usage-output-file before 1.0.80: the CLI reports no tokens
        assert (ok.usage.input_tokens, ok.usage.output_tokens) == (None, None)
    else:  # the scripted server's five answers: 101..105 input and 20 output tokens each
        assert (ok.usage.input_tokens, ok.usage.output_tokens) == (515, 100)
    crash = replay(folder, "crash")
    # Qwen Code reports each turn's usage as it goes; the others only at the end.
    expected = (135, 20) if folder.startswith("qwen") else (None, None)
    assert (crash.usage.input_tokens, crash.usage.output_tokens) == expected


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_crash_by_signal_is_seen_as_one(folder: str) -> None:
    t = replay(folder, "crash")
    assert t.exit_code == -11 and t.termination == "crashed"


# recording -> the failure class (models/failures.py) the adapter's evidence decides
CLASSES = {"review_ok": None, "forbidden_tool": None, "max_turns": "max_turns", "api_error": "endpoint",
           "api_error_400": "endpoint", "crash": "signal"}


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", list(CLASSES))
def test_each_end_gets_its_failure_class(folder: str, name: str) -> None:
    t = replay(folder, name)
    assert t.failure == CLASSES[name], (t.termination, t.error, t.evidence)
    if name == "api_error_400":  # Gemini CLI exits 144 (400 modulo 256): the CLI's status, not 128 + SIGSTKFLT
        assert t.signal is None and t.api_status in (400, None)
    if name == "crash":
        assert t.signal == "SIGSEGV" and t.error.startswith("killed by SIGSEGV")


UNREACHABLE = sorted(f for f in FOLDERS if (DATA / f / "unreachable.ndjson").is_file())


def test_a_server_that_is_down_is_recorded() -> None:
    assert {"gemini-0.61.0", "copilot-1.0.102"} <= set(UNREACHABLE)


@pytest.mark.parametrize("folder", UNREACHABLE)
def test_a_server_that_is_down_is_unreachable_before_any_turn(folder: str) -> None:
    t = replay(folder, "unreachable")
    assert (t.termination, t.steps, t.failure) == ("api_error", 0, "unreachable"), t.error
