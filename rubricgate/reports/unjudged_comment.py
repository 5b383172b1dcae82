"""The pull-request comment for a push the gate judged nothing at: no gated file changed since the
base any more, or the gate could not start (`changed` failed). The comment is edited in place on
every push, so without these it kept the last judged push's decision (a REGRESSION on a pull
request that reverted the change, a PASS on one whose config no longer loads).
"""

from __future__ import annotations

from rubricgate.reports.comment import MARKER, escape_md


def unchanged_body(base: str) -> str:
    """No gated file changes since `base` at this push: the gate did not run."""
    return (f"{MARKER}\n### ✅ rubricgate: no gated file changed since {escape_md(base)}\n\n"
            "At this push the pull request changes no gated file (the reviewer, its suite, the baseline, the "
            "config): the gate did not run, and the report this comment held before no longer applies.\n")


def cannot_judge_body(why: str) -> str:
    """The gate could not run at this push (`why`, one line): nothing was judged."""
    return (f"{MARKER}\n### ❔ rubricgate **COULD NOT JUDGE** (exit 2): {escape_md(why)}\n\n"
            "See the job's log. The report this comment held before was of an earlier push and no longer "
            "applies.\n")
