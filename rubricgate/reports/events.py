"""events.jsonl: appended and flushed as things happen, so an interrupted run keeps them."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from rubricgate.runner.environment import scrub

EventListener = Callable[[dict[str, Any]], None]


class EventLog:
    """Writes one JSON object per line and forwards each event to listeners."""

    def __init__(self, path: Path, listeners: list[EventListener] | None = None, secrets: list[str] | None = None):
        self.path = path
        self.listeners = listeners or []
        self.secrets = secrets or []
        self._file = path.open("a", encoding="utf-8")

    def emit(self, event: str, **fields: Any) -> None:
        """Record an event now (flushed before returning), then tell the listeners."""
        record = {"event": event, "at": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), **fields}
        self._file.write(scrub(json.dumps(record, default=str), self.secrets) + "\n")
        self._file.flush()
        for listener in self.listeners:
            listener(record)

    def close(self) -> None:
        self._file.close()


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every complete line of an events file (a line cut by a crash is skipped)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # only the last line of a killed run can be partial
    return out
