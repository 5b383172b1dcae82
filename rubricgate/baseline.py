"""Reading baseline.json, and the update rules: raise freely, lower only with a reason."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.loading import load_model
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.baseline import Baseline, BaselineChange
from rubricgate.models.results import Summary
from rubricgate.records.files import write_json_atomic
from rubricgate.validation import did_you_mean


def load_baseline(path: Path, display: str) -> Baseline:
    """Load and check that every dimension has a rate in [0, 1]."""
    if not path.is_file():
        raise GateInputError(display, "", "baseline not found", "run `rubricgate baseline update` and commit the file")
    baseline = load_model(Baseline, path, display)
    for dim in baseline.rates:
        if dim not in DIMENSIONS:
            raise GateInputError(display, f"rates.{dim}", f"unknown dimension {dim!r}{did_you_mean(dim, DIMENSIONS)}",
                                 f"use only {', '.join(DIMENSIONS)}")
    for dim in DIMENSIONS:
        rate = baseline.rates.get(dim)
        if rate is None or not 0.0 <= rate <= 1.0:
            raise GateInputError(display, f"rates.{dim}", "missing or outside [0, 1]", "set a rate between 0 and 1")
    return baseline


def measured_rates(summary: Summary) -> dict[str, float]:
    rates = {d: summary.rates[d].rate for d in DIMENSIONS}
    if any(r is None for r in rates.values()):
        raise GateInputError("summary.json", "rates", "the run graded no trial", "run the suite first")
    return {d: round(float(r), 6) for d, r in rates.items()}


def updated_baseline(old: Baseline | None, summary: Summary, reason: str) -> tuple[Baseline, list[str]]:
    """The new baseline from a run; returns the dimensions that were lowered.

    Raising is allowed whenever the suite passes at the higher rate (it just did). Lowering
    needs a written reason, kept in the history: that is the point of a baseline.
    """
    new = measured_rates(summary)
    lowered = [d for d in DIMENSIONS if old is not None and new[d] < old.rates[d] - 1e-6]
    if lowered and not reason.strip():
        raise GateInputError("baseline.json", "rates." + lowered[0],
                             "lowering " + ", ".join(f"{d} {old.rates[d]:.1%} -> {new[d]:.1%}" for d in lowered)
                             + " needs a reason", "pass --reason 'why the lower rate is right'")
    at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    change = BaselineChange(at=at, rates=new, trials=_trials(summary), reason=reason or _auto_reason(old),
                            run_id=summary.run_id)
    history = (old.history if old else []) + [change]
    return Baseline(rates=new, trials=change.trials, history=history), lowered


def _trials(summary: Summary) -> int:
    return max((len(c.trials) for c in summary.cases), default=1) or 1


def _auto_reason(old: Baseline | None) -> str:
    return "initial baseline" if old is None else "raised: the suite passes at the higher rate"


def write_baseline(path: Path, baseline: Baseline) -> None:
    """Atomic, like every file a run writes: an interrupted update never leaves half a baseline."""
    write_json_atomic(path, baseline.model_dump(mode="json"))
