"""models/baseline.py: a baseline holds one frozen CaseCount for every equal count."""

import json

import pydantic
import pytest

from rubricgate.models.baseline import Baseline, CaseCount


def _baseline() -> Baseline:
    cases = {f"c{i}": {"verdict": {"passes": 3, "trials": 3}, "tool_use": {"passes": 3, "trials": 3}}
             for i in range(5)}
    cases["c5"] = {"verdict": {"passes": 2, "trials": 3, "sessions": [[1, 1], [1, 2]]}}
    return Baseline.model_validate_json(json.dumps({"rates": {"verdict": 1.0}, "trials": 3, "cases": cases}))


def test_a_count_cannot_be_changed_once_read():
    count = _baseline().cases["c0"]["verdict"]
    with pytest.raises(pydantic.ValidationError):
        count.passes = 0  # type: ignore[misc]


def test_equal_counts_are_one_object_and_unequal_ones_stay_apart():
    baseline = _baseline()
    same = {id(dims[d]) for c, dims in baseline.cases.items() if c != "c5" for d in dims}
    assert len(same) == 1
    odd = baseline.cases["c5"]["verdict"]
    assert odd == CaseCount(passes=2, trials=3, sessions=((1, 1), (1, 2))) and id(odd) not in same


def test_a_pooled_baseline_writes_what_it_read():
    baseline = _baseline()
    assert Baseline.model_validate_json(baseline.model_dump_json()) == baseline
