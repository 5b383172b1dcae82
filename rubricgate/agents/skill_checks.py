"""The rubric's mechanical rules as small pure checks over a parsed SKILL.md.

Each check returns findings with the rule id, the real 1-based line and the quoted text.
Severity is not decided here: it is read from the rubric, so editing rubric.md changes
the builtin reviewer's verdicts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rubricgate.agents.workspace_view import WorkspaceView
from rubricgate.credentials import CREDENTIAL_PATTERNS
from rubricgate.suite.yaml_json import safe_load_yaml

NAME_FORMAT = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
LINK = re.compile(r"\]\(\s*<?((?:\./)?(?:references|scripts|assets)/[^)\s>#]+)")
SECRET_PATTERNS = CREDENTIAL_PATTERNS  # shared with `record`'s check and the reports' masking


@dataclass
class Skill:
    """A SKILL.md as the reviewer sees it."""

    path: str  # as listed in the changed-files file
    folder: Path  # absolute folder in the workspace
    lines: list[str]
    # Does the workspace hold a file at this path relative to `folder`? (A layered workspace is
    # never a real folder: agents/workspace_view.py.)
    has_file: Callable[[str], bool] = field(default=lambda target: False, repr=False)
    frontmatter: dict | None = None
    fm_end: int = 0  # 1-based line of the closing '---' (0 = no frontmatter)
    fm_error: str = ""

    @property
    def body(self) -> list[tuple[int, str]]:
        return [(i + 1, line) for i, line in enumerate(self.lines) if i + 1 > self.fm_end]

    def key_line(self, key: str) -> tuple[int, str]:
        """Line number and text of a frontmatter key (or the opening fence when absent)."""
        for no in range(2, self.fm_end):
            if re.match(rf"{key}\s*:", self.lines[no - 1]):
                return no, self.lines[no - 1]
        return 1, self.lines[0] if self.lines else ""


@dataclass
class Hit:
    rule: str
    line: int
    quote: str
    issue: str
    fix: str


def parse_skill(path: str, text: str, folder: Path, has_file: Callable[[str], bool] | None = None) -> Skill:
    """Split frontmatter from body; a frontmatter that does not parse is recorded, not raised.
    `has_file` answers for the files beside it (default: those in `folder`, a real folder)."""
    beside = has_file or WorkspaceView(folder).has_file
    skill = Skill(path=path, folder=folder, lines=text.splitlines(), has_file=beside)
    if not skill.lines or skill.lines[0].strip() != "---":
        return skill
    close = next((i for i in range(1, len(skill.lines)) if skill.lines[i].strip() == "---"), None)
    if close is None:
        skill.fm_error = "the frontmatter block is never closed with '---'"
        return skill
    skill.fm_end = close + 1
    try:
        # Bounded: a reviewed skill is anyone's text, and one nested 1,000 levels deep raised
        # RecursionError out of the reviewer.
        data = safe_load_yaml("\n".join(skill.lines[1:close]), unique_keys=False)
    except (yaml.YAMLError, ValueError) as exc:
        skill.fm_error = f"frontmatter is not valid YAML ({str(exc).splitlines()[0]})"
        return skill
    if isinstance(data, dict):
        skill.frontmatter = data
    else:
        skill.fm_error = "frontmatter is not a mapping of keys"
    return skill


def check_frontmatter_present(s: Skill) -> list[Hit]:
    if s.frontmatter is not None:
        return []
    issue = s.fm_error or "SKILL.md does not start with a '---' frontmatter block"
    return [Hit("fm-frontmatter-present", 1, s.lines[0] if s.lines else "", issue + "; the skill cannot be loaded.",
                "Start the file with '---', then 'name: <folder-name>' and "
                "'description: <what and when>', then '---'.")]


def _text(s: Skill, key: str) -> str:
    value = (s.frontmatter or {}).get(key)
    return "" if value is None else str(value).strip()


def check_name_required(s: Skill) -> list[Hit]:
    if s.frontmatter is None or _text(s, "name"):
        return []
    line, quote = s.key_line("name")
    return [Hit("fm-name-required", line, quote, "Frontmatter has no name, so the skill cannot be addressed.",
                f"Add 'name: {s.folder.name}' to the frontmatter.")]


def check_name_format(s: Skill) -> list[Hit]:
    name = _text(s, "name")
    if s.frontmatter is None or not name or (len(name) <= 64 and NAME_FORMAT.fullmatch(name)):
        return []
    line, quote = s.key_line("name")
    fixed = re.sub(r"-+", "-", re.sub(r"[^a-z0-9]+", "-", name.lower())).strip("-")[:64] or s.folder.name
    return [Hit("fm-name-format", line, quote,
                f"Name {name!r} is not 1-64 lowercase letters, digits and single hyphens; loaders reject it.",
                f"Rename it to 'name: {fixed}' (and the folder to match).")]


def check_name_matches_folder(s: Skill) -> list[Hit]:
    name = _text(s, "name")
    # A SKILL.md at the repository root has no folder of its own to match.
    if s.frontmatter is None or not name or name == s.folder.name or "/" not in s.path:
        return []
    line, quote = s.key_line("name")
    return [Hit("fm-name-matches-folder", line, quote,
                f"Name {name!r} differs from its folder {s.folder.name!r}, so the skill is registered under two names.",
                f"Set 'name: {s.folder.name}' or rename the folder to {name}.")]


def check_description_required(s: Skill) -> list[Hit]:
    if s.frontmatter is None or _text(s, "description"):
        return []
    line, quote = s.key_line("description")
    if line == 1:
        line, quote = s.key_line("name")
    return [Hit("fm-description-required", line, quote,
                "Frontmatter has no description, so the skill can never be triggered.",
                "Add 'description:' stating what the skill does and when to use it, with the words a user would say.")]


def check_description_length(s: Skill) -> list[Hit]:
    desc = _text(s, "description")
    if len(desc) <= 1024:
        return []
    line, quote = s.key_line("description")
    return [Hit("fm-description-length", line, quote[:120],
                f"Description is {len(desc)} characters (limit 1024); loaders truncate or reject it.",
                "Cut the description to what the skill does and when to use it; move detail into the body.")]


def check_body_length(s: Skill) -> list[Hit]:
    body = s.body
    if s.frontmatter is None or len(body) <= 500:
        return []
    line, text = body[500]
    return [Hit("body-length", line, text, f"Body is {len(body)} lines (limit 500); it crowds the context window.",
                "Move the reference material below line 500 into references/<topic>.md and link to it.")]


def check_body_present(s: Skill) -> list[Hit]:
    if s.frontmatter is None or sum(1 for _, t in s.body if t.strip()) >= 3:
        return []
    line = s.fm_end or 1
    return [Hit("body-present", line, s.lines[line - 1] if s.lines else "",
                "The skill has almost no instructions after the frontmatter, so an agent has nothing to follow.",
                "Add the numbered steps the agent should take, the files it reads and the output it produces.")]


def check_links(s: Skill) -> list[Hit]:
    hits = []
    for no, text in enumerate(s.lines, start=1):
        for target in LINK.findall(text):
            if not s.has_file(target):
                hits.append(Hit("refs-link-broken", no, text.strip(),
                                f"Link to {target} points at a file that does not exist beside SKILL.md.",
                                f"Create {target} or correct the link to an existing file."))
    return hits


def scan_secrets(lines: list[str]) -> list[Hit]:
    """Lines that hold a credential in clear (used for SKILL.md and its references)."""
    hits = []
    for no, text in enumerate(lines, start=1):
        if any(p.search(text) for p in SECRET_PATTERNS):
            hits.append(Hit("secret-in-file", no, text.strip(),
                            "A credential is written in clear in the skill; anyone who can read the repo can use it.",
                            "Remove it, rotate it, and read it from an environment variable or secret manager."))
    return hits


CHECKS: dict[str, Callable[[Skill], list[Hit]]] = {
    "fm-frontmatter-present": check_frontmatter_present,
    "fm-name-required": check_name_required,
    "fm-name-format": check_name_format,
    "fm-name-matches-folder": check_name_matches_folder,
    "fm-description-required": check_description_required,
    "fm-description-length": check_description_length,
    "body-length": check_body_length,
    "body-present": check_body_present,
    "refs-link-broken": check_links,
}
