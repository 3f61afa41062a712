#!/usr/bin/env bash
# The Volto single sign-on end-to-end stage (issue 38): a real OpenID provider (the `oidc-provider`
# npm package, host-server/tests/oidc/provider.mjs, showing its sign-in form), host-server with
# --oidc-config pointing at it, Volto's single sign-on build (scripts/volto.sh with VOLTO_SSO=1:
# @plone-collective/volto-authomatic from npm) in front of it, and tests/volto/sso.mjs clicking
# "Log in with <provider>" in headless Chromium, signing in at the provider and landing back in
# Volto logged in. Screenshots: artifacts/volto-sso/.
#
#   ./scripts/volto-sso-e2e.sh
#
# HOST_SERVER_BIN picks the server binary (default: target/release/host-server, built here with
# `cargo build --release`, a no-op when it is up to date). Anything missing (node, npm, chromium,
# a package) fails the run; nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${HOST_SERVER_BIN:-$TARGET/release/host-server}
LOGS=$ROOT/artifacts/volto-sso
mkdir -p "$LOGS"
export VOLTO_SSO=1
for tool in node npm python3; do
  command -v "$tool" >/dev/null || { echo "volto-sso-e2e: $tool is missing" >&2; exit 1; }
done

./scripts/volto.sh build > "$LOGS/volto-build.log" 2>&1 &
VOLTO_BUILD=$!
if [ -z "${HOST_SERVER_BIN:-}" ]; then
  t0=$(date +%s)
  cargo build --release -p host-server --quiet
  echo "volto-sso-e2e: release host-server built in $(($(date +%s) - t0))s"
fi
(cd host-server/tests/oidc && { [ -f node_modules/oidc-provider/package.json ] || npm ci --no-audit --no-fund --loglevel=error; })
(cd tests/volto && { [ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --loglevel=error; })
if ! wait "$VOLTO_BUILD"; then
  echo "Volto's install or build failed; see $LOGS/volto-build.log" >&2
  tail -20 "$LOGS/volto-build.log" >&2
  exit 1
fi
grep '^volto: \(installed\|built\)' "$LOGS/volto-build.log" || echo "volto-sso-e2e: Volto's single sign-on build was in the cache"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
SPORT=$(free_port)
VPORT=$(free_port)
PPORT=$(free_port)
VOLTO=http://127.0.0.1:$VPORT
ISSUER=http://127.0.0.1:$PPORT
DATA=$(mktemp -d)
export ADMIN_PASSWORD="e2e-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$DATA"
}
trap cleanup EXIT

# wait_line FILE PREFIX PID WHAT: wait (60 s at most) for a line starting with PREFIX in FILE.
wait_line() {
  for _ in $(seq 1 600); do
    grep -q "^$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || { echo "$4 exited; see $1" >&2; tail -20 "$1" >&2; return 1; }
    sleep 0.1
  done
  echo "$4 did not start within 60s; see $1" >&2
  return 1
}

# The provider sends the browser back to the add-on's route (/login-authomatic/<id>, where its
# login button's flow ends).
(cd host-server/tests/oidc && exec env REDIRECT_URI="$VOLTO/login-authomatic/test" PORT="$PPORT" \
  LOGIN_FORM=1 node provider.mjs) > "$LOGS/provider.out" 2> "$LOGS/provider.log" &
pids+=($!)
wait_line "$LOGS/provider.out" "listening on $ISSUER" "${pids[-1]}" "the OpenID provider"

cat > "$DATA/oidc.toml" <<EOF
[[provider]]
id = "test"
title = "Test provider"
issuer = "$ISSUER"
client_id = "cms"
client_secret_env = "OIDC_E2E_SECRET"
scopes = ["profile", "email", "groups"]
redirect_uri = "$VOLTO/login-authomatic/test"

[provider.claims]
login = "preferred_username"
groups = "groups"
EOF

OIDC_E2E_SECRET=cms-secret "$BIN" --data "$DATA/site" --listen "127.0.0.1:$SPORT" \
  --oidc-config "$DATA/oidc.toml" > "$LOGS/server.out" 2> "$LOGS/server.log" &
pids+=($!)
wait_line "$LOGS/server.out" "listening on" "${pids[-1]}" "host-server"

VOLTO_BACKEND="http://127.0.0.1:$SPORT" VOLTO_PORT=$VPORT ./scripts/volto.sh > "$LOGS/volto.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 1200); do
  grep -q '^Volto: http' "$LOGS/volto.log" 2>/dev/null && break
  kill -0 "${pids[-1]}" 2>/dev/null || { echo "Volto did not start; see $LOGS/volto.log" >&2; tail -20 "$LOGS/volto.log" >&2; exit 1; }
  sleep 0.5
done
grep -q '^Volto: http' "$LOGS/volto.log" || { echo "Volto did not start within 10 minutes" >&2; exit 1; }

VOLTO_ARTIFACTS=$LOGS node tests/volto/sso.mjs "$VOLTO" "http://127.0.0.1:$SPORT" "$ISSUER"
