"""The reviewer's file closure: what the gate treats as "the reviewer".

A reviewer is more than the three files rubricgate.yaml names. Its prompt links a policy, its
skill includes fragments, its TOML template names the rules file it renders. An edit to any of
them changes the reviewer as much as an edit to the prompt does, so `changed`, `compare --base`,
the trial cache's key and the change-aware decision all read one closure, computed here:

  * the prompt, skill and rubric (`reviewer.prompt`, `.skill`, `.rubric`), by the names given;
  * every repository file they reference, transitively: Markdown links and reference
    definitions (CommonMark's destinations: `<with spaces>`, balanced parentheses, percent-encoded,
    `/x` from the repository root; and HTML href/src), Jinja includes (`{% include "x" %}`, `import`, `from`,
    `extends`), `@path` mentions (as Claude Code imports them), `!include path`, paths in code
    spans, the string values of a TOML, YAML or JSON file that name a repository file, and paths
    with a folder in the text itself (a file, never a folder, and not read for more names); a
    name with `*` or `?` that starts with a folder it names outright is a glob: every file it
    matches (at most MAX_GLOBS globs a walk). A name is resolved beside the file that names it
    and from the repository root, and counts at each where a regular file (or a folder: its
    files) is there;
  * what agent CLIs read on their own (suite/agent_context.py): `AGENTS.md`, `CLAUDE.md`,
    `GEMINI.md`, ... in any folder, and the settings and agents folders at the root (`.claude/`,
    `.codex/`, `.github/copilot-instructions.md`, ...), whatever the agent;
  * the files `reviewer.files` matches (globs, `**` spanning folders): what no reference names;
  * the scripts `agent.command` runs from the workspace (`{workspace}/tools/review.py`), and
    every file in a script's folder (a module it imports): a PR that makes one answer PASS
    changes the reviewer as much as an edit to its prompt;
  * every file in the folder of each of the three (a skill is its folder) and in the folder
    holding all three (`reviewer/`), unless that is the repository root; and what those name;
  * each symlink in a folder it takes whole, and what the link names inside the repository
    (its file, or its folder's files): a PR that edits the target, or points the link elsewhere.

Never in it: a path that leaves the repository once its symlinks are followed, `.git`, the
changed-files list (written per case), the suite's tasks and fixtures, the baseline, the
config, the reports and the cache. At most MAX_FILES files; a file larger than
MAX_SCANNED_BYTES, or not text, is in the closure but not read for names.

Each file carries why it is in (`reasons`), which `rubricgate changed` prints.
"""

from __future__ import annotations

import html
import posixpath
import re
import shlex
import tomllib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import yaml

from rubricgate.models.config import Config
from rubricgate.suite.agent_context import context_paths, instruction_names
from rubricgate.suite.config import CONFIG_NAME
from rubricgate.suite.trees import Tree
from rubricgate.suite.yaml_json import loads_json, safe_load_yaml

MAX_FILES = 500
MAX_SCANNED_BYTES = 1 << 20
CACHE_DIR = ".rubricgate-cache"  # the default cache folder inside a repository (runner/cache.py)

# The link text holds no bracket but a balanced pair: `[^\]]*` scanned from every `[` of a run of
# 100,000 to its end (87 s for 200 KB, hours for the 1 MB a file may have). An image's `!` is not
# matched: it changes no destination, and a pattern led by `[` is tried at each `[` alone, where
# `!?\[` was tried at every character (20x the time).
_LINK_TEXT = r"\[(?:[^\[\]\n]|\n(?![ \t]*\n)|\[[^\[\]\n]*\])*\]"  # wraps lines, not paragraphs
_LINKED = "linked from"
_IN_TEXT = "named in the text of"
LINKING = frozenset({_LINKED, "included by", "@-mentioned in"})  # a file the reviewer is told to read
CODE_SPAN = "named in a code span of"
# (pattern, how the naming file refers to the target: "linked from X", ..., the text one of which
# every match holds: a file without it is not scanned, as a pattern not led by a plain character
# is tried at every character). A link's destination is CommonMark's: `<in angle brackets, spaces
# allowed>` or a run without spaces whose parentheses balance (`paren(1).md`); it may be
# percent-encoded, and `/x` is the repository's x.
_REFERENCES = [
    (re.compile(_LINK_TEXT + r"\(\s*<([^<>\n]+)>"), _LINKED, ("](",)),
    (re.compile(_LINK_TEXT + r"\(\s*((?:[^()\s<]|\([^()\s]*\))+)"), _LINKED, ("](",)),
    (re.compile(r"^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*\n?[ \t]*<([^<>\n]+)>", re.MULTILINE), _LINKED, ("]:",)),
    (re.compile(r"^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*\n?[ \t]*([^\s<>]+)", re.MULTILINE), _LINKED, ("]:",)),
    (re.compile(r"""(?:href|src)\s*=\s*(?:["']([^"']+)["']|([^\s"'<>`=]+))"""), _LINKED, ("href", "src")),
    (re.compile(r"""\{%-?\s*(?:include|import|from|extends)\s+["']([^"']+)["']"""), "included by", ("{%",)),
    (re.compile(r"""!include\s+["']?([^\s"']+)"""), "included by", ("!include",)),
    # Claude Code's imports: `@x/y.md`, and relative to the importing file, `@./y.md`, `@../y.md`.
    # The `@` first, what precedes it looked back at from there: led by the look-behind, the
    # pattern was tried at every character, a third of a file's whole scan.
    (re.compile(r"@(?<![\w@./-]@)((?:\.\.?/)*[\w][\w./-]*[\w])"), "@-mentioned in", ("@",)),
    (re.compile(r"`([^`\s]+)`"), CODE_SPAN, ("`",)),
]
# A path in the text itself (`Read guides/prose.md first`, `apply guides/rules/*.md`): a name with
# a folder, started where no word, URL, address or path goes on. Counts only as a file or a glob's
# files, and is not read for more names: prose that names a folder (`the code in src/`) or a bare
# file name (`a skill must not ship a README.md`) names the reviewed artifact or a concept more
# often than the reviewer, and following prose from file to file took in most of a repository.
# Bounded (a name of 255, 32 folders deep): a run of `x/x/x...` a megabyte long is one try at its
# start, not a backtrack over all of it.
_TEXT_PATH = re.compile(r"(?<![\w@./*\\:$~%-])((?:\.\.?/){0,16}[\w*][\w.*-]{0,254}(?:/[\w.*-]{1,255}){1,32})"
                        r"(?![\w/@])")
_BACKSLASH_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # CommonMark's escapable punctuation
_NOT_A_PATH = re.compile(r"\{|\}|\[|\]|\$|://|^mailto:|^[/~-]")
# A name with `*` or `?` is a glob over the tree's files (`docs/rules/*.md`) when it starts with a
# folder it names outright: `**bold**`, `*.md` and `**/*.md` ("review each changed *.md file")
# say which files are reviewed, not which the reviewer is. At most MAX_GLOBS a walk, each matched
# against the whole tree: past them, like past MAX_FILES, the closure is capped.
_GLOB = re.compile(r"[*?]")
_GLOB_LIKE_PATH = re.compile(r"^(?:\.\.?/)*[^*?/]+/")
MAX_GLOBS = 64
_STRUCTURED = {".toml", ".yaml", ".yml", ".json"}


@dataclass
class Closure:
    """The reviewer's files: repository-relative path -> why it is in the closure."""

    reasons: dict[str, str] = field(default_factory=dict)
    capped: bool = False  # MAX_FILES reached: more may be referenced
    # Reached by a link, an include or an @-mention: files the reviewer is told to read (a name in
    # prose or a code span may be one it must not: "never open `.env`").
    linked: set[str] = field(default_factory=set)

    @property
    def files(self) -> list[str]:
        return sorted(self.reasons)

    def __contains__(self, rel: object) -> bool:
        return rel in self.reasons

    def linked_reasons(self) -> dict[str, str]:
        """Each linked file -> why it is in (suite/submodules.py unheld_link_errors reads these)."""
        return {rel: self.reasons.get(rel, "") for rel in self.linked}


def closure_skip(config: Config) -> list[str]:
    """What is never the reviewer: the changed-files list, the suite, baseline, config, reports
    and cache (a prompt that names one of them in a code span does not make it the reviewer's)."""
    paths = [config.reviewer.changed_files, config.suite.tasks, config.suite.fixtures, config.baseline,
             config.reports, CONFIG_NAME, CACHE_DIR, *( [config.cache_dir] if config.cache_dir else [])]
    return [p.strip("/") for p in paths if p and p.strip("/") not in ("", ".")]


def reviewer_closure(tree: Tree, config: Config) -> Closure:
    """The closure of `config`'s reviewer in `tree` (see the module docstring)."""
    walk = _Walk(tree, closure_skip(config))
    r = config.reviewer
    for rel, what in ((r.prompt, "reviewer.prompt"), (r.skill, "reviewer.skill"), (r.rubric, "reviewer.rubric")):
        walk.configured(rel, what)
    for rel in [*command_scripts(config), *_started_files(tree, config)]:
        walk.add(rel, "run by agent.command")
        if folder := posixpath.dirname(rel):  # what it imports or opens beside it (tools/lib.py)
            walk.add(folder, f"in the folder of {rel}, run by agent.command")
    walk.follow()
    for rel in context_paths():  # read by agent CLIs on their own: instructions, settings, agents
        walk.add(rel, "read by agent CLIs on their own (an instructions or settings file)")
    names = instruction_names()  # and in every folder on the way to a file they open, links too
    for rel in [r for r in (*tree.files_under(""), *tree.links_under("")) if posixpath.basename(r) in names]:
        walk.add(rel, f"read by agent CLIs on their own ({posixpath.basename(rel)} in a folder they open files in)")
    for pattern in r.files:
        for rel in tree.glob(pattern):
            walk.add(rel, f"matched by reviewer.files {pattern!r}")
    for folder, why in _folders([r.prompt, r.skill, r.rubric]):
        real = tree.real(folder)
        if real and real[1] == "dir":
            for rel in tree.files_under(real[0]):
                walk.add(rel, why)
            walk.add_links(real[0], why)
    walk.follow()
    return walk.closure


_IN_WORKSPACE = re.compile(r"\{workspace\}/([^\s'\"]+)")


def command_scripts(config: Config) -> list[str]:
    """The repository files `agent.command` runs from the workspace (`{workspace}/X`)."""
    return [rel.strip("/") for part in config.agent.command or [] for rel in _IN_WORKSPACE.findall(part)]


def command_programs(config: Config) -> list[str]:
    """The names by which agent.command may start a repository program relative to its working
    folder, the workspace: any word that is no flag (`python3 tools/review.py`, behind an option's
    value `-X utf8`, a wrapper `timeout 600`, or in a shell's `-c` line), and the module `-m` runs
    (`-m bot`: bot/__main__.py, `-m bot.cli`: bot/cli.py). _started_files keeps the tree's files."""
    words = command_words(config.agent.command or [])
    modules = [words[i + 1].replace(".", "/") for i, a in enumerate(words[:-1]) if a == "-m"]
    named = words + [m + tail for m in modules if m.strip("/") for tail in (".py", "/__main__.py")]
    return [w for w in named if w and "{" not in w and not w.startswith(("/", "-"))]


def command_words(argv: Sequence[str]) -> list[str]:
    """Every word of the command, an argument holding several (`sh -c "python3 tools/bot.py"`)
    split as a shell would: only the first word or argument was read, so a program started behind
    an option's value or a wrapper was left out of the closure and its edits read 'unchanged'."""
    words: list[str] = []
    for arg in argv:
        try:
            words += shlex.split(arg) if any(c.isspace() for c in arg) else [arg]
        except ValueError:  # an unbalanced quote: its words as the shell could not read them
            words += arg.split()
    return words


def _started_files(tree: Tree, config: Config) -> list[str]:
    """The command's program names that are files of the tree (a folder, `.` say, is no program)."""
    return [rel for rel in command_programs(config) if (real := tree.real(rel)) is not None and real[1] == "file"]


def _folders(configured: list[str]) -> Iterator[tuple[str, str]]:
    """The folder of each configured file, then the one holding all three (never the root)."""
    parents = [posixpath.dirname(rel) for rel in configured]
    common = posixpath.commonpath(parents) if all(parents) else ""
    for rel, parent in zip(configured, parents, strict=True):
        if parent:
            yield parent, f"in the folder of {rel}"
    if common:
        yield common, "in the folder holding the prompt, skill and rubric"


class _Walk:
    """Breadth first from the files added, through the names in each."""

    def __init__(self, tree: Tree, skip: list[str]) -> None:
        self.tree, self.skip = tree, skip
        self.closure = Closure()
        self.queue: list[str] = []
        self.folders: set[str] = set()  # folders whose links were followed (a link to `..` loops)
        self.globbed: dict[str, list[str]] = {}
        # MAX_FILES bounds what references bring in; what the reviewer is by configuration or by
        # where it lies (its files, folders, reviewer.files, the CLIs' own files) is never left out.
        self.capping = False

    def configured(self, rel: str, why: str) -> None:
        """A configured file: in the closure by its name (a deleted one too), and by its real path."""
        self.closure.reasons.setdefault(rel, why)
        self.add(rel, why, named=rel)

    def add(self, rel: str, why: str, named: str | None = None, read: bool = True, linked: bool = False) -> None:
        """`rel` (a file, or a folder's files) in the closure; `read`: its names followed too;
        `linked`: reached by a link (Closure.linked)."""
        real = self.tree.real(rel)
        if real is None or self._skipped(real[0]):
            return
        if real[0] != posixpath.normpath(rel):  # reached through links: a PR may point one elsewhere
            for link in self.tree.links_on_way(rel):
                if not self._skipped(link):
                    self.closure.reasons.setdefault(link, f"a link on the way to {real[0]}: {why}")
        paths = [real[0]] if real[1] == "file" else self.tree.files_under(real[0])
        for path in paths:
            if linked and not self._skipped(path):
                self.closure.linked.add(path)
            if self._skipped(path) or (path in self.closure and path != named):
                continue
            if self.capping and len(self.closure.reasons) >= MAX_FILES:
                self.closure.capped = True
                return
            self.closure.reasons.setdefault(path, why if real[1] == "file" else f"{why} (a file of {real[0]})")
            if read:
                self.queue.append(path)
        if real[1] == "dir":
            self.add_links(real[0], why)

    def add_links(self, folder: str, why: str) -> None:
        """The symlinks under a folder taken whole (each folder once: a link to `..` loops)."""
        if folder in self.folders:
            return
        self.folders.add(folder)
        for link in self.tree.links_under(folder):
            self._add_link(link, f"{why} (a link in {folder})")

    def _add_link(self, link: str, why: str) -> None:
        """A symlink in a reviewer folder: the link itself (a PR may point it elsewhere) and what it
        names inside the repository (the reviewer reads that through it)."""
        target = self.tree.real(link)
        if target is None or self._skipped(link) or self._skipped(target[0]) or link in self.closure:
            return
        if self.capping and len(self.closure.reasons) >= MAX_FILES:
            self.closure.capped = True
            return
        self.closure.reasons[link] = why
        self.add(link, f"named by the link {link}")

    def follow(self) -> None:
        self.capping = True
        try:
            self._follow()
        finally:
            self.capping = False

    def _follow(self) -> None:
        while self.queue:
            rel = self.queue.pop(0)
            for name, how in references(rel, self.tree.read(rel, MAX_SCANNED_BYTES)):
                read = how != _IN_TEXT  # prose is not followed from file to file
                for target in named_paths(rel, name):
                    if _GLOB.search(target):
                        for match in self._glob(target):
                            self.add(match, f"matched by the glob {name!r} {how} {rel}", read=read)
                    elif (real := self.tree.real(target)) is not None and (read or real[1] == "file"):
                        self.add(target, f"{how} {rel}", read=read, linked=how in LINKING)

    def _glob(self, pattern: str) -> list[str]:
        """The tree's files a glob matches, each pattern matched once a walk; none past MAX_GLOBS
        patterns, the closure then capped (each is a pass over the whole tree: 20,000 of them in a
        prompt took 45 s a closure)."""
        if pattern not in self.globbed:
            if len(self.globbed) >= MAX_GLOBS:
                self.closure.capped = True
                return []
            self.globbed[pattern] = self.tree.glob(pattern)
        return self.globbed[pattern]

    def _skipped(self, rel: str) -> bool:
        return any(rel == s or rel.startswith(s + "/") for s in self.skip)


def references(rel: str, data: bytes | None, only: frozenset[str] | None = None) -> list[tuple[str, str]]:
    """(name, how it is referred to) for every candidate path named in a file's bytes; `only`:
    those ways alone (suite/reviewed_lfs.py wants what points the reader at a file, and the
    names in prose, half of the scan, it never uses)."""
    if not data or b"\0" in data[:8192] or len(data) >= MAX_SCANNED_BYTES:
        return []
    text = data.decode("utf-8", errors="replace")
    found = [(m.group(m.lastindex or 1), how) for pattern, how, held in _REFERENCES
             if (only is None or how in only) and any(h in text for h in held) for m in pattern.finditer(text)]
    suffix = posixpath.splitext(rel)[1].lower()
    if suffix in _STRUCTURED and only is None:
        found += [(value, "a path value in") for value in _string_values(_parsed(text, suffix))]
    if only is None:
        named = {name for name, _ in found}  # a name also found another way is that way's (it says more)
        found += [(m.group(1), _IN_TEXT) for m in _TEXT_PATH.finditer(text) if m.group(1) not in named]
    out: dict[tuple[str, str], None] = {}  # a link's spellings of one name, once (a list's `in` is quadratic)
    for name, how in found:
        for clean in _link_names(name) if how == _LINKED else [_clean(name)]:
            if clean:
                out[clean, how] = None
    return list(out)


def named_paths(rel: str, name: str) -> list[str]:
    """Where a name found in the file `rel` may point, as tree paths: beside `rel` and from the
    root (a name led by `/` from the root only), each where it is: an agent may read either
    (`rules/strict.md` named in guides/intro.md). None that leaves the tree by its name."""
    beside = [] if name.startswith("/") else [posixpath.join(posixpath.dirname(rel), name)]
    targets = dict.fromkeys(posixpath.normpath(candidate) for candidate in (*beside, name.lstrip("/")))
    return [target for target in targets if target != ".." and not target.startswith("../")]


def _link_names(destination: str) -> list[str | None]:
    """A link's destination as repository paths: as written and percent-decoded (`with%20space`),
    and a name led by `/` as the same name from the repository's root (it stays rooted for the
    walk, which looks for it nowhere else)."""
    plain = html.unescape(_BACKSLASH_ESCAPE.sub(r"\1", destination))  # `paren\(1\).md`, `&#121;`
    names = dict.fromkeys([destination, unquote(destination), plain, unquote(plain)])
    return [("/" + clean) if clean and name.lstrip().startswith("/") else clean
            for name in names for clean in [_clean(name.lstrip().lstrip("/"))]]


def _clean(name: str) -> str | None:
    """A referenced name as a repository path, or None (a URL, an absolute or home path, a
    placeholder or glob, an anchor alone)."""
    name = name.strip().strip("<>\"'").split("#", 1)[0].split("?", 1)[0].rstrip(".,;:")
    if name.endswith(")") and name.count("(") < name.count(")"):  # `(see [x](y))`: the text's own
        name = name[:-1]
    if not name or len(name) > 4096 or "\n" in name or _NOT_A_PATH.search(name):
        return None
    if _GLOB.search(name) and not _GLOB_LIKE_PATH.search(name):
        return None
    return name


def _parsed(text: str, suffix: str) -> Any:
    """A structured file's data, or None when it does not parse (its text was searched anyway)."""
    try:
        if suffix == ".toml":
            return tomllib.loads(text)
        if suffix == ".json":
            return loads_json(text)
        return safe_load_yaml(text, unique_keys=False)
    except (ValueError, yaml.YAMLError):  # TOML, JSON, depth and size errors are ValueErrors
        return None
    except RecursionError:  # tomllib has no depth bound: `a = [[[...` 100,000 deep recurses
        return None


def _string_values(data: Any) -> Iterable[str]:
    """Every short one-line string in the data (keys left out), iteratively."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) <= 4096 and "\n" not in item:
                yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
