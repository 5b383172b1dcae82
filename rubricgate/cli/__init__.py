"""Click commands: thin adapters (flags -> config -> library call -> exit code)."""

from rubricgate.cli.app import main
# Each module registers its commands on `main` when imported.
from rubricgate.cli import core, agents_cmd, reports_cmd, compare_cmd, adopt_cmd  # noqa: F401,E402

__all__ = ["main"]
