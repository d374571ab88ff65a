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
# machine cannot reach: point it at the pinned CLI, skip its wasm-opt, and
# optimise the final module below with the npm package binaryen's.
export WASM_BINDGEN_BIN="$cargo_bin/wasm-bindgen"
if [ -x node_modules/.bin/esbuild ]; then
  export ESBUILD_BIN="$PWD/node_modules/.bin/esbuild"
fi
"$cargo_bin/worker-build" "$profile" --no-opt
if [ "$profile" = --release ]; then
  # Size is cold start and upload limit for a Worker: -Oz takes the gzipped
  # module from about 205 KiB to 145 KiB. The features are the ones the
  # module uses (wasm-bindgen's exception handling among them).
  wasm_opt="node_modules/.bin/wasm-opt"
  "$wasm_opt" -Oz --enable-mutable-globals --enable-sign-ext \
    --enable-nontrapping-float-to-int --enable-bulk-memory --enable-multivalue \
    --enable-reference-types --enable-exception-handling \
    build/index_bg.wasm -o build/index_bg.wasm
fi
