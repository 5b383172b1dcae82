"""`init`: set rubricgate up in an existing repository, never overwriting anything.

It looks for the reviewer the team already has (a prompt, an evaluator skill, a rubric) among
the repository's files; what it does not find it writes from a starter. Then it writes
rubricgate.yaml, one example task, one example fixture per tier and the two workflows. Every
file that already exists is skipped and reported, so running init twice is harmless.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath

import yaml
from pydantic import ValidationError

from rubricgate.adopt.init_command import AGENT_VERDICT_EXAMPLE
from rubricgate.adopt.install_origin import InstallSpec, check_requirement, detect
from rubricgate.adopt.workflows import (
    AGENT_CLIS,
    WORKFLOW_NAMES,
    refuse_shared_workflow,
    render_workflow,
    workflow_file,
    yaml_scalar,
)
from rubricgate.errors import GateInputError
from rubricgate.models.config import TiersConfig
from rubricgate.suite.config import CONFIG_NAME
from rubricgate.suite.paths import safe_relpath
from rubricgate.suite.rubric import DEFAULT_VOCABULARY, RubricSpec, Vocabulary, parse_rubric, vocabulary_from
from rubricgate.suite.trees import git_prefix

STARTER = {"prompt": "reviewer/prompts/evaluate.md", "skill": "reviewer/evaluator/SKILL.md",
           "rubric": "reviewer/evaluator/references/rubric.md"}
GITIGNORE_LINES = ("/reports/", ".rubricgate-cache/")
EXAMPLE_TASK = "evals/tasks/example-secret-in-skill.yaml"


@dataclass
class InitOptions:
    repo: Path
    agent: str = "builtin"
    prompt: str | None = None  # given paths win over discovery
    skill: str | None = None
    rubric: str | None = None
    pip_spec: str | None = None  # what the workflows `pip install`; None: this rubricgate's origin
    workflows_dir: str = ".github/workflows"
    # --agent command: your reviewer program (a command line, placeholders allowed), its key and
    # endpoint variables, and the fixture layout (default files: a fixture holds any files).
    command: str | None = None
    secret: str | None = None
    endpoint_env: list[str] = field(default_factory=list)
    layout: str | None = None


@dataclass
class InitResult:
    reviewer: dict[str, str]  # role -> path
    found: dict[str, str]  # role -> "found" | "given" | "starter" | "command" | "prompt" (a default)
    install: InstallSpec  # what the workflows install, and where that came from
    written: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def init_repo(options: InitOptions) -> InitResult:
    """Discover or write the reviewer, then the config, examples and workflows."""
    repo = options.repo.resolve()
    _check_git(repo)
    install = _install_spec(options.pip_spec)
    command = command_argv(options)
    if command:
        from rubricgate.adopt.init_command import command_reviewer

        reviewer = command_reviewer(repo, options.prompt, options.skill, options.rubric, command)
        # where each came from, as init says it: a default is no file the user gave
        found = {"prompt": "given", "skill": "given" if options.skill else "command",
                 "rubric": "given" if options.rubric else "prompt"}
    else:
        reviewer, found = locate_reviewer(repo, options)
    top, folder = _work_tree_top(repo)
    refuse_shared_workflow(top, options.workflows_dir, folder)  # before any file: nothing half set up
    result = InitResult(reviewer=reviewer, found=found, install=install)
    layout = options.layout or ("files" if command else "skills")
    for role, source in found.items():
        if source == "starter":
            _write(repo, reviewer[role], _starter(role, layout).read_text(encoding="utf-8"), result)
    if "starter" in found.values() and set(found.values()) != {"starter"}:
        result.notes.append("the starter files name reviewer/... paths: point them at your "
                            + ", ".join(reviewer[r] for r, s in found.items() if s != "starter"))
    if command:
        from rubricgate.adopt.init_command import command_config_text, write_empty_suite

        _write(repo, CONFIG_NAME, command_config_text(reviewer, command, options, layout), result)
        write_empty_suite(repo, result, _write)
    else:
        rubric = _rubric(repo / reviewer["rubric"], reviewer["rubric"], result, _words_declared(repo))
        _write(repo, CONFIG_NAME, config_text(reviewer, options.agent, layout), result)
        _write_cases(repo, rubric, layout, result)
    for name in WORKFLOW_NAMES:
        # GitHub reads workflows only at the top of the repository, whatever folder the suite is in.
        _write(top, f"{options.workflows_dir}/{workflow_file(name, folder)}",
               render_workflow(name, options.agent, install.requirement, options.secret, folder), result,
               shown=os.path.relpath(top / options.workflows_dir / workflow_file(name, folder), repo))
    _extend_gitignore(repo, changed_files_path(reviewer, layout), result)
    return result


def command_argv(options: InitOptions) -> list[str] | None:
    """--command as the config's argv (shell words, placeholders kept); required with --agent command."""
    if options.agent != "command":
        if options.command or options.secret or options.endpoint_env:
            raise GateInputError("--command", "", "--command, --secret and --endpoint-env are for --agent command",
                                 "add --agent command, or drop them")
        return None
    if not options.command or not options.command.strip():
        raise GateInputError("--command", "", "--agent command needs the command that runs your reviewer once",
                             "pass --command 'python3 reviewer/review.py {changed_files} {workspace}'")
    import shlex

    from rubricgate.agents.command import check_placeholders

    try:
        argv = shlex.split(options.command)
    except ValueError as exc:
        raise GateInputError("--command", "", f"cannot split it into words ({exc})",
                             "quote it as a shell would") from None
    check_placeholders(argv, "--command", "")  # before a config validate would refuse is written
    return argv


def _install_spec(given: str | None) -> InstallSpec:
    """--pip checked (pinned, one line), else the running rubricgate's own origin."""
    if given is None:
        return detect()
    return InstallSpec(check_requirement(given), "as given with --pip")


def _check_git(repo: Path) -> None:
    got = subprocess.run(["git", "-C", str(repo), "rev-parse", "--is-inside-work-tree"], capture_output=True,
                         text=True, stdin=subprocess.DEVNULL, check=False)
    if got.returncode != 0 or got.stdout.strip() != "true":
        raise GateInputError(str(repo), "", "not inside a git work tree", "run `git init` first, or pass --repo")


def repo_files(repo: Path) -> list[str]:
    """Tracked and untracked-not-ignored files, as the runner's workspaces see them."""
    out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, check=True, stdin=subprocess.DEVNULL).stdout
    return sorted({n for n in out.decode("utf-8", "surrogateescape").split("\0") if n})


def locate_reviewer(repo: Path, options: InitOptions) -> tuple[dict[str, str], dict[str, str]]:
    """Each role's path and how it was obtained: given (option), found (discovered) or starter."""
    files = repo_files(repo)
    given = {"prompt": options.prompt, "skill": options.skill, "rubric": options.rubric}
    paths: dict[str, str] = {}
    found: dict[str, str] = {}
    for role in ("rubric", "skill", "prompt"):
        path = given[role]
        if path:
            safe_relpath(repo, path, "--" + role, "path")
            if not (repo / path).is_file():
                raise GateInputError("--" + role, "path", f"{path!r} does not exist", "give an existing file")
            paths[role], found[role] = path, "given"
            continue
        hit = _discover(role, files, paths)
        paths[role], found[role] = (hit, "found") if hit else (STARTER[role], "starter")
    return {r: paths[r] for r in ("prompt", "skill", "rubric")}, {r: found[r] for r in ("prompt", "skill", "rubric")}


def _discover(role: str, files: list[str], known: dict[str, str]) -> str | None:
    """The likeliest existing file for a role (first match in sorted order)."""
    md = [f for f in files if f.lower().endswith(".md") and not f.startswith(("fixtures/", "evals/", "tests/"))]
    if role == "rubric":
        named = [f for f in md if PurePosixPath(f).name.lower() == "rubric.md"]
        return next((f for f in named if "/references/" in f"/{f}"), named[0] if named else None)
    if role == "skill":
        rubric = known.get("rubric", "")
        beside = str(PurePosixPath(rubric).parent.parent / "SKILL.md") if "/references/" in f"/{rubric}" else ""
        if beside in files:
            return beside
        return next((f for f in md if PurePosixPath(f).name == "SKILL.md" and _reviewer_like(f)), None)
    prompts = [f for f in md if "prompts/" in f"/{f}" or PurePosixPath(f).parent.name == "prompts"]
    return next((f for f in prompts if _reviewer_like(PurePosixPath(f).name)), prompts[0] if prompts else None)


def _reviewer_like(path: str) -> bool:
    lowered = path.lower()
    return any(word in lowered for word in ("evaluat", "review", "check", "grade"))


def changed_files_path(reviewer: dict[str, str], layout: str = "skills") -> str:
    """The reviewed-files list lives beside the reviewer: <their common folder>/.changed-skills.txt
    (the skills layout's name, which its prompts read), .changed-files.txt for any other files."""
    common = os.path.commonpath([str(PurePosixPath(p).parent) for p in reviewer.values()])
    name = ".changed-skills.txt" if layout == "skills" else ".changed-files.txt"
    return f"{common}/{name}" if common not in ("", ".") else name


def _starter(role: str, layout: str = "skills") -> Traversable:
    """The starter file of a role: a reviewer of skills, or under `files` a reviewer of a code change."""
    tree = "starter" if layout == "skills" else "starter_files"
    return resources.files("rubricgate.adopt").joinpath("templates", tree, *STARTER[role].split("/"))


def _rubric(path: Path, display: str, result: InitResult,
            vocabulary: Vocabulary = DEFAULT_VOCABULARY) -> RubricSpec | None:
    """The rubric as rubricgate reads it; one it cannot read is noted (the user fixes it), never guessed."""
    try:
        return parse_rubric(path.read_text(encoding="utf-8"), display, vocabulary)
    except GateInputError as exc:
        result.notes.append(f"{exc.one_line()}; examples that need its rules were not written")
    except OSError as exc:
        result.notes.append(f"{display}: cannot read ({exc.strerror})")
    return None


def _words_declared(repo: Path) -> Vocabulary:
    """The rubric's words as an existing rubricgate.yaml declares them (`tiers:`): the fix init's
    note asks for, so init run again reads the rubric with them (it repeated the note and wrote no
    example). The default words when there is none or it does not read: `validate` says why."""
    path = repo / CONFIG_NAME
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
        tiers = data.get("tiers") if isinstance(data, dict) else None
        return vocabulary_from(TiersConfig.model_validate(tiers)) if tiers else DEFAULT_VOCABULARY
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValidationError, GateInputError):
        return DEFAULT_VOCABULARY


def _write(repo: Path, rel: str, text: str, result: InitResult, shown: str | None = None) -> None:
    """Create `rel` with `text` unless it exists: init never overwrites. `shown`: the name it is
    reported by (a workflow at the top, named from a monorepo's folder: `../.github/...`)."""
    safe_relpath(repo, rel, "init", rel)
    path = repo / rel
    if path.exists():
        result.skipped.append(shown or rel)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    result.written.append(shown or rel)


def _work_tree_top(repo: Path) -> tuple[Path, str]:
    """(the top of `repo`'s git work tree, `repo`'s folder below it: '' at the top, `team` in a monorepo)."""
    folder = git_prefix(repo).rstrip("/")
    return (repo.joinpath(*[".."] * len(folder.split("/"))).resolve() if folder else repo), folder


def _write_cases(repo: Path, rubric: RubricSpec | None, layout: str, result: InitResult) -> None:
    """The example skills for the skills layout; under `files` the suite's empty folders, as for a
    command reviewer: a SKILL.md example is no case of a reviewer of code."""
    if layout == "files":
        from rubricgate.adopt.init_command import write_empty_suite

        write_empty_suite(repo, result, _write)
    else:
        _write_examples(repo, rubric, result)


def _write_examples(repo: Path, rubric: RubricSpec | None, result: InitResult) -> None:
    """One task and one fixture per tier, each only for rules the rubric has and with the tier
    the rubric derives from them: an example this rubric cannot produce is left out and said."""
    files = dict(_walk(resources.files("rubricgate.adopt").joinpath("templates", "examples"), ""))
    units: dict[str, list[str]] = {}  # an example: the task file, or a fixture folder's files
    for rel in files:
        units.setdefault(rel if rel == EXAMPLE_TASK else "/".join(rel.split("/")[:3]), []).append(rel)
    for unit, rels in units.items():
        expect_rel = unit if unit == EXAMPLE_TASK else f"{unit}/expect.yaml"
        data = yaml.safe_load(files[expect_rel].read_text(encoding="utf-8")) if expect_rel in files else None
        fitted = _fit(data, unit == EXAMPLE_TASK, rubric) if data is not None else ("", None)
        if fitted is None:
            why = "the rubric has none of the rules it shows" if rubric else \
                "the rubric could not be read (the note above)"
            result.notes.append(f"left out the example {unit}: {why}")
            if unit == EXAMPLE_TASK:  # the suite's tasks folder must exist, and git keeps no empty one
                _write(repo, str(PurePosixPath(EXAMPLE_TASK).parent / ".gitkeep"), "", result)
            continue
        tier, kept = fitted
        for rel in rels:
            text = files[rel].read_text(encoding="utf-8")
            if rel == expect_rel and kept != yaml.safe_load(text):
                text = yaml.safe_dump(kept, sort_keys=False, width=100)
            _write(repo, _retiered(rel, tier) if tier else rel, text, result)


def _walk(node: Traversable, prefix: str):
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        rel = f"{prefix}{child.name}"
        if child.is_dir():
            yield from _walk(child, rel + "/")
        else:
            yield rel, child


def _fit(data: dict, task: bool, rubric: RubricSpec | None) -> tuple[str, dict] | None:
    """(the tier the rubric gives the example's rules, the expectation kept to those rules), or
    None when it names rules and the rubric has none of them."""
    expect = data["expect"] if task else data
    named = list(expect.get("rules", []))
    kept = [r for r in named if rubric is not None and r in rubric.rules]
    if named and not kept:
        return None
    if not named:
        return "", data
    tier = rubric.derive_tier(rubric.rules[r].severity for r in kept)  # type: ignore[union-attr]
    expect["rules"] = kept
    if task:
        expect["tier"] = tier
    return tier, data


def _retiered(rel: str, tier: str) -> str:
    """fixtures/<tier>/<name>/...: the folder of the tier the rubric produces."""
    parts = rel.split("/")
    if parts[0] == "fixtures" and len(parts) > 2:
        parts[1] = tier.lower()
    return "/".join(parts)


def _extend_gitignore(repo: Path, changed_files: str, result: InitResult) -> None:
    """Append the run outputs and the changed-files list to .gitignore (lines already there stay)."""
    path = repo / ".gitignore"
    existing = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    missing = [line for line in (*GITIGNORE_LINES, changed_files) if line not in existing]
    if not missing:
        return
    prefix = "" if not existing or existing[-1] == "" else "\n"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(prefix + "# rubricgate\n" + "".join(f"{line}\n" for line in missing))
    result.written.append(".gitignore (appended " + ", ".join(missing) + ")")


def allowlist(cli) -> list[str]:
    """agent.env_allowlist for a CLI: the defaults, its endpoint variables, proxies and CA bundles."""
    from rubricgate.adopt.workflows import NETWORK_ENV
    from rubricgate.models.config import DEFAULT_ENV_ALLOWLIST

    return list(dict.fromkeys([*DEFAULT_ENV_ALLOWLIST, *cli.endpoint_env, *NETWORK_ENV]))


def config_text(reviewer: dict[str, str], agent: str, layout: str = "skills") -> str:
    """rubricgate.yaml with comments; a model-backed agent gets three trials and the statistical gate;
    `layout` files: fixtures hold any files, shown under changes/ (--layout was dropped here)."""
    cli = AGENT_CLIS.get(agent)
    agent_block = f"  name: {agent}\n  timeout_s: 300\n"
    if cli:
        agent_block += (f"  # model: pin one here; unset, the summary records the model the agent reports\n"
                        f"  secret_env: [{cli.secret}]   # passed to the agent, scrubbed from every report\n"
                        f"  # The CLI's endpoint, proxy and CA variables reach it only when listed here.\n"
                        f"  env_allowlist: [{', '.join(allowlist(cli))}]\n"
                        f"  # The reviewer's own network: only its model endpoint (its endpoint variable, or the\n"
                        f"  # CLI's public API), through rubricgate's proxy; HTTPS_PROXY above is chained through.\n"
                        f"  sandbox_network: allowlist   # none: no network; shared: the host's (warned)\n"
                        f"  network_allow: []   # more host:port the reviewer may reach\n")
    gate = ("gate:\n  method: statistical   # a model-backed reviewer is noisy: strict would flap\n"
            "  confidence: 0.95\n  max_trials_per_case: 10\n") if cli \
        else "gate:\n  method: strict   # the builtin is deterministic\n"
    return (f"# rubricgate: ties the suite, the reviewer under test, the agent and the gate together.\n"
            f"# Written by `rubricgate init`. Schema: `rubricgate schema config`.\n"
            f"format_version: 1\n\nsuite:\n  tasks: evals/tasks\n  fixtures: fixtures\n"
            f"{_suite_layout(layout)}\nreviewer:\n"
            f"  prompt: {yaml_scalar(reviewer['prompt'])}\n  skill: {yaml_scalar(reviewer['skill'])}\n"
            f"  rubric: {yaml_scalar(reviewer['rubric'])}\n"
            f"  changed_files: {yaml_scalar(changed_files_path(reviewer, layout))}\n\nagent:\n{agent_block}\n"
            f"# Default rubric for cases that do not set their own.\nrubric:\n  tool_use:\n"
            f"    allowed: [read, grep, glob]\n    forbidden: [\"write|edit|multiedit|bash|notebookedit\"]\n"
            f"    required: [read]\n  trajectory:\n    max_steps: 20\n\n"
            f"{AGENT_VERDICT_EXAMPLE if layout == 'files' else ''}trials: {3 if cli else 1}\n\n{gate}\n"
            f"baseline: baseline.json\nreports: reports\n")


def _suite_layout(layout: str) -> str:
    """The suite's layout lines: a skill a fixture (the default), or any files under changes/."""
    if layout == "skills":
        return "  review_root: skills   # where reviewed files appear in the reviewer's workspace\n"
    return ("  layout: files   # a fixture folder holds any files (a change.diff); all but expect.yaml are reviewed\n"
            "  review_root: changes   # where reviewed files appear in the reviewer's workspace\n")
