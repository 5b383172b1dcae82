"""What makes two runs one design: the runs a continuation may pool (gating/continuation.py).

Two runs are one design when the same reviewer, run the same way, was judged by the same gate
against the same baseline and cases: only then are their trials draws of one thing, and a
continuation may count both. Each part below names what pooling it as one design got wrong.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from rubricgate.models.baseline import Baseline
from rubricgate.models.config import GateConfig
from rubricgate.models.reviewer_digests import sections_unrecorded
from rubricgate.runner.digests import as_before


def design_key(baseline: Baseline, gate: GateConfig, first: int, cases: Sequence[str], dims: Sequence[str],
               reviewer: str, agent: str, model: str | None, suite: str = "", program: str = "",
               environment: str = "") -> str:
    """What makes two runs one design: the baseline's counts, the gate's settings, the first
    round's trials, the cases and dimensions, the reviewer, agent and model, `suite` (what
    grades the answers and what the reviewer sees: the cases' content, the config's `verdict:` and
    `suite.workspace_exclude`, suite_digest) and
    `program` (a `command` reviewer's program and the files its command names, wherever they
    lie: a script outside the repository edited from 97% to 50% right was pooled as one design; an
    agent CLI as found on PATH: an upgraded CLI's trials were pooled with the old one's) and
    `environment` (the values of the variables passed to the agent, secrets left out: an endpoint
    variable pointed at another model was pooled as one design)."""
    data = {"baseline": {c: {d: [v.passes, v.trials] for d, v in dims_.items()}
                         for c, dims_ in sorted(baseline.cases.items())},
            "gate": [gate.confidence, gate.margin, gate.max_trials_per_case, gate.drift_allowance], "first": first,
            "cases": sorted(cases), "dims": list(dims), "reviewer": reviewer, "agent": agent, "model": model}
    if suite:
        data["suite"] = suite
    if program:
        data["program"] = program
    if environment:
        data["environment"] = environment
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def design_of(repo: Path, loaded, case_ids: Sequence[str], first: int, agent: str) -> tuple[str, dict[str, str]]:
    """The design key of a statistical run of `case_ids`, and the judging settings it leaves out."""
    from rubricgate.gating.baseline import reviewer_fingerprint
    from rubricgate.runner.digests import reviewer_digest

    reviewer = reviewer_fingerprint(reviewer_digest(repo, loaded.config))
    key = design_key(loaded.baseline, loaded.config.gate, first, case_ids, loaded.config.graded_dimensions(),
                     reviewer, agent, loaded.config.agent.model, suite_digest(loaded, case_ids),
                     command_program(repo, loaded.config, agent), agent_environment(loaded.config))
    return key, judging_settings(repo, loaded.config)


def judging_settings(repo: Path, config) -> dict[str, str]:
    """The digests of rubricgate.yaml's sections that run or grade the reviewer besides its files
    (DESIGN_SECTIONS; runner/digests.py config_digests), as a run records them (summary.json
    reviewer.digests): a `command` reviewer's command line is the reviewer as much as its script."""
    from rubricgate.runner.digests import CONFIG_KEY, config_digests

    return {k: v for k, v in config_digests(config, repo).items() if k.removeprefix(CONFIG_KEY) in DESIGN_SECTIONS}


DESIGN_SECTIONS = ("agent", "tiers", "rubric")  # verdict: suite_digest; gate: design_key's own fields


def suite_digest(loaded, case_ids: Sequence[str]) -> str:
    """The cases' content (expectations, rubric, files, review paths, and the files they review:
    gating/case_edits.py), the config's `verdict:` and what the workspaces leave out
    (`suite.workspace_exclude`): an edit to any is another design (its old trials would not grade
    the same, answered another file, or were answered seeing other files: docs that quote the
    expected verdicts, say)."""
    chosen = set(case_ids)
    verdict = loaded.config.verdict.model_dump(mode="json") if loaded.config.verdict else None
    # a setting added since, at its default, is no other design: a run recorded before it continues
    data = {"cases": [c.model_dump(mode="json") for c in loaded.cases if c.id in chosen],
            "verdict": as_before("verdict", verdict)}
    if loaded.case_digests:
        data["reviewed"] = {c: d for c, d in sorted(loaded.case_digests.items()) if c in chosen}
    if loaded.config.suite.workspace_exclude:  # none: the digest of a run recorded before it was kept
        data["excluded"] = sorted(loaded.config.suite.workspace_exclude)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def agent_environment(config) -> str:
    """The digest of the variables the suite passes to its agent besides the machine's own (the
    default allowlist: PATH, LANG, TZ, ...), its secrets left out (the trial cache's env_digest),
    and so a variable named as a credential and a URL's password: another base URL is another
    design; a rotated API key or proxy password, or PATH with a venv activated, is not. The digest
    is kept in summary.json and baseline.json: one of a weak password was a check of guesses."""
    from rubricgate.isolation.environment import build_env
    from rubricgate.models.config import DEFAULT_ENV_ALLOWLIST
    from rubricgate.runner.cache import env_digest
    from rubricgate.secret_env import secret_name

    own = set(config.agent.env_allowlist) - set(DEFAULT_ENV_ALLOWLIST)
    # An empty variable is left out as an unset one: the CLIs, and the sandbox's endpoints, read
    # both as the default, and Actions sets `NAME: ${{ vars.NAME }}` of an undefined repository
    # variable to '': a CI run was another setup than a laptop's, and never pooled with it.
    public = {k: _URL_PASSWORD.sub(r"\1@", v) for k, v in build_env(own, config.agent.secret_env).items()
              if v and not secret_name(k)}
    return env_digest(public, config.agent.secret_env)


# A URL's password (`http://user:password@proxy:3128`): the user and host stay, so another proxy
# is still another design.
_URL_PASSWORD = re.compile(r"(://[^/?#@:\s]*):[^/?#@\s]*@")


def agent_setup(repo: Path, config, agent: str) -> str:
    """One digest of the program `agent` starts and the environment passed to it (the design's
    `program` and `environment`): a baseline re-measured through another endpoint is another
    reviewer's, replaced, never pooled with the old trials."""
    from rubricgate.runner.cache_inputs import portable_program_digest

    # By content alone: a baseline pools runs of other machines and installs (a CI runner's fresh
    # CLI, a checkout in another folder), where the design's own digest keys one machine's runs.
    both = json.dumps([command_program(repo, config, agent, portable_program_digest), agent_environment(config)])
    return hashlib.sha256(both.encode()).hexdigest()[:16]


# Arguments of a `command` reviewer that are its code: a script an interpreter runs. Data files its
# command names (a plan, a counter, a log it appends to) are no part of the design: one rewritten
# by every run made each run another design.
SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl")


def command_program(repo: Path, config, agent: str, digest: Callable[..., str] | None = None) -> str:
    """The digest of the program the agent starts (`digest`, by default runner/cache_inputs.py
    program_digest): a `command` reviewer's program and the scripts its command names, wherever
    they lie, or an agent CLI as found on PATH; '' for an agent that starts none (builtin, replay)."""
    from rubricgate.agents.registry import cli_specs
    from rubricgate.runner.cache_inputs import program_digest

    digest = digest or program_digest
    if agent == "command" and config.agent.command:
        argv = config.agent.command
        scripts = [a for a in argv[1:] if a.removeprefix("{workspace}/").endswith(SCRIPT_SUFFIXES)]
        return digest([argv[0], *scripts], repo, os.environ.get("PATH"))
    # A CLI upgraded between a run and its continuation is another reviewer: its trials pooled
    # with the old CLI's would be judged as one design.
    spec = cli_specs().get(agent)
    return digest([spec.binary], repo, os.environ.get("PATH")) if spec is not None else ""


def unrecorded_by_older(summary) -> list[str]:
    """What a design now holds that the run's summary never recorded, because an older rubricgate
    wrote it ([] when it records them all): each case's digest (suite_digest's `reviewed`) and
    rubricgate.yaml's sections beside the reviewer's files (judging_settings). Its design key was
    computed without them: no run of this rubricgate can be its design."""
    gaps = ["case digests"] if any(not case.digest for case in summary.cases) else []
    digests = summary.reviewer.digests if summary.reviewer is not None else {}
    return gaps + (["digests of rubricgate.yaml's sections"] if not digests or sections_unrecorded(digests) else [])
