#!/usr/bin/env bash
# The package as a release would publish it: a wheel and an sdist, each installed into a fresh
# venv (no checkout on its path) and exercised: `init`, `baseline update` and `run` in a new git
# repository, which reads the packaged templates, starter reviewer and examples.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# Built from a copy of the tracked (and untracked, not ignored) files: setuptools leaves build/ and
# an egg-info beside the sources, and an egg-info in the checkout shadows the installed metadata.
mkdir "$out/src"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$out/src"
python3 -m build --sdist --wheel --outdir "$out/dist" "$out/src" >"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
for artifact in "$out"/dist/*.whl "$out"/dist/*.tar.gz; do
  venv="$out/venv-$(basename "$artifact")"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q "$artifact" 2>"$out/pip.log" || { cat "$out/pip.log"; exit 1; }
  # the command is the launcher that holds early signals (bin/rubricgate), not a console script
  head -1 "$venv/bin/rubricgate" | grep -qx '#!/bin/sh' || { echo "rubricgate is not the launcher"; exit 1; }
  repo="$out/repo-$(basename "$artifact")"
  git init -q "$repo"
  log="$out/commands.log"
  (cd "$out" && PYTHONPATH= "$venv/bin/rubricgate" init --repo "$repo" >"$log" 2>&1) || { cat "$log"; exit 1; }
  test -f "$repo/.github/workflows/rubricgate-pr.yml" && test -f "$repo/reviewer/evaluator/references/rubric.md"
  (cd "$repo" && PYTHONPATH= "$venv/bin/rubricgate" baseline update && PYTHONPATH= "$venv/bin/rubricgate" run) >"$log" 2>&1 \
    || { cat "$log"; exit 1; }
  echo "ok: $(basename "$artifact") installs in a fresh venv; init, baseline update and run work from it"
done
