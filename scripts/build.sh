#!/usr/bin/env bash
# Builds the deployable Worker into build/ (wrangler.toml's `main`,
# js/worker.mjs, imports it): the WASM, its JS glue, and static/'s files as
# build/assets.js. `--dev` builds without optimisation.
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
# The status page and the OpenAPI document, as build/assets.js: JS serves
# their bytes, so they stay out of the WASM (scripts/assets.mjs says why).
node_modules/.bin/node scripts/assets.mjs
# -O2, measured with `npm run bench` (P6 in docs/benchmarks.md): it shrinks
# the gzipped module (362 KiB at the last run; cold start, upload limit)
# and keeps the hand-off at the unoptimised speed; -Oz saves about 3 KiB
# more but slowed every hand-off when it was measured. BATON_WASM_OPT_LEVEL overrides it, to measure another level.
wasm_opt_level="${BATON_WASM_OPT_LEVEL:--O2}"
# BATON_WASM_NAMES=1 keeps the function names (the name section), for
# `node bench/profile.mjs`; the code is the same.
names=()
[ "${BATON_WASM_NAMES:-}" = 1 ] && names=(--debuginfo)
if [ "$profile" = --release ]; then
  # The features are the ones the module uses (wasm-bindgen's exception
  # handling among them); binaryen refuses the module without them.
  wasm_opt="node_modules/.bin/wasm-opt"
  "$wasm_opt" "$wasm_opt_level" "${names[@]}" --enable-mutable-globals --enable-sign-ext \
    --enable-nontrapping-float-to-int --enable-bulk-memory --enable-multivalue \
    --enable-reference-types --enable-exception-handling \
    build/index_bg.wasm -o build/index_bg.wasm
fi
