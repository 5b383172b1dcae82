"""The embedded default reviewer: deterministic, offline, and honest about what it did.

It applies the rubric's mechanical rules by really reading the workspace, one step per
phase, and reports through the same transcript model as a real agent CLI: its reads,
globs and greps are tool calls and its verdict is the final text.
"""

from __future__ import annotations

import glob
import json
import posixpath
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rubricgate import __version__
from rubricgate.agents.base import AgentRequest
from rubricgate.agents.skill_checks import CHECKS, SECRET_PATTERNS, Hit, Skill, parse_skill, scan_secrets
from rubricgate.agents.workspace_view import WorkspaceView
from rubricgate.errors import GateInputError
from rubricgate.models.config import AgentConfig, Config
from rubricgate.models.transcript import ToolCall, Transcript, Usage
from rubricgate.suite.rubric import DEFAULT_VOCABULARY, RubricSpec, load_rubric, vocabulary_from

SECRET_REGEX = "|".join(p.pattern for p in SECRET_PATTERNS)
SCANNED_BYTES = 4 << 20  # of each bundled file, for credentials


@dataclass
class _Session:
    """One review in progress: the tool calls made so far and the current step."""

    view: WorkspaceView
    step: int = 0
    calls: list[ToolCall] = field(default_factory=list)

    def next_step(self) -> None:
        self.step += 1

    def read(self, rel: str) -> str | None:
        text = self.view.read_text(rel)
        self._call("Read", "read", {"file_path": rel}, text if text is not None else f"{rel}: no such file",
                   text is not None)
        return text

    def glob(self, pattern: str) -> list[str]:
        found = self.view.glob(pattern)
        self._call("Glob", "glob", {"pattern": pattern}, "\n".join(found) or "no files found", True)
        return found

    def grep(self, rel: str, lines: list[str], cut: str = "") -> list[Hit]:
        """Scan one file's lines for credentials, recorded as a grep with its matching lines (and
        `cut`: how much of the file that was)."""
        hits = scan_secrets(lines)
        shown = "\n".join(f"{rel}:{h.line}:{h.quote}" for h in hits) or "no matches"
        self._call("Grep", "grep", {"pattern": SECRET_REGEX, "path": rel}, f"{shown} {cut}".rstrip(), True)
        return hits

    def _call(self, raw: str, name: str, args: dict, result: str, ok: bool) -> None:
        call = ToolCall(raw_name=raw, name=name, input=args, status="ok" if ok else "error", step=self.step)
        call.keep_result(result)
        self.calls.append(call)


class BuiltinAgent:
    """Deterministic reviewer applying the rubric's mechanical rules."""

    name = "builtin"
    writes_nothing = True  # rubricgate's own code, reading its layers: nothing for the run to watch

    def __init__(self, config: AgentConfig | None = None) -> None:
        self.config = config

    def version(self) -> str | None:
        return f"rubricgate-builtin {__version__}"

    def run(self, request: AgentRequest) -> Transcript:
        """Review the files named in the changed-files list; never raises for review problems."""
        started = time.monotonic()
        session = _Session(WorkspaceView(request.workspace, request.layers))
        final, error = self._review(session, request)
        session.next_step()  # the final answer is a model turn of its own
        return Transcript(agent=self.name, agent_version=self.version(), model="mechanical-rules",
                          steps=session.step, tool_calls=session.calls, final_text=final,
                          usage=Usage(cost_usd=0.0),  # no model call: a known zero, so --max-cost applies
                          termination="completed" if not error else "crashed",
                          exit_code=0 if not error else 1, duration_s=time.monotonic() - started, error=error)

    def _review(self, session: _Session, request: AgentRequest) -> tuple[str, str]:
        rel = lambda p: p.relative_to(request.workspace).as_posix()  # noqa: E731
        session.next_step()
        listing = session.read(rel(request.changed_files_file)) or ""
        paths = [line.strip() for line in listing.splitlines() if line.strip()]
        session.next_step()
        rubric_file = session.view.file(rel(request.rubric_file))
        if session.read(rel(request.rubric_file)) is None or rubric_file is None:
            return "I could not read the rubric, so I cannot review.", "rubric not found in workspace"
        try:
            rubric = load_rubric(rubric_file, rel(request.rubric_file),
                                 request.vocabulary or DEFAULT_VOCABULARY)
        except GateInputError as exc:
            return f"The rubric does not parse: {exc.one_line()}", "rubric does not parse"
        hits = review_files(session, paths, rubric)
        if problem := _unreviewed(session, paths):
            return problem
        return render_final(paths, hits, rubric), ""


def _unreviewed(session: _Session, paths: list[str]) -> tuple[str, str] | None:
    """(final text, error) when a file to review was not read, or none was named: "no rule is
    violated" in what it did not read would be a PASS."""
    if not paths:
        return "The list of files to review is empty, so I cannot review.", "no files to review"
    read = {c.input.get("file_path") for c in session.calls if c.name == "read" and c.status == "ok"}
    if unread := [p for p in paths if p not in read]:
        return (f"I could not read {unread[0]} ({len(unread)} of {len(paths)} file(s) to review), so I cannot "
                "review.", f"{len(unread)} of the files to review could not be read")
    return None


def check_can_review(repo: Path, config: Config) -> None:
    """The builtin reviews by the rubric file's rule table: a repository whose reviewer states its
    rules otherwise (a `command` program's rules file) is one line before any trial, not every
    case graded "rubric does not parse" as a regression."""
    rubric = config.reviewer.rubric
    try:
        load_rubric(repo / rubric, rubric, vocabulary_from(config.tiers))
    except GateInputError as exc:
        raise GateInputError(rubric, "", f"the builtin reviewer cannot read its rule table ({exc.problem})",
                             "run this repository's own reviewer (agent.name in rubricgate.yaml), not --agent "
                             "builtin") from None


def unjudged_rules(kinds: Mapping[str, str]) -> list[str]:
    """Of a rule table (id -> kind), the rules the builtin cannot judge: judgement rules, and
    mechanical ones it has no check for."""
    judged = {*CHECKS, "secret-in-file"}
    return [rid for rid, kind in kinds.items() if kind != "mechanical" or rid not in judged]


def scope_note(kinds: Mapping[str, str]) -> str | None:
    """One line saying which rules the builtin's verdicts leave out (None when it judges them all)."""
    left = unjudged_rules(kinds)
    if not left:
        return None
    shown = ", ".join(left[:8]) + (f" and {len(left) - 8} more" if len(left) > 8 else "")
    return (f"the builtin reviewer judges {len(kinds) - len(left)} of {len(kinds)} rules; it cannot "
            f"judge {shown}: its verdicts say nothing about those (with a model-backed reviewer, a builtin run "
            f"is a smoke test of the suite)")


def review_files(session: _Session, paths: list[str], rubric: RubricSpec) -> list[tuple[str, Hit]]:
    """Phases: read every skill, glob its bundled files, grep all of them for credentials."""
    session.next_step()
    skills = [parse_skill(p, text, session.view.root / posixpath.dirname(p), _beside(session.view, p))
              for p in paths if (text := session.read(p)) is not None]
    hits: list[tuple[str, Hit]] = []
    session.next_step()
    bundled = {s.path: [f for pattern in _bundle_globs(s.path) for f in session.glob(pattern)] for s in skills}
    for skill in skills:
        hits += [(skill.path, h) for rid, check in CHECKS.items() if rid in rubric.rules for h in check(skill)]
    if "secret-in-file" in rubric.rules:
        session.next_step()
        for skill in skills:
            hits += _grep_secrets(session, skill, bundled[skill.path])
    return [(f, h) for f, h in hits if rubric.rules[h.rule].kind == "mechanical"]


def _bundle_globs(skill_path: str) -> list[str]:
    """Everything in the skill's folder; a SKILL.md at the root bundles only its own subfolders."""
    parent = Path(skill_path).parent.as_posix()
    if parent == ".":
        return ["SKILL.md", "references/**/*", "scripts/**/*", "assets/**/*"]
    return [f"{glob.escape(parent)}/**/*"]  # a folder named `gl[1]` is a name, not a pattern


def _beside(view: WorkspaceView, skill_path: str) -> Callable[[str], bool]:
    """Does the workspace hold a file at this path relative to the skill's folder?"""
    return lambda target: view.has_file(posixpath.join(posixpath.dirname(skill_path), target))


def _grep_secrets(session: _Session, skill: Skill, files: list[str]) -> list[tuple[str, Hit]]:
    """Every file of the skill, whatever its name or bytes: a list of suffixes passed over
    `key.pem` and a name ending in a space, and skipping a file with a NUL hid a password put
    after one (UTF-16 text is read as such). At most SCANNED_BYTES of each: the builtin runs in
    rubricgate's own process, and a 30 MB asset took 6 s and 150 MB."""
    out = []
    for rel in files:
        path = session.view.file(rel)
        if path is not None:
            with path.open("rb") as handle:
                data = handle.read(SCANNED_BYTES + 1)
            cut = f"(scanned the first {SCANNED_BYTES >> 20} MB of it)" if len(data) > SCANNED_BYTES else ""
            out += [(rel, h) for h in session.grep(rel, _text_of(data[:SCANNED_BYTES]).splitlines(), cut)]
    return out


def _text_of(data: bytes) -> str:
    """A file's text: UTF-16 by its byte-order mark, else UTF-8 with undecodable bytes replaced."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8", errors="replace")


def render_final(paths: list[str], hits: list[tuple[str, Hit]], rubric: RubricSpec) -> str:
    """Prose summary plus the verdict block, as the verdict contract asks."""
    findings = [{"severity": rubric.rules[h.rule].severity, "rule": h.rule, "file": f, "line": h.line,
                 "quote": h.quote, "issue": h.issue, "fix": h.fix} for f, h in hits]
    tier = rubric.derive_tier(rubric.rules[h.rule].severity for _, h in hits)
    worst = sorted(findings, key=lambda f: rubric.rank(str(f["severity"])))
    summary = (f"{worst[0]['rule']}: {worst[0]['issue']}" if worst else
               f"No mechanical rule is violated in {len(paths)} file(s).")
    verdict = {"tier": tier, "summary": summary, "files_reviewed": paths, "findings": findings}
    lines = [f"Reviewed {len(paths)} file(s) against {len(rubric.rules)} rules "
             f"(mechanical rules only; judgement rules need a model).", ""]
    lines += [f"- {f['severity']} {f['rule']} at {f['file']}:{f['line']}: {f['issue']}" for f in findings]
    return "\n".join(lines + ["", "```json", json.dumps(verdict, indent=2), "```", ""])
