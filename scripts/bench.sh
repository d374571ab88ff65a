#!/usr/bin/env bash
# The benchmark (issue 4): the tests' set-up, the release build, then
# bench/run.mjs in Miniflare, which prints each figure against its target
# and writes docs/benchmarks.md. Run it as `npm run bench` (npm installs the
# packages first and puts Node 22 from node_modules/.bin on the PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== build (release)"
bash scripts/build.sh
echo "== build (the WASM floor, bench/wasm-floor; skipped when up to date)"
bash bench/wasm-floor/build.sh
echo "== bench (node $(node --version))"
node bench/run.mjs
