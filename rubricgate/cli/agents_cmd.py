"""Commands: agents_cmd."""

from rubricgate.cli.app import main  # noqa: F401
