#!/usr/bin/env bash
# Install the real agent CLIs the e2e tests drive, from the npm registry, at exact versions.
# Pins are chosen to run on Node 20 (the CI image's Node): @anthropic-ai/claude-code 2.1.112 is
# the last release whose package is the pure-JS cli.js with engines node>=18 (later releases ship
# a native binary and some require node>=22).
set -euo pipefail

CLAUDE_CODE_VERSION=2.1.112
OPENCODE_VERSION=1.18.33
CODEX_VERSION=0.171.0  # native binary in an optional dependency; runs regardless of Node version

node --version
npm install -g --no-fund --no-audit \
  "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" \
  "opencode-ai@${OPENCODE_VERSION}" \
  "@openai/codex@${CODEX_VERSION}"

claude --version
opencode --version
codex --version

# OpenCode's grep tool shells out to ripgrep (and would try to download it otherwise).
if ! command -v rg >/dev/null; then
  apt-get update -q && apt-get install -y -q ripgrep
fi
rg --version | head -1
