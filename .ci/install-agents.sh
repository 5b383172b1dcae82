#!/usr/bin/env bash
# Install the real agent CLIs the e2e tests drive, side by side, from the npm registry.
#
#   bash .ci/install-agents.sh            every version in rubricgate/agents/tested_versions.json
#                                         (the oldest and newest of each CLI)
#   bash .ci/install-agents.sh --latest   the registry's `latest` of each CLI (the weekly check)
#
# Each version goes into its own prefix, $RUBRICGATE_AGENTS_DIR/<cli>-<version> (default
# /opt/rubricgate-agents), so two versions of one CLI coexist; nothing is put on the global PATH.
# $RUBRICGATE_AGENTS_DIR/manifest.json lists what was installed: tests/e2e run once per entry,
# each with that prefix's bin first on the agent's PATH. A prefix whose CLI already reports the
# wanted version is kept, so a re-run costs only the version checks.
#
# Node 20 is enough: Claude Code 2.1.112 is the last pure-JS release (engines node>=18); later
# releases ship a native binary through an npm optional dependency and run on Node 20 despite
# their engines field (npm only warns), as do OpenCode's, Codex's and Copilot CLI's native
# binaries; Gemini CLI asks for node>=20, and Qwen Code (engines node>=22) runs on Node 20 too.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${RUBRICGATE_AGENTS_DIR:-/opt/rubricgate-agents}
CHANNEL=pinned
case "${1:-}" in
  "") ;;
  --latest) CHANNEL=latest ;;
  *) echo "usage: $0 [--latest]" >&2; exit 2 ;;
esac

# Copilot CLI's loader runs the newest package in its cache instead of its own unless auto-update
# is off: a version check must see the installed release.
export COPILOT_AUTO_UPDATE=false
node --version
mkdir -p "$DIR"
plan=$(python3 .ci/agent_versions.py plan "$CHANNEL")
installed=""
while read -r cli package binary version; do
  prefix="$DIR/$cli-$version"
  exe="$prefix/bin/$binary"
  if [ -x "$exe" ] && "$exe" --version 2>/dev/null | grep -qF "$version"; then
    echo "== $package@$version already in $prefix"
  else
    echo "== $package@$version -> $prefix"
    rm -rf "$prefix"
    npm install -g --prefix "$prefix" --no-fund --no-audit --loglevel=error "$package@$version"
  fi
  # sed reads the whole output: `head -1` exits after one line, and a CLI still writing then
  # dies of a broken pipe, which pipefail makes this script's failure (seen with rg).
  reported=$("$exe" --version | sed -n 1p)
  if ! grep -qF "$version" <<<"$reported"; then
    echo "error: $exe --version says '$reported', expected $version" >&2
    exit 1
  fi
  echo "   $cli $version: $reported"
  installed+="$cli $version $prefix/bin $reported"$'\n'
done <<<"$plan"
python3 .ci/agent_versions.py manifest "$DIR" "$CHANNEL" <<<"$installed" >/dev/null
echo "== manifest: $DIR/manifest.json ($CHANNEL)"

# OpenCode's grep tool shells out to ripgrep. This script installs nothing outside its prefixes:
# ripgrep comes from .ci/install-tools.sh (and bubblewrap, which the e2e suite runs every CLI
# inside, from .ci/install-sandbox.sh), both called by .ci/run.
if ! command -v rg >/dev/null; then
  echo "warning: ripgrep is not on PATH: OpenCode's grep tool needs it (bash .ci/install-tools.sh installs it)" >&2
fi
