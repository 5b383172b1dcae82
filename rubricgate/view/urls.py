"""One URL scheme for the server and the static site: every page is a relative `.html` path.

Run ids and case ids come from folders and files, so they are never put into a path as they
are: a slug keeps the safe characters for reading and adds a hash of the whole id, which makes
it unique and keeps `/`, `..`, quotes and markup out of every path.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


@lru_cache(maxsize=65536)  # the same case ids in every run a case page looks through
def slug(value: str) -> str:
    """A file-name-safe, unique stand-in for an id: its safe characters and 10 hex of its hash."""
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    readable = _UNSAFE.sub("_", value).strip("_-")[:60]
    return f"{readable}-{digest}" if readable else digest


def runs() -> str:
    return "index.html"


def trend(branch: str | None = None) -> str:
    """The trend page: the default branch's at trend.html, any branch's at trend/<slug>.html."""
    return "trend.html" if branch is None else f"trend/{slug(branch)}.html"


def run(run_id: str) -> str:
    return f"run/{slug(run_id)}.html"


def report(run_id: str) -> str:
    return f"run/{slug(run_id)}/report.html"


def case(case_id: str) -> str:
    return f"case/{slug(case_id)}.html"


def compare(base: str, head: str) -> str:
    return f"compare/{slug(base)}..{slug(head)}.html"


def compare_record(key: str) -> str:
    """A comparison `rubricgate compare` decided and wrote (compare.json, comparison.json)."""
    return f"comparison/{slug(key)}.html"


def transcript(run_id: str, case_id: str, trial: int) -> str:
    return f"transcript/{slug(run_id)}/{int(trial)}/{slug(case_id)}.html"


def live(run_id: str) -> str:
    return f"live/{slug(run_id)}.html"


def live_data(run_id: str) -> str:
    return f"live/{slug(run_id)}.json"


ROUTES = [
    ("runs", re.compile(r"(?:index\.html)?")),
    ("trend", re.compile(r"trend\.html")),
    ("trend_branch", re.compile(r"trend/(?P<branch>[A-Za-z0-9_-]+)\.html")),
    ("run", re.compile(r"run/(?P<run>[A-Za-z0-9_-]+)\.html")),
    ("report", re.compile(r"run/(?P<run>[A-Za-z0-9_-]+)/report\.html")),
    ("case", re.compile(r"case/(?P<case>[A-Za-z0-9_-]+)\.html")),
    ("compare", re.compile(r"compare/(?P<base>[A-Za-z0-9_-]+)\.\.(?P<head>[A-Za-z0-9_-]+)\.html")),
    ("comparison", re.compile(r"comparison/(?P<record>[A-Za-z0-9_-]+)\.html")),
    ("transcript", re.compile(r"transcript/(?P<run>[A-Za-z0-9_-]+)/(?P<trial>\d{1,6})/(?P<case>[A-Za-z0-9_-]+)\.html")),
    ("live", re.compile(r"live/(?P<run>[A-Za-z0-9_-]+)\.html")),
    ("live_data", re.compile(r"live/(?P<run>[A-Za-z0-9_-]+)\.json")),
]


def route(path: str) -> tuple[str, dict[str, str]] | None:
    """(page, slugs) for a request path relative to the site root, None when no page matches."""
    for name, pattern in ROUTES:
        found = pattern.fullmatch(path)
        if found:
            return name, found.groupdict()
    return None


def up(path: str) -> str:
    """The prefix from a page back to the site root ("" or "../" per folder level)."""
    return "../" * path.count("/")
