"""Every problem in a file at once: all schema errors, unknown keys named as unknown (with a
did-you-mean) before the missing fields they may explain, and the instance still built from the
known keys so the checks after the schema (paths, rule ids) run too."""

from __future__ import annotations

import difflib
import typing
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rubricgate.errors import GateInputError
from rubricgate.suite.yaml_json import MAX_SUITE_FILE_BYTES, read_data

M = TypeVar("M", bound=BaseModel)

_FIXES = {"missing": "add it"}


def did_you_mean(word: str, options: typing.Iterable[str]) -> str:
    """" (did you mean 'expect'?)" for the closest option, or ""."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation (Optional[X], list[X], dict[str, X])."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def fields_at(model: type[BaseModel], loc: tuple) -> list[str]:
    """Field names of the model reached by following `loc` (list indexes and dict keys skipped)."""
    current: type[BaseModel] | None = model
    for part in loc:
        if current is None:
            return []
        field = current.model_fields.get(part) if isinstance(part, str) else None
        if field is not None:
            current = _model_in(field.annotation)
    return list(current.model_fields) if current is not None else []


def describe_errors(model: type[BaseModel], exc: ValidationError, display: str) -> list[GateInputError]:
    """Every pydantic error as a one-line GateInputError; unknown keys first."""
    unknown, other = [], []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            key = str(err["loc"][-1])
            hint = did_you_mean(key, fields_at(model, err["loc"][:-1]))
            unknown.append(GateInputError(display, where, f"unknown key {key!r}{hint}",
                                          "rename it to a known key or remove it"))
        else:
            # A model's own check may carry its fix: "... (fix: lower gate.drift_allowance)".
            msg, _, own_fix = err["msg"].removeprefix("Value error, ").partition(" (fix: ")
            other.append(GateInputError(display, where, msg, own_fix.removesuffix(")") or _FIXES.get(
                err["type"], "see `rubricgate schema` for the expected shape")))
    return unknown + other


def _without(data: Any, loc: tuple) -> None:
    """Delete the key at loc from nested data (for re-validating without unknown keys)."""
    for part in loc[:-1]:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(data, dict):
        data.pop(loc[-1], None)


def validate_all(model: type[M], data: Any, display: str) -> tuple[M | None, list[GateInputError]]:
    """(instance or None, every problem). With only unknown keys wrong, the instance is built
    from the known keys, so later checks still run and report their problems too."""
    if not isinstance(data, dict):
        return None, [GateInputError(display, "(top level)", "expected a mapping of keys", "see `rubricgate schema`")]
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        errors = describe_errors(model, exc, display)
        extra = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
    for loc in extra:
        _without(data, loc)
    try:
        return model.model_validate(data), errors
    except ValidationError:
        return None, errors


def load_all_errors(model: type[M], path: Path, display: str) -> tuple[M | None, list[GateInputError]]:
    """Read a YAML/JSON file a user writes (config, task, expect.yaml: at most MAX_SUITE_FILE_BYTES)
    and validate it, collecting every problem."""
    try:
        data = read_data(path, display, MAX_SUITE_FILE_BYTES)
    except GateInputError as exc:
        return None, [exc]
    return validate_all(model, data, display)
