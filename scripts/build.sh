#!/usr/bin/env bash
# Builds the deployable Worker into build/ (wrangler.toml's `main`,
# js/worker.mjs, imports it). `--dev` builds without optimisation.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
profile=--release
[ "${1:-}" = "--dev" ] && profile=--dev
# worker-build would download wasm-bindgen and binaryen from hosts this
# machine cannot reach: point it at the pinned CLI, and skip wasm-opt (the
# size benchmark measures the module as built).
export WASM_BINDGEN_BIN="$cargo_bin/wasm-bindgen"
if [ -x node_modules/.bin/esbuild ]; then
  export ESBUILD_BIN="$PWD/node_modules/.bin/esbuild"
fi
"$cargo_bin/worker-build" "$profile" --no-opt
