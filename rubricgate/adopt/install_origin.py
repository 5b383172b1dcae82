"""What the workflows `pip install`: the rubricgate this machine runs, pinned to where it came from.

pip records an installed distribution's origin in its `direct_url.json` (PEP 610): a VCS URL
with the commit it was built from, an archive URL, or a local folder. A release from an index
has none, and the exact version pins it. A local checkout cannot be installed by a CI runner,
so it pins the version too and says so; `--pip` replaces the pin with any requirement that
names rubricgate (a git URL at a commit, another version).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from rubricgate import boundary
from rubricgate.errors import GateInputError

DIST = "rubricgate"
# rubricgate[extras] pinned by ==, ~= or @ URL; a bare name or a lower bound installs whatever the index has.
_REQUIREMENT = re.compile(r"rubricgate(\[[A-Za-z0-9_,\- ]+\])?\s*(===?|~=|@\s*\S)[^\s;]*\S*", re.I)
_URL = re.compile(r"(git\+)?https://\S+", re.I)


@dataclass(frozen=True)
class InstallSpec:
    """A pip requirement for the workflows, and a sentence on where it came from (for init's output)."""

    requirement: str
    origin: str


def detect(dist_name: str = DIST) -> InstallSpec:
    """The requirement that installs the rubricgate running now, from its recorded origin."""
    import rubricgate

    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        return _local(rubricgate.__version__, "an uninstalled source tree (on PYTHONPATH)")
    direct = dist.read_text("direct_url.json")
    if direct is None and _is_source_tree(dist):
        # An .egg-info folder beside the code: a checkout's build metadata seen on sys.path
        # (the current directory), shadowing the installed record of the same checkout.
        return _local(rubricgate.__version__, f"a source tree at {Path(rubricgate.__file__).parent.parent}")
    if direct is None and not _runs_from(dist, Path(rubricgate.__file__)):
        # Metadata without an origin, but not of the code running (a source tree on PYTHONPATH
        # beside some other install): that is no index release.
        return _local(rubricgate.__version__, f"a source tree at {Path(rubricgate.__file__).parent.parent}")
    return from_direct_url(dist.version, direct)


def _is_source_tree(dist: metadata.Distribution) -> bool:
    """Whether `dist` is read from a checkout's `.egg-info` rather than an installed `.dist-info`."""
    return str(getattr(dist, "_path", "")).endswith(".egg-info")


def _runs_from(dist: metadata.Distribution, running: Path) -> bool:
    """Whether `dist`'s installed files include the module that is running."""
    try:
        return Path(str(dist.locate_file("rubricgate/__init__.py"))).resolve() == running.resolve()
    except OSError:
        return False


def from_direct_url(version: str, text: str | None) -> InstallSpec:
    """Map PEP 610's direct_url.json (None: installed from an index) to a pinned requirement."""
    if not text:
        return InstallSpec(f"{DIST}=={version}", f"rubricgate {version} from a package index")
    try:
        data = boundary.loads(text)
    except ValueError:
        return _local(version, "an install whose direct_url.json cannot be read")
    url = data.get("url", "") if isinstance(data, dict) else ""
    vcs = data.get("vcs_info") if isinstance(data, dict) else None
    if isinstance(vcs, dict) and vcs.get("vcs") == "git" and vcs.get("commit_id") and url.startswith("https://"):
        sub = data.get("subdirectory")
        req = f"{DIST} @ git+{url}@{vcs['commit_id']}" + (f"#subdirectory={sub}" if sub else "")
        return InstallSpec(req, f"rubricgate from {url} at commit {vcs['commit_id'][:12]}")
    if isinstance(data.get("archive_info"), dict) and url.startswith("https://"):
        return InstallSpec(f"{DIST} @ {url}", f"rubricgate from the archive {url}")
    return _local(version, f"a local checkout ({url or 'unknown folder'})")


def _local(version: str, where: str) -> InstallSpec:
    return InstallSpec(f"{DIST}=={version}",
                       f"this rubricgate is {where}, which a CI runner cannot install: the workflows pin "
                       f"rubricgate=={version}; to install this checkout's commit instead, run init with "
                       f"--pip 'rubricgate @ git+https://github.com/OWNER/REPO@COMMIT'")


def check_requirement(value: str) -> str:
    """A --pip value: one line, pinned (a version, or a URL), naming rubricgate; else a one-line error."""
    text = value.strip()
    if any(ord(c) < 32 or c in "\"'`$\\" for c in text):
        raise GateInputError("--pip", "requirement", f"{value!r} contains a quote, newline or shell character",
                             "give one requirement such as rubricgate==0.1.0 or 'rubricgate @ git+https://...@COMMIT'")
    if not (_REQUIREMENT.fullmatch(text) or _URL.fullmatch(text)):
        raise GateInputError("--pip", "requirement", f"{value!r} is not a pinned rubricgate requirement",
                             "pin it: rubricgate==X.Y.Z, 'rubricgate @ git+https://...@COMMIT', or an https URL")
    return text
