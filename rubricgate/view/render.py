"""Jinja2 (autoescaping on) turns each page's data into HTML.

Every page carries a Content-Security-Policy: its one inline script admitted by hash, no other
script, no external request (connect-src 'self' only for the live page's polling). Autoescaping
makes every value text; the CSP is the second line should a template ever mark one safe. Every
value shown has its credential-shaped text masked, as report.html masks it: tool results hold what
the reviewer read, and a key in a reviewed file must not reach a published site.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

from rubricgate.credentials import mask_credentials
from rubricgate.view import urls


def pct(value: float | None) -> str:
    """A rate as the reports write it: 87.5%, or n/a."""
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _location(finding, mapping) -> str:
    from rubricgate.reports.explain import finding_location  # the run page only

    return finding_location(finding, mapping)


# The shortest text a credential pattern matches ("pwd=" and an 8-character value): shorter
# values (most of a page: rates, counts, short ids) skip the masking's six expressions.
SHORTEST_CREDENTIAL = 12


def _shown(value: Any) -> Any:
    """A value as a page shows it: text masked (secrets.mask_credentials); the page's own script
    and style as they are (markup, a str subclass), so their hashes hold."""
    if type(value) is str and len(value) >= SHORTEST_CREDENTIAL:
        return mask_credentials(value)
    return value


def _asset(name: str) -> str:
    return resources.files("rubricgate.view").joinpath("templates", name).read_text(encoding="utf-8")


@cache
def _theme() -> str:
    """The stylesheet report.html uses too (rubricgate/reports/templates/theme.css): one look."""
    return resources.files("rubricgate.reports").joinpath("templates", "theme.css").read_text(encoding="utf-8")


@cache
def environment():
    """The template environment (jinja2 imported here, on the first page rendered)."""
    import jinja2

    from rubricgate.reports.render_cache import bytecode_cache

    env = jinja2.Environment(loader=jinja2.PackageLoader("rubricgate.view", "templates"), finalize=_shown,
                             autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             bytecode_cache=bytecode_cache())
    from rubricgate.reports import story

    env.globals.update(u=urls, pct=pct, slug=urls.slug, location=_location, shown_cases=story.shown_cases,
                       badges={**story.BADGES, "running": "RUNNING"}, glyphs={**story.GLYPHS, "running": "…"},
                       as_json=lambda v: json.dumps(v, ensure_ascii=False, indent=1, default=str))
    return env


def csp(script: str, live: bool = False) -> str:
    """The page's policy: this script by hash, inline styles, nothing fetched but (live) its own data."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    connect = "connect-src 'self'; " if live else ""
    return (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; {connect}"
            "img-src data:; base-uri 'none'; form-action 'none'")


def render(template: str, path: str, *, static: bool = False,
           linkable: Callable[[str, Any], bool] | None = None, can_compare: Callable[[str, str], bool] | None = None,
           **data: Any) -> str:
    """One page at `path` (relative to the site root: links are made relative to it)."""
    from markupsafe import Markup  # comes with jinja2

    script = _asset("view.js")
    live = data.get("live_source") is not None
    context = {"root": urls.up(path), "static": static, "page": template.removesuffix(".html"),
               "csp": csp(script, live), "script": Markup(script), "css": Markup(_theme() + _asset("view.css")),
               "live_source": None,
               "built_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
               "linkable": linkable or (lambda run_id, t: bool(t.transcript)),
               "can_compare": can_compare or (lambda base, head: True), **data}
    return environment().get_template(template).render(context)
