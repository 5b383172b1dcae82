"""Hostile fake reviewers for the fault tests, driven through the `command` agent.

Each is a Python script that first carries out an attack (its `attack` source, run with the
workspace as cwd), then prints a Claude Code stream-json transcript: one Read of the reviewed
file and a verdict. `tier="RIGHT"` answers what the builtin reviewer answers (so the suite
passes), any other tier is answered for every case (so a PASS fixture fails).
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import yaml

STREAM = r'''
import json, sys, os
from pathlib import Path

def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()

def verdict(tier):
    changed = Path("reviewer/.changed-skills.txt").read_text().split()
    findings = []
    if tier == "RIGHT":  # right on a missing description, the fixtures these tests use
        tier = right_tier(changed)
        if tier == "BLOCK":
            findings = [{"severity": "critical", "rule": "fm-description-required", "file": changed[0], "line": 1,
                         "quote": "---", "issue": "no description", "fix": "add one"}]
    return {"tier": tier, "summary": "fault-test reviewer", "files_reviewed": changed, "findings": findings}

def right_tier(changed):
    parts = Path(changed[0]).read_text().split("---")
    front = parts[1] if len(parts) > 2 else ""
    return "PASS" if "description:" in front else "BLOCK"

def stream(tier, note=""):
    v = verdict(tier)
    text = note + "\n```json\n" + json.dumps(v) + "\n```\n"
    emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": "s", "tools": ["Read"], "model": "m"})
    emit({"type": "assistant", "message": {"id": "m1", "model": "m", "role": "assistant",
          "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": v["files_reviewed"][0]}}]}})
    emit({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}})
    emit({"type": "assistant", "message": {"id": "m2", "model": "m", "role": "assistant", "content": [{"type": "text", "text": text}]}})
    emit({"type": "result", "subtype": "success", "is_error": False, "result": text, "num_turns": 2,
          "total_cost_usd": 0.0, "usage": {"input_tokens": 1, "output_tokens": 1}, "permission_denials": []})
'''


def write_reviewer(folder: Path, attack: str = "", tier: str = "RIGHT", name: str = "reviewer.py") -> Path:
    """A fake reviewer script outside the repository (the sandbox shows such a script read-only)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    body = textwrap.dedent(attack).strip() or "pass"
    path.write_text(STREAM + "\nnote = ''\ntry:\n" + textwrap.indent(body, "    ")
                    + "\nexcept Exception as exc:\n    note = f'attack failed: {type(exc).__name__}: {exc}'\n"
                    + f"stream({tier!r}, note)\n")
    return path


def use_reviewer(repo: Path, script: Path, sandbox: str = "bwrap", **agent: object) -> None:
    """Point the repository's rubricgate.yaml at the fake reviewer (command agent, claude format)."""
    path = repo / "rubricgate.yaml"
    config = yaml.safe_load(path.read_text())
    config["agent"] = {"name": "command", "command": [sys.executable, str(script), "{prompt_file}"],
                       "format": "claude", "sandbox": sandbox, "timeout_s": 60, **agent}
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def snapshot_bytes(root: Path) -> dict[str, bytes]:
    """Every file under root (including .git) with its bytes, for byte-identical comparisons."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "reports" not in p.relative_to(root).parts}


def live_pids_with(marker: str, unless: bytes | None = None) -> list[int]:
    """Pids whose command line or environment mentions marker (a leftover of the run), except
    those whose command line holds `unless` (the test's own harness process)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            blob = cmdline + (proc / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in blob and not (unless and unless in cmdline):
            found.append(int(proc.name))
    return found


def dump(obj: object) -> str:
    return json.dumps(obj)
