#!/usr/bin/env bash
# Builds the WASM floor (src/lib.rs) into bench/wasm-floor/build/ as
# scripts/build.sh builds Baton: worker-build's release build with the
# pinned wasm-bindgen CLI and no wasm-opt of its own, then the npm
# binaryen's wasm-opt at Baton's level. Skipped, in well under a second,
# when the build is newer than every source. Run by scripts/bench.sh.
set -euo pipefail
cd "$(dirname "$0")"
root="$(cd ../.. && pwd)"
out=build/index_bg.wasm
if [ -f "$out" ] && [ -z "$(find src Cargo.toml Cargo.lock build.sh ../../scripts/build.sh -newer "$out" 2>/dev/null)" ]; then
  echo "wasm floor: up to date ($out)"
  exit 0
fi
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
export WASM_BINDGEN_BIN="$cargo_bin/wasm-bindgen"
[ -x "$root/node_modules/.bin/esbuild" ] && export ESBUILD_BIN="$root/node_modules/.bin/esbuild"
# Its own target directory beside Baton's, so neither build's lock waits on the other.
export CARGO_TARGET_DIR="$root/target/wasm-floor"
"$cargo_bin/worker-build" --release --no-opt
"$root/node_modules/.bin/wasm-opt" "${BATON_WASM_OPT_LEVEL:--O2}" --enable-mutable-globals --enable-sign-ext \
  --enable-nontrapping-float-to-int --enable-bulk-memory --enable-multivalue \
  --enable-reference-types --enable-exception-handling \
  "$out" -o "$out"
