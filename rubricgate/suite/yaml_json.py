"""Reading YAML and JSON files into pydantic models, with one-line errors naming file and field."""

from __future__ import annotations

import json
from collections.abc import Hashable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from rubricgate import boundary
from rubricgate.boundary import MAX_DEPTH, DuplicateKey, TooDeep
from rubricgate.errors import GateInputError, unreadable

M = TypeVar("M", bound=BaseModel)

# libyaml's loader parses ~10x faster (2,000 task files: 0.3 s instead of 3 s). CSafeLoader is the
# C build of SafeLoader: the same safe subset (no python/* tags), so safety does not depend on it.
_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# A YAML file's anchors and aliases may name one value many times: nine aliases of nine of nine
# ... expand to a billion values for whatever walks the result (validation, scrubbing).
MAX_NODES = 100_000
# The most of a file any reader takes in: what a run writes (summary.json: ~4 KB a case) and
# what a user writes (a config, a task with an embedded diff of at most 2 MB, an expect.yaml:
# MAX_SUITE_FILE_BYTES) alike; a larger one is refused in one line before it is parsed.
MAX_FILE_BYTES = 256_000_000
MAX_SUITE_FILE_BYTES = 8_000_000


class TooLarge(ValueError):
    """A YAML value whose aliases expand to more than MAX_NODES values."""


class _UniqueKeyLoader(_BASE_LOADER):  # type: ignore[misc, valid-type]
    """The safe loader, refusing a mapping that names a key twice (the parser is still C's)."""

    def construct_mapping(self, node, deep=False):
        seen: set[object] = set()
        # A key given twice: YAML keeps the last silently (a second `agent:` block would replace
        # the sandbox setting), so it is an error here.
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                break  # a list or mapping as a key: the constructor below refuses it
            if key in seen:
                raise DuplicateKey(f"line {key_node.start_mark.line + 1}: key {key!r} is given twice")
            seen.add(key)
        return super().construct_mapping(node, deep)


_SAFE_LOADER = _UniqueKeyLoader


def loads_json(text: str) -> Any:
    """JSON through the bounded loader (boundary.loads), refusing an object that names a key twice."""
    return boundary.loads(text, unique_keys=True)


_FIXES = {
    "extra_forbidden": "remove it (unknown key) or check its spelling",
    "missing": "add it",
}


def utf8_text(data: bytes, display: str) -> str:
    """An input file's bytes as text; a one-line error naming the file when they are not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GateInputError(display, f"byte {exc.start}", f"not UTF-8 text ({exc.reason}: {data[exc.start]:#04x})",
                             "save the file as UTF-8") from None


def read_data(path: Path, display: str, cap: int = MAX_FILE_BYTES) -> Any:
    """Parse a .yaml/.yml/.json file of at most `cap` bytes (YAML via safe_load) or raise a one-line error."""
    try:
        with path.open("rb") as fh:
            data = fh.read(cap + 1)
    except PermissionError:
        raise unreadable(display) from None
    except OSError as exc:
        raise GateInputError(display, "", f"cannot read file ({exc})", "check the path") from exc
    if len(data) > cap:
        raise GateInputError(display, "(file)", f"larger than {cap:,} bytes",
                             "keep the file under that (no file rubricgate reads is this large): check the path")
    text = utf8_text(data, display)
    try:
        if path.suffix == ".json":
            return loads_json(text)
        return safe_load_yaml(text)
    except DuplicateKey as exc:
        where, _, what = str(exc).rpartition(": ") if str(exc).startswith("line ") else ("", "", str(exc))
        raise GateInputError(display, where or "(keys)", what, "give each key once (merge the two blocks)") from None
    except (TooDeep, TooLarge) as exc:
        raise GateInputError(display, "(top level)", str(exc),
                             "flatten the data (no real file nests this deep)") from None
    except json.JSONDecodeError as exc:
        raise GateInputError(display, f"line {exc.lineno}", f"invalid JSON: {exc.msg}", "fix the syntax") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "yaml"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise GateInputError(display, where, f"invalid YAML: {problem}", "fix the syntax") from exc
    except ValueError as exc:  # a value the parser's constructors refuse (an integer of 5,000 digits)
        raise GateInputError(display, "(top level)", f"unreadable value: {str(exc).splitlines()[0][:200]}",
                             "fix the value") from exc


def safe_load_yaml(text: str, unique_keys: bool = True) -> Any:
    """yaml.safe_load through libyaml, within the depth bound every reader keeps (TooDeep:
    libyaml's composer recurses, and 100,000 nested brackets crash the interpreter) and a bound on
    what aliases expand to (TooLarge); DuplicateKey for a key given twice (unless not asked)."""
    if _may_nest_deeper(text, MAX_DEPTH):
        _check_depth(text)
    loader = _SAFE_LOADER if unique_keys else _BASE_LOADER
    try:
        value = yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader, never the full Loader
    except RecursionError:
        raise TooDeep(f"nested too deep to read (at most {MAX_DEPTH} levels)") from None
    if "*" in text:  # an alias: the value may be far larger (and deeper) than its text
        _check_expansion(value)
    return value


def _may_nest_deeper(text: str, limit: int) -> bool:
    """A cheap upper bound: each flow bracket opens a level, and block levels need indentation
    (two levels a column at most: a sequence may sit at its mapping's column) or "- "/"? " marks."""
    lead = max((len(line) - len(line.lstrip(" -?:")) for line in text.split("\n")), default=0)
    return text.count("[") + text.count("{") + 2 * lead + 2 > limit


def _check_depth(text: str) -> None:
    """TooDeep when a collection nests deeper than MAX_DEPTH, read from libyaml's event stream
    (its parser keeps a stack, not recursion; it stops at the first level too deep)."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_BASE_LOADER):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise TooDeep(f"nested deeper than {MAX_DEPTH} levels")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as exc:
        # PyYAML 6.0.4's scanner stops past 1,000 flow levels, reading ahead of the events: deeper
        # than ours by far, so the same answer.
        if "maximum nesting depth" not in str(exc):
            raise
        raise TooDeep(f"nested deeper than {MAX_DEPTH} levels") from None


def _check_expansion(value: Any) -> None:
    """TooDeep or TooLarge when the value, aliases expanded, nests deeper than MAX_DEPTH or holds
    more than MAX_NODES values (counted without recursion, stopping at the bound)."""
    stack, seen = [(value, 1)], 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise TooLarge(f"its aliases expand to more than {MAX_NODES:,} values")
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                raise TooDeep(f"nested deeper than {MAX_DEPTH} levels (through its aliases)")
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack += [(child, depth + 1) for child in children]


def validation_error(display: str, exc: ValidationError) -> GateInputError:
    """The first pydantic error as a one-line GateInputError (field path + fix)."""
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"]) or "(top level)"
    # A model's own check may carry its fix: "... (fix: upgrade rubricgate: ...)".
    msg, _, own_fix = err["msg"].removeprefix("Value error, ").partition(" (fix: ")
    fix = own_fix.removesuffix(")") or _FIXES.get(err["type"], "see `rubricgate schema` for the expected shape")
    return GateInputError(display, field, msg, fix)


def load_model(model: type[M], path: Path, display: str) -> M:
    """Read a file and validate it as `model`."""
    data = read_data(path, display)
    if not isinstance(data, dict):
        raise GateInputError(display, "(top level)", "expected a mapping of keys", "see `rubricgate schema`")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(display, exc) from exc
