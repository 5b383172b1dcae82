"""Reading baseline.json and checking it before anything runs.

The update rules (raise freely, lower only with a reason) live in gating/baseline.py; this is the
input side, which the load stage needs before any gating exists."""

from __future__ import annotations

from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.baseline import Baseline
from rubricgate.suite.validation import did_you_mean
from rubricgate.suite.yaml_json import load_model

REMEASURE = "rubricgate baseline update --reason 're-measured per case'"


def load_baseline(path: Path, display: str, allow_format_1: bool = False) -> Baseline:
    """Load and check: every dimension has a suite rate in [0, 1], every case every dimension.

    Format 1 (suite rates only) cannot be gated: an `--only` run of hard cases against a suite
    rate fails nearly always with nothing changed. Only `baseline update` reads it (to replace it).
    """
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
    if baseline.format_version >= 2 and not baseline.cases:
        raise GateInputError(display, "cases", f"format {baseline.format_version} without per-case counts", "run `rubricgate baseline update`")
    for case, dims in baseline.cases.items():
        missing = [d for d in DIMENSIONS if d not in dims]
        if missing:
            raise GateInputError(display, f"cases.{case}.{missing[0]}", "missing", "run `rubricgate baseline update`")
    if baseline.format_version == 1 and not allow_format_1:
        raise GateInputError(display, "format_version", "format 1 keeps suite rates only; the gate needs per-case counts",
                             f"re-measure it: {REMEASURE}")
    return baseline
