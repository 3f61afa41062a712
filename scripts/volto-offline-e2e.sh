#!/usr/bin/env bash
# The Volto offline end-to-end stage (issue 37): host-server on a fresh data directory, Volto built
# with the volto-offline add-on in front of it (scripts/volto.sh --offline, cached), and
# tests/volto/offline.mjs driving an editor through Volto's UI in headless Chromium: online login,
# then the browser context offline and the server stopped, edits, a reload, the server back with a
# conflicting edit, the conflict resolved in the add-on's view. Screenshots: artifacts/volto-offline/.
#
#   HOST_SERVER_BIN=path/to/host-server ./scripts/volto-offline-e2e.sh
#
# HOST_SERVER_BIN is required (scripts/test.sh passes the release build the Volto stage uses; a
# debug build works too). Everything missing is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN=${HOST_SERVER_BIN:?set HOST_SERVER_BIN to the host-server binary}
LOGS=$ROOT/artifacts/volto-offline
mkdir -p "$LOGS"
[ -x "$BIN" ] || { echo "volto-offline-e2e: no server binary at $BIN" >&2; exit 1; }
[ -x /usr/bin/chromium ] || { echo "volto-offline-e2e: /usr/bin/chromium is missing" >&2; exit 1; }

t0=$(date +%s)
if ! ./scripts/volto.sh build --offline > "$LOGS/volto-build.log" 2>&1; then
  echo "volto-offline-e2e: Volto's offline build failed; see $LOGS/volto-build.log" >&2
  tail -30 "$LOGS/volto-build.log" >&2
  exit 1
fi
echo "volto-offline-e2e: Volto with the add-on ready in $(($(date +%s) - t0))s"
grep '^volto: \(installed\|built\)' "$LOGS/volto-build.log" || echo "volto-offline-e2e: the offline build was in the cache"

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
SERVER_PID=$!
pids+=($SERVER_PID)
for _ in $(seq 1 100); do grep -q '^listening on' "$LOGS/server.out" 2>/dev/null && break; sleep 0.1; done
grep -q '^listening on' "$LOGS/server.out" || { echo "host-server did not start; see $LOGS/server.log" >&2; exit 1; }

VOLTO_BACKEND="http://127.0.0.1:$SPORT" VOLTO_PORT=$VPORT ./scripts/volto.sh --offline > "$LOGS/volto.log" 2>&1 &
VOLTO_PID=$!
pids+=($VOLTO_PID)
for _ in $(seq 1 1200); do
  grep -q '^Volto: http' "$LOGS/volto.log" 2>/dev/null && break
  kill -0 "$VOLTO_PID" 2>/dev/null || { echo "Volto did not start; see $LOGS/volto.log" >&2; tail -20 "$LOGS/volto.log" >&2; exit 1; }
  sleep 0.5
done
grep -q '^Volto: http' "$LOGS/volto.log" || { echo "Volto did not start within 10 minutes" >&2; exit 1; }

(cd tests/volto && { [ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --loglevel=error; })
# The test stops the server (SERVER_PID) and starts it again on the same data and port (SERVER_CMD).
SERVER_PID=$SERVER_PID \
SERVER_CMD=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$BIN" --data "$DATA" --listen "127.0.0.1:$SPORT") \
VOLTO_ARTIFACTS=$LOGS \
  node tests/volto/offline.mjs "http://127.0.0.1:$VPORT" "http://127.0.0.1:$SPORT"
