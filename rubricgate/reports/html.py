"""The HTML report: one self-contained file (inline CSS, inline SVG charts, one inline script).

Rendered from Jinja2 templates (templates/report.html.j2) with autoescaping: every value that
came from a transcript or a case is escaped as `e()` escapes it (quotes too, control characters
shown as \\xNN). As a second line of defence a Content-Security-Policy admits only the report's
own script, by hash, so even a value wrongly marked safe could not run injected code. jinja2 is
imported when the first report is rendered, never at a command's start.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Iterator
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path

from rubricgate.credentials import mask_credentials
from rubricgate.errors import GateInputError
from rubricgate.models.results import Summary, TrialResult
from rubricgate.models.transcript import Transcript
from rubricgate.records.files import read_transcript
from rubricgate.reports import explain, html_context, story
from rubricgate.reports.comment import delta_label, interval, k_groups, new_cases_line, pct, plan_lines, signed_pp
from rubricgate.reports.html_context import case_cost, explain_context, page_context
from rubricgate.reports.junit import xml_safe
from rubricgate.reports.replay import trial_failed

MAX_TEXT = 20_000  # a runaway final message should not make the report unusable
MAX_INPUT = 2_000
Bodies = dict[str, str]  # a trial's transcript path (relative to the run dir) -> its rendered body


def e(value: object) -> str:
    """HTML-escape text (quotes too, so it is safe inside attributes); control characters shown as
    \\xNN; credential-shaped text (a key a reviewer quoted) shown as <masked:KIND>."""
    text = str(value)
    return _escaped_short(text) if len(text) <= SHORT_TEXT else _escaped(text)


def _escaped(text: str) -> str:
    return html.escape(xml_safe(mask_credentials(text)), quote=True)


# A report escapes the same short values over and over (tool names, statuses, step numbers, a
# tool's input: 155 values a trial's timeline, most of them repeats): each escaped once a process.
# The escaped text depends on the text alone, so a kept one is the one `_escaped` would give.
# Bounded: at most MEMO_SIZE values of at most SHORT_TEXT characters (~0.5 MB at worst).
SHORT_TEXT = 120
MEMO_SIZE = 2048
_escaped_short = lru_cache(maxsize=MEMO_SIZE)(_escaped)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… [{len(text) - limit} more characters]"


def _asset(name: str) -> str:
    return resources.files("rubricgate.reports").joinpath("templates", name).read_text(encoding="utf-8")


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
            "base-uri 'none'; form-action 'none'")


def _joined(source: str) -> str:
    """The template is written an element or block a line; the page has no newline between them
    (none of its lines is inside a <pre>)."""
    return re.sub(r"(>|%\}|#\})\n(?=<|\{)", r"\1", source)


def _JoinedLines(package: str, folder: str):  # noqa: N802 (a loader class, made when jinja2 is imported)
    import jinja2

    class Loader(jinja2.PackageLoader):
        def get_source(self, environment, template):
            source, filename, uptodate = super().get_source(environment, template)
            return _joined(source), filename, uptodate

    return Loader(package, folder)


@cache
def _environment():
    """The report's template environment: every value escaped by `e()` unless already markup."""
    import jinja2
    from markupsafe import Markup

    from rubricgate.reports.render_cache import bytecode_cache

    env = jinja2.Environment(loader=_JoinedLines("rubricgate.reports", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, bytecode_cache=bytecode_cache(),
                             finalize=lambda v: v if isinstance(v, Markup) else Markup(e(v)))
    env.globals.update(pct=pct, interval=interval, signed_pp=signed_pp, delta_label=delta_label, clip=_clip,
                       as_json=lambda v: json.dumps(v, ensure_ascii=False), location=explain.finding_location,
                       case_cost=case_cost, shown_cases=story.shown_cases, MAX_TEXT=MAX_TEXT, MAX_INPUT=MAX_INPUT,
                       NEXT_STEP_REVERT=explain.NEXT_STEP_REVERT, NEXT_STEP_ACCEPT=explain.NEXT_STEP_ACCEPT)
    return env


def _markup(text: str):
    from markupsafe import Markup

    return Markup(text)


def transcript_body(transcript: Transcript | None) -> str:
    """A trial's tool timeline and final message, as the report inlines them."""
    return str(_environment().get_template("report_parts.html.j2").module.transcript_body(transcript))


def prerender_body(bodies: Bodies, result: TrialResult, transcript: Transcript) -> None:
    """Render a trial's body as soon as its transcript is written, beside the other trials, so
    the run's end renders only the rest of the page. Every failing trial's, and passing ones
    while fewer than INLINE_PASSING bodies are held (no more can be inlined). A body not held
    here is rendered from the transcript file at the end, as without this."""
    if result.transcript and (trial_failed(result) or len(bodies) < html_context.INLINE_PASSING):
        bodies[result.transcript] = transcript_body(transcript)


def _load(run_dir: Path | None, t: TrialResult) -> Transcript | None:
    """The stored transcript, or None when the run dir or file is absent (rendering from a summary alone)."""
    if run_dir is None or not t.transcript or not (run_dir / t.transcript).is_file():
        return None
    return read_transcript(run_dir, t.transcript)


def _charts(s: Summary, history: list[Summary]) -> list:
    """The trend chart as inline SVG (escaped by charts.py), given earlier runs: the one chart a
    report draws. matplotlib is imported only then, so a run's own report never loads it."""
    if not history:
        return []
    from rubricgate.reports import charts

    return [_markup(charts.trend_chart([*history, s]))]


def _body_of(run_dir: Path | None, bodies: Bodies | None):
    """A trial's inlined body: the one rendered during the run, else rendered from its file."""
    def body(t: TrialResult):
        ready = bodies.get(t.transcript) if bodies and t.transcript else None
        return _markup(ready if ready is not None else transcript_body(_load(run_dir, t)))
    return body


def _context(s: Summary, run_dir: Path | None, history: list[Summary], bodies: Bodies | None) -> dict:
    script = _asset("report.js")
    context = page_context(s, _body_of(run_dir, bodies), explain_context(s))
    return {**context, "csp": _csp(script), "script": _markup(script),
            "css": _markup(_asset("theme.css") + _asset("report.css")),
            "new_cases": new_cases_line(s), "who": " · ".join(str(x) for x in (s.agent, s.agent_version, s.model) if x),
            "plan_lines": plan_lines(s), "k_groups": k_groups(s.pass_k or {}),
            "every_rate": ((s.pass_k or {}).get("all_pass") or {}).get("rate"), "charts": _charts(s, history)}


def render_html(summary: Summary, run_dir: Path | None = None, history: list[Summary] | None = None,
                bodies: Bodies | None = None) -> str:
    """The whole report as one HTML document; `bodies`: trial bodies rendered during the run
    (`prerender_body`), the rest read from the run's transcript files."""
    return "".join(html_pieces(summary, run_dir, history, bodies))


PIECE_CHARS = 1 << 16


def html_pieces(summary: Summary, run_dir: Path | None = None, history: list[Summary] | None = None,
                bodies: Bodies | None = None) -> Iterator[str]:
    """`render_html` in pieces of about PIECE_CHARS, so a writer never holds the whole page (a
    2,000-case report is 1.3 MB, held three or four times over while it was joined, scrubbed and
    encoded). A piece ends only just after a '>': every value is escaped, so no '>' is part of
    one, and a secret a writer scrubs piece by piece never spans two pieces."""
    parts = _environment().get_template("report.html.j2").generate(_context(summary, run_dir, history or [], bodies))
    held: list[str] = []
    size = 0
    for part in parts:
        held.append(part)
        size += len(part)
        if size >= PIECE_CHARS and part.endswith(">"):
            yield "".join(held)
            held, size = [], 0
    held.append("\n")
    yield "".join(held)


def write_html(summary: Summary, run_dir: Path, out: Path | None = None, history: list[Summary] | None = None) -> Path:
    """Render and write report.html (default: inside the run dir)."""
    out = out or run_dir / "report.html"
    try:
        out.write_text(render_html(summary, run_dir, history), encoding="utf-8")
    except OSError as exc:
        raise GateInputError(str(out), "", f"cannot write the report: {exc.strerror}",
                             "choose a writable path") from exc
    return out
