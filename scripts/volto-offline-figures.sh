#!/usr/bin/env bash
# Volto offline's figures on larger sites (issue 37), printed, never asserted: for a site of each
# size (1,000 and 10,000 objects unless FIGURES_SIZES says otherwise), the time to open the
# replica at login (a new one: its full download), to open it again (the worker restarted), and an
# offline GET of a page, of a folder's contents listing and a PATCH of a page through the Service
# Worker, as Volto's `fetch` sees them (tests/volto/offline-figures.mjs); then the add-on's size
# over Volto's own bundle (the plain build against the offline build).
#
#   HOST_SERVER_BIN=path/to/host-server [FIGURES_SIZES="1000 10000"] ./scripts/volto-offline-figures.sh
#
# Each site is made by host-server's `seed` example (ordinary API requests in groups: 10 published
# folders, the rest published pages spread over them), built in the same profile as the server
# (release when the binary's path says so, else debug). Volto with the add-on is built as
# `./scripts/volto.sh --offline` builds it (cached).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
source scripts/volto-lib.sh
BIN=${HOST_SERVER_BIN:?set HOST_SERVER_BIN to the host-server binary}
SIZES=${FIGURES_SIZES:-1000 10000}
LOGS=$ROOT/artifacts/volto-offline-figures
mkdir -p "$LOGS"
[ -x "$BIN" ] || { echo "volto-offline-figures: no server binary at $BIN" >&2; exit 1; }
[ -x /usr/bin/chromium ] || { echo "volto-offline-figures: /usr/bin/chromium is missing" >&2; exit 1; }

profile=()
case "$BIN" in */release/*) profile=(--release) ;; esac
echo "volto-offline-figures: building the seed example (${profile[*]:-debug})"
cargo build -q "${profile[@]}" -p host-server --example seed
SEED=$(dirname "$BIN")/examples/seed
[ -x "$SEED" ] || { echo "volto-offline-figures: no seed example at $SEED" >&2; exit 1; }

./scripts/volto.sh build --offline > "$LOGS/volto-build.log" 2>&1 ||
  { echo "volto-offline-figures: Volto's offline build failed; see $LOGS/volto-build.log" >&2; exit 1; }
./scripts/volto.sh build > "$LOGS/volto-plain-build.log" 2>&1 ||
  { echo "volto-offline-figures: Volto's plain build failed; see $LOGS/volto-plain-build.log" >&2; exit 1; }
ensure_playwright

e2e_setup
for n in $SIZES; do
  # 10 folders and n - 10 pages in them: the seed's shape "10,<pages per folder>"
  per=$(( (n - 10) / 10 ))
  [ "$per" -ge 1 ] || { echo "volto-offline-figures: a size of at least 20 objects, not $n" >&2; exit 1; }
  rm -rf "$DATA" && DATA=$(mktemp -d)
  echo "volto-offline-figures: seeding $((10 + 10 * per)) objects"
  "$SEED" --data "$DATA" --shape "10,$per" > "$LOGS/seed-$n.log" 2>&1 ||
    { echo "volto-offline-figures: seeding failed; see $LOGS/seed-$n.log" >&2; exit 1; }
  SPORT=$(free_port)
  VPORT=$(free_port)
  start_server
  start_volto --offline
  node tests/volto/offline-figures.mjs "http://127.0.0.1:$VPORT" "$((10 + 10 * per))"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
done

# The add-on's size: the offline build against Volto's plain build (same Volto, same lockfile).
offline=$(./scripts/volto.sh path --offline)
plain=$(./scripts/volto.sh path)
client() { ls "$1"/build/public/static/js/client.*.js | head -1; }
gz() { gzip -9c "$1" | wc -c; }
static_bytes() { (cd "$1/build/public/static" && find . -type f ! -name '*.map' -printf '%s\n' | awk '{s+=$1} END {print s}'); }
pc=$(client "$plain")
oc=$(client "$offline")
echo "volto-offline-figures: size: Volto's client.js $(stat -c %s "$pc") B ($(gz "$pc") B gzip) -> with the add-on $(stat -c %s "$oc") B ($(gz "$oc") B gzip): +$(( $(stat -c %s "$oc") - $(stat -c %s "$pc") )) B (+$(( $(gz "$oc") - $(gz "$pc") )) B gzip)"
echo "volto-offline-figures: size: Volto's static/ (no source maps) $(static_bytes "$plain") B -> $(static_bytes "$offline") B: +$(( $(static_bytes "$offline") - $(static_bytes "$plain") )) B"
for f in offline-sw.js offline-pkg/host_wasm.js offline-pkg/host_wasm_bg.wasm; do
  echo "volto-offline-figures: size: the worker's $f: $(stat -c %s "$offline/build/public/$f") B ($(gz "$offline/build/public/$f") B gzip), fetched once when the worker installs"
done
