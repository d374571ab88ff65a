#!/usr/bin/env bash
# Serves Baton and the example Workflow locally with `wrangler dev`:
# local Durable Objects, local D1, local Workflows, nothing remote.
#
#   npm start               standalone: Baton's Worker (wrangler.toml) beside
#                           the example's (example/wrangler.toml), bound by
#                           script name, as two deployed Workers would be
#   npm start -- embedded   embedded: one Worker (example/embedded.toml) that
#                           re-exports Baton's classes and serves its API
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-standalone}"
case "$mode" in
  standalone | embedded) ;;
  *) echo "usage: npm start [-- standalone|embedded]" >&2; exit 2 ;;
esac
bash scripts/build.sh
# A token for the local HTTP API and status page, made once per checkout and
# kept out of git (.dev.vars is ignored).
if ! grep -qs '^BATON_TOKEN=' .dev.vars; then
  echo "BATON_TOKEN=local-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')" >> .dev.vars
fi
echo "Baton $mode. Status page: http://localhost:${PORT:-8787}/  (token: $(sed -n 's/^BATON_TOKEN=//p' .dev.vars))"
# One local state directory for both commands, so the dev session sees the
# tables the migrations created. CI=true: apply without asking.
state=.wrangler/state
if [ "$mode" = embedded ]; then
  # wrangler reads .dev.vars beside the config it is given.
  cp .dev.vars example/.dev.vars
  CI=true wrangler d1 migrations apply DB --local -c example/embedded.toml --persist-to "$state"
  exec wrangler dev -c example/embedded.toml --persist-to "$state" --port "${PORT:-8787}"
fi
CI=true wrangler d1 migrations apply DB --local --persist-to "$state"
# The first config is the one served on the port (the example, which has the
# HTTP routes); Baton runs beside it and both share the local state.
exec wrangler dev -c example/wrangler.toml -c wrangler.toml --persist-to "$state" --port "${PORT:-8787}"
