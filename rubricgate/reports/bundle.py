"""Write every human-facing report of a run in one call (used by `run`, `report` and `regrade`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.models.results import CaseSpec, Summary
from rubricgate.reports.comment import DEFAULT_ARTIFACT, render_comment
from rubricgate.reports.html import write_html
from rubricgate.reports.junit import render_junit
from rubricgate.reports.replay import write_replay_artifacts
from rubricgate.reports.step_summary import append_step_summary
from rubricgate.runner.environment import scrub

COMMENT_FILE = "comment.md"
JUNIT_FILE = "junit.xml"
HTML_FILE = "report.html"


def _write(path: Path, text: str, secrets: list[str]) -> Path:
    try:
        path.write_text(scrub(text, secrets), encoding="utf-8")
    except OSError as exc:
        raise GateInputError(str(path), "", f"cannot write: {exc.strerror}", "check the reports folder") from exc
    return path


def write_reports(summary: Summary, run_dir: Path, cases: list[CaseSpec] | None = None,
                  history: list[Summary] | None = None, secrets: list[str] | None = None,
                  env: Mapping[str, str] | None = None, artifact: str = DEFAULT_ARTIFACT,
                  repo: Path | None = None) -> list[Path]:
    """Replay artifacts (when the cases are known), report.html, comment.md, junit.xml, step summary."""
    secrets = secrets or []
    written = write_replay_artifacts(run_dir, cases, summary, secrets, repo) if cases is not None else []
    html = write_html(summary, run_dir, run_dir / HTML_FILE, history)
    # The HTML is rendered from scrubbed transcripts; scrub once more in case a reason carries a secret.
    written.append(_write(html, html.read_text(encoding="utf-8"), secrets))
    written.append(_write(run_dir / COMMENT_FILE, render_comment(summary, artifact), secrets))
    written.append(_write(run_dir / JUNIT_FILE, render_junit(summary), secrets))
    step = append_step_summary(summary, env, artifact)
    return written + ([step] if step else [])
