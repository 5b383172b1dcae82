"""Data from outside the harness, made safe where it enters: JSON with a depth bound, text
without lone surrogates, numbers that are finite.

Everything a reviewer prints, and every file rubricgate reads back, is data: it may be nested
deeper than Python's recursion (json.loads raises RecursionError near 1,000 levels; pydantic's
serializer gives up near 300, long after the value was accepted), hold a lone surrogate (the
JSON escape \\ud800 decodes to a str that cannot be written as UTF-8), or a number that is not
one (NaN, Infinity, 1e999). Each of those once ended a whole run with an internal error, so one
loader here parses every JSON the harness reads:

* `loads` refuses a value nested deeper than MAX_DEPTH (`TooDeep`, a ValueError: for a file,
  an input error naming it), or with `clip` replaces what lies deeper by a placeholder (a
  reviewer's stream line: the event is kept, its deep part is not);
* lone surrogates in strings and keys become their backslash escape (`\\ud800` as six
  characters), as the reports show undecodable output;
* NaN, Infinity and numbers beyond a float become None (unknown), never a float that compares
  false with every bound;
* `printable` shows control characters escaped, for text that goes on one line of a terminal.

May import: nothing from rubricgate.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")

MAX_DEPTH = 64  # containers in any JSON the harness reads; what it writes stays far below
VALUE_DEPTH = 32  # a reviewer's free-form value (a tool input) as it is kept in a transcript
MAX_COUNT = 10**15  # tokens a trial may report: a thousand times any real run
PLACEHOLDER = "[rubricgate: nested deeper than {depth} levels, left out]"

_NOT_SKELETON = bytes(c for c in range(256) if c not in b'"[]{}')
_QUOTED = re.compile(rb'"[^"]*"')
_PEEL_BYTES = 1 << 16  # a larger skeleton's depth is a running sum, not `limit` passes over it
_ONE_KIND = bytes.maketrans(b"{}", b"[]")  # the depth is the same whichever bracket pairs
# A string runs to its closing quote or, cut off (a stream line at the output cap), to the end
# of the text: one token either way, so a string that never closes is scanned once, not again
# from each escaped quote inside it (which took minutes for a cut 100 KB line).
_TOKENS = re.compile(r'"[^"\\]*(?:\\.?[^"\\]*)*(?:"|\Z)|[\[\]{}]', re.DOTALL)
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# A number that may be past a float: an exponent of three digits or more, or 210 digits before
# an exponent of two (210 nines e99 is 1e309; 209 digits stay under 1e308 up to e99). A run of
# 300 digits: an integer that is no count (and past 4,300 digits one int() refuses). Looked for in
# the text's number skeleton (digits as 0, e and E as e, signs as +, the rest blank): one
# translate and a few substring searches, where regular expressions tried every position (6.9 us
# an event line, 4.8 ms a 150 KB summary, against 1.2 us and 0.13 ms).
_NUMBER_SKELETON = bytes(0x30 if 0x30 <= c <= 0x39 else 0x65 if c in b"eE" else 0x2B if c in b"+-" else 0x20
                         for c in range(256))
_EXPONENT = re.compile(rb"e\+?000")
# Up to this length (a reviewer's stream line, a small file) every float goes through the hook:
# such a text holds few, and the scan for an exponent cost more than the JSON parse itself.
_SCAN_FROM = 65536


# C0 controls (newline, carriage return, escape, ...), DEL, C1 controls, the Unicode line and
# paragraph separators and the bidirectional controls (a name with U+202E reads reordered: the
# "Trojan Source" trick) -> their backslash escape.
_BIDI = [0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_ESCAPED = ({c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]}
            | {c: f"\\u{c:04x}" for c in [0x2028, 0x2029, *_BIDI]}
            # A name's bytes that are not UTF-8, as the file system's str holds them (surrogates):
            # written raw, they end the output in a UnicodeEncodeError.
            | {c: f"\\u{c:04x}" for c in range(0xDC80, 0xDD00)})


def printable(text: str) -> str:
    """`text` with control characters and line separators as their backslash escape: shown on
    one line, and never a terminal escape sequence."""
    return text.translate(_ESCAPED)


class TooDeep(ValueError):
    """A JSON value nested deeper than the harness reads."""


class DuplicateKey(ValueError):
    """A key given twice in one JSON object (json keeps the last silently)."""

    def __init__(self, message: str, key: object = None) -> None:
        super().__init__(message)
        self.key = key


def loads(data: str | bytes, *, unique_keys: bool = False, clip: bool = False) -> Any:
    """Parse JSON with the bounds above. ValueError (TooDeep, DuplicateKey, JSONDecodeError,
    UnicodeDecodeError) for what cannot be read; never RecursionError."""
    text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
    if nested_deeper(text, MAX_DEPTH):
        if not clip:
            raise TooDeep(f"nested deeper than {MAX_DEPTH} levels")
        text = clip_text(text, MAX_DEPTH)
    # Numbers of a long text go through Python hooks only when it may hold one past a float or
    # past 300 digits: the hooks cost a call per number (a 2 MB summary: 40 ms to 200 ms).
    # A text shorter than the 300-digit run has none, and every float of it goes through the hook
    # anyway: most stream lines are, and the scan was a fifth of a short line's read.
    float_digits, long_digits, exponent = _numbers(text) if len(text) >= _LONG_DIGITS else (False, False, False)
    floats = len(text) <= _SCAN_FROM or float_digits or exponent
    if text.startswith("\ufeff"):  # as json.loads says it
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        value = _decoder(unique_keys, floats, long_digits).decode(text)
        return clean_value(value, unique_keys) if _may_hold_surrogates(text) else value
    except RecursionError:  # only below a deep call stack: the bound above is far from Python's
        raise TooDeep(f"nested too deep to read (at most {MAX_DEPTH} levels)") from None


def validate_json(model: type[M], data: str | bytes) -> M:
    """A pydantic model from JSON text with the bounds of `loads` (ValueError, pydantic's
    ValidationError among them, for what cannot be read). pydantic's own parser reads it when
    no surrogate escape needs showing (it refuses lone surrogates; loads shows them escaped)."""
    text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
    if nested_deeper(text, MAX_DEPTH):
        raise TooDeep(f"nested deeper than {MAX_DEPTH} levels")
    float_digits, _, exponent = _numbers(text)
    # pydantic's parser reads NaN, Infinity and 1e999 as floats; loads reads them as unknown.
    numbers = "NaN" in text or "Infinity" in text or float_digits or exponent
    if numbers or _may_hold_surrogates(text):
        read = model.model_validate(loads(text))
    else:
        read = model.model_validate_json(text)
    # pydantic reads the strings "inf", "nan" and "1e999" as floats too, in any case and escaped
    # ("\u0069nf"): a text that holds none of these cannot give a model one, and is not walked.
    lowered = text.lower()
    if (numbers or "inf" in lowered or "nan" in lowered or "\\u" in text) and not _all_finite(read):
        raise ValueError(f"{model.__name__}: a number past a float (infinite or not a number)")
    return read


_LONG_DIGITS = 300  # digits in a row that make a number no count


def _numbers(text: str) -> tuple[bool, bool, bool]:
    """(210 digits in a row, 300 digits in a row, an exponent of three digits) in the text."""
    skeleton = text.encode("utf-8", "surrogatepass").translate(_NUMBER_SKELETON)
    float_digits = b"0" * 210 in skeleton
    return float_digits, float_digits and b"0" * _LONG_DIGITS in skeleton, _EXPONENT.search(skeleton) is not None


def _all_finite(value: Any, depth: int = 0) -> bool:
    """No float in the model (its fields, lists and dicts, at most MAX_DEPTH down) is inf or nan."""
    if isinstance(value, float):
        return math.isfinite(value)
    if depth > MAX_DEPTH:
        return True
    if hasattr(type(value), "__pydantic_fields__"):  # a model (pydantic stays off this module's imports)
        return all(_all_finite(v, depth + 1) for v in value.__dict__.values())
    if isinstance(value, dict):
        return all(_all_finite(v, depth + 1) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_all_finite(v, depth + 1) for v in value)
    return True


def nested_deeper(text: str, limit: int) -> bool:
    """True when some container in the JSON text is nested more than `limit` levels deep.

    In C-speed passes over a skeleton: escaped quotes and backslashes dropped, then every byte
    but quotes and brackets, then the strings (now quotes around brackets only), then innermost
    pairs (of one kind) peeled one level a pass, at most `limit` passes: a 7 MB summary takes a few ms and a
    200,000-level value no more. Exact for valid JSON; what is not valid json.loads reports."""
    if text.count("[") + text.count("{") <= limit:
        return False
    raw = text.replace("\\\\", "").replace('\\"', "").encode("utf-8", "surrogatepass")
    skeleton = _QUOTED.sub(b"", raw.translate(None, _NOT_SKELETON).replace(b'""', b"")).translate(_ONE_KIND)
    if len(skeleton) > _PEEL_BYTES:
        return _running_depth(skeleton) > limit
    for _ in range(limit):
        peeled = skeleton.replace(b"[]", b"")
        if peeled == skeleton:
            return False
        skeleton = peeled
    return skeleton.replace(b"[]", b"") != skeleton


def _running_depth(skeleton: bytes) -> int:
    """The deepest point of a bracket skeleton, by a running sum (numpy: a few ms for millions of
    brackets, where peeling one level a pass would cost seconds)."""
    import numpy as np

    steps = np.frombuffer(skeleton, dtype=np.uint8) == ord("[")
    return int(np.cumsum(steps.astype(np.int64) * 2 - 1).max())


def clip_text(text: str, limit: int) -> str:
    """The JSON text with every container deeper than `limit` replaced by the placeholder string."""
    out: list[str] = []
    depth, cut_from, kept = 0, -1, 0
    for token in _TOKENS.finditer(text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            if depth == limit + 1:
                cut_from = token.start()
        elif mark in "]}":
            depth -= 1
            if depth == limit and cut_from >= 0:
                out += [text[kept:cut_from], json.dumps(PLACEHOLDER.format(depth=limit))]
                kept, cut_from = token.end(), -1
    if cut_from >= 0:  # never closed: the text is broken anyway; json.loads says so
        return text[:cut_from]
    return "".join(out) + text[kept:]


def clip_value(value: Any, limit: int = VALUE_DEPTH) -> tuple[Any, bool]:
    """A parsed value with containers deeper than `limit` replaced by the placeholder; and
    whether anything was cut."""
    if not isinstance(value, dict | list):
        return value, False
    if limit <= 0:
        return PLACEHOLDER.format(depth=VALUE_DEPTH), True
    if isinstance(value, dict):
        pairs = [(k, clip_value(v, limit - 1)) for k, v in value.items()]
        return {k: v for k, (v, _) in pairs}, any(cut for _, (_, cut) in pairs)
    items = [clip_value(v, limit - 1) for v in value]
    return [v for v, _ in items], any(cut for _, cut in items)


def clean_text(text: str) -> str:
    """`text` with lone surrogates as their backslash escape, so writing it as UTF-8 cannot fail."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8") if _SURROGATE.search(text) else text


def clean_value(value: Any, unique_keys: bool = False) -> Any:
    """A parsed JSON value with clean_text applied to every string and key (depth already bounded).
    A key that a lone surrogate's escape makes equal to another key of its object is a
    DuplicateKey when keys must be unique; else the later one wins, as json's own duplicates do."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_value(v, unique_keys) for v in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            shown = clean_text(key)
            if unique_keys and shown in out:
                raise DuplicateKey(f"key {shown!r} is given twice (once as a lone surrogate)", shown)
            out[shown] = clean_value(item, unique_keys)
        return out
    return value


def is_amount(value: object) -> bool:
    """A cost, a count or a duration as a reviewer or a shard may report it: a finite number >= 0."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0  # math.isfinite would overflow on 10**400
    return isinstance(value, float) and math.isfinite(value) and value >= 0


def is_count(value: object, limit: int = MAX_COUNT) -> bool:
    """A token or step count: an int from 0 to `limit` (a larger one is no real count)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limit


def _may_hold_surrogates(text: str) -> bool:
    # A JSON escape of a surrogate (a pair decodes to one character; a lone one stays a
    # surrogate), or one already in the text (bytes decoded with surrogateescape).
    return "\\ud" in text or "\\uD" in text or (not text.isascii() and _SURROGATE.search(text) is not None)


@cache
def _decoder(unique_keys: bool, floats: bool, ints: bool) -> json.JSONDecoder:
    """One decoder per set of hooks, made once: json.loads with any hook makes a decoder per call,
    which cost as much as parsing a stream line. A decoder keeps no state between texts."""
    return json.JSONDecoder(object_pairs_hook=_unique_pairs if unique_keys else None,
                            parse_constant=_not_a_number, parse_float=_finite_float if floats else None,
                            parse_int=_int if ints else None)


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(f"key {key!r} is given twice", key)
        out[key] = value
    return out


def _not_a_number(_constant: str) -> None:
    return None  # NaN, Infinity, -Infinity: unknown


def _int(text: str) -> int | float | None:
    # Past 300 digits no count is meant (and past 4,300 int() refuses): read it as a float, so
    # past a float's range it is unknown like 1e999.
    return int(text) if len(text.lstrip("-")) <= 300 else _finite_float(text)


def _finite_float(text: str) -> float | None:
    number = float(text)
    return number if math.isfinite(number) else None  # 1e999 reads as inf: unknown
