"""The preflight's one line: the time budget is not the endpoint's verdict, and each failure class
names its own fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from rubricgate.agents.preflight import diagnose, preflight_agents
from rubricgate.agents.registry import cli_specs
from rubricgate.errors import GateInputError
from rubricgate.isolation.environment import build_env
from rubricgate.models.config import AgentConfig
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


class _Agent:
    """A CLI agent that answers, or that must never start: `unlisted` is checked before any does."""

    def __init__(self, name: str, answers: bool = False, model: str | None = None) -> None:
        self.name, self.answers = name, answers
        self.config = AgentConfig(model=model)

    def run(self, request) -> Transcript:
        assert self.answers, "the CLI was started"
        return Transcript(agent=self.name, termination="completed")


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch):
    """Set rubricgate's environment to hold, of the CLIs' endpoint variables and keys, these only."""
    def set_to(values: dict[str, str]) -> None:
        for spec in cli_specs().values():
            for var in (spec.endpoint.key, *spec.endpoint.variables):
                monkeypatch.delenv(var, raising=False)
        for var, value in values.items():
            monkeypatch.setenv(var, value)
    return set_to


def _preflight(name: str, allowlist: list[str], secret_env: list[str], tmp: Path, answers: bool = True,
               model: str | None = None) -> str:
    """The preflight's line for agent `name` with these lists; '' when it passes."""
    env = build_env(allowlist, secret_env)
    try:
        preflight_agents({name: _Agent(name, answers, model)}, env, None, tmp)  # type: ignore[dict-item]
    except GateInputError as exc:
        return exc.one_line()
    return ""


def test_a_base_url_set_but_not_allowlisted_is_named_before_the_cli_starts(tmp_path: Path, shell) -> None:
    """It used to start the CLI, which went to https://api.anthropic.com instead, and say after
    ~20 s "cannot reach https://api.anthropic.com ... (fix: check that the endpoint is up and
    ANTHROPIC_BASE_URL names it)", while the variable named the right endpoint."""
    shell({"ANTHROPIC_BASE_URL": "http://127.0.0.1:8123", "ANTHROPIC_API_KEY": "k"})
    line = _preflight("claude", ["PATH"], ["ANTHROPIC_API_KEY"], tmp_path, answers=False)
    assert "ANTHROPIC_BASE_URL is set in the environment but not listed in agent.env_allowlist" in line, line
    assert "(fix: add ANTHROPIC_BASE_URL to agent.env_allowlist" in line and "cannot reach" not in line, line


def test_a_key_set_but_not_in_secret_env_is_named_not_called_unset(tmp_path: Path, shell) -> None:
    shell({"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    line = _preflight("codex", ["OPENAI_BASE_URL"], [], tmp_path)
    assert "OPENAI_API_KEY is set in the environment but not listed in agent.secret_env" in line, line
    assert "add OPENAI_API_KEY to agent.secret_env" in line and "is not set" not in line, line


@pytest.mark.parametrize("name, var", [("codex", "CODEX_CA_CERTIFICATE"), ("gemini", "GOOGLE_GEMINI_BASE_URL"),
                                       ("qwen", "OPENAI_BASE_URL"), ("copilot", "COPILOT_PROVIDER_BASE_URL"),
                                       ("cortex", "SNOWFLAKE_ACCOUNT")])
def test_each_clis_endpoint_variables_are_checked(tmp_path: Path, shell, name: str, var: str) -> None:
    shell({var: "x"})
    line = _preflight(name, [], [], tmp_path)
    assert f"{var} is set in the environment but not listed in agent.env_allowlist" in line, line
    assert f"add {var} to agent.env_allowlist" in line, line


def test_variables_that_reach_the_cli_unset_or_empty_or_of_another_cli_are_no_problem(tmp_path: Path, shell) -> None:
    shell({"ANTHROPIC_BASE_URL": "http://x", "ANTHROPIC_API_KEY": "", "OPENAI_BASE_URL": "http://y"})
    assert _preflight("claude", ["ANTHROPIC_BASE_URL"], [], tmp_path) == ""
    assert _preflight("claude", [], ["ANTHROPIC_BASE_URL"], tmp_path) == ""  # listed as a secret


@pytest.mark.parametrize("name, var", [("qwen", "OPENAI_MODEL"), ("copilot", "COPILOT_MODEL")])
def test_a_model_variable_kept_from_the_cli_matters_only_without_agent_model(tmp_path: Path, shell, name: str,
                                                                            var: str) -> None:
    """The CLI takes agent.model as --model: the shell's model variable kept from it changes nothing,
    and stopping the run on it asked for a line in the allowlist that does nothing."""
    shell({var: "some-model"})
    assert _preflight(name, [], [], tmp_path, model="the-model") == ""
    assert f"{var} is set in the environment but not listed in agent.env_allowlist" in _preflight(name, [], [], tmp_path)
