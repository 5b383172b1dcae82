#!/usr/bin/env bash
# bubblewrap: every agent process of a run is sandboxed with it, and the fault tests require it.
# Installs it when missing, then proves it can start a sandbox like rubricgate's (own user and
# PID namespaces): a machine where it cannot must fail here, not turn the fault tests into skips.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
if ! command -v bwrap >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
fi
uid_args=()
if [ "$(id -u)" = 0 ]; then uid_args=(--uid 1000 --gid 1000); fi
bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-user "${uid_args[@]}" \
  --unshare-pid --die-with-parent --new-session --cap-drop ALL true || {
  echo "bubblewrap cannot start a sandbox here; on Ubuntu 24.04:" >&2
  echo "  sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" >&2
  exit 1
}
echo "bubblewrap ready: $(bwrap --version)"
