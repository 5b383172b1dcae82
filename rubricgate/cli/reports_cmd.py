"""Commands: reports_cmd."""

from rubricgate.cli.app import main  # noqa: F401
