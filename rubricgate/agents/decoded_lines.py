"""Each line of a trial's stream decoded once, not once for the live watch and again for the parser.

While the CLI runs, its watches (the step and tool limits, the retry and outage notices) decode
every stdout line as it arrives; once it has exited, the parser decodes the whole stream again:
every line twice (decoding a 39-line Claude stream is 0.55 ms, of its watch's 0.84 ms and its
parse's 1.39 ms; a 400-case run's CPU 0.97x without the second decoding, docs/performance.md).
Inside `shared_decoding` (one trial, in the thread that runs it) the watches keep each line's
value, and the parser takes it instead of decoding the line again.

Sound by construction: a value is looked up by the line's exact text, and `decode` (the bounded
JSON loader) gives the same value for the same text. Watches only read what they are given; the
parser takes each kept value once (a line the stream holds twice is decoded again the second
time), so no two events of a transcript are one object. A line a watch never saw (past the
output cap, from a rollout file, outside a trial) is decoded as before.

Kept values live while the CLI runs, in every trial at once, where the parser's live only while
it parses: so a trial keeps those of its first KEEP_CHARS characters of lines (a review's stream
is a few KB to a few hundred), and decodes the rest twice as before. A stream built to decode
large (lines of many small containers: 8 MB of them decode to ~200 MB) cannot make each of
`--jobs` trials hold that for its whole run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_MISSING = object()
KEEP_CHARS = 256 * 1024  # line text whose values a trial keeps (each decodes to ~25x at worst)


class DecodedLines:
    """The values the watches decoded, by line, until the parser takes them."""

    def __init__(self) -> None:
        self.keeping = True  # the CLI runs: its watches decode and keep; then the parser takes
        self.values: dict[str, Any] = {}
        self.kept_chars = 0

    def parsing(self) -> None:
        """The CLI has exited: from now on the parser takes what the watches kept."""
        self.keeping = False

    def value_of(self, line: str, decode: Callable[[str], Any]) -> Any:
        """The line's value: kept for the parser while watching, taken once by it after."""
        if self.keeping:
            value = self.values.get(line, _MISSING)
            if value is _MISSING:
                value = decode(line)
                if self.kept_chars + len(line) <= KEEP_CHARS:
                    self.values[line] = value
                    self.kept_chars += len(line)
            return value
        value = self.values.pop(line, _MISSING)
        return decode(line) if value is _MISSING else value


_CURRENT: ContextVar[DecodedLines | None] = ContextVar("rubricgate_decoded_lines", default=None)


@contextmanager
def shared_decoding() -> Iterator[DecodedLines]:
    """One trial's lines, decoded once: call `parsing()` on what this yields once the CLI has
    exited, before its stream is parsed. Everything kept is dropped at the end."""
    lines = DecodedLines()
    token = _CURRENT.set(lines)
    try:
        yield lines
    finally:
        _CURRENT.reset(token)
        lines.values.clear()


def decode_line(line: str, decode: Callable[[str], Any]) -> Any:
    """`decode(line)`, or the value a watch of this trial decoded from the same line."""
    lines = _CURRENT.get()
    return decode(line) if lines is None else lines.value_of(line, decode)
