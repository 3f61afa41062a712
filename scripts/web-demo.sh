#!/usr/bin/env bash
# Build the web demo (release wasm, twice -> wasm-bindgen --target web -> wasm-opt) into web-demo/pkg and
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
OPT=web-demo/e2e/node_modules/.bin/wasm-opt

# Two builds of host-wasm into one package (README "The browser host"): the first module
# (`--features lean`, host_wasm.js + host_wasm_bg.wasm) and the full one (host_wasm_full.js +
# host_wasm_full_bg.wasm), and the loader pages import (engine.js, from host-wasm/js/).
if [ ! -x "$OPT" ]; then
  (cd web-demo/e2e && npm ci --no-audit --no-fund --loglevel=error)
fi
rm -rf web-demo/pkg
cargo build --target wasm32-unknown-unknown -p host-wasm --profile wasm-release --features lean
wasm-bindgen --target web --out-dir web-demo/pkg "$WASM"
cargo build --target wasm32-unknown-unknown -p host-wasm --profile wasm-release
wasm-bindgen --target web --out-dir web-demo/pkg --out-name host_wasm_full "$WASM"
for m in host_wasm_bg host_wasm_full_bg; do
  "$OPT" -Os "web-demo/pkg/$m.wasm" -o "web-demo/pkg/$m.wasm"
  echo "built web-demo/pkg/$m.wasm: $(stat -c %s "web-demo/pkg/$m.wasm") bytes wasm," \
    "$(gzip -9c "web-demo/pkg/$m.wasm" | wc -c) bytes gzipped"
done
cp host-wasm/js/engine.js web-demo/pkg/engine.js

if [ "${1:-}" != "--build-only" ]; then
  PORT=${PORT:-8766}
  echo "serving http://127.0.0.1:$PORT/ (Ctrl-C stops)"
  exec python3 -m http.server "$PORT" --bind 127.0.0.1 --directory web-demo
fi
