#!/usr/bin/env bash
# Installs the build tools at pinned versions, once: the npm packages the
# build runs (binaryen's wasm-opt, esbuild; `npm test`, `npm start` and
# `npm run bench` install all of them first anyway) and the Rust-side tools.
# Idempotent and quick when done: each step checks before it installs, so
# `npm run build` (and wrangler's [build] command, and `npm pack`) works
# alone on a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x node_modules/.bin/wasm-opt ] || [ ! -x node_modules/.bin/esbuild ]; then
  echo "setup: installing the npm packages (package-lock.json)"
  npm install --no-audit --no-fund --loglevel=error
fi

# worker-build 0.8.7 drives wasm-bindgen-cli; the CLI must match the
# `wasm-bindgen` version in Cargo.lock exactly.
WORKER_BUILD_VERSION=0.8.7
WASM_BINDGEN_VERSION=0.2.129

cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  echo "setup: adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

installed() { cargo install --list | grep -q "^$1 v$2:"; }

if ! installed worker-build "$WORKER_BUILD_VERSION"; then
  echo "setup: installing worker-build $WORKER_BUILD_VERSION (a few minutes, once)"
  cargo install --locked "worker-build@$WORKER_BUILD_VERSION"
fi
if ! installed wasm-bindgen-cli "$WASM_BINDGEN_VERSION"; then
  echo "setup: installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (a few minutes, once)"
  cargo install --locked "wasm-bindgen-cli@$WASM_BINDGEN_VERSION"
fi
locked=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')
if [ "$locked" != "$WASM_BINDGEN_VERSION" ]; then
  echo "setup: Cargo.lock has wasm-bindgen $locked but the CLI is $WASM_BINDGEN_VERSION" >&2
  exit 1
fi
test -x "$cargo_bin/worker-build" && test -x "$cargo_bin/wasm-bindgen"
