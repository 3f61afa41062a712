#!/usr/bin/env bash
# The Volto end-to-end stage: host-server on a fresh data directory, Volto in front of it
# (scripts/volto.sh, built once and cached), and tests/volto/editor-day.mjs driving an editor's day
# through Volto's UI in headless Chromium. Screenshots: artifacts/volto/.
#
#   ./scripts/volto-e2e.sh
#
# HOST_SERVER_BIN picks the server binary (default: target/release/host-server, built here with
# `cargo build --release`, which is a no-op when it is up to date).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
source scripts/volto-lib.sh
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${HOST_SERVER_BIN:-$TARGET/release/host-server}
LOGS=$ROOT/artifacts/volto
mkdir -p "$LOGS"
# Volto's install and build (cached after the first run) beside the server's release build: npm's
# download time overlaps the compiler's.
./scripts/volto.sh build > "$LOGS/volto-build.log" 2>&1 &
VOLTO_BUILD=$!
if [ -z "${HOST_SERVER_BIN:-}" ]; then
  t0=$(date +%s)
  cargo build --release -p host-server --quiet
  echo "volto-e2e: release host-server built in $(($(date +%s) - t0))s"
fi
if ! wait "$VOLTO_BUILD"; then
  echo "Volto's install or build failed; see $LOGS/volto-build.log" >&2
  tail -20 "$LOGS/volto-build.log" >&2
  exit 1
fi
grep '^volto: \(installed\|built\)' "$LOGS/volto-build.log" || echo "volto-e2e: Volto's build was in the cache"

e2e_setup
start_server
start_volto
ensure_playwright
node tests/volto/editor-day.mjs "http://127.0.0.1:$VPORT" "http://127.0.0.1:$SPORT"
