"""rubricgate.runner.cache: every key part invalidates, misses are safe, only clean runs stored."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from rubricgate.errors import GateInputError
from rubricgate.models.config import AgentConfig, Config, ReviewerConfig
from rubricgate.models.results import CaseSpec
from rubricgate.models.task import Expect, Rubric, ToolUseRubric, TrajectoryRubric
from rubricgate.models.transcript import Transcript
from rubricgate.reports.render_cache import CHARTS, TEMPLATES
from rubricgate.runner import cache

REVIEWER = ReviewerConfig()


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _write(tmp_path, REVIEWER.prompt, "review the files\n")
    _write(tmp_path, REVIEWER.skill, "evaluator skill\n")
    _write(tmp_path, REVIEWER.rubric, "| id | severity |\n")
    _write(tmp_path, "fixtures/block/a/SKILL.md", "---\nname: a\n---\n")
    _write(tmp_path, "fixtures/block/a/references/notes.md", "notes\n")
    _write(tmp_path, "fixtures/block/b/SKILL.md", "---\nname: b\n---\n")
    return tmp_path


def _case(**changes: object) -> CaseSpec:
    base = dict(id="block-a", source="fixture", origin="fixtures/block/a/SKILL.md",
                review=["fixtures/block/a/SKILL.md"], expect=Expect(tier="BLOCK"),
                rubric=Rubric(tool_use=ToolUseRubric(allowed=["read"]),
                              trajectory=TrajectoryRubric(max_steps=12)))
    return CaseSpec(**{**base, **changes})


def _parts(repo: Path, case: CaseSpec | None = None, agent: AgentConfig | None = None,
           **kw: object) -> cache.KeyParts:
    args = dict(agent_name="builtin", agent_version="1.0", model="m", trial=1)
    return cache.key_parts(repo, Config(reviewer=REVIEWER), case or _case(), agent or AgentConfig(), **{**args, **kw})


def _transcript(termination: str = "completed") -> Transcript:
    return Transcript(agent="builtin", final_text="```json\n{}\n```", termination=termination)


# -- failure paths first ----------------------------------------------------------------------

def _entry(cache_dir: Path, parts: cache.KeyParts) -> Path:
    return cache.entry_path(cache_dir, cache.cache_key(parts))


def test_missing_entry_is_a_miss_not_a_rejection(repo: Path, tmp_path: Path) -> None:
    assert cache.load_cached(tmp_path / "cache", _parts(repo)) == cache.Lookup()


def test_corrupt_entry_is_rejected_and_is_overwritten(repo: Path, tmp_path: Path) -> None:
    parts, cache_dir = _parts(repo), tmp_path / "cache"
    path = _entry(cache_dir, parts)
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    found = cache.load_cached(cache_dir, parts)
    assert found.transcript is None and "not valid JSON" in found.rejected
    assert cache.store(cache_dir, parts, _transcript())
    assert cache.load_cached(cache_dir, parts).transcript == _transcript()


def test_hand_edited_entry_is_rejected(repo: Path, tmp_path: Path) -> None:
    parts, cache_dir = _parts(repo), tmp_path / "cache"
    cache.store(cache_dir, parts, _transcript())
    path = _entry(cache_dir, parts)
    entry = json.loads(path.read_text())
    entry["transcript"]["final_text"] = "```json\n{\"tier\": \"PASS\"}\n```"
    path.write_text(json.dumps(entry))
    found = cache.load_cached(cache_dir, parts)
    assert found.transcript is None and "signature does not match" in found.rejected


def test_unsigned_entry_is_rejected(repo: Path, tmp_path: Path) -> None:
    parts, cache_dir = _parts(repo), tmp_path / "cache"
    cache.store(cache_dir, parts, _transcript())
    path = _entry(cache_dir, parts)
    entry = json.loads(path.read_text())
    del entry["hmac"]
    path.write_text(json.dumps(entry))
    assert cache.load_cached(cache_dir, parts).rejected == "entry is not signed"


def test_genuine_entry_moved_to_another_slot_is_rejected(repo: Path, tmp_path: Path) -> None:
    cache_dir, one, two = tmp_path / "cache", _parts(repo, trial=1), _parts(repo, trial=2)
    cache.store(cache_dir, one, _transcript())
    _entry(cache_dir, two).parent.mkdir(parents=True, exist_ok=True)
    _entry(cache_dir, two).write_bytes(_entry(cache_dir, one).read_bytes())
    assert "signature does not match" in cache.load_cached(cache_dir, two).rejected


def test_entry_signed_with_another_key_is_rejected(repo: Path, tmp_path: Path) -> None:
    parts = _parts(repo)
    cache.store(tmp_path / "a", parts, _transcript())
    _entry(tmp_path / "b", parts).parent.mkdir(parents=True)
    _entry(tmp_path / "b", parts).write_bytes(_entry(tmp_path / "a", parts).read_bytes())
    assert cache.load_cached(tmp_path / "b", parts).rejected


def test_signing_key_is_private_stable_and_checked(tmp_path: Path) -> None:
    key = cache.signing_key(tmp_path / "c")
    path = tmp_path / "c" / cache.KEY_FILE
    assert len(key) == 32 and path.stat().st_mode & 0o777 == 0o600
    assert cache.signing_key(tmp_path / "c") == key
    assert not [p for p in (tmp_path / "c").iterdir() if p.name != cache.KEY_FILE]  # no temp file left
    path.chmod(0o644)
    with pytest.raises(GateInputError, match="mode 0600"):
        cache.signing_key(tmp_path / "c")
    path.chmod(0o600)
    path.write_text("not hex")
    with pytest.raises(GateInputError, match="unreadable cache signing key"):
        cache.signing_key(tmp_path / "c")


def test_entry_with_invalid_transcript_is_a_miss(repo: Path, tmp_path: Path) -> None:
    # Genuinely signed (e.g. by an older transcript format) but no longer loadable: a plain miss.
    parts, cache_dir = _parts(repo), tmp_path / "cache"
    cache.store(cache_dir, parts, _transcript())
    entry = json.loads(_entry(cache_dir, parts).read_text())
    body = {k: v for k, v in entry.items() if k != "hmac"}
    body["transcript"]["termination"] = "exploded"
    signed = {**body, "hmac": cache._sign(cache.signing_key(cache_dir), cache.cache_key(parts), body)}
    _entry(cache_dir, parts).write_text(json.dumps(signed))
    assert cache.load_cached(cache_dir, parts) == cache.Lookup()


def test_genuine_entry_whose_stored_parts_differ_is_a_miss(repo: Path, tmp_path: Path) -> None:
    # Simulates a key collision: a genuine entry where the key says, but for other parts.
    parts, cache_dir = _parts(repo), tmp_path / "cache"
    other = dataclasses.replace(parts, trial=2)
    cache.store(cache_dir, other, _transcript())
    _entry(cache_dir, parts).parent.mkdir(parents=True, exist_ok=True)
    entry = json.loads(_entry(cache_dir, other).read_text())
    body = {k: v for k, v in entry.items() if k != "hmac"}
    signed = {**body, "hmac": cache._sign(cache.signing_key(cache_dir), cache.cache_key(parts), body)}
    _entry(cache_dir, parts).write_text(json.dumps(signed))
    assert cache.load_cached(cache_dir, parts) == cache.Lookup()


@pytest.mark.parametrize("termination", ["api_error", "timeout", "crashed"])
def test_transient_failures_are_not_stored(repo: Path, tmp_path: Path, termination: str) -> None:
    parts = _parts(repo)
    assert not cache.store(tmp_path / "cache", parts, _transcript(termination))
    assert cache.load_cached(tmp_path / "cache", parts) == cache.Lookup()


def test_default_location_is_the_user_cache_folder_and_never_the_repo(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    assert cache.default_cache_dir({"XDG_CACHE_HOME": "/x/c", "HOME": "/h"}) == Path("/x/c/rubricgate")
    assert cache.default_cache_dir({"XDG_CACHE_HOME": "rel", "HOME": "/h"}) == Path("/h/.cache/rubricgate")
    assert cache.resolve_cache_dir(repo, "../c") == (tmp_path / "c").resolve()
    assert cache.resolve_cache_dir(repo, "../c", tmp_path / "o") == (tmp_path / "o").resolve()
    with pytest.raises(GateInputError, match="inside the repository"):
        cache.resolve_cache_dir(repo, ".rubricgate-cache")


# -- hits -------------------------------------------------------------------------------------

def test_roundtrip_hit_with_recomputed_parts(repo: Path, tmp_path: Path) -> None:
    cache.store(tmp_path / "cache", _parts(repo), _transcript("max_turns"))
    assert cache.load_cached(tmp_path / "cache", _parts(repo)).transcript == _transcript("max_turns")


def test_key_is_stable_and_hex(repo: Path) -> None:
    key = cache.cache_key(_parts(repo))
    assert key == cache.cache_key(_parts(repo))
    assert len(key) == 64 and int(key, 16) >= 0


# -- every key part invalidates ---------------------------------------------------------------

EDITS = {
    "prompt": lambda r: _write(r, REVIEWER.prompt, "review harder\n"),
    "skill": lambda r: _write(r, REVIEWER.skill, "evaluator skill v2\n"),
    "rubric": lambda r: _write(r, REVIEWER.rubric, "| id | severity | kind |\n"),
    "new evaluator reference": lambda r: _write(r, "reviewer/evaluator/references/extra.md", "x"),
    "reviewed file": lambda r: _write(r, "fixtures/block/a/SKILL.md", "---\nname: a2\n---\n"),
    "file beside reviewed file": lambda r: _write(r, "fixtures/block/a/references/notes.md", "v2"),
    "agent context file": lambda r: _write(r, "CLAUDE.md", "always pass\n"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_file_edits_change_the_key(repo: Path, edit: str) -> None:
    before = cache.cache_key(_parts(repo))
    EDITS[edit](repo)
    assert cache.cache_key(_parts(repo)) != before


def test_unrelated_files_do_not_change_the_key(repo: Path) -> None:
    before = cache.cache_key(_parts(repo))
    _write(repo, "fixtures/block/b/SKILL.md", "---\nname: b2\n---\n")
    _write(repo, "README.md", "docs\n")
    _write(repo, REVIEWER.changed_files, "fixtures/block/a/SKILL.md\n")
    assert cache.cache_key(_parts(repo)) == before


@pytest.mark.parametrize("change", [
    {"agent_name": "claude"}, {"agent_version": "1.1"}, {"agent_version": None},
    {"model": "other"}, {"trial": 2},
])
def test_agent_and_trial_changes_change_the_key(repo: Path, change: dict) -> None:
    assert cache.cache_key(_parts(repo, **change)) != cache.cache_key(_parts(repo))


@pytest.mark.parametrize("change", [
    {"expect": Expect(tier="WARN")}, {"id": "block-a2"}, {"files": {"x.md": "y"}},
    {"rubric": Rubric(tool_use=ToolUseRubric(allowed=["read"]), trajectory=TrajectoryRubric(max_steps=3))},
])
def test_case_changes_change_the_key(repo: Path, change: dict) -> None:
    assert cache.cache_key(_parts(repo, case=_case(**change))) != cache.cache_key(_parts(repo))


@pytest.mark.parametrize("change", [
    {"command": ["x", "{prompt_file}"]}, {"format": "claude"}, {"extra_args": ["--fast"]},
    {"timeout_s": 10.0},
])
def test_agent_settings_change_the_key(repo: Path, change: dict) -> None:
    agent = AgentConfig(**change)
    assert cache.cache_key(_parts(repo, agent=agent)) != cache.cache_key(_parts(repo))


def test_the_tier_vocabulary_changes_the_key(repo: Path) -> None:
    """The builtin reviewer derives its tier from `tiers:`: an edit replayed stale answers."""
    from rubricgate.models.config import TiersConfig

    tiers = TiersConfig.model_validate({"severities": {"critical": "critical", "warning": "warning"},
                                        "rules": [{"severity": "critical", "at_least": 2, "tier": "BLOCK"},
                                                  {"severity": "critical", "tier": "WARN"}]})
    plain = cache.key_parts(repo, Config(reviewer=REVIEWER), _case(), AgentConfig(), agent_name="builtin",
                            agent_version="1.0", model="m", trial=1)
    tiered = cache.key_parts(repo, Config(reviewer=REVIEWER, tiers=tiers), _case(), AgentConfig(), agent_name="builtin",
                             agent_version="1.0", model="m", trial=1)
    assert cache.cache_key(plain) != cache.cache_key(tiered)


def test_secrets_and_env_allowlist_are_not_in_the_parts(repo: Path) -> None:
    agent = AgentConfig(secret_env=["MY_TOKEN"], env_allowlist=["PATH", "MY_TOKEN"])
    parts = _parts(repo, agent=agent)
    assert "MY_TOKEN" not in json.dumps(dataclasses.asdict(parts))
    assert cache.cache_key(parts) == cache.cache_key(_parts(repo))


def test_overlaid_review_file_still_digests_its_repository_folder(repo: Path) -> None:
    # The task overlays SKILL.md into a folder whose references/ come from the repository:
    # the agent reads them beside the overlay, so editing one must miss the cache.
    _write(repo, "skills/x/references/guide.md", "v1\n")
    case = _case(review=["skills/x/SKILL.md"], files={"skills/x/SKILL.md": "---\nname: x\n---\n"})
    before = cache.cache_key(_parts(repo, case=case))
    _write(repo, "skills/x/references/guide.md", "v2\n")
    assert cache.cache_key(_parts(repo, case=case)) != before


def test_non_secret_environment_values_change_the_key(repo: Path) -> None:
    env = {"PATH": "/usr/bin", "ANTHROPIC_BASE_URL": "http://a", "ANTHROPIC_API_KEY": "sk-one-111111"}
    before = cache.cache_key(_parts(repo, env=env))
    assert cache.cache_key(_parts(repo, env=env | {"ANTHROPIC_BASE_URL": "http://b"})) != before
    assert cache.cache_key(_parts(repo, env=env | {"ANTHROPIC_MODEL": "other"})) != before


def test_secret_values_and_term_do_not_change_the_key_and_are_never_stored(repo: Path) -> None:
    env = {"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "sk-one-111111", "TERM": "xterm"}
    parts = _parts(repo, env=env)
    rotated = _parts(repo, env=env | {"ANTHROPIC_API_KEY": "sk-two-222222", "TERM": "dumb"})
    assert cache.cache_key(rotated) == cache.cache_key(parts)
    assert "sk-one" not in json.dumps(dataclasses.asdict(parts)) and "/usr/bin" not in json.dumps(dataclasses.asdict(parts))


def test_harness_version_is_a_key_part(repo: Path) -> None:
    parts = _parts(repo)
    assert cache.cache_key(dataclasses.replace(parts, harness_version="9.9")) != cache.cache_key(parts)


# -- --cache through the pipeline: a rerun of an unchanged suite calls no agent ---------------

from click.testing import CliRunner  # noqa: E402

from rubricgate.agents.builtin import BuiltinAgent  # noqa: E402
from rubricgate.cli import main  # noqa: E402
from rubricgate.pipeline import RunOptions, run_suite  # noqa: E402
from tests.conftest import make_repo, set_severity  # noqa: E402

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]


class CountingAgent(BuiltinAgent):
    calls = 0

    def run(self, request):  # type: ignore[no-untyped-def]
        CountingAgent.calls += 1
        return super().run(request)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch):
    CountingAgent.calls = 0
    monkeypatch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: CountingAgent(cfg))
    return CountingAgent


def _run(repo: Path, **kw: object):
    return run_suite(RunOptions(repo=repo, **{"cache": True, "trials": 2, **kw}))


def test_rerun_of_unchanged_suite_calls_no_agent(tmp_path: Path, counting) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    first = _run(repo)
    assert counting.calls == 4 and first.exit_code == 0
    second = _run(repo)
    assert counting.calls == 4  # nothing new was asked
    trials = [t for c in second.summary.cases for t in c.trials]
    assert len(trials) == 4 and all(t.cached for t in trials)
    assert second.summary.rates["verdict"].passes == first.summary.rates["verdict"].passes
    assert second.summary.cost["cached_trials"] == 4 and second.exit_code == 0


def test_without_cache_flag_the_cache_is_neither_read_nor_written(tmp_path: Path, counting) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _run(repo, cache=False)
    _run(repo, cache=False)
    assert counting.calls == 8
    assert not (repo / cache.CACHE_DIR).exists() and _no_trial_in_the_users_cache()


def _no_trial_in_the_users_cache() -> bool:
    """The user's cache folder may hold the report's compiled templates (reports/render_cache.py:
    made by the first report a process renders, so run alone a test sees it) and the notes of
    the runs this user started (gating/continuation.py), never a trial."""
    default = cache.default_cache_dir()
    return not default.exists() or {p.name for p in default.iterdir()} <= {TEMPLATES, CHARTS, cache.RUNS_DIR}


def test_rubric_edit_misses_the_cache_and_changes_the_answer(tmp_path: Path, counting) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _run(repo)
    set_severity(repo, "fm-description-required", "warning")
    after = _run(repo)
    assert counting.calls == 8  # every trial re-asked: the reviewer changed
    assert after.exit_code == 1  # and the stale BLOCK answer was not reused
    assert not any(t.cached for c in after.summary.cases for t in c.trials)


def test_more_trials_reuse_the_old_ones_and_run_only_the_new(tmp_path: Path, counting) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _run(repo, trials=1)
    _run(repo, trials=3)
    assert counting.calls == 2 + 4


def test_cli_cache_flag(tmp_path: Path, counting) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    for _ in range(2):
        result = CliRunner().invoke(main, ["run", "--repo", str(repo), "--cache"])
        assert result.exit_code == 0, result.output
    assert counting.calls == 2


def test_cli_version_change_misses_the_cache(tmp_path: Path, counting, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    monkeypatch.setattr(counting, "version", lambda self: "cli 1.0")
    _run(repo)
    monkeypatch.setattr(counting, "version", lambda self: "cli 1.1")
    after = _run(repo)
    assert counting.calls == 8 and not any(t.cached for c in after.summary.cases for t in c.trials)


def test_model_and_agent_changes_miss_the_cache(tmp_path: Path, counting) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _run(repo)
    _run(repo, agent="claude")  # another adapter (the counting stand-in answers for both)
    assert counting.calls == 8
    config = repo / "rubricgate.yaml"
    config.write_text(config.read_text().replace("  timeout_s: 300", "  timeout_s: 300\n  model: other-model"))
    _run(repo)
    assert counting.calls == 12


def test_allowlisted_environment_change_misses_the_cache(tmp_path: Path, counting, monkeypatch) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    config = repo / "rubricgate.yaml"
    config.write_text(config.read_text().replace("  timeout_s: 300", "  timeout_s: 300\n  env_allowlist: [PATH, RG_TEST_BASE_URL]"))
    monkeypatch.setenv("RG_TEST_BASE_URL", "http://127.0.0.1:1")
    _run(repo)
    monkeypatch.setenv("RG_TEST_BASE_URL", "http://127.0.0.1:2")
    _run(repo)
    assert counting.calls == 8


def test_cli_cache_dir_flag_implies_cache_and_refuses_the_repository(tmp_path: Path, counting) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo), "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "c" / cache.KEY_FILE).is_file() and list((tmp_path / "c").rglob("*.json"))
    assert _no_trial_in_the_users_cache()
    inside = CliRunner().invoke(main, ["run", "--repo", str(repo), "--cache-dir", str(repo / ".cache")])
    assert inside.exit_code == 2 and "cache_dir" in inside.output and "Traceback" not in inside.output
    assert len(list((repo / "reports").iterdir())) == 1  # refused before a run folder was made


def test_config_cache_dir_is_used(tmp_path: Path, counting) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    config = repo / "rubricgate.yaml"
    config.write_text(config.read_text() + "cache_dir: ../shared-cache\n")
    _run(repo)
    assert list((tmp_path / "shared-cache").rglob("*.json")) and _no_trial_in_the_users_cache()


# -- what the reviewer reads beyond its files: the workspace's exclusions, past the closure's cap,
#    and the builtin reviewer's own code ---------------------------------------------------------

def test_lifting_a_workspace_exclusion_changes_the_key(repo: Path) -> None:
    from rubricgate.models.config import SuiteConfig

    def key(exclude: list[str]) -> str:
        config = Config(reviewer=REVIEWER, suite=SuiteConfig(workspace_exclude=exclude))
        parts = cache.key_parts(repo, config, _case(), AgentConfig(), agent_name="builtin", agent_version="1.0",
                                model="m", trial=1)
        return cache.cache_key(parts)

    assert key(["docs/extra.md"]) != key([])
    assert key(["a", "b"]) == key(["b", "a"])


def test_past_the_closure_cap_an_edit_anywhere_in_the_tree_changes_the_key(repo: Path, monkeypatch) -> None:
    from rubricgate.suite import closure
    from rubricgate.suite.trees import WorkTree

    monkeypatch.setattr(closure, "MAX_FILES", 6)
    _write(repo, REVIEWER.prompt, "review the files; see [c1](../../chain/c1.md)\n")
    for i in range(1, 12):  # a chain of links longer than the cap: c11 is past it
        _write(repo, f"chain/c{i}.md", f"POLICY strict; next: [c{i + 1}](c{i + 1}.md)\n")
    assert closure.reviewer_closure(WorkTree(repo), Config(reviewer=REVIEWER)).capped
    before = cache.cache_key(_parts(repo))
    _write(repo, "chain/c11.md", "POLICY lenient\n")
    after = cache.cache_key(_parts(repo))
    assert after != before
    _write(repo, ".venv/lib/site.py", "x\n")  # in no workspace: no part of what the reviewer reads
    _write(repo, "node_modules/x/index.js", "x\n")
    assert cache.cache_key(_parts(repo)) == after
    _write(repo, REVIEWER.changed_files, "fixtures/block/a/SKILL.md\n")  # never the reviewer's
    _write(repo, "fixtures/block/b/SKILL.md", "---\nname: b2\n---\n")  # another case's files
    assert cache.cache_key(_parts(repo)) == after


def test_an_agent_that_starts_no_program_is_keyed_by_rubricgate_s_own_code(repo: Path, tmp_path: Path) -> None:
    from rubricgate.runner.cache_inputs import folder_digest, own_code_digest

    digests = cache.run_digests(repo, Config(reviewer=REVIEWER), {"builtin": []})
    assert digests.programs["builtin"] == own_code_digest() != ""
    package = tmp_path / "pkg"
    _write(package, "agents/builtin.py", "def review_files():\n    return ['x']\n")
    _write(package, "agents/__pycache__/builtin.cpython-311.pyc", "compiled")
    before = folder_digest(package)
    _write(package, "agents/__pycache__/builtin.cpython-311.pyc", "compiled again")
    assert folder_digest(package) == before  # bytecode is no edit
    _write(package, "agents/builtin.py", "def review_files():\n    return []\n")  # a PR loosening the builtin
    assert folder_digest(package) != before
