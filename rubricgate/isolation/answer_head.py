"""A plain http answer's head as the sandbox proxy passes it on (isolation/proxy.py).

The proxy asks the endpoint to close after each request, so the client must be told so too: an
HTTP/1.1 client told nothing keeps the connection for its next request and sends it into a
closed socket (ECONNRESET), or, were the endpoint to keep it open, to the same endpoint whatever
host the request names. So the answer is held until its final head is complete, that head's
Connection headers are replaced by `Connection: close`, and the rest passes as it comes.

A head ends at its first blank line, CRLF or bare LF (RFC 9112 2.2 lets a recipient take a bare
LF; Python's and Node's clients do), so nothing in the body is ever read as head. Interim 1xx
heads pass unchanged and the final one is read (its status and Retry-After are what the trial's
log keeps). A head that grows past MAX_HEAD is not HTTP this proxy relays: the client is answered
502 instead (HeadTooLarge), since it could not be told to close.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_HEAD = 64 * 1024  # a request or response head past this is not HTTP we relay
CONNECTION_HEADERS = (b"connection", b"keep-alive", b"proxy-connection")
_STATUS = re.compile(rb"HTTP/\d(?:\.\d)? (\d{3})(?=[ \r\n]|$)")
_BLANK_LINES = (b"\r\n\r\n", b"\n\n", b"\n\r\n")


class HeadTooLarge(Exception):
    """The endpoint's answer head passed MAX_HEAD before its blank line."""


def status_of(head: bytes) -> int | None:
    """The status code of a response head's status line (three digits), or None."""
    found = _STATUS.match(head)
    return int(found.group(1)) if found else None


def head_end(data: bytes) -> tuple[int, int] | None:
    """(where the head ends, where what follows it starts) at the first blank line, or None."""
    ends = [(at, at + len(blank)) for blank in _BLANK_LINES if (at := data.find(blank)) >= 0]
    return min(ends) if ends else None


def closing(head: bytes) -> bytes:
    """The head with CRLF line ends, its Connection headers (and their folded continuation
    lines) replaced by `Connection: close`, and its blank line."""
    kept: list[bytes] = []
    dropping = False
    for line in _lines(head):
        if kept and line[:1] in (b" ", b"\t"):  # obs-fold: belongs to the header above it
            if not dropping:
                kept.append(line)
            continue
        dropping = bool(kept) and line.partition(b":")[0].strip().lower() in CONNECTION_HEADERS
        if not dropping:
            kept.append(line)
    return b"\r\n".join([*kept, b"Connection: close", b"", b""])


def _lines(head: bytes) -> list[bytes]:
    return [raw.rstrip(b"\r") for raw in head.split(b"\n")]


@dataclass
class AnswerHeads:
    """One answer as it arrives: `feed` returns what may pass on to the client now."""

    held: bytes = b""
    done: bool = False  # the final head passed: the rest is body
    status: int | None = None
    retry_after: str | None = None

    def feed(self, data: bytes) -> bytes:
        """What to pass on now of what came so far; HeadTooLarge past MAX_HEAD."""
        if self.done:
            return data
        self.held += data
        out = []
        while not self.done and (end := head_end(self.held)) is not None:
            if end[0] > MAX_HEAD:
                raise HeadTooLarge
            head, self.held = self.held[:end[0]], self.held[end[1]:]
            self._read(head)
            interim = self.status is not None and 100 <= self.status < 200 and self.status != 101
            out.append(b"\r\n".join([*_lines(head), b"", b""]) if interim else closing(head))
            self.done = not interim
        if not self.done and len(self.held) > MAX_HEAD:
            raise HeadTooLarge
        if self.done:
            out.append(self.held)
            self.held = b""
        return b"".join(out)

    def _read(self, head: bytes) -> None:
        self.status, self.retry_after = status_of(head), None
        for line in _lines(head)[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"retry-after":
                self.retry_after = value.strip().decode("latin-1")[:64]
