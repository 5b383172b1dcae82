"""baseline update: raise freely, lower only with a reason that is kept."""

import json

import pytest

from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import set_severity


def update(repo, *args):
    return CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo), *args])


def rates(repo):
    return json.loads((repo / "baseline.json").read_text())


def test_lowering_without_reason_is_refused(repo):
    set_severity(repo, "fm-description-required", "warning")
    before = (repo / "baseline.json").read_text()
    result = update(repo)
    assert result.exit_code == 2 and "needs a reason" in result.output and "--reason" in result.output
    assert (repo / "baseline.json").read_text() == before


def test_lowering_with_reason_is_kept_in_history(repo):
    set_severity(repo, "fm-description-required", "warning")
    result = update(repo, "--reason", "descriptions are optional for internal skills")
    assert result.exit_code == 0, result.output
    data = rates(repo)
    assert data["rates"]["verdict"] == 0.5
    assert data["history"][-1]["reason"] == "descriptions are optional for internal skills"


def test_raising_needs_no_reason(repo):
    (repo / "baseline.json").write_text(json.dumps({"format_version": 1, "rates": {"verdict": 0.5, "tool_use": 0.5, "trajectory": 0.5}, "trials": 1, "history": []}))
    result = update(repo)
    assert result.exit_code == 0 and rates(repo)["rates"]["verdict"] == 1.0
    assert "raised" in rates(repo)["history"][-1]["reason"]


def test_update_from_a_stored_run(repo):
    assert CliRunner().invoke(main, ["run", "--repo", str(repo)]).exit_code == 0
    run_dir = next((repo / "reports").iterdir())
    result = update(repo, "--from", str(run_dir))
    assert result.exit_code == 0 and rates(repo)["history"][-1]["run_id"] == run_dir.name


def test_missing_run_dir_is_one_line_error(repo, tmp_path):
    result = update(repo, "--from", str(tmp_path / "nope"))
    assert result.exit_code == 2 and "no summary.json here" in result.output


def test_schema_commands_print_json_schema():
    for which, key in (("task", "expect"), ("baseline", "rates"), ("config", "agent"), ("expect", "absent_rules")):
        result = CliRunner().invoke(main, ["schema", which])
        assert result.exit_code == 0 and key in json.loads(result.output)["properties"]


@pytest.mark.parametrize("rates, needle", [
    ({"verdict": True, "tool_use": 1.0, "trajectory": 1.0}, "rates.verdict"),
    ({"verdict": "1.0", "tool_use": 1.0, "trajectory": 1.0}, "rates.verdict"),
    ({"verdict": 1.0, "tool_use": 1.0, "trajectory": 1.0, "verdikt": 0.5}, "unknown dimension 'verdikt' (did you mean 'verdict'?)"),
])
def test_baseline_values_are_numbers_for_known_dimensions(tmp_path, rates, needle) -> None:
    import json as _json

    from rubricgate.baseline import load_baseline
    from rubricgate.errors import GateInputError

    path = tmp_path / "baseline.json"
    path.write_text(_json.dumps({"format_version": 1, "rates": rates, "trials": 1, "history": []}))
    with pytest.raises(GateInputError) as err:
        load_baseline(path, "baseline.json")
    assert needle in str(err.value)
