"""gating/case_rows.py: cases of equal counts share one read-only pair of rates and intervals."""

import copy
import pickle

import pytest

from rubricgate.gating.case_rows import CaseRows, SharedRow
from rubricgate.gating.stats import wilson
from rubricgate.models.results import CaseSummary


def test_a_shared_row_refuses_every_change():
    rates, _ = CaseRows(0.95).rows({"verdict": (3, 3)})
    changes = [lambda: rates.__setitem__("verdict", 0.0), lambda: rates.__delitem__("verdict"),
               lambda: rates.update(verdict=0.0), lambda: rates.pop("verdict"), rates.popitem,
               lambda: rates.setdefault("x", 1.0), rates.clear, lambda: rates.__ior__({"x": 1.0})]
    for change in changes:
        with pytest.raises(TypeError, match="shared with other cases"):
            change()
    assert rates == {"verdict": 1.0}


def test_equal_counts_share_one_pair_and_other_counts_get_their_own():
    rows = CaseRows(0.95)
    one = rows.rows({"verdict": (3, 3), "tool_use": (2, 3)})
    assert rows.rows({"verdict": (3, 3), "tool_use": (2, 3)}) is one
    other = rows.rows({"verdict": (2, 3), "tool_use": (2, 3)})
    assert other[0] is not one[0] and other[0] == {"verdict": 2 / 3, "tool_use": 2 / 3}
    low, high = wilson(2, 3, 0.95)
    assert one[1]["tool_use"] == [round(low, 4), round(high, 4)]


def test_a_dimension_with_no_trial_has_no_rate_and_no_interval():
    rates, bounds = CaseRows(0.95).rows({"verdict": (0, 0), "tool_use": (1, 1)})
    assert rates == {"tool_use": 1.0} and set(bounds) == {"tool_use"}


def test_copies_are_plain_dicts_of_their_own_and_a_summary_dumps_and_reads_the_same():
    rates, bounds = CaseRows(0.95).rows({"verdict": (1, 2)})
    for made in (copy.copy(rates), rates.copy(), copy.deepcopy(rates), pickle.loads(pickle.dumps(rates))):
        assert type(made) is dict and made == rates
        made["verdict"] = 0.0  # a copy is the holder's to change
    deep = copy.deepcopy(bounds)
    deep["verdict"].append(9.0)
    assert bounds["verdict"] == [round(x, 4) for x in wilson(1, 2, 0.95)]
    case = CaseSummary.model_construct(id="c", source="task", rates=rates, intervals=bounds, trials=[])
    again = CaseSummary.model_validate_json(case.model_dump_json())
    assert again == case and type(again.rates) is dict
    assert isinstance(case.model_copy(deep=True).rates, dict) and not isinstance(
        case.model_copy(deep=True).rates, SharedRow)


def test_an_interval_in_a_shared_row_refuses_every_change_too():
    _, bounds = CaseRows(0.95).rows({"verdict": (1, 2)})
    pair = bounds["verdict"]
    before = list(pair)
    changes = [lambda: pair.__setitem__(0, 0.0), lambda: pair.__delitem__(0), lambda: pair.append(1.0),
               lambda: pair.extend([1.0]), lambda: pair.insert(0, 1.0), pair.pop, lambda: pair.remove(before[0]),
               pair.clear, pair.sort, pair.reverse, lambda: pair.__iadd__([1.0]), lambda: pair.__imul__(2)]
    for change in changes:
        with pytest.raises(TypeError, match="shared with other cases"):
            change()
    assert pair == before
    assert type(pair.copy()) is list and type(copy.deepcopy(pair)) is list
    assert type(pickle.loads(pickle.dumps(pair))) is list


def _two_cases_of_equal_counts() -> list[CaseSummary]:
    rows = CaseRows(0.95)
    return [CaseSummary.model_construct(id=c, source="task", rates=rates, intervals=bounds, trials=[])
            for c, (rates, bounds) in (("a", rows.rows({"verdict": (1, 2)})), ("b", rows.rows({"verdict": (1, 2)})))]


@pytest.mark.parametrize("copied", [copy.deepcopy, lambda cases: pickle.loads(pickle.dumps(cases)),
                                    lambda cases: [c.model_copy(deep=True) for c in cases]],
                         ids=["deepcopy", "pickle", "model_copy"])
def test_copies_of_cases_that_share_a_row_are_each_their_own(copied):
    """deepcopy and pickle keep one copy of an object every holder shares: the cases of a copied
    summary must not get one plain dict between them, where an edit of one is an edit of all."""
    cases = _two_cases_of_equal_counts()
    first, second = copied(cases)
    first.rates["verdict"] = 0.0
    first.intervals["verdict"][0] = 0.0
    assert second.rates == cases[1].rates == {"verdict": 0.5}
    assert second.intervals == cases[1].intervals and second.intervals["verdict"][0] > 0.0
    assert type(second.rates) is dict and type(second.intervals["verdict"]) is list
