"""Scripted reviewer behaviours for the scripted Anthropic server.

Every behaviour starts the way the real prompt says to: read `reviewer/.changed-skills.txt`.
The path the CLI sends back in that tool result picks the behaviour (by the skill's folder name),
so one server can answer a whole suite run, each case differently, through the real client.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from tests.e2e.anthropic_server import Conversation, Reply, ScriptError
from tests.timing import HANG_S

CHANGED = "reviewer/.changed-skills.txt"


def verdict_text(tier: str, path: str, findings: list[dict] | None = None) -> str:
    """A final answer ending with the verdict block the reviewer contract asks for."""
    body = {"tier": tier, "summary": f"Scripted review of {path}.", "files_reviewed": [path],
            "findings": findings or []}
    return f"Review complete.\n\n```json\n{json.dumps(body, indent=2)}\n```\n"


def missing_description(path: str) -> dict:
    return {"severity": "critical", "rule": "fm-description-required", "file": path, "line": 2,
            "quote": "name: no-description", "issue": "No description, so the skill never triggers.",
            "fix": "Add `description: Loads data; use when asked to load data.` under name."}


def reviewed_path(conv: Conversation) -> str:
    """The first SKILL.md path the changed-files read returned, else one the first user message
    lists on a line of its own (a CLI or harness that inlines the list); '' when neither has one."""
    for result in conv.tool_results():
        for line in result.splitlines():
            text = line.split("\t", 1)[-1].strip()  # Read output is "<n>\t<line>"
            if text.endswith("SKILL.md"):
                return text
    listed = [ln.strip() for ln in conv.first_user_text().splitlines()
              if ln.strip().endswith("/SKILL.md") and " " not in ln.strip()]
    return listed[0] if listed else ""


def _abs(conv: Conversation, rel: str) -> str:
    return f"{conv.cwd}/{rel}"


Behaviour = Callable[[Conversation, str, int], Reply]


def review_correctly(conv: Conversation, path: str, turn: int) -> Reply:
    """(a) read + grep + glob, then the right verdict for the skill's folder."""
    folder = path.rsplit("/", 1)[0]
    plan = [Reply(text="Reading the skill.", tools=[("Read", {"file_path": _abs(conv, path)})]),
            Reply(tools=[("Grep", {"pattern": "sk-|AKIA|password:", "path": _abs(conv, folder)}),
                         ("Glob", {"pattern": f"{folder}/references/**"})])]
    if turn - 1 < len(plan):
        return plan[turn - 1]
    if lacks_description(conv, path):  # judged from the file, as a model would: no path names a tier
        return Reply(text=verdict_text("BLOCK", path, [missing_description(path)]))
    return Reply(text=verdict_text("PASS", path))


def lacks_description(conv: Conversation, path: str) -> bool:
    """Look for a frontmatter description in what the CLI's Read returned (the first tool
    result), as a model would: the workspace exists only inside the agent's sandbox."""
    results = conv.tool_results()
    parts = (results[0] if results else "").split("---")
    return len(parts) < 3 or "description:" not in parts[1]


def forbidden_tool(conv: Conversation, path: str, turn: int) -> Reply:
    """(b) tries Bash (not offered by --tools), then still answers correctly."""
    if turn == 1:
        return Reply(text="Let me list the folder.", tools=[("Bash", {"command": f"ls {path}"})])
    if turn == 2:
        return Reply(tools=[("Read", {"file_path": _abs(conv, path)})])
    return Reply(text=verdict_text("PASS", path))


def exceed_steps(conv: Conversation, path: str, turn: int) -> Reply:
    """(c) never stops looking: the CLI's --max-turns ends it without a verdict."""
    return Reply(text=f"Still looking ({turn}).", tools=[("Glob", {"pattern": "**/*.md"})])


def verdict_then_tool(conv: Conversation, path: str, turn: int) -> Reply:
    """The verdict is written, then one more tool call trips the turn limit."""
    if turn == 1:
        return Reply(text=verdict_text("PASS", path), tools=[("Read", {"file_path": _abs(conv, path)})])
    return Reply(text=f"Double-checking ({turn}).", tools=[("Glob", {"pattern": "**/*.md"})])


def malformed_verdict(conv: Conversation, path: str, turn: int) -> Reply:
    """(d) reads the file, then ends with a json block that does not parse."""
    if turn == 1:
        return Reply(tools=[("Read", {"file_path": _abs(conv, path)})])
    return Reply(text='Done.\n\n```json\n{"tier": "PASS", "summary": "fine", "findings": [\n```\n')


def api_error(conv: Conversation, path: str, turn: int) -> Reply:
    """(e) the model API fails with a non-retryable error."""
    return Reply(error_status=400, error_message="scripted: invalid request")


def permission_denied(conv: Conversation, path: str, turn: int) -> Reply:
    """Read outside the workspace and a Write: both denied by dontAsk mode."""
    if turn == 1:
        return Reply(tools=[("Read", {"file_path": "/etc/hostname"})])
    if turn == 2:
        return Reply(tools=[("Write", {"file_path": _abs(conv, "notes.txt"), "content": "x"})])
    return Reply(text=verdict_text("PASS", path))


def leak_key(conv: Conversation, path: str, turn: int) -> Reply:
    """Echoes the API key the client sent, to prove outputs are scrubbed."""
    key = conv.headers.get("x-api-key", "")
    return Reply(text=f"my key is {key}\n" + verdict_text("PASS", path))


SLOW_REPLY_S = HANG_S  # the hung reply: a run its timeout did not end waits at least this
SLOW_REPLIES = {"started": 0, "answered": 0}  # hung replies begun, and those that slept their time out


def slow(conv: Conversation, path: str, turn: int) -> Reply:
    """Hangs past any sane timeout after the first turn."""
    SLOW_REPLIES["started"] += 1
    time.sleep(SLOW_REPLY_S)
    SLOW_REPLIES["answered"] += 1
    return Reply(text=verdict_text("PASS", path))


def script_for(routes: dict[str, Behaviour], default: Behaviour = review_correctly) -> Callable[[Conversation], Reply]:
    """A server script: read the changed list first, then route on the reviewed skill's folder."""

    def script(conv: Conversation) -> Reply:
        path = reviewed_path(conv)
        if not path and conv.tool_results():
            raise ScriptError(f"no SKILL.md path in the tool results after reading {CHANGED}; "
                              f"the first result was: {conv.tool_results()[0][:300]!r}")
        if not path:
            return Reply(text="Reading the changed-files list.",
                         tools=[("Read", {"file_path": _abs(conv, CHANGED)})])
        name = path.rstrip("/").split("/")[-2]
        return routes.get(name, default)(conv, path, conv.turns())

    return script


def api_error_retryable(conv: Conversation, path: str, turn: int) -> Reply:
    """A 500 the client retries (CLAUDE_CODE_MAX_RETRIES bounds it) before giving up."""
    return Reply(error_status=500, error_type="api_error", error_message="scripted: overloaded")
