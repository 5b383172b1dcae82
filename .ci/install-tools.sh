#!/usr/bin/env bash
# Debian packages the agent CLIs need when they run: ripgrep, which OpenCode's grep tool shells
# out to (it would try to download one otherwise). A system-wide install, so it lives here, called
# by .ci/run on CI's fresh machine, never by .ci/install-agents.sh on a developer's machine.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
if ! command -v rg >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends ripgrep >/dev/null
fi
# sed reads the whole output: `head -1` exits after one line and rg, still writing, would die of
# a broken pipe, which pipefail makes this script's failure.
echo "ripgrep ready: $(rg --version | sed -n 1p)"
