"""Every repository path a doc or a comment names exists (issue 42): a file that moved (runner/ to
isolation/), a test renamed, a template renamed, or a document that is not in the repository
(design.md) makes this fail with the place that names it.

What counts as a repository path: in README.md and docs/*.md, a path under rubricgate/, tests/,
bench/, docs/ or .ci/, or a module path relative to the package (`runner/scheduler.py`); in the
package's comments and docstrings also a path relative to the module's own folder
(`templates/...`), and a bare `name.md` (a docs page); in the tests' and benchmarks' comments and
docstrings, module paths. Paths of a user's repository in examples (`.github/review-prompt.md`,
`skills/x/SKILL.md`, `reports/<run>/...`) and the files a test writes are not checked.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "rubricgate"
ROOTS = ("rubricgate", "tests", "bench", "docs", ".ci")
SUBPACKAGES = tuple(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
_PATH = re.compile(r"(?<![\w./<>{}$*-])((?:\.?[\w-]+/)+[\w.-]*\w\.(?:py|md|sh|json|toml|yml|yaml|html|j2|css|js|txt))"
                   r"(?![\w/]|\.\w)")
_BARE_DOC = re.compile(r"(?<![\w./-])([a-z][a-z-]*\.md)\b")
# Names of files a run or a user's repository has, not pages of this one.
NOT_DOCS = {"comment.md", "rubric.md"}


def _doc_lines() -> Iterator[tuple[Path, int, str]]:
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            yield path, n, line


def _comment_lines() -> Iterator[tuple[Path, int, str]]:
    """Comments and docstrings (string literals that stand as statements) of every module."""
    for path in [*sorted(PACKAGE.rglob("*.py")), *sorted((ROOT / "tests").rglob("*.py")),
                 *sorted((ROOT / "bench").glob("*.py"))]:
        source = path.read_text(encoding="utf-8")
        depth, prev = 0, tokenize.NEWLINE
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            # A docstring is a string standing as a statement: outside brackets, first on its line.
            docstring = tok.type == tokenize.STRING and depth == 0 and prev in _STATEMENT_START
            if tok.type == tokenize.COMMENT or docstring:
                for i, line in enumerate(tok.string.splitlines()):
                    yield path, tok.start[0] + i, line
            if tok.type == tokenize.OP:
                depth += (tok.string in "([{") - (tok.string in ")]}")
            if tok.type != tokenize.COMMENT:
                prev = tok.type


_STATEMENT_START = (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)


def _exists(ref: str, where: Path) -> bool:
    candidates = [ROOT / ref, PACKAGE / ref]
    if where.suffix == ".py":
        candidates.append(where.parent / ref)
    return any(c.exists() for c in candidates)


def _probe(where: Path) -> bool:
    return where.name == Path(__file__).name  # this module names missing paths on purpose


def _checked(ref: str, where: Path) -> bool:
    if not where.is_relative_to(PACKAGE) and where.suffix == ".py" and not ref.endswith(".py"):
        return False  # a test's or a benchmark's data files live in the repositories it makes
    first = ref.split("/", 1)[0]
    if first in ROOTS:
        return True
    if first in SUBPACKAGES:  # modules only: `reports/` is also the runs' folder
        return ref.endswith(".py")
    return where.suffix == ".py" and (where.parent / first).is_dir()


def missing_paths(lines=None) -> list[str]:
    """Every path a doc or comment names that does not exist (`lines`: (file, line number, text),
    by default every doc's lines and every comment of the code)."""
    found = []
    if lines is None:
        lines = [*_doc_lines(), *(c for c in _comment_lines() if not _probe(c[0]))]
    for where, n, line in lines:
        for ref in _PATH.findall(line):
            if _checked(ref, where) and not _exists(ref, where):
                found.append(f"{where.relative_to(ROOT)}:{n}: {ref}")
        if where.is_relative_to(PACKAGE):
            for name in _BARE_DOC.findall(line):
                if name not in NOT_DOCS and not (ROOT / "docs" / name).exists() and not (ROOT / name).exists():
                    found.append(f"{where.relative_to(ROOT)}:{n}: {name}")
    return found


def test_every_repository_path_a_doc_or_comment_names_exists() -> None:
    assert missing_paths() == []


def test_the_check_sees_a_moved_module_and_a_missing_document(tmp_path, monkeypatch) -> None:
    """The failure path first: a comment naming runner/streams.py (now isolation/streams.py) and
    design.md is reported with its place."""
    # A comment line of a module in the package, not a file written there: the tests that read
    # the package's files (this module's other test among them) run beside this one.
    module = PACKAGE / "runner" / "zz_doc_paths_probe.py"
    found = missing_paths([(module, 1, "# see runner/streams.py and design.md")])
    assert "rubricgate/runner/zz_doc_paths_probe.py:1: runner/streams.py" in found
    assert "rubricgate/runner/zz_doc_paths_probe.py:1: design.md" in found
