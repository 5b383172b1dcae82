"""Fixture skeletons: a SKILL.md that violates exactly one rule, with its expect.yaml.

For the rules the builtin reviewer checks (rubricgate/agents/skill_checks.py) the violation is
written out; for any other rule (a judgement rule, a rule new to the team's rubric) the skill is
clean and carries a marked place where the maintainer writes the violation. The expected tier is
what the rubric derives from one finding of the rule's severity. Skeletons are written into a
folder for review (`rubricgate coverage --suggest DIR`), never into the suite.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from rubricgate.errors import GateInputError
from rubricgate.suite.rubric import RubricSpec, Rule

DESCRIPTION = ("Summarises a warehouse table's row counts by day. Use when the user asks "
               "\"how many rows landed yesterday\" or \"is the orders table complete\".")
STEPS = ["# Daily row counts", "", "1. Read `references/tables.md` for the table's date column.",
         "2. Run `SELECT date_col, COUNT(*) FROM <table> GROUP BY 1 ORDER BY 1 DESC LIMIT 7` with the SQL tool.",
         "3. Write the counts as a markdown table and flag any day below half the weekly median."]


@dataclass(frozen=True)
class Skeleton:
    """A fixture folder to write: <tier>/<name>/SKILL.md and expect.yaml (+ extra files)."""

    rule: str
    tier: str  # pass | warn | block
    name: str
    files: dict[str, str]  # relative to the fixture folder
    written_out: bool  # the violation is in the text (False: a marked place to write it)


def _skill(name: str, *, fm: list[str] | None = None, body: list[str] | None = None) -> str:
    front = fm if fm is not None else [f"name: {name}", f"description: {DESCRIPTION}"]
    return "\n".join(["---", *front, "---", *(STEPS if body is None else body)]) + "\n"


def _mechanical(rid: str, name: str) -> dict[str, str] | None:
    """The SKILL.md (and files) violating one rule the builtin checks, or None for another rule."""
    desc = f"description: {DESCRIPTION}"
    texts = {
        "fm-frontmatter-present": "\n".join(STEPS) + "\n",
        "fm-name-required": _skill(name, fm=[desc]),
        "fm-name-format": _skill(name, fm=[f"name: {name}", desc]),  # the folder name itself is bad
        "fm-name-matches-folder": _skill(name, fm=[f"name: {name}-renamed", desc]),
        "fm-description-required": _skill(name, fm=[f"name: {name}"]),
        "fm-description-length": _skill(name, fm=[f"name: {name}", f"description: {DESCRIPTION} " + "x" * 1030]),
        "body-length": _skill(name, body=STEPS + [f"- note {i}: keep the counts per day." for i in range(500)]),
        "body-present": _skill(name, body=["# Daily row counts"]),
        "refs-link-broken": _skill(name, body=STEPS + ["", "See [the table list](references/missing-tables.md)."]),
        "secret-in-file": _skill(name, body=STEPS + ["",
                                                     "Connect with `password: Hunter2-prod-9x` as the loader user."]),
    }
    return {"SKILL.md": texts[rid]} if rid in texts else None


# Marks where a reviewer of the skeleton writes the violation by hand; `validate` refuses a
# fixture that still holds it (suite/checks.py), so an unfinished skeleton never becomes a case.
VIOLATION_MARKER = "rubricgate: write the violation here"


def _name(rid: str) -> str:
    # fm-name-format needs a folder name that breaks the format, and a name equal to it.
    return f"{rid}--example" if rid == "fm-name-format" else f"{rid}-example"


def _patch_place(rule: Rule) -> str:
    """A patch with one added line marking where to write a change that violates the rule."""
    return ("diff --git a/src/example.py b/src/example.py\n--- a/src/example.py\n+++ b/src/example.py\n"
            "@@ -1,1 +1,2 @@\n def handler(request):\n"
            f"+    # {VIOLATION_MARKER}: replace this line with a change that violates {rule.id} "
            f"and nothing else: {rule.text or rule.id}\n")


def tier_for(rule: Rule, rubric: RubricSpec) -> str:
    """The tier one finding of the rule makes under the rubric's derivation."""
    return rubric.derive_tier([rule.severity]).lower()


def skeleton(rule: Rule, rubric: RubricSpec, layout: str = "skills") -> Skeleton:
    """A fixture for the rule: written out for the builtin's rules, a marked place otherwise (under
    suite.layout files, a change.diff whose added line is where the violation goes)."""
    name = _name(rule.id)
    files = _mechanical(rule.id, name) if layout == "skills" else None
    written = files is not None
    if layout != "skills":
        files = {"change.diff": _patch_place(rule)}
    elif files is None:
        place = (f"<!-- {VIOLATION_MARKER}: rewrite one part of this skill so it violates {rule.id} "
                 f"and nothing else: {rule.text} -->")
        files = {"SKILL.md": _skill(name, body=STEPS + ["", place])}
    why = f"protects {rule.id} ({rule.severity}): a rubric edit to it must fail a case"
    expect = {"why": why, "rules": [rule.id]}
    files["expect.yaml"] = yaml.safe_dump(expect, sort_keys=False, width=100)
    return Skeleton(rule.id, tier_for(rule, rubric), name, files, written)


def write_skeletons(out: Path, skeletons: list[Skeleton], forbidden: list[Path],
                    keep_edited: bool = False) -> list[Path]:
    """Write each skeleton to out/<tier>/<name>/; refuse a folder inside the suite or the reviewer
    (`forbidden`), and a link on the way (out itself, or a folder or file below it): it would put
    the skeletons somewhere else, possibly back into the suite. A skeleton file edited since it
    was written is refused, or with `keep_edited` (mutate, whose report must still be written) kept."""
    refuse_inside(out, forbidden, "--suggest",
                  "write skeletons to a folder outside them, review them, then move them in")
    edited = _edited_files(out, skeletons)
    if edited and not keep_edited:  # before any write: a refused run leaves every file as it was
        raise GateInputError(str(edited[0]), "", "exists and differs from its skeleton (edited since)",
                             "move it into the suite or away, or give --suggest another folder")
    written = []
    for sk in skeletons:
        folder = out / sk.tier / sk.name
        given = [Path(*out.parts[:n]) for n in range(1, len(out.parts))]  # the folders on the way, as given
        for path in [*given, out, out / sk.tier, folder, *(folder / rel for rel in sk.files)]:
            if path.is_symlink():
                raise GateInputError("--suggest", "", f"{path} is a link",
                                     "give a plain folder (skeletons are never written through a link)")
        folder.mkdir(parents=True, exist_ok=True)
        for rel, text in sk.files.items():
            if folder / rel not in edited:
                (folder / rel).write_text(text, encoding="utf-8")
        written.append(folder)
    return written


def refuse_inside(out: Path, forbidden: list[Path], flag: str, fix: str) -> None:
    """`out` is none of the `forbidden` folders (the suite, the reviewer) and inside none of them:
    a skeleton there would become a case. Else a one-line GateInputError on `flag`."""
    target = out.resolve()
    for folder in forbidden:
        root = folder.resolve()
        if target == root or root in target.parents:
            raise GateInputError(flag, "", f"{out} is inside the suite or the reviewer ({folder})", fix)


def _edited_files(out: Path, skeletons: list[Skeleton]) -> list[Path]:
    """Skeleton files already there with other text: the user's work (the violation written in,
    say), which writing the skeleton again would lose."""
    return [out / sk.tier / sk.name / rel for sk in skeletons for rel, text in sk.files.items()
            if _edited(out / sk.tier / sk.name / rel, text)]


def _edited(path: Path, text: str) -> bool:
    """Is there a file at `path` (links are refused before) whose text is not the skeleton's?"""
    return path.is_file() and not path.is_symlink() and path.read_text(encoding="utf-8", errors="replace") != text
