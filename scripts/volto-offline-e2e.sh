#!/usr/bin/env bash
# The Volto offline end-to-end stage (issue 37): host-server on a fresh data directory, Volto built
# with the volto-offline add-on in front of it (scripts/volto.sh --offline, cached), and
# tests/volto/offline.mjs driving an editor through Volto's UI in headless Chromium: online login,
# the change stream followed, then the browser context offline and the server stopped, an image,
# edits, the history, a reorder, a reload, the server back with a conflicting edit, the conflict
# resolved in the add-on's view ("Keep mine", then a merge of fields), a session revoked while
# offline (a login before anything is sent), a second user of the browser and a logout with writes
# waiting; figures printed. Screenshots: artifacts/volto-offline/.
#
#   HOST_SERVER_BIN=path/to/host-server ./scripts/volto-offline-e2e.sh
#
# HOST_SERVER_BIN is required (scripts/test.sh passes the release build the Volto stage uses; a
# debug build works too). Everything missing is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
source scripts/volto-lib.sh
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

e2e_setup
start_server
start_volto --offline
ensure_playwright
# The test stops the server (SERVER_PID) and starts it again on the same data and port (SERVER_CMD).
SERVER_PID=$SERVER_PID \
SERVER_CMD=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$BIN" --data "$DATA" --listen "127.0.0.1:$SPORT") \
VOLTO_ARTIFACTS=$LOGS \
  node tests/volto/offline.mjs "http://127.0.0.1:$VPORT" "http://127.0.0.1:$SPORT"
