#!/usr/bin/env bash
# The README's test command in a bare clone: a copy of this working tree (tracked and untracked,
# not ignored files) in a temporary folder with no ../shared beside it. Runs only the test files
# that can reach outside the repository (those that name "shared", import tests/shared_data.py or
# build a path above the repository root), without the tests marked slow (the demo run: its
# ../shared part is one skipif); every other test reads nothing outside the repository, so the
# normal run already covers it. A test that needs ../shared must skip with a printed reason.
# Usage: .ci/bare_clone_check.sh (from the repository, with the venv active);
# MMROBUST_BARE_WORKERS: pytest-xdist workers (default auto; .ci/run runs it beside the suite).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
clone="${tmp}/mmrobust"
mkdir -p "${clone}"
git ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | tar --null -T - -cf - | tar -xf - -C "${clone}"
if [ -e "${tmp}/shared" ]; then echo "bare clone check: ${tmp}/shared exists" >&2; exit 1; fi
mapfile -t files < <(cd "${clone}" && grep -l -E '"shared"|shared_data|parents\[[2-9]\]|parents\[1\]\.parent|\.\./' tests/test_*.py | sort)
if [ "${#files[@]}" -eq 0 ]; then echo "bare clone check: no test reaches outside the repository"; exit 0; fi
echo "bare clone check in ${clone} (no ../shared): ${files[*]}"
# The clone's sources come first on the path, ahead of the editable install of this checkout.
(cd "${clone}" && unset MMROBUST_SHARED && PYTHONPATH="${clone}/src:${clone}" \
  python -m pytest -q -p no:cacheprovider --basetemp "${tmp}/pytest" -n "${MMROBUST_BARE_WORKERS:-auto}" \
    -m "not slow" "${files[@]}")
echo "bare clone check passed in $(( $(date +%s) - start )) s"
