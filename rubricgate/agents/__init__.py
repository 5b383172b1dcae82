"""Agent adapters, one module per agent. `get_agent(name, config)` builds one.

The adapters that drive an agent CLI each declare a `CliSpec` beside their class; every table
about the CLIs derives from those (agents/registry.py).

May import: isolation (processes, sandbox), suite (the rubric), models, errors, secrets.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from rubricgate.agents.base import Agent, AgentRequest

if TYPE_CHECKING:  # `rubricgate agents` lists the adapters without loading the config models
    from rubricgate.models.config import AgentConfig


def get_agent(name: str, config: AgentConfig) -> Agent:
    """Build the adapter called `name` from the agent config (KeyError for an unknown name).

    Only that adapter's module is imported: a broken optional adapter cannot stop the builtin."""
    from rubricgate.agents.registry import adapter_path

    module_name, cls_name = adapter_path(name).split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls(config)


__all__ = ["Agent", "AgentRequest", "get_agent"]
