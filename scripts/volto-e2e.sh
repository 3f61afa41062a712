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

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
SPORT=$(free_port)
VPORT=$(free_port)
DATA=$(mktemp -d)
export ADMIN_PASSWORD="e2e-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$DATA"
}
trap cleanup EXIT

"$BIN" --data "$DATA" --listen "127.0.0.1:$SPORT" > "$LOGS/server.out" 2> "$LOGS/server.log" &
pids+=($!)
for _ in $(seq 1 100); do grep -q '^listening on' "$LOGS/server.out" 2>/dev/null && break; sleep 0.1; done
grep -q '^listening on' "$LOGS/server.out" || { echo "host-server did not start; see $LOGS/server.log" >&2; exit 1; }

VOLTO_BACKEND="http://127.0.0.1:$SPORT" VOLTO_PORT=$VPORT ./scripts/volto.sh > "$LOGS/volto.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 1200); do
  grep -q '^Volto: http' "$LOGS/volto.log" 2>/dev/null && break
  kill -0 "${pids[1]}" 2>/dev/null || { echo "Volto did not start; see $LOGS/volto.log" >&2; tail -20 "$LOGS/volto.log" >&2; exit 1; }
  sleep 0.5
done
grep -q '^Volto: http' "$LOGS/volto.log" || { echo "Volto did not start within 10 minutes" >&2; exit 1; }

(cd tests/volto && { [ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --loglevel=error; })
node tests/volto/editor-day.mjs "http://127.0.0.1:$VPORT" "http://127.0.0.1:$SPORT"
