"""The run's end, prepared beside the running trials: the models and modules that aggregation,
gating and the report writers need, and each trial's part of report.html. Not matplotlib: a
run's own report draws no chart (only a report given earlier runs draws the trend).

Both are fixed costs taken off the run's critical path. Building the trial and run-end model
validators behind the first agents, not before them, released the first agents 230 ms after
process start against 241 ms (medians of 20 runs); rendering each trial's timeline when it is
recorded leaves the end to render only the rest (rendering them all at the end took ~16 ms for
64 trials, ~50 ms for 200).
"""

from __future__ import annotations

import threading

from rubricgate.models.base import build_models
from rubricgate.models.results import RUN_END_MODELS, TRIAL_MODELS, TrialResult
from rubricgate.models.transcript import Transcript

WARM_AFTER_S = 1.0


class ReportsAhead:
    """The warm-up thread and the report bodies rendered so far (`bodies`, for the report writer)."""

    def __init__(self, first_agents_out: threading.Event | None = None) -> None:
        self.bodies: dict[str, str] = {}
        self.loaded = threading.Event()
        self.thread = warm_imports(first_agents_out, self.loaded)

    def prerender(self, result: TrialResult, transcript: Transcript) -> None:
        """Render a recorded trial's part of report.html into `bodies` (a trial's `on_graded`
        hook). Only once the warm-up has loaded the report writers: a trial never waits for that
        import, and one that ends before it is rendered from its file at the end."""
        if not self.loaded.is_set():
            return
        from rubricgate.reports.html import prerender_body  # already loaded by the warm-up

        try:
            prerender_body(self.bodies, result, transcript)
        except Exception:  # noqa: BLE001 - a trial with no body held is rendered from its file at the
            return  # end, where a failure is reported as a report that could not be written (exit 2)

    def wait(self) -> None:
        """Wait for the warm-up: its models and modules are what the rest of the run uses."""
        self.thread.join()


def warm_imports(after: threading.Event | None = None,
                 reports_loaded: threading.Event | None = None) -> threading.Thread:
    """Build the models a trial needs when it ends, and import what the end of the run needs (the
    report writers, the summary's models), on a background thread while trials run. It waits
    until the first agents are all out (`after`, at most WARM_AFTER_S): importing holds the
    interpreter, and the trials being launched need it more. `reports_loaded` is set once the
    report writers are loaded. Not numpy: most runs never need it (gating/exact.py), and beside
    fast trials its import only takes turns with them."""
    def load() -> None:
        if after is not None:
            after.wait(WARM_AFTER_S)
        build_models(TRIAL_MODELS)  # before the first trial ends, if it runs that long
        import rubricgate.gating.summarize  # noqa: F401
        import rubricgate.reports.bundle  # noqa: F401
        import rubricgate.reports.explain  # noqa: F401

        if reports_loaded is not None:
            reports_loaded.set()
        build_models(RUN_END_MODELS)

    thread = threading.Thread(target=load, daemon=True, name="warm-imports")
    thread.start()
    return thread
