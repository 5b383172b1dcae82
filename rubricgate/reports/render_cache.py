"""What rendering keeps between processes, in a private folder of the user's cache
($XDG_CACHE_HOME/rubricgate, as the trial cache): the templates' compiled code and charts by
content.

Compiling report.html's templates costs every run ~30 ms of CPU (more than rendering a small
report); jinja2's bytecode cache keys each template by its name and a checksum of its source, so
an edited template is compiled again and a stale one is never used. A drawn chart is stored
under the SHA-256 of what it was drawn from (reports/charts.py), so the viewer draws each trend
once, not on every request or every process.

Both hold what pages trust (code jinja2 runs, SVG inlined as is): a folder is used only when it
is a real folder owned by this user and writable by no one else; otherwise nothing is cached
and everything is compiled or drawn afresh.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from rubricgate.runner.cache import CHARTS, TEMPLATES, default_cache_dir

__all__ = ["CHARTS", "TEMPLATES", "bytecode_cache", "private_folder"]


def private_folder(name: str) -> Path | None:
    """The cache's `name` folder, made 0700 on first use; None when it is not safely ours."""
    folder = default_cache_dir() / name
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None
    return folder


def bytecode_cache():
    """jinja2's bytecode cache in the private templates folder, or None (compile every time)."""
    folder = private_folder(TEMPLATES)
    if folder is None:
        return None
    import jinja2

    class KeptIfThere(jinja2.FileSystemBytecodeCache):
        """A compiled template that cannot be stored is compiled again next time, and the page
        is still written. Where the folder went (a copy-only run throws the whole cache folder
        away once its trials end, and compiles its report page after that), it is made again:
        what this process compiled from the package's source is safe to keep, and the next
        copy-only run carries it over its own retirement (runner/run_notes.py)."""

        def dump_bytecode(self, bucket) -> None:
            for _ in range(2):
                try:
                    return super().dump_bytecode(bucket)
                except OSError:
                    if private_folder(TEMPLATES) != folder:
                        return

    return KeptIfThere(str(folder))


def content_key(*parts: str) -> str:
    """The SHA-256 of what a chart is drawn from (its kind, its drawing code's version, its data)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def read_chart(key: str) -> str | None:
    """A chart drawn before from the same content, or None."""
    folder = private_folder(CHARTS)
    if folder is None:
        return None
    try:
        fd = os.open(folder / f"{key}.svg", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "r", encoding="utf-8") as fh:
        if os.fstat(fh.fileno()).st_uid != os.getuid():
            return None
        return fh.read()


def write_chart(key: str, svg: str) -> None:
    """Keep a drawn chart for the next view (best effort: a full disk only costs a redraw)."""
    folder = private_folder(CHARTS)
    if folder is None:
        return
    tmp = folder / f".{key}.{os.getpid()}.tmp"
    try:
        tmp.write_text(svg, encoding="utf-8")
        os.replace(tmp, folder / f"{key}.svg")
    except OSError:
        tmp.unlink(missing_ok=True)
