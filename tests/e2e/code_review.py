"""A code-diff reviewer of the shape teams run as their AI PR reviewer, and a scripted model for it.

The reviewer (written into a test repository): a TOML prompt template whose system prompt
includes its rules with Jinja (`{% include 'rules.j2' %}`), a script that renders it around the
change's patch and makes one tool-less chat/completions call, and prints the model's answer: YAML
with free-text issue headers (`review.key_issues_to_review[].issue_header`), as PR-Agent's
reviewer answers. rubricgate reads that answer through `verdict:` in rubricgate.yaml; there is
no adapter script.

The model (ScriptedReviewModel, OpenAI-compatible, 127.0.0.1) is stochastic the way a served
model is: for every rule the system prompt states (found by its topic words, so a rewording
keeps it) and the patch violates, it reports the rule's issue, missing it with probability
`miss`; with probability `spurious` it adds one issue the patch does not have. A rule deleted
from the prompt is never reported.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import git
from tests.loopback import LoopbackServer


@dataclass(frozen=True)
class Topic:
    """A rule as the model knows it: the words that state it, what violates it, its header."""

    id: str
    words: str  # regex over the system prompt: is the rule stated?
    violation: str  # regex over the patch's added lines
    header: str
    severity: str


TOPICS = (
    Topic("sql-injection", r"sql injection", r"execute\(.*(%|\+|\.format\(|f['\"])", "Possible SQL Injection", "critical"),
    Topic("hardcoded-secret", r"hard-?coded credential", r"(api_key|token|password)\s*=\s*['\"][^'\"]{6,}",
          "Hard-coded credential", "critical"),
    Topic("broad-except", r"broad exception", r"except( Exception)?\s*:\s*(pass)?$", "Broad exception handler", "warning"),
    Topic("missing-tests", r"missing tests", r"^\+\+\+ b/src/", "Missing tests for new code", "warning"),
    Topic("debug-print", r"debug print", r"^\+\s*print\(", "Leftover debug print", "suggestion"),
)

RULES_J2 = """\
- SQL injection: flag any query built by string formatting or concatenation.
- Hard-coded credentials: flag API keys, tokens or passwords written into the code.
- Broad exception handlers: flag `except:` or `except Exception:` that swallow errors.
- Missing tests: flag new code under src/ that comes without a test.
- Debug prints: flag leftover print() calls.
"""
# The benign edit: every rule reworded, the same rules stated.
RULES_J2_REWORDED = """\
- SQL injection: report queries assembled from strings (formatting, concatenation, f-strings).
- Hard-coded credentials: report keys, tokens and passwords that appear literally in source.
- Broad exception handlers: report `except:` / `except Exception:` blocks that hide failures.
- Missing tests: report changes to src/ that add behaviour with no test beside them.
- Debug prints: report print() calls left in the change.
"""
# The regressing edit: two rules deleted.
RULES_J2_TWO_DELETED = "".join(line + "\n" for line in RULES_J2.splitlines()
                               if not line.startswith(("- SQL injection", "- Broad exception")))

PROMPT_TOML = '''\
# The reviewer's prompt: a TOML template rendered with Jinja by review.py.
[pr_review_prompt]
system = """You are a careful reviewer of pull requests.
Review only the lines the patch adds. For each problem, add one entry under key_issues_to_review
with a short issue_header naming the problem.

Rules:
{% include 'rules.j2' %}
Answer with YAML only, in a ```yaml fence."""

user = """The patch:
{{ diff }}"""
'''

REVIEW_PY = '''\
"""Render the TOML prompt (Jinja), make one chat/completions call, print the model's answer."""
import json
import os
import sys
import tomllib
import urllib.request
from pathlib import Path

import jinja2

HERE = Path(__file__).resolve().parent


def main(listing: str, workspace: str) -> None:
    paths = [line.strip() for line in Path(listing).read_text().splitlines() if line.strip()]
    diff = "\\n".join((Path(workspace) / p).read_text() for p in paths if p.endswith((".diff", ".patch")))
    prompt = tomllib.loads((HERE / "pr_review.toml").read_text())["pr_review_prompt"]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE)), undefined=jinja2.StrictUndefined)
    messages = [{"role": "system", "content": env.from_string(prompt["system"]).render()},
                {"role": "user", "content": env.from_string(prompt["user"]).render(diff=diff)}]
    body = json.dumps({"model": "scripted-reviewer", "messages": messages, "temperature": 0.2}).encode()
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json",
                                              "Authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "")})
    with urllib.request.urlopen(request, timeout=60) as response:
        print(json.load(response)["choices"][0]["message"]["content"])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
'''

# The extractor, in rubricgate.yaml: the reviewer's YAML as it is, headers -> rules with severities,
# each rule found in rules.j2 by its statement.
VERDICT = {
    "format": "yaml",
    "findings": {"path": "review.key_issues_to_review", "title": "issue_header", "file": "relevant_file",
                 "line": "start_line", "issue": "issue_content"},
    "rules": [
        {"id": "sql-injection", "severity": "critical", "match": "(?i)sql injection", "statement": "(?im)^- sql injection"},
        {"id": "hardcoded-secret", "severity": "critical", "match": "(?i)hard-?coded (credential|secret|key)",
         "statement": "(?im)^- hard-coded credentials"},
        {"id": "broad-except", "severity": "warning", "match": "(?i)broad exception|bare except",
         "statement": "(?im)^- broad exception"},
        {"id": "missing-tests", "severity": "warning", "match": "(?i)missing tests?", "statement": "(?im)^- missing tests"},
        {"id": "debug-print", "severity": "suggestion", "match": "(?i)debug print", "statement": "(?im)^- debug prints"},
    ],
}


def _patch(path: str, added: list[str], context: str = "def handler(request):") -> str:
    body = "".join(f"+{line}\n" for line in added)
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -10,1 +10,{len(added) + 1} @@\n"
            f" {context}\n{body}")


# fixture name -> (tier, patch, expected rules). Twelve cases: four BLOCK, four WARN, four PASS.
CASES: dict[str, tuple[str, str, list[str]]] = {
    "orders-lookup": ("block", _patch("app/orders.py", ["    cur.execute('SELECT * FROM orders WHERE id = %s' % oid)"]),
                      ["sql-injection"]),
    "user-search": ("block", _patch("app/users.py", ["    cur.execute(\"SELECT * FROM users WHERE name = '\" + q + \"'\")"]),
                    ["sql-injection"]),
    "billing-client": ("block", _patch("app/billing.py", ["API_KEY = 'sk_live_4242abcdef9876'"]), ["hardcoded-secret"]),
    "mailer-config": ("block", _patch("app/mailer.py", ["    password = 'hunter2-prod-2024'"]), ["hardcoded-secret"]),
    "retry-loop": ("warn", _patch("app/retry.py", ["    try:", "        send(msg)", "    except:", "        pass"]),
                   ["broad-except"]),
    "cache-warmup": ("warn", _patch("app/cache.py", ["    try:", "        warm()", "    except Exception:", "        pass"]),
                     ["broad-except"]),
    "pricing-rule": ("warn", _patch("src/pricing.py", ["def discount(total):", "    return total * 0.9"]),
                     ["missing-tests"]),
    "tax-rounding": ("warn", _patch("src/tax.py", ["def round_tax(x):", "    return round(x, 2)"]), ["missing-tests"]),
    "readme-typo": ("pass", _patch("docs/usage.md", ["Run `make serve` to start the server."], "## Usage"), []),
    "log-format": ("pass", _patch("app/log.py", ["    logger.info('order %s shipped', oid)"]), []),
    "debug-output": ("pass", _patch("app/jobs.py", ["    print('job done')"]), ["debug-print"]),
    "param-query": ("pass", _patch("app/report.py", ["    cur.execute('SELECT * FROM t WHERE id = ?', (rid,))"]), []),
}


@dataclass
class ScriptedReviewModel(LoopbackServer):
    """chat/completions (not streamed) answering as a code reviewer whose rules come from the prompt."""

    miss: float = 0.04
    spurious: float = 0.03
    seed: int | None = None
    calls: Counter = field(default_factory=Counter)  # answers given per (prompt, patch)
    requests: int = 0

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.serve(self._handler())

    def _rng(self, system: str, patch: str) -> random.Random:
        """The n-th answer to one (prompt, patch) draws from its own stream: with a seed, each case's
        answers are the same whatever order concurrent trials reach the server in."""
        key = hashlib.sha256(f"{system}\0{patch}".encode()).hexdigest()
        with self.lock:
            self.calls[key] += 1
            n = self.calls[key]
        return random.Random(f"{self.seed}:{key}:{n}" if self.seed is not None else None)

    def answer(self, system: str, patch: str) -> str:
        """The review of `patch` by a model told the rules in `system`."""
        stated = [t for t in TOPICS if re.search(t.words, system, re.I)]
        added = "\n".join(line for line in patch.splitlines() if line.startswith(("+", "+++")))
        rng = self._rng(system, patch)
        issues = [t for t in stated if re.search(t.violation, added, re.M | re.I) and rng.random() >= self.miss]
        clean = [t for t in stated if t not in issues]
        if clean and rng.random() < self.spurious:
            issues.append(rng.choice(clean))
        file = next(iter(re.findall(r"^\+\+\+ b/(\S+)", patch, re.M)), "")
        review = {"review": {"estimated_effort_to_review_[1-5]": 2, "relevant_tests": "No",
                             "key_issues_to_review": [{"relevant_file": file, "issue_header": t.header,
                                                       "issue_content": f"{t.header.lower()} in the added lines",
                                                       "start_line": 11} for t in issues],
                             "security_concerns": "No"}}
        return "```yaml\n" + yaml.safe_dump(review, sort_keys=False) + "```\n"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                messages = body.get("messages") or []
                system = "\n".join(m.get("content", "") for m in messages if m.get("role") == "system")
                patch = "\n".join(m.get("content", "") for m in messages if m.get("role") == "user")
                with model.lock:
                    model.requests += 1
                text = model.answer(system, patch)
                out = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "model": body.get("model"),
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": text}}],
                                  "usage": {"prompt_tokens": 100, "completion_tokens": 50}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        return Handler


def cli(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, list(args), env=env)


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", message)


def adopt(repo: Path, endpoint: str, gate: dict | None = None) -> Path:
    """A repository with the code-diff reviewer, adopted with `rubricgate init --agent command`,
    the extractor configured in rubricgate.yaml (no adapter script), twelve fixtures, committed."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "app").mkdir()
    (repo / "app/__init__.py").write_text("")
    (repo / "reviewer").mkdir()
    (repo / "reviewer/pr_review.toml").write_text(PROMPT_TOML)
    (repo / "reviewer/rules.j2").write_text(RULES_J2)
    (repo / "reviewer/review.py").write_text(REVIEW_PY)
    commit(repo, "the team's reviewer")
    command = f"{sys.executable} {{workspace}}/reviewer/review.py {{changed_files}} {{workspace}}"
    got = cli("init", "--repo", str(repo), "--agent", "command", "--command", command, "--prompt",
              "reviewer/pr_review.toml", "--skill", "reviewer/review.py", "--rubric", "reviewer/rules.j2",
              "--secret", "OPENAI_API_KEY", "--endpoint-env", "OPENAI_BASE_URL", "--pip", "rubricgate==0.1.0")
    assert got.exit_code == 0, got.output
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["verdict"] = VERDICT
    config["gate"].update(gate or {})
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    for name, (tier, patch, rules) in CASES.items():
        folder = repo / "fixtures" / tier / name
        folder.mkdir(parents=True)
        (folder / "change.diff").write_text(patch)
        if rules and tier != "pass":
            (folder / "expect.yaml").write_text(yaml.safe_dump({"rules": rules}))
    commit(repo, "rubricgate")
    return repo


def environment(endpoint: str) -> dict[str, str]:
    """What CI sets: the key (a secret) and the endpoint."""
    return {"OPENAI_API_KEY": "sk-test-not-a-real-key-0000", "OPENAI_BASE_URL": endpoint + "/v1"}


def edit_rules(repo: Path, text: str, message: str) -> None:
    """A pull request's edit of the reviewer's rules (on a branch)."""
    git(repo, "checkout", "-qB", "pr")
    (repo / "reviewer/rules.j2").write_text(text)
    commit(repo, message)
