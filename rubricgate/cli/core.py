"""Commands: core."""

from rubricgate.cli.app import main  # noqa: F401
