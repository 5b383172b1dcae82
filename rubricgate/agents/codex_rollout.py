"""Codex's session rollout (CODEX_HOME/sessions/.../rollout-*.jsonl): the complete record of a run.

The --json stream leaves some commands out (a write the read-only sandbox refused never shows
there); the rollout has every function call with its output and one usage record per model
response, which is an exact turn count. Read size-capped and never through a link: the agent
wrote that tree.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rubricgate import boundary
from rubricgate.agents.normalize import Draft, count_or_zero, field_dict, normalize_tool_name, parse_json_lines
from rubricgate.agents.shell_commands import classify_command
from rubricgate.isolation.untrusted import UntrustedPath, read_under

if TYPE_CHECKING:
    from rubricgate.agents.base import AgentRequest
    from rubricgate.models.transcript import ToolStatus


def find_rollout(home: Path) -> Path | None:
    """The run's session file under CODEX_HOME/sessions (one run, so at most one is expected),
    found without entering a linked folder (the agent wrote that tree)."""
    found = sorted(_rollouts(home / "sessions")) if not home.is_symlink() and home.is_dir() else []
    return found[-1] if found else None


def _rollouts(folder: Path) -> list[Path]:
    """Every rollout file under `folder`, walked without recursion: the agent made the tree, and
    one a thousand folders deep took os.walk past Python's recursion limit (the trial errored as
    the harness's own failure). A linked folder is never entered; one that cannot be listed is
    passed over, as os.walk passes it."""
    found: list[Path] = []
    pending = [os.fspath(folder)]
    while pending:
        try:
            with os.scandir(pending.pop()) as listing:
                for entry in listing:
                    if entry.is_dir():
                        pending += [] if entry.is_symlink() else [entry.path]
                    elif entry.name.startswith("rollout-") and entry.name.endswith(".jsonl"):
                        found.append(Path(entry.path))
        except OSError:
            continue
    return found


def clear_sessions(request: AgentRequest) -> None:
    """Remove HOME/.codex/sessions before an attempt, `.codex` made the harness's own folder first
    (the agent may have left it a link, which the removal would follow). A retry runs in the same
    HOME: the failed attempt's rollout was read as one that wrote none, its calls and turns graded
    and its failure to start the reviewer's."""
    from rubricgate.isolation.overlay import remove_tree

    os.close(request.scratch_folder(request.home / ".codex"))
    remove_tree(request.home / ".codex" / "sessions")


def read_rollout(home: Path) -> bytes | None:
    """The session rollout's bytes (size-capped), read without following a link; None when
    there is none or it is not a regular file inside `home`."""
    found = find_rollout(home)
    if found is None:
        return None
    try:
        return read_under(home, found.relative_to(home))
    except (OSError, UntrustedPath):
        return None


def apply_rollout(draft: Draft, rollout: bytes | str) -> None:
    """Replace stream-derived calls and steps with the rollout's complete record.

    The --json stream omits some commands (a write refused by the read-only sandbox never
    appears there); the rollout has every function call, its output, and one usage record per
    model response, which is an exact turn count.
    """
    entries, _ = parse_json_lines(rollout)
    payloads = [field_dict(e, "payload") for e in entries if isinstance(e.get("payload"), dict)]
    responses = {str(p.get("response_id")) for p in payloads if p.get("response_id")}
    calls, outputs = _rollout_calls(payloads)
    _rollout_usage(draft, payloads)
    if not calls and not responses:
        return
    draft.tool_calls = []
    step_of = _steps_by_call(payloads)
    for call_id, (raw, command_or_args) in calls.items():
        name, args = _rollout_tool(raw, command_or_args)
        status = output_status(name, outputs.get(call_id))
        call = draft.add_tool(raw, args, step_of.get(call_id, 0), status)
        call.name = name
        if call_id in outputs:
            call.keep_result(outputs[call_id])
    draft.steps = max(len(responses), draft.steps)


def _rollout_usage(draft: Draft, payloads: list[dict[str, Any]]) -> None:
    """Tokens of a run whose stream has no usage (it failed before turn.completed): the rollout's
    last token_count, the session's running total of what the endpoint reported."""
    if draft.input_tokens or draft.output_tokens:
        return
    counts = [field_dict(field_dict(p, "info"), "total_token_usage")
              for p in payloads if p.get("type") == "token_count"]
    if counts:
        add_usage(draft, counts[-1])


def _rollout_calls(payloads: list[dict[str, Any]]) -> tuple[dict[str, tuple[str, Any]], dict[str, str]]:
    calls: dict[str, tuple[str, Any]] = {}
    outputs: dict[str, str] = {}
    for p in payloads:
        kind = p.get("type")
        if kind in ("function_call", "custom_tool_call", "local_shell_call"):
            calls[str(p.get("call_id"))] = (str(p.get("name") or kind), p.get("arguments", p.get("input")))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            out = p.get("output")
            outputs[str(p.get("call_id"))] = out if isinstance(out, str) else json.dumps(out)
    return calls, outputs


def _steps_by_call(payloads: list[dict[str, Any]]) -> dict[str, int]:
    """1-based model turn of each call: a turn ends at its usage record (token_usage_record)."""
    step, steps = 1, {}
    for p in payloads:
        if p.get("type") in ("function_call", "custom_tool_call", "local_shell_call"):
            steps[str(p.get("call_id"))] = step
        elif p.get("response_id"):
            step += 1
    return steps


def _rollout_tool(raw: str, arguments: Any) -> tuple[str, dict[str, Any]]:
    """Normalized name and input of a rollout call (exec_command / shell / apply_patch / mcp)."""
    args = _json_object(arguments)
    if raw in ("exec_command", "shell", "local_shell_call", "shell_command"):
        cmd = args.get("cmd") or args.get("command") or ""
        command = shlex.join(str(c) for c in cmd) if isinstance(cmd, list) else str(cmd)
        return classify_command(command), {"command": command}
    if raw == "apply_patch":
        return "edit", args
    return normalize_tool_name(raw), args


def output_status(name: str, output: str | None) -> ToolStatus:
    """A call's status from its output text: exit code, sandbox refusal, or policy rejection."""
    if output is None:
        return "error"  # never answered: the run ended mid-call
    text = output.lower()
    # A refusal: the sandbox's, or Codex's own under approval_policy "never" ("approval policy is
    # Never; reject command - you cannot ask for escalated permissions ...": no process ran).
    if any(m in text for m in ("read-only file system", "operation not permitted", "rejected", "reject command",
                               "approval policy is never", "declined", "blocked by policy", "sandbox denied")):
        return "denied"
    code = _exit_code(output)
    return "ok" if code in (None, 0) or (code == 1 and name == "grep") else "error"


def _exit_code(output: str) -> int | None:
    for marker in ("Process exited with code ", "Exit code: "):
        if marker in output:
            words = output.split(marker, 1)[1].split()
            digits = words[0].strip(",.") if words else ""
            return int(digits) if digits.lstrip("-").isdigit() and len(digits) <= 10 else None
    return None


def _json_object(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    try:
        parsed = boundary.loads(value, clip=True) if isinstance(value, str) else None
    except ValueError:
        return {"input": value}
    return parsed if isinstance(parsed, dict) else {"input": value}


def add_usage(d: Draft, usage: Any) -> None:
    """Add a usage record's token counts (Codex's `turn.completed` or a rollout's token_count)."""
    usage = usage if isinstance(usage, dict) else {}
    d.input_tokens += count_or_zero(usage.get("input_tokens"))
    d.output_tokens += count_or_zero(usage.get("output_tokens"))
