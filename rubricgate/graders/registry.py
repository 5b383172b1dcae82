"""The graders of the registered dimensions (rubricgate/models/dimensions.py), resolved once.

A grader is `grade(case, transcript, parsed) -> Grade`. The registry row names it as
`module:function`; the module is imported when a run first grades, so a run that grades the
verdict alone never loads the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache

from rubricgate.models import dimensions
from rubricgate.models.case import CaseSpec
from rubricgate.models.results import Grade
from rubricgate.models.transcript import Transcript
from rubricgate.models.verdict import ParsedVerdict

Grader = Callable[[CaseSpec, Transcript, ParsedVerdict], Grade]


@cache
def _resolve(path: str) -> Grader:
    module, _, func = path.partition(":")
    return getattr(importlib.import_module(module), func)


def grader_for(dimension: str) -> Grader:
    """The grade function of a registered dimension (KeyError for an unknown one)."""
    return _resolve(dimensions.spec(dimension).grader)
