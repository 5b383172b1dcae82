#!/usr/bin/env bash
# The fault tests and the proxy's namespace entry again as an ordinary user: the sandbox must hold
# without root as well (the sandbox user is then mapped onto that user, not onto an id of the
# harness's making).
set -euo pipefail
cd "$(dirname "$0")/.."
user="${RUBRICGATE_FAULTS_USER:-rgfaults}"
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
py="$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')"
# The interpreter may live under root's HOME (pyenv): the user may cross, not list, the folders
# on its way.
dir="$(dirname "$py")"
while [ "$dir" != / ]; do chmod o+x "$dir"; dir="$(dirname "$dir")"; done
work="$(mktemp -d /tmp/rg-faults-XXXXXX)"
trap 'rm -rf "$work"' EXIT
git ls-files -z | xargs -0 cp --parents -t "$work"
chown -R "$user" "$work"
chmod 755 "$work"
runuser -u "$user" -- env -i PATH="$(dirname "$py"):/usr/local/bin:/usr/bin:/bin" HOME="/home/$user" \
    LANG=C.UTF-8 PYTHONPATH="$work" RUBRICGATE_REQUIRE_SANDBOX=1 \
    RUBRICGATE_BWRAP_WITH_OVERLAY="${RUBRICGATE_BWRAP_WITH_OVERLAY:-/opt/rubricgate-bwrap-0.12}" \
    bash -c 'cd "$1" && "$2" -m pytest -q -rs -p no:cacheprovider tests/faults tests/isolation/test_netns.py tests/isolation/test_etc_folder.py' sh "$work" "$py"
