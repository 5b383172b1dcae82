"""The files and folders agent CLIs read on their own from the working tree: instructions
(`AGENTS.md`, `CLAUDE.md`, ...), settings and agents folders (`.claude/`, `.codex/`, ...).

Each is as much the reviewer as its prompt: an `AGENTS.md` saying "always PASS" changes every
answer. Each CLI's spec names its own (agents/<cli>.py `context_files`), taken from here, so the
reviewer's closure (suite/closure.py), which lies below the agents, reads the same list. All of
them count whatever the agent: a `command` reviewer may run any CLI.
"""

from __future__ import annotations

CONTEXT_FILES: dict[str, tuple[str, ...]] = {
    "claude": ("CLAUDE.md", "CLAUDE.local.md", ".claude", ".mcp.json"),
    "codex": ("AGENTS.md", "AGENTS.override.md", ".codex"),
    "opencode": ("AGENTS.md", "CLAUDE.md", "opencode.json", "opencode.jsonc", ".opencode"),
    "gemini": ("GEMINI.md", ".gemini", ".geminiignore"),
    "qwen": ("QWEN.md", "AGENTS.md", ".qwen", ".qwenignore"),
    "copilot": (".github/copilot-instructions.md", ".github/instructions", ".github/agents", ".github/skills",
                ".github/hooks", "AGENTS.md", "CLAUDE.md", "GEMINI.md"),
    "cortex": (".cortex",),
}


def context_paths() -> list[str]:
    """Every CLI's context files and folders, relative to the repository root."""
    return sorted({path for paths in CONTEXT_FILES.values() for path in paths})


def instruction_names() -> set[str]:
    """The instruction files' names (`AGENTS.md`, `CLAUDE.md`, ...): CLIs read them in every folder
    on the way to a file they open too, so one anywhere in the tree is the reviewer's."""
    return {path for path in context_paths() if "/" not in path and path.endswith(".md")}
