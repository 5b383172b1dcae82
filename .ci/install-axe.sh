#!/usr/bin/env bash
# axe-core from the npm registry, into its own prefix (nothing on the global PATH): the browser
# tests inject it into headless chromium over the DevTools protocol and require no serious or
# critical violation on report.html and every viewer page (tests/view/test_browser_pages.py).
# A prefix that already holds the pinned version is kept.
set -euo pipefail
VERSION=4.14.1
DIR=${RUBRICGATE_AXE_DIR:-/opt/rubricgate-axe}
script="$DIR/lib/node_modules/axe-core/axe.min.js"
installed=$(node -e "console.log(require('$DIR/lib/node_modules/axe-core/package.json').version)" 2>/dev/null || true)
if [ "$installed" != "$VERSION" ]; then
  rm -rf "$DIR"
  mkdir -p "$DIR"
  npm install -g --prefix "$DIR" --no-fund --no-audit --loglevel=error "axe-core@$VERSION"
fi
test -s "$script" || { echo "axe-core $VERSION did not install to $script" >&2; exit 1; }
echo "axe-core $VERSION ready: $script"
