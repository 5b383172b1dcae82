"""rubricgate.yaml's model against what the documents say of its defaults and bounds."""

from __future__ import annotations

import re
from pathlib import Path

import annotated_types
import pytest
from pydantic import ValidationError

from rubricgate.models.config import AgentConfig, AgentLimits

DOCS = Path(__file__).parents[2] / "docs"


def _bounds(model, name: str) -> tuple[object, object, object]:
    field = model.model_fields[name]
    ge = next(m.ge for m in field.metadata if isinstance(m, annotated_types.Ge))
    le = next(m.le for m in field.metadata if isinstance(m, annotated_types.Le))
    return field.default, ge, le


def test_the_limits_table_of_isolation_md_is_the_models_defaults_and_bounds():
    # docs/isolation.md "Limits": | `key` | default | low..high | ...: a bound the model does not
    # enforce, or a default the table misstates, is a sandbox other than the one documented.
    rows = re.findall(r"^\| `(\w+)` \| ([\d,]+) \| ([\d,]+)\.\.([\d,]+) \|", (DOCS / "isolation.md").read_text(), re.M)
    assert {name for name, *_ in rows} == set(AgentLimits.model_fields)
    for name, default, low, high in rows:
        assert _bounds(AgentLimits, name) == tuple(int(v.replace(",", "")) for v in (default, low, high)), name


@pytest.mark.parametrize("key", sorted(AgentLimits.model_fields))
def test_a_limit_past_its_bound_is_refused_never_unlimited(key):
    _, low, high = _bounds(AgentLimits, key)
    for value in (low - 1, high + 1):
        with pytest.raises(ValidationError):
            AgentLimits.model_validate({key: value})


def test_the_idle_timeout_is_120_s_by_default_at_most_3600_and_0_is_off():
    # docs/agents.md "A silent agent": default 120, at most 3600; 0 switches it off.
    assert _bounds(AgentConfig, "idle_timeout_s") == (120.0, 0, 3600)
    assert AgentConfig.model_validate({"idle_timeout_s": 0}).idle_timeout_s == 0
