"""Shared pydantic base: every file we read or write forbids unknown keys."""

import inspect
import posixpath
import sys
from collections.abc import Iterable
from typing import Annotated, Any, Literal, NoReturn, Self

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict

from rubricgate.models.dimensions import DIMENSIONS  # noqa: F401  (the list lives in models/dimensions.py)

Tier = Literal["PASS", "WARN", "BLOCK"]
Outcome = Literal["PASS", "WARN", "BLOCK", "ERROR"]
TIER_ORDER: dict[str, int] = {"PASS": 0, "WARN": 1, "BLOCK": 2}  # a tier is escalated, never lowered
Severity = Literal["critical", "warning", "suggestion"]


class StrictModel(BaseModel):
    """Base for every on-disk format: unknown keys are an error, not ignored.

    Validators are built on first use, not at import (`defer_build`): a command builds only the
    models it touches, and `run` starts its first agents before it builds what trials and the
    run's end need (`build_models`, on the warm-up thread). pydantic >= 2.14 makes a build that
    several threads start at once safe."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    # pydantic gives every instance its own set of the field names it was given (2.2 KB for a
    # trial's 27 fields); a 2,000-case run holds ~30,000 models, and nothing here reads which
    # fields were given (`exclude_unset`, `model_fields_set`: tests/models/test_models_base.py
    # checks that none of it is used). Every instance of a class shares one set of all its fields.
    # pydantic also gives each instance a dict of its own keys (832 bytes for a trial's 27
    # fields); values set one by one on an instance go into a dict that shares its keys with
    # the class's other instances (PEP 412; 288 bytes), which the instance then keeps. The same
    # values in the same order: equality, copies and dumps do not change. ~4-5 MB of a 2,000-case
    # run's peak (bench/run_memory.py), for a slower validation (a trial and its three grades
    # 9.8 -> 21.6 microseconds; no change in a 400-case run's CPU). CPython 3.11 only (KEY_SHARING).
    def model_post_init(self, context: Any, /) -> None:
        object.__setattr__(self, "__pydantic_fields_set__", every_field(type(self)))
        object.__setattr__(self, "__dict__", key_sharing_dict(self))

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        share_keys(cls)


# Key-sharing dicts pay off on CPython 3.11 alone: 3.12's attribute reads are not specialized for
# them (five reads of a trial's fields 145 ns -> 530 ns) and 3.13 gives every shared dict room for
# 30 values whatever its fields (no saving). CPython shares at most 30 keys, and a class with
# more would only grow its instances' dicts.
KEY_SHARING = sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11)
MAX_SHARED_KEYS = 29
_SHARING: dict[type, int] = {}  # a class whose instances share keys -> its number of fields


def share_keys(model: type[BaseModel]) -> None:
    """Make `model`'s shared keys its fields, in their order, as the class is defined. CPython
    (3.11) takes the keys a class shares from the first instance given attributes one by one,
    and leaves less room in them for each instance made before that: a few instances made
    first (`model_construct`, copies) and a trial's 27 fields no longer fit. A class that cannot
    have a blank instance (abstract) or whose field is a property of a parent's keeps pydantic's
    own dicts."""
    fields = model.__pydantic_fields__
    if not KEY_SHARING or len(fields) > MAX_SHARED_KEYS or inspect.isabstract(model) or \
            any(hasattr(type(inspect.getattr_static(model, name, None)), "__set__") for name in fields):
        return
    _set_one_by_one(model, dict.fromkeys(fields))
    _SHARING[model] = len(fields)


def key_sharing_dict(model: BaseModel) -> dict[str, Any]:
    """`model`'s field values in a dict that shares its keys with its class's other instances
    (share_keys). Only a dict of every field, which pydantic makes in the fields' order; a
    `model_construct` without a required field keeps the dict it has."""
    values = model.__dict__
    if len(values) != _SHARING.get(type(model)):
        return values
    return _set_one_by_one(type(model), values)


def _set_one_by_one(model: type[BaseModel], values: dict[str, Any]) -> dict[str, Any]:
    """The dict of a blank instance of `model` given `values` one attribute at a time."""
    blank = object.__new__(model)
    for name, value in values.items():
        object.__setattr__(blank, name, value)
    return blank.__dict__


def _refused(*_: object) -> NoReturn:
    raise TypeError("a model class's shared set of field names is never changed")


class _EveryField(set):
    """One model class's field names, shared by its instances (and their copies: copying it gives
    itself). pydantic adds the name of each field assigned or updated (`model_copy(update=...)`),
    which is already in it; a name that is no field is a bug, refused rather than added to what
    every instance shares, and so is every other change."""

    def add(self, name: str) -> None:
        if name not in self:
            raise AttributeError(f"{name!r} is not a field")

    def update(self, *names: Iterable[str]) -> None:
        for group in names:
            for name in group:
                self.add(name)

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict) -> Self:
        return self

    discard = remove = pop = clear = _refused
    difference_update = intersection_update = symmetric_difference_update = _refused
    __ior__ = __iand__ = __isub__ = __ixor__ = _refused


_EVERY_FIELD: dict[type, _EveryField] = {}


def every_field(model: type[BaseModel]) -> set[str]:
    """The set of all of `model`'s field names its instances share as `__pydantic_fields_set__`."""
    shared = _EVERY_FIELD.get(model)
    if shared is None:  # two threads building it at once make two equal sets: either is right
        shared = _EVERY_FIELD[model] = _EveryField(model.model_fields)
    return shared


def known_format(newest: int) -> BeforeValidator:
    """The check of a read file's `format_version`: one newer than `newest` (what this rubricgate
    writes) was written by a newer rubricgate and is refused with what to do, before its other
    fields are read as if they meant what they mean here; older ones stay for the model to migrate."""

    def check(value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool) and value > newest:
            raise ValueError(f"{value} was written by a newer rubricgate (this one reads format {newest} and "
                             "older) (fix: upgrade rubricgate: pip install -U rubricgate)")
        return value

    return BeforeValidator(check)


def drop_empty(data: dict, *keys: str) -> dict:
    """A dumped model without the given keys when they are empty: an optional field most files
    never use stays out of them (and out of their goldens) rather than written as ""."""
    for key in keys:
        if not data.get(key):
            data.pop(key, None)
    return data


def build_models(models: Iterable[type[BaseModel]]) -> None:
    """Build these deferred validators now (reports/ahead.py, beside the running agents)."""
    for model in models:
        model.model_rebuild()


# What a severity word means under `tiers:` ("": the word itself): RuleRow.means, RuleRecord.means.
Meaning = Literal["", "critical", "warning", "suggestion"]


def normal_path(path: str) -> str:
    """A repository path in one spelling: `./evals/tasks`, `evals//tasks/.` and `evals/tasks/` are
    `evals/tasks`. Every comparison of paths (what the snapshot leaves out, the reviewer's
    closure, the links a fixture may hold) is by string: `tasks: ./evals/tasks` put every task
    file into the reviewer's workspace."""
    return posixpath.normpath(path) if path.strip() else path


RepoPath = Annotated[str, AfterValidator(normal_path)]


def inside_run_folder(path: str) -> str:
    """A file a run wrote, named relative to its folder ('transcripts/<case>-<trial>.json'): a
    summary.json from elsewhere (a CI artifact, the history branch) must not make `report` or
    `regrade` read outside the run folder."""
    parts = path.split("/")
    if path and (path.startswith("/") or "\\" in path or "\0" in path or {"", ".", ".."} & set(parts)):
        raise ValueError("must name a file inside the run folder (transcripts/<case>-<trial>.json)")
    return path


RunFile = Annotated[str, AfterValidator(inside_run_folder)]
