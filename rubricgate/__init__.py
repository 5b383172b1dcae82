"""rubricgate: a continuous-eval regression gate for agent reviewers."""

__version__ = "0.1.0"
