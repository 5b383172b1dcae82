"""Deferred validators (models/base.py): built on first use, as strict as ever, safe to first use
from many trial threads at once."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rubricgate.models.base import KEY_SHARING, build_models

# A fresh interpreter: in this one earlier tests have built the models already.
_FIRST_USE = """import json, sys, threading
sys.setswitchinterval(1e-6)  # switch threads often: mid-build too
from rubricgate.models.results import TrialResult
assert not TrialResult.__pydantic_complete__, "built at import"
data = json.loads(sys.argv[1])
barrier, results, errors = threading.Barrier(16), [], []
def first_use():
    barrier.wait()
    try:
        results.append(TrialResult.model_validate(data).model_dump(mode="json"))
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=first_use) for _ in range(16)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"errors": errors, "distinct": len({json.dumps(r, sort_keys=True) for r in results})}))
"""
RESULT = {"case_id": "c1", "trial": 1, "outcome": "PASS", "grades": {"verdict": {"passed": True}}}


def _first_use(data: dict) -> dict:
    proc = subprocess.run([sys.executable, "-c", _FIRST_USE, json.dumps(data)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_an_unknown_key_is_refused_on_first_use_of_a_deferred_model():
    got = _first_use({**RESULT, "smuggled": 1})
    assert got["distinct"] == 0 and len(got["errors"]) == 16
    assert all("smuggled" in e and "extra" in e.lower() for e in got["errors"])


def test_sixteen_threads_using_a_model_first_together_all_get_its_own_validator():
    """pydantic before 2.14 could hand a thread the parent's validator mid-build (pyproject pins >= 2.14)."""
    assert _first_use(RESULT) == {"errors": [], "distinct": 1}


def test_build_models_builds_what_it_is_given_and_only_that():
    script = ("from rubricgate.models.base import build_models\n"
              "from rubricgate.models.results import Grade, Summary\n"
              "build_models([Grade])\n"
              "print(Grade.__pydantic_complete__, Summary.__pydantic_complete__)")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.stdout.split() == ["True", "False"], proc.stderr


def test_build_models_raises_for_a_model_that_cannot_be_built():
    from pydantic import BaseModel, ConfigDict, PydanticUndefinedAnnotation

    class Broken(BaseModel):
        model_config = ConfigDict(defer_build=True)
        field: "NoSuchType"  # noqa: F821

    with pytest.raises(PydanticUndefinedAnnotation):
        build_models([Broken])


def test_no_model_module_postpones_its_annotations():
    """pydantic would evaluate each postponed annotation from its string at import (models/__init__.py)."""
    from pathlib import Path

    import rubricgate.models

    folder = Path(rubricgate.models.__file__).parent
    postponed = [p.name for p in sorted(folder.glob("*.py"))
                 if "from __future__ import annotations" in (line.strip() for line in p.read_text().splitlines())]
    assert postponed == []


def _model_classes() -> list:
    import importlib
    import pkgutil

    from pydantic import BaseModel

    import rubricgate.models

    classes = []
    for info in pkgutil.iter_modules(rubricgate.models.__path__):
        module = importlib.import_module(f"rubricgate.models.{info.name}")
        classes += [c for c in vars(module).values()
                    if isinstance(c, type) and issubclass(c, BaseModel) and c.__module__ == module.__name__]
    assert len(classes) >= 30
    return classes


def test_every_model_builds_its_validator_on_first_use():
    """models/base.py: no model class pays for its validator at import."""
    assert [c.__name__ for c in _model_classes() if not c.model_config.get("defer_build")] == []


def test_no_model_builds_empty_lists_or_dicts_with_a_builtin_factory():
    """models/__init__.py: pydantic inspects each factory's signature when it builds a validator."""
    slow = [f"{c.__name__}.{name}" for c in _model_classes() for name, field in c.model_fields.items()
            if field.default_factory in (list, dict, set)]
    assert slow == []


def test_every_empty_list_or_dict_default_is_a_fresh_one_per_instance():
    """`= []` is safe only because pydantic copies a mutable default: a pydantic that stopped
    doing so would share one list between every transcript, summary and task. Checked on the
    models themselves: a default filled in on one instance must not show on the next."""
    from pydantic import ValidationError

    checked = 0
    for model in _model_classes():
        mutable = [n for n, f in model.model_fields.items() if isinstance(f.default, (list, dict))]
        pairs = [(model.model_construct(), model.model_construct())]
        try:  # validation fills defaults on its own path (pydantic-core): where {} is valid, that too
            pairs.append((model.model_validate({}), model.model_validate({})))
        except ValidationError:
            pass
        for (first, second), name in ((pair, name) for pair in pairs for name in mutable):
            value = getattr(first, name)
            value.append("x") if isinstance(value, list) else value.update(x=1)
            assert getattr(second, name) in ([], {}), f"{model.__name__}.{name} is shared between instances"
            assert model.model_fields[name].default in ([], {}), f"{model.__name__}.{name}: the default itself changed"
            checked += 1
    assert checked >= 50


def test_a_baseline_count_without_sessions_holds_no_list_of_its_own():
    """A 2,000-case baseline has ~6,000 per-dimension counts, nearly all of one session: an
    empty list copied into each was 0.34 MB of every run's peak. One shared empty tuple instead."""
    from rubricgate.models.baseline import CaseCount

    counts = [CaseCount.model_validate({"passes": 1, "trials": 2}),
              CaseCount.model_validate_json('{"passes": 0, "trials": 1}'), CaseCount(passes=2, trials=2)]
    assert all(c.sessions is counts[0].sessions == () for c in counts)
    given = CaseCount.model_validate({"passes": 1, "trials": 2, "sessions": [[1, 1], [0, 1]]})
    assert given.runs() == [(1, 1), (0, 1)] and given.model_dump()["sessions"] == ((1, 1), (0, 1))
    assert given.model_dump_json() == '{"passes":1,"trials":2,"sessions":[[1,1],[0,1]]}'
    assert "sessions" not in counts[0].model_dump()  # one session: not written


# ---------------------------------------------------------------- one set of field names per class


def test_a_copy_updated_with_a_name_that_is_no_field_is_refused_not_shared():
    from rubricgate.models.results import Grade

    grade = Grade(passed=True)
    with pytest.raises(AttributeError, match="'bogus' is not a field"):
        grade.model_copy(update={"bogus": 1})
    assert "bogus" not in Grade(passed=False).__pydantic_fields_set__


def test_the_shared_set_of_field_names_cannot_be_changed_through_any_instance():
    import copy
    import pickle

    from rubricgate.models.results import Grade, RateRow

    shared = Grade(passed=True).model_fields_set
    changes = [lambda: shared.discard("reason"), lambda: shared.remove("reason"), shared.pop, shared.clear,
               lambda: shared.difference_update({"reason"}), lambda: shared.intersection_update({"passed"}),
               lambda: shared.symmetric_difference_update({"reason"}), lambda: shared.__ior__({"bogus"}),
               lambda: shared.__isub__({"reason"}), lambda: shared.__iand__({"passed"}),
               lambda: shared.__ixor__({"reason"})]
    for change in changes:
        with pytest.raises(TypeError):
            change()
    grade = Grade(passed=True)
    assert copy.deepcopy(grade).__pydantic_fields_set__ is shared  # copies share it too
    assert pickle.loads(pickle.dumps(grade)) == grade
    row = RateRow(rate=1.0, passes=1, trials=1)  # a model one may assign to (a Grade is frozen)
    row.label = "still a field"
    assert row.model_fields_set == set(RateRow.model_fields)


def test_every_instance_and_copy_of_a_class_shares_one_set_of_all_its_fields():
    from rubricgate.models.results import Grade, TrialResult

    one = TrialResult.model_validate(RESULT)
    other = TrialResult(case_id="c2", trial=2, outcome="WARN", grades={})
    copied = one.model_copy(update={"cached": True})
    assert one.__pydantic_fields_set__ is other.__pydantic_fields_set__ is copied.__pydantic_fields_set__
    assert one.__pydantic_fields_set__ == set(TrialResult.model_fields)
    assert one.grades["verdict"].__pydantic_fields_set__ is Grade(passed=False).__pydantic_fields_set__
    assert (copied.cached, one.cached) == (True, False)  # the copy's update stays the copy's
    other.steps = 3  # an assignment names a field the set holds: nothing is added
    assert one.__pydantic_fields_set__ == set(TrialResult.model_fields)


def test_nothing_reads_which_fields_were_given():
    """The shared set says every field was given: a dump with exclude_unset would write defaults,
    so nothing may ask (models/base.py)."""
    import rubricgate

    root = Path(rubricgate.__file__).parent
    asking = [f"{path.relative_to(root)}:{i}" for path in sorted(root.rglob("*.py")) if path.name != "base.py"
              for i, line in enumerate(path.read_text().splitlines(), 1)
              if "exclude_unset" in line or "model_fields_set" in line]
    assert asking == []


# ---------------------------------------------------------------- values in a key-sharing dict


only_where_keys_are_shared = pytest.mark.skipif(not KEY_SHARING, reason="key-sharing dicts: CPython 3.11 only")


def _shares_keys(model) -> bool:
    """A dict whose keys are its class's shared ones is smaller than the same values with keys of their own."""
    return sys.getsizeof(model.__dict__) < sys.getsizeof(dict(model.__dict__))


@only_where_keys_are_shared
def test_a_validated_built_or_constructed_model_keeps_its_values_in_a_key_sharing_dict():
    from rubricgate.models.results import TrialResult

    validated = TrialResult.model_validate(RESULT)
    built = TrialResult(case_id="c2", trial=2, outcome="WARN", grades={})
    constructed = TrialResult.model_construct(case_id="c3", trial=3, outcome="PASS", grades={})
    assert _shares_keys(validated) and _shares_keys(built) and _shares_keys(constructed)
    assert list(validated.__dict__) == list(TrialResult.model_fields)  # the fields' own order


@only_where_keys_are_shared
def test_key_sharing_values_copy_compare_assign_pickle_and_dump_as_before():
    import copy
    import pickle

    from rubricgate.models.results import TrialResult

    one = TrialResult.model_validate(RESULT)
    plain = dict(one.__dict__)
    copied = one.model_copy(update={"cached": True, "steps": 7})
    assert (copied.cached, copied.steps, one.cached, one.steps) == (True, 7, False, 0)
    assert _shares_keys(copied) and one.__dict__ == plain
    deep = copy.deepcopy(one)
    assert deep == one and deep.grades is not one.grades
    one.steps = 3
    assert one.steps == 3 and one != deep and _shares_keys(one)
    assert pickle.loads(pickle.dumps(one)) == one
    assert TrialResult.model_validate_json(one.model_dump_json()) == one
    assert one.model_dump()["steps"] == 3 and set(one.model_dump()) == set(TrialResult.model_fields)


@only_where_keys_are_shared
def test_a_partly_constructed_first_instance_does_not_stop_a_class_sharing_its_keys():
    """CPython shares the keys of a class's first instance set one by one; one set in another
    order makes it stop for good. A fresh interpreter, where the first instance is a partial one."""
    script = ("import json, sys\n"
              "from rubricgate.models.results import TrialResult\n"
              "partial = [TrialResult.model_construct(steps=2) for _ in range(5)][0]\n"
              "copies = [partial.model_copy() for _ in range(5)]\n"
              "full = TrialResult.model_validate(json.loads(sys.argv[1]))\n"
              "print(partial.steps, sys.getsizeof(full.__dict__) < sys.getsizeof(dict(full.__dict__)))")
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(RESULT)], capture_output=True, text=True)
    assert proc.stdout.split() == ["2", "True"], proc.stderr


def test_an_abstract_model_or_one_whose_field_is_a_parents_property_is_defined_as_before():
    """A class that cannot have a blank instance, or whose field a parent's property shadows,
    keeps pydantic's own dicts rather than failing where it is defined."""
    import abc

    from rubricgate.models.base import StrictModel

    class Check(StrictModel):
        name: str = ""

        @abc.abstractmethod
        def run(self) -> bool: ...

    class Passing(Check):
        def run(self) -> bool:
            return True

    class Labelled(StrictModel):
        @property
        def label(self) -> str:
            return "computed"

    with pytest.warns(UserWarning, match="shadows an attribute"):
        class Relabelled(Labelled):
            label: str = "x"

    assert Passing(name="a").run() and Passing(name="a").name == "a"
    assert Relabelled().label == "computed"
    with pytest.raises(TypeError, match="abstract"):
        Check()


@only_where_keys_are_shared
def test_a_model_with_more_fields_than_cpython_shares_keeps_its_own_dict():
    from rubricgate.models.base import MAX_SHARED_KEYS
    from rubricgate.models.results import Summary

    assert len(Summary.model_fields) > MAX_SHARED_KEYS
    summary = Summary.model_construct(**{name: None for name in Summary.model_fields})
    assert not _shares_keys(summary)
