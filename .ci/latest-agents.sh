#!/usr/bin/env bash
# The weekly check of what just shipped: install the registry's `latest` of every agent CLI side
# by side (.ci/install-agents.sh --latest), run the e2e suite against those versions, and fail
# loudly naming the version and the first failing test. It never edits the versions file: a
# person bumps `newest` in the CLI's CliSpec (rubricgate/agents/<cli>.py) after seeing this pass
# and regenerates rubricgate/agents/tested_versions.json (python -m rubricgate.agents.registry tested-versions).
#
#   bash .ci/latest-agents.sh     (needs node/npm, python with '.[test]' installed, ripgrep)
set -euo pipefail
cd "$(dirname "$0")/.."
export RUBRICGATE_AGENTS_DIR="${RUBRICGATE_AGENTS_DIR:-${RUNNER_TEMP:-/tmp}/rubricgate-agents-latest}"
export RUBRICGATE_REQUIRE_CLIS=1
out="${RUBRICGATE_ARTIFACTS:-$PWD/tests/artifacts}"
mkdir -p "$out"

bash .ci/install-agents.sh --latest

set +e
python3 -m pytest -q -p no:cacheprovider tests/e2e --junitxml="$out/e2e-latest.xml"
code=$?
set -e
if [ ! -s "$out/e2e-latest.xml" ]; then
  echo "::error title=agent CLIs @latest::the e2e suite did not run (pytest exit $code)"
  exit 1
fi
set +e
report=$(python3 .ci/agent_versions.py verdict "$RUBRICGATE_AGENTS_DIR" "$out/e2e-latest.xml")
verdict=$?
set -e
echo "$report"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  { echo "## Agent CLIs @latest against the e2e suite"; echo; echo '```'; echo "$report"; echo '```'; } >> "$GITHUB_STEP_SUMMARY"
fi
if [ "$verdict" != 0 ]; then
  echo "::error title=agent CLIs @latest broke the e2e suite::$(tail -1 <<<"$report")"
  exit 1
fi
if [ "$code" != 0 ]; then
  echo "::error title=agent CLIs @latest::pytest exited $code without a failing test case (collection or usage error)"
  exit 1
fi
