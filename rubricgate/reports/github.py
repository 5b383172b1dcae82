"""`publish`: upsert the PR comment and keep the gate's label in step, via the GitHub REST API.

Every non-2xx answer is raised as GitHubError: a publish that silently did nothing would look
exactly like one that worked. The token is sent only in the Authorization header and never
appears in messages.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rubricgate import boundary, exitcodes
from rubricgate.errors import GateInputError
from rubricgate.models.results import Decision, Summary
from rubricgate.reports.comment import MARKER

DEFAULT_LABEL = "rubricgate-regression"
# Who posts the comment when GitHub does not say (GET /user): Actions' GITHUB_TOKEN, whose comments
# are this account's (`publish --comment-author` names another, for an app's token).
DEFAULT_AUTHOR = "github-actions[bot]"
PAGE_SIZE = 100
MAX_PAGES = 50  # 5,000 comments: far beyond any real PR, and a bound on a misbehaving server
TIMEOUT_S = 30.0


class GitHubError(Exception):
    """The API refused or failed; the message names the request and GitHub's answer (`status`:
    the HTTP status it answered with, None when there was no answer)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """urllib would resend the Authorization header to wherever a redirect points: refuse instead."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: PLR0913 (urllib's signature)
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


@dataclass(frozen=True)
class GitHubTarget:
    """Where to publish: API root, owner/name and the token, as Actions sets them."""

    api_url: str
    repository: str
    token: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GitHubTarget:
        """Read GITHUB_API_URL, GITHUB_REPOSITORY and GITHUB_TOKEN; bad values are input errors."""
        env = os.environ if env is None else env
        api = env.get("GITHUB_API_URL", "").strip() or "https://api.github.com"
        if urllib.parse.urlsplit(api).scheme not in ("http", "https"):
            raise GateInputError("environment", "GITHUB_API_URL", f"not an http(s) URL: {api!r}",
                                 "unset it to use https://api.github.com")
        repo = env.get("GITHUB_REPOSITORY", "").strip()
        if repo.count("/") != 1 or not all(repo.split("/")):
            raise GateInputError("environment", "GITHUB_REPOSITORY", f"expected owner/name, got {repo!r}",
                                 "set it as Actions does, e.g. octo-org/octo-repo")
        token = env.get("GITHUB_TOKEN", "").strip()
        if not token:
            raise GateInputError("environment", "GITHUB_TOKEN", "not set",
                                 "pass `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}` to the step")
        return cls(api.rstrip("/"), repo, token)


@dataclass(frozen=True)
class PublishResult:
    """What publish did, for the one-line report on stdout."""

    comment_id: int
    comment_action: str  # created | updated | not posted
    label_action: str  # added | removed | kept | absent | untouched


class GitHubClient:
    """The five REST calls publish needs, with errors made loud."""

    def __init__(self, target: GitHubTarget) -> None:
        self.target = target
        self.base = f"{target.api_url}/repos/{target.repository}"

    def request(self, method: str, path: str, body: Any = None, under_repo: bool = True) -> Any:
        """One API call (a path under the repository's, else the API's own); returns decoded JSON
        (None for 204); raises GitHubError otherwise."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        url = (self.base if under_repo else self.target.api_url) + path
        req = urllib.request.Request(url, data=data, method=method, headers={
            "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
            "Authorization": f"Bearer {self.target.token}", "User-Agent": "rubricgate",
            "Content-Type": "application/json"})
        try:
            with _OPENER.open(req, timeout=TIMEOUT_S) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise GitHubError(f"GitHub API {method} {path}: HTTP {exc.code} {_message(exc)}", exc.code) from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise GitHubError(f"GitHub API {method} {path}: "
                              f"cannot connect to {self.target.api_url}: {reason}") from None
        return _decode(raw, method, path)

    def find_comment(self, pr: int, author: str = DEFAULT_AUTHOR) -> dict[str, Any] | None:
        """The first comment on the PR that is ours (is_ours), paging through all comments."""
        for page in range(1, MAX_PAGES + 1):
            batch = self.request("GET", f"/issues/{pr}/comments?per_page={PAGE_SIZE}&page={page}")
            if not isinstance(batch, list):
                raise GitHubError(f"GitHub API GET /issues/{pr}/comments: expected a list, got {type(batch).__name__}")
            hit = next((c for c in batch if is_ours(c, author)), None)
            if hit is not None or len(batch) < PAGE_SIZE:
                return hit
        return None

    def upsert_comment(self, pr: int, body: str, author: str = DEFAULT_AUTHOR) -> tuple[int, str]:
        """Edit our earlier comment when there is one, else create it."""
        edited = self.edit_comment(pr, body, author)
        if edited is not None:
            return edited, "updated"
        made = self.request("POST", f"/issues/{pr}/comments", {"body": body})
        return _comment_id(made, "POST"), "created"

    def edit_comment(self, pr: int, body: str, author: str = DEFAULT_AUTHOR) -> int | None:
        """Edit our earlier comment and return its id; None when there is none (nothing posted)."""
        existing = self.find_comment(pr, author)
        if existing is None:
            return None
        return _comment_id(self.request("PATCH", f"/issues/comments/{existing['id']}", {"body": body}), "PATCH")

    def labels(self, pr: int) -> set[str]:
        """Names of the labels currently on the PR."""
        got = self.request("GET", f"/issues/{pr}/labels?per_page={PAGE_SIZE}")
        return {str(item.get("name", "")) for item in got or []}

    def sync_label(self, pr: int, label: str, wanted: bool) -> str:
        """Add or remove the label so it matches the current state; report what changed."""
        present = label in self.labels(pr)
        if wanted and not present:
            self.request("POST", f"/issues/{pr}/labels", {"labels": [label]})
            return "added"
        if not wanted and present:
            # Only delete a label we saw: a 404 here is then a real error, not "already gone".
            self.request("DELETE", f"/issues/{pr}/labels/{urllib.parse.quote(label, safe='')}")
            return "removed"
        return "kept" if present else "absent"


def posting_account(client: GitHubClient) -> str:
    """The account this token posts as: GET /user names a personal token's. Actions' GITHUB_TOKEN
    cannot read it (403) and posts as github-actions[bot]; an app's token names itself with
    `publish --comment-author`."""
    try:
        me = client.request("GET", "/user", under_repo=False)
    except GitHubError as exc:
        if exc.status not in (401, 403, 404):  # no answer, or a 5xx: the token's account is unknown,
            raise  # and guessing Actions' posted a second comment beside a personal token's own
        return DEFAULT_AUTHOR
    login = me.get("login") if isinstance(me, dict) else None
    return login if isinstance(login, str) and login else DEFAULT_AUTHOR


def is_ours(comment: Any, author: str) -> bool:
    """A comment the gate wrote: posted by `author` and starting with the marker. Anyone can post
    the marker: taken anywhere in anyone's comment, a comment posted before the gate's first
    was edited into the report and stayed its author's to edit (a REGRESSION rewritten as a
    PASS), and a human comment quoting the marker was overwritten."""
    if not isinstance(comment, dict):
        return False
    user = comment.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    return login == author and str(comment.get("body", "")).startswith(MARKER)


def _message(exc: urllib.error.HTTPError) -> str:
    """GitHub's own error message from the body, when it sent one."""
    try:
        payload = boundary.loads(exc.read().decode("utf-8", "replace") or "{}")
    except (ValueError, OSError):
        return exc.reason or ""
    msg = payload.get("message", "") if isinstance(payload, dict) else ""
    return (msg or exc.reason or "")[:300]


def _decode(raw: bytes, method: str, path: str) -> Any:
    if not raw.strip():
        return None
    try:
        return boundary.loads(raw)
    except ValueError:
        raise GitHubError(f"GitHub API {method} {path}: answer is not JSON") from None


def _comment_id(made: Any, method: str) -> int:
    if not isinstance(made, dict) or not isinstance(made.get("id"), int):
        raise GitHubError(f"GitHub API {method} comment: answer has no comment id")
    return made["id"]


def publish(summary: Summary, body: str, pr: int, target: GitHubTarget, label: str = DEFAULT_LABEL,
            decision: Decision | None = None, author: str | None = None) -> PublishResult:
    """Upsert the comment (the one `author` posted, by default the token's own account), then sync
    the label: added on regression, removed on pass.

    `decision`: the one that gates the pull request when it is not the run's own (the PR
    workflow's `compare --base`). A decision that could not judge (an error, or INCONCLUSIVE with
    exit 2) leaves the label as it is: the state is unknown.
    """
    client = GitHubClient(target)
    comment_id, action = client.upsert_comment(pr, body, author or posting_account(client))
    decided = decision or summary.decision
    unknown = decided.status == "error" or decided.exit_code == exitcodes.CANNOT_JUDGE
    label_action = "untouched" if unknown else client.sync_label(pr, label, decided.status == "regression")
    return PublishResult(comment_id, action, label_action)


def publish_unjudged(body: str, pr: int, target: GitHubTarget, label: str = DEFAULT_LABEL, unchanged: bool = False,
                     author: str | None = None) -> PublishResult:
    """A push the gate judged nothing at. `unchanged` (no gated file changed since the base): an
    earlier comment is edited to say so, none is posted on a pull request the gate never spoke
    on, and the label goes (what it flagged is gone). Else (the gate could not run): the comment
    is upserted and the label left as it is, as for any could-not-judge decision."""
    client = GitHubClient(target)
    author = author or posting_account(client)
    if not unchanged:
        return PublishResult(*client.upsert_comment(pr, body, author), "untouched")
    edited = client.edit_comment(pr, body, author)
    label_action = client.sync_label(pr, label, False)
    return PublishResult(edited or 0, "updated" if edited is not None else "not posted", label_action)
