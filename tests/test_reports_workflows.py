"""The adopter's workflow examples keep the properties the gate relies on."""

from __future__ import annotations

from pathlib import Path

import yaml

WORKFLOWS = Path(__file__).resolve().parents[1] / ".github" / "workflows"


def load(name: str) -> dict:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def steps(data: dict) -> list[dict]:
    return next(iter(data["jobs"].values()))["steps"]


def test_pr_gate_paths_filter_covers_every_gated_path():
    paths = load("rubricgate-pr.yml")["on"]["pull_request"]["paths"]
    assert set(paths) == {"reviewer/**", "evals/**", "fixtures/**", "baseline.json", "rubricgate.yaml"}


def test_pr_gate_checks_out_full_history_and_uses_changed():
    s = steps(load("rubricgate-pr.yml"))
    checkout = next(x for x in s if str(x.get("uses", "")).startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0
    runs = "\n".join(x.get("run", "") for x in s)
    assert "rubricgate changed --base" in runs and "rubricgate publish --pr" in runs


def test_pr_gate_fails_unless_exit_zero_and_uploads_artifact():
    s = steps(load("rubricgate-pr.yml"))
    assert 'test "${code}" = "0"' in s[-1]["run"]
    upload = next(x for x in s if str(x.get("uses", "")).startswith("actions/upload-artifact"))
    assert upload["with"]["name"] == "rubricgate-report" and upload["if"].startswith("always()")


def test_weekly_job_is_scheduled_uploads_report_and_trends():
    data = load("rubricgate-weekly.yml")
    assert data["on"]["schedule"][0]["cron"]
    s = steps(data)
    assert any(str(x.get("uses", "")).startswith("actions/upload-artifact") for x in s)
    assert "rubricgate trend" in "\n".join(x.get("run", "") for x in s)
