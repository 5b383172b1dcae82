"""A hostile or buggy reviewer for the fault tests: prints a Claude Code stream-json transcript.

Run by the `command` agent as `python fake_reviewer.py PLAN` (the plan itself on the command line,
JSON in base64 so no brace reads as a template placeholder: inside the sandbox no file of the
test's temp folder is visible). It maps a fixture name
to what to do when reviewing it; "*" is the fallback:
  tier, rules      the verdict (findings are critical findings of these rules)
  secret_in        places to echo $FAULT_SECRET_ENV's value: "verdict", "tool", "text", "text3"
                   (JSON-escaped three times), "stderr_cut" (a long stderr line ending in it,
                   then exit 1 with no result: the 300-character error cut)
  bash_surrogate   also issue a Bash call whose input holds a lone surrogate (\\ud800)
  hide             instead of answering, look like an outage (what a reviewer wrong on that case
                   would do to be left out of the rates): "malformed_event" (an assistant event
                   whose message is a number, then no result), "fake_api_error" (a result claiming
                   an API 529, exit 1), "exit_1_silent" (nothing on stdout, exit 1)
It learns what it reviews the way the real reviewer does: the changed-files list in its cwd.
"""

import base64
import json
import os
import sys

CHANGED = "reviewer/.changed-skills.txt"
SECRET_VAR = "FAULT_API_KEY"


def line(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def assistant(n: int, block: dict) -> None:
    line({"type": "assistant", "message": {"id": f"msg_fault_{n}", "role": "assistant", "model": "fake-model",
                                          "content": [block], "usage": {"input_tokens": 10, "output_tokens": 5}}})


def tool(n: int, name: str, args: dict) -> None:
    assistant(n, {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": args})
    line({"type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": f"toolu_{n}", "type": "tool_result", "content": "ok"}]}})


def verdict(reviewed: str, step: dict, secret: str) -> str:
    summary = f"Scripted review of {reviewed}."
    if "verdict" in step.get("secret_in", []):
        summary += f" The key is {secret} (do not share)."
    findings = [{"severity": "critical", "rule": r, "file": reviewed, "line": 1, "quote": "---",
                 "issue": "scripted", "fix": "scripted"} for r in step.get("rules", [])]
    body = {"tier": step["tier"], "summary": summary, "files_reviewed": [reviewed], "findings": findings}
    return "Review complete.\n\n```json\n" + json.dumps(body, indent=2, ensure_ascii=False) + "\n```\n"


def hide(how: str) -> int:
    """End the way an outage would, without an answer (see the module docstring)."""
    if how == "malformed_event":
        line({"type": "assistant", "message": 1.5})
        return 0
    if how == "fake_api_error":
        line({"type": "result", "subtype": "success", "is_error": True, "num_turns": 1, "api_error_status": 529,
              "result": "API Error: 529 Overloaded", "usage": {"input_tokens": 10, "output_tokens": 0}})
        return 1
    return 1  # exit_1_silent: no output at all


def main() -> int:
    plan = json.loads(base64.b64decode(sys.argv[1]))
    reviewed = open(CHANGED, encoding="utf-8").read().split()[0]
    step = next((v for k, v in plan.items() if k != "*" and k in reviewed), None) or plan["*"]
    secret = os.environ.get(SECRET_VAR, "")
    where = step.get("secret_in", [])
    if step.get("hide"):
        return hide(step["hide"])
    line({"type": "system", "subtype": "init", "model": "fake-model", "tools": ["Read", "Grep", "Glob"]})
    tool(1, "Read", {"file_path": CHANGED})
    tool(2, "Read", {"file_path": reviewed + (f"?token={secret}" if "tool" in where else "")})
    if "text" in where:
        assistant(3, {"type": "text", "text": f"The environment holds {secret}."})
    if "text3" in where:
        assistant(3, {"type": "text", "text": json.dumps(json.dumps(json.dumps(secret)))})
    if step.get("bash_surrogate"):
        tool(4, "Bash", {"command": "cat /etc/hostname \ud800"})
    if "stderr_cut" in where:
        sys.stderr.write("fatal: " + "x" * 281 + secret + "\n")  # the cut at 300 falls inside the secret
        return 1
    text = verdict(reviewed, step, secret)
    assistant(5, {"type": "text", "text": text})
    line({"type": "result", "subtype": "success", "is_error": False, "num_turns": 5, "result": text,
          "total_cost_usd": 0.0, "usage": {"input_tokens": 50, "output_tokens": 25}, "permission_denials": []})
    return 0


if __name__ == "__main__":
    sys.exit(main())
