#!/usr/bin/env bash
# Install the real agent CLIs the e2e tests drive, from the npm registry, at exact versions.
# Pins are chosen to run on Node 20 (the CI image's Node): @anthropic-ai/claude-code 2.1.112 is
# the last release whose package is the pure-JS cli.js with engines node>=18 (later releases ship
# a native binary and some require node>=22).
set -euo pipefail

CLAUDE_CODE_VERSION=2.1.112
OPENCODE_VERSION=1.18.33

node --version
npm install -g --no-fund --no-audit \
  "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" \
  "opencode-ai@${OPENCODE_VERSION}"

claude --version
opencode --version
