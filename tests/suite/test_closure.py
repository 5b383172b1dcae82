"""suite/closure.py: the reviewer is every file its prompt, skill and rubric reference, transitively."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rubricgate.models.config import Config
from rubricgate.suite import closure as closure_module
from rubricgate.suite.closure import reviewer_closure
from rubricgate.suite.trees import CommitTree, WorkTree, glob_regex

CONFIG = Config()
ROOT = Path(__file__).resolve().parents[2]
PROMPT, SKILL, RUBRIC = CONFIG.reviewer.prompt, CONFIG.reviewer.skill, CONFIG.reviewer.rubric


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    base = {PROMPT: "Review.\n", SKILL: "---\nname: evaluator\n---\n", RUBRIC: "| id | severity |\n"}
    for rel, text in {**base, **files}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return repo


def _closure(repo: Path, config: Config = CONFIG):
    return reviewer_closure(WorkTree(repo), config)


# -- what must never be in it (failure paths first) ---------------------------------------------

def test_a_name_that_leaves_the_repository_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("not the reviewer's")
    repo = _repo(tmp_path, {PROMPT: "See [up](../../../secret.md), `/etc/passwd`, @~/.bashrc.\n"})
    (repo / "docs").mkdir()
    (repo / "docs" / "escape.md").symlink_to(outside)  # inside by name, outside once resolved
    (repo / PROMPT).write_text("See [up](../../../secret.md), `/etc/passwd`, [link](../../docs/escape.md).\n")
    got = _closure(repo)
    assert all(not f.startswith("..") and "secret" not in f and "passwd" not in f for f in got.files)
    assert "docs/escape.md" not in got.files


def test_git_the_suite_the_baseline_the_config_and_the_changed_list_are_never_the_reviewer(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {PROMPT: "Read `rubricgate.yaml`, `baseline.json`, [a task](../../evals/tasks/t.yaml), "
                                    "`fixtures/pass/a/SKILL.md`, `.git/config` and `reviewer/.changed-skills.txt`.\n",
                            "rubricgate.yaml": "x: 1\n", "baseline.json": "{}\n", "evals/tasks/t.yaml": "id: t\n",
                            "fixtures/pass/a/SKILL.md": "s\n", ".git/config": "[core]\n",
                            "reviewer/.changed-skills.txt": "x\n"})
    assert _closure(repo).files == sorted([PROMPT, SKILL, RUBRIC])


def test_words_in_code_spans_that_name_no_file_are_not_paths(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {PROMPT: "Rules: `fm-description-required`, `{placeholder}`, `*.md`, [site](https://x.io/a.md).\n"})
    assert _closure(repo).files == sorted([PROMPT, SKILL, RUBRIC])


# -- every kind of reference ------------------------------------------------------------------

KINDS = [
    ("Follow [the policy](policy.md#strict \"title\").", "linked from"),
    ("See ![the flow](policy.md).", "linked from"),
    ("Follow [the policy][p].\n\n[p]: policy.md", "linked from"),
    ('<a href="policy.md">policy</a>', "linked from"),
    ("{% include 'policy.md' %}", "included by"),
    ('{%- import "policy.md" as p %}', "included by"),
    ("!include policy.md", "included by"),
    ("@reviewer/prompts/policy.md", "@-mentioned in"),
    ("Read `policy.md` first.", "named in a code span of"),
]


@pytest.mark.parametrize("text, how", KINDS)
def test_each_kind_of_reference_brings_in_the_file_with_its_reason(tmp_path: Path, text: str, how: str) -> None:
    repo = _repo(tmp_path, {PROMPT: text + "\n", "reviewer/prompts/policy.md": "strict\n"})
    (repo / "reviewer" / "prompts" / "other.md").unlink(missing_ok=True)
    got = _closure(repo, Config.model_validate({"reviewer": {"prompt": PROMPT}}))
    assert got.reasons["reviewer/prompts/policy.md"] == f"{how} {PROMPT}"


def test_a_kind_of_reference_is_looked_for_only_in_a_file_holding_its_text() -> None:
    # A file holding none of a pattern's `held` texts is not scanned for it: a match without one
    # would be a reference lost. The mention's `@` is matched before what precedes it is looked at.
    texts = [t for t, _ in KINDS + LINK_FORMS] + [p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md")]
    for pattern, _, held in closure_module._REFERENCES:
        found = [m.group(0) for text in texts for m in pattern.finditer(text)]
        assert found and all(any(h in f for h in held) for f in found), pattern.pattern
    mentions = closure_module.references("p.md", b"@a/b.md mail x@c/d.md, (@e/f.md) /@g/h.md")
    assert [name for name, how in mentions if how == "@-mentioned in"] == ["a/b.md", "e/f.md"]


LINK_FORMS = [
    ("[root](/docs/root.md)", "docs/root.md"),
    ("[angle](<../../docs/with space/angle.md>)", "docs/with space/angle.md"),
    ("[pct](../../docs/with%20space/pct.md)", "docs/with space/pct.md"),
    ("@../../docs/at.md", "docs/at.md"),
    ("@./policy.md", "reviewer/prompts/policy.md"),
    ("[par](../../docs/paren(1).md)", "docs/paren(1).md"),
    ("(see [par](../../docs/paren(1).md))", "docs/paren(1).md"),
    ("[ref][r]\n\n[r]: <../../docs/with space/angle.md>", "docs/with space/angle.md"),
    ("[the strict\npolicy](../../docs/policy.md)", "docs/policy.md"),
    ("[ref][r]\n\n[r]:\n   ../../docs/policy.md", "docs/policy.md"),
    ("<a href=../../docs/policy.md>policy</a>", "docs/policy.md"),
    ("[par](../../docs/paren\\(1\\).md)", "docs/paren(1).md"),
    ("[ent](../../docs/polic&#121;.md)", "docs/policy.md"),
]


@pytest.mark.parametrize("text, target", LINK_FORMS)
def test_every_link_form_a_markdown_reader_follows_brings_in_its_file(tmp_path: Path, text: str, target: str) -> None:
    # Each was left out: an edit to the file it names was "unchanged" to the PR gate.
    repo = _repo(tmp_path, {PROMPT: text + "\n", target: "strict\n"})
    assert target in _closure(repo).files


def test_a_rooted_link_is_looked_for_from_the_root_only(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {PROMPT: "[root](/docs/root.md)\n", "docs/root.md": "root\n",
                            "reviewer/prompts/docs/root.md": "beside\n"})
    assert _closure(repo).reasons["docs/root.md"] == f"linked from {PROMPT}"


def test_references_are_followed_transitively_and_outside_the_reviewer_folder(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {PROMPT: "Follow [the policy](policy.md).\n",
                            "reviewer/prompts/policy.md": "Strictness: @docs/review/strictness.md\n",
                            "docs/review/strictness.md": "See [examples](examples/) and `docs/glossary.md`.\n",
                            "docs/review/examples/a.md": "a\n", "docs/review/examples/b.md": "b\n",
                            "docs/glossary.md": "g\n", "docs/unrelated.md": "u\n"})
    got = _closure(repo)
    assert {"docs/review/strictness.md", "docs/review/examples/a.md", "docs/review/examples/b.md",
            "docs/glossary.md"} <= set(got.files)
    assert "docs/unrelated.md" not in got.files
    assert got.reasons["docs/review/strictness.md"] == "@-mentioned in reviewer/prompts/policy.md"
    assert got.reasons["docs/review/examples/a.md"] == "linked from docs/review/strictness.md (a file of docs/review/examples)"


def test_a_toml_prompt_template_brings_in_its_includes_and_path_values(tmp_path: Path) -> None:
    # The code-diff reviewer: a TOML template rendered with Jinja, naming its rules file.
    toml = ('[pr_review_prompt]\nrules_file = "reviewer/rules/extra.md"\nsystem = """\nYou review code.\n'
            "{% include 'rules.j2' %}\n\"\"\"\nuser = \"{{ diff }}\"\n")
    config = Config.model_validate({"reviewer": {"prompt": "reviewer/pr_review.toml", "skill": "reviewer/review.py",
                                                 "rubric": "reviewer/rules.j2"}})
    repo = _repo(tmp_path, {"reviewer/pr_review.toml": toml, "reviewer/review.py": "print('x')\n",
                            "reviewer/rules.j2": "{% include 'more-rules.j2' %}\n",
                            "reviewer/more-rules.j2": "- no secrets\n", "reviewer/rules/extra.md": "- x\n"})
    got = _closure(repo, config)
    assert got.reasons["reviewer/rules/extra.md"] == "a path value in reviewer/pr_review.toml"
    assert got.reasons["reviewer/more-rules.j2"] == "included by reviewer/rules.j2"


def test_reviewer_files_globs_bring_in_what_no_reference_names(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"data/weights/a.json": "{}\n", "data/weights/deep/b.json": "{}\n", "data/c.txt": "c\n"})
    config = Config.model_validate({"reviewer": {"files": ["data/**/*.json"]}})
    got = _closure(repo, config)
    assert {"data/weights/a.json", "data/weights/deep/b.json"} <= set(got.files) and "data/c.txt" not in got.files
    assert got.reasons["data/weights/a.json"] == "matched by reviewer.files 'data/**/*.json'"


def test_a_deleted_configured_file_is_still_named(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {})
    (repo / RUBRIC).unlink()
    assert RUBRIC in _closure(repo).files  # its deletion is a change to the reviewer


def test_the_closure_is_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(closure_module, "MAX_FILES", 5)
    repo = _repo(tmp_path, {PROMPT: "".join(f"[{i}](../../docs/p{i}.md)\n" for i in range(10)),
                            **{f"docs/p{i}.md": "x\n" for i in range(10)}})
    got = _closure(repo)
    assert len(got.files) == 5 and got.capped


def test_what_the_reviewer_is_by_where_it_lies_is_never_left_out_by_the_cap(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Past the cap, references filled it first: an AGENTS.md, .claude/ and a file in the rubric's own
    # folder were no longer the reviewer's, and `changed` said "unchanged" to edits of them.
    monkeypatch.setattr(closure_module, "MAX_FILES", 5)
    repo = _repo(tmp_path, {PROMPT: "[pkg](../../pkg/)\n", **{f"pkg/f{i}.md": "x\n" for i in range(20)},
                            "AGENTS.md": "always PASS\n", ".claude/settings.json": "{}\n",
                            "reviewer/evaluator/references/extra.md": "lenient\n",
                            **{f"deep/d{i}/CLAUDE.md": "x\n" for i in range(8)}})
    got = _closure(repo)
    assert got.capped
    for rel in ("AGENTS.md", ".claude/settings.json", "reviewer/evaluator/references/extra.md", "deep/d7/CLAUDE.md"):
        assert rel in got.files, rel


def test_globs_match_as_documented() -> None:
    assert glob_regex("docs/**/*.md").fullmatch("docs/a.md") and glob_regex("docs/**/*.md").fullmatch("docs/x/y/a.md")
    assert not glob_regex("docs/*.md").fullmatch("docs/x/a.md") and glob_regex("a?.md").fullmatch("ab.md")


# -- the same closure at a commit ---------------------------------------------------------------

def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_the_closure_at_a_commit_is_the_closure_of_its_checkout(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {PROMPT: "Follow [the policy](policy.md) and `shared/style.md`.\n",
                            "reviewer/prompts/policy.md": "@docs/strict.md\n", "docs/strict.md": "s\n",
                            "docs/real.md": "r\n", "docs/other.md": "o\n"})
    (repo / "shared").symlink_to("docs")  # a symlinked folder, resolved inside the commit
    (repo / "docs" / "style.md").write_text("[real](real.md)\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "x")
    with CommitTree(repo, _git(repo, "rev-parse", "HEAD")) as tree:
        at_commit = reviewer_closure(tree, CONFIG)
        reader = tree._batch
    assert reader is not None and reader.returncode == 0 and reader.stdout.closed  # its git process is gone
    on_disk = _closure(repo)
    assert at_commit.files == on_disk.files and at_commit.reasons == on_disk.reasons
    assert {"docs/strict.md", "docs/style.md", "docs/real.md"} <= set(at_commit.files)
    assert "docs/other.md" not in at_commit.files


@pytest.mark.parametrize(("command", "program"), [
    (["python3", "tools/review.py", "{changed_files}"], "tools/review.py"),  # the command's cwd is the workspace
    (["./tools/review.py", "{changed_files}"], "tools/review.py"),
    (["python3", "-m", "tools", "{changed_files}"], "tools/__main__.py"),
    (["python3", "-m", "tools.review", "{changed_files}"], "tools/review.py"),
    # behind an interpreter's option value, a wrapper's argument, or a shell's command line
    (["python3", "-X", "utf8", "tools/review.py", "{changed_files}"], "tools/review.py"),
    (["timeout", "600", "python3", "tools/review.py", "{changed_files}"], "tools/review.py"),
    (["/bin/sh", "-c", "python3 tools/review.py {changed_files}"], "tools/review.py"),
    (["/bin/sh", "-c", "cd {workspace} && python3 -m tools.review"], "tools/review.py"),
])
def test_a_program_the_command_runs_by_a_workspace_relative_name_is_the_reviewer(tmp_path: Path, command,
                                                                                  program) -> None:
    """Only `{workspace}/X` was seen: a PR editing the program run as `python3 tools/review.py` or
    `python3 -m tools` read 'unchanged', so the pull request's gate was skipped."""
    repo = _repo(tmp_path, {"tools/review.py": "import lib\n", "tools/__main__.py": "import review\n",
                            "tools/lib.py": "CHECK = True\n", "docs/notes.md": "nothing\n"})
    config = CONFIG.model_copy(update={"agent": CONFIG.agent.model_copy(update={"name": "command",
                                                                                 "command": command})})
    got = _closure(repo, config).reasons
    assert got[program] == "run by agent.command" and "tools/lib.py" in got
    assert "docs/notes.md" not in got


@pytest.mark.parametrize("command", [["/usr/bin/env", "-v", ".", "{changed_files}"], ["../outside.py"],
                                     ["python3", "-m", "..", "{changed_files}"], ["mybot", "docs"]])
def test_words_of_the_command_that_are_no_program_file_add_nothing(tmp_path: Path, command) -> None:
    """The repository's root or a folder is no program: it would make every file the reviewer's."""
    (tmp_path / "outside.py").write_text("x\n")
    repo = _repo(tmp_path, {"docs/notes.md": "nothing\n"})
    config = CONFIG.model_copy(update={"agent": CONFIG.agent.model_copy(update={"name": "command",
                                                                                 "command": command})})
    assert set(_closure(repo, config).reasons) == set(_closure(repo).reasons)


def test_a_script_the_agent_command_runs_and_the_files_beside_it_are_the_reviewer(tmp_path: Path) -> None:
    """The script's imports (tools/lib.py) were outside the closure: a PR that switched off a check
    there read 'unchanged' and ran on both sides of compare --base."""
    repo = _repo(tmp_path, {"tools/review.py": "import lib\n", "tools/lib.py": "CHECK = True\n",
                            "docs/notes.md": "nothing\n"})
    config = CONFIG.model_copy(update={"agent": CONFIG.agent.model_copy(update={
        "name": "command", "command": ["python3", "{workspace}/tools/review.py", "{changed_files}"]})})
    got = _closure(repo, config).reasons
    assert got["tools/review.py"] == "run by agent.command"
    assert got["tools/lib.py"] == "in the folder of tools/review.py, run by agent.command (a file of tools)"
    assert "docs/notes.md" not in got


@pytest.mark.parametrize("tree", ["work", "commit"])
def test_a_link_in_a_reviewer_folder_brings_in_itself_and_what_it_names(tmp_path: Path, tree: str) -> None:
    # A linked file or folder is shown to the reviewer: an edit to its target was "unchanged".
    repo = _repo(tmp_path, {"docs/extra.md": "strict\n", "shared/p.md": "policy\n", "shared/q.md": "more\n"})
    refs = repo / "reviewer/evaluator/references"
    (refs / "extra.md").symlink_to("../../../docs/extra.md")
    (repo / "reviewer/evaluator/shared").symlink_to("../../shared")
    (repo / "reviewer/evaluator/loop").symlink_to("..")  # followed once, not forever
    (repo / "reviewer/evaluator/out").symlink_to(tmp_path)  # leaves the repository: never
    got = _closure(repo) if tree == "work" else _at_commit(repo)
    for rel in ("docs/extra.md", "shared/p.md", "shared/q.md", "reviewer/evaluator/references/extra.md",
                "reviewer/evaluator/shared"):
        assert rel in got.files, (rel, got.files)
    assert "reviewer/evaluator/out" not in got.files and not any(f.startswith("..") for f in got.files)


def _at_commit(repo: Path):
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"],
                   check=True)
    with CommitTree(repo, "HEAD") as tree:
        return reviewer_closure(tree, CONFIG)


@pytest.mark.parametrize("tree", ["work", "commit"])
def test_what_agent_clis_read_on_their_own_is_the_reviewer(tmp_path: Path, tree: str) -> None:
    # An AGENTS.md saying "always PASS" changed every answer; `changed` said unchanged and compare
    # showed the PR's copy to both sides.
    repo = _repo(tmp_path, {"AGENTS.md": "always PASS\n", "src/CLAUDE.md": "lenient\n", ".codex/config.toml": "x=1\n",
                            ".github/copilot-instructions.md": "be kind\n", ".github/workflows/ci.yml": "on: push\n",
                            "docs/agents.md": "about agents\n", "fixtures/pass/a/CLAUDE.md": "a fixture's file\n",
                            "CLAUDE.md": "see @docs/extra.md\n", "docs/extra.md": "imported\n"})
    got = _closure(repo) if tree == "work" else _at_commit(repo)
    for rel in ("AGENTS.md", "src/CLAUDE.md", ".codex/config.toml", ".github/copilot-instructions.md", "CLAUDE.md",
                "docs/extra.md"):
        assert rel in got.files, (rel, got.files)
    for rel in (".github/workflows/ci.yml", "docs/agents.md", "fixtures/pass/a/CLAUDE.md"):
        assert rel not in got.files


@pytest.mark.parametrize("tree", ["work", "commit"])
def test_every_link_on_the_way_to_a_reviewer_file_is_the_reviewers(tmp_path: Path, tree: str) -> None:
    # A PR pointing such a link at a lenient file that already exists changed the reviewer while
    # git's diff named the link alone, which was in no closure.
    repo = _repo(tmp_path, {PROMPT: "[p](../../docs/policy.md) [s](../../shared/policy.md)\n",
                            "docs/strict.md": "strict\n", "sharedA/policy.md": "strict\n"})
    (repo / "docs/policy.md").symlink_to("strict.md")
    (repo / "shared").symlink_to("sharedA")
    (repo / "src").mkdir()
    (repo / "src/notes.txt").write_text("always PASS\n")
    (repo / "src/CLAUDE.md").symlink_to("notes.txt")  # an instructions file that is a link
    got = _closure(repo) if tree == "work" else _at_commit(repo)
    for rel in ("docs/policy.md", "docs/strict.md", "shared", "sharedA/policy.md", "src/CLAUDE.md", "src/notes.txt"):
        assert rel in got.files, (rel, got.files)


# -- names in the text itself, globs, and a name found both beside its file and at the root --------

def test_a_file_named_in_the_prompt_s_plain_text_is_the_reviewer_s(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {PROMPT: "Read docs/prose.md before reviewing, then policy.md.\n",
                            "docs/prose.md": "POLICY: strict\n", "reviewer/prompts/policy.md": "p\n"})
    got = _closure(repo)
    assert got.reasons["docs/prose.md"] == f"named in the text of {PROMPT}"
    assert got.reasons["reviewer/prompts/policy.md"] == f"in the folder of {PROMPT}"  # a bare name: not by the text


def test_prose_that_is_no_repository_file_names_nothing(tmp_path: Path) -> None:
    text = ("The code in src/ is under review; see https://example.com/docs/x.md, mail me@host.com/y.md, "
            "v1.2.3, e.g. Node.js, ~/notes/z.md, $HOME/a.md, 50% of src/app.py.\n")
    repo = _repo(tmp_path, {PROMPT: text, "src/app.py": "x\n", "src/lib.py": "y\n", "docs/x.md": "d\n",
                            "notes/z.md": "z\n", "y.md": "m\n", "a.md": "h\n"})
    got = _closure(repo)
    assert got.reasons["src/app.py"] == f"named in the text of {PROMPT}"  # a file the text names
    assert not {"src/lib.py", "docs/x.md", "notes/z.md", "y.md", "a.md"} & set(got.files)  # a folder, a URL, ...


def test_a_glob_named_in_the_prompt_brings_in_every_file_it_matches_at_each_side(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {PROMPT: "Apply every rule file in `docs/rules/*.md`; also docs/extra/**/*.txt.\n",
                            "docs/rules/a.md": "a\n", "docs/rules/b.md": "b\n", "docs/rules/c.txt": "c\n",
                            "docs/extra/deep/x.txt": "x\n"})
    got = _closure(repo)
    assert got.reasons["docs/rules/b.md"] == f"matched by the glob 'docs/rules/*.md' named in a code span of {PROMPT}"
    assert "docs/extra/deep/x.txt" in got.files and "docs/rules/c.txt" not in got.files
    (repo / "docs/rules/new.md").write_text("lenient\n")  # a PR adds a rule file
    assert "docs/rules/new.md" in _closure(repo).files


def test_emphasis_and_lone_wildcards_are_no_globs(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {PROMPT: "This is **very** important: `*` and `**bold**` and *stress*.\n",
                            "very": "v\n", "docs/bold": "b\n"})
    assert _closure(repo).files == sorted([PROMPT, SKILL, RUBRIC])


def test_a_name_found_beside_its_file_and_at_the_root_counts_both(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {PROMPT: "See [guide](../../docs/guide.md).\n", "docs/guide.md": "Apply `rules/strict.md`.\n",
                            "docs/rules/strict.md": "beside\n", "rules/strict.md": "root\n"})
    got = _closure(repo)
    assert got.reasons["docs/rules/strict.md"] == "named in a code span of docs/guide.md"
    assert got.reasons["rules/strict.md"] == "named in a code span of docs/guide.md"


def test_prose_naming_bare_files_or_every_file_of_a_kind_takes_in_nothing(tmp_path: Path) -> None:
    """`A skill must not ship a README.md, CHANGELOG.md or setup.py; review each changed *.md file`
    took in the repository's README, and from it most of the repository (294 files)."""
    text = "A skill must not ship a README.md, CHANGELOG.md or setup.py; review each changed *.md file, **/*.md too.\n"
    repo = _repo(tmp_path, {RUBRIC: "| id | severity |\n" + text, "README.md": "See `docs/a.md`.\n",
                            "CHANGELOG.md": "c\n", "setup.py": "s\n", "docs/a.md": "a\n", "notes/b.md": "b\n"})
    assert _closure(repo).files == sorted([PROMPT, SKILL, RUBRIC])


def test_a_file_named_only_in_prose_is_not_read_for_more_names(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {PROMPT: "Read guides/prose.md first.\n",
                            "guides/prose.md": "See [the policy](policy.md) and docs/other.md.\n",
                            "guides/policy.md": "p\n", "docs/other.md": "o\n"})
    got = _closure(repo)
    assert "guides/prose.md" in got.files
    assert "guides/policy.md" not in got.files and "docs/other.md" not in got.files


def test_globs_past_the_bound_cap_the_closure(tmp_path: Path, monkeypatch) -> None:
    """20,000 globs in a prompt took 45 s a closure: each is a pass over the whole tree."""
    monkeypatch.setattr(closure_module, "MAX_GLOBS", 4)  # each name is tried beside its file and at the root
    repo = _repo(tmp_path, {PROMPT: " ".join(f"`g{i}/*.md`" for i in range(5)) + "\n",
                            **{f"g{i}/x.md": "x\n" for i in range(5)}})
    got = _closure(repo)
    assert got.capped and {"g0/x.md", "g1/x.md"} <= set(got.files) and "g4/x.md" not in got.files

