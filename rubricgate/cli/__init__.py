"""Click commands: thin adapters (flags -> config -> library call -> exit code).

Each command module registers its commands on `main` when imported; `main` imports a module only
when one of its commands is invoked (rubricgate.cli.app.LAZY_COMMANDS).

`main` itself is imported on first use: the console entry point (cli/console.py) is a module of
this package, and it must install its signal handlers before click is imported, not after.

May import: everything; nothing imports cli.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself is not imported on the way to the signal handlers
if TYPE_CHECKING:
    from rubricgate.cli.app import main

__all__ = ["main"]


def __getattr__(name: str) -> object:
    if name == "main":
        from rubricgate.cli.app import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
