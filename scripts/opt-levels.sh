#!/usr/bin/env bash
# Builds the release WASM once per cargo opt-level named (issue 29: the
# level chosen by measurement), each into bench-out/opt-<level>/, for
# bench/opt-levels.mjs to compare; then rebuilds build/ as Cargo.toml says.
# The level is set through cargo's environment, so Cargo.toml is untouched.
#   bash scripts/opt-levels.sh z s 2 3
set -euo pipefail
cd "$(dirname "$0")/.."
for level in "$@"; do
  echo "== opt-level $level"
  CARGO_PROFILE_RELEASE_OPT_LEVEL="$level" bash scripts/build.sh
  mkdir -p "bench-out/opt-$level"
  cp build/index_bg.wasm build/index.js "bench-out/opt-$level/"
done
echo "== build as Cargo.toml says"
bash scripts/build.sh
