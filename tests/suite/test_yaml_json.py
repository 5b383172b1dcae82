"""Reading YAML and JSON input files: bounded depth, bounded alias expansion, keys once, UTF-8."""

from __future__ import annotations

from pathlib import Path

import pytest

from rubricgate.boundary import MAX_DEPTH, TooDeep
from rubricgate.errors import GateInputError
from rubricgate.suite.yaml_json import MAX_NODES, DuplicateKey, TooLarge, read_data, safe_load_yaml


def flow(levels: int) -> str:
    return "a: " + "[" * levels + "x" + "]" * levels


def block(levels: int) -> str:
    return "a:\n" + "".join("  " * i + "- \n" for i in range(levels - 1)) + "  " * (levels - 1) + "- x\n"


@pytest.mark.parametrize("text", [flow(100_000), "- " * 100_000 + "x", block(MAX_DEPTH + 2),
                                  "a: " + "{b: " * 100_000 + "x" + "}" * 100_000])
def test_yaml_nested_past_the_bound_is_too_deep_never_a_crash(text: str) -> None:
    with pytest.raises(TooDeep):
        safe_load_yaml(text)


def test_yaml_at_the_bound_is_read() -> None:
    value = safe_load_yaml(flow(MAX_DEPTH - 1))  # the mapping and 63 lists: 64 levels
    for _ in range(MAX_DEPTH):
        value = value["a"] if isinstance(value, dict) else value[0]
    assert value == "x"


def test_aliases_are_read_while_they_expand_to_little() -> None:
    assert safe_load_yaml("base: &b {x: 1}\nother: *b\n") == {"base": {"x": 1}, "other": {"x": 1}}


def test_aliases_that_expand_to_a_billion_values_are_too_large() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    with pytest.raises(TooLarge, match=f"{MAX_NODES:,}"):
        safe_load_yaml("\n".join(lines))


def test_aliases_that_nest_past_the_bound_are_too_deep() -> None:
    lines = ["a0: &a0 [x]"] + [f"a{i}: &a{i} [*a{i - 1}]" for i in range(1, 2 * MAX_DEPTH)]
    with pytest.raises(TooDeep, match="aliases"):
        safe_load_yaml("\n".join(lines))


def test_an_unhashable_key_is_a_yaml_error_not_a_type_error() -> None:
    import yaml

    with pytest.raises(yaml.YAMLError):
        safe_load_yaml("? [a, b]\n: 1\n")


def test_duplicate_keys_unless_asked_not_to() -> None:
    with pytest.raises(DuplicateKey, match="line 2"):
        safe_load_yaml("a: 1\na: 2\n")
    assert safe_load_yaml("a: 1\na: 2\n", unique_keys=False) == {"a": 2}


@pytest.mark.parametrize("name, text", [("t.json", "[" * 200_000 + "]" * 200_000), ("t.yaml", flow(200_000))])
def test_read_data_names_the_file_of_a_value_too_deep(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(GateInputError) as err:
        read_data(tmp_path / name, name)
    assert err.value.one_line().startswith(f"{name}: (top level): nested deeper than {MAX_DEPTH} levels")


def test_read_data_names_the_byte_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_bytes(b"a: 1\nb: \xe9t\xe9\n")
    with pytest.raises(GateInputError) as err:
        read_data(tmp_path / "t.yaml", "t.yaml")
    assert err.value.one_line() == "t.yaml: byte 8: not UTF-8 text (invalid continuation byte: 0xe9) (fix: save the file as UTF-8)"


def test_a_rubric_line_of_200000_letters_is_read_not_searched_for_minutes() -> None:
    """The tier-threshold search was quadratic in a line's length (the fuzz's `long_line`)."""
    from rubricgate.suite.rubric import parse_threshold
    from tests.fuzz.harness import hang_guard

    with hang_guard(60):  # a hang detector, not a speed bound: the search is linear now
        assert parse_threshold("x" * 200_000 + "\nThree or more warning findings, tier is BLOCK.\n") == 3
