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
