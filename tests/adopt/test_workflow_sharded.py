"""examples/workflows/weekly-sharded.yml: N shard jobs on the matrix, one merge job that gates."""

from __future__ import annotations

from pathlib import Path

import yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "weekly-sharded.yml"


def _jobs() -> tuple[dict, dict]:
    data = yaml.safe_load(EXAMPLE.read_text())
    return data, data["jobs"]


def test_matrix_covers_every_shard_of_SHARDS_exactly_once():
    data, jobs = _jobs()
    shards = int(data["env"]["SHARDS"])
    assert jobs["shard"]["strategy"]["matrix"]["shard"] == list(range(1, shards + 1))
    assert jobs["shard"]["strategy"]["fail-fast"] is False


def test_each_shard_runs_its_slice_and_uploads_it_even_on_failure():
    steps = _jobs()[1]["shard"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert '--shard "${{ matrix.shard }}/${{ env.SHARDS }}"' in runs
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact"))
    assert upload["if"] == "always()" and "${{ matrix.shard }}" in upload["with"]["name"]


def test_the_gate_job_always_merges_every_shard_and_its_exit_code_is_the_gate():
    gate = _jobs()[1]["gate"]
    assert gate["needs"] == "shard" and gate["if"] == "always()"
    merge = next(s for s in gate["steps"] if "rubricgate merge" in s.get("run", ""))
    assert "||" not in merge["run"] and "set +e" not in merge["run"]  # its exit code fails the job
