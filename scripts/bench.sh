#!/usr/bin/env bash
# Print the host-wasm figures: release wasm size (raw and gzip), cold open with 1,000 and 10,000
# objects in IndexedDB, GET and POST medians through the browser engine (headless Chromium).
#   ./scripts/bench.sh            (builds web-demo/pkg first; SKIP_BUILD=1 to reuse it)
#   BENCH_SIZES=1000,10000,100000 BENCH_BULK=10000 ./scripts/bench.sh
#                                 (seed N POSTs per IndexedDB write with Site.beginBulk/endBulk:
#                                  100k in ~5 min instead of hours; the measured requests are the same)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${SKIP_BUILD:-}" ] || ./scripts/web-demo.sh --build-only
[ -d web-demo/e2e/node_modules/playwright-core ] || (cd web-demo/e2e && npm ci --no-audit --no-fund --loglevel=error)
node web-demo/e2e/bench.mjs
