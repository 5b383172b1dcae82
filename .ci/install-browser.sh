#!/usr/bin/env bash
# Debian chromium (and git) for the browser test of the HTML report.
# Installs only what is missing, then proves chromium starts headless: a broken install must
# fail here, loudly, rather than turn the browser test into a skip.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

missing=()
command -v git >/dev/null 2>&1 || missing+=(git)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# Fonts so the screenshot artifact shows text; Debian's chromium only recommends them.
dpkg -s fonts-dejavu-core >/dev/null 2>&1 || missing+=(fonts-dejavu-core)

if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
out="$(timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
  --dump-dom 'data:text/html,<title>ok</title><p id=probe>rubricgate</p>' 2>/dev/null)"
if [[ "$out" != *'id="probe"'* ]]; then
  echo "chromium is installed but cannot render a page headless" >&2
  exit 1
fi
echo "chromium ready: $(chromium --version 2>/dev/null)"
