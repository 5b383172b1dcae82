"""The scripted model servers find the workspace and the task wherever a CLI release carries them,
and fail the test at once, naming what is missing, when they cannot (no turn-limit loop).

Request bodies here are trimmed copies of what real releases send: Claude Code 2.1.112 states
the environment in the top-level `system` field, 2.1.332 in a role:system message.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.e2e import claude_scenarios as sc
from tests.e2e.anthropic_server import Conversation, ScriptedAnthropicServer, ScriptError
from tests.e2e.openai_server import Scenario, Script, ScriptedServer, _chat_state, _responses_state, answer, read
from tests.e2e.openai_server import ScriptError as OpenAIScriptError

ENV = "# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /ws/a\n"
TOOLS = [{"name": "Read", "input_schema": {}}]
CHANGED_RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "     1\tfixtures/pass/chatty/SKILL.md\n"}


def post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_anthropic_without_a_workspace_answers_400_and_fails_the_test_naming_where_it_looked() -> None:
    body = {"tools": TOOLS, "system": "You are Claude Code.", "messages": [{"role": "user", "content": "Review."}]}
    with pytest.raises(AssertionError) as failed:
        with ScriptedAnthropicServer(sc.script_for({})) as server:
            status, reply = post(f"{server.base_url}/v1/messages", body)
    assert status == 400 and "cannot find the workspace" in reply["error"]["message"]
    text = str(failed.value)
    assert "could not follow the conversation" in text
    assert "looked in: system field, first user message" in text


def test_anthropic_without_a_task_in_the_tool_results_fails_instead_of_rereading() -> None:
    body = {"tools": TOOLS, "system": ENV, "messages": [
        {"role": "user", "content": "Review."}, {"role": "assistant", "content": [{"type": "text", "text": "."}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "File is empty."}]}]}
    with pytest.raises(ScriptError, match="no SKILL.md path in the tool results.*File is empty"):
        sc.script_for({})(Conversation(body))


@pytest.mark.parametrize("where, body", [
    ("system field (2.1.112)", {"system": [{"type": "text", "text": ENV}], "messages": []}),
    ("role:system message (2.1.332)", {"system": [{"type": "text", "text": "You are Claude."}], "messages": [
        {"role": "user", "content": "Review."}, {"role": "system", "content": [{"type": "text", "text": ENV}]}]}),
    ("first user message", {"messages": [{"role": "user", "content": [
        {"type": "text", "text": f"<system-reminder>{ENV}</system-reminder>"}, {"type": "text", "text": "Review."}]}]}),
    ("tool result", {"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "Working directory: /ws/a"}]}]}),
])
def test_anthropic_finds_the_workspace_wherever_the_release_puts_it(where: str, body: dict) -> None:
    assert Conversation(body).cwd == "/ws/a", where


def test_anthropic_reads_the_changed_list_in_the_stated_workspace_then_routes_on_its_result() -> None:
    first = {"system": "", "messages": [{"role": "user", "content": "Review."},
                                        {"role": "system", "content": ENV}]}
    reply = sc.script_for({})(Conversation(first))
    assert reply.tools == [("Read", {"file_path": "/ws/a/reviewer/.changed-skills.txt"})]
    later = {"messages": [*first["messages"], {"role": "assistant", "content": []},
                          {"role": "user", "content": [CHANGED_RESULT]}]}
    routed = sc.script_for({"chatty": sc.leak_key})(Conversation(later, {"x-api-key": "k-1"}))
    assert routed.text.startswith("my key is k-1")


SCENARIOS = [Scenario("fixtures/pass/a/", [answer("A")]), Scenario("fixtures/pass/b/", [answer("B")])]


def test_openai_without_a_scenario_key_answers_400_and_fails_the_test() -> None:
    body = {"tools": [{"type": "function"}], "messages": [
        {"role": "system", "content": "You are OpenCode."}, {"role": "user", "content": "Review."},
        {"role": "assistant", "content": None}, {"role": "tool", "content": "no such file"}]}
    with pytest.raises(AssertionError) as failed:
        with ScriptedServer(SCENARIOS) as server:
            status, reply = post(f"{server.base_url}/chat/completions", body)
    assert status == 400 and "no scenario key" in reply["error"]["message"]
    assert "looked in: tool result, first user message, role:system message" in str(failed.value)


def test_openai_tool_results_win_over_a_system_prompt_that_lists_every_fixture() -> None:
    body = {"messages": [{"role": "system", "content": "files:\nfixtures/pass/a/\nfixtures/pass/b/"},
                         {"role": "user", "content": "Review."}, {"role": "assistant", "content": None},
                         {"role": "tool", "content": "fixtures/pass/b/SKILL.md"}]}
    assert Script(SCENARIOS).next_turn(*_chat_state(body)).text == "B"


@pytest.mark.parametrize("body", [
    {"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fixtures/pass/b/"}]},
               {"type": "function_call", "name": "shell"}]},
    {"instructions": "review fixtures/pass/b/SKILL.md", "input": [{"type": "function_call", "name": "shell"}]},
    {"input": [{"type": "message", "role": "developer", "content": "fixtures/pass/b/"},
               {"type": "function_call", "name": "shell"}]},
])
def test_openai_responses_find_the_task_in_user_developer_messages_or_instructions(body: dict) -> None:
    assert Script(SCENARIOS).next_turn(*_responses_state(body)).text == "B"


def test_openai_exhausted_scenario_fails_instead_of_answering_without_a_verdict() -> None:
    places = [("tool result", "fixtures/pass/a/SKILL.md")]
    script = Script([Scenario("fixtures/pass/a/", [read("x"), answer("A")])])
    assert script.next_turn(2, places).text == "A"
    with pytest.raises(OpenAIScriptError, match="has 2 turns but the client asked for turn 4"):
        script.next_turn(3, places)
