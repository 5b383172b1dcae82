"""The dimensions a trial is graded on: the one place they are listed.

Each row names the dimension, its grader (`module:function`, resolved by rubricgate/graders/
registry.py: a grader is `grade(case, transcript, parsed) -> Grade`), what the reviewer's
transcript must show for the dimension to say anything, and the case rubric it reads. Adding a
grader is one module under rubricgate/graders/ and one row here; tests/graders/test_grader_registry.py
ties the two together. Everything else (config validation, baseline files, aggregation, the gate,
the reports) reads the list from here.

Which dimensions a run grades is `gate.dimensions` in rubricgate.yaml; unset, every dimension the
reviewer's transcript can show: a `command` agent with `format: text` prints only its answer
(no tool calls, one turn), so its tool_use and trajectory could never vary and are not graded.
"""

from dataclasses import dataclass
from typing import Literal

Observes = Literal["verdict", "tool_calls", "turns"]


@dataclass(frozen=True)
class DimensionSpec:
    """One graded dimension: its name, grader, what it observes, and the case rubric it reads."""

    name: str
    grader: str  # "module:function"
    observes: Observes
    rubric: str | None  # the case rubric key it needs (merged from rubricgate.yaml's `rubric:`)
    about: str


REGISTRY: list[DimensionSpec] = [
    DimensionSpec("verdict", "rubricgate.graders.verdict:grade", "verdict", None,
                  "the effective tier and the expected rules"),
    DimensionSpec("tool_use", "rubricgate.graders.tool_use:grade", "tool_calls", "tool_use",
                  "every tool call allowed, none forbidden, the required ones made"),
    DimensionSpec("trajectory", "rubricgate.graders.trajectory:grade", "turns", "trajectory",
                  "model turns within max_steps, no timeout"),
]

# The dimensions as registered when rubricgate was imported: for ordering and for the alpha share
# the statistics plan with (gating/sequential.py). Checks use `names()`, read at call time.
DIMENSIONS: tuple[str, ...] = tuple(d.name for d in REGISTRY)

# Transcript formats that show neither tool calls nor turns (rubricgate/agents/formats.py).
ANSWER_ONLY_FORMATS = ("text",)


def names() -> tuple[str, ...]:
    """Every registered dimension, in registry order."""
    return tuple(d.name for d in REGISTRY)


def spec(name: str) -> DimensionSpec:
    """The registry row of `name` (KeyError for an unknown one)."""
    for row in REGISTRY:
        if row.name == name:
            return row
    raise KeyError(name)


def ordered(dims) -> list[str]:
    """`dims` in registry order, any unknown names after them, sorted."""
    known = names()
    given = set(dims)
    return [d for d in known if d in given] + sorted(given - set(known))


def observed_by(agent: str, fmt: str | None) -> tuple[Observes, ...]:
    """What a reviewer's transcript shows: an answer-only command shows its verdict alone."""
    if agent == "command" and (fmt or "text") in ANSWER_ONLY_FORMATS:
        return ("verdict",)
    return ("verdict", "tool_calls", "turns")


def default_dimensions(agent: str, fmt: str | None) -> tuple[str, ...]:
    """The dimensions graded when `gate.dimensions` is unset: every one the transcript can show."""
    seen = observed_by(agent, fmt)
    return tuple(d.name for d in REGISTRY if d.observes in seen)
