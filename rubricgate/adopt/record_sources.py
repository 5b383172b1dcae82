"""Where `record` gets the files a real review looked at: a pull request, two git refs, a replay.

Each source returns Reviewed: the reviewed SKILL.md files and the files of their skill folders
(references and the like) as they were at that point, keyed by their path in the repository.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from rubricgate.errors import GateInputError
from rubricgate.reports.github import GitHubClient, GitHubError, GitHubTarget
from rubricgate.suite.trees import git_prefix, in_folder, merge_base

SKILL_FILE = "SKILL.md"
MAX_FILES = 300  # per source: a PR touching more skills than this is not one review
MAX_DEPTH = 4  # folders below a skill folder that are snapshotted


@dataclass
class Reviewed:
    """The reviewed skills: SKILL.md paths, and every snapshotted file's content by source path.
    A change to any files (adopt/record_changes.py) carries its unified diff in `patch` instead."""

    origin: str  # "pr 12", "git main..feature", "replay <run>/<case>"
    skills: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    patch: str = ""
    patch_name: str = ""  # the patch's file name in the task (it names no expected answer)
    at_own_paths: bool = False  # the files keep their paths in the task (a change's files), never moved under a root
    removed: list[str] = field(default_factory=list)  # files the change deleted or renamed away (a change's)


def skill_folder_of(path: str, skill_folders: set[str] | None = None) -> str | None:
    """The skill folder a changed file belongs to: the nearest folder above it holding a SKILL.md
    (`skill_folders`, when the tree is known), else SKILL.md's folder or the folder above
    references/, scripts/ or assets/."""
    p = PurePosixPath(path)
    if skill_folders is not None:
        return next((str(f) for f in p.parents if str(f) in skill_folders), None)
    if p.name == SKILL_FILE:
        return str(p.parent)
    parts = p.parts
    for marker in ("references", "scripts", "assets"):
        if marker in parts[:-1]:
            return str(PurePosixPath(*parts[: parts.index(marker)])) or None
    return None


def _keep(path: str, excluded: list[str]) -> bool:
    return not any(path == e or path.startswith(e.rstrip("/") + "/") for e in excluded if e)


# --- a pull request, through the GitHub REST API -------------------------------------------


def from_pull_request(target: GitHubTarget, pr: int, excluded: list[str], prefix: str = "") -> Reviewed:
    """The PR's changed skills at its head commit (changed SKILL.md, or a changed file in its folder),
    named from `prefix`'s folder (git_prefix: a monorepo's folder holding the config)."""
    client = GitHubClient(target)
    head = _head_sha(client, pr)
    changed = [f["filename"] for f in pr_changes(client, pr, prefix) if f.get("status") != "removed"]
    folders = sorted({s for s in map(skill_folder_of, changed) if s is not None and _keep(s + "/", excluded)})
    out = Reviewed(origin=f"pull request #{pr} at {head[:12]}")
    for folder in folders:
        files = {p[len(prefix):]: t for p, t in _tree(client, prefix + folder, head, 0).items()}
        if f"{folder}/{SKILL_FILE}" in files:
            if not is_text(files[f"{folder}/{SKILL_FILE}"]):
                raise GateInputError(f"{folder}/{SKILL_FILE}", "", "not UTF-8 text at the pull request's head",
                                     "record a skill whose SKILL.md is plain text")
            out.skills.append(f"{folder}/{SKILL_FILE}")
            # A binary file beside SKILL.md (an image) is left out, as the git and working-tree sources do.
            out.files.update({p: t for p, t in files.items() if is_text(t)})
    return out


def _head_sha(client: GitHubClient, pr: int) -> str:
    got = _call(client, f"/pulls/{pr}")
    sha = (got or {}).get("head", {}).get("sha") if isinstance(got, dict) else None
    if not isinstance(sha, str):
        raise GateInputError("--pr", str(pr), "GitHub's answer has no head commit", "check the pull request number")
    return sha


def pr_changes(client: GitHubClient, pr: int, prefix: str) -> list[dict]:
    """The PR's changed files (GitHub's file objects), `filename` named from `prefix`'s folder, its
    own only: GitHub names them from the top of the repository, while the config (and so the
    reviewer's, the fixtures' and the answer key's paths left out) names them from the folder."""
    out = []
    for f in _pr_files(client, pr):
        named = [n for n in in_folder([f["filename"]], prefix) if not n.startswith("../")]
        old = f.get("previous_filename")
        was = [n for n in in_folder([old], prefix) if not n.startswith("../")] if isinstance(old, str) else []
        out += [f | {"filename": named[0], "previous_filename": was[0] if was else None}] if named else []
    return out


def repo_prefix(repo: Path) -> str:
    """git_prefix of `repo`, '' outside a git work tree (its files are then named from the top)."""
    try:
        return git_prefix(repo)
    except subprocess.CalledProcessError:
        return ""


PR_FILES_CAP = 3000  # GitHub lists at most this many of a pull request's changed files


def _pr_files(client: GitHubClient, pr: int) -> list[dict]:
    """Every changed file of the PR, each page read: reading only as many as a task reviews cut
    off the files past them unsaid, though the ones left out (the reviewer's, the suite) made
    room for them. A list at GitHub's cap may be cut: refused, never taken as the whole."""
    files: list[dict] = []
    for page in range(1, PR_FILES_CAP // 100 + 1):
        batch = _call(client, f"/pulls/{pr}/files?per_page=100&page={page}")
        files += [f for f in batch or [] if isinstance(f, dict) and isinstance(f.get("filename"), str)]
        if not isinstance(batch, list) or len(batch) < 100:
            return files
    raise GateInputError("--pr", str(pr), f"GitHub lists at most {PR_FILES_CAP:,} changed files of a pull request, "
                         "and this one has that many: the list may be cut",
                         "record the change from a local clone with --base and --head")


def _tree(client: GitHubClient, folder: str, ref: str, depth: int) -> dict[str, str]:
    """Every file under `folder` at `ref`, through the contents API (a few levels deep)."""
    listing = _call(client, f"/contents/{urllib.parse.quote(folder)}?ref={ref}")
    out: dict[str, str] = {}
    for entry in listing if isinstance(listing, list) else []:
        if entry.get("type") == "file" and len(out) < MAX_FILES:
            out[entry["path"]] = _file(client, entry["path"], ref)
        elif entry.get("type") == "dir" and depth < MAX_DEPTH:
            out.update(_tree(client, entry["path"], ref, depth + 1))
    return out


def _file(client: GitHubClient, path: str, ref: str) -> str:
    got = _call(client, f"/contents/{urllib.parse.quote(path)}?ref={ref}")
    if not isinstance(got, dict) or got.get("encoding") != "base64":
        raise GateInputError("--pr", path, "GitHub sent no base64 content for this file",
                             "check the file at the PR head")
    # surrogateescape keeps a byte that is not UTF-8 visible to is_text ("replace" made it U+FFFD text)
    return base64.b64decode(got.get("content", "")).decode("utf-8", "surrogateescape")


def _call(client: GitHubClient, path: str):
    try:
        return client.request("GET", path)
    except GitHubError as exc:
        raise GateInputError("--pr", "GitHub API", str(exc),
                             "check GITHUB_REPOSITORY, GITHUB_TOKEN and the PR number") from None


# --- two refs of the local git history, or a ref and the working tree -----------------------------


def from_git(repo: Path, base: str, head: str, excluded: list[str]) -> Reviewed:
    """Skills changed between the merge base of BASE and HEAD, read at HEAD (not the work tree)."""
    head_sha, base_sha = _rev(repo, head, "--head"), _rev(repo, base, "--base")
    fork = merge_base(repo, base, base_sha, head_sha)
    names = folder_changes(repo, _git(repo, "--head", "diff", "--name-only", "--no-renames", "--diff-filter=d", "-z",
                                      fork, head_sha))
    tree = _git(repo, "--head", "ls-tree", "-r", "-z", "--name-only", head_sha).split("\0")  # named from the folder
    skill_folders = {str(PurePosixPath(t).parent) for t in tree if PurePosixPath(t).name == SKILL_FILE} - {"."}
    folders = sorted({s for s in (skill_folder_of(n, skill_folders) for n in names)
                      if s is not None and _keep(s + "/", excluded)})
    out = Reviewed(origin=f"git {base}..{head} at {head_sha[:12]}")
    for folder in folders:
        listed = _git(repo, "--head", "ls-tree", "-r", "-z", "--name-only", head_sha, "--", folder + "/")
        paths = [p for p in listed.split("\0") if p][:MAX_FILES]
        if f"{folder}/{SKILL_FILE}" in paths:
            out.skills.append(f"{folder}/{SKILL_FILE}")
            out.files.update(_skill_texts(repo, head_sha, folder, paths))
    return out


def _skill_texts(repo: Path, head_sha: str, folder: str, paths: list[str]) -> dict[str, str]:
    """A skill folder's text files at HEAD; a binary file beside SKILL.md (an image) is left out,
    as from the working tree, and a SKILL.md that is not UTF-8 text is an input error."""
    texts = {p: _git(repo, "--head", "show", f"{head_sha}:./{p}") for p in paths}  # ./: from the folder, as `p`
    if not is_text(texts[f"{folder}/{SKILL_FILE}"]):
        raise GateInputError(f"{folder}/{SKILL_FILE}", "", "not UTF-8 text at HEAD",
                             "record a skill whose SKILL.md is plain text")
    return {p: t for p, t in texts.items() if is_text(t)}


WORKTREE = "WORKTREE"  # `--head WORKTREE`: the files on disk, not a commit


def from_worktree(repo: Path, base: str, excluded: list[str]) -> Reviewed:
    """Skills changed between the merge base of BASE and HEAD and the working tree (committed,
    staged, unstaged and untracked files; ignored ones never), read from disk."""
    base_sha, head_sha = _rev(repo, base, "--base"), _rev(repo, "HEAD", "--head")
    fork = merge_base(repo, base, base_sha, head_sha)
    changed = folder_changes(repo, _git(repo, "--head", "diff", "--name-only", "--no-renames", "--diff-filter=d", "-z",
                                        fork))
    untracked = _git(repo, "--head", "ls-files", "-z", "--others", "--exclude-standard")  # named from the folder
    present = [p for p in _git(repo, "--head", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
               .split("\0") if p and (repo / p).is_file()]
    skill_folders = {str(PurePosixPath(p).parent) for p in present if PurePosixPath(p).name == SKILL_FILE} - {"."}
    names = [*changed, *(n for n in untracked.split("\0") if n)]
    folders = sorted({s for s in (skill_folder_of(n, skill_folders) for n in names)
                      if s is not None and _keep(s + "/", excluded)})
    out = Reviewed(origin=f"git {base}..{WORKTREE} (the working tree, uncommitted changes included)")
    for folder in folders:
        texts = {p: _regular_text(repo / p, repo.resolve()) for p in present if p.startswith(folder + "/")}
        if texts.get(f"{folder}/{SKILL_FILE}") is None:
            raise GateInputError(f"{folder}/{SKILL_FILE}", "", "not a regular UTF-8 file inside the repository "
                                 f"under {MAX_TEXT_CHARS:,} characters", "record a skill whose SKILL.md is plain text")
        out.skills.append(f"{folder}/{SKILL_FILE}")
        out.files.update({p: t for p, t in list(texts.items())[:MAX_FILES] if t is not None})
    return out


def folder_changes(repo: Path, listing: str) -> list[str]:
    """A `git diff --name-only -z` listing's files as `repo`'s folder names them, its own only.
    git names a diff's files from the top of the work tree; in a monorepo's folder the config (and
    so `excluded`), `ls-files` and `ls-tree` name them from the folder, and another folder's files
    are no part of this suite's review."""
    named = in_folder([n for n in listing.split("\0") if n], git_prefix(repo))
    return [n for n in named if not n.startswith("../")]  # the attributes file above: not reviewed


def _rev(repo: Path, ref: str, option: str) -> str:
    if not ref or ref.startswith("-"):
        raise GateInputError(option, "REF", f"not a revision: {ref!r}", "give a branch, tag or commit")
    got = _run_git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if got.returncode != 0:
        raise GateInputError(option, "REF", f"{ref!r} is not a commit in this repository", "fetch it or check the name")
    return got.stdout.strip()


_UNDECODED = re.compile("[\udc80-\udcff]")  # a byte surrogateescape kept: the text was not UTF-8


def is_text(text: str) -> bool:
    """Whether git's output (`_run_git`) is UTF-8 text a task file can hold: no byte that did not
    decode, no NUL (git's own mark of a binary file)."""
    return "\0" not in text and not _UNDECODED.search(text)


def undecoded_at(text: str) -> int:
    """The offset of the first byte of `text` that was not UTF-8 (-1 when every byte was)."""
    found = _UNDECODED.search(text)
    return found.start() if found else -1


def _git(repo: Path, option: str, *args: str) -> str:
    got = _run_git(repo, *args)
    if got.returncode != 0:
        last = (got.stderr.strip().splitlines() or ["failed"])[-1]
        raise GateInputError(option, "git " + args[0], last, "check the refs and the clone")
    return got.stdout


def _run_git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git's output as text. A changed file may be binary or in another encoding (a PNG, a Latin-1
    source) and git prints it as it is: a byte that is not UTF-8 is kept as a lone surrogate
    (surrogateescape) for `is_text` to find, never a UnicodeDecodeError ending `record`. Read as
    bytes and decoded here, not in text mode, whose newline translation turned a file's CRLF
    line ends into LF: the task holds the file as it is."""
    try:
        got = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False,
                             stdin=subprocess.DEVNULL, env=os.environ | {"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"})
    except FileNotFoundError:
        raise GateInputError("git", "", "git is not installed", "install git") from None
    return subprocess.CompletedProcess(got.args, got.returncode, got.stdout.decode("utf-8", "surrogateescape"),
                                       got.stderr.decode("utf-8", "surrogateescape"))


# --- a replay artifact of an earlier run ------------------------------------------------------


def replay_artifact(run_dir: Path, case_id: str):
    """The replay artifact of the case's first failed trial in the run (GateInputError when none)."""
    from rubricgate.reports.replay import read_replays

    if not (run_dir / "replay").is_dir():
        raise GateInputError(str(run_dir), "replay/", "no replay folder", "give a run folder under reports/")
    artifact = next((a for a in read_replays(run_dir) if a.case.id == case_id), None)
    if artifact is None:
        raise GateInputError(str(run_dir / "replay"), case_id,
                             "no replay artifact for this case (only failed trials have one)",
                             "pick a case id from the run's failures")
    return artifact


def from_replay(run_dir: Path, case_id: str, repo: Path) -> Reviewed:
    """The files the reviewer saw in a failed trial (reports/<run>/replay/<case>-<trial>.json)."""
    artifact = replay_artifact(run_dir, case_id)
    out = Reviewed(origin=f"replay {run_dir.name}/{case_id} trial {artifact.trial.trial}")
    sources = dict(getattr(artifact.case, "workspace_paths", {}) or {})
    where = str(run_dir / "replay")
    for path, text in artifact.reviewed_files.items():
        _inside(path, where, "reviewed_files")
        _inside(sources.get(path, path), where, "workspace_paths")
        out.skills.append(path)
        out.files[path] = _capped(text, path, where)
        out.files.update(_beside(path, artifact.case.files, repo, sources, where))
    return out


MAX_TEXT_CHARS = 256_000  # one file of a recorded skill
MAX_TOTAL_CHARS = 4_000_000  # every file of one `record --from`


def _inside(path: str, where: str, field: str) -> None:
    """A replay artifact is a file a run (or anyone) wrote: its paths must stay in the repository."""
    parts = PurePosixPath(path).parts
    if not path or path.startswith("/") or "\\" in path or ".." in parts:
        raise GateInputError(where, field, f"path {path!r} leaves the repository",
                             "record from an artifact rubricgate wrote; paths are repository-relative")


def _capped(text: str, path: str, where: str) -> str:
    if len(text) > MAX_TEXT_CHARS:
        raise GateInputError(where, path, f"holds more than {MAX_TEXT_CHARS:,} characters",
                             "record a skill of ordinary size")
    return text


def _beside(skill: str, overlay: dict[str, str], repo: Path, sources: dict[str, str], where: str) -> dict[str, str]:
    """The rest of a replayed skill's folder as the reviewer saw it: the case's overlay, else the
    files the run copied in (`workspace_paths`: a fixture's folder without its expect.yaml), else
    the repository's copy today; regular text files under the size cap, inside the repository (no
    link out), at most MAX_FILES, MAX_DEPTH folders down. A fixture's expect.yaml (the answer
    key) is never taken: the reviewer never saw it, and a task holding it would show it."""
    folder = str(PurePosixPath(skill).parent) + "/"
    found = {p: _capped(t, p, where) for p, t in overlay.items() if p.startswith(folder) and p != skill}
    for p in found:
        _inside(p, where, "case.files")
    if found:
        return found
    seen = {p: s for p, s in sources.items() if p.startswith(folder) and p != skill}
    if seen:
        return _copied(seen, repo, where)
    top = (repo / sources.get(skill, skill)).parent
    if not top.is_dir() or not top.resolve().is_relative_to(repo.resolve()):
        return found
    return {folder + rel: text for rel, text in _text_files(top, repo.resolve()) if rel != ANSWER_KEY}


ANSWER_KEY = "expect.yaml"  # beside a fixture's files: never part of what a task shows the reviewer


def _copied(seen: dict[str, str], repo: Path, where: str) -> dict[str, str]:
    """{workspace path: text} of the files a run copied into the workspace, read from the repository."""
    out: dict[str, str] = {}
    for path, source in sorted(seen.items())[:MAX_FILES]:
        _inside(path, where, "workspace_paths")
        _inside(source, where, "workspace_paths")
        if PurePosixPath(source).name == ANSWER_KEY:
            continue
        text = _regular_text(repo / source, repo.resolve())
        if text is not None:
            out[path] = text
    return out


def _text_files(top: Path, repo: Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    total = 0
    for dirpath, dirs, files in os.walk(top):  # never into a linked folder
        rel_dir = Path(dirpath).relative_to(top)
        if len(rel_dir.parts) >= MAX_DEPTH:
            dirs.clear()
        for name in sorted(files):
            path = Path(dirpath) / name
            text = _regular_text(path, repo) if name != SKILL_FILE else None
            if text is None:
                continue
            total += len(text)
            if len(out) >= MAX_FILES or total > MAX_TOTAL_CHARS:
                return out
            out.append(((rel_dir / name).as_posix(), text))
    return out


def _regular_text(path: Path, repo: Path) -> str | None:
    """The file's text when it is a regular file inside the repository, under the cap, UTF-8."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_TEXT_CHARS:
            return None
        if not path.resolve().is_relative_to(repo):
            return None
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
