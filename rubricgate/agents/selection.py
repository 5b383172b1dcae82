"""Which adapter each job runs with, built and checked before any trial starts.

Agent config errors (an unknown name, `command` without `agent.command`, `replay` without a
recording for a planned trial) are bad input: one line naming the file and field, exit 2, found
at plan time by `rubricgate run` and by `rubricgate validate` - never a per-trial crash.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from rubricgate.agents import Agent, get_agent
from rubricgate.agents.registry import adapter_names
from rubricgate.errors import GateInputError
from rubricgate.isolation.environment import build_env
from rubricgate.models.case import CaseSpec
from rubricgate.models.config import AgentConfig, Config

Factory = Callable[[str, AgentConfig], Agent]  # pipeline passes its own get_agent (a test seam)


class PlannedJob(Protocol):
    """A planned (case, trial, agent) job, as runner/scheduler.py's Job holds it (read-only)."""

    @property
    def case(self) -> CaseSpec: ...

    @property
    def trial(self) -> int: ...

    @property
    def agent(self) -> str: ...


@dataclass
class _Planned:
    case: CaseSpec
    trial: int
    agent: str


def check_agents(cases: Iterable[CaseSpec], config: Config) -> dict[str, Agent]:
    """`rubricgate validate`: build every configured adapter over every case's planned trials."""
    jobs = [_Planned(c, t, c.agent or config.agent.name) for c in cases for t in range(1, c.trials + 1)]
    return build_agents(jobs, config)


def agent_source(case: CaseSpec, override: str | None) -> tuple[str, str]:
    """(file, field) that chose the case's agent: --agent beats the task's agent: beats the config."""
    if override:
        return "--agent", ""
    if case.agent:
        return case.origin, "agent"
    return "rubricgate.yaml", "agent.name"


def build_agents(jobs: Iterable[PlannedJob], config: Config, override: str | None = None,
                 factory: Factory = get_agent) -> dict[str, Agent]:
    """One adapter per agent name the jobs use, then each adapter's own preflight over its jobs."""
    jobs = list(jobs)
    agents: dict[str, Agent] = {}
    for job in jobs:
        if job.agent not in agents:
            source = agent_source(job.case, override)
            agents[job.agent] = _build(job.agent, config, source, factory)
            check_installed(agents[job.agent], job.agent, config, source)
    for name, agent in agents.items():
        check = getattr(agent, "preflight", None)
        if check is not None:
            check([(j.case.id, j.trial) for j in jobs if j.agent == name])
    return agents


def check_installed(agent: Agent, name: str, config: Config, source: tuple[str, str]) -> None:
    """A CLI (or a `command` program) that is not on the agent's PATH: exit 2 before any trial."""
    missing = getattr(agent, "missing_program", None)
    program = missing(_agent_path(config)) if missing is not None else None
    if program is None:
        return
    if name == "command":
        source = ("rubricgate.yaml", "agent.command")
    raise GateInputError(source[0], source[1], f"agent {name!r}: program {program!r} not found on PATH",
                         f"install {program} or put it on PATH (the agent's PATH comes from agent.env_allowlist)")


def _agent_path(config: Config) -> str:
    """The PATH the program is looked up on (the adapters fall back to the harness's own)."""
    env = build_env(config.agent.env_allowlist, config.agent.secret_env)
    return env.get("PATH") or os.environ.get("PATH", "")


def _build(name: str, config: Config, source: tuple[str, str], factory: Factory) -> Agent:
    try:
        return factory(name, config.agent)
    except KeyError:
        raise GateInputError(source[0], source[1], f"unknown agent {name!r}",
                             f"use one of {', '.join(adapter_names())}") from None
