#!/usr/bin/env bash
# Serves Baton and the example Workflow locally with `wrangler dev`:
# local Durable Objects, local D1, local Workflows, nothing remote.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# One local state directory for both commands, so the dev session sees the
# tables the migrations created. CI=true: apply without asking.
state=.wrangler/state
CI=true wrangler d1 migrations apply DB --local --persist-to "$state"
# The first config is the one served on the port (the example, which has the
# HTTP routes); Baton runs beside it and both share the local state.
exec wrangler dev -c example/wrangler.toml -c wrangler.toml --persist-to "$state" --port "${PORT:-8787}"
