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
source scripts/volto-lib.sh
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
ensure_playwright
if ! wait "$VOLTO_BUILD"; then
  echo "Volto's install or build failed; see $LOGS/volto-build.log" >&2
  tail -20 "$LOGS/volto-build.log" >&2
  exit 1
fi
grep '^volto: \(installed\|built\)' "$LOGS/volto-build.log" || echo "volto-sso-e2e: Volto's single sign-on build was in the cache"

e2e_setup
PPORT=$(free_port)
VOLTO=http://127.0.0.1:$VPORT
ISSUER=http://127.0.0.1:$PPORT

# The provider sends the browser back to the add-on's route (/login-authomatic/<id>, where its
# login button's flow ends).
(cd host-server/tests/oidc && exec env REDIRECT_URI="$VOLTO/login-authomatic/test" PORT="$PPORT" \
  LOGIN_FORM=1 node provider.mjs) > "$LOGS/provider.out" 2> "$LOGS/provider.log" &
pids+=($!)
wait_line "$LOGS/provider.out" "listening on $ISSUER" "${pids[-1]}" "the OpenID provider"

cat > "$LOGS/oidc.toml" <<EOF
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

OIDC_E2E_SECRET=cms-secret start_server --oidc-config "$LOGS/oidc.toml"
start_volto

VOLTO_ARTIFACTS=$LOGS node tests/volto/sso.mjs "$VOLTO" "http://127.0.0.1:$SPORT" "$ISSUER"
