"""pydantic models, one per file format.

No module here has `from __future__ import annotations`: with it pydantic evaluates every field's
annotation from its string when the class is made, ~7 ms of every command's start (a run's
fixed cost); Python 3.11 evaluates `X | None` and `list[str]` itself.
tests/test_models_base.py keeps it that way.
"""
