"""`rubricgate schema` describes every property of every input format (issue 42): a field added
without its docstring fails here, naming the format, the model and the field."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from pydantic import BaseModel

from rubricgate.cli import main
from rubricgate.cli.core import SCHEMAS
from rubricgate.models.field_docs import field_docs, json_schema


def undescribed(schema: dict) -> list[str]:
    places = [("(top)", schema), *schema.get("$defs", {}).items()]
    return [f"{where}.{name}" for where, body in places for name, prop in body.get("properties", {}).items()
            if not prop.get("description", "").strip()]


class _Inner(BaseModel):
    documented: int = 0
    """Documented."""
    bare: str = ""


class _Outer(BaseModel):
    inner: _Inner = _Inner()
    """An inner model."""
    items: list[_Inner] = []


def test_an_undocumented_field_is_found_in_nested_models() -> None:
    assert undescribed(json_schema(_Outer)) == ["(top).items", "_Inner.bare"]


def test_a_docstring_is_read_from_the_field_and_inherited() -> None:
    class _Sub(_Inner):
        more: bool = False
        """More."""

    assert field_docs(_Sub) == {"documented": "Documented.", "more": "More."}


@pytest.mark.parametrize("fmt", sorted(SCHEMAS))
def test_every_property_of_every_input_format_is_described(fmt: str) -> None:
    assert undescribed(json_schema(SCHEMAS[fmt])) == []


def test_the_schema_command_prints_the_descriptions() -> None:
    result = CliRunner().invoke(main, ["schema", "config"])
    assert result.exit_code == 0, result.output
    agent = json.loads(result.output)["$defs"]["AgentConfig"]["properties"]
    assert agent["idle_timeout_s"]["description"].startswith("An agent that prints nothing")
