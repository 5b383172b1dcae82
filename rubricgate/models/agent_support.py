"""An agent CLI's version against its tested range: `rubricgate agents` and summary.json."""

from typing import Literal

from rubricgate.models.base import StrictModel

SupportStatus = Literal["tested", "in_range", "untested", "unknown"]


class AgentSupport(StrictModel):
    """An agent CLI's reported version against the range CI tests (agents/tested_versions.json)."""

    version: str | None = None
    tested_oldest: str
    tested_newest: str
    # tested: one of the two versions CI runs; in_range: between them; untested: outside the
    # range; unknown: no version could be read or parsed.
    status: SupportStatus
    warning: str = ""
