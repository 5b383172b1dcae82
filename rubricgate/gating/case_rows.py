"""A case's rates and Wilson intervals: one pair per distinct set of counts, shared read-only.

In a big suite most cases have the same counts (every trial passed, 1/1 or 3/3 on every
dimension), and each CaseSummary held its own rates dict, intervals dict, three [low, high]
lists and nine floats: ~0.9 KB a case, ~1.8 MB of a 2,000-case run's peak
(bench/run_memory.py). Cases with equal counts share one pair; it refuses every change
(SharedRow, and each interval in it: SharedPair), so no case's edit reaches another's, and a copy
of one is a plain dict of its own (a copied case takes its own: CaseSummary, models/results.py).
"""

from __future__ import annotations

import copy
from typing import Any, NoReturn

from rubricgate.gating.stats import wilson


def rounded_interval(passes: int, trials: int, confidence: float) -> list[float]:
    """Wilson's [low, high] rounded to 4 places: a case's or a tag's interval as summary.json keeps it."""
    return [round(x, 4) for x in wilson(passes, trials, confidence)]


def _refused(*_: object, **__: object) -> NoReturn:
    raise TypeError("a case's rates and intervals are shared with other cases: copy them to change them")


class SharedRow(dict):
    """A dict several cases hold: read-only; copying, pickling or deep-copying gives a plain dict."""

    __setitem__ = __delitem__ = update = pop = popitem = setdefault = clear = __ior__ = _refused

    def copy(self) -> dict:
        return dict(self)

    def __copy__(self) -> dict:
        return dict(self)

    def __deepcopy__(self, memo: dict) -> dict:
        return copy.deepcopy(dict(self), memo)

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)


class SharedPair(list):
    """An interval [low, high] in a SharedRow: the cases that share the row share it too, so it is
    read-only as well; copying, pickling or deep-copying gives a plain list."""

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = sort = reverse = _refused
    __iadd__ = __imul__ = _refused

    def copy(self) -> list:
        return list(self)

    def __copy__(self) -> list:
        return list(self)

    def __deepcopy__(self, memo: dict) -> list:
        return list(self)  # floats: nothing in it to copy

    def __reduce__(self) -> tuple[Any, ...]:
        return list, (list(self),)


class CaseRows:
    """rates and intervals of a case from its counts {dimension: (passes, trials)}, one pair of
    SharedRows per distinct counts."""

    def __init__(self, confidence: float) -> None:
        self.confidence = confidence
        self._rows: dict[tuple, tuple[SharedRow, SharedRow]] = {}

    def rows(self, counts: dict[str, tuple[int, int]]) -> tuple[SharedRow, SharedRow]:
        """(rates, intervals): passes / trials and Wilson's [low, high] rounded to 4 places, of
        every dimension with a trial."""
        key = tuple(counts.items())
        found = self._rows.get(key)
        if found is None:
            judged = {d: (p, n) for d, (p, n) in counts.items() if n}
            found = self._rows[key] = (
                SharedRow({d: p / n for d, (p, n) in judged.items()}),
                SharedRow({d: SharedPair(rounded_interval(p, n, self.confidence)) for d, (p, n) in judged.items()}))
        return found
