#!/usr/bin/env bash
# Installs the Rust-side build tools at pinned versions, once. Idempotent and
# quick when done: each step checks before it installs. (npm packages,
# including Node 22 from the `node` package, are installed by npm's
# pre-scripts before this runs.)
set -euo pipefail

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
