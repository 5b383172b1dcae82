"""Which values of an environment are secrets: the declared ones (`agent.secret_env`), and any
other value that is a secret by its variable's name or its own shape. What they are scrubbed
from is secrets.py's.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache

from rubricgate.credentials import CREDENTIAL_PATTERNS

MIN_SECRET_CHARS = 6  # shorter values are skipped: scrubbing them would mangle ordinary text


def secret_values(env: Mapping[str, str], secret_names: Iterable[str]) -> list[str]:
    """Values of the agent's environment `env` to scrub from outputs, in every isolation mode:
    the declared secrets' (`secret_names`) and every other value that is a secret by its name or
    shape (`secret_variable`: a token passed through agent.env_allowlist reaches the reviewer,
    which can print it). Longest first; values under MIN_SECRET_CHARS are skipped."""
    return list(_secret_values(tuple(env.items()), frozenset(secret_names)))


@lru_cache(maxsize=16)
def _secret_values(items: tuple[tuple[str, str], ...], names: frozenset[str]) -> tuple[str, ...]:
    # Every trial of a run hands its agent the same environment: its secrets are worked out once
    # (a name pattern and a shape test per variable, ~0.06 ms of each trial's Python before).
    found = {v for k, v in items if len(v) >= MIN_SECRET_CHARS and (k in names or secret_variable(k, v))}
    return tuple(sorted(found, key=len, reverse=True))


# Variables that name where things are, not secrets, whatever their shape.
NOT_SECRET = frozenset({"PATH", "HOME", "PWD", "OLDPWD", "SHELL", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM",
                        "TZ", "TMPDIR", "SHLVL", "HOSTNAME", "PYTHONPATH", "VIRTUAL_ENV", "CI", "_"})
# Names that say a value is a credential: its value is a secret whatever it looks like.
_SECRET_NAME = re.compile(r"(?i)token|secret|passw|passphrase|credential|cookie|private|signature|"
                          r"api_?key|access_?key|auth(?!or)|(?:^|_)(?:key|pat|pwd|dsn)(?:_|$)")
# A run of token characters long enough to hide a key; a commit SHA or UUID is an id.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9+/=_-]{16,}")
_ID_SHAPED = re.compile(r"[0-9a-f]+|[0-9A-F]+|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def parent_env_secrets(environ: Mapping[str, str], secrets: Iterable[str] = ()) -> list[str]:
    """What a copy-only run scrubs (a reviewer without a sandbox can read the harness's
    environment in /proc): `secrets` (the configured ones) and every value of the parent
    environment that is a secret by its name or its shape, longest first. CI refs, run ids,
    paths, branch names and commit SHAs are none: scrubbing them rewrote rule and case ids."""
    found = {v for k, v in environ.items() if len(v) >= MIN_SECRET_CHARS and secret_variable(k, v)} | set(secrets)
    return sorted(found, key=len, reverse=True)


def secret_variable(name: str, value: str) -> bool:
    """A variable whose value is a secret: named like a credential, or shaped like one."""
    if name in NOT_SECRET or name.startswith(("LC_", "XDG_")):
        return False
    return secret_name(name) or looks_secret(value)


def secret_name(name: str) -> bool:
    """A variable named like a credential (a token, a password, a key), whatever its value."""
    return name not in NOT_SECRET and not name.startswith(("LC_", "XDG_")) and bool(_SECRET_NAME.search(name))


def looks_secret(value: str) -> bool:
    """Credential-shaped (credentials.py: `sk-`, `ghp_`, `AKIA`, a private key...) or holding
    a random-looking token: 16+ token characters with lower, upper case and digits, switching
    between them as random text does (a third of the steps or more; words and camelCase do so
    far less) and with high entropy. Hex strings and UUIDs are ids (a SHA), never by shape."""
    if any(p.search(value) for p in CREDENTIAL_PATTERNS):
        return True
    return any(_random_token(run) for run in _TOKEN_RUN.findall(value))


def _random_token(run: str) -> bool:
    alnum = [c for c in run if c.isascii() and c.isalnum()]
    if len(alnum) < 16 or _ID_SHAPED.fullmatch(run):
        return False
    kinds = [0 if c.islower() else 1 if c.isupper() else 2 for c in alnum]
    if len(set(kinds)) < 3:
        return False
    switches = sum(a != b for a, b in zip(kinds, kinds[1:], strict=False)) / (len(kinds) - 1)
    counts = Counter(alnum)
    entropy = -sum(n / len(alnum) * math.log2(n / len(alnum)) for n in counts.values())
    return switches >= 0.33 and entropy >= 3.3
