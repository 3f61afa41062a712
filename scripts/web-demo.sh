#!/usr/bin/env bash
# Build the web demo (release wasm -> wasm-bindgen --target web -> wasm-opt) into web-demo/pkg and
# serve web-demo/ on http://127.0.0.1:${PORT:-8766}/ (python3 -m http.server).
#
#   ./scripts/web-demo.sh               # build and serve; open http://127.0.0.1:8766/
#   ./scripts/web-demo.sh --build-only  # just build (used by scripts/test.sh and the e2e test)
#
# Needs the wasm32-unknown-unknown target, wasm-bindgen-cli matching Cargo.lock, and npm (for wasm-opt
# from binaryen@132, installed into web-demo/e2e/node_modules); scripts/test.sh installs all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET_DIR=${CARGO_TARGET_DIR:-target}
WASM="$TARGET_DIR/wasm32-unknown-unknown/wasm-release/host_wasm.wasm"

cargo build --target wasm32-unknown-unknown -p host-wasm --profile wasm-release
rm -rf web-demo/pkg
wasm-bindgen --target web --out-dir web-demo/pkg "$WASM"
if [ ! -x web-demo/e2e/node_modules/.bin/wasm-opt ]; then
  (cd web-demo/e2e && npm ci --no-audit --no-fund --loglevel=error)
fi
web-demo/e2e/node_modules/.bin/wasm-opt -Os web-demo/pkg/host_wasm_bg.wasm -o web-demo/pkg/host_wasm_bg.wasm
echo "built web-demo/pkg: $(stat -c %s web-demo/pkg/host_wasm_bg.wasm) bytes wasm," \
  "$(gzip -9c web-demo/pkg/host_wasm_bg.wasm | wc -c) bytes gzipped"

if [ "${1:-}" != "--build-only" ]; then
  PORT=${PORT:-8766}
  echo "serving http://127.0.0.1:$PORT/ (Ctrl-C stops)"
  exec python3 -m http.server "$PORT" --bind 127.0.0.1 --directory web-demo
fi
