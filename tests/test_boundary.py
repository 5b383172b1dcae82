"""The one bounded JSON loader: a depth bound, lone surrogates shown escaped, numbers finite."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from rubricgate import boundary
from rubricgate.boundary import MAX_DEPTH, PLACEHOLDER, TooDeep
from tests.conftest import examples
from tests.timing import cpu_seconds


def depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def nested(levels: int, leaf: object = "x") -> object:
    value = leaf
    for i in range(levels):
        value = {"a": value} if i % 2 else [value]
    return value


def test_a_value_200000_levels_deep_is_too_deep_not_a_recursion_error() -> None:
    with pytest.raises(TooDeep, match="nested deeper than 64 levels"):
        boundary.loads("[" * 200_000 + "]" * 200_000)


def test_one_level_over_the_bound_is_refused_and_the_bound_itself_read() -> None:
    assert depth(boundary.loads(json.dumps(nested(MAX_DEPTH)))) == MAX_DEPTH
    with pytest.raises(TooDeep):
        boundary.loads(json.dumps(nested(MAX_DEPTH + 1)))


def test_clip_keeps_the_event_and_replaces_only_its_deep_part() -> None:
    line = json.dumps({"type": "tool_use", "name": "Bash", "input": nested(300)})
    event = boundary.loads(line, clip=True)
    assert event["type"] == "tool_use" and event["name"] == "Bash"
    assert depth(event) == MAX_DEPTH and PLACEHOLDER.format(depth=MAX_DEPTH) in json.dumps(event)


def test_a_deep_line_cut_inside_a_string_is_read_in_linear_time() -> None:
    """A stream line cut by the output cap inside a string full of escaped quotes: the string
    pattern scanned to the end of the text again from each of them (quadratic: 17 s at 78 KB).
    Timed against the same line closed (a valid one of the same size) on this machine."""
    head = '{"type": "user", "x": ' + "[" * 65 + "]" * 65 + ', "content": "' + '{\\"k\\": \\"v\\", ' * 2500
    cut, whole = head, head + '"}'
    assert boundary.loads(whole, clip=True)["type"] == "user"
    with pytest.raises(ValueError):
        boundary.loads(cut, clip=True)
    closed = cpu_seconds(lambda: boundary.clip_text(whole, MAX_DEPTH))
    broken = cpu_seconds(lambda: boundary.clip_text(cut, MAX_DEPTH))
    assert broken <= 20 * closed + 0.05, f"{broken:.3f} s for the cut line against {closed:.4f} s for the closed one"


def test_a_long_text_of_long_numbers_is_scanned_in_linear_time() -> None:
    """The scan for a number past a float (210 digits) started again at every digit of a run of
    209: 210 steps a character. Timed against json.loads of the same text on this machine."""
    text = "[" + ",".join(["9" * 209 + ".5"] * 5000) + "]"
    assert boundary.loads(text) == json.loads(text)
    plain = cpu_seconds(lambda: json.loads(text))
    bounded = cpu_seconds(lambda: boundary.loads(text))
    assert bounded <= 20 * plain + 0.05, f"{bounded:.3f} s against json.loads' {plain:.4f} s"


@pytest.mark.parametrize("text", ['["]]]]]", [[[]]]]', '{"a": "\\\\", "b": [[["x"]]]}', '["a\\n", [[{}]]]',
                                  '["[", "]", [[[]]]]', '{"k\\"[[[": "\\\\\\"{{{"}'])
def test_brackets_and_escapes_inside_strings_do_not_count(text: str) -> None:
    true = depth(json.loads(text))
    assert not boundary.nested_deeper(text, true) and (true == 0 or boundary.nested_deeper(text, true - 1))


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(alphabet='ab[]{}"\\\n'),
                    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(alphabet='k[]"\\'), kids, max_size=3),
                    max_leaves=40)


@settings(max_examples=examples(150), deadline=None)
@given(JSON, st.integers(min_value=0, max_value=12))
def test_nested_deeper_is_exact_for_any_json(value, limit: int) -> None:
    text = json.dumps(value)
    assert boundary.nested_deeper(text, limit) == (depth(value) > limit)


@settings(max_examples=examples(150), deadline=None)
@given(JSON, st.integers(min_value=1, max_value=6))
def test_clip_text_gives_json_no_deeper_than_the_limit(value, limit: int) -> None:
    clipped = json.loads(boundary.clip_text(json.dumps(value), limit))
    assert depth(clipped) <= limit
    if depth(value) <= limit:
        assert clipped == value


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet='[]{}"\\,:0123456789.eE-+ \nabtrufalsn\ud800NaInfity', max_size=60))
def test_any_text_is_a_value_error_or_a_value(text: str) -> None:
    try:
        boundary.loads(text, clip=True)
        boundary.loads(text, unique_keys=True)
    except ValueError:
        pass


def test_lone_surrogates_are_shown_escaped_and_pairs_kept() -> None:
    value = boundary.loads('{"model": "m\\ud800", "\\udc80k": ["\\ud83d\\ude00"]}')
    assert value == {"model": "m\\ud800", "\\udc80k": ["\U0001f600"]}
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # writable


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])
def test_non_finite_numbers_read_as_unknown(text: str) -> None:
    assert boundary.loads(f'{{"cost": {text}}}') == {"cost": None}


@pytest.mark.parametrize("text", ["1e999", "-1e999", "1E+400", "9" * 400, "9" * 400 + ".5", "-" + "1" * 320 + ".0", "9" * 210 + "e99", "9" * 250 + "e99", "9" * 299 + "e10"])
def test_a_number_past_a_float_reads_as_unknown_also_in_a_long_text(text: str) -> None:
    """A long text (a summary) scans for such a number instead of sending every float through a
    hook: it must find one far from the start, after plenty of ordinary numbers."""
    filler = ", ".join(f'"k{i}": {i}.25' for i in range(8000))
    long = f'{{{filler}, "cost": {text}}}'
    assert len(long) > boundary._SCAN_FROM
    value = boundary.loads(long)
    assert value["cost"] is None and value["k7999"] == 7999.25


def test_209_digits_before_an_exponent_of_two_are_a_float_in_a_long_text() -> None:
    """The bound of the scan above is exact: one digit fewer is a number a float holds."""
    filler = ", ".join(f'"k{i}": {i}.25' for i in range(8000))
    assert boundary.loads(f'{{{filler}, "cost": {"9" * 209}e99}}')["cost"] == float("9" * 209 + "e99")


@settings(max_examples=examples(200), deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=8), lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=12))
def test_ordinary_json_reads_as_json_loads_reads_it(value) -> None:
    text = json.dumps(value)
    assert boundary.loads(text) == json.loads(text) == boundary.loads(text, unique_keys=True, clip=True)


def test_a_byte_order_mark_is_refused_as_json_loads_refuses_it() -> None:
    with pytest.raises(json.JSONDecodeError, match="BOM"):
        boundary.loads('\ufeff{"a": 1}')


def test_duplicate_keys_only_when_asked() -> None:
    assert boundary.loads('{"a": 1, "a": 2}') == {"a": 2}
    with pytest.raises(boundary.DuplicateKey, match="'a' is given twice"):
        boundary.loads('{"x": {"a": 1, "a": 2}}', unique_keys=True)


def test_a_key_a_lone_surrogate_makes_equal_to_another_is_a_duplicate_when_keys_must_be_unique() -> None:
    # The lone surrogate is shown as its escape: "\\ud800", which the other key already is.
    text = '{"\\ud800": 1, "\\\\ud800": 2}'
    assert len(json.loads(text)) == 2
    with pytest.raises(boundary.DuplicateKey, match="given twice"):
        boundary.loads(text, unique_keys=True)
    assert boundary.loads(text) == {"\\ud800": 2}  # the later wins, as with json's own duplicates
    # Found in one pass: the search for the clash was quadratic in the object's keys (8.7 s at 8,000).
    big = "{" + ", ".join(f'"k{i}": {i}' for i in range(8000)) + ", " + text[1:]
    with pytest.raises(boundary.DuplicateKey):
        boundary.loads(big, unique_keys=True)
    unique = cpu_seconds(lambda: pytest.raises(boundary.DuplicateKey, boundary.loads, big, unique_keys=True))
    last_wins = cpu_seconds(lambda: boundary.loads(big))
    assert unique <= 5 * last_wins + 0.05, f"{unique:.3f} s against {last_wins:.4f} s"


def test_a_300_digit_integer_is_an_int_with_or_without_its_sign() -> None:
    assert boundary.loads("1" * 300) == int("1" * 300) and boundary.loads("-" + "1" * 300) == -int("1" * 300)
    assert isinstance(boundary.loads("-" + "1" * 301), float)


def test_invalid_utf8_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        boundary.loads(b'{"a": "\xff"}')


class _Model(BaseModel):
    name: str
    data: dict = {}


def test_validate_json_bounds_and_escapes() -> None:
    assert boundary.validate_json(_Model, b'{"name": "a\\udc80"}').name == "a\\udc80"
    with pytest.raises(TooDeep):
        boundary.validate_json(_Model, '{"name": "a", "data": {"x": ' + "[" * 100 + "]" * 100 + "}}")
    with pytest.raises(ValidationError):
        boundary.validate_json(_Model, b'{"nom": "a"}')


class _Timed(BaseModel):
    duration_s: float


@pytest.mark.parametrize("number", ["1e999", "-1e999", "NaN", "Infinity", "-Infinity", "9" * 400 + ".0"],
                         ids=["1e999", "-1e999", "NaN", "Infinity", "-Infinity", "400-digits"])
def test_validate_json_reads_a_number_past_a_float_as_unknown_as_loads_does(number: str) -> None:
    text = f'{{"duration_s": {number}}}'
    with pytest.raises(ValidationError):  # unknown is no duration; pydantic's own parser said inf or nan
        boundary.validate_json(_Timed, text)
    assert boundary.loads(text) == {"duration_s": None}
    assert boundary.validate_json(_Timed, '{"duration_s": 1.5e300}').duration_s == 1.5e300


@pytest.mark.parametrize("number", ['"inf"', '"-Infinity"', '"nan"', '"1e999"', '"\\u0069nf"', '" NaN"'])
def test_validate_json_refuses_a_string_pydantic_would_read_as_a_number_past_a_float(number: str) -> None:
    with pytest.raises(ValueError, match="a number past a float"):
        boundary.validate_json(_Timed, f'{{"duration_s": {number}}}')
    assert boundary.validate_json(_Timed, '{"duration_s": "2.5"}').duration_s == 2.5  # lax mode stays


def test_clip_value_bounds_a_parsed_value() -> None:
    clipped, cut = boundary.clip_value(nested(100), 8)
    assert cut and depth(clipped) == 8
    assert boundary.clip_value({"a": [1]}, 8) == ({"a": [1]}, False)


@pytest.mark.parametrize("value, ok", [(0, True), (0.5, True), (10**6, True), (-1e9, False), (math.nan, False),
                                       (math.inf, False), (True, False), ("1.0", False), (None, False)])
def test_is_amount(value, ok: bool) -> None:
    assert boundary.is_amount(value) is ok


def test_a_names_bytes_that_are_not_utf8_are_printed_escaped_and_encode() -> None:
    # os.fsdecode(b"caf\xe9.md"): written raw, the surrogate ended the output in a UnicodeEncodeError.
    shown = boundary.printable("caf\udce9.md")
    assert shown == "caf\\udce9.md" and shown.encode("utf-8")


def test_a_short_text_reads_its_numbers_as_a_long_one_does() -> None:
    # Under 300 characters the number scan is skipped (no 300-digit run fits, and every float goes
    # through the hook anyway): the same values as the same numbers padded past the scan's length.
    short = '{"a": 1e999, "b": -1E+400, "c": 12, "d": 2.5e-3, "e": NaN, "f": ' + "7" * 200 + "}"
    padded = short[:-1] + ', "pad": "' + " " * 400 + '"}'
    assert len(short) < 300 < len(padded)
    read = boundary.loads(short)
    assert read == {k: v for k, v in boundary.loads(padded).items() if k != "pad"}
    assert read["a"] is None and read["b"] is None and read["e"] is None and read["f"] == int("7" * 200)
    assert boundary.loads("1" * 299) == int("1" * 299)
