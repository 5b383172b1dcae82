"""A tiny GitHub REST server on 127.0.0.1: issue comments and labels (publish), pull requests'
changed files and repository contents at a commit (record).

Implements the endpoints publish uses with GitHub's status codes, including its error
answers (401 bad credentials, 403, 404, 422), which tests inject per method and path.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote, urlsplit

from tests.loopback import LoopbackServer

TOKEN = "ghs_test_token_value_123456"
BOT = "github-actions[bot]"  # who Actions' GITHUB_TOKEN posts as


class FakeGitHub(LoopbackServer):
    """State of one repository: comments and labels per issue, plus injected failures."""

    def __init__(self, repo: str = "octo/repo") -> None:
        self.repo = repo
        self.comments: dict[int, dict] = {}  # id -> {"id", "issue", "body"}
        self.labels: dict[int, set[str]] = {}
        self.fail: dict[tuple[str, str], tuple[int, str]] = {}  # (METHOD, path regex) -> answer
        self.requests: list[tuple[str, str]] = []
        self.next_id = 1000
        self.pulls: dict[int, dict] = {}  # number -> {"head": sha, "files": [{"filename", "status"}]}
        self.trees: dict[str, dict[str, str | bytes]] = {}  # commit sha -> {path: text, or a binary file's bytes}
        self.token_login: str | None = None  # GET /user answers it (a personal token); None: 403, as for GITHUB_TOKEN
        self.lock = threading.Lock()
        self.serve(_handler(self))

    @property
    def url(self) -> str:
        return self.origin

    def env(self, **extra: str) -> dict[str, str]:
        """The variables Actions would set for this server."""
        return {"GITHUB_API_URL": self.url, "GITHUB_REPOSITORY": self.repo, "GITHUB_TOKEN": TOKEN} | extra

    def add_comment(self, issue: int, body: str, user: str = BOT) -> int:
        with self.lock:
            self.next_id += 1
            self.comments[self.next_id] = {"id": self.next_id, "issue": issue, "body": body,
                                           "user": {"login": user, "type": "Bot" if user.endswith("[bot]") else "User"}}
            return self.next_id

    def add_pull(self, number: int, head: str, files: dict[str, str], changed: dict[str, str],
                 patches: dict[str, str] | None = None) -> None:
        """A PR whose head commit holds `files`; `changed` maps filename -> status (added, modified,
        removed); `patches` filename -> the hunks GitHub shows for it."""
        self.trees[head] = dict(files)
        self.pulls[number] = {"head": head, "files": [{"filename": f, "status": s} | (
            {"patch": patches[f]} if patches and f in patches else {}) for f, s in changed.items()]}

    def contents(self, path: str, ref: str) -> object | None:
        """The contents API's answer: a file object, a directory listing, or None (404)."""
        tree = self.trees.get(ref, {})
        if path in tree:
            raw = tree[path] if isinstance(tree[path], bytes) else tree[path].encode()  # bytes: a binary file
            return {"type": "file", "path": path, "name": path.rsplit("/", 1)[-1], "encoding": "base64",
                    "content": base64.encodebytes(raw).decode()}  # GitHub wraps base64 at 60 columns
        children = sorted({p[len(path) + 1:].split("/", 1)[0] for p in tree if p.startswith(path + "/")})
        return [{"type": "file" if f"{path}/{c}" in tree else "dir", "path": f"{path}/{c}", "name": c}
                for c in children] or None

    def issue_comments(self, issue: int) -> list[dict]:
        return [c for c in self.comments.values() if c["issue"] == issue]


def _handler(gh: FakeGitHub):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep pytest output clean
            return

        def _send(self, status: int, payload: object = None) -> None:
            raw = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            if status in (301, 302, 307, 308):
                self.send_header("Location", f"{gh.url}/elsewhere")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _body(self) -> dict:
            n = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(n) or b"{}")

        def _route(self, method: str) -> None:
            parts = urlsplit(self.path)
            gh.requests.append((method, parts.path))
            for (m, pattern), (status, msg) in gh.fail.items():
                if m == method and re.search(pattern, parts.path):
                    return self._send(status, {"message": msg, "documentation_url": "https://docs.github.com/rest"})
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self._send(401, {"message": "Bad credentials"})
            if parts.path == "/user" and method == "GET":
                return self._send(*((200, {"login": gh.token_login}) if gh.token_login else
                                    (403, {"message": "Resource not accessible by integration"})))
            prefix = f"/repos/{gh.repo}"
            if not parts.path.startswith(prefix + "/"):
                return self._send(404, {"message": "Not Found"})
            return self._dispatch(method, parts.path[len(prefix):], parts.query)

        def _dispatch(self, method: str, path: str, query: str) -> None:
            if method == "GET" and (path.startswith("/pulls/") or path.startswith("/contents/")):
                return self._read_only(path, query)
            if m := re.fullmatch(r"/issues/(\d+)/comments", path):
                issue = int(m[1])
                if method == "GET":
                    return self._send(200, _page(gh.issue_comments(issue), query))
                if method == "POST":
                    cid = gh.add_comment(issue, self._body()["body"], gh.token_login or BOT)
                    return self._send(201, gh.comments[cid])
            if (m := re.fullmatch(r"/issues/comments/(\d+)", path)) and method == "PATCH":
                cid = int(m[1])
                if cid not in gh.comments:
                    return self._send(404, {"message": "Not Found"})
                gh.comments[cid]["body"] = self._body()["body"]
                return self._send(200, gh.comments[cid])
            if m := re.fullmatch(r"/issues/(\d+)/labels", path):
                labels = gh.labels.setdefault(int(m[1]), set())
                if method == "POST":
                    labels.update(self._body()["labels"])
                if method in ("GET", "POST"):
                    return self._send(200, [{"name": n} for n in sorted(labels)])
            if (m := re.fullmatch(r"/issues/(\d+)/labels/([^/]+)", path)) and method == "DELETE":
                labels, name = gh.labels.setdefault(int(m[1]), set()), unquote(m[2])
                if name not in labels:
                    return self._send(404, {"message": "Label does not exist"})
                labels.discard(name)
                return self._send(200, [{"name": n} for n in sorted(labels)])
            return self._send(404, {"message": "Not Found"})

        def _read_only(self, path: str, query: str) -> None:
            params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
            if (m := re.fullmatch(r"/pulls/(\d+)", path)) and int(m[1]) in gh.pulls:
                return self._send(200, {"number": int(m[1]), "head": {"sha": gh.pulls[int(m[1])]["head"]}})
            if (m := re.fullmatch(r"/pulls/(\d+)/files", path)) and int(m[1]) in gh.pulls:
                return self._send(200, _page(gh.pulls[int(m[1])]["files"], query))
            if m := re.fullmatch(r"/contents/(.+)", path):
                found = gh.contents(unquote(m[1]), params.get("ref", ""))
                if found is not None:
                    return self._send(200, found)
            return self._send(404, {"message": "Not Found"})

        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

        def do_PATCH(self) -> None:
            self._route("PATCH")

        def do_DELETE(self) -> None:
            self._route("DELETE")

    return Handler


def _page(items: list[dict], query: str) -> list[dict]:
    params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
    size, page = int(params.get("per_page", 30)), int(params.get("page", 1))
    return items[(page - 1) * size: page * size]
