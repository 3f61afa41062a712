#!/usr/bin/env bash
# The ONE command that runs every test of the workspace, on a fresh Debian 12 machine with rustup
# (root, apt reachable) as well as on a developer machine where everything is already installed.
#
#   ./scripts/test.sh            # everything
#   SKIP_INSTALL=1 ./scripts/test.sh   # do not try to install anything (fails if something is missing)
#
# Stages run in order; a failing stage is reported and the remaining stages still run (except those
# that need a failed setup step), so one CI run shows every failure. The script exits non-zero when
# any stage failed and always ends with the line "N passed, M failed".
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
export DEBIAN_FRONTEND=noninteractive
export PATH="$HOME/.cargo/bin:$PATH"
# the wasm-bindgen test runner finds chromedriver on PATH; make it explicit
export CHROMEDRIVER=${CHROMEDRIVER:-/usr/bin/chromedriver}
# several browser test binaries, each may take a while on a busy 2-core machine
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-300}

PASSED=0
FAILED=0
FAILED_STAGES=()
START_ALL=$(date +%s)

log() { printf '\n=== %s\n' "$*"; }

# stage NAME COMMAND...: run one stage, record the outcome.
stage() {
  local name=$1
  shift
  log "stage: $name"
  local t0=$(date +%s)
  if "$@"; then
    PASSED=$((PASSED + 1))
    printf '=== PASS: %s (%ss)\n' "$name" $(($(date +%s) - t0))
    return 0
  else
    local rc=$?
    FAILED=$((FAILED + 1))
    FAILED_STAGES+=("$name")
    printf '=== FAIL: %s (exit %s, %ss)\n' "$name" "$rc" $(($(date +%s) - t0))
    return 1
  fi
}

# skip NAME REASON: a stage that cannot run because something it needs failed (counts as failed).
skip() {
  FAILED=$((FAILED + 1))
  FAILED_STAGES+=("$1 (skipped: $2)")
  printf '\n=== FAIL: %s (skipped: %s)\n' "$1" "$2"
}

summary() {
  local total=$(($(date +%s) - START_ALL))
  echo
  echo "=== summary (${total}s)"
  for s in "${FAILED_STAGES[@]+"${FAILED_STAGES[@]}"}"; do
    echo "failed stage: $s"
  done
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root to run: $*" >&2
    return 1
  fi
}

# ---- setup ------------------------------------------------------------------------------------

install_chromium() {
  if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    echo "chromium and chromedriver present: $(chromium --version 2>/dev/null | head -1)"
    return 0
  fi
  [ -n "${SKIP_INSTALL:-}" ] && { echo "chromium/chromedriver missing and SKIP_INSTALL set" >&2; return 1; }
  as_root apt-get update -qq &&
    as_root apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
}

install_wasm_target() {
  if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    echo "wasm32-unknown-unknown present"
    return 0
  fi
  rustup target add wasm32-unknown-unknown
}

# The wasm-bindgen CLI must equal the wasm-bindgen crate in Cargo.lock to the patch level.
wasm_bindgen_lock_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock
}

install_wasm_bindgen() {
  local want
  want=$(wasm_bindgen_lock_version)
  if [ -z "$want" ]; then
    echo "could not read the wasm-bindgen version from Cargo.lock" >&2
    return 1
  fi
  local have
  have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')
  if [ "$have" = "$want" ] && command -v wasm-bindgen-test-runner >/dev/null; then
    echo "wasm-bindgen-cli $have present (Cargo.lock wants $want)"
    return 0
  fi
  [ -n "${SKIP_INSTALL:-}" ] && { echo "wasm-bindgen-cli $want missing (have '${have}') and SKIP_INSTALL set" >&2; return 1; }
  echo "installing wasm-bindgen-cli $want (have '${have:-none}'); this takes a few minutes"
  cargo install --quiet wasm-bindgen-cli --version "$want" --locked --force
}

install_npm() {
  command -v npm >/dev/null || { echo "npm is missing (Node 20 is expected on this machine)" >&2; return 1; }
  (cd web-demo/e2e && npm ci --no-audit --no-fund --loglevel=error)
}

# The real OpenID provider of host-server's single sign-on test (oidc_process.rs), from the
# lockfile. The test fails (never skips) without it or without node.
install_oidc_provider() {
  command -v npm >/dev/null || { echo "npm is missing (the single sign-on test needs Node and npm)" >&2; return 1; }
  (cd host-server/tests/oidc && npm ci --no-audit --no-fund --loglevel=error)
}

# A throw-away PostgreSQL cluster for the tests that need one (the PostgreSQL store, several
# servers on one database, the scenarios over --database): Debian's package when missing, initdb
# in a temp dir (as the postgres user when we are root: initdb refuses root), listening on a Unix
# socket in that dir only (so the port never collides), stopped and removed on exit. fsync is off:
# nothing here tests PostgreSQL's own crash safety, and it keeps CI fast.
PG_TMP=""
start_postgres() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    [ -n "${SKIP_INSTALL:-}" ] && { echo "PostgreSQL missing and SKIP_INSTALL set" >&2; return 1; }
    as_root apt-get update -qq &&
      as_root apt-get install -y -qq --no-install-recommends postgresql >/dev/null || return 1
    bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  fi
  PG_TMP=$(mktemp -d /tmp/pg-test.XXXXXX) || return 1
  local run=()
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres "$PG_TMP" || return 1
    run=(runuser -u postgres --)
  fi
  "${run[@]}" "$bin/initdb" -D "$PG_TMP/data" -A trust -U postgres -E UTF8 --no-sync \
    > "$PG_TMP/initdb.log" 2>&1 || { cat "$PG_TMP/initdb.log"; return 1; }
  "${run[@]}" "$bin/pg_ctl" -D "$PG_TMP/data" -l "$PG_TMP/server.log" -w -t 60 \
    -o "-k $PG_TMP -c listen_addresses= -p 5432 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
    start > /dev/null || { cat "$PG_TMP/server.log"; return 1; }
  export PG_TEST_URL="postgresql://postgres@${PG_TMP//\//%2F}:5432/postgres"
  export SCENARIO_DATABASE="$PG_TEST_URL"
  echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') at $PG_TEST_URL"
}

stop_postgres() {
  [ -n "$PG_TMP" ] && [ -d "$PG_TMP/data" ] || return 0
  local bin run=()
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ "$(id -u)" -eq 0 ] && run=(runuser -u postgres --)
  "${run[@]}" "$bin/pg_ctl" -D "$PG_TMP/data" -m immediate stop > /dev/null 2>&1
  rm -rf "$PG_TMP"
}

# ---- build and test steps ---------------------------------------------------------------------

build_web_demo() {
  ./scripts/web-demo.sh --build-only
}

web_demo_e2e() {
  mkdir -p artifacts
  (cd web-demo/e2e && node e2e.mjs)
}

# The engine's two modules through their loader (web-demo/pkg/engine.js): the move to the full
# module on the first request the first module leaves out, answers equal to the full module's.
web_demo_split() {
  (cd web-demo/e2e && node split.mjs)
}

# Offline editing against the real server (issue 18): replicas in Chromium, host-server stopped and
# started by the test (the debug binary the "cargo build -p host-server" stage made).
web_demo_sync_e2e() {
  mkdir -p artifacts
  (cd web-demo/e2e && HOST_SERVER_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/host-server" node sync.mjs)
}

# The release server for the Volto stage takes minutes to build; it is built in the background from
# the start (in its own target directory, so it never waits for the other builds' lock), filling the
# time the browser stages leave a core idle.
RELEASE_TARGET=${CARGO_TARGET_DIR:-$ROOT/target}/volto-release
start_release_build() {
  mkdir -p artifacts
  rm -f artifacts/release-build.rc
  (
    t0=$(date +%s)
    cargo build --release -p host-server --quiet --target-dir "$RELEASE_TARGET" > artifacts/release-build.log 2>&1
    rc=$?
    echo "release host-server build: exit $rc after $(($(date +%s) - t0))s" >> artifacts/release-build.log
    echo "$rc" > artifacts/release-build.rc
  ) &
  RELEASE_BUILD_PID=$!
}

# Volto (the Plone front end, pinned, built once and cached outside the repo by scripts/volto.sh) in
# front of the release server, driven through its UI (tests/volto/editor-day.mjs).
wait_release_build() {
  local t0=$(date +%s)
  wait "$RELEASE_BUILD_PID" 2>/dev/null
  echo "waited $(($(date +%s) - t0))s for the background release build"
  cat artifacts/release-build.log
  [ "$(cat artifacts/release-build.rc 2>/dev/null)" = 0 ]
}

volto_e2e() {
  wait_release_build || return 1
  HOST_SERVER_BIN="$RELEASE_TARGET/release/host-server" ./scripts/volto-e2e.sh
}

# Volto offline (issue 37): Volto built with the volto-offline add-on (scripts/volto.sh --offline,
# which takes the engine's wasm package from the web-demo build) in front of the same release server;
# the browser goes offline and the server stops, and back (scripts/volto-offline-e2e.sh).
volto_offline_e2e() {
  wait_release_build || return 1
  HOST_SERVER_BIN="$RELEASE_TARGET/release/host-server" ./scripts/volto-offline-e2e.sh
}

# Single sign-on through Volto (issue 38): a real OpenID provider, host-server with --oidc-config,
# Volto's single sign-on build (@plone-collective/volto-authomatic; a second cached build, since
# the add-on's login page replaces the password form editor-day.mjs uses) and Chromium clicking
# "Log in with <provider>" (tests/volto/sso.mjs). Fails, never skips, when something is missing.
volto_sso_e2e() {
  wait_release_build || return 1
  HOST_SERVER_BIN="$RELEASE_TARGET/release/host-server" ./scripts/volto-sso-e2e.sh
}

# The README's shell examples, run as written against the release server (scripts/readme-examples.py).
readme_examples() {
  wait_release_build || return 1
  HOST_SERVER_BIN="$RELEASE_TARGET/release/host-server" python3 scripts/readme-examples.py README.md
}

# The operations process tests (issue 38: single sign-on against a real OpenID provider, backups
# and restores, metrics and JSON logs; durability across kill -9, graceful shutdown and startup
# errors) on the release binary that ships, the one built above (never built a second time): the
# test binaries are the debug ones "cargo test --workspace" built (same selection of packages, so
# nothing is recompiled), and `PROCESS_TESTS_BIN` tells them which server to start. The same tests
# also run in "cargo test --workspace" on the debug binary, whose overflow checks and debug
# assertions the release build leaves out.
release_process_tests() {
  wait_release_build || return 1
  PROCESS_TESTS_BIN="$RELEASE_TARGET/release/host-server" cargo test --workspace --no-fail-fast \
    --test process --test backup_process --test metrics_process --test oidc_process
}

# ---- run --------------------------------------------------------------------------------------

SETUP_OK=1
stage "install chromium + chromedriver (apt)" install_chromium || SETUP_OK=0
stage "install rust target wasm32-unknown-unknown" install_wasm_target || SETUP_OK=0
stage "install wasm-bindgen-cli (version from Cargo.lock)" install_wasm_bindgen || SETUP_OK=0
NPM_OK=1
stage "npm ci (web-demo/e2e: playwright-core, binaryen)" install_npm || NPM_OK=0
stage "npm ci (host-server/tests/oidc: oidc-provider)" install_oidc_provider

# The PostgreSQL tests fail (never skip) when this run could not give them a database.
export PG_TEST_REQUIRED=1
trap stop_postgres EXIT
stage "PostgreSQL throw-away cluster (apt + initdb)" start_postgres

start_release_build

stage "cargo fmt --check" cargo fmt --all -- --check
stage "cargo clippy (native, all targets)" cargo clippy --workspace --all-targets --quiet -- -D warnings
stage "cargo build -p host-server" cargo build -p host-server --quiet
stage "cargo test --workspace (native)" cargo test --workspace --no-fail-fast
# The browser's first module (engine feature lean): every scenario passes, or passes every step
# up to a request that build leaves out (answered by the full module in the browser).
stage "contract scenarios in memory on the lean engine (the browser's first module)" \
  cargo test -p tests --test memory --features engine/lean

if [ "$SETUP_OK" = 1 ]; then
  stage "cargo clippy host-wasm (wasm32)" \
    cargo clippy -p host-wasm --target wasm32-unknown-unknown --all-targets --quiet -- -D warnings
  stage "cargo build wasm32 (engine, host-wasm)" \
    cargo build --target wasm32-unknown-unknown -p engine -p host-wasm
  stage "cargo test wasm32 host-wasm (Node + headless Chromium)" \
    cargo test --target wasm32-unknown-unknown -p host-wasm --test node --test browser --test store
  stage "contract scenarios on wasm/IndexedDB (headless Chromium)" \
    cargo test --target wasm32-unknown-unknown -p host-wasm --test contract
  if [ "$NPM_OK" = 1 ]; then
    if stage "web-demo release build (cargo + wasm-bindgen + wasm-opt)" build_web_demo; then
      stage "web-demo end-to-end (playwright-core + chromium)" web_demo_e2e
      stage "web-demo two modules (first module, then the full one)" web_demo_split
      stage "web-demo sync end-to-end (replicas of host-server, chromium)" web_demo_sync_e2e
    else
      skip "web-demo end-to-end" "web-demo build failed"
      skip "web-demo two modules" "web-demo build failed"
      skip "web-demo sync end-to-end" "web-demo build failed"
    fi
  else
    skip "web-demo release build" "npm ci failed"
    skip "web-demo end-to-end" "npm ci failed"
    skip "web-demo two modules" "npm ci failed"
    skip "web-demo sync end-to-end" "npm ci failed"
  fi
else
  for s in "cargo clippy host-wasm (wasm32)" "cargo build wasm32" "cargo test wasm32" \
    "contract scenarios on wasm/IndexedDB" "web-demo release build" "web-demo end-to-end" \
    "web-demo two modules" \
    "web-demo sync end-to-end"; do
    skip "$s" "toolchain setup failed"
  done
fi

stage "README examples (release host-server)" readme_examples
stage "operations process tests (release host-server)" release_process_tests

if [ -x /usr/bin/chromium ] && command -v npm >/dev/null; then
  stage "Volto end-to-end (Volto 18 + host-server + chromium)" volto_e2e
  stage "Volto offline end-to-end (Volto 18 + volto-offline + host-server stopped and back)" volto_offline_e2e
else
  skip "Volto end-to-end" "chromium or npm missing"
  skip "Volto offline end-to-end" "chromium or npm missing"
fi
stage "Volto single sign-on end-to-end (oidc-provider + host-server + Volto + chromium)" volto_sso_e2e

summary
