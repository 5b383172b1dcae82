"""The preflight's one line: the time budget is not the endpoint's verdict, and each failure class
names its own fix."""

from __future__ import annotations

from rubricgate.agents.preflight import diagnose
from rubricgate.models.transcript import Transcript

ENV = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "k"}


def _line(**kw) -> str:
    printed = kw.pop("printed", False)
    return diagnose("claude", Transcript(agent="claude", **kw), ENV, printed=printed, timeout_s=45).one_line()


def test_running_out_of_time_before_printing_anything_does_not_blame_the_endpoint() -> None:
    """It used to say "cannot reach ...: killed after the wall-clock timeout" while the endpoint
    had received no request."""
    line = _line(termination="timeout", exit_code=None, error="killed after the wall-clock timeout (45s)",
                 failure="timeout")
    assert "did not finish starting in 45 s" in line and "cannot reach" not in line
    assert "agent.preflight_timeout_s" in line


def test_a_cli_that_started_and_got_no_answer_says_the_endpoint_did_not_answer() -> None:
    line = _line(termination="timeout", exit_code=None, error="killed after the wall-clock timeout (45s)",
                 failure="timeout", printed=True)
    assert "started, but http://127.0.0.1:9 did not answer within 45 s" in line


def test_an_unreachable_endpoint_names_the_base_url_setting() -> None:
    line = _line(termination="api_error", exit_code=None, failure="unreachable",
                 error="stopped by rubricgate: model_unreachable: claude could not reach its model server")
    assert "cannot reach http://127.0.0.1:9" in line and "ANTHROPIC_BASE_URL" in line


def test_a_refused_key_names_the_key_variable() -> None:
    line = _line(termination="api_error", exit_code=1, failure="auth", error="API 401: Invalid API key")
    assert "set ANTHROPIC_API_KEY" in line and "agent.secret_env" in line


def test_an_endpoint_error_is_reported_with_its_class() -> None:
    line = _line(termination="api_error", exit_code=1, failure="endpoint", error="API 529: overloaded")
    assert "failed its preflight request (endpoint): API 529: overloaded" in line


def test_a_cli_that_cannot_start_in_the_sandbox() -> None:
    line = _line(termination="crashed", exit_code=127, failure="start", error="exit 127: not found")
    assert "could not start in the sandbox" in line


def test_a_key_that_is_not_set_is_named_when_the_cli_stops_before_asking_the_endpoint() -> None:
    """Gemini CLI and Qwen Code check for the key themselves and exit before any request, in their
    own words ("Invalid auth method selected.", exit 41): the line said only to run the CLI by hand,
    never that the key variable init listed in agent.secret_env is not set."""
    for name, key, said in (("gemini", "GEMINI_API_KEY", "exit 41: Invalid auth method selected."),
                            ("qwen", "OPENAI_API_KEY", "Missing API key for OpenAI-compatible auth.")):
        got = diagnose(name, Transcript(agent=name, termination="crashed", exit_code=1, failure="start", error=said),
                       {"PATH": "/usr/bin"}, printed=True).one_line()
        assert f"{key} is not set" in got and f"set {key} in the environment" in got and said in got, got
    set_key = diagnose("qwen", Transcript(agent="qwen", termination="crashed", exit_code=1, failure="start",
                                          error="boom"), {"OPENAI_API_KEY": "k"}, printed=True).one_line()
    assert "failed its preflight request (start): boom" in set_key
