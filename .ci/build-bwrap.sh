#!/usr/bin/env bash
# A bubblewrap that mounts overlays itself (--overlay, new in 0.11), for the tests of that path.
#
# Debian 12's bubblewrap (0.8, what install-sandbox.sh installs) has no --overlay, so trials
# mount their overlay with `unshare` + `mount` in front of it; bwrap >= 0.11 (Debian 13, Ubuntu
# 25.04, Fedora 41) mounts it itself, and rubricgate uses that when it finds it. Both paths are
# tested: this builds bubblewrap 0.12.0 from its release tarball (kept in .ci/vendor, checked by
# its SHA-256; LGPL-2.0-or-later, licence inside) into $RUBRICGATE_BWRAP_DIR (default
# /opt/rubricgate-bwrap-0.12), off the PATH: tests/faults/conftest.py puts it first on the PATH
# of the tests that need it (RUBRICGATE_BWRAP_WITH_OVERLAY). A folder that already holds a
# working one is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
DIR=${RUBRICGATE_BWRAP_DIR:-/opt/rubricgate-bwrap-0.12}
TARBALL=.ci/vendor/bubblewrap-0.12.0.tar.xz
SHA256=9760d007363e3abba7c747489910f9f82d9fca53ba3bd3282e396fa3c97a3314

if ! "$DIR/bwrap" --version 2>/dev/null | grep -q '^bubblewrap 0\.12\.0$'; then
  echo "$SHA256  $TARBALL" | sha256sum -c --quiet
  missing=()
  for tool in gcc ninja pkg-config xz; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  [ -e /usr/include/sys/capability.h ] || missing+=(libcap-dev)
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends gcc libc6-dev libcap-dev ninja-build pkg-config xz-utils >/dev/null
  fi
  build=$(mktemp -d)
  trap 'rm -rf "$build"' EXIT
  tar -xJf "$TARBALL" -C "$build"
  if python3 -m pip --version >/dev/null 2>&1; then
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --target "$build/meson" 'meson>=1.0'
    meson=(env PYTHONPATH="$build/meson" python3 "$build/meson/bin/meson")
  else
    command -v meson >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends meson >/dev/null; }
    meson=(meson)
  fi
  (cd "$build/bubblewrap-0.12.0" &&
    "${meson[@]}" setup _build -Dselinux=disabled -Dman=disabled \
      -Dtests=false -Dbash_completion=disabled -Dzsh_completion=disabled >/dev/null &&
    ninja -C _build >/dev/null)
  mkdir -p "$DIR"
  install -m 0755 "$build/bubblewrap-0.12.0/_build/bwrap" "$DIR/bwrap"
fi
# Prove it mounts an overlay in a user namespace as the trials will (own user and PID namespaces).
probe=$(mktemp -d)
mkdir "$probe/lower" "$probe/upper" "$probe/work" "$probe/m"
echo x > "$probe/lower/f"
uid_args=()
if [ "$(id -u)" = 0 ]; then uid_args=(--uid 1000 --gid 1000); fi
"$DIR/bwrap" --ro-bind / / --unshare-user "${uid_args[@]}" --unshare-pid --die-with-parent \
  --overlay-src "$probe/lower" --overlay "$probe/upper" "$probe/work" "$probe/m" test -f "$probe/m/f"
chmod -R u+rwx "$probe" 2>/dev/null || true  # overlayfs leaves work/work unreadable
rm -rf "$probe"
echo "bubblewrap with --overlay ready: $DIR/bwrap ($("$DIR/bwrap" --version))"
