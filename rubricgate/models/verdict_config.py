"""rubricgate.yaml `verdict:`: how the reviewer's own answer becomes a tier and findings.

Unset (or `format: contract`), the answer ends with rubricgate's JSON verdict (graders/contract.py).
Otherwise the reviewer keeps its own format and rubricgate reads it (graders/extract.py):

  yaml / json  the closed fenced ```yaml (```json) blocks, else the whole answer; `findings.path`
               names the list of findings, `tier.path` the verdict (optional: unset, the tier is
               derived from the findings' severities); blocks stating different verdicts are
               invalid, repeated ones with one verdict are that verdict;
  markdown     every header matching `headers` is a finding, its text the title;
  hook         a Python function `file.py:function` in the repository, (answer) -> dict or None.

A finding's title is matched against `rules` (first match wins): each row names the rule, its
severity (unless the rubric's table gives it) and where the reviewer's files state it
(`statement`, a regex; default: `match`), so an edit to that statement is a named rule change.
"""

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from rubricgate.models.base import StrictModel, Tier
from rubricgate.models.bounds import MAX_ID_CHARS

_PATTERN_CHARS = 500


def verdict_word(text: str) -> str:
    """A verdict word as `tier.map` looks it up: case and the spaces around and between its words
    do not count (`Request  changes` is `request changes`)."""
    return " ".join(text.split()).casefold()


def _regex(value: str | None, what: str) -> str | None:
    if value is None:
        return value
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"{what} {value!r} is not a regular expression: {exc} (fix: correct the pattern)") from None
    return value


class VerdictRule(StrictModel):
    """One rule of the reviewer: the findings it names (by title) and where its files state it."""

    id: str = Field(max_length=MAX_ID_CHARS)
    """The rubric rule id findings matching this row are counted as (kebab-case)."""
    match: str = Field(min_length=1, max_length=_PATTERN_CHARS)
    """Regex over a finding's title."""
    severity: str | None = Field(default=None, min_length=1, max_length=40)
    """The rule's severity (unset: the rubric's table gives it; every row or none)."""
    kind: Literal["mechanical", "judgement"] = "judgement"
    """mechanical or judgement, as in a rubric table."""
    statement: str | None = Field(default=None, min_length=1, max_length=_PATTERN_CHARS)
    """A regex locating where the reviewer's files state the rule (default: `match`), so an edit to
    it is a named rule change."""

    @field_validator("id")
    @classmethod
    def _kebab(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", v):
            raise ValueError(f"rule id {v!r} is not kebab-case (fix: use ids like sql-injection)")
        return v

    @field_validator("match", "statement")
    @classmethod
    def _patterns(cls, v: str | None) -> str | None:
        """A pattern that matches nothing at all (`.*`, an empty branch `sql injection|`) matches
        every title, or every line of the reviewer's files: each finding would be this rule."""
        if v is not None and _regex(v, "pattern") and re.search(v, ""):
            raise ValueError(f"pattern {v!r} matches an empty text, so it names every finding (an empty "
                             "branch of |, or a pattern of optional parts) (fix: make it name the problem)")
        return v

    def statement_pattern(self) -> str:
        """Where the reviewer's files state the rule: `statement`, else the title pattern."""
        return self.statement or self.match


class TierField(StrictModel):
    """Where the answer states its verdict: a path (yaml/json) or a regex's first group, and
    what each value means. Matched case-insensitively, surrounding spaces ignored."""

    path: str | None = Field(default=None, min_length=1, max_length=200)
    """A dotted path to the verdict in a yaml or json answer."""
    pattern: str | None = Field(default=None, min_length=1, max_length=_PATTERN_CHARS)
    """A regex over the answer whose first group (else the whole match) is the verdict."""
    map: dict[str, Tier] = Field(min_length=1, max_length=50)
    """The answer's verdict words -> tiers (PASS, WARN, BLOCK)."""

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, v: str | None) -> str | None:
        return _regex(v, "tier.pattern")

    @field_validator("map", mode="before")
    @classmethod
    def _words_as_written(cls, v: object) -> object:
        """A word YAML reads as another type (`yes`, `no`, `on`, `off` unquoted are booleans; `1`
        a number) said as such: "Input should be a valid string" named neither the word nor why."""
        for key in v if isinstance(v, dict) else ():
            if not isinstance(key, str):
                kind = "a boolean (YAML reads yes, no, on and off unquoted so)" if isinstance(key, bool) else "a number"
                raise ValueError(f"the key {key!r} is {kind}, not a verdict word (fix: quote the word, 'yes': PASS)")
        return v

    @field_validator("map")
    @classmethod
    def _one_entry_a_word(cls, v: dict[str, Tier]) -> dict[str, Tier]:
        """An answer's word is looked up case-insensitively, spaces ignored (graders/extract.py), so
        two keys of one word would leave the tier to their order in the file: refused instead."""
        seen: dict[str, str] = {}
        for key in v:
            first = seen.setdefault(verdict_word(key), key)
            if first != key:
                raise ValueError(f"{first!r} and {key!r} are one verdict word (read case-insensitively, spaces "
                                 "ignored) (fix: keep one of them)")
        return v

    @model_validator(mode="after")
    def _one_source(self) -> "TierField":
        if (self.path is None) == (self.pattern is None):
            raise ValueError("give exactly one of path and pattern (fix: path for yaml/json, pattern for any answer)")
        return self


class FindingFields(StrictModel):
    """Where the findings are (yaml/json) and which field of each holds what."""

    path: str = Field(default="findings", max_length=200)
    """Where the list of findings is, a dotted path; "" when the answer is the list itself."""
    absent: Literal["invalid", "none"] = "invalid"
    """An answer with nothing at `path`: invalid (an answer of another shape, an error message read
    as YAML, is never "no findings"), or none: no findings, for a reviewer that answers in a decision
    alone or leaves an empty list out (`{"decision": "approve"}`); needs `tier:`, whose stated
    verdict shows the answer's shape."""
    title: str = "title"
    """The field holding the free text matched against `rules`."""
    rule: str | None = None
    """A field holding a rule id directly (used before the title)."""
    severity: str | None = None
    """A field holding the severity (a rule's own severity wins)."""
    file: str | None = "file"
    """A field holding the finding's file."""
    line: str | None = "line"
    """A field holding the finding's line."""
    issue: str | None = "issue"
    """A field holding what is wrong."""
    quote: str | None = None
    """A field holding the quoted text."""
    fix: str | None = None
    """A field holding the suggested fix."""


class VerdictConfig(StrictModel):
    format: Literal["contract", "yaml", "json", "markdown", "hook"] = "contract"
    """contract: rubricgate's JSON verdict; yaml, json or markdown: the reviewer's own answer read
    as such; hook: a Python function reads it."""
    tier: TierField | None = None
    """Where the answer states its verdict; unset: derived from the findings (the rubric's tier rules)."""
    findings: FindingFields = Field(default_factory=FindingFields)
    """Where the findings are in a yaml or json answer, and which field of each holds what."""
    headers: str = Field(default=r"^#{1,6}[ \t]+(.+?)[ \t#]*$", max_length=_PATTERN_CHARS)
    """format: markdown: a regex over the answer's lines; each match is a finding, its first group the title."""
    rules: list[VerdictRule] = Field(default=[], max_length=1000)
    """Rows naming the rule each finding's title is (first match wins)."""
    unmatched: Literal["warn", "ignore"] = "warn"
    """A finding no rule names: a verdict warning, or nothing."""
    escalate: bool = True
    """Findings that derive a higher tier than the answer states raise it (true: the tier a gate
    acting on the findings applies); false: the stated tier is graded, as a pipeline acting on the
    reviewer's own decision (an approve) does, and the findings' tier is a verdict warning."""
    hook: str | None = Field(default=None, max_length=500)
    """format: hook: the function that reads the answer, "path/in/repo.py:function" (answer -> dict or None)."""

    def doubts(self) -> list[str]:
        """What validates but is likely a slip: a tier map sending every word to one tier (a
        misspelt `request_changes: PASS`) cannot tell one stated verdict from another."""
        tiers = set(self.tier.map.values()) if self.tier is not None else set()
        if len(tiers) == 1 and self.tier is not None and len(self.tier.map) > 1:
            return [f"verdict.tier.map sends every word to {tiers.pop()}: the stated verdict tells no answer "
                    "from another (a misspelt tier?)"]
        return []

    @field_validator("headers")
    @classmethod
    def _headers(cls, v: str) -> str:
        return _regex(v, "headers") or v

    @model_validator(mode="after")
    def _consistent(self) -> "VerdictConfig":
        if (self.format == "hook") != (self.hook is not None):
            raise ValueError("format: hook goes with hook: FILE.py:FUNCTION, and only with it "
                             "(fix: set both, or neither)")
        if self.hook is not None and not re.fullmatch(r"[^:]+\.py:[A-Za-z_][A-Za-z0-9_]*", self.hook):
            raise ValueError(f"hook {self.hook!r} is not FILE.py:FUNCTION (fix: e.g. reviewer/verdict.py:extract)")
        if self.format == "contract" and self.tier is not None:
            raise ValueError("tier: is read from the reviewer's own format (fix: set format, or drop tier)")
        if self.findings.absent == "none" and (self.tier is None or self.format not in ("yaml", "json")):
            # without a stated verdict, any text that parses (an error message) would read as "no findings"
            raise ValueError("findings.absent: none needs tier: in a yaml or json answer, whose stated verdict "
                             "shows the answer's shape (fix: add tier: {path: ..., map: ...}, or drop absent)")
        self._fits_format()
        ids = [r.id for r in self.rules]
        twice = next((i for i in ids if ids.count(i) > 1), None)
        if twice:
            raise ValueError(f"rule {twice!r} is listed twice (fix: one row per rule; `match` is a regex: use |)")
        given = {r.severity is not None for r in self.rules}
        if len(given) > 1:
            raise ValueError("some rules give a severity and some do not (fix: give every rule its severity, or "
                             "none when the rubric's table gives them)")
        return self

    def _fits_format(self) -> None:
        """A key the format never reads would leave every answer without a verdict (a markdown
        answer has no tier.path) or be ignored unseen (a hook returns its own tier)."""
        if self.format == "markdown" and self.tier is not None and self.tier.path is not None:
            raise ValueError("tier.path names a key of a yaml or json answer; a markdown answer has none "
                             "(fix: tier.pattern, a regex over the answer's lines, with one group)")
        if self.format == "hook" and self.tier is not None:
            raise ValueError("tier: is not read under format: hook: the hook returns the tier "
                             "(fix: drop tier, and return {tier: ...} from the hook)")

    def defines_rules(self) -> bool:
        """The rules and severities live here (not in a rubric table): every row has a severity."""
        return bool(self.rules) and all(r.severity is not None for r in self.rules)
