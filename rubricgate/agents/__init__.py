"""Agent adapters, one module per agent. `get_agent(name, config)` builds one.

May import: isolation (processes, sandbox), suite (the rubric), models, errors, secrets.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from rubricgate.agents.base import Agent, AgentRequest

if TYPE_CHECKING:  # `rubricgate agents` lists the adapters without loading the config models
    from rubricgate.models.config import AgentConfig

# name -> "module:Class"; modules are imported lazily so a broken optional adapter
# cannot stop the builtin from running.
ADAPTERS: dict[str, str] = {
    "builtin": "rubricgate.agents.builtin:BuiltinAgent",
    "claude": "rubricgate.agents.claude:ClaudeAgent",
    "cortex": "rubricgate.agents.cortex:CortexAgent",
    "opencode": "rubricgate.agents.opencode:OpenCodeAgent",
    "codex": "rubricgate.agents.codex:CodexAgent",
    "command": "rubricgate.agents.command:CommandAgent",
    "replay": "rubricgate.agents.replay:ReplayAgent",
}


def get_agent(name: str, config: AgentConfig) -> Agent:
    """Build the adapter called `name` from the agent config."""
    if name not in ADAPTERS:
        raise KeyError(name)
    module_name, cls_name = ADAPTERS[name].split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls(config)


__all__ = ["ADAPTERS", "Agent", "AgentRequest", "get_agent"]
