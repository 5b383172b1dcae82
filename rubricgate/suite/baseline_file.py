"""Reading baseline.json and checking it before anything runs.

The update rules (raise freely, lower only with a reason) live in gating/baseline.py; this is the
input side, which the load stage needs before any gating exists."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.models import dimensions
from rubricgate.models.baseline import Baseline, suite_rates
from rubricgate.suite.validation import did_you_mean
from rubricgate.suite.yaml_json import load_model

REMEASURE = "rubricgate baseline update --reason 're-measured per case'"


def load_baseline(path: Path, display: str, allow_format_1: bool = False,
                  case_ids: Collection[str] | None = None) -> Baseline:
    """Load and check: every dimension it holds is registered (its rates in [0, 1]: the model).
    A dimension the baseline does not hold, or holds for some cases only (a grader added since, a
    partial update), is not an error: the gate compares what both sides measured and reports the
    rest as "no baseline" until `baseline update` measures it. Given the suite's `case_ids`, a
    case the suite does not have is an error: a typo or a removed task would otherwise sit in the
    file unseen, its counts never compared with anything.

    Format 1 (suite rates only) cannot be gated: an `--only` run of hard cases against a suite
    rate fails nearly always with nothing changed. Only `baseline update` reads it (to replace it).
    """
    if not path.is_file():
        raise GateInputError(display, "", "baseline not found", "run `rubricgate baseline update` and commit the file")
    baseline = load_model(Baseline, path, display)
    known = dimensions.names()
    for dim in [*baseline.rates, *(d for dims in baseline.cases.values() for d in dims)]:
        if dim not in known:
            where = f"rates.{dim}" if dim in baseline.rates else f"cases.*.{dim}"
            raise GateInputError(display, where, f"unknown dimension {dim!r}{did_you_mean(dim, known)}",
                                 f"use only {', '.join(known)}")
    if not baseline.rates:
        raise GateInputError(display, "rates", "no dimension", "run `rubricgate baseline update`")
    if baseline.format_version >= 2 and not baseline.cases:
        raise GateInputError(display, "cases", f"format {baseline.format_version} without per-case counts",
                             "run `rubricgate baseline update`")
    for case, dims in baseline.cases.items():
        if not dims:
            raise GateInputError(display, f"cases.{case}", "no dimension", "run `rubricgate baseline update`")
    unknown = sorted(set(baseline.cases) - set(case_ids)) if case_ids is not None else []
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise GateInputError(display, f"cases.{unknown[0]}", f"no task or fixture has this case id{more}"
                             f"{did_you_mean(unknown[0], list(case_ids or ()))}",
                             "run `rubricgate baseline update` (it drops cases the suite no longer has), "
                             "or restore the case")
    _check_not_lowered_by_hand(baseline, display)
    if baseline.format_version == 1 and not allow_format_1:
        raise GateInputError(display, "format_version",
                             "format 1 keeps suite rates only; the gate needs per-case counts",
                             f"re-measure it: {REMEASURE}")
    return baseline


# Rounding of the rates a change records (suite_rates: six places).
_RATE_EPS = 1e-6


def _check_not_lowered_by_hand(baseline: Baseline, display: str) -> None:
    """A rate below what the history's last change recorded, with no change saying why: lowered by
    hand (every rate and count set to 0 in a pull request was read as the new baseline, the gate
    then passing anything). `baseline update` records each change with its rates, and a lowering
    with its reason. The counts are held to it too where the file is of the current format, whose
    changes record the counts' pooled rates; raising by hand is left alone (it only makes the gate
    stricter)."""
    if not baseline.history:
        if baseline.format_version >= 3 and baseline.cases:  # every update of this format records its change
            raise GateInputError(display, "history", "counts with no change recorded (its history emptied by hand?)",
                                 "measure it with `rubricgate baseline update`, or restore the file")
        return
    recorded = baseline.history[-1].rates
    pooled = suite_rates(baseline.cases) if baseline.format_version >= 3 else {}
    for dim, then in recorded.items():
        for where, now in ((f"rates.{dim}", baseline.rates.get(dim)), (f"cases.*.{dim}", pooled.get(dim))):
            if now is not None and now < then - _RATE_EPS:
                raise GateInputError(display, where, f"{now:.1%} is below the {then:.1%} its history's last change "
                                     "recorded, and no change says why (edited by hand?)",
                                     "lower it with `rubricgate baseline update --reason '...'`, which records "
                                     "why, or restore the file")
