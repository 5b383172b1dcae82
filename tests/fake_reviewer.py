"""A fake reviewer CLI for pipeline tests, driven through the `command` agent (format claude).

Each invocation takes the next behaviour from a plan (the last one repeats):
- "answer": reads the changed-files list and answers BLOCK for a skill without a description,
  else PASS, in Claude stream-json;
- "api_error": replays the real Claude Code recording of an API error (exit 1);
- "crash": prints nothing and exits 1 (a CLI that dies before its first model turn);
- "silent": prints nothing and never ends (a CLI hung on a dead connection);
- "linger": answers, leaving a child behind in its process group (its pid in `linger.pid`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

CLAUDE = Path(__file__).parent / "data" / "transcripts" / "claude"

SCRIPT = r'''
import json, sys
from pathlib import Path
plan_file, counter_file, changed_file, api_error = sys.argv[1:5]
plan = json.loads(Path(plan_file).read_text())
import fcntl, os
# Trials run side by side (a CLI reviewer's jobs default to 4): the count is taken under a lock.
fd = os.open(counter_file, os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
n = int(os.read(fd, 32) or b"0")
os.lseek(fd, 0, 0); os.ftruncate(fd, 0); os.write(fd, str(n + 1).encode())
os.close(fd)
mode = plan[min(n, len(plan) - 1)]
if mode == "api_error":
    sys.stdout.buffer.write(Path(api_error).read_bytes()); sys.exit(1)
if mode == "crash":
    sys.exit(1)
if mode == "silent":
    import time; time.sleep(600); sys.exit(0)
if mode == "linger":
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (Path(counter_file).parent / "linger.pid").write_text(str(child.pid))
paths = Path(changed_file).read_text().split()
workspace = Path(changed_file).parents[1]
# Judged by the file itself (the blind reviewer sees neutral paths): no description -> BLOCK.
block = any("description:" not in (workspace / p).read_text() for p in paths)
findings = [{"severity": "critical", "rule": "fm-description-required", "file": paths[0], "line": 1,
             "quote": "q", "issue": "i", "fix": "f"}] if block else []
verdict = {"tier": "BLOCK" if block else "PASS", "summary": "s", "files_reviewed": paths, "findings": findings}
def msg(mid, content):
    return {"type": "assistant", "message": {"id": mid, "model": "m", "role": "assistant", "content": content},
            "parent_tool_use_id": None}
lines = [msg("m1", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": paths[0]}}]),
         {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}},
         msg("m2", [{"type": "text", "text": "done\n```json\n" + json.dumps(verdict) + "\n```"}]),
         {"type": "result", "subtype": "success", "is_error": False, "num_turns": 2, "result": "",
          "total_cost_usd": 0.0, "usage": {"input_tokens": 1, "output_tokens": 1}}]
print("\n".join(json.dumps(x) for x in lines))
'''


def install(repo: Path, plan: list[str], **agent: object) -> Path:
    """Write the fake CLI and its plan beside the repo; point rubricgate.yaml's agent at it."""
    home = repo.parent / "fake-reviewer"
    home.mkdir(exist_ok=True)
    (home / "reviewer.py").write_text(SCRIPT)
    (home / "plan.json").write_text(json.dumps(plan))
    counter = home / "count"
    counter.unlink(missing_ok=True)
    cfg_path = repo / "rubricgate.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    # Copy-only: these tests are about outcomes, not isolation, and the fake CLI keeps its
    # invocation counter beside the repository, where a sandboxed agent cannot write.
    cfg["agent"] = {"name": "command", "format": "claude", "retry_backoff_s": 0, "sandbox": "none", **agent,
                    "command": [sys.executable, str(home / "reviewer.py"), str(home / "plan.json"), str(counter),
                                "{workspace}/reviewer/.changed-skills.txt", str(CLAUDE / "api_error.ndjson")]}
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return counter


def invocations(counter: Path) -> int:
    """How many times the fake CLI ran."""
    return int(counter.read_text()) if counter.exists() else 0
