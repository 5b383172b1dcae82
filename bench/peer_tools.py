"""The peer rows of bench/peers.py: promptfoo and inspect_ai running the same stub reviewer.

Neither copies a tree per case (they have no workspace isolation); both grade the output with a
`contains` check of the verdict. A peer that is not installed returns the reason it was skipped.
Install them outside the project, e.g.:
    npm install --prefix /tmp/peers/npm promptfoo      && export PROMPTFOO=/tmp/peers/npm/node_modules/.bin/promptfoo
    python3 -m venv /tmp/peers/venv && /tmp/peers/venv/bin/pip install inspect_ai
                                                       && export INSPECT=/tmp/peers/venv/bin/inspect
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

# The verdict as it appears in the raw stream (inside a JSON string, so its quotes are escaped).
TARGET = 'tier\\": \\"PASS'


def _exe(variable: str, name: str) -> str | None:
    """The peer's executable: $VARIABLE when it names a program that runs, else `name` on PATH."""
    given = os.environ.get(variable)
    return shutil.which(given) if given else shutil.which(name)


def promptfoo_row(work: Path, cases: int, jobs: int, stub: Path):
    """`promptfoo eval` over `cases` tests with an exec provider; a Measure, or why it was skipped."""
    from bench.peers import run_measured

    exe = _exe("PROMPTFOO", "promptfoo")
    if not exe:
        return "promptfoo not installed (set PROMPTFOO=/path/to/promptfoo)"
    work.mkdir(parents=True, exist_ok=True)
    config = {"description": "stub reviewer", "prompts": ["review case {{i}}"],
              "providers": [{"id": f"exec: {stub}"}],
              "tests": [{"vars": {"i": i}, "assert": [{"type": "contains", "value": TARGET}]} for i in range(cases)]}
    (work / "promptfooconfig.json").write_text(json.dumps(config))
    # The log files are off: promptfoo 0.121 on Node 20 crashes writing them at exit (after the eval).
    env = {**os.environ, "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
           "PROMPTFOO_DISABLE_DEBUG_LOG": "true", "PROMPTFOO_DISABLE_ERROR_LOG": "true",
           "PROMPTFOO_CONFIG_DIR": str(work / ".promptfoo")}
    return run_measured([exe, "eval", "-c", str(work / "promptfooconfig.json"), "--no-cache", "--no-table",
                         "--no-write", "--no-progress-bar", "-j", str(jobs)], work, env)


INSPECT_TASK = '''
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import includes
from inspect_ai.solver import solver
from inspect_ai.util import subprocess


@solver
def stub_reviewer():
    async def solve(state, generate):
        result = await subprocess([{stub!r}])
        state.output = ModelOutput.from_content("stub", result.stdout)
        return state
    return solve


@task
def peers():
    return Task(dataset=[Sample(input=f"review case {{i}}", target={target!r}) for i in range({cases})],
                solver=stub_reviewer(), scorer=includes())
'''


def inspect_row(work: Path, cases: int, jobs: int, stub: Path):
    """`inspect eval` over `cases` samples with a solver running the stub; a Measure, or the skip reason."""
    from bench.peers import run_measured

    exe = _exe("INSPECT", "inspect")
    if not exe:
        return "inspect_ai not installed (set INSPECT=/path/to/inspect)"
    work.mkdir(parents=True, exist_ok=True)
    (work / "peers_task.py").write_text(INSPECT_TASK.format(stub=str(stub), target=TARGET, cases=cases))
    env = {**os.environ, "INSPECT_LOG_DIR": str(work / "logs")}
    return run_measured([exe, "eval", "peers_task.py", "--model", "mockllm/model",
                         "--max-samples", str(jobs), "--max-subprocesses", str(jobs), "--display", "none",
                         "--log-dir", str(work / "logs")], work, env)
