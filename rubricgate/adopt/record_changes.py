"""Where `record` gets a change to any files (suite.layout: files, or `--diff`): the patch and
the changed files as they are after it.

Each source returns Reviewed with `patch` (a unified diff) and the changed files' text at the
head, keyed by their repository path; the task reviews the patch and those files (record.py).
Binary files, files over the size cap, deleted files and symbolic links are in the patch only.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

from rubricgate.adopt.record_sources import (
    MAX_FILES,
    MAX_TEXT_CHARS,
    WORKTREE,
    Reviewed,
    _capped,
    _copied,
    _file,
    _git,
    _head_sha,
    _inside,
    _keep,
    _regular_text,
    _rev,
    _run_git,
    folder_changes,
    is_text,
    pr_changes,
    replay_artifact,
    undecoded_at,
)
from rubricgate.errors import GateInputError
from rubricgate.reports.github import GitHubClient, GitHubTarget
from rubricgate.suite.trees import merge_base

MAX_PATCH_CHARS = 2_000_000
_DIFF = re.compile(r"^(diff --git |--- \S|\+\+\+ \S|@@ )", re.M)


def changed_from_git(repo: Path, base: str, head: str, excluded: list[str]) -> Reviewed:
    """Files changed between the merge base of BASE and HEAD, read at HEAD, and the patch."""
    head_sha, base_sha = _rev(repo, head, "--head"), _rev(repo, base, "--base")
    fork = merge_base(repo, base, base_sha, head_sha)
    out = Reviewed(origin=f"git {base}..{head} at {head_sha[:12]}", patch_name=f"{head_sha[:12]}.diff")
    names = _within_cap(_names(folder_changes(repo, _git(repo, "--head", "diff", "--name-only", "--no-renames", "-z",
                                                         fork, head_sha)), excluded), out.origin)
    out.patch = _patch(repo, [fork, head_sha], names)
    out.removed = _deleted(repo, [fork, head_sha], excluded)
    present = _regular_at(repo, head_sha, names)
    for name in (n for n in names if n in present):
        text = _run_git(repo, "show", f"{head_sha}:./{name}")  # ./: from the folder, as `name`
        if text.returncode == 0 and len(text.stdout) <= MAX_TEXT_CHARS and is_text(text.stdout):
            out.files[name] = text.stdout
    return _checked(out)


def _regular_at(repo: Path, head_sha: str, names: list[str]) -> set[str]:
    """Those of `names` that are regular files at HEAD. A symbolic link's blob is the path it
    names: snapshotted, the workspace showed `app/link.py` as a file holding `run.sh` (the
    working-tree source never took a link); it is in the patch only, as a submodule's commit is."""
    if not names:
        return set()
    listing = _git(repo, "--head", "ls-tree", "-r", "-z", head_sha, "--", *names).split("\0")
    return {entry.split("\t", 1)[1] for entry in listing if entry.startswith(("100644 ", "100755 "))}


def changed_from_worktree(repo: Path, base: str, excluded: list[str]) -> Reviewed:
    """Files changed between the merge base of BASE and HEAD and the working tree (uncommitted and
    untracked included, ignored never), read from disk, and the patch."""
    base_sha, head_sha = _rev(repo, base, "--base"), _rev(repo, "HEAD", "--head")
    fork = merge_base(repo, base, base_sha, head_sha)
    diff = _git(repo, "--head", "diff", "--name-only", "--no-renames", "-z", fork)
    tracked = _names(folder_changes(repo, diff), excluded)
    untracked = _names(_git(repo, "--head", "ls-files", "-z", "--others", "--exclude-standard").split("\0"), excluded)
    out = Reviewed(origin=f"git {base}..{WORKTREE} (the working tree, uncommitted changes included)",
                   patch_name="worktree.diff")
    _within_cap([*tracked, *untracked], out.origin)
    out.patch = _patch(repo, [fork], tracked) + "".join(_new_file_patch(repo, n) for n in untracked)
    out.removed = _deleted(repo, [fork], excluded)
    for name in [*tracked, *untracked]:
        text = _regular_text(repo / name, repo.resolve())
        if text is not None and "\0" not in text:
            out.files[name] = text
    return _checked(out)


def changed_from_pull_request(target: GitHubTarget, pr: int, excluded: list[str], prefix: str = "") -> Reviewed:
    """A pull request's changed files at its head commit, and its patch (GitHub's per-file hunks;
    a file GitHub shows no patch for, binary or too large, is named in it without one); named from
    `prefix`'s folder (git_prefix: a monorepo's folder holding the config), as `changed_from_git`'s."""
    client = GitHubClient(target)
    head = _head_sha(client, pr)
    listed = [f for f in pr_changes(client, pr, prefix) if _keep(f["filename"], excluded)]
    out = Reviewed(origin=f"pull request #{pr} at {head[:12]}", patch_name=f"pr-{pr}.diff")
    _within_cap(listed, out.origin)
    out.patch = "".join(_file_patch(f) for f in listed)
    out.removed = sorted({*(f["filename"] for f in listed if f.get("status") == "removed"),
                          *(f["previous_filename"] for f in listed
                            if f.get("status") == "renamed" and f.get("previous_filename")
                            and _keep(f["previous_filename"], excluded))})
    for f in (f for f in listed if f.get("status") != "removed"):
        text = _file(client, prefix + f["filename"], head)
        if len(text) <= MAX_TEXT_CHARS and "\0" not in text:
            out.files[f["filename"]] = text
    return _checked(out)


def changed_from_replay(run_dir: Path, case_id: str, repo: Path) -> Reviewed:
    """What the reviewer was given in a failed trial of a case of any files, at the paths it saw:
    the reviewed files (a fixture's at their workspace path), the case's overlay and the fixture's
    other files the run copied in (never its expect.yaml). Not the folder around a reviewed file:
    a top-level file's folder is the repository, its answer key and .git with it."""
    artifact = replay_artifact(run_dir, case_id)
    where, copied = str(run_dir / "replay"), dict(artifact.case.workspace_paths or {})
    shown = {source: at for at, source in copied.items()}  # a fixture's file -> where the reviewer saw it
    out = Reviewed(origin=f"replay {run_dir.name}/{case_id} trial {artifact.trial.trial}", at_own_paths=True)
    for path, text in [*((shown.get(p, p), t) for p, t in artifact.reviewed_files.items()),
                       *artifact.case.files.items()]:
        _inside(path, where, "reviewed_files")
        out.files.setdefault(path, _capped(text, path, where))
    out.skills = [shown.get(p, p) for p in artifact.reviewed_files]
    out.removed = list(artifact.case.removed)  # what the reviewer's workspace did not hold
    out.files.update(_copied({at: s for at, s in copied.items() if at not in out.files}, repo, where))
    return out


def _file_patch(f: dict) -> str:
    """One file's part of the patch, as git writes it. A rename keeps its old name (a pure rename,
    with no hunks, read "Binary files differ" before: a rename is no binary file)."""
    name, status = f["filename"], f.get("status")
    was = f.get("previous_filename") if status == "renamed" and isinstance(f.get("previous_filename"), str) else None
    source = was or name
    old, new = (("/dev/null" if status == "added" else f"a/{source}"),
                ("/dev/null" if status == "removed" else f"b/{name}"))
    hunks = f.get("patch") if isinstance(f.get("patch"), str) else ""
    moved = f"rename from {was}\nrename to {name}\n" if was else ""
    if was and not hunks:
        return f"diff --git a/{was} b/{name}\nsimilarity index 100%\n{moved}"
    body = hunks.rstrip("\n") + "\n" if hunks else "Binary files differ, or too large to show\n"
    return f"diff --git a/{source} b/{name}\n{moved}--- {old}\n+++ {new}\n{body}"


def from_diff(path: Path) -> Reviewed:
    """A .diff or .patch file as it is: the task reviews the patch alone."""
    shown = str(path)
    try:  # a regular file by its size; anything else (/dev/zero, a pipe) read to one byte past the cap, never whole
        with path.open("rb") as handle:
            info = os.fstat(handle.fileno())
            too_large = stat.S_ISREG(info.st_mode) and info.st_size > MAX_PATCH_CHARS
            raw = b"" if too_large else handle.read(MAX_PATCH_CHARS + 1)
    except OSError as exc:
        raise GateInputError(shown, "--diff", f"cannot read ({exc.strerror})",
                             "give an existing .diff or .patch file") from None
    if too_large or len(raw) > MAX_PATCH_CHARS:
        raise GateInputError(shown, "--diff", f"over {MAX_PATCH_CHARS:,} bytes", "record a smaller change")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise GateInputError(shown, "--diff", "not UTF-8 text",
                             "give a unified diff (git diff > change.diff)") from None
    if not _DIFF.search(text):
        raise GateInputError(shown, "--diff", "not a unified diff (no 'diff --git', '---', '+++' or '@@' line)",
                             "give the output of `git diff` or `diff -u`")
    if problem := _unparsed(text):
        raise GateInputError(shown, "--diff", f"not a patch git can read ({problem})",
                             "give the output of `git diff` or `diff -u`, unedited")
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", path.name).strip("-") or "change.diff"
    return Reviewed(origin=f"patch {path.name}", patch=text, patch_name=name)


def _unparsed(text: str) -> str:
    """Why git cannot read `text` as a patch ("" when it can): `git apply --numstat` parses
    every hunk without touching any tree. A NUL byte is refused first (git stops reading there)."""
    if "\0" in text:
        return "it holds a NUL byte"
    try:
        got = subprocess.run(["git", "apply", "--numstat", "-"], input=text.encode(), capture_output=True,
                             cwd="/", check=False, timeout=60,
                             env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"git apply could not run: {exc}"
    if got.returncode == 0:
        return ""
    lines = got.stderr.decode(errors="replace").strip().splitlines()
    # git warns as it reads (`<stdin>:8: trailing whitespace.`, every line of a CRLF diff) and
    # errs once it cannot go on: the cause is its first error line, not its first line.
    errors = [line for line in lines if line.startswith(("error: ", "fatal: "))]
    first = next(iter(errors or lines), f"git apply exited {got.returncode}")
    return first.removeprefix("error: ").removeprefix("fatal: ")


def _deleted(repo: Path, revs: list[str], excluded: list[str]) -> list[str]:
    """The files the change deletes (a rename's old path among them: --no-renames lists it as a
    deletion), named from `repo`'s folder: the task removes them from the workspace, which is
    otherwise the current checkout and would still hold them."""
    listing = _git(repo, "--head", "diff", "--name-only", "--no-renames", "--diff-filter=D", "-z", *revs)
    return _names(folder_changes(repo, listing), excluded)


def _names(names: list[str], excluded: list[str]) -> list[str]:
    return sorted({n for n in names if n and _keep(n, excluded)})


def _within_cap(changed: list, origin: str) -> list:
    """The changed files, when one task can review them all: cut to the first MAX_FILES, the
    patch lost the rest unsaid (the file holding the problem with them) and the task still
    expected what the whole change deserved."""
    if len(changed) > MAX_FILES:
        raise GateInputError(origin, "changed files", f"{len(changed)} changed files (outside the reviewer and the "
                             f"suite), over the {MAX_FILES} one task reviews",
                             "record a narrower range (a --base nearer the head), or the part that matters with --diff")
    return changed


def _patch(repo: Path, revs: list[str], names: list[str]) -> str:
    """`git diff` of those files (no colour, no external diff tool), named from `repo`'s folder as
    the task's files are (--relative: git names them from the top of a monorepo)."""
    if not names:
        return ""
    return _git(repo, "--head", "diff", "--no-color", "--no-ext-diff", "--no-renames", "--relative", *revs, "--",
                *names)


def _new_file_patch(repo: Path, name: str) -> str:
    """An untracked file as a new-file patch (git diff --no-index exits 1 when the files differ)."""
    got = _run_git(repo, "diff", "--no-color", "--no-ext-diff", "--no-index", "--", "/dev/null", name)
    return got.stdout if got.returncode in (0, 1) else ""


def _checked(out: Reviewed) -> Reviewed:
    """The change as a task can hold it: some patch, under the cap, every byte UTF-8."""
    _check_utf8(out)
    if not out.patch.strip():
        raise GateInputError(out.origin, "changed files", "no changed file found (outside the reviewer and the suite)",
                             "pick refs between which the reviewed code changed")
    if len(out.patch) > MAX_PATCH_CHARS:
        raise GateInputError(out.origin, "patch", f"the change is over {MAX_PATCH_CHARS:,} characters",
                             "record a smaller change")
    return out


_HEADER = re.compile(r"^diff --git a/.* b/(.*)$", re.M)


def _check_utf8(out: Reviewed) -> None:
    """A task file is UTF-8 text: a changed file in another encoding (its lines in the patch) or
    under a name that is not UTF-8 is an input error naming it, before anything is written."""
    name = next((n for n in out.files if undecoded_at(n) >= 0), "")
    if name:
        raise GateInputError(ascii(name)[1:-1], "file name", "not UTF-8", "rename the file, or record without it")
    at = undecoded_at(out.patch)
    if at >= 0:
        headers = list(_HEADER.finditer(out.patch, 0, at))
        where = headers[-1].group(1) if headers else out.origin
        raise GateInputError(where, "patch", f"not UTF-8 text (byte {ord(out.patch[at]) - 0xDC00:#04x} in its lines)",
                             "re-encode the file as UTF-8, or record with --diff a patch that leaves it out")
