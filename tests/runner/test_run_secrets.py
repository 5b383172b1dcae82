"""runner/run_secrets.py: a name the run writes that holds a secret is refused, a piece of one
at a name's end too (the suite's names are scanned together, then one by one)."""

from __future__ import annotations

from pathlib import Path

from rubricgate.errors import GateInputErrors
from rubricgate.runner.run_secrets import refuse_secret_names
from rubricgate.suite.load import load_all
from tests.conftest import make_repo

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]


def _refused(tmp_path: Path, monkeypatch, secret: str) -> list[str]:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES, tasks=["block-missing-description"])
    loaded = load_all(repo, None, False)
    agent = loaded.config.agent.model_copy(update={"secret_env": ["RG_ODD_SECRET"]})
    monkeypatch.setenv("RG_ODD_SECRET", secret)
    try:
        refuse_secret_names(loaded.cases, {c.id: 3 for c in loaded.cases}, [], "baseline.json",
                            loaded.config.model_copy(update={"agent": agent}), copy_only=False)
    except GateInputErrors as exc:
        return [f"{e.field}: {e.problem}" for e in exc.errors]
    return []


def test_a_piece_of_a_secret_at_the_end_of_a_case_id_is_refused(tmp_path, monkeypatch):
    # "data-loader" ends a case id; the secret "data-loaderX9" is scrubbed from it as a piece at a cut.
    refused = _refused(tmp_path, monkeypatch, "data-loaderX9q")
    assert refused and all("RG_ODD_SECRET" in line for line in refused)
    assert any(line.startswith("id: the case id") for line in refused)


def test_a_secret_no_name_holds_refuses_nothing(tmp_path, monkeypatch):
    assert _refused(tmp_path, monkeypatch, "unrelated-value-7Kq2") == []
