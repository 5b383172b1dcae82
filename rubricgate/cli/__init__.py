"""Click commands: thin adapters (flags -> config -> library call -> exit code).

Each command module registers its commands on `main` when imported; `main` imports a module only
when one of its commands is invoked (rubricgate.cli.app.LAZY_COMMANDS).

May import: everything; nothing imports cli.
"""

from rubricgate.cli.app import main

__all__ = ["main"]
