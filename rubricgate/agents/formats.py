"""Transcript formats by name, for the command and replay adapters.

Each format (a CLI's `CliSpec.format`, agents/spec.py, plus plain text) is a parser
`(data, *, agent, allowed) -> Draft` and, where the stream shows turns and tool calls as they
happen, a watch factory `(max_steps, allowed) -> Watch | None` the harness uses to enforce limits
a CLI of unknown behaviour may not enforce itself. Parsers are imported when used, so one broken
adapter module cannot stop the others from loading.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rubricgate.agents.normalize import (
    Draft,
    TurnCounter,
    field_dict,
    is_resume_request,
    is_tool_block,
    line_event,
    normalize_tool_name,
    tool_block_name,
)
from rubricgate.agents.registry import formats

if TYPE_CHECKING:
    from rubricgate.isolation.process import Watch

Parser = Callable[..., Draft]


def format_names() -> list[str]:
    """Every transcript format `agent.format` may name."""
    return list(formats())


def parser_for(fmt: str) -> Parser:
    """The parse function of a format name (KeyError for an unknown name)."""
    return _resolve(formats()[fmt].parser)


def _resolve(ref: str) -> Callable[..., Any]:
    module, func = ref.split(":")
    return getattr(importlib.import_module(module), func)


def parse_text(data: bytes | str, *, agent: str = "command", allowed: list[str] | None = None) -> Draft:
    """Plain stdout is the final answer; no turns or tool calls are visible."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    # No end-of-run event: plain text cannot show that it is whole, so a signal before the exit
    # (SIGSEGV mid-answer) is the crash's, never the reviewer's answer; an error exit is noted.
    return Draft(agent=agent, final_text=text, steps=1 if text.strip() else 0)


def watch_for(fmt: str, max_steps: int | None, allowed: list[str] | None) -> Watch | None:
    """The format's limit-enforcing watch (its spec's `watch`), None for a format without one."""
    ref = formats()[fmt].watch
    return _resolve(ref)(max_steps, allowed) if ref else None


def claude_shape_watch(max_steps: int | None, allowed: list[str] | None) -> Watch | None:
    """Stop when a top-level turn beyond max_steps starts or a tool outside `allowed` is called.

    Turns are counted by structure (TurnCounter), as the parser counts them.
    """
    if max_steps is None and allowed is None:
        return None
    turns = TurnCounter()
    ok = set(allowed) if allowed is not None else None

    def watch(line: bytes) -> str | None:
        ev = line_event(line) or {}
        if ev.get("type") == "user" and ev.get("parent_tool_use_id") is None and _has_tool_result(ev):
            turns.tool_result()
        elif is_resume_request(ev):
            turns.resumed()
        msg = ev.get("message") if ev.get("type") == "assistant" else None
        if not isinstance(msg, dict):
            return None
        if msg.get("model") != "<synthetic>" and not ev.get("parent_tool_use_id") and \
                turns.assistant(str(msg.get("id") or "")) and max_steps is not None and turns.turns > max_steps:
            return f"max_turns: turn {turns.turns} exceeds max_steps {max_steps}"
        return _tool_violation(msg, ok)

    return watch


def _has_tool_result(ev: dict[str, Any]) -> bool:
    content = field_dict(ev, "message").get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and str(b.get("type", "")).endswith("tool_result") for b in content)


def _tool_violation(msg: dict[str, Any], ok: set[str] | None) -> str | None:
    if ok is None:
        return None
    content = msg.get("content")
    for block in content if isinstance(content, list) else []:
        if is_tool_block(block):
            name = normalize_tool_name(tool_block_name(block))
            if name not in ok:
                return f"tool_denied: {name} is not in the allowlist {json.dumps(sorted(ok))}"
    return None
