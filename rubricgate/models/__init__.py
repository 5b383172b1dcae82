"""pydantic models, one per file format.

No module here has `from __future__ import annotations`: with it pydantic evaluates every field's
annotation from its string when the class is made, ~7 ms of every command's start (a run's
fixed cost); Python 3.11 evaluates `X | None` and `list[str]` itself.
An empty list or dict default is written `= []` / `= {}`: pydantic copies a mutable default for
each instance, and a `default_factory` costs a signature inspection per field when the validator
is built (for a builtin such as `list`, parsing its text signature: ~4 ms the first time, then
0.05-0.25 ms a field), on the way to a run's first agents.
tests/models/test_models_base.py keeps both ways.

May import: nothing from rubricgate but models itself.
"""
