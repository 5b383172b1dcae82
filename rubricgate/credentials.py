"""Credential-shaped text: keys and tokens nobody declared (a key pasted into a reviewed file).

secrets.py removes the values rubricgate knows; these patterns find credentials by their shape.
The builtin reviewer's `secret-in-file` rule, `record`'s check of what it snapshots, and the
reports' masking of quotes share them.
"""

from __future__ import annotations

import functools
import re

# The key's name may carry a prefix (`DB_PASSWORD`, `aws_secret_access_key`, `client-secret`): a
# word boundary before the keyword missed every such name, and record committed their values.
_ASSIGNED = (r"(?i)(?<![a-z0-9])(?:[a-z0-9]+[_-])*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)\b"
             r"[\"']?\s*[:=]\s*[\"']?",
             r"(?=[^\s\"'<>{}$]*[0-9!@#%^&*+/=_-])[^\s\"'<>{}$]{8,}")
# (kind shown to people, slug in placeholders, pattern that finds it on one line)
CREDENTIAL_KINDS: list[tuple[str, str, re.Pattern[str]]] = [
    ("OpenAI-style API key", "api-key", re.compile(r"\bsk-[A-Za-z0-9_-]{16,}")),
    ("AWS access key id", "aws-access-key-id", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("GitHub token", "github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}")),
    ("Slack token", "slack-token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("private key", "private-key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    # A credential-looking key with a literal value: no $VAR, {{ }}, <placeholder>.
    ("credential assignment", "credential", re.compile(_ASSIGNED[0] + _ASSIGNED[1])),
]
CREDENTIAL_PATTERNS = [pattern for _, _, pattern in CREDENTIAL_KINDS]
# What a replacement covers when it is more than the match: a private key's whole block (to the
# end of the text when its END line was cut off), and only the value of an assignment.
_REPLACED = {"private-key": re.compile(r"(?P<begin>-----BEGIN [A-Z ]*PRIVATE KEY-----)"
                                       r"(?:.*?(?P<end>-----END [A-Z ]*PRIVATE KEY-----)|.*)", re.DOTALL),
             "credential": re.compile(f"(?i)(?P<name>{_ASSIGNED[0].removeprefix('(?i)')}){_ASSIGNED[1]}")}
# `record --redact` keeps each credential's shape, so a task about a leaked key still shows the
# reviewer a key in clear; the word REDACTED marks it for people.
_MARK = "REDACTED-BY-RUBRICGATE"
_SHAPED = {"api-key": lambda m: "sk-" + _MARK,
           "aws-access-key-id": lambda m: "AKIAREDACTED00000000",
           "github-token": lambda m: m.group()[:4] + _MARK.replace("-BY-", "by").replace("-", ""),
           "slack-token": lambda m: m.group()[:5] + _MARK,
           "private-key": lambda m: f"{m.group('begin')}\n{_MARK}\n{m.group('end') or '-----END PRIVATE KEY-----'}",
           "credential": lambda m: m.group("name") + _MARK.replace("-", "_")}
_PLACEHOLDER = re.compile(r"(?:sk-REDACTED-BY-RUBRICGATE|AKIAREDACTED00000000|gh[pousr]_REDACTEDbyRUBRICGATE|"
                          r"xox[abprs]-REDACTED-BY-RUBRICGATE|REDACTED_BY_RUBRICGATE)$")


# A prefix every pattern above needs: text without any of these holds no credential.
_MAYBE = re.compile(r"sk-|AKIA|gh[pousr]_|xox[abprs]-|PRIVATE KEY|"
                    r"(?i:passw|pwd|secret|token|api[_-]?key|access[_-]?key)")


def find_credentials(text: str) -> list[tuple[int, str]]:
    """(1-based line, kind) of every line holding something credential-shaped, one entry per line."""
    found = []
    for no, line in enumerate(text.splitlines(), start=1):
        kind = next((k for k, _, p in CREDENTIAL_KINDS if p.search(line)), None)
        if kind is not None:
            found.append((no, kind))
    return found


def redact_credentials(text: str) -> str:
    """`text` with each credential replaced by a placeholder of the same shape marked REDACTED
    (`token: ghp_REDACTEDbyRUBRICGATE`); redacting twice changes nothing more."""
    for _, slug, pattern in CREDENTIAL_KINDS:
        text = _REPLACED.get(slug, pattern).sub(functools.partial(_redacted, slug=slug), text)
    return text


def _redacted(match: re.Match[str], slug: str) -> str:
    if slug == "credential" and _PLACEHOLDER.match(match.group()[len(match.group("name")):]):
        return match.group()  # already a placeholder of a more specific kind
    return _SHAPED[slug](match)


def mask_credentials(text: str) -> str:
    """`text` with each credential shown as `<masked:KIND>`: what the reports do to quoted text."""
    if not _MAYBE.search(text):  # the common case, one scan: reports call this on every value
        return text
    for _, slug, pattern in CREDENTIAL_KINDS:
        text = _REPLACED.get(slug, pattern).sub(functools.partial(_masked, slug=slug), text)
    return text


def _masked(match: re.Match[str], slug: str) -> str:
    name = match.group("name") if "name" in match.re.groupindex else ""
    return f"{name}<masked:{slug}>"
