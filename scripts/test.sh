#!/usr/bin/env bash
# The whole test suite: native tests (unit, SQL, the seeded simulation),
# lint, the Worker build, then the miniflare suite against real Workflows,
# Durable Objects and D1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== cargo fmt --check / clippy"
cargo fmt --all -- --check
cargo clippy --all-targets --quiet -- -D warnings
cargo clippy --target wasm32-unknown-unknown --lib --quiet -- -D warnings
echo "== cargo doc (broken intra-doc links denied), native and wasm32"
RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links" cargo doc --no-deps --quiet
RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links" \
  cargo doc --no-deps --lib --target wasm32-unknown-unknown --quiet
echo "== cargo test (native)"
cargo test --quiet
echo "== build"
bash scripts/build.sh
echo "== chromium (for the status page test)"
bash scripts/chromium.sh
echo "== miniflare suite (node $(node --version))"
node --test --test-concurrency=1 'tests/miniflare/*.test.mjs'
