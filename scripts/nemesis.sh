#!/usr/bin/env bash
# The nemesis (tests/miniflare/nemesis.test.mjs) over several seeds, one
# after the other, beyond the one seed `npm test` runs: `bash
# scripts/nemesis.sh [seed...]` (default 1 2 3). BATON_NEMESIS_INSTANCES,
# BATON_NEMESIS_DEPLOYS and BATON_NEMESIS_DEADLINE_MS make each run larger;
# a stuck instance's runtime lines go to nemesis-<seed>.log in
# BATON_NEMESIS_LOGS (default: the system's temporary directory).
# RELIABILITY.md says how to read a failing seed. Needs a build
# (bash scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
logs="${BATON_NEMESIS_LOGS:-${TMPDIR:-/tmp}}"
failed=()
for seed in "${@:-1 2 3}"; do
  for one in $seed; do
    echo "== nemesis, seed $one"
    if ! BATON_NEMESIS_SEED="$one" BATON_NEMESIS_LINES="$logs/nemesis-$one.log" \
      node_modules/.bin/node --test tests/miniflare/nemesis.test.mjs; then
      failed+=("$one")
    fi
  done
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "nemesis: seeds ${failed[*]} failed (rerun one with BATON_NEMESIS_SEED=<seed>)"
  exit 1
fi
