"""A reviewer change made in rubricgate.yaml is a change `run` sees (gating/changes.py): `tiers:`
by what each severity means, the gate's own settings, and grading loosened beside a reviewer
change (runner/digests.py config_digests, recorded in the baseline beside the reviewer's files)."""

from __future__ import annotations

import shutil

import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import edit_expect, make_repo, reexpect_data_loader_as_warn, set_severity


def _update(repo):
    return CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo)])


def _run(repo):
    return CliRunner().invoke(main, ["run", "--repo", str(repo)])


def _config(repo, **sections) -> None:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key].update(value)
        else:
            config[key] = value
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))


def _measured(tmp_path, **kwargs):
    repo = make_repo(tmp_path / "repo", **kwargs)
    done = _update(repo)
    assert done.exit_code == 0, done.output
    return repo


def test_a_tiers_regression_beside_cases_re_expected_to_it_is_held(tmp_path):
    """Every critical read as a warning (tiers:), and the cases that show it moved to WARN: the
    change checks saw no rule change, so the edited cases were not held (exit 0)."""
    repo = _measured(tmp_path, tasks=["block-missing-description"])
    _config(repo, tiers={"severities": {"critical": "warning", "warning": "warning", "suggestion": "suggestion"}})
    reexpect_data_loader_as_warn(repo)
    result = _run(repo)
    assert result.exit_code == 2, result.output
    assert "the reviewer changed since baseline.json was measured" in result.output


def test_a_severity_moved_by_tiers_is_a_severity_change(tmp_path):
    """README step 3 moves scope-single-purpose to warning in the rubric: INCONCLUSIVE. The same
    move made in tiers: (every suggestion read as a warning) passed without a word."""
    repo = _measured(tmp_path)
    _config(repo, tiers={"severities": {"critical": "critical", "warning": "warning", "suggestion": "warning"}})
    result = _run(repo)
    assert result.exit_code == 2, result.output
    assert "rule scope-single-purpose changed severity suggestion -> suggestion (means suggestion -> warning); " \
           "no case exercises it" in result.output


def test_the_gate_s_own_settings_changed_are_held_whatever_they_say(tmp_path):
    """The control regression with the verdict no longer graded (gate.dimensions), and holding
    turned off (gate.inconclusive: pass): the verdict row vanished and the run passed."""
    repo = _measured(tmp_path)
    set_severity(repo, "fm-description-required", "warning")
    _config(repo, gate={"dimensions": ["tool_use", "trajectory"], "inconclusive": "pass"})
    result = _run(repo)
    assert result.exit_code == 2, result.output
    assert "the gate settings in rubricgate.yaml differ from those baseline.json was measured with" in result.output


def test_a_run_whose_rates_passed_and_a_change_holds_says_more_trials_will_not_lift_it(tmp_path):
    """The next step read 'add cases or raise the budget', which never lifts a hold."""
    import json

    from rubricgate.gating.changes import HELD_NEXT

    repo = _measured(tmp_path)
    _config(repo, gate={"max_errored": 3})
    result = _run(repo)
    assert result.exit_code == 2, result.output
    run = max(p for p in (repo / "reports").iterdir()
              if (p / "summary.json").is_file() and not p.name.endswith("-baseline"))
    assert json.loads((run / "summary.json").read_text())["gate"]["next"] == HELD_NEXT
    comment = (run / "comment.md").read_text()
    assert "the rates passed; the change(s) named above hold the run" in comment
    assert "raise the budget" not in comment


def test_a_severity_change_is_not_exercised_by_a_case_naming_the_rule_absent(tmp_path):
    repo = make_repo(tmp_path / "repo")
    absent = yaml.safe_load((repo / "fixtures/block/data-loader/expect.yaml").read_text())["absent_rules"]
    edit_expect(repo, "block/data-loader", absent_rules=[*absent, "scope-single-purpose"])
    assert _update(repo).exit_code == 0
    set_severity(repo, "scope-single-purpose", "critical")
    result = _run(repo)
    assert result.exit_code == 2, result.output
    assert "rule scope-single-purpose changed severity suggestion -> critical; no case exercises it" in result.output


def test_grading_loosened_beside_a_reviewer_change_is_held(tmp_path):
    repo = _measured(tmp_path)
    prompt = repo / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nUse any tool you like.\n")
    _config(repo, rubric={"trajectory": {"max_steps": 400}})
    result = _run(repo)
    assert result.exit_code == 2, result.output
    assert "this change also changes how answers are graded (rubric) beside the reviewer" in result.output
    # The grading alone, or the reviewer alone, is no hold.
    prompt.write_text(prompt.read_text().replace("\nUse any tool you like.\n", ""))
    assert _run(repo).exit_code == 0


def test_compare_sees_a_severity_moved_by_tiers(tmp_path):
    repo = make_repo(tmp_path / "repo")
    _config(repo, tiers={"severities": {"critical": "critical", "warning": "warning", "suggestion": "warning"}})
    result = CliRunner().invoke(main, ["compare", "--repo", str(repo), "--base", "HEAD"])
    assert result.exit_code == 2, result.output
    assert "(means suggestion -> warning); no case exercises it" in result.output


def test_the_config_digests_are_the_same_in_another_checkout_and_through_a_link(tmp_path):
    """verdict.hook and agent.replay_dir are made absolute on loading: the checkout's folder must
    not read as a changed config (every run elsewhere would be held)."""
    import os

    from rubricgate.runner.digests import config_digests
    from rubricgate.suite.config import load_config

    first = make_repo(tmp_path / "first", commit=False)
    (first / "hooks").mkdir()
    (first / "hooks/v.py").write_text("def read(text):\n    return {'tier': 'PASS', 'findings': []}\n")
    _config(first, verdict={"format": "hook", "hook": "hooks/v.py:read"}, agent={"replay_dir": "recorded"})
    second = tmp_path / "elsewhere" / "second"
    shutil.copytree(first, second)
    os.symlink(second, tmp_path / "link")
    digests = [config_digests(load_config(r), r) for r in (first, second, tmp_path / "link")]
    assert digests[0] == digests[1] == digests[2]


HOOK = '''import json, re


def extract(text):
    answer = json.loads(re.search(r"```json\\n(.*?)\\n```", text, re.S).group(1))
    return answer
'''


def test_a_verdict_hook_s_code_is_part_of_the_recorded_grading(tmp_path):
    """The hook's code grades as much as `verdict:` does, but only its path was recorded: an edit
    of it beside a reviewer change was invisible to `run` (compare holds it). It is now a change
    of rubricgate.yaml#verdict, which graded_beside holds beside a reviewer change (tested above
    with rubric:)."""
    repo = make_repo(tmp_path / "repo", commit=False)
    (repo / "hooks").mkdir()
    (repo / "hooks/verdict.py").write_text(HOOK)
    _config(repo, verdict={"format": "hook", "hook": "hooks/verdict.py:extract"})
    assert _update(repo).exit_code == 0
    assert "rubricgate.yaml#verdict" not in _run(repo).output
    (repo / "hooks/verdict.py").write_text(HOOK + "\nESCALATE = ['fm-description-required']\n")
    result = _run(repo)
    assert "file rubricgate.yaml#verdict changed" in result.output, result.output


def test_a_dimension_the_baseline_measures_and_the_run_does_not_grade_is_held(tmp_path):
    """Seen also from a baseline that records no gate settings (an older rubricgate's)."""
    import json

    repo = _measured(tmp_path)
    baseline = json.loads((repo / "baseline.json").read_text())
    baseline["reviewer_digests"] = {k: v for k, v in baseline["reviewer_digests"].items() if "#" not in k}
    (repo / "baseline.json").write_text(json.dumps(baseline))
    set_severity(repo, "fm-description-required", "warning")
    _config(repo, gate={"dimensions": ["tool_use", "trajectory"]})
    result = _run(repo)
    assert result.exit_code == 2, result.output
    assert "baseline.json measures verdict, which this run does not grade (gate.dimensions)" in result.output


def test_a_recorded_meaning_is_a_severity_meaning():
    import pytest
    from pydantic import ValidationError

    from rubricgate.models.baseline import RuleRecord

    with pytest.raises(ValidationError):
        RuleRecord(severity="blocker", kind="mechanical", means="bogus")


def test_the_age_a_baseline_may_reach_is_no_gate_change(tmp_path):
    """It only sets when the stale-baseline note appears: a run was held until a re-measure."""
    repo = _measured(tmp_path)
    _config(repo, gate={"baseline_max_age_days": 60})
    result = _run(repo)
    assert result.exit_code == 0 and "gate settings" not in result.output, result.output


def test_verdict_escalate_at_its_default_digests_as_before_it_existed_and_turned_off_is_a_change(tmp_path):
    """A baseline measured before verdict.escalate existed must not read every native-format
    config as changed; turning escalation off changes grades, so it is a reviewer change."""
    from rubricgate.runner.digests import config_digests
    from rubricgate.suite.config import load_config

    repo = make_repo(tmp_path / "repo", commit=False)
    _config(repo, verdict={"format": "json", "findings": {"path": "comments"}})
    before = config_digests(load_config(repo), repo)["rubricgate.yaml#verdict"]
    dumped = load_config(repo).verdict.model_dump(mode="json")
    del dumped["escalate"]  # the section as it was dumped before the setting existed
    import hashlib
    import json
    assert before == hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()
    _config(repo, verdict={"format": "json", "findings": {"path": "comments"}, "escalate": True})
    assert config_digests(load_config(repo), repo)["rubricgate.yaml#verdict"] == before
    _config(repo, verdict={"format": "json", "findings": {"path": "comments"}, "escalate": False})
    assert config_digests(load_config(repo), repo)["rubricgate.yaml#verdict"] != before



def test_verdict_escalate_at_its_default_keeps_the_design_a_run_recorded_before_it_existed(tmp_path):
    """The design key's `verdict:` took the new setting in: an INCONCLUSIVE run of a native-format
    reviewer made before it existed read as another design, and `run --continue` refused it."""
    import hashlib
    import json

    from rubricgate.gating.design import suite_digest
    from rubricgate.suite.load import load_all

    repo = make_repo(tmp_path / "repo", commit=False)
    _config(repo, verdict={"format": "json", "findings": {"path": "comments"}})
    loaded = load_all(repo)
    ids = [c.id for c in loaded.cases]
    dumped = loaded.config.verdict.model_dump(mode="json")
    del dumped["escalate"]  # the section as the design key held it before the setting existed
    data = {"cases": [c.model_dump(mode="json") for c in loaded.cases], "verdict": dumped}
    if loaded.config.suite.workspace_exclude:  # part of the design since (gating/continuation.py)
        data["excluded"] = sorted(loaded.config.suite.workspace_exclude)
    assert suite_digest(loaded, ids) == hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
    _config(repo, verdict={"format": "json", "findings": {"path": "comments"}, "escalate": False})
    assert suite_digest(load_all(repo), ids) != suite_digest(loaded, ids)


def test_agent_settings_that_change_no_answer_are_no_reviewer_change_against_a_baseline(tmp_path):
    """Lowering agent.jobs after a rate limit read 'file rubricgate.yaml#agent changed' on every
    case; at their defaults the section digests as before these were left out."""
    import hashlib
    import json

    from rubricgate.runner.digests import config_digests
    from rubricgate.suite.config import load_config

    repo = _measured(tmp_path)
    before = config_digests(load_config(repo), repo)["rubricgate.yaml#agent"]
    dumped = json.dumps(load_config(repo).agent.model_dump(mode="json"), sort_keys=True)
    assert before == hashlib.sha256(dumped.encode()).hexdigest()
    _config(repo, agent={"jobs": 2, "retries": 4})
    result = _run(repo)
    assert result.exit_code == 0 and "rubricgate.yaml#agent" not in result.output, result.output
    _config(repo, agent={"timeout_s": 299})
    assert config_digests(load_config(repo), repo)["rubricgate.yaml#agent"] != before


def test_grading_changed_beside_a_reviewer_change_under_inconclusive_pass_says_so_in_every_report(tmp_path):
    """Let through by gate.inconclusive: pass, the run read 'PASS (exit 0)' with the hold a warning,
    and junit.xml's decision testcase passed with no mark."""
    import xml.etree.ElementTree as ET

    repo = make_repo(tmp_path / "repo")
    _config(repo, gate={"inconclusive": "pass"})
    assert _update(repo).exit_code == 0
    prompt = repo / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nUse any tool you like.\n")
    _config(repo, rubric={"trajectory": {"max_steps": 400}})
    result = _run(repo)
    assert result.exit_code == 0, result.output
    assert "decision: INCONCLUSIVE (exit 0, passed by gate.inconclusive: pass)" in result.output, result.output
    run = max(p for p in (repo / "reports").iterdir()
              if (p / "summary.json").is_file() and not p.name.endswith("-baseline"))
    first = (run / "comment.md").read_text().splitlines()[1]
    assert "**INCONCLUSIVE** (passed by gate.inconclusive: pass):" in first, first
    assert "this change also changes how answers are graded (rubric)" in first, first
    gate = ET.parse(run / "junit.xml").getroot().find(".//testcase[@name='decision']")
    skipped = gate.find("skipped") if gate is not None else None
    assert skipped is not None and skipped.get("message", "").startswith(
        "INCONCLUSIVE (exit 0, passed by gate.inconclusive: pass): this change also changes how answers are graded")
